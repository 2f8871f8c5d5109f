//! Moving the trainer's state across the host–device boundary: the start-of-epoch snapshot on
//! the device (restored when an epoch diverges), the full [`CdCheckpoint`] download after an
//! epoch (what the CPU resumes from if the device is lost), the upload of a checkpoint, and the
//! model alone.

use super::{DeviceBuffers, GpuCdTrainer};
use crate::gpu::schedule::{self, read_ranges, TrainState};
use crate::gpu::{buffers, GpuContext, GpuError};
use crate::model::Rbm;
use crate::train::CdCheckpoint;

/// Device copies of what an epoch changes and the CPU's divergence rollback restores.
pub(super) struct Snapshot {
    weights: wgpu::Buffer,
    visible_bias: wgpu::Buffer,
    hidden_bias: wgpu::Buffer,
    smoothed: wgpu::Buffer,
    persistent: Option<wgpu::Buffer>,
}

impl Snapshot {
    pub(super) fn new(ctx: &GpuContext, b: &DeviceBuffers) -> Self {
        let like = |buffer: &wgpu::Buffer, label: &str| buffers::zeros(ctx, label, buffer.size());
        Snapshot {
            weights: like(&b.weights, "snapshot_weights"),
            visible_bias: like(&b.visible_bias, "snapshot_visible_bias"),
            hidden_bias: like(&b.hidden_bias, "snapshot_hidden_bias"),
            smoothed: like(&b.smoothed, "snapshot_smoothed"),
            persistent: b.persistent.as_ref().map(|p| like(p, "snapshot_persistent")),
        }
    }

    fn pairs<'a>(&'a self, b: &'a DeviceBuffers) -> Vec<(&'a wgpu::Buffer, &'a wgpu::Buffer)> {
        let mut pairs = vec![(&b.weights, &self.weights), (&b.visible_bias, &self.visible_bias), (&b.hidden_bias, &self.hidden_bias), (&b.smoothed, &self.smoothed)];
        if let (Some(live), Some(copy)) = (&b.persistent, &self.persistent) {
            pairs.push((live, copy));
        }
        pairs
    }

    /// Records copies of the live buffers (before the epoch's first batch).
    pub(super) fn save(&self, encoder: &mut wgpu::CommandEncoder, b: &DeviceBuffers) {
        for (live, copy) in self.pairs(b) {
            encoder.copy_buffer_to_buffer(live, 0, copy, 0, live.size());
        }
    }

    fn restore(&self, encoder: &mut wgpu::CommandEncoder, b: &DeviceBuffers) {
        for (live, copy) in self.pairs(b) {
            encoder.copy_buffer_to_buffer(copy, 0, live, 0, live.size());
        }
    }
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytemuck::pod_collect_to_vec(bytes)
}

impl GpuCdTrainer {
    /// After a divergent epoch: the model (and sparsity estimate, persistent chains) as at the
    /// start of the epoch, zero momentum, no previous gradient, and the rates of the epoch's
    /// start (the host never took the diverged ones) — `CdTrainer`'s rollback.
    pub(super) fn roll_back(&mut self) {
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("roll_back") });
        self.snapshot.restore(&mut encoder, &self.b);
        for velocity in [&self.b.velocity, &self.b.visible_velocity, &self.b.hidden_velocity] {
            encoder.clear_buffer(velocity, 0, None);
        }
        self.ctx.queue.submit([encoder.finish()]);
        schedule::forget_previous(&self.ctx.queue, &self.b.state);
        schedule::set_rates(&self.ctx.queue, &self.b.state, self.rates.learning_rate, self.rates.momentum);
    }

    /// Reads the weights and biases back into a host [`Rbm`] (one submission).
    pub async fn download_rbm(&self) -> Result<Rbm, GpuError> {
        let b = &self.b;
        let parts = read_ranges(&self.ctx, &[(&b.weights, 0, b.weights.size()), (&b.visible_bias, 0, b.visible_bias.size()), (&b.hidden_bias, 0, b.hidden_bias.size())]).await?;
        Ok(self.rbm_from(&parts[0], &parts[1], &parts[2]))
    }

    fn rbm_from(&self, weights: &[u8], visible_bias: &[u8], hidden_bias: &[u8]) -> Rbm {
        let (nv, nh) = (self.n_visible, self.n_hidden);
        Rbm {
            visible_units: self.visible_units,
            n_visible: nv,
            n_hidden: nh,
            weights: floats(&weights[..4 * nv * nh]),
            visible_bias: floats(&visible_bias[..4 * nv]),
            hidden_bias: floats(&hidden_bias[..4 * nh]),
        }
    }

    /// The whole training state after the last finished epoch (one submission, one map):
    /// `CdTrainer::resume` continues from it exactly as this trainer would.
    pub async fn checkpoint(&self) -> Result<CdCheckpoint, GpuError> {
        let b = &self.b;
        let (nv, nh) = (self.n_visible as u64, self.n_hidden as u64);
        // The last batch wrote its penalised gradient into the buffer of its parity.
        let last_gradient = &b.gradients[(self.step.max(1) - 1) as usize % 2];
        let mut ranges = vec![
            (&b.weights, 0, 4 * nv * nh),
            (&b.visible_bias, 0, 4 * nv),
            (&b.hidden_bias, 0, 4 * nh),
            (&b.velocity, 0, 4 * nv * nh),
            (&b.visible_velocity, 0, 4 * nv),
            (&b.hidden_velocity, 0, 4 * nh),
            (&b.smoothed, 0, 4 * nh),
            (&b.state, 0, std::mem::size_of::<TrainState>() as u64),
            (last_gradient, 0, 4 * nv * nh),
        ];
        if let Some(chains) = &b.persistent {
            ranges.push((chains, 0, chains.size()));
        }
        let parts = read_ranges(&self.ctx, &ranges).await?;
        let state: TrainState = bytemuck::pod_read_unaligned(&parts[7]);
        Ok(CdCheckpoint {
            rbm: self.rbm_from(&parts[0], &parts[1], &parts[2]),
            weight_velocity: floats(&parts[3]),
            visible_velocity: floats(&parts[4]),
            hidden_velocity: floats(&parts[5]),
            previous_gradient: (state.has_previous != 0).then(|| floats(&parts[8])),
            sparsity_smoothed: floats(&parts[6]),
            persistent_chains: b.persistent.as_ref().map(|_| floats(&parts[9])),
            rates: self.rates.clone(),
            chain_length: self.chain_length.clone(),
            convergence: self.convergence.clone(),
            order: self.order.clone(),
            shuffle_rng: self.shuffle_rng.clone(),
            epoch: self.epoch,
            step: self.step,
            stopped: self.stopped,
            init_trial_errors: self.init_trial_errors.clone(),
            init_best_trial: self.init_best_trial,
        })
    }

    /// Uploads a checkpoint of the same shape (a CPU trainer's state when the GPU takes over).
    pub(super) fn restore(&mut self, c: &CdCheckpoint) {
        let (b, queue) = (&self.b, &self.ctx.queue);
        let write = |buffer: &wgpu::Buffer, values: &[f32]| queue.write_buffer(buffer, 0, bytemuck::cast_slice(values));
        write(&b.weights, &c.rbm.weights);
        write(&b.visible_bias, &c.rbm.visible_bias);
        write(&b.hidden_bias, &c.rbm.hidden_bias);
        write(&b.velocity, &c.weight_velocity);
        write(&b.visible_velocity, &c.visible_velocity);
        write(&b.hidden_velocity, &c.hidden_velocity);
        write(&b.smoothed, &c.sparsity_smoothed);
        if let (Some(buffer), Some(chains)) = (&b.persistent, &c.persistent_chains) {
            write(buffer, chains);
        }
        // The next batch has parity `step % 2` and reads the other buffer as its previous gradient.
        match &c.previous_gradient {
            Some(gradient) => {
                write(&b.gradients[(c.step as usize + 1) % 2], gradient);
                queue.write_buffer(&b.state, 6 * 4, bytemuck::bytes_of(&1u32));
            }
            None => schedule::forget_previous(queue, &b.state),
        }
        schedule::set_rates(queue, &b.state, c.rates.learning_rate, c.rates.momentum);
        self.rates = c.rates.clone();
        self.chain_length = c.chain_length.clone();
        self.convergence = c.convergence.clone();
        self.order = c.order.clone();
        self.shuffle_rng = c.shuffle_rng.clone();
        self.epoch = c.epoch;
        self.step = c.step;
        self.stopped = c.stopped;
        self.init_trial_errors = c.init_trial_errors.clone();
        self.init_best_trial = c.init_best_trial;
        self.plans = None;
    }
}
