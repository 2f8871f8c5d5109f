//! The wasm-bindgen API used by `www/worker.js`. Configs come in and reports go out as
//! serde values; images go out as `Uint8ClampedArray`s ready for `putImageData`.
//! Every fallible call leaves the existing data and model untouched on error.

use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::data::{idx, Dataset};
use crate::gpu::{affine_sigmoid, GpuContext};
use crate::model::Dbn;
use crate::report::image_grid::{self, RgbaImage, Scaling};
use crate::sample::GenerativeChains;
use crate::train::{GreedyTrainer, StackConfig};
use serde::Serialize;
use wasm_bindgen::prelude::*;

mod bench;
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
    chains: Option<GenerativeChains>,
}

#[wasm_bindgen]
impl Playground {
    #[wasm_bindgen(constructor)]
    pub fn new() -> Playground {
        Playground { data: None, trainer: None, chains: None }
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
            self.chains = None;
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
        dbn.layers.extend(trainer.current_trainer().map(|t| t.rbm.clone()));
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
        self.chains = None;
        Ok(())
    }

    pub fn training_finished(&self) -> bool {
        self.trainer.as_ref().is_none_or(|t| t.finished())
    }

    /// One unit of work (initialise a layer, one epoch, or close a layer); returns the
    /// `GreedyEvent` describing it.
    pub fn step(&mut self) -> Result<JsValue, JsError> {
        let data = self.data.as_ref().ok_or_else(|| JsError::new("no data loaded yet"))?;
        let trainer = self.trainer.as_mut().ok_or_else(|| JsError::new("press Train first: no model is being trained"))?;
        let event = trainer.step(&CpuBackend, data).map_err(js_error)?;
        to_js(&event)
    }

    /// Ends the layer in training after its current epoch (Stop).
    pub fn cancel(&mut self) {
        if let Some(trainer) = &mut self.trainer {
            trainer.cancel_layer();
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

    /// Starts `count` generative chains from the first `count` data cases (the embedded
    /// default is interleaved by class, so these show every digit) or from random states.
    pub fn start_chains(&mut self, count: usize, from_data: bool, seed: u64) -> Result<(), JsError> {
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        let data = self.data()?;
        self.chains = Some(if from_data {
            let cases: Vec<usize> = (0..count.clamp(1, data.n_cases)).collect();
            GenerativeChains::from_data(&model, &CpuBackend, data, &cases, seed)
        } else {
            GenerativeChains::from_random(&model, &CpuBackend, count.max(1), seed)
        });
        Ok(())
    }

    /// Advances the chains `steps` Gibbs steps and returns them as seen at the pixels.
    pub fn advance_chains(&mut self, steps: usize, columns: usize) -> Result<JsValue, JsError> {
        let shape = self.image_shape()?;
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        let chains = self.chains.as_mut().ok_or_else(|| JsError::new("no chains started"))?;
        chains.advance(&model, &CpuBackend, steps);
        let images = chains.images(&model, &CpuBackend);
        Ok(image_to_js(image_grid::tile(&images, chains.n_chains, shape, columns, Scaling::Unit)))
    }

    pub fn chain_steps(&self) -> u64 {
        self.chains.as_ref().map_or(0, |c| c.steps_done)
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
