#![cfg(not(target_arch = "wasm32"))]
//! The stacked autoencoders' model file (`format::autoencoder`, "deepbelief-autoencoder/2"):
//! a model written and read back is the same model and the same text; a version-1 file (the
//! first `deepbelief autoencoder`'s) reads as a one-layer stack; every kind of damage gets an
//! error naming the file and the field; the writer refuses what it could not read back and
//! writes through a temporary file; `read_model_file` tells the two families apart.

mod support;

use deepbelief::autoencoder::stack::{ufldl_supervised, ActivationSummary, AutoencoderStack, CostTerms, LayerRecord, LayerSettings, StackLayer};
use deepbelief::autoencoder::Autoencoder;
use deepbelief::format::autoencoder::{format_name, from_json, read_model_file, to_json, to_json_checked, write_model, DataRecord, InputPreprocessing, ModelFile, SavedAutoencoder, FORMAT};
use deepbelief::supervised::{Network, OutputKind, SavedSupervised, TargetSource};
use serde_json::{json, Value};
use support::check::values;
use support::cli::{folder_listing, temp_dir};

/// Measured figures that serde_json reads back an ulp off when written with 17 digits.
const AWKWARD: f64 = 0.11020113987708041;

fn autoencoder(n_visible: usize, n_hidden: usize, seed: u32) -> Autoencoder {
    let n = n_visible * n_hidden;
    Autoencoder { n_visible, n_hidden, w1: values(n, seed, -1.0, 1.0), b1: values(n_hidden, seed + 1, -0.5, 0.5), w2: values(n, seed + 2, -1.0, 1.0), b2: values(n_visible, seed + 3, -0.5, 0.5) }
}

fn record(cases: usize) -> LayerRecord {
    let terms = CostTerms { total: 1.0 + AWKWARD, reconstruction: 1.0, weight_decay: AWKWARD / 2.0, sparsity: AWKWARD / 2.0 };
    LayerRecord {
        cases,
        initial: terms,
        last: CostTerms { total: AWKWARD, ..terms },
        iterations: 3,
        evaluations: 4,
        stop: "max_iterations".into(),
        history: vec![0.9, 0.5 + AWKWARD, AWKWARD],
        mean_activation: ActivationSummary { mean: 0.1, min: 0.02, max: 0.3 },
        seconds: AWKWARD * 7.0,
        backend: "cpu".into(),
    }
}

/// A 6-4-3 stack with a SoftMax over 2 classes, as a self-taught run would save it.
fn model() -> SavedAutoencoder {
    let layers = vec![
        StackLayer { autoencoder: autoencoder(6, 4, 1), settings: LayerSettings::ufldl_stacked(4, 1), record: Some(record(20)) },
        StackLayer { autoencoder: autoencoder(4, 3, 9), settings: LayerSettings::ufldl_stacked(3, 2), record: None },
    ];
    let mut network = Network::zeros(&[3, 2], OutputKind::SoftMax);
    network.set_params(&values(network.n_params(), 17, -1.0, 1.0));
    let supervised = SavedSupervised {
        network,
        config: ufldl_supervised(3, 2, 100, 400, true, 1),
        fine_tuned: true,
        target_source: TargetSource::Labels,
        target_names: vec!["3".into(), "7".into()],
        train_criterion: AWKWARD,
        train_error: Some(0.25),
    };
    SavedAutoencoder {
        preprocessing: InputPreprocessing::UnitPixels { image_shape: Some((2, 3)) },
        pretraining_data: DataRecord { files: vec!["unlabelled-images.idx".into()], cases: 20, classes: Some(vec![5, 6]) },
        stack: AutoencoderStack { layers },
        supervised_data: Some(DataRecord { files: vec!["images.idx".into(), "labels.idx".into()], cases: 12, classes: Some(vec![3, 7]) }),
        supervised: Some(supervised),
    }
}

#[test]
fn a_model_reads_back_as_written() {
    let model = model();
    let text = to_json_checked(&model).expect("a finite, consistent model writes");
    assert_eq!(format_name(&text).as_deref(), Some(FORMAT));
    let back = from_json("m.json", &text).expect("it reads back");
    assert_eq!(to_json(&back), text, "read and written again, the same text");
    for (a, b) in back.stack.layers.iter().zip(&model.stack.layers) {
        assert_eq!(a.autoencoder, b.autoencoder, "parameters bit for bit");
        assert_eq!(a.settings, b.settings);
    }
    assert_eq!(back.stack.layers[1].record, None);
    let r = back.stack.layers[0].record.as_ref().unwrap();
    assert_eq!((r.cases, r.iterations, r.evaluations, r.stop.as_str(), r.backend.as_str()), (20, 3, 4, "max_iterations", "cpu"));
    assert!((r.last.total - AWKWARD).abs() < 1e-14 && r.history.len() == 3);
    assert_eq!((&back.preprocessing, &back.pretraining_data, &back.supervised_data), (&model.preprocessing, &model.pretraining_data, &model.supervised_data));
    let (s, t) = (back.supervised.unwrap(), model.supervised.unwrap());
    assert_eq!((s.network, s.config, s.target_names, s.fine_tuned), (t.network, t.config, t.target_names, t.fine_tuned));

    let patches = SavedAutoencoder { preprocessing: InputPreprocessing::Patches { side: 2, clip: 0.3 + AWKWARD, zca: true, range: Some([0.1, 0.9]) }, supervised_data: None, supervised: None, ..self::model() };
    let patch_model = SavedAutoencoder { stack: AutoencoderStack { layers: vec![StackLayer { autoencoder: autoencoder(4, 3, 2), settings: LayerSettings::ufldl_stacked(3, 1), record: None }] }, ..patches };
    let text = to_json_checked(&patch_model).unwrap();
    assert_eq!(to_json(&from_json("p.json", &text).unwrap()), text);
}

/// The first CLI's autoencoder.json, field for field.
fn version_1(inputs: Value) -> Value {
    let a = autoencoder(4, 3, 5);
    json!({
        "format": "deepbelief-autoencoder/1", "n_visible": 4, "n_hidden": 3,
        "settings": { "rho": 0.01, "lambda": 0.0001, "beta": 3.0, "method": "lbfgs", "iterations": 20, "seed": 1, "backend": "cpu" },
        "inputs": inputs,
        "initial": { "J": 2.0, "reconstruction": 1.5, "weight_decay": 0.1, "sparsity": 0.4 },
        "final": { "J": 1.0, "reconstruction": 0.7, "weight_decay": 0.1, "sparsity": 0.2 },
        "iterations": 20, "evaluations": 22, "stop": "max_iterations", "history": [1.5, 1.0], "seconds": 0.5,
        "mean_activation": { "mean": 0.02, "min": 0.01, "max": 0.05 },
        "parameters": { "W1": a.w1, "b1": a.b1, "W2": a.w2, "b2": a.b2 },
    })
}

#[test]
fn a_version_1_file_reads_as_a_one_layer_stack() {
    let text = version_1(json!({ "mnist": "train-images.gz", "cases": 200 })).to_string();
    let model = from_json("autoencoder.json", &text).expect("version 1 reads");
    assert_eq!(model.stack.sizes(), [4, 3]);
    assert_eq!(model.stack.layers[0].autoencoder, autoencoder(4, 3, 5));
    assert_eq!(model.preprocessing, InputPreprocessing::UnitPixels { image_shape: Some((2, 2)) });
    assert_eq!(model.pretraining_data, DataRecord { files: vec!["train-images.gz".into()], cases: 200, classes: None });
    let record = model.stack.layers[0].record.as_ref().unwrap();
    assert_eq!((record.cases, record.evaluations, record.last.total, record.initial.sparsity), (200, 22, 1.0, 0.4));
    assert_eq!(model.stack.layers[0].settings.cost.sparsity_target, 0.01);
    assert!(model.supervised.is_none());

    let patches = version_1(json!({ "images": ["a.png", "b.png"], "patch": 2, "patches": 1000, "clip": 0.5, "zca": false, "range": [0.1, 0.9] }));
    let model = from_json("autoencoder.json", &patches.to_string()).expect("version 1 with patches reads");
    assert_eq!(model.preprocessing, InputPreprocessing::Patches { side: 2, clip: 0.5, zca: false, range: Some([0.1, 0.9]) });
    assert_eq!(model.pretraining_data.cases, 1000);
    // Written again it is version 2.
    assert!(to_json_checked(&model).unwrap().contains(FORMAT));
}

/// `from_json` of `model()` changed by `edit` fails, naming the file and `expected`.
fn fails_with(edit: impl FnOnce(&mut Value), expected: &str) {
    let mut value: Value = serde_json::from_str(&to_json(&model())).unwrap();
    edit(&mut value);
    let error = from_json("damaged.json", &value.to_string()).expect_err(expected).to_string();
    assert!(error.starts_with("damaged.json: ") && error.contains(expected), "expected …{expected}…, got: {error}");
}

#[test]
fn damaged_files_get_errors_naming_the_file_and_field() {
    let text = to_json(&model());
    let truncated = from_json("cut.json", &text[..text.len() / 2]).unwrap_err().to_string();
    assert!(truncated.starts_with("cut.json: the file ends early") && truncated.contains("truncated"), "{truncated}");
    let malformed = from_json("bad.json", &text.replacen("\"layers\":", "\"layers\"", 1)).unwrap_err().to_string();
    assert!(malformed.starts_with("bad.json: not valid JSON at line 5"), "{malformed}");

    fails_with(|v| v["format"] = json!("deepbelief-autoencoder/9"), "field `format` is \"deepbelief-autoencoder/9\"");
    fails_with(|v| drop(v.as_object_mut().unwrap().remove("pretraining_data")), "field `pretraining_data` is missing");
    fails_with(|v| v["surprise"] = json!(1), "unknown field `surprise`");
    fails_with(|v| v["layers"][0]["extra"] = json!(1), "unknown field `layers[0].extra`");
    fails_with(|v| v["layers"][1]["W1"].as_array_mut().unwrap().pop().map(drop).unwrap(), "field `layers[1].W1` has 11 values, expected 12 (n_visible 4 × n_hidden 3)");
    fails_with(|v| v["layers"][0]["b2"].as_array_mut().unwrap().push(json!(0.5)), "field `layers[0].b2` has 7 values, expected 6");
    fails_with(|v| v["layers"][0]["b1"][2] = Value::Null, "field `layers[0].b1[2]` is null, expected a finite number");
    fails_with(|v| v["layers"][0]["W2"][0] = json!(1e39), "field `layers[0].W2[0]` is the number 1e+39, expected a finite number");
    fails_with(|v| v["layers"][0]["W1"][5] = json!("0.5"), "field `layers[0].W1[5]` is the string \"0.5\"");
    fails_with(|v| v["layers"][0]["training"]["history"][1] = Value::Null, "field `layers[0].training.history[1]` is null");
    fails_with(|v| v["layers"][0]["training"]["final"]["J"] = json!("NaN"), "field `layers[0].training.final.J`");
    fails_with(|v| v["layers"][0]["training"]["backend"] = json!("tpu"), "field `layers[0].training.backend`");
    fails_with(|v| v["layers"][0]["settings"]["rho"] = json!(1.5), "field `layers[0].settings.rho` is 1.5, expected strictly between 0 and 1");
    fails_with(|v| v["layers"][1]["settings"]["method"] = json!("newton"), "field `layers[1].settings.method` is \"newton\"");
    fails_with(
        |v| {
            let other = autoencoder(5, 3, 4);
            let layer = &mut v["layers"][1];
            (layer["n_visible"], layer["W1"], layer["W2"], layer["b2"]) = (json!(5), json!(other.w1), json!(other.w2), json!(other.b2));
        },
        "the layers do not chain: `layers[1].n_visible` is 5, but `layers[0].n_hidden` is 4",
    );
    fails_with(
        |v| {
            v["layers"][1]["n_visible"] = json!(1u64 << 40);
            v["layers"][1]["n_hidden"] = json!(1u64 << 40);
        },
        "too many to hold (n_visible × n_hidden overflows)",
    );
    fails_with(|v| v["layers"] = json!([]), "field `layers` is empty");
    fails_with(|v| v["inputs"]["image_shape"] = json!([3, 3]), "3×3 images, which does not match the 6 inputs");
    fails_with(|v| v["inputs"]["preprocessing"] = json!("whitened"), "field `inputs.preprocessing` is \"whitened\"");
    fails_with(|v| v["pretraining_data"]["classes"] = json!([6, 5]), "field `pretraining_data.classes`");
    fails_with(|v| v["pretraining_data"]["files"][0] = json!("a\u{1b}[31m"), "field `pretraining_data.files[0]`");
    fails_with(|v| v["supervised_data"] = Value::Null, "field `supervised_data` is null, but the model has supervised layers");
    fails_with(|v| v["supervised"]["layers"][0]["n_in"] = json!(4), "field `supervised.layers[0].n_in` is 4, expected 3");
    fails_with(|v| v["supervised"]["layers"][0]["bias"][0] = Value::Null, "field `supervised.layers[0].bias[0]` is not a finite number");
}

#[test]
fn the_writer_refuses_what_it_could_not_read_and_writes_atomically() {
    let mut broken = model();
    broken.stack.layers[1].autoencoder.w2[3] = f32::NAN;
    let error = to_json_checked(&broken).unwrap_err();
    assert!(error.contains("field `layers[1].W2[3]` is null, expected a finite number"), "{error}");
    let dir = temp_dir("ae-format-write");
    let path = dir.join("model.json");
    std::fs::write(&path, "the old file").unwrap();
    let error = write_model(&path, &broken).unwrap_err();
    assert!(error.contains("model.json") && error.contains("nothing was written"), "{error}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "the old file");

    write_model(&path, &model()).expect("writes");
    assert_eq!(folder_listing(&dir), ["model.json"], "no temporary file is left");
    match read_model_file(&dir).expect("the folder's model.json reads") {
        ModelFile::Autoencoder(read) => assert_eq!(to_json(&read), to_json(&model())),
        ModelFile::Dbn(_) => panic!("an autoencoder file read as a DBN"),
    }
    std::fs::write(&path, r#"{"format": "deepbelief-dbn", "version": 7}"#).unwrap();
    let error = read_model_file(&path).unwrap_err().to_string();
    assert!(error.contains("model.json") && error.contains("field `version` is 7"), "a DBN file goes to the DBN reader: {error}");
}
