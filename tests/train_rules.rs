#![cfg(not(target_arch = "wasm32"))]
//! Each schedule, convergence and penalty rule against values computed by hand.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::Dataset;
use deepbelief::model::{Rbm, VisibleUnits};
use deepbelief::train::init::{initialise_by_trials, trial_rng};
use deepbelief::train::penalties::{sparsity_derivative, SparsityEstimate};
use deepbelief::train::schedule::*;
use deepbelief::train::weights_update::{update_bias, update_weights, WeightStep};
use deepbelief::train::{CdConfig, Schedule};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1e-6)
}

#[test]
fn learning_rate_follows_the_gradient_cosine() {
    let cases = [(0.6, 0.12), (0.4, 0.11), (0.2, 0.1), (-0.2, 0.1), (-0.4, 0.1 / 1.1), (-0.6, 0.1 / 1.2)];
    for (cosine, expected) in cases {
        assert!(close(adapt_learning_rate(0.1, cosine) as f64, expected), "cos {cosine}");
    }
    assert_eq!(adapt_learning_rate(0.9, 0.6), 1.0, "clamped to the top of [0.001, 1]");
    assert_eq!(adapt_learning_rate(0.001, -0.6), 0.001, "clamped to the bottom");
}

#[test]
fn momentum_is_cut_on_strong_correlation_and_drifts_back() {
    assert!(close(adapt_momentum(0.9, 0.31) as f64, 0.6));
    assert!(close(adapt_momentum(0.9, -0.31) as f64, 0.6));
    assert_eq!(adapt_momentum(0.9, 0.3), 0.9);
    assert!(close(drift_momentum(0.1, 0.9) as f64, 0.108));
}

#[test]
fn learning_rate_caps_after_epochs_without_improvement() {
    assert_eq!(cap_learning_rate(0.5, 49), 0.5);
    assert_eq!(cap_learning_rate(0.5, 50), 0.1);
    assert_eq!(cap_learning_rate(0.05, 50), 0.05, "a cap never raises the rate");
    assert_eq!(cap_learning_rate(0.5, 120), 0.03);
    assert_eq!(cap_learning_rate(0.5, 199), 0.01);
    assert_eq!(cap_learning_rate(0.5, 260), 0.001);
}

#[test]
fn chain_length_moves_from_one_toward_four() {
    // smoothed k after n epochs = 4 − 3·0.995ⁿ, which first rounds to 2 at n = 37
    // (3·0.995³⁶ = 2.5047 → 1.4953; 3·0.995³⁷ = 2.4922 → 1.5078).
    let mut k = ChainLength::new(&CdConfig::deep());
    assert_eq!(k.current(), 1);
    for _ in 0..36 {
        k.end_epoch();
    }
    assert_eq!(k.current(), 1);
    k.end_epoch();
    assert_eq!(k.current(), 2);
    for _ in 0..2000 {
        k.end_epoch();
    }
    assert_eq!(k.current(), 4);
}

#[test]
fn adaptive_and_fixed_rate_states() {
    let mut adaptive = RateState::new(&CdConfig::deep());
    assert_eq!((adaptive.learning_rate, adaptive.momentum), (0.1, 0.1));
    adaptive.after_batch(Some(0.6));
    assert!(close(adaptive.learning_rate as f64, 0.12) && close(adaptive.momentum as f64, 0.1 / 1.5));
    adaptive.after_batch(None);
    assert!(close(adaptive.learning_rate as f64, 0.12), "no cosine on the first batch, no change");
    adaptive.after_epoch(1, 0);
    assert!(close(adaptive.momentum as f64, 0.99 * 0.1 / 1.5 + 0.009));

    let mut fixed = RateState::new(&CdConfig::hinton());
    fixed.after_batch(Some(0.9));
    assert_eq!((fixed.learning_rate, fixed.momentum), (0.1, 0.5), "the fixed schedule ignores the cosine");
    fixed.after_epoch(4, 0);
    assert_eq!(fixed.momentum, 0.5);
    fixed.after_epoch(5, 0);
    assert_eq!(fixed.momentum, 0.9);
    assert_eq!(fixed.schedule, Schedule::Fixed);
}

#[test]
fn convergence_tests_stop_training() {
    let mut converged = Convergence::new(&CdConfig::deep());
    assert_eq!(converged.after_epoch(1e-3), None);
    assert_eq!(converged.after_epoch(9e-6), Some(StopReason::Converged));

    let mut stalled = Convergence::new(&CdConfig { max_no_improvement: 3, ..CdConfig::deep() });
    assert_eq!(stalled.after_epoch(0.5), None);
    assert_eq!(stalled.after_epoch(0.6), None);
    assert_eq!(stalled.after_epoch(0.4), None, "a new minimum resets the count");
    assert_eq!(stalled.epochs_without_improvement, 0);
    assert_eq!(stalled.after_epoch(0.7), None);
    assert_eq!(stalled.after_epoch(0.8), None);
    assert_eq!(stalled.after_epoch(0.9), Some(StopReason::NoImprovement));
}

#[test]
fn sparsity_estimate_and_penalty() {
    let mut estimate = SparsityEstimate::new(2);
    // Batch means: unit 0 0.2, unit 1 0.9.
    estimate.update(&[0.2, 0.9]);
    assert!(close(estimate.smoothed[0] as f64, 0.95 * 0.5 + 0.05 * 0.2));
    assert!(close(estimate.smoothed[1] as f64, 0.95 * 0.5 + 0.05 * 0.9));
    assert!(close(sparsity_derivative(0.2, 0.001, 0.1) as f64, 0.0001));
    // Below 0.01 and above 0.99 the anti-saturation terms add to the target term.
    assert!(close(sparsity_derivative(0.005, 0.001, 0.1) as f64, 0.001 * (0.005 - 0.1) + 0.001 * (0.005 - 0.01) / 0.01));
    assert!(close(sparsity_derivative(0.995, 0.001, 0.1) as f64, 0.001 * (0.995 - 0.1) + 0.001 * (0.995 - 0.99) / 0.01));
}

#[test]
fn weight_update_applies_penalties_momentum_and_reports_figures() {
    // 2 visible × 2 hidden.
    let mut weights = vec![1.0f32, -2.0, 0.5, 0.0];
    let mut velocity = vec![0.1f32, 0.0, -0.1, 0.2];
    let mut gradient = vec![0.2f32, 0.4, -0.2, 0.0];
    let previous = vec![0.2f32, 0.4, -0.2, 0.0];
    let step = WeightStep { learning_rate: 0.5, momentum: 0.9, weight_penalty: 0.1, mean_input: &[1.0, 0.5], sparsity_derivative: &[0.02, -0.04] };
    let figures = update_weights(&mut weights, &mut velocity, &mut gradient, Some(&previous), &step);
    // g' = g − 0.1·w − x̄_i·d_j
    let expected_gradient = [0.2 - 0.1 - 0.02, 0.4 + 0.2 + 0.04, -0.2 - 0.05 - 0.01, 0.0 - 0.0 + 0.02];
    for (g, e) in gradient.iter().zip(expected_gradient) {
        assert!(close(*g as f64, e), "{gradient:?}");
    }
    let expected_velocity: Vec<f64> = [0.1, 0.0, -0.1, 0.2].iter().zip(expected_gradient).map(|(v, g)| 0.9 * v + 0.5 * g).collect();
    for k in 0..4 {
        assert!(close(velocity[k] as f64, expected_velocity[k]));
        assert!(close(weights[k] as f64, [1.0, -2.0, 0.5, 0.0][k] + expected_velocity[k]));
    }
    let dot: f64 = expected_gradient.iter().zip(&previous).map(|(a, b)| a * *b as f64).sum();
    let norm: f64 = expected_gradient.iter().map(|a| a * a).sum::<f64>();
    let previous_norm: f64 = previous.iter().map(|a| (*a as f64).powi(2)).sum();
    assert!(close(figures.cosine.unwrap(), dot / (norm * previous_norm).sqrt()));
    assert!(close(figures.gradient_rms, (norm / 4.0).sqrt()));
    let max_increment = expected_velocity.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(close(figures.max_increment as f64, max_increment));

    let mut bias = vec![1.0f32];
    let mut bias_velocity = vec![0.5f32];
    update_bias(&mut bias, &mut bias_velocity, &[0.2], &step);
    assert!(close(bias_velocity[0] as f64, 0.9 * 0.5 + 0.5 * 0.2), "biases: no weight penalty");
    assert!(close(bias[0] as f64, 1.0 + 0.55));
}

#[test]
fn batches_by_count_or_by_size() {
    assert_eq!(CdConfig::deep().cases_per_batch(10_000), 417);
    assert_eq!(CdConfig { batch_size: Some(100), ..CdConfig::deep() }.cases_per_batch(10_000), 100);
}

fn tiny_data(n_cases: usize, n_inputs: usize) -> Dataset {
    let values: Vec<f32> = (0..n_cases * n_inputs).map(|k| ((k * 37 % 11) as f32 / 10.0).min(1.0)).collect();
    Dataset::from_floats("tiny", n_inputs, values)
}

#[test]
fn initialisation_follows_masters_formulas() {
    let means = [0.25f32, 0.0, 0.75];
    let rbm = Rbm::initialise(VisibleUnits::Bernoulli, 3, 2, &means, &mut trial_rng(9, 0));
    let w = |i: usize, j: usize| rbm.weights[i * 2 + j];
    let bound = 4.0 / (6.0f32).sqrt().sqrt() / 2.0;
    assert!(rbm.weights.iter().all(|x| x.abs() <= bound), "|V·(U − 0.5)| ≤ V/2 ≤ 2/⁴√(nvis·nhid)");
    let clamped = [0.25f32, 1e-8, 0.75];
    for j in 0..2 {
        let expected = -(0..3).map(|i| clamped[i] * w(i, j)).sum::<f32>();
        assert!((rbm.hidden_bias[j] - expected).abs() < 1e-6);
    }
    for (i, &q) in clamped.iter().enumerate() {
        let logit = (q / (1.0 - q)).ln();
        let expected = logit - 0.5 * (w(i, 0) + w(i, 1));
        assert!((rbm.visible_bias[i] - expected).abs() < 1e-4, "visible bias {i}");
    }
}

#[test]
fn the_best_of_the_random_trials_wins() {
    let data = tiny_data(40, 12);
    let config = CdConfig { n_hidden: 5, init_trials: 8, ..CdConfig::deep() };
    let init = initialise_by_trials(&config, &CpuBackend, &data);
    assert_eq!(init.trial_errors.len(), 8);
    let best = init.trial_errors.iter().cloned().fold(f64::INFINITY, f64::min);
    assert_eq!(init.trial_errors[init.best_trial], best);
    assert!(init.trial_errors.iter().any(|&e| e > best), "trials must differ");
    assert_eq!(init.rbm.reconstruction_error(&CpuBackend, &data, config.init_cases), best);
    // Trial k is the same RBM whichever thread built it.
    let again = initialise_by_trials(&config, &CpuBackend, &data);
    assert_eq!(again.rbm, init.rbm);
}
