#![cfg(not(target_arch = "wasm32"))]
//! The per-epoch monitor (`train::monitor::measure_epoch`: reconstruction errors, free energy of
//! training and held-out cases, pseudo-log-likelihood, hidden unit statistics) on layers trained
//! on the GPU, natively on lavapipe:
//! `WGPU_BACKEND=vulkan VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json cargo test --test gpu_monitor -- --nocapture`.
//!
//! Every epoch reports it, on the device or on the CPU after a lost device, and the device's
//! figures agree with the CPU reference's on the same weights, cases and seed. Tolerances, from
//! what `gpu::evaluate` measures on lavapipe (tests/gpu_eval.rs): 1e-5 relative for the means
//! (f32 sums on the device, f64 on the CPU), 1e-5 absolute for unit means and deviations, 1e-3
//! relative for skewness.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::{load_idx_dataset, Dataset};
use deepbelief::engine::layer::{train_layer, LayerEvent, LayerTrainer};
use deepbelief::engine::Engine;
use deepbelief::gpu::trainer::GpuCdTrainer;
use deepbelief::gpu::GpuContext;
use deepbelief::model::Rbm;
use deepbelief::train::monitor::{measure_epoch, EpochMetrics};
use deepbelief::train::{CdConfig, GreedyEvent, GreedyTrainer, StackConfig};
use support::device::context;
use support::gpu_eval::unit_stat_gaps;
use support::mnist::train_10k;

/// 600 training digits and 200 held-out ones after them.
fn train_and_held_out() -> (Dataset, Dataset) {
    let all = train_10k();
    (all.take_first(600), all.subset(&(600..800).collect::<Vec<_>>()))
}

fn stack(monitor_cases: usize) -> StackConfig {
    StackConfig {
        layers: vec![24],
        rbm: CdConfig { batch_size: Some(50), epochs: 3, init_trials: 2, seed: 11, ..CdConfig::default() },
        monitor_cases,
        ..StackConfig::default()
    }
}

/// A greedy trainer with its first layer started (on the CPU reference, as the CLI does).
fn started(config: StackConfig, data: &Dataset, held_out: &Dataset) -> GreedyTrainer {
    let mut greedy = GreedyTrainer::new(config, data).unwrap().with_held_out(held_out.clone());
    assert!(matches!(greedy.step(&CpuBackend, data).unwrap(), GreedyEvent::LayerStarted { .. }));
    greedy
}

fn relative(gpu: f64, cpu: f64) -> f64 {
    (gpu - cpu).abs() / cpu.abs().max(1e-30)
}

/// Differences of the device's figures from the CPU reference's beyond the tolerances above.
fn disagreements(label: &str, gpu: &EpochMetrics, cpu: &EpochMetrics) -> Vec<String> {
    let mut failures = Vec::new();
    let pairs = [
        ("recon_mse", Some(gpu.recon_mse), Some(cpu.recon_mse)),
        ("recon_cross_entropy", gpu.recon_cross_entropy, cpu.recon_cross_entropy),
        ("free_energy_train", Some(gpu.free_energy_train), Some(cpu.free_energy_train)),
        ("free_energy_held_out", gpu.free_energy_held_out, cpu.free_energy_held_out),
        ("pseudo_log_likelihood", gpu.pseudo_log_likelihood, cpu.pseudo_log_likelihood),
    ];
    for (name, g, c) in pairs {
        match (g, c) {
            (Some(g), Some(c)) => {
                let r = relative(g, c);
                eprintln!("{label}: {name}: gpu {g:.9} cpu {c:.9} (relative {r:.1e})");
                if r.is_nan() || r > 1e-5 {
                    failures.push(format!("{label}: {name}: gpu {g} cpu {c} (relative {r:.1e} > 1e-5)"));
                }
            }
            (None, None) => {}
            _ => failures.push(format!("{label}: {name}: gpu {g:?} cpu {c:?}")),
        }
    }
    if gpu.hidden_units.len() != cpu.hidden_units.len() {
        failures.push(format!("{label}: {} hidden units against {}", gpu.hidden_units.len(), cpu.hidden_units.len()));
    }
    let (mean, sd, skew) = unit_stat_gaps(&gpu.hidden_units, &cpu.hidden_units);
    eprintln!("{label}: units max |Δmean| {mean:.1e} |Δsd| {sd:.1e} relative Δskew {skew:.1e}");
    if !(mean <= 1e-5 && sd <= 1e-5 && skew <= 1e-3) {
        failures.push(format!("{label}: unit statistics: |Δmean| {mean:e}, |Δsd| {sd:e}, relative Δskew {skew:e}"));
    }
    failures
}

/// The CPU reference's monitor of `rbm` after `epoch` epochs of the greedy trainer's current
/// layer, with the seed `GreedyTrainer` gives it (the layer's seed xor the epoch).
fn cpu_reference(greedy: &GreedyTrainer, rbm: &Rbm, data: &Dataset, held_out: &Dataset, epoch: usize) -> EpochMetrics {
    let seed = greedy.current_trainer().unwrap().config.seed ^ epoch as u64;
    measure_epoch(&CpuBackend, rbm, data, Some(held_out), greedy.config.monitor_cases, seed)
}

/// Runs `train_layer` on the current layer; `after_event` sees each event and the device.
/// Returns the events and the device while it has not failed (the next layer may use it).
fn run_layer(greedy: &mut GreedyTrainer, data: &Dataset, mut after_event: impl FnMut(&LayerEvent, &GpuContext)) -> (Vec<LayerEvent>, Option<GpuContext>) {
    let ctx = context();
    let layer = LayerTrainer::on_device(&Engine::Gpu(ctx.clone()), greedy, data).unwrap();
    let mut events = Vec::new();
    pollster::block_on(train_layer(layer, greedy, data, |event| {
        after_event(&event, &ctx);
        events.push(event);
    }))
    .unwrap();
    let kept = ctx.failure().is_none().then_some(ctx);
    (events, kept)
}

fn epochs(events: &[LayerEvent]) -> Vec<(usize, Option<&EpochMetrics>)> {
    events
        .iter()
        .filter_map(|e| match e {
            LayerEvent::Epoch { report, metrics } => Some((report.epoch, metrics.as_ref())),
            LayerEvent::FellBack { .. } => None,
        })
        .collect()
}

/// Every epoch of a layer trained on the device carries the monitor, measured there; the last
/// one agrees with the CPU reference on the weights the layer ends with.
#[test]
fn gpu_epochs_carry_the_monitor_of_the_cpu_reference() {
    let (data, held_out) = train_and_held_out();
    let mut greedy = started(stack(400), &data, &held_out);
    let (events, kept) = run_layer(&mut greedy, &data, |_, _| {});
    assert!(kept.is_some(), "the device stays for the next layer");
    let epochs = epochs(&events);
    assert_eq!(epochs.iter().map(|e| e.0).collect::<Vec<_>>(), vec![1, 2, 3]);
    for (epoch, metrics) in &epochs {
        let metrics = metrics.unwrap_or_else(|| panic!("GPU epoch {epoch} has no monitor figures"));
        assert!(metrics.free_energy_train.is_finite() && metrics.free_energy_held_out.is_some_and(f64::is_finite), "epoch {epoch}: {metrics:?}");
    }
    let (last, metrics) = epochs[2];
    let rbm = &greedy.current_trainer().unwrap().rbm;
    let failures = disagreements("GPU epoch 3", metrics.unwrap(), &cpu_reference(&greedy, rbm, &data, &held_out, last));
    assert!(failures.is_empty(), "{failures:#?}");
}

/// With `monitor_cases` 0 the stack measures nothing, on the device as on the CPU.
#[test]
fn monitor_off_measures_nothing_on_the_gpu() {
    let (data, held_out) = train_and_held_out();
    let mut greedy = started(stack(0), &data, &held_out);
    let (events, _) = run_layer(&mut greedy, &data, |_, _| {});
    assert!(epochs(&events).iter().all(|(_, metrics)| metrics.is_none()));
}

/// The device is lost after the first epoch: the CPU finishes the layer, and its epochs carry
/// the monitor too, exactly the CPU reference's on the same weights.
#[test]
fn epochs_after_a_lost_device_carry_the_monitor() {
    let (data, held_out) = train_and_held_out();
    let mut greedy = started(stack(400), &data, &held_out);
    let (events, kept) = run_layer(&mut greedy, &data, |event, ctx| {
        if matches!(event, LayerEvent::Epoch { report, .. } if report.epoch == 1) {
            ctx.device.destroy();
        }
    });
    assert!(kept.is_none(), "a failed device is not kept");
    assert!(matches!(events[1], LayerEvent::FellBack { resumed_at: 1, .. }), "{events:?}");
    let epochs = epochs(&events);
    assert_eq!(epochs.iter().map(|e| e.0).collect::<Vec<_>>(), vec![1, 2, 3]);
    for (epoch, metrics) in &epochs {
        assert!(metrics.is_some(), "epoch {epoch} has no monitor figures");
    }
    let rbm = &greedy.current_trainer().unwrap().rbm;
    let reference = cpu_reference(&greedy, rbm, &data, &held_out, 3);
    let after_fallback = epochs[2].1.unwrap();
    assert_eq!(after_fallback.free_energy_train, reference.free_energy_train);
    assert_eq!(after_fallback.free_energy_held_out, reference.free_energy_held_out);
    assert_eq!(after_fallback.recon_mse, reference.recon_mse);
    assert_eq!(after_fallback.pseudo_log_likelihood, reference.pseudo_log_likelihood);
}

/// `deepbelief train --backend gpu`: every epoch line shows the free energy and
/// pseudo-log-likelihood (they were NaN), and each layer's last one is the CPU reference's on
/// the saved model (printed to 3 decimals; hidden units sorted, which neither figure sees).
#[test]
fn cli_gpu_epoch_lines_show_the_monitor() {
    use support::cli::*;
    let images = small_images();
    let out = temp_dir("gpu-monitor");
    let stdout = run_ok(&["train", "--train-images", images.to_str().unwrap(), "--rbm-layers", "30,20", "--epochs", "2", "--init-trials", "2", "--seed", "3", "--backend", "gpu", "--out", out.to_str().unwrap()]);
    // "layer epoch k recon lr momentum incr seconds F(train) pseudo-LL"
    let lines: Vec<(usize, usize, f64, f64)> = stdout
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (layer, epoch) = (fields.first()?.parse().ok()?, fields.get(1)?.parse().ok()?);
            (fields.len() == 10).then(|| (layer, epoch, fields[8].parse().unwrap(), fields[9].parse().unwrap()))
        })
        .collect();
    assert_eq!(lines.iter().map(|l| (l.0, l.1)).collect::<Vec<_>>(), vec![(1, 1), (1, 2), (2, 1), (2, 2)], "{stdout}");
    for &(layer, epoch, free_energy, pll) in &lines {
        assert!(free_energy.is_finite() && pll.is_finite(), "layer {layer} epoch {epoch}: F {free_energy} pseudo-LL {pll}\n{stdout}");
    }
    let model = deepbelief::format::read_model(&out).unwrap();
    let mut data = load_idx_dataset(images, None).unwrap();
    let stack = &model.config;
    for (k, rbm) in model.dbn.layers.iter().enumerate() {
        let (_, _, free_energy, pll) = lines[2 * k + 1];
        let seed = stack.layer_config(k).seed ^ 2;
        let reference = measure_epoch(&CpuBackend, rbm, &data, None, stack.monitor_cases, seed);
        let close = |printed: f64, exact: f64| (printed - exact).abs() <= 1e-3 + 1e-5 * exact.abs();
        eprintln!("layer {}: F printed {free_energy} reference {:.6}; pseudo-LL printed {pll} reference {:.6?}", k + 1, reference.free_energy_train, reference.pseudo_log_likelihood);
        assert!(close(free_energy, reference.free_energy_train), "layer {}: F {free_energy} against {}", k + 1, reference.free_energy_train);
        assert!(close(pll, reference.pseudo_log_likelihood.unwrap()), "layer {}: pseudo-LL {pll} against {:?}", k + 1, reference.pseudo_log_likelihood);
        data = deepbelief::train::greedy::propagate_dataset(&CpuBackend, rbm, &data);
    }
}

/// `GpuCdTrainer::measure_epoch` after each epoch against the CPU reference on the weights
/// downloaded then: u8 pixels, and f32 inputs (a propagated layer; Gaussian visible units,
/// which have no pseudo-likelihood or cross-entropy). Prints the monitor's time against the
/// epoch's.
#[test]
fn device_monitor_matches_the_cpu_after_every_epoch() {
    let (data, held_out) = train_and_held_out();
    let config = CdConfig { n_hidden: 24, batch_size: Some(50), epochs: 3, seed: 7, ..CdConfig::default() };
    let pixels = (config.clone(), data.clone(), held_out.clone());
    let first = deepbelief::train::CdTrainer::new(config.clone(), &CpuBackend, &data).unwrap().rbm;
    let propagate = |d: &Dataset| deepbelief::train::greedy::propagate_dataset(&CpuBackend, &first, d);
    let gaussian = (CdConfig { visible_units: deepbelief::model::VisibleUnits::Gaussian, learning_rate: 0.01, ..config }, propagate(&data), propagate(&held_out));
    let mut failures = Vec::new();
    for (label, (config, data, held_out)) in [("pixels", pixels), ("gaussian f32", gaussian)] {
        let cpu = deepbelief::train::CdTrainer::new(config.clone(), &CpuBackend, &data).unwrap();
        let mut gpu = GpuCdTrainer::from_cpu(context(), &cpu, &data).unwrap();
        gpu.set_monitor(Some(&held_out), 300).unwrap();
        while !gpu.finished() {
            let report = pollster::block_on(gpu.train_epoch()).unwrap();
            let started = std::time::Instant::now();
            let metrics = pollster::block_on(gpu.measure_epoch()).unwrap().expect("the monitor is on");
            eprintln!("{label}: epoch {} took {:.3} s, its monitor {:.3} s", report.epoch, report.seconds, started.elapsed().as_secs_f64());
            let rbm = pollster::block_on(gpu.download_rbm()).unwrap();
            let seed = deepbelief::train::monitor::monitor_seed(config.seed, report.epoch);
            let reference = measure_epoch(&CpuBackend, &rbm, &data, Some(&held_out), 300, seed);
            failures.extend(disagreements(&format!("{label} epoch {}", report.epoch), &metrics, &reference));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The monitor's cost against an epoch's: a 784 × 500 CD-1 layer, batches of 100, on 10,000
/// and 60,000 cases of random pixels, the stack's default 1,000 measured cases and 1,000
/// held-out ones. Timings, so not run by default; on a real GPU:
/// `cargo test --release --test gpu_monitor monitor_cost -- --ignored --nocapture`.
#[test]
#[ignore]
fn monitor_cost_against_an_epoch() {
    use deepbelief::data::CaseValues;
    let ctx = context();
    eprintln!("adapter: {}", ctx.adapter_info.name);
    for n_cases in [10_000, 60_000] {
        let pixels: Vec<u8> = (0..n_cases * 784).map(|k: usize| (k.wrapping_mul(2_654_435_761) >> 16) as u8).collect();
        let data = Dataset { n_cases, values: CaseValues::Bytes(pixels), ..Dataset::from_floats("random pixels", 784, vec![0.0; 784]) };
        let held_out = data.take_first(1000);
        let config = CdConfig { n_hidden: 500, batch_size: Some(100), epochs: 4, seed: 1, ..CdConfig::default() };
        let rbm = Rbm::initialise(config.visible_units, 784, 500, &vec![0.5; 784], &mut Rbm::seeded_rng(1));
        let mut gpu = GpuCdTrainer::new(ctx.clone(), config, &rbm, &data).unwrap();
        gpu.set_monitor(Some(&held_out), 1000).unwrap();
        let (mut epochs, mut monitors) = (Vec::new(), Vec::new());
        while !gpu.finished() {
            let started = std::time::Instant::now();
            pollster::block_on(gpu.train_epoch()).unwrap();
            epochs.push(started.elapsed().as_secs_f64());
            let started = std::time::Instant::now();
            pollster::block_on(gpu.measure_epoch()).unwrap().unwrap();
            monitors.push(started.elapsed().as_secs_f64());
        }
        // The first epoch and measure compile their pipelines.
        let (epoch, monitor) = (epochs[1..].iter().sum::<f64>() / 3.0, monitors[1..].iter().sum::<f64>() / 3.0);
        eprintln!("{n_cases} cases: epoch {epoch:.4} s, monitor {monitor:.4} s ({:.1}% of the epoch); per epoch {epochs:.4?}, {monitors:.4?}", 100.0 * monitor / epoch);
    }
}

/// The prepared monitor is `gpu::evaluate`'s measures called one by one, bit for bit: the same
/// kernels in the same order, here over several chunks of training and held-out cases (2,500 and
/// 1,200 of them, chunks of 1,024 with shorter tails).
#[test]
fn prepared_monitor_equals_the_evaluation_kernels() {
    use deepbelief::gpu::epoch_monitor::MonitorPlan;
    use deepbelief::gpu::evaluate::{EvalKernels, GpuDataset, GpuRbm};
    let ctx = context();
    let all = train_10k();
    let (data, held_out) = (all.take_first(3000), all.subset(&(3000..4200).collect::<Vec<_>>()));
    let rbm = deepbelief::train::CdTrainer::new(CdConfig { n_hidden: 24, seed: 3, ..CdConfig::default() }, &CpuBackend, &data).unwrap().rbm;
    let kernels = EvalKernels::new(&ctx);
    let (gpu_rbm, train, held) = (GpuRbm::upload(&ctx, &rbm), GpuDataset::upload(&ctx, &data).unwrap(), GpuDataset::upload(&ctx, &held_out).unwrap());
    let max_cases = 2500;
    let plan = MonitorPlan::new(&ctx, &kernels, GpuRbm::upload(&ctx, &rbm), GpuDataset::upload(&ctx, &data).unwrap(), Some(GpuDataset::upload(&ctx, &held_out).unwrap()), max_cases).unwrap();
    for seed in [1, 2] {
        let prepared = pollster::block_on(plan.measure(&ctx, seed)).unwrap();
        let recon = pollster::block_on(kernels.reconstruction_errors(&ctx, &gpu_rbm, &train, max_cases)).unwrap();
        assert_eq!(prepared.recon_mse, recon.mean_squared_error);
        assert_eq!(prepared.recon_cross_entropy, recon.cross_entropy);
        assert_eq!(prepared.free_energy_train, pollster::block_on(kernels.mean_free_energy(&ctx, &gpu_rbm, &train, max_cases, false)).unwrap());
        assert_eq!(prepared.free_energy_held_out, Some(pollster::block_on(kernels.mean_free_energy(&ctx, &gpu_rbm, &held, max_cases, false)).unwrap()));
        assert_eq!(prepared.pseudo_log_likelihood, Some(pollster::block_on(kernels.pseudo_log_likelihood(&ctx, &gpu_rbm, &train, max_cases, seed)).unwrap()));
        assert_eq!(prepared.hidden_units, pollster::block_on(kernels.hidden_unit_statistics(&ctx, &gpu_rbm, &train, max_cases)).unwrap());
    }
}
