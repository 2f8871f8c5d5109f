//! The engine behind `Playground::gpu_*` and the choice of backend: which engine a run uses
//! (`engine::Engine::choose_with`, the rule the CLI uses too) and the layer training outside the
//! greedy trainer (`engine::layer::LayerTrainer`: epochs on the device with a checkpoint after
//! each, resumed on the CPU when the device is lost). Both live in an `Rc<RefCell<..>>` so that
//! an exported method can hand a `'static` future to `future_to_promise`: the layer is moved
//! out for the await and moved back afterwards. The worker only calls these and posts events.

use super::{js_error, to_js, Playground};
use crate::engine::chains::Chains;
use crate::engine::layer::{LayerEvent, LayerTrainer};
use crate::engine::{Engine, EngineChoice};
use crate::model::Rbm;
use crate::train::{EpochReport, GreedyEvent};
use wasm_bindgen::prelude::*;

#[derive(Default)]
pub(super) struct EngineState {
    /// The device, created once and reused across layers and runs while it works.
    pub engine: Option<Engine>,
    /// The layer training outside the greedy trainer: on the device, or on the CPU after a
    /// fall-back or a step by batches. `None` while a device epoch is awaited (`busy`).
    pub layer: Option<LayerTrainer>,
    pub busy: bool,
    /// The weights of the layer in training while its epoch is awaited, to draw meanwhile.
    pub shown: Option<Rbm>,
    /// Generative chains on the device (`None` while a read-back is awaited).
    pub chains: Option<Chains>,
    /// Epochs finished on the device and not yet in `Playground::run`.
    pub pending_epochs: Vec<(usize, EpochReport)>,
}

impl EngineState {
    /// The device's engine, unless it failed.
    pub fn device(&self) -> Option<Engine> {
        self.engine.clone().filter(|e| e.is_gpu() && e.failure().is_none())
    }
}

/// What the page trains on, and why not the GPU where it does not.
#[derive(serde::Serialize)]
struct BackendChoice {
    backend: &'static str,
    reason: Option<String>,
}

/// The device, made once (or again after a failure).
async fn connect(state: &std::rc::Rc<std::cell::RefCell<EngineState>>) -> Result<Engine, String> {
    if let Some(engine) = state.borrow().device() {
        return Ok(engine);
    }
    let engine = Engine::gpu().await?;
    state.borrow_mut().engine = Some(engine.clone());
    Ok(engine)
}

#[wasm_bindgen]
impl Playground {
    /// Creates the WebGPU device once (later calls reuse it); resolves to the adapter summary.
    pub fn gpu_connect(&self) -> js_sys::Promise {
        let state = self.gpu.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let engine = connect(&state).await.map_err(|e| JsValue::from(JsError::new(&e)))?;
            to_js(&engine.adapter()).map_err(JsValue::from)
        })
    }

    /// The engine rule of `engine::Engine::choose_with` for the page: `choice` is `cpu`,
    /// `webgpu` or `auto`; `adapter_name` the browser's name of its adapter (wgpu has none on
    /// the web); `unavailable` why this browser has no WebGPU at all, if so. Resolves to
    /// `{backend: "webgpu" | "cpu", reason}`. The page cannot refuse to train, so a demanded
    /// WebGPU that cannot start trains on the CPU, with the reason.
    pub fn choose_backend(&self, choice: String, adapter_name: Option<String>, unavailable: Option<String>) -> js_sys::Promise {
        let state = self.gpu.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let cpu = |reason: String| BackendChoice { backend: "cpu", reason: Some(reason) };
            let choice: EngineChoice = serde_json::from_value(serde_json::Value::String(choice.clone())).map_err(|_| JsValue::from(JsError::new(&format!("backend: expected cpu, webgpu or auto, got {choice:?}"))))?;
            let chosen = match (choice, unavailable) {
                (EngineChoice::Cpu, _) => cpu("CPU was chosen".into()),
                (_, Some(reason)) => cpu(format!("WebGPU is not available ({reason})")),
                (_, None) => match Engine::choose_with(choice, adapter_name.as_deref(), || connect(&state)).await {
                    Ok(chosen) if chosen.engine.is_gpu() => BackendChoice { backend: "webgpu", reason: None },
                    Ok(chosen) => cpu(chosen.notice.unwrap_or_default()),
                    Err(e) => cpu(format!("WebGPU could not start ({e})")),
                },
            };
            to_js(&chosen).map_err(JsValue::from)
        })
    }

    /// Moves the layer just started (after its `layer_started` event) onto the GPU. Returns
    /// `null` when it trains there, or the reason it stays on the CPU (unsupported settings,
    /// no device).
    pub fn gpu_begin_layer(&mut self) -> Result<Option<String>, JsError> {
        self.drain_gpu_history();
        let data = self.training_data.as_ref().ok_or_else(|| JsError::new("press Train first: no model is being trained"))?;
        let trainer = self.trainer.as_ref().ok_or_else(|| JsError::new("press Train first: no model is being trained"))?;
        let mut state = self.gpu.borrow_mut();
        if state.busy || state.layer.as_ref().is_some_and(LayerTrainer::on_gpu) {
            return Err(JsError::new("a layer is already training on the GPU"));
        }
        if state.layer.is_some() {
            return Ok(Some("the layer is part-way through its training on the CPU".into()));
        }
        let Some(engine) = state.device() else { return Ok(Some("no WebGPU device".into())) };
        match LayerTrainer::on_device(&engine, trainer, data) {
            Ok(layer) => {
                state.layer = Some(layer);
                Ok(None)
            }
            Err(reason) => Ok(Some(reason)),
        }
    }

    /// Whether the current layer is still training on the GPU (more `gpu_epoch` calls to make).
    pub fn gpu_layer_active(&self) -> bool {
        let state = self.gpu.borrow();
        state.busy || state.layer.as_ref().is_some_and(|l| l.on_gpu() && !l.finished())
    }

    /// One epoch on the GPU, then a download of its state; resolves to the same `epoch` event
    /// as `step()`, or, when the device failed, to `{event: "fell_back", layer, message,
    /// resumed_at}`: the layer then goes on on the CPU (`step()`) from the last epoch that
    /// came back, exactly as it would have gone on on the GPU.
    pub fn gpu_epoch(&self) -> js_sys::Promise {
        let state = self.gpu.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let mut layer = {
                let mut state = state.borrow_mut();
                let layer = state.layer.take().filter(LayerTrainer::on_gpu);
                let Some(layer) = layer else { return Err(JsValue::from_str("no layer is training on the GPU (or a GPU epoch is already running)")) };
                state.shown = Some(layer.rbm().clone());
                state.busy = true;
                layer
            };
            let event = layer.device_epoch().await;
            let index = layer.layer();
            let mut state = state.borrow_mut();
            state.busy = false;
            state.shown = None;
            state.layer = Some(layer);
            match event.map_err(|e| JsValue::from(js_error(e)))? {
                LayerEvent::Epoch { report, metrics } => {
                    state.pending_epochs.push((index, report.clone()));
                    to_js(&GreedyEvent::Epoch { layer: index, report, metrics }).map_err(JsValue::from)
                }
                LayerEvent::FellBack { message, resumed_at } => {
                    // The failed device goes; a later run makes a new one.
                    state.engine = None;
                    state.chains = None;
                    to_js(&serde_json::json!({"event": "fell_back", "layer": index, "message": message, "resumed_at": resumed_at})).map_err(JsValue::from)
                }
            }
        })
    }

    /// Testing hook for the fall-back path: destroys the WebGPU device, as a driver reset or a
    /// lost adapter would. The next `gpu_epoch` resolves to `fell_back`.
    pub fn gpu_simulate_loss(&self) {
        if let Some(engine) = &self.gpu.borrow().engine {
            engine.simulate_loss();
        }
    }
}

impl Playground {
    /// When the layer training outside the greedy trainer has finished: hands its weights to
    /// the greedy trainer (the next `step` closes the layer); the device stays for the next.
    pub(super) fn settle_gpu_layer(&mut self) -> Result<(), JsError> {
        let mut state = self.gpu.borrow_mut();
        if !state.layer.as_ref().is_some_and(LayerTrainer::finished) {
            return Ok(());
        }
        let layer = state.layer.take().expect("checked above");
        drop(state);
        let trainer = self.trainer.as_mut().ok_or_else(|| JsError::new("no model is being trained"))?;
        layer.finish(trainer).map_err(js_error)
    }

    /// Moves the epochs reported by `gpu_epoch` (a future, which cannot reach `self`) into
    /// the run's record.
    pub(super) fn drain_gpu_history(&mut self) {
        let pending = std::mem::take(&mut self.gpu.borrow_mut().pending_epochs);
        for (layer, report) in pending {
            self.run.record_epoch(layer, report);
        }
    }

    /// Drops the layer of an abandoned run, keeping the device.
    pub(super) fn release_gpu_layer(&mut self) {
        let mut state = self.gpu.borrow_mut();
        state.layer = None;
        state.pending_epochs.clear();
    }
}
