#![cfg(not(target_arch = "wasm32"))]
//! The CPU backend's GEMM-based kernels against plain triple loops.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::{sigmoid, Activation, Backend, Weights};
use deepbelief::rng::{Purpose, RngStream};

fn values(n: usize, seed: f32) -> Vec<f32> {
    (0..n).map(|k| (k as f32 * seed).sin() * 0.8).collect()
}

const ROWS: usize = 37;
const NV: usize = 53;
const NH: usize = 29;

#[test]
fn visible_to_hidden_matches_loops() {
    let (w, v, c) = (values(NV * NH, 0.31), values(ROWS * NV, 0.17), values(NH, 0.9));
    let mut out = vec![0.0; ROWS * NH];
    CpuBackend.visible_to_hidden(Weights { values: &w, n_visible: NV, n_hidden: NH }, &v, &c, Activation::Sigmoid, &mut out);
    for r in 0..ROWS {
        for j in 0..NH {
            let expected = sigmoid(c[j] + (0..NV).map(|i| v[r * NV + i] * w[i * NH + j]).sum::<f32>());
            assert!((out[r * NH + j] - expected).abs() < 1e-5, "({r},{j})");
        }
    }
}

#[test]
fn hidden_to_visible_matches_loops() {
    let (w, h, b) = (values(NV * NH, 0.23), values(ROWS * NH, 0.41), values(NV, 0.5));
    let mut out = vec![0.0; ROWS * NV];
    CpuBackend.hidden_to_visible(Weights { values: &w, n_visible: NV, n_hidden: NH }, &h, &b, Activation::Linear, &mut out);
    for r in 0..ROWS {
        for i in 0..NV {
            let expected = b[i] + (0..NH).map(|j| h[r * NH + j] * w[i * NH + j]).sum::<f32>();
            assert!((out[r * NV + i] - expected).abs() < 1e-4, "({r},{i})");
        }
    }
}

#[test]
fn accumulate_outer_matches_loops() {
    let (v, h) = (values(ROWS * NV, 0.13), values(ROWS * NH, 0.29));
    let mut grad = values(NV * NH, 0.7);
    let start = grad.clone();
    CpuBackend.accumulate_outer((NV, NH), &v, &h, -0.25, &mut grad);
    for i in 0..NV {
        for j in 0..NH {
            let expected = start[i * NH + j] - 0.25 * (0..ROWS).map(|r| v[r * NV + i] * h[r * NH + j]).sum::<f32>();
            assert!((grad[i * NH + j] - expected).abs() < 1e-4, "({i},{j})");
        }
    }
}

#[test]
fn bernoulli_follows_its_stream_and_probabilities() {
    let probabilities: Vec<f32> = (0..20_000).map(|k| (k % 10) as f32 / 10.0).collect();
    let stream = RngStream::new(5, 0, Purpose::HiddenSample);
    let mut samples = vec![0.0; probabilities.len()];
    CpuBackend.bernoulli(&probabilities, stream, &mut samples);
    for (k, (&s, &p)) in samples.iter().zip(&probabilities).enumerate() {
        assert_eq!(s, if stream.uniform(k as u64) < p { 1.0 } else { 0.0 });
    }
    let ones_at_07: f32 = samples.iter().zip(&probabilities).filter(|(_, &p)| p == 0.7).map(|(s, _)| s).sum();
    assert!((ones_at_07 / 2000.0 - 0.7).abs() < 0.04);
    assert!(samples.iter().zip(&probabilities).all(|(&s, &p)| p != 0.0 || s == 0.0));
}
