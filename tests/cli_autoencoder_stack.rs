#![cfg(not(target_arch = "wasm32"))]
//! `deepbelief autoencoder` with stacks, a SoftMax and fine-tuning (issue 17), end to end on
//! MNIST slices, and `test`, `eval` and `export` on the model it writes:
//! - a 784-64-32 stack pretrained on 2,000 digits, a SoftMax on its top features, then
//!   fine-tuning: classifies the first 1,000 test digits with more than 85% right (a stub, an
//!   untrained stack or a SoftMax on uniform features stays far below), fine-tuning lowers the
//!   criterion and the test error, and `test` on the written model reproduces the run's own
//!   figure on the same file; `eval` reports each layer's J with its terms and ρ̂; `export`
//!   holds every array of model.json;
//! - self-taught learning: autoencoders on digits 5–9, the SoftMax on digits 0–4; `test` on
//!   all ten classes scores the 0–4 ones and counts the rest;
//! - bad inputs get errors naming the flag, file or field, and a run that fails after
//!   pretraining leaves the folder as it was.

mod support;

use deepbelief::data::idx::{encode_idx_images, encode_idx_labels, read_idx_images, read_idx_labels, IdxImages};
use serde_json::Value;
use std::path::{Path, PathBuf};
use support::cli::*;

/// The first `n` digits of a shared MNIST file pair as raw IDX files in a new folder.
fn slice(images: &str, labels: &str, n: usize, label: &str) -> (PathBuf, PathBuf) {
    let all = read_idx_images(&shared_mnist(images)).expect("the shared MNIST images");
    let pixels = all.pixels[..n * all.rows * all.cols].to_vec();
    let dir = temp_dir(label);
    let (image_path, label_path) = (dir.join("images-idx3-ubyte"), dir.join("labels-idx1-ubyte"));
    std::fs::write(&image_path, encode_idx_images(&IdxImages { count: n, rows: all.rows, cols: all.cols, pixels })).unwrap();
    let labels = read_idx_labels(&shared_mnist(labels)).expect("the shared MNIST labels");
    std::fs::write(&label_path, encode_idx_labels(&labels[..n])).unwrap();
    (image_path, label_path)
}

fn s(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).expect("JSON")
}

fn numbers(value: &Value) -> Vec<f32> {
    value.as_array().expect("an array").iter().map(|v| v.as_f64().unwrap() as f32).collect()
}

#[test]
fn a_fine_tuned_stack_classifies_digits_and_test_eval_export_read_it() {
    let (train_images, train_labels) = slice("train-10k-images-idx3-ubyte.gz", "train-10k-labels-idx1-ubyte.gz", 2000, "ae-stack-train");
    let (test_images, test_labels) = slice("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 1000, "ae-stack-test");
    let out = temp_dir("ae-stack");
    let summary = last_json(&run_ok(&[
        "autoencoder", "--mnist", s(&train_images), "--labels", s(&train_labels), "--layers", "64,32", "--iterations", "60",
        "--supervised-iterations", "50", "--fine-tune", "--fine-tune-iterations", "60",
        "--test-images", s(&test_images), "--test-labels", s(&test_labels), "--out", s(&out), "--json",
    ]));
    assert_eq!(folder_listing(&out), ["AUTOENCODER.LOG", "filters.png", "model.json"]);
    assert_eq!(summary["sizes"], serde_json::json!([784, 64, 32]));
    let stages = summary["supervised"].as_array().expect("supervised stages");
    assert_eq!(stages.len(), 2);
    let (before, after) = (stages[0]["test_error"].as_f64().unwrap(), stages[1]["test_error"].as_f64().unwrap());
    assert!(after < before, "fine-tuning lowered the test error: {before} → {after}");
    assert!(stages[1]["criterion"].as_f64().unwrap() < stages[0]["criterion"].as_f64().unwrap());
    for layer in summary["layers"].as_array().unwrap() {
        assert!(layer["J"].as_f64().unwrap() < layer["initial_J"].as_f64().unwrap(), "pretraining lowered J: {layer}");
    }

    let model = read_json(&out.join("model.json"));
    assert_eq!(model["format"], "deepbelief-autoencoder/2");
    assert_eq!(model["pretraining_data"]["cases"], 2000);
    assert_eq!(model["supervised"]["fine_tuned"], true);
    assert_eq!(model["supervised"]["target_names"].as_array().unwrap().len(), 10);
    let log = std::fs::read_to_string(out.join("AUTOENCODER.LOG")).unwrap();
    for heading in ["LAYER 1  784 -> 64 -> 784", "LAYER 2  64 -> 32 -> 64", "SUPERVISED STAGE", "FINE-TUNING", "TEST DATA AFTER FINE-TUNING", "TIMERS"] {
        assert!(log.contains(heading), "AUTOENCODER.LOG lacks {heading:?}");
    }

    let test = last_json(&run_ok(&["test", "--model", s(&out), "--test-images", s(&test_images), "--test-labels", s(&test_labels), "--json"]));
    let error = test["test_error"].as_f64().unwrap();
    assert_eq!((test["cases"].as_u64(), test["cases_of_other_classes"].as_u64()), (Some(1000), Some(0)));
    assert!(error < 0.15, "{:.1}% right on 1,000 test digits, expected more than 85%", 100.0 * (1.0 - error));
    assert!((error - after).abs() < 1e-12, "test on the written model gives the run's own figure: {error} vs {after}");
    assert_eq!(test["fine_tuned"], true);

    let eval = last_json(&run_ok(&["eval", "--model", s(&out), "--images", s(&test_images), "--backend", "cpu", "--json"]));
    let layers = eval["layers"].as_array().expect("per-layer figures");
    assert_eq!((layers.len(), eval["cases"].as_u64()), (2, Some(1000)));
    for layer in layers {
        let f = |k: &str| layer[k].as_f64().unwrap_or_else(|| panic!("{k} in {layer}"));
        assert!((f("J") - f("reconstruction") - f("weight_decay") - f("sparsity")).abs() < 1e-9 * f("J"));
        assert!(f("recon_error") > 0.0 && f("recon_error") < 0.25);
        assert!(0.0 < f("rho_min") && f("rho_min") <= f("rho_mean") && f("rho_mean") <= f("rho_max") && f("rho_max") < 1.0);
    }

    let npz_path = out.join("stack.npz");
    let export = last_json(&run_ok(&["export", "--model", s(&out), "--npz", s(&npz_path), "--json"]));
    assert_eq!(export["arrays"].as_array().unwrap().len(), 10);
    let mut npz = npyz::npz::NpzArchive::open(&npz_path).unwrap();
    for (k, (v, h)) in [(784u64, 64u64), (64, 32)].into_iter().enumerate() {
        let layer = &model["layers"][k];
        for (name, shape, key) in [("W1", vec![v, h], "W1"), ("b1", vec![h], "b1"), ("W2", vec![v, h], "W2"), ("b2", vec![v], "b2")] {
            let array = npz.by_name(&format!("{name}_{}", k + 1)).unwrap().unwrap_or_else(|| panic!("{name}_{} missing", k + 1));
            assert_eq!(array.shape(), shape.as_slice());
            assert_eq!(array.into_vec::<f32>().unwrap(), numbers(&layer[key]), "{name}_{}", k + 1);
        }
    }
    let softmax = npz.by_name("supervised_W_1").unwrap().expect("the SoftMax weights");
    assert_eq!(softmax.shape(), &[32, 10]);
    assert_eq!(softmax.into_vec::<f32>().unwrap(), numbers(&model["supervised"]["layers"][0]["weights"]));
}

#[test]
fn self_taught_features_from_other_digits_classify_the_labelled_ones() {
    let (train_images, train_labels) = slice("train-10k-images-idx3-ubyte.gz", "train-10k-labels-idx1-ubyte.gz", 1000, "ae-self-train");
    let (test_images, test_labels) = slice("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 1000, "ae-self-test");
    let out = temp_dir("ae-self");
    run_ok(&[
        "autoencoder", "--unlabelled", s(&train_images), "--unlabelled-labels", s(&train_labels), "--unlabelled-classes", "5-9",
        "--mnist", s(&train_images), "--labels", s(&train_labels), "--classes", "0-4", "--hidden", "48", "--iterations", "40", "--out", s(&out),
    ]);
    let labels = read_idx_labels(&train_labels).unwrap();
    let high = labels.iter().filter(|&&l| l >= 5).count();
    let model = read_json(&out.join("model.json"));
    assert_eq!(model["pretraining_data"]["classes"], serde_json::json!([5, 6, 7, 8, 9]));
    assert_eq!(model["pretraining_data"]["cases"].as_u64(), Some(high as u64), "the autoencoder saw only digits 5–9");
    assert_eq!(model["supervised_data"]["classes"], serde_json::json!([0, 1, 2, 3, 4]));
    assert_eq!(model["supervised_data"]["cases"].as_u64(), Some((1000 - high) as u64));
    assert_eq!(model["supervised"]["target_names"], serde_json::json!(["0", "1", "2", "3", "4"]));
    assert_eq!(model["supervised"]["fine_tuned"], false);

    let test = last_json(&run_ok(&["test", "--model", s(&out), "--test-images", s(&test_images), "--test-labels", s(&test_labels), "--json"]));
    let test_low = read_idx_labels(&test_labels).unwrap().iter().filter(|&&l| l < 5).count();
    assert_eq!((test["cases"].as_u64(), test["cases_of_other_classes"].as_u64()), (Some(test_low as u64), Some((1000 - test_low) as u64)));
    let error = test["test_error"].as_f64().unwrap();
    assert!(error < 0.15, "{:.1}% right on the test digits 0–4, expected more than 85%", 100.0 * (1.0 - error));
}

#[test]
fn bad_inputs_name_their_flag_and_a_failed_run_leaves_the_folder_as_it_was() {
    let (images, labels) = slice("train-10k-images-idx3-ubyte.gz", "train-10k-labels-idx1-ubyte.gz", 300, "ae-bad-stack");
    let (images, labels) = (s(&images).to_string(), s(&labels).to_string());
    let out = temp_dir("ae-bad-stack-out");
    let base = ["autoencoder", "--mnist", &images, "--out", s(&out)];
    let fails = |extra: &[&str]| run_fails(&[&base[..], extra].concat());
    let stderr = fails(&["--layers", "20,0"]);
    assert!(stderr.contains("--layers is 0"), "{stderr}");
    let stderr = fails(&["--labels", &labels, "--classes", "7-3"]);
    assert!(stderr.contains("--classes") && stderr.contains("runs backwards"), "{stderr}");
    let stderr = fails(&["--classes", "0-4"]);
    assert!(stderr.contains("--labels"), "--classes needs --labels: {stderr}");
    let stderr = fails(&["--labels", &labels, "--unlabelled", &images, "--unlabelled-classes", "5-9"]);
    assert!(stderr.contains("--unlabelled-labels"), "{stderr}");
    let few = temp_dir("ae-few-labels").join("labels");
    std::fs::write(&few, encode_idx_labels(&[1, 2, 3])).unwrap();
    let stderr = fails(&["--labels", s(&few)]);
    assert!(stderr.contains("--labels") && stderr.contains("3 labels, but --mnist") && stderr.contains("300 images"), "{stderr}");
    let stderr = fails(&["--labels", &labels, "--classes", "42"]);
    assert!(stderr.contains("--classes [42]: none of the 300 images"), "{stderr}");

    // A model to keep, then a run that fails after pretraining (one class is no SoftMax).
    run_ok(&[&base[..], &["--hidden", "8", "--iterations", "3"]].concat());
    let before: Vec<Vec<u8>> = ["model.json", "filters.png", "AUTOENCODER.LOG"].iter().map(|f| std::fs::read(out.join(f)).unwrap()).collect();
    let stderr = fails(&["--hidden", "9", "--iterations", "3", "--labels", &labels, "--classes", "3"]);
    assert!(stderr.contains("a SoftMax needs at least 2"), "{stderr}");
    let after: Vec<Vec<u8>> = ["model.json", "filters.png", "AUTOENCODER.LOG"].iter().map(|f| std::fs::read(out.join(f)).unwrap()).collect();
    assert!(before == after, "the failed run changed the folder");
    assert_eq!(folder_listing(&out), ["AUTOENCODER.LOG", "filters.png", "model.json"], "no temporary or lock file is left");

    // The model without supervised layers, and a damaged one, through test, eval and export.
    let model = s(&out);
    let stderr = run_fails(&["test", "--model", model, "--test-images", &images, "--test-labels", &labels]);
    assert!(stderr.contains("model.json: the autoencoder model has no supervised layers"), "{stderr}");
    let stderr = run_fails(&["eval", "--model", model, "--images", &images, "--binarize"]);
    assert!(stderr.contains("--binarize"), "{stderr}");
    let t10k = shared_mnist("t10k-labels-idx1-ubyte.gz");
    let stderr = run_fails(&["eval", "--model", model, "--images", s(&t10k)]);
    assert!(stderr.contains("--images") && stderr.contains("t10k-labels"), "a label file is no image file: {stderr}");
    let damaged = temp_dir("ae-damaged");
    let text = std::fs::read_to_string(out.join("model.json")).unwrap().replacen("\"b1\":[", "\"b1\":[null,", 1);
    std::fs::write(damaged.join("model.json"), text).unwrap();
    let npz = damaged.join("never-written.npz");
    for command in [
        vec!["test", "--model", s(&damaged), "--test-images", &images, "--test-labels", &labels],
        vec!["eval", "--model", s(&damaged), "--images", &images],
        vec!["export", "--model", s(&damaged), "--npz", s(&npz)],
    ] {
        let stderr = run_fails(&command);
        assert!(stderr.contains("model.json: field `layers[0].b1[0]` is null, expected a finite number"), "{command:?}: {stderr}");
    }
    assert!(!npz.exists());
}
