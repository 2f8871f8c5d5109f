//! Per-epoch measurements beyond what the training pass itself yields: deterministic
//! reconstruction (MSE and cross-entropy), mean free energy of training versus held-out
//! cases (a widening gap is the classic sign of overfitting, Hinton 2010 §6), the
//! pseudo-log-likelihood, and each hidden unit's mean activation and skewness (DEEP.LOG).
//! Computed on at most `max_cases` cases so the cost stays a small fraction of an epoch.

use crate::backend::Backend;
use crate::data::Dataset;
use crate::eval::{hidden_unit_statistics, mean_free_energy, pseudo_log_likelihood, reconstruction_errors, UnitStats};
use crate::model::Rbm;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct EpochMetrics {
    pub recon_mse: f64,
    /// `None` for Gaussian visible units.
    pub recon_cross_entropy: Option<f64>,
    pub free_energy_train: f64,
    pub free_energy_held_out: Option<f64>,
    /// `None` for Gaussian visible units.
    pub pseudo_log_likelihood: Option<f64>,
    pub hidden_units: Vec<UnitStats>,
}

/// The pseudo-log-likelihood's seed after `epoch` epochs of a layer seeded `layer_seed`: every
/// backend measures an epoch with it, so their figures agree.
pub fn monitor_seed(layer_seed: u64, epoch: usize) -> u64 {
    layer_seed ^ epoch as u64
}

pub fn measure_epoch(backend: &dyn Backend, rbm: &Rbm, train: &Dataset, held_out: Option<&Dataset>, max_cases: usize, seed: u64) -> EpochMetrics {
    let recon = reconstruction_errors(backend, rbm, train, max_cases);
    EpochMetrics {
        recon_mse: recon.mean_squared_error,
        recon_cross_entropy: recon.cross_entropy,
        free_energy_train: mean_free_energy(backend, rbm, train, max_cases),
        free_energy_held_out: held_out.map(|data| mean_free_energy(backend, rbm, data, max_cases)),
        pseudo_log_likelihood: pseudo_log_likelihood(backend, rbm, train, max_cases, seed).ok(),
        hidden_units: hidden_unit_statistics(backend, rbm, train, max_cases),
    }
}
