#![cfg(not(target_arch = "wasm32"))]
//! L-BFGS with its vectors on the device (src/gpu/lbfgs.rs, shaders/lbfgs.wgsl) against the
//! host's f64 vectors (src/autoencoder/vectors.rs):
//!
//! - every vector operation of [`LbfgsVectors`] on random vectors, one result against the
//!   host's to f32 rounding (bounds below, each relative to the magnitude it rounds);
//! - [`Lbfgs`] over [`DeviceVectors`] on the device's autoencoder cost against [`Lbfgs`] over
//!   [`HostVectors`] on the CPU cost: the start's J to f32 rounding, the first iteration's J
//!   close, both runs' J after 30 iterations within a stated band, and only scalars read back
//!   (bytes per iteration bounded by a constant per evaluation, far below one vector);
//! - a memory capped by the pair budget holds fewer pairs, says so, and still converges;
//! - a NaN in θ is an error naming the parameter.
//!
//! Natively on Mesa lavapipe: `WGPU_BACKEND=vulkan
//! VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json cargo test --release --test
//! gpu_lbfgs`. Without an adapter each test says so and passes.

use deepbelief::autoencoder::lbfgs::{IterationOutcome, Lbfgs, LbfgsSettings, Memory};
use deepbelief::autoencoder::optimise::CostObjective;
use deepbelief::autoencoder::stepwise::Blocking;
use deepbelief::autoencoder::vectors::{HostVectors, LbfgsVectors};
use deepbelief::autoencoder::{cost, Autoencoder, CostError, CostSettings, Workspace};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::gpu::autoencoder::{AutoencoderKernels, GpuCost, GpuCostError};
use deepbelief::gpu::lbfgs::{DeviceVector, DeviceVectors, LbfgsKernels};
use deepbelief::gpu::GpuContext;
use pollster::block_on;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn context() -> Option<GpuContext> {
    match block_on(GpuContext::new()) {
        Ok(ctx) => {
            eprintln!("adapter: {:?}", ctx.summary());
            Some(ctx)
        }
        Err(e) => {
            eprintln!("skipped: {e} (install mesa-vulkan-drivers for lavapipe)");
            None
        }
    }
}

/// f32's unit roundoff, 2⁻²⁴.
const U: f64 = 5.960464477539063e-8;

/// `len` values in [−1, 1), each representable in f32 (so both sides start from the same
/// numbers).
fn random(len: usize, rng: &mut ChaCha8Rng) -> Vec<f64> {
    (0..len).map(|_| f64::from(rng.random::<f32>() * 2.0 - 1.0)).collect()
}

fn worst_gap(device: &[f64], host: &[f64], scale: &[f64]) -> f64 {
    assert_eq!(device.len(), host.len());
    device.iter().zip(host).zip(scale).map(|((d, h), s)| (d - h).abs() / s.max(1e-30)).fold(0.0, f64::max)
}

/// Each operation of the space on device vectors of `len` values against the host's. An
/// elementwise result may differ by 2 roundings of its terms' magnitude (`|a| + |c·b|`, each
/// operand rounded to f32 once more when read); a reduction by `(log₂ 256 + len/256 + log₂ G +
/// 2)·u` of `Σ|aᵢbᵢ|` (lbfgs.wgsl's bound, G workgroups), checked as 64·u.
fn operations_match(ctx: &GpuContext, kernels: &LbfgsKernels, len: usize, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut space = block_on(DeviceVectors::plain(ctx, kernels, len, 4, u64::MAX)).expect("a device space");
    let mut host = HostVectors::new(len, 4);
    let (a, b) = (random(len, &mut rng), random(len, &mut rng));
    let (da, db) = (space.upload(&a).unwrap(), space.upload(&b).unwrap());
    let download = |space: &mut DeviceVectors, v: &DeviceVector| block_on(space.download(v)).expect("a download");
    let c = -0.3718;
    let elementwise_bound = 2.0 * U;

    // out = a + c·b and out = c·b.
    for with_a in [true, false] {
        let mut out = space.vector();
        space.combine(with_a.then_some(&da), c, &db, &mut out);
        let mut expected = host.vector();
        host.combine(with_a.then_some(&a), c, &b, &mut expected);
        let scale: Vec<f64> = a.iter().zip(&b).map(|(a, b)| if with_a { a.abs() } else { 0.0 } + (c * b).abs()).collect();
        let gap = worst_gap(&download(&mut space, &out), &expected, &scale);
        assert!(gap <= elementwise_bound, "len {len}: combine (a: {with_a}) is {gap:.1e} off, bound {elementwise_bound:.1e}");
    }
    // y += a, and a copy.
    let mut y = space.upload(&b).unwrap();
    space.add(&da, &mut y);
    let mut expected = b.clone();
    host.add(&a, &mut expected);
    let scale: Vec<f64> = a.iter().zip(&b).map(|(a, b)| a.abs() + b.abs()).collect();
    let gap = worst_gap(&download(&mut space, &y), &expected, &scale);
    assert!(gap <= elementwise_bound, "len {len}: add is {gap:.1e} off");
    let mut copied = space.vector();
    space.copy(&da, &mut copied);
    assert_eq!(download(&mut space, &copied), a, "len {len}: a copy is not exact");

    // The four reductions, asked together (they share one pass where they read the same).
    let reduction_bound = 64.0 * U;
    let wanted = [space.dot(&da, &db), space.l1(&da), space.max_abs(&da), space.non_finite(&da)];
    let got = block_on(space.read(&wanted)).expect("a read");
    let expected = [host.dot(&a, &b), host.l1(&a), host.max_abs(&a), host.non_finite(&a)];
    let scales = [a.iter().zip(&b).map(|(a, b)| (a * b).abs()).sum::<f64>(), expected[1], expected[2], 1.0];
    for (k, name) in ["aᵀb", "Σ|aᵢ|", "max|aᵢ|", "NaN/Inf count"].iter().enumerate() {
        let gap = (got[k] - expected[k]).abs() / scales[k];
        eprintln!("  len {len}: {name} device {} host {} ({gap:.1e} of its scale)", got[k], expected[k]);
        assert!(gap <= reduction_bound, "len {len}: {name} is {} against the host's {} ({gap:.1e} of {}, bound {reduction_bound:.1e})", got[k], expected[k], scales[k]);
    }
    // A vector with NaN and ∞: counted, and its sums NaN.
    let mut poisoned = a.clone();
    poisoned[len / 2] = f64::NAN;
    poisoned[len - 1] = f64::INFINITY;
    let dp = space.upload(&poisoned).unwrap();
    let wanted = [space.non_finite(&dp), space.l1(&dp), space.dot(&dp, &db)];
    let got = block_on(space.read(&wanted)).expect("a read");
    let count = if len == 1 { 1.0 } else { 2.0 };
    assert!(got[0] == count && got[1].is_nan() && got[2].is_nan(), "len {len}: a vector with NaN and ∞ reads count {}, Σ|aᵢ| {}, aᵀb {}", got[0], got[1], got[2]);

    // The two-loop recursion over 6 pairs in a memory of 4 (the oldest two evicted): pairs
    // with positive curvature (y = s + small noise), against the host's memory.
    let mut memory = Memory::new(4);
    for _ in 0..6 {
        let s = random(len, &mut rng);
        let y: Vec<f64> = s.iter().map(|s| f64::from((s + 0.2 * (rng.random::<f64>() - 0.5)) as f32)).collect();
        let (ys, yy) = (host.dot(&y, &s), host.dot(&y, &y));
        assert!(memory.push(&s, &y), "a pair with positive curvature");
        let (mut ds, mut dy) = (space.upload(&s).unwrap(), space.upload(&y).unwrap());
        space.push_pair(&mut ds, &mut dy, ys, yy);
    }
    assert_eq!((space.pairs(), memory.len()), (4, 4), "len {len}: a memory of 4 holds 4 pairs after 6");
    let g = random(len, &mut rng);
    let dg = space.upload(&g).unwrap();
    let mut direction = space.vector();
    space.two_loop(&dg, &mut direction);
    let mut expected = Vec::new();
    memory.direction(&g, &mut expected);
    let got = download(&mut space, &direction);
    // Relative to the largest entry: 8 fused updates and 9 reductions, each rounding.
    let largest = expected.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let gap = got.iter().zip(&expected).map(|(d, h)| (d - h).abs()).fold(0.0, f64::max) / largest;
    eprintln!("  len {len}: two-loop direction {gap:.1e} of its largest entry off");
    assert!(gap <= 1e-5, "len {len}: the two-loop direction is {gap:.1e} of its largest entry off the host's");
    assert!(space.bytes_read_back() <= 4 * 16 * space.reads(), "len {len}: {} bytes in {} reads: more than scalars came back", space.bytes_read_back(), space.reads());
}

#[test]
fn device_vector_operations_match_the_hosts() {
    let Some(ctx) = context() else { return };
    let kernels = LbfgsKernels::new(&ctx);
    // One value, a partial workgroup, several workgroups with a ragged last one.
    for (len, seed) in [(1, 1), (300, 2), (10_007, 3), (70_001, 4)] {
        operations_match(&ctx, &kernels, len, seed);
    }
}

fn settings() -> CostSettings {
    CostSettings { weight_decay: 3e-3, sparsity_target: 0.05, sparsity_weight: 3.0 }
}

/// Cases in [0.1, 0.9] with some structure (a smooth wave per case plus noise), like the
/// exercise's normalised patches.
fn data(rows: usize, width: usize, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut values = Vec::with_capacity(rows * width);
    for _ in 0..rows {
        let (phase, frequency) = (rng.random::<f32>() * std::f32::consts::TAU, 0.05 + 0.3 * rng.random::<f32>());
        for i in 0..width {
            let x = 0.5 + 0.3 * (phase + frequency * i as f32).sin() + 0.1 * (rng.random::<f32>() - 0.5);
            values.push(x.clamp(0.1, 0.9));
        }
    }
    values
}

/// A run's J at the start and after each iteration, with the bytes it read back per
/// iteration (the space's and the cost's own).
struct Run {
    history: Vec<f64>,
    bytes_per_iteration: Vec<u64>,
    evaluations_per_iteration: Vec<usize>,
    stop: Option<deepbelief::autoencoder::lbfgs::LbfgsStop>,
}

/// `iterations` of L-BFGS over the device's vectors on the device's cost.
fn device_run(ctx: &GpuContext, cost: &mut GpuCost, start: &Autoencoder, settings: &LbfgsSettings, pair_budget: u64) -> (Run, Option<String>, usize) {
    let kernels = LbfgsKernels::new(ctx);
    let mut space = block_on(DeviceVectors::for_cost(ctx, &kernels, cost, settings.memory, pair_budget)).expect("a device space");
    let x = space.upload(&start.to_params()).unwrap();
    let mut lbfgs = block_on(Lbfgs::start_in(space, cost, x, settings)).expect("a finite start");
    let mut run = Run { history: vec![lbfgs.value()], bytes_per_iteration: Vec::new(), evaluations_per_iteration: Vec::new(), stop: None };
    loop {
        let (bytes, evaluations) = (lbfgs.space().bytes_read_back() + cost.bytes_read_back(), lbfgs.evaluations());
        match block_on(lbfgs.iterate(cost)) {
            IterationOutcome::Iterated { value, stop, .. } => {
                run.history.push(value);
                run.bytes_per_iteration.push(lbfgs.space().bytes_read_back() + cost.bytes_read_back() - bytes);
                run.evaluations_per_iteration.push(lbfgs.evaluations() - evaluations);
                if stop.is_some() {
                    break;
                }
            }
            IterationOutcome::Stopped(_) => break,
            IterationOutcome::Interrupted => panic!("the device was lost: {:?}", cost.last_error),
        }
    }
    run.stop = lbfgs.stop();
    let note = lbfgs.space().capacity_note().map(str::to_string);
    (run, note, lbfgs.space().capacity())
}

/// The same iterations over the host's vectors on the CPU reference cost.
fn cpu_run(start: &Autoencoder, data: &[f32], settings: &LbfgsSettings) -> Run {
    let mut scratch = start.clone();
    let mut cpu = CostObjective::new(&CpuBackend, &mut scratch, data, self::settings());
    let mut objective = Blocking(&mut cpu);
    let mut lbfgs = block_on(Lbfgs::start(&mut objective, start.to_params(), settings)).expect("a finite start");
    let mut run = Run { history: vec![lbfgs.value()], bytes_per_iteration: Vec::new(), evaluations_per_iteration: Vec::new(), stop: None };
    while let IterationOutcome::Iterated { value, stop, .. } = block_on(lbfgs.iterate(&mut objective)) {
        run.history.push(value);
        if stop.is_some() {
            break;
        }
    }
    run.stop = lbfgs.stop();
    run
}

fn relative(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// L-BFGS over the device's vectors on the device's cost (64 → 25, 400 cases) against L-BFGS
/// over the host's on the CPU cost, 30 iterations of minFunc's settings:
/// - J at the start agrees to f32 rounding of the cost (1e-6; the vectors play no part yet);
/// - J after the first iteration within 1e-4 (measured on lavapipe: 5e-8): the first line
///   search's cubic extrapolation is a knife edge (tests/gpu_autoencoder.rs: the CPU on its
///   own cases reordered ends the first iteration of some problems 3× away), so this is room
///   for a choice parted by rounding on other devices, not a rounding bound;
/// - every device iteration descends, and J after 30 iterations is within 1% of the CPU's
///   (measured: 1e-7 at the end, 4e-4 at worst on the way; the bound is the band
///   tests/gpu_autoencoder.rs allows the host L-BFGS on the device cost);
/// - each iteration reads back 16 bytes for the direction's scalars, 40 per line-search trial
///   (J's 32 bytes of sums and counts, `∇fᵀd` and the gradient's NaN count) and 16 for the
///   move's: at most 32 + 40·trials, where one vector is 4·len bytes.
#[test]
fn lbfgs_on_device_vectors_follows_the_host_run() {
    let Some(ctx) = context() else { return };
    let (v, h, rows) = (64, 25, 400);
    let x = data(rows, v, 71);
    let start = Autoencoder::initialise(v, h, 72);
    let lbfgs_settings = LbfgsSettings { max_iterations: 30, ..LbfgsSettings::default() };
    let mut cost = GpuCost::new(&ctx, &AutoencoderKernels::new(&ctx), v, h, &x, settings()).unwrap();
    let vector_bytes = 4 * cost.layout().len as u64;
    let (device, note, capacity) = device_run(&ctx, &mut cost, &start, &lbfgs_settings, u64::MAX);
    assert!(cost.first_error.is_none(), "a device evaluation failed: {:?}", cost.first_error);
    assert_eq!((capacity, note), (100, None), "the memory holds minFunc's 100 pairs");
    let cpu = cpu_run(&start, &x, &lbfgs_settings);
    eprintln!("device J {:?}\nCPU J    {:?}", device.history, cpu.history);
    eprintln!("bytes read back per iteration {:?} (one vector: {vector_bytes}), evaluations {:?}", device.bytes_per_iteration, device.evaluations_per_iteration);
    assert_eq!((device.history.len(), cpu.history.len()), (31, 31), "a run stopped early: device {:?}, CPU {:?}", device.stop, cpu.stop);
    let start_gap = relative(device.history[0], cpu.history[0]);
    assert!(start_gap <= 1e-6, "J at the start: device {} CPU {} ({start_gap:.1e})", device.history[0], cpu.history[0]);
    let first_gap = relative(device.history[1], cpu.history[1]);
    assert!(first_gap <= 1e-4, "J after the first iteration: device {} CPU {} ({first_gap:.1e})", device.history[1], cpu.history[1]);
    assert!(device.history.windows(2).all(|w| w[1] < w[0]), "a device iteration did not descend: {:?}", device.history);
    let end_gap = relative(device.history[30], cpu.history[30]);
    assert!(end_gap <= 1e-2, "J after 30 iterations: device {} CPU {} ({end_gap:.1e})", device.history[30], cpu.history[30]);
    for (k, (bytes, trials)) in device.bytes_per_iteration.iter().zip(&device.evaluations_per_iteration).enumerate() {
        assert!(*bytes <= 32 + 40 * *trials as u64, "iteration {}: {bytes} bytes read back in {trials} trials", k + 1);
        assert!(*bytes < vector_bytes / 8, "iteration {}: {bytes} bytes read back, a vector is {vector_bytes}", k + 1);
    }
    eprintln!("start {start_gap:.1e}, first iteration {first_gap:.1e}, after 30 {end_gap:.1e}");
}

/// A pair budget of 3 pairs' bytes keeps 3 pairs where 100 were asked, says so, and the run
/// still converges: every iteration descends, and J after 60 iterations is below a tenth of
/// the start and at most 5% above the full memory's after 30 (measured: 5.5% below it; the
/// capped run is slower per iteration, from iteration 10 on).
#[test]
fn a_memory_capped_by_its_budget_still_converges() {
    let Some(ctx) = context() else { return };
    let (v, h, rows) = (64, 25, 400);
    let x = data(rows, v, 81);
    let start = Autoencoder::initialise(v, h, 82);
    let mut cost = GpuCost::new(&ctx, &AutoencoderKernels::new(&ctx), v, h, &x, settings()).unwrap();
    let pair_bytes = 2 * 4 * cost.layout().len as u64;
    let (full, _, _) = device_run(&ctx, &mut cost, &start, &LbfgsSettings { max_iterations: 30, ..LbfgsSettings::default() }, u64::MAX);
    let (capped, note, capacity) = device_run(&ctx, &mut cost, &start, &LbfgsSettings { max_iterations: 60, ..LbfgsSettings::default() }, 3 * pair_bytes + pair_bytes / 2);
    eprintln!("full memory J {:?}\n3 pairs     J {:?}\nnote: {note:?}", full.history, capped.history);
    assert_eq!(capacity, 3, "a budget of 3.5 pairs holds 3");
    let note = note.expect("a note on the capped memory");
    assert!(note.contains("3 of the 100 pairs") && note.contains("budget"), "the note does not say what was kept and why: {note}");
    let (end, reference, first) = (*capped.history.last().unwrap(), *full.history.last().unwrap(), capped.history[0]);
    assert!(capped.history.windows(2).all(|w| w[1] < w[0]), "a capped iteration did not descend: {:?}", capped.history);
    assert!(end < 0.1 * first && end <= 1.05 * reference, "the capped run ends at J {end} (start {first}), the full memory's after 30 is {reference}");
}

/// θ with a NaN in W2 (and with +∞ in b1): the start is refused, and the cost's error names
/// the parameter and its value; a NaN in the data cannot reach θ, so this is the one way in.
#[test]
fn a_nan_in_theta_is_an_error_naming_the_parameter() {
    let Some(ctx) = context() else { return };
    let (v, h, rows) = (16, 5, 40);
    let x = data(rows, v, 91);
    let kernels = LbfgsKernels::new(&ctx);
    for (block, index, value, name) in [("W2", 7, f32::NAN, "W2[visible 1, hidden 2] is NaN"), ("b1", 3, f32::INFINITY, "b1[3] is inf")] {
        let mut start = Autoencoder::initialise(v, h, 92);
        match block {
            "W2" => start.w2[index] = value,
            _ => start.b1[index] = value,
        }
        let mut cost = GpuCost::new(&ctx, &AutoencoderKernels::new(&ctx), v, h, &x, settings()).unwrap();
        let mut space = block_on(DeviceVectors::for_cost(&ctx, &kernels, &cost, 5, u64::MAX)).unwrap();
        let theta = space.upload(&start.to_params()).unwrap();
        let started = block_on(Lbfgs::start_in(space, &mut cost, theta, &LbfgsSettings::default()));
        let refused = started.err().expect("a start at a non-finite θ is refused");
        assert!(refused.value.is_nan(), "the refused start's J is {}", refused.value);
        match &cost.first_error {
            Some(GpuCostError::Cost(CostError::NonFinite { what })) => assert!(what.contains(name), "the error names {what:?}, expected {name:?}"),
            other => panic!("θ with {block}[{index}] = {value}: the cost's error is {other:?}"),
        }
        let reference = cost_error(&start, &x);
        eprintln!("  {block}[{index}] = {value}: device {:?}; CPU {reference}", cost.first_error);
    }
}

/// The CPU reference's error at `model`, for the log.
fn cost_error(model: &Autoencoder, data: &[f32]) -> String {
    match cost(&CpuBackend, model, data, &settings(), &mut Workspace::new()) {
        Ok(c) => format!("J {}", c.total),
        Err(e) => e.to_string(),
    }
}

/// `Engine::train_autoencoder` on a device trains by L-BFGS over the device's vectors: 30
/// iterations (64 → 25, 400 cases) end within 1% of the CPU engine's J (the band of
/// `lbfgs_on_device_vectors_follows_the_host_run`), J falls every iteration, the report's J
/// after training is the CPU reference's at the returned parameters, and no trial was
/// non-finite. A θ with NaN is refused naming the parameter, as the CPU refuses it.
#[test]
fn the_engine_trains_on_device_vectors() {
    use deepbelief::autoencoder::Method;
    use deepbelief::engine::Engine;
    let Some(ctx) = context() else { return };
    let (v, h, rows) = (64, 25, 400);
    let x = data(rows, v, 101);
    let start = Autoencoder::initialise(v, h, 102);
    let method = Method::Lbfgs(LbfgsSettings { max_iterations: 30, ..LbfgsSettings::default() });
    let engine = Engine::Gpu(ctx);
    let mut trained = start.clone();
    let report = engine.train_autoencoder(&mut trained, &x, &settings(), &method, &mut |_, _| true).expect("device training");
    let mut reference = start.clone();
    let cpu = Engine::Cpu.train_autoencoder(&mut reference, &x, &settings(), &method, &mut |_, _| true).expect("CPU training");
    eprintln!("device J {:?}\nCPU J    {:?}", report.history, cpu.history);
    assert_eq!((report.iterations, report.stop.as_str()), (30, "max_iterations"), "the device run stopped early");
    assert!(report.history.windows(2).all(|w| w[1] < w[0]), "a device iteration did not descend: {:?}", report.history);
    let at_params = cost(&CpuBackend, &trained, &x, &settings(), &mut Workspace::new()).unwrap().total;
    assert_eq!(report.last.total, at_params, "the report's J is not the CPU reference's at the trained parameters");
    let gap = relative(at_params, cpu.last.total);
    assert!(gap <= 1e-2, "device training ends at J {at_params}, the CPU's at {} ({gap:.1e})", cpu.last.total);
    assert!(report.non_finite_trial.is_none(), "a trial was not finite: {:?}", report.non_finite_trial);

    let mut poisoned = start.clone();
    poisoned.w1[5] = f32::NAN;
    let error = engine.train_autoencoder(&mut poisoned, &x, &settings(), &method, &mut |_, _| true).expect_err("a NaN θ is refused");
    assert!(error.contains("W1[visible 0, hidden 5] is NaN"), "the error does not name the parameter: {error}");
}

/// A device lost during `Engine::train_autoencoder` (destroyed from the progress callback
/// after iteration 14): θ was last downloaded after iteration 10, so the CPU takes iterations
/// 11–30 from there, exactly as the CPU's own L-BFGS resumed at that point would (the history
/// is the device's 10 then the CPU's 20), and the run ends within 10% of an undisturbed run.
#[test]
fn a_lost_device_resumes_training_from_the_last_download() {
    use deepbelief::autoencoder::Method;
    use deepbelief::engine::autoencoder::CHECKPOINT_ITERATIONS;
    use deepbelief::engine::Engine;
    let Some(ctx) = context() else { return };
    let (v, h, rows) = (64, 25, 400);
    let x = data(rows, v, 111);
    let start = Autoencoder::initialise(v, h, 112);
    let lbfgs_settings = LbfgsSettings { max_iterations: 30, ..LbfgsSettings::default() };
    let method = Method::Lbfgs(lbfgs_settings);
    let undisturbed = Engine::Gpu(ctx.clone()).train_autoencoder(&mut start.clone(), &x, &settings(), &method, &mut |_, _| true).expect("device training");
    let engine = Engine::Gpu(ctx);
    let mut seen = Vec::new();
    let mut trained = start.clone();
    let report = engine
        .train_autoencoder(&mut trained, &x, &settings(), &method, &mut |iteration, j| {
            seen.push((iteration, j));
            if iteration == 14 && seen.len() == 14 {
                engine.simulate_loss();
            }
            true
        })
        .expect("training goes on on the CPU");
    eprintln!("undisturbed {:?}\nwith a loss {:?}\ncallbacks {seen:?}", undisturbed.history, report.history);
    assert_eq!(CHECKPOINT_ITERATIONS, 10);
    assert_eq!((report.iterations, report.history.len()), (30, 30), "the run did not finish its 30 iterations");
    assert_eq!(report.history[..10], undisturbed.history[..10], "the device's first 10 iterations are kept");
    assert!(report.non_finite_trial.is_none(), "the loss is reported as a non-finite trial: {:?}", report.non_finite_trial);
    // The CPU's own run from the device's θ after iteration 10 (rebuilt: the device run is
    // deterministic, so its θ after 10 iterations is the undisturbed run's).
    let mut at_ten = start.clone();
    Engine::Gpu(block_on(GpuContext::new()).unwrap()).train_autoencoder(&mut at_ten, &x, &settings(), &Method::Lbfgs(LbfgsSettings { max_iterations: 10, ..lbfgs_settings }), &mut |_, _| true).expect("10 device iterations");
    let mut scratch = at_ten.clone();
    let mut objective = CostObjective::new(&CpuBackend, &mut scratch, &x, settings());
    let mut objective = Blocking(&mut objective);
    let mut resumed = block_on(Lbfgs::start(&mut objective, at_ten.to_params(), &lbfgs_settings)).unwrap().resumed_after(10, 0);
    let mut expected = report.history[..10].to_vec();
    while let IterationOutcome::Iterated { value, .. } = block_on(resumed.iterate(&mut objective)) {
        expected.push(value);
    }
    assert_eq!(report.history, expected, "iterations 11–30 are not the CPU's own run from the device's θ after iteration 10");
    let gap = relative(*report.history.last().unwrap(), *undisturbed.history.last().unwrap());
    assert!(gap <= 0.1, "the resumed run ends {gap:.1e} from the undisturbed one");
}
