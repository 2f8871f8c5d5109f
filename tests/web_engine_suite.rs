#![cfg(target_arch = "wasm32")]
//! The engine suite (tests/engine_suite) on WebGPU in headless Chromium (`wasm-pack test
//! --headless --chrome`; Chromium's flags in webdriver.json). The per-operation checks are
//! skipped here: a browser cannot block on the device, so the engine's per-operation backend
//! is the CPU's (tests/web_gpu_gemm.rs and web_gpu_update.rs check those kernels).

#[macro_use]
mod support;
mod engine_suite;

use deepbelief::backend::Backend;
use deepbelief::engine::Engine;
use engine_suite::Harness;

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// The page's engine: a WebGPU device.
pub struct WebGpu {
    engine: Engine,
}

impl Harness for WebGpu {
    async fn open() -> Result<Self, String> {
        // Unlike a machine without a GPU, a browser without WebGPU here is misconfigured: fail.
        let engine = Engine::gpu().await.unwrap_or_else(|e| panic!("no WebGPU adapter ({e}); Chromium needs --enable-unsafe-webgpu"));
        if let Some(adapter) = engine.adapter() {
            support::check::log(&format!("adapter: {adapter:?}"));
        }
        Ok(WebGpu { engine })
    }

    fn engine(&self) -> &Engine {
        &self.engine
    }

    fn operations(&self) -> Option<&dyn Backend> {
        None
    }
}

mod webgpu {
    use super::*;
    crate::engine_suite::all_engine_checks!(WebGpu);
}
