//! Back-propagation through time (Werbos 1990), the alternative trainer and RTRL's check.
//!
//! [`sequence_gradient`] is the exact gradient of `Σ_τ E(τ)` over a stretch of steps that
//! starts from a given state: the frames are kept, then for `τ` from last to first and layers
//! from the output down,
//!
//! ```text
//! ∂E/∂a^i(τ) = ∂E/∂y(τ) [i = y] + Σ_c w^{c,iᵀ} δ^c(τ) + Σ_c μ^{c,iᵀ} δ^c(τ + 1)
//! δ^i(τ)     = σ'(net^i(τ)) ⊙ ∂E/∂a^i(τ)
//! ∂E/∂w^{i,k} += δ^i(τ) a^k(τ)ᵀ,  ∂E/∂μ^{i,q} += δ^i(τ) a^q(τ − 1)ᵀ,  ∂E/∂b^i += δ^i(τ)
//! ```
//!
//! [`Bptt`] is truncated BPTT as a trainer: the steps are cut into chunks of `truncation`;
//! after each chunk the gradient of its errors (back to the chunk's start, the state carried
//! over but not differentiated through) moves the weights once, `θ ← θ − rate · ∂E/∂θ`.

use super::error::RecurrentError;
use super::graph::Source;
use super::network::{add_transposed_matrix_vector, Frame, Network};

/// `(Σ_τ ∂E(τ)/∂θ, [E(τ)])` over `inputs`/`targets` from the state `start` (the frame before
/// the first step), weights fixed; the frames of every step are returned too.
pub fn sequence_gradient(net: &Network, start: &Frame, inputs: &[Vec<f32>], targets: &[Vec<f32>]) -> (Vec<f32>, Vec<f64>, Vec<Frame>) {
    assert_eq!(inputs.len(), targets.len());
    let graph = &net.graph;
    let mut frames: Vec<Frame> = Vec::with_capacity(inputs.len());
    let mut errors = Vec::with_capacity(inputs.len());
    let mut de_dy = vec![Vec::new(); inputs.len()];
    for (tau, (x, d)) in inputs.iter().zip(targets).enumerate() {
        let mut frame = Frame::zeros(graph);
        net.forward(frames.last().unwrap_or(start), x, &mut frame);
        let mut g = vec![0.0; d.len()];
        errors.push(Network::output_error(&frame, d, &mut g));
        de_dy[tau] = g;
        frames.push(frame);
    }
    let layers = || graph.layers.iter().map(|&n| vec![0.0f32; n]).collect::<Vec<_>>();
    let mut gradient = vec![0.0f32; net.params.len()];
    let mut later_delta = layers(); // δ(τ + 1), zero past the end
    let out = graph.output();
    for tau in (0..frames.len()).rev() {
        let frame = &frames[tau];
        let prev = if tau > 0 { &frames[tau - 1] } else { start };
        let mut de_da = layers();
        de_da[out].copy_from_slice(&de_dy[tau]);
        for b in &net.blocks {
            if let Source::Previous(q) = b.source {
                add_transposed_matrix_vector(net.block_values(b), b.cols, &later_delta[b.to], &mut de_da[q]);
            }
        }
        let mut delta = layers();
        for i in (1..graph.layers.len()).rev() {
            let e = std::mem::take(&mut de_da[i]);
            for ((d, &e), &s) in delta[i].iter_mut().zip(&e).zip(&frame.deriv[i]) {
                *d = e * s;
            }
            for b in net.blocks_into(i) {
                let g = &mut gradient[b.offset..b.offset + b.len()];
                let source: &[f32] = match b.source {
                    Source::Layer(k) => {
                        add_transposed_matrix_vector(net.block_values(b), b.cols, &delta[i], &mut de_da[k]);
                        &frame.act[k]
                    }
                    Source::Previous(q) => &prev.act[q],
                    Source::Bias => &[1.0],
                };
                for (row, &d) in g.chunks_exact_mut(b.cols).zip(&delta[i]) {
                    row.iter_mut().zip(source).for_each(|(g, &a)| *g += d * a);
                }
            }
        }
        later_delta = delta;
    }
    (gradient, errors, frames)
}

/// Truncated BPTT: a weight step after every `truncation` steps.
#[derive(Clone, Debug)]
pub struct Bptt {
    pub truncation: usize,
    /// The state before the chunk being gathered.
    start: Frame,
    /// The last step's frame (for its output).
    frame: Frame,
    inputs: Vec<Vec<f32>>,
    targets: Vec<Vec<f32>>,
}

/// What one step of [`Bptt::train_step`] measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BpttStep {
    /// `E(τ)` of this step (before any weight step it triggers).
    pub error: f64,
    /// Whether the chunk ended here and the weights moved.
    pub updated: bool,
}

impl Bptt {
    pub fn new(net: &Network, truncation: usize) -> Result<Self, RecurrentError> {
        if truncation == 0 {
            return Err(RecurrentError::new("truncation", "is 0 steps; expected at least 1"));
        }
        Ok(Bptt { truncation, start: Frame::zeros(&net.graph), frame: Frame::zeros(&net.graph), inputs: Vec::new(), targets: Vec::new() })
    }

    /// Back to the start of a sequence (a pending chunk is dropped).
    pub fn reset(&mut self, net: &Network) {
        *self = Bptt::new(net, self.truncation).expect("checked at construction");
    }

    pub fn frame(&self) -> &Frame {
        &self.frame
    }

    /// Forward one step with the current weights; at a chunk's end, the chunk's gradient and
    /// the weight step.
    pub fn train_step(&mut self, net: &mut Network, input: &[f32], target: &[f32], rate: f32) -> BpttStep {
        let mut frame = Frame::zeros(&net.graph);
        net.forward(&self.frame, input, &mut frame);
        let mut de_dy = vec![0.0; target.len()];
        let error = Network::output_error(&frame, target, &mut de_dy);
        self.frame = frame;
        self.inputs.push(input.to_vec());
        self.targets.push(target.to_vec());
        if self.inputs.len() < self.truncation {
            return BpttStep { error, updated: false };
        }
        let (gradient, _, _) = sequence_gradient(net, &self.start, &self.inputs, &self.targets);
        net.params.iter_mut().zip(&gradient).for_each(|(w, g)| *w -= rate * g);
        self.start = self.frame.clone();
        self.inputs.clear();
        self.targets.clear();
        BpttStep { error, updated: true }
    }
}
