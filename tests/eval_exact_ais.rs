#![cfg(not(target_arch = "wasm32"))]
//! Exact partition functions against brute force, the exact gradient against finite
//! differences, and AIS against the exact log Z.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::{Activation, Backend};
use deepbelief::data::Dataset;
use deepbelief::eval::{
    ais_log_likelihood, ais_log_partition, base_rate_visible_bias, exact_gradient, exact_log_likelihood, exact_log_partition, free_energy, free_energy_f64, log_partition_by_enumerating,
    softplus, AisConfig, AisEstimate, AisSchedule, EnumeratedSide, EvalError,
};
use deepbelief::model::{Rbm, VisibleUnits};
use deepbelief::rng::{Purpose, RngStream};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Instant;
use support::fixtures::{float_dataset, random_rbm};
use support::mnist::mnist;

/// The bits of `state` as 0/1 values, unit 0 first.
fn bits(state: usize, n: usize) -> Vec<f32> {
    (0..n).map(|i| ((state >> i) & 1) as f32).collect()
}

/// log Z by summing exp(−E(v, h)) over every joint state: no closed-form sums at all.
fn joint_log_partition(rbm: &Rbm) -> f64 {
    let (nv, nh) = (rbm.n_visible, rbm.n_hidden);
    let negative_energies: Vec<f64> = (0..1usize << (nv + nh))
        .map(|joint| {
            let (v, h) = (bits(joint, nv), bits(joint >> nv, nh));
            let visible_term: f64 = v.iter().zip(&rbm.visible_bias).map(|(&v, &b)| (v * b) as f64).sum();
            let hidden_term: f64 = h.iter().zip(&rbm.hidden_bias).map(|(&h, &c)| (h * c) as f64).sum();
            let coupling_term: f64 = v.iter().zip(rbm.weights.chunks_exact(nh)).map(|(&v, row)| row.iter().zip(&h).map(|(&w, &h)| (v * w * h) as f64).sum::<f64>()).sum();
            visible_term + hidden_term + coupling_term
        })
        .collect();
    let max = negative_energies.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    max + negative_energies.iter().map(|e| (e - max).exp()).sum::<f64>().ln()
}

fn assert_relative(actual: f64, expected: f64, tolerance: f64, what: &str) {
    let error = (actual - expected).abs() / expected.abs().max(1e-300);
    assert!(error < tolerance, "{what}: {actual} vs {expected} (relative error {error:e})");
}

#[test]
fn log_partition_agrees_across_hidden_visible_and_joint_enumeration() {
    // 6×5 enumerates each state from scratch; 9×8 (chunks of 8 and 4 states) exercises the
    // Gray-code updates between states.
    for (nv, nh, seed) in [(6, 5, 1), (9, 8, 2)] {
        let rbm = random_rbm(VisibleUnits::Bernoulli, nv, nh, 1.5, 1.0, seed);
        let by_hidden = log_partition_by_enumerating(&rbm, EnumeratedSide::Hidden).unwrap();
        let by_visible = log_partition_by_enumerating(&rbm, EnumeratedSide::Visible).unwrap();
        let by_joint = joint_log_partition(&rbm);
        eprintln!("{nv}×{nh}: hidden {by_hidden:.12}, visible {by_visible:.12}, joint {by_joint:.12}");
        assert_relative(by_hidden, by_joint, 1e-9, "hidden enumeration vs joint");
        assert_relative(by_visible, by_joint, 1e-9, "visible enumeration vs joint");
        assert_eq!(exact_log_partition(&rbm).unwrap(), by_hidden, "the smaller (hidden) side is the default");
    }
}

#[test]
fn probabilities_of_all_visible_states_sum_to_one() {
    let rbm = random_rbm(VisibleUnits::Bernoulli, 8, 4, 2.0, 1.0, 3);
    let log_z = exact_log_partition(&rbm).unwrap();
    let all_states: Vec<f32> = (0..1usize << 8).flat_map(|s| bits(s, 8)).collect();
    let batched: f64 = free_energy(&CpuBackend, &rbm, &all_states).iter().map(|f| (-f - log_z).exp()).sum();
    let reference: f64 = all_states.chunks_exact(8).map(|v| (-free_energy_f64(&rbm, v) - log_z).exp()).sum();
    assert!((reference - 1.0).abs() < 1e-12, "Σ p(v) = {reference} with f64 free energies");
    assert!((batched - 1.0).abs() < 1e-5, "Σ p(v) = {batched} with backend (f32 input) free energies");
}

#[test]
fn gaussian_free_energy_matches_the_formula_by_hand() {
    let rbm = Rbm {
        visible_units: VisibleUnits::Gaussian,
        n_visible: 2,
        n_hidden: 2,
        weights: vec![0.3, -0.4, 0.7, 0.2],
        visible_bias: vec![0.25, 0.5],
        hidden_bias: vec![0.1, -0.2],
    };
    let v = [0.5f32, -1.0];
    // Hidden inputs: 0.1 + 0.5·0.3 − 0.7 = −0.45 and −0.2 − 0.5·0.4 − 0.2 = −0.6;
    // ½|v − b|² = ½(0.25² + 1.5²) = 1.15625.
    let expected = 1.15625 - (1.0 + (-0.45f64).exp()).ln() - (1.0 + (-0.6f64).exp()).ln();
    assert!((free_energy_f64(&rbm, &v) - expected).abs() < 1e-7, "f64: {} vs {expected}", free_energy_f64(&rbm, &v));
    let batched = free_energy(&CpuBackend, &rbm, &v)[0];
    assert!((batched - expected).abs() < 1e-6, "batched: {batched} vs {expected}");
}

#[test]
fn gaussian_log_partition_matches_numerical_integration() {
    // Z = ∫ exp(−F(v)) dv over the plane, by the midpoint rule on [−12, 12]² (the density
    // is below e^−40 outside for these parameters).
    let rbm = random_rbm(VisibleUnits::Gaussian, 2, 3, 0.8, 0.5, 4);
    let (lo, step, n) = (-12.0f64, 0.02f64, 1200);
    let mut integral = 0.0f64;
    for a in 0..n {
        for b in 0..n {
            let v = [(lo + (a as f64 + 0.5) * step) as f32, (lo + (b as f64 + 0.5) * step) as f32];
            integral += (-free_energy_f64(&rbm, &v)).exp();
        }
    }
    let numerical = (integral * step * step).ln();
    let exact = exact_log_partition(&rbm).unwrap();
    eprintln!("Gaussian 2×3: exact {exact:.9}, numerical {numerical:.9}");
    assert!((exact - numerical).abs() < 1e-5, "exact {exact} vs numerical {numerical}");
}

#[test]
fn log_partition_is_identical_on_one_thread_and_many() {
    let rbm = random_rbm(VisibleUnits::Bernoulli, 40, 16, 0.5, 0.5, 5);
    let many = exact_log_partition(&rbm).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let one = pool.install(|| exact_log_partition(&rbm).unwrap());
    assert_eq!(one.to_bits(), many.to_bits(), "{one} vs {many}");
}

#[test]
fn too_large_models_are_refused() {
    let rbm = random_rbm(VisibleUnits::Bernoulli, 21, 21, 0.1, 0.1, 6);
    assert!(matches!(exact_log_partition(&rbm), Err(EvalError::TooManyStates { .. })));
    let gaussian = random_rbm(VisibleUnits::Gaussian, 3, 21, 0.1, 0.1, 6);
    assert!(exact_log_partition(&gaussian).is_err(), "Gaussian visible states cannot be enumerated");
    let config = AisConfig::default();
    assert!(matches!(ais_log_partition(&CpuBackend, &gaussian, &[0.0; 3], &config), Err(EvalError::GaussianVisibleUnits { .. })));
}

fn parameter_mut(rbm: &mut Rbm, k: usize) -> &mut f32 {
    let (n_weights, n_visible) = (rbm.weights.len(), rbm.n_visible);
    if k < n_weights {
        &mut rbm.weights[k]
    } else if k < n_weights + n_visible {
        &mut rbm.visible_bias[k - n_weights]
    } else {
        &mut rbm.hidden_bias[k - n_weights - n_visible]
    }
}

/// Central differences of the exact log-likelihood with respect to each parameter.
fn check_gradient_by_finite_differences(rbm: &Rbm, data: &Dataset) {
    let gradient = exact_gradient(rbm, data).unwrap();
    let analytic: Vec<f64> = gradient.weights.iter().chain(&gradient.visible_bias).chain(&gradient.hidden_bias).cloned().collect();
    assert_eq!(analytic.len(), rbm.weights.len() + rbm.n_visible + rbm.n_hidden);
    let norm = analytic.iter().map(|g| g * g).sum::<f64>().sqrt();
    for (k, &exact) in analytic.iter().enumerate() {
        let evaluate = |offset: f32| {
            let mut shifted = rbm.clone();
            *parameter_mut(&mut shifted, k) += offset;
            (*parameter_mut(&mut shifted, k) as f64, exact_log_likelihood(&shifted, data).unwrap())
        };
        let ((x_plus, f_plus), (x_minus, f_minus)) = (evaluate(1e-3), evaluate(-1e-3));
        // Divided by the step actually taken in f32, not the nominal one.
        let numerical = (f_plus - f_minus) / (x_plus - x_minus);
        let error = (numerical - exact).abs();
        assert!(error < 1e-3 * exact.abs().max(1e-2 * norm), "parameter {k}: finite differences {numerical}, exact {exact}");
    }
}

#[test]
fn exact_gradient_matches_finite_differences_of_exact_log_likelihood() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    // 5 visible × 3 hidden enumerates the hidden side, 3 × 5 the visible side.
    for (nv, nh) in [(5, 3), (3, 5)] {
        let rbm = random_rbm(VisibleUnits::Bernoulli, nv, nh, 1.0, 0.5, 8 + nv as u64);
        let values: Vec<f32> = (0..7 * nv).map(|_| if rng.random::<f32>() < 0.5 { 1.0 } else { rng.random::<f32>() * 0.3 }).collect();
        check_gradient_by_finite_differences(&rbm, &float_dataset(nv, values));
    }
    let gaussian = random_rbm(VisibleUnits::Gaussian, 3, 4, 0.5, 0.5, 9);
    let values: Vec<f32> = (0..6 * 3).map(|_| 2.0 * rng.random::<f32>() - 1.0).collect();
    check_gradient_by_finite_differences(&gaussian, &float_dataset(3, values));
}

/// AIS on a model, compared with the exact log Z; returns the estimate and the exact value.
fn ais_against_exact(rbm: &Rbm, base_visible_bias: &[f32], config: &AisConfig) -> (AisEstimate, f64) {
    let started = Instant::now();
    let exact = exact_log_partition(rbm).unwrap();
    let exact_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let estimate = ais_log_partition(&CpuBackend, rbm, base_visible_bias, config).unwrap();
    eprintln!(
        "{}×{}: exact log Z {exact:.4} ({exact_seconds:.2} s); AIS {:.4} in [{:.4}, {:.4}], log-weight std {:.3}, {} runs × {} {:?} betas ({:.2} s)",
        rbm.n_visible,
        rbm.n_hidden,
        estimate.log_z,
        estimate.log_z_low,
        estimate.log_z_high,
        estimate.log_weights_std,
        config.runs,
        config.betas,
        config.schedule,
        started.elapsed().as_secs_f64()
    );
    assert!((estimate.log_z - exact).abs() < 0.5, "AIS {} vs exact {exact}", estimate.log_z);
    assert!(estimate.log_z_low - 0.5 <= exact && exact <= estimate.log_z_high + 0.5, "exact {exact} outside {estimate:?}");
    (estimate, exact)
}

/// AIS against the exact log Z of a small random RBM, on every engine, is the engine suite's
/// (tests/engine_suite/checks/ais.rs); here: reproducible for a seed, different for another.
#[test]
fn ais_is_reproducible_for_a_seed() {
    let rbm = random_rbm(VisibleUnits::Bernoulli, 20, 10, 1.0, 0.5, 10);
    let base = base_rate_visible_bias(&[0.5; 20]);
    let config = AisConfig { runs: 10, betas: 50, ..AisConfig::default() };
    let once = ais_log_partition(&CpuBackend, &rbm, &base, &config).unwrap();
    assert_eq!(once, ais_log_partition(&CpuBackend, &rbm, &base, &config).unwrap());
    assert_ne!(once.log_z, ais_log_partition(&CpuBackend, &rbm, &base, &AisConfig { seed: 2, ..config }).unwrap().log_z);
}

#[test]
fn paper_schedule_has_the_papers_step_sizes() {
    // Salakhutdinov & Murray (2008), section 4.1: steps of 10⁻³ on [0, 0.5], 10⁻⁴ on
    // [0.5, 0.9] and 10⁻⁵ on [0.9, 1], 14,500 in all.
    let betas = AisSchedule::Paper.betas(14_500);
    assert_eq!(betas.len(), 14_501);
    assert_eq!((betas[0], betas[14_500]), (0.0, 1.0));
    for (k, pair) in betas.windows(2).enumerate() {
        let step = if k < 500 { 1e-3 } else if k < 4_500 { 1e-4 } else { 1e-5 };
        assert!((pair[1] - pair[0] - step).abs() < 1e-12, "step {k}: {} to {}", pair[0], pair[1]);
    }
    for (schedule, steps) in [(AisSchedule::Paper, 1000), (AisSchedule::Paper, 3), (AisSchedule::Linear, 7)] {
        let betas = schedule.betas(steps);
        assert_eq!(betas.len(), steps + 1, "{schedule:?} with {steps} steps");
        assert!(betas.windows(2).all(|pair| pair[1] > pair[0]) && betas[steps] == 1.0);
    }
}

/// 784×15 RBM trained for a few epochs of CD-1 on 2000 MNIST digits, written out here with
/// backend operations so the test does not depend on the trainer.
fn mnist_rbm_trained_by_cd1(data: &Dataset, n_hidden: usize) -> Rbm {
    let nv = data.n_inputs;
    let means = data.input_means();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut rbm = Rbm {
        visible_units: VisibleUnits::Bernoulli,
        n_visible: nv,
        n_hidden,
        weights: (0..nv * n_hidden).map(|_| 0.02 * (rng.random::<f32>() - 0.5)).collect(),
        visible_bias: base_rate_visible_bias(&means),
        hidden_bias: vec![0.0; n_hidden],
    };
    let (batch, learning_rate) = (100, 0.2f32);
    let backend = CpuBackend;
    let mut step = 0u64;
    for _epoch in 0..10 {
        for first in (0..data.n_cases).step_by(batch) {
            let cases: Vec<usize> = (first..first + batch).collect();
            let mut v0 = vec![0.0; batch * nv];
            data.gather_into(&cases, &mut v0);
            let mut h0 = vec![0.0; batch * n_hidden];
            backend.visible_to_hidden(rbm.weights(), &v0, &rbm.hidden_bias, Activation::Sigmoid, &mut h0);
            let mut h0_sample = vec![0.0; h0.len()];
            backend.bernoulli(&h0, RngStream::new(11, step, Purpose::HiddenSample), &mut h0_sample);
            let mut v1 = vec![0.0; v0.len()];
            backend.hidden_to_visible(rbm.weights(), &h0_sample, &rbm.visible_bias, Activation::Sigmoid, &mut v1);
            let mut h1 = vec![0.0; h0.len()];
            backend.visible_to_hidden(rbm.weights(), &v1, &rbm.hidden_bias, Activation::Sigmoid, &mut h1);
            let rate = learning_rate / batch as f32;
            backend.accumulate_outer((nv, n_hidden), &v0, &h0, rate, &mut rbm.weights);
            backend.accumulate_outer((nv, n_hidden), &v1, &h1, -rate, &mut rbm.weights);
            for (i, b) in rbm.visible_bias.iter_mut().enumerate() {
                *b += rate * (0..batch).map(|r| v0[r * nv + i] - v1[r * nv + i]).sum::<f32>();
            }
            for (j, c) in rbm.hidden_bias.iter_mut().enumerate() {
                *c += rate * (0..batch).map(|r| h0[r * n_hidden + j] - h1[r * n_hidden + j]).sum::<f32>();
            }
            step += 1;
        }
    }
    rbm
}

#[test]
fn ais_matches_exact_log_partition_of_an_rbm_trained_on_mnist() {
    let data = mnist(2000);
    let rbm = mnist_rbm_trained_by_cd1(&data, 15);
    let largest_weight = rbm.weights.iter().fold(0.0f32, |m, w| m.max(w.abs()));
    eprintln!("trained 784×15: largest |w| {largest_weight:.3}");
    assert!(largest_weight > 0.3, "the weights should have left their initial ±0.01");

    let base = base_rate_visible_bias(&data.input_means());
    let config = AisConfig { runs: 100, betas: 1000, schedule: AisSchedule::Linear, seed: 1 };
    let (estimate, exact) = ais_against_exact(&rbm, &base, &config);

    // The log-likelihoods from both differ by exactly the log Z difference, and a model with
    // 15 hidden units must beat the base-rate model (log-likelihood Σ_i [x ln p + (1−x) ln(1−p)]).
    let exact_ll = exact_log_likelihood(&rbm, &data).unwrap();
    let ais_ll = ais_log_likelihood(&CpuBackend, &rbm, &estimate, &data, data.n_cases);
    assert!((ais_ll - exact_ll - (exact - estimate.log_z)).abs() < 1e-3, "AIS log-likelihood {ais_ll}, exact {exact_ll}");
    let base_rate_ll: f64 = {
        let mut case = vec![0.0; data.n_inputs];
        let mut total = 0.0;
        for k in 0..data.n_cases {
            data.case_into(k, &mut case);
            total += case.iter().zip(&base).map(|(&x, &b)| x as f64 * b as f64 - softplus(b as f64)).sum::<f64>();
        }
        total / data.n_cases as f64
    };
    eprintln!("mean log-likelihood: exact {exact_ll:.3}, AIS {ais_ll:.3}, base-rate model {base_rate_ll:.3}");
    assert!(exact_ll > base_rate_ll + 10.0, "trained {exact_ll} vs base rate {base_rate_ll}");
}
