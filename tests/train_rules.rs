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

/// `CpuBackend` for everything but the fused gradient, which keeps the `Backend` default (the
/// whole matrix by `accumulate_outer`, then the blocks in order).
struct UnfusedCpu;

impl deepbelief::backend::Backend for UnfusedCpu {
    fn describe(&self) -> String {
        "CPU without the fused gradient".to_string()
    }
    fn visible_to_hidden(&self, w: deepbelief::backend::Weights, v: &[f32], b: &[f32], a: deepbelief::backend::Activation, h: &mut [f32]) {
        CpuBackend.visible_to_hidden(w, v, b, a, h)
    }
    fn hidden_to_visible(&self, w: deepbelief::backend::Weights, h: &[f32], b: &[f32], a: deepbelief::backend::Activation, v: &mut [f32]) {
        CpuBackend.hidden_to_visible(w, h, b, a, v)
    }
    fn accumulate_outer(&self, shape: (usize, usize), v: &[f32], h: &[f32], scale: f32, g: &mut [f32]) {
        CpuBackend.accumulate_outer(shape, v, h, scale, g)
    }
    fn bernoulli(&self, p: &[f32], stream: deepbelief::rng::RngStream, s: &mut [f32]) {
        CpuBackend.bernoulli(p, stream, s)
    }
}

/// Values in [-1, 1) that differ from element to element.
fn pattern(len: usize, seed: u32) -> Vec<f32> {
    (0..len as u32).map(|k| ((k.wrapping_mul(2_654_435_761) ^ seed.wrapping_mul(40_503)) >> 8) as f32 / 8_388_608.0 - 1.0).collect()
}

#[test]
fn fused_gradient_step_equals_outer_products_then_update() {
    use deepbelief::backend::{Backend, OuterProduct};
    use deepbelief::train::weights_update::update_weights_from_products;
    // 784 × 500 (the benchmark's 8 blocks of 98 rows) and shapes whose blocks and lanes do not
    // divide evenly.
    for (nv, nh, rows, chains) in [(784, 500, 100, 100), (37, 13, 5, 7), (300, 9, 16, 16), (1, 1, 1, 1)] {
        let (v0, h0) = (pattern(rows * nv, 1), pattern(rows * nh, 2));
        let (vk, hk) = (pattern(chains * nv, 3), pattern(chains * nh, 4));
        let (mean_input, derivative) = (pattern(nv, 5), pattern(nh, 6).iter().map(|d| d * 1e-3).collect::<Vec<f32>>());
        let step = WeightStep { learning_rate: 0.07, momentum: 0.6, weight_penalty: 2e-4, mean_input: &mean_input, sparsity_derivative: &derivative };
        let previous = pattern(nv * nh, 7);
        let products = [
            OuterProduct { visible: &v0, hidden: &h0, scale: 1.0 / rows as f32 },
            OuterProduct { visible: &vk, hidden: &hk, scale: -1.0 / chains as f32 },
        ];
        // Reference: the whole gradient, then `update_weights`.
        let (mut w, mut velocity, mut gradient) = (pattern(nv * nh, 8), pattern(nv * nh, 9), vec![0.0; nv * nh]);
        CpuBackend.accumulate_outer((nv, nh), &v0, &h0, products[0].scale, &mut gradient);
        CpuBackend.accumulate_outer((nv, nh), &vk, &hk, products[1].scale, &mut gradient);
        let expected = update_weights(&mut w, &mut velocity, &mut gradient, Some(&previous), &step);
        for backend in [&CpuBackend as &dyn Backend, &UnfusedCpu] {
            let (mut w2, mut velocity2, mut gradient2) = (pattern(nv * nh, 8), pattern(nv * nh, 9), vec![f32::NAN; nv * nh]);
            let figures = update_weights_from_products(backend, &products, &mut w2, &mut velocity2, &mut gradient2, Some(&previous), &step);
            let what = format!("{} at {nv}×{nh}", backend.describe());
            assert_eq!(w2, w, "{what}: weights");
            assert_eq!(velocity2, velocity, "{what}: velocities");
            assert_eq!(gradient2, gradient, "{what}: penalised gradient");
            assert_eq!((figures.cosine, figures.gradient_rms, figures.max_increment), (expected.cosine, expected.gradient_rms, expected.max_increment), "{what}: figures");
        }
    }
}

#[test]
fn weight_update_is_the_scalar_rule_element_by_element() {
    // The update runs in vector registers as wide as the CPU has (backend::wide); each element
    // must still get exactly the scalar arithmetic, and the f64 figures the same sums up to
    // their order.
    let (nv, nh) = (150, 77);
    let (mean_input, derivative) = (pattern(nv, 11), pattern(nh, 12));
    let step = WeightStep { learning_rate: 0.3, momentum: 0.9, weight_penalty: 1e-3, mean_input: &mean_input, sparsity_derivative: &derivative };
    let (mut w, mut velocity, mut gradient, previous) = (pattern(nv * nh, 13), pattern(nv * nh, 14), pattern(nv * nh, 15), pattern(nv * nh, 16));
    let (w0, v0, g0) = (w.clone(), velocity.clone(), gradient.clone());
    let figures = update_weights(&mut w, &mut velocity, &mut gradient, Some(&previous), &step);
    let (mut dot, mut norm, mut previous_norm, mut max_increment) = (0.0f64, 0.0f64, 0.0f64, 0.0f32);
    for k in 0..nv * nh {
        let (i, j) = (k / nh, k % nh);
        let g = g0[k] - (step.weight_penalty * w0[k] + mean_input[i] * derivative[j]);
        let v = step.momentum * v0[k] + step.learning_rate * g;
        assert_eq!((gradient[k], velocity[k], w[k]), (g, v, w0[k] + v), "element {k}");
        dot += g as f64 * previous[k] as f64;
        norm += g as f64 * g as f64;
        previous_norm += previous[k] as f64 * previous[k] as f64;
        max_increment = max_increment.max(v.abs());
    }
    assert_eq!(figures.max_increment, max_increment);
    assert!((figures.gradient_rms - (norm / (nv * nh) as f64).sqrt()).abs() < 1e-12);
    assert!((figures.cosine.unwrap() - dot / (norm * previous_norm).sqrt()).abs() < 1e-12);
}
