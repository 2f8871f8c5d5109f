#![cfg(not(target_arch = "wasm32"))]
//! The basis step and the fit (issue 18): the basis step never leaves a column of norm above 1
//! and lowers `½‖X − BA‖²`, under both step rules, from bases inside and outside the ball;
//! alternating code and basis steps lowers the measured objective at every step; full-batch
//! fitting lowers it at every step on data drawn from a known sparse dictionary and recovers
//! that dictionary (mean best |cos| above 0.9); mini-batch passes lower the whole set's
//! objective at every step too, and its records agree with the measured objective; β from a
//! target sparsity lands within its tolerance; the forgetting statistics weigh the batches as
//! scikit-learn's factors say.

mod sparse_coding_support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::sparse_coding::basis::project_columns;
use deepbelief::sparse_coding::basis_step::{descend, BasisStatistics};
use deepbelief::sparse_coding::{basis_step, beta_for_sparsity, encode, fit, forgetting_factor, objective, solve_codes, Basis, BasisStepSettings, CodeSolver, FitSettings, SparsitySettings, StatisticsRule, StepRule};
use sparse_coding_support::*;

fn largest_norm(basis: &Basis) -> f64 {
    basis.column_norms().into_iter().fold(0.0, f64::max)
}

#[test]
fn projection_leaves_no_column_above_norm_one() {
    let mut rng = rng(10);
    let (k, n) = (17, 9);
    let mut values: Vec<f32> = (0..k * n).map(|_| (3.0 * normal(&mut rng)) as f32).collect();
    // Column 0 inside the ball, column 1 exactly on it: both kept as they are.
    for i in 0..k {
        values[i * n] *= 0.01;
        values[i * n + 1] = if i == 0 { 1.0 } else { 0.0 };
    }
    let before = values.clone();
    let scaled = project_columns(&mut values, n);
    assert_eq!(scaled, n - 2);
    let basis = Basis::from_values(k, n, values).unwrap();
    let norms = basis.column_norms();
    assert!(norms.iter().all(|&norm| norm <= 1.0), "{norms:?}");
    assert!(norms[2..].iter().all(|&norm| norm > 1.0 - 1e-6), "projected columns have norm 1: {norms:?}");
    assert_eq!(basis.column(0), before.iter().step_by(n).copied().collect::<Vec<f32>>());
    // Directions are kept.
    for j in 2..n {
        let cos: f64 = (0..k).map(|i| f64::from(before[i * n + j]) * f64::from(basis.values[i * n + j])).sum::<f64>() / norms[j] / (0..k).map(|i| f64::from(before[i * n + j]).powi(2)).sum::<f64>().sqrt();
        assert!(cos > 1.0 - 1e-6, "column {j}: cos {cos}");
    }
}

#[test]
fn the_basis_step_keeps_norms_at_most_one_and_lowers_the_reconstruction_error() {
    let mut rng = rng(11);
    let (k, n, rows, beta) = (20, 30, 300, 0.2);
    let (_, data) = sparse_dataset(&mut rng, k, n, rows, 3, 0.05);
    for rule in [StepRule::ColumnMajoriser, StepRule::Lipschitz] {
        for seed in [1, 2] {
            let mut basis = Basis::initialise(k, n, seed).unwrap();
            // Seed 2 starts with short columns, inside the ball, so the constraint is not active.
            if seed == 2 {
                basis.values.iter_mut().for_each(|v| *v *= 0.3);
            }
            let (codes, _) = encode(&CpuBackend, &basis, &data, beta, &CodeSolver::coordinate_descent()).unwrap();
            let before = objective(&CpuBackend, &basis, &data, &codes, beta).unwrap();
            let settings = BasisStepSettings { rule, tolerance: 1e-9, max_iterations: 200 };
            let report = basis_step(&CpuBackend, &mut basis, &data, &codes, &settings).unwrap();
            let after = objective(&CpuBackend, &basis, &data, &codes, beta).unwrap();
            assert!(largest_norm(&basis) <= 1.0, "{rule:?}, seed {seed}: a column of norm {}", largest_norm(&basis));
            assert!((report.reconstruction_before - before.reconstruction).abs() <= 1e-9 * before.reconstruction);
            assert!((report.reconstruction_after - after.reconstruction).abs() <= 1e-9 * after.reconstruction);
            assert!(after.reconstruction < 0.9 * before.reconstruction, "{rule:?}, seed {seed}: {} → {}", before.reconstruction, after.reconstruction);
            // A second step from there lowers it no further than its tolerance allows.
            let again = basis_step(&CpuBackend, &mut basis, &data, &codes, &settings).unwrap();
            assert!(again.reconstruction_after <= again.reconstruction_before * (1.0 + 1e-6));
            assert!(largest_norm(&basis) <= 1.0);
        }
    }
}

#[test]
fn the_basis_step_reaches_the_constrained_optimum_of_a_tiny_problem() {
    // One basis vector: the optimum of ½‖X − b aᵀ‖² over ‖b‖ ≤ 1 is the projection of Xᵀa/‖a‖².
    let (k, rows) = (3, 4);
    let data: Vec<f32> = vec![1.0, 2.0, 0.5, 2.0, 4.1, 1.0, -1.0, -2.0, -0.4, 0.5, 1.0, 0.2];
    let codes: Vec<f32> = vec![1.0, 2.0, -1.0, 0.5];
    let norm2: f64 = codes.iter().map(|&a| f64::from(a).powi(2)).sum();
    let unconstrained: Vec<f64> = (0..k).map(|i| (0..rows).map(|r| f64::from(data[r * k + i]) * f64::from(codes[r])).sum::<f64>() / norm2).collect();
    let length = unconstrained.iter().map(|v| v * v).sum::<f64>().sqrt();
    assert!(length > 1.0, "the constraint is active");
    for rule in [StepRule::ColumnMajoriser, StepRule::Lipschitz] {
        let mut basis = Basis::from_values(k, 1, vec![0.0, 0.0, 1.0]).unwrap();
        basis_step(&CpuBackend, &mut basis, &data, &codes, &BasisStepSettings { rule, tolerance: 1e-12, max_iterations: 1000 }).unwrap();
        for i in 0..k {
            assert!((f64::from(basis.values[i]) - unconstrained[i] / length).abs() < 1e-5, "{rule:?}: {:?} against {unconstrained:?}/{length}", basis.values);
        }
    }
}

#[test]
fn alternating_code_and_basis_steps_lower_the_measured_objective_at_every_step() {
    let mut rng = rng(15);
    let (k, n, rows, beta) = (12, 20, 400, 0.15);
    let (_, data) = sparse_dataset(&mut rng, k, n, rows, 2, 0.05);
    for solver in [CodeSolver::coordinate_descent(), CodeSolver::raina()] {
        let mut basis = Basis::initialise(k, n, 8).unwrap();
        let mut codes = vec![0.0f32; rows * n];
        let mut previous = objective(&CpuBackend, &basis, &data, &codes, beta).unwrap().total;
        for step in 0..20 {
            deepbelief::sparse_coding::solve_codes(&CpuBackend, &basis, &data, beta, &solver, &mut codes).unwrap();
            let coded = objective(&CpuBackend, &basis, &data, &codes, beta).unwrap().total;
            basis_step(&CpuBackend, &mut basis, &data, &codes, &BasisStepSettings::default()).unwrap();
            let fitted = objective(&CpuBackend, &basis, &data, &codes, beta).unwrap().total;
            assert!(coded <= previous * (1.0 + 1e-7) && fitted <= coded * (1.0 + 1e-7), "{} step {step}: {previous} → {coded} → {fitted}", solver.name());
            previous = fitted;
        }
    }
}

#[test]
fn full_batch_fitting_lowers_the_objective_at_every_step_and_recovers_the_dictionary() {
    let mut rng = rng(12);
    let (k, n, rows, beta) = (16, 16, 1500, 0.1);
    let (truth, data) = sparse_dataset(&mut rng, k, n, rows, 3, 0.02);
    for solver in [CodeSolver::coordinate_descent(), CodeSolver::raina()] {
        let mut basis = Basis::initialise(k, n, 7).unwrap();
        let initial_recovery = recovery(&truth, &basis);
        let mut codes = vec![0.0f32; rows * n];
        let settings = FitSettings { beta, solver, basis_step: BasisStepSettings::default(), batch_size: rows, passes: 40, track_whole_set: true, statistics: StatisticsRule::WholeSet };
        let mut previous = 0.5 * data.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>();
        // The records come from S and T: within ~1e-6 of the measured objective.
        let slack = |value: f64| value * (1.0 + 1e-5);
        let report = fit(&CpuBackend, &mut basis, &data, &mut codes, &settings, &mut |record| {
            assert!(record.objective_after_codes <= slack(previous), "{} pass {}: the code step raised the objective {previous} → {}", solver.name(), record.pass, record.objective_after_codes);
            assert!(record.objective_after_basis <= slack(record.objective_after_codes), "{} pass {}: the basis step raised it {} → {}", solver.name(), record.pass, record.objective_after_codes, record.objective_after_basis);
            assert!((record.codes.objective - record.objective_after_codes).abs() <= 1e-5 * record.objective_after_codes, "the whole batch is the whole set: {record:?}");
            previous = record.objective_after_basis;
            true
        })
        .unwrap();
        assert_eq!(report.batches.len(), 40);
        assert_eq!(report.passes.len(), 41);
        let whole: Vec<f64> = report.passes.iter().map(|p| p.objective.total).collect();
        assert!(whole.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-6)), "{}: {whole:?}", solver.name());
        let measured = objective(&CpuBackend, &basis, &data, &codes, beta).unwrap();
        assert_eq!(measured.total, *whole.last().unwrap());
        let recorded = report.batches.last().unwrap().objective_after_basis;
        assert!((measured.total - recorded).abs() <= 1e-5 * measured.total, "measured {}, recorded {recorded}", measured.total);
        assert!(largest_norm(&basis) <= 1.0);
        let learnt = recovery(&truth, &basis);
        assert!(learnt > 0.9, "{}: mean best |cos| {learnt} (from {initial_recovery} at the start)", solver.name());
    }
}

#[test]
fn mini_batch_passes_lower_the_whole_objective() {
    let mut rng = rng(13);
    let (k, n, rows, beta) = (16, 24, 1000, 0.1);
    let (_, data) = sparse_dataset(&mut rng, k, n, rows, 3, 0.02);
    let mut basis = Basis::initialise(k, n, 3).unwrap();
    let mut codes = vec![0.0f32; rows * n];
    let settings = FitSettings { beta, solver: CodeSolver::coordinate_descent(), basis_step: BasisStepSettings::default(), batch_size: 300, passes: 3, track_whole_set: true, statistics: StatisticsRule::WholeSet };
    let mut seen = Vec::new();
    let report = fit(&CpuBackend, &mut basis, &data, &mut codes, &settings, &mut |record| {
        seen.push((record.pass, record.batch, record.first_case, record.cases));
        true
    })
    .unwrap();
    let expected: Vec<(usize, usize, usize, usize)> = (1..=3).flat_map(|pass| [(pass, 0, 0, 300), (pass, 1, 300, 300), (pass, 2, 600, 300), (pass, 3, 900, 100)]).collect();
    assert_eq!(seen, expected);
    let whole: Vec<f64> = report.passes.iter().map(|p| p.objective.total).collect();
    assert!(whole[1] < 0.5 * whole[0] && whole.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-6)), "{whole:?}");
    // Every step lowers the whole set's objective, and the records agree with the measured one.
    let mut previous = whole[0];
    for record in &report.batches {
        assert!(record.objective_after_codes <= previous * (1.0 + 1e-5) && record.objective_after_basis <= record.objective_after_codes * (1.0 + 1e-5), "{record:?} after {previous}");
        previous = record.objective_after_basis;
        if record.batch == 3 {
            let measured = whole[record.pass];
            assert!((record.objective_after_basis - measured).abs() <= 1e-5 * measured, "pass {}: recorded {}, measured {measured}", record.pass, record.objective_after_basis);
        }
    }
    assert!(largest_norm(&basis) <= 1.0);
    // Cancelling after the second batch stops there.
    let mut count = 0;
    let report = fit(&CpuBackend, &mut basis, &data, &mut codes, &settings, &mut |_| {
        count += 1;
        count < 2
    })
    .unwrap();
    assert!(report.cancelled && report.batches.len() == 2);
}

#[test]
fn forgetting_weighs_the_batches_as_scikit_learn_does() {
    // scikit-learn's `_update_inner_stats`: (θ + 1 − η)/(θ + 1), θ = (t + 1)·η while t < η − 1,
    // then η² + t + 1 − η.
    assert_eq!(forgetting_factor(0, 1000), 1.0 / 1001.0);
    assert_eq!(forgetting_factor(1, 1000), 1001.0 / 2001.0);
    let theta = 4.0 * 4.0 + 7.0 + 1.0 - 4.0;
    assert_eq!(forgetting_factor(7, 4), (theta + 1.0 - 4.0) / (theta + 1.0));
    // Raina's Table 4 pass (five batches of 1,000): the batches weigh 0.2, 0.4, …, 1 at its end.
    let weight = |j: usize, last: usize, eta: usize| -> f64 { (j + 1..=last).map(|t| forgetting_factor(t, eta)).product() };
    for j in 0..5 {
        assert!((weight(j, 4, 1000) - (j + 1) as f64 / 5.0).abs() < 1e-3, "batch {j}: {}", weight(j, 4, 1000));
    }
    // The fit's basis steps minimise the weighted statistics of every batch's codes, built here
    // from the weights directly (in f64) rather than by the fit's decay.
    let mut rng = rng(15);
    let (k, n, rows, batch, beta) = (12, 20, 450, 150, 0.1);
    let (_, data) = sparse_dataset(&mut rng, k, n, rows, 3, 0.02);
    let initial = Basis::initialise(k, n, 5).unwrap();
    let solver = CodeSolver::coordinate_descent();
    let settings = FitSettings { beta, solver, basis_step: BasisStepSettings::default(), batch_size: batch, passes: 1, track_whole_set: false, statistics: StatisticsRule::Forgetting };
    let (mut fitted, mut codes) = (initial.clone(), vec![0.0f32; rows * n]);
    fit(&CpuBackend, &mut fitted, &data, &mut codes, &settings, &mut |_| true).unwrap();
    let mut basis = initial;
    let mut by_hand = vec![0.0f32; rows * n];
    for b in 0..rows / batch {
        let (x, a) = (&data[b * batch * k..(b + 1) * batch * k], &mut by_hand[b * batch * n..(b + 1) * batch * n]);
        solve_codes(&CpuBackend, &basis, x, beta, &solver, a).unwrap();
        let (mut s, mut t, mut half) = (vec![0.0f64; n * n], vec![0.0f64; k * n], 0.0f64);
        for j in 0..=b {
            let w = weight(j, b, batch);
            for case in j * batch..(j + 1) * batch {
                let (x, a) = (&data[case * k..(case + 1) * k], &by_hand[case * n..(case + 1) * n]);
                for p in 0..n {
                    for q in 0..n {
                        s[p * n + q] += w * f64::from(a[p]) * f64::from(a[q]);
                    }
                    for i in 0..k {
                        t[i * n + p] += w * f64::from(x[i]) * f64::from(a[p]);
                    }
                }
                half += w * 0.5 * x.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>();
            }
        }
        let statistics = BasisStatistics { n_inputs: k, n_bases: n, s: s.iter().map(|&v| v as f32).collect(), t: t.iter().map(|&v| v as f32).collect(), half_data_norm2: half };
        descend(&CpuBackend, &mut basis, &statistics, &settings.basis_step);
    }
    // f32 statistics against f64 ones: the descents stop a little apart. Equal weights (the
    // whole-set rule) land far further away.
    let gap = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
    let largest = gap(&basis.values, &fitted.values);
    assert!(largest <= 1e-3, "the fit's basis and the one from the weights differ by up to {largest}");
    assert!(gap(&by_hand, &codes) <= 1e-3, "codes differ by up to {}", gap(&by_hand, &codes));
    let (mut whole_set, mut whole_codes) = (Basis::initialise(k, n, 5).unwrap(), vec![0.0f32; rows * n]);
    fit(&CpuBackend, &mut whole_set, &data, &mut whole_codes, &FitSettings { statistics: StatisticsRule::WholeSet, ..settings }, &mut |_| true).unwrap();
    assert!(gap(&basis.values, &whole_set.values) > 1e-2, "the whole-set rule's basis is as close ({})", gap(&basis.values, &whole_set.values));
}

#[test]
fn forgetting_first_pass_takes_the_whole_set_from_the_second_pass() {
    let mut rng = rng(16);
    let (k, n, rows, beta) = (16, 24, 900, 0.1);
    let (_, data) = sparse_dataset(&mut rng, k, n, rows, 3, 0.02);
    let mut basis = Basis::initialise(k, n, 3).unwrap();
    let mut codes = vec![0.0f32; rows * n];
    let settings = FitSettings { beta, solver: CodeSolver::coordinate_descent(), basis_step: BasisStepSettings::default(), batch_size: 300, passes: 3, track_whole_set: true, statistics: StatisticsRule::ForgettingFirstPass };
    let report = fit(&CpuBackend, &mut basis, &data, &mut codes, &settings, &mut |_| true).unwrap();
    let whole: Vec<f64> = report.passes.iter().map(|p| p.objective.total).collect();
    // From the second pass the records are the whole set's: every step lowers it, and each
    // pass's last record is the measured objective.
    let mut previous = whole[1];
    for record in report.batches.iter().filter(|r| r.pass > 1) {
        assert!(record.objective_after_codes <= previous * (1.0 + 1e-5) && record.objective_after_basis <= record.objective_after_codes * (1.0 + 1e-5), "{record:?} after {previous}");
        previous = record.objective_after_basis;
        if record.batch == 2 {
            assert!((record.objective_after_basis - whole[record.pass]).abs() <= 1e-5 * whole[record.pass], "pass {}: recorded {}, measured {}", record.pass, record.objective_after_basis, whole[record.pass]);
        }
    }
    // In the first pass the records are estimates: the last is near, not at, the measured one.
    let first_pass_last = report.batches[2].objective_after_basis;
    assert!((first_pass_last - whole[1]).abs() <= 0.2 * whole[1], "estimate {first_pass_last}, measured {}", whole[1]);
}

#[test]
fn beta_from_a_target_sparsity_hits_it_within_its_tolerance() {
    let mut rng = rng(14);
    let (k, n, rows) = (16, 64, 200);
    let data = gaussian_data(&mut rng, rows, k);
    let basis = Basis::initialise(k, n, 4).unwrap();
    for (target, solver) in [(0.03, CodeSolver::coordinate_descent()), (0.1, CodeSolver::coordinate_descent()), (0.06, CodeSolver::raina())] {
        let settings = SparsitySettings::new(target);
        let search = beta_for_sparsity(&CpuBackend, &basis, &data, &settings, &solver).unwrap();
        assert!((search.nonzero_fraction - target).abs() <= settings.tolerance * target, "{target}: {search:?}");
        assert!(search.evaluations <= settings.max_evaluations);
        // Codes solved afresh at that β have that sparsity too.
        let (codes, _) = encode(&CpuBackend, &basis, &data, search.beta, &solver).unwrap();
        let fraction = codes.iter().filter(|&&a| a != 0.0).count() as f64 / codes.len() as f64;
        assert!((fraction - target).abs() <= 2.0 * settings.tolerance * target, "{target}: {fraction} from zero codes, {} in the search", search.nonzero_fraction);
    }
    // Data orthogonal to every basis vector (here: zero) has zero codes at any β.
    let error = beta_for_sparsity(&CpuBackend, &basis, &vec![0.0; k * 3], &SparsitySettings::new(0.1), &CodeSolver::coordinate_descent()).unwrap_err().to_string();
    assert!(error.contains("not reachable"), "{error}");
    let error = beta_for_sparsity(&CpuBackend, &basis, &data, &SparsitySettings::new(1.5), &CodeSolver::coordinate_descent()).unwrap_err().to_string();
    assert!(error.contains("sparsity is 1.5"), "{error}");
}

#[test]
fn fit_settings_name_their_field() {
    let basis = Basis::initialise(4, 3, 1).unwrap();
    let data = vec![0.1f32; 8];
    let mut codes = vec![0.0f32; 6];
    let good = FitSettings { beta: 0.1, solver: CodeSolver::raina(), basis_step: BasisStepSettings::default(), batch_size: 1, passes: 1, track_whole_set: false, statistics: StatisticsRule::WholeSet };
    let run = |settings: FitSettings, codes: &mut Vec<f32>| fit(&CpuBackend, &mut basis.clone(), &data, codes, &settings, &mut |_| true).unwrap_err().to_string();
    assert!(run(FitSettings { beta: f64::NAN, ..good }, &mut codes).contains("beta is NaN"));
    assert!(run(FitSettings { batch_size: 0, ..good }, &mut codes).contains("batch_size is 0"));
    assert!(run(FitSettings { passes: 0, ..good }, &mut codes).contains("passes is 0"));
    assert!(run(FitSettings { basis_step: BasisStepSettings { tolerance: f64::INFINITY, ..Default::default() }, ..good }, &mut codes).contains("basis_tolerance is inf"));
    assert!(run(good, &mut vec![0.0f32; 5]).contains("codes: 5 values"));
}
