//! Limited-memory BFGS as minFunc runs it in the UFLDL exercise (`minFunc(…, 'lbfgs')`,
//! `maxIter` 400): the two-loop recursion over the last `memory` pairs (100, minFunc's
//! `Corr`), the initial Hessian `(sᵀy / yᵀy)·I` of the newest pair, pairs with
//! `sᵀy ≤ 10⁻¹⁰` skipped, a first step of `min(1, 1/Σ|gᵢ|)` and 1 afterwards, the strong-Wolfe
//! line search of [`wolfe`](super::wolfe), and minFunc's stopping tests: `Σ|gᵢ| ≤ optTol`
//! (10⁻⁵), a step `Σ|t·dᵢ|` or a change in `f` below `progTol` (10⁻⁹), a directional
//! derivative above `−progTol`, 1000 evaluations, or the iteration limit.
//!
//! It minimises any [`Objective`] (shared with the conjugate gradient of `supervised`) on
//! `f64` vectors, or any [`AsyncObjective`] (the device's cost in a browser) one iteration at a
//! time through [`Lbfgs`]; only `value_and_gradient` is called.

use std::collections::VecDeque;

use super::stepwise::{block_on, AsyncObjective, Blocking};
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
///
/// This is [`Lbfgs`] stepped to its end, its futures run with
/// [`block_on`](super::stepwise::block_on): the sync objective never makes them wait.
pub fn minimise(objective: &mut dyn Objective, x: &mut [f64], settings: &LbfgsSettings, on_iteration: &mut dyn FnMut(usize, f64) -> bool) -> Result<LbfgsOutcome, NonFiniteStart> {
    let mut objective = Blocking(objective);
    block_on(async {
        let mut state = Lbfgs::start(&mut objective, x.to_vec(), settings).await?;
        loop {
            match state.iterate(&mut objective).await {
                IterationOutcome::Iterated { iteration, value, stop } => {
                    if !on_iteration(iteration, value) {
                        state.cancel();
                        break;
                    }
                    if stop.is_some() {
                        break;
                    }
                }
                IterationOutcome::Stopped(_) => break,
                IterationOutcome::Interrupted => unreachable!("a sync objective is never interrupted"),
            }
        }
        x.copy_from_slice(state.x());
        Ok(state.outcome())
    })
}

/// What one call of [`Lbfgs::iterate`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IterationOutcome {
    /// Iteration `iteration` (from 1) moved to a point where `f` is `value`; `stop` says why it
    /// was the last, if it was.
    Iterated { iteration: usize, value: f64, stop: Option<LbfgsStop> },
    /// No iteration was taken: the run had stopped, or stops now before moving (an illegal or
    /// non-descending direction, the iteration limit).
    Stopped(LbfgsStop),
    /// The evaluator was [interrupted](super::stepwise::AsyncObjective::interrupted) during the
    /// line search: the state is as before the call, to be iterated again with another evaluator.
    Interrupted,
}

/// L-BFGS as a state machine, one iteration (with its line search) per [`Lbfgs::iterate`]: the
/// point, `f` and `∇f` there, the direction, the correction pairs and the stop reason persist
/// between calls, so the page can run one iteration per message and switch evaluators (the
/// device, then the CPU after a lost device) between iterations. [`minimise`] is this run to
/// the end, so a stepped run and a minimised one take bit-identical iterates.
pub struct Lbfgs {
    settings: LbfgsSettings,
    x: Vec<f64>,
    value: f64,
    gradient: Vec<f64>,
    previous_gradient: Vec<f64>,
    direction: Vec<f64>,
    new_gradient: Vec<f64>,
    step_taken: Vec<f64>,
    gradient_change: Vec<f64>,
    point: Vec<f64>,
    memory: Memory,
    /// The last iteration's pair `(s, y)` is still to be added to the memory: the next
    /// iteration adds it before its direction, once, even when that iteration is interrupted
    /// and taken again.
    pair_pending: bool,
    iterations: usize,
    evaluations: usize,
    stop: Option<LbfgsStop>,
}

impl Lbfgs {
    /// Evaluates the start `x`; `Err` when `f` or `∇f` is not finite there (or the evaluator was
    /// interrupted, which makes it so). Stopped at once (`Optimal`, 0 iterations) when `Σ|gᵢ|` is
    /// already within the optimality tolerance.
    pub async fn start<O: AsyncObjective + ?Sized>(objective: &mut O, x: Vec<f64>, settings: &LbfgsSettings) -> Result<Lbfgs, NonFiniteStart> {
        let n = x.len();
        let mut gradient = vec![0.0; n];
        let value = objective.value_and_gradient(&x, &mut gradient).await;
        if !value.is_finite() || gradient.iter().any(|g| !g.is_finite()) || objective.interrupted() {
            return Err(NonFiniteStart { value });
        }
        let stop = (l1_norm(&gradient) <= settings.optimality_tolerance).then_some(LbfgsStop::Optimal);
        Ok(Lbfgs {
            settings: *settings,
            x,
            value,
            gradient,
            previous_gradient: vec![0.0; n],
            direction: Vec::with_capacity(n),
            new_gradient: Vec::with_capacity(n),
            step_taken: vec![0.0; n],
            gradient_change: vec![0.0; n],
            point: Vec::with_capacity(n),
            memory: Memory::new(settings.memory),
            pair_pending: false,
            iterations: 0,
            evaluations: 1,
            stop,
        })
    }

    /// One iteration: the direction from the memory, the line search along it, the move, and
    /// minFunc's stopping tests.
    pub async fn iterate<O: AsyncObjective + ?Sized>(&mut self, objective: &mut O) -> IterationOutcome {
        if let Some(stop) = self.stop {
            return IterationOutcome::Stopped(stop);
        }
        if self.iterations >= self.settings.max_iterations {
            return self.stopped(LbfgsStop::MaxIterations);
        }
        let iteration = self.iterations + 1;
        if iteration == 1 {
            self.direction.clear();
            self.direction.extend(self.gradient.iter().map(|g| -g));
        } else {
            if self.pair_pending {
                self.gradient_change.iter_mut().zip(self.gradient.iter().zip(&self.previous_gradient)).for_each(|(y, (g, p))| *y = g - p);
                self.memory.push(&self.step_taken, &self.gradient_change);
                self.pair_pending = false;
            }
            self.memory.direction(&self.gradient, &mut self.direction);
        }
        if self.direction.iter().any(|d| !d.is_finite()) {
            return self.stopped(LbfgsStop::IllegalDirection);
        }
        let slope = dot(&self.gradient, &self.direction);
        if slope > -self.settings.progress_tolerance {
            return self.stopped(LbfgsStop::NotDescending);
        }
        let first_step = if iteration == 1 { (1.0 / l1_norm(&self.gradient)).min(1.0) } else { 1.0 };
        let start = LineStart { x: &self.x, direction: &self.direction, value: self.value, gradient: &self.gradient, slope };
        let line = match wolfe::search_async(objective, &start, first_step, &self.settings.line_search, &mut self.point, &mut self.new_gradient).await {
            Ok(line) => line,
            Err(interrupted) => {
                self.evaluations += interrupted.evaluations;
                return IterationOutcome::Interrupted;
            }
        };
        self.evaluations += line.evaluations;
        self.step_taken.iter_mut().zip(&self.direction).for_each(|(s, d)| *s = line.step * d);
        self.x.iter_mut().zip(&self.step_taken).for_each(|(x, s)| *x += s);
        let previous_value = self.value;
        self.value = line.value;
        std::mem::swap(&mut self.previous_gradient, &mut self.gradient);
        std::mem::swap(&mut self.gradient, &mut self.new_gradient);
        self.iterations = iteration;
        self.pair_pending = true;
        let settings = &self.settings;
        self.stop = if l1_norm(&self.gradient) <= settings.optimality_tolerance {
            Some(LbfgsStop::Optimal)
        } else if l1_norm(&self.step_taken) <= settings.progress_tolerance {
            Some(LbfgsStop::StepTooSmall)
        } else if (self.value - previous_value).abs() < settings.progress_tolerance {
            Some(LbfgsStop::NoProgress)
        } else if self.evaluations >= settings.max_evaluations {
            Some(LbfgsStop::MaxEvaluations)
        } else if iteration >= settings.max_iterations {
            Some(LbfgsStop::MaxIterations)
        } else {
            None
        };
        IterationOutcome::Iterated { iteration, value: self.value, stop: self.stop }
    }

    fn stopped(&mut self, stop: LbfgsStop) -> IterationOutcome {
        self.stop = Some(stop);
        IterationOutcome::Stopped(stop)
    }

    /// Stops the run (the caller's cancellation); later iterations do nothing.
    pub fn cancel(&mut self) {
        self.stop = Some(LbfgsStop::Cancelled);
    }

    /// The current point: the start, or where the last iteration moved.
    pub fn x(&self) -> &[f64] {
        &self.x
    }

    /// `f` at [`Self::x`].
    pub fn value(&self) -> f64 {
        self.value
    }

    /// `∇f` at [`Self::x`].
    pub fn gradient(&self) -> &[f64] {
        &self.gradient
    }

    pub fn iterations(&self) -> usize {
        self.iterations
    }

    /// Evaluations so far, the start's included.
    pub fn evaluations(&self) -> usize {
        self.evaluations
    }

    /// Why the run stopped, once it has.
    pub fn stop(&self) -> Option<LbfgsStop> {
        self.stop
    }

    pub fn settings(&self) -> &LbfgsSettings {
        &self.settings
    }

    /// The run so far as [`minimise`] reports it (`stop` is `MaxIterations` while it runs).
    pub fn outcome(&self) -> LbfgsOutcome {
        LbfgsOutcome { value: self.value, iterations: self.iterations, evaluations: self.evaluations, stop: self.stop.unwrap_or(LbfgsStop::MaxIterations), skipped_updates: self.memory.skipped }
    }
}

fn l1_norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x.abs()).sum()
}
