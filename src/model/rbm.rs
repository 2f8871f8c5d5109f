//! A Bernoulli–Bernoulli restricted Boltzmann machine: plain data, no backend state.

use crate::backend::{Activation, Backend, Weights};
use crate::data::Dataset;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How the visible units are modelled.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum VisibleUnits {
    /// Binary units, `p(v_i = 1 | h) = σ(b_i + Σ_j W_ij h_j)`; data in [0, 1].
    #[default]
    Bernoulli,
    /// Real-valued units with unit variance, `v_i | h ~ N(b_i + Σ_j W_ij h_j, 1)`; the data
    /// must be standardised (zero mean, unit variance per input).
    Gaussian,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Rbm {
    #[serde(default)]
    pub visible_units: VisibleUnits,
    pub n_visible: usize,
    pub n_hidden: usize,
    /// `n_visible × n_hidden`, row-major.
    pub weights: Vec<f32>,
    pub visible_bias: Vec<f32>,
    pub hidden_bias: Vec<f32>,
}

impl Rbm {
    /// Masters' initialisation (DEEP, ch. 3) for one random trial:
    /// weights `V·(U − 0.5)` with grand variation `V = 4·U / sqrt(sqrt(nvis·nhid))`,
    /// hidden bias `−Σ x̄·W`, visible bias `logit(x̄) − 0.5·ΣW`. The biases put every unit
    /// near the middle of its sigmoid for the average case, so learning starts where the
    /// gradient is largest.
    /// For Gaussian visible units the visible bias is the data mean (zero for standardised
    /// data) minus the same half row sum, since the logit only makes sense for probabilities.
    pub fn initialise(visible_units: VisibleUnits, n_visible: usize, n_hidden: usize, visible_means: &[f32], rng: &mut ChaCha8Rng) -> Rbm {
        assert_eq!(visible_means.len(), n_visible);
        let grand_variation = 4.0 * rng.random::<f32>() / ((n_visible * n_hidden) as f32).sqrt().sqrt();
        let weights: Vec<f32> = (0..n_visible * n_hidden).map(|_| grand_variation * (rng.random::<f32>() - 0.5)).collect();
        let means: Vec<f32> = match visible_units {
            VisibleUnits::Bernoulli => visible_means.iter().map(|m| m.clamp(1e-8, 1.0 - 1e-8)).collect(),
            VisibleUnits::Gaussian => visible_means.to_vec(),
        };
        let hidden_bias = (0..n_hidden)
            .map(|j| -(0..n_visible).map(|i| means[i] * weights[i * n_hidden + j]).sum::<f32>())
            .collect();
        let visible_bias = (0..n_visible)
            .map(|i| {
                let row_sum: f32 = weights[i * n_hidden..(i + 1) * n_hidden].iter().sum();
                let centre = match visible_units {
                    VisibleUnits::Bernoulli => (means[i] / (1.0 - means[i])).ln(),
                    VisibleUnits::Gaussian => means[i],
                };
                centre - 0.5 * row_sum
            })
            .collect();
        Rbm { visible_units, n_visible, n_hidden, weights, visible_bias, hidden_bias }
    }

    pub fn seeded_rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    pub fn weights(&self) -> Weights<'_> {
        Weights { values: &self.weights, n_visible: self.n_visible, n_hidden: self.n_hidden }
    }

    /// The activation giving `E[v | h]`: the sigmoid for binary units, the identity for Gaussian.
    pub fn visible_activation(&self) -> Activation {
        match self.visible_units {
            VisibleUnits::Bernoulli => Activation::Sigmoid,
            VisibleUnits::Gaussian => Activation::Linear,
        }
    }

    pub fn is_finite(&self) -> bool {
        self.weights.iter().chain(&self.visible_bias).chain(&self.hidden_bias).all(|x| x.is_finite())
    }

    /// Deterministic (mean-field) reconstruction error: mean over cases and visible units of
    /// `(x − p(v | p(h | x)))²`, using at most `max_cases` cases taken evenly through the data.
    pub fn reconstruction_error(&self, backend: &dyn Backend, data: &Dataset, max_cases: usize) -> f64 {
        let n = data.n_cases.min(max_cases).max(1);
        let cases: Vec<usize> = (0..n).map(|k| k * data.n_cases / n).collect();
        let mut total = 0.0f64;
        for block in cases.chunks(256) {
            let mut visible = vec![0.0; block.len() * self.n_visible];
            data.gather_into(block, &mut visible);
            let mut hidden = vec![0.0; block.len() * self.n_hidden];
            backend.visible_to_hidden(self.weights(), &visible, &self.hidden_bias, Activation::Sigmoid, &mut hidden);
            let mut reconstruction = vec![0.0; visible.len()];
            backend.hidden_to_visible(self.weights(), &hidden, &self.visible_bias, self.visible_activation(), &mut reconstruction);
            total += squared_difference(&visible, &reconstruction);
        }
        total / (n * self.n_visible) as f64
    }
}

pub fn squared_difference(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum()
}
