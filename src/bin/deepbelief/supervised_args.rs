//! `deepbelief train`'s flags for the supervised stage and fine-tuning, laid over the
//! `[supervised]` table of the settings file (a flag always wins). The stage runs when the
//! training data have labels (`--train-labels`) or targets (`--targets`).

use clap::{Args, ValueEnum};
use deepbelief::report::classification::ActivationSelection;
use deepbelief::supervised::{Optimizer, OutputKind, SupervisedConfig};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SupervisedArgs {
    /// Test images (IDX) or a test database, evaluated after training.
    #[arg(long, value_name = "FILE")]
    pub test_images: Option<PathBuf>,
    /// IDX labels of --test-images.
    #[arg(long, value_name = "FILE", requires = "test_images")]
    pub test_labels: Option<PathBuf>,
    /// Logistic hidden layers between the RBM features and the outputs, e.g. 100 or 200,50;
    /// empty ("") for none.
    #[arg(long, value_name = "SIZES", value_parser = parse_optional_sizes)]
    pub supervised_layers: Option<OptionalSizes>,
    /// Output units: softmax (log-likelihood; the default with labels), linear (mean
    /// squared error; the default with database targets) or logistic (Toman's all-sigmoid
    /// nets: half the squared error per case).
    #[arg(long, value_enum)]
    pub output: Option<OutputChoice>,
    /// Backpropagate through the RBM weights too, after the supervised stage.
    #[arg(long)]
    pub fine_tune: bool,
    /// cg: full-batch conjugate gradient; sgd: mini-batch gradient descent with momentum;
    /// Toman's and FANN's full-batch rules (docs/TOMAN.md): adaptive (per-weight steps with
    /// robust-training rollback), rprop (iRprop+), rprop-fann (FANN's iRprop−), quickprop,
    /// bold-driver, backprop, incremental, levenberg-marquardt (small nets, linear or logistic
    /// outputs, no penalty). The rules run --supervised-max-iters epochs, or to --target-error.
    #[arg(long, value_enum)]
    pub optimizer: Option<OptimizerChoice>,
    /// Step rules: stop once the error (RMS/2 for logistic outputs, else the criterion) is
    /// at most this (0: never).
    #[arg(long, value_name = "E")]
    pub target_error: Option<f64>,
    /// Adaptive step: rate factor when a gradient keeps its sign [1.3].
    #[arg(long, value_name = "F")]
    pub step_up: Option<f64>,
    /// Adaptive step: rate factor when a gradient changes sign [0.7].
    #[arg(long, value_name = "F")]
    pub step_down: Option<f64>,
    /// The optimizer of fine-tuning, when it differs from --optimizer.
    #[arg(long, value_enum)]
    pub fine_tune_optimizer: Option<OptimizerChoice>,
    /// Simulated-annealing trials for the starting weights (0: small random weights).
    #[arg(long, value_name = "N")]
    pub anneal_iters: Option<usize>,
    /// Weight penalty PenFac of the supervised criterion (PenFac · Σw² / n_weights) [1 with
    /// labels, 0 with database targets; --preset deep: 0].
    #[arg(long, value_name = "P")]
    pub supervised_penalty: Option<f64>,
    /// Most CG iterations or SGD epochs of the supervised stage.
    #[arg(long, value_name = "N")]
    pub supervised_max_iters: Option<usize>,
    /// Most CG iterations or SGD epochs of fine-tuning.
    #[arg(long, value_name = "N")]
    pub fine_tune_max_iters: Option<usize>,
    /// Relative change in the criterion that stops the supervised stage [0.00005].
    #[arg(long, value_name = "TOL")]
    pub supervised_tolerance: Option<f64>,
    /// Relative change in the criterion that stops fine-tuning [0.00001].
    #[arg(long, value_name = "TOL")]
    pub fine_tune_tolerance: Option<f64>,
    /// SGD: learning rate of the supervised stage.
    #[arg(long, value_name = "RATE")]
    pub supervised_learning_rate: Option<f64>,
    /// SGD: learning rate of fine-tuning.
    #[arg(long, value_name = "RATE")]
    pub fine_tune_learning_rate: Option<f64>,
    /// SGD fine-tuning: fraction of inputs dropped per case and batch (dropout; 0 = off).
    #[arg(long, value_name = "RATE")]
    pub fine_tune_input_dropout: Option<f64>,
    /// SGD fine-tuning: fraction of logistic hidden units dropped per case and batch.
    #[arg(long, value_name = "RATE")]
    pub fine_tune_hidden_dropout: Option<f64>,
    /// SGD: the learning rate falls linearly to this fraction of its start by the last epoch.
    #[arg(long, value_name = "FRACTION")]
    pub sgd_final_rate: Option<f64>,
    /// SGD: momentum.
    #[arg(long, value_name = "M")]
    pub supervised_momentum: Option<f64>,
    /// SGD: cases per mini-batch.
    #[arg(long, value_name = "N")]
    pub supervised_batch_size: Option<usize>,
    /// SGD fine-tuning of images: random shifts of up to this many pixels each way (0 = off).
    #[arg(long, value_name = "PIXELS")]
    pub fine_tune_shift: Option<usize>,
    /// SGD: share of the training cases held out (stratified by class) to pick the epoch
    /// whose weights are kept; 0 trains on every case to the last epoch.
    #[arg(long, value_name = "FRACTION")]
    pub validation_fraction: Option<f64>,
    /// SGD with a held-out share: epochs without a new best held-out score before stopping.
    #[arg(long, value_name = "EPOCHS")]
    pub patience: Option<usize>,
    /// Never solve linear output weights by SVD during annealing.
    #[arg(long)]
    pub no_svd: bool,
    /// Write activations.txt for SECTION:LAYER[:NEURON] (unsupervised, supervised or
    /// output; layers and neurons numbered from 1, as in DEEP) over the training cases, e.g.
    /// output:1 or unsupervised:1:5. Checked before training; models without labels or
    /// targets take unsupervised selections only.
    #[arg(long, value_name = "SELECTION")]
    pub activations: Option<ActivationSelection>,
}

#[derive(Clone, Debug)]
pub struct OptionalSizes(pub Vec<usize>);

fn parse_optional_sizes(text: &str) -> Result<OptionalSizes, String> {
    if text.trim().is_empty() {
        return Ok(OptionalSizes(Vec::new()));
    }
    text.split(',')
        .map(|part| match part.trim().parse::<usize>() {
            Ok(0) | Err(_) => Err(format!("\"{part}\" is not a layer size (expected whole numbers ≥ 1 separated by commas, or \"\" for none)")),
            Ok(size) => Ok(size),
        })
        .collect::<Result<_, _>>()
        .map(OptionalSizes)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputChoice {
    Softmax,
    Linear,
    Logistic,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OptimizerChoice {
    Cg,
    Sgd,
    Adaptive,
    Rprop,
    RpropFann,
    Quickprop,
    BoldDriver,
    Backprop,
    Incremental,
    LevenbergMarquardt,
}

/// The supervised settings, merged and checked.
#[derive(Clone, Debug)]
pub struct SupervisedSettings {
    pub config: SupervisedConfig,
    pub test_images: Option<PathBuf>,
    pub test_labels: Option<PathBuf>,
    pub activations: Option<ActivationSelection>,
}

impl SupervisedArgs {
    /// `file` is the settings file's `[supervised]` table; `database_targets` picks the
    /// default output type; `seed` is the run's seed, used unless the file sets one.
    /// `preset`: the settings to start from (`Preset::supervised`) where the file gives none.
    pub fn settings(&self, file: Option<SupervisedConfig>, database_targets: bool, seed: u64, preset: SupervisedConfig) -> Result<SupervisedSettings, String> {
        let from_file = file.is_some();
        let mut config = file.unwrap_or(preset);
        if !from_file {
            config.seed = seed;
            config.output = if database_targets { OutputKind::Linear } else { OutputKind::SoftMax };
            // The penalty was measured on classes (SoftMax on MNIST features); a least-squares
            // fit of database targets keeps DEEP's unpenalised criterion.
            if database_targets {
                config.weight_penalty = 0.0;
            }
        }
        fn set<T: Copy>(flag: Option<T>, field: &mut T) {
            if let Some(value) = flag {
                *field = value;
            }
        }
        if let Some(sizes) = &self.supervised_layers {
            config.hidden = sizes.0.clone();
        }
        if let Some(output) = self.output {
            config.output = match output {
                OutputChoice::Softmax => OutputKind::SoftMax,
                OutputChoice::Linear => OutputKind::Linear,
                OutputChoice::Logistic => OutputKind::Logistic,
            };
        }
        if self.fine_tune {
            config.fine_tune = true;
        }
        let optimizer = |choice: OptimizerChoice| match choice {
            OptimizerChoice::Cg => Optimizer::ConjugateGradient,
            OptimizerChoice::Sgd => Optimizer::Sgd,
            OptimizerChoice::Adaptive => Optimizer::AdaptiveStep,
            OptimizerChoice::Rprop => Optimizer::Rprop,
            OptimizerChoice::RpropFann => Optimizer::RpropMinus,
            OptimizerChoice::Quickprop => Optimizer::Quickprop,
            OptimizerChoice::BoldDriver => Optimizer::BoldDriver,
            OptimizerChoice::Backprop => Optimizer::Backprop,
            OptimizerChoice::Incremental => Optimizer::Incremental,
            OptimizerChoice::LevenbergMarquardt => Optimizer::LevenbergMarquardt,
        };
        if let Some(choice) = self.optimizer {
            config.optimizer = optimizer(choice);
        }
        if let Some(choice) = self.fine_tune_optimizer {
            config.fine_tune_optimizer = Some(optimizer(choice));
        }
        set(self.anneal_iters, &mut config.anneal_iterations);
        set(self.supervised_penalty, &mut config.weight_penalty);
        set(self.supervised_max_iters, &mut config.max_iterations);
        set(self.fine_tune_max_iters, &mut config.fine_tune_max_iterations);
        set(self.supervised_tolerance, &mut config.tolerance);
        set(self.fine_tune_tolerance, &mut config.fine_tune_tolerance);
        set(self.supervised_learning_rate, &mut config.learning_rate);
        set(self.fine_tune_learning_rate, &mut config.fine_tune_learning_rate);
        set(self.supervised_momentum, &mut config.momentum);
        set(self.sgd_final_rate, &mut config.final_rate_fraction);
        set(self.fine_tune_input_dropout, &mut config.fine_tune_input_dropout);
        set(self.fine_tune_hidden_dropout, &mut config.fine_tune_hidden_dropout);
        set(self.supervised_batch_size, &mut config.batch_size);
        set(self.fine_tune_shift, &mut config.fine_tune_shift);
        set(self.validation_fraction, &mut config.validation_fraction);
        set(self.patience, &mut config.patience);
        set(self.target_error, &mut config.step_rules.target_error);
        set(self.step_up, &mut config.step_rules.up);
        set(self.step_down, &mut config.step_rules.down);
        if self.no_svd {
            config.allow_svd = false;
        }
        config.validate().map_err(|e| format!("invalid setting {} ({}; [supervised] {} in a settings file): {}", e.field, flag_for(e.field), e.field, e.message))?;
        Ok(SupervisedSettings { config, test_images: self.test_images.clone(), test_labels: self.test_labels.clone(), activations: self.activations })
    }
}

/// The flag that sets a `SupervisedConfig` field, by the name its validation reports.
fn flag_for(field: &str) -> &'static str {
    match field {
        "hidden" => "--supervised-layers",
        "weight_penalty" => "--supervised-penalty",
        "tolerance" => "--supervised-tolerance",
        "max_iterations" => "--supervised-max-iters",
        "anneal_iterations" => "--anneal-iters",
        "fine_tune_tolerance" => "--fine-tune-tolerance",
        "fine_tune_max_iterations" => "--fine-tune-max-iters",
        "batch_size" => "--supervised-batch-size",
        "learning_rate" => "--supervised-learning-rate",
        "momentum" => "--supervised-momentum",
        "fine_tune_learning_rate" => "--fine-tune-learning-rate",
        "final_rate_fraction" => "--sgd-final-rate",
        "fine_tune_input_dropout" => "--fine-tune-input-dropout",
        "fine_tune_hidden_dropout" => "--fine-tune-hidden-dropout",
        "fine_tune_shift" => "--fine-tune-shift",
        "validation_fraction" => "--validation-fraction",
        "patience" => "--patience",
        "step_rules.target_error" => "--target-error",
        "step_rules.up" => "--step-up",
        "step_rules.down" => "--step-down",
        _ => "no flag",
    }
}
