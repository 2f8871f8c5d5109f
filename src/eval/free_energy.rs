//! Free energy: the hidden units summed out of an RBM's energy, `p(v) = exp(−F(v)) / Z`.
//!
//! Bernoulli visible: `F(v) = −b·v − Σ_j softplus(c_j + (vW)_j)`.
//! Gaussian visible (unit variance): `F(v) = ½ Σ_i (v_i − b_i)² − Σ_j softplus(c_j + (vW)_j)`.
//!
//! Differences of free energies are log probability ratios, which is why the pseudo-likelihood
//! and AIS are built on them; `F` itself plus `log Z` is a log-likelihood.

use super::for_each_batch;
use crate::backend::{Activation, Backend};
use crate::data::split::spread_cases;
use crate::data::Dataset;
use crate::model::{Rbm, VisibleUnits};

/// `ln(1 + eˣ)` without overflow for large `x` or loss of precision for very negative `x`.
pub fn softplus(x: f64) -> f64 {
    if x > 0.0 {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// The visible units' own term of the free energy, `−b·v` or `½|v − b|²`.
fn visible_term(rbm: &Rbm, visible: &[f32]) -> f64 {
    let pairs = visible.iter().zip(&rbm.visible_bias).map(|(&v, &b)| (v as f64, b as f64));
    match rbm.visible_units {
        VisibleUnits::Bernoulli => -pairs.map(|(v, b)| b * v).sum::<f64>(),
        VisibleUnits::Gaussian => pairs.map(|(v, b)| 0.5 * (v - b) * (v - b)).sum(),
    }
}

/// Free energy of each case in `visible` (rows of `n_visible` values). The hidden inputs
/// `c + vW` come from the backend in f32; the sums are taken in f64.
pub fn free_energy(backend: &dyn Backend, rbm: &Rbm, visible: &[f32]) -> Vec<f64> {
    assert!(rbm.n_visible > 0 && rbm.n_hidden > 0, "an RBM needs units on both sides");
    assert!(visible.len().is_multiple_of(rbm.n_visible), "visible must hold whole cases");
    let rows = visible.len() / rbm.n_visible;
    let mut hidden_input = vec![0.0; rows * rbm.n_hidden];
    backend.visible_to_hidden(rbm.weights(), visible, &rbm.hidden_bias, Activation::Linear, &mut hidden_input);
    visible
        .chunks_exact(rbm.n_visible)
        .zip(hidden_input.chunks_exact(rbm.n_hidden))
        .map(|(case, inputs)| visible_term(rbm, case) - inputs.iter().map(|&x| softplus(x as f64)).sum::<f64>())
        .collect()
}

/// Free energy of one case computed entirely in f64 without a backend: slower, but exact to
/// f64 rounding. The exact (enumerated) evaluations use it, and tests check the batched
/// version against it.
pub fn free_energy_f64(rbm: &Rbm, visible: &[f32]) -> f64 {
    assert!(visible.len() == rbm.n_visible && rbm.n_hidden > 0);
    let mut hidden_input: Vec<f64> = rbm.hidden_bias.iter().map(|&c| c as f64).collect();
    for (&v, row) in visible.iter().zip(rbm.weights.chunks_exact(rbm.n_hidden)) {
        if v != 0.0 {
            for (x, &w) in hidden_input.iter_mut().zip(row) {
                *x += v as f64 * w as f64;
            }
        }
    }
    visible_term(rbm, visible) - hidden_input.iter().map(|&x| softplus(x)).sum::<f64>()
}

/// Mean free energy over at most `max_cases` cases spread evenly through the data.
/// Comparing it between training and validation data shows over-fitting (Hinton's
/// practical guide, section 6): the gap grows when the model fits the training cases only.
pub fn mean_free_energy(backend: &dyn Backend, rbm: &Rbm, data: &Dataset, max_cases: usize) -> f64 {
    assert_eq!(data.n_inputs, rbm.n_visible, "data and model disagree on the number of visible units");
    let cases = spread_cases(data.n_cases, max_cases);
    let mut total = 0.0;
    for_each_batch(data, &cases, |visible| total += free_energy(backend, rbm, visible).iter().sum::<f64>());
    total / cases.len().max(1) as f64
}
