//! The page's Local RBM mode (issue 19, Raina, Madhavan & Ng 2009 §5): a local-patch (or
//! convolutional) RBM layer learnt from square crops, or a greedy stack of them with dense
//! layers above, an epoch per `step()`, on WebGPU or the CPU (`engine::local_session`); each
//! layer's filters drawn per patch position (`local_rbm::filters`: a grid of the positions,
//! each cell that position's filters; above the first layer projected to the image) and its
//! reconstruction error per epoch.
//!
//! Config (serde, every field optional, unknown fields refused): `source` ("gratings": Philox
//! grating images, natural-image-like; "data": the Playground's loaded images, e.g. MNIST),
//! `image_size`, `patch`, `stride`, `hidden_per_patch`, `tied` (the first layer),
//! `layers_above` (the CLI's `--layers` entries over the first layer's feature map, e.g.
//! "local:2:1:8,dense:64"; empty: one layer), `visible` ("gaussian" | "binary"), `cases`,
//! `batch_size`, `epochs` (per layer), `learning_rate` (the first layer),
//! `learning_rate_above` (every layer above; null: each layer's default,
//! `local_rbm::default_learning_rate`), `sparsity_target`, `seed` (layer k: seed + k, as the
//! CLI), `backend` ("auto" | "gpu" | "cpu"), `adapter_name`. Errors name the field.

use super::{image_to_js, to_js, Playground};
use crate::bench::sparse_coding::grating_images;
use crate::data::patches::GreyImage;
use crate::engine::local_session::LocalStackSession;
use crate::engine::{Engine, EngineChoice};
use crate::local_rbm::crops::image_crops;
use crate::local_rbm::filters::{filters_picture, stack_filters_picture};
use crate::local_rbm::stack::{plan_stack, LayerSpec};
use crate::local_rbm::{default_learning_rate, Geometry, LocalCdSettings, LocalRbm};
use crate::model::VisibleUnits;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// Floats the page's crops may take (256 MiB).
const MEMORY_BUDGET_FLOATS: usize = 64 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CropSource {
    Gratings,
    Data,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VisibleChoice {
    Gaussian,
    Binary,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocalRbmConfig {
    pub source: CropSource,
    pub image_size: usize,
    pub patch: usize,
    pub stride: usize,
    pub hidden_per_patch: usize,
    pub tied: bool,
    pub layers_above: String,
    pub visible: VisibleChoice,
    pub cases: usize,
    pub batch_size: usize,
    pub epochs: usize,
    pub learning_rate: f32,
    pub learning_rate_above: Option<f32>,
    pub sparsity_target: f32,
    pub seed: u64,
    pub backend: EngineChoice,
    pub adapter_name: Option<String>,
}

/// Layers a page's stack may have.
pub const MAX_PAGE_LAYERS: usize = 8;

impl Default for LocalRbmConfig {
    /// A 32² crop of grating images in 12 × 12 patches 4 apart (6 × 6 = 36 positions), 16
    /// hidden units each, Gaussian visible units: filters appear within a few epochs on a CPU.
    fn default() -> Self {
        LocalRbmConfig {
            source: CropSource::Gratings,
            image_size: 32,
            patch: 12,
            stride: 4,
            hidden_per_patch: 16,
            tied: false,
            layers_above: String::new(),
            visible: VisibleChoice::Gaussian,
            cases: 1920,
            batch_size: 64,
            epochs: 10,
            // 0.02 (the CLI's default, tuned at 16²) diverges where many patches overlap.
            learning_rate: 0.005,
            learning_rate_above: None,
            sparsity_target: 0.05,
            seed: 1,
            backend: EngineChoice::Auto,
            adapter_name: None,
        }
    }
}

impl LocalRbmConfig {
    fn read(value: &JsValue) -> Result<LocalRbmConfig, String> {
        if value.is_undefined() || value.is_null() {
            return Ok(LocalRbmConfig::default());
        }
        // serde_wasm_bindgen reads only the struct's own fields: unknown ones are refused here.
        const FIELDS: [&str; 17] = ["source", "image_size", "patch", "stride", "hidden_per_patch", "tied", "layers_above", "visible", "cases", "batch_size", "epochs", "learning_rate", "learning_rate_above", "sparsity_target", "seed", "backend", "adapter_name"];
        if let Some(object) = value.dyn_ref::<js_sys::Object>() {
            for key in js_sys::Object::keys(object).iter().filter_map(|k| k.as_string()) {
                if !FIELDS.contains(&key.as_str()) {
                    return Err(format!("{key}: not a setting of the local RBM (expected one of {})", FIELDS.join(", ")));
                }
            }
        }
        let config: LocalRbmConfig = serde_wasm_bindgen::from_value(value.clone()).map_err(|e| format!("config: {e}"))?;
        config.check()?;
        Ok(config)
    }

    /// Ranges; the geometry's own errors (by flag name) are renamed to the config's fields.
    pub fn check(&self) -> Result<(), String> {
        for (name, value, low, high) in [("image_size", self.image_size, 1, 512), ("cases", self.cases, 1, 100_000), ("batch_size", self.batch_size, 1, 10_000), ("epochs", self.epochs, 1, 10_000), ("hidden_per_patch", self.hidden_per_patch, 1, 1024)] {
            if !(low..=high).contains(&value) {
                return Err(format!("{name}: expected a whole number in [{low}, {high}], got {value}"));
            }
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0 && self.learning_rate <= 1.0) {
            return Err(format!("learning_rate: expected a number in (0, 1], got {}", self.learning_rate));
        }
        if let Some(rate) = self.learning_rate_above {
            if !(rate.is_finite() && rate > 0.0 && rate <= 1.0) {
                return Err(format!("learning_rate_above: expected a number in (0, 1] (or none: each layer's default), got {rate}"));
            }
        }
        if !(0.0..=1.0).contains(&self.sparsity_target) {
            return Err(format!("sparsity_target: expected a number in [0, 1], got {}", self.sparsity_target));
        }
        self.plan().map(|_| ())
    }

    /// The entries of `layers_above` (none when empty).
    pub fn specs_above(&self) -> Result<Vec<LayerSpec>, String> {
        if self.layers_above.trim().is_empty() {
            return Ok(Vec::new());
        }
        let specs = LayerSpec::parse_list(&self.layers_above).map_err(|e| e.replacen("--layers", "layers_above", 1))?;
        if specs.len() + 1 > MAX_PAGE_LAYERS {
            return Err(format!("layers_above: {} layers above the first; the page trains at most {} layers in all", specs.len(), MAX_PAGE_LAYERS));
        }
        Ok(specs)
    }

    /// The stack's geometries, bottom first: the first layer from `image_size`, `patch`,
    /// `stride`, `hidden_per_patch` and `tied`, then `layers_above` (through
    /// `local_rbm::stack::plan_stack`, layer by layer, so an error names the layer).
    pub fn plan(&self) -> Result<Vec<Geometry>, String> {
        let first = self.geometry()?;
        let mut plan = vec![first];
        for (k, spec) in self.specs_above()?.iter().enumerate() {
            let (rows, cols, channels) = plan[k].feature_map();
            let geometry = plan_stack(rows, cols, channels, std::slice::from_ref(spec)).map_err(|e| {
                format!("layers_above: layer {} ({}) over the {rows} × {cols} × {channels} feature map below: {}", k + 2, spec_text(spec), rename_flags(&e))
            })?[0];
            // The page keeps every layer's input for all the crops, and its weights, in memory.
            let (inputs, weights) = (self.cases.saturating_mul(geometry.n_visible()), geometry.weight_count());
            if inputs.max(weights) > MEMORY_BUDGET_FLOATS {
                return Err(format!(
                    "layers_above: layer {} ({}) takes {} MiB of inputs for {} crops and {} MiB of weights, more than the page's {} MiB each",
                    k + 2,
                    spec_text(spec),
                    inputs >> 18,
                    self.cases,
                    weights >> 18,
                    MEMORY_BUDGET_FLOATS >> 18
                ));
            }
            plan.push(geometry);
        }
        Ok(plan)
    }

    /// The whole stack as the CLI's `--layers` (the first layer written out).
    pub fn stack_spec(&self) -> String {
        let first = LayerSpec::Local { patch: self.patch, stride: self.stride, units: self.hidden_per_patch, tied: self.tied };
        std::iter::once(first).chain(self.specs_above().unwrap_or_default()).map(|s| spec_text(&s)).collect::<Vec<_>>().join(",")
    }

    /// Layer `k`'s training settings: the first layer's visible units and rate; above it binary
    /// visible units and `learning_rate_above` or the layer's default; seed + k (as the CLI).
    fn layer_settings(&self, k: usize, geometry: &Geometry) -> LocalCdSettings {
        let units = if k == 0 { self.visible_units() } else { VisibleUnits::Bernoulli };
        let learning_rate = if k == 0 { self.learning_rate } else { self.learning_rate_above.unwrap_or_else(|| default_learning_rate(geometry, units)) };
        LocalCdSettings { visible_units: units, learning_rate, seed: self.seed + k as u64, ..self.settings() }
    }

    /// Every layer's settings for `plan`.
    pub fn stack_settings(&self, plan: &[Geometry]) -> Vec<LocalCdSettings> {
        plan.iter().enumerate().map(|(k, g)| self.layer_settings(k, g)).collect()
    }

    pub fn geometry(&self) -> Result<Geometry, String> {
        Geometry::new(self.image_size, self.image_size, 1, self.patch, self.stride, self.hidden_per_patch, self.tied).map_err(|e| rename_flags(&e))
    }

    fn settings(&self) -> LocalCdSettings {
        LocalCdSettings {
            visible_units: self.visible_units(),
            epochs: self.epochs,
            batch_size: self.batch_size,
            learning_rate: self.learning_rate,
            sparsity_target: self.sparsity_target,
            seed: self.seed,
            ..LocalCdSettings::default()
        }
    }

    fn visible_units(&self) -> VisibleUnits {
        match self.visible {
            VisibleChoice::Gaussian => VisibleUnits::Gaussian,
            VisibleChoice::Binary => VisibleUnits::Bernoulli,
        }
    }
}

/// The geometry's flags (`--patch: …`) as the config's fields.
fn rename_flags(message: &str) -> String {
    message.replace("--image-size", "image_size").replace("--patch", "patch").replace("--stride", "stride").replace("--hidden-per-patch", "hidden_per_patch").replace("--channels", "channels")
}

/// A layer as the CLI writes it in `--layers`.
fn spec_text(spec: &LayerSpec) -> String {
    match *spec {
        LayerSpec::Local { patch, stride, units, tied } => format!("{}:{patch}:{stride}:{units}", if tied { "tied" } else { "local" }),
        LayerSpec::Dense { units } => format!("dense:{units}"),
    }
}

/// The crops the layer learns from (`cases × image_size²`), and what they came from.
pub fn crops(config: &LocalRbmConfig, loaded: Option<(&[GreyImage], &str)>) -> Result<(Vec<f32>, String), String> {
    let floats = config.cases * config.image_size * config.image_size;
    if floats > MEMORY_BUDGET_FLOATS {
        return Err(format!("cases: {} crops of {}² take {} MiB, more than the page's {} MiB", config.cases, config.image_size, floats >> 18, MEMORY_BUDGET_FLOATS >> 18));
    }
    let (images, what) = match (config.source, loaded) {
        (CropSource::Gratings, _) => {
            let side = (2 * config.image_size).max(64);
            (grating_images(8, side, config.seed), format!("8 grating images of {side}²"))
        }
        (CropSource::Data, Some((images, name))) => (images.to_vec(), format!("{} images of {name}", images.len())),
        (CropSource::Data, None) => return Err("source: no images loaded (load MNIST under Data, or choose the gratings)".into()),
    };
    let values = image_crops(&images, config.image_size, config.cases, config.seed, config.visible_units()).map_err(|e| e.replace("--images", "source"))?;
    Ok((values, what))
}

/// One layer of the stack as `start()` describes it.
#[derive(Serialize)]
struct LayerReport {
    /// The CLI's `--layers` entry.
    spec: String,
    /// The layer's input: the crop, or the feature map below.
    input: [usize; 3],
    positions: usize,
    positions_side: usize,
    hidden_per_patch: usize,
    hidden_units: usize,
    weights: usize,
    parameters: usize,
    tied: bool,
    learning_rate: f32,
    visible: &'static str,
}

#[derive(Serialize)]
struct StartReport {
    backend: &'static str,
    backend_reason: Option<String>,
    source: String,
    /// The first layer's (as before stacks).
    positions: usize,
    positions_side: usize,
    hidden_units: usize,
    weights: usize,
    /// The whole stack's.
    parameters: usize,
    cases: usize,
    /// Epochs per layer.
    epochs: usize,
    total_epochs: usize,
    /// The whole stack as the CLI's `--layers`.
    stack: String,
    layers: Vec<LayerReport>,
}

#[derive(Serialize)]
struct StepReport {
    /// 0-based layer the epoch trained, of `layers`.
    layer: usize,
    layers: usize,
    /// The epoch within its layer, of `epochs`.
    epoch: usize,
    epochs: usize,
    /// Epochs trained over the whole stack, of `total_epochs`.
    total_epoch: usize,
    total_epochs: usize,
    reconstruction_error: f64,
    seconds: f64,
    backend: &'static str,
    backend_reason: Option<String>,
    /// This epoch began its layer.
    started_layer: bool,
    /// Its layer has trained its last epoch.
    layer_done: bool,
    /// The whole stack has.
    done: bool,
}

struct Inner {
    config: LocalRbmConfig,
    cases: Option<Vec<f32>>,
    source: String,
    device: Option<Engine>,
    /// Taken out while a step awaits (a second step in flight is refused).
    session: Option<LocalStackSession>,
    busy: bool,
    /// The layers so far (the one in training as of its last epoch), for the views and Save
    /// model while a step is in flight.
    layers: Vec<LocalRbm>,
    settings: Vec<LocalCdSettings>,
    /// Per layer, every epoch's record (the saved file's history; the errors' chart).
    history: Vec<Vec<crate::format::local_rbm::EpochRecord>>,
}

/// A local-patch RBM layer, or a stack of them, learnt an epoch at a time.
#[wasm_bindgen]
pub struct LocalRbmTrainer {
    inner: Rc<RefCell<Inner>>,
}

fn loaded_images(playground: &Playground) -> Option<(Vec<GreyImage>, String)> {
    let data = playground.data().ok()?;
    let (rows, cols) = data.image_shape?;
    let training = playground.training_case_indices().ok()?;
    let take: Vec<usize> = training.into_iter().take(2000).collect();
    let mut pixels = vec![0.0f32; take.len() * rows * cols];
    data.gather_into(&take, &mut pixels);
    let images = pixels.chunks_exact(rows * cols).map(|p| GreyImage { rows, cols, pixels: p.to_vec() }).collect();
    Some((images, data.name.clone()))
}

fn rejection(message: impl std::fmt::Display) -> JsValue {
    JsError::new(&message.to_string()).into()
}

#[wasm_bindgen]
impl LocalRbmTrainer {
    /// Checks the config (the whole stack's plan) and cuts the crops (from the gratings or
    /// `playground`'s loaded images).
    #[wasm_bindgen(constructor)]
    pub fn new(playground: &Playground, config: JsValue) -> Result<LocalRbmTrainer, JsError> {
        let config = LocalRbmConfig::read(&config).map_err(|e| JsError::new(&e))?;
        let loaded = if config.source == CropSource::Data { loaded_images(playground) } else { None };
        let (cases, source) = crops(&config, loaded.as_ref().map(|(i, n)| (&i[..], n.as_str()))).map_err(|e| JsError::new(&e))?;
        let device = playground.gpu.borrow().device();
        let inner = Inner { config, cases: Some(cases), source, device, session: None, busy: false, layers: Vec::new(), settings: Vec::new(), history: Vec::new() };
        Ok(LocalRbmTrainer { inner: Rc::new(RefCell::new(inner)) })
    }

    /// Opens the device when the config's backend says so (`auto` skips software adapters) and
    /// draws the first layer. Resolves to `{backend, backend_reason, source, positions,
    /// positions_side, hidden_units, weights (the first layer's), parameters (the stack's),
    /// cases, epochs (per layer), total_epochs, stack (the CLI's --layers), layers: [{spec,
    /// input: [rows, cols, channels], positions, positions_side, hidden_per_patch,
    /// hidden_units, weights, parameters, tied, learning_rate, visible}]}`.
    pub fn start(&self) -> js_sys::Promise {
        let inner = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (config, cases, device) = {
                let mut t = inner.borrow_mut();
                let cases = t.cases.take().ok_or_else(|| rejection("start: this trainer has started already (make a new one to start again)"))?;
                (t.config.clone(), cases, t.device.clone())
            };
            let plan = config.plan().map_err(rejection)?;
            let settings = config.stack_settings(&plan);
            let (engine, reason) = choose_engine(&config, device).await;
            let session = LocalStackSession::start(&engine, plan.clone(), settings.clone(), cases).await.map_err(rejection)?;
            let specs: Vec<String> = config.stack_spec().split(',').map(str::to_string).collect();
            let layers: Vec<LayerReport> = plan
                .iter()
                .zip(&settings)
                .zip(specs)
                .map(|((g, s), spec)| LayerReport {
                    spec,
                    input: [g.rows, g.cols, g.channels],
                    positions: g.positions(),
                    positions_side: g.positions_cols(),
                    hidden_per_patch: g.hidden_per_patch,
                    hidden_units: g.n_hidden(),
                    weights: g.weight_count(),
                    parameters: g.weight_count() + g.hidden_bias_count() + g.n_visible(),
                    tied: g.tied,
                    learning_rate: s.learning_rate,
                    visible: if s.visible_units == VisibleUnits::Gaussian { "gaussian" } else { "binary" },
                })
                .collect();
            let first = plan[0];
            let mut t = inner.borrow_mut();
            let report = StartReport {
                backend: if session.on_device() { "gpu" } else { "cpu" },
                backend_reason: session.backend_reason().map(str::to_string).or(reason),
                source: t.source.clone(),
                positions: first.positions(),
                positions_side: first.positions_cols(),
                hidden_units: first.n_hidden(),
                weights: first.weight_count(),
                parameters: layers.iter().map(|l| l.parameters).sum(),
                cases: session.cases(),
                epochs: config.epochs,
                total_epochs: config.epochs * plan.len(),
                stack: config.stack_spec(),
                layers,
            };
            t.layers = vec![session.current_model().clone()];
            t.settings = settings;
            t.history = vec![Vec::new()];
            t.session = Some(session);
            to_js(&report).map_err(JsValue::from)
        })
    }

    /// One epoch of the layer in training (the layer above starts when one is done). Resolves
    /// to `{layer, layers, epoch, epochs, total_epoch, total_epochs, reconstruction_error,
    /// seconds, backend, backend_reason, started_layer, layer_done, done}` (`layer` 0-based,
    /// `epoch` within the layer).
    pub fn step(&self) -> js_sys::Promise {
        let inner = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let mut session = {
                let mut t = inner.borrow_mut();
                if t.busy {
                    return Err(rejection("step: a step is in flight"));
                }
                let session = t.session.take().ok_or_else(|| rejection("step: not started (call start() first)"))?;
                t.busy = true;
                session
            };
            let result = session.epoch().await;
            let mut t = inner.borrow_mut();
            t.busy = false;
            let epoch = match result {
                Ok(epoch) => epoch,
                Err(e) => {
                    t.session = Some(session);
                    return Err(rejection(e));
                }
            };
            let k = epoch.layer;
            let model = session.current_model().clone();
            if k < t.layers.len() {
                t.layers[k] = model;
            } else {
                t.layers.push(model);
            }
            if k == t.history.len() {
                t.history.push(Vec::new());
            }
            t.history[k].push((&epoch.report).into());
            let step = StepReport {
                layer: k,
                layers: session.plan().len(),
                epoch: epoch.report.epoch,
                epochs: t.config.epochs,
                total_epoch: t.history.iter().map(Vec::len).sum(),
                total_epochs: t.config.epochs * session.plan().len(),
                reconstruction_error: epoch.report.reconstruction_error,
                seconds: epoch.report.seconds,
                backend: if session.on_device() { "gpu" } else { "cpu" },
                backend_reason: session.backend_reason().map(str::to_string),
                started_layer: epoch.started_layer,
                layer_done: session.layer_done(),
                done: session.done(),
            };
            t.session = Some(session);
            to_js(&step).map_err(JsValue::from)
        })
    }

    /// The first layer's filters per patch position: a grid of the positions (one cell when
    /// tied), each cell the first `per_position` hidden units' filters of that position, as
    /// RGBA `{width, height, data}`.
    pub fn filters(&self, per_position: usize) -> Result<JsValue, JsError> {
        let t = self.inner.borrow();
        let model = t.layers.first().ok_or_else(|| JsError::new("filters: not started"))?;
        Ok(image_to_js(grey_to_rgba(&filters_picture(model, per_position))))
    }

    /// Layer `layer`'s (0-based) filters in the grid of its positions, each projected to the
    /// image through the layers below and cropped to its receptive field
    /// (`stack_filters_picture`; the first layer: `filters`), as RGBA.
    pub fn layer_filters(&self, layer: usize, per_position: usize) -> Result<JsValue, JsError> {
        let t = self.inner.borrow();
        if t.layers.is_empty() {
            return Err(JsError::new("filters: not started"));
        }
        if layer >= t.layers.len() {
            return Err(JsError::new(&format!("layer: {} has not started yet (layers 1 to {} so far)", layer + 1, t.layers.len())));
        }
        Ok(image_to_js(grey_to_rgba(&stack_filters_picture(&t.layers[..=layer], per_position))))
    }

    /// The stack so far as the CLI's `local_rbm.bin` (format `deepbelief-local-rbm/1`): every
    /// layer's geometry and settings, where the crops came from, every epoch's record and the
    /// parameters (the layer in training as of its last finished epoch, as the CLI's
    /// checkpoint), for `deepbelief` to read back (`format::local_rbm::read`).
    pub fn model_file(&self) -> Result<Vec<u8>, JsError> {
        let t = self.inner.borrow();
        if t.layers.is_empty() {
            return Err(JsError::new("save model: not started"));
        }
        let inputs = serde_json::json!({ "source": t.source, "page": true, "image_size": t.config.image_size, "cases": t.config.cases, "stack": t.config.stack_spec() });
        let layers: Vec<&LocalRbm> = t.layers.iter().collect();
        let n = layers.len();
        let mut history = t.history.clone();
        history.resize(n, Vec::new());
        let parameters: usize = layers.iter().map(|l| l.parameter_count()).sum();
        let mut bytes = Vec::with_capacity(parameters * 4 + 4096);
        crate::format::local_rbm::write_parts(&layers, &t.settings[..n], &inputs, &history, &mut bytes).map_err(|e| JsError::new(&format!("save model: {e}")))?;
        Ok(bytes)
    }

    /// The reconstruction error after each epoch so far, over the whole stack in order (one
    /// layer: that layer's).
    pub fn errors(&self) -> Vec<f64> {
        self.inner.borrow().history.iter().flatten().map(|r| r.reconstruction_error).collect()
    }

    /// Layer `layer`'s (0-based) reconstruction error after each of its epochs so far.
    pub fn layer_errors(&self, layer: usize) -> Vec<f64> {
        self.inner.borrow().history.get(layer).map(|h| h.iter().map(|r| r.reconstruction_error).collect()).unwrap_or_default()
    }

    /// The config as read (every default filled in).
    pub fn config(&self) -> Result<JsValue, JsError> {
        to_js(&self.inner.borrow().config)
    }

    /// Testing hook: destroys the device under the session (the next step falls back).
    pub fn simulate_gpu_loss(&self) {
        if let Some(session) = &self.inner.borrow().session {
            session.simulate_device_loss();
        }
    }
}

fn grey_to_rgba(image: &crate::report::image_grid::GreyImage) -> crate::report::image_grid::RgbaImage {
    let data = image.pixels.iter().flat_map(|&g| [g, g, g, 255]).collect();
    crate::report::image_grid::RgbaImage { width: image.width, height: image.height, data }
}

/// The engine the config asks for, by the Playground's rule, and why not the GPU where not.
async fn choose_engine(config: &LocalRbmConfig, device: Option<Engine>) -> (Engine, Option<String>) {
    if config.backend == EngineChoice::Cpu {
        return (Engine::Cpu, Some("the CPU was chosen".into()));
    }
    let open = || async move {
        match device {
            Some(engine) => Ok(engine),
            None => Engine::gpu().await,
        }
    };
    match Engine::choose_with(config.backend, config.adapter_name.as_deref(), open).await {
        Ok(chosen) if chosen.engine.is_gpu() => (chosen.engine, None),
        Ok(chosen) => (Engine::Cpu, chosen.notice),
        Err(e) => (Engine::Cpu, Some(format!("WebGPU could not start ({e})"))),
    }
}
