#![cfg(not(target_arch = "wasm32"))]
//! `deepbelief train --rbm-layers 0`: a plain MLP (zero RBM layers, as DEEP allows), trained
//! by the supervised stage alone with Toman's adaptive rule, saved as a model that `test`,
//! `eval` and `export` read; DEEP.LOG says there is no RBM stage.

mod support;

use deepbelief::format::read_model;
use support::cli::*;

/// 784-25-15-10 on the first 500 training digits, 200 epochs of the adaptive rule, logistic
/// outputs, no weight penalty (Toman's setting, docs/TOMAN.md), on the CPU.
fn plain_mlp_args<'a>(images: &'a str, labels: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "train", "--train-images", images, "--train-labels", labels, "--rbm-layers", "0", "--supervised-layers", "25,15",
        "--optimizer", "adaptive", "--output", "logistic", "--supervised-penalty", "0", "--supervised-max-iters", "200",
        "--backend", "cpu", "--out", out, "--json",
    ]
}

#[test]
fn a_plain_mlp_trains_with_the_adaptive_rule_and_round_trips_through_test_eval_and_export() {
    let out = temp_dir("plain-mlp");
    let (images, labels) = (small_images().to_str().unwrap(), small_labels().to_str().unwrap());
    let test_images = shared_mnist("t10k-images-idx3-ubyte.gz");
    let test_labels = shared_mnist("t10k-labels-idx1-ubyte.gz");
    let (test_images, test_labels) = (test_images.to_str().unwrap(), test_labels.to_str().unwrap());
    let mut args = plain_mlp_args(images, labels, out.to_str().unwrap());
    args.extend(["--test-images", test_images, "--test-labels", test_labels]);
    let trained = last_json(&run_ok(&args));
    assert_eq!(trained["layers"], serde_json::json!([]), "{trained}");
    assert!(trained["recon_error"].is_null(), "no RBM, no reconstruction error: {trained}");
    // Measured here: 1.4% of the 500 training digits and 19.6% of the 10,000 test digits
    // misclassified after 200 epochs (RPROP's iRprop+ from the same start: 2.4% / 40.7%).
    let train_error = trained["train_error"].as_f64().expect("train_error");
    let test_error = trained["test_error"].as_f64().expect("test_error");
    assert!(train_error < 0.05, "the adaptive rule fits 500 digits: {train_error}");
    assert!(test_error < 0.25, "and generalises from them: {test_error}");
    let outcome = &trained["supervised"]["outcome"]["supervised"];
    assert!(outcome["final_criterion"].as_f64().unwrap() < outcome["initial_criterion"].as_f64().unwrap() / 10.0, "{outcome}");
    assert_eq!(outcome["iterations"], 200);

    // The file: no RBM layers, the supervised net holds every layer.
    let model = read_model(&out).unwrap();
    assert!(model.dbn.layers.is_empty() && model.training.is_empty());
    let saved = model.supervised.as_ref().expect("supervised layers");
    assert_eq!(saved.network.sizes(), vec![784, 25, 15, 10]);
    assert!(!saved.fine_tuned);
    assert_eq!(saved.train_error, Some(train_error));

    // `test` reads it back and reproduces the figures `train` printed, exactly.
    let tested = last_json(&run_ok(&["test", "--model", out.to_str().unwrap(), "--test-images", test_images, "--test-labels", test_labels, "--json"]));
    assert_eq!(tested["test_error"].as_f64(), Some(test_error), "{tested}");
    let retested = last_json(&run_ok(&["test", "--model", out.to_str().unwrap(), "--test-images", images, "--test-labels", labels, "--json"]));
    assert_eq!(retested["test_error"].as_f64(), Some(train_error), "{retested}");

    // `eval` reads it and says what it can (nothing generative to measure).
    let evaluated = last_json(&run_ok(&["eval", "--model", out.to_str().unwrap(), "--images", images, "--backend", "cpu", "--json"]));
    assert_eq!(evaluated["plain_mlp"], true, "{evaluated}");
    assert_eq!(evaluated["cases"], 500);
    assert_eq!(evaluated["supervised_layers"], serde_json::json!([784, 25, 15, 10]));

    // `export` writes the supervised layers.
    let npz = out.join("plain.npz");
    let exported = last_json(&run_ok(&["export", "--model", out.to_str().unwrap(), "--npz", npz.to_str().unwrap(), "--json"]));
    assert_eq!(exported["supervised_layers"], serde_json::json!([784, 25, 15, 10]), "{exported}");
    let mut archive = npyz::npz::NpzArchive::open(&npz).unwrap();
    let first = archive.by_name("supervised_W1").unwrap().expect("supervised_W1");
    assert_eq!(first.shape(), &[784, 25]);
    let weights: Vec<f32> = first.into_vec().unwrap();
    assert_eq!(weights, saved.network.layers[0].weights);

    let log = std::fs::read_to_string(out.join("DEEP.LOG")).unwrap();
    assert!(log.contains("no RBM stage") && log.contains("RBM stage: none (zero RBM layers)"), "{log}");
    assert!(log.contains("Complete model: 784 -> 25 -> 15 -> 10"), "{log}");
    assert!(!log.contains("LAYER 1 of"), "no RBM layer sections: {log}");
    assert!(out.join("filters.png").is_file(), "the first layer's filters are drawn");
}

#[test]
fn a_plain_mlp_needs_labels_or_targets() {
    let out = temp_dir("plain-mlp-unlabelled");
    let images = small_images().to_str().unwrap();
    let message = run_fails(&["train", "--train-images", images, "--rbm-layers", "0", "--out", out.to_str().unwrap()]);
    assert!(message.contains("--rbm-layers 0") && message.contains("--train-labels"), "{message}");
    assert!(!out.join("model.json").exists());
}

#[test]
fn a_file_with_neither_rbm_nor_supervised_layers_is_refused() {
    let out = temp_dir("plain-mlp-empty");
    let (images, labels) = (small_images().to_str().unwrap(), small_labels().to_str().unwrap());
    let mut args = plain_mlp_args(images, labels, out.to_str().unwrap());
    let epochs = args.iter().position(|a| *a == "200").unwrap();
    args[epochs] = "2";
    run_ok(&args);
    let path = out.join("model.json");
    let mut json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("supervised");
    std::fs::write(&path, json.to_string()).unwrap();
    let message = read_model(&out).unwrap_err().to_string();
    assert!(message.contains("field `layers` is empty and there is no `supervised` section"), "{message}");
}
