//! Targets for the supervised layers and the figures of a model on a data set, shared by the
//! CLI (`train`, `test`) and the page, so all of them compute them the same way.
//!
//! IDX labels become one-hot targets; database targets are taken as they are. The true
//! class of a case is the target with the largest value, the predicted class the output
//! with the largest value.

use super::complete_network;
use super::confusion::ConfusionMatrix;
use super::criterion::{data_error, Cases};
use super::{SavedSupervised, TargetSource};
use crate::backend::Backend;
use crate::data::Dataset;
use crate::model::Dbn;
use serde_json::{json, Value};

/// Targets of every case, `n_cases × names.len()`.
pub struct TargetSet {
    pub values: Vec<f32>,
    pub names: Vec<String>,
    pub source: TargetSource,
}

/// `n_classes` values per label: 1 at the label, 0 elsewhere.
pub fn one_hot(labels: &[u32], n_classes: usize) -> Vec<f32> {
    labels.iter().flat_map(|&label| (0..n_classes).map(move |k| if k == label as usize { 1.0 } else { 0.0 })).collect()
}

/// The classes `0..=max label` of labelled data (at least two), as names.
pub fn label_class_names(labels: &[u32]) -> Vec<String> {
    let n_classes = (labels.iter().copied().max().unwrap_or(0) as usize + 1).max(2);
    (0..n_classes).map(|k| k.to_string()).collect()
}

/// The training data's targets: database target columns, or labels as one-hot classes
/// `0..=max label`; `None` when the data have neither.
pub fn training_targets(dataset: &Dataset) -> Option<TargetSet> {
    if let Some(targets) = &dataset.targets {
        return Some(TargetSet { values: targets.values.clone(), names: targets.names.clone(), source: TargetSource::Database });
    }
    let labels = dataset.labels.as_ref()?;
    let names = label_class_names(labels);
    Some(TargetSet { values: one_hot(labels, names.len()), names, source: TargetSource::Labels })
}

/// The targets of `dataset` as the saved model's outputs expect them; `what` names the data
/// in errors (e.g. "--test-images FILE").
pub fn targets_for(dataset: &Dataset, saved: &SavedSupervised, what: &str) -> Result<Vec<f32>, String> {
    let n_outputs = saved.target_names.len();
    match saved.target_source {
        TargetSource::Labels => {
            let labels = dataset.labels.as_ref().ok_or_else(|| format!("{what}: no labels (give the IDX label file, e.g. --test-labels)"))?;
            if let Some((case, &label)) = labels.iter().enumerate().find(|(_, &l)| l as usize >= n_outputs) {
                return Err(format!("{what}: case {case} has label {label}, but the model knows only the classes 0 to {}", n_outputs - 1));
            }
            Ok(one_hot(labels, n_outputs))
        }
        TargetSource::Database => {
            let targets = dataset.targets.as_ref().ok_or_else(|| format!("{what}: no target columns ({})", saved.target_names.join(", ")))?;
            if targets.names != saved.target_names {
                return Err(format!("{what}: the targets are {}, but the model predicts {}", targets.names.join(", "), saved.target_names.join(", ")));
            }
            Ok(targets.values.clone())
        }
    }
}

/// Every case's inputs, `n_cases × n_inputs`.
pub fn dataset_inputs(dataset: &Dataset) -> Vec<f32> {
    let mut inputs = vec![0.0; dataset.n_cases * dataset.n_inputs];
    let cases: Vec<usize> = (0..dataset.n_cases).collect();
    dataset.gather_into(&cases, &mut inputs);
    inputs
}

/// A model's figures on one data set.
pub struct Evaluation {
    pub n_cases: usize,
    /// The criterion without the penalty: mean squared error or log-likelihood per case.
    pub criterion: f64,
    /// `None` for a single output (regression), where classes mean nothing.
    pub confusion: Option<ConfusionMatrix>,
    /// `n_cases × n_outputs`.
    pub outputs: Vec<f32>,
}

impl Evaluation {
    pub fn to_json(&self) -> Value {
        json!({
            "cases": self.n_cases,
            "criterion": self.criterion,
            "error": self.confusion.as_ref().map(ConfusionMatrix::error_fraction),
            "confusion": self.confusion.as_ref().map(ConfusionMatrix::to_json),
        })
    }
}

/// The outputs, criterion and confusion matrix of a DBN and the supervised layers on top of
/// it on `inputs` (as the first RBM sees them) against `targets`.
pub fn evaluate_layers(backend: &dyn Backend, dbn: &Dbn, saved: &SavedSupervised, inputs: &[f32], targets: &[f32]) -> Evaluation {
    let net = complete_network(dbn, &saved.network);
    let outputs = net.predict(backend, inputs);
    let n_outputs = net.n_outputs();
    let cases = Cases { inputs, targets, n_inputs: net.n_inputs(), n_outputs };
    let criterion = data_error(&net, backend, cases);
    let confusion = (n_outputs > 1).then(|| ConfusionMatrix::from_outputs(&outputs, targets, n_outputs, saved.target_names.clone()));
    Evaluation { n_cases: cases.n_cases(), criterion, confusion, outputs }
}
