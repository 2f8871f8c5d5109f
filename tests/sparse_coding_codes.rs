#![cfg(not(target_arch = "wasm32"))]
//! The code step (issue 18): Raina's parallel solver and coordinate descent against exact f64
//! references — the optimum by enumerating sign patterns on small problems, and on a larger
//! one FISTA's support and signs with the stationarity condition solved exactly on them — in
//! objective and in the optimality (KKT) conditions; Raina's iterations only
//! lower the objective; a warm start at the optimum stays there; bad inputs name their field.

mod sparse_coding_support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::sparse_coding::products::check_data;
use deepbelief::sparse_coding::{encode, objective, solve_codes, Basis, CdSettings, CodeSolver, RainaSettings};
use sparse_coding_support::*;

fn tight_solvers() -> [CodeSolver; 2] {
    [CodeSolver::Raina(RainaSettings { tolerance: 1e-16, max_iterations: 100_000 }), CodeSolver::CoordinateDescent(CdSettings { tolerance: 1e-13, max_sweeps: 20_000 })]
}

fn default_solvers() -> [CodeSolver; 2] {
    [CodeSolver::raina(), CodeSolver::coordinate_descent()]
}

/// The largest objective gap and KKT violation (of β) allowed for `solver` run tight.
fn tight_limits(solver: &CodeSolver) -> (f64, f64) {
    match solver {
        CodeSolver::Raina(_) => (1e-6, 1e-3),
        CodeSolver::CoordinateDescent(_) => (1e-6, 1e-4),
    }
}

/// The largest objective gap allowed for `solver`'s default stopping rule.
fn default_gap(solver: &CodeSolver) -> f64 {
    match solver {
        CodeSolver::Raina(_) => 1e-3,
        CodeSolver::CoordinateDescent(_) => 1e-6,
    }
}

/// For every case, the solver's objective against the reference's and its KKT violation.
fn compare(basis: &Basis, data: &[f32], beta: f64, solver: &CodeSolver, reference: &dyn Fn(&[f32]) -> Vec<f64>) -> (f64, f64) {
    let (k, n) = (basis.n_inputs, basis.n_bases);
    let (codes, report) = encode(&CpuBackend, basis, data, beta, solver).unwrap();
    assert_eq!(report.cases, data.len() / k);
    let b = matrix(basis);
    let (mut worst_gap, mut worst_kkt) = (0.0f64, 0.0f64);
    for (x, a) in data.chunks(k).zip(codes.chunks(n)) {
        let exact = reference(x);
        let exact_value = case_objective(&b, x, &exact, beta);
        let ours: Vec<f64> = a.iter().map(|&v| f64::from(v)).collect();
        let value = case_objective(&b, x, &ours, beta);
        assert!(value >= exact_value * (1.0 - 1e-9), "{}: objective {value} below the optimum {exact_value}", solver.name());
        worst_gap = worst_gap.max((value - exact_value) / exact_value);
        worst_kkt = worst_kkt.max(kkt_violation(&b, x, a, beta));
    }
    (worst_gap, worst_kkt)
}

#[test]
fn both_solvers_reach_the_enumerated_optimum_of_small_problems() {
    let mut rng = rng(1);
    // Overcomplete (6 inputs, 8 bases), undercomplete, and one with two nearly equal columns.
    for (k, n, beta) in [(6, 8, 0.3), (8, 5, 0.1), (5, 7, 1.0)] {
        let mut basis = Basis::initialise(k, n, 11 + k as u64).unwrap();
        if n == 7 {
            for i in 0..k {
                basis.values[i * n + 1] = basis.values[i * n] * 0.98 + 0.01;
            }
        }
        let data = gaussian_data(&mut rng, 8, k);
        let b = matrix(&basis);
        let reference = |x: &[f32]| enumerate_optimum(&b, x, beta);
        for solver in tight_solvers() {
            let (gap, kkt) = compare(&basis, &data, beta, &solver, &reference);
            let (gap_limit, kkt_limit) = tight_limits(&solver);
            assert!(gap <= gap_limit, "{} on {k}×{n}, β {beta}: objective {gap:e} above the optimum", solver.name());
            assert!(kkt <= kkt_limit, "{} on {k}×{n}, β {beta}: KKT violation {kkt:e} of β", solver.name());
        }
        for solver in default_solvers() {
            let (gap, _) = compare(&basis, &data, beta, &solver, &reference);
            assert!(gap <= default_gap(&solver), "{} (default stopping rule) on {k}×{n}: objective {gap:e} above the optimum", solver.name());
        }
    }
}

#[test]
fn both_solvers_reach_the_fista_optimum_of_an_overcomplete_problem() {
    let mut rng = rng(2);
    let (k, n, beta) = (32, 64, 0.4);
    let basis = Basis::initialise(k, n, 5).unwrap();
    let data = gaussian_data(&mut rng, 40, k);
    let b = matrix(&basis);
    let reference = |x: &[f32]| fista_optimum(&b, x, beta, 100_000);
    for solver in tight_solvers() {
        let (gap, kkt) = compare(&basis, &data, beta, &solver, &reference);
        let (gap_limit, kkt_limit) = tight_limits(&solver);
        assert!(gap <= gap_limit, "{}: objective {gap:e} above FISTA's", solver.name());
        assert!(kkt <= kkt_limit, "{}: KKT violation {kkt:e} of β", solver.name());
    }
    for solver in default_solvers() {
        let (gap, _) = compare(&basis, &data, beta, &solver, &reference);
        assert!(gap <= default_gap(&solver), "{} (default stopping rule): objective {gap:e} above FISTA's", solver.name());
    }
}

#[test]
fn raina_iterations_only_lower_the_objective() {
    let mut rng = rng(3);
    let (k, n, beta) = (16, 40, 0.2);
    let basis = Basis::initialise(k, n, 9).unwrap();
    let data = gaussian_data(&mut rng, 30, k);
    let mut previous = objective(&CpuBackend, &basis, &data, &vec![0.0; 30 * n], beta).unwrap().total;
    // The path is deterministic, so a limit of t iterations gives the t-th iterate.
    for iterations in 1..=25 {
        let solver = CodeSolver::Raina(RainaSettings { tolerance: 1e-12, max_iterations: iterations });
        let (codes, report) = encode(&CpuBackend, &basis, &data, beta, &solver).unwrap();
        assert!(report.iterations_max <= iterations);
        let value = objective(&CpuBackend, &basis, &data, &codes, beta).unwrap().total;
        assert!(value <= previous * (1.0 + 1e-7), "iteration {iterations}: {value} above {previous}");
        previous = value;
    }
    assert!(previous < 0.9 * 0.5 * data.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>());
}

#[test]
fn a_warm_start_at_the_optimum_stops_at_once() {
    let mut rng = rng(4);
    let (k, n, beta) = (12, 20, 0.3);
    let basis = Basis::initialise(k, n, 2).unwrap();
    let data = gaussian_data(&mut rng, 10, k);
    let (optimum, _) = encode(&CpuBackend, &basis, &data, beta, &tight_solvers()[1]).unwrap();
    for solver in default_solvers() {
        let mut codes = optimum.clone();
        let before = objective(&CpuBackend, &basis, &data, &codes, beta).unwrap().total;
        let report = solve_codes(&CpuBackend, &basis, &data, beta, &solver, &mut codes).unwrap();
        let after = objective(&CpuBackend, &basis, &data, &codes, beta).unwrap().total;
        // Coordinate descent's first sweeps still move codes by their f32 rounding.
        assert!(report.iterations_max <= 3, "{}: {} iterations from the optimum", solver.name(), report.iterations_max);
        assert!(codes.iter().zip(&optimum).all(|(a, b)| (a - b).abs() <= 1e-5 * (1.0 + b.abs())), "{}: the codes moved", solver.name());
        assert!(after <= before * (1.0 + 1e-7), "{}: {before} → {after}", solver.name());
    }
}

#[test]
fn solvers_agree_with_each_other_and_on_any_thread_count() {
    let mut rng = rng(5);
    let (k, n, beta) = (24, 48, 0.25);
    let basis = Basis::initialise(k, n, 3).unwrap();
    let data = gaussian_data(&mut rng, 100, k);
    let one_thread = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    for solver in default_solvers() {
        let (codes, _) = encode(&CpuBackend, &basis, &data, beta, &solver).unwrap();
        let (alone, _) = one_thread.install(|| encode(&CpuBackend, &basis, &data, beta, &solver).unwrap());
        assert_eq!(codes, alone, "{}: the codes depend on the thread count", solver.name());
    }
    let value = |solver: &CodeSolver| objective(&CpuBackend, &basis, &data, &encode(&CpuBackend, &basis, &data, beta, solver).unwrap().0, beta).unwrap().total;
    let [raina, cd] = default_solvers().map(|s| value(&s));
    let raina_tight = value(&tight_solvers()[0]);
    assert!((raina_tight - cd).abs() <= 1e-6 * cd, "Raina run tight {raina_tight}, coordinate descent {cd}");
    assert!(raina >= cd * (1.0 - 1e-7) && raina <= cd * (1.0 + 1e-3), "Raina {raina}, coordinate descent {cd}");
}

#[test]
fn bad_inputs_name_their_field() {
    let basis = Basis::initialise(4, 6, 1).unwrap();
    let data = vec![0.5f32; 8];
    let solver = CodeSolver::coordinate_descent();
    let message = |e: deepbelief::sparse_coding::SparseCodingError| e.to_string();
    let nan_beta = message(encode(&CpuBackend, &basis, &data, f64::NAN, &solver).unwrap_err());
    assert!(nan_beta.contains("beta is NaN"), "{nan_beta}");
    assert!(message(encode(&CpuBackend, &basis, &data, 0.0, &solver).unwrap_err()).contains("beta is 0"));
    let width = message(encode(&CpuBackend, &basis, &data[..7], 0.1, &solver).unwrap_err());
    assert!(width.contains("data") && width.contains("7 values") && width.contains("n_inputs = 4"), "{width}");
    let mut bad = data.clone();
    bad[6] = f32::INFINITY;
    let non_finite = message(encode(&CpuBackend, &basis, &bad, 0.1, &solver).unwrap_err());
    assert!(non_finite.contains("data[case 1, input 2] is inf"), "{non_finite}");
    let zero_bases = message(Basis::initialise(4, 0, 1).unwrap_err());
    assert!(zero_bases.contains("n_bases"), "{zero_bases}");
    let empty = Basis { n_inputs: 4, n_bases: 0, values: vec![] };
    assert!(message(check_data(&empty, &data).unwrap_err()).contains("n_bases"));
    let short_basis = Basis { n_inputs: 4, n_bases: 6, values: vec![0.1; 23] };
    let short = message(encode(&CpuBackend, &short_basis, &data, 0.1, &solver).unwrap_err());
    assert!(short.contains("basis") && short.contains("23 values"), "{short}");
    let mut codes = vec![0.0f32; 11];
    let codes_error = message(solve_codes(&CpuBackend, &basis, &data, 0.1, &solver, &mut codes).unwrap_err());
    assert!(codes_error.contains("codes") && codes_error.contains("2 × 6 = 12"), "{codes_error}");
    let bad_tolerance = CodeSolver::Raina(RainaSettings { tolerance: -1.0, max_iterations: 10 });
    assert!(message(encode(&CpuBackend, &basis, &data, 0.1, &bad_tolerance).unwrap_err()).contains("tolerance is -1"));
}
