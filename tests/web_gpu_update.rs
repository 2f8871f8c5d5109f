#![cfg(target_arch = "wasm32")]
//! The device-resident update, reduction, schedule and free-energy kernels on WebGPU in
//! headless Chromium, against the CPU reference: the same checks as the native
//! `gpu_kernels_update.rs` (shared in tests/support/gpu_update.rs).
//! `CHROMEDRIVER=/usr/bin/chromedriver WASM_BINDGEN_TEST_TIMEOUT=600 wasm-pack test --headless --chrome --release --mode no-install --test web_gpu_update`

mod support;

use deepbelief::model::VisibleUnits;
use deepbelief::train::config::Schedule;
use support::check::check;
use support::gpu_update::*;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

async fn gpu() -> Gpu {
    Gpu::new().await.expect("WebGPU adapter (Chromium needs --enable-unsafe-webgpu)")
}

#[wasm_bindgen_test]
async fn webgpu_weight_update() {
    let gpu = gpu().await;
    web_sys::console::log_1(&format!("adapter: {:?}", gpu.ctx.summary()).into());
    for (nv, nh) in [(784, 500), (53, 29)] {
        check(weight_update(&gpu, nv, nh, true).await);
        check(weight_update(&gpu, nv, nh, false).await);
    }
}

#[wasm_bindgen_test]
async fn webgpu_fused_gradient_update() {
    let gpu = gpu().await;
    check(fused_gradient_update(&gpu, 784, 500, 100, 100, true, false).await);
    check(fused_gradient_update(&gpu, 53, 29, 7, 13, false, false).await);
}

#[wasm_bindgen_test]
async fn webgpu_bias_steps_in_one_dispatch() {
    let gpu = gpu().await;
    check(bias_steps_in_one_dispatch(&gpu, 784, 500, 100, 100, false).await);
    check(bias_steps_in_one_dispatch(&gpu, 53, 29, 7, 13, false).await);
}

#[wasm_bindgen_test]
async fn webgpu_bias_steps_and_sparsity() {
    let gpu = gpu().await;
    check(bias_steps(&gpu, 784, 500, 100, 100).await);
    check(bias_steps(&gpu, 53, 29, 7, 13).await);
    check(bias_steps(&gpu, 784, 500, 2500, 1000).await);
}

#[wasm_bindgen_test]
async fn webgpu_schedule() {
    let gpu = gpu().await;
    check(schedule_rules(&gpu, Schedule::Adaptive).await);
    check(schedule_rules(&gpu, Schedule::Fixed).await);
}

#[wasm_bindgen_test]
async fn webgpu_reductions() {
    check(reductions(&gpu().await).await);
}

#[wasm_bindgen_test]
async fn webgpu_free_energy() {
    let gpu = gpu().await;
    check(free_energies(&gpu, VisibleUnits::Bernoulli, 784, 500, 50).await);
    check(free_energies(&gpu, VisibleUnits::Gaussian, 53, 29, 7).await);
}

#[wasm_bindgen_test]
async fn webgpu_device_resident_batches() {
    let gpu = gpu().await;
    check(device_batches(&gpu, 784, 500, 100, 6).await);
    check(device_batches(&gpu, 53, 29, 7, 8).await);
}
