#![cfg(target_arch = "wasm32")]
//! Runs in headless Chromium through `wasm-pack test`: a wgpu device on WebGPU executes
//! `shaders/affine_sigmoid.wgsl`, and its output must match the CPU reference.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::{Activation, Backend, Weights};
use deepbelief::gpu::affine_sigmoid;
use support::device::context;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn webgpu_affine_sigmoid_matches_cpu_reference() {
    let ctx = context().await;
    let (rows, n_in, n_out) = (64, 784, 100);
    let input: Vec<f32> = (0..rows * n_in).map(|k| ((k * 7919) % 256) as f32 / 255.0).collect();
    let weights: Vec<f32> = (0..n_in * n_out).map(|k| ((k as f32) * 0.013).sin() * 0.05).collect();
    let bias: Vec<f32> = (0..n_out).map(|k| (k as f32 * 0.1).cos()).collect();
    let gpu = affine_sigmoid::affine_sigmoid(&ctx, &input, &weights, &bias, rows, n_in, n_out).await.unwrap();
    let mut cpu = vec![0.0; rows * n_out];
    CpuBackend.visible_to_hidden(Weights { values: &weights, n_visible: n_in, n_hidden: n_out }, &input, &bias, Activation::Sigmoid, &mut cpu);
    let max_diff = gpu.iter().zip(&cpu).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
    assert!(max_diff < 1e-5, "max |gpu - cpu| = {max_diff}");
    assert!(gpu.iter().any(|&x| x > 0.6) && gpu.iter().any(|&x| x < 0.4));
}

#[wasm_bindgen_test]
async fn self_check_reports_agreement() {
    let ctx = context().await;
    let error = affine_sigmoid::self_check(&ctx).await.unwrap();
    assert!(error < 1e-5, "{error}");
}
