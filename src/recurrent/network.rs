//! A recurrent net's parameters and its forward step (Moore eqs. 3.1–3.2, `CPURNN::feedForward`):
//!
//! `net^i(τ) = Σ_k w^{i,k} a^k(τ) + Σ_q μ^{i,q} a^q(τ − 1) + b^i`, `a^i(τ) = tanh(net^i(τ))`,
//! layers in increasing order (every feed-forward source is computed first), and the
//! derivative `∂a^i/∂net^i = 1 − a^i²` kept with the frame (Moore's `dXdNet`).

use super::error::RecurrentError;
use super::graph::{Block, GraphSpec, Source};
use crate::rng::{Purpose, RngStream};

#[derive(Clone, Debug, PartialEq)]
pub struct Network {
    pub graph: GraphSpec,
    pub blocks: Vec<Block>,
    /// Every block, concatenated (`graph.blocks()` order).
    pub params: Vec<f32>,
}

/// One time step's layers (Moore's timeframe): `net`, `a` and `∂a/∂net` per layer. Layer 0's
/// `a` is the input; its `net` and `deriv` are unused.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub net: Vec<Vec<f32>>,
    pub act: Vec<Vec<f32>>,
    pub deriv: Vec<Vec<f32>>,
}

impl Frame {
    /// All zeros: the state before a sequence's first step (`a(−1) = 0`).
    pub fn zeros(graph: &GraphSpec) -> Self {
        let layers = || graph.layers.iter().map(|&n| vec![0.0f32; n]).collect::<Vec<_>>();
        Frame { net: layers(), act: layers(), deriv: layers() }
    }

    pub fn output(&self) -> &[f32] {
        self.act.last().expect("a frame has layers")
    }
}

/// `out += matrix (rows × cols, row-major) · vector`, summed in order (a vector product: O(n²),
/// below where a GEMM call pays).
pub fn add_matrix_vector(matrix: &[f32], cols: usize, vector: &[f32], out: &mut [f32]) {
    for (o, row) in out.iter_mut().zip(matrix.chunks_exact(cols)) {
        *o += row.iter().zip(vector).map(|(w, x)| w * x).sum::<f32>();
    }
}

/// `out += matrixᵀ · vector` for a `rows × cols` row-major matrix (`out` has `cols` entries).
pub fn add_transposed_matrix_vector(matrix: &[f32], cols: usize, vector: &[f32], out: &mut [f32]) {
    for (row, &v) in matrix.chunks_exact(cols).zip(vector) {
        if v != 0.0 {
            out.iter_mut().zip(row).for_each(|(o, w)| *o += w * v);
        }
    }
}

impl Network {
    /// A net with the given parameters, checked.
    pub fn new(graph: GraphSpec, params: Vec<f32>) -> Result<Self, RecurrentError> {
        graph.validate()?;
        let blocks = graph.blocks();
        let expected: usize = blocks.iter().map(Block::len).sum();
        if params.len() != expected {
            return Err(RecurrentError::new("params", format!("has {} values; expected {expected} for this graph", params.len())));
        }
        if let Some(i) = params.iter().position(|v| !v.is_finite()) {
            let block = blocks.iter().find(|b| i >= b.offset && i < b.offset + b.len()).expect("a block holds every index");
            let local = i - block.offset;
            return Err(RecurrentError::new(
                format!("params {}[{}, {}]", block.name(), local / block.cols, local % block.cols),
                format!("is {}; expected a finite number", params[i]),
            ));
        }
        Ok(Network { graph, blocks, params })
    }

    /// Weights uniform in `[−r, r)`, `r = scale / √(fan-in of the destination layer)` (every
    /// incoming unit, recurrent ones and the bias included), from the Philox stream
    /// (`InitialWeights`, step = 1000 + block index, so a GPU or NumPy port draws the same).
    /// Biases are drawn the same way, not zero: tanh is odd and the ±0.3 signals symmetric, so
    /// from zero biases the parity-like targets of addition (every sum bit is uncorrelated
    /// with every input) have a zero gradient towards the even terms they need.
    pub fn initialise(graph: GraphSpec, seed: u64, scale: f32) -> Result<Self, RecurrentError> {
        graph.validate()?;
        super::error::positive("init_scale", scale as f64)?;
        let blocks = graph.blocks();
        let mut fan_in = vec![0usize; graph.layers.len()];
        for b in &blocks {
            fan_in[b.to] += b.cols;
        }
        let mut params = vec![0.0f32; blocks.iter().map(Block::len).sum()];
        for (index, b) in blocks.iter().enumerate() {
            let r = scale / (fan_in[b.to] as f32).sqrt();
            let stream = RngStream::new(seed, 1000 + index as u64, Purpose::InitialWeights);
            for (i, p) in params[b.offset..b.offset + b.len()].iter_mut().enumerate() {
                *p = (2.0 * stream.uniform(i as u64) - 1.0) * r;
            }
        }
        Network::new(graph, params)
    }

    pub fn block_values(&self, block: &Block) -> &[f32] {
        &self.params[block.offset..block.offset + block.len()]
    }

    /// The incoming blocks of layer `i`.
    pub fn blocks_into(&self, i: usize) -> impl Iterator<Item = &Block> {
        self.blocks.iter().filter(move |b| b.to == i)
    }

    /// One forward step: `frame` from `input` and the previous step's `prev`.
    pub fn forward(&self, prev: &Frame, input: &[f32], frame: &mut Frame) {
        assert_eq!(input.len(), self.graph.layers[0], "input length");
        frame.act[0].copy_from_slice(input);
        for i in 1..self.graph.layers.len() {
            let mut net = std::mem::take(&mut frame.net[i]);
            net.iter_mut().for_each(|x| *x = 0.0);
            for block in self.blocks_into(i) {
                let values = self.block_values(block);
                match block.source {
                    Source::Layer(k) => add_matrix_vector(values, block.cols, &frame.act[k], &mut net),
                    Source::Previous(q) => add_matrix_vector(values, block.cols, &prev.act[q], &mut net),
                    Source::Bias => net.iter_mut().zip(values).for_each(|(x, b)| *x += b),
                }
            }
            for ((a, d), &x) in frame.act[i].iter_mut().zip(frame.deriv[i].iter_mut()).zip(&net) {
                *a = x.tanh();
                *d = 1.0 - *a * *a;
            }
            frame.net[i] = net;
        }
    }

    /// `∂E/∂y = y − d` and `E = ½Σ(y − d)²` (summed in f64) of a frame's output.
    pub fn output_error(frame: &Frame, target: &[f32], de_dy: &mut [f32]) -> f64 {
        let y = frame.output();
        assert_eq!(target.len(), y.len(), "target length");
        let mut e = 0.0f64;
        for ((g, &y), &d) in de_dy.iter_mut().zip(y).zip(target) {
            *g = y - d;
            e += (*g as f64) * (*g as f64);
        }
        0.5 * e
    }
}
