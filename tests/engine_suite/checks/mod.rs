//! The checks, one module per part of the engine. Each returns a one-line report of what it
//! measured, or why it failed.

pub mod ais;
pub mod autoencoder;
pub mod chains;
pub mod evaluate;
pub mod local_rbm;
pub mod mlp;
pub mod operations;
pub mod recurrent;
pub mod sparse_coding;
pub mod trainer;

use deepbelief::model::Rbm;

/// The report of a check that does not apply to this backend.
pub fn skipped(why: &str) -> Result<String, String> {
    Ok(format!("skipped: {why}"))
}

/// max |a − b| over two equally long slices.
pub fn max_gap(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((*x as f64 - *y as f64).abs()))
}

/// max |Δw| / max |w| of two RBMs' weights, with the biases' gaps measured the same way.
pub fn normwise_gap(rbm: &Rbm, reference: &Rbm) -> f64 {
    let scale = |v: &[f32]| v.iter().fold(0.0f64, |m, &x| m.max((x as f64).abs())).max(1e-30);
    let weights = max_gap(&rbm.weights, &reference.weights) / scale(&reference.weights);
    let visible = max_gap(&rbm.visible_bias, &reference.visible_bias) / scale(&reference.visible_bias);
    let hidden = max_gap(&rbm.hidden_bias, &reference.hidden_bias) / scale(&reference.hidden_bias);
    weights.max(visible).max(hidden)
}

/// Whether two values agree to `tolerance` relative to the reference (`|a − r| ≤ tol · |r|`).
pub fn close(a: f64, reference: f64, tolerance: f64) -> bool {
    (a - reference).abs() <= tolerance * reference.abs()
}
