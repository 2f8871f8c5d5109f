//! Targets for the supervised layers and the figures of a model on a data set: the library's
//! `supervised::evaluation`, shared with the page, so `train`, `test` and the playground
//! compute them the same way.

use deepbelief::backend::Backend;
use deepbelief::format::SavedDbn;
pub use deepbelief::supervised::evaluation::{dataset_inputs, evaluate_layers, targets_for, training_targets, Evaluation, TargetSet};

/// `evaluate_layers` on a whole saved model, which must have supervised layers.
pub fn evaluate(backend: &dyn Backend, model: &SavedDbn, inputs: &[f32], targets: &[f32]) -> Evaluation {
    evaluate_layers(backend, &model.dbn, model.supervised.as_ref().expect("a supervised model"), inputs, targets)
}
