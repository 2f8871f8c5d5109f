//! The parameters of a local-patch RBM layer: plain data, no buffers.
//!
//! - `weights`: `banks × patch_inputs × hidden_per_patch`, bank-major; bank `p`'s matrix is
//!   row-major `patch_inputs × hidden_per_patch` like `model::Rbm`'s `n_visible × n_hidden`
//!   (row = one input of the patch). One bank per position, or one shared bank when tied.
//! - `hidden_bias`: `banks × hidden_per_patch`.
//! - `visible_bias`: one per visible unit (pixel and channel), also when tied.

use super::geometry::Geometry;
use crate::backend::Activation;
use crate::model::VisibleUnits;
use crate::rng::{Purpose, RngStream};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalRbm {
    pub geometry: Geometry,
    pub visible_units: VisibleUnits,
    pub weights: Vec<f32>,
    pub hidden_bias: Vec<f32>,
    pub visible_bias: Vec<f32>,
}

impl LocalRbm {
    /// Hinton's practical guide: weights `N(0, 0.01²)` (Box–Muller on the Philox stream
    /// `(seed, step 0, InitialWeights)`), hidden biases 0, visible biases at the data's mean
    /// for Gaussian units and its logit for binary ones (`visible_means` per visible unit).
    pub fn initialise(geometry: Geometry, visible_units: VisibleUnits, visible_means: &[f32], seed: u64) -> LocalRbm {
        assert_eq!(visible_means.len(), geometry.n_visible());
        let stream = RngStream::new(seed, 0, Purpose::InitialWeights);
        let weights = (0..geometry.weight_count() as u64)
            .map(|k| {
                let u1 = stream.uniform(2 * k).max(1.0 / 16_777_216.0);
                let u2 = stream.uniform(2 * k + 1);
                0.01 * (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
            })
            .collect();
        let visible_bias = visible_means
            .iter()
            .map(|&m| match visible_units {
                VisibleUnits::Gaussian => m,
                VisibleUnits::Bernoulli => {
                    let m = m.clamp(1e-4, 1.0 - 1e-4);
                    (m / (1.0 - m)).ln()
                }
            })
            .collect();
        LocalRbm { geometry, visible_units, weights, hidden_bias: vec![0.0; geometry.hidden_bias_count()], visible_bias }
    }

    /// Bank `bank`'s `patch_inputs × hidden_per_patch` matrix.
    pub fn bank(&self, bank: usize) -> &[f32] {
        let size = self.geometry.patch_inputs() * self.geometry.hidden_per_patch;
        &self.weights[bank * size..(bank + 1) * size]
    }

    /// The bank used at `position` (0 when tied).
    pub fn bank_of(&self, position: usize) -> usize {
        if self.geometry.tied {
            0
        } else {
            position
        }
    }

    pub fn visible_activation(&self) -> Activation {
        match self.visible_units {
            VisibleUnits::Bernoulli => Activation::Sigmoid,
            VisibleUnits::Gaussian => Activation::Linear,
        }
    }

    pub fn parameter_count(&self) -> usize {
        self.weights.len() + self.hidden_bias.len() + self.visible_bias.len()
    }

    pub fn is_finite(&self) -> bool {
        self.weights.iter().chain(&self.hidden_bias).chain(&self.visible_bias).all(|x| x.is_finite())
    }

    /// Checks that the arrays match the geometry (a loaded file); the error names the field.
    pub fn check_shapes(&self) -> Result<(), String> {
        let g = &self.geometry;
        for (name, len, expected) in [
            ("weights", self.weights.len(), g.weight_count()),
            ("hidden_bias", self.hidden_bias.len(), g.hidden_bias_count()),
            ("visible_bias", self.visible_bias.len(), g.n_visible()),
        ] {
            if len != expected {
                return Err(format!("{name}: {len} values; the geometry needs {expected}"));
            }
        }
        Ok(())
    }
}
