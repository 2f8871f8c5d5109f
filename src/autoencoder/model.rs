//! The parameters of a sparse autoencoder: a sigmoid encoder `a₂ = f(W₁x + b₁)` and an untied
//! sigmoid decoder `x̂ = f(W₂a₂ + b₂)` (UFLDL / CS294A; Klaus & Welles eqs. 1–4).
//!
//! Both matrices are stored `n_visible × n_hidden`, row-major, the layout of every
//! [`Backend`](crate::backend::Backend) operation, so the encoder is `visible_to_hidden` on
//! `w1` and the decoder is `hidden_to_visible` on `w2`:
//! - `w1[i·h + j]` is UFLDL's `W1(j, i)`, the weight from input `i` to hidden unit `j`
//!   (the transpose of UFLDL's `hiddenSize × visibleSize` matrix, i.e. its column-major `W1(:)`);
//! - `w2[i·h + j]` is UFLDL's `W2(i, j)`, the weight from hidden unit `j` to output `i`.
//!
//! The flat parameter vector is UFLDL's `θ = [W1(:); W2(:); b1; b2]` block order: `w1`,
//! `w2` (each row-major as stored), `b1`, `b2`.

use crate::backend::{Activation, Backend, Weights};
use crate::rng::{Purpose, RngStream};

#[derive(Clone, Debug, PartialEq)]
pub struct Autoencoder {
    pub n_visible: usize,
    pub n_hidden: usize,
    /// Encoder weights, `n_visible × n_hidden`.
    pub w1: Vec<f32>,
    /// Encoder (hidden) biases, `n_hidden`.
    pub b1: Vec<f32>,
    /// Decoder weights, `n_visible × n_hidden`.
    pub w2: Vec<f32>,
    /// Decoder (output) biases, `n_visible`.
    pub b2: Vec<f32>,
}

/// The Philox step of each weight matrix's initial values.
const W1_STEP: u64 = 1;
const W2_STEP: u64 = 2;

impl Autoencoder {
    /// All parameters zero; also the shape of a gradient.
    pub fn zeros(n_visible: usize, n_hidden: usize) -> Autoencoder {
        Autoencoder { n_visible, n_hidden, w1: vec![0.0; n_visible * n_hidden], b1: vec![0.0; n_hidden], w2: vec![0.0; n_visible * n_hidden], b2: vec![0.0; n_visible] }
    }

    /// UFLDL's `initializeParameters`: weights uniform in `[−r, r)`, `r = √6 / √(v + h + 1)`,
    /// biases zero. Weight `k` of matrix `W1` (`W2`) is `(2u − 1)·r` with `u` uniform `k` of
    /// the Philox stream `(seed, step 1 (2), InitialWeights)`, so a GPU can draw the same.
    pub fn initialise(n_visible: usize, n_hidden: usize, seed: u64) -> Autoencoder {
        let r = (6.0f64.sqrt() / ((n_visible + n_hidden + 1) as f64).sqrt()) as f32;
        let draw = |step: u64| {
            let stream = RngStream::new(seed, step, Purpose::InitialWeights);
            (0..n_visible * n_hidden).map(|k| (2.0 * stream.uniform(k as u64) - 1.0) * r).collect::<Vec<f32>>()
        };
        Autoencoder { w1: draw(W1_STEP), w2: draw(W2_STEP), ..Autoencoder::zeros(n_visible, n_hidden) }
    }

    pub fn n_params(&self) -> usize {
        2 * self.n_visible * self.n_hidden + self.n_hidden + self.n_visible
    }

    /// The blocks in the order of the flat parameter vector.
    pub fn blocks(&self) -> [(&'static str, &[f32]); 4] {
        [("W1", &self.w1), ("W2", &self.w2), ("b1", &self.b1), ("b2", &self.b2)]
    }

    fn blocks_mut(&mut self) -> [&mut Vec<f32>; 4] {
        [&mut self.w1, &mut self.w2, &mut self.b1, &mut self.b2]
    }

    /// The flat parameter vector (`W1, W2, b1, b2`) in `f64`, for the optimisers.
    pub fn to_params(&self) -> Vec<f64> {
        self.blocks().iter().flat_map(|(_, block)| block.iter().map(|&v| f64::from(v))).collect()
    }

    /// Writes the flat parameter vector into `out` (which holds `n_params()` values).
    pub fn write_params(&self, out: &mut [f64]) {
        assert_eq!(out.len(), self.n_params(), "parameter vector length");
        let values = self.blocks().into_iter().flat_map(|(_, block)| block.iter());
        out.iter_mut().zip(values).for_each(|(o, &v)| *o = f64::from(v));
    }

    /// Sets every parameter from the flat vector (rounded to `f32`).
    pub fn set_params(&mut self, params: &[f64]) {
        assert_eq!(params.len(), self.n_params(), "parameter vector length");
        let mut rest = params;
        for block in self.blocks_mut() {
            let (head, tail) = rest.split_at(block.len());
            block.iter_mut().zip(head).for_each(|(b, &p)| *b = p as f32);
            rest = tail;
        }
    }

    pub fn encoder(&self) -> Weights<'_> {
        Weights { values: &self.w1, n_visible: self.n_visible, n_hidden: self.n_hidden }
    }

    pub fn decoder(&self) -> Weights<'_> {
        Weights { values: &self.w2, n_visible: self.n_visible, n_hidden: self.n_hidden }
    }

    /// Hidden activations `a₂` (rows × n_hidden) of the cases in `visible` (rows × n_visible):
    /// the learnt features.
    pub fn encode(&self, backend: &dyn Backend, visible: &[f32], hidden: &mut [f32]) {
        backend.visible_to_hidden(self.encoder(), visible, &self.b1, Activation::Sigmoid, hidden);
    }

    /// Outputs `x̂` (rows × n_visible) from hidden activations.
    pub fn decode(&self, backend: &dyn Backend, hidden: &[f32], output: &mut [f32]) {
        backend.hidden_to_visible(self.decoder(), hidden, &self.b2, Activation::Sigmoid, output);
    }

    /// The reconstruction `x̂` of each case.
    pub fn reconstruct(&self, backend: &dyn Backend, visible: &[f32]) -> Vec<f32> {
        let rows = visible.len() / self.n_visible.max(1);
        let mut hidden = vec![0.0; rows * self.n_hidden];
        self.encode(backend, visible, &mut hidden);
        let mut output = vec![0.0; rows * self.n_visible];
        self.decode(backend, &hidden, &mut output);
        output
    }
}
