//! The bold driver (Bishop, *Neural Networks for Pattern Recognition*, §7.5.3, as Toman
//! §3.3.2 retells it): full-batch gradient descent with momentum whose one rate η grows
//! (× `bold_increase`, 1.1) after a step that did not raise the error, while a step that
//! raised it is undone: the weights go back, η × `bold_decrease` (0.5), the momentum is
//! cleared, and a shorter step is taken from there along the kept gradient. Every epoch is
//! one evaluation of the error and gradient.

use super::config::StepRuleSettings;
use super::full_batch::{StepNote, StepRule};

pub struct BoldDriver {
    settings: StepRuleSettings,
    pub rate: f64,
    pub velocity: Vec<f64>,
    /// The last accepted point: its error, weights and gradient.
    accepted: Option<(f64, Vec<f32>, Vec<f32>)>,
}

impl BoldDriver {
    pub fn new(n_params: usize, settings: StepRuleSettings) -> BoldDriver {
        BoldDriver { settings, rate: settings.learning_rate, velocity: vec![0.0; n_params], accepted: None }
    }
}

impl StepRule for BoldDriver {
    fn step(&mut self, params: &mut [f32], error: f64, gradient: &[f32]) -> StepNote {
        let s = self.settings;
        let note = match &mut self.accepted {
            Some((last_error, weights, _)) if error > *last_error => {
                params.copy_from_slice(weights);
                self.rate *= s.bold_decrease;
                self.velocity.fill(0.0);
                StepNote::Rejected
            }
            Some((last_error, weights, kept)) => {
                self.rate *= s.bold_increase;
                *last_error = error;
                weights.copy_from_slice(params);
                kept.copy_from_slice(gradient);
                StepNote::Stepped
            }
            None => {
                self.accepted = Some((error, params.to_vec(), gradient.to_vec()));
                StepNote::Stepped
            }
        };
        let kept = &self.accepted.as_ref().expect("set above").2;
        for ((w, v), &g) in params.iter_mut().zip(&mut self.velocity).zip(kept) {
            *v = s.momentum * *v - self.rate * g as f64;
            *w = (*w as f64 + *v) as f32;
        }
        note
    }

    fn best(&self) -> Option<(f64, &[f32])> {
        self.accepted.as_ref().map(|(e, w, _)| (*e, &w[..]))
    }
}
