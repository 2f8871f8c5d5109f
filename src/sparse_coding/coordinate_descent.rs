//! Cyclic coordinate descent for the code step, the CPU reference: scikit-learn's
//! `sparse_encode(algorithm='lasso_cd')` (a `Lasso` with the Gram matrix precomputed, whose
//! `alpha = β/k` undoes its `1/(2k)` scaling, so it minimises the same `½‖x − Ba‖² + β‖a‖₁`),
//! whose inner loop is `enet_coordinate_descent_gram` with no L2 term.
//!
//! With `Q = BᵀB`, `c = Bᵀx` and `h = Qa` kept up to date, one sweep visits `j = 0 … n−1` in
//! order and sets `a_j` to its exact minimiser with the others fixed,
//! `a_j ← sign(u)·max(|u| − β, 0)/Q_jj`, `u = c_j − h_j + Q_jj a_j`, then `h += Δa_j·Q_j`.
//! After a sweep whose largest change is below `tolerance` times the largest `|a_j|` (or the
//! last sweep), the duality gap is computed; the case stops when it is below
//! `tolerance·‖x‖²` — scikit-learn's rule, with its `tol = 1e-8` and 1,000 sweeps as defaults.
//!
//! `Q` and `c` come from the backend's products (once per step); the sweeps run in `f64` per
//! case, the cases in parallel. `f64` keeps `h` from drifting, so the gap can meet a tolerance
//! of 10⁻⁸ (in `f32`, rounding in `h` alone is ~10⁻⁷ of `‖x‖²`).

use super::basis::Basis;
use super::codes::{check_code_step, CodeSolver, CodeStepReport};
use super::error::{positive, SparseCodingError};
use super::products::{correlations, gram, soft_threshold};
use crate::backend::Backend;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CdSettings {
    /// Stop when the duality gap is below `tolerance·‖x‖²` (checked once a sweep's largest
    /// change is below `tolerance` times the largest code).
    pub tolerance: f64,
    /// Sweeps over the coordinates at most per case.
    pub max_sweeps: usize,
}

impl Default for CdSettings {
    /// scikit-learn's `sparse_encode`: `tol = 1e-8`, `max_iter = 1000`.
    fn default() -> Self {
        CdSettings { tolerance: 1e-8, max_sweeps: 1000 }
    }
}

impl CdSettings {
    pub fn validate(&self) -> Result<(), SparseCodingError> {
        positive("tolerance", self.tolerance)?;
        if self.max_sweeps == 0 {
            return Err(SparseCodingError::Setting { field: "max_sweeps", value: 0.0, expected: "at least 1" });
        }
        Ok(())
    }
}

/// Improves `codes` (`m × n`, the starting point) for `data` (`m × k`) by coordinate descent.
pub fn solve(backend: &dyn Backend, basis: &Basis, data: &[f32], beta: f64, settings: &CdSettings, codes: &mut [f32]) -> Result<CodeStepReport, SparseCodingError> {
    check_code_step(basis, data, beta, &CodeSolver::CoordinateDescent(*settings), codes)?;
    let (k, n) = (basis.n_inputs, basis.n_bases);
    let q: Vec<f64> = gram(backend, basis).into_iter().map(f64::from).collect();
    let c = correlations(backend, basis, data);
    let outcome: Vec<(usize, bool, f64)> = codes
        .par_chunks_mut(n)
        .zip(c.par_chunks(n))
        .zip(data.par_chunks(k))
        .map_init(
            || (vec![0.0f64; n], vec![0.0f64; n], vec![0.0f64; n]),
            |(a, h, c64), ((codes, c), x)| {
                let x_norm2: f64 = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
                c64.iter_mut().zip(c).for_each(|(o, &v)| *o = f64::from(v));
                a.iter_mut().zip(codes.iter()).for_each(|(o, &v)| *o = f64::from(v));
                let outcome = solve_case(&q, c64, x_norm2, beta, settings, a, h);
                codes.iter_mut().zip(a.iter()).for_each(|(o, &v)| *o = v as f32);
                outcome
            },
        )
        .collect();
    Ok(CodeStepReport::from_cases(&outcome))
}

/// One case from `a`: the sweeps done, whether the gap met the tolerance, and the objective.
fn solve_case(q: &[f64], c: &[f64], x_norm2: f64, beta: f64, settings: &CdSettings, a: &mut [f64], h: &mut [f64]) -> (usize, bool, f64) {
    let n = c.len();
    h.fill(0.0);
    for j in 0..n {
        if a[j] != 0.0 {
            axpy(h, a[j], &q[j * n..(j + 1) * n]);
        }
    }
    let gap_tolerance = settings.tolerance * x_norm2;
    for sweep in 1..=settings.max_sweeps {
        let (mut largest, mut largest_change) = (0.0f64, 0.0f64);
        for j in 0..n {
            let q_jj = q[j * n + j];
            if q_jj == 0.0 {
                continue;
            }
            let old = a[j];
            let new = soft_threshold(c[j] - h[j] + q_jj * old, beta) / q_jj;
            if new != old {
                axpy(h, new - old, &q[j * n..(j + 1) * n]);
                a[j] = new;
            }
            largest_change = largest_change.max((new - old).abs());
            largest = largest.max(new.abs());
        }
        let settled = largest == 0.0 || largest_change / largest < settings.tolerance || sweep == settings.max_sweeps;
        if settled && duality_gap(a, h, c, x_norm2, beta) < gap_tolerance {
            return (sweep, true, case_objective(a, h, c, x_norm2, beta));
        }
    }
    (settings.max_sweeps, false, case_objective(a, h, c, x_norm2, beta))
}

/// `½‖x − Ba‖² + β‖a‖₁ = ½(‖x‖² + aᵀh − 2aᵀc) + β‖a‖₁` with `h = Qa`.
fn case_objective(a: &[f64], h: &[f64], c: &[f64], x_norm2: f64, beta: f64) -> f64 {
    let (mut a_dot_h, mut a_dot_c, mut l1) = (0.0f64, 0.0f64, 0.0f64);
    for j in 0..a.len() {
        a_dot_h += a[j] * h[j];
        a_dot_c += a[j] * c[j];
        l1 += a[j].abs();
    }
    0.5 * (x_norm2 + a_dot_h - 2.0 * a_dot_c) + beta * l1
}

/// `h += s·row`.
#[inline]
fn axpy(h: &mut [f64], s: f64, row: &[f64]) {
    h.iter_mut().zip(row).for_each(|(h, &q)| *h += s * q);
}

/// scikit-learn's duality gap of the Lasso in its Gram form (no L2 term): the residual's
/// `‖r‖² = ‖x‖² + aᵀh − 2aᵀc`, the dual point scaled so `‖Bᵀr‖_∞ ≤ β`.
pub fn duality_gap(a: &[f64], h: &[f64], c: &[f64], x_norm2: f64, beta: f64) -> f64 {
    let (mut a_dot_c, mut a_dot_h, mut l1, mut dual_norm) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for j in 0..a.len() {
        a_dot_c += a[j] * c[j];
        a_dot_h += a[j] * h[j];
        l1 += a[j].abs();
        dual_norm = dual_norm.max((c[j] - h[j]).abs());
    }
    let residual2 = x_norm2 + a_dot_h - 2.0 * a_dot_c;
    let (scale, mut gap) = if dual_norm > beta {
        let scale = beta / dual_norm;
        (scale, 0.5 * residual2 * (1.0 + scale * scale))
    } else {
        (1.0, residual2)
    };
    gap += beta * l1 - scale * (x_norm2 - a_dot_c);
    gap
}
