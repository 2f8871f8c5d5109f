//! A deep belief net: a stack of RBMs where each layer's hidden units are the next layer's
//! visible units. Only the first layer may have Gaussian visible units.

use super::Rbm;
use crate::backend::{Activation, Backend};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Dbn {
    pub layers: Vec<Rbm>,
}

impl Dbn {
    /// Layer sizes from the visible layer up, e.g. `[784, 500, 500, 2000]`.
    pub fn sizes(&self) -> Vec<usize> {
        let mut sizes: Vec<usize> = self.layers.first().map(|l| vec![l.n_visible]).unwrap_or_default();
        sizes.extend(self.layers.iter().map(|l| l.n_hidden));
        sizes
    }

    pub fn top(&self) -> Option<&Rbm> {
        self.layers.last()
    }

    /// Deterministic upward pass (hidden probabilities) of `rows` cases through the first
    /// `through` layers.
    pub fn propagate_up(&self, backend: &dyn Backend, input: &[f32], through: usize) -> Vec<f32> {
        let mut current = input.to_vec();
        for layer in &self.layers[..through] {
            let rows = current.len() / layer.n_visible;
            let mut next = vec![0.0; rows * layer.n_hidden];
            backend.visible_to_hidden(layer.weights(), &current, &layer.hidden_bias, Activation::Sigmoid, &mut next);
            current = next;
        }
        current
    }

    /// Deterministic downward pass (visible expectations) from the hidden layer of layer
    /// `from` (exclusive upper index) to the data layer.
    pub fn propagate_down(&self, backend: &dyn Backend, hidden: &[f32], from: usize) -> Vec<f32> {
        let mut current = hidden.to_vec();
        for layer in self.layers[..from].iter().rev() {
            let rows = current.len() / layer.n_hidden;
            let mut next = vec![0.0; rows * layer.n_visible];
            backend.hidden_to_visible(layer.weights(), &current, &layer.visible_bias, layer.visible_activation(), &mut next);
            current = next;
        }
        current
    }
}
