//! Sparse coding parity (issue 18): the code step, the basis step and the fit stepped through
//! `engine::sparse_coding_session`, from the engine's side (the device where the engine has
//! one), against the CPU reference (`sparse_coding::{encode, descend, fit}`) and against
//! references outside the engine: the exact minimiser of the code step (FISTA polished on its
//! support, sign patterns enumerated for a tiny problem, tests/sparse_coding_support) with its
//! optimality (KKT) conditions, and the basis step's closed form where `S = AᵀA` is diagonal.
//!
//! The data are cases drawn from a known sparse dictionary, small enough for a CPU rasteriser.
//!
//! Tolerances. The device runs Raina's iteration in f32 (the CPU tracks α and the objective in
//! f64), so under the paper's stopping rule (a decrease below 10⁻⁶ of the objective) a case may
//! stop an iteration earlier or later: each case's objective within [`CASE_TOLERANCE`] of the
//! CPU's, the set's within [`SET_TOLERANCE`], the zero pattern of the codes the CPU's but for
//! [`PATTERN_TOLERANCE`] of them, the KKT violation no more than twice the CPU's (the rule, not
//! the arithmetic, bounds it). Run tight, both reach the exact minimiser within 10⁻⁶ of its
//! objective and 10⁻³ of β in the KKT conditions (tests/sparse_coding_codes.rs's bounds for the
//! CPU). The basis step's objective before agrees to 10⁻⁶ (f32 partial sums added in f64) and
//! after to [`BASIS_TOLERANCE`]; the device's column norms are at most 1 + 10⁻⁶. A fit's steps
//! then follow the CPU's within [`FIT_TOLERANCE`] of the objective.

use super::close;
use crate::engine_suite::Harness;
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::engine::sparse_coding_session::SparseCodingSession;
use deepbelief::sparse_coding::basis_step::{descend, BasisStatistics};
use deepbelief::sparse_coding::{encode, fit, objective, Basis, BasisStepSettings, BatchRecord, CodeSolver, FitSettings, RainaSettings, StatisticsRule};

#[path = "../../sparse_coding_support/mod.rs"]
mod problems;

const CASE_TOLERANCE: f64 = 1e-4;
const SET_TOLERANCE: f64 = 1e-5;
const PATTERN_TOLERANCE: f64 = 5e-3;
const TIGHT_GAP: f64 = 1e-6;
const TIGHT_KKT: f64 = 1e-3;
const BASIS_TOLERANCE: f64 = 1e-5;
const NORM_SLACK: f64 = 1e-6;
const FIT_TOLERANCE: f64 = 1e-3;
/// The statistics' objective (`S`, `T`, `‖A‖₁` summed in f64 from f32 products) against the
/// one measured from the reconstruction.
const STATISTICS_TOLERANCE: f64 = 1e-5;

/// `rows` cases of `k` inputs from a known dictionary of `n` unit vectors, 3 per case, and a
/// random initial basis.
fn problem(k: usize, n: usize, rows: usize, seed: u64) -> (Basis, Vec<f32>) {
    let mut rng = problems::rng(seed);
    let (_, data) = problems::sparse_dataset(&mut rng, k, n, rows, 3, 0.05);
    (Basis::initialise(k, n, seed).expect("a basis"), data)
}

fn fit_settings(batch_size: usize, passes: usize) -> FitSettings {
    FitSettings { beta: 0.2, solver: CodeSolver::raina(), basis_step: BasisStepSettings::default(), batch_size, passes, track_whole_set: false, statistics: StatisticsRule::WholeSet }
}

fn tight() -> CodeSolver {
    CodeSolver::Raina(RainaSettings { tolerance: 1e-11, max_iterations: 5000 })
}

/// Each case's `½‖x − Ba‖² + β‖a‖₁` in f64.
fn case_objectives(basis: &Basis, data: &[f32], codes: &[f32], beta: f64) -> Vec<f64> {
    let b = problems::matrix(basis);
    data.chunks_exact(basis.n_inputs).zip(codes.chunks_exact(basis.n_bases)).map(|(x, a)| problems::case_objective(&b, x, &a.iter().map(|&v| f64::from(v)).collect::<Vec<f64>>(), beta)).collect()
}

fn worst_kkt(basis: &Basis, data: &[f32], codes: &[f32], beta: f64) -> f64 {
    let b = problems::matrix(basis);
    data.chunks_exact(basis.n_inputs).zip(codes.chunks_exact(basis.n_bases)).map(|(x, a)| problems::kkt_violation(&b, x, a, beta)).fold(0.0, f64::max)
}

/// The largest relative excess of `values` over `reference`, case by case.
fn worst_excess(values: &[f64], reference: &[f64]) -> f64 {
    values.iter().zip(reference).map(|(a, r)| (a - r) / r.abs()).fold(f64::MIN, f64::max)
}

pub async fn sparse_coding_codes_match_cpu_and_optimum<H: Harness>(h: &H) -> Result<String, String> {
    let (k, n, rows, beta) = (36, 48, 150, 0.2);
    let (basis, data) = problem(k, n, rows, 1);
    let (codes, report) = h.engine().encode_sparse(&basis, &data, beta, &CodeSolver::raina()).await?;
    let (cpu, cpu_report) = encode(&CpuBackend, &basis, &data, beta, &CodeSolver::raina()).map_err(|e| e.to_string())?;
    let (ours, theirs) = (case_objectives(&basis, &data, &codes, beta), case_objectives(&basis, &data, &cpu, beta));
    let per_case = ours.iter().zip(&theirs).map(|(a, b)| (a - b).abs() / b).fold(0.0, f64::max);
    ensure!(per_case <= CASE_TOLERANCE, "a case's objective is {per_case:.2e} (relative) from the CPU's");
    let (total, cpu_total) = (ours.iter().sum::<f64>(), theirs.iter().sum::<f64>());
    ensure!(close(total, cpu_total, SET_TOLERANCE), "the cases' objective {total} against the CPU's {cpu_total}");
    ensure!(close(report.objective, total, SET_TOLERANCE), "the step reports the objective {} but its codes have {total}", report.objective);
    let (kkt, cpu_kkt) = (worst_kkt(&basis, &data, &codes, beta), worst_kkt(&basis, &data, &cpu, beta));
    ensure!(kkt <= 2.0 * cpu_kkt + 1e-3, "KKT violation {kkt:.2e} of β against the CPU's {cpu_kkt:.2e}");
    let pattern = codes.iter().zip(&cpu).filter(|(a, b)| (**a != 0.0) != (**b != 0.0)).count() as f64 / codes.len() as f64;
    ensure!(pattern <= PATTERN_TOLERANCE, "{:.2}% of the codes are zero on one side only", 100.0 * pattern);

    // Run tight, against the exact minimiser of every case (FISTA polished on its support).
    let b = problems::matrix(&basis);
    let few = 40;
    let (sample, _) = data.split_at(few * k);
    let (tight_codes, _) = h.engine().encode_sparse(&basis, sample, beta, &tight()).await?;
    let exact: Vec<f64> = sample.chunks_exact(k).map(|x| problems::case_objective(&b, x, &problems::fista_optimum(&b, x, beta, 200_000), beta)).collect();
    let gap = worst_excess(&case_objectives(&basis, sample, &tight_codes, beta), &exact);
    let tight_kkt = worst_kkt(&basis, sample, &tight_codes, beta);
    ensure!(gap <= TIGHT_GAP && tight_kkt <= TIGHT_KKT, "run tight: {gap:.2e} above the exact minimiser's objective, KKT violation {tight_kkt:.2e} of β");

    // A tiny overcomplete problem, against the minimiser found by enumerating sign patterns.
    let (tiny_k, tiny_n, tiny_beta) = (6, 8, 0.3);
    let tiny = Basis::initialise(tiny_k, tiny_n, 17).map_err(|e| e.to_string())?;
    let tiny_data = problems::gaussian_data(&mut problems::rng(3), 8, tiny_k);
    let tb = problems::matrix(&tiny);
    let (tiny_codes, _) = h.engine().encode_sparse(&tiny, &tiny_data, tiny_beta, &tight()).await?;
    let mut tiny_gap = 0.0f64;
    for (x, a) in tiny_data.chunks_exact(tiny_k).zip(tiny_codes.chunks_exact(tiny_n)) {
        let optimum = problems::enumerate_optimum(&tb, x, tiny_beta);
        let value = problems::case_objective(&tb, x, &a.iter().map(|&v| f64::from(v)).collect::<Vec<f64>>(), tiny_beta);
        tiny_gap = tiny_gap.max((value - problems::case_objective(&tb, x, &optimum, tiny_beta)) / value);
        let support_agrees = a.iter().zip(&optimum).all(|(&a, &o)| (a != 0.0) == (o.abs() > 1e-6) && (a == 0.0 || a.signum() as f64 == o.signum()));
        ensure!(support_agrees, "the tiny problem's codes {a:?} have another support or signs than the enumerated minimiser {optimum:?}");
    }
    ensure!(tiny_gap <= TIGHT_GAP, "the tiny problem's codes are {tiny_gap:.2e} above the enumerated minimiser's objective");
    Ok(format!(
        "{rows} cases: objective {total:.4} (CPU {cpu_total:.4}, worst case {per_case:.1e}), KKT {kkt:.1e} (CPU {cpu_kkt:.1e}), zero pattern {:.2}% apart, iterations {:.1} (CPU {:.1}); tight: {gap:.1e} above the minimiser, KKT {tight_kkt:.1e}; tiny: {tiny_gap:.1e}",
        100.0 * pattern,
        report.iterations_mean,
        cpu_report.iterations_mean
    ))
}

pub async fn sparse_coding_basis_step_matches_cpu_and_closed_form<H: Harness>(h: &H) -> Result<String, String> {
    let (k, n, rows, beta) = (36, 48, 300, 0.2);
    let (initial, data) = problem(k, n, rows, 4);
    let (codes, _) = encode(&CpuBackend, &initial, &data, beta, &CodeSolver::raina()).map_err(|e| e.to_string())?;
    let settings = BasisStepSettings::default();
    let mut basis = initial.clone();
    let descent = h.engine().sparse_coding_basis_step(&mut basis, &data, &codes, &settings).await?;
    let mut cpu_basis = initial.clone();
    let cpu = descend(&CpuBackend, &mut cpu_basis, &BasisStatistics::of(&CpuBackend, k, n, &data, &codes), &settings);
    ensure!(close(descent.reconstruction_before, cpu.reconstruction_before, 1e-6), "the objective before the step {} against the CPU's {}", descent.reconstruction_before, cpu.reconstruction_before);
    ensure!(close(descent.reconstruction_after, cpu.reconstruction_after, BASIS_TOLERANCE), "the objective after the step {} against the CPU's {}", descent.reconstruction_after, cpu.reconstruction_after);
    let largest = basis.column_norms().into_iter().fold(0.0, f64::max);
    ensure!(largest <= 1.0 + NORM_SLACK, "a basis vector has norm {largest}");
    let measured = objective(&CpuBackend, &basis, &data, &codes, beta).map_err(|e| e.to_string())?.reconstruction;
    ensure!(close(descent.reconstruction_after, measured, STATISTICS_TOLERANCE), "the step reports {} but its basis has {measured}", descent.reconstruction_after);

    // S diagonal (each case uses one basis vector): the objective separates by columns, and the
    // minimiser is b_j = T_j / S_jj, scaled to norm 1 where it is longer. Column 0's cases are
    // small, so its minimiser lies inside the ball; the others' outside.
    let (tk, tn, tm) = (5, 3, 9);
    let mut tiny_data = problems::gaussian_data(&mut problems::rng(8), tm, tk);
    let mut tiny_codes = vec![0.0f32; tm * tn];
    for i in 0..tm {
        tiny_codes[i * tn + i % tn] = 0.5 + 0.25 * (i / tn) as f32;
        if i % tn == 0 {
            tiny_data[i * tk..(i + 1) * tk].iter_mut().for_each(|x| *x *= 0.05);
        }
    }
    let mut expected = vec![0.0f64; tk * tn];
    for j in 0..tn {
        let s_jj: f64 = (0..tm).map(|i| f64::from(tiny_codes[i * tn + j]).powi(2)).sum();
        let column: Vec<f64> = (0..tk).map(|r| (0..tm).map(|i| f64::from(tiny_data[i * tk + r]) * f64::from(tiny_codes[i * tn + j])).sum::<f64>() / s_jj).collect();
        let norm = column.iter().map(|v| v * v).sum::<f64>().sqrt();
        (0..tk).for_each(|r| expected[r * tn + j] = column[r] / norm.max(1.0));
    }
    let mut tiny = Basis::initialise(tk, tn, 2).map_err(|e| e.to_string())?;
    let exact_settings = BasisStepSettings { tolerance: 1e-12, max_iterations: 50, ..settings };
    h.engine().sparse_coding_basis_step(&mut tiny, &tiny_data, &tiny_codes, &exact_settings).await?;
    let gap = tiny.values.iter().zip(&expected).map(|(&a, &e)| (f64::from(a) - e).abs()).fold(0.0, f64::max);
    ensure!(gap <= 1e-5, "the diagonal problem's basis is {gap:.1e} from its closed form {expected:?}: {:?}", tiny.values);
    Ok(format!(
        "{rows} cases: ½‖X − ABᵀ‖² {:.5} → {:.5} in {} iterations (CPU {:.5} in {}), largest norm 1 + {:.1e}; diagonal S: {gap:.1e} from the closed form",
        descent.reconstruction_before,
        descent.reconstruction_after,
        descent.iterations,
        cpu.reconstruction_after,
        cpu.iterations,
        largest - 1.0
    ))
}

/// The fields of a record that do not depend on timing.
fn figures(r: &BatchRecord) -> (usize, usize, usize, f64, f64, f64, usize) {
    (r.pass, r.batch, r.cases, r.nonzero_fraction, r.objective_after_codes, r.objective_after_basis, r.basis_iterations)
}

pub async fn sparse_coding_session_follows_fit<H: Harness>(h: &H) -> Result<String, String> {
    let (k, n, rows, batch, passes) = (36, 48, 300, 100, 2);
    let (initial, data) = problem(k, n, rows, 21);
    let settings = fit_settings(batch, passes);
    let mut session = SparseCodingSession::start(h.engine(), initial.clone(), data.clone().into(), settings).await?;
    ensure!(session.on_device() == h.engine().is_gpu(), "the session runs on the device: {}, the engine is a GPU: {} ({:?})", session.on_device(), h.engine().is_gpu(), session.backend_reason());
    let half_norm2 = 0.5 * data.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>();
    ensure!(close(session.objective(), half_norm2, 1e-12), "the objective at zero codes is {}, not ½‖X‖² = {half_norm2}", session.objective());
    let mut basis = initial.clone();
    let mut codes = vec![0.0f32; rows * n];
    let report = fit(&CpuBackend, &mut basis, &data, &mut codes, &settings, &mut |_| true).map_err(|e| e.to_string())?;
    let mut steps = 0;
    let mut worst = 0.0f64;
    while !session.done() {
        let step = session.step().await?;
        let record = step.record.as_ref().ok_or("a step before the end made no record")?;
        let cpu = &report.batches[steps];
        steps += 1;
        let measured = session.measure()?;
        ensure!(close(step.objective, measured.total, STATISTICS_TOLERANCE), "step {steps}: the objective {} is not the measured {}", step.objective, measured.total);
        ensure!(step.nonzero_fraction == measured.nonzero_fraction, "step {steps}: {} non-zero, measured {}", step.nonzero_fraction, measured.nonzero_fraction);
        ensure!(record.objective_after_basis <= record.objective_after_codes * (1.0 + 1e-7), "step {steps}: the basis step raised the objective: {record:?}");
        let gap = (record.objective_after_basis - cpu.objective_after_basis).abs() / cpu.objective_after_basis;
        ensure!(gap <= FIT_TOLERANCE, "step {steps}: objective {} against the CPU fit's {}", record.objective_after_basis, cpu.objective_after_basis);
        worst = worst.max(gap);
    }
    ensure!(steps == passes * rows.div_ceil(batch), "{steps} steps for {passes} passes of {} batches", rows.div_ceil(batch));
    let largest = session.basis().column_norms().into_iter().fold(0.0, f64::max);
    ensure!(largest <= 1.0 + NORM_SLACK, "a basis vector has norm {largest}");
    if !session.on_device() {
        // The CPU session is `fit` stepped: the same records (but the seconds), basis and codes.
        ensure!(session.records().iter().map(figures).eq(report.batches.iter().map(figures)), "the CPU session's records differ from fit's");
        ensure!(session.records().iter().zip(&report.batches).all(|(a, b)| a.codes == b.codes), "the CPU session's code steps differ from fit's");
        ensure!(session.basis() == &basis && session.codes() == &codes[..], "the CPU session's basis or codes differ from fit's");
    }
    let end = session.measure()?;
    let reference = objective(&CpuBackend, &basis, &data, &codes, settings.beta).map_err(|e| e.to_string())?;
    ensure!(close(end.total, reference.total, FIT_TOLERANCE), "the session ends at {} against fit's {}", end.total, reference.total);
    Ok(format!(
        "{steps} steps ({}): objective {:.4} → {:.4} (fit {:.4}; each step within {worst:.1e} of fit's), {:.1}% non-zero",
        if session.on_device() { "device" } else { "CPU" },
        session.initial_objective(),
        end.total,
        reference.total,
        100.0 * end.nonzero_fraction
    ))
}

pub async fn sparse_coding_device_loss_resumes_on_cpu<H: Harness>(h: &H) -> Result<String, String> {
    if !h.engine().is_gpu() {
        return super::skipped("no device to lose on the CPU");
    }
    let (k, n, rows, batch, passes) = (25, 40, 240, 80, 2);
    let (initial, data) = problem(k, n, rows, 31);
    let settings = fit_settings(batch, passes);
    let mut session = SparseCodingSession::start(h.engine(), initial, data.clone().into(), settings).await?;
    ensure!(session.on_device(), "the session does not run on the device: {:?}", session.backend_reason());
    for _ in 0..2 {
        session.step().await?;
    }
    let (basis, codes, position) = (session.basis().clone(), session.codes().to_vec(), session.position());
    session.simulate_device_loss();
    let error = match session.step().await {
        Ok(report) => return Err(format!("a step on a destroyed device went through: {report:?}")),
        Err(error) => error,
    };
    ensure!(error.contains("lost"), "the failed step's error does not say the device was lost: {error}");
    ensure!(session.basis() == &basis && session.codes() == &codes[..] && session.position() == position && session.records().len() == 2, "the failed step changed the basis, the codes or the position");
    ensure!(!session.on_device() && session.backend_reason().is_some_and(|r| r.contains("lost")), "after the loss the session is on the device: {}, reason {:?}", session.on_device(), session.backend_reason());
    // The CPU takes the lost batch again from the last good basis and codes, and goes on.
    let mut run_basis = basis.clone();
    let mut run_codes = codes.clone();
    let mut run = deepbelief::sparse_coding::fit::FitRun::resume(&CpuBackend, &basis, &data, &codes, &settings, position).map_err(|e| e.to_string())?;
    while !session.done() {
        let report = session.step().await?;
        let expected = run.step(&CpuBackend, &mut run_basis, &data, &mut run_codes).map_err(|e| e.to_string())?.ok_or("the CPU run ended first")?;
        let record = report.record.ok_or("a step made no record")?;
        ensure!(figures(&record) == figures(&expected), "after the loss, step {:?} differs from the CPU's {:?}", figures(&record), figures(&expected));
    }
    ensure!(session.basis() == &run_basis && session.codes() == &run_codes[..], "after the loss the session's basis or codes differ from the CPU run's from the same state");
    let end = session.measure()?;
    Ok(format!("lost at pass {} batch {} ({error}); the CPU took the remaining {} batches from the last good basis, objective {:.4}", position.pass, position.batch + 1, session.records().len() - 2, end.total))
}
