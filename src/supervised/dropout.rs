//! Dropout (Srivastava et al. 2014) for mini-batch SGD: an extension beyond Masters' DEEP,
//! which regularises fine-tuning of a large net on few cases. Each input and each logistic
//! hidden unit is zeroed with its rate in every case of every batch, and the survivors are
//! scaled by 1/(1 − rate) ("inverted" dropout), so the trained net is used as it is, with
//! no rescaling at test time. The criterion reported is that of the thinned nets.

use super::criterion::{add_penalty_gradient, data_error_sum, error_denominator, layer_offsets, output_delta, penalty_term, Cases};
use super::network::{softmax_rows, Network, OutputKind};
use crate::backend::{Activation, Backend};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Fractions of units dropped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DropoutRates {
    pub input: f32,
    pub hidden: f32,
}

impl DropoutRates {
    pub fn is_active(&self) -> bool {
        self.input > 0.0 || self.hidden > 0.0
    }
}

/// Zeroes each value with probability `rate` and scales the rest by 1/(1 − rate); returns
/// the per-value factors (0 or 1/(1 − rate)).
fn drop_units(values: &mut [f32], rate: f32, rng: &mut ChaCha8Rng) -> Vec<f32> {
    let keep_scale = 1.0 / (1.0 - rate);
    let factors: Vec<f32> = values.iter().map(|_| if rng.random::<f32>() < rate { 0.0 } else { keep_scale }).collect();
    values.iter_mut().zip(&factors).for_each(|(v, f)| *v *= f);
    factors
}

/// The criterion of one thinned net on `cases` (one batch) and its gradient, as
/// `criterion_and_gradient` computes them for the whole net.
pub fn dropout_criterion_and_gradient(net: &Network, backend: &dyn Backend, cases: Cases, penalty: f64, rates: DropoutRates, rng: &mut ChaCha8Rng, gradient: &mut [f32]) -> f64 {
    assert_eq!(gradient.len(), net.n_params());
    gradient.fill(0.0);
    let last = net.layers.len() - 1;
    let rows = cases.n_cases();
    // inputs[k]: what layer k sees (thinned); hidden[k]: layer k's activations before thinning.
    let mut inputs: Vec<Vec<f32>> = vec![cases.inputs.to_vec()];
    let mut factors: Vec<Option<Vec<f32>>> = vec![None];
    let mut hidden: Vec<Vec<f32>> = Vec::with_capacity(last);
    if rates.input > 0.0 {
        factors[0] = Some(drop_units(&mut inputs[0], rates.input, rng));
    }
    let mut outputs = Vec::new();
    for (k, layer) in net.layers.iter().enumerate() {
        let mut out = vec![0.0; rows * layer.n_out];
        let activation = if k == last && net.output != OutputKind::Logistic { Activation::Linear } else { Activation::Sigmoid };
        backend.visible_to_hidden(layer.as_weights(), &inputs[k], &layer.bias, activation, &mut out);
        if k == last {
            if net.output == OutputKind::SoftMax {
                softmax_rows(&mut out, layer.n_out);
            }
            outputs = out;
        } else {
            hidden.push(out.clone());
            factors.push((rates.hidden > 0.0).then(|| drop_units(&mut out, rates.hidden, rng)));
            inputs.push(out);
        }
    }
    let denominator = error_denominator(net.output, rows, cases.n_outputs);
    let sum = data_error_sum(net.output, &outputs, cases.targets, cases.n_outputs);
    let mut delta = output_delta(net, &outputs, cases.targets, denominator);
    let offsets = layer_offsets(net);
    for k in (0..net.layers.len()).rev() {
        let layer = &net.layers[k];
        let (weights_grad, bias_grad) = gradient[offsets[k]..offsets[k] + layer.n_params()].split_at_mut(layer.weights.len());
        backend.accumulate_outer((layer.n_in, layer.n_out), &inputs[k], &delta, 1.0, weights_grad);
        for row in delta.chunks_exact(layer.n_out) {
            bias_grad.iter_mut().zip(row).for_each(|(g, d)| *g += d);
        }
        if k > 0 {
            let zero_bias = vec![0.0; layer.n_in];
            let mut back = vec![0.0; rows * layer.n_in];
            backend.hidden_to_visible(layer.as_weights(), &delta, &zero_bias, Activation::Linear, &mut back);
            let below = &hidden[k - 1];
            match &factors[k] {
                Some(f) => back.iter_mut().zip(below).zip(f).for_each(|((b, a), f)| *b *= a * (1.0 - a) * f),
                None => back.iter_mut().zip(below).for_each(|(b, a)| *b *= a * (1.0 - a)),
            }
            delta = back;
        }
    }
    add_penalty_gradient(net, penalty, gradient);
    sum / denominator + penalty_term(net, penalty)
}
