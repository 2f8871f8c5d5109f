//! The strong-Wolfe line search of minFunc (Schmidt 2005–2012, `WolfeLineSearch.m` with
//! cubic interpolation, the L-BFGS default the UFLDL exercise runs): a bracketing phase
//! that extrapolates by cubic interpolation (within `[t + 0.01(t − t_prev), 10t]`), then a
//! zoom phase that interpolates inside the bracket, with the same safeguard against steps
//! within 10% of the bracket's ends, until
//! `φ(t) ≤ φ(0) + c₁tφ'(0)` and `|φ'(t)| ≤ −c₂φ'(0)`.
//!
//! Where a trial point is NaN or infinite, minFunc switches to an Armijo backtracking
//! search from halfway back to the last legal step; here too, halving while the value is not
//! finite and interpolating a quadratic (steps kept within `[10⁻³t, 0.6t]`) while it is.
//!
//! Written once over a [`Line`]: the function along the line as scalars (`φ(t)`, `φ'(t)`) with
//! each trial's gradient kept where the line keeps its vectors. [`search_async`] is the host's
//! line over an [`AsyncObjective`] (the page awaits the device's read-backs), [`search`] runs it
//! to completion on a sync [`Objective`]; L-BFGS searches its lines, on the host or a device,
//! through the same [`search_line`].

use super::stepwise::{block_on, AsyncObjective, Blocking};
use crate::supervised::conjugate_gradient::Objective;

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WolfeSettings {
    /// Sufficient decrease (Armijo) constant, minFunc's `c1`.
    pub c1: f64,
    /// Curvature constant, minFunc's `c2`.
    pub c2: f64,
    /// Evaluations after the first trial, minFunc's `maxLS`.
    pub max_evaluations: usize,
    /// The search stops when the bracket (in parameter space, `|Δt|·max|dᵢ|`) is below this,
    /// and backtracking when the step `Σ|t·dᵢ|` is; minFunc's `progTol` (`TolX`).
    pub progress_tolerance: f64,
}

impl Default for WolfeSettings {
    /// minFunc's defaults: c₁ = 10⁻⁴, c₂ = 0.9, 25 evaluations, 10⁻⁹.
    fn default() -> Self {
        WolfeSettings { c1: 1e-4, c2: 0.9, max_evaluations: 25, progress_tolerance: 1e-9 }
    }
}

/// Where the search stopped. `step` is 0 (and value and gradient those of the start) when no
/// lower point was found.
pub struct LineResult {
    pub step: f64,
    pub value: f64,
    pub evaluations: usize,
    /// The strong Wolfe conditions hold at `step`.
    pub wolfe: bool,
}

/// One trial: the step, `φ(t)`, `φ'(t) = ∇f·d`, whether `f` and `∇f` are finite there, and
/// `∇f(x + td)` where the line keeps it (`None`: the start's).
pub(crate) struct Trial<G> {
    pub step: f64,
    pub value: f64,
    pub slope: f64,
    pub legal: bool,
    pub gradient: Option<G>,
}

impl<G> Trial<G> {
    fn is_legal(&self) -> bool {
        self.legal
    }
}

/// The function along one line, as the search sees it: `φ(0)` and `φ'(0)`, trials at steps
/// `t`, and the direction's size. The host's line ([`search_async`]) and L-BFGS's line over
/// any [`LbfgsVectors`](super::vectors::LbfgsVectors) space run the same search.
#[allow(async_fn_in_trait)]
pub(crate) trait Line {
    type Gradient;
    /// `φ(0)`.
    fn value(&self) -> f64;
    /// `φ'(0)`.
    fn slope(&self) -> f64;
    /// Whether `f` and `∇f` are finite at the start.
    fn origin_legal(&self) -> bool;
    async fn at(&mut self, step: f64) -> Result<Trial<Self::Gradient>, Interrupted>;
    /// `max|dᵢ|`, the zoom's scale.
    fn direction_max_abs(&mut self) -> f64;
    /// `Σ|dᵢ|`, the backtracking's length.
    fn direction_l1(&mut self) -> f64;
    /// Trials evaluated so far.
    fn evaluations(&self) -> usize;
}

/// The start of a search: the point, the direction and `f`, `∇f` and `∇f·d` there.
pub struct LineStart<'a> {
    pub x: &'a [f64],
    pub direction: &'a [f64],
    pub value: f64,
    pub gradient: &'a [f64],
    pub slope: f64,
}

/// The evaluator could no longer evaluate ([`AsyncObjective::interrupted`]) after
/// `evaluations` trials: the search was abandoned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupted {
    pub evaluations: usize,
}

/// The host's line: `f64` vectors, trials through an [`AsyncObjective`].
struct HostLine<'a, 'b, O: ?Sized> {
    objective: &'a mut O,
    start: &'a LineStart<'b>,
    point: &'a mut Vec<f64>,
    evaluations: usize,
}

impl<O: AsyncObjective + ?Sized> Line for HostLine<'_, '_, O> {
    type Gradient = Vec<f64>;

    fn value(&self) -> f64 {
        self.start.value
    }

    fn slope(&self) -> f64 {
        self.start.slope
    }

    fn origin_legal(&self) -> bool {
        self.start.value.is_finite() && self.start.gradient.iter().all(|g| g.is_finite())
    }

    async fn at(&mut self, step: f64) -> Result<Trial<Vec<f64>>, Interrupted> {
        self.point.clear();
        self.point.extend(self.start.x.iter().zip(self.start.direction).map(|(x, d)| x + step * d));
        let mut gradient = vec![0.0; self.point.len()];
        let value = self.objective.value_and_gradient(self.point, &mut gradient).await;
        self.evaluations += 1;
        if self.objective.interrupted() {
            return Err(Interrupted { evaluations: self.evaluations });
        }
        let slope = dot(&gradient, self.start.direction);
        let legal = value.is_finite() && gradient.iter().all(|g| g.is_finite());
        Ok(Trial { step, value, slope, legal, gradient: Some(gradient) })
    }

    fn direction_max_abs(&mut self) -> f64 {
        self.start.direction.iter().fold(0.0f64, |m, d| m.max(d.abs()))
    }

    fn direction_l1(&mut self) -> f64 {
        self.start.direction.iter().map(|d| d.abs()).sum()
    }

    fn evaluations(&self) -> usize {
        self.evaluations
    }
}

fn origin<L: Line + ?Sized>(line: &L) -> Trial<L::Gradient> {
    Trial { step: 0.0, value: line.value(), slope: line.slope(), legal: line.origin_legal(), gradient: None }
}

fn armijo<L: Line + ?Sized, G>(line: &L, trial: &Trial<G>, c1: f64) -> bool {
    trial.value <= line.value() + c1 * trial.step * line.slope()
}

/// Searches along `start.direction` from `start.x`, first trying `first_step`. The gradient
/// at the chosen step is written into `gradient_out`; `point` is scratch space.
pub fn search(objective: &mut dyn Objective, start: &LineStart, first_step: f64, settings: &WolfeSettings, point: &mut Vec<f64>, gradient_out: &mut Vec<f64>) -> LineResult {
    let mut objective = Blocking(objective);
    block_on(search_async(&mut objective, start, first_step, settings, point, gradient_out)).expect("a sync objective is never interrupted")
}

/// [`search`] over an evaluator that may have to wait; `Err` when it was
/// [interrupted](AsyncObjective::interrupted) (`gradient_out` then holds nothing of use).
pub async fn search_async<O: AsyncObjective + ?Sized>(objective: &mut O, start: &LineStart<'_>, first_step: f64, settings: &WolfeSettings, point: &mut Vec<f64>, gradient_out: &mut Vec<f64>) -> Result<LineResult, Interrupted> {
    let mut line = HostLine { objective, start, point, evaluations: 0 };
    let (result, gradient) = search_line(&mut line, first_step, settings).await?;
    *gradient_out = gradient.unwrap_or_else(|| start.gradient.to_vec());
    Ok(result)
}

/// The search on any [`Line`]: the result and the chosen trial's gradient (`None`: the
/// start's, when no lower point was found).
pub(crate) async fn search_line<L: Line + ?Sized>(line: &mut L, first_step: f64, settings: &WolfeSettings) -> Result<(LineResult, Option<L::Gradient>), Interrupted> {
    let (c1, c2, max_ls) = (settings.c1, settings.c2, settings.max_evaluations);
    let start_slope = line.slope();
    let curvature = |trial: &Trial<L::Gradient>| trial.slope.abs() <= -c2 * start_slope;
    let finish = |line: &L, best: Trial<L::Gradient>, wolfe: bool| (LineResult { step: best.step, value: best.value, evaluations: line.evaluations(), wolfe }, best.gradient);

    // Bracketing phase: extrapolate until the step is too long or the slope turns.
    let mut previous = origin(line);
    let mut current = line.at(first_step).await?;
    let mut iterations = 0;
    let mut bracket: [Trial<L::Gradient>; 2];
    loop {
        if !current.is_legal() {
            let found = backtrack(line, 0.5 * (current.step + previous.step), settings).await?;
            let best = found.unwrap_or_else(|| origin(line));
            return Ok(finish(line, best, false));
        }
        if !armijo(line, &current, c1) || (iterations > 1 && current.value >= previous.value) {
            bracket = [previous, current];
            break;
        }
        if curvature(&current) {
            return Ok(finish(line, current, true));
        }
        if current.slope >= 0.0 {
            bracket = [previous, current];
            break;
        }
        if iterations >= max_ls {
            bracket = [origin(line), current];
            break;
        }
        let min_step = current.step + 0.01 * (current.step - previous.step);
        let max_step = 10.0 * current.step;
        let next = cubic_minimiser(&previous, &current, min_step, max_step);
        previous = current;
        current = line.at(next).await?;
        iterations += 1;
    }

    // Zoom phase: interpolate inside the bracket, keeping its lower end the lowest point.
    let scale = line.direction_max_abs();
    let mut insufficient_progress = false;
    let mut wolfe = false;
    while !wolfe && iterations < max_ls {
        let low = if !bracket[1].is_legal() || bracket[0].value <= bracket[1].value { 0 } else { 1 };
        let high = 1 - low;
        let (lower, upper) = (bracket[0].step.min(bracket[1].step), bracket[0].step.max(bracket[1].step));
        let mut t = if bracket.iter().all(Trial::is_legal) { cubic_minimiser(&bracket[0], &bracket[1], lower, upper) } else { 0.5 * (lower + upper) };
        let width = upper - lower;
        // A step within 10% of an end twice running (or outside) moves to 10% inside.
        if (upper - t).min(t - lower) / width < 0.1 {
            if insufficient_progress || t >= upper || t <= lower {
                t = if (t - upper).abs() < (t - lower).abs() { upper - 0.1 * width } else { lower + 0.1 * width };
                insufficient_progress = false;
            } else {
                insufficient_progress = true;
            }
        } else {
            insufficient_progress = false;
        }
        let new = line.at(t).await?;
        iterations += 1;
        if !new.is_legal() || !armijo(line, &new, c1) || new.value >= bracket[low].value {
            bracket[high] = new;
        } else {
            if curvature(&new) {
                wolfe = true;
            } else if new.slope * (bracket[high].step - bracket[low].step) >= 0.0 {
                // The minimum lies between the old low point and the new one: the old low
                // becomes the high end.
                bracket.swap(low, high);
            }
            bracket[low] = new;
        }
        if !wolfe && (bracket[0].step - bracket[1].step).abs() * scale < settings.progress_tolerance {
            break;
        }
    }
    let [first, second] = bracket;
    let best = if !second.is_legal() || first.value <= second.value { first } else { second };
    Ok(finish(line, best, wolfe))
}

/// Armijo backtracking from `step` (minFunc's `ArmijoBacktrack`): halve while the point is
/// not finite, else jump to the minimum of the quadratic through `φ(0)`, `φ'(0)` and `φ(t)`,
/// kept within `[10⁻³t, 0.6t]`. `None` once the step `Σ|t·dᵢ|` falls below the tolerance.
async fn backtrack<L: Line + ?Sized>(line: &mut L, mut step: f64, settings: &WolfeSettings) -> Result<Option<Trial<L::Gradient>>, Interrupted> {
    let length = line.direction_l1();
    loop {
        if step * length <= settings.progress_tolerance || !step.is_finite() {
            return Ok(None);
        }
        let trial = line.at(step).await?;
        if trial.is_legal() && armijo(line, &trial, settings.c1) {
            return Ok(Some(trial));
        }
        let next = if trial.value.is_finite() {
            let curvature = trial.value - line.value() - line.slope() * step;
            -line.slope() * step * step / (2.0 * curvature)
        } else {
            0.5 * step
        };
        step = if next.is_finite() { next.max(1e-3 * step).min(0.6 * step) } else { 0.5 * step };
    }
}

/// The minimiser of the cubic through two points with their values and slopes, within
/// `[lower, upper]` (minFunc's `polyinterp` for two points); the middle of the interval
/// when the cubic has no minimum.
fn cubic_minimiser<G>(a: &Trial<G>, b: &Trial<G>, lower: f64, upper: f64) -> f64 {
    let (near, far) = if a.step <= b.step { (a, b) } else { (b, a) };
    let d1 = near.slope + far.slope - 3.0 * (near.value - far.value) / (near.step - far.step);
    let discriminant = d1 * d1 - near.slope * far.slope;
    if discriminant >= 0.0 {
        let d2 = discriminant.sqrt();
        let t = far.step - (far.step - near.step) * ((far.slope + d2 - d1) / (far.slope - near.slope + 2.0 * d2));
        if t.is_finite() {
            return t.max(lower).min(upper);
        }
    }
    0.5 * (lower + upper)
}

pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
