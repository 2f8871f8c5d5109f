//! `deepbelief train`'s supervised part, after the RBM stack: the supervised layers, optional
//! fine-tuning of the complete model, the figures on the training and test data, and what
//! DEEP.LOG reports of it.

use crate::input::{load_model_data, TrainingData};
use crate::output::Output;
use crate::supervised_data::{dataset_inputs, evaluate, targets_for, Evaluation, TargetSet};
use crate::train_settings::TrainSettings;
use deepbelief::backend::Backend;
use deepbelief::format::SavedDbn;
use deepbelief::report::deep_log_supervised::{analyze_tables, AnalyzeTables, SupervisedLog};
use deepbelief::report::training_log::{output_name, supervised_log};
use deepbelief::supervised::optimise::OptimiseReport;
use deepbelief::supervised::{train_supervised, SavedSupervised, Stage, SupervisedOutcome, TargetSource};
use deepbelief::train::greedy::propagate_dataset;

/// Cases for the Analyze tables and the fine-tuned reconstruction errors.
const MEASURED_CASES: usize = 10_000;

pub struct SupervisedRun {
    pub outcome: SupervisedOutcome,
    pub train: Evaluation,
    /// The test file and the figures on it.
    pub test: Option<(String, Evaluation)>,
    /// Of the pretrained stack, before any fine-tuning.
    pub analyze: AnalyzeTables,
    pub fine_tuned_reconstruction: Vec<f64>,
}

/// Trains the supervised layers (and fine-tunes) on `data`, stores them in `model`, and
/// measures the result.
pub fn run(settings: &TrainSettings, backend: &dyn Backend, data: &TrainingData, model: &mut SavedDbn, targets: TargetSet, output: Output) -> Result<SupervisedRun, String> {
    let config = settings.supervised.config.clone();
    let analyze = analyze_tables(backend, &model.dbn, &data.dataset, MEASURED_CASES);
    let inputs = dataset_inputs(&data.dataset);
    let n_outputs = targets.names.len();
    output.text(&format!(
        "supervised: {} outputs ({}), hidden {:?}, {:?}{}",
        n_outputs,
        output_name(config.output),
        config.hidden,
        config.optimizer,
        if config.fine_tune && !model.is_plain_mlp() { ", then fine-tuning the complete model" } else { "" }
    ));
    let mut progress = |stage: Stage, iteration: usize, value: f64| {
        let name = match stage {
            Stage::Supervised => "supervised",
            Stage::FineTune => "fine-tune",
        };
        output.text(&format!("{name} {iteration}: criterion {value:.6}"));
        true
    };
    let (network, outcome) = train_supervised(backend, &mut model.dbn, &inputs, &targets.values, n_outputs, &config, data.dataset.image_shape, &mut progress).map_err(|e| e.to_string())?;
    // A plain MLP has no RBM layers to tune; its supervised stage trained every layer.
    let fine_tuned = config.fine_tune && !model.is_plain_mlp();
    model.supervised = Some(SavedSupervised {
        network,
        config,
        fine_tuned,
        target_source: targets.source,
        target_names: targets.names.clone(),
        train_criterion: 0.0,
        train_error: None,
    });
    let train = evaluate(backend, model, &inputs, &targets.values);
    let saved = model.supervised.as_mut().expect("just set");
    saved.train_criterion = train.criterion;
    saved.train_error = train.confusion.as_ref().map(|c| c.error_fraction());
    output.text(&format!("training data: criterion {:.6}{}", train.criterion, error_text(&train)));

    let test = match &settings.supervised.test_images {
        Some(path) => {
            let names = if targets.source == TargetSource::Database { targets.names.clone() } else { Vec::new() };
            let what = format!("--test-images {}", path.display());
            let dataset = load_model_data(path, settings.supervised.test_labels.as_deref(), &names, model, "--test-images")?;
            let test_targets = targets_for(&dataset, model.supervised.as_ref().expect("set"), &what)?;
            let evaluation = evaluate(backend, model, &dataset_inputs(&dataset), &test_targets);
            output.text(&format!("test data: criterion {:.6}{}", evaluation.criterion, error_text(&evaluation)));
            Some((path.display().to_string(), evaluation))
        }
        None => None,
    };
    let fine_tuned_reconstruction = if fine_tuned { reconstruction_errors(backend, model, data) } else { Vec::new() };
    Ok(SupervisedRun { outcome, train, test, analyze, fine_tuned_reconstruction })
}

pub fn error_text(evaluation: &Evaluation) -> String {
    match &evaluation.confusion {
        Some(c) => format!(", misclassified {:.2}% of {} cases", 100.0 * c.error_fraction(), evaluation.n_cases),
        None => String::new(),
    }
}

/// Each tuned RBM's reconstruction error on the data as the tuned layers below deliver it.
fn reconstruction_errors(backend: &dyn Backend, model: &SavedDbn, data: &TrainingData) -> Vec<f64> {
    let mut measured = data.dataset.subset(&deepbelief::data::split::spread_cases(data.dataset.n_cases, MEASURED_CASES));
    let mut errors = Vec::new();
    for (k, rbm) in model.dbn.layers.iter().enumerate() {
        errors.push(rbm.reconstruction_error(backend, &measured, usize::MAX));
        if k + 1 < model.dbn.layers.len() {
            measured = propagate_dataset(backend, rbm, &measured);
        }
    }
    errors
}

fn report_entries(prefix: &str, report: &OptimiseReport) -> Vec<(String, String)> {
    let mut entries = vec![
        (format!("{prefix} iterations"), report.iterations.to_string()),
        (format!("{prefix} stop"), format!("{:?}", report.stop)),
        (format!("{prefix} initial criterion"), format!("{:.6}", report.initial_criterion)),
        (format!("{prefix} final criterion"), format!("{:.6}", report.final_criterion)),
        (format!("{prefix} seconds"), format!("{:.1}", report.seconds)),
    ];
    // Toman's and FANN's rules: the seconds of his four stages (docs/TOMAN.md).
    if let Some(t) = &report.stage_seconds {
        entries.push((format!("{prefix} stage seconds"), format!("output {:.3}, error {:.3}, gradient {:.3}, update {:.3}", t.forward, t.error, t.gradient, t.update)));
    }
    if let Some(rollbacks) = report.rollbacks {
        entries.push((format!("{prefix} rollbacks"), rollbacks.to_string()));
    }
    entries
}

impl SupervisedRun {
    /// What DEEP.LOG shows of the supervised part.
    pub fn log(&self, model: &SavedDbn) -> SupervisedLog {
        let mut outcome = Vec::new();
        if let Some(anneal) = &self.outcome.anneal {
            outcome.push(("annealing best criterion".to_string(), format!("{:.6} (start {:.6})", anneal.best_criterion, anneal.start_criterion)));
            outcome.push(("annealing SVD outputs".to_string(), anneal.svd_outputs.to_string()));
        }
        outcome.extend(report_entries("supervised", &self.outcome.supervised));
        if let Some(fine) = &self.outcome.fine_tune {
            outcome.extend(report_entries("fine-tune", fine));
        }
        let mut confusion = Vec::new();
        if let Some(c) = &self.train.confusion {
            confusion.push(("training data".to_string(), c.clone()));
        }
        if let Some((file, evaluation)) = &self.test {
            if let Some(c) = &evaluation.confusion {
                confusion.push((format!("test data ({file})"), c.clone()));
            }
        }
        SupervisedLog {
            outcome,
            fine_tuned_reconstruction: self.fine_tuned_reconstruction.clone(),
            criterion_value: self.train.criterion,
            confusion,
            analyze: Some(self.analyze.clone()),
            ..supervised_log(&model.dbn, model.supervised.as_ref().expect("a supervised model"))
        }
    }
}
