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

use crate::backend_choice::{self, BackendChoice};
use crate::input::load_model_input;
use crate::output::Output;
use clap::{Args, ValueEnum};
use deepbelief::engine::Engine;
use deepbelief::data::split::spread_cases;
use deepbelief::data::Dataset;
use deepbelief::eval::{base_rate_visible_bias, AisConfig, AisSchedule};
use deepbelief::format::autoencoder::{read_model_file, ModelFile};
use deepbelief::format::{model_file_path, SavedDbn};
use deepbelief::model::VisibleUnits;
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
    /// Compute backend: gpu (device-resident evaluation, propagation and AIS), cpu, or auto
    /// (a hardware GPU when one is found, else the CPU).
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
    let model = match read_model_file(&args.model).map_err(|e| e.to_string())? {
        ModelFile::Dbn(model) => *model,
        ModelFile::Autoencoder(model) => return crate::autoencoder_model::eval(&args, *model, &model_file_path(&args.model).display().to_string()),
    };
    let all = load_model_input(&args.images, &model, "--images")?;
    if model.is_plain_mlp() {
        return plain_mlp(&args, &model, all.n_cases, output);
    }
    let data = all.subset(&spread_cases(all.n_cases, args.max_cases.unwrap_or(usize::MAX)));
    let engine = backend_choice::engine(args.backend)?;
    let adapter = engine.adapter();
    let layers = &model.dbn.layers;
    let first = &layers[0];
    output.text(&format!(
        "{}: {} cases; model {:?}; computing on {}",
        args.images.display(),
        data.n_cases,
        model.dbn.sizes(),
        engine.describe()
    ));
    let figures = pollster::block_on(engine.stack_figures(&model.dbn, &data, args.binarize))?;
    for (k, error) in figures.layer_errors.iter().enumerate() {
        output.text(&format!("layer {}: reconstruction error {error:.6} (mean field, per input)", k + 1));
    }
    let free_energy = figures.free_energy;
    output.text(&format!(
        "free energy of layer 1: {free_energy:.4} (mean over {} cases{})",
        data.n_cases,
        if args.binarize { ", binarised at 0.5" } else { "" }
    ));
    if let Some(f) = figures.top_free_energy {
        output.text(&format!("free energy of the top layer on the data propagated up: {f:.4}"));
    }

    let ais = match first.visible_units {
        VisibleUnits::Bernoulli => Some(run_ais(&args, &model, &data, &engine, free_energy, output)?),
        VisibleUnits::Gaussian => {
            output.text("AIS: not computed, the first layer has Gaussian visible units (the base-rate start needs binary ones)");
            None
        }
    };
    let field = |name: &str| ais.as_ref().map_or(Value::Null, |a| a[name].clone());
    output.finish(&json!({
        "recon_error": figures.layer_errors[0],
        "free_energy": free_energy,
        "ais_logz": field("log_z"),
        "ais_loglik": field("log_likelihood"),
        "ais_logz_low": field("log_z_low"),
        "ais_logz_high": field("log_z_high"),
        "ais_log_weights_std": field("log_weights_std"),
        "ais_base_rate_from": field("base_rate_from"),
        "ais_runs": args.ais_runs,
        "ais_betas": args.ais_betas,
        "layer_recon_errors": figures.layer_errors,
        "top_free_energy": figures.top_free_energy,
        "cases": data.n_cases,
        "binarized": args.binarize,
        "backend": if adapter.is_some() { "gpu" } else { "cpu" },
        "adapter": adapter,
    }));
    Ok(())
}

/// AIS for the first RBM; returns its figures as a JSON object.
fn run_ais(args: &EvalArgs, model: &SavedDbn, data: &Dataset, engine: &Engine, free_energy: f64, output: Output) -> Result<Value, String> {
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
    let base = base_rate_visible_bias(&means);
    let estimate = pollster::block_on(engine.ais_log_partition(rbm, &base, &config)).map_err(|e| format!("--ais-runs/--ais-betas: {e}"))?;
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

/// A plain MLP (zero RBM layers) has no RBM whose reconstructions, free energy or partition
/// function eval could measure: the data are checked against its inputs, and `test` is named
/// for its supervised figures.
fn plain_mlp(args: &EvalArgs, model: &SavedDbn, n_cases: usize, output: Output) -> Result<(), String> {
    let sizes = model.supervised.as_ref().map(|saved| saved.network.sizes()).unwrap_or_default();
    output.text(&format!(
        "{}: {n_cases} cases; model: a plain MLP {sizes:?} (no RBM layers): no reconstruction error, free energy or AIS to compute; `deepbelief test` scores its supervised layers",
        args.images.display()
    ));
    output.finish(&json!({ "plain_mlp": true, "cases": n_cases, "rbm_layers": 0, "supervised_layers": sizes }));
    Ok(())
}
