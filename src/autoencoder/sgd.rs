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
    let mut run = SgdRun::new(model, data.len() / model.n_visible.max(1), sgd);
    let mut epoch_costs = Vec::with_capacity(sgd.epochs);
    for epoch in 1..=sgd.epochs {
        let mean = run.epoch(backend, model, data, settings)?;
        epoch_costs.push(mean);
        if !on_epoch(epoch, mean) {
            return Ok(SgdOutcome { epoch_costs, cancelled: true });
        }
    }
    Ok(SgdOutcome { epoch_costs, cancelled: false })
}

/// SGD one epoch at a time (the page runs one per message): the case order and its generator,
/// the velocity and the parameters persist between epochs. Cloning it before an epoch keeps
/// a state to go back to.
#[derive(Clone)]
pub struct SgdRun {
    sgd: SgdSettings,
    rows: usize,
    batch_size: usize,
    order: Vec<usize>,
    rng: ChaCha8Rng,
    velocity: Vec<f64>,
    params: Vec<f64>,
    epochs_done: usize,
}

impl SgdRun {
    /// A run from `model`'s parameters over `rows` cases.
    pub fn new(model: &Autoencoder, rows: usize, sgd: &SgdSettings) -> SgdRun {
        SgdRun {
            sgd: *sgd,
            rows,
            batch_size: sgd.batch_size.clamp(1, rows.max(1)),
            order: (0..rows).collect(),
            rng: ChaCha8Rng::seed_from_u64(sgd.seed),
            velocity: vec![0.0f64; model.n_params()],
            params: model.to_params(),
            epochs_done: 0,
        }
    }

    pub fn epochs_done(&self) -> usize {
        self.epochs_done
    }

    /// Mini-batch steps per epoch.
    pub fn steps_per_epoch(&self) -> usize {
        self.rows.div_ceil(self.batch_size)
    }

    /// One epoch over `data` (the `rows` cases `new` was told of), `model` updated after every
    /// step; the mean mini-batch `J`.
    pub fn epoch(&mut self, backend: &dyn Backend, model: &mut Autoencoder, data: &[f32], settings: &CostSettings) -> Result<f64, SgdDiverged> {
        let v = model.n_visible;
        let epoch = self.epochs_done + 1;
        let mut work = Workspace::new();
        let mut gradient = Autoencoder::zeros(v, model.n_hidden);
        let mut flat_gradient = vec![0.0f64; model.n_params()];
        let mut batch = Vec::with_capacity(self.batch_size * v);
        self.order.shuffle(&mut self.rng);
        let mut total = 0.0;
        let mut steps = 0;
        for (step, cases) in self.order.chunks(self.batch_size).enumerate() {
            batch.clear();
            for &case in cases {
                batch.extend_from_slice(&data[case * v..(case + 1) * v]);
            }
            let cost = cost_and_gradient(backend, model, &batch, settings, &mut work, &mut gradient).map_err(|error| SgdDiverged { epoch, step, error })?;
            gradient.write_params(&mut flat_gradient);
            for ((p, u), g) in self.params.iter_mut().zip(&mut self.velocity).zip(&flat_gradient) {
                *u = self.sgd.momentum * *u - self.sgd.learning_rate * g;
                *p += *u;
            }
            model.set_params(&self.params);
            total += cost.total;
            steps += 1;
        }
        self.epochs_done = epoch;
        Ok(total / steps.max(1) as f64)
    }
}
