//! CD-1 training of one RBM (Hinton 2002), the first slice of the engine.
//!
//! One batch: `h0 = σ(v0·W + c)`, sample `h0s`, reconstruct `v1 = σ(h0s·Wᵀ + b)` (mean field
//! or sampled), `h1 = σ(v1·W + c)`; the gradient is `(v0ᵀh0 − v1ᵀh1) / batch`. The last hidden
//! step uses probabilities, which lowers the variance of the gradient at no cost in bias.
//! Each epoch visits the cases through a Fisher–Yates shuffled index; the data never moves.

use super::config::{CdConfig, ConfigError};
use crate::backend::{Activation, Backend};
use crate::clock::now_seconds;
use crate::data::Dataset;
use crate::model::rbm::{squared_difference, Rbm};
use crate::rng::{Purpose, RngStream};
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct EpochReport {
    /// 1-based.
    pub epoch: usize,
    /// Mean squared difference between each case and its one-step reconstruction, measured
    /// during the epoch (so with the weights as they moved).
    pub reconstruction_error: f64,
    pub learning_rate: f32,
    pub momentum: f32,
    pub seconds: f64,
    pub cases_per_second: f64,
}

#[derive(Debug)]
pub enum TrainError {
    Config(ConfigError),
    Data(String),
    /// The weights went NaN/Inf; the model was restored to the end of the previous epoch.
    NonFinite { epoch: usize },
}

impl std::fmt::Display for TrainError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            TrainError::Config(e) => write!(f, "invalid setting {e}"),
            TrainError::Data(m) => write!(f, "{m}"),
            TrainError::NonFinite { epoch } => write!(
                f,
                "training diverged in epoch {epoch} (NaN or infinite weights); the model was restored to the end of epoch {}. Lower the learning rate.",
                epoch - 1
            ),
        }
    }
}

impl std::error::Error for TrainError {}

pub struct CdTrainer {
    pub config: CdConfig,
    pub rbm: Rbm,
    weight_velocity: Vec<f32>,
    visible_bias_velocity: Vec<f32>,
    hidden_bias_velocity: Vec<f32>,
    order: Vec<usize>,
    shuffle_rng: ChaCha8Rng,
    /// Epochs completed.
    pub epoch: usize,
    /// Batches completed, the counter of the sampling streams.
    step: u64,
}

impl CdTrainer {
    pub fn new(config: CdConfig, data: &Dataset) -> Result<Self, TrainError> {
        config.validate().map_err(TrainError::Config)?;
        if data.n_cases == 0 {
            return Err(TrainError::Data(format!("{}: the data set has no cases", data.name)));
        }
        let mut rng = Rbm::seeded_rng(config.seed);
        let rbm = Rbm::initialise(crate::model::VisibleUnits::Bernoulli, data.n_inputs, config.n_hidden, &data.input_means(), &mut rng);
        Ok(CdTrainer {
            weight_velocity: vec![0.0; rbm.weights.len()],
            visible_bias_velocity: vec![0.0; rbm.n_visible],
            hidden_bias_velocity: vec![0.0; rbm.n_hidden],
            order: (0..data.n_cases).collect(),
            shuffle_rng: rng,
            epoch: 0,
            step: 0,
            config,
            rbm,
        })
    }

    pub fn finished(&self) -> bool {
        self.epoch >= self.config.epochs
    }

    /// One pass over the data. On divergence the model is rolled back and an error returned.
    pub fn train_epoch(&mut self, backend: &dyn Backend, data: &Dataset) -> Result<EpochReport, TrainError> {
        if data.n_inputs != self.rbm.n_visible {
            return Err(TrainError::Data(format!(
                "{}: {} inputs per case, but the model has {} visible units",
                data.name, data.n_inputs, self.rbm.n_visible
            )));
        }
        let started = now_seconds();
        let snapshot = (self.rbm.clone(), self.weight_velocity.clone());
        self.order.shuffle(&mut self.shuffle_rng);
        let momentum = self.config.momentum_for_epoch(self.epoch);
        let mut buffers = BatchBuffers::default();
        let mut squared_error = 0.0;
        let order = std::mem::take(&mut self.order);
        for batch in order.chunks(self.config.batch_size) {
            squared_error += self.train_batch(backend, data, batch, momentum, &mut buffers);
        }
        self.order = order;
        self.epoch += 1;
        let reconstruction_error = squared_error / (data.n_cases * data.n_inputs) as f64;
        if !reconstruction_error.is_finite() || !self.rbm.is_finite() {
            (self.rbm, self.weight_velocity) = snapshot;
            self.visible_bias_velocity.fill(0.0);
            self.hidden_bias_velocity.fill(0.0);
            self.epoch -= 1;
            return Err(TrainError::NonFinite { epoch: self.epoch + 1 });
        }
        let seconds = now_seconds() - started;
        Ok(EpochReport {
            epoch: self.epoch,
            reconstruction_error,
            learning_rate: self.config.learning_rate,
            momentum,
            seconds,
            cases_per_second: data.n_cases as f64 / seconds.max(1e-9),
        })
    }

    /// Returns the summed squared reconstruction error of the batch.
    fn train_batch(&mut self, backend: &dyn Backend, data: &Dataset, cases: &[usize], momentum: f32, b: &mut BatchBuffers) -> f64 {
        let (nv, nh, rows) = (self.rbm.n_visible, self.rbm.n_hidden, cases.len());
        b.resize(rows, nv, nh);
        data.gather_into(cases, &mut b.visible);
        let weights = self.rbm.weights();

        backend.visible_to_hidden(weights, &b.visible, &self.rbm.hidden_bias, Activation::Sigmoid, &mut b.hidden);
        backend.bernoulli(&b.hidden, RngStream::new(self.config.seed, self.step, Purpose::HiddenSample), &mut b.hidden_sample);
        backend.hidden_to_visible(weights, &b.hidden_sample, &self.rbm.visible_bias, Activation::Sigmoid, &mut b.reconstruction);
        let error = squared_difference(&b.visible, &b.reconstruction);
        if !self.config.mean_field_visible {
            let probabilities = b.reconstruction.clone();
            backend.bernoulli(&probabilities, RngStream::new(self.config.seed, self.step, Purpose::VisibleSample), &mut b.reconstruction);
        }
        backend.visible_to_hidden(weights, &b.reconstruction, &self.rbm.hidden_bias, Activation::Sigmoid, &mut b.hidden_negative);

        let scale = 1.0 / rows as f32;
        b.gradient.fill(0.0);
        backend.accumulate_outer((nv, nh), &b.visible, &b.hidden, scale, &mut b.gradient);
        backend.accumulate_outer((nv, nh), &b.reconstruction, &b.hidden_negative, -scale, &mut b.gradient);

        let lr = self.config.learning_rate;
        let penalty = self.config.weight_penalty;
        for ((w, v), g) in self.rbm.weights.iter_mut().zip(&mut self.weight_velocity).zip(&b.gradient) {
            *v = momentum * *v + lr * (g - penalty * *w);
            *w += *v;
        }
        update_bias(&mut self.rbm.visible_bias, &mut self.visible_bias_velocity, &b.visible, &b.reconstruction, rows, momentum, lr);
        update_bias(&mut self.rbm.hidden_bias, &mut self.hidden_bias_velocity, &b.hidden, &b.hidden_negative, rows, momentum, lr);
        self.step += 1;
        error
    }
}

fn update_bias(bias: &mut [f32], velocity: &mut [f32], positive: &[f32], negative: &[f32], rows: usize, momentum: f32, lr: f32) {
    let width = bias.len();
    for (unit, (b, v)) in bias.iter_mut().zip(velocity.iter_mut()).enumerate() {
        let mut gradient = 0.0;
        for r in 0..rows {
            gradient += positive[r * width + unit] - negative[r * width + unit];
        }
        *v = momentum * *v + lr * gradient / rows as f32;
        *b += *v;
    }
}

#[derive(Default)]
struct BatchBuffers {
    visible: Vec<f32>,
    hidden: Vec<f32>,
    hidden_sample: Vec<f32>,
    reconstruction: Vec<f32>,
    hidden_negative: Vec<f32>,
    gradient: Vec<f32>,
}

impl BatchBuffers {
    fn resize(&mut self, rows: usize, nv: usize, nh: usize) {
        self.visible.resize(rows * nv, 0.0);
        self.reconstruction.resize(rows * nv, 0.0);
        self.hidden.resize(rows * nh, 0.0);
        self.hidden_sample.resize(rows * nh, 0.0);
        self.hidden_negative.resize(rows * nh, 0.0);
        self.gradient.resize(nv * nh, 0.0);
    }
}
