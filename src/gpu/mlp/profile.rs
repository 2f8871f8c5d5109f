//! Where an epoch's time goes on the device: GPU timestamps around every step of an epoch
//! (each in its own compute pass; a split-k product and its summing pass count as one step),
//! then around one pass holding as many epochs as training records them. The difference
//! between the steps' sum and the one-pass time per epoch is what barriers and dispatch
//! overhead cost. For `deepbelief mlp --backend gpu --profile`; needs the adapter's
//! `TIMESTAMP_QUERY` feature, and runs real epochs (the rule moves on: use a spare net).

use super::{DeviceMlp, MAX_EPOCHS_PER_SUBMISSION};
use crate::gpu::{read_ranges, GpuError};
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct MlpDispatchTime {
    pub label: String,
    /// Dispatches the step records (2 for a split-k product).
    pub dispatches: usize,
    /// Mean over the profiled epochs.
    pub microseconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct MlpProfile {
    /// Epochs timed step by step, and as many again in one pass.
    pub epochs: usize,
    pub dispatches_per_epoch: usize,
    pub steps: Vec<MlpDispatchTime>,
    /// Σ of the steps' own times per epoch.
    pub step_sum_us: f64,
    /// Per epoch, with the epochs in one compute pass (as training records them).
    pub one_pass_us: f64,
}

impl DeviceMlp {
    /// Profiles `epochs` epochs step by step, then `epochs` more in one pass (each at most
    /// half of [`MAX_EPOCHS_PER_SUBMISSION`]: the history holds one submission's epochs).
    pub async fn profile(&mut self, epochs: usize) -> Result<MlpProfile, GpuError> {
        if !self.ctx.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Err(GpuError(format!("{} offers no timestamp queries, so it cannot be profiled", self.ctx.adapter_info.name)));
        }
        if let Some(failure) = self.ctx.failure() {
            return Err(GpuError(failure));
        }
        let device = &self.ctx.device;
        let epochs = epochs.clamp(1, MAX_EPOCHS_PER_SUBMISSION / 2);
        let steps = self.epoch.len();
        let count = (2 * steps * epochs + 2) as u32;
        let queries = device.create_query_set(&wgpu::QuerySetDescriptor { label: Some("mlp_profile"), ty: wgpu::QueryType::Timestamp, count });
        let resolved = device.create_buffer(&wgpu::BufferDescriptor { label: Some("mlp_profile_ticks"), size: 8 * count as u64, usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
        self.restart_history();
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("mlp_profile") });
        for epoch in 0..epochs {
            for (i, step) in self.epoch.iter().enumerate() {
                let q = (2 * (epoch * steps + i)) as u32;
                let writes = wgpu::ComputePassTimestampWrites { query_set: &queries, beginning_of_pass_write_index: Some(q), end_of_pass_write_index: Some(q + 1) };
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(&step.label), timestamp_writes: Some(writes) });
                Self::record_one(&mut pass, &step.dispatch);
            }
        }
        {
            let last = count - 2;
            let writes = wgpu::ComputePassTimestampWrites { query_set: &queries, beginning_of_pass_write_index: Some(last), end_of_pass_write_index: Some(last + 1) };
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("epochs in one pass"), timestamp_writes: Some(writes) });
            for _ in 0..epochs {
                Self::record(&mut pass, &self.epoch);
            }
        }
        encoder.resolve_query_set(&queries, 0..count, &resolved, 0);
        self.ctx.queue.submit([encoder.finish()]);
        let bytes = read_ranges(&self.ctx, &[(&resolved, 0, 8 * count as u64)]).await?;
        let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&bytes[0]);
        let us_per_tick = self.ctx.queue.get_timestamp_period() as f64 / 1000.0;
        let span = |q: usize| ticks[q + 1].saturating_sub(ticks[q]) as f64 * us_per_tick;
        let times: Vec<MlpDispatchTime> = self
            .epoch
            .iter()
            .enumerate()
            .map(|(i, step)| MlpDispatchTime { label: step.label.clone(), dispatches: step.dispatch.count(), microseconds: (0..epochs).map(|e| span(2 * (e * steps + i))).sum::<f64>() / epochs as f64 })
            .collect();
        Ok(MlpProfile {
            epochs,
            dispatches_per_epoch: self.dispatches_per_epoch(),
            step_sum_us: times.iter().map(|t| t.microseconds).sum(),
            steps: times,
            one_pass_us: span(count as usize - 2) / epochs as f64,
        })
    }
}
