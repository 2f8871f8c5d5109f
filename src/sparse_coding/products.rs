//! The products every step shares, each one [`Backend`] call on the basis, and the objective
//! `½‖X − BA‖²_F + β‖A‖₁` summed in `f64`.
//!
//! Cases are rows: `X` is `m × k`, the codes `A` are `m × n` (the paper's `A` transposed), so
//! `Bᵀx` for every case is `X·B`, the reconstruction `BA` is `A·Bᵀ`, and `BᵀB` is `Bᵀ·B`.

use super::basis::Basis;
use super::error::{check_finite, positive, SparseCodingError};
use crate::backend::{Activation, Backend, Weights};
use rayon::prelude::*;

/// Cases per task in the sums, fixed so that the `f64` sums do not depend on the thread count.
pub const ROWS_PER_TASK: usize = 64;

/// β checked: a finite number > 0.
pub fn check_beta(beta: f64) -> Result<(), SparseCodingError> {
    positive("beta", beta)
}

/// `data` checked against the basis (whole cases of `k` finite values, at least one); the
/// number of cases.
pub fn check_data(basis: &Basis, data: &[f32]) -> Result<usize, SparseCodingError> {
    basis.validate()?;
    let k = basis.n_inputs;
    if data.is_empty() || !data.len().is_multiple_of(k) {
        return Err(SparseCodingError::Shape { field: "data", message: format!("{} values do not make whole cases of n_inputs = {k} values (the basis is {k} × {})", data.len(), basis.n_bases) });
    }
    check_finite("data", data, k, "case", "input")?;
    Ok(data.len() / k)
}

/// `codes` checked: `rows × n` finite values.
pub fn check_codes(basis: &Basis, rows: usize, codes: &[f32]) -> Result<(), SparseCodingError> {
    let n = basis.n_bases;
    if codes.len() != rows * n {
        return Err(SparseCodingError::Shape { field: "codes", message: format!("{} values; expected cases × n_bases = {rows} × {n} = {}", codes.len(), rows * n) });
    }
    check_finite("codes", codes, n, "case", "basis vector")
}

/// `BᵀB`, `n × n` (row-major, symmetric).
pub fn gram(backend: &dyn Backend, basis: &Basis) -> Vec<f32> {
    let n = basis.n_bases;
    let mut gram = vec![0.0f32; n * n];
    backend.accumulate_outer((n, n), &basis.values, &basis.values, 1.0, &mut gram);
    gram
}

/// `Bᵀx` of every case: `m × n`.
pub fn correlations(backend: &dyn Backend, basis: &Basis, data: &[f32]) -> Vec<f32> {
    let rows = data.len() / basis.n_inputs;
    let mut out = vec![0.0f32; rows * basis.n_bases];
    backend.visible_to_hidden(basis.weights(), data, &vec![0.0; basis.n_bases], Activation::Linear, &mut out);
    out
}

/// `Q·a` of every row `a` of `codes` (`m × n`) for a symmetric `n × n` matrix `Q`, into `out`.
pub fn times_symmetric(backend: &dyn Backend, q: &[f32], n: usize, codes: &[f32], out: &mut [f32]) {
    backend.visible_to_hidden(Weights { values: q, n_visible: n, n_hidden: n }, codes, &vec![0.0; n], Activation::Linear, out);
}

/// The reconstruction `Ba` of every case: `m × k`.
pub fn reconstruct(backend: &dyn Backend, basis: &Basis, codes: &[f32]) -> Vec<f32> {
    let rows = codes.len() / basis.n_bases;
    let mut out = vec![0.0f32; rows * basis.n_inputs];
    backend.hidden_to_visible(basis.weights(), codes, &vec![0.0; basis.n_inputs], Activation::Linear, &mut out);
    out
}

/// The objective on a set of cases, and its parts.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Objective {
    /// `½‖X − BA‖²_F + β‖A‖₁`.
    pub total: f64,
    /// `½‖X − BA‖²_F`.
    pub reconstruction: f64,
    /// `β‖A‖₁`.
    pub penalty: f64,
    /// The fraction of the codes that are not zero.
    pub nonzero_fraction: f64,
}

/// The objective of `codes` (`m × n`) for `data` (`m × k`): the reconstruction through the
/// backend, the sums in `f64` over fixed blocks of cases.
pub fn objective(backend: &dyn Backend, basis: &Basis, data: &[f32], codes: &[f32], beta: f64) -> Result<Objective, SparseCodingError> {
    check_beta(beta)?;
    let rows = check_data(basis, data)?;
    check_codes(basis, rows, codes)?;
    let reconstruction = reconstruct(backend, basis, codes);
    Ok(objective_of_reconstruction(basis, data, codes, &reconstruction, beta))
}

/// The objective from a reconstruction already computed (`m × k`).
pub fn objective_of_reconstruction(basis: &Basis, data: &[f32], codes: &[f32], reconstruction: &[f32], beta: f64) -> Objective {
    let (k, n) = (basis.n_inputs, basis.n_bases);
    let squared: f64 = data
        .par_chunks(ROWS_PER_TASK * k)
        .zip(reconstruction.par_chunks(ROWS_PER_TASK * k))
        .map(|(x, y)| x.iter().zip(y).map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2)).sum::<f64>())
        .collect::<Vec<f64>>()
        .into_iter()
        .sum();
    let (l1, nonzero) = l1_and_nonzero(codes, n);
    let reconstruction = 0.5 * squared;
    let penalty = beta * l1;
    Objective { total: reconstruction + penalty, reconstruction, penalty, nonzero_fraction: nonzero as f64 / codes.len().max(1) as f64 }
}

/// `‖A‖₁` (in `f64`) and the number of non-zero codes.
pub fn l1_and_nonzero(codes: &[f32], n: usize) -> (f64, usize) {
    codes
        .par_chunks(ROWS_PER_TASK * n)
        .map(|block| block.iter().fold((0.0f64, 0usize), |(sum, count), &a| (sum + f64::from(a.abs()), count + usize::from(a != 0.0))))
        .collect::<Vec<(f64, usize)>>()
        .into_iter()
        .fold((0.0, 0), |(s, c), (bs, bc)| (s + bs, c + bc))
}

/// The fraction of non-zero codes.
pub fn nonzero_fraction(codes: &[f32]) -> f64 {
    codes.iter().filter(|&&a| a != 0.0).count() as f64 / codes.len().max(1) as f64
}

/// The soft threshold `sign(u)·max(|u| − β, 0)`.
#[inline]
pub fn soft_threshold(u: f64, beta: f64) -> f64 {
    if u > beta {
        u - beta
    } else if u < -beta {
        u + beta
    } else {
        0.0
    }
}
