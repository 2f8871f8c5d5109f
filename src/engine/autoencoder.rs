//! Training a sparse autoencoder on the engine's side (issue 17, `deepbelief autoencoder`):
//! on the CPU `autoencoder::train`; on the device the CPU's L-BFGS or conjugate gradient drives
//! [`GpuCost`] (θ uploaded, the gradient read back each evaluation), and SGD runs through the
//! device's per-operation backend. `J` before and after, with its terms and ρ̂, is measured by
//! the CPU reference on either side, so the report means the same thing whatever trained.

use super::Engine;
use crate::autoencoder::lbfgs;
use crate::autoencoder::stack::{self, AutoencoderStack, LayerSettings};
use crate::autoencoder::{cost, train, CostError, Autoencoder, CostSettings, Method, TrainReport, Workspace};
use crate::backend::cpu::CpuBackend;
use crate::gpu::autoencoder::{AutoencoderKernels, GpuCost, GpuCostError};
use crate::supervised::conjugate_gradient;

impl Engine {
    /// Trains `model` on `data` (rows × n_visible) by `method`; `on_iteration(iteration, J)`
    /// after each iteration (SGD: epoch), `false` stops.
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
        let (iterations, evaluations, stop) = match method {
            Method::Lbfgs(lbfgs_settings) => {
                let outcome = lbfgs::minimise(&mut device, &mut params, lbfgs_settings, &mut record);
                let outcome = outcome.map_err(|_| starting_error(&device))?;
                (outcome.iterations, outcome.evaluations, stop_name(&outcome.stop))
            }
            Method::ConjugateGradient(cg_settings) => {
                let outcome = conjugate_gradient::minimise(&mut device, &mut params, *cg_settings, &mut record);
                let outcome = outcome.map_err(|failure| format!("training diverged at iteration {}: {}", failure.iteration, device.last_error.as_ref().map_or("J is not finite".to_string(), |e| e.to_string())))?;
                (outcome.iterations, outcome.evaluations, stop_name(&outcome.stop))
            }
            Method::Sgd(_) => unreachable!("SGD returned above"),
        };
        model.set_params(&params);
        let last = cost(&CpuBackend, model, data, settings, &mut work).map_err(|e| format!("training diverged at iteration {iterations}: {e}"))?;
        let non_finite_trial = device.first_error.as_ref().map(|e| match e {
            GpuCostError::Cost(error) => error.clone(),
            GpuCostError::Device(error) => CostError::NonFinite { what: error.to_string() },
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

fn starting_error(device: &GpuCost) -> String {
    device.first_error.as_ref().map_or("J at the starting point is not finite".to_string(), |e| format!("J at the starting point: {e}"))
}

fn stop_name(stop: &impl serde::Serialize) -> String {
    serde_json::to_value(stop).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}
