//! `deepbelief eval`: how well a model fits data.
//!
//! - reconstruction error: mean-field mean squared error per input, for every layer on the
//!   data propagated up to it (`recon_error` is the first layer's);
//! - free energy: mean F(v) of the FIRST RBM on the data (on the binarised data with
//!   `--binarize`), so that `ais_loglik = −free_energy − ais_logz` holds exactly; stacks also
//!   get `top_free_energy`, the top RBM's mean F on the data propagated up;
//! - AIS (Salakhutdinov & Murray 2008): log Z of the first RBM from a base-rate model whose
//!   visible biases are the logits of the training data's means (saved in the model), and the
//!   log-likelihood it implies. For a stack this is the first RBM's, not the DBN's, bound.

use crate::backend_choice::BackendChoice;
use crate::input::{load_model_input, spread_cases};
use crate::output::Output;
use clap::{Args, ValueEnum};
use deepbelief::backend::Backend;
use deepbelief::data::{CaseValues, Dataset};
use deepbelief::eval::{ais_log_partition, base_rate_visible_bias, mean_free_energy, reconstruction_errors, AisConfig, AisSchedule};
use deepbelief::model::format::{read_model, SavedDbn};
use deepbelief::model::VisibleUnits;
use deepbelief::train::greedy::propagate_dataset;
use serde_json::{json, Value};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// Model folder (reads model.json) or model file.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// Data to evaluate on (IDX images, or a database for a model trained on one).
    #[arg(long, value_name = "FILE")]
    pub images: PathBuf,
    /// AIS runs (the paper uses 100).
    #[arg(long, value_name = "R", default_value_t = 100)]
    pub ais_runs: usize,
    /// AIS annealing steps, β_1 … β_K (the paper uses 14500).
    #[arg(long, value_name = "B", default_value_t = 1000)]
    pub ais_betas: usize,
    /// Spacing of the inverse temperatures.
    #[arg(long, value_enum, default_value_t = ScheduleChoice::Paper)]
    pub ais_schedule: ScheduleChoice,
    /// Evaluate at most this many cases, spread evenly through the file (default: all).
    #[arg(long, value_name = "N")]
    pub max_cases: Option<usize>,
    /// Binarise the data at 0.5 for the free energy and the AIS log-likelihood
    /// (Salakhutdinov & Murray's convention for MNIST).
    #[arg(long)]
    pub binarize: bool,
    /// Seed of the AIS runs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Compute backend (this build computes on the CPU).
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// Print the final figures as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScheduleChoice {
    /// β_k = k / K.
    Linear,
    /// The paper's three uniform segments, densest near β = 1.
    Paper,
}

pub fn run(args: EvalArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    if args.max_cases == Some(0) {
        return Err("--max-cases is 0, expected at least 1 case".into());
    }
    let backend = args.backend.resolve()?;
    let backend = backend.as_ref();
    let model = read_model(&args.model).map_err(|e| e.to_string())?;
    let all = load_model_input(&args.images, &model, "--images")?;
    let data = all.subset(&spread_cases(all.n_cases, args.max_cases.unwrap_or(usize::MAX)));
    let layers = &model.dbn.layers;
    let first = &layers[0];
    output.text(&format!("{}: {} cases; model {:?}", args.images.display(), data.n_cases, model.dbn.sizes()));

    // Per layer, on the data propagated up to it.
    let mut layer_errors = Vec::new();
    let mut layer_input = data.clone();
    for (k, rbm) in layers.iter().enumerate() {
        let errors = reconstruction_errors(backend, rbm, &layer_input, usize::MAX);
        layer_errors.push(errors.mean_squared_error);
        output.text(&format!("layer {}: reconstruction error {:.6} (mean field, per input)", k + 1, errors.mean_squared_error));
        if k + 1 < layers.len() {
            layer_input = propagate_dataset(backend, rbm, &layer_input);
        }
    }
    let top_free_energy = (layers.len() > 1).then(|| mean_free_energy(backend, layers.last().expect("layers"), &layer_input, usize::MAX));

    let scored = if args.binarize { binarised(&data) } else { data.clone() };
    let free_energy = mean_free_energy(backend, first, &scored, usize::MAX);
    output.text(&format!(
        "free energy of layer 1: {free_energy:.4} (mean over {} cases{})",
        data.n_cases,
        if args.binarize { ", binarised at 0.5" } else { "" }
    ));
    if let Some(f) = top_free_energy {
        output.text(&format!("free energy of the top layer on the data propagated up: {f:.4}"));
    }

    let ais = match first.visible_units {
        VisibleUnits::Bernoulli => Some(run_ais(&args, &model, &data, backend, free_energy, output)?),
        VisibleUnits::Gaussian => {
            output.text("AIS: not computed, the first layer has Gaussian visible units (the base-rate start needs binary ones)");
            None
        }
    };
    let field = |name: &str| ais.as_ref().map_or(Value::Null, |a| a[name].clone());
    output.finish(&json!({
        "recon_error": layer_errors[0],
        "free_energy": free_energy,
        "ais_logz": field("log_z"),
        "ais_loglik": field("log_likelihood"),
        "ais_logz_low": field("log_z_low"),
        "ais_logz_high": field("log_z_high"),
        "ais_log_weights_std": field("log_weights_std"),
        "ais_base_rate_from": field("base_rate_from"),
        "ais_runs": args.ais_runs,
        "ais_betas": args.ais_betas,
        "layer_recon_errors": layer_errors,
        "top_free_energy": top_free_energy,
        "cases": data.n_cases,
        "binarized": args.binarize,
    }));
    Ok(())
}

/// AIS for the first RBM; returns its figures as a JSON object.
fn run_ais(args: &EvalArgs, model: &SavedDbn, data: &Dataset, backend: &dyn Backend, free_energy: f64, output: Output) -> Result<Value, String> {
    let (rbm, n_layers) = (&model.dbn.layers[0], model.dbn.layers.len());
    // Models saved before the means were recorded (format version 1) fall back on the
    // evaluation data's means: a slightly worse start, the same target.
    let (means, base_rate_from) = match &model.visible_means {
        Some(means) => (means.clone(), "training_means"),
        None => (data.input_means(), "evaluation_data"),
    };
    let schedule = match args.ais_schedule {
        ScheduleChoice::Linear => AisSchedule::Linear,
        ScheduleChoice::Paper => AisSchedule::Paper,
    };
    let config = AisConfig { runs: args.ais_runs, betas: args.ais_betas, schedule, seed: args.seed };
    let estimate = ais_log_partition(backend, rbm, &base_rate_visible_bias(&means), &config).map_err(|e| format!("--ais-runs/--ais-betas: {e}"))?;
    // What `eval::ais_log_likelihood` computes, without a second pass for the free energy.
    let log_likelihood = -free_energy - estimate.log_z;
    let stack_note = if n_layers > 1 { format!(" (the first of {n_layers} RBMs: AIS scores this RBM alone, not the DBN)") } else { String::new() };
    output.text(&format!(
        "AIS of layer 1{stack_note}: log Z {:.4} (±3σ: {:.4} … {:.4}; {} runs, {} steps), log-likelihood {:.4} nats per case",
        estimate.log_z, estimate.log_z_low, estimate.log_z_high, config.runs, config.betas, log_likelihood
    ));
    if base_rate_from == "evaluation_data" {
        output.text("  (the model file holds no training means, so the base-rate model uses the evaluation data's)");
    }
    Ok(json!({
        "log_z": estimate.log_z,
        "log_likelihood": log_likelihood,
        "log_z_low": estimate.log_z_low,
        "log_z_high": estimate.log_z_high,
        "log_weights_std": estimate.log_weights_std,
        "base_rate_from": base_rate_from,
    }))
}

/// Each value set to 1 above 0.5 and to 0 otherwise.
fn binarised(data: &Dataset) -> Dataset {
    let mut values = vec![0.0f32; data.n_cases * data.n_inputs];
    for (k, row) in values.chunks_exact_mut(data.n_inputs).enumerate() {
        data.case_into(k, row);
        for x in row.iter_mut() {
            *x = if *x > 0.5 { 1.0 } else { 0.0 };
        }
    }
    Dataset { values: CaseValues::Floats(values), ..data.clone() }
}
