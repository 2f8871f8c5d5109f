//! The engine behind `Playground::gpu_*` and the choice of backend: which engine a run uses
//! (`engine::Engine::choose_with`, the rule the CLI uses too), the device kept across runs,
//! and the device epochs of the run's layers (`engine::stack::StackRun`, which checkpoints each
//! and resumes on the CPU when the device is lost). Both live in an `Rc<RefCell<..>>` so that
//! an exported method can hand a `'static` future to `future_to_promise`: the layer is taken
//! out of the run for the await and handed back afterwards. The worker only calls these and
//! posts events.

use super::{js_error, to_js, Playground};
use crate::engine::chains::Chains;
use crate::engine::stack::{StackEvent, StackRun};
use crate::engine::{Engine, EngineChoice};
use wasm_bindgen::prelude::*;

#[derive(Default)]
pub(super) struct EngineState {
    /// The device, created once and reused across layers and runs while it works.
    pub engine: Option<Engine>,
    /// Generative chains on the device (`None` while a read-back is awaited).
    pub chains: Option<Chains>,
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
    /// no device, a device that refused or lost a layer of this run).
    pub fn gpu_begin_layer(&mut self) -> Result<Option<String>, JsError> {
        let mut stack = self.stack.borrow_mut();
        let stack = stack.as_mut().ok_or_else(|| JsError::new("press Train first: no model is being trained"))?;
        let data = self.training_data.as_ref().ok_or_else(|| JsError::new("press Train first: no model is being trained"))?;
        if stack.on_device() {
            return Err(JsError::new("a layer is already training on the GPU"));
        }
        let Some(engine) = self.gpu.borrow().device() else { return Ok(Some("no WebGPU device".into())) };
        match stack.place_on_device(&engine, data) {
            Ok(true) => Ok(None),
            Ok(false) => Ok(Some("the GPU refused or lost an earlier layer of this run".into())),
            Err(reason) => Ok(Some(reason)),
        }
    }

    /// Whether the current layer is still training on the GPU (more `gpu_epoch` calls to make).
    pub fn gpu_layer_active(&self) -> bool {
        self.stack.borrow().as_ref().is_some_and(StackRun::on_device)
    }

    /// One epoch on the GPU, then a download of its state; resolves to the same `epoch` event
    /// as `step()`, or, when the device failed, to `{event: "fell_back", layer, message,
    /// resumed_at}`: the layer then goes on on the CPU (`step()`) from the last epoch that
    /// came back, exactly as it would have gone on on the GPU.
    pub fn gpu_epoch(&self) -> js_sys::Promise {
        let stack = self.stack.clone();
        let state = self.gpu.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let no_layer = || JsValue::from_str("no layer is training on the GPU (or a GPU epoch is already running)");
            let epoch = stack.borrow_mut().as_mut().ok_or_else(no_layer)?.begin_device_epoch().map_err(|e| JsValue::from_str(&e))?;
            let done = epoch.run().await;
            let event = match stack.borrow_mut().as_mut() {
                Some(stack) => stack.end_device_epoch(done).map_err(|e| JsValue::from(js_error(e)))?,
                None => None,
            };
            let event = event.ok_or_else(|| JsValue::from_str("the run was replaced while its GPU epoch ran"))?;
            if let StackEvent::FellBack(_) = event {
                // The failed device goes; a later run makes a new one.
                let mut state = state.borrow_mut();
                state.engine = None;
                state.chains = None;
            }
            to_js(&event).map_err(JsValue::from)
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
