//! The device behind the page's training and chains, and the choice of backend: which engine a
//! run uses (`engine::Engine::choose_with`, the rule the CLI uses too), the device kept across
//! runs, and how the run in training uses it ([`RunDevice`], advanced by `units.rs`). They live
//! in an `Rc<RefCell<..>>` so that an exported method can hand a `'static` future to
//! `future_to_promise`.

use super::{to_js, Playground};
use crate::engine::chains::Chains;
use crate::engine::{Engine, EngineChoice};
use wasm_bindgen::prelude::*;

#[derive(Default)]
pub(super) struct EngineState {
    /// The device, created once and reused across layers and runs while it works.
    pub engine: Option<Engine>,
    /// Generative chains on the device (`None` while a read-back is awaited).
    pub chains: Option<Chains>,
    /// How the run in training uses the device.
    pub run: RunDevice,
}

/// How the run in training uses the device: off at `start_training`, on when `choose_backend`
/// chooses WebGPU, off again for good once a layer is refused or the device is lost.
#[derive(Default)]
pub(super) struct RunDevice {
    /// Each layer goes onto the device as it starts.
    pub place_layers: bool,
    /// Device epochs finished in this run.
    pub epochs_done: u32,
    /// Testing hook: the device is destroyed after this many device epochs (0: never).
    pub lose_after: u32,
    /// The supervised stage trained on the device, until the page keeps it (`mlp_device.rs`).
    pub supervised: Option<super::mlp_device::DeviceStage>,
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
    /// `{backend: "webgpu" | "cpu", reason}`, and the run started last places its layers on the
    /// device when it is `webgpu`. The page cannot refuse to train, so a demanded WebGPU that
    /// cannot start trains on the CPU, with the reason.
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
            state.borrow_mut().run.place_layers = chosen.backend == "webgpu";
            to_js(&chosen).map_err(JsValue::from)
        })
    }
}
