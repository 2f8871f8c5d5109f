//! Fahlman's Quickprop as FANN 2.2 computes it (`fann_update_weights_quickprop`), on the
//! flat parameter vector of a `Network`, full batch.
//!
//! FANN's slope of a weight is the sum over the cases of `error · input`, the negative
//! gradient of half the summed squared error: here `slope = −N · g` (g the criterion's
//! gradient, a mean over N cases) `+ decay · w`. With ε = rate / N and shrink = μ/(1+μ):
//! a last step above 0.001: `+ε·slope` if slope > 0, then `μ · last step` if slope >
//! shrink · last slope, else the quadratic estimate `last step · slope / (last slope −
//! slope)`; below −0.001 the mirror image; otherwise `ε · slope` alone. Weights are clipped
//! to ±1500. FANN's parameters: μ 1.75, decay −0.0001, rate 0.7.

use super::config::StepRuleSettings;
use super::full_batch::{StepNote, StepRule};
use super::rprop::FANN_WEIGHT_LIMIT;

pub struct Quickprop {
    settings: StepRuleSettings,
    n_cases: f64,
    pub last_step: Vec<f64>,
    pub last_slope: Vec<f64>,
}

/// FANN treats a last step within ±0.001 as no step.
const FANN_STEP_THRESHOLD: f64 = 0.001;

impl Quickprop {
    pub fn new(n_params: usize, n_cases: usize, settings: StepRuleSettings) -> Quickprop {
        Quickprop { settings, n_cases: n_cases.max(1) as f64, last_step: vec![0.0; n_params], last_slope: vec![0.0; n_params] }
    }
}

impl StepRule for Quickprop {
    fn step(&mut self, params: &mut [f32], _error: f64, gradient: &[f32]) -> StepNote {
        let s = self.settings;
        let epsilon = s.learning_rate / self.n_cases;
        let mu = s.quickprop_mu;
        let shrink = mu / (1.0 + mu);
        for i in 0..params.len() {
            let w = params[i] as f64;
            let last_step = self.last_step[i];
            let last_slope = self.last_slope[i];
            let slope = -self.n_cases * gradient[i] as f64 + s.quickprop_decay * w;
            let mut next = 0.0;
            if last_step > FANN_STEP_THRESHOLD {
                if slope > 0.0 {
                    next += epsilon * slope;
                }
                next += if slope > shrink * last_slope { mu * last_step } else { last_step * slope / (last_slope - slope) };
            } else if last_step < -FANN_STEP_THRESHOLD {
                if slope < 0.0 {
                    next += epsilon * slope;
                }
                next += if slope < shrink * last_slope { mu * last_step } else { last_step * slope / (last_slope - slope) };
            } else {
                next += epsilon * slope;
            }
            self.last_step[i] = next;
            params[i] = (w + next).clamp(-FANN_WEIGHT_LIMIT, FANN_WEIGHT_LIMIT) as f32;
            self.last_slope[i] = slope;
        }
        StepNote::Stepped
    }
}
