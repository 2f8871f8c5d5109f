//! `deepbelief test`: a saved model's supervised layers on new data — DEEP's "clear all
//! data, then Test". The data go through the model's own preprocessing (database scaling
//! by variable name, standardisation), then the RBM stack and the supervised layers; the
//! command prints the confusion matrix, the misclassification and the criterion.

use crate::input::load_model_data;
use crate::output::Output;
use crate::supervised_data::{dataset_inputs, evaluate, targets_for};
use crate::supervised_stage::error_text;
use crate::train::write_activations;
use clap::Args;
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::format::autoencoder::{read_model_file, ModelFile};
use deepbelief::format::{model_file_path, SavedDbn};
use deepbelief::report::atomic::AtomicFile;
use deepbelief::report::classification::{write_predictions, ActivationSelection, Section};
use deepbelief::supervised::confusion::predictions;
use deepbelief::supervised::TargetSource;
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
    /// Write the activations of SECTION:LAYER[:NEURON] over the test cases to
    /// --activations-file (layers and neurons numbered from 1, as in DEEP), e.g.
    /// unsupervised:2, supervised:1 or output:1:3. Models without supervised layers take
    /// unsupervised selections only, and need no labels then.
    #[arg(long, value_name = "SELECTION", requires = "activations_file")]
    pub activations: Option<ActivationSelection>,
    /// The file --activations writes: `# SELECTION`, then one line per case.
    #[arg(long, value_name = "FILE", requires = "activations")]
    pub activations_file: Option<PathBuf>,
    /// Print the figures as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: TestArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    let model = match read_model_file(&args.model).map_err(|e| e.to_string())? {
        ModelFile::Dbn(model) => *model,
        ModelFile::Autoencoder(model) => return crate::autoencoder_model::test(&args, *model, &model_file_path(&args.model).display().to_string()),
    };
    if let Some(selection) = args.activations {
        check_selection(&model, selection)?;
    }
    let Some(saved) = model.supervised.as_ref() else {
        return match (args.activations, &args.activations_file) {
            (Some(selection), Some(path)) if args.predictions.is_none() => activations_only(&args, &model, selection, path, output),
            _ => Err(format!(
                "{}: the model has no supervised layers (train it with --train-labels or --targets); of such a model, test writes only --activations unsupervised:LAYER",
                args.model.display()
            )),
        };
    };
    let names = if saved.target_source == TargetSource::Database { saved.target_names.clone() } else { Vec::new() };
    let what = format!("--test-images {}", args.test_images.display());
    let dataset = load_model_data(&args.test_images, args.test_labels.as_deref(), &names, &model, "--test-images")?;
    let targets = targets_for(&dataset, saved, &what)?;
    let backend = CpuBackend;
    let inputs = dataset_inputs(&dataset);
    let evaluation = evaluate(&backend, &model, &inputs, &targets);
    output.text(&format!("{}: criterion {:.6}{}", dataset.name, evaluation.criterion, error_text(&evaluation)));
    if let Some(confusion) = &evaluation.confusion {
        output.text(&confusion.render());
    }
    // Both files are written in full before either is put in place.
    let mut staged = Vec::new();
    if let Some(path) = &args.predictions {
        let n_outputs = saved.target_names.len();
        let true_classes = predictions(&targets, n_outputs);
        let mut file = AtomicFile::create(path)?;
        let mut writer = std::io::BufWriter::new(&mut file);
        write_predictions(&mut writer, &evaluation.outputs, &true_classes, n_outputs, &saved.target_names)
            .and_then(|()| std::io::Write::flush(&mut writer))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        drop(writer);
        file.finish_writing()?;
        staged.push(file);
    }
    if let (Some(selection), Some(path)) = (args.activations, &args.activations_file) {
        let mut file = AtomicFile::create(path)?;
        write_activations(&mut file, path, &backend, &model, &inputs, selection)?;
        file.finish_writing()?;
        staged.push(file);
    }
    for file in staged {
        let path = file.target().display().to_string();
        file.commit()?;
        output.text(&format!("wrote {path}"));
    }
    output.finish(&json!({
        "cases": evaluation.n_cases,
        "criterion": evaluation.criterion,
        "test_error": evaluation.confusion.as_ref().map(|c| c.error_fraction()),
        "per_class_error": evaluation.confusion.as_ref().map(|c| c.per_class_error()),
        "confusion": evaluation.confusion.as_ref().map(|c| c.to_json()),
        "fine_tuned": saved.fine_tuned,
        "activations": args.activations_file.as_ref().map(|p| p.display().to_string()),
    }));
    Ok(())
}

/// The selection against the model's layers, before any data are read.
fn check_selection(model: &SavedDbn, selection: ActivationSelection) -> Result<(), String> {
    let unsupervised: Vec<usize> = model.dbn.layers.iter().map(|l| l.n_hidden).collect();
    let (hidden, n_outputs) = match &model.supervised {
        Some(saved) => (saved.network.layers[..saved.network.layers.len() - 1].iter().map(|l| l.n_out).collect(), saved.network.n_outputs()),
        None if selection.section != Section::Unsupervised => {
            return Err(format!("--activations {selection}: the model has no supervised layers; choose unsupervised:LAYER (1 to {})", unsupervised.len()))
        }
        None => (Vec::new(), 0),
    };
    selection.layer_width(&unsupervised, &hidden, n_outputs).map(|_| ()).map_err(|e| format!("--activations: {e}"))
}

/// `test` of a model without supervised layers: the RBM layers' activations on the data.
fn activations_only(args: &TestArgs, model: &SavedDbn, selection: ActivationSelection, path: &std::path::Path, output: Output) -> Result<(), String> {
    let dataset = load_model_data(&args.test_images, args.test_labels.as_deref(), &[], model, "--test-images")?;
    let mut file = AtomicFile::create(path)?;
    write_activations(&mut file, path, &CpuBackend, model, &dataset_inputs(&dataset), selection)?;
    file.commit()?;
    output.text(&format!("{}: {} cases; wrote {}", dataset.name, dataset.n_cases, path.display()));
    output.finish(&json!({ "cases": dataset.n_cases, "activations": path.display().to_string() }));
    Ok(())
}
