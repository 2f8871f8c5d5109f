#![cfg(not(target_arch = "wasm32"))]
//! `GpuCdTrainer` against the CPU's `CdTrainer` on real MNIST digits, natively on lavapipe:
//! `WGPU_BACKEND=vulkan VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json cargo test --test gpu_trainer -- --nocapture`.
//!
//! Both trainers draw the same Philox uniforms and the same ChaCha shuffle, so their samples
//! agree except where a probability lies within rounding (GPU vs CPU sigmoid and summation
//! order) of its uniform: a near-tie flips one binary sample. The tests print how many
//! weights moved apart and by how much, and bound the epoch figures relatively.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::{load_idx_dataset, Dataset};
use deepbelief::gpu::trainer::GpuCdTrainer;
use deepbelief::gpu::GpuContext;
use deepbelief::model::Rbm;
use deepbelief::train::config::{CdConfig, Schedule};
use deepbelief::train::{CdTrainer, EpochReport};
use std::path::Path;

fn mnist(n: usize) -> Dataset {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mnist/train-10k-images-idx3-ubyte.gz");
    load_idx_dataset(&path, None).expect("../shared/data/mnist (see /work/shared/TOOLCHAIN.md)").take_first(n)
}

fn context() -> GpuContext {
    pollster::block_on(GpuContext::new()).expect("a wgpu adapter (install mesa-vulkan-drivers for lavapipe)")
}

fn relative(gpu: f64, cpu: f64) -> f64 {
    if gpu == cpu {
        0.0
    } else {
        (gpu - cpu).abs() / cpu.abs().max(1e-30)
    }
}

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
    let data = mnist(cases);
    let mut cpu = CdTrainer::new(config, &CpuBackend, &data).expect("CPU trainer");
    let mut gpu = GpuCdTrainer::from_cpu(context(), &cpu, &data).expect("GPU trainer");
    eprintln!("adapter: {}", gpu.context().adapter_info.name);
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
fn hinton_fixed_schedule_matches_cpu() {
    let config = CdConfig { n_hidden: 32, batch_size: Some(50), epochs: 2, seed: 7, ..CdConfig::hinton() };
    let worst = parity(config, 500, 2, 1e-4);
    assert!(worst < 1e-3, "weights drifted apart: {worst:.3e} of max|w|");
}

#[test]
fn adaptive_schedule_with_sparsity_matches_cpu() {
    let config = CdConfig { n_hidden: 32, batch_size: Some(50), epochs: 2, init_trials: 3, init_cases: 200, seed: 11, ..CdConfig::default() };
    assert_eq!(config.schedule, Schedule::Adaptive);
    assert!(config.sparsity_penalty > 0.0);
    let worst = parity(config, 500, 2, 1e-4);
    assert!(worst < 1e-3, "weights drifted apart: {worst:.3e} of max|w|");
}

/// A short last batch (510 cases in batches of 50) and CD-2 with sampled visible units.
#[test]
fn tail_batch_cd2_sampled_visible_matches_cpu() {
    let config = CdConfig { n_hidden: 24, batch_size: Some(50), epochs: 1, cd_k_start: 2, cd_k_end: 2, mean_field_visible: false, seed: 3, ..CdConfig::hinton() };
    let worst = parity(config, 510, 1, 1e-3);
    assert!(worst < 1e-2, "weights drifted apart: {worst:.3e} of max|w|");
}

#[test]
fn unsupported_settings_are_named() {
    let data = mnist(100);
    let config = CdConfig { n_hidden: 8, batch_size: Some(50), persistent: true, init_trials: 1, ..CdConfig::default() };
    let cpu = CdTrainer::new(config, &CpuBackend, &data).unwrap();
    let error = GpuCdTrainer::from_cpu(context(), &cpu, &data).err().expect("persistent CD is not on the GPU yet");
    assert!(error.to_string().contains("persistent"), "{error}");
}

/// Device loss: one epoch on the GPU, download, drop the device, go on on the CPU from exactly
/// the downloaded weights until training completes.
#[test]
fn device_loss_continues_on_cpu() {
    let data = mnist(500);
    let config = CdConfig { n_hidden: 32, batch_size: Some(50), epochs: 3, seed: 5, ..CdConfig::hinton() };
    let cpu_start = CdTrainer::new(config.clone(), &CpuBackend, &data).unwrap();
    let mut gpu = GpuCdTrainer::from_cpu(context(), &cpu_start, &data).unwrap();
    let first = pollster::block_on(gpu.train_epoch()).unwrap();
    let downloaded = pollster::block_on(gpu.download_rbm()).unwrap();
    assert_ne!(downloaded.weights, cpu_start.rbm.weights, "the GPU epoch changed the weights");
    // Simulated loss: the trainer and its device are gone.
    let ctx = gpu.into_context();
    ctx.device.destroy();
    drop(ctx);

    // Continue on the CPU: the same configuration, the downloaded model, one epoch done.
    let mut cpu = cpu_start;
    cpu.rbm = downloaded.clone();
    cpu.epoch = first.epoch;
    cpu.rates.learning_rate = first.learning_rate;
    cpu.rates.momentum = first.momentum;
    assert_eq!(cpu.rbm.weights, downloaded.weights);
    let mut reports = Vec::new();
    while !cpu.finished() {
        reports.push(cpu.train_epoch(&CpuBackend, &data).unwrap());
    }
    assert_eq!(reports.first().unwrap().epoch, 2, "the CPU picks up at epoch 2");
    assert_eq!(reports.last().unwrap().epoch, 3);
    // Continuing, not restarting: the CPU's first epoch reconstructs at least about as well as
    // the GPU's (a restart from the random initialisation would be far worse).
    let restart = CdTrainer::new(config, &CpuBackend, &data).unwrap().rbm.reconstruction_error(&CpuBackend, &data, 500);
    eprintln!("GPU epoch 1 error {:.5}, CPU epochs 2.. {:?}, error of the initial model {restart:.5}", first.reconstruction_error, reports.iter().map(|r| r.reconstruction_error).collect::<Vec<_>>());
    assert!(reports[0].reconstruction_error < 1.1 * first.reconstruction_error);
    assert!(reports[0].reconstruction_error < restart);
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
