//! Weight and sparsity penalties (Masters, ch. 3), applied to the log-likelihood gradient
//! estimate before the momentum update.

/// Smoothed mean activation of each hidden unit, the quantity the sparsity penalty steers.
/// Starts at 0.5 and follows each batch's mean activation with weights 0.95 / 0.05.
#[derive(Clone, Debug)]
pub struct SparsityEstimate {
    pub smoothed: Vec<f32>,
}

pub const SATURATION_LOW: f32 = 0.01;
pub const SATURATION_HIGH: f32 = 0.99;

impl SparsityEstimate {
    pub fn new(n_hidden: usize) -> Self {
        SparsityEstimate { smoothed: vec![0.5; n_hidden] }
    }

    /// `batch_means` holds each hidden unit's mean positive-phase probability over the batch.
    pub fn update(&mut self, batch_means: &[f32]) {
        for (q, batch_mean) in self.smoothed.iter_mut().zip(batch_means) {
            *q = 0.95 * *q + 0.05 * batch_mean;
        }
    }

    /// The penalty's derivative for each hidden unit, to be subtracted from the gradient of
    /// its bias (and, times the batch's mean input, of its weights).
    ///
    /// `penalty · (q − target)` pulls the mean activation toward the target. Masters adds
    /// anti-saturation terms for units that are nearly always off (q < 0.01) or on
    /// (q > 0.99), where the target term alone is too weak to revive them; ours grows
    /// linearly to one extra `penalty` at full saturation.
    pub fn derivative(&self, penalty: f32, target: f32) -> Vec<f32> {
        self.smoothed.iter().map(|&q| sparsity_derivative(q, penalty, target)).collect()
    }

    /// `derivative` into `out` (resized), without allocating once `out` is big enough.
    pub fn derivative_into(&self, penalty: f32, target: f32, out: &mut Vec<f32>) {
        out.clear();
        out.extend(self.smoothed.iter().map(|&q| sparsity_derivative(q, penalty, target)));
    }
}

pub fn sparsity_derivative(q: f32, penalty: f32, target: f32) -> f32 {
    let mut derivative = penalty * (q - target);
    if q < SATURATION_LOW {
        derivative += penalty * (q - SATURATION_LOW) / SATURATION_LOW;
    } else if q > SATURATION_HIGH {
        derivative += penalty * (q - SATURATION_HIGH) / (1.0 - SATURATION_HIGH);
    }
    derivative
}
