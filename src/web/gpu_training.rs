//! WebGPU training for the page: the state behind `Playground::gpu_*`. The GPU trainer lives in
//! an `Rc<RefCell<..>>` so that an exported method can hand a `'static` future to
//! `future_to_promise`: the trainer is moved out for the await and moved back afterwards.
//! After every epoch the trainer's whole state is downloaded as a `CdCheckpoint` (cheap at the
//! page's sizes): the filters are drawn from it and, if the device is lost, the CPU resumes from
//! it exactly (same momentum, shuffle and random streams), so no finished epoch is lost.

use crate::gpu::chains::GpuChains;
use crate::gpu::trainer::GpuCdTrainer;
use crate::gpu::GpuContext;
use crate::train::schedule::StopReason;
use crate::train::CdCheckpoint;

pub(super) struct GpuLayer {
    pub layer: usize,
    /// `None` only while an epoch is awaited.
    pub trainer: Option<GpuCdTrainer>,
    /// The trainer's state after the last downloaded epoch.
    pub synced: Option<CdCheckpoint>,
}

#[derive(Default)]
pub(super) struct GpuState {
    /// The device, created once and reused across layers and runs while idle.
    pub ctx: Option<GpuContext>,
    pub layer: Option<GpuLayer>,
    /// The message of the last failed epoch (device loss), until the page falls back.
    pub failure: Option<String>,
    /// Generative chains on the device (`None` while a read-back is awaited).
    pub chains: Option<GpuChains>,
}

impl GpuState {
    /// The device, wherever it is held: idle, or by the layer in training.
    pub fn context(&self) -> Option<crate::gpu::GpuContext> {
        self.ctx.clone().or_else(|| self.layer.as_ref().and_then(|l| l.trainer.as_ref()).map(|t| t.context().clone()))
    }
}

impl GpuLayer {
    pub fn finished(&self) -> Option<StopReason> {
        self.trainer.as_ref().and_then(|t| t.stopped)
    }
}
