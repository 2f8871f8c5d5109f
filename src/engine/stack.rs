//! A greedy stack run, written once for the CLI and the page: the [`GreedyTrainer`], the layer
//! in training when it trains outside it ([`LayerTrainer`]: on the device, or on the CPU after a
//! fall-back or a step by batches), the [`TrainingRun`] record its events fold into, and
//! optionally a fixed set of measured cases that follow the data up the stack (the CLI's
//! initial and final errors and unit activity).
//!
//! The run advances one unit at a time: a layer's initialisation, one epoch, or closing a
//! layer ([`StackRun::unit`], whose device epochs are `async`), or one batch
//! ([`StackRun::step_batch`]). The caller decides after each `layer_started` whether the new
//! layer goes onto the device ([`StackRun::place_on_device`]); a device that refused a layer or
//! was lost is not asked again in this run. The page, whose device epoch must be a `'static`
//! future, takes the layer out for it ([`StackRun::begin_device_epoch`]) and hands the outcome
//! back ([`StackRun::end_device_epoch`]).

use super::layer::{LayerEvent, LayerTrainer};
use super::run::TrainingRun;
use super::Engine;
use crate::backend::Backend;
use crate::data::Dataset;
use crate::model::{Dbn, Rbm};
use crate::train::greedy::propagate_dataset;
use crate::train::{BatchEvent, GreedyEvent, GreedyTrainer, StackConfig, TrainError};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};

/// What one unit of a stack run did.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum StackEvent {
    Greedy(GreedyEvent),
    FellBack(FellBack),
}

/// `{event: "fell_back", layer, message, resumed_at}`: the device failed; the layer goes on on
/// the CPU after epoch `resumed_at`, the last one whose state came back.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename = "fell_back")]
pub struct FellBack {
    pub layer: usize,
    pub message: String,
    pub resumed_at: usize,
}

/// The layer trained outside the greedy trainer.
enum Outside {
    None,
    Here(LayerTrainer),
    /// Taken out for a device epoch; its weights as they were, to draw meanwhile.
    Away { shown: Rbm },
}

/// One greedy training run.
pub struct StackRun {
    greedy: GreedyTrainer,
    outside: Outside,
    record: TrainingRun,
    /// The CLI's fixed cases, as the current layer sees them.
    measured: Option<Dataset>,
    /// A device that refused a layer, or was lost, is not asked again.
    device_retired: bool,
    /// Tells a device epoch of this run from one of an abandoned run.
    id: u64,
}

/// A device epoch taken out of its run ([`StackRun::begin_device_epoch`]).
pub struct DeviceEpoch {
    run: u64,
    layer: LayerTrainer,
}

/// A device epoch's outcome, to hand back with [`StackRun::end_device_epoch`].
pub struct DeviceEpochDone {
    run: u64,
    layer: LayerTrainer,
    outcome: Result<LayerEvent, TrainError>,
}

impl DeviceEpoch {
    pub async fn run(mut self) -> DeviceEpochDone {
        let outcome = self.layer.device_epoch().await;
        DeviceEpochDone { run: self.run, layer: self.layer, outcome }
    }
}

static NEXT_RUN: AtomicU64 = AtomicU64::new(1);

impl StackRun {
    /// A fresh run of `config` on `data` (checked against it); `held_out` cases give the
    /// held-out free energy and follow the data up the stack.
    pub fn new(config: StackConfig, data: &Dataset, held_out: Option<Dataset>) -> Result<StackRun, TrainError> {
        let mut greedy = GreedyTrainer::new(config, data)?;
        if let Some(held_out) = held_out {
            greedy = greedy.with_held_out(held_out);
        }
        Ok(Self::from_greedy(greedy))
    }

    /// A run around a greedy trainer made elsewhere (a loaded model's).
    pub fn from_greedy(greedy: GreedyTrainer) -> StackRun {
        StackRun { greedy, outside: Outside::None, record: TrainingRun::default(), measured: None, device_retired: false, id: NEXT_RUN.fetch_add(1, Ordering::Relaxed) }
    }

    /// Measures each layer before and after its training on `cases` (propagated alongside the
    /// data): the record's initial and final errors and unit activity.
    pub fn measuring(mut self, cases: Dataset) -> StackRun {
        self.measured = Some(cases);
        self
    }

    pub fn greedy(&self) -> &GreedyTrainer {
        &self.greedy
    }

    pub fn greedy_mut(&mut self) -> &mut GreedyTrainer {
        &mut self.greedy
    }

    pub fn into_greedy(self) -> GreedyTrainer {
        self.greedy
    }

    pub fn record(&self) -> &TrainingRun {
        &self.record
    }

    pub fn finished(&self) -> bool {
        self.greedy.finished()
    }

    /// The trained layers plus the layer in training, as a DBN to sample from and draw.
    pub fn model(&self) -> Option<Dbn> {
        let mut dbn = self.greedy.dbn.clone();
        let current = match &self.outside {
            Outside::Here(layer) => Some(layer.rbm().clone()),
            Outside::Away { shown } => Some(shown.clone()),
            Outside::None => self.greedy.current_trainer().map(|t| t.rbm.clone()),
        };
        dbn.layers.extend(current);
        (!dbn.layers.is_empty()).then_some(dbn)
    }

    /// Whether the layer in training is on the device with epochs to go (or in a device epoch).
    pub fn on_device(&self) -> bool {
        match &self.outside {
            Outside::Here(layer) => layer.on_gpu() && !layer.finished(),
            Outside::Away { .. } => true,
            Outside::None => false,
        }
    }

    fn busy(&self) -> Result<(), TrainError> {
        match self.outside {
            Outside::Away { .. } => Err(TrainError::Data("a GPU epoch is running; step again when it has finished".into())),
            _ => Ok(()),
        }
    }

    /// Moves the layer just started onto `engine`'s device. `Ok(false)`: the device refused a
    /// layer or failed earlier in this run, and later layers train on the CPU. `Err`: why this
    /// layer stays on the CPU (no device, adapter limits, a layer part-way through an epoch);
    /// the device is then not asked again.
    pub fn place_on_device(&mut self, engine: &Engine, data: &Dataset) -> Result<bool, String> {
        match &self.outside {
            Outside::Away { .. } => return Err("a layer is already training on the GPU".into()),
            Outside::Here(layer) if layer.on_gpu() => return Err("a layer is already training on the GPU".into()),
            Outside::Here(_) => return Err("the layer is part-way through its training on the CPU".into()),
            Outside::None if self.device_retired => return Ok(false),
            Outside::None => {}
        }
        match LayerTrainer::on_device(engine, &self.greedy, data) {
            Ok(layer) => {
                self.outside = Outside::Here(layer);
                Ok(true)
            }
            Err(reason) => {
                self.device_retired = true;
                Err(reason)
            }
        }
    }

    /// One unit: a device epoch when the layer is on the device, else [`Self::step`].
    pub async fn unit(&mut self, backend: &dyn Backend, data: &Dataset) -> Result<StackEvent, TrainError> {
        self.settle()?;
        if let Outside::Here(layer) = &mut self.outside {
            if layer.on_gpu() {
                let index = layer.layer();
                let event = layer.device_epoch().await?;
                return Ok(self.record_layer_event(index, event));
            }
        }
        self.step(backend, data)
    }

    /// One unit on the CPU: a layer's initialisation, one epoch, or closing a layer. A layer
    /// still on the device moves to the CPU first, exactly (its last checkpoint).
    pub fn step(&mut self, backend: &dyn Backend, data: &Dataset) -> Result<StackEvent, TrainError> {
        self.busy()?;
        self.settle()?;
        if let Outside::Here(layer) = &mut self.outside {
            layer.move_to_cpu()?;
            let index = layer.layer();
            let event = layer.cpu_epoch(&self.greedy, data)?;
            return Ok(self.record_layer_event(index, event));
        }
        let stop_before = self.greedy.current_trainer().and_then(|t| t.stopped);
        let event = self.greedy.step(backend, data)?;
        self.record.record(&event, stop_before);
        self.measure(backend, &event);
        Ok(StackEvent::Greedy(event))
    }

    /// One batch of the layer in training, or [`Self::step`]'s unit when no epoch is to train.
    /// A layer on the device moves to the CPU first, exactly, and continues there.
    pub fn step_batch(&mut self, backend: &dyn Backend, data: &Dataset) -> Result<BatchEvent, TrainError> {
        self.busy()?;
        self.settle()?;
        let stop_before = self.greedy.current_trainer().and_then(|t| t.stopped);
        let event = match &mut self.outside {
            Outside::Here(layer) => layer.cpu_batch(&self.greedy, data)?,
            _ => self.greedy.step_batch(backend, data)?,
        };
        if let BatchEvent::Greedy(greedy) = &event {
            self.record.record(greedy, stop_before);
            self.measure(backend, greedy);
        }
        Ok(event)
    }

    /// Takes the layer on the device out of the run for one epoch, whose future owns it.
    pub fn begin_device_epoch(&mut self) -> Result<DeviceEpoch, String> {
        match std::mem::replace(&mut self.outside, Outside::None) {
            Outside::Here(layer) if layer.on_gpu() => {
                self.outside = Outside::Away { shown: layer.rbm().clone() };
                Ok(DeviceEpoch { run: self.id, layer })
            }
            other => {
                self.outside = other;
                Err("no layer is training on the GPU (or a GPU epoch is already running)".into())
            }
        }
    }

    /// Puts back the layer of a device epoch and records its event; `None` when the epoch
    /// belongs to an abandoned run. A failure of the device has moved the layer to the CPU.
    pub fn end_device_epoch(&mut self, done: DeviceEpochDone) -> Result<Option<StackEvent>, TrainError> {
        if done.run != self.id {
            return Ok(None);
        }
        let index = done.layer.layer();
        self.outside = Outside::Here(done.layer);
        let event = done.outcome?;
        Ok(Some(self.record_layer_event(index, event)))
    }

    /// Ends the layer in training after its current epoch.
    pub fn cancel(&mut self) {
        self.greedy.cancel_layer();
        if let Outside::Here(layer) = &mut self.outside {
            layer.cancel();
        }
    }

    /// Hands a finished layer trained outside back to the greedy trainer, whose next step
    /// closes it.
    fn settle(&mut self) -> Result<(), TrainError> {
        if matches!(&self.outside, Outside::Here(layer) if layer.finished()) {
            let Outside::Here(layer) = std::mem::replace(&mut self.outside, Outside::None) else { unreachable!("matched above") };
            layer.finish(&mut self.greedy)?;
        }
        Ok(())
    }

    fn record_layer_event(&mut self, layer: usize, event: LayerEvent) -> StackEvent {
        self.record.record_layer_event(layer, &event);
        match event {
            LayerEvent::Epoch { report, metrics } => StackEvent::Greedy(GreedyEvent::Epoch { layer, report, metrics }),
            LayerEvent::FellBack { message, resumed_at } => {
                self.device_retired = true;
                StackEvent::FellBack(FellBack { layer, message, resumed_at })
            }
        }
    }

    /// The measured cases' figures around a layer: the initial error when it starts, the final
    /// error and unit activity when it closes (then the cases move up to the next layer).
    fn measure(&mut self, backend: &dyn Backend, event: &GreedyEvent) {
        let Some(measured) = &self.measured else { return };
        match *event {
            GreedyEvent::LayerStarted { layer, .. } => {
                let initial = &self.greedy.current_trainer().expect("a layer has just started").rbm;
                let init_error = initial.reconstruction_error(backend, measured, usize::MAX);
                self.record.layer_mut(layer).expect("just recorded").init_error = Some(init_error);
            }
            GreedyEvent::LayerFinished { layer } => {
                let rbm = &self.greedy.dbn.layers[layer];
                let mut outcome = self.record.layers[layer].outcome();
                outcome.finish(backend, rbm, measured);
                let record = self.record.layer_mut(layer).expect("a layer finishes after it starts");
                record.final_error = Some(outcome.final_error);
                record.activity = outcome.activity;
                if layer + 1 < self.greedy.config.layers.len() {
                    self.measured = Some(propagate_dataset(backend, rbm, measured));
                }
            }
            GreedyEvent::Epoch { .. } | GreedyEvent::Finished => {}
        }
    }
}
