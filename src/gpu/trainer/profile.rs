//! Where a batch's time goes on the device: GPU timestamps around every dispatch of a batch
//! (each in its own compute pass), and around one pass holding many batches as training records
//! them. The difference between the sum of the dispatches and the one-pass time per batch is
//! what barriers and dispatch overhead cost. For `deepbelief bench --backend gpu --profile`;
//! needs the adapter's `TIMESTAMP_QUERY` feature, and runs real batches (use a spare trainer).

use super::GpuCdTrainer;
use crate::gpu::{read_ranges, GpuError};
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct DispatchTime {
    pub label: String,
    /// Mean over the profiled batches.
    pub microseconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BatchProfile {
    pub batches: usize,
    pub dispatches: Vec<DispatchTime>,
    /// Σ of the dispatches' own times per batch.
    pub dispatch_sum_us: f64,
    /// Per batch, with all batches in one compute pass (as training records them).
    pub one_pass_us: f64,
}

/// wgpu's cap on queries in one set.
const MAX_QUERIES: usize = 4096;

impl GpuCdTrainer {
    pub async fn profile_batches(&mut self, batches: usize) -> Result<BatchProfile, GpuError> {
        if !self.ctx.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Err(GpuError(format!("{} offers no timestamp queries, so it cannot be profiled", self.ctx.adapter_info.name)));
        }
        self.prepare_epoch()?;
        let device = &self.ctx.device;
        let plan = &self.plans.as_ref().expect("prepare_epoch builds the plans").1;
        let calls = plan.calls(0, false).len();
        let batches = batches.min(self.batches.saturating_sub(1)).min((MAX_QUERIES - 2) / (2 * calls)).max(1);
        let count = (2 * calls * batches + 2) as u32;
        let queries = device.create_query_set(&wgpu::QuerySetDescriptor { label: Some("profile"), ty: wgpu::QueryType::Timestamp, count });
        let resolved = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("profile_ticks"),
            size: 8 * count as u64,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("profile") });
        // Each batch gathers the next; the first gathers its own, untimed.
        let gather_first = |encoder: &mut wgpu::CommandEncoder| {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("first gather"), timestamp_writes: None });
            plan.gather().dispatch(&mut pass, 0);
        };
        gather_first(&mut encoder);
        for batch in 0..batches {
            for (i, (label, call)) in plan.calls(batch % 2, false).into_iter().enumerate() {
                let q = (2 * (batch * calls + i)) as u32;
                let writes = wgpu::ComputePassTimestampWrites { query_set: &queries, beginning_of_pass_write_index: Some(q), end_of_pass_write_index: Some(q + 1) };
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: Some(writes) });
                call.dispatch(&mut pass, batch as u32);
            }
        }
        gather_first(&mut encoder);
        {
            let last = count - 2;
            let writes = wgpu::ComputePassTimestampWrites { query_set: &queries, beginning_of_pass_write_index: Some(last), end_of_pass_write_index: Some(last + 1) };
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("batches in one pass"), timestamp_writes: Some(writes) });
            for batch in 0..batches {
                plan.record_batch(&mut pass, batch as u32, batch % 2, false);
            }
        }
        encoder.resolve_query_set(&queries, 0..count, &resolved, 0);
        self.ctx.queue.submit([encoder.finish()]);
        let bytes = read_ranges(&self.ctx, &[(&resolved, 0, 8 * count as u64)]).await?;
        let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&bytes[0]);
        let us_per_tick = self.ctx.queue.get_timestamp_period() as f64 / 1000.0;
        let span = |q: usize| ticks[q + 1].saturating_sub(ticks[q]) as f64 * us_per_tick;
        let dispatches: Vec<DispatchTime> = plan
            .calls(0, false)
            .iter()
            .enumerate()
            .map(|(i, (label, _))| DispatchTime { label: label.to_string(), microseconds: (0..batches).map(|b| span(2 * (b * calls + i))).sum::<f64>() / batches as f64 })
            .collect();
        Ok(BatchProfile {
            batches,
            dispatch_sum_us: dispatches.iter().map(|d| d.microseconds).sum(),
            dispatches,
            one_pass_us: span(count as usize - 2) / batches as f64,
        })
    }
}
