//! Toman's per-weight adaptive step sizes with momentum and robust training (Toman 2011,
//! *Hardware accelerated neural networks*, §6.7 "Weight correction kernel" and §6.8
//! "Robust training kernel"), on the flat parameter vector of a `Network`.
//!
//! Per epoch, given the error E and the gradient g at the current weights w:
//! 1. robust training (when on): E < best → best := (E, w); else E ≥ best · growth → w :=
//!    best weights, every rate × `robust_factor`, both delta memories cleared, and no
//!    update this epoch (Toman's gradient and update kernels return early);
//! 2. otherwise, for every weight, with δ = −g (Toman's summed `local_gradient · input`
//!    over the patterns divided by their number):
//!    rate × (`up` if δ and the last δ have the same strict sign, else `down`), capped at
//!    `max_step`; last δ := δ; δ_m := δ + momentum · last δ_m; w := w + rate · δ_m;
//!    a non-finite new weight is not written, its memories are cleared and (robust) its
//!    rate × `robust_factor`.
//!
//! "Same direction" is strict (both > 0 or both < 0, as GPUMLib's `SAME_DIRECTION`), so the
//! first epoch, whose last δ is 0, multiplies every rate by `down`.

use super::config::StepRuleSettings;
use super::full_batch::{StepNote, StepRule};

pub struct AdaptiveStep {
    settings: StepRuleSettings,
    /// The step size of every weight.
    pub rates: Vec<f64>,
    /// δ of the last update, without momentum (Toman's `last_delta_without_learning_momentum`).
    pub last_raw_delta: Vec<f64>,
    /// δ of the last update with momentum (Toman's `last_delta`).
    pub last_delta: Vec<f64>,
    /// The lowest error seen and the weights that gave it.
    pub best: Option<(f64, Vec<f32>)>,
}

fn same_direction(a: f64, b: f64) -> bool {
    (a > 0.0 && b > 0.0) || (a < 0.0 && b < 0.0)
}

impl AdaptiveStep {
    pub fn new(n_params: usize, settings: StepRuleSettings) -> AdaptiveStep {
        AdaptiveStep { settings, rates: vec![settings.initial_rate; n_params], last_raw_delta: vec![0.0; n_params], last_delta: vec![0.0; n_params], best: None }
    }
}

impl StepRule for AdaptiveStep {
    fn step(&mut self, params: &mut [f32], error: f64, gradient: &[f32]) -> StepNote {
        let s = self.settings;
        if s.robust {
            match &mut self.best {
                Some((best, weights)) if error < *best => {
                    *best = error;
                    weights.copy_from_slice(params);
                }
                None => self.best = Some((error, params.to_vec())),
                Some((best, weights)) if error >= *best * s.max_error_growth => {
                    params.copy_from_slice(weights);
                    self.rates.iter_mut().for_each(|r| *r *= s.robust_factor);
                    self.last_raw_delta.fill(0.0);
                    self.last_delta.fill(0.0);
                    return StepNote::RolledBack;
                }
                Some(_) => {}
            }
        }
        for i in 0..params.len() {
            let delta = -(gradient[i] as f64);
            let factor = if same_direction(self.last_raw_delta[i], delta) { s.up } else { s.down };
            let rate = (self.rates[i] * factor).min(s.max_step);
            self.rates[i] = rate;
            self.last_raw_delta[i] = delta;
            let delta = delta + s.momentum * self.last_delta[i];
            self.last_delta[i] = delta;
            let w = (params[i] as f64 + rate * delta) as f32;
            if w.is_finite() {
                params[i] = w;
            } else {
                self.last_delta[i] = 0.0;
                self.last_raw_delta[i] = 0.0;
                if s.robust {
                    self.rates[i] = rate * s.robust_factor;
                }
            }
        }
        StepNote::Stepped
    }

    fn best(&self) -> Option<(f64, &[f32])> {
        self.best.as_ref().map(|(e, w)| (*e, &w[..]))
    }
}
