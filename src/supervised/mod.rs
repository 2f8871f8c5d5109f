//! Supervised nets on top of a DBN, and fine-tuning of the complete model (Masters, *Deep
//! Belief Nets in C++ and CUDA C*, vol. 1, ch. 2 and 5): the DEEP pipeline's second and
//! third stages after greedy RBM training.
//!
//! - `network`: logistic hidden layers, linear or SoftMax outputs;
//! - `criterion`: MSE or log-likelihood plus the weight penalty, exact gradient by
//!   backprop with every product a `Backend` call;
//! - `conjugate_gradient` + `line_search`: Polak–Ribière with bracketing and Brent;
//! - `optimise`: CG or mini-batch SGD with momentum on a net, with NaN/Inf detection;
//! - `dropout`: optional dropout for SGD fine-tuning (an extension beyond DEEP);
//! - `anneal` + `least_squares`: starting weights by simulated annealing, with SVD output
//!   weights for linear outputs;
//! - `evaluation`: one-hot targets from labels, and a model's criterion and confusion
//!   matrix (`confusion`) on a data set (shared by the CLI and the page);
//! - `pipeline`: features from the DBN, the supervised stage, then optional fine-tuning of
//!   the RBM weights together with the supervised layers;
//! - `trained`: the supervised layers as trained, as the model file saves them;
//! - `full_batch` with `adaptive_step`, `rprop`, `quickprop`, `bold_driver`, `backprop`:
//!   Toman's all-sigmoid MLP training (per-weight adaptive steps with robust-training
//!   rollback) and FANN's rules (iRprop, Quickprop, batch and incremental backprop) plus the
//!   bold driver, and `levenberg_marquardt` for small nets, as optimisers of the supervised
//!   stage and of plain MLPs (docs/TOMAN.md);
//! - `toman_text`: Toman's plain-text data set format.

pub mod adaptive_step;
pub mod anneal;
pub mod backprop;
pub mod bold_driver;
pub mod config;
pub mod confusion;
pub mod conjugate_gradient;
pub mod criterion;
pub mod dropout;
pub mod evaluation;
pub mod full_batch;
pub mod held_out;
pub mod least_squares;
pub mod levenberg_marquardt;
pub mod line_search;
pub mod network;
pub mod optimise;
pub mod pipeline;
pub mod quickprop;
pub mod rprop;
pub mod toman_text;
pub mod trained;

pub use config::{Optimizer, StepRuleSettings, SupervisedConfig};
pub use criterion::Cases;
pub use network::{Layer, Network, OutputKind};
pub use pipeline::{complete_network, train_supervised, SupervisedOutcome, Stage};
pub use trained::{SavedSupervised, TargetSource};

#[derive(Debug, Clone, PartialEq)]
pub enum SupervisedError {
    Config(crate::train::ConfigError),
    Data(String),
    /// The criterion or the weights became NaN/Inf; nothing was kept from that point.
    NonFinite { stage: &'static str, iteration: usize },
}

impl std::fmt::Display for SupervisedError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            SupervisedError::Config(e) => write!(f, "invalid setting {e}"),
            SupervisedError::Data(m) => write!(f, "{m}"),
            SupervisedError::NonFinite { stage, iteration } => write!(
                f,
                "{stage} diverged at iteration {iteration} (the criterion or the weights became NaN or infinite); nothing was written. Lower the learning rate or raise the weight penalty."
            ),
        }
    }
}

impl std::error::Error for SupervisedError {}
