//! The sparse autoencoder on the page (issue 17): an [`AutoencoderTrainer`] takes a copy of the
//! Playground's training images, trains one L-BFGS iteration (or SGD epoch) per `step()` through
//! `engine::autoencoder_session` (on WebGPU, awaiting each read-back, or on the CPU), and draws
//! W₁'s filters, ρ̂ and reconstructions between steps.
//!
//! Settings (all optional; the defaults are UFLDL's MNIST "vectorization" exercise): `hidden`
//! 196, `rho` 0.1, `lambda` 3e-3, `beta` 3, `method` "lbfgs" | "sgd", `iterations` 400,
//! `batch_size` 100, `learning_rate` 0.1, `momentum` 0.9, `cases` 10000 (at most the training
//! cases loaded), `seed` 1, `backend` "auto" | "cpu" | "gpu"; and `memory` (L-BFGS correction
//! pairs: minFunc's 100, fewer where 100 would take over 256 MiB) and `adapter_name` (the
//! browser's name of its adapter, which `auto` needs to skip a software one, as
//! `choose_backend`). A setting out of range, of the wrong type or unknown is an error naming it.

use super::{image_to_js, to_js, Playground};
use crate::autoencoder::lbfgs::LbfgsSettings;
use crate::autoencoder::sgd::SgdSettings;
use crate::autoencoder::stack;
use crate::autoencoder::{Autoencoder, CostSettings};
use crate::format::autoencoder::{self as format, DataRecord, InputPreprocessing, SavedAutoencoder};
use crate::backend::cpu::CpuBackend;
use crate::engine::autoencoder_session::{AutoencoderSession, CostTerms, Optimiser, StepReport};
use crate::engine::{Engine, EngineChoice};
use crate::report::image_grid::{self, Scaling};
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The most memory L-BFGS's correction pairs may take by default.
const PAIR_MEMORY_BUDGET: usize = 256 << 20;
/// The largest hidden layer the page trains.
const MAX_HIDDEN: usize = 10_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum MethodName {
    Lbfgs,
    Sgd,
}

#[derive(Clone, Debug, PartialEq)]
struct TrainerConfig {
    hidden: usize,
    rho: f64,
    lambda: f64,
    beta: f64,
    method: MethodName,
    iterations: usize,
    batch_size: usize,
    learning_rate: f64,
    momentum: f64,
    cases: usize,
    seed: u64,
    backend: EngineChoice,
    memory: Option<usize>,
    adapter_name: Option<String>,
}

impl Default for TrainerConfig {
    /// UFLDL's "vectorization" exercise on MNIST: 784-196-784, ρ 0.1, λ 3e-3, β 3, 400 L-BFGS
    /// iterations on 10,000 images.
    fn default() -> Self {
        TrainerConfig {
            hidden: 196,
            rho: 0.1,
            lambda: 3e-3,
            beta: 3.0,
            method: MethodName::Lbfgs,
            iterations: 400,
            batch_size: 100,
            learning_rate: 0.1,
            momentum: 0.9,
            cases: 10_000,
            seed: 1,
            backend: EngineChoice::Auto,
            memory: None,
            adapter_name: None,
        }
    }
}

const FIELDS: &str = "hidden, rho, lambda, beta, method, iterations, batch_size, learning_rate, momentum, cases, seed, backend, memory, adapter_name";

/// Reads the settings object field by field, so that every error names its field (NaN stays a
/// number here, unlike through JSON). `undefined` or `null` fields take their defaults.
fn read_config(config: &JsValue) -> Result<TrainerConfig, String> {
    let mut c = TrainerConfig::default();
    if config.is_undefined() || config.is_null() {
        return Ok(c);
    }
    if !config.is_object() || js_sys::Array::is_array(config) {
        return Err(format!("config: expected an object of settings ({FIELDS}), got {}", describe(config)));
    }
    let object: &js_sys::Object = config.unchecked_ref();
    for key in js_sys::Object::keys(object).iter() {
        let name = key.as_string().unwrap_or_default();
        let value = js_sys::Reflect::get(config, &key).map_err(|_| format!("{name}: cannot be read"))?;
        if value.is_undefined() || value.is_null() {
            continue;
        }
        let field = Field { name: &name, value: &value };
        match name.as_str() {
            "hidden" => c.hidden = field.whole(1, MAX_HIDDEN)?,
            "rho" => c.rho = field.number(|x| x > 0.0 && x < 1.0, "a number strictly between 0 and 1")?,
            "lambda" => c.lambda = field.number(|x| x >= 0.0, "a finite number ≥ 0")?,
            "beta" => c.beta = field.number(|x| x >= 0.0, "a finite number ≥ 0")?,
            "method" => {
                c.method = match field.text()?.as_str() {
                    "lbfgs" => MethodName::Lbfgs,
                    "sgd" => MethodName::Sgd,
                    other => return Err(format!("method: expected \"lbfgs\" or \"sgd\", got {other:?}")),
                }
            }
            "iterations" => c.iterations = field.whole(1, 1_000_000)?,
            "batch_size" => c.batch_size = field.whole(1, 1 << 30)?,
            "learning_rate" => c.learning_rate = field.number(|x| x > 0.0, "a finite number > 0")?,
            "momentum" => c.momentum = field.number(|x| (0.0..1.0).contains(&x), "a number in [0, 1)")?,
            "cases" => c.cases = field.whole(1, 1 << 30)?,
            "seed" => c.seed = field.whole(0, u32::MAX as usize)? as u64,
            "backend" => {
                let text = field.text()?;
                c.backend = serde_json::from_value(serde_json::Value::String(text.clone())).map_err(|_| format!("backend: expected \"auto\", \"cpu\" or \"gpu\", got {text:?}"))?;
            }
            "memory" => c.memory = Some(field.whole(1, 10_000)?),
            "adapter_name" => c.adapter_name = Some(field.text()?),
            other => return Err(format!("{other}: not a setting of the sparse autoencoder (expected one of {FIELDS})")),
        }
    }
    Ok(c)
}

struct Field<'a> {
    name: &'a str,
    value: &'a JsValue,
}

impl Field<'_> {
    fn number(&self, valid: impl Fn(f64) -> bool, expected: &str) -> Result<f64, String> {
        match self.value.as_f64() {
            Some(x) if x.is_finite() && valid(x) => Ok(x),
            Some(x) => Err(format!("{}: expected {expected}, got {x}", self.name)),
            None => Err(format!("{}: expected {expected}, got {}", self.name, describe(self.value))),
        }
    }

    fn whole(&self, min: usize, max: usize) -> Result<usize, String> {
        let expected = format!("a whole number in [{min}, {max}]");
        let x = self.number(|x| x.fract() == 0.0 && x >= min as f64 && x <= max as f64, &expected)?;
        Ok(x as usize)
    }

    fn text(&self) -> Result<String, String> {
        self.value.as_string().ok_or_else(|| format!("{}: expected a string, got {}", self.name, describe(self.value)))
    }
}

fn describe(value: &JsValue) -> String {
    value.as_string().map(|s| format!("{s:?}")).or_else(|| value.as_f64().map(|x| x.to_string())).unwrap_or_else(|| value.js_typeof().as_string().unwrap_or_default())
}

impl TrainerConfig {
    fn cost_settings(&self) -> CostSettings {
        CostSettings { weight_decay: self.lambda, sparsity_target: self.rho, sparsity_weight: self.beta }
    }

    fn optimiser(&self, n_params: usize) -> Optimiser {
        match self.method {
            MethodName::Lbfgs => {
                let affordable = (PAIR_MEMORY_BUDGET / (16 * n_params.max(1))).clamp(1, LbfgsSettings::default().memory);
                Optimiser::Lbfgs(LbfgsSettings { max_iterations: self.iterations, memory: self.memory.unwrap_or(affordable), ..LbfgsSettings::default() })
            }
            MethodName::Sgd => Optimiser::Sgd(SgdSettings { epochs: self.iterations, batch_size: self.batch_size, learning_rate: self.learning_rate, momentum: self.momentum, seed: self.seed }),
        }
    }

    /// The engine the settings ask for, by the Playground's rule, and why not the GPU where not.
    async fn engine(&self, device: Option<Engine>) -> (Engine, String) {
        if self.backend == EngineChoice::Cpu {
            return (Engine::Cpu, "the CPU was chosen".into());
        }
        if self.method == MethodName::Sgd {
            return (Engine::Cpu, "SGD trains on the CPU: the device's cost is full-batch".into());
        }
        let open = || async move {
            match device {
                Some(engine) => Ok(engine),
                None => Engine::gpu().await,
            }
        };
        match Engine::choose_with(self.backend, self.adapter_name.as_deref(), open).await {
            Ok(chosen) if chosen.engine.is_gpu() => (chosen.engine, format!("{} chose WebGPU", self.backend.name())),
            Ok(chosen) => (Engine::Cpu, chosen.notice.unwrap_or_default()),
            Err(e) => (Engine::Cpu, format!("WebGPU could not start ({e})")),
        }
    }
}

#[derive(Serialize)]
struct StartReport {
    backend: &'static str,
    backend_reason: String,
    cost: CostTerms,
    n_visible: usize,
    n_hidden: usize,
    cases: usize,
    /// L-BFGS correction pairs kept (0 for SGD).
    memory: usize,
}

#[derive(Serialize)]
struct StepAnswer {
    #[serde(flatten)]
    report: StepReport,
    backend: &'static str,
    backend_reason: String,
}

#[derive(Serialize)]
struct Sparsity<'a> {
    rho: f64,
    rho_hat: &'a [f32],
}

/// What the views read: the session's state after its last step (the session itself is away
/// while a step runs).
struct Snapshot {
    model: Autoencoder,
    mean_activation: Vec<f32>,
    initial: Option<CostTerms>,
    cost: Option<CostTerms>,
    history: Vec<f64>,
    iterations: usize,
    evaluations: usize,
    stop: Option<String>,
    seconds: f64,
}

enum Phase {
    New,
    Starting,
    Ready(Box<AutoencoderSession>),
    /// A step holds the session.
    Stepping,
}

struct Trainer {
    config: TrainerConfig,
    data: Arc<[f32]>,
    /// The data set's name, for the saved file.
    source: String,
    image_shape: (usize, usize),
    /// The Playground's WebGPU device when it had one working (reused rather than opened again).
    device: Option<Engine>,
    phase: Phase,
    snapshot: Snapshot,
    backend: &'static str,
    backend_reason: String,
}

impl Trainer {
    fn n_visible(&self) -> usize {
        self.snapshot.model.n_visible
    }

    fn rows(&self) -> usize {
        self.data.len() / self.n_visible()
    }

    fn take_snapshot(&mut self, session: &AutoencoderSession) {
        self.snapshot = Snapshot {
            model: session.model().clone(),
            mean_activation: session.mean_activation().to_vec(),
            initial: Some(session.initial_cost()),
            cost: Some(session.cost()),
            history: session.history().to_vec(),
            iterations: session.iterations(),
            evaluations: session.evaluations(),
            stop: session.stop(),
            seconds: session.seconds(),
        };
        if !session.on_device() {
            if self.backend == "gpu" {
                self.backend_reason = session.backend_reason().unwrap_or("the device failed").to_string();
            }
            self.backend = "cpu";
        }
    }
}

/// A sparse autoencoder trained on the Playground's images, one step at a time.
#[wasm_bindgen]
pub struct AutoencoderTrainer {
    trainer: Rc<RefCell<Trainer>>,
}

fn rejection(message: impl std::fmt::Display) -> JsValue {
    JsError::new(&message.to_string()).into()
}

#[wasm_bindgen]
impl AutoencoderTrainer {
    /// Copies the first `cases` training images of `playground` (its loaded cases less the
    /// held-out ones; values must lie in [0, 1]) and draws the initial weights from `seed`.
    /// Nothing is evaluated until `start()`.
    #[wasm_bindgen(constructor)]
    pub fn new(playground: &Playground, config: JsValue) -> Result<AutoencoderTrainer, JsError> {
        let config = read_config(&config).map_err(|e| JsError::new(&e))?;
        let loaded = playground.data()?;
        let cases: Vec<usize> = playground.training_case_indices()?.into_iter().take(config.cases).collect();
        if cases.is_empty() {
            return Err(JsError::new("cases: the loaded data have no training cases"));
        }
        let n_visible = loaded.n_inputs;
        let mut values = vec![0.0f32; cases.len() * n_visible];
        loaded.gather_into(&cases, &mut values);
        if let Some(k) = values.iter().position(|x| !(0.0..=1.0).contains(x)) {
            return Err(JsError::new(&format!("{}: input {} of training case {} is {}; a sigmoid autoencoder reconstructs values in [0, 1]", loaded.name, k % n_visible, k / n_visible, values[k])));
        }
        let n_params = 2 * n_visible * config.hidden + config.hidden + n_visible;
        if 4 * n_params > 1 << 30 {
            return Err(JsError::new(&format!("hidden: {} hidden units on {n_visible} inputs make {n_params} parameters, too many for the page", config.hidden)));
        }
        let model = Autoencoder::initialise(n_visible, config.hidden, config.seed);
        let trainer = Trainer {
            source: loaded.name.clone(),
            image_shape: playground.image_shape()?,
            device: playground.gpu.borrow().device(),
            data: values.into(),
            phase: Phase::New,
            snapshot: Snapshot { model, mean_activation: Vec::new(), initial: None, cost: None, history: Vec::new(), iterations: 0, evaluations: 0, stop: None, seconds: 0.0 },
            backend: "cpu",
            backend_reason: String::new(),
            config,
        };
        Ok(AutoencoderTrainer { trainer: Rc::new(RefCell::new(trainer)) })
    }

    /// Opens the device when the settings' backend says so (`auto` skips software adapters),
    /// compiles the kernels and evaluates `J` at the start. Resolves to `{backend: "cpu" | "gpu",
    /// backend_reason, cost: {total, reconstruction, weight_decay, sparsity}, n_visible,
    /// n_hidden, cases, memory}`.
    pub fn start(&self) -> js_sys::Promise {
        let trainer = self.trainer.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (config, data, device, model) = {
                let mut t = trainer.borrow_mut();
                if !matches!(t.phase, Phase::New) {
                    return Err(rejection("start: this trainer has started already (make a new one to start again)"));
                }
                t.phase = Phase::Starting;
                (t.config.clone(), t.data.clone(), t.device.clone(), t.snapshot.model.clone())
            };
            let (engine, chose) = config.engine(device).await;
            let optimiser = config.optimiser(model.n_params());
            let started = AutoencoderSession::start(&engine, model, data, config.cost_settings(), optimiser).await;
            let mut t = trainer.borrow_mut();
            let session = match started {
                Ok(session) => session,
                Err(e) => {
                    t.phase = Phase::New;
                    return Err(rejection(e));
                }
            };
            t.backend = if session.on_device() { "gpu" } else { "cpu" };
            t.backend_reason = session.backend_reason().map_or(chose, str::to_string);
            t.take_snapshot(&session);
            let report = StartReport {
                backend: t.backend,
                backend_reason: t.backend_reason.clone(),
                cost: session.cost(),
                n_visible: session.model().n_visible,
                n_hidden: session.model().n_hidden,
                cases: session.rows(),
                memory: match optimiser {
                    Optimiser::Lbfgs(settings) => settings.memory,
                    Optimiser::Sgd(_) => 0,
                },
            };
            t.phase = Phase::Ready(Box::new(session));
            to_js(&report).map_err(JsValue::from)
        })
    }

    /// One L-BFGS iteration (or SGD epoch). Resolves to `{iteration, cost: {total,
    /// reconstruction, weight_decay, sparsity}, evaluations, seconds (this step's), done, stop
    /// (null while running), backend, backend_reason}`. Rejects with the reason on a lost device
    /// (the next step goes on on the CPU) or a cost that is not finite; the model keeps its last
    /// good parameters either way.
    pub fn step(&self) -> js_sys::Promise {
        let trainer = self.trainer.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let mut session = {
                let mut t = trainer.borrow_mut();
                match std::mem::replace(&mut t.phase, Phase::Stepping) {
                    Phase::Ready(session) => session,
                    other => {
                        let why = match other {
                            Phase::Stepping => "step: a step is running already (await it first)",
                            _ => "step: start() the trainer first",
                        };
                        t.phase = other;
                        return Err(rejection(why));
                    }
                }
            };
            let result = session.step().await;
            let mut t = trainer.borrow_mut();
            t.take_snapshot(&session);
            t.phase = Phase::Ready(session);
            let report = result.map_err(rejection)?;
            to_js(&StepAnswer { report, backend: t.backend, backend_reason: t.backend_reason.clone() }).map_err(JsValue::from)
        })
    }

    /// W₁'s columns (the first `max_tiles` hidden units') as image tiles, each scaled by its own
    /// max|w| (UFLDL's `display_network`): `{width, height, data}`.
    pub fn filters(&self, max_tiles: usize) -> Result<JsValue, JsError> {
        let t = self.trainer.borrow();
        let model = &t.snapshot.model;
        let count = max_tiles.clamp(1, model.n_hidden);
        let filters = image_grid::filters_of(&model.w1, model.n_visible, model.n_hidden, count);
        let columns = (count as f64).sqrt().ceil() as usize;
        Ok(image_to_js(image_grid::tile(&filters, count, t.image_shape, columns, Scaling::SymmetricPerTile)))
    }

    /// `{rho, rho_hat}`: the target and each hidden unit's mean activation over the training
    /// cases at the current parameters (empty before `start()`).
    pub fn sparsity(&self) -> Result<JsValue, JsError> {
        let t = self.trainer.borrow();
        to_js(&Sparsity { rho: t.config.rho, rho_hat: &t.snapshot.mean_activation })
    }

    /// The first `n` training cases in a row above their reconstructions `x̂` at the current
    /// parameters: `{width, height, data}`.
    pub fn reconstructions(&self, n: usize) -> Result<JsValue, JsError> {
        let t = self.trainer.borrow();
        let v = t.n_visible();
        let n = n.clamp(1, t.rows());
        let inputs = &t.data[..n * v];
        let outputs = t.snapshot.model.reconstruct(&CpuBackend, inputs);
        let mut pairs = inputs.to_vec();
        pairs.extend_from_slice(&outputs);
        Ok(image_to_js(image_grid::tile(&pairs, 2 * n, t.image_shape, n, Scaling::Unit)))
    }

    /// The model file (`format::autoencoder`, "deepbelief-autoencoder/2", as the CLI writes
    /// it): one layer with its settings and training record so far (`stop` is "in_progress"
    /// while the run goes on), the inputs as unit pixels of the data's image shape, and what
    /// they came from.
    pub fn model_json(&self) -> Result<String, JsError> {
        let t = self.trainer.borrow();
        let s = &t.snapshot;
        let (Some(initial), Some(last)) = (s.initial, s.cost) else {
            return Err(JsError::new("model_json: start() the trainer first"));
        };
        let c = &t.config;
        let method = match c.method {
            MethodName::Lbfgs => stack::MethodName::Lbfgs,
            MethodName::Sgd => stack::MethodName::Sgd,
        };
        let settings = stack::LayerSettings { n_hidden: s.model.n_hidden, cost: c.cost_settings(), method, iterations: c.iterations, seed: c.seed };
        let record = stack::LayerRecord {
            cases: t.rows(),
            initial: initial.into(),
            last: last.into(),
            iterations: s.iterations,
            evaluations: s.evaluations,
            stop: s.stop.clone().unwrap_or_else(|| "in_progress".into()),
            history: s.history.clone(),
            mean_activation: stack::ActivationSummary::of(&s.mean_activation),
            seconds: s.seconds,
            backend: t.backend.to_string(),
        };
        let saved = SavedAutoencoder {
            preprocessing: InputPreprocessing::UnitPixels { image_shape: Some(t.image_shape) },
            pretraining_data: DataRecord { files: vec![t.source.clone()], cases: t.rows(), classes: None },
            stack: stack::AutoencoderStack { layers: vec![stack::StackLayer { autoencoder: s.model.clone(), settings, record: Some(record) }] },
            supervised_data: None,
            supervised: None,
        };
        format::to_json_checked(&saved).map_err(|e| JsError::new(&format!("model_json: {e}")))
    }

    /// Testing hook: destroys the device the trainer evaluates on (the next step fails, the one
    /// after goes on on the CPU). No-op on the CPU or while a step runs.
    pub fn simulate_gpu_loss(&self) {
        if let Phase::Ready(session) = &self.trainer.borrow().phase {
            session.simulate_device_loss();
        }
    }
}
