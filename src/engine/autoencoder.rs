//! Training a sparse autoencoder on the engine's side (issue 17, `deepbelief autoencoder`):
//! on the CPU `autoencoder::train`; on the device L-BFGS runs with its vectors there
//! ([`DeviceVectors`]: θ, the gradient, the direction and the pairs resident, only scalars read
//! back per trial, θ downloaded every [`CHECKPOINT_ITERATIONS`] iterations and at the end; a
//! lost device resumes on the CPU from the last download), the conjugate gradient drives
//! [`GpuCost`] from the host (θ uploaded, the gradient read back each evaluation), and SGD runs
//! through the device's per-operation backend. `J` before and after, with its terms and ρ̂, is measured by
//! the CPU reference on either side, so the report means the same thing whatever trained.

use super::Engine;
use crate::autoencoder::lbfgs::{self, IterationOutcome, Lbfgs, LbfgsSettings};
use crate::autoencoder::optimise::CostObjective;
use crate::autoencoder::stepwise::{block_on, Blocking};
use crate::autoencoder::vectors::Lost;
use crate::autoencoder::stack::{self, AutoencoderStack, LayerSettings};
use crate::autoencoder::{cost, train, CostError, Autoencoder, CostSettings, Method, TrainReport, Workspace};
use crate::backend::cpu::CpuBackend;
use crate::gpu::autoencoder::{AutoencoderKernels, GpuCost, GpuCostError};
use crate::gpu::lbfgs::{DeviceVectors, LbfgsKernels, DEFAULT_PAIR_BUDGET};
use crate::gpu::GpuContext;

/// How often the device's L-BFGS downloads θ: the point a lost device resumes from on the CPU.
/// Each download is one vector (4 bytes a parameter); the iterations between are scalars only.
pub const CHECKPOINT_ITERATIONS: usize = 10;
use crate::supervised::conjugate_gradient;

impl Engine {
    /// Trains `model` on `data` (rows × n_visible) by `method`; `on_iteration(iteration, J)`
    /// after each iteration (SGD: epoch), `false` stops. After a device lost during L-BFGS the
    /// iterations since θ was last downloaded are taken again on the CPU, and reported again.
    pub fn train_autoencoder(&self, model: &mut Autoencoder, data: &[f32], settings: &CostSettings, method: &Method, on_iteration: &mut dyn FnMut(usize, f64) -> bool) -> Result<TrainReport, String> {
        let ctx = match (self, method) {
            (Engine::Gpu(ctx), Method::Lbfgs(_) | Method::ConjugateGradient(_)) => ctx,
            (Engine::Gpu(_), Method::Sgd(_)) => return train(self.backend().as_ref(), model, data, settings, method, on_iteration).map_err(|e| e.to_string()),
            (Engine::Cpu, _) => return train(&CpuBackend, model, data, settings, method, on_iteration).map_err(|e| e.to_string()),
        };
        let mut work = Workspace::new();
        let initial = cost(&CpuBackend, model, data, settings, &mut work).map_err(|e| e.to_string())?;
        let kernels = AutoencoderKernels::new(ctx);
        let mut device = GpuCost::new(ctx, &kernels, model.n_visible, model.n_hidden, data, *settings).map_err(|e| e.to_string())?;
        let mut params = model.to_params();
        let mut history = Vec::new();
        let mut record = |iteration: usize, value: f64| {
            history.push(value);
            on_iteration(iteration, value)
        };
        let mut resumed = None;
        let (iterations, evaluations, stop) = match method {
            Method::Lbfgs(lbfgs_settings) => match lbfgs_on_device(ctx, &mut device, &mut params, lbfgs_settings, &mut record) {
                Some(run) => {
                    let run = run?;
                    match run.lost {
                        None => (run.iterations, run.evaluations, run.stop),
                        Some(lost) => {
                            // θ as last downloaded, and the iterations it holds: the CPU goes on
                            // from there with a fresh memory.
                            resumed = Some(lost.why);
                            history.truncate(lost.iterations);
                            let mut record = |iteration: usize, value: f64| {
                                history.push(value);
                                on_iteration(iteration, value)
                            };
                            let mut scratch = model.clone();
                            let mut cpu = CostObjective::new(&CpuBackend, &mut scratch, data, *settings);
                            let outcome = lbfgs_resumed_on_cpu(&mut cpu, &mut params, lbfgs_settings, lost.iterations, run.evaluations, &mut record)?;
                            (outcome.iterations, outcome.evaluations, stop_name(&outcome.stop))
                        }
                    }
                }
                // Vectors the device cannot bind: the host's L-BFGS on the device's cost.
                None => {
                    let outcome = lbfgs::minimise(&mut device, &mut params, lbfgs_settings, &mut record);
                    let outcome = outcome.map_err(|_| starting_error(&device))?;
                    (outcome.iterations, outcome.evaluations, stop_name(&outcome.stop))
                }
            },
            Method::ConjugateGradient(cg_settings) => {
                let outcome = conjugate_gradient::minimise(&mut device, &mut params, *cg_settings, &mut record);
                let outcome = outcome.map_err(|failure| format!("training diverged at iteration {}: {}", failure.iteration, device.last_error.as_ref().map_or("J is not finite".to_string(), |e| e.to_string())))?;
                (outcome.iterations, outcome.evaluations, stop_name(&outcome.stop))
            }
            Method::Sgd(_) => unreachable!("SGD returned above"),
        };
        model.set_params(&params);
        let last = cost(&CpuBackend, model, data, settings, &mut work).map_err(|e| format!("training diverged at iteration {iterations}: {e}"))?;
        let non_finite_trial = device.first_error.as_ref().and_then(|e| match e {
            GpuCostError::Cost(error) => Some(error.clone()),
            // A loss the CPU resumed after is no trial's cost.
            GpuCostError::Device(_) if resumed.is_some() => None,
            GpuCostError::Device(error) => Some(CostError::NonFinite { what: error.to_string() }),
        });
        Ok(TrainReport { iterations, evaluations, stop, initial, last, history, non_finite_trial })
    }
}

impl Engine {
    /// Greedy pretraining of a stack of sparse autoencoders ([`stack::pretrain`]): every layer
    /// by [`Engine::train_autoencoder`], so each trains on the device when the engine is a GPU;
    /// the features passed up between layers are computed by the engine's backend.
    /// `on_iteration(layer, iteration, J)` (layer from 0), `false` stops that layer.
    pub fn pretrain_autoencoders(&self, inputs: &[f32], n_visible: usize, layers: &[LayerSettings], on_iteration: &mut dyn FnMut(usize, usize, f64) -> bool) -> Result<AutoencoderStack, String> {
        let side = if self.is_gpu() { "gpu" } else { "cpu" };
        let mut trainer = |k: usize, model: &mut Autoencoder, data: &[f32], settings: &CostSettings, method: &Method| {
            self.train_autoencoder(model, data, settings, method, &mut |i, j| on_iteration(k, i, j)).map(|report| (report, side.to_string()))
        };
        stack::pretrain(self.backend().as_ref(), inputs, n_visible, layers, &mut trainer)
    }
}

/// The device's L-BFGS ended (or was cut off by a lost device).
struct DeviceRun {
    iterations: usize,
    evaluations: usize,
    stop: String,
    lost: Option<LostAt>,
}

/// The device was lost; `params` holds θ after `iterations` iterations.
struct LostAt {
    why: String,
    iterations: usize,
}

/// L-BFGS over the device's vectors on `device` from `params` (written back at every download:
/// each [`CHECKPOINT_ITERATIONS`] and at the end). None where the device cannot hold the
/// vectors; an error where θ at the start is not finite (naming the parameter).
fn lbfgs_on_device(ctx: &GpuContext, device: &mut GpuCost, params: &mut [f64], settings: &LbfgsSettings, record: &mut dyn FnMut(usize, f64) -> bool) -> Option<Result<DeviceRun, String>> {
    block_on(async {
        let mut space = DeviceVectors::for_cost(ctx, &LbfgsKernels::new(ctx), device, settings.memory, DEFAULT_PAIR_BUDGET).await.ok()?;
        let x = match space.upload(params) {
            Ok(x) => x,
            Err(e) => return Some(Err(e)),
        };
        let mut lbfgs = match Lbfgs::start_in(space, device, x, settings).await {
            Ok(lbfgs) => lbfgs,
            Err(_) => return Some(Err(starting_error(device))),
        };
        let mut downloaded = 0;
        let lost = loop {
            let outcome = lbfgs.iterate(device).await;
            let ended = match outcome {
                IterationOutcome::Iterated { iteration, value, stop } => {
                    let cancelled = !record(iteration, value);
                    if cancelled {
                        lbfgs.cancel();
                    }
                    cancelled || stop.is_some()
                }
                IterationOutcome::Stopped(_) => true,
                IterationOutcome::Interrupted => {
                    let why = device.last_error.as_ref().map(|e| e.to_string()).or_else(|| lbfgs.space().lost().map(str::to_string));
                    break Some(why.unwrap_or_else(|| "the device failed".into()));
                }
            };
            if ended || lbfgs.iterations() - downloaded >= CHECKPOINT_ITERATIONS {
                let point = lbfgs.point().clone();
                match lbfgs.space_mut().download(&point).await {
                    Ok(x) => {
                        params.copy_from_slice(&x);
                        downloaded = lbfgs.iterations();
                    }
                    Err(Lost(why)) => break Some(why),
                }
            }
            if ended {
                break None;
            }
        };
        let outcome = lbfgs.outcome();
        Some(Ok(DeviceRun { iterations: outcome.iterations, evaluations: outcome.evaluations, stop: stop_name(&outcome.stop), lost: lost.map(|why| LostAt { why, iterations: downloaded }) }))
    })
}

/// L-BFGS on the CPU's cost from `params`, afresh (an empty memory), counted as resuming after
/// `iterations` iterations and `evaluations` evaluations elsewhere.
fn lbfgs_resumed_on_cpu(cpu: &mut CostObjective, params: &mut [f64], settings: &LbfgsSettings, iterations: usize, evaluations: usize, record: &mut dyn FnMut(usize, f64) -> bool) -> Result<lbfgs::LbfgsOutcome, String> {
    let mut objective = Blocking(cpu);
    block_on(async {
        let started = Lbfgs::start(&mut objective, params.to_vec(), settings).await;
        let mut lbfgs = started.map_err(|e| format!("the device was lost, and J at its last downloaded θ is {} on the CPU", e.value))?.resumed_after(iterations, evaluations);
        while let IterationOutcome::Iterated { iteration, value, stop } = lbfgs.iterate(&mut objective).await {
            if !record(iteration, value) {
                lbfgs.cancel();
                break;
            }
            if stop.is_some() {
                break;
            }
        }
        params.copy_from_slice(lbfgs.x());
        Ok(lbfgs.outcome())
    })
}

fn starting_error(device: &GpuCost) -> String {
    device.first_error.as_ref().map_or("J at the starting point is not finite".to_string(), |e| format!("J at the starting point: {e}"))
}

fn stop_name(stop: &impl serde::Serialize) -> String {
    serde_json::to_value(stop).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}
