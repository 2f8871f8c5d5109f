#![cfg(not(target_arch = "wasm32"))]
//! The engine suite (tests/engine_suite) natively: on the CPU reference, and on wgpu through
//! the adapter `WGPU_BACKEND` picks (Mesa lavapipe in CI; skipped with a message where there is
//! none):
//! `WGPU_BACKEND=vulkan VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json cargo test --test engine_suite_native`.

#[macro_use]
mod support;
mod engine_suite;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::Backend;
use deepbelief::engine::Engine;
use deepbelief::gpu::blocking_backend::GpuBackend;
use engine_suite::Harness;

/// The CPU reference.
pub struct Cpu {
    engine: Engine,
}

impl Harness for Cpu {
    async fn open() -> Result<Self, String> {
        Ok(Cpu { engine: Engine::Cpu })
    }

    fn engine(&self) -> &Engine {
        &self.engine
    }

    fn operations(&self) -> Option<&dyn Backend> {
        Some(&CpuBackend)
    }
}

/// The wgpu kernels natively: the engine's device, and its blocking per-operation backend.
pub struct Wgpu {
    engine: Engine,
    operations: GpuBackend,
}

impl Harness for Wgpu {
    async fn open() -> Result<Self, String> {
        let engine = Engine::gpu().await.map_err(|e| format!("no wgpu adapter ({e}); install mesa-vulkan-drivers for lavapipe"))?;
        let Engine::Gpu(ctx) = &engine else { unreachable!("Engine::gpu gives a GPU engine") };
        support::check::log(&format!("adapter: {:?}", ctx.summary()));
        let operations = GpuBackend::new(ctx.clone());
        Ok(Wgpu { engine, operations })
    }

    fn engine(&self) -> &Engine {
        &self.engine
    }

    fn operations(&self) -> Option<&dyn Backend> {
        Some(&self.operations)
    }

    fn operations_stayed(&self) -> bool {
        !self.operations.has_failed()
    }
}

mod cpu {
    use super::*;
    crate::engine_suite::all_engine_checks!(Cpu);
}

mod lavapipe {
    use super::*;
    crate::engine_suite::all_engine_checks!(Wgpu);
}
