#![cfg(not(target_arch = "wasm32"))]
//! Every tiling of the local-patch RBM's products (`gpu::local_rbm::LocalTiling`: the old
//! kernels and the blocked ones of shaders/local_rbm_tile.wgsl) against the CPU reference, on
//! the shapes that stress the blocks: cases, units and patch inputs that are not multiples of
//! a block (and past one block each way, past 192 units for the 64 × 192 block), 1–3 channels,
//! tied layers at stride 1, bank groups. Also: the blocked modules within WebGPU's default
//! limits, the knob's values, and the profile's timestamps (where the adapter has them).

mod support;

use deepbelief::gpu::buffers::upload;
use deepbelief::gpu::local_rbm::{hidden_probabilities_with, visible_expectations_with, LocalTiling, TILING_VARIABLE};
use deepbelief::gpu::local_rbm_trainer::{bank_groups, GpuLocalTrainer};
use deepbelief::local_rbm::{CoverLists, Geometry, LocalCdSettings, LocalCdTrainer, LocalRbm, PassBuffers};
use deepbelief::model::VisibleUnits;
use deepbelief::rng::{Purpose, RngStream};
use support::device::context;

fn random_layer(g: Geometry, units: VisibleUnits, seed: u64) -> LocalRbm {
    let mut layer = LocalRbm::initialise(g, units, &vec![0.3; g.n_visible()], seed);
    let s = RngStream::new(seed, 9, Purpose::InitialWeights);
    let mut k = 0u64;
    let mut next = |scale: f32| {
        k += 1;
        scale * (s.uniform(k) - 0.5)
    };
    layer.weights.iter_mut().for_each(|w| *w = next(0.6));
    layer.hidden_bias.iter_mut().for_each(|b| *b = next(1.0));
    layer.visible_bias.iter_mut().for_each(|b| *b = next(1.0));
    layer
}

fn worst_gap(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0.0f32, |m, (x, y)| m.max((x - y).abs() / (1.0 + y.abs())))
}

/// (geometry, visible units, cases) whose products cross the blocks unevenly.
fn ragged_shapes() -> Vec<(Geometry, VisibleUnits, usize)> {
    vec![
        // 576 inputs (9 blocks of 64, 3 of 192), 70 units, 70 cases: past a 64 block every way.
        (Geometry::new(32, 32, 1, 24, 8, 70, false).unwrap(), VisibleUnits::Gaussian, 70),
        // 75 inputs over 3 channels (a patch row of 15 values: the walk wraps mid-step), 5 units.
        (Geometry::new(11, 9, 3, 5, 2, 5, false).unwrap(), VisibleUnits::Bernoulli, 19),
        // 200 units: past the 192-wide block; 16 inputs, patch rows of 4 (several per k step).
        (Geometry::new(10, 10, 1, 4, 2, 200, false).unwrap(), VisibleUnits::Gaussian, 13),
        // Tied at stride 1, two channels: 49 positions share one bank.
        (Geometry::new(9, 9, 2, 3, 1, 6, true).unwrap(), VisibleUnits::Bernoulli, 21),
    ]
}

#[test]
fn every_tiling_passes_match_the_cpu_reference() {
    let ctx = context();
    for (k, (g, units, cases)) in ragged_shapes().into_iter().enumerate() {
        let layer = random_layer(g, units, 30 + k as u64);
        let s = RngStream::new(k as u64, 2, Purpose::DataSample);
        let visible: Vec<f32> = (0..(cases * g.n_visible()) as u64).map(|i| s.uniform(i)).collect();
        let mut buffers = PassBuffers::default();
        let mut cpu_hidden = vec![0.0; cases * g.n_hidden()];
        layer.hidden_probabilities(&visible, &mut cpu_hidden, &mut buffers);
        let cover = CoverLists::new(&g);
        let mut cpu_visible = vec![0.0; visible.len()];
        layer.visible_expectations(&cover, &cpu_hidden, &mut cpu_visible, &mut buffers);
        for tiling in LocalTiling::ALL {
            let hidden = pollster::block_on(hidden_probabilities_with(&ctx, &layer, &visible, tiling)).unwrap();
            let worst = worst_gap(&hidden, &cpu_hidden);
            assert!(worst < 1e-5, "up, {}, {g:?}: worst |gpu − cpu| {worst}", tiling.name());
            let back = pollster::block_on(visible_expectations_with(&ctx, &layer, &cover, &cpu_hidden, tiling)).unwrap();
            let worst = worst_gap(&back, &cpu_visible);
            assert!(worst < 1e-5, "down, {}, {g:?}: worst relative |gpu − cpu| {worst}", tiling.name());
        }
    }
}

/// Three CD-1 batches under each tiling equal `LocalCdTrainer`'s within 5e-6 (every array
/// moved by more than 1e-3), and the same batches with the banks split into groups equal the
/// unsplit run exactly.
#[test]
fn every_tiling_trains_as_the_cpu_and_splits_exactly() {
    let ctx = context();
    for (k, (g, units, cases)) in ragged_shapes().into_iter().enumerate() {
        let s = RngStream::new(50 + k as u64, 1, Purpose::DataSample);
        let batch: Vec<f32> = (0..(cases * g.n_visible()) as u64).map(|i| s.uniform(i)).collect();
        let settings = LocalCdSettings { visible_units: units, learning_rate: 0.01, seed: 4, ..Default::default() };
        let mut cpu = LocalCdTrainer::new(settings.clone(), g, &batch).unwrap();
        cpu.model = random_layer(g, units, 60 + k as u64);
        let start = cpu.model.clone();
        for _ in 0..3 {
            cpu.train_batch(&batch);
        }
        // Two positions' products per group, or one bank (the tied layer's one bank is shared).
        let limit = (2 * cases * g.patch_inputs() * 4).max(g.patch_inputs() * g.hidden_per_patch * 4) as u64;
        let groups = bank_groups(&g, cases, limit).unwrap().len();
        assert!(groups > 1, "{g:?}: the split would be empty");
        let device_batch = upload(&ctx, "batch", &batch);
        for tiling in LocalTiling::ALL {
            let whole_limit = ctx.device.limits().max_storage_buffer_binding_size;
            let mut whole = GpuLocalTrainer::with_tiling(&ctx, &start, settings.clone(), cases, whole_limit, tiling);
            let mut split = GpuLocalTrainer::with_tiling(&ctx, &start, settings.clone(), cases, limit, tiling);
            assert_eq!((whole.group_count(), split.group_count(), whole.tiling()), (1, groups, tiling));
            for _ in 0..3 {
                whole.train_batch(&ctx, &device_batch);
                split.train_batch(&ctx, &device_batch);
            }
            let (a, va) = pollster::block_on(whole.state(&ctx)).unwrap();
            let (b, vb) = pollster::block_on(split.state(&ctx)).unwrap();
            for (name, ours, reference, before) in [
                ("weights", &a.weights, &cpu.model.weights, &start.weights),
                ("hidden_bias", &a.hidden_bias, &cpu.model.hidden_bias, &start.hidden_bias),
                ("visible_bias", &a.visible_bias, &cpu.model.visible_bias, &start.visible_bias),
            ] {
                let worst = ours.iter().zip(reference.iter()).fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
                let moved = reference.iter().zip(before.iter()).fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
                assert!(moved > 1e-3, "{name} moved {moved}: the check would be empty");
                assert!(worst < 5e-6, "{}, {name}, {g:?}: worst |gpu − cpu| {worst} after 3 batches (largest change {moved})", tiling.name());
            }
            assert!(a == b && va == vb, "{}, {g:?}: {groups} bank groups differ from the whole layer", tiling.name());
        }
    }
}

/// The blocked kernels keep to WebGPU's default limits, which the page runs under: at most 256
/// invocations a workgroup and 16 KiB of workgroup memory an entry point (counting what it
/// uses: common.wgsl's reduction trees are in every module, used by none of these).
#[test]
fn blocked_kernels_fit_webgpu_default_limits() {
    use naga::proc::Layouter;
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let defaults = wgpu::Limits::default();
    let mut checked = 0;
    for kernel in deepbelief::gpu::shader::kernel_sources() {
        if !kernel.module.starts_with("local_rbm") || !kernel.variant.starts_with("tiling=") {
            continue;
        }
        let name = format!("{} ({})", kernel.module, kernel.variant);
        let module = naga::front::wgsl::parse_str(&kernel.source).unwrap_or_else(|e| panic!("{name}: {e}"));
        let info = Validator::new(ValidationFlags::all(), Capabilities::default()).validate(&module).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let mut layouter = Layouter::default();
        layouter.update(module.to_ctx()).unwrap();
        for (i, entry) in module.entry_points.iter().enumerate() {
            let uses = info.get_entry_point(i);
            let shared: u32 = module.global_variables.iter().filter(|&(h, v)| v.space == naga::AddressSpace::WorkGroup && !uses[h].is_empty()).map(|(_, v)| layouter[v.ty].size).sum();
            assert!(shared > 0 && shared <= defaults.max_compute_workgroup_storage_size, "{name} {}: {shared} bytes of workgroup memory", entry.name);
            let [x, y, z] = entry.workgroup_size;
            assert!(x * y * z <= defaults.max_compute_invocations_per_workgroup, "{name} {}: {x} × {y} × {z} invocations", entry.name);
            checked += 1;
        }
    }
    let blocked = LocalTiling::ALL.iter().filter(|t| t.shape().is_some()).count();
    assert_eq!(checked, 3 * blocked, "up, down_products and weight_update of every blocked tiling");
    for tiling in LocalTiling::ALL {
        if let Some(t) = tiling.shape() {
            assert!(t.invocations() <= 256 && t.workgroup_bytes() <= 16384, "{tiling:?}: {t:?}");
        }
    }
}

#[test]
fn the_knob_takes_its_values_and_names_bad_ones() {
    assert_eq!(LocalTiling::parse(None), Ok(LocalTiling::DEFAULT));
    assert_eq!(LocalTiling::parse(Some("new")), Ok(LocalTiling::DEFAULT));
    for tiling in LocalTiling::ALL {
        assert_eq!(LocalTiling::parse(Some(tiling.name())), Ok(tiling));
    }
    let error = LocalTiling::parse(Some("8x16")).unwrap_err();
    assert!(error.starts_with(&format!("{TILING_VARIABLE}=8x16: expected new")) && error.contains("old, 8x8"), "{error}");
}

/// The profile times the batch's dispatches in order, with the products' GFLOP, and trains
/// the batches it times as `train_batch` does; an adapter without timestamps gets an error
/// that says so.
#[test]
fn profile_labels_every_dispatch_or_says_why_not() {
    let ctx = pollster::block_on(deepbelief::gpu::buffers::context_with_adapter_limits()).unwrap();
    let g = Geometry::new(12, 12, 1, 6, 2, 7, false).unwrap(); // 16 positions
    let cases = 13;
    let s = RngStream::new(71, 1, Purpose::DataSample);
    let batch: Vec<f32> = (0..(cases * g.n_visible()) as u64).map(|i| s.uniform(i)).collect();
    let settings = LocalCdSettings { learning_rate: 0.05, ..Default::default() };
    let start = random_layer(g, VisibleUnits::Gaussian, 3);
    let limit = (8 * cases * g.patch_inputs() * 4) as u64; // two groups of 8 positions
    let mut profiled = GpuLocalTrainer::with_tiling(&ctx, &start, settings.clone(), cases, limit, LocalTiling::DEFAULT);
    let mut trained = GpuLocalTrainer::with_tiling(&ctx, &start, settings, cases, limit, LocalTiling::DEFAULT);
    let device_batch = upload(&ctx, "batch", &batch);
    match pollster::block_on(profiled.profile(&ctx, &device_batch, 2)) {
        Err(e) => {
            eprintln!("no profile on this adapter: {e}");
            assert!(e.0.contains("no timestamp queries"), "{e}");
            assert!(!ctx.device.features().contains(wgpu::Features::TIMESTAMP_QUERY));
        }
        Ok(p) => {
            let labels: Vec<&str> = p.dispatches.iter().map(|d| d.label.as_str()).collect();
            let expected = [
                "up (data) (group 1 of 2)",
                "up (data) (group 2 of 2)",
                "sample_hidden",
                "down_products (group 1 of 2)",
                "gather (group 1 of 2)",
                "down_products (group 2 of 2)",
                "gather (group 2 of 2)",
                "up (reconstruction) (group 1 of 2)",
                "up (reconstruction) (group 2 of 2)",
                "weight_update (group 1 of 2)",
                "weight_update (group 2 of 2)",
                "visible_bias_update",
                "hidden_bias_update",
            ];
            assert_eq!(labels, expected);
            assert_eq!((p.batches, p.bank_groups), (2, 2));
            let one_product = 2.0 * (cases * 36 * 7 * 8) as f64 / 1e9;
            assert!((p.dispatches[0].gflop - one_product).abs() < 1e-12 && (p.dispatches[9].gflop - 2.0 * one_product).abs() < 1e-12, "{:?}", p.dispatches);
            assert!((p.gflop - 10.0 * one_product).abs() < 1e-12, "{}", p.gflop);
            let sum: f64 = p.dispatches.iter().map(|d| d.microseconds).sum();
            assert!(p.dispatches.iter().all(|d| d.microseconds >= 0.0) && (p.dispatch_sum_us - sum).abs() < 1e-9, "{p:?}");
            for _ in 0..2 {
                trained.train_batch(&ctx, &device_batch);
            }
            let (a, b) = (pollster::block_on(profiled.state(&ctx)).unwrap(), pollster::block_on(trained.state(&ctx)).unwrap());
            assert!(a == b, "the profiled batches trained differently");
        }
    }
}
