//! The per-operation `Backend` (what trainers, evaluation and the supervised stage call around
//! the device-resident paths): each operation against plain loops, Bernoulli samples against
//! the shared Philox stream, and whole computations (a CD epoch, the supervised criterion and
//! its gradient) against the CPU reference. Tolerances: ~1e-5 absolute for products of 53
//! terms of size ≤ 0.8 (f32 rounding in another summation order), exact for samples.

use super::{close, skipped};
use crate::engine_suite::Harness;
use crate::support::check::wave;
use crate::support::gpu_eval::stroke_bytes;
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::{sigmoid, Activation, Backend, Weights};
use deepbelief::rng::{Purpose, RngStream};
use deepbelief::supervised::criterion::criterion_and_gradient;
use deepbelief::supervised::{Cases, Network, OutputKind};
use deepbelief::train::config::CdConfig;
use deepbelief::train::CdTrainer;

const ROWS: usize = 37;
const NV: usize = 53;
const NH: usize = 29;
const NO_OPERATIONS: &str = "the engine has no per-operation backend of its own here";

/// Runs `check` on the harness's backend and fails it if the backend left the device.
fn with_operations<H: Harness>(h: &H, check: impl FnOnce(&dyn Backend) -> Result<String, String>) -> Result<String, String> {
    let Some(backend) = h.operations() else { return skipped(NO_OPERATIONS) };
    let report = check(backend)?;
    ensure!(h.operations_stayed(), "{}: a call fell back to the CPU", backend.describe());
    Ok(format!("{}: {report}", backend.describe()))
}

pub async fn visible_to_hidden_matches_loops<H: Harness>(h: &H) -> Result<String, String> {
    with_operations(h, |backend| {
        let (w, v, c) = (wave(NV * NH, 0.31), wave(ROWS * NV, 0.17), wave(NH, 0.9));
        let mut out = vec![0.0; ROWS * NH];
        backend.visible_to_hidden(Weights { values: &w, n_visible: NV, n_hidden: NH }, &v, &c, Activation::Sigmoid, &mut out);
        let mut worst = 0.0f32;
        for r in 0..ROWS {
            for j in 0..NH {
                let expected = sigmoid(c[j] + (0..NV).map(|i| v[r * NV + i] * w[i * NH + j]).sum::<f32>());
                let gap = (out[r * NH + j] - expected).abs();
                ensure!(gap < 1e-5, "({r},{j}): {} vs loops {expected}", out[r * NH + j]);
                worst = worst.max(gap);
            }
        }
        Ok(format!("max gap {worst:.1e}"))
    })
}

pub async fn hidden_to_visible_matches_loops<H: Harness>(h: &H) -> Result<String, String> {
    with_operations(h, |backend| {
        let (w, hidden, b) = (wave(NV * NH, 0.23), wave(ROWS * NH, 0.41), wave(NV, 0.5));
        let mut out = vec![0.0; ROWS * NV];
        backend.hidden_to_visible(Weights { values: &w, n_visible: NV, n_hidden: NH }, &hidden, &b, Activation::Linear, &mut out);
        let mut worst = 0.0f32;
        for r in 0..ROWS {
            for i in 0..NV {
                let expected = b[i] + (0..NH).map(|j| hidden[r * NH + j] * w[i * NH + j]).sum::<f32>();
                let gap = (out[r * NV + i] - expected).abs();
                ensure!(gap < 1e-4, "({r},{i}): {} vs loops {expected}", out[r * NV + i]);
                worst = worst.max(gap);
            }
        }
        Ok(format!("max gap {worst:.1e}"))
    })
}

pub async fn accumulate_outer_matches_loops<H: Harness>(h: &H) -> Result<String, String> {
    with_operations(h, |backend| {
        let (v, hidden) = (wave(ROWS * NV, 0.13), wave(ROWS * NH, 0.29));
        let mut grad = wave(NV * NH, 0.7);
        let start = grad.clone();
        backend.accumulate_outer((NV, NH), &v, &hidden, -0.25, &mut grad);
        let mut worst = 0.0f32;
        for i in 0..NV {
            for j in 0..NH {
                let expected = start[i * NH + j] - 0.25 * (0..ROWS).map(|r| v[r * NV + i] * hidden[r * NH + j]).sum::<f32>();
                let gap = (grad[i * NH + j] - expected).abs();
                ensure!(gap < 1e-4, "({i},{j}): {} vs loops {expected}", grad[i * NH + j]);
                worst = worst.max(gap);
            }
        }
        Ok(format!("max gap {worst:.1e}"))
    })
}

/// Samples are exactly the shared stream's verdicts (bit-identical Philox on every backend).
pub async fn bernoulli_follows_its_stream<H: Harness>(h: &H) -> Result<String, String> {
    with_operations(h, |backend| {
        let probabilities: Vec<f32> = (0..20_000).map(|k| (k % 10) as f32 / 10.0).collect();
        let stream = RngStream::new(5, 0, Purpose::HiddenSample);
        let mut samples = vec![0.0; probabilities.len()];
        backend.bernoulli(&probabilities, stream, &mut samples);
        for (k, (&s, &p)) in samples.iter().zip(&probabilities).enumerate() {
            ensure!(s == if stream.uniform(k as u64) < p { 1.0 } else { 0.0 }, "sample {k} is {s}, the stream says otherwise (p {p})");
        }
        let ones_at_07: f32 = samples.iter().zip(&probabilities).filter(|(_, &p)| p == 0.7).map(|(s, _)| s).sum();
        ensure!((ones_at_07 / 2000.0 - 0.7).abs() < 0.04, "{ones_at_07} ones of 2000 at p = 0.7");
        ensure!(samples.iter().zip(&probabilities).all(|(&s, &p)| p != 0.0 || s == 0.0), "a one at p = 0");
        Ok(format!("20000 samples follow the stream; {ones_at_07} of 2000 at p = 0.7"))
    })
}

/// A whole CD-1 epoch through the trait (initialisation trials included) lands on the CPU
/// reference's weights, up to rounding and the rare near-tie sample it flips: epoch errors
/// within 1e-4 relative, weights within 1e-3 of max |w|.
pub async fn cd_epoch_matches_cpu<H: Harness>(h: &H) -> Result<String, String> {
    with_operations(h, |backend| {
        let data = stroke_bytes(300, 100, 31);
        let config = CdConfig { n_hidden: 16, batch_size: Some(50), epochs: 2, init_trials: 3, init_cases: 100, seed: 9, ..CdConfig::hinton() };
        let mut on_backend = CdTrainer::new(config.clone(), backend, &data).map_err(|e| e.to_string())?;
        let mut on_cpu = CdTrainer::new(config, &CpuBackend, &data).map_err(|e| e.to_string())?;
        ensure!(on_backend.init_best_trial == on_cpu.init_best_trial, "initialisation trial {} won, the CPU's {}", on_backend.init_best_trial, on_cpu.init_best_trial);
        for _ in 0..2 {
            let a = on_backend.train_epoch(backend, &data).map_err(|e| e.to_string())?;
            let b = on_cpu.train_epoch(&CpuBackend, &data).map_err(|e| e.to_string())?;
            ensure!(close(a.reconstruction_error, b.reconstruction_error, 1e-4), "epoch {}: reconstruction error {} vs CPU {}", a.epoch, a.reconstruction_error, b.reconstruction_error);
        }
        let gap = super::normwise_gap(&on_backend.rbm, &on_cpu.rbm);
        ensure!(gap < 1e-3, "weights {gap:.3e} of max|w| apart");
        Ok(format!("2 epochs, weights {gap:.1e} of max|w| from the CPU's"))
    })
}

/// The supervised criterion and its backprop gradient for a net with a logistic hidden layer
/// and a SoftMax output agree with the CPU reference (1e-5 relative; gradient 1e-4 of its max).
pub async fn supervised_gradient_matches_cpu<H: Harness>(h: &H) -> Result<String, String> {
    with_operations(h, |backend| {
        let sizes = [20, 12, 4];
        let mut net = Network::zeros(&sizes, OutputKind::SoftMax);
        net.set_params(&wave(net.n_params(), 0.37));
        let n = 41;
        let inputs: Vec<f32> = wave(n * 20, 0.11).iter().map(|x| x.abs()).collect();
        let targets: Vec<f32> = (0..n).flat_map(|r| (0..4).map(move |k| if k == r % 4 { 1.0 } else { 0.0 })).collect();
        let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 20, n_outputs: 4 };
        let mut on_backend = vec![0.0; net.n_params()];
        let mut on_cpu = vec![0.0; net.n_params()];
        let a = criterion_and_gradient(&net, backend, cases, 0.01, &mut on_backend);
        let b = criterion_and_gradient(&net, &CpuBackend, cases, 0.01, &mut on_cpu);
        ensure!(close(a, b, 1e-5), "criterion {a} vs CPU {b}");
        let scale = on_cpu.iter().fold(0.0f32, |m, g| m.max(g.abs()));
        for (k, (x, y)) in on_backend.iter().zip(&on_cpu).enumerate() {
            ensure!((x - y).abs() <= 1e-4 * scale, "gradient {k}: {x} vs CPU {y}");
        }
        Ok(format!("criterion {a:.6}, gradient within 1e-4 of its max"))
    })
}
