//! Targets for the supervised layers and the figures of a model on a data set: the library's
//! `supervised::evaluation`, shared with the page, so `train`, `test` and the playground
//! compute them the same way.

pub use deepbelief::supervised::evaluation::{dataset_inputs, evaluate, targets_for, training_targets, Evaluation, TargetSet};
