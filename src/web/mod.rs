//! The wasm-bindgen API used by `www/worker.js`. Configs come in and reports go out as
//! serde values; images go out as `Uint8ClampedArray`s ready for `putImageData`.
//! Every fallible call leaves the existing data and model untouched on error.

use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::data::Dataset;
use crate::engine::stack::StackRun;
use crate::engine::{AdapterSummary, Engine};
use crate::model::Dbn;
use crate::report::image_grid::RgbaImage;
use crate::supervised::SavedSupervised;
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

mod autoencoder;
mod bench;
mod chains;
mod data;
mod files;
mod gpu_training;
mod local_rbm;
mod mlp_device;
mod recurrent;
mod sparse_coding;
mod supervised;
mod training;
mod units;
mod views;
use gpu_training::EngineState;
pub use autoencoder::AutoencoderTrainer;
pub use bench::bench_cpu;
pub use local_rbm::LocalRbmTrainer;
pub use recurrent::{rtrl_time, SequenceConfig, SequenceTrainer};
pub use sparse_coding::SparseCodingTrainer;

#[cfg(feature = "threads")]
pub use wasm_bindgen_rayon::init_thread_pool;

#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    value.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).map_err(|e| JsError::new(&e.to_string()))
}

fn image_to_js(image: RgbaImage) -> JsValue {
    let object = js_sys::Object::new();
    let set = |key: &str, value: JsValue| js_sys::Reflect::set(&object, &key.into(), &value).expect("setting a plain object's field");
    set("width", image.width.into());
    set("height", image.height.into());
    set("data", js_sys::Uint8ClampedArray::from(&image.data[..]).into());
    object.into()
}

#[derive(Serialize)]
struct RuntimeInfo {
    threaded_build: bool,
    threads: usize,
    backend: String,
}

/// Which build this is and how many rayon threads it has.
#[wasm_bindgen]
pub fn runtime_info() -> Result<JsValue, JsError> {
    to_js(&RuntimeInfo { threaded_build: cfg!(feature = "threads"), threads: rayon::current_num_threads(), backend: CpuBackend.describe() })
}

/// Runs one task on every rayon thread at once and counts the distinct OS threads that ran
/// them: proof that the pool really is parallel, not just configured to be.
#[wasm_bindgen]
pub fn distinct_threads_used() -> usize {
    let ids = rayon::broadcast(|_| format!("{:?}", std::thread::current().id()));
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    unique.len()
}

#[derive(Serialize)]
struct GpuReport {
    adapter: AdapterSummary,
    max_abs_error: f32,
}

/// Creates a WebGPU device through wgpu, runs `affine_sigmoid.wgsl`, and compares it with
/// the CPU reference.
#[wasm_bindgen]
pub async fn webgpu_check() -> Result<JsValue, JsError> {
    let engine = Engine::gpu().await.map_err(|e| JsError::new(&e))?;
    let max_abs_error = engine.self_check().await.map_err(|e| JsError::new(&e))?;
    to_js(&GpuReport { adapter: engine.adapter().expect("a GPU engine has an adapter"), max_abs_error })
}

#[wasm_bindgen]
pub struct Playground {
    /// Every loaded case, held-out ones included.
    data: Option<Dataset>,
    /// How `data` divides into training and held-out cases (`data.rs`).
    split: data::Split,
    /// How the loaded database's columns became inputs (`None` for IDX data), for the saved
    /// model.
    preprocessing: Option<crate::data::Preprocessing>,
    /// The configuration of the run in `stack` (`training.rs`).
    config: Option<training::PageConfig>,
    /// The cases the run in `stack` trains on: the data it started with, less the held-out
    /// cases. Later loads do not change them.
    training_data: Option<Dataset>,
    /// 1: the CPU engine runs on one thread (`on_cpu`); 0: on every thread of the pool.
    cpu_threads: usize,
    /// The greedy run (or a loaded model's stack) and what each RBM layer went through, for
    /// DEEP.LOG and the charts; shared with the futures of its device epochs.
    stack: Rc<RefCell<Option<StackRun>>>,
    /// Chains on the CPU (`chains.rs`; the device's are in `gpu`).
    chains: Option<crate::engine::chains::Chains>,
    /// How the chains were last started, so they can be restarted for a deeper model.
    chain_spec: Option<chains::ChainSpec>,
    /// The device, its chains and how the run in training uses it (see `gpu_training`).
    gpu: Rc<RefCell<EngineState>>,
    /// The supervised layers on top of the DBN, once trained or loaded.
    supervised: Option<SavedSupervised>,
    /// The dream chain and other view state (`views.rs`).
    views: views::ViewState,
}

#[wasm_bindgen]
impl Playground {
    #[wasm_bindgen(constructor)]
    pub fn new() -> Playground {
        Playground {
            data: None,
            split: data::Split::default(),
            preprocessing: None,
            config: None,
            training_data: None,
            cpu_threads: 0,
            stack: Rc::new(RefCell::new(None)),
            chains: None,
            chain_spec: None,
            gpu: Rc::new(RefCell::new(EngineState::default())),
            supervised: None,
            views: views::ViewState::default(),
        }
    }

    /// The trained layers plus the layer in training, as a DBN to sample from and draw.
    fn model(&self) -> Option<Dbn> {
        self.stack.borrow().as_ref()?.model()
    }

    /// Runs `f` with the CPU thread choice of `set_cpu_threads` (every call of the CPU engine
    /// goes through here: training, the supervised stage, the views).
    pub(super) fn on_cpu<R>(&self, f: impl FnOnce() -> R) -> R {
        training::on_cpu_threads(self.cpu_threads, f)
    }

}

impl Default for Playground {
    fn default() -> Self {
        Self::new()
    }
}

fn js_error(error: impl std::fmt::Display) -> JsError {
    JsError::new(&error.to_string())
}
