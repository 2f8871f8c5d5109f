//! `deepbelief test`: a saved model's supervised layers on new data — DEEP's "clear all
//! data, then Test". The data go through the model's own preprocessing (database scaling
//! by variable name, standardisation), then the RBM stack and the supervised layers; the
//! command prints the confusion matrix, the misclassification and the criterion.

use crate::input::load_model_data;
use crate::output::Output;
use crate::supervised_data::{dataset_inputs, evaluate, targets_for};
use crate::supervised_stage::error_text;
use clap::Args;
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::model::format::read_model;
use deepbelief::model::supervised_format::TargetSource;
use deepbelief::report::classification::{predictions, write_predictions};
use serde_json::json;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct TestArgs {
    /// The model: a folder holding model.json, or the file itself.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// Test data: IDX images, or a database holding the model's inputs and targets by name.
    #[arg(long, value_name = "FILE", visible_alias = "data")]
    pub test_images: PathBuf,
    /// IDX labels of --test-images (models trained on labels).
    #[arg(long, value_name = "FILE")]
    pub test_labels: Option<PathBuf>,
    /// Also write each case's predicted class, true class and outputs to this file.
    #[arg(long, value_name = "FILE")]
    pub predictions: Option<PathBuf>,
    /// Print the figures as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: TestArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    let model = read_model(&args.model).map_err(|e| e.to_string())?;
    let saved = model.supervised.as_ref().ok_or_else(|| {
        format!("{}: the model has no supervised layers (train it with --train-labels or --targets)", args.model.display())
    })?;
    let names = if saved.target_source == TargetSource::Database { saved.target_names.clone() } else { Vec::new() };
    let what = format!("--test-images {}", args.test_images.display());
    let dataset = load_model_data(&args.test_images, args.test_labels.as_deref(), &names, &model, "--test-images")?;
    let targets = targets_for(&dataset, saved, &what)?;
    let backend = CpuBackend;
    let evaluation = evaluate(&backend, &model, &dataset_inputs(&dataset), &targets);
    output.text(&format!("{}: criterion {:.6}{}", dataset.name, evaluation.criterion, error_text(&evaluation)));
    if let Some(confusion) = &evaluation.confusion {
        output.text(&confusion.render());
    }
    if let Some(path) = &args.predictions {
        let n_outputs = saved.target_names.len();
        let true_classes = predictions(&targets, n_outputs);
        let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(|e| format!("{}: cannot create the file ({e})", path.display()))?);
        write_predictions(&mut file, &evaluation.outputs, &true_classes, n_outputs, &saved.target_names).map_err(|e| format!("{}: {e}", path.display()))?;
        output.text(&format!("wrote {}", path.display()));
    }
    output.finish(&json!({
        "cases": evaluation.n_cases,
        "criterion": evaluation.criterion,
        "test_error": evaluation.confusion.as_ref().map(|c| c.error_fraction()),
        "per_class_error": evaluation.confusion.as_ref().map(|c| c.per_class_error()),
        "confusion": evaluation.confusion.as_ref().map(|c| c.to_json()),
        "fine_tuned": saved.fine_tuned,
    }));
    Ok(())
}
