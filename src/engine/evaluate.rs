//! How well a stack fits data, on either engine: per-layer reconstruction errors on the data
//! propagated up, the first RBM's mean free energy (optionally on the data binarised at 0.5),
//! the top RBM's, and AIS estimates of log Z. On the GPU the data go up once and only the
//! scalars come back (`gpu::evaluate`, `gpu::ais`); on the CPU the reference computes them.

use super::Engine;
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::data::{CaseValues, Dataset};
use crate::eval::{mean_free_energy, reconstruction_errors, AisConfig, AisEstimate};
use crate::gpu::evaluate::{EvalKernels, GpuDataset, GpuRbm};
use crate::gpu::{GpuContext, GpuError};
use crate::model::{Dbn, Rbm};
use crate::train::greedy::propagate_dataset;

/// The measures of one evaluation, however computed.
#[derive(Clone, Debug)]
pub struct StackFigures {
    /// Mean-field mean squared error per input of each layer, on the data propagated up to it.
    pub layer_errors: Vec<f64>,
    /// The top RBM's mean free energy on the data propagated up (stacks only).
    pub top_free_energy: Option<f64>,
    /// The first RBM's mean free energy on the data (binarised when asked).
    pub free_energy: f64,
}

impl Engine {
    /// [`StackFigures`] of `dbn` on every case of `data`.
    pub async fn stack_figures(&self, dbn: &Dbn, data: &Dataset, binarize: bool) -> Result<StackFigures, String> {
        match self {
            Engine::Cpu => Ok(cpu_figures(&CpuBackend, dbn, data, binarize)),
            Engine::Gpu(ctx) => gpu_figures(ctx, dbn, data, binarize).await.map_err(|e| e.to_string()),
        }
    }

    /// AIS's estimate of `rbm`'s log partition function from the base-rate model with visible
    /// biases `base_visible_bias`.
    pub async fn ais_log_partition(&self, rbm: &Rbm, base_visible_bias: &[f32], config: &AisConfig) -> Result<AisEstimate, String> {
        match self {
            Engine::Cpu => crate::eval::ais_log_partition(&CpuBackend, rbm, base_visible_bias, config).map_err(|e| e.to_string()),
            Engine::Gpu(ctx) => crate::gpu::ais::ais_log_partition(ctx, rbm, base_visible_bias, config).await.map_err(|e| e.to_string()),
        }
    }
}

fn cpu_figures(backend: &dyn Backend, dbn: &Dbn, data: &Dataset, binarize: bool) -> StackFigures {
    let layers = &dbn.layers;
    let mut layer_errors = Vec::new();
    let mut layer_input = data.clone();
    for (k, rbm) in layers.iter().enumerate() {
        layer_errors.push(reconstruction_errors(backend, rbm, &layer_input, usize::MAX).mean_squared_error);
        if k + 1 < layers.len() {
            layer_input = propagate_dataset(backend, rbm, &layer_input);
        }
    }
    let top_free_energy = (layers.len() > 1).then(|| mean_free_energy(backend, layers.last().expect("layers"), &layer_input, usize::MAX));
    let scored = if binarize { binarised(data) } else { data.clone() };
    let free_energy = mean_free_energy(backend, &layers[0], &scored, usize::MAX);
    StackFigures { layer_errors, top_free_energy, free_energy }
}

async fn gpu_figures(ctx: &GpuContext, dbn: &Dbn, data: &Dataset, binarize: bool) -> Result<StackFigures, GpuError> {
    let layers = &dbn.layers;
    let kernels = EvalKernels::new(ctx);
    let first_data = GpuDataset::upload(ctx, data)?;
    let first = GpuRbm::upload(ctx, &layers[0]);
    let mut layer_errors = Vec::new();
    let mut propagated: Option<GpuDataset> = None;
    let mut top = None;
    for (k, rbm) in layers.iter().enumerate() {
        let device_rbm = if k == 0 { None } else { Some(GpuRbm::upload(ctx, rbm)) };
        let device_rbm = device_rbm.as_ref().unwrap_or(&first);
        let input = propagated.as_ref().unwrap_or(&first_data);
        layer_errors.push(kernels.reconstruction_errors(ctx, device_rbm, input, usize::MAX).await?.mean_squared_error);
        if k + 1 < layers.len() {
            propagated = Some(kernels.propagate(ctx, device_rbm, input)?);
        } else if k > 0 {
            top = Some(kernels.mean_free_energy(ctx, device_rbm, input, usize::MAX, false).await?);
        }
    }
    let free_energy = kernels.mean_free_energy(ctx, &first, &first_data, usize::MAX, binarize).await?;
    Ok(StackFigures { layer_errors, top_free_energy: top, free_energy })
}

/// Each value set to 1 above 0.5 and to 0 otherwise.
fn binarised(data: &Dataset) -> Dataset {
    let mut values = vec![0.0f32; data.n_cases * data.n_inputs];
    for (k, row) in values.chunks_exact_mut(data.n_inputs).enumerate() {
        data.case_into(k, row);
        for x in row.iter_mut() {
            *x = if *x > 0.5 { 1.0 } else { 0.0 };
        }
    }
    Dataset { values: CaseValues::Floats(values), ..data.clone() }
}
