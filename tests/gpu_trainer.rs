#![cfg(not(target_arch = "wasm32"))]
//! `GpuCdTrainer` against the CPU's `CdTrainer` on real MNIST digits, natively on lavapipe:
//! `WGPU_BACKEND=vulkan VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json cargo test --test gpu_trainer -- --nocapture`.
//!
//! Both trainers draw the same Philox uniforms and the same ChaCha shuffle, so their samples
//! agree except where a probability lies within rounding (GPU vs CPU sigmoid and summation
//! order) of its uniform: a near-tie flips one binary sample. The tests print how many
//! weights moved apart and by how much, and bound the epoch figures relatively.
//!
//! The engine suite (tests/engine_suite/checks/trainer.rs) runs the layer through the engine
//! on every backend (Hinton's schedule, and a device lost mid-layer resuming on the CPU); the
//! settings here are the other paths of the kernels, at MNIST's 784 pixels.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::Dataset;
use deepbelief::gpu::trainer::GpuCdTrainer;
use deepbelief::model::Rbm;
use deepbelief::train::config::{CdConfig, Schedule};
use deepbelief::train::{CdTrainer, EpochReport};
use support::check::relative;
use support::device::context;
use support::mnist::mnist;

/// max |Δw| / max |w|, and how many weights differ by more than 1e-5 of max |w|.
fn weight_gap(gpu: &[f32], cpu: &[f32]) -> (f64, f64, usize) {
    let scale = cpu.iter().fold(0.0f64, |m, &w| m.max((w as f64).abs()));
    let max = gpu.iter().zip(cpu).fold(0.0f64, |m, (&g, &c)| m.max((g as f64 - c as f64).abs()));
    let far = gpu.iter().zip(cpu).filter(|(&g, &c)| (g as f64 - c as f64).abs() > 1e-5 * scale).count();
    (max, max / scale, far)
}

fn compare_reports(label: &str, gpu: &EpochReport, cpu: &EpochReport, tolerance: f64) -> Vec<String> {
    let pairs = [
        ("reconstruction error", gpu.reconstruction_error, cpu.reconstruction_error),
        ("gradient cosine", gpu.gradient_cosine, cpu.gradient_cosine),
        ("gradient rms", gpu.gradient_rms, cpu.gradient_rms),
        ("learning rate", gpu.learning_rate as f64, cpu.learning_rate as f64),
        ("momentum", gpu.momentum as f64, cpu.momentum as f64),
    ];
    let mut failures = Vec::new();
    for (name, g, c) in pairs {
        let r = relative(g, c);
        eprintln!("{label}: {name}: gpu {g:.9} cpu {c:.9} (relative {r:.2e})");
        if r > tolerance {
            failures.push(format!("{label}: {name}: gpu {g} cpu {c} (relative {r:.2e} > {tolerance:e})"));
        }
    }
    eprintln!("{label}: increment ratio gpu {:.6e} cpu {:.6e}; cd_k {} / {}", gpu.increment_ratio, cpu.increment_ratio, gpu.cd_k, cpu.cd_k);
    if gpu.cd_k != cpu.cd_k || gpu.epoch != cpu.epoch || gpu.stop != cpu.stop {
        failures.push(format!("{label}: epoch/cd_k/stop differ: {:?} vs {:?}", (gpu.epoch, gpu.cd_k, gpu.stop), (cpu.epoch, cpu.cd_k, cpu.stop)));
    }
    failures
}

/// Trains `epochs` epochs on both and compares after each. Returns the worst normwise weight gap.
fn parity(config: CdConfig, cases: usize, epochs: usize, tolerance: f64) -> f64 {
    parity_on(config, &mnist(cases), epochs, tolerance)
}

fn parity_on(config: CdConfig, data: &Dataset, epochs: usize, tolerance: f64) -> f64 {
    parity_with(config, data, epochs, tolerance, true)
}

/// `fused`: the weight update as the gradient product's epilogue (lavapipe offers the storage
/// buffers it needs), else its own pass.
fn parity_with(config: CdConfig, data: &Dataset, epochs: usize, tolerance: f64, fused: bool) -> f64 {
    let data = data.clone();
    let mut cpu = CdTrainer::new(config, &CpuBackend, &data).expect("CPU trainer");
    let mut gpu = GpuCdTrainer::from_cpu(context(), &cpu, &data).expect("GPU trainer");
    gpu.set_fused_update(fused);
    assert_eq!(gpu.fused_update(), fused, "fused weight update on {}", gpu.context().adapter_info.name);
    eprintln!("adapter: {}; fused update: {fused}", gpu.context().adapter_info.name);
    let mut worst = 0.0f64;
    let mut failures = Vec::new();
    for epoch in 1..=epochs {
        let g = pollster::block_on(gpu.train_epoch()).expect("GPU epoch");
        let c = cpu.train_epoch(&CpuBackend, &data).expect("CPU epoch");
        let rbm: Rbm = pollster::block_on(gpu.download_rbm()).expect("download");
        let (max, rel, far) = weight_gap(&rbm.weights, &cpu.rbm.weights);
        let (_, rel_vb, _) = weight_gap(&rbm.visible_bias, &cpu.rbm.visible_bias);
        let (_, rel_hb, _) = weight_gap(&rbm.hidden_bias, &cpu.rbm.hidden_bias);
        eprintln!(
            "epoch {epoch}: max|Δw| {max:.3e} = {rel:.3e} of max|w|; {far} of {} weights differ by > 1e-5 of max|w|; biases: visible {rel_vb:.2e}, hidden {rel_hb:.2e}",
            rbm.weights.len()
        );
        worst = worst.max(rel);
        failures.extend(compare_reports(&format!("epoch {epoch}"), &g, &c, tolerance));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    worst
}

#[test]
fn adaptive_schedule_with_sparsity_matches_cpu() {
    let config = CdConfig { n_hidden: 32, batch_size: Some(50), epochs: 2, init_trials: 3, init_cases: 200, seed: 11, ..CdConfig::deep() };
    assert_eq!(config.schedule, Schedule::Adaptive);
    assert!(config.sparsity_penalty > 0.0);
    let worst = parity(config, 500, 2, 1e-4);
    assert!(worst < 1e-3, "weights drifted apart: {worst:.3e} of max|w|");
}

/// The weight update in a pass of its own (devices with WebGPU's default 8 storage buffers).
#[test]
fn separate_weight_update_matches_cpu() {
    let config = CdConfig { n_hidden: 32, batch_size: Some(50), epochs: 2, init_trials: 3, init_cases: 200, seed: 11, ..CdConfig::default() };
    let worst = parity_with(config, &mnist(500), 2, 1e-4, false);
    assert!(worst < 1e-3, "weights drifted apart: {worst:.3e} of max|w|");
    let config = CdConfig { n_hidden: 24, batch_size: Some(50), epochs: 2, persistent: true, n_persistent_chains: 40, seed: 13, ..CdConfig::hinton() };
    let worst = parity_with(config, &mnist(500), 2, 1e-3, false);
    assert!(worst < 1e-3, "weights drifted apart: {worst:.3e} of max|w|");
}

/// A short last batch (510 cases in batches of 50) and CD-2 with sampled visible units.
#[test]
fn tail_batch_cd2_sampled_visible_matches_cpu() {
    let config = CdConfig { n_hidden: 24, batch_size: Some(50), epochs: 1, cd_k_start: 2, cd_k_end: 2, mean_field_visible: false, seed: 3, ..CdConfig::hinton() };
    let worst = parity(config, 510, 1, 1e-3);
    assert!(worst < 1e-2, "weights drifted apart: {worst:.3e} of max|w|");
}

/// Persistent CD: 40 chains (fewer than the 50 rows of a batch) carried across batches.
#[test]
fn persistent_cd_matches_cpu() {
    let config = CdConfig { n_hidden: 24, batch_size: Some(50), epochs: 2, persistent: true, n_persistent_chains: 40, seed: 13, ..CdConfig::hinton() };
    let worst = parity(config, 500, 2, 1e-3);
    assert!(worst < 1e-3, "weights drifted apart: {worst:.3e} of max|w|");
}

/// Gaussian visible units on standardised data, with sampled visibles (Box–Muller on both).
#[test]
fn gaussian_visible_matches_cpu() {
    use deepbelief::model::VisibleUnits;
    let pixels = mnist(300);
    let mut values = vec![0.0f32; pixels.n_cases * pixels.n_inputs];
    pixels.gather_into(&(0..pixels.n_cases).collect::<Vec<_>>(), &mut values);
    // Standardise each pixel as a user would for Gaussian units (constant pixels stay 0).
    let n = pixels.n_inputs;
    for i in 0..n {
        let column: Vec<f32> = values.iter().skip(i).step_by(n).copied().collect();
        let mean = column.iter().sum::<f32>() / column.len() as f32;
        let sd = (column.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / column.len() as f32).sqrt();
        for v in values.iter_mut().skip(i).step_by(n) {
            *v = if sd > 1e-3 { (*v - mean) / sd } else { 0.0 };
        }
    }
    let data = Dataset::from_floats("standardised digits", n, values);
    let config = CdConfig {
        n_hidden: 16,
        batch_size: Some(50),
        epochs: 2,
        visible_units: VisibleUnits::Gaussian,
        mean_field_visible: false,
        learning_rate: 0.001,
        seed: 17,
        ..CdConfig::hinton()
    };
    let worst = parity_on(config, &data, 2, 1e-3);
    assert!(worst < 1e-3, "weights drifted apart: {worst:.3e} of max|w|");
}

/// Higher-layer style inputs: each case's probabilities are Bernoulli-sampled first.
#[test]
fn sampled_inputs_match_cpu() {
    let config = CdConfig { n_hidden: 24, batch_size: Some(50), epochs: 1, sample_inputs: true, seed: 19, ..CdConfig::hinton() };
    let worst = parity(config, 500, 1, 1e-3);
    assert!(worst < 1e-3, "weights drifted apart: {worst:.3e} of max|w|");
}

/// Divergence: a NaN in the data poisons the epoch; the GPU restores the model of the epoch's
/// start with momentum reset, exactly as the CPU does.
#[test]
fn divergence_rolls_back_like_the_cpu() {
    use deepbelief::train::TrainError;
    let clean = mnist(100);
    let config = CdConfig { n_hidden: 8, batch_size: Some(50), epochs: 3, init_trials: 1, seed: 23, ..CdConfig::hinton() };
    let start = CdTrainer::new(config.clone(), &CpuBackend, &clean).unwrap();
    let mut values = vec![0.0f32; clean.n_cases * clean.n_inputs];
    clean.gather_into(&(0..clean.n_cases).collect::<Vec<_>>(), &mut values);
    values[77 * clean.n_inputs + 300] = f32::NAN;
    let poisoned = Dataset::from_floats("poisoned", clean.n_inputs, values);
    let mut gpu = GpuCdTrainer::new(context(), config.clone(), &start.rbm, &poisoned).unwrap();
    let mut cpu = CdTrainer::resume(config, start.checkpoint()).unwrap();
    let gpu_error = pollster::block_on(gpu.train_epoch()).expect_err("NaN data must not train");
    let cpu_error = cpu.train_epoch(&CpuBackend, &poisoned).expect_err("NaN data must not train");
    assert!(matches!(gpu_error, TrainError::NonFinite { epoch: 1 }), "{gpu_error}");
    assert!(matches!(cpu_error, TrainError::NonFinite { epoch: 1 }), "{cpu_error}");
    let state = pollster::block_on(gpu.checkpoint()).unwrap();
    assert_eq!(state.rbm.weights, start.rbm.weights, "the GPU restored the weights of the epoch's start");
    assert_eq!(state.rbm.hidden_bias, start.rbm.hidden_bias);
    assert_eq!(state.sparsity_smoothed, cpu.checkpoint().sparsity_smoothed);
    assert!(state.weight_velocity.iter().all(|&v| v == 0.0), "momentum was reset");
    assert!(state.previous_gradient.is_none(), "no previous gradient after the reset");
    assert_eq!(state.epoch, 0);
}

/// The GPU benchmark's code path (what `deepbelief bench --backend gpu` runs), on a tiny shape.
#[test]
fn gpu_bench_runs() {
    let ctx = context();
    let data = deepbelief::bench::tile_cases(&mnist(200), 400);
    assert_eq!(data.n_cases, 400);
    let report = pollster::block_on(deepbelief::bench::bench_gpu(&ctx, &data, 16, 50, 1, false, 0)).expect("GPU bench");
    eprintln!("gpu_epoch_s {:.4} on {}", report.gpu_epoch_s, report.adapter.name);
    assert!(report.gpu_epoch_s > 0.0 && report.gpu_epoch_s.is_finite());
    assert_eq!(report.gemm.len(), 4);
    assert!(report.gemm.iter().all(|g| g.gflops > 0.0));
    let row = pollster::block_on(deepbelief::bench::bench_gpu_shape(&ctx, 64, 32, 16, 8)).expect("Raina-style shape");
    assert!(row.batches_timed >= 8 && row.seconds_per_million > 0.0, "{row:?}");
}
