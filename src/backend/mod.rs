//! The few operations the engine needs from a compute backend.
//!
//! Layout conventions shared by every backend (and the WGSL kernels):
//! - matrices are row-major `f32`;
//! - RBM weights are `n_visible × n_hidden`, so row `i` holds visible unit `i`'s weights;
//! - a batch is `rows × width`, one case per row.
//!
//! The engine (`train/`, `sample/`) calls only this trait, never threads or GPU details.

pub mod cpu;
pub(crate) mod strided;
pub(crate) mod wide;

use crate::rng::RngStream;

/// Shape of one RBM weight matrix, borrowed from the model.
#[derive(Clone, Copy)]
pub struct Weights<'a> {
    pub values: &'a [f32],
    pub n_visible: usize,
    pub n_hidden: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    Linear,
    Sigmoid,
}

/// One `scale · visibleᵀ · hidden` term of a weight gradient: `visible` is rows × n_visible,
/// `hidden` rows × n_hidden.
#[derive(Clone, Copy)]
pub struct OuterProduct<'a> {
    pub visible: &'a [f32],
    pub hidden: &'a [f32],
    pub scale: f32,
}

pub trait Backend: Sync {
    /// Human-readable description, e.g. "CPU (rayon, 2 threads)".
    fn describe(&self) -> String;

    /// `hidden[r, j] = act(hidden_bias[j] + Σ_i visible[r, i] · W[i, j])`.
    fn visible_to_hidden(&self, weights: Weights, visible: &[f32], hidden_bias: &[f32], activation: Activation, hidden: &mut [f32]);

    /// `visible[r, i] = act(visible_bias[i] + Σ_j hidden[r, j] · W[i, j])`.
    fn hidden_to_visible(&self, weights: Weights, hidden: &[f32], visible_bias: &[f32], activation: Activation, visible: &mut [f32]);

    /// `gradient[i, j] += scale · Σ_r visible[r, i] · hidden[r, j]`.
    fn accumulate_outer(&self, weights_shape: (usize, usize), visible: &[f32], hidden: &[f32], scale: f32, gradient: &mut [f32]);

    /// `gradient = Σ scale · visibleᵀ · hidden` over `products` (a CD weight gradient: the
    /// positive and the negative phase), made `block_rows` rows at a time: `visit(b, block)`
    /// gets rows `b·block_rows..` (the last block may be shorter) right after they are made,
    /// while they are still in cache, so that the caller's update of those rows costs no second
    /// pass over memory. Each block is visited once, on any thread, in any order.
    ///
    /// The default makes the whole matrix with `accumulate_outer`, then visits the blocks (in
    /// parallel); the CPU backend makes and visits each block in one task.
    fn outer_products_by_blocks(&self, (nv, nh): (usize, usize), products: &[OuterProduct], gradient: &mut [f32], block_rows: usize, visit: &(dyn Fn(usize, &mut [f32]) + Sync)) {
        use rayon::prelude::*;
        gradient.fill(0.0);
        for p in products {
            self.accumulate_outer((nv, nh), p.visible, p.hidden, p.scale, gradient);
        }
        gradient.par_chunks_mut((block_rows * nh).max(1)).enumerate().for_each(|(b, block)| visit(b, block));
    }

    /// `samples[k] = 1` if `stream.uniform(k) < probabilities[k]`, else 0.
    fn bernoulli(&self, probabilities: &[f32], stream: RngStream, samples: &mut [f32]);

    /// `values[k] += N(0, 1)` noise by Box–Muller from uniforms `2k` and `2k + 1` of `stream`:
    /// sampling Gaussian visible units whose means are already in `values`.
    fn add_gaussian_noise(&self, values: &mut [f32], stream: RngStream) {
        for (k, value) in values.iter_mut().enumerate() {
            let u1 = stream.uniform(2 * k as u64).max(1.0 / 16_777_216.0);
            let u2 = stream.uniform(2 * k as u64 + 1);
            *value += (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos();
        }
    }
}

pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}
