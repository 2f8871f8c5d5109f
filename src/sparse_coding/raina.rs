//! Raina, Madhavan & Ng's parallel L1-regularised least squares (§6.1), for every case at once.
//!
//! For one case, with `Q = BᵀB`, `c = Bᵀx`, `r_j = Q_jj` and the gradient of the quadratic part
//! `g = Qâ − c`, each coordinate's own minimiser (the others held at `â`) is the soft threshold
//!
//! `a*_j = sign(u_j)·max(|u_j| − β, 0) / r_j`, `u_j = r_j â_j − g_j`
//!
//! (the paper's three cases), all computed in parallel. The direction `d = a* − â` is a descent
//! direction; along it the objective is `f(t) = α₂t² + α₁t + α₀ + β‖â + td‖₁` with
//! `α₂ = ½dᵀQd`, `α₁ = dᵀg` (footnote 5). The line search tries the fixed step sizes
//! [`STEP_SIZES`] (1, ½, …, 2⁻²⁰), largest first, and takes the largest that lowers the
//! objective; the case moves to `â + td` and iterates, and stops when the objective fell by less
//! than `tolerance` (10⁻⁶ in the paper) of its previous value, when no step size lowers it, or
//! when `d = 0` (every coordinate at its own minimiser: the optimum).
//!
//! The batch: `Q` and `c` once (the paper precomputes them too), `g` for every case once, then
//! per iteration one product `D·Q` for the directions of the cases still running, from which
//! `α₂` comes and `g` is updated, `g ← g + t·Qd`. Every [`GRADIENT_REFRESH`] iterations `g` is
//! recomputed as `AQ − C`, so `f32` rounding does not accumulate in it. Cases that stop leave
//! the batch, so the product shrinks as they converge. Each case's objective is tracked in
//! `f64` from the changes `f(t) − f(0)`, which need no cancellation of large terms.

use super::basis::Basis;
use super::codes::{check_code_step, CodeStepReport};
use super::error::{positive, SparseCodingError};
use super::products::{correlations, gram, reconstruct, soft_threshold, times_symmetric, ROWS_PER_TASK};
use crate::backend::Backend;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The line search's step sizes, largest first: `2⁰, 2⁻¹, …, 2⁻²⁰`. The paper fixes a set
/// without listing it; halvings from the full step to the single-coordinate minimisers cover
/// the step lengths the overlap of 1 to ~10⁶ correlated coordinates calls for.
pub const STEP_SIZES: [f64; 21] = {
    let mut steps = [1.0f64; 21];
    let mut i = 1;
    while i < steps.len() {
        steps[i] = steps[i - 1] * 0.5;
        i += 1;
    }
    steps
};

/// Iterations between exact recomputations of the gradient `g = AQ − C`.
pub const GRADIENT_REFRESH: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RainaSettings {
    /// A case stops when its objective falls by less than this fraction of its value.
    pub tolerance: f64,
    /// Iterations at most per case.
    pub max_iterations: usize,
}

impl Default for RainaSettings {
    /// The paper's stopping rule, 10⁻⁶; at most 1,000 iterations.
    fn default() -> Self {
        RainaSettings { tolerance: 1e-6, max_iterations: 1000 }
    }
}

impl RainaSettings {
    pub fn validate(&self) -> Result<(), SparseCodingError> {
        positive("tolerance", self.tolerance)?;
        if self.max_iterations == 0 {
            return Err(SparseCodingError::Setting { field: "max_iterations", value: 0.0, expected: "at least 1" });
        }
        Ok(())
    }
}

/// The cases still iterating, packed row after row.
struct Running {
    /// Each row's case.
    cases: Vec<usize>,
    codes: Vec<f32>,
    correlations: Vec<f32>,
    gradient: Vec<f32>,
    /// Each case's objective, tracked in `f64`.
    objective: Vec<f64>,
}

impl Running {
    /// Keeps the rows `keep` says to, in order.
    fn retain(&mut self, keep: &[bool], n: usize) {
        let mut to = 0;
        for (from, &kept) in keep.iter().enumerate() {
            if kept {
                if to != from {
                    self.cases[to] = self.cases[from];
                    self.objective[to] = self.objective[from];
                    for buffer in [&mut self.codes, &mut self.correlations, &mut self.gradient] {
                        buffer.copy_within(from * n..(from + 1) * n, to * n);
                    }
                }
                to += 1;
            }
        }
        self.cases.truncate(to);
        self.objective.truncate(to);
        for buffer in [&mut self.codes, &mut self.correlations, &mut self.gradient] {
            buffer.truncate(to * n);
        }
    }
}

/// Improves `codes` (`m × n`, the starting point) for `data` (`m × k`) by Raina's algorithm.
pub fn solve(backend: &dyn Backend, basis: &Basis, data: &[f32], beta: f64, settings: &RainaSettings, codes: &mut [f32]) -> Result<CodeStepReport, SparseCodingError> {
    let rows = check_code_step(basis, data, beta, &super::codes::CodeSolver::Raina(*settings), codes)?;
    let n = basis.n_bases;
    let q = gram(backend, basis);
    let diagonal: Vec<f64> = (0..n).map(|j| f64::from(q[j * n + j])).collect();
    let objective = case_objectives(backend, basis, data, codes, beta);
    let mut running = Running { cases: (0..rows).collect(), codes: codes.to_vec(), correlations: correlations(backend, basis, data), gradient: vec![0.0; rows * n], objective };
    refresh_gradient(backend, &q, n, &mut running);
    let mut outcome = vec![(settings.max_iterations, false, 0.0f64); rows];
    let (mut direction, mut q_direction) = (vec![0.0f32; rows * n], vec![0.0f32; rows * n]);
    for iteration in 1..=settings.max_iterations {
        if running.cases.is_empty() {
            break;
        }
        if iteration > 1 && (iteration - 1).is_multiple_of(GRADIENT_REFRESH) {
            refresh_gradient(backend, &q, n, &mut running);
        }
        let active = running.cases.len();
        let (direction, q_direction) = (&mut direction[..active * n], &mut q_direction[..active * n]);
        direction.par_chunks_mut(n).zip(running.codes.par_chunks(n)).zip(running.gradient.par_chunks(n)).for_each(|((d, a), g)| {
            for j in 0..n {
                let (a_j, r) = (f64::from(a[j]), diagonal[j]);
                let minimiser = if r > 0.0 { soft_threshold(r * a_j - f64::from(g[j]), beta) / r } else { 0.0 };
                d[j] = (minimiser - a_j) as f32;
            }
        });
        times_symmetric(backend, &q, n, direction, q_direction);
        let stopped: Vec<bool> = running
            .codes
            .par_chunks_mut(n)
            .zip(running.gradient.par_chunks_mut(n))
            .zip(direction.par_chunks(n).zip(q_direction.par_chunks(n)))
            .zip(running.objective.par_iter_mut())
            .map(|(((a, g), (d, qd)), objective)| line_search(a, g, d, qd, beta, objective, settings.tolerance))
            .collect();
        for (row, &stop) in stopped.iter().enumerate() {
            let case = running.cases[row];
            if stop || iteration == settings.max_iterations {
                codes[case * n..(case + 1) * n].copy_from_slice(&running.codes[row * n..(row + 1) * n]);
                outcome[case] = (iteration, stop, running.objective[row]);
            }
        }
        let keep: Vec<bool> = stopped.iter().map(|s| !s).collect();
        running.retain(&keep, n);
    }
    Ok(CodeStepReport::from_cases(&outcome))
}

/// `g = AQ − C` for the running cases.
fn refresh_gradient(backend: &dyn Backend, q: &[f32], n: usize, running: &mut Running) {
    times_symmetric(backend, q, n, &running.codes, &mut running.gradient);
    running.gradient.par_chunks_mut(ROWS_PER_TASK * n).zip(running.correlations.par_chunks(ROWS_PER_TASK * n)).for_each(|(g, c)| g.iter_mut().zip(c).for_each(|(g, c)| *g -= c));
}

/// One case's line search along `d`: takes the largest step of [`STEP_SIZES`] that lowers the
/// objective, updating `a`, `g` and the objective; `true` when the case stops.
fn line_search(a: &mut [f32], g: &mut [f32], d: &[f32], qd: &[f32], beta: f64, objective: &mut f64, tolerance: f64) -> bool {
    let (mut alpha1, mut alpha2, mut l1_now, mut moving) = (0.0f64, 0.0f64, 0.0f64, false);
    for j in 0..d.len() {
        if d[j] != 0.0 {
            let d_j = f64::from(d[j]);
            alpha1 += d_j * f64::from(g[j]);
            alpha2 += d_j * f64::from(qd[j]);
            l1_now += f64::from(a[j].abs());
            moving = true;
        }
    }
    if !moving {
        return true;
    }
    alpha2 *= 0.5;
    for &t in &STEP_SIZES {
        let mut l1 = 0.0f64;
        for j in 0..d.len() {
            if d[j] != 0.0 {
                l1 += f64::from(step(a[j], t, d[j]).abs());
            }
        }
        let change = alpha2 * t * t + alpha1 * t + beta * (l1 - l1_now);
        if change < 0.0 {
            for j in 0..d.len() {
                if d[j] != 0.0 {
                    a[j] = step(a[j], t, d[j]);
                }
                g[j] = (f64::from(g[j]) + t * f64::from(qd[j])) as f32;
            }
            let previous = *objective;
            *objective += change;
            return -change < tolerance * previous;
        }
    }
    true
}

/// `a + t·d`, rounded once to `f32`.
#[inline]
fn step(a: f32, t: f64, d: f32) -> f32 {
    (f64::from(a) + t * f64::from(d)) as f32
}

/// Each case's objective at its starting codes: `½‖x‖²` where the codes are zero (no product
/// needed), else from the reconstruction.
fn case_objectives(backend: &dyn Backend, basis: &Basis, data: &[f32], codes: &[f32], beta: f64) -> Vec<f64> {
    let (k, n) = (basis.n_inputs, basis.n_bases);
    let reconstruction = if codes.iter().any(|&a| a != 0.0) { reconstruct(backend, basis, codes) } else { vec![0.0; data.len()] };
    data.par_chunks(k)
        .zip(reconstruction.par_chunks(k))
        .zip(codes.par_chunks(n))
        .map(|((x, y), a)| {
            let squared: f64 = x.iter().zip(y).map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2)).sum();
            0.5 * squared + beta * a.iter().map(|&a| f64::from(a.abs())).sum::<f64>()
        })
        .collect()
}
