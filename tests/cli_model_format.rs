#![cfg(not(target_arch = "wasm32"))]
//! The saved-model format (docs/MODEL_FORMAT.md): round trips, the version-1 conversion, and
//! a specific error for each kind of damage, from the library and through the CLI.

mod support;

use deepbelief::data::Standardisation;
use deepbelief::format::{from_json, to_json, LayerTraining, SavedDbn};
use deepbelief::model::{Dbn, Rbm, VisibleUnits};
use deepbelief::train::{StackConfig, StopReason};
use support::cli::*;

/// A small two-layer model with distinct, exactly representable values.
fn two_layer_model() -> SavedDbn {
    let layer = |n_visible: usize, n_hidden: usize, offset: f32| Rbm {
        visible_units: VisibleUnits::Bernoulli,
        n_visible,
        n_hidden,
        weights: (0..n_visible * n_hidden).map(|k| offset + k as f32 / 64.0 - 0.5).collect(),
        visible_bias: (0..n_visible).map(|i| -(i as f32) / 8.0).collect(),
        hidden_bias: (0..n_hidden).map(|j| j as f32 / 4.0).collect(),
    };
    let mut config = StackConfig { layers: vec![3, 2], ..StackConfig::default() };
    config.rbm.n_hidden = 3;
    SavedDbn {
        image_shape: Some((2, 2)),
        visible_means: Some(vec![0.25, 0.5, 0.0, 1.0]),
        standardisation: None,
        preprocessing: None,
        config,
        dbn: Dbn { layers: vec![layer(4, 3, 0.0), layer(3, 2, 1.0)] },
        training: vec![
            LayerTraining { layer: 0, epochs: 5, stop: StopReason::MaxEpochs, init_error: 0.25, final_error: 0.125 },
            LayerTraining { layer: 1, epochs: 7, stop: StopReason::Converged, init_error: 0.5, final_error: 0.0625 },
        ],
        supervised: None,
    }
}

fn load_error(text: &str) -> String {
    from_json("m.json", text).expect_err("must be rejected").to_string()
}

#[test]
fn model_round_trips_exactly() {
    let model = two_layer_model();
    let json = to_json(&model);
    assert!(json.contains("\"format\": \"deepbelief-dbn\"") && json.contains("\"version\": 2"), "{json}");
    assert_eq!(from_json("m.json", &json).unwrap(), model);

    let mut gaussian = two_layer_model();
    gaussian.dbn.layers[0].visible_units = VisibleUnits::Gaussian;
    gaussian.config.rbm.visible_units = VisibleUnits::Gaussian;
    gaussian.standardisation = Some(Standardisation { mean: vec![0.5, 0.25, 0.0, 0.75], sd: vec![0.5, 0.125, 0.0, 1.0] });
    assert_eq!(from_json("m.json", &to_json(&gaussian)).unwrap(), gaussian);
}

#[test]
fn version_1_rbm_files_become_one_layer_dbns() {
    let v1 = r#"{"format":"deepbelief-rbm","version":1,"image_shape":[1,2],
        "rbm":{"visible_units":"bernoulli","n_visible":2,"n_hidden":3,
               "weights":[0.5,-0.5,0.25,1,2,3],"visible_bias":[0.1,0.2],"hidden_bias":[0,0,-1]}}"#;
    let model = from_json("old.json", v1).unwrap();
    assert_eq!(model.dbn.sizes(), vec![2, 3]);
    assert_eq!(model.dbn.layers[0].weights, vec![0.5, -0.5, 0.25, 1.0, 2.0, 3.0]);
    assert_eq!(model.config.layers, vec![3]);
    assert_eq!(model.image_shape, Some((1, 2)));
    assert_eq!(model.visible_means, None, "version 1 did not record them");
    assert!(model.training.is_empty());
    // Saved again, it is a version-2 file.
    assert_eq!(from_json("new.json", &to_json(&model)).unwrap(), model);
}

#[test]
fn each_kind_of_damage_gets_its_own_message() {
    let json = to_json(&two_layer_model());

    let message = load_error(&json[..json.len() / 2]);
    assert!(message.starts_with("m.json: ") && message.contains("truncated") && message.contains("line "), "{message}");

    let message = load_error(&json.replacen("\"version\": 2,", "\"version\": 2,,", 1));
    assert!(message.contains("not valid JSON at line 3, column"), "{message}");

    let message = load_error(&json.replacen("\"version\": 2", "\"version\": 7", 1));
    assert!(message.contains("`version` is 7") && message.contains("reads \"deepbelief-dbn\" version 2"), "{message}");

    let message = load_error(&json.replacen("deepbelief-dbn", "keras-model", 1));
    assert!(message.contains("`format` is \"keras-model\""), "{message}");

    let message = load_error("[1, 2, 3]");
    assert!(message.contains("expected a JSON object"), "{message}");

    let short_weights = json.replacen("\"weights\":[-0.5,", "\"weights\":[", 1);
    let message = load_error(&short_weights);
    assert!(message.contains("`layers[0].weights` has 11 values, expected 12 (n_visible 4 × n_hidden 3)"), "{message}");

    let short_bias = json.replacen("\"hidden_bias\":[0.0,", "\"hidden_bias\":[", 1);
    assert!(load_error(&short_bias).contains("`layers[0].hidden_bias` has 2 values, expected 3"));

    let mut unchained = two_layer_model();
    unchained.dbn.layers[1] = Rbm { n_visible: 2, weights: vec![0.0; 4], visible_bias: vec![0.0; 2], ..unchained.dbn.layers[1].clone() };
    let message = load_error(&to_json(&unchained));
    assert!(message.contains("do not chain") && message.contains("`layers[1].n_visible` is 2") && message.contains("`layers[0].n_hidden` is 3"), "{message}");

    let non_finite = json.replacen("\"visible_bias\":[-0.0,", "\"visible_bias\":[null,", 1);
    assert!(load_error(&non_finite).contains("`layers[0].visible_bias[0]` is null, expected a finite number"));
    let overflow = json.replacen("\"visible_bias\":[-0.0,", "\"visible_bias\":[1e300,", 1);
    let message = load_error(&overflow);
    assert!(message.contains("`layers[0].visible_bias[0]` is the number 1e+300, expected a finite number"), "{message}");

    let message = load_error(&json.replacen("\"image_shape\": [2,2]", "\"image_shape\": [2,3]", 1));
    assert!(message.contains("`image_shape` is 2×3") && message.contains("4 visible units"), "{message}");

    let message = load_error(&json.replacen("\"visible_means\": [0.25,", "\"visible_means\": [", 1));
    assert!(message.contains("`visible_means` has 3 values, expected 4"), "{message}");

    let message = load_error(&json.replacen("\"n_hidden\":2,", "\"n_hidden\":2,\"dropout\":0.5,", 1));
    assert!(message.contains("unknown field `layers[1].dropout`"), "{message}");

    let message = load_error(&json.replacen("\"training\": [", "\"extra\": 1,\n  \"training\": [", 1));
    assert!(message.contains("unknown field `extra`"), "{message}");

    let message = load_error(&json.replacen("\"stop\":\"converged\"", "\"stop\":\"bored\"", 1));
    assert!(message.contains("`training[1].stop`") && message.contains("converged, no_improvement, max_epochs, cancelled"), "{message}");

    let mut wrong_config = two_layer_model();
    wrong_config.config.layers = vec![3, 5];
    assert!(load_error(&to_json(&wrong_config)).contains("`config.layers` is [3, 5], but the layers have [3, 2]"));

    let mut negative_rate = two_layer_model();
    negative_rate.config.rbm.learning_rate = -1.0;
    assert!(load_error(&to_json(&negative_rate)).contains("`config.rbm.learning_rate`"));

    let mut gaussian_above = two_layer_model();
    gaussian_above.dbn.layers[1].visible_units = VisibleUnits::Gaussian;
    assert!(load_error(&to_json(&gaussian_above)).contains("only the first layer may have Gaussian visible units"));
}

#[test]
fn commands_report_damaged_model_files_by_name() {
    let dir = temp_dir("format-cli");
    let json = to_json(&two_layer_model());
    let cases = [
        ("truncated.json", json[..json.len() - 40].to_string(), "truncated"),
        ("wrong-version.json", json.replacen("\"version\": 2", "\"version\": 3", 1), "`version` is 3"),
        ("corrupted.json", json.replacen("\"layers\": [", "\"layers\": [}", 1), "not valid JSON at line"),
    ];
    for (name, text, expected) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        for command in [
            vec!["export", "--model", path.to_str().unwrap(), "--npz", dir.join("x.npz").to_str().unwrap()],
            vec!["sample", "--model", path.to_str().unwrap(), "--out", dir.join("x.png").to_str().unwrap()],
        ] {
            let stderr = run_fails(&command);
            assert!(stderr.contains(path.to_str().unwrap()) && stderr.contains(expected), "{command:?}: {stderr}");
        }
    }
    // A folder means its model.json.
    let stderr = run_fails(&["export", "--model", dir.to_str().unwrap(), "--npz", dir.join("x.npz").to_str().unwrap()]);
    assert!(stderr.contains(dir.join("model.json").to_str().unwrap()) && stderr.contains("cannot read"), "{stderr}");
}

#[test]
fn the_checked_writer_refuses_non_finite_numbers_naming_the_field() {
    let model = two_layer_model();
    assert_eq!(deepbelief::format::to_json_checked(&model).unwrap(), to_json(&model));

    let mut nan_weight = two_layer_model();
    nan_weight.dbn.layers[1].weights[4] = f32::NAN;
    let message = deepbelief::format::to_json_checked(&nan_weight).unwrap_err();
    assert!(message.contains("field `layers[1].weights[4]` is NaN, expected a finite number"), "{message}");

    let mut infinite_mean = two_layer_model();
    infinite_mean.visible_means = Some(vec![0.25, f32::INFINITY, 0.0, 1.0]);
    let message = deepbelief::format::to_json_checked(&infinite_mean).unwrap_err();
    assert!(message.contains("field `visible_means[1]` is inf"), "{message}");
    // Written unchecked, the file would not load: that is what the check prevents.
    assert!(load_error(&to_json(&infinite_mean)).contains("visible_means[1]"));
}

#[test]
fn an_image_shape_whose_product_wraps_is_refused() {
    let mut model = two_layer_model();
    model.image_shape = Some((1, 4));
    // (2^63 + 2) × 2 = 4 modulo 2^64, the number of visible units.
    let json = to_json(&model).replace("\"image_shape\": [1,4]", "\"image_shape\": [9223372036854775810,2]");
    assert!(json.contains("9223372036854775810"), "{json}");
    let message = load_error(&json);
    assert!(message.contains("field `image_shape` is 9223372036854775810×2, which does not match the 4 visible units"), "{message}");
}

#[test]
fn layer_sizes_whose_product_wraps_are_refused() {
    // n_visible (2^63 + 1) × n_hidden 2 = 2 modulo 2^64, the length of the weights given.
    let json = r#"{"format":"deepbelief-rbm","version":1,"image_shape":null,
        "rbm":{"n_visible":9223372036854775809,"n_hidden":2,
               "weights":[0.5,-0.5],"visible_bias":[0.1],"hidden_bias":[0,0]}}"#;
    let message = load_error(json);
    assert!(message.contains("`rbm` has 9223372036854775809 visible and 2 hidden units, too many to hold"), "{message}");
}

#[test]
fn supervised_layer_sizes_whose_product_wraps_are_refused() {
    let value = serde_json::json!({"n_in": 3, "n_out": 6148914691236517206u64, "weights": [0.0, 0.0], "bias": []});
    // 3 × 6148914691236517206 = 2 modulo 2^64.
    let section = serde_json::json!({
        "output": "soft_max", "layers": [value], "config": deepbelief::supervised::SupervisedConfig::default(),
        "fine_tuned": false, "target_source": "labels", "target_names": ["0", "1"], "train_criterion": 0.5, "train_error": null,
    });
    let message = deepbelief::format::supervised::from_value(section, Some(3)).unwrap_err();
    assert!(message.contains("field `supervised.layers[0]` has 3 inputs and 6148914691236517206 outputs, too many to hold"), "{message}");
}

#[test]
fn sampling_a_model_with_a_wrapping_image_shape_fails_with_the_field_not_a_panic() {
    let dir = temp_dir("wrapping-shape");
    let mut model = two_layer_model();
    model.image_shape = Some((1, 4));
    let json = to_json(&model).replace("\"image_shape\": [1,4]", "\"image_shape\": [9223372036854775810,2]");
    let path = dir.join("model.json");
    std::fs::write(&path, json).unwrap();
    let out = dir.join("samples.png");
    let stderr = run_fails(&["sample", "--model", path.to_str().unwrap(), "--count", "4", "--steps", "2", "--out", out.to_str().unwrap()]);
    assert!(stderr.contains("model.json: field `image_shape` is 9223372036854775810×2"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn strings_from_a_damaged_model_file_are_cut_and_escaped_in_errors() {
    let json = to_json(&two_layer_model());
    let escape = "\\u001b[2J";
    let huge = "z".repeat(100_000);
    let cases = [
        json.replacen("\"deepbelief-dbn\"", &format!("\"{escape}{huge}\""), 1),
        json.replacen("\"version\": 2", &format!("\"version\": 2, \"{escape}{huge}\": 1"), 1),
        json.replacen("\"layers\": [\n    {", &format!("\"layers\": [\n    {{\"{escape}{huge}\": 1, "), 1),
        json.replacen("\"config\": {\"layers\":[3,2]", &format!("\"config\": {{\"layers\":\"{escape}{huge}\""), 1),
    ];
    for damaged in cases {
        assert_ne!(damaged, json);
        let message = load_error(&damaged);
        assert!(!message.chars().any(|c| c.is_control()), "{message:?}");
        assert!(message.contains("\\u{1b}[2J"), "{message:?}");
        assert!(message.len() < 600, "{} bytes: {}", message.len(), &message[..600]);
    }
}
