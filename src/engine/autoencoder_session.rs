//! One sparse autoencoder trained an iteration at a time, on the device or the CPU (issue 17):
//! the page's `AutoencoderTrainer` (src/web/autoencoder.rs) drives it one message at a time, and
//! the engine suite checks it on every backend.
//!
//! - L-BFGS is the stepwise [`Lbfgs`]: one [`AutoencoderSession::step`] is one iteration with
//!   its line search. On a device its vectors live there ([`DeviceVectors`]: the iterate, the
//!   gradient, the direction and the correction pairs next to the cost's θ), each trial reads
//!   back only scalars, and the step downloads the accepted θ once, for the page's views and as
//!   the point a lost device resumes from. A lost device costs the iteration in flight and the
//!   pairs: the step fails with the reason, the model keeps its last accepted parameters, and
//!   the next step takes the same iteration again on the CPU, from that point with an empty
//!   memory (steepest descent first, as a fresh run). On the CPU the vectors are the host's
//!   f64 ([`HostVectors`](crate::autoencoder::vectors::HostVectors)), bit for bit
//!   `lbfgs::minimise`; a problem whose vectors the device cannot bind runs the host's vectors
//!   on the device's cost (θ uploaded, the gradient read back each evaluation).
//! - SGD is one epoch per step on the CPU ([`SgdRun`]): the device's cost is full-batch.
//! - After each step `J` and its terms and ρ̂ are those of the accepted point: the terms of the
//!   line search's evaluation there (no extra pass), ρ̂ read from the device when that
//!   evaluation was its last, else one forward pass there.

use std::sync::Arc;

use super::Engine;
use crate::autoencoder::lbfgs::{IterationOutcome, Lbfgs, LbfgsSettings, LbfgsStop};
use crate::autoencoder::vectors::{Evaluator as VectorEvaluator, Lost};
use crate::autoencoder::sgd::{SgdRun, SgdSettings};
use crate::autoencoder::stepwise::AsyncObjective;
use crate::autoencoder::{cost, cost_and_gradient, Autoencoder, Cost, CostError, CostSettings, Workspace};
use crate::backend::cpu::CpuBackend;
use crate::clock::now_seconds;
use crate::gpu::autoencoder::{AutoencoderKernels, GpuCost, GpuCostError};
use crate::gpu::lbfgs::{DeviceScalar, DeviceVector, DeviceVectors, LbfgsKernels, DEFAULT_PAIR_BUDGET};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Optimiser {
    /// Full-batch L-BFGS (the UFLDL exercise), one iteration per step.
    Lbfgs(LbfgsSettings),
    /// Mini-batch SGD with momentum, one epoch per step (`epochs` steps in all).
    Sgd(SgdSettings),
}

/// `J` and its three terms (one type with the model file's record and the device's cost).
pub use crate::autoencoder::stack::CostTerms;

/// What one step did.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StepReport {
    /// L-BFGS iterations (SGD epochs) done so far.
    pub iteration: usize,
    /// `J` at the parameters after the step.
    pub cost: CostTerms,
    /// Cost evaluations so far (SGD: mini-batch steps), the start's included.
    pub evaluations: usize,
    /// This step's wall-clock time.
    pub seconds: f64,
    /// No further step will change the model.
    pub done: bool,
    /// Why the run stopped (`max_iterations`, `optimal`, `step_too_small`, …), once it has.
    pub stop: Option<String>,
}

/// One evaluation on an engine: `J`, its gradient (flat, as `Autoencoder::to_params`) and ρ̂.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    pub cost: CostTerms,
    pub gradient: Vec<f64>,
    pub mean_activation: Vec<f32>,
}

/// `J`, its gradient and ρ̂ of `model` on `data` (rows × n_visible), computed where `engine`
/// computes: the device's resident cost (kernels compiled, data uploaded, one evaluation), or
/// the CPU reference.
pub async fn evaluate(engine: &Engine, model: &Autoencoder, data: &[f32], settings: &CostSettings) -> Result<Evaluation, String> {
    let params = model.to_params();
    let mut gradient = vec![0.0; params.len()];
    match engine {
        Engine::Gpu(ctx) => {
            let kernels = AutoencoderKernels::new(ctx);
            let mut device = GpuCost::new(ctx, &kernels, model.n_visible, model.n_hidden, data, *settings).map_err(|e| e.to_string())?;
            let cost = device.evaluate_into(&params, &mut gradient).await.map_err(|e| e.to_string())?;
            let mean_activation = device.mean_activation().await.map_err(|e| e.to_string())?;
            Ok(Evaluation { cost, gradient, mean_activation })
        }
        Engine::Cpu => {
            let mut flat = Autoencoder::zeros(model.n_visible, model.n_hidden);
            let cost = cost_and_gradient(&CpuBackend, model, data, settings, &mut Workspace::new(), &mut flat).map_err(|e| e.to_string())?;
            flat.write_params(&mut gradient);
            Ok(Evaluation { cost: (&cost).into(), gradient, mean_activation: cost.mean_activation })
        }
    }
}

/// The CPU reference cost with its buffers.
struct CpuCost {
    model: Autoencoder,
    work: Workspace,
    gradient: Autoencoder,
}

impl CpuCost {
    fn new(n_visible: usize, n_hidden: usize) -> CpuCost {
        CpuCost { model: Autoencoder::zeros(n_visible, n_hidden), work: Workspace::new(), gradient: Autoencoder::zeros(n_visible, n_hidden) }
    }
}

/// Where evaluations run (one per session: the variants' sizes do not matter).
#[allow(clippy::large_enum_variant)]
enum Evaluator {
    Cpu(CpuCost),
    Device(GpuCost),
}

/// An evaluation seen during one step: `J`'s bits, its terms, and ρ̂ where the CPU gave it.
struct Seen {
    /// Its place among the step's evaluations, from 1.
    index: usize,
    total: u64,
    terms: CostTerms,
    mean_activation: Option<Vec<f32>>,
}

/// Every evaluation of one step: its terms (the accepted point's are among them) and why any
/// failed.
#[derive(Default)]
struct Log {
    seen: Vec<Seen>,
    count: usize,
    /// The first evaluation that was not finite (the line search backed away from it).
    non_finite: Option<CostError>,
    /// The device was lost: every later evaluation would fail too.
    lost: Option<String>,
}

/// The evaluator as the host's vectors see it during one step.
struct Evaluations<'a> {
    evaluator: &'a mut Evaluator,
    data: &'a [f32],
    settings: CostSettings,
    log: Log,
}

impl<'a> Evaluations<'a> {
    fn new(evaluator: &'a mut Evaluator, data: &'a [f32], settings: CostSettings) -> Self {
        Evaluations { evaluator, data, settings, log: Log::default() }
    }
}

/// The device's cost as the device's vectors see it during one step (each trial one
/// submission and one read-back of scalars: [`DeviceVectors::evaluate_cost`]).
struct DeviceEvaluations<'a> {
    device: &'a mut GpuCost,
    log: Log,
}

impl VectorEvaluator<DeviceVectors> for DeviceEvaluations<'_> {
    async fn evaluate<F: FnOnce(&mut DeviceVectors, &DeviceVector) -> Vec<DeviceScalar>>(&mut self, space: &mut DeviceVectors, point: &DeviceVector, gradient: &mut DeviceVector, then: F) -> (f64, Vec<f64>) {
        let (result, scalars) = space.evaluate_cost(self.device, point, gradient, then).await;
        (self.log.record(result.map(|terms| (terms, None))), scalars)
    }

    fn interrupted(&self) -> bool {
        self.log.lost.is_some()
    }
}

impl Log {
    fn record(&mut self, result: Result<(CostTerms, Option<Vec<f32>>), GpuCostError>) -> f64 {
        self.count += 1;
        match result {
            Ok((terms, mean_activation)) => {
                self.seen.push(Seen { index: self.count, total: terms.total.to_bits(), terms, mean_activation });
                terms.total
            }
            Err(GpuCostError::Cost(error)) => {
                self.non_finite.get_or_insert(error);
                f64::NAN
            }
            Err(GpuCostError::Device(error)) => {
                self.lost.get_or_insert(error.to_string());
                f64::NAN
            }
        }
    }

    /// The latest evaluation whose `J` is `value`, and whether it was the last one made.
    fn at_value(&self, value: f64) -> Option<(&Seen, bool)> {
        let seen = self.seen.iter().rfind(|s| s.total == value.to_bits())?;
        Some((seen, seen.index == self.count))
    }

    /// The accepted point's terms, ρ̂ where the CPU gave it, and whether its evaluation was the
    /// step's last.
    fn accepted(&self, value: f64) -> Option<(CostTerms, Option<Vec<f32>>, bool)> {
        self.at_value(value).map(|(seen, last)| (seen.terms, seen.mean_activation.clone(), last))
    }
}

impl AsyncObjective for Evaluations<'_> {
    async fn value(&mut self, x: &[f64]) -> f64 {
        let result = match &mut *self.evaluator {
            Evaluator::Cpu(cpu) => {
                cpu.model.set_params(x);
                cost(&CpuBackend, &cpu.model, self.data, &self.settings, &mut cpu.work).map(|c| ((&c).into(), Some(c.mean_activation))).map_err(GpuCostError::Cost)
            }
            Evaluator::Device(device) => device.cost_at(x).await.map(|c| (c, None)),
        };
        self.log.record(result)
    }

    async fn value_and_gradient(&mut self, x: &[f64], gradient: &mut [f64]) -> f64 {
        let result = match &mut *self.evaluator {
            Evaluator::Cpu(cpu) => {
                cpu.model.set_params(x);
                let result = cost_and_gradient(&CpuBackend, &cpu.model, self.data, &self.settings, &mut cpu.work, &mut cpu.gradient);
                if result.is_ok() {
                    cpu.gradient.write_params(gradient);
                }
                result.map(|c| ((&c).into(), Some(c.mean_activation))).map_err(GpuCostError::Cost)
            }
            Evaluator::Device(device) => device.evaluate_into(x, gradient).await.map(|c| (c, None)),
        };
        if result.is_err() {
            gradient.fill(f64::NAN);
        }
        self.log.record(result)
    }

    fn interrupted(&self) -> bool {
        self.log.lost.is_some()
    }
}

enum State {
    Lbfgs(Lbfgs),
    /// L-BFGS with its vectors on the device ([`Evaluator::Device`] evaluates).
    DeviceLbfgs(Box<Lbfgs<DeviceVectors>>),
    Sgd { run: SgdRun, epochs: usize },
}

/// A sparse autoencoder in training, one step at a time.
pub struct AutoencoderSession {
    evaluator: Evaluator,
    /// Why the evaluations run on the CPU where a device was offered (or lost).
    backend_reason: Option<String>,
    data: Arc<[f32]>,
    settings: CostSettings,
    /// The last accepted parameters.
    model: Autoencoder,
    /// The L-BFGS iterations that [`Self::model`] holds (the device's run may be one ahead
    /// when its download failed).
    model_iterations: usize,
    state: State,
    cost: CostTerms,
    mean_activation: Vec<f32>,
    initial: CostTerms,
    /// `J` after each step.
    history: Vec<f64>,
    /// SGD's mini-batch steps plus its measurements (L-BFGS counts its own).
    sgd_evaluations: usize,
    seconds: f64,
    /// The engine the session was started on, for a simulated loss.
    engine: Engine,
}

impl AutoencoderSession {
    /// Evaluates `model` on `data` (rows × n_visible) where `engine` says, ready to step.
    /// L-BFGS runs its evaluations on the device of a GPU engine; SGD, and a problem the device
    /// cannot hold, run on the CPU, with the reason in [`Self::backend_reason`]. A device lost
    /// while starting falls back to the CPU the same way. `J` not finite at the start, bad
    /// settings or data that do not fit are errors.
    pub async fn start(engine: &Engine, model: Autoencoder, data: Arc<[f32]>, settings: CostSettings, optimiser: Optimiser) -> Result<AutoencoderSession, String> {
        let started = now_seconds();
        settings.validate().map_err(|e| e.to_string())?;
        let (v, h) = (model.n_visible, model.n_hidden);
        if v == 0 || h == 0 || data.is_empty() || !data.len().is_multiple_of(v) {
            return Err(format!("{} data values do not make whole cases of {v} inputs", data.len()));
        }
        let (evaluator, backend_reason) = match (engine, &optimiser) {
            (Engine::Gpu(ctx), Optimiser::Lbfgs(_)) => match GpuCost::new(ctx, &AutoencoderKernels::new(ctx), v, h, &data, settings) {
                Ok(device) => (Evaluator::Device(device), None),
                Err(GpuCostError::Device(e)) => (Evaluator::Cpu(CpuCost::new(v, h)), Some(format!("the device cannot train this autoencoder ({e}), so the CPU does"))),
                Err(GpuCostError::Cost(e)) => return Err(e.to_string()),
            },
            (Engine::Gpu(_), Optimiser::Sgd(_)) => (Evaluator::Cpu(CpuCost::new(v, h)), Some("SGD trains on the CPU: the device's cost is full-batch".to_string())),
            (Engine::Cpu, _) => (Evaluator::Cpu(CpuCost::new(v, h)), None),
        };
        let mut session = AutoencoderSession {
            evaluator,
            backend_reason,
            data,
            settings,
            state: State::Sgd { run: SgdRun::new(&model, 0, &SgdSettings::default()), epochs: 0 },
            model,
            model_iterations: 0,
            cost: CostTerms { total: f64::NAN, reconstruction: f64::NAN, weight_decay: f64::NAN, sparsity: f64::NAN },
            mean_activation: Vec::new(),
            initial: CostTerms { total: f64::NAN, reconstruction: f64::NAN, weight_decay: f64::NAN, sparsity: f64::NAN },
            history: Vec::new(),
            sgd_evaluations: 0,
            seconds: 0.0,
            engine: engine.clone(),
        };
        session.state = match optimiser {
            Optimiser::Lbfgs(lbfgs_settings) => session.start_lbfgs(&lbfgs_settings).await?,
            Optimiser::Sgd(sgd) => {
                let rows = session.data.len() / v;
                let measured = cost(&CpuBackend, &session.model, &session.data, &settings, &mut Workspace::new()).map_err(|e| format!("J at the starting point: {e}"))?;
                session.measured(&measured);
                session.sgd_evaluations = 1;
                State::Sgd { run: SgdRun::new(&session.model, rows, &sgd), epochs: sgd.epochs }
            }
        };
        session.initial = session.cost;
        session.seconds = now_seconds() - started;
        Ok(session)
    }

    /// L-BFGS's start on the session's evaluator: with its vectors on the device where the
    /// device can hold them, else the host's (on the CPU after a device lost meanwhile).
    async fn start_lbfgs(&mut self, settings: &LbfgsSettings) -> Result<State, String> {
        if let Some(started) = self.start_device_lbfgs(settings).await {
            return started.map(|lbfgs| State::DeviceLbfgs(Box::new(lbfgs)));
        }
        self.start_host_lbfgs(settings).await.map(State::Lbfgs)
    }

    /// L-BFGS over the device's vectors from the model's parameters, or None where the device
    /// cannot hold the vectors (or was lost meanwhile: the evaluator is then the CPU's).
    async fn start_device_lbfgs(&mut self, settings: &LbfgsSettings) -> Option<Result<Lbfgs<DeviceVectors>, String>> {
        let (Evaluator::Device(device), Engine::Gpu(ctx)) = (&mut self.evaluator, &self.engine) else { return None };
        let mut space = match DeviceVectors::for_cost(ctx, &LbfgsKernels::new(ctx), device, settings.memory, DEFAULT_PAIR_BUDGET).await {
            Ok(space) => space,
            Err(e) => {
                if ctx.failure().is_some() {
                    self.fall_back(&e.to_string());
                }
                return None;
            }
        };
        let x = match space.upload(&self.model.to_params()) {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        let mut evaluations = DeviceEvaluations { device, log: Log::default() };
        let started = Lbfgs::start_in(space, &mut evaluations, x, settings).await;
        let Log { mut seen, lost, non_finite, .. } = evaluations.log;
        if let Some(why) = lost {
            self.fall_back(&why);
            return None;
        }
        let lbfgs = match started {
            Ok(lbfgs) => lbfgs,
            Err(start) => return Some(Err(starting_error(non_finite, start.value))),
        };
        self.cost = seen.pop().expect("a finite start was evaluated").terms;
        // The start was the device's last evaluation: ρ̂ is its.
        match self.device_mean_activation().await {
            Ok(means) => self.mean_activation = means,
            Err(why) => {
                self.fall_back(&why);
                return None;
            }
        }
        Some(Ok(lbfgs))
    }

    /// L-BFGS over the host's vectors from the model's parameters, on the session's evaluator
    /// (on the CPU after a device lost meanwhile).
    async fn start_host_lbfgs(&mut self, settings: &LbfgsSettings) -> Result<Lbfgs, String> {
        loop {
            let mut evaluations = Evaluations::new(&mut self.evaluator, &self.data, self.settings);
            let started = Lbfgs::start(&mut evaluations, self.model.to_params(), settings).await;
            let (lost, non_finite) = (evaluations.log.lost.take(), evaluations.log.non_finite.take());
            let measured = evaluations.log.seen.pop();
            if let Some(why) = lost {
                self.fall_back(&why);
                continue;
            }
            let lbfgs = started.map_err(|start| starting_error(non_finite, start.value))?;
            let seen = measured.expect("a finite start was evaluated");
            self.cost = seen.terms;
            self.mean_activation = match seen.mean_activation {
                Some(means) => means,
                None => self.device_mean_activation().await?,
            };
            return Ok(lbfgs);
        }
    }

    /// One L-BFGS iteration (with its line search) or one SGD epoch. A lost device, or a cost
    /// that is not finite where the run cannot go around it, is an error naming it; the model
    /// keeps its last accepted parameters either way, and after a lost device the next step
    /// goes on on the CPU.
    pub async fn step(&mut self) -> Result<StepReport, String> {
        let started = now_seconds();
        let result = match self.state {
            State::Lbfgs(_) => self.lbfgs_step().await,
            State::DeviceLbfgs(_) => self.device_lbfgs_step().await,
            State::Sgd { .. } => self.sgd_step(),
        };
        let seconds = now_seconds() - started;
        self.seconds += seconds;
        let (iteration, done, stop) = result?;
        if iteration > self.history.len() {
            self.history.push(self.cost.total);
        }
        Ok(StepReport { iteration, cost: self.cost, evaluations: self.evaluations(), seconds, done, stop })
    }

    async fn lbfgs_step(&mut self) -> Result<(usize, bool, Option<String>), String> {
        let State::Lbfgs(lbfgs) = &mut self.state else { unreachable!("an L-BFGS session") };
        let mut evaluations = Evaluations::new(&mut self.evaluator, &self.data, self.settings);
        let outcome = lbfgs.iterate(&mut evaluations).await;
        let (iterations, value, stop) = (lbfgs.iterations(), lbfgs.value(), lbfgs.stop());
        let (lost, non_finite) = (evaluations.log.lost.take(), evaluations.log.non_finite.take());
        let at_value = evaluations.log.accepted(value);
        match outcome {
            IterationOutcome::Interrupted => {
                let why = lost.unwrap_or_else(|| "the device failed".into());
                self.fall_back(&why);
                Err(format!("the device was lost during iteration {} ({why}); the model keeps its last parameters, and the next step takes the iteration again on the CPU", iterations + 1))
            }
            IterationOutcome::Stopped(stop) => Ok((iterations, true, Some(stop_name(stop)))),
            IterationOutcome::Iterated { .. } => {
                let State::Lbfgs(lbfgs) = &self.state else { unreachable!("an L-BFGS session") };
                self.model.set_params(lbfgs.x());
                let x = lbfgs.x().to_vec();
                self.measure(at_value, &x).await?;
                if let (Some(LbfgsStop::StepTooSmall), Some(error)) = (stop, non_finite) {
                    return Err(format!("iteration {iterations} found no finite lower point along its direction ({error}); the model keeps its last parameters"));
                }
                Ok((iterations, stop.is_some(), stop.map(stop_name)))
            }
        }
    }

    /// One L-BFGS iteration over the device's vectors, then the accepted θ downloaded into the
    /// model. A lost device (during the iteration or the download) fails the step, and the
    /// run goes on on the CPU from the model's parameters ([`Self::resume_on_cpu`]).
    async fn device_lbfgs_step(&mut self) -> Result<(usize, bool, Option<String>), String> {
        let (State::DeviceLbfgs(lbfgs), Evaluator::Device(device)) = (&mut self.state, &mut self.evaluator) else { unreachable!("a device L-BFGS session evaluates on the device") };
        let mut evaluations = DeviceEvaluations { device, log: Log::default() };
        let outcome = lbfgs.iterate(&mut evaluations).await;
        let (iterations, value, stop) = (lbfgs.iterations(), lbfgs.value(), lbfgs.stop());
        let Log { lost, non_finite, .. } = &evaluations.log;
        let (lost, non_finite, at_value) = (lost.clone(), non_finite.clone(), evaluations.log.accepted(value));
        let moved = match outcome {
            IterationOutcome::Stopped(stop) => return Ok((iterations, true, Some(stop_name(stop)))),
            IterationOutcome::Interrupted => Err(lost.or_else(|| lbfgs.space().lost().map(str::to_string)).unwrap_or_else(|| "the device failed".into())),
            IterationOutcome::Iterated { .. } => {
                let point = lbfgs.point().clone();
                lbfgs.space_mut().download(&point).await.map_err(|Lost(why)| why)
            }
        };
        let x = match moved {
            Ok(x) => x,
            Err(why) => {
                let done = self.model_iterations.min(iterations);
                self.resume_on_cpu(&why, done).await?;
                return Err(format!("the device was lost during iteration {} ({why}); the model keeps its last parameters, and the next step takes the iteration again on the CPU", done + 1));
            }
        };
        self.model.set_params(&x);
        self.model_iterations = iterations;
        self.measure(at_value, &x).await?;
        if let (Some(LbfgsStop::StepTooSmall), Some(error)) = (stop, non_finite) {
            return Err(format!("iteration {iterations} found no finite lower point along its direction ({error}); the model keeps its last parameters"));
        }
        Ok((iterations, stop.is_some(), stop.map(stop_name)))
    }

    /// After a lost device: the evaluations move to the CPU, and L-BFGS starts afresh there
    /// (the device's pairs are lost with it) from the model's parameters, counted as resuming
    /// after the model's `iterations` and the evaluations so far.
    async fn resume_on_cpu(&mut self, why: &str, iterations: usize) -> Result<(), String> {
        let State::DeviceLbfgs(lbfgs) = &self.state else { unreachable!("a device L-BFGS session") };
        let (settings, evaluations) = (*lbfgs.settings(), lbfgs.evaluations());
        self.fall_back(why);
        let cost = self.cost;
        let resumed = self.start_host_lbfgs(&settings).await;
        // The model's J stays the device's measurement of it until the next step.
        self.cost = cost;
        self.state = State::Lbfgs(resumed?.resumed_after(iterations, evaluations));
        Ok(())
    }

    /// `J`'s terms and ρ̂ at `x`, the accepted point: from its evaluation during the step where
    /// there was one (ρ̂ from the device when that evaluation was the device's last), else one
    /// forward pass there.
    async fn measure(&mut self, at_value: Option<(CostTerms, Option<Vec<f32>>, bool)>, x: &[f64]) -> Result<(), String> {
        match (at_value, &self.evaluator) {
            (Some((terms, Some(means), _)), _) => {
                self.cost = terms;
                self.mean_activation = means;
                return Ok(());
            }
            (Some((terms, None, true)), Evaluator::Device(_)) => {
                if let Ok(means) = self.device_mean_activation().await {
                    self.cost = terms;
                    self.mean_activation = means;
                    return Ok(());
                }
            }
            _ => {}
        }
        if let Evaluator::Device(device) = &mut self.evaluator {
            if let Ok(terms) = device.cost_at(x).await {
                if let Ok(means) = self.device_mean_activation().await {
                    self.cost = terms;
                    self.mean_activation = means;
                    return Ok(());
                }
            }
        }
        // The CPU's measurement: a device that failed meanwhile is not asked again.
        if matches!(self.evaluator, Evaluator::Device(_)) {
            self.fall_back("it failed while measuring J");
        }
        let measured = cost(&CpuBackend, &self.model, &self.data, &self.settings, &mut Workspace::new()).map_err(|e| e.to_string())?;
        self.measured(&measured);
        Ok(())
    }

    async fn device_mean_activation(&self) -> Result<Vec<f32>, String> {
        match &self.evaluator {
            Evaluator::Device(device) => device.mean_activation().await.map_err(|e| e.to_string()),
            Evaluator::Cpu(_) => unreachable!("ρ̂ from the device of a device session"),
        }
    }

    fn sgd_step(&mut self) -> Result<(usize, bool, Option<String>), String> {
        let State::Sgd { run, epochs } = &mut self.state else { unreachable!("an SGD session") };
        if run.epochs_done() >= *epochs {
            return Ok((run.epochs_done(), true, Some(stop_name(LbfgsStop::MaxIterations))));
        }
        let (run_before, model_before) = (run.clone(), self.model.clone());
        let epoch = run.epoch(&CpuBackend, &mut self.model, &self.data, &self.settings).map_err(|failure| (failure.epoch, failure.error));
        let measured = epoch.and_then(|_| cost(&CpuBackend, &self.model, &self.data, &self.settings, &mut Workspace::new()).map_err(|error| (run.epochs_done(), error)));
        match measured {
            Ok(measured) => {
                self.sgd_evaluations += run.steps_per_epoch() + 1;
                let done = run.epochs_done() >= *epochs;
                let iteration = run.epochs_done();
                self.measured(&measured);
                Ok((iteration, done, done.then(|| stop_name(LbfgsStop::MaxIterations))))
            }
            Err((epoch, error)) => {
                *run = run_before;
                self.model = model_before;
                Err(format!("SGD diverged in epoch {epoch} ({error}); the model keeps the parameters it had before that epoch"))
            }
        }
    }

    fn measured(&mut self, cost: &Cost) {
        self.cost = cost.into();
        self.mean_activation = cost.mean_activation.clone();
    }

    /// Evaluations move to the CPU for good.
    fn fall_back(&mut self, why: &str) {
        let (v, h) = (self.model.n_visible, self.model.n_hidden);
        self.evaluator = Evaluator::Cpu(CpuCost::new(v, h));
        self.backend_reason = Some(format!("the device was lost ({why}), so the CPU trains from where it stopped"));
    }

    /// Whether evaluations run on the device.
    pub fn on_device(&self) -> bool {
        matches!(self.evaluator, Evaluator::Device(_))
    }

    /// Why evaluations run on the CPU although the session was started on a device.
    pub fn backend_reason(&self) -> Option<&str> {
        self.backend_reason.as_deref()
    }

    /// The last accepted parameters.
    pub fn model(&self) -> &Autoencoder {
        &self.model
    }

    pub fn data(&self) -> &Arc<[f32]> {
        &self.data
    }

    pub fn rows(&self) -> usize {
        self.data.len() / self.model.n_visible
    }

    pub fn settings(&self) -> &CostSettings {
        &self.settings
    }

    /// `J` and its terms at [`Self::model`].
    pub fn cost(&self) -> CostTerms {
        self.cost
    }

    /// `J` at the start.
    pub fn initial_cost(&self) -> CostTerms {
        self.initial
    }

    /// `J` after each step that moved.
    pub fn history(&self) -> &[f64] {
        &self.history
    }

    /// ρ̂ at [`Self::model`]: each hidden unit's mean activation over the cases.
    pub fn mean_activation(&self) -> &[f32] {
        &self.mean_activation
    }

    /// L-BFGS iterations or SGD epochs done.
    pub fn iterations(&self) -> usize {
        match &self.state {
            State::Lbfgs(lbfgs) => lbfgs.iterations(),
            State::DeviceLbfgs(lbfgs) => lbfgs.iterations(),
            State::Sgd { run, .. } => run.epochs_done(),
        }
    }

    /// Cost evaluations (SGD: mini-batch steps and one measurement per epoch), the start's
    /// included.
    pub fn evaluations(&self) -> usize {
        match &self.state {
            State::Lbfgs(lbfgs) => lbfgs.evaluations(),
            State::DeviceLbfgs(lbfgs) => lbfgs.evaluations(),
            State::Sgd { .. } => self.sgd_evaluations,
        }
    }

    /// Why the run stopped, once it has.
    pub fn stop(&self) -> Option<String> {
        match &self.state {
            State::Lbfgs(lbfgs) => lbfgs.stop().map(stop_name),
            State::DeviceLbfgs(lbfgs) => lbfgs.stop().map(stop_name),
            State::Sgd { run, epochs } => (run.epochs_done() >= *epochs).then(|| stop_name(LbfgsStop::MaxIterations)),
        }
    }

    /// Wall-clock seconds of the start and every step.
    pub fn seconds(&self) -> f64 {
        self.seconds
    }

    /// Testing hook: destroys the device, as a driver reset or a lost adapter would.
    pub fn simulate_device_loss(&self) {
        if self.on_device() {
            self.engine.simulate_loss();
        }
    }
}

fn starting_error(non_finite: Option<CostError>, value: f64) -> String {
    match non_finite {
        Some(error) => format!("J at the starting point: {error}"),
        None => format!("J at the starting point is {value}"),
    }
}

fn stop_name(stop: LbfgsStop) -> String {
    serde_json::to_value(stop).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}
