#![cfg(target_arch = "wasm32")]
//! The Philox, GEMM and sampling kernels on WebGPU in headless Chromium (`wasm-pack test`),
//! against the CPU reference: the same bodies as the native suite (tests/support/gpu_kernels.rs).

mod support;

use deepbelief::gpu::gemm::{GemmVariant, Tiling};
use support::check::check;
use support::device::context;
use support::gpu_kernels;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn webgpu_philox_is_bit_identical() {
    check(gpu_kernels::philox_matches_cpu(&context().await).await);
}

#[wasm_bindgen_test]
async fn webgpu_gemm_products_match_cpu() {
    let shapes = [(100, 784, 500), (37, 53, 29), (1, 1, 1), (65, 130, 257)];
    check(gpu_kernels::gemm_matches_cpu(&context().await, &shapes, &Tiling::ALL, &[None, Some(1), Some(3)], &[None]).await);
}

#[wasm_bindgen_test]
async fn webgpu_gemm_u8_gather_matches_cpu() {
    check(gpu_kernels::gemm_u8_gather_matches_cpu(&context().await, &gpu_kernels::stroke_pixels(300), 784).await);
}

#[wasm_bindgen_test]
async fn webgpu_fused_bernoulli_matches_cpu() {
    check(gpu_kernels::fused_bernoulli_matches_cpu(&context().await).await);
}

#[wasm_bindgen_test]
async fn webgpu_bernoulli_matches_cpu() {
    check(gpu_kernels::bernoulli_matches_cpu(&context().await).await);
}

#[wasm_bindgen_test]
async fn webgpu_gaussian_noise_matches_cpu() {
    check(gpu_kernels::gaussian_noise_matches_cpu(&context().await).await);
}

#[wasm_bindgen_test]
async fn webgpu_prepared_calls_slots_offsets_and_one_pass_chain() {
    check(gpu_kernels::prepared_calls_and_offsets(&context().await).await);
}

#[wasm_bindgen_test]
async fn webgpu_many_workgroups_fold_into_the_grid() {
    check(gpu_kernels::many_workgroups_fold(&context().await).await);
}

#[wasm_bindgen_test]
async fn webgpu_gemm_throughput_is_measured() {
    let shapes = [(100, 784, 500, GemmVariant::Nn), (100, 500, 784, GemmVariant::Nt), (784, 100, 500, GemmVariant::Tn), (192, 576, 1024, GemmVariant::Nn)];
    check(gpu_kernels::throughput(&context().await, &shapes, 5).await);
}
