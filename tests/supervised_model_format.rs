//! The `supervised` section of the model file: an exact round trip, files without it still
//! load, and damage to it gets an error naming the field.

use deepbelief::format::{from_json, to_json, SavedDbn};
use deepbelief::model::{Dbn, Rbm, VisibleUnits};
use deepbelief::supervised::{Network, OutputKind, SavedSupervised, SupervisedConfig, TargetSource};
use deepbelief::train::StackConfig;

fn model_with_supervised() -> SavedDbn {
    let rbm = Rbm {
        visible_units: VisibleUnits::Bernoulli,
        n_visible: 4,
        n_hidden: 3,
        weights: (0..12).map(|k| k as f32 / 8.0 - 0.5).collect(),
        visible_bias: vec![0.25, -0.5, 0.0, 1.0],
        hidden_bias: vec![0.125, 0.0, -0.25],
    };
    let mut network = Network::zeros(&[3, 2, 2], OutputKind::SoftMax);
    let params: Vec<f32> = (0..network.n_params()).map(|k| k as f32 * 0.0625 - 0.5).collect();
    network.set_params(&params);
    let mut config = StackConfig { layers: vec![3], ..StackConfig::default() };
    config.rbm.n_hidden = 3;
    SavedDbn {
        image_shape: Some((2, 2)),
        visible_means: Some(vec![0.25, 0.5, 0.0, 1.0]),
        standardisation: None,
        preprocessing: None,
        config,
        dbn: Dbn { layers: vec![rbm] },
        training: Vec::new(),
        supervised: Some(SavedSupervised {
            network,
            config: SupervisedConfig { hidden: vec![2], fine_tune: true, weight_penalty: 0.25, ..SupervisedConfig::default() },
            fine_tuned: true,
            target_source: TargetSource::Labels,
            target_names: vec!["0".into(), "1".into()],
            train_criterion: 0.5,
            train_error: Some(0.125),
        }),
    }
}

#[test]
fn supervised_section_round_trips_exactly() {
    let model = model_with_supervised();
    let text = to_json(&model);
    assert!(text.contains("\"supervised\""));
    assert_eq!(from_json("m.json", &text).unwrap(), model);
}

#[test]
fn files_without_the_section_still_load() {
    let mut model = model_with_supervised();
    model.supervised = None;
    let text = to_json(&model);
    assert!(!text.contains("\"supervised\""), "written as before supervised nets existed");
    assert_eq!(from_json("m.json", &text).unwrap().supervised, None);
}

fn damaged(edit: impl Fn(&mut serde_json::Value)) -> String {
    let mut value: serde_json::Value = serde_json::from_str(&to_json(&model_with_supervised())).unwrap();
    edit(&mut value["supervised"]);
    from_json("m.json", &value.to_string()).expect_err("must be rejected").to_string()
}

#[test]
fn damage_to_the_section_names_the_field() {
    let cases: Vec<(String, &str)> = vec![
        (damaged(|s| s["layers"][0]["n_in"] = 5.into()), "supervised.layers[0].n_in` is 5, expected 3"),
        (damaged(|s| s["layers"][1]["weights"][3] = serde_json::Value::Null), "supervised.layers[1].weights[3]"),
        (damaged(|s| s["layers"][1]["bias"] = serde_json::json!([1.0])), "supervised.layers[1]"),
        (damaged(|s| s["output"] = "tanh".into()), "supervised.output"),
        (damaged(|s| s["target_names"] = serde_json::json!(["a"])), "supervised.target_names` has 1 names"),
        (damaged(|s| s["config"]["weight_penalty"] = (-1.0).into()), "supervised.config.weight_penalty"),
        (damaged(|s| s["dropout"] = 0.5.into()), "unknown field `supervised.dropout`"),
        (damaged(|s| {
            s.as_object_mut().unwrap().remove("fine_tuned");
        }), "supervised.fine_tuned` is missing"),
    ];
    for (message, expected) in cases {
        assert!(message.starts_with("m.json: ") && message.contains(expected), "expected {expected:?} in {message:?}");
    }
}

#[test]
fn target_names_that_would_not_print_as_themselves_are_refused() {
    let names = |first: &str| {
        let first = first.to_string();
        damaged(move |s| s["target_names"][0] = first.clone().into())
    };
    let escape = names("A\u{1b}[2J");
    assert!(escape.contains("field `supervised.target_names[0]` is \"A\\u{1b}[2J\", expected a name of 1 to 60 printable characters"), "{escape}");
    assert!(!escape.chars().any(|c| c.is_control()), "{escape:?}");
    assert!(names(&"n".repeat(61)).contains("supervised.target_names[0]"));
    assert!(names("").contains("supervised.target_names[0]"));
}
