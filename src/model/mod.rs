//! Model parameters: RBMs and the DBNs stacked from them. Saving them is `format`'s work.

pub mod dbn;
pub mod rbm;

pub use dbn::Dbn;
pub use rbm::{Rbm, VisibleUnits};
