//! The backprop gradient of the supervised criterion against central finite differences,
//! for both output types, with and without the weight penalty, with and without hidden
//! layers; and the criterion itself against a hand computation.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::supervised::criterion::{criterion, criterion_and_gradient, data_error, penalty_term};
use deepbelief::supervised::{Cases, Network, OutputKind};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random_net(sizes: &[usize], output: OutputKind, seed: u64) -> Network {
    let mut net = Network::zeros(sizes, output);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let params: Vec<f32> = (0..net.n_params()).map(|_| rng.random::<f32>() * 2.0 - 1.0).collect();
    net.set_params(&params);
    net
}

/// Inputs in [0, 1]; one-hot targets for SoftMax, real targets for linear outputs.
fn random_cases(n: usize, n_in: usize, n_out: usize, output: OutputKind, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let inputs = (0..n * n_in).map(|_| rng.random::<f32>()).collect();
    let targets = match output {
        OutputKind::Linear => (0..n * n_out).map(|_| rng.random::<f32>() * 2.0 - 1.0).collect(),
        OutputKind::Logistic => (0..n * n_out).map(|_| rng.random::<f32>()).collect(),
        OutputKind::SoftMax => (0..n).flat_map(|_| {
            let class = rng.random_range(0..n_out);
            (0..n_out).map(move |k| if k == class { 1.0 } else { 0.0 })
        }).collect(),
    };
    (inputs, targets)
}

fn check_gradient(sizes: &[usize], output: OutputKind, penalty: f64) {
    let backend = CpuBackend;
    let (n_in, n_out) = (sizes[0], *sizes.last().unwrap());
    let mut net = random_net(sizes, output, 7);
    let (inputs, targets) = random_cases(37, n_in, n_out, output, 11);
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: n_in, n_outputs: n_out };
    let mut gradient = vec![0.0; net.n_params()];
    let value = criterion_and_gradient(&net, &backend, cases, penalty, &mut gradient);
    assert!((value - criterion(&net, &backend, cases, penalty)).abs() < 1e-9 * value.abs().max(1.0));
    let params = net.to_params();
    let h = 1e-2f32;
    let mut worst = 0.0f64;
    for k in 0..params.len() {
        let mut p = params.clone();
        p[k] = params[k] + h;
        net.set_params(&p);
        let up = criterion(&net, &backend, cases, penalty);
        p[k] = params[k] - h;
        net.set_params(&p);
        let down = criterion(&net, &backend, cases, penalty);
        let numeric = (up - down) / (2.0 * h as f64);
        let analytic = gradient[k] as f64;
        let error = (numeric - analytic).abs() / (numeric.abs().max(analytic.abs()).max(1e-3));
        worst = worst.max(error);
        assert!(error < 2e-2, "{sizes:?} {output:?} penalty {penalty}: parameter {k}: backprop {analytic}, finite difference {numeric}");
    }
    net.set_params(&params);
    assert!(worst < 2e-2);
}

#[test]
fn softmax_gradient_matches_finite_differences() {
    check_gradient(&[5, 4, 3], OutputKind::SoftMax, 0.0);
    check_gradient(&[6, 3], OutputKind::SoftMax, 0.0);
    check_gradient(&[4, 5, 3, 4], OutputKind::SoftMax, 0.0);
}

#[test]
fn softmax_gradient_with_penalty_matches_finite_differences() {
    check_gradient(&[5, 4, 3], OutputKind::SoftMax, 0.5);
    check_gradient(&[6, 3], OutputKind::SoftMax, 2.0);
}

#[test]
fn linear_gradient_matches_finite_differences() {
    check_gradient(&[5, 4, 2], OutputKind::Linear, 0.0);
    check_gradient(&[3, 2], OutputKind::Linear, 0.0);
    check_gradient(&[4, 6, 3, 1], OutputKind::Linear, 0.0);
}

#[test]
fn linear_gradient_with_penalty_matches_finite_differences() {
    check_gradient(&[5, 4, 2], OutputKind::Linear, 0.5);
    check_gradient(&[3, 2], OutputKind::Linear, 3.0);
}

/// Toman's all-sigmoid nets: logistic outputs, half the squared error per case.
#[test]
fn logistic_gradient_matches_finite_differences() {
    check_gradient(&[5, 4, 2], OutputKind::Logistic, 0.0);
    check_gradient(&[2, 2, 1], OutputKind::Logistic, 0.0);
    check_gradient(&[6, 5, 3, 4], OutputKind::Logistic, 0.0);
    check_gradient(&[4, 3, 2], OutputKind::Logistic, 0.5);
}

#[test]
fn criterion_matches_a_hand_computation() {
    let backend = CpuBackend;
    // One input, two outputs, no hidden layer: logits = x·w + b.
    let mut net = Network::zeros(&[1, 2], OutputKind::SoftMax);
    net.set_params(&[1.0, -1.0, 0.5, 0.0]);
    let inputs = [2.0f32, 0.0];
    let targets = [1.0f32, 0.0, 0.0, 1.0];
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 1, n_outputs: 2 };
    // Case 1: logits (2.5, −2) → −ln p0; case 2: logits (0.5, 0) → −ln p1.
    let p0 = 1.0 / (1.0 + (-4.5f64).exp());
    let p1 = 1.0 / (1.0 + 0.5f64.exp());
    let expected = (-(p0.ln()) - p1.ln()) / 2.0;
    assert!((data_error(&net, &backend, cases) - expected).abs() < 1e-6);
    // Penalty: PenFac · (1 + 1) / 2 weights; biases excluded.
    assert!((penalty_term(&net, 0.3) - 0.3).abs() < 1e-12);
    assert!((criterion(&net, &backend, cases, 0.3) - expected - 0.3).abs() < 1e-6);

    net.output = OutputKind::Linear;
    // Outputs (2.5, −2) and (0.5, 0): MSE over 4 values.
    let mse = ((2.5f64 - 1.0).powi(2) + 4.0 + 0.25 + 1.0) / 4.0;
    assert!((data_error(&net, &backend, cases) - mse).abs() < 1e-6);
}

#[test]
fn softmax_survives_huge_logits_and_guards_the_log() {
    let backend = CpuBackend;
    let mut net = Network::zeros(&[1, 3], OutputKind::SoftMax);
    net.set_params(&[1000.0, -1000.0, 0.0, 0.0, 0.0, 0.0]);
    let inputs = [1.0f32];
    let outputs = net.predict(&backend, &inputs);
    assert!(outputs.iter().all(|p| p.is_finite()), "{outputs:?}");
    assert!((outputs[0] - 1.0).abs() < 1e-6);
    // Target on the class with probability e^-2000 (0 in f32): a large, finite error.
    let targets = [0.0f32, 1.0, 0.0];
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 1, n_outputs: 3 };
    let error = data_error(&net, &backend, cases);
    assert!(error.is_finite() && error > 60.0, "{error}");
}

/// With the random masks fixed (same seed each evaluation), the dropout gradient is the
/// exact gradient of the thinned net's criterion.
#[test]
fn dropout_gradient_matches_finite_differences_of_the_thinned_net() {
    use deepbelief::supervised::dropout::{dropout_criterion_and_gradient, DropoutRates};
    let backend = CpuBackend;
    let rates = DropoutRates { input: 0.2, hidden: 0.5 };
    for output in [OutputKind::SoftMax, OutputKind::Linear] {
        let sizes = [6, 5, 4, 3];
        let mut net = random_net(&sizes, output, 9);
        let (inputs, targets) = random_cases(23, 6, 3, output, 13);
        let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 6, n_outputs: 3 };
        let thinned = |net: &Network, gradient: &mut [f32]| {
            let mut rng = ChaCha8Rng::seed_from_u64(77);
            dropout_criterion_and_gradient(net, &backend, cases, 0.1, rates, &mut rng, gradient)
        };
        let mut gradient = vec![0.0; net.n_params()];
        let value = thinned(&net, &mut gradient);
        let mut scratch = vec![0.0; net.n_params()];
        assert_ne!(value, criterion(&net, &backend, cases, 0.1), "the masks change the criterion");
        let params = net.to_params();
        let h = 1e-2f32;
        for k in 0..params.len() {
            let mut p = params.clone();
            p[k] = params[k] + h;
            net.set_params(&p);
            let up = thinned(&net, &mut scratch);
            p[k] = params[k] - h;
            net.set_params(&p);
            let down = thinned(&net, &mut scratch);
            let numeric = (up - down) / (2.0 * h as f64);
            let analytic = gradient[k] as f64;
            let error = (numeric - analytic).abs() / numeric.abs().max(analytic.abs()).max(1e-3);
            assert!(error < 2e-2, "{output:?}: parameter {k}: backprop {analytic}, finite difference {numeric}");
        }
        net.set_params(&params);
        // Without dropout it is the ordinary criterion and gradient.
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let off = DropoutRates { input: 0.0, hidden: 0.0 };
        let plain = dropout_criterion_and_gradient(&net, &backend, cases, 0.1, off, &mut rng, &mut scratch);
        let mut reference = vec![0.0; net.n_params()];
        let expected = criterion_and_gradient(&net, &backend, cases, 0.1, &mut reference);
        assert!((plain - expected).abs() < 1e-9);
        assert!(scratch.iter().zip(&reference).all(|(a, b)| (a - b).abs() <= 1e-6 * b.abs().max(1.0)));
    }
}

/// A forced classifier on real-valued targets (a SYNTH-style database): the class of a case is
/// its largest target, so the criterion and gradient are those of the one-hot of that class.
#[test]
fn softmax_on_continuous_targets_scores_the_largest_target_as_the_class() {
    let backend = CpuBackend;
    let net = random_net(&[3, 4, 3], OutputKind::SoftMax, 5);
    let (inputs, _) = random_cases(40, 3, 3, OutputKind::SoftMax, 17);
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    // Negative values, and rows summing to anything: nothing like probabilities.
    let targets: Vec<f32> = (0..40 * 3).map(|_| rng.random::<f32>() * 6.0 - 3.0).collect();
    let one_hot: Vec<f32> = targets
        .chunks_exact(3)
        .flat_map(|row| {
            let class = (0..3).fold(0, |best, k| if row[k] > row[best] { k } else { best });
            (0..3).map(move |k| if k == class { 1.0 } else { 0.0 })
        })
        .collect();
    let raw = Cases { inputs: &inputs, targets: &targets, n_inputs: 3, n_outputs: 3 };
    let classes = Cases { targets: &one_hot, ..raw };
    let value = data_error(&net, &backend, raw);
    assert!(value >= 0.0, "{value}");
    assert_eq!(value, data_error(&net, &backend, classes));
    let (mut from_raw, mut from_classes) = (vec![0.0; net.n_params()], vec![0.0; net.n_params()]);
    criterion_and_gradient(&net, &backend, raw, 0.1, &mut from_raw);
    criterion_and_gradient(&net, &backend, classes, 0.1, &mut from_classes);
    assert_eq!(from_raw, from_classes);
}
