//! Trainer parity: a small RBM layer trained through the engine's `StackRun` exactly as the
//! CLI drives it (the layer on the device where the engine has one, `LayerTrainer`'s epochs
//! with a checkpoint after each), against an all-CPU run of the same settings and seed, and
//! against figures blessed from the CPU reference.
//!
//! Tolerances: both trainers draw the same Philox uniforms and ChaCha shuffle, so samples
//! agree except where a probability lies within rounding (GPU sigmoid and summation order) of
//! its uniform; a flipped sample moves the run by a few 1e-5. Epoch reconstruction errors must
//! agree to 1e-4 relative, weights and biases to 1e-3 of their largest magnitude (what
//! tests/gpu_trainer.rs allows for the same reasons), the device's per-epoch monitor to 1e-3.
//! The CPU engine is the reference itself: it must agree bit for bit.

use super::{close, normwise_gap};
use crate::engine_suite::Harness;
use crate::support::gpu_eval::stroke_bytes;
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::Backend;
use deepbelief::data::Dataset;
use deepbelief::engine::stack::{StackEvent, StackRun};
use deepbelief::engine::Engine;
use deepbelief::model::Rbm;
use deepbelief::train::config::CdConfig;
use deepbelief::train::monitor::EpochMetrics;
use deepbelief::train::{EpochReport, GreedyEvent, StackConfig};

/// 240 stroke images of 64 pixels: 12 batches of 20, small enough to learn visibly in four
/// epochs (tests/gpu_trainer.rs trains 784-pixel layers for the kernels' larger shapes).
fn data() -> Dataset {
    stroke_bytes(240, 64, 21)
}

fn stack(rbm: CdConfig) -> StackConfig {
    StackConfig { layers: vec![rbm.n_hidden], rbm, monitor_cases: 120, ..StackConfig::default() }
}

/// Hinton's fixed schedule with momentum and weight decay.
fn hinton() -> StackConfig {
    stack(CdConfig { n_hidden: 16, batch_size: Some(20), epochs: 4, init_trials: 2, init_cases: 100, seed: 7, ..CdConfig::hinton() })
}

/// The default adaptive schedule with k growing from 1 at epoch 3 (after the loss the device
/// would need a new plan: it must fail with an error, not a panic).
fn growing_k() -> StackConfig {
    stack(CdConfig { n_hidden: 16, batch_size: Some(20), epochs: 4, init_trials: 2, init_cases: 100, seed: 5, cd_k_rate: 0.5, ..CdConfig::default() })
}

/// An epoch as the run reported it.
struct Epoch {
    report: EpochReport,
    metrics: Option<EpochMetrics>,
    on_device: bool,
}

struct Trained {
    rbm: Rbm,
    epochs: Vec<Epoch>,
    /// The epoch the CPU resumed after, when the device was lost.
    resumed_at: Option<usize>,
}

/// Runs `config` to its end as the CLI does: the layer onto the engine's device when it has
/// one, each unit through `backend`; `lose_after` device epochs, the device is destroyed.
async fn train(engine: &Engine, backend: &dyn Backend, config: StackConfig, data: &Dataset, lose_after: Option<usize>) -> Result<Trained, String> {
    let mut run = StackRun::new(config, data, None).map_err(|e| e.to_string())?;
    let (mut epochs, mut resumed_at) = (Vec::<Epoch>::new(), None);
    loop {
        if lose_after.is_some_and(|n| epochs.iter().filter(|e| e.on_device).count() == n) && run.on_device() {
            engine.simulate_loss();
        }
        let on_device = run.on_device();
        match run.unit(backend, data).await.map_err(|e| format!("epoch {}: {e}", epochs.len() + 1))? {
            StackEvent::Greedy(GreedyEvent::LayerStarted { .. }) if engine.is_gpu() => {
                let placed = run.place_on_device(engine, data)?;
                ensure!(placed, "the device refused the layer");
            }
            StackEvent::Greedy(GreedyEvent::Epoch { report, metrics, .. }) => epochs.push(Epoch { report, metrics, on_device }),
            StackEvent::FellBack(fell) => {
                ensure!(on_device, "a fall-back from the CPU");
                resumed_at = Some(fell.resumed_at);
            }
            StackEvent::Greedy(GreedyEvent::Finished) => break,
            StackEvent::Greedy(_) => {}
        }
    }
    let recorded: Vec<usize> = run.record().layers[0].epochs.iter().map(|r| r.epoch).collect();
    let reported: Vec<usize> = epochs.iter().map(|e| e.report.epoch).collect();
    ensure!(recorded == reported, "the run recorded epochs {recorded:?}, reported {reported:?}");
    let rbm = run.into_greedy().dbn.layers.pop().ok_or("no layer trained")?;
    Ok(Trained { rbm, epochs, resumed_at })
}

/// Figures of a run, blessed from the CPU reference: each epoch's reconstruction error, the
/// root mean square of the trained weights, and four of them (after the hidden units' sort).
struct Blessed {
    errors: &'static [f64],
    weights_rms: f64,
    weights: [(usize, f32); 4],
}

const HINTON: Blessed = Blessed {
    errors: &[0.11036400930861488, 0.10349578118906852, 0.08830654944785157, 0.07262634084958694],
    weights_rms: 0.3000759636061726,
    weights: [(0, 0.056886442), (100, -0.2509634), (517, 0.31281382), (1023, -0.0114123635)],
};
const GROWING_K: Blessed = Blessed {
    errors: &[0.10950928370821397, 0.10235630899202458, 0.08610047012158546, 0.06819258433488622],
    weights_rms: 0.3580786396412358,
    weights: [(0, 0.106513485), (100, 0.44500333), (517, 0.5162589), (1023, 0.27004284)],
};

fn against_blessed(trained: &Trained, blessed: &Blessed) -> Result<(), String> {
    let errors: Vec<f64> = trained.epochs.iter().map(|e| e.report.reconstruction_error).collect();
    let rms = (trained.rbm.weights.iter().map(|&w| (w as f64).powi(2)).sum::<f64>() / trained.rbm.weights.len() as f64).sqrt();
    let picked: Vec<(usize, f32)> = blessed.weights.iter().map(|&(k, _)| (k, trained.rbm.weights[k])).collect();
    let described = format!("errors {errors:?}, weights_rms {rms:?}, weights {picked:?}");
    crate::support::check::log(&format!("figures: {described}"));
    ensure!(errors.len() == blessed.errors.len(), "{} epochs, blessed {}", errors.len(), blessed.errors.len());
    for (k, (&e, &b)) in errors.iter().zip(blessed.errors).enumerate() {
        ensure!(close(e, b, 1e-4), "epoch {}: reconstruction error {e} vs blessed {b} ({described})", k + 1);
    }
    ensure!(close(rms, blessed.weights_rms, 1e-4), "weights' rms {rms} vs blessed {} ({described})", blessed.weights_rms);
    let largest = trained.rbm.weights.iter().fold(0.0f32, |m, w| m.max(w.abs()));
    for &(k, b) in &blessed.weights {
        let w = trained.rbm.weights[k];
        ensure!((w - b).abs() <= 1e-3 * largest, "weight {k}: {w} vs blessed {b} ({described})");
    }
    Ok(())
}

/// Each epoch and the trained layer against the all-CPU run.
fn against_cpu(engine: &Engine, trained: &Trained, cpu: &Trained) -> Result<f64, String> {
    ensure!(trained.epochs.len() == cpu.epochs.len(), "{} epochs, the CPU ran {}", trained.epochs.len(), cpu.epochs.len());
    for (e, c) in trained.epochs.iter().zip(&cpu.epochs) {
        let (r, rc) = (&e.report, &c.report);
        ensure!((r.epoch, r.cd_k, r.stop) == (rc.epoch, rc.cd_k, rc.stop), "epoch/k/stop {:?}, the CPU's {:?}", (r.epoch, r.cd_k, r.stop), (rc.epoch, rc.cd_k, rc.stop));
        ensure!(close(r.reconstruction_error, rc.reconstruction_error, 1e-4), "epoch {}: reconstruction error {} vs CPU {}", r.epoch, r.reconstruction_error, rc.reconstruction_error);
        ensure!(close(r.learning_rate as f64, rc.learning_rate as f64, 1e-4), "epoch {}: learning rate {} vs CPU {}", r.epoch, r.learning_rate, rc.learning_rate);
        let (Some(m), Some(mc)) = (&e.metrics, &c.metrics) else { return Err(format!("epoch {}: the monitor's figures are missing", r.epoch)) };
        ensure!(close(m.free_energy_train, mc.free_energy_train, 1e-3) && close(m.recon_mse, mc.recon_mse, 1e-3), "epoch {}: monitor F {} / MSE {} vs CPU {} / {}", r.epoch, m.free_energy_train, m.recon_mse, mc.free_energy_train, mc.recon_mse);
    }
    let gap = normwise_gap(&trained.rbm, &cpu.rbm);
    if engine.is_gpu() {
        ensure!(gap < 1e-3, "the trained layer is {gap:.3e} of max|w| from the CPU's");
    } else {
        ensure!(trained.rbm == cpu.rbm, "the CPU engine's layer differs from the reference run's ({gap:e})");
    }
    Ok(gap)
}

/// Four epochs of Hinton's schedule on the engine (all on the device where it has one) land on
/// the all-CPU run and on the blessed figures.
pub async fn layer_matches_cpu_and_blessed_figures<H: Harness>(h: &H) -> Result<String, String> {
    let (engine, data) = (h.engine(), data());
    let trained = train(engine, &*engine.backend(), hinton(), &data, None).await?;
    let cpu = train(&Engine::Cpu, &CpuBackend, hinton(), &data, None).await?;
    let on_device = trained.epochs.iter().filter(|e| e.on_device).count();
    ensure!(on_device == if engine.is_gpu() { 4 } else { 0 }, "{on_device} of 4 epochs ran on the device");
    let gap = against_cpu(engine, &trained, &cpu)?;
    against_blessed(&trained, &HINTON)?;
    Ok(format!("{on_device} device epochs; weights {gap:.1e} of max|w| from the CPU's; blessed figures hold"))
}

/// Two epochs on the device, then the device is lost: the layer resumes on the CPU from the
/// second epoch's checkpoint and ends where an all-CPU run ends (on the CPU engine nothing is
/// lost and the run is the reference's).
pub async fn device_loss_resumes_on_cpu_like_an_all_cpu_run<H: Harness>(h: &H) -> Result<String, String> {
    let (engine, data) = (h.engine(), data());
    let trained = train(engine, &*engine.backend(), growing_k(), &data, Some(2)).await?;
    let cpu = train(&Engine::Cpu, &CpuBackend, growing_k(), &data, None).await?;
    let places: Vec<bool> = trained.epochs.iter().map(|e| e.on_device).collect();
    if engine.is_gpu() {
        ensure!(trained.resumed_at == Some(2), "resumed at {:?}, expected after epoch 2", trained.resumed_at);
        ensure!(places == [true, true, false, false], "epochs on the device: {places:?}, expected the first two");
    } else {
        ensure!(trained.resumed_at.is_none() && places.iter().all(|&d| !d), "the CPU engine fell back");
    }
    let ks: Vec<usize> = trained.epochs.iter().map(|e| e.report.cd_k).collect();
    ensure!(ks[0] == 1 && ks[2] > ks[1], "k by epoch {ks:?}: expected 1 growing after the loss (a new plan on the device)");
    let gap = against_cpu(engine, &trained, &cpu)?;
    against_blessed(&trained, &GROWING_K)?;
    Ok(format!("epochs on the device {places:?}, resumed after {:?}; weights {gap:.1e} of max|w| from the all-CPU run's; blessed figures hold", trained.resumed_at))
}
