//! Sparse coding on the page (issue 18): a [`SparseCodingTrainer`] cuts patches from the
//! Playground's training images (or takes whole cases), chooses β for a target fraction of
//! non-zero codes, and learns a basis one mini-batch per `step()` through
//! `engine::sparse_coding_session` (each step a code step and a basis step, on the device where
//! the session has one, else on the CPU). Between steps it draws the basis tiles, the codes'
//! histograms and reconstructions, and writes the CLI's `sparse_coding.json`.
//!
//! Settings (all optional; docs/SPARSE_CODING.md, "On the page", says why these defaults):
//! `patch` 12 (the side of square patches cut from the images; 0, or the images' own side,
//! learns from whole cases), `cases` 5000 (patches, or the first whole cases), `bases` 100,
//! `sparsity` 0.05 (β is chosen so this fraction of the codes is non-zero at the initial basis)
//! or `beta` (given directly, instead), `solver` "cd" | "raina", `batch_size` 500, `passes` 10, `statistics` "forgetting_first_pass" | "forgetting" | "whole_set",
//! `seed` 1 (the patches and the initial basis), `backend` "auto" | "cpu" | "gpu", and
//! `adapter_name` (the browser's name of its adapter, which `auto` needs to skip a software one).
//! A setting out of range, of the wrong type or unknown is an error naming it.

use super::{image_to_js, to_js, Playground};
use crate::backend::cpu::CpuBackend;
use crate::engine::sparse_coding_session::SparseCodingSession;
use crate::engine::{Engine, EngineChoice};
use crate::format::sparse_coding::{self as format, SavedSettings, SavedSparseCoding};
use crate::report::image_grid::{self, Scaling};
use crate::rng::{Purpose, RngStream};
use crate::sparse_coding::{beta_for_sparsity, Basis, BasisStepSettings, BatchRecord, CodeSolver, FitSettings, PassRecord, SparsitySearch, SparsitySettings, StatisticsRule};
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// The largest basis the page learns.
const MAX_BASES: usize = 4096;
/// The largest patch side.
const MAX_PATCH: usize = 64;
/// The most bytes the cases and their codes may take together.
const MEMORY_BUDGET: usize = 256 << 20;
/// Cases the β search codes (the first ones), as the CLI.
const SEARCH_CASES: usize = 1000;
/// A patch with less ink than this (the sum of its values: one full pixel's worth) is skipped:
/// blank background codes to zero and teaches nothing.
const MIN_INK: f32 = 1.0;
/// Candidate patches cut per patch wanted, at most, before giving up on finding inked ones.
const CANDIDATES_PER_PATCH: usize = 4;
/// The most bins of a histogram.
const MAX_BINS: usize = 1000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SolverName {
    Cd,
    Raina,
}

#[derive(Clone, Debug, PartialEq)]
struct TrainerConfig {
    /// 0: whole cases.
    patch: usize,
    cases: usize,
    bases: usize,
    sparsity: f64,
    beta: Option<f64>,
    solver: SolverName,
    batch_size: usize,
    passes: usize,
    statistics: StatisticsRule,
    seed: u64,
    backend: EngineChoice,
    adapter_name: Option<String>,
}

impl Default for TrainerConfig {
    /// Pen strokes from MNIST: 5,000 patches of 12 × 12 cut from the digits, 100 bases, β for 5%
    /// non-zero codes, coordinate descent, mini-batches of 500, 10 passes.
    fn default() -> Self {
        TrainerConfig {
            patch: 12,
            cases: 5000,
            bases: 100,
            sparsity: 0.05,
            beta: None,
            solver: SolverName::Cd,
            batch_size: 500,
            passes: 10,
            statistics: StatisticsRule::ForgettingFirstPass,
            seed: 1,
            backend: EngineChoice::Auto,
            adapter_name: None,
        }
    }
}

const FIELDS: &str = "patch, cases, bases, sparsity, beta, solver, batch_size, passes, statistics, seed, backend, adapter_name";

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
            "patch" => c.patch = field.whole(0, MAX_PATCH)?,
            "cases" => c.cases = field.whole(1, 1 << 24)?,
            "bases" => c.bases = field.whole(1, MAX_BASES)?,
            "sparsity" => c.sparsity = field.number(|x| x > 0.0 && x < 1.0, "a fraction of non-zero codes strictly between 0 and 1")?,
            "beta" => c.beta = Some(field.number(|x| x > 0.0, "a finite number > 0")?),
            "solver" => {
                c.solver = match field.text()?.as_str() {
                    "cd" => SolverName::Cd,
                    "raina" => SolverName::Raina,
                    other => return Err(format!("solver: expected \"cd\" or \"raina\", got {other:?}")),
                }
            }
            "batch_size" => c.batch_size = field.whole(1, 1 << 30)?,
            "passes" => c.passes = field.whole(1, 100_000)?,
            "statistics" => {
                c.statistics = match field.text()?.as_str() {
                    "forgetting" => StatisticsRule::Forgetting,
                    "whole_set" => StatisticsRule::WholeSet,
                    "forgetting_first_pass" => StatisticsRule::ForgettingFirstPass,
                    other => return Err(format!("statistics: expected \"forgetting_first_pass\", \"forgetting\" or \"whole_set\", got {other:?}")),
                }
            }
            "seed" => c.seed = field.whole(0, u32::MAX as usize)? as u64,
            "backend" => {
                let text = field.text()?;
                c.backend = serde_json::from_value(serde_json::Value::String(text.clone())).map_err(|_| format!("backend: expected \"auto\", \"cpu\" or \"gpu\", got {text:?}"))?;
            }
            "adapter_name" => c.adapter_name = Some(field.text()?),
            other => return Err(format!("{other}: not a setting of sparse coding (expected one of {FIELDS})")),
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
    fn solver(&self) -> CodeSolver {
        match self.solver {
            SolverName::Cd => CodeSolver::coordinate_descent(),
            SolverName::Raina => CodeSolver::raina(),
        }
    }

    fn fit_settings(&self, beta: f64) -> FitSettings {
        FitSettings { beta, solver: self.solver(), basis_step: BasisStepSettings::default(), batch_size: self.batch_size, passes: self.passes, track_whole_set: true, statistics: self.statistics }
    }

    /// The engine the settings ask for, by the Playground's rule, and why not the GPU where not.
    async fn engine(&self, device: Option<Engine>) -> (Engine, String) {
        if self.backend == EngineChoice::Cpu {
            return (Engine::Cpu, "the CPU was chosen".into());
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

/// The cases the basis learns from.
struct Inputs {
    /// `rows × width`, cases as rows.
    values: Vec<f32>,
    width: usize,
    /// A case as an image, `(rows, cols)`; `(1, width)` for data that are not images.
    tile: (usize, usize),
    images: bool,
    /// The patch side, or `None` for whole cases.
    patch: Option<usize>,
    /// Candidate patches cut to find the inked ones (0 for whole cases).
    candidates: usize,
}

/// The first `config.cases` training cases as they are, or `config.cases` inked patches cut at
/// random (Philox `(seed, step 0, DataSample)`, as `data::patches::sample_patches`) from the
/// training images.
fn inputs_of(playground: &Playground, config: &TrainerConfig) -> Result<Inputs, String> {
    let data = playground.data().map_err(|_| "cases: no data loaded yet".to_string())?;
    let training = playground.training_case_indices().map_err(|_| "cases: no data loaded yet".to_string())?;
    if training.is_empty() {
        return Err("cases: the loaded data have no training cases".into());
    }
    let width = data.n_inputs;
    let whole = match (config.patch, data.image_shape) {
        (0, _) => true,
        (side, Some((rows, cols))) if side == rows && side == cols => true,
        (side, Some((rows, cols))) if side > rows || side > cols => return Err(format!("patch: {side} × {side} patches do not fit in the {rows} × {cols} images (at most {}; 0 learns from whole images)", rows.min(cols))),
        (_, Some(_)) => false,
        (_, None) => return Err(format!("patch: the loaded data ({}) are not images, so no patches can be cut; 0 learns from whole cases", data.name)),
    };
    if whole {
        let cases: Vec<usize> = training.into_iter().take(config.cases).collect();
        let mut values = vec![0.0f32; cases.len() * width];
        data.gather_into(&cases, &mut values);
        let tile = data.image_shape.unwrap_or((1, width));
        return Ok(Inputs { values, width, tile, images: data.image_shape.is_some(), patch: None, candidates: 0 });
    }
    let (rows, cols) = data.image_shape.expect("patches come from images");
    let side = config.patch;
    let mut pixels = vec![0.0f32; training.len() * width];
    data.gather_into(&training, &mut pixels);
    let stream = RngStream::new(config.seed, 0, Purpose::DataSample);
    let pick = |index: u64, n: usize| ((stream.uniform(index) as f64 * n as f64) as usize).min(n - 1);
    let limit = config.cases * CANDIDATES_PER_PATCH;
    let mut values = Vec::with_capacity(config.cases * side * side);
    let mut patch = vec![0.0f32; side * side];
    let mut candidates = 0;
    while values.len() < config.cases * side * side && candidates < limit {
        let k = candidates as u64;
        candidates += 1;
        let image = &pixels[pick(3 * k, training.len()) * width..][..width];
        let (row, col) = (pick(3 * k + 1, rows - side + 1), pick(3 * k + 2, cols - side + 1));
        for (r, out) in patch.chunks_exact_mut(side).enumerate() {
            out.copy_from_slice(&image[(row + r) * cols + col..][..side]);
        }
        if patch.iter().map(|x| x.abs()).sum::<f32>() >= MIN_INK {
            values.extend_from_slice(&patch);
        }
    }
    let found = values.len() / (side * side);
    if found < config.cases {
        return Err(format!("patch: only {found} of {candidates} {side} × {side} patches cut from the images have ink (a sum of at least {MIN_INK}); ask for fewer cases or larger patches"));
    }
    Ok(Inputs { values, width: side * side, tile: (side, side), images: true, patch: Some(side), candidates })
}

#[derive(Serialize)]
struct StartReport {
    backend: &'static str,
    backend_reason: String,
    beta: f64,
    /// The search that chose β (`null` for a given β).
    beta_search: Option<SparsitySearch>,
    /// The whole set's objective with zero codes.
    objective: f64,
    nonzero_fraction: f64,
    n_inputs: usize,
    n_bases: usize,
    cases: usize,
    tile: [usize; 2],
    patch: Option<usize>,
    batches: usize,
    passes: usize,
    sparsity: Option<f64>,
    seconds: f64,
}

#[derive(Serialize)]
struct StepAnswer {
    /// The pass (1-based) and its mini-batch (1-based) that this step trained.
    pass: usize,
    batch: usize,
    batches: usize,
    passes: usize,
    /// Steps trained so far.
    step: usize,
    objective: f64,
    /// The whole set's objective after the code step, before the basis step.
    objective_after_codes: Option<f64>,
    nonzero_fraction: f64,
    /// The mini-batch's own fraction of non-zero codes.
    batch_nonzero_fraction: Option<f64>,
    /// The code step's mean iterations (sweeps) per case, and the basis step's iterations.
    code_iterations: Option<f64>,
    basis_iterations: Option<usize>,
    seconds: f64,
    done: bool,
    backend: &'static str,
    backend_reason: String,
}

#[derive(Serialize)]
struct Histogram {
    edges: Vec<f64>,
    counts: Vec<u64>,
}

#[derive(Serialize)]
struct CodeHistogram {
    /// The non-zero code values, in equal bins over `[−max|a|, max|a|]`.
    values: Histogram,
    /// `per_case[c]`: the cases with `c` non-zero codes (up to the most any case has).
    per_case: Vec<u64>,
    /// Cases using each basis vector (a non-zero code), in the basis's order.
    per_basis: Vec<u64>,
    nonzero: u64,
    zeros: u64,
    nonzero_fraction: f64,
    /// The fraction β was chosen for (`null` for a given β).
    target: Option<f64>,
    cases: usize,
    n_bases: usize,
}

/// What the views read: the session's state after its last step (the session itself is away
/// while a step runs).
struct Snapshot {
    basis: Basis,
    codes: Vec<f32>,
    records: Vec<BatchRecord>,
    passes: Vec<PassRecord>,
    objective: f64,
    nonzero_fraction: f64,
    seconds: f64,
    done: bool,
}

enum Phase {
    New,
    Starting,
    Ready(Box<SparseCodingSession>),
    /// A step holds the session.
    Stepping,
}

struct Trainer {
    config: TrainerConfig,
    data: Arc<[f32]>,
    inputs: InputsRecord,
    /// The Playground's WebGPU device when it had one working (reused rather than opened again).
    device: Option<Engine>,
    phase: Phase,
    /// β and the search that chose it, once started.
    beta: Option<(f64, Option<SparsitySearch>)>,
    snapshot: Snapshot,
    backend: &'static str,
    backend_reason: String,
}

/// Where the cases came from, for the saved file and the views.
struct InputsRecord {
    source: String,
    width: usize,
    tile: (usize, usize),
    images: bool,
    patch: Option<usize>,
    candidates: usize,
}

impl Trainer {
    fn rows(&self) -> usize {
        self.data.len() / self.inputs.width
    }

    fn take_snapshot(&mut self, session: &SparseCodingSession) {
        self.snapshot = Snapshot {
            basis: session.basis().clone(),
            codes: session.codes().to_vec(),
            records: session.records().to_vec(),
            passes: session.passes().to_vec(),
            objective: session.objective(),
            nonzero_fraction: session.nonzero_fraction(),
            seconds: session.seconds(),
            done: session.done(),
        };
        if !session.on_device() {
            if self.backend == "gpu" {
                self.backend_reason = session.backend_reason().unwrap_or("the device failed").to_string();
            }
            self.backend = "cpu";
        }
    }
}

/// A sparse coding basis learnt from the Playground's images, one mini-batch at a time.
#[wasm_bindgen]
pub struct SparseCodingTrainer {
    trainer: Rc<RefCell<Trainer>>,
}

fn rejection(message: impl std::fmt::Display) -> JsValue {
    JsError::new(&message.to_string()).into()
}

#[wasm_bindgen]
impl SparseCodingTrainer {
    /// Cuts the cases from `playground`'s training cases (the loaded cases less the held-out
    /// ones) and draws the initial basis from `seed`. β is chosen, and nothing else evaluated,
    /// in `start()`.
    #[wasm_bindgen(constructor)]
    pub fn new(playground: &Playground, config: JsValue) -> Result<SparseCodingTrainer, JsError> {
        let config = read_config(&config).map_err(|e| JsError::new(&e))?;
        let source = playground.data().map(|d| d.name.clone()).unwrap_or_default();
        let inputs = inputs_of(playground, &config).map_err(|e| JsError::new(&e))?;
        let rows = inputs.values.len() / inputs.width;
        let bytes = 4 * rows * (inputs.width + config.bases);
        if bytes > MEMORY_BUDGET {
            return Err(JsError::new(&format!("cases: {rows} cases of {} inputs with {} codes each take {} MiB, more than the page's {} MiB", inputs.width, config.bases, bytes >> 20, MEMORY_BUDGET >> 20)));
        }
        let basis = Basis::initialise(inputs.width, config.bases, config.seed).map_err(|e| JsError::new(&format!("bases: {e}")))?;
        let trainer = Trainer {
            inputs: InputsRecord { source, width: inputs.width, tile: inputs.tile, images: inputs.images, patch: inputs.patch, candidates: inputs.candidates },
            data: inputs.values.into(),
            device: playground.gpu.borrow().device(),
            phase: Phase::New,
            beta: None,
            snapshot: Snapshot { codes: vec![0.0; rows * config.bases], basis, records: Vec::new(), passes: Vec::new(), objective: f64::NAN, nonzero_fraction: 0.0, seconds: 0.0, done: false },
            backend: "cpu",
            backend_reason: String::new(),
            config,
        };
        Ok(SparseCodingTrainer { trainer: Rc::new(RefCell::new(trainer)) })
    }

    /// Chooses β (unless given: the search codes the first 1,000 cases by coordinate descent at
    /// the initial basis), opens the device when the settings' backend says so (`auto` skips
    /// software adapters) and starts the session from zero codes. Resolves to `{backend: "cpu" |
    /// "gpu", backend_reason, beta, beta_search, objective, nonzero_fraction, n_inputs, n_bases,
    /// cases, tile: [rows, cols], patch, batches (per pass), passes, sparsity, seconds}`.
    pub fn start(&self) -> js_sys::Promise {
        let trainer = self.trainer.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (config, data, device, basis, width) = {
                let mut t = trainer.borrow_mut();
                if !matches!(t.phase, Phase::New) {
                    return Err(rejection("start: this trainer has started already (make a new one to start again)"));
                }
                t.phase = Phase::Starting;
                (t.config.clone(), t.data.clone(), t.device.clone(), t.snapshot.basis.clone(), t.inputs.width)
            };
            let started = crate::clock::now_seconds();
            let chosen = match config.beta {
                Some(beta) => Ok((beta, None)),
                None => {
                    let sample = &data[..(data.len() / width).min(SEARCH_CASES) * width];
                    beta_for_sparsity(&CpuBackend, &basis, sample, &SparsitySettings::new(config.sparsity), &CodeSolver::coordinate_descent())
                        .map(|search| (search.beta, Some(search)))
                        .map_err(|e| format!("sparsity: {e}"))
                }
            };
            let (beta, search) = match chosen {
                Ok(chosen) => chosen,
                Err(e) => {
                    trainer.borrow_mut().phase = Phase::New;
                    return Err(rejection(e));
                }
            };
            let (engine, chose) = config.engine(device).await;
            let session = SparseCodingSession::start(&engine, basis, data, config.fit_settings(beta)).await;
            let mut t = trainer.borrow_mut();
            let session = match session {
                Ok(session) => session,
                Err(e) => {
                    t.phase = Phase::New;
                    return Err(rejection(e));
                }
            };
            t.backend = if session.on_device() { "gpu" } else { "cpu" };
            t.backend_reason = session.backend_reason().map_or(chose, str::to_string);
            t.beta = Some((beta, search));
            t.take_snapshot(&session);
            let report = StartReport {
                backend: t.backend,
                backend_reason: t.backend_reason.clone(),
                beta,
                beta_search: search,
                objective: session.objective(),
                nonzero_fraction: session.nonzero_fraction(),
                n_inputs: t.inputs.width,
                n_bases: config.bases,
                cases: session.rows(),
                tile: [t.inputs.tile.0, t.inputs.tile.1],
                patch: t.inputs.patch,
                batches: session.batches_per_pass(),
                passes: config.passes,
                sparsity: config.beta.is_none().then_some(config.sparsity),
                seconds: crate::clock::now_seconds() - started,
            };
            t.phase = Phase::Ready(Box::new(session));
            to_js(&report).map_err(JsValue::from)
        })
    }

    /// One mini-batch: its code step and the basis step. Resolves to `{pass, batch (1-based),
    /// batches, passes, step, objective, objective_after_codes, nonzero_fraction,
    /// batch_nonzero_fraction, code_iterations, basis_iterations, seconds (this step's), done,
    /// backend, backend_reason}`; once every pass is made a step changes nothing and reports the
    /// last batch again. Rejects with the reason on a lost device (the next step takes the same
    /// mini-batch on the CPU); the basis and codes keep their values from before the step.
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
            let batches = session.batches_per_pass();
            t.phase = Phase::Ready(session);
            let report = result.map_err(rejection)?;
            let record = report.record.as_ref().or(t.snapshot.records.last());
            let answer = StepAnswer {
                pass: record.map_or(0, |r| r.pass),
                batch: record.map_or(0, |r| r.batch + 1),
                batches,
                passes: t.config.passes,
                step: t.snapshot.records.len(),
                objective: report.objective,
                objective_after_codes: record.map(|r| r.objective_after_codes),
                nonzero_fraction: report.nonzero_fraction,
                batch_nonzero_fraction: record.map(|r| r.nonzero_fraction),
                code_iterations: record.map(|r| r.codes.iterations_mean),
                basis_iterations: record.map(|r| r.basis_iterations),
                seconds: report.seconds,
                done: report.done,
                backend: t.backend,
                backend_reason: t.backend_reason.clone(),
            };
            to_js(&answer).map_err(JsValue::from)
        })
    }

    /// The first `max_tiles` basis vectors as image tiles, each scaled by its own max|b| (grey
    /// is zero): `{width, height, data}`.
    pub fn bases(&self, max_tiles: usize) -> Result<JsValue, JsError> {
        let t = self.trainer.borrow();
        let basis = &t.snapshot.basis;
        let count = max_tiles.clamp(1, basis.n_bases);
        let tiles = image_grid::filters_of(&basis.values, basis.n_inputs, basis.n_bases, count);
        let columns = (count as f64).sqrt().ceil() as usize;
        Ok(image_to_js(image_grid::tile(&tiles, count, t.inputs.tile, columns, Scaling::SymmetricPerTile)))
    }

    /// The codes after the last step (zero before the first): `{values: {edges, counts}` (the
    /// non-zero values in `bins` equal bins over `[−max|a|, max|a|]`)`, per_case` (cases by their
    /// number of non-zero codes)`, per_basis` (cases using each basis vector)`, nonzero, zeros,
    /// nonzero_fraction, target, cases, n_bases}`.
    pub fn code_histogram(&self, bins: usize) -> Result<JsValue, JsError> {
        if bins == 0 || bins > MAX_BINS {
            return Err(JsError::new(&format!("bins: expected a whole number in [1, {MAX_BINS}], got {bins}")));
        }
        let t = self.trainer.borrow();
        let n = t.snapshot.basis.n_bases;
        let codes = &t.snapshot.codes;
        let largest = codes.iter().fold(0.0f64, |m, &a| m.max(f64::from(a.abs())));
        let half = if largest > 0.0 { largest } else { 1.0 };
        let width = 2.0 * half / bins as f64;
        let mut counts = vec![0u64; bins];
        let mut per_basis = vec![0u64; n];
        let mut per_case = Vec::new();
        for case in codes.chunks_exact(n) {
            let mut used = 0usize;
            for (j, &a) in case.iter().enumerate() {
                if a != 0.0 {
                    used += 1;
                    per_basis[j] += 1;
                    counts[(((f64::from(a) + half) / width) as usize).min(bins - 1)] += 1;
                }
            }
            if per_case.len() <= used {
                per_case.resize(used + 1, 0);
            }
            per_case[used] += 1;
        }
        let nonzero: u64 = counts.iter().sum();
        let histogram = CodeHistogram {
            values: Histogram { edges: (0..=bins).map(|k| -half + k as f64 * width).collect(), counts },
            per_case,
            per_basis,
            nonzero,
            zeros: codes.len() as u64 - nonzero,
            nonzero_fraction: nonzero as f64 / codes.len().max(1) as f64,
            target: t.config.beta.is_none().then_some(t.config.sparsity),
            cases: t.rows(),
            n_bases: n,
        };
        to_js(&histogram)
    }

    /// The first `n` cases in a row above their reconstructions `Ba` from their latest codes:
    /// `{width, height, data}` (values clipped to [0, 1]).
    pub fn reconstructions(&self, n: usize) -> Result<JsValue, JsError> {
        let t = self.trainer.borrow();
        let (k, bases) = (t.inputs.width, t.snapshot.basis.n_bases);
        let n = n.clamp(1, t.rows());
        let inputs = &t.data[..n * k];
        let outputs = crate::sparse_coding::reconstruct(&CpuBackend, &t.snapshot.basis, &t.snapshot.codes[..n * bases]);
        let mut pairs = inputs.to_vec();
        pairs.extend_from_slice(&outputs);
        Ok(image_to_js(image_grid::tile(&pairs, 2 * n, t.inputs.tile, n, Scaling::Unit)))
    }

    /// The model file (`format::sparse_coding`, "deepbelief-sparse-coding/1", as the CLI writes
    /// it): the basis, its settings with the β search, the whole set's objective before the first
    /// pass and after each finished one, every mini-batch's record so far, and where the cases
    /// came from.
    pub fn model_json(&self) -> Result<String, JsError> {
        let t = self.trainer.borrow();
        let Some((beta, beta_search)) = t.beta else {
            return Err(JsError::new("model_json: start() the trainer first"));
        };
        let s = &t.snapshot;
        let c = &t.config;
        let i = &t.inputs;
        let preprocessing = if i.images { "pixels / 255, as loaded" } else { "the loaded database's values, as loaded" };
        let inputs = match i.patch {
            Some(side) => serde_json::json!({ "page": i.source, "patch": side, "patches": t.rows(), "candidates": i.candidates, "seed": c.seed, "skipped": format!("patches whose values sum to less than {MIN_INK}"), "preprocessing": preprocessing }),
            None => serde_json::json!({ "page": i.source, "cases": t.rows(), "preprocessing": preprocessing }),
        };
        let saved = SavedSparseCoding {
            format: format::FORMAT.to_string(),
            n_inputs: s.basis.n_inputs,
            n_bases: s.basis.n_bases,
            tile: i.images.then_some([i.tile.0, i.tile.1]),
            settings: SavedSettings { beta, beta_search, solver: c.solver(), basis_step: BasisStepSettings::default(), batch_size: c.batch_size, passes: c.passes, statistics: c.statistics, seed: c.seed },
            inputs,
            history: s.passes.clone(),
            batches: s.records.clone(),
            seconds: s.seconds,
            basis: s.basis.values.clone(),
        };
        format::to_json(&saved).map_err(|e| JsError::new(&format!("model_json: {e}")))
    }

    /// Every pass has been made.
    pub fn done(&self) -> bool {
        self.trainer.borrow().snapshot.done
    }

    /// The whole set's objective after the last step (NaN before `start()`).
    pub fn objective(&self) -> f64 {
        self.trainer.borrow().snapshot.objective
    }

    /// The fraction of non-zero codes over the whole set after the last step.
    pub fn nonzero_fraction(&self) -> f64 {
        self.trainer.borrow().snapshot.nonzero_fraction
    }

    /// Testing hook: destroys the device the session steps on (the next step fails, the one
    /// after goes on on the CPU). No-op on the CPU or while a step runs.
    pub fn simulate_gpu_loss(&self) {
        if let Phase::Ready(session) = &self.trainer.borrow().phase {
            session.simulate_device_loss();
        }
    }
}
