//! The optimal linear output layer for given hidden activations, by singular value
//! decomposition: `[H 1]·[W; b] ≈ T` in least squares. Singular values below 1e-2 of the
//! largest are treated as zero, so collinear hidden units (or a unit that is constant,
//! hence collinear with the bias) get the minimum-norm solution instead of huge weights
//! that cancel.

use nalgebra::DMatrix;

/// Singular values below this fraction of the largest are dropped.
pub const SINGULAR_THRESHOLD: f64 = 1e-2;

/// Least-squares weights (`n_in × n_out`, row-major) and biases mapping `inputs`
/// (`n_cases × n_in`) to `targets` (`n_cases × n_out`). `None` if the SVD fails or the
/// inputs are all zero.
pub fn least_squares_layer(inputs: &[f32], targets: &[f32], n_in: usize, n_out: usize) -> Option<(Vec<f32>, Vec<f32>)> {
    let n_cases = inputs.len() / n_in;
    assert_eq!(targets.len(), n_cases * n_out);
    if n_cases == 0 {
        return None;
    }
    let design = DMatrix::from_fn(n_cases, n_in + 1, |r, c| if c == n_in { 1.0 } else { inputs[r * n_in + c] as f64 });
    let rhs = DMatrix::from_fn(n_cases, n_out, |r, c| targets[r * n_out + c] as f64);
    let svd = design.svd(true, true);
    let largest = svd.singular_values.iter().copied().fold(0.0f64, f64::max);
    if !(largest > 0.0 && largest.is_finite()) {
        return None;
    }
    let solution = svd.solve(&rhs, SINGULAR_THRESHOLD * largest).ok()?;
    if solution.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let weights = (0..n_in).flat_map(|i| (0..n_out).map(move |j| (i, j))).map(|(i, j)| solution[(i, j)] as f32).collect();
    let bias = (0..n_out).map(|j| solution[(n_in, j)] as f32).collect();
    Some((weights, bias))
}
