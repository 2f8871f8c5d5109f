#![cfg(not(target_arch = "wasm32"))]
//! The DEEP.LOG report with its supervised sections, and Masters' Analyze tables against a
//! direct f64 computation on a tiny DBN.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::Dataset;
use deepbelief::model::{Dbn, Rbm, VisibleUnits};
use deepbelief::report::deep_log::{analyze_tables, setting_entries, DataSummary, DeepLog, LayerLog, SupervisedLog, UnitActivity};
use deepbelief::supervised::confusion::ConfusionMatrix;
use deepbelief::train::{StackConfig, StopReason};
use support::fixtures::random_rbm;

fn tiny_dbn(first_units: VisibleUnits) -> Dbn {
    Dbn { layers: vec![random_rbm(first_units, 4, 3, 1.5, 1.5, 1), random_rbm(VisibleUnits::Bernoulli, 3, 2, 1.5, 1.5, 2)] }
}

fn tiny_data() -> Dataset {
    let values = vec![0.0, 1.0, 0.5, 0.25, /**/ 1.0, 1.0, 0.0, 0.0, /**/ 0.2, 0.9, 0.4, 0.7, /**/ 0.0, 0.0, 1.0, 1.0, /**/ 0.6, 0.3, 0.8, 0.1];
    Dataset::from_floats("tiny", 4, values)
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn up(rbm: &Rbm, v: &[f64]) -> Vec<f64> {
    (0..rbm.n_hidden).map(|j| sigmoid(rbm.hidden_bias[j] as f64 + (0..rbm.n_visible).map(|i| v[i] * rbm.weights[i * rbm.n_hidden + j] as f64).sum::<f64>())).collect()
}

fn down(rbm: &Rbm, h: &[f64]) -> Vec<f64> {
    (0..rbm.n_visible)
        .map(|i| {
            let a = rbm.visible_bias[i] as f64 + (0..rbm.n_hidden).map(|j| h[j] * rbm.weights[i * rbm.n_hidden + j] as f64).sum::<f64>();
            match rbm.visible_units {
                VisibleUnits::Bernoulli => sigmoid(a),
                VisibleUnits::Gaussian => a,
            }
        })
        .collect()
}

/// Column means of the inputs, reconstructions and top activations, written out case by case.
fn direct_analyze(dbn: &Dbn, data: &Dataset) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut sums = (vec![0.0; 4], vec![0.0; 4], vec![0.0; 2]);
    let mut case = vec![0.0f32; 4];
    for k in 0..data.n_cases {
        data.case_into(k, &mut case);
        let x: Vec<f64> = case.iter().map(|&v| v as f64).collect();
        let top = up(&dbn.layers[1], &up(&dbn.layers[0], &x));
        let reconstruction = down(&dbn.layers[0], &down(&dbn.layers[1], &top));
        for (sum, value) in sums.0.iter_mut().zip(&x) {
            *sum += value;
        }
        for (sum, value) in sums.1.iter_mut().zip(&reconstruction) {
            *sum += value;
        }
        for (sum, value) in sums.2.iter_mut().zip(&top) {
            *sum += value;
        }
    }
    let n = data.n_cases as f64;
    let mean = |v: Vec<f64>| v.into_iter().map(|s| s / n).collect();
    (mean(sums.0), mean(sums.1), mean(sums.2))
}

fn assert_close(got: &[f64], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() < 1e-5, "{what}[{i}]: {g} vs {w}");
    }
}

#[test]
fn analyze_tables_match_a_direct_computation() {
    for units in [VisibleUnits::Bernoulli, VisibleUnits::Gaussian] {
        let dbn = tiny_dbn(units);
        let data = tiny_data();
        let tables = analyze_tables(&CpuBackend, &dbn, &data, 1000);
        let (input, reconstruction, top) = direct_analyze(&dbn, &data);
        assert_eq!(tables.n_cases, 5);
        assert_eq!(tables.input_names, ["x0", "x1", "x2", "x3"]);
        assert_close(&tables.input_mean, &input, "input mean");
        assert_close(&tables.reconstruction_mean, &reconstruction, "reconstruction mean");
        assert_close(&tables.top_hidden_mean, &top, "top hidden mean");
        // A real model does not reproduce its inputs exactly, so the two columns differ.
        assert!(input.iter().zip(&reconstruction).any(|(x, r)| (x - r).abs() > 1e-3));
    }
}

#[test]
fn analyze_tables_use_at_most_max_cases() {
    let dbn = tiny_dbn(VisibleUnits::Bernoulli);
    let data = tiny_data();
    let tables = analyze_tables(&CpuBackend, &dbn, &data, 2);
    assert_eq!(tables.n_cases, 2);
    // Two cases spread over five are cases 0 and 2.
    let picked = data.subset(&[0, 2]);
    let (input, _, top) = direct_analyze(&dbn, &picked);
    assert_close(&tables.input_mean, &input, "input mean");
    assert_close(&tables.top_hidden_mean, &top, "top hidden mean");
}

fn layer_log(rbm: &Rbm, init_error: f64, final_error: f64) -> LayerLog<'_> {
    LayerLog {
        rbm,
        trial_errors: vec![init_error + 0.01, init_error],
        best_trial: 1,
        init_error,
        final_error,
        measured_cases: 5,
        epochs: Vec::new(),
        stop: StopReason::Converged,
        activity: (0..rbm.n_hidden).map(|j| UnitActivity { q_mean: 0.1 * (j + 1) as f64, q_sd: 0.05, skewness: 0.75 }).collect(),
    }
}

fn deep_log<'a>(dbn: &'a Dbn, config: &'a StackConfig) -> DeepLog<'a> {
    DeepLog {
        program: "deepbelief test".into(),
        data: DataSummary {
            train_file: "tiny.csv".into(),
            labels_file: None,
            n_cases: 5,
            image_shape: None,
            input_means: vec![0.36, 0.64, 0.54, 0.41],
            input_sds: vec![0.4, 0.4, 0.35, 0.4],
            standardised: false,
            preprocessing: Vec::new(),
        },
        config,
        backend: "CPU".into(),
        layers: vec![layer_log(&dbn.layers[0], 0.2345, 0.0612), layer_log(&dbn.layers[1], 0.1789, 0.0433)],
    }
}

fn supervised_log(dbn: &Dbn) -> SupervisedLog {
    let confusion = ConfusionMatrix::from_classes(&[0, 1, 2, 2, 1], &[0, 1, 2, 0, 1], vec!["alpha".into(), "beta".into(), "gamma".into()]);
    SupervisedLog {
        architecture: vec![4, 3, 2, 5, 3],
        output: "softmax".into(),
        fine_tuned: true,
        parameters: vec![
            ("optimizer".into(), "cg".into()),
            ("penalty".into(), "0.001".into()),
            ("tolerance".into(), "0.00005".into()),
            ("anneal_iterations".into(), "100".into()),
            ("svd".into(), "on".into()),
        ],
        outcome: vec![("Iterations".into(), "37".into())],
        fine_tuned_reconstruction: vec![0.0701, 0.0502],
        output_weights: vec![vec![0.5, -0.25, 1.0, 0.125, 2.0, -3.5], vec![0.0; 6], vec![1.0, 1.0, 1.0, 1.0, 1.0, 4.25]],
        target_names: vec!["alpha".into(), "beta".into(), "gamma".into()],
        criterion_name: "log likelihood".into(),
        criterion_value: -1.234567,
        confusion: vec![("training data".into(), confusion.clone()), ("test data (Test.CSV)".into(), confusion)],
        analyze: Some(analyze_tables(&CpuBackend, dbn, &tiny_data(), 1000)),
    }
}

#[test]
fn unsupervised_report_is_unchanged_without_supervised_sections() {
    let dbn = tiny_dbn(VisibleUnits::Bernoulli);
    let config = StackConfig { layers: vec![3, 2], ..StackConfig::default() };
    let log = deep_log(&dbn, &config);
    let text = log.render();
    assert_eq!(text, log.render_with_supervised(None));
    assert!(text.starts_with("DEEP.LOG  deepbelief test: greedy layer-wise training"));
    for absent in ["SUPERVISED", "OUTPUT WEIGHTS", "ANALYZE", "CONFUSION"] {
        assert!(!text.contains(absent), "{absent} in the unsupervised report");
    }
    for present in ["DATA", "ARCHITECTURE", "PARAMETERS", "LAYER 1 of 2", "LAYER 2 of 2", "Q-mean", "Skewness", "learning_rate"] {
        assert!(text.contains(present), "missing {present:?}");
    }
    // The hidden size comes from `layers`, not from the shared settings.
    assert!(!text.contains("n_hidden"));
}

#[test]
fn supervised_report_has_every_section() {
    let dbn = tiny_dbn(VisibleUnits::Bernoulli);
    let config = StackConfig { layers: vec![3, 2], ..StackConfig::default() };
    let log = deep_log(&dbn, &config);
    let supervised = supervised_log(&dbn);
    let text = log.render_with_supervised(Some(&supervised));
    let sections = [
        "Training file .",
        "Cases",
        "Input means",
        "Complete model: 4 -> 3 -> 2 -> 5 -> 3",
        "SUPERVISED PARAMETERS",
        "optimizer",
        "penalty",
        "tolerance",
        "anneal_iterations",
        "svd",
        "LAYER 1 of 2",
        "Q-mean",
        "Skewness",
        "SUPERVISED TRAINING",
        "Criterion",
        "log likelihood = -1.234567",
        "RECONSTRUCTION ERROR PER LAYER",
        "OUTPUT WEIGHTS",
        "CONSTANT",
        "CLASSIFICATION: training data",
        "CLASSIFICATION: test data (Test.CSV)",
        "Misclassification: 20.00% (1 of 5 cases)",
        "ANALYZE: INPUT VERSUS RECONSTRUCTION ACTIVATION PROBABILITY",
        "ANALYZE: TOP-LAYER HIDDEN ACTIVATION PROBABILITY",
    ];
    let mut from = 0;
    for section in sections {
        let at = text[from..].find(section).map(|i| i + from);
        assert!(at.is_some(), "missing {section:?} (in order) in\n{text}");
        from = at.unwrap();
    }
    assert!(text.contains("then fine-tuning of the whole model"));
    assert!(text.contains("measured on the pretrained RBMs, before fine-tuning"));
    assert!(!text.contains("-0.00 s"), "an empty epoch list shows as 0.00 s");
    assert!(text.lines().all(|l| l == l.trim_end()), "no trailing spaces");
    if std::env::var_os("SHOW_DEEP_LOG").is_some() {
        println!("{text}");
    }
}

#[test]
fn supervised_sections_show_the_figures() {
    let dbn = tiny_dbn(VisibleUnits::Bernoulli);
    let config = StackConfig { layers: vec![3, 2], ..StackConfig::default() };
    let supervised = supervised_log(&dbn);
    let text = deep_log(&dbn, &config).render_with_supervised(Some(&supervised));
    // The first line starting with `start` after the heading `after`.
    let line = |after: &str, start: &str| {
        let from = text.find(after).unwrap_or_else(|| panic!("no {after:?}"));
        text[from..].lines().find(|l| l.trim_start().starts_with(start)).unwrap_or_else(|| panic!("no line starting {start:?} after {after:?}")).to_string()
    };

    // One CONSTANT row with each target's bias, the last weight.
    let constant: Vec<f64> = line("OUTPUT WEIGHTS", "CONSTANT").split_whitespace().skip(1).map(|v| v.parse().unwrap()).collect();
    assert_eq!(constant, [-3.5, 0.0, 4.25]);
    let first: Vec<f64> = line("OUTPUT WEIGHTS", "1 ").split_whitespace().skip(1).map(|v| v.parse().unwrap()).collect();
    assert_eq!(first, [0.5, 0.0, 1.0]);

    // Architecture rows: RBM layers, then supervised, then the output.
    assert!(line("Complete model", "2  unsupervised").contains("3        2"));
    assert!(line("Complete model", "3  supervised").ends_with("logistic"));
    assert!(line("Complete model", "4  output").contains("softmax"));

    // Reconstruction errors at initialisation, after pretraining and after fine-tuning.
    let row: Vec<f64> = line("RECONSTRUCTION ERROR PER LAYER", "1 ").split_whitespace().map(|v| v.parse().unwrap()).collect();
    assert_eq!(row, [1.0, 0.2345, 0.0612, 0.0701]);

    // Analyze: one row per input with its mean, reconstruction and difference.
    let tables = supervised.analyze.as_ref().unwrap();
    let x2: Vec<f64> = line("ANALYZE", "x2 ").split_whitespace().skip(1).map(|v| v.parse().unwrap()).collect();
    assert!((x2[0] - tables.input_mean[2]).abs() < 1e-5 && (x2[1] - tables.reconstruction_mean[2]).abs() < 1e-5);
    assert!((x2[2] - (x2[1] - x2[0])).abs() < 2e-5);
    let top: Vec<f64> = line("TOP-LAYER", "1-2").split_whitespace().skip(1).map(|v| v.parse().unwrap()).collect();
    assert_close(&top, &tables.top_hidden_mean, "top hidden row");
}

#[test]
fn setting_entries_flatten_a_settings_struct() {
    #[derive(serde::Serialize)]
    struct Settings {
        optimizer: &'static str,
        penalty: f32,
        svd: bool,
        limit: Option<usize>,
    }
    let entries = setting_entries(&Settings { optimizer: "cg", penalty: 0.001, svd: false, limit: None });
    let want: Vec<(String, String)> = [("optimizer", "cg"), ("penalty", "0.001"), ("svd", "false"), ("limit", "none")].iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    let mut sorted = entries.clone();
    sorted.sort();
    let mut want_sorted = want;
    want_sorted.sort();
    assert_eq!(sorted, want_sorted);
}
