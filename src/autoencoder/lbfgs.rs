//! Limited-memory BFGS as minFunc runs it in the UFLDL exercise (`minFunc(…, 'lbfgs')`,
//! `maxIter` 400): the two-loop recursion over the last `memory` pairs (100, minFunc's
//! `Corr`), the initial Hessian `(sᵀy / yᵀy)·I` of the newest pair, pairs with
//! `sᵀy ≤ 10⁻¹⁰` skipped, a first step of `min(1, 1/Σ|gᵢ|)` and 1 afterwards, the strong-Wolfe
//! line search of [`wolfe`](super::wolfe), and minFunc's stopping tests: `Σ|gᵢ| ≤ optTol`
//! (10⁻⁵), a step `Σ|t·dᵢ|` or a change in `f` below `progTol` (10⁻⁹), a directional
//! derivative above `−progTol`, 1000 evaluations, or the iteration limit.
//!
//! It minimises any [`Objective`] (shared with the conjugate gradient of `supervised`) on
//! `f64` vectors; only `value_and_gradient` is called.

use std::collections::VecDeque;

use super::wolfe::{self, dot, LineStart, WolfeSettings};
use crate::supervised::conjugate_gradient::Objective;

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LbfgsSettings {
    pub max_iterations: usize,
    /// minFunc's `maxFunEvals`.
    pub max_evaluations: usize,
    /// Correction pairs kept, minFunc's `Corr`.
    pub memory: usize,
    /// Stop when `Σ|gᵢ|` is at most this: minFunc's `optTol` (`TolFun`).
    pub optimality_tolerance: f64,
    /// Stop when the step `Σ|t·dᵢ|` or the change in `f` is below this: minFunc's `progTol`.
    pub progress_tolerance: f64,
    pub line_search: WolfeSettings,
}

impl Default for LbfgsSettings {
    /// The UFLDL exercise: minFunc's defaults with `maxIter` 400.
    fn default() -> Self {
        LbfgsSettings { max_iterations: 400, max_evaluations: 1000, memory: 100, optimality_tolerance: 1e-5, progress_tolerance: 1e-9, line_search: WolfeSettings::default() }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LbfgsStop {
    /// `Σ|gᵢ|` fell to the optimality tolerance.
    Optimal,
    /// The step taken was below the progress tolerance (also: no lower point on the line).
    StepTooSmall,
    /// `f` changed by less than the progress tolerance.
    NoProgress,
    /// The search direction no longer descends measurably.
    NotDescending,
    /// The two-loop recursion produced NaN or infinity.
    IllegalDirection,
    MaxIterations,
    MaxEvaluations,
    Cancelled,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LbfgsOutcome {
    pub value: f64,
    pub iterations: usize,
    pub evaluations: usize,
    pub stop: LbfgsStop,
    /// Correction pairs skipped because `sᵀy ≤ 10⁻¹⁰`.
    pub skipped_updates: usize,
}

/// The objective is NaN or infinite at the starting point.
#[derive(Clone, Debug, PartialEq)]
pub struct NonFiniteStart {
    pub value: f64,
}

/// The last `capacity` pairs `s = x₊ − x`, `y = g₊ − g` and the initial Hessian scale.
pub struct Memory {
    capacity: usize,
    /// `(s, y, 1/(yᵀs))`, oldest first.
    pairs: VecDeque<(Vec<f64>, Vec<f64>, f64)>,
    /// `sᵀy / yᵀy` of the newest accepted pair (1 before any).
    diagonal: f64,
    pub skipped: usize,
}

impl Memory {
    pub fn new(capacity: usize) -> Memory {
        Memory { capacity: capacity.max(1), pairs: VecDeque::new(), diagonal: 1.0, skipped: 0 }
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Adds the pair unless `sᵀy ≤ 10⁻¹⁰` (minFunc's `lbfgsUpdate`); the oldest pair's
    /// buffers are reused once the memory is full.
    pub fn push(&mut self, s: &[f64], y: &[f64]) -> bool {
        let ys = dot(y, s);
        if ys.is_nan() || ys <= 1e-10 {
            self.skipped += 1;
            return false;
        }
        let (mut s_new, mut y_new) = if self.pairs.len() == self.capacity {
            let (s_old, y_old, _) = self.pairs.pop_front().expect("a full memory holds pairs");
            (s_old, y_old)
        } else {
            (Vec::with_capacity(s.len()), Vec::with_capacity(y.len()))
        };
        s_new.clear();
        s_new.extend_from_slice(s);
        y_new.clear();
        y_new.extend_from_slice(y);
        self.diagonal = ys / dot(y, y);
        self.pairs.push_back((s_new, y_new, 1.0 / ys));
        true
    }

    /// `out = −H·gradient` by the two-loop recursion.
    pub fn direction(&self, gradient: &[f64], out: &mut Vec<f64>) {
        out.clear();
        out.extend(gradient.iter().map(|g| -g));
        let mut alphas = vec![0.0; self.pairs.len()];
        for (alpha, (s, y, rho)) in alphas.iter_mut().zip(&self.pairs).rev() {
            *alpha = rho * dot(s, out);
            out.iter_mut().zip(y).for_each(|(q, y)| *q -= *alpha * y);
        }
        out.iter_mut().for_each(|q| *q *= self.diagonal);
        for (alpha, (s, y, rho)) in alphas.iter().zip(&self.pairs) {
            let beta = rho * dot(y, out);
            out.iter_mut().zip(s).for_each(|(r, s)| *r += (alpha - beta) * s);
        }
    }
}

/// Minimises `objective` from `x` (updated in place). `on_iteration(iteration, value)` runs
/// after each iteration; returning `false` stops (cancellation).
pub fn minimise(objective: &mut dyn Objective, x: &mut [f64], settings: &LbfgsSettings, on_iteration: &mut dyn FnMut(usize, f64) -> bool) -> Result<LbfgsOutcome, NonFiniteStart> {
    let n = x.len();
    let mut gradient = vec![0.0; n];
    let mut value = objective.value_and_gradient(x, &mut gradient);
    let mut evaluations = 1;
    if !value.is_finite() || gradient.iter().any(|g| !g.is_finite()) {
        return Err(NonFiniteStart { value });
    }
    let mut memory = Memory::new(settings.memory);
    let outcome = |value, iterations, evaluations, stop, memory: &Memory| LbfgsOutcome { value, iterations, evaluations, stop, skipped_updates: memory.skipped };
    if l1_norm(&gradient) <= settings.optimality_tolerance {
        return Ok(outcome(value, 0, evaluations, LbfgsStop::Optimal, &memory));
    }
    let mut direction = Vec::with_capacity(n);
    let mut previous_gradient = vec![0.0; n];
    let mut new_gradient = Vec::with_capacity(n);
    let mut step_taken = vec![0.0; n];
    let mut gradient_change = vec![0.0; n];
    let mut point = Vec::with_capacity(n);
    for iteration in 1..=settings.max_iterations {
        if iteration == 1 {
            direction.clear();
            direction.extend(gradient.iter().map(|g| -g));
        } else {
            gradient_change.iter_mut().zip(gradient.iter().zip(&previous_gradient)).for_each(|(y, (g, p))| *y = g - p);
            memory.push(&step_taken, &gradient_change);
            memory.direction(&gradient, &mut direction);
        }
        if direction.iter().any(|d| !d.is_finite()) {
            return Ok(outcome(value, iteration - 1, evaluations, LbfgsStop::IllegalDirection, &memory));
        }
        let slope = dot(&gradient, &direction);
        if slope > -settings.progress_tolerance {
            return Ok(outcome(value, iteration - 1, evaluations, LbfgsStop::NotDescending, &memory));
        }
        let first_step = if iteration == 1 { (1.0 / l1_norm(&gradient)).min(1.0) } else { 1.0 };
        let start = LineStart { x, direction: &direction, value, gradient: &gradient, slope };
        let line = wolfe::search(objective, &start, first_step, &settings.line_search, &mut point, &mut new_gradient);
        evaluations += line.evaluations;
        step_taken.iter_mut().zip(&direction).for_each(|(s, d)| *s = line.step * d);
        x.iter_mut().zip(&step_taken).for_each(|(x, s)| *x += s);
        let previous_value = value;
        value = line.value;
        std::mem::swap(&mut previous_gradient, &mut gradient);
        std::mem::swap(&mut gradient, &mut new_gradient);
        if !on_iteration(iteration, value) {
            return Ok(outcome(value, iteration, evaluations, LbfgsStop::Cancelled, &memory));
        }
        let stop = if l1_norm(&gradient) <= settings.optimality_tolerance {
            Some(LbfgsStop::Optimal)
        } else if l1_norm(&step_taken) <= settings.progress_tolerance {
            Some(LbfgsStop::StepTooSmall)
        } else if (value - previous_value).abs() < settings.progress_tolerance {
            Some(LbfgsStop::NoProgress)
        } else if evaluations >= settings.max_evaluations {
            Some(LbfgsStop::MaxEvaluations)
        } else {
            None
        };
        if let Some(stop) = stop {
            return Ok(outcome(value, iteration, evaluations, stop, &memory));
        }
    }
    Ok(outcome(value, settings.max_iterations, evaluations, LbfgsStop::MaxIterations, &memory))
}

fn l1_norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x.abs()).sum()
}
