//! What a greedy training run leaves for DEEP.LOG and model.json, shared by `deepbelief train`
//! and the page: each layer's outcome, the measurements taken on a fixed set of cases, the
//! model file's training records, the DEEP.LOG report (with its supervised section built from
//! the saved supervised layers), and the activation file.

use super::classification::{write_activations, ActivationSelection, Section};
use super::deep_log::{setting_entries, DataSummary, DeepLog, LayerLog, UnitActivity};
use super::deep_log_supervised::SupervisedLog;
use crate::backend::Backend;
use crate::data::split::spread_cases;
use crate::data::{Dataset, Preprocessing};
use crate::eval::hidden_unit_statistics;
use crate::format::LayerTraining;
use crate::model::{Dbn, Rbm};
use crate::supervised::{complete_network, OutputKind, SavedSupervised};
use crate::train::greedy::propagate_dataset;
use crate::train::{EpochReport, StackConfig, StopReason};

/// Cases (spread through the data) on which each layer's reconstruction error before and
/// after training and its hidden unit statistics are measured: enough for 4-digit figures,
/// few enough that a 2000-unit layer's activations stay small.
pub const MEASURED_CASES: usize = 10_000;

/// What one RBM layer's training produced.
#[derive(Clone, Debug)]
pub struct LayerOutcome {
    pub trial_errors: Vec<f64>,
    pub best_trial: usize,
    /// Mean-field reconstruction error of the initialised and the trained layer.
    pub init_error: f64,
    pub final_error: f64,
    pub epochs: Vec<EpochReport>,
    pub stop: StopReason,
    /// One per hidden unit, measured on the trained layer before any fine-tuning.
    pub activity: Vec<UnitActivity>,
}

impl LayerOutcome {
    /// A layer just initialised: `init_error` measured, the rest still to come.
    pub fn started(trial_errors: Vec<f64>, best_trial: usize, init_error: f64) -> LayerOutcome {
        LayerOutcome { trial_errors, best_trial, init_error, final_error: f64::NAN, epochs: Vec::new(), stop: StopReason::MaxEpochs, activity: Vec::new() }
    }

    /// Records a trained layer's figures on `measured` (the cases as this layer sees them).
    pub fn finish(&mut self, backend: &dyn Backend, rbm: &Rbm, measured: &Dataset) {
        self.final_error = rbm.reconstruction_error(backend, measured, usize::MAX);
        self.activity = unit_activity(backend, rbm, measured);
    }
}

/// Q-mean, Q-sd and skewness of each hidden unit over `measured`.
pub fn unit_activity(backend: &dyn Backend, rbm: &Rbm, measured: &Dataset) -> Vec<UnitActivity> {
    hidden_unit_statistics(backend, rbm, measured, usize::MAX)
        .into_iter()
        .map(|s| UnitActivity { q_mean: s.mean_activation, q_sd: s.standard_deviation, skewness: s.skewness })
        .collect()
}

/// The trained layers' figures measured after the fact (the page measures when a report is
/// asked for, not during training): for layer `k`, its final reconstruction error and unit
/// activity on at most `MEASURED_CASES` cases of `data` propagated through the layers below.
pub fn measure_layers(backend: &dyn Backend, dbn: &Dbn, data: &Dataset) -> Vec<(f64, Vec<UnitActivity>)> {
    let mut measured = data.subset(&spread_cases(data.n_cases, MEASURED_CASES));
    let mut figures = Vec::with_capacity(dbn.layers.len());
    for (k, rbm) in dbn.layers.iter().enumerate() {
        figures.push((rbm.reconstruction_error(backend, &measured, usize::MAX), unit_activity(backend, rbm, &measured)));
        if k + 1 < dbn.layers.len() {
            measured = propagate_dataset(backend, rbm, &measured);
        }
    }
    figures
}

/// model.json's `training` records.
pub fn training_records(outcomes: &[LayerOutcome]) -> Vec<LayerTraining> {
    outcomes
        .iter()
        .enumerate()
        .map(|(layer, o)| LayerTraining { layer, epochs: o.epochs.len(), stop: o.stop, init_error: o.init_error, final_error: o.final_error })
        .collect()
}

/// The DEEP.LOG report of `dbn`'s layers (zipped with `outcomes`), measured on
/// `measured_cases` cases.
pub fn deep_log<'a>(program: String, data: DataSummary, config: &'a StackConfig, backend: String, dbn: &'a Dbn, outcomes: &[LayerOutcome], measured_cases: usize) -> DeepLog<'a> {
    DeepLog {
        program,
        data,
        config,
        backend,
        layers: dbn
            .layers
            .iter()
            .zip(outcomes)
            .map(|(rbm, o)| LayerLog {
                rbm,
                trial_errors: o.trial_errors.clone(),
                best_trial: o.best_trial,
                init_error: o.init_error,
                final_error: o.final_error,
                measured_cases,
                epochs: o.epochs.clone(),
                stop: o.stop,
                activity: o.activity.clone(),
            })
            .collect(),
    }
}

/// How a database became inputs, for DEEP.LOG's DATA section.
pub fn describe_preprocessing(p: &Preprocessing) -> Vec<String> {
    let mut lines = vec![format!("{:?} of {} input columns", p.scaling, p.kept.len())];
    if !p.dropped_names.is_empty() {
        lines.push(format!("dropped as constant: {}", p.dropped_names.join(", ")));
    }
    lines
}

pub fn output_name(output: OutputKind) -> &'static str {
    match output {
        OutputKind::SoftMax => "softmax",
        OutputKind::Linear => "linear",
        OutputKind::Logistic => "logistic",
    }
}

/// What DEEP.LOG shows of the saved supervised layers: architecture, settings, output
/// weights with their CONSTANT, the training criterion. How the run went (`outcome`), the
/// confusion matrices, the fine-tuned reconstruction errors and the Analyze tables are left
/// empty for the caller, which knows them.
pub fn supervised_log(dbn: &Dbn, saved: &SavedSupervised) -> SupervisedLog {
    // dbn.sizes() starts with the inputs; a plain MLP's come from its first layer.
    let mut architecture = if dbn.layers.is_empty() { vec![saved.network.n_inputs()] } else { dbn.sizes() };
    architecture.extend(saved.network.layers.iter().map(|l| l.n_out));
    let last = saved.network.layers.last().expect("an output layer");
    let output_weights = (0..last.n_out).map(|j| (0..last.n_in).map(|i| last.weights[i * last.n_out + j]).chain([last.bias[j]]).collect()).collect();
    SupervisedLog {
        architecture,
        output: output_name(saved.network.output).to_string(),
        fine_tuned: saved.fine_tuned,
        parameters: setting_entries(&saved.config),
        output_weights,
        target_names: saved.target_names.clone(),
        criterion_name: match saved.network.output {
            OutputKind::SoftMax => "log likelihood".into(),
            OutputKind::Linear => "mean squared error".into(),
            OutputKind::Logistic => "half squared error per case".into(),
        },
        criterion_value: saved.train_criterion,
        ..SupervisedLog::default()
    }
}

/// Writes the activation file to `out`: `# SELECTION`, then one line per case of `inputs`
/// (`n_cases × n_inputs`, the model's input scale) with the selected layer's activations.
/// Without supervised layers only the unsupervised section can be chosen. Errors name the
/// selection; write errors come back as their text.
pub fn write_activation_file(
    out: &mut impl std::io::Write,
    backend: &dyn Backend,
    dbn: &Dbn,
    supervised: Option<&SavedSupervised>,
    inputs: &[f32],
    selection: ActivationSelection,
) -> Result<(), String> {
    let unsupervised: Vec<usize> = dbn.layers.iter().map(|l| l.n_hidden).collect();
    let (hidden, n_outputs) = match supervised {
        Some(saved) => (saved.network.layers[..saved.network.layers.len() - 1].iter().map(|l| l.n_out).collect(), saved.network.n_outputs()),
        None if selection.section != Section::Unsupervised => {
            return Err(format!("activation selection {selection}: the model has no supervised layers (only unsupervised:LAYER)"))
        }
        None => (Vec::new(), 0),
    };
    let width = selection.layer_width(&unsupervised, &hidden, n_outputs)?;
    let index = match selection.section {
        Section::Unsupervised => selection.layer,
        Section::Supervised => unsupervised.len() + selection.layer,
        Section::Output => unsupervised.len() + hidden.len(),
    };
    let n_inputs = dbn.layers.first().map(|l| l.n_visible).or(supervised.map(|saved| saved.network.n_inputs())).unwrap_or(1);
    let n_cases = inputs.len() / n_inputs;
    let mut activations = Vec::with_capacity(n_cases * width);
    match supervised {
        Some(saved) => {
            let net = complete_network(dbn, &saved.network);
            for block in inputs.chunks(2048 * n_inputs) {
                activations.extend_from_slice(&net.forward_all(backend, block)[index]);
            }
        }
        None => {
            for block in inputs.chunks(2048 * n_inputs) {
                activations.extend(dbn.propagate_up(backend, block, index + 1));
            }
        }
    }
    write_activations(out, &activations, n_cases, width, selection.neuron, &format!("# {selection}")).map_err(|e| e.to_string())
}
