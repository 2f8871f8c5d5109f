#![cfg(not(target_arch = "wasm32"))]
//! shaders/rtrl_sensitivity.wgsl against the CPU reference (issue 20): after a few online RTRL
//! steps, every weight block's sensitivity tensor of every dependent layer, recomputed on the
//! device from the CPU's previous tensors, weights and frames, equals the CPU's
//! (`recurrent::rtrl`) to f32 rounding; on a graph with every kind of edge (two incoming
//! tensors per layer, layers with none), on the Elman adder net, and with `P` split into column
//! chunks (even and ragged) as buffers beyond the binding limit are.
//! Runs on lavapipe: `WGPU_BACKEND=vulkan VK_DRIVER_FILES=…/lvp_icd.x86_64.json`.

mod support;

use deepbelief::gpu::recurrent::{chunk_width, sensitivity_update, OwnTerm};
use deepbelief::gpu::recurrent_fold::{finish_fold, finish_fold_reference, FoldCase, FoldDims};
use deepbelief::gpu::recurrent_step::RtrlKnobs;
use deepbelief::recurrent::graph::Source;
use deepbelief::recurrent::products::Term;
use deepbelief::recurrent::{EdgeSpec, Frame, GraphSpec, Network, Preset, Rtrl, RtrlMode};
use deepbelief::rng::{Purpose, RngStream};
use support::device::context;

fn tangled() -> GraphSpec {
    GraphSpec {
        layers: vec![3, 5, 4, 2],
        edges: vec![
            EdgeSpec::feed_forward(0, 1),
            EdgeSpec::feed_forward(1, 2),
            EdgeSpec::feed_forward(2, 3),
            EdgeSpec::feed_forward(0, 3),
            EdgeSpec::recurrent(1, 1),
            EdgeSpec::recurrent(2, 1),
            EdgeSpec::recurrent(3, 2),
            EdgeSpec::recurrent(0, 2),
        ],
        biases: true,
    }
}

/// Trains `steps` online steps, then one more, checking every tensor of that last step on the
/// device (chunks capped at `binding` bytes when given). Returns how many tensors it checked.
fn check(net: Network, steps: usize, binding: Option<u64>) -> usize {
    let ctx = context();
    let mut net = net;
    let mut rtrl = Rtrl::new(&net, RtrlMode::Full).unwrap();
    let (ni, no) = (net.graph.layers[0], *net.graph.layers.last().unwrap());
    let example = |t: u64| {
        let s = RngStream::new(9, t, Purpose::DataSample);
        ((0..ni).map(|i| 1.2 * s.uniform(i as u64) - 0.6).collect::<Vec<f32>>(), (0..no).map(|i| 0.6 * s.uniform(100 + i as u64) - 0.3).collect::<Vec<f32>>())
    };
    for t in 0..steps as u64 {
        let (x, d) = example(t);
        rtrl.train_step(&mut net, &x, &d, 0.05);
    }
    let layers = net.graph.layers.len();
    let before: Vec<Vec<Option<Vec<f32>>>> = (0..net.blocks.len()).map(|b| (0..layers).map(|i| rtrl.sensitivity(b, i).map(<[f32]>::to_vec)).collect()).collect();
    let frame_before: Frame = rtrl.frame().clone();
    let (x, d) = example(steps as u64);
    rtrl.step(&net, &x, &d);
    let frame = rtrl.frame().clone();
    let mut checked = 0;
    for (index, block) in net.blocks.iter().enumerate() {
        for i in 1..layers {
            let Some(cpu) = rtrl.sensitivity(index, i) else { continue };
            let mut terms = Vec::new();
            for c in net.blocks_into(i) {
                match c.source {
                    Source::Layer(k) if k > 0 => {
                        if let Some(b) = rtrl.sensitivity(index, k) {
                            terms.push(Term { a: net.block_values(c), k: c.cols, b });
                        }
                    }
                    Source::Previous(q) if q > 0 => {
                        if let Some(b) = before[index][q].as_deref() {
                            terms.push(Term { a: net.block_values(c), k: c.cols, b });
                        }
                    }
                    _ => {}
                }
            }
            let one = [1.0f32];
            let own = (i == block.to).then(|| OwnTerm {
                block_cols: block.cols,
                source: match block.source {
                    Source::Layer(n) => &frame.act[n],
                    Source::Previous(n) => &frame_before.act[n],
                    Source::Bias => &one,
                },
            });
            let gpu = pollster::block_on(sensitivity_update(&ctx, net.graph.layers[i], block.len(), &terms, &frame.deriv[i], own, binding)).unwrap();
            let scale = cpu.iter().fold(1e-3f32, |m, v| m.max(v.abs()));
            let worst = gpu.iter().zip(cpu).fold(0.0f32, |m, (g, c)| m.max((g - c).abs()));
            assert!(worst <= 2e-6 * scale.max(1.0), "{} layer {i}: largest difference {worst} (largest value {scale})", block.name());
            assert!(cpu.iter().any(|v| *v != 0.0), "{} layer {i}: a tensor worth checking", block.name());
            checked += 1;
        }
    }
    checked
}

#[test]
fn every_tensor_of_a_graph_with_every_edge_kind() {
    // 11 blocks, each with tensors for layers 1–3 (all depend on every layer through recurrence).
    assert_eq!(check(Network::initialise(tangled(), 3, 1.5).unwrap(), 5, None), 33);
}

#[test]
fn the_elman_adder_net() {
    // 3 bits: 6-6-3; blocks w[1←0], w[2←1], μ[1←1], b[1], b[2]: 3 × 2 + 2 × 1 tensors.
    assert_eq!(check(Network::initialise(Preset::Elman.graph(6, 6, 3), 1, 2.0).unwrap(), 4, None), 8);
}

#[test]
fn chunks_split_the_columns() {
    // μ[1←1] of a 6-unit hidden layer: P = 36, k ≤ 6 rows of B: 4 × 6 × 8 bytes gives chunks
    // of 8 columns (36 = 4 × 8 + 4), 4 × 6 × 6 of 6 (even).
    assert_eq!(chunk_width(6, 6, 36, 4 * 6 * 8).unwrap(), 8);
    assert_eq!(chunk_width(3, 6, 36, 4 * 6 * 6).unwrap(), 6);
    assert!(chunk_width(6, 6, 36, 4 * 5).is_err());
    for binding in [4 * 6 * 8, 4 * 6 * 6] {
        assert_eq!(check(Network::initialise(Preset::Elman.graph(6, 6, 3), 1, 2.0).unwrap(), 4, Some(binding)), 8);
    }
}

/// `GpuRtrl` and `Rtrl` trained side by side for `steps` online steps: the same errors and
/// weights to f32 rounding, and the last step's tensors read back equal the CPU's.
fn resident_matches(net: Network, mode: RtrlMode, steps: u64, binding: Option<u64>) {
    use deepbelief::gpu::recurrent::GpuRtrl;
    let ctx = context();
    let (mut cpu_net, mut gpu_net) = (net.clone(), net);
    let mut cpu = Rtrl::new(&cpu_net, mode).unwrap();
    let mut gpu = GpuRtrl::new(&ctx, &gpu_net, mode, binding).unwrap();
    let (ni, no) = (cpu_net.graph.layers[0], *cpu_net.graph.layers.last().unwrap());
    for t in 0..steps {
        let s = RngStream::new(4, t, Purpose::DataSample);
        let x: Vec<f32> = (0..ni).map(|i| 1.2 * s.uniform(i as u64) - 0.6).collect();
        let d: Vec<f32> = (0..no).map(|i| 0.6 * s.uniform(100 + i as u64) - 0.3).collect();
        let e_cpu = cpu.train_step(&mut cpu_net, &x, &d, 0.05).error;
        let e_gpu = pollster::block_on(gpu.train_step(&ctx, &mut gpu_net, &x, &d, 0.05)).unwrap();
        assert!((e_cpu - e_gpu).abs() <= 1e-5 * e_cpu.max(1e-3), "step {t}: E {e_cpu} on the CPU, {e_gpu} on the device");
    }
    let scale = cpu_net.params.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let worst = cpu_net.params.iter().zip(&gpu_net.params).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(worst <= 1e-5 * scale, "weights differ by {worst} (largest {scale})");
    let mut compared = 0;
    for block in 0..cpu_net.blocks.len() {
        for layer in 1..cpu_net.graph.layers.len() {
            let device = pollster::block_on(gpu.sensitivity(&ctx, block, layer)).unwrap();
            assert_eq!(device.is_some(), cpu.sensitivity(block, layer).is_some(), "block {block} layer {layer}: kept on one side only");
            if let (Some(device), Some(host)) = (device, cpu.sensitivity(block, layer)) {
                let scale = host.iter().fold(1e-3f32, |m, v| m.max(v.abs()));
                let worst = device.iter().zip(host).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
                assert!(worst <= 1e-4 * scale, "block {block} layer {layer}: tensors differ by {worst} (largest {scale})");
                compared += 1;
            }
        }
    }
    assert!(compared > 0);
}

#[test]
fn resident_rtrl_follows_the_cpu() {
    resident_matches(Network::initialise(tangled(), 3, 1.5).unwrap(), RtrlMode::Full, 8, None);
    resident_matches(Network::initialise(Preset::Elman.graph(6, 6, 3), 1, 2.0).unwrap(), RtrlMode::Shortcut, 8, None);
    resident_matches(Network::initialise(Preset::Jordan.graph(4, 5, 2), 1, 2.0).unwrap(), RtrlMode::Shortcut, 8, None);
    // Chunks of 8 columns (36 = 4 × 8 + 4) for every block of the Elman net.
    resident_matches(Network::initialise(Preset::Elman.graph(6, 6, 3), 1, 2.0).unwrap(), RtrlMode::Full, 8, Some(4 * 6 * 8));
}

#[test]
fn bench_rows_on_the_device_follow_the_cpus() {
    use deepbelief::bench::rtrl::{bench_gpu, bench_rtrl, RtrlBenchSettings};
    let ctx = context();
    let settings = RtrlBenchSettings { steps: 3, repeats: 2, ..Default::default() };
    let cpu = bench_rtrl(&[2, 3], &settings, |_| {}).unwrap();
    let gpu = pollster::block_on(bench_gpu(&ctx, &[2, 3], &settings, |_| {})).unwrap();
    for (c, g) in cpu.iter().zip(&gpu) {
        assert_eq!((c.bits, &c.layers, c.tensor_values), (g.bits, &g.layers, g.tensor_values));
        assert!(g.backend.starts_with("gpu"), "{}", g.backend);
        assert!((c.mean_error - g.mean_error).abs() <= 1e-5 * c.mean_error, "n = {}: mean E {} on the CPU, {} on the device", c.bits, c.mean_error, g.mean_error);
    }
}

/// `DeviceRtrl` (the whole step on the device, `capacity` steps per submission) and `Rtrl`
/// trained side by side for `steps` online steps: per step the same `E` and output, then the
/// same weights and last tensors, to f32 rounding accumulated over the steps.
/// The knobs come from the environment (DEEPBELIEF_RTRL_FUSED=0 runs the unfused path).
fn device_step_matches(net: Network, mode: RtrlMode, steps: u64, capacity: usize, binding: Option<u64>) {
    device_step_matches_with(net, mode, steps, capacity, binding, RtrlKnobs::from_env().unwrap());
}

fn device_step_matches_with(net: Network, mode: RtrlMode, steps: u64, capacity: usize, binding: Option<u64>, knobs: RtrlKnobs) {
    use deepbelief::gpu::recurrent_step::DeviceRtrl;
    let ctx = context();
    let mut cpu_net = net.clone();
    let mut cpu = Rtrl::new(&cpu_net, mode).unwrap();
    let mut gpu = DeviceRtrl::with_knobs(&ctx, &net, mode, binding, capacity, knobs).unwrap();
    let (ni, no) = (cpu_net.graph.layers[0], *cpu_net.graph.layers.last().unwrap());
    let (mut inputs, mut targets) = (Vec::new(), Vec::new());
    for t in 0..steps {
        let s = RngStream::new(4, t, Purpose::DataSample);
        inputs.extend((0..ni).map(|i| 1.2 * s.uniform(i as u64) - 0.6));
        targets.extend((0..no).map(|i| 0.6 * s.uniform(100 + i as u64) - 0.3));
    }
    let report = pollster::block_on(gpu.train_steps(&ctx, &inputs, &targets, 0.05)).unwrap();
    assert_eq!((report.errors.len(), report.outputs.len()), (steps as usize, steps as usize * no));
    for t in 0..steps as usize {
        let e_cpu = cpu.train_step(&mut cpu_net, &inputs[t * ni..(t + 1) * ni], &targets[t * no..(t + 1) * no], 0.05).error;
        let e_gpu = report.errors[t];
        assert!((e_cpu - e_gpu).abs() <= 1e-4 * e_cpu.max(1e-2), "step {t}: E {e_cpu} on the CPU, {e_gpu} on the device");
        let y = &report.outputs[t * no..(t + 1) * no];
        let worst = cpu.frame().output().iter().zip(y).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(worst <= 1e-4, "step {t}: outputs differ by {worst}");
    }
    let params = pollster::block_on(gpu.params(&ctx)).unwrap();
    let scale = cpu_net.params.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let worst = cpu_net.params.iter().zip(&params).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(worst <= 1e-4 * scale, "weights differ by {worst} (largest {scale})");
    assert!(cpu_net.params != net.params, "the weights moved");
    let mut compared = 0;
    for block in 0..cpu_net.blocks.len() {
        for layer in 1..cpu_net.graph.layers.len() {
            let device = pollster::block_on(gpu.sensitivity(&ctx, block, layer)).unwrap();
            // The device forms no output tensor where the output feeds no later step (its
            // gradient is folded: (δ^yᵀ w^{y,k}) ξ^{·,k}); the gradient, hence the weights, is
            // still compared above.
            let folded = layer == cpu_net.graph.output() && !cpu_net.graph.recurrent_sources()[layer];
            assert_eq!(device.is_some(), cpu.sensitivity(block, layer).is_some() && !folded, "block {block} layer {layer}: kept on one side only");
            if let (Some(device), Some(host)) = (device, cpu.sensitivity(block, layer)) {
                let scale = host.iter().fold(1e-3f32, |m, v| m.max(v.abs()));
                let worst = device.iter().zip(host).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
                assert!(worst <= 1e-3 * scale, "block {block} layer {layer}: tensors differ by {worst} (largest {scale})");
                compared += 1;
            }
        }
    }
    if mode == RtrlMode::Full || cpu_net.graph.edges.iter().any(|e| e.kind == deepbelief::recurrent::EdgeKind::Recurrent && e.to != cpu_net.graph.output()) {
        assert!(compared > 0);
    }
}

#[test]
fn device_resident_steps_follow_the_cpu() {
    // 50 steps in submissions of 16 (the last ragged): both tensor parities, many batches.
    device_step_matches(Network::initialise(tangled(), 3, 1.5).unwrap(), RtrlMode::Full, 50, 16, None);
    device_step_matches(Network::initialise(Preset::Elman.graph(6, 6, 3), 1, 2.0).unwrap(), RtrlMode::Shortcut, 50, 16, None);
    device_step_matches(Network::initialise(Preset::Jordan.graph(4, 5, 2), 1, 2.0).unwrap(), RtrlMode::Shortcut, 50, 7, None);
    // Full RTRL on Elman's net: the output's blocks keep tensors on the CPU; on the device their
    // gradient is the own term plus the folded products.
    device_step_matches(Network::initialise(Preset::Elman.graph(6, 6, 3), 1, 2.0).unwrap(), RtrlMode::Full, 50, 16, None);
    // Feed-forward with the shortcut: no tensors at all, plain back-propagation on the device.
    device_step_matches(Network::initialise(Preset::FeedForward.graph(4, 8, 2), 1, 2.0).unwrap(), RtrlMode::Shortcut, 50, 1, None);
    // A wider Elman net (24-24-12: 64-wide workgroups loop, GEMM tiles beyond one).
    device_step_matches(Network::initialise(Preset::Elman.graph(24, 24, 12), 1, 2.0).unwrap(), RtrlMode::Shortcut, 30, 30, None);
}

#[test]
fn device_resident_steps_in_split_tensors() {
    // Each tensor chunk capped at 4 × 6 × 8 bytes: P = 36 in chunks of 8 (ragged), every block
    // of the Elman net with full RTRL, so every binding of the sensitivity update is split.
    device_step_matches(Network::initialise(Preset::Elman.graph(6, 6, 3), 1, 2.0).unwrap(), RtrlMode::Full, 30, 8, Some(4 * 6 * 8));
    // The 24-unit Elman net in chunks of 5 columns: μ[1←1] (P = 576) in 116 chunks.
    device_step_matches(Network::initialise(Preset::Elman.graph(24, 24, 12), 1, 2.0).unwrap(), RtrlMode::Shortcut, 12, 12, Some(4 * 24 * 5));
}

/// `n` values in [−1, 1) from the Philox stream.
fn values(seed: u64, n: usize) -> Vec<f32> {
    let s = RngStream::new(seed, 0, Purpose::DataSample);
    (0..n).map(|i| 2.0 * s.uniform(i as u64) - 1.0).collect()
}

#[test]
fn fold_kernels_follow_the_reference() {
    // rtrl_fold.wgsl against its plain-loop reference: rows and columns that are not multiples
    // of the workgroup's 8 row groups × 4 loads and 32 columns, chunks starting inside the
    // block's P (the Kronecker term's row and column from col0 + c), the row and tensor inside
    // larger buffers, the gradient at an offset with neighbours left alone, every flag of both
    // entry points.
    let ctx = context();
    let flags = [(true, 1, 1, 0), (true, 0, 1, 1), (true, 1, 0, 1), (true, 0, 0, 0), (false, 0, 0, 0), (false, 0, 0, 1)];
    // (rows, block_cols, col0, width): col0 + width ≤ rows · block_cols = P.
    for (shape, &(rows, block_cols, col0, width)) in [(1, 1, 0, 1), (5, 9, 3, 37), (12, 10, 0, 100), (37, 20, 130, 70), (64, 5, 60, 257)].iter().enumerate() {
        let seed = 10 * shape as u64;
        // Odd shapes read the row and the tensor from inside larger buffers.
        let (row_offset, tensor_offset) = if shape % 2 == 1 { (3, 7) } else { (0, 0) };
        let (tensor, deriv, source, row) = (values(seed, tensor_offset + rows * width), values(seed + 1, rows), values(seed + 2, block_cols), values(seed + 3, row_offset + rows));
        let offset = 4;
        let gradient = values(seed + 4, offset + width + 5);
        for &(finish, own, accumulate, gradient_accumulate) in &flags {
            let dims = FoldDims { rows: rows as u32, width: width as u32, block_cols: block_cols as u32, col0: col0 as u32, own, accumulate, gradient_accumulate, gradient_offset: offset as u32, row_offset: row_offset as u32, tensor_offset: tensor_offset as u32, ..Default::default() };
            let case = FoldCase { dims, finish, tensor: &tensor, deriv: &deriv, source: &source, row: &row, gradient: &gradient };
            let (want_tensor, want_gradient) = finish_fold_reference(&case);
            let (got_tensor, got_gradient) = pollster::block_on(finish_fold(&ctx, &case)).unwrap();
            let what = format!("{rows} × {width} from column {col0}, finish {finish}, own {own}, accumulate {accumulate}, gradient_accumulate {gradient_accumulate}");
            let worst = want_tensor.iter().zip(&got_tensor).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
            assert!(worst <= 1e-6, "{what}: tensors differ by {worst}");
            if !finish {
                assert_eq!(got_tensor, tensor, "{what}: fold left the tensor alone");
            }
            let scale = want_gradient.iter().fold(1.0f32, |m, v| m.max(v.abs()));
            let worst = want_gradient.iter().zip(&got_gradient).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
            assert!(worst <= 1e-5 * scale, "{what}: gradients differ by {worst} (largest {scale})");
            assert_eq!((&got_gradient[..offset], &got_gradient[offset + width..]), (&gradient[..offset], &gradient[offset + width..]), "{what}: entries outside the chunk");
        }
    }
}

#[test]
fn device_steps_fused_and_not() {
    // Both paths whatever the environment says: the finishing kernel and fold (fused off) and
    // finish_fold (on), on nets whose P is no multiple of 32 (10-10-5: P = 100 and 10) and in
    // ragged chunks of 37 columns (100 = 37 + 37 + 26), the output formed (the every-edge graph,
    // Jordan) or folded (Elman), the own term of w[2←1] first (Elman with full RTRL).
    for fused in [false, true] {
        let knobs = RtrlKnobs { fused, ..RtrlKnobs::default() };
        device_step_matches_with(Network::initialise(tangled(), 3, 1.5).unwrap(), RtrlMode::Full, 20, 8, None, knobs);
        device_step_matches_with(Network::initialise(Preset::Elman.graph(10, 10, 5), 1, 2.0).unwrap(), RtrlMode::Shortcut, 20, 8, None, knobs);
        device_step_matches_with(Network::initialise(Preset::Elman.graph(10, 10, 5), 1, 2.0).unwrap(), RtrlMode::Full, 20, 8, Some(4 * 10 * 37), knobs);
        device_step_matches_with(Network::initialise(Preset::Jordan.graph(4, 5, 2), 1, 2.0).unwrap(), RtrlMode::Shortcut, 20, 7, Some(4 * 5 * 3), knobs);
    }
    let parse = |value: &str| RtrlKnobs::parse(|name| (name == "DEEPBELIEF_RTRL_FUSED").then(|| value.to_string()));
    assert!(RtrlKnobs::default().fused);
    assert_eq!((parse("1").unwrap().fused, parse("0").unwrap().fused), (true, false));
    let error = parse("yes").unwrap_err().0;
    assert!(error.contains("DEEPBELIEF_RTRL_FUSED") && error.contains("yes"), "{error}");
}
