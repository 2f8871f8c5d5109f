#![cfg(not(target_arch = "wasm32"))]
//! The first WGSL kernel on native wgpu (Mesa lavapipe in CI) against the CPU reference.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::{Activation, Backend, Weights};
use deepbelief::gpu::affine_sigmoid;
use support::device::context;

#[test]
fn affine_sigmoid_matches_cpu_reference() {
    let ctx = context();
    let (rows, n_in, n_out) = (100, 784, 130);
    let input: Vec<f32> = (0..rows * n_in).map(|k| ((k * 7919) % 256) as f32 / 255.0).collect();
    let weights: Vec<f32> = (0..n_in * n_out).map(|k| ((k as f32) * 0.013).sin() * 0.05).collect();
    let bias: Vec<f32> = (0..n_out).map(|k| (k as f32 * 0.1).cos()).collect();
    let gpu = pollster::block_on(affine_sigmoid::affine_sigmoid(&ctx, &input, &weights, &bias, rows, n_in, n_out)).unwrap();
    let mut cpu = vec![0.0; rows * n_out];
    CpuBackend.visible_to_hidden(Weights { values: &weights, n_visible: n_in, n_hidden: n_out }, &input, &bias, Activation::Sigmoid, &mut cpu);
    let max_diff = gpu.iter().zip(&cpu).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    // f32 sums of 784 terms in a different order: agreement to ~1e-6 absolute on outputs in (0, 1).
    assert!(max_diff < 1e-5, "max |gpu - cpu| = {max_diff}");
    assert!(gpu.iter().any(|&x| x > 0.6) && gpu.iter().any(|&x| x < 0.4), "outputs must not be constant");
}
