//! Resilient propagation on the flat parameter vector of a `Network`, full batch, with
//! FANN 2.2's parameters (increase 1.2, decrease 0.5, Δmin 0, Δmax 50, Δ0 0.1):
//!
//! - [`IRpropPlus`]: iRprop+ (Igel & Hüsken, "Improving the Rprop learning algorithm",
//!   2000, fig. 2). For each weight with gradient g and last gradient g′:
//!   g′g > 0: Δ := min(Δ·η+, Δmax), Δw := −sign(g)·Δ, w += Δw;
//!   g′g < 0: Δ := max(Δ·η−, Δmin); if E(t) > E(t−1) then w −= Δw(t−1) (weight
//!   backtracking); g := 0;
//!   g′g = 0: Δw := −sign(g)·Δ, w += Δw.
//! - [`IRpropMinusFann`]: FANN 2.2's `fann_update_weights_irpropm` step for step, with
//!   FANN's slope (−g), its `max(Δ, 0.0001)` floor on the previous step, its `≥ 0` test
//!   (so the first step is Δ0·1.2) and its quirk that a zero slope still moves the weight
//!   up by Δ; weights clipped to ±1500.

use super::config::StepRuleSettings;
use super::full_batch::{StepNote, StepRule};

pub struct IRpropPlus {
    settings: StepRuleSettings,
    pub steps: Vec<f64>,
    pub last_gradient: Vec<f64>,
    pub last_change: Vec<f64>,
    pub last_error: Option<f64>,
}

impl IRpropPlus {
    pub fn new(n_params: usize, settings: StepRuleSettings) -> IRpropPlus {
        IRpropPlus { settings, steps: vec![settings.rprop_delta_zero; n_params], last_gradient: vec![0.0; n_params], last_change: vec![0.0; n_params], last_error: None }
    }
}

fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

impl StepRule for IRpropPlus {
    fn step(&mut self, params: &mut [f32], error: f64, gradient: &[f32]) -> StepNote {
        let s = self.settings;
        let error_rose = self.last_error.is_some_and(|last| error > last);
        let mut backtracked = false;
        for i in 0..params.len() {
            let g = gradient[i] as f64;
            let agreement = self.last_gradient[i] * g;
            if agreement < 0.0 {
                self.steps[i] = (self.steps[i] * s.rprop_decrease).max(s.rprop_delta_min);
                if error_rose {
                    params[i] = (params[i] as f64 - self.last_change[i]) as f32;
                    backtracked = true;
                }
                self.last_change[i] = 0.0;
                self.last_gradient[i] = 0.0;
            } else {
                if agreement > 0.0 {
                    self.steps[i] = (self.steps[i] * s.rprop_increase).min(s.rprop_delta_max);
                }
                let change = -sign(g) * self.steps[i];
                params[i] = (params[i] as f64 + change) as f32;
                self.last_change[i] = change;
                self.last_gradient[i] = g;
            }
        }
        self.last_error = Some(error);
        if backtracked {
            StepNote::RolledBack
        } else {
            StepNote::Stepped
        }
    }
}

pub struct IRpropMinusFann {
    settings: StepRuleSettings,
    pub steps: Vec<f64>,
    pub last_slope: Vec<f64>,
}

/// FANN keeps the previous step at least this large, "because then the training will stop".
const FANN_MIN_PREVIOUS_STEP: f64 = 0.0001;
/// FANN clips every weight to ±1500 after a step.
pub const FANN_WEIGHT_LIMIT: f64 = 1500.0;

impl IRpropMinusFann {
    pub fn new(n_params: usize, settings: StepRuleSettings) -> IRpropMinusFann {
        IRpropMinusFann { settings, steps: vec![settings.rprop_delta_zero; n_params], last_slope: vec![0.0; n_params] }
    }
}

impl StepRule for IRpropMinusFann {
    fn step(&mut self, params: &mut [f32], _error: f64, gradient: &[f32]) -> StepNote {
        let s = self.settings;
        for i in 0..params.len() {
            let previous_step = self.steps[i].max(FANN_MIN_PREVIOUS_STEP);
            let mut slope = -(gradient[i] as f64);
            let next_step = if self.last_slope[i] * slope >= 0.0 {
                (previous_step * s.rprop_increase).min(s.rprop_delta_max)
            } else {
                slope = 0.0;
                (previous_step * s.rprop_decrease).max(s.rprop_delta_min)
            };
            let w = params[i] as f64;
            let w = if slope < 0.0 { (w - next_step).max(-FANN_WEIGHT_LIMIT) } else { (w + next_step).min(FANN_WEIGHT_LIMIT) };
            params[i] = w as f32;
            self.steps[i] = next_step;
            self.last_slope[i] = slope;
        }
        StepNote::Stepped
    }
}
