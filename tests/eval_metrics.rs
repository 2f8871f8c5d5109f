#![cfg(not(target_arch = "wasm32"))]
//! Per-epoch metrics against independent computations: the pseudo-log-likelihood against its
//! exact expectation, hidden unit statistics against direct formulas, reconstruction errors
//! against the model's own reconstruction error and the cross-entropy written out.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::eval::{free_energy, free_energy_f64, hidden_unit_statistics, mean_free_energy, pseudo_log_likelihood, reconstruction_errors, EvalError};
use deepbelief::model::{Rbm, VisibleUnits};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use support::fixtures::{float_dataset, random_rbm};

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `p(h_j = 1 | v)` in f64, straight from the definition.
fn hidden_probabilities(rbm: &Rbm, v: &[f32]) -> Vec<f64> {
    (0..rbm.n_hidden)
        .map(|j| sigmoid(rbm.hidden_bias[j] as f64 + (0..rbm.n_visible).map(|i| v[i] as f64 * rbm.weights[i * rbm.n_hidden + j] as f64).sum::<f64>()))
        .collect()
}

/// The complete pseudo-log-likelihood `Σ_i ln p(v_i | v_−i)` of one binary case, flipping
/// every unit in turn: the value the stochastic estimate has in expectation.
fn full_pseudo_log_likelihood(rbm: &Rbm, v: &[f32]) -> f64 {
    let energy = free_energy_f64(rbm, v);
    (0..v.len())
        .map(|i| {
            let mut flipped = v.to_vec();
            flipped[i] = 1.0 - flipped[i];
            sigmoid(free_energy_f64(rbm, &flipped) - energy).ln()
        })
        .sum()
}

#[test]
fn pseudo_log_likelihood_averages_to_its_exact_expectation() {
    let rbm = random_rbm(VisibleUnits::Bernoulli, 6, 4, 1.5, 1.5, 1);
    // Values either side of 0.5 check the binarisation: 0.7 counts as 1, 0.3 as 0.
    let raw = vec![
        1.0, 0.0, 1.0, 1.0, 0.0, 0.0, //
        0.7, 0.3, 0.0, 1.0, 1.0, 0.0, //
        0.0, 0.0, 0.0, 1.0, 0.0, 1.0,
    ];
    let binary: Vec<f32> = raw.iter().map(|&x| if x > 0.5 { 1.0 } else { 0.0 }).collect();
    let data = float_dataset(6, raw);
    let expected = binary.chunks_exact(6).map(|v| full_pseudo_log_likelihood(&rbm, v)).sum::<f64>() / 3.0;

    // One case: every seed's estimate must be 6·ln σ(F(ṽ) − F(v)) for one of the 6 flips.
    let single = data.take_first(1);
    let per_flip: Vec<f64> = (0..6)
        .map(|i| {
            let mut flipped = binary[..6].to_vec();
            flipped[i] = 1.0 - flipped[i];
            6.0 * sigmoid(free_energy_f64(&rbm, &flipped) - free_energy_f64(&rbm, &binary[..6])).ln()
        })
        .collect();
    for seed in 0..50 {
        let estimate = pseudo_log_likelihood(&CpuBackend, &rbm, &single, 1, seed).unwrap();
        assert!(per_flip.iter().any(|value| (value - estimate).abs() < 1e-5), "seed {seed}: {estimate} is none of {per_flip:?}");
    }

    let estimates: Vec<f64> = (0..4000).map(|seed| pseudo_log_likelihood(&CpuBackend, &rbm, &data, 3, seed).unwrap()).collect();
    let mean = estimates.iter().sum::<f64>() / estimates.len() as f64;
    let standard_error = (estimates.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (estimates.len() - 1) as f64 / estimates.len() as f64).sqrt();
    eprintln!("pseudo-log-likelihood: exact expectation {expected:.4}, mean of 4000 seeds {mean:.4} ± {standard_error:.4}");
    assert!((mean - expected).abs() < 4.0 * standard_error, "mean {mean} vs exact {expected} (standard error {standard_error})");
    assert!(estimates.iter().all(|&e| e <= 0.0));
}

#[test]
fn pseudo_log_likelihood_prefers_biases_that_match_the_data() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let on_probability = [0.1f32, 0.2, 0.8, 0.9, 0.05, 0.5, 0.7, 0.3];
    let values: Vec<f32> = (0..500).flat_map(|_| on_probability.map(|p| if rng.random::<f32>() < p { 1.0 } else { 0.0 })).collect();
    let data = float_dataset(8, values);
    let zero = Rbm { visible_units: VisibleUnits::Bernoulli, n_visible: 8, n_hidden: 3, weights: vec![0.0; 24], visible_bias: vec![0.0; 8], hidden_bias: vec![0.0; 3] };
    let mut matched = zero.clone();
    matched.visible_bias = data.input_means().iter().map(|&m| (m / (1.0 - m)).ln()).collect();
    let zero_score = pseudo_log_likelihood(&CpuBackend, &zero, &data, 500, 3).unwrap();
    // Averaged over 20 seeds: one seed's estimate has a standard error of about 0.3 here.
    let matched_score = (0..20).map(|seed| pseudo_log_likelihood(&CpuBackend, &matched, &data, 500, seed).unwrap()).sum::<f64>() / 20.0;
    // With no parameters every conditional is ½: exactly −n_visible·ln 2 whatever is flipped.
    assert!((zero_score + 8.0 * std::f64::consts::LN_2).abs() < 1e-6, "zero model: {zero_score}");
    // With independent units the conditionals are the marginals, so the expectation is the
    // sum of the units' mean log probabilities (negative entropies) under the data frequencies.
    let means = data.input_means();
    let entropy_bound: f64 = means.iter().map(|&m| m as f64 * (m as f64).ln() + (1.0 - m as f64) * (1.0 - m as f64).ln()).sum();
    eprintln!("pseudo-log-likelihood: zero model {zero_score:.3}, matched biases {matched_score:.3}, expected {entropy_bound:.3}");
    assert!(matched_score > zero_score + 1.0 && matched_score <= 0.0);
    assert!((matched_score - entropy_bound).abs() < 0.3, "{matched_score} vs {entropy_bound}");
}

#[test]
fn pseudo_log_likelihood_refuses_gaussian_visible_units() {
    let rbm = random_rbm(VisibleUnits::Gaussian, 3, 2, 0.5, 0.5, 4);
    let data = float_dataset(3, vec![0.1, -0.2, 0.3]);
    assert!(matches!(pseudo_log_likelihood(&CpuBackend, &rbm, &data, 1, 0), Err(EvalError::GaussianVisibleUnits { .. })));
}

#[test]
fn hidden_unit_statistics_match_direct_moments() {
    // 600 cases: three batches whose moments are merged.
    let rbm = random_rbm(VisibleUnits::Bernoulli, 5, 3, 2.0, 2.0, 5);
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let values: Vec<f32> = (0..600 * 5).map(|_| rng.random::<f32>()).collect();
    let data = float_dataset(5, values.clone());
    let stats = hidden_unit_statistics(&CpuBackend, &rbm, &data, 600);
    let activations: Vec<Vec<f64>> = values.chunks_exact(5).map(|v| hidden_probabilities(&rbm, v)).collect();
    for (j, unit) in stats.iter().enumerate() {
        let column: Vec<f64> = activations.iter().map(|a| a[j]).collect();
        let n = column.len() as f64;
        let mean = column.iter().sum::<f64>() / n;
        let variance = column.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        let skewness = column.iter().map(|x| (x - mean).powi(3)).sum::<f64>() / n / variance.powf(1.5);
        eprintln!("unit {j}: {unit:?}; direct mean {mean:.6}, sd {:.6}, skewness {skewness:.6}", variance.sqrt());
        assert!((unit.mean_activation - mean).abs() < 1e-6);
        assert!((unit.standard_deviation - variance.sqrt()).abs() < 1e-6);
        assert!((unit.skewness - skewness).abs() < 1e-4);
    }
}

#[test]
fn hidden_unit_statistics_of_a_two_valued_unit_and_a_flat_one() {
    // Unit 0 sees only input 0, which is on in one case of four: its activation takes two
    // values with frequencies ¾ and ¼, a scaled Bernoulli(¼) with skewness
    // (1 − 2p)/√(p(1 − p)) = 0.5/√(3/16) = 2/√3. Unit 1 has no weights: constant activation.
    let rbm = Rbm {
        visible_units: VisibleUnits::Bernoulli,
        n_visible: 2,
        n_hidden: 2,
        weights: vec![3.0, 0.0, 0.0, 0.0],
        visible_bias: vec![0.0, 0.0],
        hidden_bias: vec![-1.0, 0.5],
    };
    let data = float_dataset(2, vec![1.0, 0.3, 0.0, 0.9, 0.0, 0.1, 0.0, 0.5]);
    let stats = hidden_unit_statistics(&CpuBackend, &rbm, &data, 4);
    let (low, high) = (sigmoid(-1.0), sigmoid(2.0));
    assert!((stats[0].mean_activation - (0.75 * low + 0.25 * high)).abs() < 1e-6);
    assert!((stats[0].standard_deviation - (high - low) * (0.75f64 * 0.25).sqrt()).abs() < 1e-6);
    assert!((stats[0].skewness - 2.0 / 3f64.sqrt()).abs() < 1e-4, "{:?}", stats[0]);
    assert!((stats[1].mean_activation - sigmoid(0.5)).abs() < 1e-6);
    assert_eq!(stats[1].skewness, 0.0);
}

#[test]
fn reconstruction_errors_match_the_definitions() {
    let rbm = random_rbm(VisibleUnits::Bernoulli, 7, 4, 1.0, 1.0, 7);
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let values: Vec<f32> = (0..300 * 7).map(|_| rng.random::<f32>()).collect();
    let data = float_dataset(7, values.clone());
    let errors = reconstruction_errors(&CpuBackend, &rbm, &data, 300);
    let model_mse = rbm.reconstruction_error(&CpuBackend, &data, 300);
    assert!((errors.mean_squared_error - model_mse).abs() < 1e-6, "{errors:?} vs Rbm::reconstruction_error {model_mse}");
    let cross_entropy: f64 = values
        .chunks_exact(7)
        .map(|x| {
            let hidden = hidden_probabilities(&rbm, x);
            (0..7)
                .map(|i| {
                    let input = rbm.visible_bias[i] as f64 + (0..4).map(|j| hidden[j] * rbm.weights[i * 4 + j] as f64).sum::<f64>();
                    let p = sigmoid(input);
                    let x = x[i] as f64;
                    -(x * p.ln() + (1.0 - x) * (1.0 - p).ln())
                })
                .sum::<f64>()
        })
        .sum::<f64>()
        / 300.0;
    let reported = errors.cross_entropy.unwrap();
    assert!((reported - cross_entropy).abs() < 1e-5 * cross_entropy, "{reported} vs {cross_entropy}");

    let gaussian = random_rbm(VisibleUnits::Gaussian, 7, 4, 0.5, 0.5, 9);
    let gaussian_errors = reconstruction_errors(&CpuBackend, &gaussian, &data, 300);
    assert_eq!(gaussian_errors.cross_entropy, None);
    assert!((gaussian_errors.mean_squared_error - gaussian.reconstruction_error(&CpuBackend, &data, 300)).abs() < 1e-6);
}

#[test]
fn batched_free_energies_match_the_f64_reference() {
    for units in [VisibleUnits::Bernoulli, VisibleUnits::Gaussian] {
        let rbm = random_rbm(units, 30, 12, 1.0, 1.0, 10);
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let values: Vec<f32> = (0..700 * 30).map(|_| rng.random::<f32>()).collect();
        let data = float_dataset(30, values.clone());
        let batched = free_energy(&CpuBackend, &rbm, &values);
        let reference: Vec<f64> = values.chunks_exact(30).map(|v| free_energy_f64(&rbm, v)).collect();
        for (b, r) in batched.iter().zip(&reference) {
            assert!((b - r).abs() < 1e-5 * r.abs().max(1.0), "{units:?}: {b} vs {r}");
        }
        // 350 of the 700 cases, every second one.
        let mean = mean_free_energy(&CpuBackend, &rbm, &data, 350);
        let expected = reference.iter().step_by(2).sum::<f64>() / 350.0;
        assert!((mean - expected).abs() < 1e-5 * expected.abs().max(1.0), "{units:?}: mean {mean} vs {expected}");
    }
}
