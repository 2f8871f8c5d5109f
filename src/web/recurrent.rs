//! The page's Sequences mode (issue 20): a [`SequenceTrainer`] trains a recurrent net online on
//! a generated task through `engine::recurrent::RecurrentSession` (RTRL with every step on the
//! device where the engine has one, else the CPU; truncated BPTT on the CPU), a chunk of steps
//! per `train()`, and shows it: the hidden state over a held-out stretch of the task
//! (`sequence`), a sensitivity tensor (`sensitivity`), the error per chunk; [`rtrl_time`] times
//! Moore's adder at one n on the CPU or the device for the CPU-vs-GPU chart.
//!
//! Settings (serde, every field optional, unknown ones refused; docs/RECURRENT.md "On the page"):
//! `task` "add" | "not" | "recall" | "predict" (default "add"), `bits` 2, `delay` 2, `preset`
//! "elman" | "jordan" | "feedforward" ("elman"), `hidden` (0: the task's default, Moore's 2n for
//! addition), `trainer` "rtrl" | "bptt", `shortcut` true, `truncation` 16, `rate` 0.05,
//! `init_scale` 2, `seed` 1, `backend` "auto" | "cpu" | "gpu", `adapter_name`.

use super::{to_js, Playground};
use crate::engine::recurrent::RecurrentSession;
use crate::engine::{Engine, EngineChoice};
use crate::recurrent::train::{Tally, TrainerSpec};
use crate::recurrent::{Frame, Network, Preset, RtrlMode, TaskSpec, TaskStream};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;

/// The most hidden units the page builds (a tensor of the Elman net grows as n⁴).
const MAX_HIDDEN: usize = 256;
/// The most bits of the adder and of recall.
const MAX_BITS: usize = 128;
/// The timing chart's shortest timed stretch, and its most steps.
const MIN_TIMED_SECONDS: f64 = 0.03;
const MAX_TIMED_STEPS: usize = 4096;

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SequenceConfig {
    pub task: String,
    pub bits: usize,
    pub delay: usize,
    pub preset: String,
    pub hidden: usize,
    pub trainer: String,
    pub shortcut: bool,
    pub truncation: usize,
    pub rate: f64,
    pub init_scale: f64,
    pub seed: u64,
    pub backend: EngineChoice,
    pub adapter_name: Option<String>,
}

impl Default for SequenceConfig {
    /// The 2-bit adder on Moore's Elman net (4-4-2), RTRL with the shortcut, rate 0.05.
    fn default() -> Self {
        SequenceConfig {
            task: "add".into(),
            bits: 2,
            delay: 2,
            preset: "elman".into(),
            hidden: 0,
            trainer: "rtrl".into(),
            shortcut: true,
            truncation: 16,
            rate: 0.05,
            init_scale: 2.0,
            seed: 1,
            backend: EngineChoice::Auto,
            adapter_name: None,
        }
    }
}

impl SequenceConfig {
    /// The task, the net and the trainer; an error names the field.
    pub fn build(&self) -> Result<(TaskSpec, Network, TrainerSpec), String> {
        if self.bits == 0 || self.bits > MAX_BITS {
            return Err(format!("bits: expected 1 to {MAX_BITS}, got {}", self.bits));
        }
        let task = match self.task.as_str() {
            "add" => TaskSpec::Add { bits: self.bits },
            "not" => TaskSpec::Not,
            "recall" => TaskSpec::Recall { bits: self.bits, delay: self.delay },
            "predict" => TaskSpec::Predict,
            other => return Err(format!("task: expected \"add\", \"not\", \"recall\" or \"predict\", got {other:?}")),
        };
        task.validate().map_err(|e| format!("{}: {}", e.field, e.message))?;
        let preset = match self.preset.as_str() {
            "elman" => Preset::Elman,
            "jordan" => Preset::Jordan,
            "feedforward" => Preset::FeedForward,
            other => return Err(format!("preset: expected \"elman\", \"jordan\" or \"feedforward\", got {other:?}")),
        };
        let hidden = if self.hidden == 0 { task.default_hidden() } else { self.hidden };
        if hidden > MAX_HIDDEN {
            return Err(format!("hidden: expected at most {MAX_HIDDEN} units on the page, got {hidden}"));
        }
        if !(self.rate.is_finite() && self.rate > 0.0) {
            return Err(format!("rate: expected a finite number > 0, got {}", self.rate));
        }
        if !(self.init_scale.is_finite() && self.init_scale > 0.0) {
            return Err(format!("init_scale: expected a finite number > 0, got {}", self.init_scale));
        }
        let trainer = match self.trainer.as_str() {
            "rtrl" => TrainerSpec::Rtrl { mode: if self.shortcut { RtrlMode::Shortcut } else { RtrlMode::Full } },
            "bptt" if self.truncation >= 1 => TrainerSpec::Bptt { truncation: self.truncation },
            "bptt" => return Err("truncation: expected at least 1 step".into()),
            other => return Err(format!("trainer: expected \"rtrl\" or \"bptt\", got {other:?}")),
        };
        let net = Network::initialise(preset.graph(task.inputs(), hidden, task.outputs()), self.seed, self.init_scale as f32).map_err(|e| format!("{}: {}", e.field, e.message))?;
        if let TrainerSpec::Rtrl { mode } = trainer {
            crate::recurrent::Rtrl::new(&net, mode).map_err(|e| format!("hidden: {} ({} units are too many for RTRL here)", e.message, hidden))?;
        }
        Ok((task, net, trainer))
    }
}

fn read_config(config: JsValue) -> Result<SequenceConfig, String> {
    if config.is_undefined() || config.is_null() {
        return Ok(SequenceConfig::default());
    }
    // serde-wasm-bindgen reads a struct's own fields only, so unknown ones are refused here.
    if config.is_object() {
        use wasm_bindgen::JsCast;
        let object: &js_sys::Object = config.unchecked_ref();
        for key in js_sys::Object::keys(object).iter() {
            let name = key.as_string().unwrap_or_default();
            if !FIELDS.contains(&name.as_str()) {
                return Err(format!("{name}: not a setting of the Sequences mode (expected one of {})", FIELDS.join(", ")));
            }
        }
    }
    serde_wasm_bindgen::from_value(config).map_err(|e| format!("config: {e}"))
}

const FIELDS: [&str; 13] = ["task", "bits", "delay", "preset", "hidden", "trainer", "shortcut", "truncation", "rate", "init_scale", "seed", "backend", "adapter_name"];

/// The engine the settings ask for, and why it is not the GPU where it is not.
async fn choose(backend: EngineChoice, adapter_name: Option<&str>, device: Option<Engine>) -> (Engine, String) {
    if backend == EngineChoice::Cpu {
        return (Engine::Cpu, "the CPU was chosen".into());
    }
    let open = || async move {
        match device {
            Some(engine) => Ok(engine),
            None => Engine::gpu().await,
        }
    };
    match Engine::choose_with(backend, adapter_name, open).await {
        Ok(chosen) if chosen.engine.is_gpu() => (chosen.engine, format!("{} chose WebGPU", backend.name())),
        Ok(chosen) => (Engine::Cpu, chosen.notice.unwrap_or_default()),
        Err(e) => (Engine::Cpu, format!("WebGPU could not start ({e})")),
    }
}

#[derive(Serialize)]
struct BlockInfo {
    index: usize,
    name: String,
    rows: usize,
    cols: usize,
    /// Layers whose sensitivity to this block RTRL keeps (none under the shortcut).
    tensor_layers: Vec<usize>,
}

#[derive(Serialize)]
struct StartReport {
    backend: &'static str,
    backend_reason: String,
    task: &'static str,
    layers: Vec<usize>,
    parameters: usize,
    tensor_values: u64,
    trainer: &'static str,
    blocks: Vec<BlockInfo>,
}

#[derive(Serialize)]
struct TrainReport {
    step: u64,
    steps: u64,
    mean_error: f64,
    accuracy: f64,
    bit_accuracy: f64,
    /// Every step's `E` of this chunk.
    errors: Vec<f64>,
    seconds: f64,
    microseconds_per_step: f64,
    backend: &'static str,
    backend_reason: String,
}

#[derive(Serialize)]
struct SequenceReport {
    steps: usize,
    inputs: usize,
    hidden: usize,
    outputs: usize,
    /// `steps × n`, row-major, per kind.
    input_values: Vec<f32>,
    hidden_values: Vec<f32>,
    output_values: Vec<f32>,
    target_values: Vec<f32>,
    /// Steps whose whole output was right (of the scored ones).
    right: Vec<bool>,
    scored: Vec<bool>,
}

#[derive(Serialize)]
struct SensitivityReport {
    block: String,
    layer: usize,
    /// Units of the layer (`∂a^layer_j/∂w`, one tile per unit `j`).
    units: usize,
    /// The block's shape: each tile is `rows × cols` (Moore's Figure 5.3).
    rows: usize,
    cols: usize,
    values: Vec<f32>,
    max_abs: f32,
}

struct Inner {
    config: SequenceConfig,
    task: TaskSpec,
    net: Network,
    trainer: TrainerSpec,
    device: Option<Engine>,
    session: Option<RecurrentSession>,
    stream: TaskStream,
    steps: u64,
    busy: bool,
}

/// A recurrent net trained online on a generated task, a chunk of steps at a time.
#[wasm_bindgen]
pub struct SequenceTrainer {
    inner: Rc<RefCell<Inner>>,
}

fn rejection(message: impl std::fmt::Display) -> JsValue {
    JsError::new(&message.to_string()).into()
}

#[wasm_bindgen]
impl SequenceTrainer {
    /// Builds the task and the net from `config` (errors name the field); the engine opens in
    /// `start()` (the Playground's device where it has one).
    #[wasm_bindgen(constructor)]
    pub fn new(playground: &Playground, config: JsValue) -> Result<SequenceTrainer, JsError> {
        let config = read_config(config).map_err(|e| JsError::new(&e))?;
        let (task, net, trainer) = config.build().map_err(|e| JsError::new(&e))?;
        let stream = TaskStream::new(task, config.seed);
        let device = playground.gpu.borrow().device();
        Ok(SequenceTrainer { inner: Rc::new(RefCell::new(Inner { config, task, net, trainer, device, session: None, stream, steps: 0, busy: false })) })
    }

    /// Opens the engine and the session. Resolves to `{backend, backend_reason, task, layers,
    /// parameters, tensor_values, trainer, blocks: [{index, name, rows, cols, tensor_layers}]}`.
    pub fn start(&self) -> js_sys::Promise {
        let inner = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (config, device, net, trainer, task) = {
                let i = inner.borrow();
                if i.session.is_some() || i.busy {
                    return Err(rejection("start: this trainer has started already (make a new one to start again)"));
                }
                (i.config.clone(), i.device.clone(), i.net.clone(), i.trainer, i.task)
            };
            let (engine, chose) = choose(config.backend, config.adapter_name.as_deref(), device).await;
            let session = RecurrentSession::new(&engine, net.clone(), trainer).map_err(rejection)?;
            let backend = if session.on_device() { "gpu" } else { "cpu" };
            let reason = session.reason.clone().unwrap_or(chose);
            let mode = match trainer {
                TrainerSpec::Rtrl { mode } => Some(mode),
                TrainerSpec::Bptt { .. } => None,
            };
            let shortcut = net.graph.shortcut_layers();
            let blocks = net
                .blocks
                .iter()
                .enumerate()
                .map(|(index, b)| {
                    let kept = matches!(mode, Some(RtrlMode::Full)) || (mode == Some(RtrlMode::Shortcut) && !shortcut[b.to]);
                    let dependents = net.graph.dependents(b.to);
                    BlockInfo { index, name: b.name(), rows: b.rows, cols: b.cols, tensor_layers: if kept { (1..net.graph.layers.len()).filter(|&i| dependents[i]).collect() } else { Vec::new() } }
                })
                .collect();
            let report = StartReport {
                backend,
                backend_reason: reason,
                task: task.name(),
                layers: net.graph.layers.clone(),
                parameters: net.params.len(),
                tensor_values: mode.map_or(0, |m| crate::recurrent::rtrl::tensor_values(&net, m)),
                trainer: trainer.name(),
                blocks,
            };
            inner.borrow_mut().session = Some(session);
            to_js(&report).map_err(JsValue::from)
        })
    }

    /// Trains `steps` more online steps. Resolves to `{step, steps, mean_error, accuracy,
    /// bit_accuracy, errors (each step's E), seconds, microseconds_per_step, backend,
    /// backend_reason}`; a lost device moves the session to the CPU (the reason says so).
    pub fn train(&self, steps: u32) -> js_sys::Promise {
        let inner = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (mut session, mut stream, rate) = {
                let mut i = inner.borrow_mut();
                if i.busy {
                    return Err(rejection("train: a chunk is running already (await it first)"));
                }
                let Some(session) = i.session.take() else { return Err(rejection("train: start() the trainer first")) };
                i.busy = true;
                (session, i.stream.clone(), i.config.rate as f32)
            };
            let started = crate::clock::now_seconds();
            let mut errors = Vec::with_capacity(steps as usize);
            let mut tally = Tally::default();
            let result = session.train(&mut stream, rate, steps as u64, steps.max(1) as u64, |_, t| tally = *t, |e, _, _| errors.push(e)).await;
            let seconds = crate::clock::now_seconds() - started;
            let mut i = inner.borrow_mut();
            i.busy = false;
            i.net = session.net.clone();
            i.stream = stream;
            let backend = if session.on_device() { "gpu" } else { "cpu" };
            let reason = session.reason.clone().unwrap_or_default();
            i.session = Some(session);
            result.map_err(rejection)?;
            i.steps += steps as u64;
            let report = TrainReport {
                step: i.steps,
                steps: steps as u64,
                mean_error: tally.mean_error(),
                accuracy: tally.accuracy(),
                bit_accuracy: tally.bit_accuracy(),
                errors,
                seconds,
                microseconds_per_step: 1e6 * seconds / steps.max(1) as f64,
                backend,
                backend_reason: reason,
            };
            to_js(&report).map_err(JsValue::from)
        })
    }

    /// The net's weights of the last chunk run forward (no learning) over `steps` held-out
    /// steps of the task from a zero state: each step's input, hidden state (layer 1), output
    /// and target, and whether it was right.
    pub fn sequence(&self, steps: usize) -> Result<JsValue, JsError> {
        let i = self.inner.borrow();
        let steps = steps.clamp(1, 1000);
        let net = &i.net;
        let mut stream = TaskStream::at(i.task, i.config.seed ^ 0x5E0_5EED, 0);
        if !matches!(i.task, TaskSpec::Predict) {
            stream.position = 1 << 41;
        }
        let (mut prev, mut frame) = (Frame::zeros(&net.graph), Frame::zeros(&net.graph));
        let layers = &net.graph.layers;
        let mut report = SequenceReport { steps, inputs: layers[0], hidden: layers[1], outputs: *layers.last().expect("layers"), input_values: Vec::new(), hidden_values: Vec::new(), output_values: Vec::new(), target_values: Vec::new(), right: Vec::new(), scored: Vec::new() };
        for _ in 0..steps {
            let example = stream.next_example();
            std::mem::swap(&mut prev, &mut frame);
            net.forward(&prev, &example.input, &mut frame);
            report.input_values.extend_from_slice(&example.input);
            report.hidden_values.extend_from_slice(&frame.act[1]);
            report.output_values.extend_from_slice(frame.output());
            report.target_values.extend_from_slice(&example.target);
            report.right.push(crate::recurrent::tasks::judge(&i.task, frame.output(), &example.target).0);
            report.scored.push(example.scored);
        }
        to_js(&report)
    }

    /// The last step's sensitivity `∂a^layer/∂w` of parameter block `block`: `{block (its
    /// name), layer, units, rows, cols, values (units × rows·cols: unit j's tile is row j),
    /// max_abs}`, or `null` where RTRL keeps none (the shortcut's blocks, BPTT).
    pub fn sensitivity(&self, block: usize, layer: usize) -> js_sys::Promise {
        let inner = self.inner.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (session, b, units) = {
                let mut i = inner.borrow_mut();
                if i.busy {
                    return Err(rejection("sensitivity: a chunk is running (await it first)"));
                }
                let Some(b) = i.net.blocks.get(block).copied() else { return Err(rejection(format!("block: {block} is not a parameter block (0 to {})", i.net.blocks.len() - 1))) };
                let Some(&units) = i.net.graph.layers.get(layer) else { return Err(rejection(format!("layer: {layer} is not a layer"))) };
                let Some(session) = i.session.take() else { return Err(rejection("sensitivity: start() the trainer first")) };
                i.busy = true;
                (session, b, units)
            };
            let values = session.sensitivity(block, layer).await;
            let mut i = inner.borrow_mut();
            i.session = Some(session);
            i.busy = false;
            let Some(values) = values.map_err(rejection)? else { return Ok(JsValue::NULL) };
            let max_abs = values.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            to_js(&SensitivityReport { block: b.name(), layer, units, rows: b.rows, cols: b.cols, values, max_abs }).map_err(JsValue::from)
        })
    }

    /// The trained model as `deepbelief rtrl` writes it (format deepbelief-recurrent/1).
    pub fn model_json(&self) -> Result<String, JsError> {
        use crate::format::recurrent::{to_json, SavedRecurrent, FORMAT};
        let i = self.inner.borrow();
        let saved = SavedRecurrent {
            format: FORMAT.into(),
            graph: i.net.graph.clone(),
            preset: Some(i.config.preset.clone()),
            task: i.task,
            trainer: i.trainer,
            rate: i.config.rate as f32,
            init_scale: i.config.init_scale as f32,
            seed: i.config.seed,
            steps: i.stream.position,
            history: Vec::new(),
            evaluation: None,
            seconds: 0.0,
            params: i.net.params.clone(),
        };
        to_json(&saved).map_err(|e| JsError::new(&e))
    }

    /// Testing hook: destroys the device, as a driver reset or a lost adapter would.
    pub fn simulate_gpu_loss(&self) {
        if let Some(session) = self.inner.borrow().session.as_ref() {
            session.simulate_device_loss();
        }
    }
}

#[derive(Serialize)]
struct TimeReport {
    bits: usize,
    backend: &'static str,
    microseconds_per_step: f64,
    steps: usize,
    mean_error: f64,
    adapter: Option<String>,
}

/// Microseconds per online RTRL step of Moore's `bits`-bit adder (Elman 2n-2n-n, the
/// shortcut) on the CPU (`gpu` false) or the device (`gpu` true; the Playground's, else a new
/// one): `steps` timed steps (more, fourfold at a time, until they take 30 ms) after 2 untimed
/// ones, the device's recorded in one submission, as `deepbelief bench --rtrl`. Resolves to `{bits, backend, microseconds_per_step, steps,
/// mean_error, adapter}`.
#[wasm_bindgen]
pub fn rtrl_time(playground: &Playground, bits: usize, gpu: bool, steps: usize) -> js_sys::Promise {
    let device = playground.gpu.borrow().device();
    wasm_bindgen_futures::future_to_promise(async move {
        use crate::bench::rtrl::{bench_gpu, bench_rtrl, RtrlBenchSettings};
        if bits == 0 || bits > MAX_BITS {
            return Err(rejection(format!("bits: expected 1 to {MAX_BITS}, got {bits}")));
        }
        let engine = if gpu {
            match device {
                Some(engine) => Some(engine),
                None => Some(Engine::gpu().await.map_err(rejection)?),
            }
        } else {
            None
        };
        // A browser's clock may be coarse (100 µs to 1 ms without cross-origin isolation): the
        // steps grow fourfold until the timed stretch lasts MIN_TIMED_SECONDS.
        let mut steps = steps.clamp(1, MAX_TIMED_STEPS);
        let (rows, adapter) = loop {
            let settings = RtrlBenchSettings { steps, warmups: 2, repeats: 1, ..Default::default() };
            let rows = match &engine {
                Some(Engine::Gpu(ctx)) => bench_gpu(ctx, &[bits], &settings, |_| {}).await.map_err(rejection)?,
                Some(Engine::Cpu) => return Err(rejection("no WebGPU device")),
                None => bench_rtrl(&[bits], &settings, |_| {}).map_err(rejection)?,
            };
            let seconds = rows.first().map_or(0.0, |r| r.microseconds_per_step * steps as f64 / 1e6);
            if seconds >= MIN_TIMED_SECONDS || steps >= MAX_TIMED_STEPS {
                break (rows, engine.as_ref().and_then(Engine::adapter).map(|a| a.name));
            }
            steps = (steps * 4).min(MAX_TIMED_STEPS);
        };
        let row = rows.into_iter().next().ok_or_else(|| rejection("no row"))?;
        to_js(&TimeReport { bits, backend: if gpu { "gpu" } else { "cpu" }, microseconds_per_step: row.microseconds_per_step, steps: row.steps, mean_error: row.mean_error, adapter }).map_err(JsValue::from)
    })
}
