//! Training a net's parameters on a set of cases, by conjugate gradient (full batch) or
//! by mini-batch SGD with momentum. The supervised stage and fine-tuning both come here;
//! they differ only in the net (with or without the RBM layers), the cases and the
//! tolerance.

use super::conjugate_gradient::{self, CgSettings, CgStop, Objective};
use super::criterion::{criterion, criterion_and_gradient, layer_offsets, penalty_term, Cases};
use super::dropout::{dropout_criterion_and_gradient, DropoutRates};
use super::full_batch::{train_full_batch, FullBatchSettings};
use super::held_out::{held_out_score, HeldOut, Shift};
use super::network::Network;
use super::SupervisedError;
use crate::backend::Backend;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// How one optimisation run went.
#[derive(Clone, Debug, Serialize)]
pub struct OptimiseReport {
    /// CG iterations or SGD epochs.
    pub iterations: usize,
    pub stop: StopKind,
    pub initial_criterion: f64,
    pub final_criterion: f64,
    pub seconds: f64,
    /// With a held-out slice: the epoch whose weights were kept, and their score
    /// (classification error for SoftMax outputs, mean squared error for linear ones).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_epoch: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_out_score: Option<f64>,
    /// Step rules (Toman's and FANN's): seconds in Toman's four stages, and the epochs that
    /// rolled back, backtracked or rejected a step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage_seconds: Option<super::criterion::StageSeconds>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollbacks: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopKind {
    /// Relative change in the criterion below the tolerance.
    Converged,
    /// No step along steepest descent lowers the criterion any more.
    NoProgress,
    MaxIterations,
    Cancelled,
    /// The held-out score found no new best for `patience` epochs; the best weights were kept.
    EarlyStopped,
    /// A step rule's error reached its target (`StepRuleSettings::target_error`).
    TargetReached,
}

/// The optimiser and its settings for one run.
#[derive(Clone, Copy, Debug)]
pub enum Method {
    ConjugateGradient { max_iterations: usize, tolerance: f64 },
    Sgd { epochs: usize, tolerance: f64, batch_size: usize, learning_rate: f64, final_rate_fraction: f64, momentum: f64, seed: u64, dropout: DropoutRates, shift: Option<Shift> },
    /// Toman's and FANN's rules (`full_batch`): epochs to a target error.
    StepRule(FullBatchSettings),
}

/// The criterion of a net as a function of its parameters, for the CG minimiser.
struct NetObjective<'a> {
    net: &'a mut Network,
    backend: &'a dyn Backend,
    cases: Cases<'a>,
    penalty: f64,
    params: Vec<f32>,
    gradient: Vec<f32>,
}

impl NetObjective<'_> {
    fn load(&mut self, x: &[f64]) {
        self.params.iter_mut().zip(x).for_each(|(p, &v)| *p = v as f32);
        self.net.set_params(&self.params);
    }
}

impl Objective for NetObjective<'_> {
    fn value(&mut self, x: &[f64]) -> f64 {
        self.load(x);
        criterion(self.net, self.backend, self.cases, self.penalty)
    }

    fn value_and_gradient(&mut self, x: &[f64], gradient: &mut [f64]) -> f64 {
        self.load(x);
        let value = criterion_and_gradient(self.net, self.backend, self.cases, self.penalty, &mut self.gradient);
        gradient.iter_mut().zip(&self.gradient).for_each(|(g, &v)| *g = v as f64);
        value
    }
}

/// Trains `net` on `cases`; `on_iteration(iteration, criterion)` reports progress and may
/// return `false` to stop. On NaN/Inf the net is left at its last finite parameters and an
/// error names the stage. With `held_out` (SGD only), training keeps the weights of the
/// epoch that scored best on those cases and stops after `patience` epochs without a new best.
#[allow(clippy::too_many_arguments)]
pub fn optimise(
    backend: &dyn Backend,
    net: &mut Network,
    cases: Cases,
    penalty: f64,
    method: Method,
    held_out: Option<HeldOut>,
    stage: &'static str,
    on_iteration: &mut dyn FnMut(usize, f64) -> bool,
) -> Result<OptimiseReport, SupervisedError> {
    let start = crate::clock::now_seconds();
    let initial_criterion = criterion(net, backend, cases, penalty);
    if !initial_criterion.is_finite() {
        return Err(SupervisedError::NonFinite { stage, iteration: 0 });
    }
    let mut best = None;
    let mut step_rule_figures = None;
    let (iterations, stop, final_criterion) = match method {
        Method::ConjugateGradient { max_iterations, tolerance } => {
            let settings = CgSettings { max_iterations, tolerance, ..CgSettings::default() };
            let mut x: Vec<f64> = net.to_params().into_iter().map(f64::from).collect();
            let n = x.len();
            let mut objective = NetObjective { net: &mut *net, backend, cases, penalty, params: vec![0.0; n], gradient: vec![0.0; n] };
            let outcome = conjugate_gradient::minimise(&mut objective, &mut x, settings, on_iteration);
            // The objective leaves the net at its last trial point: restore the accepted one.
            let params: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            net.set_params(&params);
            let outcome = outcome.map_err(|e| SupervisedError::NonFinite { stage, iteration: e.iteration })?;
            let stop = match outcome.stop {
                CgStop::Converged => StopKind::Converged,
                CgStop::NoProgress => StopKind::NoProgress,
                CgStop::MaxIterations => StopKind::MaxIterations,
                CgStop::Cancelled => StopKind::Cancelled,
            };
            (outcome.iterations, stop, criterion(net, backend, cases, penalty))
        }
        Method::Sgd { epochs, tolerance, batch_size, learning_rate, final_rate_fraction, momentum, seed, dropout, shift } => {
            let settings = SgdSettings { epochs, tolerance, batch_size, learning_rate, final_rate_fraction, momentum, seed, dropout, shift };
            let outcome = sgd(backend, net, cases, penalty, settings, held_out, stage, on_iteration)?;
            best = outcome.best;
            (outcome.epochs, outcome.stop, outcome.criterion)
        }
        Method::StepRule(settings) => {
            let mut report = |record: &super::full_batch::EpochRecord, _: &Network| on_iteration(record.epoch, record.criterion);
            let outcome = train_full_batch(backend, net, cases, penalty, settings, None, stage, &mut report)?;
            step_rule_figures = Some((outcome.times, outcome.rollbacks));
            (outcome.epochs, outcome.stop, outcome.criterion)
        }
    };
    if !net.is_finite() || !final_criterion.is_finite() {
        return Err(SupervisedError::NonFinite { stage, iteration: iterations });
    }
    Ok(OptimiseReport {
        iterations,
        stop,
        initial_criterion,
        final_criterion,
        seconds: crate::clock::now_seconds() - start,
        best_epoch: best.map(|(epoch, _)| epoch),
        held_out_score: best.map(|(_, score)| score),
        stage_seconds: step_rule_figures.map(|(times, _)| times),
        rollbacks: step_rule_figures.map(|(_, rollbacks)| rollbacks),
    })
}

#[derive(Clone, Copy)]
struct SgdSettings {
    epochs: usize,
    tolerance: f64,
    batch_size: usize,
    learning_rate: f64,
    final_rate_fraction: f64,
    momentum: f64,
    seed: u64,
    dropout: DropoutRates,
    shift: Option<Shift>,
}

struct SgdOutcome {
    epochs: usize,
    stop: StopKind,
    criterion: f64,
    /// (epoch, held-out score) of the weights kept.
    best: Option<(usize, f64)>,
}

/// Mini-batch SGD with momentum: `v ← μ·v − η·∇`, `θ ← θ + v`, cases reshuffled every
/// epoch, η falling linearly from its start to `final_rate_fraction` of it at the last epoch. The epoch's criterion is the mean of its batches' (no extra pass over the data);
/// the tolerance test compares successive epochs' means. With dropout each batch trains a
/// thinned net; with a shift each batch's images move by a fresh random offset.
#[allow(clippy::too_many_arguments)]
fn sgd(
    backend: &dyn Backend,
    net: &mut Network,
    cases: Cases,
    penalty: f64,
    settings: SgdSettings,
    held_out: Option<HeldOut>,
    stage: &'static str,
    on_iteration: &mut dyn FnMut(usize, f64) -> bool,
) -> Result<SgdOutcome, SupervisedError> {
    let n_cases = cases.n_cases();
    let mut rng = ChaCha8Rng::seed_from_u64(settings.seed);
    let mut order: Vec<usize> = (0..n_cases).collect();
    let mut last_good = net.clone();
    let mut velocity = vec![0.0f32; net.n_params()];
    let mut gradient = vec![0.0f32; net.n_params()];
    let offsets = layer_offsets(net);
    let (mut inputs, mut targets) = (Vec::new(), Vec::new());
    let mut previous: Option<f64> = None;
    let mut scratch = Vec::new();
    // The best held-out score so far, its epoch and its weights (epoch 0: the start).
    let mut best = held_out.map(|h| (0usize, held_out_score(net, backend, h.cases), net.clone()));
    let mu = settings.momentum as f32;
    // The penalty's gradient 2·PenFac·w/n_weights is folded into the update (weights only),
    // and its value added once per epoch: two fewer passes over the parameters per batch.
    let decay = (2.0 * penalty / net.n_weights().max(1) as f64) as f32;
    for epoch in 1..=settings.epochs {
        let progress = (epoch - 1) as f64 / settings.epochs.max(2).saturating_sub(1) as f64;
        let lr = (settings.learning_rate * (1.0 - (1.0 - settings.final_rate_fraction) * progress)) as f32;
        order.shuffle(&mut rng);
        let mut sum = 0.0;
        let batches = order.chunks(settings.batch_size.min(n_cases).max(1));
        let n_batches = batches.len();
        for batch in batches {
            inputs.clear();
            targets.clear();
            for &case in batch {
                inputs.extend_from_slice(&cases.inputs[case * cases.n_inputs..(case + 1) * cases.n_inputs]);
                targets.extend_from_slice(&cases.targets[case * cases.n_outputs..(case + 1) * cases.n_outputs]);
            }
            if let Some(shift) = &settings.shift {
                shift.apply(&mut inputs, &mut rng, &mut scratch);
            }
            let batch_cases = Cases { inputs: &inputs, targets: &targets, ..cases };
            sum += if settings.dropout.is_active() {
                dropout_criterion_and_gradient(net, backend, batch_cases, 0.0, settings.dropout, &mut rng, &mut gradient)
            } else {
                criterion_and_gradient(net, backend, batch_cases, 0.0, &mut gradient)
            };
            for (layer, &offset) in net.layers.iter_mut().zip(&offsets) {
                let n_weights = layer.weights.len();
                let (v_weights, v_bias) = velocity[offset..offset + layer.n_params()].split_at_mut(n_weights);
                let (g_weights, g_bias) = gradient[offset..offset + layer.n_params()].split_at(n_weights);
                for ((w, v), g) in layer.weights.iter_mut().zip(v_weights).zip(g_weights) {
                    *v = mu * *v - lr * (g + decay * *w);
                    *w += *v;
                }
                for ((b, v), g) in layer.bias.iter_mut().zip(v_bias).zip(g_bias) {
                    *v = mu * *v - lr * g;
                    *b += *v;
                }
            }
        }
        let value = sum / n_batches as f64 + penalty_term(net, penalty);
        if !value.is_finite() || !net.is_finite() {
            *net = last_good;
            return Err(SupervisedError::NonFinite { stage, iteration: epoch });
        }
        last_good.clone_from(net);
        let mut stop = None;
        if let (Some(h), Some((best_epoch, best_score, best_net))) = (&held_out, &mut best) {
            let score = held_out_score(net, backend, h.cases);
            if score <= *best_score {
                (*best_epoch, *best_score) = (epoch, score);
                best_net.clone_from(net);
            } else if epoch - *best_epoch >= h.patience.max(1) {
                stop = Some(StopKind::EarlyStopped);
            }
        }
        if !on_iteration(epoch, value) {
            stop = Some(StopKind::Cancelled);
        }
        if let Some(prev) = previous {
            if stop.is_none() && ((prev - value) / prev.abs().max(1e-300)).abs() < settings.tolerance {
                stop = Some(StopKind::Converged);
            }
        }
        previous = Some(value);
        if let Some(stop) = stop {
            return Ok(finish(net, backend, cases, penalty, epoch, stop, best));
        }
    }
    Ok(finish(net, backend, cases, penalty, settings.epochs, StopKind::MaxIterations, best))
}

/// Puts the best held-out weights back (if any) and measures the training criterion.
fn finish(net: &mut Network, backend: &dyn Backend, cases: Cases, penalty: f64, epochs: usize, stop: StopKind, best: Option<(usize, f64, Network)>) -> SgdOutcome {
    let best = best.map(|(epoch, score, best_net)| {
        *net = best_net;
        (epoch, score)
    });
    SgdOutcome { epochs, stop, criterion: criterion(net, backend, cases, penalty), best }
}
