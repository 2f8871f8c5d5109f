//! The fused weight update: penalties, momentum step, and the figures the schedules need
//! (gradient cosine and RMS, largest increment), in one parallel pass over the weights.
//! Rows are split into fixed blocks and partial sums combined in block order, so the result
//! is bit-identical for any number of threads.

use rayon::prelude::*;

pub struct WeightStep<'a> {
    pub learning_rate: f32,
    pub momentum: f32,
    pub weight_penalty: f32,
    /// Batch mean of each visible unit: the sparsity penalty's weight gradient is
    /// `mean_input[i] · sparsity_derivative[j]`.
    pub mean_input: &'a [f32],
    pub sparsity_derivative: &'a [f32],
}

pub struct UpdateFigures {
    /// Cosine between this gradient and the previous one (None on the first batch).
    pub cosine: Option<f64>,
    pub gradient_rms: f64,
    pub max_increment: f32,
}

const ROWS_PER_BLOCK: usize = 16;

/// `gradient` enters as the raw log-likelihood estimate and leaves with the penalties
/// applied (the form the next batch's cosine compares against).
pub fn update_weights(weights: &mut [f32], velocity: &mut [f32], gradient: &mut [f32], previous: Option<&[f32]>, step: &WeightStep) -> UpdateFigures {
    let n_hidden = step.sparsity_derivative.len();
    let block = ROWS_PER_BLOCK * n_hidden;
    let partials: Vec<(f64, f64, f64, f32)> = weights
        .par_chunks_mut(block)
        .zip(velocity.par_chunks_mut(block))
        .zip(gradient.par_chunks_mut(block))
        .enumerate()
        .map(|(index, ((w, v), g))| {
            let first_row = index * ROWS_PER_BLOCK;
            let previous = previous.map(|p| &p[index * block..index * block + g.len()]);
            let (mut dot, mut norm, mut previous_norm, mut max_increment) = (0.0f64, 0.0f64, 0.0f64, 0.0f32);
            let rows = w.chunks_exact_mut(n_hidden).zip(v.chunks_exact_mut(n_hidden)).zip(g.chunks_exact_mut(n_hidden));
            for (row, ((w, v), g)) in rows.enumerate() {
                let mean_input = step.mean_input[first_row + row];
                for j in 0..n_hidden {
                    g[j] -= step.weight_penalty * w[j] + mean_input * step.sparsity_derivative[j];
                    v[j] = step.momentum * v[j] + step.learning_rate * g[j];
                    w[j] += v[j];
                    norm += (g[j] as f64).powi(2);
                    max_increment = max_increment.max(v[j].abs());
                }
                if let Some(p) = previous {
                    let p = &p[row * n_hidden..(row + 1) * n_hidden];
                    for j in 0..n_hidden {
                        dot += g[j] as f64 * p[j] as f64;
                        previous_norm += (p[j] as f64).powi(2);
                    }
                }
            }
            (dot, norm, previous_norm, max_increment)
        })
        .collect();
    let (dot, norm, previous_norm, max_increment) =
        partials.iter().fold((0.0, 0.0, 0.0, 0.0f32), |a, p| (a.0 + p.0, a.1 + p.1, a.2 + p.2, a.3.max(p.3)));
    let cosine = (previous.is_some() && norm > 0.0 && previous_norm > 0.0).then(|| dot / (norm * previous_norm).sqrt());
    UpdateFigures { cosine, gradient_rms: (norm / weights.len().max(1) as f64).sqrt(), max_increment }
}

/// Biases take the same momentum step without the weight penalty.
pub fn update_bias(bias: &mut [f32], velocity: &mut [f32], gradient: &[f32], step: &WeightStep) {
    for ((b, v), g) in bias.iter_mut().zip(velocity.iter_mut()).zip(gradient) {
        *v = step.momentum * *v + step.learning_rate * g;
        *b += *v;
    }
}
