//! Initialisation by random trials (Masters): build `init_trials` candidate RBMs, each from
//! its own seeded generator, score each by its deterministic reconstruction error, keep the
//! best. Trials run in parallel; each one's generator depends only on (seed, trial), so the
//! winner does not depend on the thread count.

use super::config::CdConfig;
use crate::backend::Backend;
use crate::data::Dataset;
use crate::model::Rbm;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

pub struct Initialisation {
    pub rbm: Rbm,
    /// Reconstruction error of every trial, in trial order.
    pub trial_errors: Vec<f64>,
    pub best_trial: usize,
}

pub fn trial_rng(seed: u64, trial: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(trial as u64 + 1);
    rng
}

pub fn initialise_by_trials(config: &CdConfig, backend: &dyn Backend, data: &Dataset) -> Initialisation {
    let means = data.input_means();
    let candidates: Vec<(Rbm, f64)> = (0..config.init_trials)
        .into_par_iter()
        .map(|trial| {
            let rbm = Rbm::initialise(config.visible_units, data.n_inputs, config.n_hidden, &means, &mut trial_rng(config.seed, trial));
            let error = rbm.reconstruction_error(backend, data, config.init_cases);
            (rbm, error)
        })
        .collect();
    let trial_errors: Vec<f64> = candidates.iter().map(|(_, e)| *e).collect();
    // NaN never wins: total_cmp orders it above every number.
    let best_trial = (0..trial_errors.len()).min_by(|&a, &b| trial_errors[a].total_cmp(&trial_errors[b])).unwrap_or(0);
    let rbm = candidates.into_iter().nth(best_trial).map(|(rbm, _)| rbm).expect("at least one trial");
    Initialisation { rbm, trial_errors, best_trial }
}
