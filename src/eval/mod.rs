//! Evaluating RBMs: how good is a model, beyond "the reconstruction error went down"?
//!
//! - `free_energy`: F(v), the quantity every other measure is built from;
//! - `exact`: log Z, log-likelihood and its exact gradient for models with ≤ 20 units on one
//!   side, by enumerating that side;
//! - `ais`: annealed importance sampling (Salakhutdinov & Murray 2008) for log Z of models
//!   too large to enumerate;
//! - `metrics`: the cheap per-epoch numbers the trainer and the page show (reconstruction
//!   errors, pseudo-log-likelihood, hidden unit statistics as in Masters' DEEP.LOG).
//!
//! Everything accumulates in f64: the quantities are sums of thousands of terms whose
//! differences matter (a log-likelihood of −100 nats compared to 0.1 nats).

pub mod ais;
pub mod exact;
pub mod free_energy;
pub mod metrics;

pub use ais::{ais_log_likelihood, ais_log_partition, base_rate_visible_bias, AisConfig, AisEstimate, AisSchedule};
pub use exact::{exact_gradient, exact_log_likelihood, exact_log_partition, log_partition_by_enumerating, EnumeratedSide, LogLikelihoodGradient, MAX_ENUMERATED_UNITS};
pub use free_energy::{free_energy, free_energy_f64, mean_free_energy, softplus};
pub use metrics::{hidden_unit_statistics, pseudo_log_likelihood, reconstruction_errors, ReconstructionErrors, UnitStats};

use crate::data::Dataset;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum EvalError {
    /// Exact computation needs one side small enough to enumerate.
    TooManyStates { n_visible: usize, n_hidden: usize, max_enumerated: usize },
    /// The measure is defined only for binary visible units.
    GaussianVisibleUnits { measure: &'static str },
    InvalidConfig(String),
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::TooManyStates { n_visible, n_hidden, max_enumerated } => write!(
                f,
                "exact evaluation enumerates one side of the RBM, but both sides are too large \
                 ({n_visible} visible, {n_hidden} hidden; at most {max_enumerated} can be enumerated)"
            ),
            EvalError::GaussianVisibleUnits { measure } => write!(f, "{measure} is defined only for binary (Bernoulli) visible units"),
            EvalError::InvalidConfig(message) => write!(f, "invalid evaluation settings: {message}"),
        }
    }
}

impl std::error::Error for EvalError {}

/// Cases per backend call: large enough for efficient matrix products, small enough that
/// the hidden activations of a 2000-unit layer stay a few MB.
pub(crate) const BATCH_CASES: usize = 256;

/// Calls `visit(visible)` for the given cases, `BATCH_CASES` at a time, with the cases'
/// values one row per case.
pub(crate) fn for_each_batch(data: &Dataset, cases: &[usize], mut visit: impl FnMut(&[f32])) {
    let mut visible = Vec::new();
    for batch in cases.chunks(BATCH_CASES) {
        visible.resize(batch.len() * data.n_inputs, 0.0);
        data.gather_into(batch, &mut visible);
        visit(&visible);
    }
}

/// A streaming log-sum-exp: `log Σ exp(x)` over values added one at a time, rescaling the
/// running sum whenever a new maximum arrives so no `exp` overflows.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogSumExp {
    max: f64,
    /// Σ exp(x − max).
    scaled_sum: f64,
}

impl LogSumExp {
    pub(crate) fn new() -> Self {
        LogSumExp { max: f64::NEG_INFINITY, scaled_sum: 0.0 }
    }

    pub(crate) fn add(&mut self, x: f64) {
        if x == f64::NEG_INFINITY {
            return;
        }
        if x <= self.max {
            self.scaled_sum += (x - self.max).exp();
        } else {
            self.scaled_sum = self.scaled_sum * (self.max - x).exp() + 1.0;
            self.max = x;
        }
    }

    pub(crate) fn merge(&mut self, other: LogSumExp) {
        if other.max == f64::NEG_INFINITY {
            return;
        }
        if other.max <= self.max {
            self.scaled_sum += other.scaled_sum * (other.max - self.max).exp();
        } else {
            self.scaled_sum = self.scaled_sum * (self.max - other.max).exp() + other.scaled_sum;
            self.max = other.max;
        }
    }

    pub(crate) fn value(&self) -> f64 {
        self.max + self.scaled_sum.ln()
    }
}
