//! The wasm-bindgen API used by `www/worker.js`. Configs come in and reports go out as
//! serde values; images go out as `Uint8ClampedArray`s ready for `putImageData`.
//! Every fallible call leaves the existing data and model untouched on error.

use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::data::{idx, Dataset};
use crate::gpu::{affine_sigmoid, GpuContext};
use crate::model::Dbn;
use crate::report::image_grid::{self, RgbaImage, Scaling};
use crate::gpu::trainer::GpuCdTrainer;
use crate::train::{CdTrainer, GreedyEvent, GreedyTrainer, StackConfig};
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

mod bench;
mod chains;
mod gpu_training;
use gpu_training::{GpuLayer, GpuState};
pub use bench::bench_cpu;

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
    adapter: crate::gpu::AdapterSummary,
    max_abs_error: f32,
}

/// Creates a WebGPU device through wgpu, runs `affine_sigmoid.wgsl`, and compares it with
/// the CPU reference.
#[wasm_bindgen]
pub async fn webgpu_check() -> Result<JsValue, JsError> {
    let ctx = GpuContext::new().await.map_err(|e| JsError::new(&e.to_string()))?;
    let max_abs_error = affine_sigmoid::self_check(&ctx).await.map_err(|e| JsError::new(&e.to_string()))?;
    to_js(&GpuReport { adapter: ctx.summary(), max_abs_error })
}

#[derive(Serialize)]
struct DataSummary {
    name: String,
    n_cases: usize,
    n_inputs: usize,
    image_shape: Option<(usize, usize)>,
    class_counts: Vec<usize>,
}

#[wasm_bindgen]
pub struct Playground {
    data: Option<Dataset>,
    trainer: Option<GreedyTrainer>,
    chains: Option<chains::CpuChains>,
    /// How the chains were last started, so they can be restarted for a deeper model.
    chain_spec: Option<chains::ChainSpec>,
    /// WebGPU training of the current layer (see `gpu_training`).
    gpu: Rc<RefCell<GpuState>>,
    /// The current layer continued on the CPU after the device failed mid-layer.
    fallback: Option<CdTrainer>,
}

#[wasm_bindgen]
impl Playground {
    #[wasm_bindgen(constructor)]
    pub fn new() -> Playground {
        Playground { data: None, trainer: None, chains: None, chain_spec: None, gpu: Rc::new(RefCell::new(GpuState::default())), fallback: None }
    }

    /// Parses IDX images (and optional labels), raw or gzip. The new data replaces the old only
    /// if it parses; a model whose visible layer no longer matches is dropped.
    pub fn load_idx(&mut self, images_name: &str, images: &[u8], labels_name: Option<String>, labels: Option<Vec<u8>>) -> Result<JsValue, JsError> {
        let parsed = idx::parse_idx_images(images_name, images).map_err(js_error)?;
        let labels = match (labels_name, labels) {
            (Some(name), Some(bytes)) => Some((name.clone(), idx::parse_idx_labels(&name, &bytes).map_err(js_error)?)),
            _ => None,
        };
        let dataset = idx::dataset_from_idx(parsed, labels, images_name).map_err(js_error)?;
        if self.model().is_some_and(|m| m.layers[0].n_visible != dataset.n_inputs) {
            self.trainer = None;
            self.drop_chains();
        }
        let mut class_counts = Vec::new();
        for &label in dataset.labels.iter().flatten() {
            let label = label as usize;
            if class_counts.len() <= label {
                class_counts.resize(label + 1, 0);
            }
            class_counts[label] += 1;
        }
        let summary = DataSummary { name: dataset.name.clone(), n_cases: dataset.n_cases, n_inputs: dataset.n_inputs, image_shape: dataset.image_shape, class_counts };
        self.data = Some(dataset);
        to_js(&summary)
    }

    fn data(&self) -> Result<&Dataset, JsError> {
        self.data.as_ref().ok_or_else(|| JsError::new("no data loaded yet"))
    }

    fn image_shape(&self) -> Result<(usize, usize), JsError> {
        let data = self.data()?;
        Ok(data.image_shape.unwrap_or((1, data.n_inputs)))
    }

    /// The trained layers plus the layer in training, as a DBN to sample from and draw.
    fn model(&self) -> Option<Dbn> {
        let trainer = self.trainer.as_ref()?;
        let mut dbn = trainer.dbn.clone();
        let gpu = self.gpu.borrow();
        let synced = gpu.layer.as_ref().and_then(|l| l.synced.as_ref()).map(|s| s.rbm.clone());
        let current = match (&self.fallback, synced) {
            (Some(fallback), _) => Some(fallback.rbm.clone()),
            (None, Some(rbm)) => Some(rbm),
            (None, None) => trainer.current_trainer().map(|t| t.rbm.clone()),
        };
        dbn.layers.extend(current);
        (!dbn.layers.is_empty()).then_some(dbn)
    }

    /// The first `count` cases as a thumbnail grid.
    pub fn data_preview(&self, count: usize, columns: usize) -> Result<JsValue, JsError> {
        let data = self.data()?;
        let count = count.min(data.n_cases);
        let cases: Vec<usize> = (0..count).collect();
        let mut values = vec![0.0; count * data.n_inputs];
        data.gather_into(&cases, &mut values);
        Ok(image_to_js(image_grid::tile(&values, count, self.image_shape()?, columns, Scaling::Unit)))
    }

    /// Starts a fresh model from `config` (a `StackConfig`; missing fields take defaults).
    pub fn start_training(&mut self, config: JsValue) -> Result<(), JsError> {
        let config: StackConfig = serde_wasm_bindgen::from_value(config).map_err(|e| JsError::new(&format!("invalid training settings: {e}")))?;
        let trainer = GreedyTrainer::new(config, self.data()?).map_err(js_error)?;
        self.trainer = Some(trainer);
        self.drop_chains();
        self.fallback = None;
        self.release_gpu_layer();
        Ok(())
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

    /// The first `count` first-layer receptive fields, grey mode (zero is mid-grey).
    pub fn filters_image(&self, count: usize, columns: usize) -> Result<JsValue, JsError> {
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        let rbm = &model.layers[0];
        let count = count.min(rbm.n_hidden);
        let filters = image_grid::filters_of(&rbm.weights, rbm.n_visible, rbm.n_hidden, count);
        Ok(image_to_js(image_grid::tile(&filters, count, self.image_shape()?, columns, Scaling::SymmetricPerTile)))
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
