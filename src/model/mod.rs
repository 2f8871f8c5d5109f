pub mod format;
pub mod rbm;

pub use rbm::Rbm;
