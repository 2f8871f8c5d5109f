#![cfg(not(target_arch = "wasm32"))]
//! shaders/local_rbm.wgsl on native wgpu (Mesa lavapipe in CI) against the CPU reference
//! (src/local_rbm/passes.rs): the up pass, and the down pass (per-position products, then the
//! gather over the cover lists), for untied and tied layers, 1–3 channels, Gaussian and binary
//! visible units, with batches and layers that are not multiples of the 64-wide blocks.

mod support;

use deepbelief::gpu::local_rbm::{hidden_probabilities, visible_expectations};
use deepbelief::local_rbm::{CoverLists, Geometry, LocalRbm, PassBuffers};
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

#[test]
fn device_passes_match_the_cpu_reference() {
    let ctx = context();
    let geometries = [
        (Geometry::new(10, 10, 1, 4, 2, 5, false).unwrap(), VisibleUnits::Gaussian),
        (Geometry::new(9, 7, 2, 3, 2, 20, false).unwrap(), VisibleUnits::Bernoulli),
        (Geometry::new(8, 8, 3, 4, 4, 3, false).unwrap(), VisibleUnits::Gaussian),
        (Geometry::new(7, 9, 1, 3, 1, 6, true).unwrap(), VisibleUnits::Bernoulli),
        // Past one 64 × 64 block in every direction: 70 units, 70 cases, 576 inputs.
        (Geometry::new(32, 32, 1, 24, 8, 70, false).unwrap(), VisibleUnits::Gaussian),
    ];
    for (k, (g, units)) in geometries.into_iter().enumerate() {
        let layer = random_layer(g, units, 5 + k as u64);
        let cases = if k == 4 { 70 } else { 19 };
        let s = RngStream::new(k as u64, 1, Purpose::DataSample);
        let visible: Vec<f32> = (0..(cases * g.n_visible()) as u64).map(|i| s.uniform(i)).collect();
        let mut buffers = PassBuffers::default();
        let mut cpu_hidden = vec![0.0; cases * g.n_hidden()];
        layer.hidden_probabilities(&visible, &mut cpu_hidden, &mut buffers);
        let gpu_hidden = pollster::block_on(hidden_probabilities(&ctx, &layer, &visible)).unwrap();
        let worst = gpu_hidden.iter().zip(&cpu_hidden).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(worst < 1e-5, "up, {g:?}: worst |gpu − cpu| {worst}");

        let cover = CoverLists::new(&g);
        let mut cpu_visible = vec![0.0; visible.len()];
        layer.visible_expectations(&cover, &cpu_hidden, &mut cpu_visible, &mut buffers);
        let gpu_visible = pollster::block_on(visible_expectations(&ctx, &layer, &cover, &cpu_hidden)).unwrap();
        let worst = gpu_visible.iter().zip(&cpu_visible).fold(0.0f32, |m, (a, b)| m.max((a - b).abs() / (1.0 + b.abs())));
        assert!(worst < 1e-5, "down, {g:?}: worst relative |gpu − cpu| {worst}");
    }
}

#[test]
fn device_cd1_batches_match_the_cpu_trainer() {
    use deepbelief::gpu::buffers::upload;
    use deepbelief::gpu::local_rbm_trainer::GpuLocalTrainer;
    use deepbelief::local_rbm::{LocalCdSettings, LocalCdTrainer};
    let ctx = context();
    let cases_per_batch = 21;
    for (k, (g, units)) in [
        (Geometry::new(12, 12, 1, 6, 3, 7, false).unwrap(), VisibleUnits::Gaussian),
        (Geometry::new(9, 9, 2, 3, 1, 5, true).unwrap(), VisibleUnits::Bernoulli),
        // The weight update past one 64 × 64 block both ways: 144 inputs × 70 units per bank.
        (Geometry::new(16, 16, 1, 12, 4, 70, false).unwrap(), VisibleUnits::Gaussian),
    ]
    .into_iter()
    .enumerate()
    {
        let s = RngStream::new(40 + k as u64, 1, Purpose::DataSample);
        let batch: Vec<f32> = (0..(cases_per_batch * g.n_visible()) as u64).map(|i| s.uniform(i)).collect();
        let settings = LocalCdSettings { visible_units: units, learning_rate: 0.05, seed: 9, ..Default::default() };
        let mut cpu = LocalCdTrainer::new(settings.clone(), g, &batch).unwrap();
        let start = cpu.model.clone();
        let mut gpu = GpuLocalTrainer::new(&ctx, &start, settings, cases_per_batch);
        let device_batch = upload(&ctx, "batch", &batch);
        for _ in 0..3 {
            cpu.train_batch(&batch);
            gpu.train_batch(&ctx, &device_batch);
        }
        let trained = pollster::block_on(gpu.model(&ctx)).unwrap();
        for (name, ours, reference, before) in [
            ("weights", &trained.weights, &cpu.model.weights, &start.weights),
            ("hidden_bias", &trained.hidden_bias, &cpu.model.hidden_bias, &start.hidden_bias),
            ("visible_bias", &trained.visible_bias, &cpu.model.visible_bias, &start.visible_bias),
        ] {
            let worst = ours.iter().zip(reference.iter()).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
            let moved = reference.iter().zip(before.iter()).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
            assert!(moved > 1e-3, "{name} moved {moved}: the check would be empty");
            assert!(worst < 2e-5, "{name}, {g:?}: worst |gpu − cpu| {worst} after 3 batches (largest change {moved})");
        }
    }
}

#[test]
fn engine_trains_a_layer_on_the_device_as_on_the_cpu() {
    use deepbelief::engine::Engine;
    use deepbelief::local_rbm::LocalCdSettings;
    let g = Geometry::new(12, 12, 1, 4, 4, 6, false).unwrap();
    let s = RngStream::new(77, 1, Purpose::DataSample);
    let cases: Vec<f32> = (0..(64 * g.n_visible()) as u64).map(|i| s.uniform(i) - 0.5).collect();
    let settings = LocalCdSettings { epochs: 2, batch_size: 16, learning_rate: 0.05, ..Default::default() };
    let cpu = pollster::block_on(Engine::Cpu.train_local_layer(settings.clone(), g, &cases, |_| {})).unwrap();
    let mut seen = 0;
    let gpu = pollster::block_on(Engine::Gpu(context()).train_local_layer(settings, g, &cases, |_| seen += 1)).unwrap();
    assert_eq!((cpu.backend, gpu.backend, seen, gpu.epochs.len()), ("cpu", "gpu", 2, 2));
    let worst = gpu.model.weights.iter().zip(&cpu.model.weights).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(worst < 5e-5, "8 batches: worst |gpu − cpu| weight {worst}");
    // The device's epoch figure is the model's mean-field error on the cases: what the CPU
    // reference computes for the device's model.
    // The device scores its epochs itself (mean-field passes there): the CPU's figure for the same model.
    let cpu_score = gpu.model.reconstruction_error(&cases);
    assert!((gpu.epochs[1].reconstruction_error - cpu_score).abs() <= 1e-4 * cpu_score, "the device's score {} against the CPU's {cpu_score}", gpu.epochs[1].reconstruction_error);
}

#[test]
fn layers_beyond_the_devices_grids_are_refused_by_flag() {
    use deepbelief::gpu::local_rbm_trainer::check_fit;
    let ctx = context();
    assert!(check_fit(&ctx, &Geometry::new(144, 144, 1, 24, 8, 192, false).unwrap(), 192).is_ok());
    // Stride 1 over 300²: 277² = 76,729 positions, more than one grid dimension holds.
    let error = check_fit(&ctx, &Geometry::new(300, 300, 1, 24, 1, 8, true).unwrap(), 16).unwrap_err();
    assert!(error.starts_with("patch positions (--stride): 76729 workgroups"), "{error}");
    // 1024 hidden units per patch at 192²: 484 × 576 × 1024 × 4 bytes of weights.
    let limit = ctx.device.limits().max_storage_buffer_binding_size;
    let big = Geometry::new(192, 192, 1, 24, 8, 1024, false).unwrap();
    if (big.weight_count() * 4) as u64 > limit {
        assert!(check_fit(&ctx, &big, 192).unwrap_err().contains("storage binding limit"));
    }
}

/// The banks split into groups (forced by a small binding limit) train exactly as unsplit:
/// every dispatch computes the same sums in the same order, the gather carries its partial
/// sums from group to group in ascending positions. Untied (5 groups of 3 positions and one of
/// 1 by the weights' limit; 8 groups of 2 by the products'), and tied at stride 1 (5 groups, by
/// the products alone).
#[test]
fn banks_split_into_groups_train_as_unsplit() {
    use deepbelief::gpu::buffers::upload;
    use deepbelief::gpu::local_rbm_trainer::{bank_groups, GpuLocalTrainer};
    use deepbelief::local_rbm::LocalCdSettings;
    let ctx = context();
    let cases = 13;
    let untied = Geometry::new(12, 12, 1, 6, 2, 7, false).unwrap(); // 4 × 4 = 16 positions
    let wide = Geometry::new(12, 12, 1, 6, 2, 20, false).unwrap(); // a bank (2,880 B) > a position's products (1,872 B)
    let tied = Geometry::new(9, 9, 2, 3, 1, 5, true).unwrap(); // 49 positions
    let bank = |g: &Geometry| (g.patch_inputs() * g.hidden_per_patch * 4) as u64;
    let products = |g: &Geometry| (cases * g.patch_inputs() * 4) as u64;
    let cases_of = [
        (wide, VisibleUnits::Gaussian, 3 * bank(&wide), 6), // 3 positions a group by the weights
        (untied, VisibleUnits::Gaussian, 2 * products(&untied), 8), // 2 by the products
        (tied, VisibleUnits::Bernoulli, 10 * products(&tied), 5),
    ];
    for (k, (g, units, limit, expected_groups)) in cases_of.into_iter().enumerate() {
        let plan = bank_groups(&g, cases, limit).unwrap();
        assert_eq!(plan.iter().map(|p| p.1).sum::<usize>(), g.positions(), "{plan:?}");
        assert!(plan.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0), "{plan:?}");
        let s = RngStream::new(60 + k as u64, 1, Purpose::DataSample);
        let batch: Vec<f32> = (0..(cases * g.n_visible()) as u64).map(|i| s.uniform(i)).collect();
        let settings = LocalCdSettings { visible_units: units, learning_rate: 0.05, seed: 3, ..Default::default() };
        let start = random_layer(g, units, 11 + k as u64);
        let mut whole = GpuLocalTrainer::new(&ctx, &start, settings.clone(), cases);
        let mut split = GpuLocalTrainer::with_binding_limit(&ctx, &start, settings, cases, limit);
        assert_eq!(whole.group_count(), 1);
        assert_eq!(split.group_count(), expected_groups, "case {k}: {plan:?}");
        let device_batch = upload(&ctx, "batch", &batch);
        for _ in 0..3 {
            whole.train_batch(&ctx, &device_batch);
            split.train_batch(&ctx, &device_batch);
        }
        let (a, va) = pollster::block_on(whole.state(&ctx)).unwrap();
        let (b, vb) = pollster::block_on(split.state(&ctx)).unwrap();
        let moved = a.weights.iter().zip(&start.weights).fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
        assert!(moved > 1e-3, "the weights moved {moved}: the check would be empty");
        assert!(a == b && va == vb, "case {k}: the split run differs from the whole one (worst weight gap {})", a.weights.iter().zip(&b.weights).fold(0.0f32, |m, (x, y)| m.max((x - y).abs())));
    }
}

/// The page's epoch-at-a-time session on the device: its epochs follow the CPU session's, and
/// a device destroyed after the first epoch hands the run to the CPU from that epoch's state
/// (the remaining epochs then equal a CPU trainer resumed from it).
#[test]
fn session_steps_on_the_device_and_falls_back_to_the_cpu() {
    use deepbelief::engine::local_session::LocalLayerSession;
    use deepbelief::engine::Engine;
    use deepbelief::local_rbm::LocalCdSettings;
    let g = Geometry::new(12, 12, 1, 4, 4, 6, false).unwrap();
    let s = RngStream::new(78, 1, Purpose::DataSample);
    let cases: Vec<f32> = (0..(64 * g.n_visible()) as u64).map(|i| s.uniform(i) - 0.5).collect();
    let settings = LocalCdSettings { epochs: 3, batch_size: 16, learning_rate: 0.05, ..Default::default() };
    let mut cpu = pollster::block_on(LocalLayerSession::start(&Engine::Cpu, g, settings.clone(), cases.clone())).unwrap();
    let mut gpu = pollster::block_on(LocalLayerSession::start(&Engine::Gpu(context()), g, settings, cases)).unwrap();
    assert!(gpu.on_device() && !cpu.on_device(), "{:?}", gpu.backend_reason());
    pollster::block_on(cpu.epoch()).unwrap();
    pollster::block_on(gpu.epoch()).unwrap();
    let gap = |a: &[f32], b: &[f32]| a.iter().zip(b).fold(0.0f32, |m, (x, y)| m.max((x - y).abs()));
    assert!(gap(&gpu.model().weights, &cpu.model().weights) < 5e-5, "epoch 1: the device's weights are {} from the CPU's", gap(&gpu.model().weights, &cpu.model().weights));
    gpu.simulate_device_loss();
    for _ in 0..2 {
        pollster::block_on(cpu.epoch()).unwrap();
        pollster::block_on(gpu.epoch()).unwrap();
    }
    assert!(!gpu.on_device() && gpu.backend_reason().is_some_and(|r| r.contains("failed in epoch 2")), "{:?}", gpu.backend_reason());
    assert!(gpu.done() && gpu.epochs().len() == 3);
    assert!(gap(&gpu.model().weights, &cpu.model().weights) < 5e-5, "after the fall-back the weights are {} from the CPU's", gap(&gpu.model().weights, &cpu.model().weights));
    assert!(pollster::block_on(gpu.epoch()).is_err(), "a fourth epoch was trained");
}

/// The default settings at a Raina-like overlap (24×24 patches 8 apart, 48², 192 units per
/// patch: each pixel under 9 patches) lower the reconstruction error over 3 epochs on the
/// device, as on the CPU (tests/local_rbm_train.rs); the old fixed rate 0.02 diverged here.
#[test]
fn default_rate_learns_at_rainas_overlap_on_the_device() {
    use deepbelief::bench::sparse_coding::grating_images;
    use deepbelief::local_rbm::crops::image_crops;
    use deepbelief::local_rbm::LocalCdSettings;
    let g = Geometry::new(48, 48, 1, 24, 8, 192, false).unwrap();
    let cases = image_crops(&grating_images(8, 128, 1), 48, 768, 1, VisibleUnits::Gaussian).unwrap();
    let settings = LocalCdSettings { epochs: 3, batch_size: 64, ..LocalCdSettings::for_layer(&g, VisibleUnits::Gaussian) };
    let start = deepbelief::local_rbm::LocalCdTrainer::new(settings.clone(), g, &cases).unwrap().model.reconstruction_error(&cases);
    let run = pollster::block_on(deepbelief::engine::Engine::Gpu(context()).train_local_layer(settings, g, &cases, |_| {})).unwrap();
    let errors: Vec<f64> = run.epochs.iter().map(|e| e.reconstruction_error).collect();
    assert!(errors.windows(2).all(|w| w[1] < w[0]) && errors[2] < 0.9 * start, "{start} then {errors:?}");
}
