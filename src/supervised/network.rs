//! A feed-forward net: logistic hidden layers, then a linear or SoftMax output layer.
//!
//! Layers use the RBM layout (`n_in × n_out` weights, row `i` for input `i`), so a trained
//! RBM's weights and hidden biases become a hidden layer unchanged, and every product goes
//! through the `Backend` exactly as the RBM trainer's do.

use crate::backend::{Activation, Backend, Weights};
use serde::{Deserialize, Serialize};

/// The output units and the criterion they are trained with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputKind {
    /// Identity outputs, mean squared error over cases and outputs.
    Linear,
    /// SoftMax outputs, negative log-likelihood per case.
    SoftMax,
    /// Logistic (sigmoid) outputs, as every layer of Toman's all-sigmoid MLPs: half the
    /// squared error per case, `Σ (o − t)² / (2 · n_cases)`, whose negative gradient is
    /// Toman's (and FANN's) summed delta divided by the cases (docs/TOMAN.md).
    Logistic,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Layer {
    pub n_in: usize,
    pub n_out: usize,
    /// `n_in × n_out`, row-major.
    pub weights: Vec<f32>,
    pub bias: Vec<f32>,
}

impl Layer {
    pub fn zeros(n_in: usize, n_out: usize) -> Layer {
        Layer { n_in, n_out, weights: vec![0.0; n_in * n_out], bias: vec![0.0; n_out] }
    }

    pub fn as_weights(&self) -> Weights<'_> {
        Weights { values: &self.weights, n_visible: self.n_in, n_hidden: self.n_out }
    }

    pub fn n_params(&self) -> usize {
        self.weights.len() + self.bias.len()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Network {
    /// Hidden layers (logistic) followed by the output layer.
    pub layers: Vec<Layer>,
    pub output: OutputKind,
}

/// Smallest probability whose log is taken, so a confidently wrong SoftMax output costs a
/// large but finite amount instead of infinity.
pub const MIN_PROBABILITY: f64 = 1e-30;

impl Network {
    /// A net of the given sizes (inputs, hidden sizes…, outputs) with all parameters zero.
    pub fn zeros(sizes: &[usize], output: OutputKind) -> Network {
        assert!(sizes.len() >= 2, "a net needs at least inputs and outputs");
        Network { layers: sizes.windows(2).map(|w| Layer::zeros(w[0], w[1])).collect(), output }
    }

    pub fn n_inputs(&self) -> usize {
        self.layers[0].n_in
    }

    pub fn n_outputs(&self) -> usize {
        self.layers.last().expect("at least one layer").n_out
    }

    /// Inputs, hidden sizes and outputs, e.g. `[784, 500, 10]`.
    pub fn sizes(&self) -> Vec<usize> {
        let mut sizes = vec![self.n_inputs()];
        sizes.extend(self.layers.iter().map(|l| l.n_out));
        sizes
    }

    pub fn n_params(&self) -> usize {
        self.layers.iter().map(Layer::n_params).sum()
    }

    /// Weights only: the penalty's denominator (biases are not penalised).
    pub fn n_weights(&self) -> usize {
        self.layers.iter().map(|l| l.weights.len()).sum()
    }

    /// Every parameter in one vector: per layer its weights, then its biases.
    pub fn to_params(&self) -> Vec<f32> {
        let mut params = Vec::with_capacity(self.n_params());
        for layer in &self.layers {
            params.extend_from_slice(&layer.weights);
            params.extend_from_slice(&layer.bias);
        }
        params
    }

    pub fn set_params(&mut self, params: &[f32]) {
        assert_eq!(params.len(), self.n_params());
        let mut at = 0;
        for layer in &mut self.layers {
            let w = layer.weights.len();
            layer.weights.copy_from_slice(&params[at..at + w]);
            layer.bias.copy_from_slice(&params[at + w..at + w + layer.n_out]);
            at += w + layer.n_out;
        }
    }

    /// True for the parameters the penalty applies to, in `to_params` order.
    pub fn penalised_mask(&self) -> Vec<bool> {
        let mut mask = Vec::with_capacity(self.n_params());
        for layer in &self.layers {
            mask.extend(std::iter::repeat_n(true, layer.weights.len()));
            mask.extend(std::iter::repeat_n(false, layer.n_out));
        }
        mask
    }

    pub fn is_finite(&self) -> bool {
        self.layers.iter().all(|l| l.weights.iter().chain(&l.bias).all(|x| x.is_finite()))
    }

    /// Activations of every layer for `rows` cases: `[hidden 1, …, outputs]`; the outputs
    /// are SoftMax probabilities or linear values.
    pub fn forward_all(&self, backend: &dyn Backend, inputs: &[f32]) -> Vec<Vec<f32>> {
        let rows = inputs.len() / self.n_inputs();
        let mut activations: Vec<Vec<f32>> = Vec::with_capacity(self.layers.len());
        let last = self.layers.len() - 1;
        for (k, layer) in self.layers.iter().enumerate() {
            let input = if k == 0 { inputs } else { &activations[k - 1] };
            let mut out = vec![0.0; rows * layer.n_out];
            let activation = if k == last && self.output != OutputKind::Logistic { Activation::Linear } else { Activation::Sigmoid };
            backend.visible_to_hidden(layer.as_weights(), input, &layer.bias, activation, &mut out);
            if k == last && self.output == OutputKind::SoftMax {
                softmax_rows(&mut out, layer.n_out);
            }
            activations.push(out);
        }
        activations
    }

    /// What the output layer sees: the last hidden layer's activations, or the inputs
    /// themselves for a net without hidden layers.
    pub fn output_layer_inputs(&self, backend: &dyn Backend, inputs: &[f32]) -> Vec<f32> {
        let rows = inputs.len() / self.n_inputs();
        let mut current = inputs.to_vec();
        for layer in &self.layers[..self.layers.len() - 1] {
            let mut out = vec![0.0; rows * layer.n_out];
            backend.visible_to_hidden(layer.as_weights(), &current, &layer.bias, Activation::Sigmoid, &mut out);
            current = out;
        }
        current
    }

    /// The outputs for `rows` cases (row-major, `rows × n_outputs`).
    pub fn predict(&self, backend: &dyn Backend, inputs: &[f32]) -> Vec<f32> {
        let mut outputs = Vec::with_capacity(inputs.len() / self.n_inputs() * self.n_outputs());
        for block in inputs.chunks(BLOCK_ROWS * self.n_inputs()) {
            outputs.extend(self.forward_all(backend, block).pop().expect("at least one layer"));
        }
        outputs
    }
}

/// Cases per forward/backward block: activations of a 2000-unit layer stay near 16 MB and
/// the products are still tall enough for the GEMM tiles.
pub const BLOCK_ROWS: usize = 2048;

/// Row-wise SoftMax, subtracting each row's largest logit so `exp` cannot overflow.
pub fn softmax_rows(values: &mut [f32], width: usize) {
    for row in values.chunks_exact_mut(width) {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0.0f32;
        for x in row.iter_mut() {
            *x = (*x - max).exp();
            sum += *x;
        }
        for x in row.iter_mut() {
            *x /= sum;
        }
    }
}
