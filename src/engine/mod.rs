//! The engine seam: the one place that chooses a backend and drives it. The CLI (`src/bin/`)
//! and the wasm API (`src/web/`) hold an [`Engine`] and call it; neither imports `gpu::`.
//!
//! - [`Engine`]: the CPU reference, or a wgpu device ([`GpuContext`]); [`Engine::choose`] is
//!   the one rule for `cpu` / `gpu` (`webgpu`) / `auto`, where `auto` skips software adapters.
//! - [`layer`]: one RBM layer trained epoch by epoch on the device with a [`CdCheckpoint`]
//!   after each, resumed on the CPU from the last one when the device is lost.
//! - [`evaluate`]: reconstruction errors, free energies and AIS, device-resident or on the CPU.
//! - [`chains`]: generative Gibbs chains on either.
//! - [`stack`]: a greedy stack run, advanced one unit (or one batch) at a time, its layers on
//!   the device where they can be.
//! - [`run`]: the [`TrainingRun`] record that training events fold into, from which the CLI and
//!   the page build model.json, DEEP.LOG and the charts.
//!
//! docs/ARCHITECTURE.md draws the data flow.
//!
//! [`CdCheckpoint`]: crate::train::CdCheckpoint
//! [`TrainingRun`]: run::TrainingRun

#[cfg(not(target_arch = "wasm32"))]
pub mod autoencoder;
pub mod autoencoder_session;
pub mod bench;
pub mod chains;
pub mod evaluate;
pub mod layer;
pub mod local_rbm;
pub mod mlp;
pub mod local_session;
pub mod local_stack;
pub mod run;
pub mod sparse_coding;
pub mod recurrent;
pub mod sparse_coding_session;
pub mod stack;

use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::gpu::GpuContext;

pub use crate::gpu::AdapterSummary;

/// Where the work runs.
#[derive(Clone)]
pub enum Engine {
    Cpu,
    Gpu(GpuContext),
}

/// What the user asked for: `cpu`, `gpu` (the page says `webgpu`) or `auto`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
pub enum EngineChoice {
    Cpu,
    #[serde(alias = "webgpu")]
    Gpu,
    /// The GPU when a hardware adapter exists, else the CPU (with a notice).
    #[default]
    Auto,
}

/// The engine a choice gave, and why it is not the GPU where it is not (for a notice).
pub struct Chosen {
    pub engine: Engine,
    pub notice: Option<String>,
}

/// A software rasteriser (SwiftShader, llvmpipe/lavapipe, WARP) runs the kernels on the CPU,
/// far slower than the CPU engine itself. `name` is the adapter's name as whoever asked knows
/// it (on the web, wgpu leaves it empty and the browser's adapter info names it).
pub fn is_software_adapter(device_type: &str, name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    device_type == "Cpu" || ["swiftshader", "llvmpipe", "lavapipe", "warp"].iter().any(|s| name.contains(s))
}

impl EngineChoice {
    /// The choice as its flag value, for messages.
    pub fn name(self) -> &'static str {
        match self {
            EngineChoice::Cpu => "cpu",
            EngineChoice::Gpu => "gpu",
            EngineChoice::Auto => "auto",
        }
    }
}

impl Engine {
    /// The engine for `choice`: the CPU for `cpu`; for `gpu` the adapter's device whatever it
    /// is, or an error saying why there is none; for `auto` a hardware adapter's device, else
    /// the CPU with a notice. `adapter_name` names the adapter where wgpu cannot (the page's
    /// browser); natively it is `None`. `device` makes the device (natively with the
    /// adapter's own buffer limits, on the page WebGPU's).
    pub async fn choose_with<F, Fut>(choice: EngineChoice, adapter_name: Option<&str>, device: F) -> Result<Chosen, String>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Engine, String>>,
    {
        if choice == EngineChoice::Cpu {
            return Ok(Chosen { engine: Engine::Cpu, notice: None });
        }
        match device().await {
            Ok(engine) => {
                let summary = engine.adapter().ok_or("the device to choose is not a GPU")?;
                let name = adapter_name.filter(|n| !n.is_empty()).unwrap_or(&summary.name).to_string();
                if choice == EngineChoice::Auto && is_software_adapter(&summary.device_type, &name) {
                    return Ok(Chosen { engine: Engine::Cpu, notice: Some(format!("auto skips the software GPU adapter ({name}), which is slower than the CPU")) });
                }
                Ok(Chosen { engine, notice: None })
            }
            Err(e) if choice == EngineChoice::Auto => Ok(Chosen { engine: Engine::Cpu, notice: Some(format!("no usable GPU ({e})")) }),
            Err(e) => Err(e),
        }
    }

    /// [`Engine::choose_with`] natively: the device gets the adapter's own limits (large weight
    /// matrices need more than WebGPU's 128 MiB per binding).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn choose(choice: EngineChoice) -> Result<Chosen, String> {
        let device = || async { crate::gpu::buffers::context_with_adapter_limits().await.map(Engine::Gpu).map_err(|e| e.to_string()) };
        pollster::block_on(Self::choose_with(choice, None, device))
    }

    /// The device with WebGPU's default limits raised to the adapter's buffer sizes, whatever
    /// the adapter (the page's `gpu_connect`, `gpu-check`).
    pub async fn gpu() -> Result<Engine, String> {
        GpuContext::new().await.map(Engine::Gpu).map_err(|e| e.to_string())
    }

    pub fn is_gpu(&self) -> bool {
        matches!(self, Engine::Gpu(_))
    }

    pub fn adapter(&self) -> Option<AdapterSummary> {
        match self {
            Engine::Gpu(ctx) => Some(ctx.summary()),
            Engine::Cpu => None,
        }
    }

    /// The first failure of the device, once it has failed.
    pub fn failure(&self) -> Option<String> {
        match self {
            Engine::Gpu(ctx) => ctx.failure(),
            Engine::Cpu => None,
        }
    }

    /// What the engine is, for logs: the CPU reference's description, or the adapter's.
    pub fn describe(&self) -> String {
        match self {
            Engine::Cpu => CpuBackend.describe(),
            Engine::Gpu(ctx) => {
                let s = ctx.summary();
                format!("the GPU ({}, {})", s.name, s.backend)
            }
        }
    }

    /// The per-operation [`Backend`] for the work around device-resident epochs (initialisation
    /// trials, measurements, propagation, the supervised stage): the GPU kernels behind the
    /// trait natively, the CPU reference otherwise (a browser cannot block on the GPU).
    pub fn backend(&self) -> Box<dyn Backend> {
        match self {
            #[cfg(not(target_arch = "wasm32"))]
            Engine::Gpu(ctx) => Box::new(crate::gpu::blocking_backend::GpuBackend::new(ctx.clone())),
            _ => Box::new(CpuBackend),
        }
    }

    /// Runs the affine-sigmoid kernel on a fixed small problem; the largest difference from
    /// the CPU reference (0 on the CPU).
    pub async fn self_check(&self) -> Result<f32, String> {
        match self {
            Engine::Gpu(ctx) => crate::gpu::affine_sigmoid::self_check(ctx).await.map_err(|e| e.to_string()),
            Engine::Cpu => Ok(0.0),
        }
    }

    /// Testing hook: destroys the device, as a driver reset or a lost adapter would.
    pub fn simulate_loss(&self) {
        if let Engine::Gpu(ctx) = self {
            ctx.device.destroy();
        }
    }

    pub(crate) fn context(&self) -> Option<&GpuContext> {
        match self {
            Engine::Gpu(ctx) => Some(ctx),
            Engine::Cpu => None,
        }
    }
}
