//! The complete state of a [`CdTrainer`] between epochs, so training can move between backends
//! without changing its course: the GPU trainer downloads one after each synchronised epoch, and
//! when the device is lost the CPU resumes from it with the same momentum, previous gradient,
//! sparsity estimate, persistent chains, case order, shuffle stream and sampling counter. The
//! continuation is then the run the CPU would have made from that epoch, not a restart.

use super::contrastive_divergence::{BatchBuffers, CdTrainer, Velocities};
use super::penalties::SparsityEstimate;
use super::schedule::{ChainLength, Convergence, RateState, StopReason};
use super::{CdConfig, TrainError};
use crate::model::Rbm;
use rand_chacha::ChaCha8Rng;

#[derive(Clone, Debug)]
pub struct CdCheckpoint {
    pub rbm: Rbm,
    pub weight_velocity: Vec<f32>,
    pub visible_velocity: Vec<f32>,
    pub hidden_velocity: Vec<f32>,
    /// The last batch's weight gradient (after penalties), for the next cosine; `None` at the
    /// start or after a divergence reset.
    pub previous_gradient: Option<Vec<f32>>,
    pub sparsity_smoothed: Vec<f32>,
    pub persistent_chains: Option<Vec<f32>>,
    pub rates: RateState,
    pub chain_length: ChainLength,
    pub convergence: Convergence,
    /// The case order after the last epoch's shuffle, and the shuffle stream after it.
    pub order: Vec<usize>,
    pub shuffle_rng: ChaCha8Rng,
    /// Epochs completed.
    pub epoch: usize,
    /// Batches completed: the counter of the sampling streams.
    pub step: u64,
    pub stopped: Option<StopReason>,
    /// Initialisation figures, kept for the report.
    pub init_trial_errors: Vec<f64>,
    pub init_best_trial: usize,
}

impl CdTrainer {
    /// The trainer's state between epochs. Part-way through an epoch (`mid_epoch()`) the
    /// weights have moved but the epoch's sums and snapshot are not saved, so a resume from it
    /// would not continue the same run: take checkpoints between epochs.
    pub fn checkpoint(&self) -> CdCheckpoint {
        CdCheckpoint {
            rbm: self.rbm.clone(),
            weight_velocity: self.velocity.weights.clone(),
            visible_velocity: self.velocity.visible_bias.clone(),
            hidden_velocity: self.velocity.hidden_bias.clone(),
            previous_gradient: self.previous_gradient.clone(),
            sparsity_smoothed: self.sparsity.smoothed.clone(),
            persistent_chains: self.persistent_chains.clone(),
            rates: self.rates.clone(),
            chain_length: self.chain_length.clone(),
            convergence: self.convergence.clone(),
            order: self.order.clone(),
            shuffle_rng: self.shuffle_rng.clone(),
            epoch: self.epoch,
            step: self.step,
            stopped: self.stopped,
            init_trial_errors: self.init_trial_errors.clone(),
            init_best_trial: self.init_best_trial,
        }
    }

    /// A trainer that continues exactly where `checkpoint` left off. The checkpoint is checked
    /// against `config` and itself, so a corrupt download cannot start a garbage run.
    pub fn resume(config: CdConfig, checkpoint: CdCheckpoint) -> Result<Self, TrainError> {
        let c = checkpoint;
        let (nv, nh) = (c.rbm.n_visible, c.rbm.n_hidden);
        let chains_ok = match (&c.persistent_chains, config.persistent) {
            (Some(chains), true) => chains.len() == config.n_persistent_chains * nv,
            (None, false) => true,
            _ => false,
        };
        let shapes_ok = c.weight_velocity.len() == nv * nh
            && c.visible_velocity.len() == nv
            && c.hidden_velocity.len() == nh
            && c.sparsity_smoothed.len() == nh
            && c.previous_gradient.as_ref().is_none_or(|g| g.len() == nv * nh)
            && chains_ok;
        if !shapes_ok || c.order.is_empty() {
            return Err(TrainError::Data(format!("the training checkpoint does not fit a {nv} × {nh} RBM with these settings")));
        }
        let finite = c.rbm.is_finite()
            && [&c.weight_velocity, &c.visible_velocity, &c.hidden_velocity, &c.sparsity_smoothed].iter().all(|v| v.iter().all(|x| x.is_finite()));
        if !finite {
            return Err(TrainError::NonFinite { epoch: c.epoch + 1 });
        }
        Ok(CdTrainer {
            config,
            rbm: c.rbm,
            init_trial_errors: c.init_trial_errors,
            init_best_trial: c.init_best_trial,
            velocity: Velocities { weights: c.weight_velocity, visible_bias: c.visible_velocity, hidden_bias: c.hidden_velocity },
            previous_gradient: c.previous_gradient,
            rates: c.rates,
            chain_length: c.chain_length,
            convergence: c.convergence,
            sparsity: SparsityEstimate { smoothed: c.sparsity_smoothed },
            persistent_chains: c.persistent_chains,
            order: c.order,
            shuffle_rng: c.shuffle_rng,
            epoch: c.epoch,
            step: c.step,
            stopped: c.stopped,
            buffers: BatchBuffers::default(),
            in_progress: None,
        })
    }
}
