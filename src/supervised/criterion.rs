//! The training criterion of a supervised net and its exact gradient by backpropagation.
//!
//! - Linear outputs: mean squared error, `Σ (o − t)² / (n_cases · n_outputs)`.
//! - SoftMax outputs: negative log-likelihood per case, `−ln max(p_c, 1e-30) / n_cases`, where
//!   the true class `c` of a case is its largest target (see [`true_class`]).
//! - Logistic outputs (Toman's all-sigmoid MLPs): half the squared error per case,
//!   `Σ (o − t)² / (2 · n_cases)`.
//! - All plus the weight penalty `PenFac · Σ w² / n_weights` (biases excluded), so the
//!   penalty's strength does not depend on the size of the net.
//!
//! Cases are processed in blocks of `BLOCK_ROWS`, and every matrix product is a `Backend`
//! call, so the CPU GEMM (or a GPU backend) does the heavy lifting.

use super::network::{Network, OutputKind, BLOCK_ROWS, MIN_PROBABILITY};
use crate::backend::{Activation, Backend};

/// Cases as the net sees them: `n_cases × n_inputs` inputs and `n_cases × n_outputs`
/// targets, row-major.
#[derive(Clone, Copy)]
pub struct Cases<'a> {
    pub inputs: &'a [f32],
    pub targets: &'a [f32],
    pub n_inputs: usize,
    pub n_outputs: usize,
}

impl Cases<'_> {
    pub fn n_cases(&self) -> usize {
        self.inputs.len() / self.n_inputs.max(1)
    }

    /// Block `b` of at most `rows` cases: (inputs, targets).
    fn blocks(&self, rows: usize) -> impl Iterator<Item = (&[f32], &[f32])> {
        self.inputs.chunks(rows * self.n_inputs).zip(self.targets.chunks(rows * self.n_outputs))
    }
}

/// The class of a case for SoftMax outputs: the index of its largest target, the first one
/// on ties (as the confusion matrix counts it). Masters, *Deep Belief Nets in C++ and CUDA C*
/// vol. 1, ch. 2: "If the output is SoftMax, we find the true class by looking for the largest
/// target value", and ch. 5 for a forced classifier on a database: "for each case, the target
/// having the maximum value will be assumed to identify the class of the case". Taking the
/// targets themselves as weights instead lets real-valued targets (negative, or summing to more
/// than one) drive the log-likelihood below zero without bound.
pub fn true_class(targets: &[f32]) -> usize {
    let mut best = 0;
    for (i, &t) in targets.iter().enumerate() {
        if t > targets[best] {
            best = i;
        }
    }
    best
}

/// The criterion without the penalty, summed (not averaged) over the given outputs, `width`
/// to a case.
pub(super) fn data_error_sum(output: OutputKind, outputs: &[f32], targets: &[f32], width: usize) -> f64 {
    match output {
        OutputKind::Linear | OutputKind::Logistic => outputs.iter().zip(targets).map(|(&o, &t)| ((o - t) as f64).powi(2)).sum(),
        OutputKind::SoftMax => outputs
            .chunks_exact(width)
            .zip(targets.chunks_exact(width))
            .map(|(p, t)| -(p[true_class(t)] as f64).max(MIN_PROBABILITY).ln())
            .sum(),
    }
}

/// What the sum of `data_error_sum` is divided by.
pub(super) fn error_denominator(output: OutputKind, n_cases: usize, n_outputs: usize) -> f64 {
    match output {
        OutputKind::Linear => (n_cases * n_outputs).max(1) as f64,
        OutputKind::SoftMax => n_cases.max(1) as f64,
        OutputKind::Logistic => 2.0 * n_cases.max(1) as f64,
    }
}

/// `PenFac · Σ w² / n_weights` over the weights (not biases).
pub fn penalty_term(net: &Network, penalty: f64) -> f64 {
    if penalty == 0.0 {
        return 0.0;
    }
    let sum: f64 = net.layers.iter().flat_map(|l| &l.weights).map(|&w| (w as f64) * (w as f64)).sum();
    penalty * sum / net.n_weights().max(1) as f64
}

/// The criterion without the penalty (what is reported as the training error).
pub fn data_error(net: &Network, backend: &dyn Backend, cases: Cases) -> f64 {
    let mut sum = 0.0;
    for (inputs, targets) in cases.blocks(BLOCK_ROWS) {
        let outputs = net.forward_all(backend, inputs).pop().expect("at least one layer");
        sum += data_error_sum(net.output, &outputs, targets, cases.n_outputs);
    }
    sum / error_denominator(net.output, cases.n_cases(), cases.n_outputs)
}

/// The full criterion: data error plus penalty.
pub fn criterion(net: &Network, backend: &dyn Backend, cases: Cases, penalty: f64) -> f64 {
    data_error(net, backend, cases) + penalty_term(net, penalty)
}

/// The criterion and its gradient with respect to every parameter, in `Network::to_params`
/// order (each layer's weights, then its biases). `gradient` is overwritten.
pub fn criterion_and_gradient(net: &Network, backend: &dyn Backend, cases: Cases, penalty: f64, gradient: &mut [f32]) -> f64 {
    criterion_and_gradient_timed(net, backend, cases, penalty, gradient, &mut StageSeconds::default(), false)
}

/// FANN 2.2 clips a logistic unit's value to [0.01, 0.99] before taking its derivative
/// `y(1 − y)` (`fann_activation_derived`), so a saturated unit still passes back about 1%
/// of its error. With `fann_clip` the backward pass does the same, for epoch-by-epoch parity
/// with FANN (docs/TOMAN.md); the result is then not the criterion's exact gradient.
pub const FANN_DERIVATIVE_CLIP: (f32, f32) = (0.01, 0.99);

fn logistic_slope(a: f32, fann_clip: bool) -> f32 {
    let a = if fann_clip { a.clamp(FANN_DERIVATIVE_CLIP.0, FANN_DERIVATIVE_CLIP.1) } else { a };
    a * (1.0 - a)
}

/// Seconds spent in the stages of full-batch backpropagation, Toman's four (output
/// calculation, error calculation, gradient calculation, weights update: his Table 6).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct StageSeconds {
    /// Forward passes (the outputs of every layer).
    pub forward: f64,
    /// The error sum and the output deltas.
    pub error: f64,
    /// Back-propagation: hidden deltas and the weight and bias gradients.
    pub gradient: f64,
    /// The optimiser's rule (steps, rates, rollbacks); timed by the caller.
    pub update: f64,
}

impl StageSeconds {
    pub fn total(&self) -> f64 {
        self.forward + self.error + self.gradient + self.update
    }
}

/// `criterion_and_gradient`, adding the seconds of each stage to `times`; `fann_clip` takes
/// logistic derivatives as FANN does (`FANN_DERIVATIVE_CLIP`).
pub fn criterion_and_gradient_timed(net: &Network, backend: &dyn Backend, cases: Cases, penalty: f64, gradient: &mut [f32], times: &mut StageSeconds, fann_clip: bool) -> f64 {
    assert_eq!(gradient.len(), net.n_params());
    let clock = crate::clock::now_seconds;
    let t = clock();
    gradient.fill(0.0);
    let offsets = layer_offsets(net);
    let denominator = error_denominator(net.output, cases.n_cases(), cases.n_outputs);
    let mut sum = 0.0;
    times.gradient += clock() - t;
    for (inputs, targets) in cases.blocks(BLOCK_ROWS) {
        let t = clock();
        let activations = net.forward_all(backend, inputs);
        let outputs = activations.last().expect("at least one layer");
        let t_forward = clock();
        times.forward += t_forward - t;
        sum += data_error_sum(net.output, outputs, targets, cases.n_outputs);
        let mut delta = if fann_clip && net.output == OutputKind::Logistic {
            let scale = (1.0 / denominator) as f32;
            outputs.iter().zip(targets).map(|(&o, &t)| 2.0 * (o - t) * logistic_slope(o, true) * scale).collect()
        } else {
            output_delta(net, outputs, targets, denominator)
        };
        let t_error = clock();
        times.error += t_error - t_forward;
        for k in (0..net.layers.len()).rev() {
            let layer = &net.layers[k];
            let input = if k == 0 { inputs } else { &activations[k - 1] };
            let (weights_grad, bias_grad) = gradient[offsets[k]..offsets[k] + layer.n_params()].split_at_mut(layer.weights.len());
            backend.accumulate_outer((layer.n_in, layer.n_out), input, &delta, 1.0, weights_grad);
            for row in delta.chunks_exact(layer.n_out) {
                bias_grad.iter_mut().zip(row).for_each(|(g, d)| *g += d);
            }
            if k > 0 {
                delta = hidden_delta(backend, layer, &delta, &activations[k - 1], fann_clip);
            }
        }
        times.gradient += clock() - t_error;
    }
    let t = clock();
    add_penalty_gradient(net, penalty, gradient);
    times.gradient += clock() - t;
    sum / denominator + penalty_term(net, penalty)
}

/// Adds the penalty's gradient `2 · PenFac · w / n_weights` to every weight's entry.
pub(super) fn add_penalty_gradient(net: &Network, penalty: f64, gradient: &mut [f32]) {
    if penalty == 0.0 {
        return;
    }
    let scale = (2.0 * penalty / net.n_weights().max(1) as f64) as f32;
    for (layer, &offset) in net.layers.iter().zip(&layer_offsets(net)) {
        let grad = &mut gradient[offset..offset + layer.weights.len()];
        grad.iter_mut().zip(&layer.weights).for_each(|(g, w)| *g += scale * w);
    }
}

/// Where each layer's parameters start in the flat vector.
pub fn layer_offsets(net: &Network) -> Vec<usize> {
    let mut offsets = Vec::with_capacity(net.layers.len());
    let mut at = 0;
    for layer in &net.layers {
        offsets.push(at);
        at += layer.n_params();
    }
    offsets
}

/// ∂criterion/∂(output logits or values) for one block, already divided by the
/// criterion's denominator. SoftMax: `p − onehot(true class)`.
pub(super) fn output_delta(net: &Network, outputs: &[f32], targets: &[f32], denominator: f64) -> Vec<f32> {
    let width = net.n_outputs();
    let scale = (1.0 / denominator) as f32;
    match net.output {
        OutputKind::Linear => outputs.iter().zip(targets).map(|(o, t)| 2.0 * (o - t) * scale).collect(),
        // Through the sigmoid: ∂/∂logit of (o − t)² is 2 (o − t) · o (1 − o).
        OutputKind::Logistic => outputs.iter().zip(targets).map(|(o, t)| 2.0 * (o - t) * o * (1.0 - o) * scale).collect(),
        OutputKind::SoftMax => {
            let mut delta = Vec::with_capacity(outputs.len());
            for (p, t) in outputs.chunks_exact(width).zip(targets.chunks_exact(width)) {
                let class = true_class(t);
                delta.extend(p.iter().enumerate().map(|(k, p)| (p - if k == class { 1.0 } else { 0.0 }) * scale));
            }
            delta
        }
    }
}

/// Backpropagates `delta` through `layer` into the logistic layer below, whose
/// activations are `below`: `(delta · Wᵀ) ⊙ a(1 − a)` (`a` clipped as FANN does with
/// `fann_clip`).
fn hidden_delta(backend: &dyn Backend, layer: &super::network::Layer, delta: &[f32], below: &[f32], fann_clip: bool) -> Vec<f32> {
    let zero_bias = vec![0.0; layer.n_in];
    let mut back = vec![0.0; below.len()];
    backend.hidden_to_visible(layer.as_weights(), delta, &zero_bias, Activation::Linear, &mut back);
    back.iter_mut().zip(below).for_each(|(b, &a)| *b *= logistic_slope(a, fann_clip));
    back
}
