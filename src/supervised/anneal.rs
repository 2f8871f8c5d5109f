//! Starting weights by simulated annealing, in Masters' manner: many random trials around a
//! centre, the best kept. Trial `i` draws every annealed parameter as
//! `centre + multiplier(i) · range_factor(i) · range · (2U − 1)`:
//!
//! - `multiplier(i)` by `i mod 10` is ×10, ×4, /10, /4 for 0, 1, 2, 3 and 1 otherwise, so the
//!   search keeps probing much wider and much narrower spreads than the nominal one;
//! - for the first `SHRINK_START` (100) trials the centre stays at the start; after that
//!   the centre follows the best trial and the range shrinks by the factor
//!   `1 − 0.3 / iterations` per trial.
//!
//! With linear outputs and at most `MAX_SVD_INPUTS` inputs to the output layer, only the
//! hidden layers are drawn and the output layer of each trial is solved by least squares
//! (SVD); otherwise every layer is drawn. Biases are drawn like weights.

use super::config::MAX_SVD_INPUTS;
use super::criterion::{criterion, Cases};
use super::least_squares::least_squares_layer;
use super::network::{Network, OutputKind};
use crate::backend::Backend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Trials before the centre starts to follow the best one and the range to shrink.
pub const SHRINK_START: usize = 100;
/// Total shrink rate over the run: the range shrinks by `1 − RATE / iterations` per trial.
pub const SHRINK_RATE: f64 = 0.3;

/// The spread multiplier of trial `i`.
pub fn multiplier(i: usize) -> f64 {
    match i % 10 {
        0 => 10.0,
        1 => 4.0,
        2 => 0.1,
        3 => 0.25,
        _ => 1.0,
    }
}

/// How much the range has shrunk by trial `i` of `iterations`.
pub fn range_factor(i: usize, iterations: usize) -> f64 {
    if i < SHRINK_START {
        1.0
    } else {
        (1.0 - SHRINK_RATE / iterations.max(1) as f64).powi((i + 1 - SHRINK_START) as i32)
    }
}

/// Whether trial `i` is centred on the best trial so far (otherwise on the start).
pub fn centred_on_best(i: usize) -> bool {
    i >= SHRINK_START
}

#[derive(Clone, Debug, Serialize)]
pub struct AnnealReport {
    pub iterations: usize,
    /// Criterion of the start and of the best trial.
    pub start_criterion: f64,
    pub best_criterion: f64,
    /// Index of the best trial (`None`: no trial beat the start).
    pub best_trial: Option<usize>,
    /// The output layer was solved by SVD in each trial.
    pub svd_outputs: bool,
    /// Each trial's criterion, in order.
    pub trial_criteria: Vec<f64>,
}

/// Nominal half-width of layer `k`'s random weights: `1/√n_in`, so a logistic unit's input
/// sum has a spread of order one whatever the fan-in.
fn base_range(n_in: usize) -> f64 {
    1.0 / (n_in.max(1) as f64).sqrt()
}

/// Whether the output layer is solved by least squares rather than drawn.
pub fn uses_svd(net: &Network, allow_svd: bool) -> bool {
    allow_svd && net.output == OutputKind::Linear && net.layers.last().expect("a layer").n_in <= MAX_SVD_INPUTS
}

/// Sets the output layer of `net` to the least-squares solution on `cases` (keeps it
/// unchanged if the SVD fails).
pub fn solve_output_layer(backend: &dyn Backend, net: &mut Network, cases: Cases) {
    let last = net.layers.len() - 1;
    let hidden = net.output_layer_inputs(backend, cases.inputs);
    let layer = &mut net.layers[last];
    if let Some((weights, bias)) = least_squares_layer(&hidden, cases.targets, layer.n_in, layer.n_out) {
        layer.weights = weights;
        layer.bias = bias;
    }
}

/// Draws every parameter of the layers `0..drawn` around `centre`.
fn draw(net: &mut Network, centre: &Network, drawn: usize, spread: f64, rng: &mut ChaCha8Rng) {
    for (layer, centre) in net.layers.iter_mut().zip(&centre.layers).take(drawn) {
        let half_width = (spread * base_range(layer.n_in)) as f32;
        for (x, c) in layer.weights.iter_mut().chain(layer.bias.iter_mut()).zip(centre.weights.iter().chain(&centre.bias)) {
            *x = c + half_width * (2.0 * rng.random::<f32>() - 1.0);
        }
    }
}

/// Anneals the starting weights of `net` (also the centre of the first trials) on `cases`;
/// `net` ends as the best trial, or unchanged if none beat it.
pub fn anneal(backend: &dyn Backend, net: &mut Network, cases: Cases, penalty: f64, iterations: usize, allow_svd: bool, seed: u64) -> AnnealReport {
    let svd = uses_svd(net, allow_svd);
    let drawn = if svd { net.layers.len() - 1 } else { net.layers.len() };
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x00A2_2EA1);
    let start = net.clone();
    let start_criterion = criterion(net, backend, cases, penalty);
    let (mut best, mut best_criterion, mut best_trial) = (start.clone(), start_criterion, None);
    let mut trial_criteria = Vec::with_capacity(iterations);
    let mut trial = start.clone();
    for i in 0..iterations {
        let centre = if centred_on_best(i) { &best } else { &start };
        draw(&mut trial, centre, drawn, multiplier(i) * range_factor(i, iterations), &mut rng);
        if svd {
            solve_output_layer(backend, &mut trial, cases);
        }
        let value = criterion(&trial, backend, cases, penalty);
        trial_criteria.push(value);
        // NaN never compares lower, so a diverging trial is simply not kept.
        if value < best_criterion {
            best_criterion = value;
            best_trial = Some(i);
            best = trial.clone();
        }
    }
    *net = best;
    AnnealReport { iterations, start_criterion, best_criterion, best_trial, svd_outputs: svd, trial_criteria }
}

/// Without annealing: hidden layers uniform in ±1/√n_in, outputs zero (or least squares
/// where the SVD applies).
pub fn random_start(backend: &dyn Backend, net: &mut Network, cases: Cases, allow_svd: bool, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5EED);
    let zero = Network::zeros(&net.sizes(), net.output);
    let hidden = net.layers.len() - 1;
    draw(net, &zero, hidden, 1.0, &mut rng);
    let last = net.layers.last_mut().expect("a layer");
    last.weights.fill(0.0);
    last.bias.fill(0.0);
    if uses_svd(net, allow_svd) {
        solve_output_layer(backend, net, cases);
    }
}
