//! Training: settings, schedules, initialisation, contrastive divergence for one RBM, and
//! greedy layer-wise training of a stack. Calls only `Backend` operations.

pub mod checkpoint;
pub mod config;
pub mod contrastive_divergence;
pub mod greedy;
pub mod init;
pub mod memory;
pub mod monitor;
pub mod penalties;
pub mod schedule;
pub mod weights_update;

pub use checkpoint::CdCheckpoint;
pub use config::{CdConfig, ConfigError, Schedule};
pub use contrastive_divergence::{BatchReport, BatchStep, CdTrainer, EpochReport};
pub use greedy::{BatchEvent, GreedyEvent, GreedyTrainer, LayerBatch, StackConfig};
pub use schedule::StopReason;

#[derive(Debug)]
pub enum TrainError {
    Config(ConfigError),
    Data(String),
    /// The weights went NaN/Inf; the model was restored to the end of the previous epoch.
    NonFinite { epoch: usize },
    /// The compute device failed (e.g. a GPU lost mid-epoch): the epoch's results are void,
    /// and training can resume elsewhere from the last checkpoint.
    Device(String),
}

impl std::fmt::Display for TrainError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            TrainError::Config(e) => write!(f, "invalid setting {e}"),
            TrainError::Data(m) => write!(f, "{m}"),
            TrainError::Device(m) => write!(f, "{m}"),
            TrainError::NonFinite { epoch } => write!(
                f,
                "training diverged in epoch {epoch} (NaN or infinite weights); the model was restored to the end of epoch {}. Lower the learning rate.",
                epoch - 1
            ),
        }
    }
}

impl std::error::Error for TrainError {}
