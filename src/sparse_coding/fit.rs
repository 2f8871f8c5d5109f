//! Learning the basis: alternate the code step and the basis step (Raina et al. §3.2, §6),
//! over the whole set or over mini-batches (their Table 4: 5,000 cases in mini-batches of
//! 1,000).
//!
//! Every case keeps its latest codes (zeros until its batch is first coded), and the objective
//! is the whole set's with them. One pass visits the cases in order, `batch_size` at a time
//! (the last batch may be smaller). For each batch the code step improves the batch's codes,
//! starting from the codes the batch had (so later passes start warm), then the basis step
//! minimises the whole set's objective over the basis: it works on `S = AᵀA` and `T = XᵀA` of
//! the whole set ([`BasisStatistics`]), from which the batch's old part is taken away and its
//! new part added, two products per batch. So each step of the pass lowers the whole set's
//! objective (up to `f32` rounding), mini-batches or not, and a mini-batch's basis step does not
//! forget the batches before it (as a step fitted to the batch alone would). With `batch_size`
//! at least the number of cases this is plain alternating minimisation.

use super::basis::Basis;
use super::basis_step::{descend, half_norm2, BasisStatistics, BasisStepSettings};
use super::codes::{solve_codes, CodeSolver, CodeStepReport};
use super::error::SparseCodingError;
use super::products::{check_beta, check_codes, check_data, l1_and_nonzero, objective, Objective};
use crate::backend::Backend;
use crate::clock::now_seconds;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitSettings {
    pub beta: f64,
    pub solver: CodeSolver,
    pub basis_step: BasisStepSettings,
    /// Cases per mini-batch; the number of cases or more for full-batch alternation.
    pub batch_size: usize,
    pub passes: usize,
    /// After each pass (and before the first), the objective over the whole set with every
    /// case's latest codes: one more product over the set per pass.
    pub track_whole_set: bool,
}

impl FitSettings {
    pub fn validate(&self) -> Result<(), SparseCodingError> {
        check_beta(self.beta)?;
        self.solver.validate()?;
        self.basis_step.validate()?;
        if self.batch_size == 0 {
            return Err(SparseCodingError::Setting { field: "batch_size", value: 0.0, expected: "at least 1 case" });
        }
        if self.passes == 0 {
            return Err(SparseCodingError::Setting { field: "passes", value: 0.0, expected: "at least 1" });
        }
        Ok(())
    }
}

/// One mini-batch's two steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    /// 1-based.
    pub pass: usize,
    /// 0-based within the pass.
    pub batch: usize,
    pub first_case: usize,
    pub cases: usize,
    /// The code step, with the batch's objective after it as the solver tracked it.
    pub codes: CodeStepReport,
    /// The batch's fraction of non-zero codes.
    pub nonzero_fraction: f64,
    /// The whole set's objective with every case's latest codes, before and after the basis
    /// step (from `S`, `T` and `‖A‖₁` in `f64`: within ~10⁻⁶ of the value measured from the
    /// reconstruction).
    pub objective_after_codes: f64,
    pub objective_after_basis: f64,
    pub basis_iterations: usize,
    pub seconds_codes: f64,
    pub seconds_basis: f64,
}

/// The objective over the whole set after a pass (pass 0: before the first).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PassRecord {
    pub pass: usize,
    pub objective: Objective,
    /// Seconds of the pass's steps (not of measuring this objective).
    pub seconds: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FitReport {
    pub batches: Vec<BatchRecord>,
    /// With `track_whole_set`: pass 0 and one per pass done.
    pub passes: Vec<PassRecord>,
    /// `on_batch` asked to stop.
    pub cancelled: bool,
}

/// Fits `basis` to `data` (`m × k`), improving `codes` (`m × n`, the starting codes, usually
/// zeros). `on_batch` sees each batch's record; `false` stops after that batch.
pub fn fit(backend: &dyn Backend, basis: &mut Basis, data: &[f32], codes: &mut [f32], settings: &FitSettings, on_batch: &mut dyn FnMut(&BatchRecord) -> bool) -> Result<FitReport, SparseCodingError> {
    settings.validate()?;
    let rows = check_data(basis, data)?;
    check_codes(basis, rows, codes)?;
    let (k, n) = (basis.n_inputs, basis.n_bases);
    let mut report = FitReport::default();
    if settings.track_whole_set {
        report.passes.push(PassRecord { pass: 0, objective: objective(backend, basis, data, codes, settings.beta)?, seconds: 0.0 });
    }
    let mut statistics = if codes.iter().any(|&a| a != 0.0) { BasisStatistics::of(backend, k, n, data, codes) } else { BasisStatistics::zeros(k, n, half_norm2(data)) };
    let mut l1_total = l1_and_nonzero(codes, n).0;
    for pass in 1..=settings.passes {
        let mut seconds = 0.0;
        for (batch, first) in (0..rows).step_by(settings.batch_size).enumerate() {
            let cases = settings.batch_size.min(rows - first);
            let x = &data[first * k..(first + cases) * k];
            let a = &mut codes[first * n..(first + cases) * n];
            let started = now_seconds();
            if a.iter().any(|&v| v != 0.0) {
                statistics.add(backend, x, a, -1.0);
                l1_total -= l1_and_nonzero(a, n).0;
            }
            let code_report = solve_codes(backend, basis, x, settings.beta, &settings.solver, a)?;
            let coded = now_seconds();
            statistics.add(backend, x, a, 1.0);
            let (l1, nonzero) = l1_and_nonzero(a, n);
            l1_total += l1;
            let descent = descend(backend, basis, &statistics, &settings.basis_step);
            let finished = now_seconds();
            seconds += finished - started;
            let record = BatchRecord {
                pass,
                batch,
                first_case: first,
                cases,
                codes: code_report,
                nonzero_fraction: nonzero as f64 / (cases * n) as f64,
                objective_after_codes: descent.reconstruction_before + settings.beta * l1_total,
                objective_after_basis: descent.reconstruction_after + settings.beta * l1_total,
                basis_iterations: descent.iterations,
                seconds_codes: coded - started,
                seconds_basis: finished - coded,
            };
            let go_on = on_batch(&record);
            report.batches.push(record);
            if !go_on {
                report.cancelled = true;
                break;
            }
        }
        if settings.track_whole_set {
            report.passes.push(PassRecord { pass, objective: objective(backend, basis, data, codes, settings.beta)?, seconds });
        }
        if report.cancelled {
            break;
        }
    }
    Ok(report)
}
