//! The model: a basis `B` of `n` vectors `b_j ∈ ℝᵏ` (Raina, Madhavan & Ng §3.2), each of norm
//! at most 1.
//!
//! `B` is stored `k × n`, row-major, the backends' `n_visible × n_hidden` layout: `values[i·n + j]`
//! is component `i` of basis vector `j` (so a column of the matrix is a basis vector). With
//! cases as rows (`X` is `m × k`, the codes `A` are `m × n`), every product of the algorithms is
//! one [`Backend`](crate::backend::Backend) call on [`Basis::weights`]: `Bᵀx` is
//! `visible_to_hidden`, the reconstruction `Ba` is `hidden_to_visible`, `BᵀB` is
//! `accumulate_outer`.

use super::error::{check_finite, SparseCodingError};
use crate::backend::Weights;
use crate::rng::{Purpose, RngStream};

#[derive(Clone, Debug, PartialEq)]
pub struct Basis {
    /// `k`, the inputs of a case (pixels of a patch).
    pub n_inputs: usize,
    /// `n`, the basis vectors.
    pub n_bases: usize,
    /// `k × n`, row-major: `values[i·n + j] = (b_j)_i`.
    pub values: Vec<f32>,
}

/// The Philox step of the initial basis, under `Purpose::InitialWeights` (the sparse
/// autoencoder uses steps 1 and 2 of that purpose).
pub const INITIAL_BASIS_STEP: u64 = 3;

impl Basis {
    /// Random unit basis vectors: entry `(i, j)` is the normal deviate `√(−2 ln u₁)·cos(2π u₂)`
    /// (Box–Muller, in `f64`) of uniforms `2(i·n + j)` and `2(i·n + j) + 1` of the Philox stream
    /// `(seed, INITIAL_BASIS_STEP, InitialWeights)`, `u₁` at least 2⁻²⁴; then each column is
    /// scaled to norm 1. Normal entries make the directions uniform on the sphere.
    pub fn initialise(n_inputs: usize, n_bases: usize, seed: u64) -> Result<Basis, SparseCodingError> {
        check_shape(n_inputs, n_bases)?;
        let stream = RngStream::new(seed, INITIAL_BASIS_STEP, Purpose::InitialWeights);
        let normal: Vec<f64> = (0..n_inputs * n_bases)
            .map(|k| {
                let u1 = f64::from(stream.uniform(2 * k as u64)).max(1.0 / 16_777_216.0);
                let u2 = f64::from(stream.uniform(2 * k as u64 + 1));
                (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            })
            .collect();
        let mut norms = vec![0.0f64; n_bases];
        for row in normal.chunks_exact(n_bases) {
            norms.iter_mut().zip(row).for_each(|(s, x)| *s += x * x);
        }
        let norms: Vec<f64> = norms.into_iter().map(f64::sqrt).collect();
        let values = normal.chunks_exact(n_bases).flat_map(|row| row.iter().zip(&norms).map(|(x, norm)| (x / norm) as f32)).collect();
        Ok(Basis { n_inputs, n_bases, values })
    }

    /// The basis from its values (`k × n`, row-major), checked: shape, finite values.
    pub fn from_values(n_inputs: usize, n_bases: usize, values: Vec<f32>) -> Result<Basis, SparseCodingError> {
        let basis = Basis { n_inputs, n_bases, values };
        basis.validate()?;
        Ok(basis)
    }

    /// The shape and every value checked; an error names the field.
    pub fn validate(&self) -> Result<(), SparseCodingError> {
        check_shape(self.n_inputs, self.n_bases)?;
        if self.values.len() != self.n_inputs * self.n_bases {
            return Err(SparseCodingError::Shape {
                field: "basis",
                message: format!("{} values; expected n_inputs × n_bases = {} × {} = {}", self.values.len(), self.n_inputs, self.n_bases, self.n_inputs * self.n_bases),
            });
        }
        check_finite("basis", &self.values, self.n_bases, "input", "basis vector")
    }

    /// `B` as the backends' weight matrix (`n_visible` = `k`, `n_hidden` = `n`).
    pub fn weights(&self) -> Weights<'_> {
        Weights { values: &self.values, n_visible: self.n_inputs, n_hidden: self.n_bases }
    }

    /// `‖b_j‖` for every basis vector, in `f64`.
    pub fn column_norms(&self) -> Vec<f64> {
        column_norms(&self.values, self.n_bases)
    }

    /// Basis vector `j` (column `j`), `k` values.
    pub fn column(&self, j: usize) -> Vec<f32> {
        self.values.iter().skip(j).step_by(self.n_bases).copied().collect()
    }
}

/// At least one input and one basis vector.
pub fn check_shape(n_inputs: usize, n_bases: usize) -> Result<(), SparseCodingError> {
    if n_bases == 0 {
        return Err(SparseCodingError::Shape { field: "n_bases", message: "0 basis vectors; expected at least 1".into() });
    }
    if n_inputs == 0 {
        return Err(SparseCodingError::Shape { field: "n_inputs", message: "0 inputs per case; expected at least 1".into() });
    }
    Ok(())
}

/// The norms of the columns of a `k × n` row-major matrix, in `f64`.
pub fn column_norms(values: &[f32], n_bases: usize) -> Vec<f64> {
    let mut sums = vec![0.0f64; n_bases];
    for row in values.chunks_exact(n_bases) {
        sums.iter_mut().zip(row).for_each(|(s, &x)| *s += f64::from(x) * f64::from(x));
    }
    sums.into_iter().map(f64::sqrt).collect()
}

/// Raina's projection onto `‖b_j‖ ≤ 1` (their footnote 3): a column of norm above 1 is scaled
/// to norm 1, the others are kept. Returns how many columns were scaled. A scaled column's
/// norm, recomputed in `f64` from the rounded `f32` values, may exceed 1 by an ulp: such a
/// column is scaled again by `1 − 2⁻²³` until it does not.
pub fn project_columns(values: &mut [f32], n_bases: usize) -> usize {
    let mut scales: Vec<f64> = column_norms(values, n_bases).into_iter().map(|norm| if norm > 1.0 { 1.0 / norm } else { 1.0 }).collect();
    let projected = scales.iter().filter(|&&s| s < 1.0).count();
    while scales.iter().any(|&s| s < 1.0) {
        for row in values.chunks_exact_mut(n_bases) {
            row.iter_mut().zip(&scales).filter(|(_, &s)| s < 1.0).for_each(|(x, &s)| *x = (f64::from(*x) * s) as f32);
        }
        let norms = column_norms(values, n_bases);
        scales.iter_mut().zip(&norms).for_each(|(s, &norm)| *s = if *s < 1.0 && norm > 1.0 { 1.0 - 1.0 / 8_388_608.0 } else { 1.0 });
    }
    projected
}
