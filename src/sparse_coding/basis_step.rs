//! The basis step: for fixed codes `A`, minimise `½‖X − BA‖²_F` over bases with `‖b_j‖ ≤ 1` by
//! projected gradient descent (Raina et al. §6: follow the gradient, project onto the feasible
//! set at each step; footnote 3's projection rescales a column of norm above 1 to norm 1).
//!
//! In the row layout (cases as rows) the objective is `½‖X‖² − ⟨B, T⟩ + ½⟨B, BS⟩` with
//! `S = AᵀA` (`n × n`) and `T = XᵀA` (`k × n`) ([`BasisStatistics`], one backend product each;
//! a fit keeps them for the whole set); the gradient is `G = BS − T`, one `k × n × n` product
//! per iteration whatever the number of cases.
//! An iteration is `B' = P(B − G·diag(η))`, and the objective's change, exact for a quadratic, is
//! `½⟨B' − B, G + G'⟩` (in `f64`, no cancellation of the large terms). It stops when the
//! objective falls by less than `tolerance` of its value, or after `max_iterations`.
//!
//! The step sizes `η` ([`StepRule`]):
//! - `ColumnMajoriser` (the default): `η_j = 1/Σ_t |S_jt|`. `diag(Σ_t |S_jt|) − S` is diagonally
//!   dominant, so the quadratic with that diagonal majorises the objective; it is separable over
//!   columns and isotropic within each, so the projected step minimises the majoriser exactly and
//!   never raises the objective. With sparse codes `S` is nearly diagonal and this is close to
//!   each column's own exact step, where one global step is held back by the most used basis.
//! - `Lipschitz`: one `η = 1/L` for every column, `L = 1.05·λ` with `λ` the largest eigenvalue of
//!   `S` by 50 rounds of power iteration; if a step raises the objective, `L` doubles and the
//!   step is retried (the estimate is from below).
//!
//! Columns no code uses (`S_jj = 0`) have a zero gradient and stay as they are.

use super::basis::{project_columns, Basis};
use super::error::{positive, SparseCodingError};
use super::products::{check_codes, check_data, reconstruct, times_symmetric};
use crate::backend::Backend;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepRule {
    /// `η_j = 1/Σ_t |S_jt|` per column.
    ColumnMajoriser,
    /// `η = 1/L` for all, `L` from power iteration on `S`.
    Lipschitz,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BasisStepSettings {
    pub rule: StepRule,
    /// Stop when the objective falls by less than this fraction of its value.
    pub tolerance: f64,
    pub max_iterations: usize,
}

impl Default for BasisStepSettings {
    fn default() -> Self {
        BasisStepSettings { rule: StepRule::ColumnMajoriser, tolerance: 1e-6, max_iterations: 100 }
    }
}

impl BasisStepSettings {
    pub fn validate(&self) -> Result<(), SparseCodingError> {
        positive("basis_tolerance", self.tolerance)?;
        if self.max_iterations == 0 {
            return Err(SparseCodingError::Setting { field: "basis_max_iterations", value: 0.0, expected: "at least 1" });
        }
        Ok(())
    }
}

/// How a basis step went: `½‖X − BA‖²` before and after (each from the reconstruction).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BasisStepReport {
    pub iterations: usize,
    pub reconstruction_before: f64,
    pub reconstruction_after: f64,
    /// Steps that raised the objective and were retried with a doubled `L` (`Lipschitz` only).
    pub retries: usize,
}

/// What the basis objective of a set of cases needs: `S = AᵀA` (`n × n`), `T = XᵀA` (`k × n`)
/// and `½‖X‖²`, as `½‖X − ABᵀ‖² = ½‖X‖² − ⟨B, T⟩ + ½⟨B, BS⟩`. A fit keeps them for the whole
/// set, replacing a batch's part when its codes change, so the basis step minimises the whole
/// set's objective with every case's latest codes.
#[derive(Clone, Debug, PartialEq)]
pub struct BasisStatistics {
    pub n_inputs: usize,
    pub n_bases: usize,
    pub s: Vec<f32>,
    pub t: Vec<f32>,
    pub half_data_norm2: f64,
}

impl BasisStatistics {
    /// No cases' codes yet: `S = 0`, `T = 0`, with the set's `½‖X‖²`.
    pub fn zeros(n_inputs: usize, n_bases: usize, half_data_norm2: f64) -> BasisStatistics {
        BasisStatistics { n_inputs, n_bases, s: vec![0.0; n_bases * n_bases], t: vec![0.0; n_inputs * n_bases], half_data_norm2 }
    }

    /// The statistics of `data` (`m × k`) with `codes` (`m × n`).
    pub fn of(backend: &dyn Backend, n_inputs: usize, n_bases: usize, data: &[f32], codes: &[f32]) -> BasisStatistics {
        let mut statistics = BasisStatistics::zeros(n_inputs, n_bases, half_norm2(data));
        statistics.add(backend, data, codes, 1.0);
        statistics
    }

    /// Adds (`sign` 1) or takes away (`sign` −1) the cases' parts of `S` and `T`: two backend
    /// products.
    pub fn add(&mut self, backend: &dyn Backend, data: &[f32], codes: &[f32], sign: f32) {
        let (k, n) = (self.n_inputs, self.n_bases);
        backend.accumulate_outer((n, n), codes, codes, sign, &mut self.s);
        backend.accumulate_outer((k, n), data, codes, sign, &mut self.t);
    }

    /// `S`, `T` and `½‖X‖²` times `factor` (the forgetting of [`StatisticsRule::Forgetting`](super::fit::StatisticsRule)).
    pub fn scale(&mut self, factor: f64) {
        let f = factor as f32;
        self.s.par_chunks_mut(4096).for_each(|c| c.iter_mut().for_each(|v| *v *= f));
        self.t.par_chunks_mut(4096).for_each(|c| c.iter_mut().for_each(|v| *v *= f));
        self.half_data_norm2 *= factor;
    }
}

/// `½‖X‖²` in `f64`.
pub fn half_norm2(data: &[f32]) -> f64 {
    0.5 * data.par_chunks(4096).map(|c| c.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>()).collect::<Vec<f64>>().into_iter().sum::<f64>()
}

/// A descent's outcome; the objectives come from the statistics (`f64` sums of `f32`
/// products: within ~10⁻⁶ of the value measured from the reconstruction).
#[derive(Clone, Debug, PartialEq)]
pub struct Descent {
    pub iterations: usize,
    pub retries: usize,
    pub reconstruction_before: f64,
    pub reconstruction_after: f64,
}

/// Rows per task in the `f64` sums over `k × n` matrices (fixed: thread-count independent).
const ROWS_PER_TASK: usize = 16;

/// Improves `basis` for `data` (`m × k`) and `codes` (`m × n`).
pub fn basis_step(backend: &dyn Backend, basis: &mut Basis, data: &[f32], codes: &[f32], settings: &BasisStepSettings) -> Result<BasisStepReport, SparseCodingError> {
    settings.validate()?;
    let rows = check_data(basis, data)?;
    check_codes(basis, rows, codes)?;
    let (k, n) = (basis.n_inputs, basis.n_bases);
    let statistics = BasisStatistics::of(backend, k, n, data, codes);
    let reconstruction_before = half_squared_error(data, &reconstruct(backend, basis, codes), k);
    let descent = descend(backend, basis, &statistics, settings);
    let reconstruction_after = half_squared_error(data, &reconstruct(backend, basis, codes), k);
    Ok(BasisStepReport { iterations: descent.iterations, reconstruction_before, reconstruction_after, retries: descent.retries })
}

/// Projected gradient descent on `basis` for the objective the statistics define (their shapes
/// must be the basis's; `settings` already checked).
pub fn descend(backend: &dyn Backend, basis: &mut Basis, statistics: &BasisStatistics, settings: &BasisStepSettings) -> Descent {
    let (k, n) = (basis.n_inputs, basis.n_bases);
    assert_eq!((statistics.n_inputs, statistics.n_bases), (k, n), "the statistics' shape is the basis's");
    let (s, t) = (&statistics.s, &statistics.t);
    let mut steps: Vec<f64> = match settings.rule {
        StepRule::ColumnMajoriser => (0..n).map(|j| s[j * n..(j + 1) * n].iter().map(|&v| f64::from(v.abs())).sum::<f64>()).map(|d| if d > 0.0 { 1.0 / d } else { 0.0 }).collect(),
        StepRule::Lipschitz => {
            let lambda = largest_eigenvalue(backend, s, n);
            vec![if lambda > 0.0 { 1.0 / (1.05 * lambda) } else { 0.0 }; n]
        }
    };
    let mut gradient = gradient_of(backend, &basis.values, s, t, n);
    // ½⟨B, BS⟩ − ⟨B, T⟩ = ½⟨B, G − T⟩ with G = BS − T.
    let reconstruction_before = statistics.half_data_norm2 + 0.5 * inner(&basis.values, &gradient, n) - 0.5 * inner(&basis.values, t, n);
    let mut objective = reconstruction_before;
    let (mut iterations, mut retries) = (0, 0);
    let mut candidate = vec![0.0f32; k * n];
    while iterations < settings.max_iterations && steps.iter().any(|&e| e > 0.0) {
        iterations += 1;
        candidate.par_chunks_mut(n).zip(basis.values.par_chunks(n)).zip(gradient.par_chunks(n)).for_each(|((out, b), g)| {
            for j in 0..n {
                out[j] = (f64::from(b[j]) - steps[j] * f64::from(g[j])) as f32;
            }
        });
        project_columns(&mut candidate, n);
        let candidate_gradient = gradient_of(backend, &candidate, s, t, n);
        let change = objective_change(&basis.values, &candidate, &gradient, &candidate_gradient, n);
        if change > 0.0 {
            if settings.rule == StepRule::Lipschitz && retries < 60 {
                retries += 1;
                steps.iter_mut().for_each(|e| *e *= 0.5);
                continue;
            }
            break;
        }
        std::mem::swap(&mut basis.values, &mut candidate);
        gradient = candidate_gradient;
        let previous = objective;
        objective += change;
        if -change < settings.tolerance * previous {
            break;
        }
    }
    Descent { iterations, retries, reconstruction_before, reconstruction_after: objective }
}

/// `⟨A, B⟩` of two `k × n` matrices in `f64`.
fn inner(a: &[f32], b: &[f32], n: usize) -> f64 {
    let chunk = ROWS_PER_TASK * n;
    a.par_chunks(chunk).zip(b.par_chunks(chunk)).map(|(a, b)| a.iter().zip(b).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum::<f64>()).collect::<Vec<f64>>().into_iter().sum()
}

/// `G = BS − T`.
fn gradient_of(backend: &dyn Backend, b: &[f32], s: &[f32], t: &[f32], n: usize) -> Vec<f32> {
    let mut g = vec![0.0f32; b.len()];
    times_symmetric(backend, s, n, b, &mut g);
    g.par_chunks_mut(ROWS_PER_TASK * n).zip(t.par_chunks(ROWS_PER_TASK * n)).for_each(|(g, t)| g.iter_mut().zip(t).for_each(|(g, t)| *g -= t));
    g
}

/// `½⟨B' − B, G + G'⟩`, the exact change of a quadratic between `B` and `B'`.
fn objective_change(before: &[f32], after: &[f32], g_before: &[f32], g_after: &[f32], n: usize) -> f64 {
    let chunk = ROWS_PER_TASK * n;
    0.5 * before
        .par_chunks(chunk)
        .zip(after.par_chunks(chunk))
        .zip(g_before.par_chunks(chunk).zip(g_after.par_chunks(chunk)))
        .map(|((b, a), (g, h))| (0..b.len()).map(|i| (f64::from(a[i]) - f64::from(b[i])) * (f64::from(g[i]) + f64::from(h[i]))).sum::<f64>())
        .collect::<Vec<f64>>()
        .into_iter()
        .sum::<f64>()
}

/// `½‖X − Y‖²_F` in `f64`.
fn half_squared_error(x: &[f32], y: &[f32], k: usize) -> f64 {
    let chunk = super::products::ROWS_PER_TASK * k;
    0.5 * x.par_chunks(chunk).zip(y.par_chunks(chunk)).map(|(x, y)| x.iter().zip(y).map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2)).sum::<f64>()).collect::<Vec<f64>>().into_iter().sum::<f64>()
}

/// The largest eigenvalue of the symmetric positive semi-definite `s` (`n × n`): the Rayleigh
/// quotient after 50 rounds of power iteration from the all-ones vector, each round a backend
/// product (0 for `s = 0`).
pub fn largest_eigenvalue(backend: &dyn Backend, s: &[f32], n: usize) -> f64 {
    let mut v = vec![1.0f32 / (n as f32).sqrt(); n];
    let mut w = vec![0.0f32; n];
    let mut lambda = 0.0f64;
    for _ in 0..50 {
        times_symmetric(backend, s, n, &v, &mut w);
        let norm = w.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>().sqrt();
        lambda = v.iter().zip(&w).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum::<f64>();
        if norm == 0.0 {
            return 0.0;
        }
        v.iter_mut().zip(&w).for_each(|(v, &w)| *v = (f64::from(w) / norm) as f32);
    }
    lambda
}
