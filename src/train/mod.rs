pub mod config;
pub mod contrastive_divergence;

pub use config::{CdConfig, ConfigError};
pub use contrastive_divergence::{CdTrainer, EpochReport, TrainError};
