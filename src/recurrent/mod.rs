//! Recurrent nets trained online by real-time recurrent learning (Moore 2009, issue 20): the
//! CPU reference of the family.
//!
//! - `graph`: layers of tanh units joined by feed-forward edges (within a step, upwards) and
//!   recurrent edges (from the previous step, anywhere); biases; the Elman, Jordan and plain
//!   feed-forward presets; which layers the back-propagation shortcut covers;
//! - `network`: the flat parameters and the forward step;
//! - `rtrl`: Moore's RTRL: a sensitivity tensor per weight block and layer, carried forward
//!   every step, the online Euler step, the shortcut;
//! - `bptt`: back-propagation through time, exact over a stretch (RTRL's check) and truncated
//!   as the alternative trainer;
//! - `products`: the sensitivity update's GEMM calls (tiled over rayon);
//! - `tasks`: generated tasks (n-bit addition, NOT, delayed recall, Elman's letters);
//! - `train`: the online loop, its tallies and a held-out evaluation.
//!
//! docs/RECURRENT.md describes the layouts, the shortcut and the tests.

pub mod bptt;
pub mod error;
pub mod graph;
pub mod network;
pub mod products;
pub mod rtrl;
pub mod tasks;
pub mod train;

pub use bptt::{sequence_gradient, Bptt};
pub use error::RecurrentError;
pub use graph::{Block, EdgeKind, EdgeSpec, GraphSpec, Preset, Source};
pub use network::{Frame, Network};
pub use rtrl::{Rtrl, RtrlMode, StepReport};
pub use tasks::{Example, TaskSpec, TaskStream};
pub use train::{evaluate, train, Progress, Tally, Trainer, TrainerSpec};
