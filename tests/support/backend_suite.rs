//! One backend-neutral suite (burn's style): every check takes a `&dyn Backend` and compares it
//! with plain loops, the shared Philox streams, or the CPU reference for whole computations
//! (a CD epoch, the supervised criterion and its gradient). tests/cpu_backend.rs runs it on the
//! CPU reference, tests/gpu_backend.rs on the wgpu kernels (lavapipe in CI). The tolerances
//! are the documented ones: ~1e-5 relative for deterministic products, exact streams for samples.

use super::check::wave;
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::{sigmoid, Activation, Backend, Weights};
use deepbelief::data::Dataset;
use deepbelief::rng::{Purpose, RngStream};
use deepbelief::supervised::criterion::criterion_and_gradient;
use deepbelief::supervised::{Cases, Network, OutputKind};
use deepbelief::train::config::CdConfig;
use deepbelief::train::CdTrainer;

const ROWS: usize = 37;
const NV: usize = 53;
const NH: usize = 29;

pub fn visible_to_hidden_matches_loops(backend: &dyn Backend) {
    let (w, v, c) = (wave(NV * NH, 0.31), wave(ROWS * NV, 0.17), wave(NH, 0.9));
    let mut out = vec![0.0; ROWS * NH];
    backend.visible_to_hidden(Weights { values: &w, n_visible: NV, n_hidden: NH }, &v, &c, Activation::Sigmoid, &mut out);
    for r in 0..ROWS {
        for j in 0..NH {
            let expected = sigmoid(c[j] + (0..NV).map(|i| v[r * NV + i] * w[i * NH + j]).sum::<f32>());
            assert!((out[r * NH + j] - expected).abs() < 1e-5, "{}: ({r},{j}) {} vs {expected}", backend.describe(), out[r * NH + j]);
        }
    }
}

pub fn hidden_to_visible_matches_loops(backend: &dyn Backend) {
    let (w, h, b) = (wave(NV * NH, 0.23), wave(ROWS * NH, 0.41), wave(NV, 0.5));
    let mut out = vec![0.0; ROWS * NV];
    backend.hidden_to_visible(Weights { values: &w, n_visible: NV, n_hidden: NH }, &h, &b, Activation::Linear, &mut out);
    for r in 0..ROWS {
        for i in 0..NV {
            let expected = b[i] + (0..NH).map(|j| h[r * NH + j] * w[i * NH + j]).sum::<f32>();
            assert!((out[r * NV + i] - expected).abs() < 1e-4, "{}: ({r},{i})", backend.describe());
        }
    }
}

pub fn accumulate_outer_matches_loops(backend: &dyn Backend) {
    let (v, h) = (wave(ROWS * NV, 0.13), wave(ROWS * NH, 0.29));
    let mut grad = wave(NV * NH, 0.7);
    let start = grad.clone();
    backend.accumulate_outer((NV, NH), &v, &h, -0.25, &mut grad);
    for i in 0..NV {
        for j in 0..NH {
            let expected = start[i * NH + j] - 0.25 * (0..ROWS).map(|r| v[r * NV + i] * h[r * NH + j]).sum::<f32>();
            assert!((grad[i * NH + j] - expected).abs() < 1e-4, "{}: ({i},{j})", backend.describe());
        }
    }
}

/// Samples are exactly the shared stream's verdicts (bit-identical Philox on every backend).
pub fn bernoulli_follows_its_stream_and_probabilities(backend: &dyn Backend) {
    let probabilities: Vec<f32> = (0..20_000).map(|k| (k % 10) as f32 / 10.0).collect();
    let stream = RngStream::new(5, 0, Purpose::HiddenSample);
    let mut samples = vec![0.0; probabilities.len()];
    backend.bernoulli(&probabilities, stream, &mut samples);
    for (k, (&s, &p)) in samples.iter().zip(&probabilities).enumerate() {
        assert_eq!(s, if stream.uniform(k as u64) < p { 1.0 } else { 0.0 }, "{}: sample {k}", backend.describe());
    }
    let ones_at_07: f32 = samples.iter().zip(&probabilities).filter(|(_, &p)| p == 0.7).map(|(s, _)| s).sum();
    assert!((ones_at_07 / 2000.0 - 0.7).abs() < 0.04);
    assert!(samples.iter().zip(&probabilities).all(|(&s, &p)| p != 0.0 || s == 0.0));
}

/// A whole CD-1 epoch through the trait (initialisation trials included) lands on the CPU
/// reference's weights, up to rounding and the rare near-tie sample it flips.
pub fn cd_epoch_matches_cpu(backend: &dyn Backend, data: &Dataset) {
    let config = CdConfig { n_hidden: 16, batch_size: Some(50), epochs: 2, init_trials: 3, init_cases: 100, seed: 9, ..CdConfig::hinton() };
    let mut on_backend = CdTrainer::new(config.clone(), backend, data).unwrap();
    let mut on_cpu = CdTrainer::new(config, &CpuBackend, data).unwrap();
    assert_eq!(on_backend.init_best_trial, on_cpu.init_best_trial, "the same initialisation trial wins");
    for _ in 0..2 {
        let a = on_backend.train_epoch(backend, data).unwrap();
        let b = on_cpu.train_epoch(&CpuBackend, data).unwrap();
        let relative = (a.reconstruction_error - b.reconstruction_error).abs() / b.reconstruction_error;
        assert!(relative < 1e-4, "{}: reconstruction error {} vs {} (relative {relative:.2e})", backend.describe(), a.reconstruction_error, b.reconstruction_error);
    }
    let scale = on_cpu.rbm.weights.iter().fold(0.0f32, |m, w| m.max(w.abs()));
    let gap = on_backend.rbm.weights.iter().zip(&on_cpu.rbm.weights).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(gap < 1e-3 * scale, "{}: weights {gap:.3e} apart, {:.3e} of max|w|", backend.describe(), gap / scale);
}

/// The supervised criterion and its backprop gradient for a net with a logistic hidden layer
/// and a SoftMax output agree with the CPU reference.
pub fn supervised_gradient_matches_cpu(backend: &dyn Backend) {
    let sizes = [20, 12, 4];
    let mut net = Network::zeros(&sizes, OutputKind::SoftMax);
    let params: Vec<f32> = wave(net.n_params(), 0.37);
    net.set_params(&params);
    let n = 41;
    let inputs: Vec<f32> = wave(n * 20, 0.11).iter().map(|x| x.abs()).collect();
    let targets: Vec<f32> = (0..n).flat_map(|r| (0..4).map(move |k| if k == r % 4 { 1.0 } else { 0.0 })).collect();
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 20, n_outputs: 4 };
    let mut on_backend = vec![0.0; net.n_params()];
    let mut on_cpu = vec![0.0; net.n_params()];
    let a = criterion_and_gradient(&net, backend, cases, 0.01, &mut on_backend);
    let b = criterion_and_gradient(&net, &CpuBackend, cases, 0.01, &mut on_cpu);
    assert!((a - b).abs() <= 1e-5 * b.abs(), "{}: criterion {a} vs {b}", backend.describe());
    let scale = on_cpu.iter().fold(0.0f32, |m, g| m.max(g.abs()));
    for (k, (x, y)) in on_backend.iter().zip(&on_cpu).enumerate() {
        assert!((x - y).abs() <= 1e-4 * scale, "{}: gradient {k}: {x} vs {y}", backend.describe());
    }
}
