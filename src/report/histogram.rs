//! Histograms of hidden activation probabilities, one per RBM layer: how decisive each layer's
//! units are on the data (mass near 0 and 1) or how undecided (mass near 0.5).

use crate::backend::{Activation, Backend};
use crate::data::split::spread_cases;
use crate::data::Dataset;
use crate::eval::for_each_batch;
use crate::model::Dbn;
use serde::Serialize;

/// Counts of values in `bins` equal-width bins over [0, 1]; `edges` has `bins + 1` entries.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Histogram {
    pub edges: Vec<f64>,
    pub counts: Vec<u64>,
}

impl Histogram {
    pub fn unit_interval(bins: usize) -> Histogram {
        let bins = bins.max(1);
        Histogram { edges: (0..=bins).map(|k| k as f64 / bins as f64).collect(), counts: vec![0; bins] }
    }

    /// Bin `k` holds `[k/bins, (k+1)/bins)`; the last bin also holds 1 (and values are clamped to
    /// [0, 1], since a probability outside it is only rounding).
    pub fn add(&mut self, value: f32) {
        let bins = self.counts.len();
        let bin = ((value.clamp(0.0, 1.0) as f64) * bins as f64) as usize;
        self.counts[bin.min(bins - 1)] += 1;
    }
}

/// Per layer of `dbn`, bottom up, the histogram of `p(h_j = 1 | below)` over every unit and
/// at most `max_cases` cases spread through `data`, each layer fed the probabilities of the
/// layer below (the deterministic upward pass the greedy trainer uses).
pub fn hidden_histograms(backend: &dyn Backend, dbn: &Dbn, data: &Dataset, max_cases: usize, bins: usize) -> Vec<Histogram> {
    let mut histograms: Vec<Histogram> = dbn.layers.iter().map(|_| Histogram::unit_interval(bins)).collect();
    let cases = spread_cases(data.n_cases, max_cases);
    for_each_batch(data, &cases, |visible| {
        let mut below = visible.to_vec();
        for (layer, histogram) in dbn.layers.iter().zip(&mut histograms) {
            let mut hidden = vec![0.0f32; below.len() / layer.n_visible * layer.n_hidden];
            backend.visible_to_hidden(layer.weights(), &below, &layer.hidden_bias, Activation::Sigmoid, &mut hidden);
            hidden.iter().for_each(|&p| histogram.add(p));
            below = hidden;
        }
    });
    histograms
}
