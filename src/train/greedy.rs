//! Greedy layer-wise training of a DBN (Hinton, Osindero & Teh 2006), in Masters' variant:
//! once a layer is trained, the whole training set is propagated through it once,
//! deterministically (hidden probabilities), and that becomes the next layer's data.
//! After training, each layer's hidden units are sorted by descending Σ|w| so the most
//! influential feature detectors come first in reports and filter views.

use super::config::{check_count, CdConfig, ConfigError};
use super::contrastive_divergence::{BatchReport, BatchStep, CdTrainer, EpochReport};
use super::monitor::{measure_epoch, monitor_seed, EpochMetrics};
use super::TrainError;
use crate::backend::Backend;
use crate::data::Dataset;
use crate::model::{Dbn, Rbm, VisibleUnits};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct StackConfig {
    /// Hidden sizes from the bottom up, e.g. `[500, 500, 2000]`.
    pub layers: Vec<usize>,
    /// Settings shared by every layer (`n_hidden` is taken from `layers`).
    pub rbm: CdConfig,
    /// Higher layers train on the propagated probabilities (on), or on samples of them.
    pub greedy_mean_field: bool,
    /// Cases used for the per-epoch metrics (free energy, pseudo-likelihood, unit
    /// statistics); 0 turns them off.
    pub monitor_cases: usize,
    /// The top RBM of a stack of two or more is the generative model's associative memory:
    /// its chain length moves toward `top_cd_k_end` at `top_cd_k_rate` instead (0: like the
    /// others). With k toward 10, samples of 500-500-2000 after 20 epochs were mostly 3s
    /// and 5s; toward 20 at rate 0.1 they were varied, recognisable digits (docs/DEFAULTS.md).
    pub top_cd_k_end: usize,
    pub top_cd_k_rate: f32,
}

impl Default for StackConfig {
    fn default() -> Self {
        StackConfig { layers: vec![100], rbm: CdConfig::default(), greedy_mean_field: true, monitor_cases: 1000, top_cd_k_end: 20, top_cd_k_rate: 0.1 }
    }
}

impl StackConfig {
    /// Masters' DEEP settings: every layer alike.
    pub fn deep() -> Self {
        StackConfig { rbm: CdConfig::deep(), top_cd_k_end: 0, ..StackConfig::default() }
    }

    pub fn validate(&self, n_cases: usize) -> Result<(), ConfigError> {
        check_count("top_cd_k_end", self.top_cd_k_end, 0, 1000)?;
        super::config::check_range("top_cd_k_rate", self.top_cd_k_rate, 0.0, 1.0)?;
        if self.layers.is_empty() {
            return Err(ConfigError {
                field: "layers",
                message: "expected at least one RBM layer (a plain MLP, with zero RBM layers, trains through the supervised stage alone)".into(),
            });
        }
        for &size in &self.layers {
            check_count("layers", size, 1, super::config::MAX_HIDDEN)?;
        }
        (0..self.layers.len()).try_for_each(|index| self.layer_config(index).validate(n_cases))
    }

    /// Zero RBM layers: a plain MLP, trained by the supervised stage alone (DEEP allows it).
    pub fn is_plain_mlp(&self) -> bool {
        self.layers.is_empty()
    }

    /// `validate`, except that zero layers (a plain MLP) pass: the RBM settings then train
    /// nothing, and only the stack-wide ones are checked.
    pub fn validate_allowing_plain_mlp(&self, n_cases: usize) -> Result<(), ConfigError> {
        if self.is_plain_mlp() {
            check_count("top_cd_k_end", self.top_cd_k_end, 0, 1000)?;
            return super::config::check_range("top_cd_k_rate", self.top_cd_k_rate, 0.0, 1.0);
        }
        self.validate(n_cases)
    }

    /// The settings of layer `index` (0-based): its size, a seed of its own, and for layers
    /// above the first, binary visible units and (optionally) sampled inputs.
    pub fn layer_config(&self, index: usize) -> CdConfig {
        let mut config = self.rbm.clone();
        config.n_hidden = self.layers[index];
        config.seed = self.rbm.seed.wrapping_add(index as u64 * 0x9E37_79B9);
        if index > 0 {
            config.visible_units = VisibleUnits::Bernoulli;
            config.sample_inputs = !self.greedy_mean_field;
        }
        if index > 0 && index + 1 == self.layers.len() && self.top_cd_k_end > 0 {
            config.cd_k_end = self.top_cd_k_end;
            config.cd_k_rate = self.top_cd_k_rate;
        }
        config
    }
}

#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum GreedyEvent {
    /// A layer's initialisation finished (trial scores for the page's chart).
    LayerStarted { layer: usize, trial_errors: Vec<f64>, best_trial: usize },
    Epoch { layer: usize, report: EpochReport, metrics: Option<EpochMetrics> },
    LayerFinished { layer: usize },
    Finished,
}

/// What `step_batch` did: a batch inside an epoch, or one of `step`'s events.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum BatchEvent {
    Batch(LayerBatch),
    Greedy(GreedyEvent),
}

/// `{ event: "batch", layer, batch, batches, reconstruction_error }`.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename = "batch")]
pub struct LayerBatch {
    pub layer: usize,
    #[serde(flatten)]
    pub report: BatchReport,
}

pub struct GreedyTrainer {
    pub config: StackConfig,
    pub dbn: Dbn,
    current: Option<CdTrainer>,
    /// The current layer's training data (the raw data for layer 0).
    layer_data: Option<Dataset>,
    /// Held-out cases as the current layer sees them.
    held_out: Option<Dataset>,
}

impl GreedyTrainer {
    pub fn new(config: StackConfig, data: &Dataset) -> Result<Self, TrainError> {
        // Zero layers (a plain MLP: the supervised stage alone) make a trainer finished at once.
        config.validate_allowing_plain_mlp(data.n_cases).map_err(TrainError::Config)?;
        Ok(GreedyTrainer { config, dbn: Dbn::default(), current: None, layer_data: None, held_out: None })
    }

    /// Held-out cases for the train-versus-held-out free energy; they follow the training
    /// data up the stack.
    pub fn with_held_out(mut self, held_out: Dataset) -> Self {
        self.held_out = Some(held_out);
        self
    }

    pub fn finished(&self) -> bool {
        self.dbn.layers.len() == self.config.layers.len()
    }

    /// Index of the layer being trained (or next to train).
    pub fn current_layer(&self) -> usize {
        self.dbn.layers.len()
    }

    pub fn current_trainer(&self) -> Option<&CdTrainer> {
        self.current.as_ref()
    }

    /// Advances by one unit of work: initialise a layer, train one epoch (or the rest of one
    /// begun by `step_batch`), or close a layer.
    pub fn step(&mut self, backend: &dyn Backend, data: &Dataset) -> Result<GreedyEvent, TrainError> {
        if let Some(event) = self.step_outside_epoch(backend, data)? {
            return Ok(event);
        }
        let layer_data = self.layer_data.as_ref().unwrap_or(data);
        let trainer = self.current.as_mut().expect("a layer in training");
        let report = trainer.train_epoch(backend, layer_data)?;
        Ok(self.epoch_event(backend, data, report))
    }

    /// Like `step`, but trains a single batch: a `batch` event, or the `epoch` event when that
    /// batch ends the epoch. Batch after batch makes exactly the epochs `step` makes.
    pub fn step_batch(&mut self, backend: &dyn Backend, data: &Dataset) -> Result<BatchEvent, TrainError> {
        if let Some(event) = self.step_outside_epoch(backend, data)? {
            return Ok(BatchEvent::Greedy(event));
        }
        let layer = self.current_layer();
        let layer_data = self.layer_data.as_ref().unwrap_or(data);
        let trainer = self.current.as_mut().expect("a layer in training");
        match trainer.train_next_batch(backend, layer_data)? {
            BatchStep::Batch(report) => Ok(BatchEvent::Batch(LayerBatch { layer, report })),
            BatchStep::EpochEnded(report) => Ok(BatchEvent::Greedy(self.epoch_event(backend, data, report))),
        }
    }

    /// The steps that are not training: `finished`, starting a layer, closing a layer.
    /// `None` when the current layer has training to do.
    fn step_outside_epoch(&mut self, backend: &dyn Backend, data: &Dataset) -> Result<Option<GreedyEvent>, TrainError> {
        if self.finished() {
            return Ok(Some(GreedyEvent::Finished));
        }
        let layer = self.current_layer();
        let layer_data = self.layer_data.as_ref().unwrap_or(data);
        match &self.current {
            None => {
                let trainer = CdTrainer::new(self.config.layer_config(layer), backend, layer_data)?;
                let event = GreedyEvent::LayerStarted { layer, trial_errors: trainer.init_trial_errors.clone(), best_trial: trainer.init_best_trial };
                self.current = Some(trainer);
                Ok(Some(event))
            }
            Some(trainer) if !trainer.finished() => Ok(None),
            Some(_) => {
                let mut rbm = self.current.take().expect("checked above").rbm;
                sort_hidden_units_by_weight(&mut rbm);
                if layer + 1 < self.config.layers.len() {
                    self.layer_data = Some(propagate_dataset(backend, &rbm, layer_data));
                    self.held_out = self.held_out.as_ref().map(|held_out| propagate_dataset(backend, &rbm, held_out));
                } else {
                    self.layer_data = None;
                }
                self.dbn.layers.push(rbm);
                Ok(Some(GreedyEvent::LayerFinished { layer }))
            }
        }
    }

    /// The `epoch` event of the current layer, with the monitor's metrics when they are on.
    fn epoch_event(&self, backend: &dyn Backend, data: &Dataset, report: EpochReport) -> GreedyEvent {
        let trainer = self.current.as_ref().expect("a layer in training");
        let metrics = self.measure_layer(backend, &trainer.rbm, data, report.epoch);
        GreedyEvent::Epoch { layer: self.current_layer(), report, metrics }
    }

    /// The monitor's metrics (`None` when `monitor_cases` is 0) of `rbm` as the current layer
    /// after `epoch` epochs, on its data and held-out cases: what `step` reports, for the
    /// epochs of this layer trained elsewhere (the GPU, or the CPU after a lost device).
    pub fn measure_layer(&self, backend: &dyn Backend, rbm: &Rbm, data: &Dataset, epoch: usize) -> Option<EpochMetrics> {
        let trainer = self.current.as_ref()?;
        (self.config.monitor_cases > 0)
            .then(|| measure_epoch(backend, rbm, self.layer_data(data), self.held_out.as_ref(), self.config.monitor_cases, monitor_seed(trainer.config.seed, epoch)))
    }

    /// The held-out cases as the current layer sees them.
    pub fn held_out(&self) -> Option<&Dataset> {
        self.held_out.as_ref()
    }

    /// The data the current layer trains on (`data` itself for the first layer).
    pub fn layer_data<'a>(&'a self, data: &'a Dataset) -> &'a Dataset {
        self.layer_data.as_ref().unwrap_or(data)
    }

    /// Hands in the current layer as trained elsewhere (the GPU trainer): the next `step`
    /// closes the layer exactly as if its epochs had run here.
    pub fn adopt_trained_layer(&mut self, rbm: Rbm, epochs: usize, stop: super::StopReason) -> Result<(), TrainError> {
        let trainer = self.current.as_mut().ok_or_else(|| TrainError::Data("no layer is in training".into()))?;
        if rbm.n_visible != trainer.rbm.n_visible || rbm.n_hidden != trainer.rbm.n_hidden || !rbm.is_finite() {
            return Err(TrainError::Data("the trained layer does not match the layer in training".into()));
        }
        trainer.rbm = rbm;
        trainer.in_progress = None;
        trainer.epoch = epochs;
        trainer.stopped = Some(stop);
        Ok(())
    }

    /// Stops the layer in training after its current epoch; later layers still train.
    pub fn cancel_layer(&mut self) {
        if let Some(trainer) = &mut self.current {
            trainer.cancel();
        }
    }
}

/// Reorders hidden units by descending Σ_i |W_ij| (columns of W with their biases).
pub fn sort_hidden_units_by_weight(rbm: &mut Rbm) {
    let (nv, nh) = (rbm.n_visible, rbm.n_hidden);
    let strength: Vec<f32> = (0..nh).map(|j| (0..nv).map(|i| rbm.weights[i * nh + j].abs()).sum()).collect();
    let mut order: Vec<usize> = (0..nh).collect();
    order.sort_by(|&a, &b| strength[b].total_cmp(&strength[a]));
    let old = rbm.weights.clone();
    for i in 0..nv {
        for (new_j, &old_j) in order.iter().enumerate() {
            rbm.weights[i * nh + new_j] = old[i * nh + old_j];
        }
    }
    rbm.hidden_bias = order.iter().map(|&j| rbm.hidden_bias[j]).collect();
}

/// The data as seen by the next layer: hidden probabilities, computed once, in blocks.
pub fn propagate_dataset(backend: &dyn Backend, rbm: &Rbm, data: &Dataset) -> Dataset {
    let mut values = vec![0.0f32; data.n_cases * rbm.n_hidden];
    let block = 512;
    let mut input = Vec::new();
    for (start, out) in (0..data.n_cases).step_by(block).zip(values.chunks_mut(block * rbm.n_hidden)) {
        let cases: Vec<usize> = (start..(start + block).min(data.n_cases)).collect();
        input.resize(cases.len() * data.n_inputs, 0.0);
        data.gather_into(&cases, &mut input);
        backend.visible_to_hidden(rbm.weights(), &input, &rbm.hidden_bias, crate::backend::Activation::Sigmoid, out);
    }
    Dataset {
        labels: data.labels.clone(),
        input_names: (0..rbm.n_hidden).map(|j| format!("h{j}")).collect(),
        ..Dataset::from_floats(&format!("{} (propagated)", data.name), rbm.n_hidden, values)
    }
}
