//! The up and down passes of a local-patch RBM on the CPU: the reference the WGSL kernels
//! will be checked against.
//!
//! Up: each case's patches are gathered ("im2col") into `patches` (`rows × positions ×
//! patch_inputs`), then one product per position, `H_p = X_p · W_p` (`rows × patch_inputs` by
//! `patch_inputs × hidden_per_patch`) writes the position's slice of the hidden feature map;
//! tied layers do all positions as one product, `(rows·positions) × patch_inputs` by the
//! shared bank. Down: one product per position, `Y_p = H_p · W_pᵀ`, into `products` (same
//! layout as `patches`), then every visible unit gathers the entries of the patches covering
//! it (`CoverLists`, ascending position order) and adds its bias: one writer per output, no
//! atomics, no scatter. `scatter_reconstruction` is the scatter formulation, kept for tests.

use crate::backend::strided::{sgemm, OutPtr, Strided};
use super::geometry::{CoverLists, Geometry};
use super::model::LocalRbm;
use crate::backend::Activation;
use rayon::prelude::*;

/// Rows per task of a tied layer's single product (fixed, so results do not depend on threads).
const TIED_ROWS_PER_TASK: usize = 256;

/// `patches[r, p, offset] = visible[r, pixel_of(p, offset)]`; a patch row (`patch · channels`
/// values) is contiguous in both, so the copy is one slice per patch row.
pub fn gather_patches(g: &Geometry, visible: &[f32], patches: &mut [f32]) {
    let (nv, width) = (g.n_visible(), g.patch_inputs());
    let per_case = g.positions() * width;
    let rows = visible.len() / nv;
    assert!(visible.len() == rows * nv && patches.len() == rows * per_case);
    let run = g.patch * g.channels;
    patches.par_chunks_mut(per_case).zip(visible.par_chunks(nv)).for_each(|(out, image)| {
        for (position, patch) in out.chunks_exact_mut(width).enumerate() {
            for (dr, dest) in patch.chunks_exact_mut(run).enumerate() {
                let start = g.pixel_of(position, dr * run);
                dest.copy_from_slice(&image[start..start + run]);
            }
        }
    });
}

/// `hidden[r, p, j] = Σ_offset patches[r, p, offset] · W_bank(p)[offset, j]` (no bias).
pub fn patch_products_up(model: &LocalRbm, patches: &[f32], hidden: &mut [f32]) {
    let g = &model.geometry;
    let (width, units, positions) = (g.patch_inputs(), g.hidden_per_patch, g.positions());
    let rows = patches.len() / (positions * width);
    assert!(patches.len() == rows * positions * width && hidden.len() == rows * positions * units);
    let out = OutPtr(hidden.as_mut_ptr());
    if g.tied {
        let total = rows * positions;
        let w = Strided::rows(&model.weights, 0, units);
        (0..total.div_ceil(TIED_ROWS_PER_TASK)).into_par_iter().for_each(|block| {
            let r0 = block * TIED_ROWS_PER_TASK;
            let m = TIED_ROWS_PER_TASK.min(total - r0);
            // SAFETY: rows r0..r0+m of `hidden`, written by this task only; shapes asserted above.
            unsafe { sgemm(m, width, units, 1.0, Strided::rows(patches, r0 * width, width), w, 0.0, out.at(r0 * units), units) };
        });
    } else {
        (0..positions).into_par_iter().for_each(|p| {
            let x = Strided::rows(patches, p * width, positions * width);
            let w = Strided::rows(model.bank(p), 0, units);
            // SAFETY: columns p·units.. of every row, written by this task only.
            unsafe { sgemm(rows, width, units, 1.0, x, w, 0.0, out.at(p * units), positions * units) };
        });
    }
}

/// `products[r, p, offset] = Σ_j hidden[r, p, j] · W_bank(p)[offset, j]`.
pub fn patch_products_down(model: &LocalRbm, hidden: &[f32], products: &mut [f32]) {
    let g = &model.geometry;
    let (width, units, positions) = (g.patch_inputs(), g.hidden_per_patch, g.positions());
    let rows = hidden.len() / (positions * units);
    assert!(hidden.len() == rows * positions * units && products.len() == rows * positions * width);
    let out = OutPtr(products.as_mut_ptr());
    if g.tied {
        let total = rows * positions;
        let wt = Strided::transposed(&model.weights, 0, units);
        (0..total.div_ceil(TIED_ROWS_PER_TASK)).into_par_iter().for_each(|block| {
            let r0 = block * TIED_ROWS_PER_TASK;
            let m = TIED_ROWS_PER_TASK.min(total - r0);
            // SAFETY: rows r0..r0+m of `products`, this task only.
            unsafe { sgemm(m, units, width, 1.0, Strided::rows(hidden, r0 * units, units), wt, 0.0, out.at(r0 * width), width) };
        });
    } else {
        (0..positions).into_par_iter().for_each(|p| {
            let h = Strided::rows(hidden, p * units, positions * units);
            let wt = Strided::transposed(model.bank(p), 0, units);
            // SAFETY: columns p·width.. of every row, this task only.
            unsafe { sgemm(rows, units, width, 1.0, h, wt, 0.0, out.at(p * width), positions * width) };
        });
    }
}

/// `visible[r, i] = act(bias[i] + Σ_{e ∈ cover(i)} products[r, e])`, one writer per output.
pub fn gather_reconstruction(g: &Geometry, cover: &CoverLists, products: &[f32], visible_bias: &[f32], activation: Activation, visible: &mut [f32]) {
    let (nv, per_case) = (g.n_visible(), g.positions() * g.patch_inputs());
    let rows = visible.len() / nv;
    assert!(visible.len() == rows * nv && products.len() == rows * per_case && visible_bias.len() == nv);
    visible.par_chunks_mut(nv).zip(products.par_chunks(per_case)).for_each(|(out, case)| {
        for (i, v) in out.iter_mut().enumerate() {
            let mut sum = 0.0f32;
            for &e in cover.covering(i) {
                sum += case[e as usize];
            }
            *v = activate(sum + visible_bias[i], activation);
        }
    });
}

/// The scatter formulation of `gather_reconstruction` (each patch adds its products into the
/// pixels it covers, positions in ascending order): the test reference, not used in training.
pub fn scatter_reconstruction(g: &Geometry, products: &[f32], visible_bias: &[f32], activation: Activation, visible: &mut [f32]) {
    let (nv, width, per_case) = (g.n_visible(), g.patch_inputs(), g.positions() * g.patch_inputs());
    for (out, case) in visible.chunks_exact_mut(nv).zip(products.chunks_exact(per_case)) {
        out.fill(0.0);
        for position in 0..g.positions() {
            for offset in 0..width {
                out[g.pixel_of(position, offset)] += case[position * width + offset];
            }
        }
        for (v, b) in out.iter_mut().zip(visible_bias) {
            *v = activate(*v + b, activation);
        }
    }
}

/// Adds the hidden biases and applies the sigmoid, in place.
pub fn hidden_bias_sigmoid(model: &LocalRbm, hidden: &mut [f32]) {
    let g = &model.geometry;
    let (units, n_hidden) = (g.hidden_per_patch, g.n_hidden());
    hidden.par_chunks_mut(n_hidden).for_each(|case| {
        for (p, group) in case.chunks_exact_mut(units).enumerate() {
            let bias = &model.hidden_bias[model.bank_of(p) * units..][..units];
            for (h, b) in group.iter_mut().zip(bias) {
                *h = crate::backend::sigmoid(*h + b);
            }
        }
    });
}

pub(crate) fn activate(x: f32, activation: Activation) -> f32 {
    match activation {
        Activation::Linear => x,
        Activation::Sigmoid => crate::backend::sigmoid(x),
    }
}

/// Buffers for the passes of `rows` cases.
#[derive(Default)]
pub struct PassBuffers {
    pub patches: Vec<f32>,
    pub products: Vec<f32>,
}

impl PassBuffers {
    pub fn resize(&mut self, g: &Geometry, rows: usize) {
        self.patches.resize(rows * g.positions() * g.patch_inputs(), 0.0);
        self.products.resize(rows * g.positions() * g.patch_inputs(), 0.0);
    }
}

impl LocalRbm {
    /// `hidden = σ(c + up(visible))`, probabilities, `rows × n_hidden`; `buffers.patches` is
    /// left holding the visible cases' patches (the gradient reads them).
    pub fn hidden_probabilities(&self, visible: &[f32], hidden: &mut [f32], buffers: &mut PassBuffers) {
        let g = &self.geometry;
        let rows = visible.len() / g.n_visible();
        buffers.resize(g, rows);
        self.hidden_probabilities_with(visible, hidden, &mut buffers.patches);
    }

    /// `hidden_probabilities` with the caller's patch buffer (`rows × positions × patch_inputs`),
    /// left holding the visible cases' patches.
    pub fn hidden_probabilities_with(&self, visible: &[f32], hidden: &mut [f32], patches: &mut [f32]) {
        gather_patches(&self.geometry, visible, patches);
        patch_products_up(self, patches, hidden);
        hidden_bias_sigmoid(self, hidden);
    }

    /// `visible = act(b + down(hidden))`: `E[v | h]`.
    pub fn visible_expectations(&self, cover: &CoverLists, hidden: &[f32], visible: &mut [f32], buffers: &mut PassBuffers) {
        let g = &self.geometry;
        let rows = hidden.len() / g.n_hidden();
        buffers.resize(g, rows);
        patch_products_down(self, hidden, &mut buffers.products);
        gather_reconstruction(g, cover, &buffers.products, &self.visible_bias, self.visible_activation(), visible);
    }

    /// Mean over cases and visible units of `(x − E[v | p(h | x)])²` (mean field throughout).
    pub fn reconstruction_error(&self, cases: &[f32]) -> f64 {
        let g = &self.geometry;
        let (nv, nh) = (g.n_visible(), g.n_hidden());
        let cover = CoverLists::new(g);
        let mut buffers = PassBuffers::default();
        let mut total = 0.0f64;
        let n = cases.len() / nv;
        for chunk in cases.chunks(64 * nv) {
            let rows = chunk.len() / nv;
            let mut hidden = vec![0.0; rows * nh];
            self.hidden_probabilities(chunk, &mut hidden, &mut buffers);
            let mut reconstruction = vec![0.0; rows * nv];
            self.visible_expectations(&cover, &hidden, &mut reconstruction, &mut buffers);
            total += crate::model::rbm::squared_difference(chunk, &reconstruction);
        }
        total / (n.max(1) * nv) as f64
    }

    /// The dense RBM this layer is: `n_visible × n_hidden` weights with each bank embedded at
    /// its patch's pixels and zeros elsewhere (the test reference; only for small layers).
    pub fn to_dense(&self) -> crate::model::Rbm {
        let g = &self.geometry;
        let (nv, nh, units, width) = (g.n_visible(), g.n_hidden(), g.hidden_per_patch, g.patch_inputs());
        let mut weights = vec![0.0; nv * nh];
        let mut hidden_bias = vec![0.0; nh];
        for p in 0..g.positions() {
            let bank = self.bank(self.bank_of(p));
            for offset in 0..width {
                let i = g.pixel_of(p, offset);
                weights[i * nh + p * units..i * nh + (p + 1) * units].copy_from_slice(&bank[offset * units..(offset + 1) * units]);
            }
            hidden_bias[p * units..(p + 1) * units].copy_from_slice(&self.hidden_bias[self.bank_of(p) * units..][..units]);
        }
        crate::model::Rbm { visible_units: self.visible_units, n_visible: nv, n_hidden: nh, weights, visible_bias: self.visible_bias.clone(), hidden_bias }
    }
}
