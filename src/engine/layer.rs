//! One layer of a greedy stack trained on the device, written once for the CLI and the page:
//! the epochs run on a `GpuCdTrainer`, a [`CdCheckpoint`] comes back after each, and if the
//! device fails mid-layer the rest of the layer runs on the CPU from the last checkpoint,
//! exactly where the GPU would have gone on (same momentum, shuffle and random streams). Every
//! epoch carries the monitor's figures as `GreedyTrainer::step` reports them: measured on the
//! device, or by the CPU reference after a failure, on the same cases with the same seed. The
//! trained layer goes back to the [`GreedyTrainer`] ([`LayerTrainer::finish`]), whose next
//! `step` closes it as if its epochs had run there.
//!
//! Device epochs are `async` (the browser's read-back resolves on its event loop); natively
//! [`train_layer`] is blocked on. The page owns a [`LayerTrainer`] between calls and takes it
//! out for the await of [`LayerTrainer::device_epoch`], so the future is `'static`.

use super::Engine;
use crate::backend::cpu::CpuBackend;
use crate::data::Dataset;
use crate::gpu::trainer::GpuCdTrainer;
use crate::model::Rbm;
use crate::train::monitor::EpochMetrics;
use crate::train::{BatchEvent, BatchStep, CdCheckpoint, CdTrainer, EpochReport, GreedyEvent, GreedyTrainer, LayerBatch, StopReason, TrainError};

/// What a layer reports as it goes.
#[derive(Debug)]
pub enum LayerEvent {
    /// An epoch finished (on the device, or on the CPU after a failure), with the monitor's
    /// figures when the stack measures its epochs.
    Epoch { report: EpochReport, metrics: Option<EpochMetrics> },
    /// The device failed; the layer goes on on the CPU after epoch `resumed_at`, the last one
    /// whose state came back (every epoch reported so far).
    FellBack { message: String, resumed_at: usize },
}

impl LayerEvent {
    /// The greedy trainer's event for an epoch of `layer` (`None` for a fall-back).
    pub fn into_greedy(self, layer: usize) -> Option<GreedyEvent> {
        match self {
            LayerEvent::Epoch { report, metrics } => Some(GreedyEvent::Epoch { layer, report, metrics }),
            LayerEvent::FellBack { .. } => None,
        }
    }
}

enum Place {
    /// On the device, with the state of its last epoch that came back.
    Device { trainer: Box<GpuCdTrainer>, synced: CdCheckpoint },
    /// On the CPU: after a device failure, or moved there to step batch by batch.
    Cpu(CdTrainer),
}

/// The greedy trainer's current layer, training outside it.
pub struct LayerTrainer {
    layer: usize,
    place: Place,
}

impl LayerTrainer {
    /// Moves the layer `greedy` has just started onto `engine`'s device, with the per-epoch
    /// monitor. Fails with the reason it stays in the greedy trainer (on the CPU): no device,
    /// a device that already failed, a layer part-way through an epoch, or one the adapter's
    /// limits cannot hold.
    pub fn on_device(engine: &Engine, greedy: &GreedyTrainer, data: &Dataset) -> Result<LayerTrainer, String> {
        let Engine::Gpu(ctx) = engine else { return Err("no GPU device".into()) };
        if let Some(failure) = ctx.failure() {
            return Err(format!("the GPU failed earlier ({failure})"));
        }
        let cpu = greedy.current_trainer().ok_or("no layer has been started")?;
        if cpu.mid_epoch() {
            return Err("the layer is part-way through its training on the CPU".into());
        }
        let mut trainer = GpuCdTrainer::from_cpu(ctx.clone(), cpu, greedy.layer_data(data)).map_err(|e| e.to_string())?;
        trainer.set_monitor(greedy.held_out(), greedy.config.monitor_cases).map_err(|e| e.to_string())?;
        Ok(LayerTrainer { layer: greedy.current_layer(), place: Place::Device { trainer: Box::new(trainer), synced: cpu.checkpoint() } })
    }

    pub fn layer(&self) -> usize {
        self.layer
    }

    pub fn on_gpu(&self) -> bool {
        matches!(self.place, Place::Device { .. })
    }

    pub fn stopped(&self) -> Option<StopReason> {
        match &self.place {
            Place::Device { trainer, .. } => trainer.stopped,
            Place::Cpu(trainer) => trainer.stopped,
        }
    }

    pub fn finished(&self) -> bool {
        self.stopped().is_some()
    }

    /// The layer's weights as last known here: after the last epoch that came back from the
    /// device, or the CPU trainer's.
    pub fn rbm(&self) -> &Rbm {
        match &self.place {
            Place::Device { synced, .. } => &synced.rbm,
            Place::Cpu(trainer) => &trainer.rbm,
        }
    }

    /// Ends the layer after its current epoch.
    pub fn cancel(&mut self) {
        match &mut self.place {
            Place::Device { trainer, .. } => trainer.cancel(),
            Place::Cpu(trainer) => trainer.cancel(),
        }
    }

    /// One epoch on the device, its monitor and the state it ends in. A failure of the device
    /// on the way moves the layer to the CPU from the last state that came back and is reported
    /// as [`LayerEvent::FellBack`]; other errors (settings, divergence) end the run. On the CPU
    /// this is an error: call [`Self::cpu_epoch`].
    pub async fn device_epoch(&mut self) -> Result<LayerEvent, TrainError> {
        let Place::Device { trainer, synced } = &mut self.place else { return Err(TrainError::Data("the layer is not on the GPU".into())) };
        let device = |e: crate::gpu::GpuError| TrainError::Device(e.to_string());
        let outcome = async {
            let report = trainer.train_epoch().await?;
            let metrics = trainer.measure_epoch().await.map_err(device)?;
            let state = trainer.checkpoint().await.map_err(device)?;
            Ok::<_, TrainError>((report, metrics, state))
        }
        .await;
        match outcome {
            Ok((report, metrics, state)) => {
                *synced = state;
                Ok(LayerEvent::Epoch { report, metrics })
            }
            Err(TrainError::Device(message)) => {
                let resumed_at = synced.epoch;
                self.move_to_cpu()?;
                Ok(LayerEvent::FellBack { message, resumed_at })
            }
            Err(e) => Err(e),
        }
    }

    /// One epoch on the CPU (after a fall-back), measured as the greedy trainer measures.
    pub fn cpu_epoch(&mut self, greedy: &GreedyTrainer, data: &Dataset) -> Result<LayerEvent, TrainError> {
        let Place::Cpu(trainer) = &mut self.place else { return Err(TrainError::Data("the layer is on the GPU".into())) };
        let report = trainer.train_epoch(&CpuBackend, greedy.layer_data(data))?;
        let metrics = greedy.measure_layer(&CpuBackend, &trainer.rbm, data, report.epoch);
        Ok(LayerEvent::Epoch { report, metrics })
    }

    /// One batch on the CPU (the layer moves there first, exactly: its last checkpoint); an
    /// epoch's last batch reports the epoch.
    pub fn cpu_batch(&mut self, greedy: &GreedyTrainer, data: &Dataset) -> Result<BatchEvent, TrainError> {
        self.move_to_cpu()?;
        let Place::Cpu(trainer) = &mut self.place else { unreachable!("moved to the CPU above") };
        let layer = self.layer;
        Ok(match trainer.train_next_batch(&CpuBackend, greedy.layer_data(data))? {
            BatchStep::Batch(report) => BatchEvent::Batch(LayerBatch { layer, report }),
            BatchStep::EpochEnded(report) => {
                let metrics = greedy.measure_layer(&CpuBackend, &trainer.rbm, data, report.epoch);
                BatchEvent::Greedy(GreedyEvent::Epoch { layer, report, metrics })
            }
        })
    }

    /// The layer continues on the CPU from the device's last state that came back; the device
    /// itself stays with the engine for the next layer.
    pub fn move_to_cpu(&mut self) -> Result<(), TrainError> {
        if let Place::Device { trainer, synced } = &self.place {
            self.place = Place::Cpu(CdTrainer::resume(trainer.config.clone(), synced.clone())?);
        }
        Ok(())
    }

    /// One epoch wherever the layer is.
    pub async fn epoch(&mut self, greedy: &GreedyTrainer, data: &Dataset) -> Result<LayerEvent, TrainError> {
        if self.on_gpu() {
            self.device_epoch().await
        } else {
            self.cpu_epoch(greedy, data)
        }
    }

    /// Hands the finished (or stopped) layer back to `greedy`, whose next `step` closes it.
    pub fn finish(self, greedy: &mut GreedyTrainer) -> Result<(), TrainError> {
        let stop = self.stopped().unwrap_or(StopReason::Cancelled);
        match self.place {
            Place::Device { synced, .. } => greedy.adopt_trained_layer(synced.rbm, synced.epoch, stop),
            Place::Cpu(trainer) => greedy.adopt_trained_layer(trainer.rbm, trainer.epoch, stop),
        }
    }
}

/// Trains the layer to its end wherever it is (falling back as [`LayerTrainer::device_epoch`]
/// says) and hands it back to `greedy`.
pub async fn train_layer(mut layer: LayerTrainer, greedy: &mut GreedyTrainer, data: &Dataset, mut on_event: impl FnMut(LayerEvent)) -> Result<(), TrainError> {
    while !layer.finished() {
        let event = layer.epoch(greedy, data).await?;
        on_event(event);
    }
    layer.finish(greedy)
}
