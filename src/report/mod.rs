//! What training and sampling leave behind for people and other programs: image grids,
//! PNG files, DEEP.LOG-style text reports, NumPy archives of the weights.

pub mod deep_log;
pub mod image_grid;
#[cfg(not(target_arch = "wasm32"))]
pub mod npz;
#[cfg(not(target_arch = "wasm32"))]
pub mod png;
