//! Training one RBM by contrastive divergence: CD-k with Masters' chain-length schedule, or
//! persistent CD (Tieleman 2008), with weight and sparsity penalties, momentum, and the
//! adaptive or fixed learning-rate schedules.
//!
//! One batch: `h0 = σ(v0·W + c)`; the negative chain starts from a sample of `h0` (CD) or
//! from the persistent chains (PCD) and alternates `v = E[v | h]` (or a sample of it) and
//! `h = σ(v·W + c)` for `k` steps, sampling `h` inside the chain and keeping probabilities
//! at the last step, which lowers the gradient's variance at no cost in bias. The gradient
//! is `v0ᵀh0 / rows − vₖᵀhₖ / chains`. Each epoch visits the cases through a Fisher–Yates
//! shuffled index; the data never moves.

use super::config::CdConfig;
use super::init::{initialise_by_trials, trial_rng};
use super::penalties::SparsityEstimate;
use super::schedule::{close_epoch, ChainLength, Convergence, RateState, StopReason};
use super::weights_update::{update_bias, update_weights_from_products, WeightStep};
use super::TrainError;
use crate::backend::wide::wide;
use crate::backend::{Activation, Backend, OuterProduct};
use crate::clock::now_seconds;
use crate::data::Dataset;
use crate::model::rbm::squared_difference;
use crate::model::{Rbm, VisibleUnits};
use crate::rng::{Purpose, RngStream};
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct EpochReport {
    /// 1-based.
    pub epoch: usize,
    /// Chain length used this epoch.
    pub cd_k: usize,
    /// Mean squared difference between each case and its one-step reconstruction, measured
    /// during the epoch (so with the weights as they moved).
    pub reconstruction_error: f64,
    /// Learning rate and momentum at the end of the epoch.
    pub learning_rate: f32,
    pub momentum: f32,
    /// Mean over the epoch's batches of the cosine between successive weight gradients.
    pub gradient_cosine: f64,
    /// Mean over batches of the weight gradient's root mean square.
    pub gradient_rms: f64,
    /// max|weight increment| / max|weight| over the epoch (Masters' convergence measure).
    pub increment_ratio: f64,
    pub epochs_without_improvement: usize,
    pub seconds: f64,
    pub cases_per_second: f64,
    /// Set on the epoch that ended training.
    pub stop: Option<StopReason>,
}

pub(crate) struct Velocities {
    pub(crate) weights: Vec<f32>,
    pub(crate) visible_bias: Vec<f32>,
    pub(crate) hidden_bias: Vec<f32>,
}

pub struct CdTrainer {
    pub config: CdConfig,
    pub rbm: Rbm,
    /// Reconstruction error of each initialisation trial, and the winner.
    pub init_trial_errors: Vec<f64>,
    pub init_best_trial: usize,
    pub(crate) velocity: Velocities,
    pub(crate) previous_gradient: Option<Vec<f32>>,
    pub rates: RateState,
    pub(crate) chain_length: ChainLength,
    pub(crate) convergence: Convergence,
    pub sparsity: SparsityEstimate,
    pub(crate) persistent_chains: Option<Vec<f32>>,
    pub(crate) order: Vec<usize>,
    pub(crate) shuffle_rng: ChaCha8Rng,
    /// Epochs completed.
    pub epoch: usize,
    /// Batches completed: the counter of the sampling streams.
    pub(crate) step: u64,
    pub stopped: Option<StopReason>,
    pub(crate) buffers: BatchBuffers,
    /// The epoch begun by `train_next_batch` and not yet ended.
    pub(crate) in_progress: Option<EpochInProgress>,
}

/// What one call of `train_next_batch` did.
#[derive(Clone, Debug)]
pub enum BatchStep {
    /// A batch inside the epoch.
    Batch(BatchReport),
    /// The epoch's last batch, and the epoch's report.
    EpochEnded(EpochReport),
}

#[derive(Clone, Debug, Serialize)]
pub struct BatchReport {
    /// 1-based, within the epoch.
    pub batch: usize,
    pub batches: usize,
    /// This batch's mean squared one-step reconstruction error.
    pub reconstruction_error: f64,
}

/// An epoch between its first and last batch: the divergence snapshot, the epoch's chain
/// length and batch size, where the next batch starts in the shuffled order, and the sums
/// the report is made of. Seconds count only time spent training, not pauses between calls.
pub(crate) struct EpochInProgress {
    snapshot: (Rbm, RateState, Option<Vec<f32>>, SparsityEstimate),
    k: usize,
    batch_size: usize,
    next_case: usize,
    squared_error: f64,
    cosine_sum: f64,
    cosines: usize,
    rms_sum: f64,
    max_increment: f32,
    batches: usize,
    seconds: f64,
}

impl EpochInProgress {
    fn add(&mut self, figures: &BatchFigures, next_case: usize, seconds: f64) {
        self.squared_error += figures.squared_error;
        if let Some(c) = figures.cosine {
            self.cosine_sum += c;
            self.cosines += 1;
        }
        self.rms_sum += figures.gradient_rms;
        self.max_increment = self.max_increment.max(figures.max_increment);
        self.batches += 1;
        self.next_case = next_case;
        self.seconds += seconds;
    }
}

/// Per-batch figures the epoch report aggregates.
struct BatchFigures {
    squared_error: f64,
    cosine: Option<f64>,
    gradient_rms: f64,
    max_increment: f32,
}

impl CdTrainer {
    /// Validates `config`, then initialises the RBM by random trials on `data`.
    pub fn new(config: CdConfig, backend: &dyn Backend, data: &Dataset) -> Result<Self, TrainError> {
        config.validate(data.n_cases).map_err(TrainError::Config)?;
        if data.n_cases == 0 {
            return Err(TrainError::Data(format!("{}: the data set has no cases", data.name)));
        }
        let init = initialise_by_trials(&config, backend, data);
        if !init.rbm.is_finite() {
            return Err(TrainError::Data(format!("{}: the data hold NaN or infinite values", data.name)));
        }
        let rbm = init.rbm;
        let persistent_chains = config.persistent.then(|| {
            // Persistent chains start from data cases spread through the set.
            let n = config.n_persistent_chains;
            let cases: Vec<usize> = (0..n).map(|k| k * data.n_cases / n).collect();
            let mut chains = vec![0.0; n * data.n_inputs];
            data.gather_into(&cases, &mut chains);
            chains
        });
        Ok(CdTrainer {
            velocity: Velocities { weights: vec![0.0; rbm.weights.len()], visible_bias: vec![0.0; rbm.n_visible], hidden_bias: vec![0.0; rbm.n_hidden] },
            previous_gradient: None,
            rates: RateState::new(&config),
            chain_length: ChainLength::new(&config),
            convergence: Convergence::new(&config),
            sparsity: SparsityEstimate::new(rbm.n_hidden),
            persistent_chains,
            order: (0..data.n_cases).collect(),
            shuffle_rng: trial_rng(config.seed, 0),
            epoch: 0,
            step: 0,
            stopped: None,
            buffers: BatchBuffers::default(),
            in_progress: None,
            init_trial_errors: init.trial_errors,
            init_best_trial: init.best_trial,
            rbm,
            config,
        })
    }

    pub fn finished(&self) -> bool {
        self.stopped.is_some()
    }

    /// One pass over the data (or the rest of an epoch begun by `train_next_batch`): exactly
    /// the loop of `train_next_batch` up to the batch that ends the epoch. On divergence the
    /// model is rolled back to the end of the previous epoch and an error returned; training
    /// can go on with a lower learning rate.
    pub fn train_epoch(&mut self, backend: &dyn Backend, data: &Dataset) -> Result<EpochReport, TrainError> {
        loop {
            if let BatchStep::EpochEnded(report) = self.train_next_batch(backend, data)? {
                return Ok(report);
            }
        }
    }

    /// Trains one batch, beginning an epoch (shuffle, snapshot) when none is in progress and
    /// finishing it (report, schedules, convergence) after its last batch.
    pub fn train_next_batch(&mut self, backend: &dyn Backend, data: &Dataset) -> Result<BatchStep, TrainError> {
        if data.n_inputs != self.rbm.n_visible {
            return Err(TrainError::Data(format!(
                "{}: {} inputs per case, but the model has {} visible units",
                data.name, data.n_inputs, self.rbm.n_visible
            )));
        }
        if self.order.len() != data.n_cases {
            return Err(TrainError::Data(format!("{}: {} cases, but this layer trains on {}", data.name, data.n_cases, self.order.len())));
        }
        let started = now_seconds();
        let mut epoch = match self.in_progress.take() {
            Some(epoch) => epoch,
            None => self.begin_epoch(data.n_cases),
        };
        let end = (epoch.next_case + epoch.batch_size).min(self.order.len());
        let order = std::mem::take(&mut self.order);
        let figures = self.train_batch(backend, data, &order[epoch.next_case..end], epoch.k);
        let rows = end - epoch.next_case;
        self.order = order;
        epoch.add(&figures, end, now_seconds() - started);
        if end < self.order.len() {
            let batch = BatchReport {
                batch: epoch.batches,
                batches: self.order.len().div_ceil(epoch.batch_size),
                reconstruction_error: figures.squared_error / (rows * data.n_inputs) as f64,
            };
            self.in_progress = Some(epoch);
            return Ok(BatchStep::Batch(batch));
        }
        self.finish_epoch(epoch, data).map(BatchStep::EpochEnded)
    }

    /// Whether an epoch has begun and not yet ended (its state is not in a `CdCheckpoint`).
    pub fn mid_epoch(&self) -> bool {
        self.in_progress.is_some()
    }

    fn begin_epoch(&mut self, n_cases: usize) -> EpochInProgress {
        let snapshot = (self.rbm.clone(), self.rates.clone(), self.persistent_chains.clone(), self.sparsity.clone());
        self.order.shuffle(&mut self.shuffle_rng);
        EpochInProgress {
            snapshot,
            k: self.chain_length.current(),
            batch_size: self.config.cases_per_batch(n_cases),
            next_case: 0,
            squared_error: 0.0,
            cosine_sum: 0.0,
            cosines: 0,
            rms_sum: 0.0,
            max_increment: 0.0,
            batches: 0,
            seconds: 0.0,
        }
    }

    fn finish_epoch(&mut self, epoch: EpochInProgress, data: &Dataset) -> Result<EpochReport, TrainError> {
        let reconstruction_error = epoch.squared_error / (data.n_cases * data.n_inputs) as f64;
        if !reconstruction_error.is_finite() || !self.rbm.is_finite() {
            (self.rbm, self.rates, self.persistent_chains, self.sparsity) = epoch.snapshot;
            self.reset_momentum();
            return Err(TrainError::NonFinite { epoch: self.epoch + 1 });
        }
        let started = now_seconds();
        self.epoch += 1;
        let max_weight = self.rbm.weights.iter().fold(0.0f32, |m, w| m.max(w.abs())).max(1e-30);
        let increment_ratio = (epoch.max_increment / max_weight) as f64;
        let stop = close_epoch(&mut self.convergence, &mut self.rates, &mut self.chain_length, self.epoch, self.config.epochs, increment_ratio);
        self.stopped = stop;
        let seconds = epoch.seconds + (now_seconds() - started);
        Ok(EpochReport {
            epoch: self.epoch,
            cd_k: epoch.k,
            reconstruction_error,
            learning_rate: self.rates.learning_rate,
            momentum: self.rates.momentum,
            gradient_cosine: if epoch.cosines > 0 { epoch.cosine_sum / epoch.cosines as f64 } else { 0.0 },
            gradient_rms: epoch.rms_sum / epoch.batches.max(1) as f64,
            increment_ratio,
            epochs_without_improvement: self.convergence.epochs_without_improvement,
            seconds,
            cases_per_second: data.n_cases as f64 / seconds.max(1e-9),
            stop,
        })
    }

    /// Ends training at the user's request; the model stays as it is.
    pub fn cancel(&mut self) {
        self.stopped.get_or_insert(StopReason::Cancelled);
    }

    pub(crate) fn reset_momentum(&mut self) {
        self.velocity.weights.fill(0.0);
        self.velocity.visible_bias.fill(0.0);
        self.velocity.hidden_bias.fill(0.0);
        self.previous_gradient = None;
    }

    /// Stream for sampling step `chain_step` of the current batch.
    fn stream(&self, purpose: Purpose, chain_step: usize) -> RngStream {
        RngStream::new(self.config.seed, (self.step << 10) | chain_step as u64, purpose)
    }

    fn sample_visible(&self, backend: &dyn Backend, expectations: &[f32], chain_step: usize, out: &mut [f32]) {
        match self.rbm.visible_units {
            VisibleUnits::Bernoulli => backend.bernoulli(expectations, self.stream(Purpose::VisibleSample, chain_step), out),
            VisibleUnits::Gaussian => {
                out.copy_from_slice(expectations);
                backend.add_gaussian_noise(out, self.stream(Purpose::VisibleSample, chain_step));
            }
        }
    }

    fn train_batch(&mut self, backend: &dyn Backend, data: &Dataset, cases: &[usize], k: usize) -> BatchFigures {
        let (nv, nh, rows) = (self.rbm.n_visible, self.rbm.n_hidden, cases.len());
        let chains = if self.config.persistent { self.config.n_persistent_chains } else { rows };
        let mut b = std::mem::take(&mut self.buffers);
        b.resize(rows, chains, nv, nh);
        data.gather_into(cases, &mut b.visible);
        if self.config.sample_inputs {
            b.scratch.resize(rows * nv, 0.0);
            backend.bernoulli(&b.visible, self.stream(Purpose::InputSample, 0), &mut b.scratch);
            std::mem::swap(&mut b.visible, &mut b.scratch);
        }
        let weights = self.rbm.weights();
        let visible_activation = self.rbm.visible_activation();

        // Positive phase. Its means (serial passes) are taken beside the negative chain's start,
        // a hidden sample, on another thread if there is one.
        backend.visible_to_hidden(weights, &b.visible, &self.rbm.hidden_bias, Activation::Sigmoid, &mut b.hidden);
        rayon::join(
            || {
                column_means_into(&b.visible, rows, nv, &mut b.mean_visible);
                column_means_into(&b.hidden, rows, nh, &mut b.mean_hidden);
            },
            || match &self.persistent_chains {
                None => backend.bernoulli(&b.hidden, self.stream(Purpose::HiddenSample, 0), &mut b.chain_hidden_sample),
                Some(state) => {
                    backend.visible_to_hidden(weights, state, &self.rbm.hidden_bias, Activation::Sigmoid, &mut b.chain_hidden);
                    backend.bernoulli(&b.chain_hidden, self.stream(Purpose::HiddenSample, 0), &mut b.chain_hidden_sample);
                }
            },
        );
        self.sparsity.update(&b.mean_hidden);
        let mut squared_error = 0.0;
        for step in 0..k {
            backend.hidden_to_visible(weights, &b.chain_hidden_sample, &self.rbm.visible_bias, visible_activation, &mut b.chain_visible);
            if !self.config.mean_field_visible {
                // Sampled into `scratch` and swapped, so `scratch` keeps the expectations.
                b.scratch.resize(chains * nv, 0.0);
                self.sample_visible(backend, &b.chain_visible, step, &mut b.scratch);
                std::mem::swap(&mut b.chain_visible, &mut b.scratch);
            }
            let expectations = if self.config.mean_field_visible { &b.chain_visible } else { &b.scratch };
            let measure = step == 0 && !self.config.persistent;
            // The reconstruction error is one f64 sum in order (so the same to the last bit as
            // ever), latency-bound: it runs beside the next product, on another thread if any.
            let (error, ()) = rayon::join(
                || measure.then(|| squared_difference(&b.visible, expectations)),
                || backend.visible_to_hidden(weights, &b.chain_visible, &self.rbm.hidden_bias, Activation::Sigmoid, &mut b.chain_hidden),
            );
            squared_error = error.unwrap_or(squared_error);
            if step + 1 < k {
                backend.bernoulli(&b.chain_hidden, self.stream(Purpose::ChainHidden, step + 1), &mut b.chain_hidden_sample);
            }
        }
        if let Some(state) = &mut self.persistent_chains {
            state.copy_from_slice(&b.chain_visible);
            // The chains no longer track the data, so measure reconstruction separately.
            b.scratch.resize(rows * nv, 0.0);
            backend.hidden_to_visible(weights, &b.hidden, &self.rbm.visible_bias, visible_activation, &mut b.scratch);
            squared_error = squared_difference(&b.visible, &b.scratch);
        }

        // Gradient of the log-likelihood estimate, then penalties and the update, a block of
        // rows at a time as the backend makes them.
        let products = [
            OuterProduct { visible: &b.visible, hidden: &b.hidden, scale: 1.0 / rows as f32 },
            OuterProduct { visible: &b.chain_visible, hidden: &b.chain_hidden, scale: -1.0 / chains as f32 },
        ];
        self.sparsity.derivative_into(self.config.sparsity_penalty, self.config.sparsity_target, &mut b.sparsity_derivative);
        let step = WeightStep {
            learning_rate: self.rates.learning_rate,
            momentum: self.rates.momentum,
            weight_penalty: self.config.weight_penalty,
            mean_input: &b.mean_visible,
            sparsity_derivative: &b.sparsity_derivative,
        };
        // The negative means for the bias gradients beside the weight step.
        let (update, ()) = rayon::join(
            || {
                let previous = self.previous_gradient.as_deref();
                update_weights_from_products(backend, &products, &mut self.rbm.weights, &mut self.velocity.weights, &mut b.gradient, previous, &step)
            },
            || {
                column_means_into(&b.chain_visible, chains, nv, &mut b.visible_gradient);
                column_means_into(&b.chain_hidden, chains, nh, &mut b.hidden_gradient);
            },
        );
        // Bias gradients: positive minus negative means (minus the sparsity term for hidden
        // units), made in the buffers of the negative means.
        for (g, p) in b.visible_gradient.iter_mut().zip(&b.mean_visible) {
            *g = p - *g;
        }
        for ((g, p), d) in b.hidden_gradient.iter_mut().zip(&b.mean_hidden).zip(&b.sparsity_derivative) {
            *g = p - *g - d;
        }
        update_bias(&mut self.rbm.visible_bias, &mut self.velocity.visible_bias, &b.visible_gradient, &step);
        update_bias(&mut self.rbm.hidden_bias, &mut self.velocity.hidden_bias, &b.hidden_gradient, &step);

        // Keep this gradient for the next cosine; recycle the old buffer.
        let previous = self.previous_gradient.replace(std::mem::take(&mut b.gradient));
        b.gradient = previous.unwrap_or_default();
        self.rates.after_batch(update.cosine);
        self.step += 1;
        self.buffers = b;
        BatchFigures { squared_error, cosine: update.cosine, gradient_rms: update.gradient_rms, max_increment: update.max_increment }
    }
}

/// Mean of each column of a `rows × width` matrix.
pub fn column_means(values: &[f32], rows: usize, width: usize) -> Vec<f32> {
    let mut means = Vec::new();
    column_means_into(values, rows, width, &mut means);
    means
}

/// `column_means` into `means` (resized to `width`): row by row in f32, as it always was.
pub fn column_means_into(values: &[f32], rows: usize, width: usize, means: &mut Vec<f32>) {
    means.clear();
    means.resize(width, 0.0);
    wide(#[inline(always)] || {
        for row in values.chunks_exact(width.max(1)).take(rows) {
            for (s, v) in means.iter_mut().zip(row) {
                *s += v;
            }
        }
        for s in means.iter_mut() {
            *s /= rows as f32;
        }
    });
}

/// A batch's matrices and vectors, kept between batches so that a batch allocates nothing
/// that grows with the model.
#[derive(Default)]
pub(crate) struct BatchBuffers {
    visible: Vec<f32>,
    hidden: Vec<f32>,
    chain_hidden_sample: Vec<f32>,
    chain_visible: Vec<f32>,
    chain_hidden: Vec<f32>,
    gradient: Vec<f32>,
    /// Sampling's input or output beside the buffer it replaces (swapped in), and PCD's
    /// reconstruction.
    scratch: Vec<f32>,
    mean_visible: Vec<f32>,
    mean_hidden: Vec<f32>,
    sparsity_derivative: Vec<f32>,
    visible_gradient: Vec<f32>,
    hidden_gradient: Vec<f32>,
}

impl BatchBuffers {
    fn resize(&mut self, rows: usize, chains: usize, nv: usize, nh: usize) {
        self.visible.resize(rows * nv, 0.0);
        self.hidden.resize(rows * nh, 0.0);
        self.chain_hidden_sample.resize(chains * nh, 0.0);
        self.chain_visible.resize(chains * nv, 0.0);
        self.chain_hidden.resize(chains * nh, 0.0);
        self.gradient.resize(nv * nh, 0.0);
    }
}
