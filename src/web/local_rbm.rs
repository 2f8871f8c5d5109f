//! The page's Local RBM mode (issue 19, Raina, Madhavan & Ng 2009 §5): one local-patch (or
//! convolutional) RBM layer learnt from square crops, an epoch per `step()`, on WebGPU or the
//! CPU (`engine::local_session`); its filters drawn per patch position
//! (`local_rbm::filters::filters_picture`: a grid of the positions, each cell that position's
//! filters) and its reconstruction error per epoch.
//!
//! Config (serde, every field optional, unknown fields refused): `source` ("gratings": Philox
//! grating images, natural-image-like; "data": the Playground's loaded images, e.g. MNIST),
//! `image_size`, `patch`, `stride`, `hidden_per_patch`, `tied`, `visible` ("gaussian" |
//! "binary"), `cases`, `batch_size`, `epochs`, `learning_rate`, `sparsity_target`, `seed`,
//! `backend` ("auto" | "gpu" | "cpu"), `adapter_name`. Errors name the field.

use super::{image_to_js, to_js, Playground};
use crate::bench::sparse_coding::grating_images;
use crate::data::patches::GreyImage;
use crate::engine::local_session::LocalLayerSession;
use crate::engine::{Engine, EngineChoice};
use crate::local_rbm::crops::image_crops;
use crate::local_rbm::filters::filters_picture;
use crate::local_rbm::{Geometry, LocalCdSettings};
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
    pub visible: VisibleChoice,
    pub cases: usize,
    pub batch_size: usize,
    pub epochs: usize,
    pub learning_rate: f32,
    pub sparsity_target: f32,
    pub seed: u64,
    pub backend: EngineChoice,
    pub adapter_name: Option<String>,
}

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
            visible: VisibleChoice::Gaussian,
            cases: 1920,
            batch_size: 64,
            epochs: 10,
            // 0.02 (the CLI's default, tuned at 16²) diverges where many patches overlap.
            learning_rate: 0.005,
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
        const FIELDS: [&str; 15] = ["source", "image_size", "patch", "stride", "hidden_per_patch", "tied", "visible", "cases", "batch_size", "epochs", "learning_rate", "sparsity_target", "seed", "backend", "adapter_name"];
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
        if !(0.0..=1.0).contains(&self.sparsity_target) {
            return Err(format!("sparsity_target: expected a number in [0, 1], got {}", self.sparsity_target));
        }
        self.geometry().map(|_| ())
    }

    pub fn geometry(&self) -> Result<Geometry, String> {
        Geometry::new(self.image_size, self.image_size, 1, self.patch, self.stride, self.hidden_per_patch, self.tied).map_err(|e| {
            e.replace("--image-size", "image_size").replace("--patch", "patch").replace("--stride", "stride").replace("--hidden-per-patch", "hidden_per_patch").replace("--channels", "channels")
        })
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

#[derive(Serialize)]
struct StartReport {
    backend: &'static str,
    backend_reason: Option<String>,
    source: String,
    positions: usize,
    positions_side: usize,
    hidden_units: usize,
    weights: usize,
    parameters: usize,
    cases: usize,
    epochs: usize,
}

#[derive(Serialize)]
struct StepReport {
    epoch: usize,
    epochs: usize,
    reconstruction_error: f64,
    seconds: f64,
    backend: &'static str,
    backend_reason: Option<String>,
    done: bool,
}

struct Inner {
    config: LocalRbmConfig,
    cases: Option<Vec<f32>>,
    source: String,
    device: Option<Engine>,
    /// Taken out while a step awaits (a second step in flight is refused).
    session: Option<LocalLayerSession>,
    busy: bool,
    /// The last model, for the views while a step is in flight.
    model: Option<crate::local_rbm::LocalRbm>,
    errors: Vec<f64>,
    /// Every epoch's record, for the saved file's history.
    history: Vec<crate::format::local_rbm::EpochRecord>,
}

/// A local-patch RBM layer learnt an epoch at a time.
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
    /// Checks the config and cuts the crops (from the gratings or `playground`'s loaded images).
    #[wasm_bindgen(constructor)]
    pub fn new(playground: &Playground, config: JsValue) -> Result<LocalRbmTrainer, JsError> {
        let config = LocalRbmConfig::read(&config).map_err(|e| JsError::new(&e))?;
        let loaded = if config.source == CropSource::Data { loaded_images(playground) } else { None };
        let (cases, source) = crops(&config, loaded.as_ref().map(|(i, n)| (&i[..], n.as_str()))).map_err(|e| JsError::new(&e))?;
        let device = playground.gpu.borrow().device();
        Ok(LocalRbmTrainer { inner: Rc::new(RefCell::new(Inner { config, cases: Some(cases), source, device, session: None, busy: false, model: None, errors: Vec::new(), history: Vec::new() })) })
    }

    /// Opens the device when the config's backend says so (`auto` skips software adapters) and
    /// draws the initial layer. Resolves to `{backend, backend_reason, source, positions,
    /// positions_side, hidden_units, weights, parameters, cases, epochs}`.
    pub fn start(&self) -> js_sys::Promise {
        let inner = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (config, cases, device) = {
                let mut t = inner.borrow_mut();
                let cases = t.cases.take().ok_or_else(|| rejection("start: this trainer has started already (make a new one to start again)"))?;
                (t.config.clone(), cases, t.device.clone())
            };
            let geometry = config.geometry().map_err(rejection)?;
            let (engine, reason) = choose_engine(&config, device).await;
            let session = LocalLayerSession::start(&engine, geometry, config.settings(), cases).await.map_err(rejection)?;
            let model = session.model().clone();
            let mut t = inner.borrow_mut();
            let report = StartReport {
                backend: if session.on_device() { "gpu" } else { "cpu" },
                backend_reason: session.backend_reason().map(str::to_string).or(reason),
                source: t.source.clone(),
                positions: geometry.positions(),
                positions_side: geometry.positions_cols(),
                hidden_units: geometry.n_hidden(),
                weights: geometry.weight_count(),
                parameters: model.parameter_count(),
                cases: session.cases(),
                epochs: config.epochs,
            };
            t.model = Some(model);
            t.session = Some(session);
            to_js(&report).map_err(JsValue::from)
        })
    }

    /// One epoch. Resolves to `{epoch, epochs, reconstruction_error, seconds, backend,
    /// backend_reason, done}`.
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
            let report = match result {
                Ok(report) => report,
                Err(e) => {
                    t.session = Some(session);
                    return Err(rejection(e));
                }
            };
            t.errors.push(report.reconstruction_error);
            t.history.push((&report).into());
            t.model = Some(session.model().clone());
            let step = StepReport {
                epoch: report.epoch,
                epochs: t.config.epochs,
                reconstruction_error: report.reconstruction_error,
                seconds: report.seconds,
                backend: if session.on_device() { "gpu" } else { "cpu" },
                backend_reason: session.backend_reason().map(str::to_string),
                done: session.done(),
            };
            t.session = Some(session);
            to_js(&step).map_err(JsValue::from)
        })
    }

    /// The filters per patch position: a grid of the positions (one cell when tied), each cell
    /// the first `per_position` hidden units' filters of that position, as RGBA
    /// `{width, height, data}`.
    pub fn filters(&self, per_position: usize) -> Result<JsValue, JsError> {
        let t = self.inner.borrow();
        let model = t.model.as_ref().ok_or_else(|| JsError::new("filters: not started"))?;
        Ok(image_to_js(grey_to_rgba(&filters_picture(model, per_position))))
    }

    /// The layer as the CLI's `local_rbm.bin` (format `deepbelief-local-rbm/1`): the geometry,
    /// the settings, where the crops came from, every epoch's record and the parameters, for
    /// `deepbelief` to read back. While a step is in flight it is the last finished epoch's.
    pub fn model_file(&self) -> Result<Vec<u8>, JsError> {
        let t = self.inner.borrow();
        let model = t.model.as_ref().ok_or_else(|| JsError::new("save model: not started"))?;
        let inputs = serde_json::json!({ "source": t.source, "page": true, "image_size": t.config.image_size });
        let mut bytes = Vec::with_capacity(model.parameter_count() * 4 + 4096);
        crate::format::local_rbm::write_parts(&[model], &[t.config.settings()], &inputs, std::slice::from_ref(&t.history), &mut bytes).map_err(|e| JsError::new(&format!("save model: {e}")))?;
        Ok(bytes)
    }

    /// The reconstruction error after each epoch so far.
    pub fn errors(&self) -> Vec<f64> {
        self.inner.borrow().errors.clone()
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
