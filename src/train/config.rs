//! RBM training settings, as they cross the CLI (TOML/flags) and the web API (serde).
//!
//! Three starting points:
//! - `CdConfig::default()`: the measured default (docs/DEFAULTS.md has the sweep behind
//!   each value): mini-batches of 100, Hinton's fixed rate and momentum schedule, CD-k with
//!   k growing from 1 toward 10 (log-likelihood and samples need long chains; features for
//!   classification do not mind), a light sparsity target;
//! - `CdConfig::deep()`: Masters' DEEP program (*Deep Belief Nets in C++ and CUDA C*,
//!   ch. 3–4) exactly, the bracketed values in the field comments;
//! - `CdConfig::hinton()`: Hinton's practical guide (2010), plain CD-1.

use crate::model::VisibleUnits;
use serde::{Deserialize, Serialize};

/// How the learning rate and momentum evolve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// Masters: learning rate and momentum adapt to the cosine between successive gradients.
    Adaptive,
    /// Hinton's practical guide: constant learning rate; momentum `initial` for the first
    /// `momentum_switch_epoch` epochs, then `final`.
    Fixed,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CdConfig {
    pub n_hidden: usize,
    pub visible_units: VisibleUnits,
    /// Upper bound on epochs; the convergence tests usually stop training earlier.
    pub epochs: usize,
    /// Mini-batches per epoch [24]; ignored when `batch_size` is set.
    pub n_batches: usize,
    /// Cases per mini-batch; overrides `n_batches`.
    pub batch_size: Option<usize>,
    /// CD chain length: starts at `cd_k_start` [1], moves toward `cd_k_end` [4] by
    /// exponential smoothing at `cd_k_rate` [0.005] once per epoch, rounded.
    pub cd_k_start: usize,
    pub cd_k_end: usize,
    pub cd_k_rate: f32,
    /// Visible reconstructions use expectations (mean field) instead of samples [on].
    pub mean_field_visible: bool,
    /// Persistent CD (Tieleman 2008): negative chains carry over between batches.
    pub persistent: bool,
    pub n_persistent_chains: usize,
    /// L2 penalty on weights only, never biases [0.0001].
    pub weight_penalty: f32,
    /// Sparsity penalty [0.001] toward mean hidden activation `sparsity_target` [0.1].
    pub sparsity_penalty: f32,
    pub sparsity_target: f32,
    /// Random initialisations tried; the best reconstruction wins [50].
    pub init_trials: usize,
    /// Cases used to score each initialisation trial.
    pub init_cases: usize,
    pub schedule: Schedule,
    /// Starting learning rate (the adaptive schedule then keeps it in [0.001, 1]).
    pub learning_rate: f32,
    /// Adaptive: momentum starts here [0.1] and drifts toward `final_momentum` [0.9].
    /// Fixed: momentum before `momentum_switch_epoch`.
    pub initial_momentum: f32,
    pub final_momentum: f32,
    /// Fixed schedule only.
    pub momentum_switch_epoch: usize,
    /// Stop when max|increment| / max|weight| over an epoch falls below this [1e-5].
    pub convergence_tolerance: f32,
    /// Stop after this many epochs without a new minimum of that ratio [500].
    pub max_no_improvement: usize,
    /// Binarise each input batch by sampling (greedy layers above the first, with
    /// "greedy mean field" off).
    pub sample_inputs: bool,
    pub seed: u64,
}

impl Default for CdConfig {
    fn default() -> Self {
        CdConfig {
            epochs: 50,
            batch_size: Some(100),
            cd_k_start: 1,
            cd_k_end: 10,
            cd_k_rate: 0.05,
            weight_penalty: 0.0002,
            sparsity_penalty: 0.01,
            sparsity_target: 0.1,
            init_trials: 1,
            schedule: Schedule::Fixed,
            learning_rate: 0.1,
            initial_momentum: 0.5,
            final_momentum: 0.9,
            momentum_switch_epoch: 5,
            ..CdConfig::deep()
        }
    }
}

impl CdConfig {
    /// Masters' DEEP settings, as his program ships them.
    pub fn deep() -> Self {
        CdConfig {
            n_hidden: 100,
            visible_units: VisibleUnits::Bernoulli,
            epochs: 100,
            n_batches: 24,
            batch_size: None,
            cd_k_start: 1,
            cd_k_end: 4,
            cd_k_rate: 0.005,
            mean_field_visible: true,
            persistent: false,
            n_persistent_chains: 100,
            weight_penalty: 0.0001,
            sparsity_penalty: 0.001,
            sparsity_target: 0.1,
            init_trials: 50,
            init_cases: 1000,
            schedule: Schedule::Adaptive,
            learning_rate: 0.1,
            initial_momentum: 0.1,
            final_momentum: 0.9,
            momentum_switch_epoch: 5,
            convergence_tolerance: 1e-5,
            max_no_improvement: 500,
            sample_inputs: false,
            seed: 1,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub field: &'static str,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Beyond this the weight matrix alone would not fit a browser tab's wasm memory.
pub const MAX_HIDDEN: usize = 65_536;

pub(crate) fn check_range(field: &'static str, value: f32, low: f32, high: f32) -> Result<(), ConfigError> {
    if value.is_finite() && value >= low && value <= high {
        Ok(())
    } else {
        Err(ConfigError { field, message: format!("expected a finite number in [{low}, {high}], got {value}") })
    }
}

pub(crate) fn check_count(field: &'static str, value: usize, low: usize, high: usize) -> Result<(), ConfigError> {
    if (low..=high).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError { field, message: format!("expected a whole number from {low} to {high}, got {value}") })
    }
}

impl CdConfig {
    /// Hinton's recipe (A Practical Guide to Training RBMs, 2010): lr 0.1, momentum 0.5 then
    /// 0.9 after 5 epochs, weight cost 0.0002, batches of 100, plain CD-1, no sparsity.
    pub fn hinton() -> Self {
        CdConfig {
            schedule: Schedule::Fixed,
            learning_rate: 0.1,
            initial_momentum: 0.5,
            final_momentum: 0.9,
            momentum_switch_epoch: 5,
            weight_penalty: 0.0002,
            batch_size: Some(100),
            cd_k_start: 1,
            cd_k_end: 1,
            sparsity_penalty: 0.0,
            init_trials: 1,
            ..CdConfig::deep()
        }
    }

    /// Checks every field against `n_cases` training cases.
    pub fn validate(&self, n_cases: usize) -> Result<(), ConfigError> {
        check_count("n_hidden", self.n_hidden, 1, MAX_HIDDEN)?;
        check_count("epochs", self.epochs, 1, 1_000_000)?;
        match self.batch_size {
            // A batch larger than the data is the whole data (the default of 100 on a small file).
            Some(size) => check_count("batch_size", size, 1, 100_000_000)?,
            None => check_count("n_batches", self.n_batches, 1, n_cases.max(1))
                .map_err(|e| ConfigError { message: format!("{} (there are {n_cases} cases; more batches than cases leaves some empty)", e.message), ..e })?,
        }
        check_count("cd_k_start", self.cd_k_start, 1, 1000)?;
        check_count("cd_k_end", self.cd_k_end, 1, 1000)?;
        check_range("cd_k_rate", self.cd_k_rate, 0.0, 1.0)?;
        if self.persistent {
            check_count("n_persistent_chains", self.n_persistent_chains, 1, 100_000)?;
        }
        check_range("weight_penalty", self.weight_penalty, 0.0, 1.0)?;
        check_range("sparsity_penalty", self.sparsity_penalty, 0.0, 10.0)?;
        check_range("sparsity_target", self.sparsity_target, 1e-4, 1.0 - 1e-4)?;
        check_count("init_trials", self.init_trials, 1, 10_000)?;
        check_count("init_cases", self.init_cases, 1, usize::MAX)?;
        check_range("learning_rate", self.learning_rate, 1e-6, 10.0)?;
        check_range("initial_momentum", self.initial_momentum, 0.0, 0.999)?;
        check_range("final_momentum", self.final_momentum, 0.0, 0.999)?;
        check_range("convergence_tolerance", self.convergence_tolerance, 0.0, 1.0)?;
        check_count("max_no_improvement", self.max_no_improvement, 1, usize::MAX)?;
        Ok(())
    }

    /// Cases per batch for `n_cases` cases: `batch_size`, or the cases split into
    /// `n_batches` near-equal batches.
    pub fn cases_per_batch(&self, n_cases: usize) -> usize {
        self.batch_size.unwrap_or_else(|| n_cases.div_ceil(self.n_batches.max(1))).min(n_cases).max(1)
    }
}
