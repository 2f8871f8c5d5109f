//! The supervised stage on the device from the page (issue 21): Toman's adaptive rule with
//! robust training, resident on the GPU through `Engine::train_mlp_async`, when the run trains
//! on WebGPU. The browser cannot block on the device, so the stage is a promise
//! (`train_supervised_device`) that posts each epoch's criterion as each submission's epochs
//! come back, and leaves its result for `finish_supervised_device`, which keeps it as
//! `train_supervised` keeps the CPU's.
//!
//! It starts from the CPU pipeline's weights (`supervised_start`, same seed), so the two runs
//! agree epoch by epoch within the device's f32 rounding (tests/web_mlp_device.rs). A device
//! that refuses the net or is lost hands the rest of the run to the CPU inside the engine
//! (from the last weights read back), and the page says so.

use super::supervised::{Progress, SupervisedInputs};
use super::{js_error, to_js, Playground};
use crate::backend::cpu::CpuBackend;
use crate::model::Dbn;
use crate::supervised::criterion::{criterion, Cases};
use crate::supervised::evaluation::TargetSet;
use crate::supervised::full_batch::FullBatchSettings;
use crate::supervised::optimise::{OptimiseReport, StopKind};
use crate::supervised::pipeline::supervised_start;
use crate::supervised::{Network, Optimizer, OutputKind, Stage, SupervisedConfig, SupervisedOutcome};
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// Epochs per submission at most: the page's curve moves, and Cancel is heard, this often.
const EPOCHS_PER_SUBMISSION: usize = 16;

/// The device stage's result, waiting for `finish_supervised_device`.
pub(super) struct DeviceStage {
    dbn: Dbn,
    net: Network,
    outcome: SupervisedOutcome,
    config: SupervisedConfig,
    targets: TargetSet,
    inputs: Vec<f32>,
    stopped: bool,
}

/// Where the supervised stage trains, for the worker: `device` true when it trains through
/// `train_supervised_device`; `notice` why not, when the run trains on WebGPU but this stage
/// cannot (the worker posts it).
#[derive(Serialize)]
struct StagePlace {
    device: bool,
    notice: Option<String>,
}

/// What the device stage did: `ran_on` ("gpu"), and the events to post (a notice and the new
/// backend when it went on on the CPU).
#[derive(Serialize)]
struct DeviceDone {
    ran_on: &'static str,
    post: Vec<PageEvent>,
}

#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum PageEvent {
    Notice { message: String },
    Backend { backend: &'static str, threads: usize, reason: String },
}

/// Why the device cannot train `config`'s supervised stage on top of `n_rbm_layers` RBM
/// layers, if it cannot: the resident rule is Toman's (adaptive steps, logistic outputs, no
/// penalty), and fine-tuning the RBM layers stays on the CPU.
fn device_refusal(config: &SupervisedConfig, n_rbm_layers: usize) -> Option<String> {
    if config.optimizer != Optimizer::AdaptiveStep {
        Some(format!("only the adaptive step rule runs on the GPU, not {:?}", config.optimizer))
    } else if config.output != OutputKind::Logistic {
        Some("the adaptive rule runs on the GPU with logistic outputs only".into())
    } else if config.weight_penalty != 0.0 {
        Some("the adaptive rule runs on the GPU without a weight penalty only".into())
    } else if config.fine_tune && n_rbm_layers > 0 {
        Some("fine-tuning the RBM layers runs on the CPU".into())
    } else {
        None
    }
}

#[wasm_bindgen]
impl Playground {
    /// Where the pending supervised stage trains: `{device, notice}` (see `StagePlace`).
    pub fn supervised_place(&self) -> Result<JsValue, JsError> {
        let state = self.gpu.borrow();
        let on_webgpu = state.run.place_layers && state.device().is_some();
        let place = match (on_webgpu, self.config.as_ref().and_then(|c| c.supervised.as_ref())) {
            (true, Some(config)) => {
                let n_rbm_layers = self.stack.borrow().as_ref().map_or(0, |stack| stack.greedy().dbn.layers.len());
                match device_refusal(config, n_rbm_layers) {
                    None => StagePlace { device: true, notice: None },
                    Some(why) => StagePlace { device: false, notice: Some(format!("The supervised stage trains on the CPU: {why}")) },
                }
            }
            _ => StagePlace { device: false, notice: None },
        };
        to_js(&place)
    }

    /// Trains the supervised stage on the device (see `supervised_place`). Resolves to
    /// `{ran_on, post}` once it ends; `finish_supervised_device()` then keeps the model and
    /// returns `train_supervised`'s summary. `on_progress({stage, iteration, criterion})` sees
    /// every epoch (a submission's epochs together); returning `false` stops the stage after
    /// that epoch, keeping its weights.
    pub fn train_supervised_device(&mut self, on_progress: js_sys::Function) -> Result<js_sys::Promise, JsError> {
        let SupervisedInputs { config, dbn, inputs, targets, .. } = self.supervised_inputs()?;
        if let Some(why) = device_refusal(&config, dbn.layers.len()) {
            return Err(JsError::new(&format!("the supervised stage cannot train on the GPU: {why}")));
        }
        let engine = self.gpu.borrow().device().ok_or_else(|| JsError::new("the supervised stage cannot train on the GPU: this run has no WebGPU device"))?;
        let n_outputs = targets.names.len();
        // The features and the start exactly as `train_supervised`'s (no share is held out:
        // that is SGD's alone).
        let features = self.on_cpu(|| dbn.propagate_up(&CpuBackend, &inputs, dbn.layers.len()));
        let n_cases = targets.values.len().checked_div(n_outputs).unwrap_or(0);
        let n_features = features.len().checked_div(n_cases).unwrap_or(0);
        if n_features == 0 || features.len() != n_cases * n_features || targets.values.len() != n_cases * n_outputs {
            return Err(JsError::new(&format!("{} input values and {} target values do not make whole cases of {n_features} inputs and {n_outputs} targets", features.len(), targets.values.len())));
        }
        let cases = Cases { inputs: &features, targets: &targets.values, n_inputs: n_features, n_outputs };
        let (start, anneal) = self.on_cpu(|| supervised_start(&CpuBackend, cases, &config));
        let initial_criterion = criterion(&start, &CpuBackend, cases, 0.0);
        if !initial_criterion.is_finite() {
            return Err(JsError::new("the supervised stage: its starting criterion is not a finite number"));
        }
        let state = self.gpu.clone();
        let threads = self.cpu_thread_count();
        let settings = FullBatchSettings { optimizer: config.optimizer, rules: config.step_rules, epochs: config.max_iterations };
        Ok(wasm_bindgen_futures::future_to_promise(async move {
            let cases = Cases { inputs: &features, targets: &targets.values, n_inputs: n_features, n_outputs };
            let mut net = start;
            let mut stopped = false;
            let mut on_epoch = |record: &crate::supervised::full_batch::EpochRecord, _: Option<&Network>| {
                let progress = Progress { stage: Stage::Supervised, iteration: record.epoch, criterion: record.criterion };
                // A throwing listener must not end the training; the page shows its own error.
                let go_on = to_js(&progress).ok().and_then(|p| on_progress.call1(&JsValue::NULL, &p).ok()).is_none_or(|answer| answer.as_bool() != Some(false));
                stopped |= !go_on;
                let mut state = state.borrow_mut();
                state.run.epochs_done += 1;
                if state.run.epochs_done == state.run.lose_after {
                    if let Some(engine) = &state.engine {
                        engine.simulate_loss();
                    }
                }
                go_on
            };
            let began = crate::clock::now_seconds();
            let trained = engine.train_mlp_async(&mut net, cases, settings, EPOCHS_PER_SUBMISSION, &mut on_epoch).await.map_err(js_error)?;
            let outcome = trained.outcome;
            let final_criterion = criterion(&net, &CpuBackend, cases, 0.0);
            if !net.is_finite() || !final_criterion.is_finite() {
                return Err(JsError::new(&format!("the supervised stage: the weights are no longer finite numbers after epoch {}", outcome.epochs)).into());
            }
            let stop = if stopped { StopKind::Cancelled } else { outcome.stop };
            let report = OptimiseReport {
                iterations: outcome.epochs,
                stop,
                initial_criterion,
                final_criterion,
                seconds: crate::clock::now_seconds() - began,
                best_epoch: None,
                held_out_score: None,
                stage_seconds: Some(outcome.times),
                rollbacks: Some(outcome.rollbacks),
            };
            let mut post = Vec::new();
            let mut state = state.borrow_mut();
            if let Some((epoch, why)) = trained.fell_back {
                // The failed device goes; a later run makes a new one.
                state.engine = None;
                state.chains = None;
                state.run.place_layers = false;
                let message = if epoch == 0 {
                    format!("WebGPU could not train the supervised stage ({why}); it trains on the CPU")
                } else {
                    format!("WebGPU failed after epoch {epoch} of the supervised stage ({why}); continuing on the CPU")
                };
                post.push(PageEvent::Notice { message });
                post.push(PageEvent::Backend { backend: "cpu", threads, reason: "WebGPU failed".into() });
            }
            let outcome = SupervisedOutcome { anneal, supervised: report, fine_tune: None };
            state.run.supervised = Some(DeviceStage { dbn, net, outcome, config, targets, inputs, stopped });
            Ok(to_js(&DeviceDone { ran_on: trained.ran_on, post })?)
        }))
    }

    /// Keeps what `train_supervised_device` trained and returns `train_supervised`'s summary.
    pub fn finish_supervised_device(&mut self) -> Result<JsValue, JsError> {
        let stage = self.gpu.borrow_mut().run.supervised.take().ok_or_else(|| JsError::new("no supervised stage has finished on the GPU"))?;
        let DeviceStage { dbn, net, outcome, config, targets, inputs, stopped } = stage;
        self.keep_supervised(dbn, net, outcome, config, targets, &inputs, stopped)
    }
}
