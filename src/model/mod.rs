pub mod dbn;
pub mod format;
pub mod rbm;

pub use dbn::Dbn;
pub use rbm::{Rbm, VisibleUnits};
