#![cfg(target_arch = "wasm32")]
//! GPU evaluation kernels on WebGPU in headless Chromium (`wasm-pack test`), against the CPU
//! reference: the bodies of the native suite (tests/support/gpu_eval.rs, run by
//! tests/gpu_eval.rs) at small sizes, on synthetic digit-like bytes (no files in the browser).
//! Chains and AIS parity are the engine suite's (tests/web_engine_suite.rs).

mod support;

use deepbelief::model::VisibleUnits;
use support::check::check;
use support::device::context;
use support::gpu_eval::{self, random_rbm, stroke_bytes};
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
