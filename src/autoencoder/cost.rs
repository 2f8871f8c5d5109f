//! The exact sparse autoencoder cost and its gradient (UFLDL's `sparseAutoencoderCost`;
//! Klaus & Welles eqs. 5–12), over one batch of `m` cases:
//!
//! `J = ½‖x̂ − x‖²/m + (λ/2)(‖W₁‖² + ‖W₂‖²) + β Σⱼ KL(ρ ‖ ρ̂ⱼ)`, with `ρ̂ⱼ` hidden unit `j`'s
//! activation averaged over all `m` cases and `KL(ρ‖ρ̂) = ρ ln(ρ/ρ̂) + (1−ρ) ln((1−ρ)/(1−ρ̂))`.
//!
//! Backward: `δ₃ = (x̂ − x)·x̂(1 − x̂)`; `δ₂ = (δ₃W₂ + β(−ρ/ρ̂ + (1−ρ)/(1−ρ̂)))·a₂(1 − a₂)`;
//! `∇W₂ = δ₃ᵀa₂/m + λW₂`, `∇W₁ = xᵀδ₂/m + λW₁`, `∇b = Σ δ/m`. Biases are not decayed.
//!
//! Every product is a [`Backend`] call: the forward passes are `visible_to_hidden` /
//! `hidden_to_visible`, `δ₃W₂ + s` is `visible_to_hidden` on the decoder with the sparsity
//! term as its bias, and the weight gradients, `ρ̂` and the bias gradients (a product with a
//! column of ones) are `accumulate_outer`. The matrices are `f32` as in every backend; the
//! three terms of `J` are summed in `f64` on the host, in an order that depends only on the
//! shapes, so a seed gives the same `J` on any thread count.

use std::fmt;

use super::model::Autoencoder;
use crate::backend::{Activation, Backend};
use rayon::prelude::*;

/// λ, ρ and β.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CostSettings {
    /// λ, the weight decay.
    pub weight_decay: f64,
    /// ρ, the target mean activation of each hidden unit.
    pub sparsity_target: f64,
    /// β, the weight of the sparsity penalty.
    pub sparsity_weight: f64,
}

impl CostSettings {
    /// The UFLDL exercise's settings (and Klaus & Welles'): λ = 1e−4, ρ = 0.01, β = 3.
    pub fn ufldl() -> CostSettings {
        CostSettings { weight_decay: 1e-4, sparsity_target: 0.01, sparsity_weight: 3.0 }
    }

    pub fn validate(&self) -> Result<(), CostError> {
        let fail = |field: &'static str, value: f64, expected: &str| Err(CostError::Setting { field, value, expected: expected.to_string() });
        if !(self.weight_decay >= 0.0 && self.weight_decay.is_finite()) {
            return fail("weight_decay", self.weight_decay, "a finite number ≥ 0");
        }
        if !(self.sparsity_weight >= 0.0 && self.sparsity_weight.is_finite()) {
            return fail("sparsity_weight", self.sparsity_weight, "a finite number ≥ 0");
        }
        if !(self.sparsity_target > 0.0 && self.sparsity_target < 1.0) {
            return fail("sparsity_target", self.sparsity_target, "strictly between 0 and 1");
        }
        Ok(())
    }
}

/// `J` and its three terms on one batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Cost {
    pub total: f64,
    /// `½‖x̂ − x‖²/m`.
    pub reconstruction: f64,
    /// `(λ/2)(‖W₁‖² + ‖W₂‖²)`.
    pub weight_decay: f64,
    /// `β Σⱼ KL(ρ ‖ ρ̂ⱼ)`.
    pub sparsity: f64,
    /// `ρ̂`, each hidden unit's mean activation over the batch.
    pub mean_activation: Vec<f32>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CostError {
    /// The data or a buffer does not fit the model.
    Shape(String),
    Setting { field: &'static str, value: f64, expected: String },
    /// A NaN or an infinity: `what` names the parameter, the term or the gradient block.
    NonFinite { what: String },
}

impl fmt::Display for CostError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            CostError::Shape(message) => write!(f, "{message}"),
            CostError::Setting { field, value, expected } => write!(f, "sparse autoencoder setting {field} is {value}; expected {expected}"),
            CostError::NonFinite { what } => write!(f, "sparse autoencoder cost is not finite: {what}"),
        }
    }
}

impl std::error::Error for CostError {}

/// Buffers of one batch's passes, kept between evaluations.
#[derive(Default)]
pub struct Workspace {
    /// `a₂`, rows × n_hidden.
    hidden: Vec<f32>,
    /// `x̂`, rows × n_visible; `δ₃` in place after the reconstruction error is summed.
    output: Vec<f32>,
    /// `δ₂`, rows × n_hidden.
    hidden_delta: Vec<f32>,
    /// One 1 per case: bias gradients and `ρ̂` are products with it.
    ones: Vec<f32>,
    /// `ρ̂`.
    mean_activation: Vec<f32>,
    /// `β(−ρ/ρ̂ + (1−ρ)/(1−ρ̂))` per hidden unit.
    sparsity_delta: Vec<f32>,
}

/// Cases per task in the element-wise passes; fixed so that the `f64` sums do not depend on
/// the thread count.
const ROWS_PER_TASK: usize = 256;

impl Workspace {
    pub fn new() -> Workspace {
        Workspace::default()
    }

    fn prepare(&mut self, model: &Autoencoder, rows: usize) {
        let (v, h) = (model.n_visible, model.n_hidden);
        self.hidden.resize(rows * h, 0.0);
        self.output.resize(rows * v, 0.0);
        self.hidden_delta.resize(rows * h, 0.0);
        self.ones.resize(rows, 1.0);
        self.mean_activation.resize(h, 0.0);
        self.sparsity_delta.resize(h, 0.0);
    }

    /// The hidden activations `a₂` of the last evaluation.
    pub fn hidden(&self) -> &[f32] {
        &self.hidden
    }
}

/// `J` on the cases in `data` (rows × n_visible), forward passes only.
pub fn cost(backend: &dyn Backend, model: &Autoencoder, data: &[f32], settings: &CostSettings, work: &mut Workspace) -> Result<Cost, CostError> {
    forward(backend, model, data, settings, work, false)
}

/// `J` and its gradient, written into `gradient` (which has the model's shape).
pub fn cost_and_gradient(backend: &dyn Backend, model: &Autoencoder, data: &[f32], settings: &CostSettings, work: &mut Workspace, gradient: &mut Autoencoder) -> Result<Cost, CostError> {
    if (gradient.n_visible, gradient.n_hidden) != (model.n_visible, model.n_hidden) {
        return Err(CostError::Shape(format!(
            "the gradient is {}×{}, the model {}×{}",
            gradient.n_visible, gradient.n_hidden, model.n_visible, model.n_hidden
        )));
    }
    let cost = forward(backend, model, data, settings, work, true)?;
    backward(backend, model, data, settings, work, gradient);
    check_finite(gradient, "gradient ")?;
    Ok(cost)
}

/// The forward passes, `ρ̂` and the three terms; with `keep_output_delta` the output buffer
/// ends holding `δ₃` instead of `x̂`.
fn forward(backend: &dyn Backend, model: &Autoencoder, data: &[f32], settings: &CostSettings, work: &mut Workspace, keep_output_delta: bool) -> Result<Cost, CostError> {
    settings.validate()?;
    let (v, h) = (model.n_visible, model.n_hidden);
    if v == 0 || h == 0 || data.is_empty() || !data.len().is_multiple_of(v) {
        return Err(CostError::Shape(format!("{} data values do not make whole cases of {v} inputs (with {h} hidden units)", data.len())));
    }
    check_finite(model, "")?;
    let rows = data.len() / v;
    work.prepare(model, rows);
    let scale = 1.0 / rows as f32;

    model.encode(backend, data, &mut work.hidden);
    work.mean_activation.fill(0.0);
    backend.accumulate_outer((1, h), &work.ones, &work.hidden, scale, &mut work.mean_activation);
    model.decode(backend, &work.hidden, &mut work.output);

    let squared_error: f64 = work
        .output
        .par_chunks_mut(ROWS_PER_TASK * v)
        .zip(data.par_chunks(ROWS_PER_TASK * v))
        .map(|(output, x)| {
            let mut sum = 0.0f64;
            for (o, &x) in output.iter_mut().zip(x) {
                let error = *o - x;
                sum += f64::from(error) * f64::from(error);
                if keep_output_delta {
                    *o = error * *o * (1.0 - *o);
                }
            }
            sum
        })
        .collect::<Vec<f64>>()
        .into_iter()
        .sum();
    let reconstruction = 0.5 * squared_error / rows as f64;
    if !reconstruction.is_finite() {
        let bad = data.iter().position(|x| !x.is_finite());
        return Err(CostError::NonFinite {
            what: match bad {
                Some(k) => format!("input value {} of case {} is {}", k % v, k / v, data[k]),
                None => format!("the reconstruction error is {reconstruction}"),
            },
        });
    }

    let squares = |w: &[f32]| w.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>();
    let weight_decay = 0.5 * settings.weight_decay * (squares(&model.w1) + squares(&model.w2));

    let (rho, beta) = (settings.sparsity_target, settings.sparsity_weight);
    let mut divergence = 0.0f64;
    for (j, &mean) in work.mean_activation.iter().enumerate() {
        let mean = f64::from(mean);
        let kl = rho * (rho / mean).ln() + (1.0 - rho) * ((1.0 - rho) / (1.0 - mean)).ln();
        if !kl.is_finite() {
            return Err(CostError::NonFinite {
                what: format!("the sparsity penalty: hidden unit {j}'s mean activation ρ̂ is {mean}, so KL(ρ‖ρ̂) is {kl} (the unit is saturated over the whole batch)"),
            });
        }
        divergence += kl;
        work.sparsity_delta[j] = (beta * (-rho / mean + (1.0 - rho) / (1.0 - mean))) as f32;
    }
    let sparsity = beta * divergence;
    Ok(Cost { total: reconstruction + weight_decay + sparsity, reconstruction, weight_decay, sparsity, mean_activation: work.mean_activation.clone() })
}

/// The gradient from `δ₃` (in `work.output`), `a₂` and the sparsity term.
fn backward(backend: &dyn Backend, model: &Autoencoder, data: &[f32], settings: &CostSettings, work: &mut Workspace, gradient: &mut Autoencoder) {
    let (v, h) = (model.n_visible, model.n_hidden);
    let rows = data.len() / v;
    let scale = 1.0 / rows as f32;
    let lambda = settings.weight_decay as f32;
    let output_delta = &work.output;

    gradient.w2.iter_mut().zip(&model.w2).for_each(|(g, &w)| *g = lambda * w);
    backend.accumulate_outer((v, h), output_delta, &work.hidden, scale, &mut gradient.w2);
    gradient.b2.fill(0.0);
    backend.accumulate_outer((1, v), &work.ones, output_delta, scale, &mut gradient.b2);

    // δ₂ before the sigmoid's derivative: δ₃W₂ plus the sparsity term, as a "bias".
    backend.visible_to_hidden(model.decoder(), output_delta, &work.sparsity_delta, Activation::Linear, &mut work.hidden_delta);
    work.hidden_delta.par_chunks_mut(ROWS_PER_TASK * h).zip(work.hidden.par_chunks(ROWS_PER_TASK * h)).for_each(|(delta, a)| {
        delta.iter_mut().zip(a).for_each(|(d, &a)| *d *= a * (1.0 - a));
    });

    gradient.w1.iter_mut().zip(&model.w1).for_each(|(g, &w)| *g = lambda * w);
    backend.accumulate_outer((v, h), data, &work.hidden_delta, scale, &mut gradient.w1);
    gradient.b1.fill(0.0);
    backend.accumulate_outer((1, h), &work.ones, &work.hidden_delta, scale, &mut gradient.b1);
}

/// An error naming the first NaN or infinity among the parameters (or gradient blocks).
fn check_finite(model: &Autoencoder, prefix: &str) -> Result<(), CostError> {
    let h = model.n_hidden;
    for (name, block) in model.blocks() {
        if let Some(k) = block.iter().position(|x| !x.is_finite()) {
            let at = if name.starts_with('W') { format!("[visible {}, hidden {}]", k / h, k % h) } else { format!("[{k}]") };
            return Err(CostError::NonFinite { what: format!("{prefix}{name}{at} is {}", block[k]) });
        }
    }
    Ok(())
}
