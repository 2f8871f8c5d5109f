//! Local-patch ("overlapping patches") RBMs for large images, Raina, Madhavan & Ng (2009) §5,
//! and their weight-tied (convolutional) form; docs/LOCAL_RBM.md.
//!
//! - `geometry`: image, patch and stride; the per-pixel lists of covering patches;
//! - `model`: the parameters (per-position or shared filter banks);
//! - `passes`: the CPU reference up and down passes (batched products over patches, the
//!   gathering reconstruction);
//! - `train`: CD-1 with sparsity, weight decay and momentum;
//! - `stack`: layer specifications, stacking over feature maps, dense layers above.

pub mod bench;
pub mod crops;
pub mod filters;
pub mod geometry;
pub mod model;
pub mod passes;
pub mod stack;
pub mod train;

pub use geometry::{CoverLists, Geometry, MAX_LAYER_WEIGHTS};
pub use model::LocalRbm;
pub use passes::PassBuffers;
pub use stack::{LayerSpec, StackLayer};
pub use train::{cd1_gradient, default_learning_rate, visible_fan_in, Cd1Gradient, LocalCdSettings, LocalCdTrainer, LocalEpochReport, LocalVelocities};
