//! Training from the page: start a run, step it (one unit of greedy work, or one batch, at a
//! time, so the worker can post progress between steps), cancel, and the CPU thread choice.
//! The run is the engine's (`engine::stack::StackRun`), whose record DEEP.LOG is written from.

use super::{js_error, to_js, Playground};
use crate::backend::cpu::CpuBackend;
use crate::data::Dataset;
use crate::supervised::SupervisedConfig;
use crate::train::memory::{describe_bytes, estimate_training_memory, RunShape};
use crate::engine::stack::StackRun;
use crate::preset::Preset;
use crate::train::StackConfig;
use wasm_bindgen::prelude::*;

/// The most memory a run may need on the page: the threaded build's memory is capped at 1 GiB.
const PAGE_MEMORY_LIMIT: u64 = 1 << 30;

#[wasm_bindgen]
impl Playground {
    /// Starts a fresh model from `config` (a `PageConfig`; missing fields take defaults) and
    /// returns its `Plan`. Every setting is checked before anything is replaced. The run
    /// trains on the loaded cases less the held-out ones, which give the held-out free energy.
    pub fn start_training(&mut self, config: JsValue) -> Result<JsValue, JsError> {
        let config: PageConfig = parse_settings(config)?;
        let data = self.data()?;
        if let Some(supervised) = &config.supervised {
            supervised.validate().map_err(|e| JsError::new(&format!("invalid setting supervised.{e}")))?;
        }
        if config.stack.is_plain_mlp() && config.supervised.is_none() {
            return Err(JsError::new("layers: no RBM layers makes a plain MLP, which is the supervised stage alone: turn the supervised stage on, or give RBM hidden sizes"));
        }
        let training_cases = self.training_case_indices()?;
        check_sizes(&config, data, training_cases.len())?;
        let training_data = data.subset(&training_cases);
        let held_out = (!self.split.held_out.is_empty()).then(|| data.subset(&self.split.held_out));
        let stack = StackRun::new(config.stack.clone(), &training_data, held_out).map_err(js_error)?;
        let plan = Plan::of(&config, data.n_inputs);
        *self.stack.borrow_mut() = Some(stack);
        self.training_data = Some(training_data);
        self.config = Some(config);
        self.supervised = None;
        self.gpu.borrow_mut().run = Default::default();
        self.drop_chains();
        to_js(&plan)
    }

    pub fn training_finished(&self) -> bool {
        self.stack.borrow().as_ref().is_none_or(StackRun::finished)
    }

    /// One unit of work (initialise a layer, one epoch, or close a layer); returns the
    /// `GreedyEvent` describing it. A layer that went on on the CPU after its device failed
    /// trains its next epoch here; one still on the device moves to the CPU first, exactly.
    pub fn step(&mut self) -> Result<JsValue, JsError> {
        let mut stack = self.stack.borrow_mut();
        let stack = stack.as_mut().ok_or_else(no_run)?;
        let data = self.training_data.as_ref().ok_or_else(loaded_not_trained)?;
        let event = on_cpu_threads(self.cpu_threads, || stack.step(&CpuBackend, data)).map_err(js_error)?;
        to_js(&event)
    }

    /// One batch of the layer in training, or `step()`'s unit of work when no epoch is to
    /// train (a layer to start or close). A layer training on the GPU moves to the CPU first,
    /// exactly (its last checkpoint), and continues there.
    pub fn step_batch(&mut self) -> Result<JsValue, JsError> {
        let mut stack = self.stack.borrow_mut();
        let stack = stack.as_mut().ok_or_else(no_run)?;
        let data = self.training_data.as_ref().ok_or_else(loaded_not_trained)?;
        let event = on_cpu_threads(self.cpu_threads, || stack.step_batch(&CpuBackend, data)).map_err(js_error)?;
        to_js(&event)
    }

    /// 1: the CPU engine runs on one thread from now on; 0: on every thread of the pool.
    /// Returns the number of threads the engine now uses. In the threaded build rayon cannot
    /// give a thread back once it has become a one-thread pool, so 0 after 1 is refused there
    /// (the page restarts the worker instead).
    pub fn set_cpu_threads(&mut self, n: usize) -> Result<usize, JsError> {
        match n {
            1 => {
                single_thread_pool()?;
                self.cpu_threads = 1;
                Ok(1)
            }
            0 if SINGLE_THREAD_POOL.with(|pool| pool.get().is_some()) => Err(JsError::new(
                "threads: this worker already runs the CPU engine on one thread, and rayon cannot hand that thread back; restart the worker to use every thread",
            )),
            0 => {
                self.cpu_threads = 0;
                Ok(rayon::current_num_threads())
            }
            _ => Err(JsError::new(&format!("threads: expected 0 (every thread of the pool) or 1, got {n}"))),
        }
    }

    /// Ends the layer in training after its current epoch (Stop).
    pub fn cancel(&mut self) {
        if let Some(stack) = self.stack.borrow_mut().as_mut() {
            stack.cancel();
        }
    }
}

/// The settings of the preset `name` (`default`, `deep` or `hinton`, as the CLI's `--preset`),
/// shaped like `PageConfig`: the page's preset menu (`www/params.js`) is checked against it.
#[wasm_bindgen]
pub fn preset_config(name: &str) -> Result<JsValue, JsError> {
    let preset: Preset = serde_json::from_value(serde_json::Value::String(name.into())).map_err(|_| JsError::new(&format!("preset: expected default, deep or hinton, got {name:?}")))?;
    to_js(&preset.config())
}

/// Reads settings from a JS object. `serde_wasm_bindgen` reads only the fields a struct
/// names, so `deny_unknown_fields` never fires there: a first pass through `serde_json`
/// reports misspelt fields. The values come from the second pass, which keeps NaN a number
/// (JSON has no NaN), so that range checks can name the field.
fn parse_settings<T: serde::de::DeserializeOwned>(value: JsValue) -> Result<T, JsError> {
    let invalid = |e: &dyn std::fmt::Display| JsError::new(&format!("invalid training settings: {e}"));
    let as_json: serde_json::Value = serde_wasm_bindgen::from_value(value.clone()).map_err(|e| invalid(&e))?;
    if let Err(e) = serde_json::from_value::<T>(as_json) {
        if e.to_string().contains("unknown field") {
            return Err(invalid(&e));
        }
    }
    serde_wasm_bindgen::from_value(value).map_err(|e| invalid(&e))
}

pub(super) fn no_run() -> JsError {
    JsError::new("press Train first: no model is being trained")
}

pub(super) fn loaded_not_trained() -> JsError {
    JsError::new("this model was loaded, not trained here: press Train to start a run")
}

/// Refuses runs too large for the page before anything is allocated: the estimate of what
/// the run needs (`train::memory`, shared with the CLI) beside the data already loaded.
fn check_sizes(config: &PageConfig, data: &Dataset, n_train: usize) -> Result<(), JsError> {
    let mut shape = RunShape::of(data, &config.stack, config.supervised.as_ref());
    shape.n_cases = n_train;
    let loaded = (data.n_cases as u64).saturating_mul(data.n_inputs as u64).saturating_mul(shape.bytes_per_input as u64);
    let need = estimate_training_memory(&shape);
    let total = need.bytes.saturating_add(loaded);
    if total > PAGE_MEMORY_LIMIT {
        return Err(JsError::new(&format!(
            "layers: this run needs an estimated {} (at its peak, {}; the loaded data included); the page allows at most {}",
            describe_bytes(total),
            need.stage,
            describe_bytes(PAGE_MEMORY_LIMIT)
        )));
    }
    Ok(())
}

thread_local! {
    /// The one-thread pool of `set_cpu_threads(1)`: this thread itself (`use_current_thread`,
    /// so nothing is spawned and it works in both builds). Rayon keeps the thread in the pool
    /// for good, so the pool lives as long as the thread.
    static SINGLE_THREAD_POOL: std::cell::OnceCell<rayon::ThreadPool> = const { std::cell::OnceCell::new() };
}

/// Builds the one-thread pool unless it exists, or this thread already runs rayon alone
/// (the single-threaded build, where rayon's global pool is this thread).
fn single_thread_pool() -> Result<(), JsError> {
    if rayon::current_num_threads() == 1 {
        return Ok(());
    }
    SINGLE_THREAD_POOL.with(|cell| {
        if cell.get().is_none() {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .use_current_thread()
                .build()
                .map_err(|e| JsError::new(&format!("threads: cannot make a one-thread pool ({e})")))?;
            let _ = cell.set(pool);
        }
        Ok(())
    })
}

/// Runs `f` on one thread (`threads == 1`) or on the whole pool.
pub(super) fn on_cpu_threads<R>(threads: usize, f: impl FnOnce() -> R) -> R {
    if threads != 1 {
        return f();
    }
    SINGLE_THREAD_POOL.with(|cell| match cell.get() {
        // The pool's only thread is this one, so `install` runs `f` right here; the `Send`
        // bounds it asks for guard a move to another thread that cannot happen.
        Some(pool) if pool.current_thread_index() == Some(0) => {
            let job = AssertSend(f);
            pool.install(move || AssertSend(job.into_inner()())).into_inner()
        }
        _ => f(),
    })
}

struct AssertSend<T>(T);

// SAFETY: only used by `on_cpu_threads`, whose pool runs the job on the calling thread.
unsafe impl<T> Send for AssertSend<T> {}

impl<T> AssertSend<T> {
    fn into_inner(self) -> T {
        self.0
    }
}

/// Everything the page trains with: the RBM stack and, optionally, the supervised stage.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct PageConfig {
    pub stack: StackConfig,
    /// The supervised layers (and optional fine-tuning) after the RBM stack; `None`: none.
    pub supervised: Option<SupervisedConfig>,
}

/// The run's steps in order, for the page's progress list.
#[derive(serde::Serialize)]
struct Plan {
    steps: Vec<PlanStep>,
}

#[derive(serde::Serialize)]
struct PlanStep {
    kind: &'static str,
    label: String,
}

impl Plan {
    fn of(config: &PageConfig, n_inputs: usize) -> Plan {
        let mut steps = Vec::new();
        let mut below = n_inputs;
        for (k, &size) in config.stack.layers.iter().enumerate() {
            steps.push(PlanStep { kind: "rbm", label: format!("RBM {} ({below} → {size})", k + 1) });
            below = size;
        }
        if let Some(supervised) = &config.supervised {
            let hidden: Vec<String> = supervised.hidden.iter().map(|h| h.to_string()).collect();
            let through = if hidden.is_empty() { String::new() } else { format!(" → {}", hidden.join(" → ")) };
            steps.push(PlanStep { kind: "supervised", label: format!("Supervised ({below}{through} → outputs)") });
            if supervised.fine_tune {
                steps.push(PlanStep { kind: "fine_tune", label: "Fine-tune the whole model".into() });
            }
        }
        Plan { steps }
    }
}
