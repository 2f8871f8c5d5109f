#![cfg(not(target_arch = "wasm32"))]
//! The training-log pieces shared by `deepbelief train` and the page: measurements of trained
//! layers, model-file records, the DEEP.LOG built from layer outcomes, and the activation file,
//! against direct f64 computations on a tiny DBN.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::Dataset;
use deepbelief::model::{Dbn, Rbm, VisibleUnits};
use deepbelief::report::classification::ActivationSelection;
use deepbelief::report::deep_log::DataSummary;
use deepbelief::report::training_log::{deep_log, measure_layers, training_records, write_activation_file, LayerOutcome};
use deepbelief::train::{StackConfig, StopReason};

fn rbm(n_visible: usize, n_hidden: usize, scale: f32) -> Rbm {
    let weights = (0..n_visible * n_hidden).map(|k| scale * ((k * 7 % 5) as f32 - 2.0)).collect();
    Rbm { visible_units: VisibleUnits::Bernoulli, n_visible, n_hidden, weights, visible_bias: vec![0.1; n_visible], hidden_bias: (0..n_hidden).map(|j| 0.3 - 0.2 * j as f32).collect() }
}

fn tiny() -> (Dbn, Dataset) {
    let dbn = Dbn { layers: vec![rbm(4, 3, 0.5), rbm(3, 2, 0.8)] };
    let data = Dataset::from_floats("tiny", 4, vec![0.0, 1.0, 0.5, 0.25, 1.0, 1.0, 0.0, 0.0, 0.2, 0.9, 0.4, 0.7]);
    (dbn, data)
}

fn up(rbm: &Rbm, v: &[f64]) -> Vec<f64> {
    (0..rbm.n_hidden)
        .map(|j| 1.0 / (1.0 + (-(rbm.hidden_bias[j] as f64 + (0..rbm.n_visible).map(|i| v[i] * rbm.weights[i * rbm.n_hidden + j] as f64).sum::<f64>())).exp()))
        .collect()
}

fn cases(data: &Dataset) -> Vec<Vec<f64>> {
    (0..data.n_cases)
        .map(|k| {
            let mut case = vec![0.0f32; data.n_inputs];
            data.case_into(k, &mut case);
            case.into_iter().map(f64::from).collect()
        })
        .collect()
}

#[test]
fn unsupervised_activation_file_lists_each_cases_probabilities() {
    let (dbn, data) = tiny();
    let inputs: Vec<f32> = cases(&data).concat().into_iter().map(|x| x as f32).collect();
    let mut file = Vec::new();
    let selection: ActivationSelection = "unsupervised:2".parse().unwrap();
    write_activation_file(&mut file, &CpuBackend, &dbn, None, &inputs, selection).unwrap();
    let text = String::from_utf8(file).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("# unsupervised:2"));
    for (line, case) in lines.zip(cases(&data)) {
        let expected = up(&dbn.layers[1], &up(&dbn.layers[0], &case));
        let written: Vec<f64> = line.split(' ').map(|v| v.parse().unwrap()).collect();
        assert_eq!(written.len(), 2);
        for (w, e) in written.iter().zip(&expected) {
            assert!((w - e).abs() < 1e-6, "{line} vs {expected:?}");
        }
    }
    assert_eq!(text.lines().count(), 1 + data.n_cases);

    let mut file = Vec::new();
    let error = write_activation_file(&mut file, &CpuBackend, &dbn, None, &inputs, "output:1".parse().unwrap()).unwrap_err();
    assert!(error.contains("no supervised layers"), "{error}");
    let error = write_activation_file(&mut file, &CpuBackend, &dbn, None, &inputs, "unsupervised:3".parse().unwrap()).unwrap_err();
    assert!(error.contains("2 layer(s)"), "{error}");
}

#[test]
fn measurements_records_and_log_follow_the_layer_outcomes() {
    let (dbn, data) = tiny();
    let measured = measure_layers(&CpuBackend, &dbn, &data);
    // Layer 2 is measured on layer 1's probabilities: its Q-mean is the mean of layer 2's
    // probabilities over the cases.
    let top: Vec<Vec<f64>> = cases(&data).iter().map(|c| up(&dbn.layers[1], &up(&dbn.layers[0], c))).collect();
    for j in 0..2 {
        let q_mean = top.iter().map(|h| h[j]).sum::<f64>() / top.len() as f64;
        assert!((measured[1].1[j].q_mean - q_mean).abs() < 1e-6, "unit {j}: {} vs {q_mean}", measured[1].1[j].q_mean);
    }
    let outcomes: Vec<LayerOutcome> = measured
        .iter()
        .enumerate()
        .map(|(k, (final_error, activity))| LayerOutcome {
            final_error: *final_error,
            activity: activity.clone(),
            stop: StopReason::Converged,
            ..LayerOutcome::started(vec![0.5, 0.25], 1, 0.25 + k as f64)
        })
        .collect();
    let records = training_records(&outcomes);
    assert_eq!(records.iter().map(|r| (r.layer, r.init_error, r.final_error)).collect::<Vec<_>>(), vec![(0, 0.25, measured[0].0), (1, 1.25, measured[1].0)]);
    let config = StackConfig { layers: vec![3, 2], ..StackConfig::default() };
    let summary = DataSummary {
        train_file: "tiny".into(),
        labels_file: None,
        n_cases: 3,
        image_shape: None,
        input_means: vec![0.5; 4],
        input_sds: vec![0.1; 4],
        standardised: false,
        preprocessing: Vec::new(),
    };
    let text = deep_log("test".into(), summary, &config, "cpu".into(), &dbn, &outcomes, 3).render();
    assert!(text.contains("LAYER 1 of 2") && text.contains("LAYER 2 of 2"));
    assert!(text.contains("2 random trial(s); best is trial 2, error 0.250000"), "{text}");
    assert!(text.contains(&format!("1.250000 at initialisation, {:.6} after training", measured[1].0)), "{text}");
}
