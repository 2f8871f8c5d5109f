//! Conjugate gradient on known minima (Masters' worked quadratic, Rosenbrock), SGD and CG
//! on a small net, least-squares output weights by SVD against the normal equations, and
//! the annealing schedule.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::supervised::anneal::{anneal, random_start, centred_on_best, multiplier, range_factor, SHRINK_START};
use deepbelief::supervised::conjugate_gradient::{minimise, CgSettings, CgStop, Objective};
use deepbelief::supervised::criterion::criterion;
use deepbelief::supervised::least_squares::least_squares_layer;
use deepbelief::supervised::optimise::{optimise, Method, StopKind};
use deepbelief::supervised::dropout::DropoutRates;
use deepbelief::supervised::{Cases, Network, OutputKind, SupervisedError};

const NO_DROPOUT: DropoutRates = DropoutRates { input: 0.0, hidden: 0.0 };

struct Quadratic;
impl Objective for Quadratic {
    fn value(&mut self, x: &[f64]) -> f64 {
        x[0] * x[0] + x[1] * x[1] - 1.5 * x[0] * x[1]
    }
    fn value_and_gradient(&mut self, x: &[f64], g: &mut [f64]) -> f64 {
        g[0] = 2.0 * x[0] - 1.5 * x[1];
        g[1] = 2.0 * x[1] - 1.5 * x[0];
        self.value(x)
    }
}

struct Rosenbrock {
    evaluations: usize,
}
impl Objective for Rosenbrock {
    fn value(&mut self, x: &[f64]) -> f64 {
        self.evaluations += 1;
        (1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2)
    }
    fn value_and_gradient(&mut self, x: &[f64], g: &mut [f64]) -> f64 {
        g[0] = -2.0 * (1.0 - x[0]) - 400.0 * x[0] * (x[1] - x[0] * x[0]);
        g[1] = 200.0 * (x[1] - x[0] * x[0]);
        self.value(x)
    }
}

fn exact_line_settings() -> CgSettings {
    CgSettings { max_iterations: 500, tolerance: 0.0, line_tolerance: 1e-10, line_evaluations: 100 }
}

#[test]
fn cg_reaches_the_minimum_of_masters_quadratic_in_two_iterations() {
    let mut x = [6.0, 4.0];
    let mut values = Vec::new();
    let outcome = minimise(&mut Quadratic, &mut x, CgSettings { max_iterations: 2, ..exact_line_settings() }, &mut |_, v| {
        values.push(v);
        true
    })
    .unwrap();
    // Two conjugate directions span the plane: exact line searches finish in two steps.
    assert_eq!(outcome.iterations, 2);
    assert!(x[0].abs() < 1e-6 && x[1].abs() < 1e-6, "{x:?}");
    assert!(values[0] > values[1] && values[1].abs() < 1e-10, "{values:?}");
}

#[test]
fn cg_stops_by_tolerance_at_the_quadratic_minimum() {
    let mut x = [6.0, 4.0];
    let outcome = minimise(&mut Quadratic, &mut x, CgSettings { tolerance: 5e-5, ..CgSettings::default() }, &mut |_, _| true).unwrap();
    assert!(matches!(outcome.stop, CgStop::Converged | CgStop::NoProgress), "{outcome:?}");
    assert!(x[0].abs() < 1e-3 && x[1].abs() < 1e-3, "{x:?}");
}

#[test]
fn cg_reaches_the_rosenbrock_minimum() {
    for start in [[-1.2, 1.0], [2.0, -1.0], [0.0, 3.0]] {
        let mut x = start;
        let mut objective = Rosenbrock { evaluations: 0 };
        let outcome = minimise(&mut objective, &mut x, exact_line_settings(), &mut |_, _| true).unwrap();
        assert!((x[0] - 1.0).abs() < 1e-4 && (x[1] - 1.0).abs() < 1e-4, "from {start:?}: {x:?} after {outcome:?}");
        assert!(outcome.value < 1e-8);
    }
}

#[test]
fn least_squares_output_weights_equal_the_normal_equations() {
    // y0 = 2·x0 − x1 + 0.5, y1 = −x0 + 3·x1 − 1, plus a small deterministic wobble.
    let xs: Vec<[f32; 2]> = (0..12).map(|k| [k as f32 * 0.1, ((k * 7) % 5) as f32 * 0.2]).collect();
    let inputs: Vec<f32> = xs.iter().flatten().copied().collect();
    let targets: Vec<f32> = xs
        .iter()
        .enumerate()
        .flat_map(|(k, x)| {
            let wobble = if k % 2 == 0 { 0.01 } else { -0.01 };
            [2.0 * x[0] - x[1] + 0.5 + wobble, -x[0] + 3.0 * x[1] - 1.0 - wobble]
        })
        .collect();
    let (weights, bias) = least_squares_layer(&inputs, &targets, 2, 2).unwrap();
    // Normal equations (AᵀA) β = Aᵀy with A = [x0 x1 1], solved by Cramer's rule per output.
    for out in 0..2 {
        let mut ata = [[0.0f64; 3]; 3];
        let mut aty = [0.0f64; 3];
        for (k, x) in xs.iter().enumerate() {
            let row = [x[0] as f64, x[1] as f64, 1.0];
            for i in 0..3 {
                for j in 0..3 {
                    ata[i][j] += row[i] * row[j];
                }
                aty[i] += row[i] * targets[k * 2 + out] as f64;
            }
        }
        let det = |m: [[f64; 3]; 3]| m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
        let d = det(ata);
        let beta: Vec<f64> = (0..3)
            .map(|c| {
                let mut m = ata;
                (0..3).for_each(|r| m[r][c] = aty[r]);
                det(m) / d
            })
            .collect();
        assert!((weights[out] as f64 - beta[0]).abs() < 1e-4, "output {out}: {weights:?} vs {beta:?}");
        assert!((weights[2 + out] as f64 - beta[1]).abs() < 1e-4, "output {out}: {weights:?} vs {beta:?}");
        assert!((bias[out] as f64 - beta[2]).abs() < 1e-4, "output {out}: {bias:?} vs {beta:?}");
    }
}

#[test]
fn least_squares_with_collinear_inputs_gives_the_minimum_norm_fit() {
    // x1 = x0 exactly: any w0 + w1 = 3 fits y = 3·x0 + 1; the SVD must give the
    // minimum-norm split (1.5, 1.5), not huge cancelling weights.
    let inputs: Vec<f32> = (0..10).flat_map(|k| [k as f32 * 0.1, k as f32 * 0.1]).collect();
    let targets: Vec<f32> = (0..10).map(|k| 3.0 * k as f32 * 0.1 + 1.0).collect();
    let (weights, bias) = least_squares_layer(&inputs, &targets, 2, 1).unwrap();
    assert!((weights[0] - 1.5).abs() < 1e-3 && (weights[1] - 1.5).abs() < 1e-3, "{weights:?}");
    assert!((bias[0] - 1.0).abs() < 1e-3, "{bias:?}");
    // The fitted values are the least-squares ones (exact here).
    for k in 0..10 {
        let fit = weights[0] * inputs[2 * k] + weights[1] * inputs[2 * k + 1] + bias[0];
        assert!((fit - targets[k]).abs() < 1e-4);
    }
}

#[test]
fn annealing_follows_its_schedule() {
    let multipliers: Vec<f64> = (0..12).map(multiplier).collect();
    assert_eq!(multipliers, vec![10.0, 4.0, 0.1, 0.25, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 10.0, 4.0]);
    let iterations = 1000;
    assert!((0..SHRINK_START).all(|i| range_factor(i, iterations) == 1.0 && !centred_on_best(i)));
    assert!(centred_on_best(SHRINK_START));
    let rate = 1.0 - 0.3 / iterations as f64;
    assert!((range_factor(SHRINK_START, iterations) - rate).abs() < 1e-15);
    assert!((range_factor(999, iterations) - rate.powi(900)).abs() < 1e-12);
    assert!((1..iterations).all(|i| range_factor(i, iterations) <= range_factor(i - 1, iterations)));
}

/// XOR-like data: 4 inputs, a nonlinear target.
fn small_problem() -> (Vec<f32>, Vec<f32>) {
    let mut inputs = Vec::new();
    let mut targets = Vec::new();
    for k in 0..64u32 {
        let bits: Vec<f32> = (0..4).map(|b| ((k >> b) & 1) as f32).collect();
        let class = ((k & 1) ^ ((k >> 1) & 1)) as usize;
        inputs.extend(&bits);
        targets.extend((0..2).map(|c| if c == class { 1.0 } else { 0.0 }));
    }
    (inputs, targets)
}

#[test]
fn annealing_keeps_the_best_trial_and_it_beats_the_start() {
    let backend = CpuBackend;
    let (inputs, targets) = small_problem();
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 4, n_outputs: 2 };
    let mut net = Network::zeros(&[4, 6, 2], OutputKind::SoftMax);
    let report = anneal(&backend, &mut net, cases, 0.0, 150, true, 3);
    assert_eq!(report.trial_criteria.len(), 150);
    assert!(!report.svd_outputs, "SoftMax outputs are always annealed");
    let best = report.trial_criteria.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(best < report.start_criterion, "{report:?}");
    assert_eq!(report.best_criterion, best);
    assert!((criterion(&net, &backend, cases, 0.0) - best).abs() < 1e-9, "the net is the best trial");
}

#[test]
fn annealing_with_linear_outputs_solves_them_by_svd() {
    let backend = CpuBackend;
    let (inputs, classes) = small_problem();
    let targets: Vec<f32> = classes.chunks(2).map(|c| c[1]).collect();
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 4, n_outputs: 1 };
    let mut net = Network::zeros(&[4, 8, 1], OutputKind::Linear);
    let report = anneal(&backend, &mut net, cases, 0.0, 40, true, 5);
    assert!(report.svd_outputs);
    // The start (all zero) predicts 0; every trial's output layer is a least-squares fit,
    // which at worst predicts about the mean 0.5 (small singular values are dropped, so
    // not exactly): MSE ≈ 0.25 at most, far below 0.5.
    assert!((report.start_criterion - 0.5).abs() < 1e-9);
    assert!(report.trial_criteria.iter().all(|&c| c <= 0.251), "{:?}", report.trial_criteria);
}

#[test]
fn cg_and_sgd_train_a_small_net_and_cg_gets_lower() {
    let backend = CpuBackend;
    let (inputs, targets) = small_problem();
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 4, n_outputs: 2 };
    let mut start = Network::zeros(&[4, 6, 2], OutputKind::SoftMax);
    // From all-zero weights the gradient vanishes (a saddle): start from random ones.
    random_start(&backend, &mut start, cases, true, 1);
    anneal(&backend, &mut start, cases, 0.0, 50, true, 1);
    let before = criterion(&start, &backend, cases, 0.001);
    let mut cg_net = start.clone();
    let cg = optimise(&backend, &mut cg_net, cases, 0.001, Method::ConjugateGradient { max_iterations: 300, tolerance: 1e-7 }, None, "test", &mut |_, _| true).unwrap();
    assert!(cg.final_criterion < 0.05 && cg.final_criterion < before, "{cg:?}");
    let mut sgd_net = start.clone();
    let sgd_method = Method::Sgd { epochs: 300, tolerance: 0.0, batch_size: 8, learning_rate: 0.5, final_rate_fraction: 1.0, momentum: 0.9, seed: 2, dropout: NO_DROPOUT, shift: None };
    let sgd = optimise(&backend, &mut sgd_net, cases, 0.001, sgd_method, None, "test", &mut |_, _| true).unwrap();
    assert_eq!(sgd.stop, StopKind::MaxIterations);
    assert!(sgd.final_criterion < 0.5 * before, "{sgd:?} from {before}");
}

#[test]
fn divergence_is_an_error_naming_the_stage() {
    let backend = CpuBackend;
    let (inputs, targets) = small_problem();
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 4, n_outputs: 2 };
    let mut net = Network::zeros(&[4, 6, 2], OutputKind::Linear);
    let method = Method::Sgd { epochs: 50, tolerance: 0.0, batch_size: 64, learning_rate: 50.0, final_rate_fraction: 1.0, momentum: 0.99, seed: 2, dropout: NO_DROPOUT, shift: None };
    let error = optimise(&backend, &mut net, cases, 0.0, method, None, "the supervised stage", &mut |_, _| true).unwrap_err();
    assert!(matches!(error, SupervisedError::NonFinite { stage: "the supervised stage", .. }), "{error:?}");
    assert!(net.is_finite(), "the net keeps its last finite weights");
    assert!(error.to_string().contains("NaN"));
}
