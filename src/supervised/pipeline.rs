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
use super::network::{Layer, Network};
use super::optimise::{optimise, Method, OptimiseReport};
use super::SupervisedError;
use crate::backend::Backend;
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

fn method(config: &SupervisedConfig, stage: Stage) -> Method {
    let (max_iterations, tolerance, learning_rate) = match stage {
        Stage::Supervised => (config.max_iterations, config.tolerance, config.learning_rate),
        Stage::FineTune => (config.fine_tune_max_iterations, config.fine_tune_tolerance, config.fine_tune_learning_rate),
    };
    let optimizer = match stage {
        Stage::Supervised => config.optimizer,
        Stage::FineTune => config.fine_tune_optimizer.unwrap_or(config.optimizer),
    };
    match optimizer {
        Optimizer::ConjugateGradient => Method::ConjugateGradient { max_iterations, tolerance },
        Optimizer::Sgd => Method::Sgd {
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
        },
    }
}

/// Runs the supervised stage and optional fine-tuning. `inputs` (`n_cases × n_visible`)
/// are what the DBN's first layer sees; `targets` are `n_cases × n_outputs`.
/// `on_iteration(stage, iteration, criterion)` reports progress; `false` stops the stage.
/// Returns the supervised net (on top of the DBN); with fine-tuning, `dbn` is tuned too.
pub fn train_supervised(
    backend: &dyn Backend,
    dbn: &mut Dbn,
    inputs: &[f32],
    targets: &[f32],
    n_outputs: usize,
    config: &SupervisedConfig,
    on_iteration: &mut dyn FnMut(Stage, usize, f64) -> bool,
) -> Result<(Network, SupervisedOutcome), SupervisedError> {
    config.validate().map_err(SupervisedError::Config)?;
    let n_visible = dbn.layers.first().ok_or_else(|| SupervisedError::Data("the DBN has no layers".into()))?.n_visible;
    let n_cases = inputs.len() / n_visible;
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
    let features = dbn.propagate_up(backend, inputs, dbn.layers.len());
    let n_features = dbn.top().expect("checked above").n_hidden;
    let mut sizes = vec![n_features];
    sizes.extend(&config.hidden);
    sizes.push(n_outputs);
    let mut net = Network::zeros(&sizes, config.output);
    let feature_cases = Cases { inputs: &features, targets, n_inputs: n_features, n_outputs };

    let anneal_report = if config.anneal_iterations > 0 {
        let picked = spread(n_cases, config.anneal_cases);
        let (sub_inputs, sub_targets) = gather(&feature_cases, &picked);
        let sub = Cases { inputs: &sub_inputs, targets: &sub_targets, ..feature_cases };
        random_start(backend, &mut net, sub, config.allow_svd, config.seed);
        Some(anneal(backend, &mut net, sub, config.weight_penalty, config.anneal_iterations, config.allow_svd, config.seed))
    } else {
        random_start(backend, &mut net, feature_cases, config.allow_svd, config.seed);
        None
    };

    let mut report = |iteration: usize, value: f64| on_iteration(Stage::Supervised, iteration, value);
    let supervised = optimise(backend, &mut net, feature_cases, config.weight_penalty, method(config, Stage::Supervised), "the supervised stage", &mut report)?;
    drop(features);

    let fine_tune = if config.fine_tune {
        let mut complete = complete_network(dbn, &net);
        let cases = Cases { inputs, targets, n_inputs: n_visible, n_outputs };
        let mut report = |iteration: usize, value: f64| on_iteration(Stage::FineTune, iteration, value);
        let outcome = optimise(backend, &mut complete, cases, config.weight_penalty, method(config, Stage::FineTune), "fine-tuning", &mut report)?;
        split_complete(complete, dbn, &mut net);
        Some(outcome)
    } else {
        None
    };
    Ok((net, SupervisedOutcome { anneal: anneal_report, supervised, fine_tune }))
}

/// At most `max` case indices spread evenly through `n`.
pub fn spread(n: usize, max: usize) -> Vec<usize> {
    let take = n.min(max).max(1);
    (0..take).map(|k| k * n / take).collect()
}

/// The given cases' inputs and targets, copied in order.
fn gather(cases: &Cases, picked: &[usize]) -> (Vec<f32>, Vec<f32>) {
    let (ni, no) = (cases.n_inputs, cases.n_outputs);
    let inputs = picked.iter().flat_map(|&c| &cases.inputs[c * ni..(c + 1) * ni]).copied().collect();
    let targets = picked.iter().flat_map(|&c| &cases.targets[c * no..(c + 1) * no]).copied().collect();
    (inputs, targets)
}
