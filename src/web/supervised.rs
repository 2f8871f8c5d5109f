//! The supervised stage from the page: the supervised layers on top of the trained DBN,
//! optional fine-tuning of the whole model, and the classification figures on the held-out
//! cases (or on the training cases when none are held out).

use super::training::on_cpu_threads;
use super::{js_error, to_js, Playground};
use crate::backend::cpu::CpuBackend;
use crate::model::Dbn;
use crate::supervised::confusion::predictions;
use crate::supervised::evaluation::{dataset_inputs, evaluate_layers, targets_for, training_targets, Evaluation, TargetSet};
use crate::supervised::{train_supervised, Network, SavedSupervised, Stage, SupervisedConfig, SupervisedOutcome};
use serde::Serialize;
use wasm_bindgen::prelude::*;

#[derive(Serialize)]
pub(super) struct Progress {
    pub stage: Stage,
    pub iteration: usize,
    pub criterion: f64,
}

/// What the supervised stage trains from: its settings, the model below it (no RBM layers for
/// a plain MLP), the training cases' inputs and targets.
pub(super) struct SupervisedInputs {
    pub config: SupervisedConfig,
    pub dbn: Dbn,
    pub inputs: Vec<f32>,
    pub targets: TargetSet,
    pub image_shape: Option<(usize, usize)>,
}

#[derive(Serialize)]
struct SupervisedSummary {
    /// The cancel flag ended a stage early (the weights reached so far are kept).
    stopped: bool,
    target_names: Vec<String>,
    train_criterion: f64,
    train_error: Option<f64>,
    outcome: SupervisedOutcome,
    /// The figures of `classification()`; `None` for a single (regression) output.
    classification: Option<Classification>,
}

#[derive(Serialize)]
struct Classification {
    n_cases: usize,
    error: f64,
    criterion: f64,
    class_names: Vec<String>,
    /// `counts[true][predicted]`.
    counts: Vec<Vec<usize>>,
    set: &'static str,
}

/// The classified cases (indices into the loaded data) with their true and predicted classes.
struct Classified {
    cases: Vec<usize>,
    true_classes: Vec<usize>,
    predicted: Vec<usize>,
    evaluation: Evaluation,
    set: &'static str,
}

#[wasm_bindgen]
impl Playground {
    /// Whether the run's supervised stage is still to train (the RBM stack is done).
    pub fn supervised_pending(&self) -> bool {
        let configured = self.config.as_ref().is_some_and(|c| c.supervised.is_some());
        configured && self.supervised.is_none() && self.stack.borrow().as_ref().is_some_and(|stack| stack.finished())
    }

    /// Trains the supervised layers (and fine-tunes, if configured) on the run's training
    /// cases. Blocking; `on_progress({stage, iteration, criterion})` is called each iteration,
    /// and a stage stops when `cancel[0] != 0`. On error nothing changes.
    pub fn train_supervised(&mut self, on_progress: &js_sys::Function, cancel: Option<js_sys::Int32Array>) -> Result<JsValue, JsError> {
        let SupervisedInputs { config, mut dbn, inputs, targets, image_shape } = self.supervised_inputs()?;
        let mut stopped = false;
        let mut report = |stage: Stage, iteration: usize, criterion: f64| {
            if let Ok(progress) = to_js(&Progress { stage, iteration, criterion }) {
                // A throwing listener must not end the training; the page shows its own error.
                let _ = on_progress.call1(&JsValue::NULL, &progress);
            }
            let cancelled = cancel.as_ref().is_some_and(|flag| js_sys::Atomics::load(flag, 0).is_ok_and(|v| v != 0));
            stopped |= cancelled;
            !cancelled
        };
        let n_outputs = targets.names.len();
        let (network, outcome) =
            on_cpu_threads(self.cpu_threads, || train_supervised(&CpuBackend, &mut dbn, &inputs, &targets.values, n_outputs, &config, image_shape, &mut report)).map_err(js_error)?;
        self.keep_supervised(dbn, network, outcome, config, targets, &inputs, stopped)
    }

    /// The supervised model's figures on the held-out cases (on the training cases when none
    /// are held out): `{ n_cases, error, criterion, class_names, counts, set }`.
    pub fn classification(&self) -> Result<JsValue, JsError> {
        to_js(&self.classify()?.summary())
    }

    /// Up to `max` cases (indices into the loaded data) of class `true_class` classified as
    /// `predicted`, in data order.
    pub fn confusion_cases(&self, true_class: usize, predicted: usize, max: usize) -> Result<js_sys::Uint32Array, JsError> {
        let classified = self.classify()?;
        let n_classes = classified.summary().class_names.len();
        if true_class >= n_classes || predicted >= n_classes {
            return Err(JsError::new(&format!("class: expected a class from 0 to {}, got {true_class} and {predicted}", n_classes - 1)));
        }
        Ok(classified.cases_where(max, |t, p| t == true_class && p == predicted))
    }

    /// Up to `max` misclassified cases (indices into the loaded data), in data order.
    pub fn misclassified(&self, max: usize) -> Result<js_sys::Uint32Array, JsError> {
        Ok(self.classify()?.cases_where(max, |t, p| t != p))
    }
}

impl Playground {
    /// The supervised stage's configuration, the model below it, and its training cases.
    pub(super) fn supervised_inputs(&self) -> Result<SupervisedInputs, JsError> {
        let config = self.config.as_ref().and_then(|c| c.supervised.clone()).ok_or_else(|| JsError::new("this run has no supervised stage: add supervised layers and press Train"))?;
        let dbn = match self.stack.borrow().as_ref() {
            None => return Err(JsError::new("press Train first: no model is being trained")),
            Some(stack) if !stack.finished() => return Err(JsError::new("the RBM layers are still training: the supervised stage comes after them")),
            Some(stack) => stack.greedy().dbn.clone(),
        };
        let data = self.training_data.as_ref().ok_or_else(|| JsError::new("this model was loaded, not trained here: press Train to start a run"))?;
        let targets = training_targets(data).ok_or_else(|| JsError::new(&format!("{}: the data have no labels or target variables to learn", data.name)))?;
        Ok(SupervisedInputs { config, dbn, inputs: dataset_inputs(data), targets, image_shape: data.image_shape })
    }

    /// Keeps a trained supervised stage (on the CPU or the device): its figures on the training
    /// cases, the model (fine-tuned RBM weights included) for the views, and the summary for the
    /// page.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn keep_supervised(&mut self, dbn: Dbn, network: Network, outcome: SupervisedOutcome, config: SupervisedConfig, targets: TargetSet, inputs: &[f32], stopped: bool) -> Result<JsValue, JsError> {
        let mut saved = SavedSupervised {
            network,
            fine_tuned: config.fine_tune,
            config,
            target_source: targets.source,
            target_names: targets.names.clone(),
            train_criterion: 0.0,
            train_error: None,
        };
        let train = on_cpu_threads(self.cpu_threads, || evaluate_layers(&CpuBackend, &dbn, &saved, inputs, &targets.values));
        saved.train_criterion = train.criterion;
        saved.train_error = train.confusion.as_ref().map(|c| c.error_fraction());
        let fine_tuned = saved.fine_tuned;
        self.supervised = Some(saved.clone());
        // The views show the model as it now is: fine-tuning changed the RBM weights.
        self.stack.borrow_mut().as_mut().ok_or_else(|| JsError::new("the run was replaced while its supervised stage trained"))?.greedy_mut().dbn = dbn;
        if fine_tuned {
            self.drop_chains();
        }
        let classification = self.classify().ok().map(|c| c.summary());
        to_js(&SupervisedSummary {
            stopped,
            target_names: saved.target_names,
            train_criterion: saved.train_criterion,
            train_error: saved.train_error,
            outcome,
            classification,
        })
    }

    /// The run is a plain MLP: zero RBM layers, the supervised stage alone.
    pub(super) fn is_plain_mlp(&self) -> bool {
        self.stack.borrow().as_ref().is_some_and(|stack| stack.greedy().config.is_plain_mlp())
    }

    /// Applies the model with its supervised layers to the held-out cases, or to every case
    /// when none are held out.
    fn classify(&self) -> Result<Classified, JsError> {
        let saved = self.supervised.as_ref().ok_or_else(|| JsError::new("no supervised model yet: train or load one"))?;
        let dbn = self.model().or_else(|| self.is_plain_mlp().then(Dbn::default)).ok_or_else(|| JsError::new("no model yet"))?;
        let data = self.data()?;
        let n_inputs = dbn.layers.first().map_or(saved.network.n_inputs(), |first| first.n_visible);
        if n_inputs != data.n_inputs {
            return Err(JsError::new(&format!("{}: {} inputs per case, but the model has {n_inputs} inputs", data.name, data.n_inputs)));
        }
        let n_outputs = saved.target_names.len();
        if n_outputs < 2 {
            return Err(JsError::new("the model has a single output (regression): there are no classes to count"));
        }
        let (cases, set) = if self.split.held_out.is_empty() { ((0..data.n_cases).collect(), "train") } else { (self.split.held_out.clone(), "held_out") };
        let subset = data.subset(&cases);
        let targets = targets_for(&subset, saved, &data.name).map_err(|e| JsError::new(&e))?;
        let evaluation = self.on_cpu(|| evaluate_layers(&CpuBackend, &dbn, saved, &dataset_inputs(&subset), &targets));
        Ok(Classified { true_classes: predictions(&targets, n_outputs), predicted: predictions(&evaluation.outputs, n_outputs), cases, evaluation, set })
    }
}

impl Classified {
    fn summary(&self) -> Classification {
        let confusion = self.evaluation.confusion.as_ref().expect("two or more outputs");
        Classification {
            n_cases: self.evaluation.n_cases,
            error: confusion.error_fraction(),
            criterion: self.evaluation.criterion,
            class_names: confusion.class_names().to_vec(),
            counts: confusion.counts().to_vec(),
            set: self.set,
        }
    }

    fn cases_where(&self, max: usize, keep: impl Fn(usize, usize) -> bool) -> js_sys::Uint32Array {
        let picked: Vec<u32> = (0..self.cases.len()).filter(|&k| keep(self.true_classes[k], self.predicted[k])).take(max).map(|k| self.cases[k] as u32).collect();
        js_sys::Uint32Array::from(&picked[..])
    }
}
