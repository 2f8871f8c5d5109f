#![cfg(not(target_arch = "wasm32"))]
//! A model file read and written again is the same text, including the f64 figures that
//! serde_json reads back an ulp off when they are written with 17 digits (the page saves,
//! reloads and re-saves models, and autosave compares them).

use deepbelief::format::{from_json, to_json, LayerTraining, SavedDbn};
use deepbelief::model::{Dbn, Rbm, VisibleUnits};
use deepbelief::supervised::{Layer, Network, OutputKind, SavedSupervised, SupervisedConfig, TargetSource};
use deepbelief::train::{StackConfig, StopReason};

/// Measured by the page in a run where the re-saved file differed in `init_error`.
const AWKWARD: f64 = 0.11020113987708041;

fn model() -> SavedDbn {
    let rbm = Rbm { visible_units: VisibleUnits::Bernoulli, n_visible: 3, n_hidden: 2, weights: vec![0.1, -0.2, 0.3, -0.4, 0.5, -0.6], visible_bias: vec![0.0; 3], hidden_bias: vec![0.0; 2] };
    SavedDbn {
        image_shape: Some((1, 3)),
        visible_means: Some(vec![0.5; 3]),
        standardisation: None,
        preprocessing: None,
        config: StackConfig { layers: vec![2], ..StackConfig::default() },
        dbn: Dbn { layers: vec![rbm] },
        training: vec![LayerTraining { layer: 0, epochs: 2, stop: StopReason::MaxEpochs, init_error: AWKWARD, final_error: 0.10587078591318172 }],
        supervised: Some(SavedSupervised {
            network: Network { layers: vec![Layer { n_in: 2, n_out: 2, weights: vec![1.5, -7.542_344_6, 0.25, 2.0], bias: vec![0.1, -0.1] }], output: OutputKind::SoftMax },
            config: SupervisedConfig::default(),
            fine_tuned: false,
            target_source: TargetSource::Labels,
            target_names: vec!["0".into(), "1".into()],
            train_criterion: 0.008695411769539007,
            train_error: Some(1.0 / 3.0),
        }),
    }
}

#[test]
fn a_model_file_read_and_written_again_is_the_same_text() {
    let text = to_json(&model());
    let again = to_json(&from_json("first", &text).unwrap());
    assert_eq!(again, text);
    assert_eq!(to_json(&from_json("second", &again).unwrap()), text);
}

#[test]
fn measured_figures_keep_fifteen_significant_digits() {
    let read = from_json("model", &to_json(&model())).unwrap();
    assert!((read.training[0].init_error - AWKWARD).abs() <= 1e-14 * AWKWARD);
    let supervised = read.supervised.unwrap();
    assert!((supervised.train_criterion - 0.008695411769539007).abs() <= 1e-14 * 0.0087);
    assert!((supervised.train_error.unwrap() - 1.0 / 3.0).abs() <= 1e-14);
    // f32 parameters are untouched: they are already written as their shortest decimal.
    assert_eq!(supervised.network.layers[0].weights, vec![1.5, -7.542_344_6, 0.25, 2.0]);
}
