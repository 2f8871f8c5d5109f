//! Small models and data sets made in the test, for checks against hand computations and exact
//! enumeration.

use deepbelief::data::Dataset;
use deepbelief::model::{Rbm, VisibleUnits};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Weights uniform in ±`weight_scale`, biases uniform in ±`bias_scale`, drawn in that order
/// from ChaCha8 seeded with `seed`.
pub fn random_rbm(visible_units: VisibleUnits, n_visible: usize, n_hidden: usize, weight_scale: f32, bias_scale: f32, seed: u64) -> Rbm {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut uniform = |scale: f32, n: usize| (0..n).map(|_| scale * (2.0 * rng.random::<f32>() - 1.0)).collect::<Vec<f32>>();
    let weights = uniform(weight_scale, n_visible * n_hidden);
    let visible_bias = uniform(bias_scale, n_visible);
    let hidden_bias = uniform(bias_scale, n_hidden);
    Rbm { visible_units, n_visible, n_hidden, weights, visible_bias, hidden_bias }
}

/// `values` as cases of `n_inputs` floats.
pub fn float_dataset(n_inputs: usize, values: Vec<f32>) -> Dataset {
    Dataset::from_floats("hand-made", n_inputs, values)
}
