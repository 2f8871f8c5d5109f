//! `--backend cpu|gpu|auto`. Every command that computes (`bench`, `train`, `eval`, `sample`)
//! asks [`BackendChoice::gpu_context`] for a device and takes its GPU path when it gets one,
//! the CPU `Backend` otherwise.

use deepbelief::gpu::GpuContext;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    Cpu,
    Gpu,
    /// The GPU when a wgpu adapter exists, else the CPU (with a notice on standard error).
    #[default]
    Auto,
}

impl BackendChoice {
    /// A GPU device for the choice: `None` for `cpu`, and for `auto` when no adapter is found
    /// (a notice says so on standard error); an error for `gpu` without an adapter. The
    /// device gets the adapter's own limits (large weight matrices need more than WebGPU's
    /// 128 MiB per binding).
    pub fn gpu_context(self) -> Result<Option<GpuContext>, String> {
        if self == BackendChoice::Cpu {
            return Ok(None);
        }
        match pollster::block_on(deepbelief::gpu::buffers::context_with_adapter_limits()) {
            // A software rasteriser (lavapipe, SwiftShader) is slower than the CPU backend, so
            // `auto` only takes real GPUs; `gpu` takes whatever adapter there is.
            Ok(ctx) if self == BackendChoice::Auto && ctx.adapter_info.device_type == wgpu::DeviceType::Cpu => {
                eprintln!("notice: the only GPU adapter is a software one ({}); running on the CPU", ctx.adapter_info.name);
                Ok(None)
            }
            Ok(ctx) => {
                let s = ctx.summary();
                eprintln!("GPU: {} ({}, {}, driver {})", s.name, s.backend, s.device_type, s.driver);
                Ok(Some(ctx))
            }
            Err(e) if self == BackendChoice::Auto => {
                eprintln!("notice: no usable GPU ({e}); running on the CPU");
                Ok(None)
            }
            Err(e) => Err(format!("--backend gpu: {e}")),
        }
    }
}
