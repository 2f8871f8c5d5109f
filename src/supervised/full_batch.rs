//! The epoch loop of Toman's and FANN's rules (adaptive step, iRprop+, FANN's iRprop−,
//! Quickprop, bold driver, batch and incremental back-propagation) and Levenberg–Marquardt on
//! a `Network`.
//!
//! Every epoch evaluates the error and the full-batch gradient at the current weights
//! (Toman's output, error and gradient stages), reports that error as the epoch's, stops if
//! it reached the target, then lets the rule change the weights (Toman's update stage). So
//! epoch e's error is that of the weights after e − 1 updates, as Toman's log counts them.
//! Incremental epochs instead report the mean of each case's error just before its own step
//! (FANN's figure; no extra pass).
//!
//! The error the rules compare and the target applies to is Toman's "RMS/2" for logistic
//! outputs, `sqrt(Σ (d − y)² / (cases · outputs)) / 2` (his error calculation kernel), and
//! the criterion (with its penalty) for linear and SoftMax outputs. The gradient is always
//! the criterion's: for logistic outputs `Σ (o − t)² / (2 · cases)`, whose negative is
//! Toman's summed `local_gradient · input` over the patterns divided by their number.

use super::adaptive_step::AdaptiveStep;
use super::backprop::{incremental_epoch, BatchBackprop};
use super::bold_driver::BoldDriver;
use super::config::{Optimizer, StepRuleSettings};
use super::levenberg_marquardt::{lm_epoch, LmStep};
use super::criterion::{criterion, criterion_and_gradient_timed, penalty_term, Cases, StageSeconds};
use super::network::{Network, OutputKind};
use super::optimise::StopKind;
use super::quickprop::Quickprop;
use super::rprop::{IRpropMinusFann, IRpropPlus};
use super::SupervisedError;
use crate::backend::Backend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// What a rule did with an epoch's gradient.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepNote {
    Stepped,
    /// Robust training restored the best weights (adaptive step), or iRprop+ took back
    /// some weights' last changes after the error rose.
    RolledBack,
    /// The bold driver undid the last step and took a shorter one.
    Rejected,
}

/// One optimiser's update, given the error and the full-batch gradient at `params`.
pub trait StepRule {
    fn step(&mut self, params: &mut [f32], error: f64, gradient: &[f32]) -> StepNote;
    /// The lowest error seen and its weights, for rules that keep them.
    fn best(&self) -> Option<(f64, &[f32])> {
        None
    }
}

/// The rule of a step-rule optimiser (`None` for incremental, which is not full batch, and
/// Levenberg–Marquardt, which needs the Jacobian).
pub fn step_rule(optimizer: Optimizer, n_params: usize, n_cases: usize, settings: StepRuleSettings) -> Option<Box<dyn StepRule>> {
    Some(match optimizer {
        Optimizer::AdaptiveStep => Box::new(AdaptiveStep::new(n_params, settings)),
        Optimizer::Rprop => Box::new(IRpropPlus::new(n_params, settings)),
        Optimizer::RpropMinus => Box::new(IRpropMinusFann::new(n_params, settings)),
        Optimizer::Quickprop => Box::new(Quickprop::new(n_params, n_cases, settings)),
        Optimizer::BoldDriver => Box::new(BoldDriver::new(n_params, settings)),
        Optimizer::Backprop => Box::new(BatchBackprop::new(n_params, settings)),
        Optimizer::Incremental | Optimizer::LevenbergMarquardt | Optimizer::ConjugateGradient | Optimizer::Sgd => return None,
    })
}

/// Toman's error from the criterion's data part: for logistic outputs the criterion is
/// `Σ/(2N)`, so RMS/2 = `sqrt(2 · criterion / outputs) / 2`; other outputs report the
/// criterion itself.
pub fn reported_error(output: OutputKind, data_criterion: f64, penalty: f64, n_outputs: usize) -> f64 {
    match output {
        OutputKind::Logistic => (2.0 * data_criterion / n_outputs.max(1) as f64).max(0.0).sqrt() / 2.0,
        _ => data_criterion + penalty,
    }
}

/// Toman's RMS/2 of a net on cases (any outputs: `sqrt(Σ (o − t)² / (N · K)) / 2`).
pub fn rms_half(net: &Network, backend: &dyn Backend, cases: Cases) -> f64 {
    let outputs = net.predict(backend, cases.inputs);
    let sum: f64 = outputs.iter().zip(cases.targets).map(|(&o, &t)| ((o - t) as f64).powi(2)).sum();
    (sum / outputs.len().max(1) as f64).sqrt() / 2.0
}

#[derive(Clone, Copy, Debug)]
pub struct FullBatchSettings {
    pub optimizer: Optimizer,
    pub rules: StepRuleSettings,
    pub epochs: usize,
}

/// One epoch as the rule saw it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct EpochRecord {
    pub epoch: usize,
    /// Toman's RMS/2 (logistic outputs) or the criterion, at the epoch's start.
    pub error: f64,
    pub criterion: f64,
    pub note: StepNote,
}

#[derive(Clone, Debug, Serialize)]
pub struct FullBatchOutcome {
    pub epochs: usize,
    pub stop: StopKind,
    /// The error and criterion of the weights kept.
    pub error: f64,
    pub criterion: f64,
    pub rollbacks: usize,
    pub times: StageSeconds,
}

/// Trains `net` by a step rule for at most `settings.epochs` epochs (or to the target
/// error). `on_epoch` sees every epoch and may return `false` to stop. At the end a rule
/// that keeps its best weights (adaptive step with robust training, bold driver) leaves
/// them in `net` if they beat the last ones. A non-finite error stops with an error (Toman's
/// robust adaptive step instead counts it as `cases · outputs`, his kernel's value, and rolls
/// back).
#[allow(clippy::too_many_arguments)]
pub fn train_full_batch(
    backend: &dyn Backend,
    net: &mut Network,
    cases: Cases,
    penalty: f64,
    settings: FullBatchSettings,
    velocity_state: Option<&mut Vec<f64>>,
    stage: &'static str,
    on_epoch: &mut dyn FnMut(&EpochRecord, &Network) -> bool,
) -> Result<FullBatchOutcome, SupervisedError> {
    settings.rules.validate().map_err(SupervisedError::Config)?;
    let levenberg_marquardt = settings.optimizer == Optimizer::LevenbergMarquardt;
    if levenberg_marquardt {
        super::levenberg_marquardt::check(net, cases, penalty)?;
    }
    let mut lambda = settings.rules.lm_lambda;
    let n_params = net.n_params();
    let n_cases = cases.n_cases();
    let mut rule = step_rule(settings.optimizer, n_params, n_cases, settings.rules);
    let mut own_velocity = vec![0.0; n_params];
    let velocity = velocity_state.unwrap_or(&mut own_velocity);
    velocity.resize(n_params, 0.0);
    let mut times = StageSeconds::default();
    let mut gradient = vec![0.0f32; n_params];
    let mut params = net.to_params();
    let mut rollbacks = 0;
    let robust_nan = settings.optimizer == Optimizer::AdaptiveStep && settings.rules.robust;
    let target = settings.rules.target_error;
    let mut stop = StopKind::MaxIterations;
    let mut stuck = false;
    let mut epochs = 0;
    for epoch in 1..=settings.epochs {
        epochs = epoch;
        let value = match &rule {
            Some(_) => criterion_and_gradient_timed(net, backend, cases, penalty, &mut gradient, &mut times, settings.rules.fann_derivative_clip),
            None if levenberg_marquardt => {
                let t = crate::clock::now_seconds();
                let value = criterion(net, backend, cases, penalty);
                times.error += crate::clock::now_seconds() - t;
                value
            }
            // Incremental: the epoch runs here, and its error is the mean over the cases of
            // each one's error just before its own step, as FANN reports it.
            None => incremental_epoch(backend, net, cases, penalty, &settings.rules, velocity, &mut times),
        };
        let mut error = reported_error(net.output, value - penalty_term(net, penalty), penalty_term(net, penalty), cases.n_outputs);
        if !error.is_finite() || !value.is_finite() {
            if robust_nan {
                error = (n_cases * cases.n_outputs) as f64;
            } else {
                return Err(SupervisedError::NonFinite { stage, iteration: epoch });
            }
        }
        let reached = target > 0.0 && error <= target;
        let t = crate::clock::now_seconds();
        let note = match (&mut rule, reached) {
            (_, true) => StepNote::Stepped,
            (Some(rule), false) => {
                let note = rule.step(&mut params, error, &gradient);
                net.set_params(&params);
                note
            }
            (None, false) if levenberg_marquardt => match lm_epoch(backend, net, cases, value, &mut lambda, settings.rules.lm_factor, &mut times) {
                LmStep::Accepted { trials: 1 } => StepNote::Stepped,
                LmStep::Accepted { .. } => StepNote::Rejected,
                LmStep::NoProgress => {
                    stuck = true;
                    StepNote::Rejected
                }
            },
            (None, false) => StepNote::Stepped,
        };
        if rule.is_some() {
            times.update += crate::clock::now_seconds() - t;
        }
        if note != StepNote::Stepped {
            rollbacks += 1;
        }
        let keep_going = on_epoch(&EpochRecord { epoch, error, criterion: value, note }, net);
        if reached {
            stop = StopKind::TargetReached;
            break;
        }
        if stuck {
            stop = StopKind::NoProgress;
            break;
        }
        if !keep_going {
            stop = StopKind::Cancelled;
            break;
        }
    }
    let mut final_criterion = criterion(net, backend, cases, penalty);
    let mut final_error = reported_error(net.output, final_criterion - penalty_term(net, penalty), penalty_term(net, penalty), cases.n_outputs);
    if let Some((best_error, best_weights)) = rule.as_ref().and_then(|r| r.best()) {
        if final_error.is_nan() || final_error > best_error {
            net.set_params(best_weights);
            final_criterion = criterion(net, backend, cases, penalty);
            final_error = reported_error(net.output, final_criterion - penalty_term(net, penalty), penalty_term(net, penalty), cases.n_outputs);
        }
    }
    if !net.is_finite() || !final_criterion.is_finite() {
        return Err(SupervisedError::NonFinite { stage, iteration: epochs });
    }
    Ok(FullBatchOutcome { epochs, stop, error: final_error, criterion: final_criterion, rollbacks, times })
}

/// Every weight and bias uniform in [−range, range] (FANN's `fann_randomize_weights`,
/// whose default range is 0.1), from a seeded ChaCha8 stream in `to_params` order.
pub fn uniform_start(net: &mut Network, range: f64, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let params: Vec<f32> = (0..net.n_params()).map(|_| rng.random_range(-range..=range) as f32).collect();
    net.set_params(&params);
}
