//! Full-batch conjugate gradient minimisation (Polak–Ribière), as Masters trains
//! supervised nets: each iteration minimises along the current direction with a bracketing
//! plus Brent line search, then mixes the new gradient with the old direction.
//!
//! - `β = max(0, g·(g − g_prev) / g_prev·g_prev)` (PR+): a negative β would undo progress,
//!   so it restarts from steepest descent instead.
//! - When the direction stops descending (`d·g ≥ 0`), or a line search finds no lower
//!   point, the direction is reset to `−g`.
//! - It stops when the relative change in the criterion falls below the tolerance on a
//!   steepest-descent step; on a conjugate step it first restarts, since a poor direction
//!   (not a true minimum) is the usual reason for a small gain there.

use super::line_search::minimise_along;

/// A function to minimise, on `f64` parameters.
pub trait Objective {
    fn value(&mut self, x: &[f64]) -> f64;
    /// The value and the gradient (written into `gradient`).
    fn value_and_gradient(&mut self, x: &[f64], gradient: &mut [f64]) -> f64;
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CgSettings {
    pub max_iterations: usize,
    /// Stop when `(f_prev − f) / |f_prev|` falls below this.
    pub tolerance: f64,
    /// Line-search accuracy, relative to the step.
    pub line_tolerance: f64,
    /// Function evaluations per line search (after bracketing).
    pub line_evaluations: usize,
}

impl Default for CgSettings {
    fn default() -> Self {
        CgSettings { max_iterations: 1000, tolerance: 5e-5, line_tolerance: 1e-3, line_evaluations: 20 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CgStop {
    /// The relative change in the criterion fell below the tolerance.
    Converged,
    /// The gradient is exactly zero, or no step along steepest descent lowers the criterion.
    NoProgress,
    MaxIterations,
    /// The caller's per-iteration callback asked to stop.
    Cancelled,
}

#[derive(Clone, Debug)]
pub struct CgOutcome {
    pub value: f64,
    pub iterations: usize,
    pub evaluations: usize,
    pub stop: CgStop,
}

/// The criterion became NaN or infinite; `x` still holds the last finite point.
#[derive(Clone, Debug, PartialEq)]
pub struct NonFinite {
    pub iteration: usize,
}

/// Minimises `objective` from `x` (updated in place). `on_iteration(iteration, value)` runs
/// after each iteration; returning `false` stops early (cancellation).
pub fn minimise(objective: &mut dyn Objective, x: &mut [f64], settings: CgSettings, on_iteration: &mut dyn FnMut(usize, f64) -> bool) -> Result<CgOutcome, NonFinite> {
    let n = x.len();
    let mut gradient = vec![0.0; n];
    let mut value = objective.value_and_gradient(x, &mut gradient);
    let mut evaluations = 1;
    if !value.is_finite() || gradient.iter().any(|g| !g.is_finite()) {
        return Err(NonFinite { iteration: 0 });
    }
    let mut direction: Vec<f64> = gradient.iter().map(|g| -g).collect();
    let mut steepest = true;
    let mut previous_step: Option<(f64, f64)> = None; // (step, slope) of the last line search
    let mut trial = vec![0.0; n];
    let mut new_gradient = vec![0.0; n];
    for iteration in 1..=settings.max_iterations {
        let mut slope = dot(&direction, &gradient);
        if slope.is_nan() || slope >= 0.0 {
            direction.iter_mut().zip(&gradient).for_each(|(d, g)| *d = -g);
            steepest = true;
            slope = -dot(&gradient, &gradient);
            if slope == 0.0 {
                return Ok(CgOutcome { value, iterations: iteration - 1, evaluations, stop: CgStop::NoProgress });
            }
        }
        // The last step's first-order decrease carried over to this direction
        // (Nocedal & Wright 3.60), or a unit move in parameter space at the start.
        let first_step = match previous_step {
            Some((step, previous_slope)) => (step * previous_slope / slope).clamp(1e-12, 1e12),
            None => 1.0 / norm(&direction).max(1e-300),
        };
        let mut phi = |t: f64| {
            trial.iter_mut().zip(x.iter()).zip(&direction).for_each(|((y, xi), d)| *y = xi + t * d);
            let v = objective.value(&trial);
            // NaN compares false everywhere; +∞ steers the search back toward finite values.
            if v.is_nan() {
                f64::INFINITY
            } else {
                v
            }
        };
        let line = minimise_along(&mut phi, value, slope, first_step, settings.line_tolerance, settings.line_evaluations);
        let Some(line) = line.filter(|l| l.value < value) else {
            if steepest {
                return Ok(CgOutcome { value, iterations: iteration - 1, evaluations, stop: CgStop::NoProgress });
            }
            direction.iter_mut().zip(&gradient).for_each(|(d, g)| *d = -g);
            steepest = true;
            previous_step = None;
            continue;
        };
        evaluations += line.evaluations + 1;
        x.iter_mut().zip(&direction).for_each(|(xi, d)| *xi += line.step * d);
        let new_value = objective.value_and_gradient(x, &mut new_gradient);
        if !new_value.is_finite() || new_gradient.iter().any(|g| !g.is_finite()) {
            x.iter_mut().zip(&direction).for_each(|(xi, d)| *xi -= line.step * d);
            return Err(NonFinite { iteration });
        }
        let relative_change = (value - new_value) / value.abs().max(1e-300);
        previous_step = Some((line.step, slope));
        if !on_iteration(iteration, new_value) {
            return Ok(CgOutcome { value: new_value, iterations: iteration, evaluations, stop: CgStop::Cancelled });
        }
        let converged = relative_change < settings.tolerance;
        if converged && steepest {
            return Ok(CgOutcome { value: new_value, iterations: iteration, evaluations, stop: CgStop::Converged });
        }
        let beta = if converged {
            0.0
        } else {
            let change: f64 = new_gradient.iter().zip(&gradient).map(|(g, p)| g * (g - p)).sum();
            (change / dot(&gradient, &gradient)).max(0.0)
        };
        direction.iter_mut().zip(&new_gradient).for_each(|(d, g)| *d = -g + beta * *d);
        steepest = beta == 0.0;
        std::mem::swap(&mut gradient, &mut new_gradient);
        value = new_value;
    }
    Ok(CgOutcome { value, iterations: settings.max_iterations, evaluations, stop: CgStop::MaxIterations })
}

pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}
