//! Annealed importance sampling (AIS) estimate of log Z for a Bernoulli-visible RBM
//! (Salakhutdinov & Murray, "On the quantitative analysis of deep belief networks", 2008).
//!
//! AIS walks from a model A whose Z is known to the target B through distributions
//! `p_k(v) ∝ p*_k(v)` at inverse temperatures `0 = β_0 < β_1 < … < β_K = 1`:
//!
//! `log p*_k(v) = (1−β_k)·b_A·v + β_k·b_B·v + Σ_j softplus(β_k·(c_j + (vW)_j))`.
//!
//! A is the base-rate model: no weights, visible biases `b_A` fitted to the pixel means. Its
//! own hidden units have zero weights and biases, so they contribute the same factor 2^n_hidden
//! at every β and cancel from every ratio; they are left out. At β = 0 the B term above is
//! `Σ_j softplus(0) = n_hidden·ln 2`, so `log Z_0 = Σ_i softplus(b_A_i) + n_hidden·ln 2`.
//!
//! Each run draws `v_1 ~ p_0`, then for k = 1…K adds `log p*_k(v_k) − log p*_{k−1}(v_k)` to its
//! log weight and moves `v_k → v_{k+1}` with one Gibbs step that leaves `p_k` invariant:
//! `h_j ~ σ(β_k·(c_j + (vW)_j))`, then `v_i ~ σ((1−β_k)·b_A_i + β_k·(b_B_i + (W h)_i))`.
//! The mean of `exp(log weight)` estimates `Z_B / Z_0`.
//!
//! All runs move together as the rows of one batch, so the backend's matrix products do the
//! work. Random draws use the backend's Philox streams keyed by the step index `k`
//! (`Purpose::GibbsHidden` / `GibbsVisible`, step 0 = the draw from p_0), under the caller's
//! seed mixed with a constant, so that AIS given the seed a model was trained or sampled with
//! does not replay those draws (`sample::gibbs` uses the same purposes). The estimate is
//! therefore reproducible for a given seed on any thread count.

use super::free_energy::{mean_free_energy, softplus};
use super::{EvalError, LogSumExp};
use crate::backend::{sigmoid, Activation, Backend};
use crate::data::Dataset;
use crate::model::{Rbm, VisibleUnits};
use crate::rng::{Purpose, RngStream};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Mixed into the seed so AIS draws differ from training draws made with the same seed.
pub(crate) const AIS_SEED_SALT: u64 = 0xA15A_15A1_5A15_A15A;

/// Base-rate probabilities are kept within [ε, 1 − ε]: a pixel that is always off in the data
/// would otherwise get an infinite bias. logit(1e-3) ≈ −6.9 already makes such a pixel almost
/// always off in A's samples, which is where a trained B keeps it too.
pub const BASE_RATE_CLAMP: f32 = 1e-3;

/// How the inverse temperatures are spaced. Measured on 784×15 and 784×20 RBMs trained
/// on MNIST (exact log Z known, 100 runs, 1000 steps), `Linear` gave log weights with half
/// to a third of the spread of `Paper` and errors of 0.02–0.07 nats against 0.02–0.3, so it is
/// the default; the paper tuned its schedule for 500-hidden-unit models, where the last stretch
/// before β = 1 is the hard part. `log_weights_std` tells which works better for a model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AisSchedule {
    /// `β_k = k / K`.
    #[default]
    Linear,
    /// The paper's piecewise-uniform schedule, scaled to K steps: 500/14500 of them on
    /// [0, 0.5], 4000/14500 on [0.5, 0.9] and 10000/14500 on [0.9, 1]. With K = 14500 the steps
    /// are the paper's 10⁻³, 10⁻⁴ and 10⁻⁵.
    Paper,
}

impl AisSchedule {
    /// `β_0 = 0, …, β_K = 1` for K = `steps` (at least 3 for `Paper`, one step per segment).
    pub fn betas(self, steps: usize) -> Vec<f64> {
        match self {
            AisSchedule::Linear => (0..=steps).map(|k| k as f64 / steps as f64).collect(),
            AisSchedule::Paper => {
                let share = |parts: f64| ((steps as f64 * parts / 14_500.0).round() as usize).max(1);
                let first = share(500.0);
                let second = share(4_000.0);
                let third = steps.saturating_sub(first + second).max(1);
                let mut betas = vec![0.0];
                for (from, to, n) in [(0.0, 0.5, first), (0.5, 0.9, second), (0.9, 1.0, third)] {
                    betas.extend((1..=n).map(|k| from + (to - from) * k as f64 / n as f64));
                }
                betas
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AisConfig {
    /// Independent annealing runs (the paper uses 100).
    pub runs: usize,
    /// K, the number of annealing steps (β_1 … β_K; β_0 = 0 is the base-rate model).
    pub betas: usize,
    pub schedule: AisSchedule,
    pub seed: u64,
}

impl Default for AisConfig {
    fn default() -> Self {
        AisConfig { runs: 100, betas: 1000, schedule: AisSchedule::Linear, seed: 1 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AisEstimate {
    /// `log Ẑ = log Z_0 + log mean(w)`.
    pub log_z: f64,
    /// `log Z_0 + log(mean(w) − 3σ)`, σ the standard error of the mean weight, as the paper
    /// reports; −∞ when 3σ exceeds the mean (the runs disagree too much to bound Z from below),
    /// which serde_json writes as `null`.
    pub log_z_low: f64,
    /// `log Z_0 + log(mean(w) + 3σ)`.
    pub log_z_high: f64,
    /// Standard deviation of the runs' log weights: near 0 when A and B are close along the
    /// path, several nats when the estimate is dominated by a few runs.
    pub log_weights_std: f64,
    pub runs: usize,
    pub betas: usize,
    pub schedule: AisSchedule,
}

/// Visible biases of the base-rate model: `logit(mean)` of each input, the mean clamped to
/// [`BASE_RATE_CLAMP`, 1 − `BASE_RATE_CLAMP`]. Pass `data.input_means()` of the training data.
pub fn base_rate_visible_bias(visible_means: &[f32]) -> Vec<f32> {
    visible_means
        .iter()
        .map(|&m| {
            let p = m.clamp(BASE_RATE_CLAMP, 1.0 - BASE_RATE_CLAMP);
            (p / (1.0 - p)).ln()
        })
        .collect()
}

/// AIS estimate of `log Z` for `rbm`, starting from the base-rate model with visible biases
/// `base_visible_bias` (see [`base_rate_visible_bias`]).
pub fn ais_log_partition(backend: &dyn Backend, rbm: &Rbm, base_visible_bias: &[f32], config: &AisConfig) -> Result<AisEstimate, EvalError> {
    if rbm.visible_units != VisibleUnits::Bernoulli {
        return Err(EvalError::GaussianVisibleUnits { measure: "AIS with a base-rate start" });
    }
    if config.runs < 2 {
        return Err(EvalError::InvalidConfig(format!("AIS needs at least 2 runs to estimate its error, got {}", config.runs)));
    }
    let min_steps = if config.schedule == AisSchedule::Paper { 3 } else { 1 };
    if config.betas < min_steps {
        return Err(EvalError::InvalidConfig(format!("AIS needs at least {min_steps} annealing steps with the {:?} schedule", config.schedule)));
    }
    assert_eq!(base_visible_bias.len(), rbm.n_visible, "one base-rate bias per visible unit");
    let (nv, nh, runs) = (rbm.n_visible, rbm.n_hidden, config.runs);
    let betas = config.schedule.betas(config.betas);
    let seed = config.seed ^ AIS_SEED_SALT;
    // `b_B − b_A`: the visible part of `log p*_k − log p*_{k−1}` is `(β_k − β_{k−1})·(b_B − b_A)·v`.
    let bias_gap: Vec<f64> = rbm.visible_bias.iter().zip(base_visible_bias).map(|(&b, &a)| b as f64 - a as f64).collect();

    let base_probabilities: Vec<f32> = (0..runs).flat_map(|_| base_visible_bias.iter().map(|&b| sigmoid(b))).collect();
    let mut visible = vec![0.0f32; runs * nv];
    backend.bernoulli(&base_probabilities, RngStream::new(seed, 0, Purpose::GibbsVisible), &mut visible);

    let mut log_weights = vec![0.0f64; runs];
    let mut hidden_input = vec![0.0f32; runs * nh];
    let mut hidden_probabilities = vec![0.0f32; runs * nh];
    let mut hidden = vec![0.0f32; runs * nh];
    let mut visible_input = vec![0.0f32; runs * nv];
    for k in 1..betas.len() {
        let (beta_before, beta) = (betas[k - 1], betas[k]);
        backend.visible_to_hidden(rbm.weights(), &visible, &rbm.hidden_bias, Activation::Linear, &mut hidden_input);
        log_weights
            .par_iter_mut()
            .zip(visible.par_chunks(nv))
            .zip(hidden_input.par_chunks(nh))
            .for_each(|((log_weight, v), x)| {
                let visible_part: f64 = v.iter().zip(&bias_gap).map(|(&v, g)| v as f64 * g).sum();
                let hidden_part: f64 = x.iter().map(|&x| softplus(beta * x as f64) - softplus(beta_before * x as f64)).sum();
                *log_weight += (beta - beta_before) * visible_part + hidden_part;
            });
        if k == betas.len() - 1 {
            break;
        }
        // One Gibbs step at β_k: the hidden units see B's inputs scaled by β_k…
        for (p, &x) in hidden_probabilities.iter_mut().zip(&hidden_input) {
            *p = sigmoid(beta as f32 * x);
        }
        backend.bernoulli(&hidden_probabilities, RngStream::new(seed, k as u64, Purpose::GibbsHidden), &mut hidden);
        // …and the visible units the mixture of A's biases and B's inputs.
        backend.hidden_to_visible(rbm.weights(), &hidden, &rbm.visible_bias, Activation::Linear, &mut visible_input);
        for (input, &base) in visible_input.chunks_exact_mut(nv).flat_map(|row| row.iter_mut().zip(base_visible_bias)) {
            *input = sigmoid((1.0 - beta as f32) * base + beta as f32 * *input);
        }
        backend.bernoulli(&visible_input, RngStream::new(seed, k as u64, Purpose::GibbsVisible), &mut visible);
    }

    let base_log_z: f64 = base_visible_bias.iter().map(|&b| softplus(b as f64)).sum::<f64>() + nh as f64 * std::f64::consts::LN_2;
    Ok(summarise(&log_weights, base_log_z, config))
}

/// The estimate and its ±3σ interval from the runs' log weights, without leaving log space
/// for anything that could overflow.
pub(crate) fn summarise(log_weights: &[f64], base_log_z: f64, config: &AisConfig) -> AisEstimate {
    let runs = log_weights.len() as f64;
    let mut sum = LogSumExp::new();
    log_weights.iter().for_each(|&w| sum.add(w));
    let log_mean_weight = sum.value() - runs.ln();
    // Weights relative to their mean are at most `runs`, so this cannot overflow.
    let relative_variance = log_weights.iter().map(|&w| ((w - log_mean_weight).exp() - 1.0).powi(2)).sum::<f64>() / (runs - 1.0);
    let relative_standard_error = (relative_variance / runs).sqrt();
    let log_z = base_log_z + log_mean_weight;
    let mean_log_weight = log_weights.iter().sum::<f64>() / runs;
    let log_weights_variance = log_weights.iter().map(|w| (w - mean_log_weight).powi(2)).sum::<f64>() / (runs - 1.0);
    AisEstimate {
        log_z,
        log_z_low: if 3.0 * relative_standard_error < 1.0 { log_z + (-3.0 * relative_standard_error).ln_1p() } else { f64::NEG_INFINITY },
        log_z_high: log_z + (3.0 * relative_standard_error).ln_1p(),
        log_weights_std: log_weights_variance.sqrt(),
        runs: config.runs,
        betas: config.betas,
        schedule: config.schedule,
    }
}

/// Estimated mean log-likelihood `mean(−F(v)) − log Ẑ` over at most `max_cases` cases spread
/// through the data. AIS tends to underestimate log Z, so this tends to overestimate the
/// log-likelihood (the paper's caveat); compare models with the same AIS settings.
pub fn ais_log_likelihood(backend: &dyn Backend, rbm: &Rbm, estimate: &AisEstimate, data: &Dataset, max_cases: usize) -> f64 {
    -mean_free_energy(backend, rbm, data, max_cases) - estimate.log_z
}
