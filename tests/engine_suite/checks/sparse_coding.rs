//! Sparse coding parity (issue 18): the fit stepped through `engine::sparse_coding_session`
//! on every engine, against the CPU reference (`sparse_coding::fit`) and against the problem's
//! own optimality conditions.
//!
//! The data are cases drawn from a known sparse dictionary (tests/sparse_coding_support), small
//! enough for a CPU rasteriser.

use super::close;
use crate::engine_suite::Harness;
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::engine::sparse_coding_session::SparseCodingSession;
use deepbelief::sparse_coding::{fit, objective, Basis, BasisStepSettings, CodeSolver, FitSettings};

#[path = "../../sparse_coding_support/mod.rs"]
mod problems;

/// The statistics' objective (`S`, `T`, `‖A‖₁` summed in f64 from f32 products) against the
/// one measured from the reconstruction.
const STATISTICS_TOLERANCE: f64 = 1e-5;

/// `rows` cases of `k` inputs from a known dictionary of `n` unit vectors, 3 per case.
fn problem(k: usize, n: usize, rows: usize, seed: u64) -> (Basis, Vec<f32>) {
    let mut rng = problems::rng(seed);
    let (_, data) = problems::sparse_dataset(&mut rng, k, n, rows, 3, 0.05);
    (Basis::initialise(k, n, seed).expect("a basis"), data)
}

fn fit_settings(batch_size: usize, passes: usize) -> FitSettings {
    FitSettings { beta: 0.2, solver: CodeSolver::raina(), basis_step: BasisStepSettings::default(), batch_size, passes, track_whole_set: false }
}

pub async fn sparse_coding_session_follows_fit<H: Harness>(h: &H) -> Result<String, String> {
    let (k, n, rows, batch, passes) = (36, 48, 300, 100, 2);
    let (initial, data) = problem(k, n, rows, 21);
    let settings = fit_settings(batch, passes);
    let mut session = SparseCodingSession::start(h.engine(), initial.clone(), data.clone().into(), settings).await?;
    let half_norm2 = 0.5 * data.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>();
    ensure!(close(session.objective(), half_norm2, 1e-12), "the objective at zero codes is {}, not ½‖X‖² = {half_norm2}", session.objective());
    let mut steps = 0;
    while !session.done() {
        let report = session.step().await?;
        steps += 1;
        let record = report.record.as_ref().ok_or("a step before the end made no record")?;
        let measured = session.measure()?;
        ensure!(close(report.objective, measured.total, STATISTICS_TOLERANCE), "step {steps}: the objective {} is not the measured {}", report.objective, measured.total);
        ensure!(report.nonzero_fraction == measured.nonzero_fraction, "step {steps}: {} non-zero, measured {}", report.nonzero_fraction, measured.nonzero_fraction);
        ensure!(record.objective_after_basis <= record.objective_after_codes * (1.0 + 1e-7), "step {steps}: the basis step raised the objective: {record:?}");
    }
    ensure!(steps == passes * rows.div_ceil(batch), "{steps} steps for {passes} passes of {} batches", rows.div_ceil(batch));
    let mut basis = initial.clone();
    let mut codes = vec![0.0f32; rows * n];
    let report = fit(&CpuBackend, &mut basis, &data, &mut codes, &settings, &mut |_| true).map_err(|e| e.to_string())?;
    let reference = objective(&CpuBackend, &basis, &data, &codes, settings.beta).map_err(|e| e.to_string())?;
    let end = session.measure()?;
    if !session.on_device() {
        // The CPU session is `fit` stepped: the same records (but the seconds), basis and codes.
        let strip = |r: &deepbelief::sparse_coding::BatchRecord| (r.pass, r.batch, r.cases, r.codes.clone(), r.nonzero_fraction, r.objective_after_codes, r.objective_after_basis, r.basis_iterations);
        ensure!(session.records().iter().map(strip).eq(report.batches.iter().map(strip)), "the CPU session's records differ from fit's");
        ensure!(session.basis() == &basis && session.codes() == &codes[..], "the CPU session's basis or codes differ from fit's");
    }
    ensure!(close(end.total, reference.total, 1e-3), "the session ends at {} against fit's {}", end.total, reference.total);
    Ok(format!("{steps} steps ({}): objective {:.4} → {:.4} (fit {:.4}), {:.1}% non-zero", if session.on_device() { "device" } else { "CPU" }, session.initial_objective(), end.total, reference.total, 100.0 * end.nonzero_fraction))
}
