//! The supervised stages of the DEEP pipeline on a pretrained DBN:
//!
//! 1. the training inputs go up the RBM stack once (hidden probabilities) to become the
//!    supervised net's inputs;
//! 2. the supervised net starts from annealed (or small random) weights and trains by CG or
//!    SGD to the supervised tolerance;
//! 3. optionally the complete model — every RBM's weights and hidden biases as logistic
//!    layers, then the supervised layers — trains by backprop to the fine-tuning tolerance,
//!    and the tuned weights go back into the DBN (visible biases are not part of the
//!    feed-forward net and stay as pretrained).

use super::anneal::{anneal, random_start, AnnealReport};
use super::config::{Optimizer, SupervisedConfig};
use super::criterion::Cases;
use super::dropout::DropoutRates;
use super::held_out::{gather, split_held_out, HeldOut, Shift};
use super::network::{Layer, Network};
use super::optimise::{optimise, Method, OptimiseReport};
use super::SupervisedError;
use crate::backend::Backend;
use crate::data::split::spread_cases;
use crate::model::Dbn;
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Supervised,
    FineTune,
}

#[derive(Clone, Debug, Serialize)]
pub struct SupervisedOutcome {
    pub anneal: Option<AnnealReport>,
    pub supervised: OptimiseReport,
    pub fine_tune: Option<OptimiseReport>,
}

/// The RBM layers as logistic layers, then `net`'s layers.
pub fn complete_network(dbn: &Dbn, net: &Network) -> Network {
    let mut layers: Vec<Layer> = dbn
        .layers
        .iter()
        .map(|rbm| Layer { n_in: rbm.n_visible, n_out: rbm.n_hidden, weights: rbm.weights.clone(), bias: rbm.hidden_bias.clone() })
        .collect();
    layers.extend(net.layers.iter().cloned());
    Network { layers, output: net.output }
}

/// Puts a complete network's layers back: the first ones into the RBMs, the rest into `net`.
fn split_complete(complete: Network, dbn: &mut Dbn, net: &mut Network) {
    let mut layers = complete.layers.into_iter();
    for rbm in &mut dbn.layers {
        let layer = layers.next().expect("one layer per RBM");
        rbm.weights = layer.weights;
        rbm.hidden_bias = layer.bias;
    }
    net.layers = layers.collect();
}

fn optimizer_of(config: &SupervisedConfig, stage: Stage) -> Optimizer {
    match stage {
        Stage::Supervised => config.optimizer,
        Stage::FineTune => config.fine_tune_optimizer.unwrap_or(config.optimizer),
    }
}

fn method(config: &SupervisedConfig, stage: Stage, image_shape: Option<(usize, usize)>) -> Method {
    let (max_iterations, tolerance, learning_rate) = match stage {
        Stage::Supervised => (config.max_iterations, config.tolerance, config.learning_rate),
        Stage::FineTune => (config.fine_tune_max_iterations, config.fine_tune_tolerance, config.fine_tune_learning_rate),
    };
    match optimizer_of(config, stage) {
        Optimizer::ConjugateGradient => Method::ConjugateGradient { max_iterations, tolerance },
        rule if rule.is_step_rule() => Method::StepRule(super::full_batch::FullBatchSettings { optimizer: rule, rules: config.step_rules, epochs: max_iterations }),
        _ => Method::Sgd {
            epochs: max_iterations,
            tolerance,
            batch_size: config.batch_size,
            learning_rate,
            final_rate_fraction: config.final_rate_fraction,
            momentum: config.momentum,
            seed: config.seed ^ (stage as u64 + 1),
            dropout: match stage {
                Stage::Supervised => DropoutRates { input: 0.0, hidden: 0.0 },
                Stage::FineTune => DropoutRates { input: config.fine_tune_input_dropout as f32, hidden: config.fine_tune_hidden_dropout as f32 },
            },
            // Only fine-tuning sees pixels; the supervised stage's inputs are features.
            shift: match (stage, image_shape) {
                (Stage::FineTune, Some(shape)) if config.fine_tune_shift > 0 => Some(Shift { shape, max_pixels: config.fine_tune_shift }),
                _ => None,
            },
        },
    }
}

/// The supervised net before its stage trains: `config`'s layers on `features` (the inputs up
/// the RBM stack), annealed on a spread of the cases or started small and random, from
/// `config.seed`. [`train_supervised`] starts here; so does the page's device path (issue 21),
/// so that both train from the same weights.
pub fn supervised_start(backend: &dyn Backend, features: Cases, config: &SupervisedConfig) -> (Network, Option<AnnealReport>) {
    let mut sizes = vec![features.n_inputs];
    sizes.extend(&config.hidden);
    sizes.push(features.n_outputs);
    let mut net = Network::zeros(&sizes, config.output);
    let anneal_report = if config.anneal_iterations > 0 {
        let picked = spread_cases(features.n_cases(), config.anneal_cases);
        let (sub_inputs, sub_targets) = gather(&features, &picked);
        let sub = Cases { inputs: &sub_inputs, targets: &sub_targets, ..features };
        random_start(backend, &mut net, sub, config.allow_svd, config.seed);
        Some(anneal(backend, &mut net, sub, config.weight_penalty, config.anneal_iterations, config.allow_svd, config.seed))
    } else {
        random_start(backend, &mut net, features, config.allow_svd, config.seed);
        None
    };
    (net, anneal_report)
}

/// Runs the supervised stage and optional fine-tuning. `inputs` (`n_cases × n_visible`)
/// are what the DBN's first layer sees; `targets` are `n_cases × n_outputs`; `image_shape`
/// (rows, columns), where the inputs are images, lets SGD fine-tuning shift them.
/// With `validation_fraction` and SGD, that share of the cases (stratified by class for
/// SoftMax outputs) never trains: it picks the epoch whose weights are kept.
/// `on_iteration(stage, iteration, criterion)` reports progress; `false` stops the stage.
/// Returns the supervised net (on top of the DBN); with fine-tuning, `dbn` is tuned too.
pub fn train_supervised(
    backend: &dyn Backend,
    dbn: &mut Dbn,
    inputs: &[f32],
    targets: &[f32],
    n_outputs: usize,
    config: &SupervisedConfig,
    image_shape: Option<(usize, usize)>,
    on_iteration: &mut dyn FnMut(Stage, usize, f64) -> bool,
) -> Result<(Network, SupervisedOutcome), SupervisedError> {
    config.validate().map_err(SupervisedError::Config)?;
    // Zero RBM layers (a plain MLP): the inputs per case follow from the targets'.
    let n_visible = match dbn.layers.first() {
        Some(first) => first.n_visible,
        None => inputs.len().checked_div(targets.len().checked_div(n_outputs).unwrap_or(0)).unwrap_or(0),
    };
    let n_cases = inputs.len().checked_div(n_visible).unwrap_or(0);
    if n_cases == 0 || inputs.len() != n_cases * n_visible || targets.len() != n_cases * n_outputs || n_outputs == 0 {
        return Err(SupervisedError::Data(format!(
            "{} input values and {} target values do not make whole cases of {n_visible} inputs and {n_outputs} targets",
            inputs.len(),
            targets.len()
        )));
    }
    if let Some(k) = targets.iter().position(|t| !t.is_finite()) {
        return Err(SupervisedError::Data(format!("target {} of case {} is not a finite number", k % n_outputs, k / n_outputs)));
    }
    let image_shape = image_shape.filter(|&(rows, cols)| rows.checked_mul(cols) == Some(n_visible));
    let all = Cases { inputs, targets, n_inputs: n_visible, n_outputs };
    let uses_sgd = |stage| optimizer_of(config, stage) == Optimizer::Sgd;
    let wants_split = config.validation_fraction > 0.0 && (uses_sgd(Stage::Supervised) || (config.fine_tune && uses_sgd(Stage::FineTune)));
    let split = wants_split
        .then(|| {
            let stratify = config.output == super::network::OutputKind::SoftMax;
            let (train, held) = split_held_out(targets, n_outputs, stratify, config.validation_fraction, config.seed);
            let (train_inputs, train_targets) = gather(&all, &train);
            let (held_inputs, held_targets) = gather(&all, &held);
            (train_inputs, train_targets, held_inputs, held_targets)
        })
        .filter(|(_, _, _, held_targets)| !held_targets.is_empty());
    // What a stage trains on, and its held-out cases. Once a share is held out no stage may
    // train on it (a CG stage that had seen it would make its score worthless to the SGD
    // stage after it); only SGD stages score it, since full-batch CG converges to a
    // penalised optimum with no epoch to choose.
    let stage_cases = |stage| match &split {
        Some((ti, tt, hi, ht)) => (&ti[..], &tt[..], uses_sgd(stage).then_some((&hi[..], &ht[..]))),
        None => (inputs, targets, None),
    };
    let patience = config.patience;

    let (stage_inputs, stage_targets, stage_held) = stage_cases(Stage::Supervised);
    let through = dbn.layers.len();
    let features = dbn.propagate_up(backend, stage_inputs, through);
    let held_features = stage_held.map(|(held_inputs, held_targets)| (dbn.propagate_up(backend, held_inputs, through), held_targets));
    let n_features = dbn.top().map_or(n_visible, |top| top.n_hidden);
    let feature_cases = Cases { inputs: &features, targets: stage_targets, n_inputs: n_features, n_outputs };
    let held_out = held_features.as_ref().map(|(f, t)| HeldOut { cases: Cases { inputs: f, targets: t, n_inputs: n_features, n_outputs }, patience });
    let (mut net, anneal_report) = supervised_start(backend, feature_cases, config);

    let mut report = |iteration: usize, value: f64| on_iteration(Stage::Supervised, iteration, value);
    let supervised = optimise(backend, &mut net, feature_cases, config.weight_penalty, method(config, Stage::Supervised, image_shape), held_out, "the supervised stage", &mut report)?;
    drop(features);
    drop(held_features);

    // A plain MLP's supervised stage already trained every layer: nothing is left to tune.
    let fine_tune = if config.fine_tune && !dbn.layers.is_empty() {
        let mut complete = complete_network(dbn, &net);
        let (stage_inputs, stage_targets, stage_held) = stage_cases(Stage::FineTune);
        let cases = Cases { inputs: stage_inputs, targets: stage_targets, n_inputs: n_visible, n_outputs };
        let held_out = stage_held.map(|(i, t)| HeldOut { cases: Cases { inputs: i, targets: t, n_inputs: n_visible, n_outputs }, patience });
        let mut report = |iteration: usize, value: f64| on_iteration(Stage::FineTune, iteration, value);
        let outcome = optimise(backend, &mut complete, cases, config.weight_penalty, method(config, Stage::FineTune, image_shape), held_out, "fine-tuning", &mut report)?;
        split_complete(complete, dbn, &mut net);
        Some(outcome)
    } else {
        None
    };
    Ok((net, SupervisedOutcome { anneal: anneal_report, supervised, fine_tune }))
}
