//! One layer of a greedy stack trained on the device, as `deepbelief train` runs it: the epochs
//! on a [`GpuCdTrainer`], a checkpoint downloaded after each, and, if the device fails
//! mid-layer, the rest of the layer on the CPU from the last checkpoint, exactly where the GPU
//! would have gone on. Every epoch carries the monitor's figures as `GreedyTrainer::step`
//! reports them: measured on the device ([`GpuCdTrainer::measure_epoch`]), or by the CPU
//! reference after a failure, on the same cases with the same seed. The trained layer goes back
//! to the [`GreedyTrainer`], whose next `step` closes it as if its epochs had run there.

use super::GpuCdTrainer;
use crate::backend::cpu::CpuBackend;
use crate::data::Dataset;
use crate::gpu::GpuContext;
use crate::train::monitor::EpochMetrics;
use crate::train::{CdTrainer, EpochReport, GreedyTrainer, TrainError};

/// What [`train_layer`] reports as the layer goes.
#[derive(Debug)]
pub enum LayerEvent {
    /// An epoch finished (on the device, or on the CPU after a failure), with the monitor's
    /// figures when the stack measures its epochs.
    Epoch { report: EpochReport, metrics: Option<EpochMetrics> },
    /// The device failed; the layer goes on on the CPU after epoch `resumed_at`, the last one
    /// whose state came back (every epoch reported so far).
    FellBack { message: String, resumed_at: usize },
}

/// Trains the greedy trainer's current layer on `gpu` (made from that layer by
/// [`GpuCdTrainer::from_cpu`]) and hands it back. Returns the device for the next layer, or
/// `None` after a failure. Errors other than the device's (settings, divergence) end the run.
pub async fn train_layer(mut gpu: GpuCdTrainer, greedy: &mut GreedyTrainer, data: &Dataset, mut on_event: impl FnMut(LayerEvent)) -> Result<Option<GpuContext>, TrainError> {
    let cpu = greedy.current_trainer().ok_or_else(|| TrainError::Data("no layer is in training".into()))?;
    let mut checkpoint = cpu.checkpoint();
    let mut failure = gpu.set_monitor(greedy.held_out(), greedy.config.monitor_cases).err().map(|e| e.to_string());
    while failure.is_none() && !gpu.finished() {
        match device_epoch(&mut gpu).await {
            Ok((report, metrics, state)) => {
                checkpoint = state;
                on_event(LayerEvent::Epoch { report, metrics });
            }
            Err(TrainError::Device(message)) => failure = Some(message),
            Err(e) => return Err(e),
        }
    }
    if let Some(message) = failure {
        on_event(LayerEvent::FellBack { message, resumed_at: checkpoint.epoch });
        let mut fallback = CdTrainer::resume(gpu.config.clone(), checkpoint)?;
        while !fallback.finished() {
            let report = fallback.train_epoch(&CpuBackend, greedy.layer_data(data))?;
            let metrics = greedy.measure_layer(&CpuBackend, &fallback.rbm, data, report.epoch);
            on_event(LayerEvent::Epoch { report, metrics });
        }
        let stop = fallback.stopped.expect("a finished trainer has a stop reason");
        greedy.adopt_trained_layer(fallback.rbm, fallback.epoch, stop)?;
        return Ok(None);
    }
    let stop = gpu.stopped.expect("a finished trainer has a stop reason");
    greedy.adopt_trained_layer(checkpoint.rbm, gpu.epoch, stop)?;
    Ok(Some(gpu.into_context()))
}

/// One epoch on the device, the monitor's figures for it (measured there) and the state it
/// ends in; any failure of the device on the way is a [`TrainError::Device`], so the epoch is
/// redone on the CPU.
async fn device_epoch(gpu: &mut GpuCdTrainer) -> Result<(EpochReport, Option<EpochMetrics>, crate::train::CdCheckpoint), TrainError> {
    let device = |e: crate::gpu::GpuError| TrainError::Device(e.to_string());
    let report = gpu.train_epoch().await?;
    let metrics = gpu.measure_epoch().await.map_err(device)?;
    let state = gpu.checkpoint().await.map_err(device)?;
    Ok((report, metrics, state))
}
