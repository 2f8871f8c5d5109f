//! Local-patch RBMs trained an epoch at a time (the page's Local RBM mode): the CPU reference
//! or the device-resident trainer, as `local_stack` trains a layer, but stepped by the caller
//! so a page can draw between epochs. A device failure costs the epoch in flight: the session
//! goes on on the CPU from the state downloaded after the last good epoch (model, velocities,
//! step), with the reason in `backend_reason`.
//!
//! `LocalStackSession` trains a stack greedily (a plan of `local_rbm::stack::plan_stack`), one
//! `LocalLayerSession` per layer: when a layer's last epoch is done, the next `epoch()` call
//! propagates the cases through it (`local_rbm::stack::propagate`, on the CPU: the page's
//! layers are small) and starts the layer above on them, its initial visible biases from their
//! means, as `Engine::train_local_stack` does on the CPU, so on the CPU the two agree bit for
//! bit. After a lost device the layers above train on the CPU.

use super::Engine;
use crate::gpu::local_rbm_trainer::GpuLocalTrainer;
use crate::gpu::GpuContext;
use crate::local_rbm::stack::propagate;
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

    /// The cases trained on (`cases() × n_visible`).
    pub fn training_cases(&self) -> &[f32] {
        &self.cases
    }

    /// Testing hook: destroys the device, as a driver reset or a lost adapter would.
    pub fn simulate_device_loss(&self) {
        if let Some(device) = &self.device {
            device.ctx.device.destroy();
        }
    }
}

/// What one epoch of a stack did.
pub struct LocalStackEpoch {
    /// 0-based layer of the stack the epoch trained.
    pub layer: usize,
    pub report: LocalEpochReport,
    /// Whether this epoch began its layer (the one below was propagated first).
    pub started_layer: bool,
}

/// A stack of local-patch layers trained greedily, an epoch per `epoch()`.
pub struct LocalStackSession {
    engine: Engine,
    plan: Vec<Geometry>,
    settings: Vec<LocalCdSettings>,
    /// The layers trained to their last epoch, bottom first, with their epochs.
    finished: Vec<(LocalRbm, Vec<LocalEpochReport>)>,
    current: LocalLayerSession,
    /// Set when the device was lost: the layers above train on the CPU, and why.
    device_lost: Option<String>,
}

impl LocalStackSession {
    /// The stack of `plan` (layer `k` trained with `settings[k]`) on `cases` (`n ×
    /// plan[0].n_visible()`); the first layer is drawn and placed now, the others when reached.
    pub async fn start(engine: &Engine, plan: Vec<Geometry>, settings: Vec<LocalCdSettings>, cases: Vec<f32>) -> Result<LocalStackSession, String> {
        assert!(!plan.is_empty() && plan.len() == settings.len(), "one setting per layer");
        for (below, above) in plan.iter().zip(&plan[1..]) {
            if below.feature_map() != (above.rows, above.cols, above.channels) {
                return Err(format!("layers: a layer over a {} × {} × {} input stands on a {:?} feature map", above.rows, above.cols, above.channels, below.feature_map()));
            }
        }
        let current = LocalLayerSession::start(engine, plan[0], settings[0].clone(), cases).await?;
        Ok(LocalStackSession { engine: engine.clone(), plan, settings, finished: Vec::new(), current, device_lost: None })
    }

    /// Trains one epoch of the layer in training, first starting the next layer when the one
    /// in training is done. After the top layer's last epoch, an error.
    pub async fn epoch(&mut self) -> Result<LocalStackEpoch, String> {
        if self.done() && self.plan.len() > 1 {
            return Err(format!("epochs: all {} layers have trained their {} epochs", self.plan.len(), self.settings.iter().map(|s| s.epochs.to_string()).collect::<Vec<_>>().join(" + ")));
        }
        let mut started_layer = false;
        // (A stack of one that is done falls through: its session says so.)
        if self.current.done() && !self.done() {
            let k = self.finished.len() + 1;
            let below = self.current.model().clone();
            let input = propagate(std::slice::from_ref(&below), self.current.training_cases());
            let engine = if self.device_lost.is_some() { Engine::Cpu } else { self.engine.clone() };
            let next = LocalLayerSession::start(&engine, self.plan[k], self.settings[k].clone(), input).await.map_err(|e| format!("layer {}: {e}", k + 1))?;
            let done = std::mem::replace(&mut self.current, next);
            self.finished.push((below, done.epochs().to_vec()));
            started_layer = true;
        }
        let was_on_device = self.current.on_device();
        let layer = self.finished.len();
        let report = self.current.epoch().await.map_err(|e| if self.plan.len() > 1 { format!("{e} (layer {})", layer + 1) } else { e })?;
        if was_on_device && !self.current.on_device() {
            self.device_lost = Some(format!("the device was lost in layer {}; the layers above train on the CPU", layer + 1));
        }
        Ok(LocalStackEpoch { layer, report, started_layer })
    }

    /// 0-based layer in training (or last trained).
    pub fn layer(&self) -> usize {
        self.finished.len()
    }

    pub fn plan(&self) -> &[Geometry] {
        &self.plan
    }

    pub fn settings(&self) -> &[LocalCdSettings] {
        &self.settings
    }

    /// The layers so far, bottom first: the finished ones and the one in training as it stands.
    pub fn layers(&self) -> Vec<&LocalRbm> {
        self.finished.iter().map(|(model, _)| model).chain(std::iter::once(self.current.model())).collect()
    }

    /// The layer in training as it stands.
    pub fn current_model(&self) -> &LocalRbm {
        self.current.model()
    }

    /// Each layer's epochs so far, bottom first (the one in training last).
    pub fn epochs(&self) -> Vec<&[LocalEpochReport]> {
        self.finished.iter().map(|(_, e)| &e[..]).chain(std::iter::once(self.current.epochs())).collect()
    }

    pub fn done(&self) -> bool {
        self.finished.len() + 1 == self.plan.len() && self.current.done()
    }

    /// Whether the layer in training has trained its last epoch.
    pub fn layer_done(&self) -> bool {
        self.current.done()
    }

    pub fn on_device(&self) -> bool {
        self.current.on_device()
    }

    /// Why the layer in training runs on the CPU where a device was offered (or was lost).
    pub fn backend_reason(&self) -> Option<&str> {
        self.current.backend_reason().or(self.device_lost.as_deref())
    }

    /// Cases the first layer trains on per epoch (the layers above train on as many).
    pub fn cases(&self) -> usize {
        self.current.cases()
    }

    /// Testing hook: destroys the device under the layer in training.
    pub fn simulate_device_loss(&self) {
        self.current.simulate_device_loss();
    }
}
