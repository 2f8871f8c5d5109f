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
//! time through [`Lbfgs`]; only `value_and_gradient` is called. [`Lbfgs`] is written over
//! [`LbfgsVectors`]: the same iterations run on the host's `f64` vectors or on a device's
//! buffers (`gpu::lbfgs`), where only scalars come back.

use std::collections::VecDeque;

use super::stepwise::{block_on, AsyncObjective, Blocking};
use super::vectors::{accepts_pair, Evaluator, HostVectors, LbfgsVectors};
use super::wolfe::{self, dot, Interrupted, Line, Trial, WolfeSettings};
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

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Adds the pair unless `sᵀy ≤ 10⁻¹⁰` (minFunc's `lbfgsUpdate`); the oldest pair's
    /// buffers are reused once the memory is full.
    pub fn push(&mut self, s: &[f64], y: &[f64]) -> bool {
        let ys = dot(y, s);
        if !accepts_pair(ys) {
            self.skipped += 1;
            return false;
        }
        self.push_accepted(s, y, ys, dot(y, y));
        true
    }

    /// Adds a pair whose `yᵀs` (checked by [`accepts_pair`]) and `yᵀy` are known.
    pub(crate) fn push_accepted(&mut self, s: &[f64], y: &[f64], ys: f64, yy: f64) {
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
        self.diagonal = ys / yy;
        self.pairs.push_back((s_new, y_new, 1.0 / ys));
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
    /// (A device space that stops answering while it moves to the accepted point is interrupted
    /// too; its vectors are then lost with the device, and the caller resumes from a copy.)
    Interrupted,
}

/// L-BFGS as a state machine, one iteration (with its line search) per [`Lbfgs::iterate`]: the
/// point, `f` and `∇f` there, the direction, the correction pairs and the stop reason persist
/// between calls, so the page can run one iteration per message and switch evaluators (the
/// device, then the CPU after a lost device) between iterations. [`minimise`] is this run to
/// the end, so a stepped run and a minimised one take bit-identical iterates.
///
/// Written once over where the vectors live ([`LbfgsVectors`]): the host's `f64` vectors
/// ([`HostVectors`], the default) or a device's buffers, where only the scalars the tests and
/// the line search need come back (`gpu::lbfgs`).
pub struct Lbfgs<S: LbfgsVectors = HostVectors> {
    space: S,
    settings: LbfgsSettings,
    x: S::Vector,
    value: f64,
    gradient: S::Vector,
    /// `Σ|gᵢ|` at `x`.
    gradient_l1: f64,
    direction: S::Vector,
    /// The last iteration's pair `s = x₊ − x`, `y = g₊ − g`.
    step_taken: S::Vector,
    gradient_change: S::Vector,
    /// Where the line search evaluates.
    point: S::Vector,
    /// `(yᵀs, yᵀy)` of the last iteration's pair, still to be added to the memory: the next
    /// iteration adds it before its direction, once, even when that iteration is interrupted
    /// and taken again.
    pending_pair: Option<(f64, f64)>,
    /// The iteration that starts from steepest descent (1, or the first after a resume).
    first_iteration: usize,
    iterations: usize,
    evaluations: usize,
    skipped: usize,
    stop: Option<LbfgsStop>,
}

impl Lbfgs<HostVectors> {
    /// Evaluates the start `x`; `Err` when `f` or `∇f` is not finite there (or the evaluator was
    /// interrupted, which makes it so). Stopped at once (`Optimal`, 0 iterations) when `Σ|gᵢ|` is
    /// already within the optimality tolerance.
    pub async fn start<O: AsyncObjective + ?Sized>(objective: &mut O, x: Vec<f64>, settings: &LbfgsSettings) -> Result<Lbfgs, NonFiniteStart> {
        let space = HostVectors::new(x.len(), settings.memory);
        Lbfgs::start_in(space, objective, x, settings).await
    }

    /// The current point: the start, or where the last iteration moved.
    pub fn x(&self) -> &[f64] {
        &self.x
    }

    /// `∇f` at [`Self::x`].
    pub fn gradient(&self) -> &[f64] {
        &self.gradient
    }
}

impl<S: LbfgsVectors> Lbfgs<S> {
    /// [`Lbfgs::start`] in `space`, from `x` (a vector of that space).
    pub async fn start_in<E: Evaluator<S> + ?Sized>(mut space: S, objective: &mut E, x: S::Vector, settings: &LbfgsSettings) -> Result<Lbfgs<S>, NonFiniteStart> {
        let mut point = space.point();
        space.copy(&x, &mut point);
        let mut gradient = space.vector();
        let (value, scalars) = objective.evaluate(&mut space, &point, &mut gradient, |space, g| vec![space.non_finite(g), space.l1(g)]).await;
        if !value.is_finite() || scalars[0] != 0.0 || objective.interrupted() {
            return Err(NonFiniteStart { value });
        }
        let gradient_l1 = scalars[1];
        let stop = (gradient_l1 <= settings.optimality_tolerance).then_some(LbfgsStop::Optimal);
        Ok(Lbfgs {
            direction: space.vector(),
            step_taken: space.vector(),
            gradient_change: space.vector(),
            space,
            settings: *settings,
            x,
            value,
            gradient,
            gradient_l1,
            point,
            pending_pair: None,
            first_iteration: 1,
            iterations: 0,
            evaluations: 1,
            skipped: 0,
            stop,
        })
    }

    /// Counts `iterations` and `evaluations` as done before this run, which starts afresh
    /// (steepest descent, an empty memory) from its start as iteration `iterations + 1`: a run
    /// resumed elsewhere from a copy of another's point.
    pub fn resumed_after(mut self, iterations: usize, evaluations: usize) -> Self {
        self.iterations += iterations;
        self.evaluations += evaluations;
        self.first_iteration = self.iterations + 1;
        if self.iterations >= self.settings.max_iterations && self.stop.is_none() {
            self.stop = Some(LbfgsStop::MaxIterations);
        }
        self
    }

    /// One iteration: the direction from the memory, the line search along it, the move, and
    /// minFunc's stopping tests.
    pub async fn iterate<E: Evaluator<S> + ?Sized>(&mut self, objective: &mut E) -> IterationOutcome {
        if let Some(stop) = self.stop {
            return IterationOutcome::Stopped(stop);
        }
        if self.iterations >= self.settings.max_iterations {
            return self.stopped(LbfgsStop::MaxIterations);
        }
        let iteration = self.iterations + 1;
        let space = &mut self.space;
        if iteration == self.first_iteration {
            space.combine(None, -1.0, &self.gradient, &mut self.direction);
        } else {
            if let Some((ys, yy)) = self.pending_pair.take() {
                if accepts_pair(ys) {
                    space.push_pair(&mut self.step_taken, &mut self.gradient_change, ys, yy);
                } else {
                    self.skipped += 1;
                }
            }
            space.two_loop(&self.gradient, &mut self.direction);
        }
        let d = &self.direction;
        let wanted = [space.non_finite(d), space.dot(&self.gradient, d), space.max_abs(d), space.l1(d)];
        let Ok(scalars) = space.read(&wanted).await else {
            return IterationOutcome::Interrupted;
        };
        let [non_finite, slope, max_abs, l1] = [scalars[0], scalars[1], scalars[2], scalars[3]];
        if non_finite != 0.0 {
            return self.stopped(LbfgsStop::IllegalDirection);
        }
        if slope > -self.settings.progress_tolerance {
            return self.stopped(LbfgsStop::NotDescending);
        }
        let first_step = if iteration == self.first_iteration { (1.0 / self.gradient_l1).min(1.0) } else { 1.0 };
        let mut line = SpaceLine { space: &mut self.space, objective, x: &self.x, direction: &self.direction, point: &mut self.point, value: self.value, slope, max_abs, l1, evaluations: 0 };
        let (line, best_gradient) = match wolfe::search_line(&mut line, first_step, &self.settings.line_search).await {
            Ok(found) => found,
            Err(interrupted) => {
                self.evaluations += interrupted.evaluations;
                return IterationOutcome::Interrupted;
            }
        };
        self.evaluations += line.evaluations;

        // The move: s = t·d, x += s, y = g₊ − g, and the scalars of the stopping tests and the
        // next pair.
        let space = &mut self.space;
        space.combine(None, line.step, &self.direction, &mut self.step_taken);
        space.add(&self.step_taken, &mut self.x);
        match best_gradient {
            Some(mut new_gradient) => {
                space.combine(Some(&new_gradient), -1.0, &self.gradient, &mut self.gradient_change);
                std::mem::swap(&mut self.gradient, &mut new_gradient);
            }
            None => space.combine(Some(&self.gradient), -1.0, &self.gradient, &mut self.gradient_change),
        }
        let (y, s) = (&self.gradient_change, &self.step_taken);
        let wanted = [space.l1(&self.gradient), space.l1(s), space.dot(y, s), space.dot(y, y)];
        let Ok(scalars) = space.read(&wanted).await else {
            return IterationOutcome::Interrupted;
        };
        let [gradient_l1, step_l1, ys, yy] = [scalars[0], scalars[1], scalars[2], scalars[3]];
        let previous_value = self.value;
        self.value = line.value;
        self.gradient_l1 = gradient_l1;
        self.iterations = iteration;
        self.pending_pair = Some((ys, yy));
        let settings = &self.settings;
        self.stop = if gradient_l1 <= settings.optimality_tolerance {
            Some(LbfgsStop::Optimal)
        } else if step_l1 <= settings.progress_tolerance {
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

    /// The current point as a vector of the space (not [`LbfgsVectors::point`], where the
    /// line search evaluates).
    #[allow(clippy::misnamed_getters)]
    pub fn point(&self) -> &S::Vector {
        &self.x
    }

    /// The space the vectors live in.
    pub fn space(&self) -> &S {
        &self.space
    }

    pub fn space_mut(&mut self) -> &mut S {
        &mut self.space
    }

    /// `f` at the current point.
    pub fn value(&self) -> f64 {
        self.value
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
        LbfgsOutcome { value: self.value, iterations: self.iterations, evaluations: self.evaluations, stop: self.stop.unwrap_or(LbfgsStop::MaxIterations), skipped_updates: self.skipped }
    }
}

/// One iteration's line `x + t·d` in a space: trials evaluated at [`LbfgsVectors::point`],
/// each reading `f`, `∇f·d` and whether `∇f` is finite with one [`LbfgsVectors::read`].
struct SpaceLine<'a, S: LbfgsVectors, E: ?Sized> {
    space: &'a mut S,
    objective: &'a mut E,
    x: &'a S::Vector,
    direction: &'a S::Vector,
    point: &'a mut S::Vector,
    value: f64,
    slope: f64,
    max_abs: f64,
    l1: f64,
    evaluations: usize,
}

impl<S: LbfgsVectors, E: Evaluator<S> + ?Sized> Line for SpaceLine<'_, S, E> {
    type Gradient = S::Vector;

    fn value(&self) -> f64 {
        self.value
    }

    fn slope(&self) -> f64 {
        self.slope
    }

    /// The start is the current point, where `f` and `∇f` were finite (checked at the start
    /// and at every point the search accepts).
    fn origin_legal(&self) -> bool {
        true
    }

    async fn at(&mut self, step: f64) -> Result<Trial<S::Vector>, Interrupted> {
        self.space.combine(Some(self.x), step, self.direction, self.point);
        let mut gradient = self.space.vector();
        let direction = self.direction;
        let (value, scalars) = self.objective.evaluate(self.space, self.point, &mut gradient, |space, g| vec![space.dot(g, direction), space.non_finite(g)]).await;
        self.evaluations += 1;
        if self.objective.interrupted() {
            return Err(Interrupted { evaluations: self.evaluations });
        }
        Ok(Trial { step, value, slope: scalars[0], legal: value.is_finite() && scalars[1] == 0.0, gradient: Some(gradient) })
    }

    fn direction_max_abs(&mut self) -> f64 {
        self.max_abs
    }

    fn direction_l1(&mut self) -> f64 {
        self.l1
    }

    fn evaluations(&self) -> usize {
        self.evaluations
    }
}
