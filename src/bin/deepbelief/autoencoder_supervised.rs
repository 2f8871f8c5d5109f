//! `deepbelief autoencoder`'s supervised part (UFLDL's stacked-autoencoder and self-taught
//! exercises): a SoftMax over the labelled classes on the stack's top features, optionally
//! fine-tuning of the encoders with it, each stage timed and scored on the training cases and
//! the test file. Also the figures of a saved stack + SoftMax on labelled data, for `test`.

use crate::autoencoder_inputs::{rows, targets_over, Images};
use crate::output::Output;
use deepbelief::autoencoder::stack::{self, penalty_for_lambda, AutoencoderStack};
use deepbelief::backend::Backend;
use deepbelief::format::autoencoder::DataRecord;
use deepbelief::supervised::evaluation::{evaluate_layers, Evaluation};
use deepbelief::supervised::optimise::OptimiseReport;
use deepbelief::supervised::{Network, SavedSupervised, SupervisedConfig, TargetSource};

pub struct SupervisedOptions {
    pub iterations: usize,
    /// UFLDL's λ on the SoftMax weights.
    pub lambda: f64,
    pub fine_tune: bool,
    pub fine_tune_iterations: usize,
    pub seed: u64,
}

pub struct StageResult {
    pub name: &'static str,
    pub report: OptimiseReport,
    pub train: Evaluation,
    pub test: Option<Evaluation>,
}

pub struct SupervisedResult {
    pub saved: SavedSupervised,
    pub data: DataRecord,
    pub penalty: String,
    pub stages: Vec<StageResult>,
    /// The test file and its cases left out for a label outside the classes.
    pub test: Option<(String, usize)>,
}

/// Labelled cases as the model's outputs see them.
pub struct Labelled {
    pub inputs: Vec<f32>,
    pub targets: Vec<f32>,
    /// Cases left out for a label the model does not know.
    pub left_out: usize,
}

/// The cases of `images` whose labels are among `classes` (output k is class `classes[k]`).
pub fn labelled(images: &Images, classes: &[u32], what: &str) -> Result<Labelled, String> {
    let labels = images.labels.as_ref().ok_or_else(|| format!("{what}: no labels"))?;
    let (targets, kept, left_out) = targets_over(labels, classes);
    if kept.is_empty() {
        return Err(format!("{what}: none of its {} cases has a label among the model's classes {classes:?}", labels.len()));
    }
    Ok(Labelled { inputs: rows(&images.values, images.width, &kept), targets, left_out })
}

/// The class of each output, from the saved names (the labels as written).
pub fn classes_of(saved: &SavedSupervised, source: &str) -> Result<Vec<u32>, String> {
    saved.target_names.iter().map(|n| n.parse::<u32>().map_err(|_| format!("{source}: the supervised output {n:?} is not a label class"))).collect()
}

/// The stack + supervised layers on labelled cases: outputs, criterion, confusion matrix.
pub fn evaluate(backend: &dyn Backend, stack: &AutoencoderStack, saved: &SavedSupervised, cases: &Labelled) -> Evaluation {
    evaluate_layers(backend, &stack.dbn_view(), saved, &cases.inputs, &cases.targets)
}

fn saved_with(network: &Network, config: &SupervisedConfig, classes: &[u32], fine_tuned: bool) -> SavedSupervised {
    SavedSupervised {
        network: network.clone(),
        config: config.clone(),
        fine_tuned,
        target_source: TargetSource::Labels,
        target_names: classes.iter().map(|c| c.to_string()).collect(),
        train_criterion: 0.0,
        train_error: None,
    }
}

/// Trains the SoftMax on the stack's features of `train` (and fine-tunes with `fine_tune`),
/// scoring each stage on the training cases and on `test`.
pub fn run(backend: &dyn Backend, stack: &mut AutoencoderStack, train: &Images, test: Option<&Images>, options: &SupervisedOptions, output: Output) -> Result<SupervisedResult, String> {
    let labels = train.labels.as_ref().ok_or("--labels: the supervised stage needs labels")?;
    let classes: Vec<u32> = match &train.record.classes {
        Some(classes) => classes.iter().copied().filter(|c| labels.contains(c)).collect(),
        None => {
            let mut present = labels.clone();
            present.sort_unstable();
            present.dedup();
            present
        }
    };
    if classes.len() < 2 {
        return Err(format!("--labels: the labelled cases have {} class(es) ({classes:?}), a SoftMax needs at least 2", classes.len()));
    }
    let cases = labelled(train, &classes, "--labels")?;
    let test_cases = test.map(|t| labelled(t, &classes, "--test-images")).transpose()?;
    let n_features = *stack.sizes().last().expect("a trained stack");
    let n_weights = n_features * classes.len();
    let config = SupervisedConfig {
        weight_penalty: penalty_for_lambda(options.lambda, n_weights),
        ..stack::ufldl_supervised(n_features, classes.len(), options.iterations, options.fine_tune_iterations, options.fine_tune, options.seed)
    };
    let penalty = format!("PenFac {:.6} (UFLDL's lambda {} on the {n_weights} SoftMax weights)", config.weight_penalty, options.lambda);
    output.text(&format!("supervised: SoftMax over classes {classes:?} on {} features of {} cases; {penalty}", n_features, cases.targets.len() / classes.len()));

    let progress = |stage: &'static str| {
        move |iteration: usize, value: f64| {
            if iteration.is_multiple_of(25) {
                output.text(&format!("  {stage} {iteration}: criterion {value:.6}"));
            }
            true
        }
    };
    let (mut network, outcome) = stack::train_output(backend, stack, &cases.inputs, &cases.targets, classes.len(), &config, &mut progress("supervised")).map_err(|e| e.to_string())?;
    let mut stages = Vec::new();
    let mut score = |name: &'static str, report: OptimiseReport, stack: &AutoencoderStack, network: &Network, tuned: bool| {
        let saved = saved_with(network, &config, &classes, tuned);
        let train = evaluate(backend, stack, &saved, &cases);
        let test = test_cases.as_ref().map(|t| evaluate(backend, stack, &saved, t));
        output.text(&format!("{name}: {:.1} s; training {}{}", report.seconds, percent(&train), test.as_ref().map(|t| format!(", test {}", percent(t))).unwrap_or_default()));
        stages.push(StageResult { name, report, train, test });
    };
    score("supervised stage", outcome.supervised, stack, &network, false);
    if options.fine_tune {
        let report = stack::fine_tune(backend, stack, &mut network, &cases.inputs, &cases.targets, &config, &mut progress("fine-tune")).map_err(|e| e.to_string())?;
        score("fine-tuning", report, stack, &network, true);
    }
    let last = stages.last().expect("the supervised stage");
    let saved = SavedSupervised { train_criterion: last.train.criterion, train_error: last.train.confusion.as_ref().map(|c| c.error_fraction()), ..saved_with(&network, &config, &classes, options.fine_tune) };
    let data = DataRecord { classes: Some(classes), cases: cases.targets.len() / saved.target_names.len(), ..train.record.clone() };
    let test = test.zip(test_cases.as_ref()).map(|(t, c)| (t.record.files.join(", "), c.left_out));
    Ok(SupervisedResult { saved, data, penalty, stages, test })
}

/// "2.35% wrong of 1000" (or the criterion where there are no classes).
pub fn percent(e: &Evaluation) -> String {
    match &e.confusion {
        Some(c) => format!("{:.2}% wrong of {}", 100.0 * c.error_fraction(), e.n_cases),
        None => format!("criterion {:.6}", e.criterion),
    }
}
