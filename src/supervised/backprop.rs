//! Plain back-propagation: full-batch gradient descent with momentum at a fixed rate
//! (`Δw := μ·Δw − η·g`, `w += Δw`; FANN's batch rule is μ = 0), and the incremental
//! (per-case) rule, which takes that step after every case in data order with the case's
//! own gradient (FANN's incremental training, whose momentum defaults to 0).

use super::config::StepRuleSettings;
use super::criterion::{criterion_and_gradient_timed, Cases, StageSeconds};
use super::full_batch::{StepNote, StepRule};
use super::network::Network;
use crate::backend::Backend;

pub struct BatchBackprop {
    settings: StepRuleSettings,
    pub velocity: Vec<f64>,
}

impl BatchBackprop {
    pub fn new(n_params: usize, settings: StepRuleSettings) -> BatchBackprop {
        BatchBackprop { settings, velocity: vec![0.0; n_params] }
    }
}

impl StepRule for BatchBackprop {
    fn step(&mut self, params: &mut [f32], _error: f64, gradient: &[f32]) -> StepNote {
        let s = self.settings;
        for ((w, v), &g) in params.iter_mut().zip(&mut self.velocity).zip(gradient) {
            *v = s.momentum * *v - s.learning_rate * g as f64;
            *w = (*w as f64 + *v) as f32;
        }
        StepNote::Stepped
    }
}

/// One incremental epoch: for every case in order, the gradient of that case's criterion
/// (the net's criterion on one case, plus the penalty) and a step with momentum. Returns the
/// mean of the cases' criteria, each taken just before its own step (what FANN reports).
pub fn incremental_epoch(backend: &dyn Backend, net: &mut Network, cases: Cases, penalty: f64, settings: &StepRuleSettings, velocity: &mut [f64], times: &mut StageSeconds) -> f64 {
    let mut sum = 0.0;
    let mut gradient = vec![0.0f32; net.n_params()];
    let mut params = net.to_params();
    for case in 0..cases.n_cases() {
        let one = Cases {
            inputs: &cases.inputs[case * cases.n_inputs..(case + 1) * cases.n_inputs],
            targets: &cases.targets[case * cases.n_outputs..(case + 1) * cases.n_outputs],
            ..cases
        };
        sum += criterion_and_gradient_timed(net, backend, one, penalty, &mut gradient, times, settings.fann_derivative_clip);
        let t = crate::clock::now_seconds();
        for ((w, v), &g) in params.iter_mut().zip(velocity.iter_mut()).zip(&gradient) {
            *v = settings.momentum * *v - settings.learning_rate * g as f64;
            *w = (*w as f64 + *v) as f32;
        }
        net.set_params(&params);
        times.update += crate::clock::now_seconds() - t;
    }
    sum / cases.n_cases().max(1) as f64
}
