//! One local-patch RBM layer trained an epoch at a time (the page's Local RBM mode): the CPU
//! reference or the device-resident trainer, as `local_stack` trains a layer, but stepped by
//! the caller so a page can draw between epochs. A device failure costs the epoch in flight:
//! the session goes on on the CPU from the state downloaded after the last good epoch (model,
//! velocities, step), with the reason in `backend_reason`.

use super::Engine;
use crate::gpu::local_rbm_trainer::GpuLocalTrainer;
use crate::gpu::GpuContext;
use crate::local_rbm::{Geometry, LocalCdSettings, LocalCdTrainer, LocalEpochReport, LocalRbm, LocalVelocities};

/// Cases each device epoch is scored on (the mean-field reconstruction error, on the CPU).
const SCORE_CASES: usize = 256;

struct DeviceSide {
    ctx: GpuContext,
    trainer: GpuLocalTrainer,
    batches: Vec<wgpu::Buffer>,
    /// The state downloaded after the last good epoch.
    velocity: LocalVelocities,
}

pub struct LocalLayerSession {
    settings: LocalCdSettings,
    /// The cases trained on (whole batches only when on the device).
    cases: Vec<f32>,
    model: LocalRbm,
    cpu: Option<LocalCdTrainer>,
    device: Option<DeviceSide>,
    epochs: Vec<LocalEpochReport>,
    backend_reason: Option<String>,
}

impl LocalLayerSession {
    /// A fresh layer of `geometry` on `cases` (`n × n_visible`), on `engine`'s device where it
    /// has one and the layer fits (else the CPU, saying why).
    pub async fn start(engine: &Engine, geometry: Geometry, settings: LocalCdSettings, cases: Vec<f32>) -> Result<LocalLayerSession, String> {
        let cpu = LocalCdTrainer::new(settings.clone(), geometry, &cases)?;
        let model = cpu.model.clone();
        let mut session = LocalLayerSession { settings, cases, model, cpu: Some(cpu), device: None, epochs: Vec::new(), backend_reason: None };
        if let Engine::Gpu(ctx) = engine {
            let (nv, batch) = (geometry.n_visible(), session.settings.batch_size);
            let n = session.cases.len() / nv;
            let fits = crate::gpu::local_rbm_trainer::check_fit(ctx, &geometry, batch);
            if n < batch {
                session.backend_reason = Some(format!("batch_size: {batch} cases per batch but {n} cases; the device trains whole batches, so the CPU trains"));
            } else if let Err(why) = fits {
                session.backend_reason = Some(format!("{why}; the CPU trains"));
            } else {
                session.cases.truncate(n / batch * batch * nv);
                let batches = session.cases.chunks_exact(batch * nv).map(|b| crate::gpu::buffers::upload(ctx, "local_batch", b)).collect();
                let trainer = GpuLocalTrainer::new(ctx, &session.model, session.settings.clone(), batch);
                session.device = Some(DeviceSide { ctx: ctx.clone(), trainer, batches, velocity: LocalVelocities::zeros(&geometry) });
                session.cpu = None;
            }
        }
        Ok(session)
    }

    /// Trains one epoch; its report. After the last epoch, an error.
    pub async fn epoch(&mut self) -> Result<LocalEpochReport, String> {
        if self.done() {
            return Err(format!("epochs: all {} epochs are trained", self.settings.epochs));
        }
        if let Some(device) = &mut self.device {
            let epoch = self.epochs.len();
            device.trainer.epoch = epoch;
            let started = crate::clock::now_seconds();
            let outcome = match device.ctx.failure() {
                Some(why) => Err(why),
                None => {
                    for batch in &device.batches {
                        device.trainer.train_batch(&device.ctx, batch);
                    }
                    match crate::gpu::buffers::wait_idle(&device.ctx).await {
                        Ok(()) => device.trainer.state(&device.ctx).await.map_err(|e| e.to_string()),
                        Err(e) => Err(e.to_string()),
                    }
                }
            };
            match outcome {
                Ok((model, velocity)) => {
                    if !model.is_finite() {
                        return Err(format!("learning_rate: training diverged in epoch {} on the device (NaN or infinite weights); lower the learning rate", epoch + 1));
                    }
                    let seconds = crate::clock::now_seconds() - started;
                    let nv = model.geometry.n_visible();
                    let scored = &self.cases[..(self.cases.len() / nv).min(SCORE_CASES) * nv];
                    let momentum = if epoch < self.settings.momentum_switch_epoch { self.settings.initial_momentum } else { self.settings.final_momentum };
                    let report = LocalEpochReport { epoch: epoch + 1, reconstruction_error: model.reconstruction_error(scored), momentum, seconds };
                    device.velocity = velocity;
                    self.model = model;
                    device.trainer.epoch = epoch + 1;
                    self.epochs.push(report.clone());
                    return Ok(report);
                }
                Err(why) => {
                    // Resume on the CPU from the last good download; the failed epoch is retaken.
                    let device = self.device.take().expect("on the device");
                    let step = (self.epochs.len() * device.batches.len()) as u64;
                    self.backend_reason = Some(format!("the device failed in epoch {} ({why}); the CPU goes on from the state after epoch {}", epoch + 1, epoch));
                    self.cpu = Some(LocalCdTrainer::resume_at(self.settings.clone(), self.model.clone(), device.velocity, step, epoch));
                }
            }
        }
        let cpu = self.cpu.as_mut().expect("a CPU trainer when not on the device");
        let report = cpu.train_epoch(&self.cases)?;
        self.model = cpu.model.clone();
        self.epochs.push(report.clone());
        Ok(report)
    }

    pub fn model(&self) -> &LocalRbm {
        &self.model
    }

    pub fn epochs(&self) -> &[LocalEpochReport] {
        &self.epochs
    }

    pub fn done(&self) -> bool {
        self.epochs.len() >= self.settings.epochs
    }

    pub fn on_device(&self) -> bool {
        self.device.is_some()
    }

    /// Why the session runs on the CPU where a device was offered (or was lost).
    pub fn backend_reason(&self) -> Option<&str> {
        self.backend_reason.as_deref()
    }

    /// Cases trained on per epoch.
    pub fn cases(&self) -> usize {
        self.cases.len() / self.model.geometry.n_visible()
    }

    /// Testing hook: destroys the device, as a driver reset or a lost adapter would.
    pub fn simulate_device_loss(&self) {
        if let Some(device) = &self.device {
            device.ctx.device.destroy();
        }
    }
}
