//! The record of a greedy training run: its events folded into one record per layer. The CLI
//! and the page fold the same events the same way ([`TrainingRun::record`]) and build model.json's
//! `training` records, DEEP.LOG and the charts from it ([`TrainingRun::outcomes`]).

use super::layer::LayerEvent;
use crate::report::deep_log::UnitActivity;
use crate::report::training_log::LayerOutcome;
use crate::train::{EpochReport, GreedyEvent, StopReason};

/// One RBM layer's training.
#[derive(Clone, Debug, Default)]
pub struct LayerRecord {
    pub trial_errors: Vec<f64>,
    pub best_trial: usize,
    pub epochs: Vec<EpochReport>,
    pub stop: Option<StopReason>,
    /// Measured by the CLI on its fixed cases when the layer started; the page has none (the
    /// best trial's error stands for it).
    pub init_error: Option<f64>,
    /// Measured on the trained layer (CLI), or later, when a report is asked for (page).
    pub final_error: Option<f64>,
    pub activity: Vec<UnitActivity>,
}

/// Every layer of a run, bottom up.
#[derive(Clone, Debug, Default)]
pub struct TrainingRun {
    pub layers: Vec<LayerRecord>,
}

impl TrainingRun {
    pub fn clear(&mut self) {
        self.layers.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Folds in a greedy event; `stop_before` is the layer's stop reason before the step (a
    /// cancel ends a layer without an epoch that reports it).
    pub fn record(&mut self, event: &GreedyEvent, stop_before: Option<StopReason>) {
        match event {
            GreedyEvent::LayerStarted { layer, trial_errors, best_trial } => {
                self.layers.truncate(*layer);
                self.layers.resize_with(*layer, LayerRecord::default);
                self.layers.push(LayerRecord { trial_errors: trial_errors.clone(), best_trial: *best_trial, ..LayerRecord::default() });
            }
            GreedyEvent::Epoch { layer, report, .. } => self.record_epoch(*layer, report.clone()),
            GreedyEvent::LayerFinished { layer } => {
                if let Some(record) = self.layers.get_mut(*layer) {
                    record.stop = record.stop.or(stop_before);
                }
            }
            GreedyEvent::Finished => {}
        }
    }

    /// Folds in an event of a layer trained outside the greedy trainer ([`super::layer`]).
    pub fn record_layer_event(&mut self, layer: usize, event: &LayerEvent) {
        match event {
            LayerEvent::Epoch { report, .. } => self.record_epoch(layer, report.clone()),
            // Epochs after the last state that came back are redone on the CPU.
            LayerEvent::FellBack { resumed_at, .. } => {
                if let Some(record) = self.layers.get_mut(layer) {
                    record.epochs.truncate(*resumed_at);
                }
            }
        }
    }

    pub fn record_epoch(&mut self, layer: usize, report: EpochReport) {
        if self.layers.len() <= layer {
            self.layers.resize_with(layer + 1, LayerRecord::default);
        }
        let record = &mut self.layers[layer];
        record.stop = record.stop.or(report.stop);
        record.epochs.push(report);
    }

    /// Layer `layer`'s record, for the measurements taken around it.
    pub fn layer_mut(&mut self, layer: usize) -> Option<&mut LayerRecord> {
        self.layers.get_mut(layer)
    }

    /// The report's view of each layer. Without a measured initial error the best trial's
    /// (the same mean-field reconstruction error, on the initialisation cases) stands for it.
    pub fn outcomes(&self) -> Vec<LayerOutcome> {
        self.layers.iter().map(LayerRecord::outcome).collect()
    }
}

impl LayerRecord {
    pub fn outcome(&self) -> LayerOutcome {
        let init_error = self.init_error.unwrap_or_else(|| self.trial_errors.get(self.best_trial).copied().unwrap_or(f64::NAN));
        LayerOutcome {
            epochs: self.epochs.clone(),
            stop: self.stop.unwrap_or(StopReason::MaxEpochs),
            final_error: self.final_error.unwrap_or(f64::NAN),
            activity: self.activity.clone(),
            ..LayerOutcome::started(self.trial_errors.clone(), self.best_trial, init_error)
        }
    }
}
