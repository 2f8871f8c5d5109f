//! The engine's entry for local-patch RBMs (issue 19): a layer trained epoch by epoch on the
//! CPU reference or the device-resident trainer (`gpu::local_rbm_trainer`), and the Table 3
//! benchmark on either. No checkpoint/fall-back to the CPU on a lost device yet.

use super::Engine;
use crate::local_rbm::bench::{bench_cpu, bench_gpu, LocalBenchRow};

impl Engine {
    /// Seconds per million examples of CD-1 (batches of 192, 24×24 patches 8 apart, 192 hidden
    /// each) for each image side in `sizes`; `on_row` sees each row as it is measured.
    pub async fn bench_local_rbm(&self, sizes: &[usize], warmups: usize, batches: usize, mut on_row: impl FnMut(&LocalBenchRow)) -> Result<Vec<LocalBenchRow>, String> {
        let mut rows = Vec::with_capacity(sizes.len());
        for &size in sizes {
            let row = match self {
                Engine::Cpu => bench_cpu(size, warmups, batches, 1)?,
                Engine::Gpu(ctx) => bench_gpu(ctx, size, warmups, batches, 1).await?,
            };
            on_row(&row);
            rows.push(row);
        }
        Ok(rows)
    }
}

/// One trained local-patch layer and its epochs.
pub struct LocalLayerRun {
    pub model: crate::local_rbm::LocalRbm,
    pub epochs: Vec<crate::local_rbm::LocalEpochReport>,
    /// Where it trained: "cpu" or "gpu".
    pub backend: &'static str,
}

/// Cases the device run scores its epochs on (mean-field reconstruction on the CPU).
const DEVICE_SCORE_CASES: usize = 384;

impl Engine {
    /// Trains one layer for `settings.epochs` epochs on `cases` (in order, whole batches):
    /// `LocalCdTrainer` on the CPU; on a GPU engine the device-resident trainer, every batch
    /// uploaded once, the model downloaded after each epoch (its report's error is then the
    /// mean-field reconstruction error of the first 384 cases, computed on the CPU, where the
    /// CPU trainer reports the epoch's `(v0 − v1)²`). Cases past the last whole batch are left
    /// out on the device. No fall-back to the CPU on a lost device yet.
    pub async fn train_local_layer(&self, settings: crate::local_rbm::LocalCdSettings, geometry: crate::local_rbm::Geometry, cases: &[f32], mut on_epoch: impl FnMut(&crate::local_rbm::LocalEpochReport)) -> Result<LocalLayerRun, String> {
        use crate::local_rbm::{LocalCdTrainer, LocalEpochReport};
        let mut cpu = LocalCdTrainer::new(settings.clone(), geometry, cases)?;
        let mut epochs = Vec::with_capacity(settings.epochs);
        let ctx = match self {
            Engine::Cpu => {
                for _ in 0..settings.epochs {
                    let report = cpu.train_epoch(cases)?;
                    on_epoch(&report);
                    epochs.push(report);
                }
                return Ok(LocalLayerRun { model: cpu.model, epochs, backend: "cpu" });
            }
            Engine::Gpu(ctx) => ctx,
        };
        use crate::gpu::buffers::{upload, wait_idle};
        use crate::gpu::local_rbm_trainer::GpuLocalTrainer;
        let (nv, batch) = (geometry.n_visible(), settings.batch_size);
        let n = cases.len() / nv;
        if n < batch {
            return Err(format!("--batch: {batch} cases per batch, but only {n} cases; the device trains whole batches"));
        }
        crate::gpu::local_rbm_trainer::check_fit(ctx, &geometry, batch)?;
        let batches: Vec<wgpu::Buffer> = (0..n / batch).map(|b| upload(ctx, "local_batch", &cases[b * batch * nv..(b + 1) * batch * nv])).collect();
        let mut device = GpuLocalTrainer::new(ctx, &cpu.model, settings.clone(), batch);
        let scored = &cases[..n.min(DEVICE_SCORE_CASES) * nv];
        let mut model = cpu.model;
        for epoch in 0..settings.epochs {
            device.epoch = epoch;
            let momentum = if epoch < settings.momentum_switch_epoch { settings.initial_momentum } else { settings.final_momentum };
            let started = crate::clock::now_seconds();
            for b in &batches {
                device.train_batch(ctx, b);
            }
            wait_idle(ctx).await.map_err(|e| e.to_string())?;
            let seconds = crate::clock::now_seconds() - started;
            model = device.model(ctx).await.map_err(|e| e.to_string())?;
            if !model.is_finite() {
                return Err(format!("training diverged in epoch {} on the device (NaN or infinite weights); lower --learning-rate", epoch + 1));
            }
            let report = LocalEpochReport { epoch: epoch + 1, reconstruction_error: model.reconstruction_error(scored), momentum, seconds };
            on_epoch(&report);
            epochs.push(report);
        }
        Ok(LocalLayerRun { model, epochs, backend: "gpu" })
    }
}
