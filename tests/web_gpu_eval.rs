#![cfg(target_arch = "wasm32")]
//! GPU evaluation, generative chains and AIS on WebGPU in headless Chromium (`wasm-pack test`),
//! against the CPU reference: the bodies of the native suite (tests/support/gpu_eval.rs, run by
//! tests/gpu_eval.rs) at small sizes, on synthetic digit-like bytes (no files in the browser).

mod support;

use deepbelief::model::VisibleUnits;
use support::check::check;
use support::device::context;
use support::gpu_eval::{self, random_dbn, random_rbm, stroke_bytes};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn webgpu_evaluation_matches_cpu() {
    let ctx = context().await;
    // 1100 cases: a full chunk of 1024 and a tail.
    let data = stroke_bytes(1100, 48, 5);
    check(gpu_eval::evaluation_matches_cpu(&ctx, &random_rbm(48, 20, 2, 0.5, VisibleUnits::Bernoulli), &data, usize::MAX, 1e-5).await);
    let floats = gpu_eval::binarised(&stroke_bytes(60, 20, 6));
    check(gpu_eval::evaluation_matches_cpu(&ctx, &random_rbm(20, 30, 3, 0.3, VisibleUnits::Gaussian), &floats, usize::MAX, 1e-5).await);
}

#[wasm_bindgen_test]
async fn webgpu_propagation_matches_cpu() {
    check(gpu_eval::propagation_matches_cpu(&context().await, &stroke_bytes(600, 100, 7), &[30, 10]).await);
}

#[wasm_bindgen_test]
async fn webgpu_generative_chains_match_cpu() {
    let ctx = context().await;
    let data = stroke_bytes(100, 64, 8);
    let cases: Vec<usize> = (0..16).map(|k| k * 6).collect();
    check(gpu_eval::chains_match_cpu(&ctx, &random_dbn(64, &[30, 20], 0.2, VisibleUnits::Bernoulli), Some((&data, &cases)), 0, 6, 0.0, 0.9).await);
    // 40 steps: across a submission boundary (32 per submission).
    check(gpu_eval::chains_match_cpu(&ctx, &random_dbn(64, &[24], 0.2, VisibleUnits::Bernoulli), None, 16, 40, 0.0, 0.9).await);
}

#[wasm_bindgen_test]
async fn webgpu_ais_matches_cpu_and_exact_log_z() {
    let ctx = context().await;
    let data = stroke_bytes(200, 50, 9);
    check(gpu_eval::ais_matches_cpu_run_for_run(&ctx, &random_rbm(50, 10, 7, 0.3, VisibleUnits::Bernoulli), &data, 20, 20, 1e-5).await);
    let small = stroke_bytes(200, 20, 10);
    check(gpu_eval::ais_matches_exact_log_z(&ctx, &random_rbm(20, 8, 8, 0.6, VisibleUnits::Bernoulli), &small, 200, 300, 0.05).await);
}
