//! The supervised layers as trained: the net on top of the DBN with its settings, where its
//! targets came from (so `test` can build them the same way) and how training ended. The
//! model file holds it as its `supervised` section (`format::supervised`).

use super::{Network, SupervisedConfig};
use serde::{Deserialize, Serialize};

/// Where the training targets came from, so `test` can build them the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetSource {
    /// IDX labels, one-hot over `target_names` (the classes "0", "1", …).
    Labels,
    /// Database columns named `target_names`, taken as they are.
    Database,
}

/// The supervised part of a model.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedSupervised {
    /// The layers on top of the DBN's top RBM: logistic hidden layers, then the outputs.
    pub network: Network,
    pub config: SupervisedConfig,
    /// The RBM layers were tuned by backprop together with these layers.
    pub fine_tuned: bool,
    pub target_source: TargetSource,
    /// One name per output: the class names or the database target variables.
    pub target_names: Vec<String>,
    /// Criterion (without penalty) and misclassification fraction on the training data at
    /// the end of training; no fraction for a single output (regression).
    pub train_criterion: f64,
    pub train_error: Option<f64>,
}
