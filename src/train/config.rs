//! Training hyperparameters, as they cross the CLI and the web API (serde), with validation
//! that names the offending field.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CdConfig {
    /// Number of hidden units.
    pub n_hidden: usize,
    pub epochs: usize,
    /// Cases per mini-batch.
    pub batch_size: usize,
    pub learning_rate: f32,
    /// Momentum for the first `momentum_switch_epoch` epochs, then `final_momentum`
    /// (Hinton's practical guide: low momentum while the weights are still far off).
    pub initial_momentum: f32,
    pub final_momentum: f32,
    pub momentum_switch_epoch: usize,
    /// L2 penalty on weights only (never biases).
    pub weight_penalty: f32,
    /// Visible reconstructions use probabilities (mean field) instead of binary samples.
    pub mean_field_visible: bool,
    pub seed: u64,
}

impl Default for CdConfig {
    fn default() -> Self {
        CdConfig {
            n_hidden: 100,
            epochs: 5,
            batch_size: 100,
            learning_rate: 0.1,
            initial_momentum: 0.5,
            final_momentum: 0.9,
            momentum_switch_epoch: 5,
            weight_penalty: 0.0002,
            mean_field_visible: true,
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

impl CdConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field, message: String| Err(ConfigError { field, message });
        if self.n_hidden == 0 || self.n_hidden > MAX_HIDDEN {
            return bad("n_hidden", format!("expected 1 to {MAX_HIDDEN} hidden units, got {}", self.n_hidden));
        }
        if self.batch_size == 0 {
            return bad("batch_size", "expected at least 1 case per batch, got 0".into());
        }
        let in_range = |field, value: f32, low: f32, high: f32| {
            if value.is_finite() && value >= low && value <= high {
                Ok(())
            } else {
                bad(field, format!("expected a finite number in [{low}, {high}], got {value}"))
            }
        };
        in_range("learning_rate", self.learning_rate, 1e-9, 100.0)?;
        in_range("initial_momentum", self.initial_momentum, 0.0, 0.999)?;
        in_range("final_momentum", self.final_momentum, 0.0, 0.999)?;
        in_range("weight_penalty", self.weight_penalty, 0.0, 1.0)?;
        Ok(())
    }

    pub fn momentum_for_epoch(&self, epoch: usize) -> f32 {
        if epoch < self.momentum_switch_epoch {
            self.initial_momentum
        } else {
            self.final_momentum
        }
    }
}
