#![cfg(not(target_arch = "wasm32"))]
//! `--activations SECTION:LAYER[:NEURON]` (numbered from 1, as in DEEP): checked before
//! training, written for unsupervised models too, and by `test` for test data; every value
//! against the model's own forward pass.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::load_idx_dataset;
use deepbelief::format::read_model;
use deepbelief::supervised::complete_network;
use deepbelief::supervised::evaluation::dataset_inputs;
use support::cli::*;

/// The small data set's inputs as the model's first layer sees them.
fn small_inputs() -> Vec<f32> {
    dataset_inputs(&load_idx_dataset(small_images(), None).unwrap())
}

/// The activation file: its header and its rows of numbers.
fn read_activations(path: &std::path::Path) -> (String, Vec<Vec<f32>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header = lines.next().expect("a header").to_string();
    (header, lines.map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect()).collect())
}

fn assert_rows_match(rows: &[Vec<f32>], expected: &[f32], width: usize, column: Option<usize>) {
    assert_eq!(rows.len(), SMALL_CASES);
    for (case, row) in rows.iter().enumerate() {
        let reference = &expected[case * width..(case + 1) * width];
        let reference: Vec<f32> = match column {
            Some(c) => vec![reference[c]],
            None => reference.to_vec(),
        };
        assert_eq!(row.len(), reference.len(), "case {case}");
        for (got, want) in row.iter().zip(&reference) {
            assert!((got - want).abs() <= 1e-6, "case {case}: {row:?} vs {reference:?}");
        }
    }
}

#[test]
fn a_bad_selection_is_refused_before_training() {
    let images = small_images().to_str().unwrap();
    for (selection, says) in [
        ("unsupervised:3", "the unsupervised section has 2 layer(s), numbered from 1"),
        ("unsupervised:2:21", "has 20 neurons, numbered from 1"),
        ("output:1", "no supervised layers"),
        ("unsupervised:0", "numbered from 1"),
    ] {
        let out = temp_dir("activations-bad");
        let mut args = small_train_args(images, out.to_str().unwrap());
        args.extend(["--activations", selection]);
        let output = run(&args);
        let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(!output.status.success(), "{selection}: refused; stdout:\n{stdout}");
        assert!(stderr.contains("--activations") && stderr.contains(says), "{selection}: {stderr}");
        assert!(stdout.trim().is_empty(), "{selection}: refused before training:\n{stdout}");
        assert!(!out.join("model.json").exists());
    }
    // Supervised sections count the supervised layers the labels will give.
    let out = temp_dir("activations-bad-supervised");
    let labels = small_labels().to_str().unwrap();
    let mut args = small_train_args(images, out.to_str().unwrap());
    args.extend(["--train-labels", labels, "--supervised-layers", "6", "--activations", "supervised:2"]);
    let error = run_fails(&args);
    assert!(error.contains("the supervised section has 1 layer(s)"), "{error}");
    assert!(!out.join("model.json").exists());
}

#[test]
fn unsupervised_models_write_their_rbm_layers_activations_in_train_and_test() {
    let out = temp_dir("activations-unsupervised");
    let images = small_images().to_str().unwrap();
    let mut args = small_train_args(images, out.to_str().unwrap());
    args.extend(["--activations", "unsupervised:2"]);
    run_ok(&args);
    let model = read_model(&out).unwrap();
    let inputs = small_inputs();
    let (header, rows) = read_activations(&out.join("activations.txt"));
    assert_eq!(header, "# unsupervised:2");
    // Layer 2 of the stack: the 20 units on top of the 30.
    assert_rows_match(&rows, &model.dbn.propagate_up(&CpuBackend, &inputs, 2), 20, None);

    // `test` of the unsupervised model, no labels: neuron 3 of layer 1.
    let file = out.join("first-layer.txt");
    run_ok(&["test", "--model", out.to_str().unwrap(), "--test-images", images, "--activations", "unsupervised:1:3", "--activations-file", file.to_str().unwrap()]);
    let (header, rows) = read_activations(&file);
    assert_eq!(header, "# unsupervised:1:3");
    assert_rows_match(&rows, &model.dbn.propagate_up(&CpuBackend, &inputs, 1), 30, Some(2));

    let error = run_fails(&["test", "--model", out.to_str().unwrap(), "--test-images", images, "--activations", "output:1", "--activations-file", file.to_str().unwrap()]);
    assert!(error.contains("no supervised layers"), "{error}");
    let error = run_fails(&["test", "--model", out.to_str().unwrap(), "--test-images", images]);
    assert!(error.contains("no supervised layers"), "{error}");
}

#[test]
fn test_writes_the_supervised_activations_of_the_test_data() {
    let out = temp_dir("activations-supervised");
    let (images, labels) = (small_images().to_str().unwrap(), small_labels().to_str().unwrap());
    let mut args = small_train_args(images, out.to_str().unwrap());
    args.extend(["--train-labels", labels, "--supervised-layers", "6", "--supervised-max-iters", "10", "--activations", "output:1"]);
    run_ok(&args);
    let model = read_model(&out).unwrap();
    let saved = model.supervised.as_ref().expect("supervised layers");
    let layers = complete_network(&model.dbn, &saved.network).forward_all(&CpuBackend, &small_inputs());
    // The complete net: RBM 1, RBM 2, the supervised hidden layer, the outputs.
    assert_eq!(layers.len(), 4);
    let (header, rows) = read_activations(&out.join("activations.txt"));
    assert_eq!(header, "# output:1");
    assert_rows_match(&rows, &layers[3], 10, None);

    let dir = temp_dir("activations-test-files");
    let (file, predictions) = (dir.join("hidden.txt"), dir.join("predictions.txt"));
    let model_dir = out.to_str().unwrap();
    let test = ["test", "--model", model_dir, "--test-images", images, "--test-labels", labels, "--predictions", predictions.to_str().unwrap()];
    let mut args = test.to_vec();
    args.extend(["--activations", "supervised:1", "--activations-file", file.to_str().unwrap(), "--json"]);
    let figures = last_json(&run_ok(&args));
    assert_eq!(figures["activations"].as_str(), file.to_str());
    let (header, rows) = read_activations(&file);
    assert_eq!(header, "# supervised:1");
    assert_rows_match(&rows, &layers[2], 6, None);
    assert_eq!(std::fs::read_to_string(&predictions).unwrap().lines().count(), 1 + SMALL_CASES);

    // A bad selection is refused before the data are read, and writes nothing.
    std::fs::remove_file(&file).unwrap();
    let mut args = test.to_vec();
    args.extend(["--activations", "supervised:1:7", "--activations-file", file.to_str().unwrap()]);
    let error = run_fails(&args);
    assert!(error.contains("has 6 neurons, numbered from 1"), "{error}");
    assert!(!file.exists());
    let error = run_fails(&["test", "--model", model_dir, "--test-images", images, "--activations", "output:1"]);
    assert!(error.contains("--activations-file"), "{error}");
}
