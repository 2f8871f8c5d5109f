//! The per-epoch monitor on the device: `train::monitor::measure_epoch` for the trainer's
//! resident weights and training data, as a [`MonitorPlan`] prepared once per layer on the
//! trainer's own buffers (the weights change in place), so an epoch's monitor is a few
//! submissions and one read-back of a few scalars (three per hidden unit).
//!
//! The figures are the CPU reference's: the same cases (`spread_cases` of the layer's data and
//! of the held-out data), the same pseudo-log-likelihood flips (its seed is [`monitor_seed`] of
//! the layer's seed and the epoch, as `GreedyTrainer` uses). Only the held-out cases measured
//! are uploaded, at most `max_cases` of them, once per layer.
//!
//! Cost: 8 products over at most `max_cases` cases against the 5 of a CD-1 epoch's every case,
//! and one read-back; the figures measured are in `gpu::epoch_monitor`'s docs.

use super::GpuCdTrainer;
use crate::data::split::spread_cases;
use crate::data::Dataset;
use crate::gpu::epoch_monitor::MonitorPlan;
use crate::gpu::evaluate::{EvalKernels, GpuDataset, GpuRbm};
use crate::gpu::GpuError;
use crate::train::monitor::{monitor_seed, EpochMetrics};

impl GpuCdTrainer {
    /// Turns the per-epoch monitor on (off with `max_cases` 0): [`Self::measure_epoch`] then
    /// measures at most `max_cases` cases of the training data and of `held_out` (the
    /// held-out cases as this layer sees them) as `GreedyTrainer` does on the CPU.
    pub fn set_monitor(&mut self, held_out: Option<&Dataset>, max_cases: usize) -> Result<(), GpuError> {
        self.monitor = None;
        if max_cases == 0 {
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
        let rbm = GpuRbm {
            n_visible: self.n_visible,
            n_hidden: self.n_hidden,
            visible_units: self.visible_units,
            weights: self.b.weights.clone(),
            visible_bias: self.b.visible_bias.clone(),
            hidden_bias: self.b.hidden_bias.clone(),
        };
        let train = GpuDataset { n_cases: self.n_cases, n_inputs: self.n_visible, values: self.b.data.clone(), is_u8: self.b.data_u8 };
        self.monitor = Some(MonitorPlan::new(&self.ctx, &EvalKernels::new(&self.ctx), rbm, train, held_out, max_cases)?);
        Ok(())
    }

    /// The monitor's figures for the model as it stands (after [`Self::train_epoch`]: the epoch
    /// just trained); `None` when the monitor is off.
    pub async fn measure_epoch(&self) -> Result<Option<EpochMetrics>, GpuError> {
        match &self.monitor {
            Some(plan) => Ok(Some(plan.measure(&self.ctx, monitor_seed(self.config.seed, self.epoch)).await?)),
            None => Ok(None),
        }
    }
}
