//! The schedules of Masters' DEEP program, as pure functions so each rule can be checked
//! by hand: the CD chain length, the adaptive learning rate and momentum, and the
//! learning-rate caps that follow long stretches without improvement.

use super::config::{CdConfig, Schedule};

/// CD chain length: `k` moves from `cd_k_start` toward `cd_k_end` by exponential smoothing,
/// once per epoch, and is used rounded to the nearest integer.
#[derive(Clone, Debug)]
pub struct ChainLength {
    smoothed: f64,
    target: f64,
    rate: f64,
}

impl ChainLength {
    pub fn new(config: &CdConfig) -> Self {
        ChainLength { smoothed: config.cd_k_start as f64, target: config.cd_k_end as f64, rate: config.cd_k_rate as f64 }
    }

    pub fn current(&self) -> usize {
        (self.smoothed.round() as usize).max(1)
    }

    pub fn end_epoch(&mut self) {
        self.smoothed = (1.0 - self.rate) * self.smoothed + self.rate * self.target;
    }
}

pub const LEARNING_RATE_RANGE: (f32, f32) = (0.001, 1.0);

/// Masters' learning-rate rule from the cosine between successive weight gradients:
/// agreeing gradients mean the steps are too timid, opposing ones that they overshoot.
pub fn adapt_learning_rate(learning_rate: f32, cosine: f64) -> f32 {
    let adapted = if cosine > 0.5 {
        learning_rate * 1.2
    } else if cosine > 0.3 {
        learning_rate * 1.1
    } else if cosine < -0.5 {
        learning_rate / 1.2
    } else if cosine < -0.3 {
        learning_rate / 1.1
    } else {
        learning_rate
    };
    adapted.clamp(LEARNING_RATE_RANGE.0, LEARNING_RATE_RANGE.1)
}

/// Strongly (anti-)correlated successive gradients mean momentum is amplifying a trend
/// or an oscillation, so it is cut.
pub fn adapt_momentum(momentum: f32, cosine: f64) -> f32 {
    if cosine.abs() > 0.3 {
        momentum / 1.5
    } else {
        momentum
    }
}

/// Once per epoch momentum drifts back toward its final value.
pub fn drift_momentum(momentum: f32, final_momentum: f32) -> f32 {
    0.99 * momentum + 0.01 * final_momentum
}

/// Learning-rate caps after long stretches without a new minimum of the increment ratio.
/// Masters caps the rate after 50/100/150/200/250 such epochs; the cap values are ours:
/// a geometric descent from 0.1 to the 0.001 floor.
pub const NO_IMPROVEMENT_CAPS: [(usize, f32); 5] = [(50, 0.1), (100, 0.03), (150, 0.01), (200, 0.003), (250, 0.001)];

pub fn cap_learning_rate(learning_rate: f32, epochs_without_improvement: usize) -> f32 {
    NO_IMPROVEMENT_CAPS
        .iter()
        .filter(|(after, _)| epochs_without_improvement >= *after)
        .fold(learning_rate, |rate, (_, cap)| rate.min(*cap))
}

/// Learning rate and momentum as they evolve through training.
#[derive(Clone, Debug)]
pub struct RateState {
    pub schedule: Schedule,
    pub learning_rate: f32,
    pub momentum: f32,
    final_momentum: f32,
    switch_epoch: usize,
}

impl RateState {
    pub fn new(config: &CdConfig) -> Self {
        RateState {
            schedule: config.schedule,
            learning_rate: config.learning_rate,
            momentum: config.initial_momentum,
            final_momentum: config.final_momentum,
            switch_epoch: config.momentum_switch_epoch,
        }
    }

    /// After each batch, given the cosine between its weight gradient and the previous one.
    pub fn after_batch(&mut self, cosine: Option<f64>) {
        if let (Schedule::Adaptive, Some(cosine)) = (self.schedule, cosine) {
            self.learning_rate = adapt_learning_rate(self.learning_rate, cosine);
            self.momentum = adapt_momentum(self.momentum, cosine);
        }
    }

    /// After epoch `epochs_done` (1-based count of finished epochs).
    pub fn after_epoch(&mut self, epochs_done: usize, epochs_without_improvement: usize) {
        match self.schedule {
            Schedule::Adaptive => {
                self.momentum = drift_momentum(self.momentum, self.final_momentum);
                self.learning_rate = cap_learning_rate(self.learning_rate, epochs_without_improvement);
            }
            Schedule::Fixed => {
                if epochs_done >= self.switch_epoch {
                    self.momentum = self.final_momentum;
                }
            }
        }
    }
}

/// Masters' convergence tests, fed once per epoch.
#[derive(Clone, Debug)]
pub struct Convergence {
    tolerance: f64,
    max_no_improvement: usize,
    best_ratio: f64,
    pub epochs_without_improvement: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// max|increment| / max|weight| fell below the tolerance.
    Converged,
    /// Too many epochs without a new minimum of that ratio.
    NoImprovement,
    MaxEpochs,
    /// The user stopped it.
    Cancelled,
}

impl Convergence {
    pub fn new(config: &CdConfig) -> Self {
        Convergence {
            tolerance: config.convergence_tolerance as f64,
            max_no_improvement: config.max_no_improvement,
            best_ratio: f64::INFINITY,
            epochs_without_improvement: 0,
        }
    }

    /// `increment_ratio` = max|weight increment| / max|weight| over the epoch.
    pub fn after_epoch(&mut self, increment_ratio: f64) -> Option<StopReason> {
        if increment_ratio < self.best_ratio {
            self.best_ratio = increment_ratio;
            self.epochs_without_improvement = 0;
        } else {
            self.epochs_without_improvement += 1;
        }
        if increment_ratio < self.tolerance {
            Some(StopReason::Converged)
        } else if self.epochs_without_improvement >= self.max_no_improvement {
            Some(StopReason::NoImprovement)
        } else {
            None
        }
    }
}

/// The end-of-epoch bookkeeping every trainer shares (CPU and GPU alike): the convergence
/// tests, the rate schedule, the chain length, and the epoch limit. Returns why training
/// stops, if it does.
pub fn close_epoch(
    convergence: &mut Convergence,
    rates: &mut RateState,
    chain_length: &mut ChainLength,
    epochs_done: usize,
    max_epochs: usize,
    increment_ratio: f64,
) -> Option<StopReason> {
    let stop = convergence.after_epoch(increment_ratio);
    rates.after_epoch(epochs_done, convergence.epochs_without_improvement);
    chain_length.end_epoch();
    stop.or((epochs_done >= max_epochs).then_some(StopReason::MaxEpochs))
}
