//! Training from the page: start a run, step it (one unit of greedy work at a time, so the
//! worker can post progress between steps), move layers to and from the WebGPU device, cancel.

use super::gpu_training::GpuLayer;
use super::{js_error, to_js, Playground};
use crate::backend::cpu::CpuBackend;
use crate::gpu::trainer::GpuCdTrainer;
use crate::gpu::GpuContext;
use crate::supervised::SupervisedConfig;
use crate::train::{CdTrainer, GreedyEvent, GreedyTrainer, StackConfig};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl Playground {
    /// Starts a fresh model from `config` (a `PageConfig`; missing fields take defaults) and
    /// returns its `Plan`. Every setting is checked before anything is replaced.
    pub fn start_training(&mut self, config: JsValue) -> Result<JsValue, JsError> {
        let config: PageConfig = serde_wasm_bindgen::from_value(config).map_err(|e| JsError::new(&format!("invalid training settings: {e}")))?;
        let data = self.data()?;
        if let Some(supervised) = &config.supervised {
            supervised.validate().map_err(|e| JsError::new(&format!("invalid setting supervised.{e}")))?;
        }
        let trainer = GreedyTrainer::new(config.stack.clone(), data).map_err(js_error)?;
        let plan = Plan::of(&config, data.n_inputs);
        self.trainer = Some(trainer);
        self.config = Some(config);
        self.history.clear();
        self.supervised = None;
        self.drop_chains();
        self.fallback = None;
        self.release_gpu_layer();
        to_js(&plan)
    }

    pub fn training_finished(&self) -> bool {
        self.trainer.as_ref().is_none_or(|t| t.finished())
    }

    /// One unit of work (initialise a layer, one epoch, or close a layer); returns the
    /// `GreedyEvent` describing it.
    pub fn step(&mut self) -> Result<JsValue, JsError> {
        self.settle_gpu_layer()?;
        let data = self.data.as_ref().ok_or_else(|| JsError::new("no data loaded yet"))?;
        let trainer = self.trainer.as_mut().ok_or_else(|| JsError::new("press Train first: no model is being trained"))?;
        if let Some(fallback) = &mut self.fallback {
            let layer = trainer.current_layer();
            if !fallback.finished() {
                let report = fallback.train_epoch(&CpuBackend, trainer.layer_data(data)).map_err(js_error)?;
                return to_js(&GreedyEvent::Epoch { layer, report, metrics: None });
            }
            let stop = fallback.stopped.expect("finished");
            let fallback = self.fallback.take().expect("checked above");
            trainer.adopt_trained_layer(fallback.rbm, fallback.epoch, stop).map_err(js_error)?;
        }
        let event = trainer.step(&CpuBackend, data).map_err(js_error)?;
        to_js(&event)
    }

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
        let data = self.data.as_ref().ok_or_else(|| JsError::new("no data loaded yet"))?;
        let trainer = self.trainer.as_ref().ok_or_else(|| JsError::new("press Train first: no model is being trained"))?;
        let cpu = trainer.current_trainer().ok_or_else(|| JsError::new("no layer has been started"))?;
        let mut gpu = self.gpu.borrow_mut();
        if gpu.layer.is_some() {
            return Err(JsError::new("a layer is already training on the GPU"));
        }
        let Some(ctx) = gpu.ctx.take() else { return Ok(Some("no WebGPU device".into())) };
        match GpuCdTrainer::from_cpu(ctx, cpu, trainer.layer_data(data)) {
            Ok(gpu_trainer) => {
                gpu.layer = Some(GpuLayer { layer: trainer.current_layer(), trainer: Some(gpu_trainer), synced: None });
                gpu.failure = None;
                Ok(None)
            }
            Err(e) => Ok(Some(e.to_string())),
        }
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
                Ok(report) => trainer.checkpoint().await.map(|state| (report, state)).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            let mut gpu = state.borrow_mut();
            match outcome {
                Ok((report, state)) => {
                    let entry = gpu.layer.as_mut().expect("the layer stays while its epoch runs");
                    entry.synced = Some(state);
                    entry.trainer = Some(trainer);
                    to_js(&GreedyEvent::Epoch { layer, report, metrics: None }).map_err(JsValue::from)
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
        let layer = self.gpu.borrow_mut().layer.take();
        self.gpu.borrow_mut().chains = None;
        let Some(GpuLayer { synced, .. }) = layer else { return Ok(()) };
        let trainer = self.trainer.as_ref().ok_or_else(|| JsError::new("no model is being trained"))?;
        let cpu = trainer.current_trainer().ok_or_else(|| JsError::new("no layer is in training"))?;
        let state = synced.unwrap_or_else(|| cpu.checkpoint());
        self.fallback = Some(CdTrainer::resume(cpu.config.clone(), state).map_err(js_error)?);
        Ok(())
    }

    /// When the GPU layer has finished: hands its weights to the greedy trainer (the next
    /// `step` closes the layer) and keeps the device for the next layer.
    fn settle_gpu_layer(&mut self) -> Result<(), JsError> {
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

    /// Drops a GPU layer of an abandoned run, keeping the device.
    fn release_gpu_layer(&mut self) {
        let mut gpu = self.gpu.borrow_mut();
        if let Some(trainer) = gpu.layer.take().and_then(|l| l.trainer) {
            gpu.ctx = Some(trainer.into_context());
        }
    }

    /// Ends the layer in training after its current epoch (Stop).
    pub fn cancel(&mut self) {
        if let Some(trainer) = &mut self.trainer {
            trainer.cancel_layer();
        }
        if let Some(fallback) = &mut self.fallback {
            fallback.cancel();
        }
        if let Some(trainer) = self.gpu.borrow_mut().layer.as_mut().and_then(|l| l.trainer.as_mut()) {
            trainer.cancel();
        }
    }

}

/// Everything the page trains with: the RBM stack and, optionally, the supervised stage.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct PageConfig {
    pub stack: StackConfig,
    /// The supervised layers (and optional fine-tuning) after the RBM stack; `None`: none.
    pub supervised: Option<SupervisedConfig>,
}

/// The run's steps in order, for the page's progress list.
#[derive(serde::Serialize)]
struct Plan {
    steps: Vec<PlanStep>,
}

#[derive(serde::Serialize)]
struct PlanStep {
    kind: &'static str,
    label: String,
}

impl Plan {
    fn of(config: &PageConfig, n_inputs: usize) -> Plan {
        let mut steps = Vec::new();
        let mut below = n_inputs;
        for (k, &size) in config.stack.layers.iter().enumerate() {
            steps.push(PlanStep { kind: "rbm", label: format!("RBM {} ({below} → {size})", k + 1) });
            below = size;
        }
        if let Some(supervised) = &config.supervised {
            let hidden: Vec<String> = supervised.hidden.iter().map(|h| h.to_string()).collect();
            let through = if hidden.is_empty() { String::new() } else { format!(" → {}", hidden.join(" → ")) };
            steps.push(PlanStep { kind: "supervised", label: format!("Supervised ({below}{through} → outputs)") });
            if supervised.fine_tune {
                steps.push(PlanStep { kind: "fine_tune", label: "Fine-tune the whole model".into() });
            }
        }
        Plan { steps }
    }
}
