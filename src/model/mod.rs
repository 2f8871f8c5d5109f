pub mod dbn;
pub mod format;
pub mod rbm;
pub mod supervised_format;

pub use dbn::Dbn;
pub use rbm::{Rbm, VisibleUnits};
