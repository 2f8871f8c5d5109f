//! Cheap per-epoch measures for the trainer's log and the page: reconstruction errors,
//! the pseudo-log-likelihood, and hidden unit statistics as Masters' DEEP.LOG reports them.
//! Each takes at most `max_cases` cases spread evenly through the data.

use super::free_energy::{free_energy, softplus};
use super::{for_each_batch, EvalError};
use crate::backend::{Activation, Backend};
use crate::data::split::spread_cases;
use crate::data::Dataset;
use crate::model::{Rbm, VisibleUnits};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ReconstructionErrors {
    /// Mean over cases and visible units of `(x − x̂)²`.
    pub mean_squared_error: f64,
    /// Mean over cases of `−Σ_i [x_i ln x̂_i + (1 − x_i) ln(1 − x̂_i)]`; `None` for Gaussian
    /// visible units, whose reconstructions are not probabilities.
    pub cross_entropy: Option<f64>,
}

/// Mean, spread and skewness of one hidden unit's activation probability over the cases.
/// A unit stuck near 0 or 1 (mean at an extreme, tiny deviation) has stopped learning; a
/// strongly skewed one fires for a few cases only, which is what a useful feature detector
/// tends to look like.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct UnitStats {
    pub mean_activation: f64,
    /// Population standard deviation (divides by the number of cases).
    pub standard_deviation: f64,
    /// `E[(x − m)³] / σ³` (population moments); 0 when σ < `FLAT_UNIT_DEVIATION`, where the
    /// ratio would be rounding noise.
    pub skewness: f64,
}

/// Below this standard deviation a unit's activation counts as constant (f32 probabilities
/// carry about 7 significant digits).
pub const FLAT_UNIT_DEVIATION: f64 = 1e-6;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Deterministic (mean-field) reconstruction `x̂ = E[v | h = p(h | x)]` and its errors.
/// The cross-entropy is computed from the visible input `a` (with `x̂ = σ(a)`) as
/// `softplus(a) − x·a`, which equals the formula above without clamping any logarithm.
pub fn reconstruction_errors(backend: &dyn Backend, rbm: &Rbm, data: &Dataset, max_cases: usize) -> ReconstructionErrors {
    assert_eq!(data.n_inputs, rbm.n_visible, "data and model disagree on the number of visible units");
    let cases = spread_cases(data.n_cases, max_cases);
    let bernoulli = rbm.visible_units == VisibleUnits::Bernoulli;
    let (mut squared, mut cross_entropy) = (0.0f64, 0.0f64);
    for_each_batch(data, &cases, |visible| {
        let rows = visible.len() / rbm.n_visible;
        let mut hidden = vec![0.0; rows * rbm.n_hidden];
        backend.visible_to_hidden(rbm.weights(), visible, &rbm.hidden_bias, Activation::Sigmoid, &mut hidden);
        let mut visible_input = vec![0.0; visible.len()];
        backend.hidden_to_visible(rbm.weights(), &hidden, &rbm.visible_bias, Activation::Linear, &mut visible_input);
        for (&x, &a) in visible.iter().zip(&visible_input) {
            let (x, a) = (x as f64, a as f64);
            if bernoulli {
                squared += (x - sigmoid(a)).powi(2);
                cross_entropy += softplus(a) - x * a;
            } else {
                squared += (x - a).powi(2);
            }
        }
    });
    let n_cases = cases.len().max(1) as f64;
    ReconstructionErrors {
        mean_squared_error: squared / (n_cases * rbm.n_visible as f64),
        cross_entropy: bernoulli.then_some(cross_entropy / n_cases),
    }
}

/// Stochastic pseudo-log-likelihood, as scikit-learn's `BernoulliRBM.score_samples`:
/// each case is binarised (`x > 0.5` → 1), one visible unit chosen uniformly at random is
/// flipped, and the case scores `n_visible · ln σ(F(ṽ) − F(v))`, an unbiased estimate of
/// `Σ_i ln p(v_i | v_−i)`. Returns the mean over the cases. The flipped units come from
/// `ChaCha8Rng::seed_from_u64(seed)`, one draw per case in order, so a seed gives one value.
pub fn pseudo_log_likelihood(backend: &dyn Backend, rbm: &Rbm, data: &Dataset, max_cases: usize, seed: u64) -> Result<f64, EvalError> {
    if rbm.visible_units != VisibleUnits::Bernoulli {
        return Err(EvalError::GaussianVisibleUnits { measure: "the pseudo-log-likelihood" });
    }
    assert_eq!(data.n_inputs, rbm.n_visible, "data and model disagree on the number of visible units");
    let nv = rbm.n_visible;
    let cases = spread_cases(data.n_cases, max_cases);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut total = 0.0;
    for_each_batch(data, &cases, |visible| {
        let binary: Vec<f32> = visible.iter().map(|&x| if x > 0.5 { 1.0 } else { 0.0 }).collect();
        let mut flipped = binary.clone();
        for case in flipped.chunks_exact_mut(nv) {
            let unit = rng.random_range(0..nv);
            case[unit] = 1.0 - case[unit];
        }
        let energies = free_energy(backend, rbm, &binary);
        let flipped_energies = free_energy(backend, rbm, &flipped);
        // ln σ(d) = −softplus(−d).
        total += energies.iter().zip(&flipped_energies).map(|(f, f_flipped)| -(nv as f64) * softplus(f - f_flipped)).sum::<f64>();
    });
    Ok(total / cases.len().max(1) as f64)
}

/// Count, mean and central moment sums `Σ(x − m)²`, `Σ(x − m)³` of one sample, mergeable
/// without a second pass over the data (Pébay 2008, eqs. 2.1–2.2), so the statistics come
/// from one batch of activations at a time.
#[derive(Clone, Copy, Default)]
struct CentralMoments {
    n: f64,
    mean: f64,
    m2: f64,
    m3: f64,
}

impl CentralMoments {
    fn of(values: impl Iterator<Item = f64> + Clone) -> Self {
        let n = values.clone().count() as f64;
        let mean = values.clone().sum::<f64>() / n;
        let (m2, m3) = values.fold((0.0, 0.0), |(m2, m3), x| (m2 + (x - mean).powi(2), m3 + (x - mean).powi(3)));
        CentralMoments { n, mean, m2, m3 }
    }

    fn merge(self, other: CentralMoments) -> Self {
        if self.n == 0.0 {
            return other;
        }
        let (na, nb) = (self.n, other.n);
        let n = na + nb;
        let delta = other.mean - self.mean;
        CentralMoments {
            n,
            mean: self.mean + delta * nb / n,
            m2: self.m2 + other.m2 + delta * delta * na * nb / n,
            m3: self.m3 + other.m3 + delta.powi(3) * na * nb * (na - nb) / (n * n) + 3.0 * delta * (na * other.m2 - nb * self.m2) / n,
        }
    }

    fn stats(&self) -> UnitStats {
        let standard_deviation = (self.m2 / self.n).sqrt();
        let skewness = if standard_deviation < FLAT_UNIT_DEVIATION { 0.0 } else { self.m3 / self.n / standard_deviation.powi(3) };
        UnitStats { mean_activation: self.mean, standard_deviation, skewness }
    }
}

/// Per hidden unit: mean, standard deviation and skewness of `p(h_j = 1 | x)` over the cases.
pub fn hidden_unit_statistics(backend: &dyn Backend, rbm: &Rbm, data: &Dataset, max_cases: usize) -> Vec<UnitStats> {
    assert_eq!(data.n_inputs, rbm.n_visible, "data and model disagree on the number of visible units");
    let nh = rbm.n_hidden;
    let cases = spread_cases(data.n_cases, max_cases);
    let mut moments = vec![CentralMoments::default(); nh];
    for_each_batch(data, &cases, |visible| {
        let mut hidden = vec![0.0f32; visible.len() / rbm.n_visible * nh];
        backend.visible_to_hidden(rbm.weights(), visible, &rbm.hidden_bias, Activation::Sigmoid, &mut hidden);
        for (j, unit) in moments.iter_mut().enumerate() {
            let column = hidden.iter().skip(j).step_by(nh).map(|&p| p as f64);
            *unit = unit.merge(CentralMoments::of(column));
        }
    });
    moments.iter().map(CentralMoments::stats).collect()
}
