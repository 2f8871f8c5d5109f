//! Saved files (docs/MODEL_FORMAT.md): `model.json`, the versioned JSON that holds a whole
//! trained model (`model_json`), with its supervised section (`supervised`); and the stacked
//! sparse autoencoders' model file (`autoencoder`), which shares that section.
//!
//! It sits above `model`, `train` and `supervised`: it saves their parameters, settings and
//! outcomes, and none of them reads or writes a file format.

pub mod autoencoder;
pub mod local_rbm;
pub mod mlp;
pub mod model_json;
pub mod recurrent;
pub mod sparse_coding;
pub mod supervised;

pub use model_json::{from_json, stop_reason_name, to_json, to_json_checked, LayerTraining, ModelFileError, SavedDbn, FORMAT_NAME, FORMAT_VERSION, RBM_FORMAT_NAME, RBM_FORMAT_VERSION};
#[cfg(not(target_arch = "wasm32"))]
pub use model_json::{model_file_path, read_model};
