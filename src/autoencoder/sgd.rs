//! Mini-batch gradient descent with momentum on the sparse autoencoder cost. Each step's
//! `ρ̂` is the mean over its mini-batch, not the whole data (the exact cost needs every
//! case for `ρ̂`; with batches of a few hundred cases the estimate is close, and this is
//! the usual online form). Cases are shuffled every epoch by a generator seeded from the
//! seed, as every other shuffle in the crate.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::cost::{cost_and_gradient, CostError, CostSettings, Workspace};
use super::model::Autoencoder;
use crate::backend::Backend;

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SgdSettings {
    pub epochs: usize,
    pub batch_size: usize,
    pub learning_rate: f64,
    pub momentum: f64,
    pub seed: u64,
}

impl Default for SgdSettings {
    fn default() -> Self {
        SgdSettings { epochs: 100, batch_size: 100, learning_rate: 0.1, momentum: 0.9, seed: 1 }
    }
}

/// How the run went: the mean mini-batch `J` of each epoch.
#[derive(Clone, Debug, PartialEq)]
pub struct SgdOutcome {
    pub epoch_costs: Vec<f64>,
    pub cancelled: bool,
}

/// A step's cost was not finite: the epoch, the step within it and the cost's error (which
/// names the NaN). The model holds the parameters that step was evaluated at.
#[derive(Clone, Debug, PartialEq)]
pub struct SgdDiverged {
    pub epoch: usize,
    pub step: usize,
    pub error: CostError,
}

/// Trains `model` on `data` (rows × n_visible). `on_epoch(epoch, mean J)` runs after each
/// epoch; returning `false` stops.
pub fn train(backend: &dyn Backend, model: &mut Autoencoder, data: &[f32], settings: &CostSettings, sgd: &SgdSettings, on_epoch: &mut dyn FnMut(usize, f64) -> bool) -> Result<SgdOutcome, SgdDiverged> {
    let v = model.n_visible;
    let rows = data.len() / v.max(1);
    let batch_size = sgd.batch_size.clamp(1, rows.max(1));
    let mut order: Vec<usize> = (0..rows).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(sgd.seed);
    let mut work = Workspace::new();
    let mut gradient = Autoencoder::zeros(v, model.n_hidden);
    let mut velocity = vec![0.0f64; model.n_params()];
    let mut params = model.to_params();
    let mut flat_gradient = vec![0.0f64; model.n_params()];
    let mut batch = Vec::with_capacity(batch_size * v);
    let mut epoch_costs = Vec::with_capacity(sgd.epochs);
    for epoch in 1..=sgd.epochs {
        order.shuffle(&mut rng);
        let mut total = 0.0;
        let mut steps = 0;
        for (step, cases) in order.chunks(batch_size).enumerate() {
            batch.clear();
            for &case in cases {
                batch.extend_from_slice(&data[case * v..(case + 1) * v]);
            }
            let cost = cost_and_gradient(backend, model, &batch, settings, &mut work, &mut gradient).map_err(|error| SgdDiverged { epoch, step, error })?;
            gradient.write_params(&mut flat_gradient);
            for ((p, u), g) in params.iter_mut().zip(&mut velocity).zip(&flat_gradient) {
                *u = sgd.momentum * *u - sgd.learning_rate * g;
                *p += *u;
            }
            model.set_params(&params);
            total += cost.total;
            steps += 1;
        }
        let mean = total / steps.max(1) as f64;
        epoch_costs.push(mean);
        if !on_epoch(epoch, mean) {
            return Ok(SgdOutcome { epoch_costs, cancelled: true });
        }
    }
    Ok(SgdOutcome { epoch_costs, cancelled: false })
}
