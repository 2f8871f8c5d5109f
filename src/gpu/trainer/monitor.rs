//! The per-epoch monitor on the device: `train::monitor::measure_epoch` for the trainer's
//! resident weights and training data, through the evaluation kernels (`gpu::evaluate`), so
//! nothing but a few scalars per measure (three per hidden unit) crosses to the host.
//!
//! The figures are the CPU reference's: the same cases (`spread_cases` of the layer's data and
//! of the held-out data), the same pseudo-log-likelihood flips (its seed is
//! [`monitor_seed`] of the layer's seed and the epoch, as `GreedyTrainer` uses). Only the
//! held-out cases are uploaded, at most `max_cases` of them, once per layer.
//!
//! Cost: 7 products over at most `max_cases` cases (reconstruction 2, free energies 1 each,
//! pseudo-likelihood 1, unit statistics 2) against 5 per case of a CD-1 epoch (10 passes of
//! the weights counting the paired gradient product as 2), so with the stack's default 1,000
//! cases it is 14% of an epoch over 10,000 cases and 2.3% over 60,000, as on the CPU, plus five
//! read-backs.

use super::GpuCdTrainer;
use crate::data::Dataset;
use crate::eval::spread_cases;
use crate::gpu::evaluate::{EvalKernels, GpuDataset, GpuRbm};
use crate::gpu::GpuError;
use crate::model::VisibleUnits;
use crate::train::monitor::{monitor_seed, EpochMetrics};

pub(super) struct Monitor {
    kernels: EvalKernels,
    held_out: Option<GpuDataset>,
    max_cases: usize,
}

impl GpuCdTrainer {
    /// Turns the per-epoch monitor on (off with `max_cases` 0): [`Self::measure_epoch`] then
    /// measures at most `max_cases` cases of the training data and of `held_out` (the
    /// held-out cases as this layer sees them) as `GreedyTrainer` does on the CPU.
    pub fn set_monitor(&mut self, held_out: Option<&Dataset>, max_cases: usize) -> Result<(), GpuError> {
        if max_cases == 0 {
            self.monitor = None;
            return Ok(());
        }
        let held_out = match held_out {
            Some(data) if data.n_inputs != self.n_visible => {
                return Err(GpuError(format!("{}: held-out cases of {} inputs for a layer with {} visible units", data.name, data.n_inputs, self.n_visible)));
            }
            // The measured cases alone: spread_cases of these is all of them, in the same order.
            Some(data) => Some(GpuDataset::upload(&self.ctx, &data.subset(&spread_cases(data.n_cases, max_cases)))?),
            None => None,
        };
        self.monitor = Some(Monitor { kernels: EvalKernels::new(&self.ctx), held_out, max_cases });
        Ok(())
    }

    /// The monitor's figures for the model as it stands (after [`Self::train_epoch`]: the epoch
    /// just trained); `None` when the monitor is off.
    pub async fn measure_epoch(&self) -> Result<Option<EpochMetrics>, GpuError> {
        let Some(monitor) = &self.monitor else { return Ok(None) };
        let (ctx, kernels, max_cases) = (&self.ctx, &monitor.kernels, monitor.max_cases);
        let rbm = GpuRbm {
            n_visible: self.n_visible,
            n_hidden: self.n_hidden,
            visible_units: self.visible_units,
            weights: self.b.weights.clone(),
            visible_bias: self.b.visible_bias.clone(),
            hidden_bias: self.b.hidden_bias.clone(),
        };
        let train = GpuDataset { n_cases: self.n_cases, n_inputs: self.n_visible, values: self.b.data.clone(), is_u8: self.b.data_u8 };
        let recon = kernels.reconstruction_errors(ctx, &rbm, &train, max_cases).await?;
        let free_energy_train = kernels.mean_free_energy(ctx, &rbm, &train, max_cases, false).await?;
        let free_energy_held_out = match &monitor.held_out {
            Some(held_out) => Some(kernels.mean_free_energy(ctx, &rbm, held_out, max_cases, false).await?),
            None => None,
        };
        let pseudo_log_likelihood = match self.visible_units {
            VisibleUnits::Bernoulli => Some(kernels.pseudo_log_likelihood(ctx, &rbm, &train, max_cases, monitor_seed(self.config.seed, self.epoch)).await?),
            VisibleUnits::Gaussian => None,
        };
        let hidden_units = kernels.hidden_unit_statistics(ctx, &rbm, &train, max_cases).await?;
        Ok(Some(EpochMetrics {
            recon_mse: recon.mean_squared_error,
            recon_cross_entropy: recon.cross_entropy,
            free_energy_train,
            free_energy_held_out,
            pseudo_log_likelihood,
            hidden_units,
        }))
    }
}
