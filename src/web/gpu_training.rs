//! WebGPU training for the page: the state behind `Playground::gpu_*`. The GPU trainer lives in
//! an `Rc<RefCell<..>>` so that an exported method can hand a `'static` future to
//! `future_to_promise`: the trainer is moved out for the await and moved back afterwards.
//! After every epoch the trainer's whole state is downloaded as a `CdCheckpoint` (cheap at the
//! page's sizes): the filters are drawn from it and, if the device is lost, the CPU resumes from
//! it exactly (same momentum, shuffle and random streams), so no finished epoch is lost. Each
//! epoch's event carries the per-epoch monitor (free energy of training and held-out cases,
//! …), measured on the device on the cases the CPU would measure.

use super::{js_error, to_js, Playground};
use crate::gpu::chains::GpuChains;
use crate::gpu::trainer::GpuCdTrainer;
use crate::gpu::GpuContext;
use crate::train::schedule::StopReason;
use crate::train::monitor::EpochMetrics;
use crate::train::{CdCheckpoint, CdTrainer, EpochReport, GreedyEvent};
use wasm_bindgen::prelude::*;

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
    /// Epochs finished on the device and not yet in `Playground::history`.
    pub pending_epochs: Vec<(usize, EpochReport)>,
}

impl GpuState {
    /// The device, wherever it is held: idle, or by the layer in training.
    pub fn context(&self) -> Option<crate::gpu::GpuContext> {
        self.ctx.clone().or_else(|| self.layer.as_ref().and_then(|l| l.trainer.as_ref()).map(|t| t.context().clone()))
    }
}

/// After an epoch on the device: the monitor's figures for it, measured there, and the
/// trainer's state. A failure of either is the device's, as one of the epoch.
async fn measured_epoch(trainer: &GpuCdTrainer, report: EpochReport) -> Result<(EpochReport, Option<EpochMetrics>, CdCheckpoint), String> {
    let metrics = trainer.measure_epoch().await.map_err(|e| e.to_string())?;
    let state = trainer.checkpoint().await.map_err(|e| e.to_string())?;
    Ok((report, metrics, state))
}

impl GpuLayer {
    pub fn finished(&self) -> Option<StopReason> {
        self.trainer.as_ref().and_then(|t| t.stopped)
    }
}

#[wasm_bindgen]
impl Playground {
    /// Creates the WebGPU device once (later calls reuse it); resolves to the adapter summary.
    pub fn gpu_connect(&self) -> js_sys::Promise {
        let state = self.gpu.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let has_device = state.borrow().ctx.is_some() || state.borrow().layer.is_some();
            if !has_device {
                let ctx = GpuContext::new().await.map_err(|e| JsValue::from(JsError::new(&e.to_string())))?;
                state.borrow_mut().ctx = Some(ctx);
            }
            let gpu = state.borrow();
            let summary = match (&gpu.ctx, &gpu.layer) {
                (Some(ctx), _) => ctx.summary(),
                (None, Some(layer)) => layer.trainer.as_ref().map(|t| t.context().summary()).ok_or_else(|| JsValue::from_str("the device is busy"))?,
                (None, None) => return Err(JsValue::from_str("no WebGPU device")),
            };
            to_js(&summary).map_err(JsValue::from)
        })
    }

    /// Moves the layer just started (after its `layer_started` event) onto the GPU. Returns
    /// `null` when it trains there, or the reason it stays on the CPU (unsupported settings,
    /// no device).
    pub fn gpu_begin_layer(&mut self) -> Result<Option<String>, JsError> {
        self.drain_gpu_history();
        let data = self.training_data.as_ref().ok_or_else(|| JsError::new("press Train first: no model is being trained"))?;
        let trainer = self.trainer.as_ref().ok_or_else(|| JsError::new("press Train first: no model is being trained"))?;
        let cpu = trainer.current_trainer().ok_or_else(|| JsError::new("no layer has been started"))?;
        if self.fallback.is_some() || cpu.mid_epoch() {
            return Ok(Some("the layer is part-way through its training on the CPU".into()));
        }
        let mut gpu = self.gpu.borrow_mut();
        if gpu.layer.is_some() {
            return Err(JsError::new("a layer is already training on the GPU"));
        }
        let Some(ctx) = gpu.ctx.take() else { return Ok(Some("no WebGPU device".into())) };
        let mut gpu_trainer = match GpuCdTrainer::from_cpu(ctx, cpu, trainer.layer_data(data)) {
            Ok(gpu_trainer) => gpu_trainer,
            Err(e) => return Ok(Some(e.to_string())),
        };
        // Every epoch carries the monitor, measured on the device like the CPU's.
        if let Err(e) = gpu_trainer.set_monitor(trainer.held_out(), trainer.config.monitor_cases) {
            gpu.ctx = Some(gpu_trainer.into_context());
            return Ok(Some(e.to_string()));
        }
        gpu.layer = Some(GpuLayer { layer: trainer.current_layer(), trainer: Some(gpu_trainer), synced: None });
        gpu.failure = None;
        Ok(None)
    }

    /// Whether the current layer is still training on the GPU (more `gpu_epoch` calls to make).
    pub fn gpu_layer_active(&self) -> bool {
        self.gpu.borrow().layer.as_ref().is_some_and(|l| l.trainer.is_some() && l.finished().is_none())
    }

    /// One epoch on the GPU, then a download of the weights; resolves to the same `epoch`
    /// event as `step()`. On failure (device loss) it rejects; call `gpu_fall_back` next.
    pub fn gpu_epoch(&self) -> js_sys::Promise {
        let state = self.gpu.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (layer, mut trainer) = {
                let mut gpu = state.borrow_mut();
                let layer = gpu.layer.as_mut().ok_or_else(|| JsValue::from_str("no layer is training on the GPU"))?;
                (layer.layer, layer.trainer.take().ok_or_else(|| JsValue::from_str("a GPU epoch is already running"))?)
            };
            let outcome = match trainer.train_epoch().await {
                Ok(report) => measured_epoch(&trainer, report).await,
                Err(e) => Err(e.to_string()),
            };
            let mut gpu = state.borrow_mut();
            match outcome {
                Ok((report, metrics, state)) => {
                    gpu.pending_epochs.push((layer, report.clone()));
                    let entry = gpu.layer.as_mut().expect("the layer stays while its epoch runs");
                    entry.synced = Some(state);
                    entry.trainer = Some(trainer);
                    to_js(&GreedyEvent::Epoch { layer, report, metrics }).map_err(JsValue::from)
                }
                Err(message) => {
                    // The device (and the trainer with it) is dropped; a later run makes a new one.
                    gpu.failure = Some(message.clone());
                    Err(JsValue::from(JsError::new(&message)))
                }
            }
        })
    }

    /// Testing hook for the fall-back path: destroys the WebGPU device, as a driver reset or a
    /// lost adapter would. The next `gpu_epoch` fails and `gpu_fall_back` resumes on the CPU.
    pub fn gpu_simulate_loss(&self) {
        if let Some(trainer) = self.gpu.borrow().layer.as_ref().and_then(|l| l.trainer.as_ref()) {
            trainer.context().device.destroy();
        }
    }

    /// After a failed `gpu_epoch`: the layer resumes on the CPU from the state of the last
    /// downloaded epoch (or from its initialisation if none finished), exactly as it would have
    /// gone on on the GPU.
    pub fn gpu_fall_back(&mut self) -> Result<(), JsError> {
        self.drain_gpu_history();
        let layer = self.gpu.borrow_mut().layer.take();
        self.gpu.borrow_mut().chains = None;
        let Some(GpuLayer { synced, .. }) = layer else { return Ok(()) };
        self.resume_on_cpu(synced)
    }

    /// When the GPU layer has finished: hands its weights to the greedy trainer (the next
    /// `step` closes the layer) and keeps the device for the next layer.
    pub(super) fn settle_gpu_layer(&mut self) -> Result<(), JsError> {
        let mut gpu = self.gpu.borrow_mut();
        let Some(stop) = gpu.layer.as_ref().and_then(|l| l.finished()) else { return Ok(()) };
        let layer = gpu.layer.take().expect("checked above");
        let gpu_trainer = layer.trainer.expect("finished implies present");
        gpu.ctx = Some(gpu_trainer.into_context());
        drop(gpu);
        let trainer = self.trainer.as_mut().ok_or_else(|| JsError::new("no model is being trained"))?;
        // Stopped before its first epoch: the layer keeps its initialisation.
        let (rbm, epochs) = match layer.synced {
            Some(state) => (state.rbm, state.epoch),
            None => (trainer.current_trainer().ok_or_else(|| JsError::new("no layer is in training"))?.rbm.clone(), 0),
        };
        trainer.adopt_trained_layer(rbm, epochs, stop).map_err(js_error)
    }

    /// Before a CPU batch: the layer training on the GPU continues on the CPU from its last
    /// downloaded epoch (as `gpu_fall_back` does), and the device stays for the next layer.
    pub(super) fn move_gpu_layer_to_cpu(&mut self) -> Result<(), JsError> {
        let mut gpu = self.gpu.borrow_mut();
        let Some(layer) = gpu.layer.as_ref() else { return Ok(()) };
        if layer.trainer.is_none() {
            return Err(JsError::new("a GPU epoch is running; step again when it has finished"));
        }
        let layer = gpu.layer.take().expect("checked above");
        gpu.ctx = layer.trainer.map(|t| t.into_context());
        drop(gpu);
        self.drain_gpu_history();
        self.resume_on_cpu(layer.synced)
    }

    /// The layer in training continues on the CPU from `synced` (or its initialisation).
    fn resume_on_cpu(&mut self, synced: Option<crate::train::CdCheckpoint>) -> Result<(), JsError> {
        let trainer = self.trainer.as_ref().ok_or_else(|| JsError::new("no model is being trained"))?;
        let cpu = trainer.current_trainer().ok_or_else(|| JsError::new("no layer is in training"))?;
        let state = synced.unwrap_or_else(|| cpu.checkpoint());
        self.fallback = Some(CdTrainer::resume(cpu.config.clone(), state).map_err(js_error)?);
        Ok(())
    }

    /// Moves the epochs reported by `gpu_epoch` (a future, which cannot reach `self`) into
    /// the layer histories.
    pub(super) fn drain_gpu_history(&mut self) {
        let pending = std::mem::take(&mut self.gpu.borrow_mut().pending_epochs);
        for (layer, report) in pending {
            self.record_epoch(layer, report);
        }
    }

    /// Drops a GPU layer of an abandoned run, keeping the device.
    pub(super) fn release_gpu_layer(&mut self) {
        let mut gpu = self.gpu.borrow_mut();
        if let Some(trainer) = gpu.layer.take().and_then(|l| l.trainer) {
            gpu.ctx = Some(trainer.into_context());
        }
    }

}
