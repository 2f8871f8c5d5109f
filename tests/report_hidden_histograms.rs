#![cfg(not(target_arch = "wasm32"))]
//! Hidden activation histograms against a hand count on a two-layer net whose probabilities
//! are known exactly enough to place in bins.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::Dataset;
use deepbelief::model::{Dbn, Rbm, VisibleUnits};
use deepbelief::report::histogram::{hidden_histograms, Histogram};

fn rbm(n_visible: usize, n_hidden: usize, weights: Vec<f32>, hidden_bias: Vec<f32>) -> Rbm {
    Rbm { visible_units: VisibleUnits::Bernoulli, n_visible, n_hidden, weights, visible_bias: vec![0.0; n_visible], hidden_bias }
}

#[test]
fn histograms_count_every_case_and_unit_in_its_bin() {
    // Layer 1: unit 0 has bias 0 and weight 2 from input 0, so p = σ(0) = 0.5 for inputs
    // [0, ·] and σ(2) ≈ 0.881 for [1, ·]; unit 1 has bias −3 and no weights: σ(−3) ≈ 0.047.
    let first = rbm(2, 2, vec![2.0, 0.0, 0.0, 0.0], vec![0.0, -3.0]);
    // Layer 2: one unit with bias 1 and no weights: σ(1) ≈ 0.731 whatever comes in.
    let second = rbm(2, 1, vec![0.0, 0.0], vec![1.0]);
    let dbn = Dbn { layers: vec![first, second] };
    let data = Dataset::from_floats("three cases", 2, vec![0.0, 1.0, 1.0, 0.0, 1.0, 1.0]);
    let histograms = hidden_histograms(&CpuBackend, &dbn, &data, 1000, 5);
    let edges = vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0];
    // Bins [0, .2) [.2, .4) [.4, .6) [.6, .8) [.8, 1]: layer 1 has one 0.5 (case 0), two
    // 0.881 (cases 1, 2) and three 0.047; layer 2 has three 0.731.
    assert_eq!(histograms, vec![Histogram { edges: edges.clone(), counts: vec![3, 0, 1, 0, 2] }, Histogram { edges, counts: vec![0, 0, 0, 3, 0] }]);
}

#[test]
fn histograms_use_at_most_the_requested_cases_and_put_one_in_the_last_bin() {
    let saturated = rbm(1, 1, vec![0.0], vec![100.0]);
    let dbn = Dbn { layers: vec![saturated] };
    let data = Dataset::from_floats("ten cases", 1, vec![0.0; 10]);
    let histograms = hidden_histograms(&CpuBackend, &dbn, &data, 4, 2);
    assert_eq!(histograms[0].counts, vec![0, 4]);
}
