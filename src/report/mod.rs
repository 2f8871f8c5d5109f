//! What training and sampling leave behind for people and other programs: image grids,
//! PNG files, DEEP.LOG-style text reports, NumPy archives of the weights.

#[cfg(not(target_arch = "wasm32"))]
pub mod atomic;
pub mod autoencoder_log;
#[cfg(not(target_arch = "wasm32"))]
pub mod autoencoder_npz;
pub mod classification;
pub mod deep_log;
pub mod deep_log_supervised;
pub mod histogram;
pub mod image_grid;
#[cfg(not(target_arch = "wasm32"))]
pub mod npz;
#[cfg(not(target_arch = "wasm32"))]
pub mod png;
pub mod training_log;
