//! A wgpu device for the GPU tests: natively on the adapter `WGPU_BACKEND` picks (Mesa lavapipe
//! in CI), in the browser on WebGPU. The adapter is printed, so a log says what ran.

use deepbelief::gpu::GpuContext;

#[cfg(not(target_arch = "wasm32"))]
pub fn context() -> GpuContext {
    let ctx = pollster::block_on(GpuContext::new()).expect("a wgpu adapter (install mesa-vulkan-drivers for lavapipe)");
    eprintln!("adapter: {:?}", ctx.summary());
    ctx
}

#[cfg(target_arch = "wasm32")]
pub async fn context() -> GpuContext {
    let ctx = GpuContext::new().await.expect("WebGPU adapter (Chromium needs --enable-unsafe-webgpu)");
    web_sys::console::log_1(&format!("adapter: {:?}", ctx.summary()).into());
    ctx
}
