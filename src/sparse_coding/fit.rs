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
//!
//! That is [`StatisticsRule::WholeSet`]. [`StatisticsRule::Forgetting`] is online dictionary
//! learning's (Mairal, Bach, Ponce & Sapiro 2010, §3.4), as scikit-learn's
//! `MiniBatchDictionaryLearning` does it: old parts are never taken away, but before each batch
//! adds its part the statistics are multiplied by a forgetting factor, so a batch coded with an
//! older basis counts less. The default, [`StatisticsRule::ForgettingFirstPass`], forgets in the
//! first pass and takes the whole set's statistics from the second on (recomputed from every
//! case's codes as the second pass starts). Measured (docs/SPARSE_CODING.md): after one pass of
//! Raina's Table 4 the whole set's objective is lower with forgetting than with the whole-set
//! rule (whose first batches, coded with a poorer basis, weigh as much as the last); over ten
//! passes the whole-set rule ends lower than forgetting throughout. The default takes both.

use super::basis::Basis;
use super::basis_step::{descend, half_norm2, BasisStatistics, BasisStepSettings};
use super::codes::{solve_codes, CodeSolver, CodeStepReport};
use super::error::SparseCodingError;
use super::products::{check_beta, check_codes, check_data, l1_and_nonzero, objective, Objective};
use crate::backend::Backend;
use crate::clock::now_seconds;
use serde::{Deserialize, Serialize};

/// What the basis step minimises after a mini-batch's code step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatisticsRule {
    /// The whole set's objective with every case's latest codes: the batch's old part of `S`,
    /// `T` is taken away and its new part added. Every step lowers the whole set's objective.
    WholeSet,
    /// Forgetting statistics: before batch `t` (counted from 0 over all passes) adds its part,
    /// `S`, `T` and `½‖X‖²` are multiplied by [`forgetting_factor`]; no part is taken away.
    /// After one pass of five equal batches the batches weigh 0.2, 0.4, 0.6, 0.8 and 1.
    Forgetting,
    /// `Forgetting` in the first pass, `WholeSet` from the second.
    #[default]
    ForgettingFirstPass,
}

impl StatisticsRule {
    pub fn name(self) -> &'static str {
        match self {
            StatisticsRule::WholeSet => "whole-set",
            StatisticsRule::Forgetting => "forgetting",
            StatisticsRule::ForgettingFirstPass => "forgetting-first-pass",
        }
    }

    /// Whether the batches of pass `pass` (1-based) forget.
    pub fn forgets_in(self, pass: usize) -> bool {
        match self {
            StatisticsRule::WholeSet => false,
            StatisticsRule::Forgetting => true,
            StatisticsRule::ForgettingFirstPass => pass <= 1,
        }
    }
}

/// scikit-learn's `_update_inner_stats` factor for step `t` with batches of `η` cases:
/// `(θ + 1 − η)/(θ + 1)` with `θ = (t + 1)·η` for `t < η − 1`, else `η² + t + 1 − η`.
pub fn forgetting_factor(step: usize, batch_size: usize) -> f64 {
    let (t, eta) = (step as f64, batch_size as f64);
    let theta = if step + 1 < batch_size { (t + 1.0) * eta } else { eta * eta + t + 1.0 - eta };
    (theta + 1.0 - eta) / (theta + 1.0)
}

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
    /// What the basis step minimises (files written before the field read as the default).
    #[serde(default)]
    pub statistics: StatisticsRule,
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
    /// The objective before and after the basis step (from `S`, `T` and `‖A‖₁` in `f64`). With
    /// [`StatisticsRule::WholeSet`] the whole set's with every case's latest codes (within
    /// ~10⁻⁶ of the value measured from the reconstruction); where the batch forgets, the
    /// estimate the basis step minimises: the forgetting-weighted objective of the batches
    /// (reconstruction error and `β‖A‖₁`) scaled to the set's number of cases (the pass records
    /// measure the whole set's).
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

/// Where a fit stands: the pass under way (1-based) and the next batch of it (0-based).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FitPosition {
    pub pass: usize,
    pub batch: usize,
}

/// A fit advanced one mini-batch at a time ([`FitRun::step`]): the whole set's statistics and
/// `‖A‖₁`, and where the run stands. [`fit`] is a `FitRun` stepped to its end; a session
/// (`engine::sparse_coding_session`) steps one on the CPU, or resumes one
/// ([`FitRun::resume`]) from the basis and codes a device left behind.
#[derive(Clone, Debug)]
pub struct FitRun {
    settings: FitSettings,
    rows: usize,
    /// The whole set's, or while forgetting the weighted sums.
    statistics: BasisStatistics,
    /// The statistics are the forgetting ones.
    forgetting: bool,
    /// While forgetting: the cases' total weight in the statistics, and their weighted `‖A‖₁`.
    weighted_cases: f64,
    weighted_l1: f64,
    l1_total: f64,
    position: FitPosition,
    /// Seconds of the steps of the pass under way.
    pass_seconds: f64,
    /// With `track_whole_set`: pass 0 and one per pass finished.
    passes: Vec<PassRecord>,
}

impl FitRun {
    /// A run from the first batch of the first pass, with `codes` (`m × n`) as every case's
    /// starting codes (usually zeros).
    pub fn start(backend: &dyn Backend, basis: &Basis, data: &[f32], codes: &[f32], settings: &FitSettings) -> Result<FitRun, SparseCodingError> {
        let mut run = FitRun::resume(backend, basis, data, codes, settings, FitPosition { pass: 1, batch: 0 })?;
        if settings.track_whole_set {
            run.passes.push(PassRecord { pass: 0, objective: objective(backend, basis, data, codes, settings.beta)?, seconds: 0.0 });
        }
        Ok(run)
    }

    /// A run at `position` with `codes` as every case's latest codes: the statistics are
    /// computed afresh from them (no pass records before `position`).
    pub fn resume(backend: &dyn Backend, basis: &Basis, data: &[f32], codes: &[f32], settings: &FitSettings, position: FitPosition) -> Result<FitRun, SparseCodingError> {
        settings.validate()?;
        let rows = check_data(basis, data)?;
        check_codes(basis, rows, codes)?;
        let (k, n) = (basis.n_inputs, basis.n_bases);
        let coded = codes.iter().any(|&a| a != 0.0);
        // Forgetting from codes given or left by another run: every case weighs 1 (the weights
        // of the batches before are not known); from zeros: nothing yet, as scikit-learn.
        let forgetting = settings.statistics.forgets_in(position.pass);
        let l1_total = l1_and_nonzero(codes, n).0;
        let (statistics, weighted_cases, weighted_l1) = match (coded, forgetting) {
            (true, _) => (BasisStatistics::of(backend, k, n, data, codes), rows as f64, l1_total),
            (false, false) => (BasisStatistics::zeros(k, n, half_norm2(data)), rows as f64, 0.0),
            (false, true) => (BasisStatistics::zeros(k, n, 0.0), 0.0, 0.0),
        };
        Ok(FitRun { settings: *settings, rows, statistics, forgetting, weighted_cases, weighted_l1, l1_total, position, pass_seconds: 0.0, passes: Vec::new() })
    }

    /// The run with `passes` as the pass records so far (a run resumed from another's state).
    pub fn with_passes(mut self, passes: Vec<PassRecord>) -> FitRun {
        self.passes = passes;
        self
    }

    pub fn settings(&self) -> &FitSettings {
        &self.settings
    }

    /// The pass under way and its next batch (after the last pass: `passes + 1`, batch 0).
    pub fn position(&self) -> FitPosition {
        self.position
    }

    /// Mini-batches per pass.
    pub fn batches_per_pass(&self) -> usize {
        self.rows.div_ceil(self.settings.batch_size)
    }

    /// Every pass has been made.
    pub fn done(&self) -> bool {
        self.position.pass > self.settings.passes
    }

    /// With `track_whole_set`: the whole set's objective before the first pass and after each
    /// finished one.
    pub fn passes(&self) -> &[PassRecord] {
        &self.passes
    }

    /// Batches made before the next one, over all passes (the forgetting factor's step).
    pub fn steps_made(&self) -> usize {
        (self.position.pass - 1) * self.batches_per_pass() + self.position.batch
    }

    /// The next batch's code step and basis step on `basis` and the codes of the whole set
    /// (`codes`, `m × n`, as the run was started with and left by earlier steps); its record,
    /// or `None` when every pass has been made. After a pass's last batch, with
    /// `track_whole_set`, the whole set's objective is measured ([`Self::passes`]).
    pub fn step(&mut self, backend: &dyn Backend, basis: &mut Basis, data: &[f32], codes: &mut [f32]) -> Result<Option<BatchRecord>, SparseCodingError> {
        if self.done() {
            return Ok(None);
        }
        let (k, n) = (basis.n_inputs, basis.n_bases);
        let settings = self.settings;
        let FitPosition { pass, batch } = self.position;
        let first = batch * settings.batch_size;
        let cases = settings.batch_size.min(self.rows - first);
        let started = now_seconds();
        if self.forgetting && !settings.statistics.forgets_in(pass) {
            // ForgettingFirstPass from its second pass: the whole set's statistics.
            self.statistics = BasisStatistics::of(backend, k, n, data, codes);
            self.forgetting = false;
        }
        let forgetting = self.forgetting;
        let x = &data[first * k..(first + cases) * k];
        let a = &mut codes[first * n..(first + cases) * n];
        if a.iter().any(|&v| v != 0.0) {
            if !forgetting {
                self.statistics.add(backend, x, a, -1.0);
            }
            self.l1_total -= l1_and_nonzero(a, n).0;
        }
        let code_report = solve_codes(backend, basis, x, settings.beta, &settings.solver, a)?;
        let coded = now_seconds();
        let (l1, nonzero) = l1_and_nonzero(a, n);
        if forgetting {
            let factor = forgetting_factor(self.steps_made(), settings.batch_size);
            self.statistics.scale(factor);
            self.statistics.half_data_norm2 += half_norm2(x);
            self.weighted_cases = factor * self.weighted_cases + cases as f64;
            self.weighted_l1 = factor * self.weighted_l1 + l1;
        }
        self.statistics.add(backend, x, a, 1.0);
        self.l1_total += l1;
        let descent = descend(backend, basis, &self.statistics, &settings.basis_step);
        // While forgetting, the weighted objective scaled to the set; else the whole set's.
        let (to_set, l1_term) = if forgetting { (self.rows as f64 / self.weighted_cases, self.rows as f64 / self.weighted_cases * self.weighted_l1) } else { (1.0, self.l1_total) };
        let finished = now_seconds();
        self.pass_seconds += finished - started;
        let record = BatchRecord {
            pass,
            batch,
            first_case: first,
            cases,
            codes: code_report,
            nonzero_fraction: nonzero as f64 / (cases * n) as f64,
            objective_after_codes: to_set * descent.reconstruction_before + settings.beta * l1_term,
            objective_after_basis: to_set * descent.reconstruction_after + settings.beta * l1_term,
            basis_iterations: descent.iterations,
            seconds_codes: coded - started,
            seconds_basis: finished - coded,
        };
        if first + cases >= self.rows {
            self.finish_pass(backend, basis, data, codes)?;
        } else {
            self.position.batch += 1;
        }
        Ok(Some(record))
    }

    /// Ends the pass under way after the batches made of it: with `track_whole_set`, measures
    /// the whole set's objective; the next step starts the next pass.
    pub fn finish_pass(&mut self, backend: &dyn Backend, basis: &Basis, data: &[f32], codes: &[f32]) -> Result<(), SparseCodingError> {
        if self.settings.track_whole_set {
            self.passes.push(PassRecord { pass: self.position.pass, objective: objective(backend, basis, data, codes, self.settings.beta)?, seconds: self.pass_seconds });
        }
        self.position = FitPosition { pass: self.position.pass + 1, batch: 0 };
        self.pass_seconds = 0.0;
        Ok(())
    }
}

/// Fits `basis` to `data` (`m × k`), improving `codes` (`m × n`, the starting codes, usually
/// zeros). `on_batch` sees each batch's record; `false` stops after that batch.
pub fn fit(backend: &dyn Backend, basis: &mut Basis, data: &[f32], codes: &mut [f32], settings: &FitSettings, on_batch: &mut dyn FnMut(&BatchRecord) -> bool) -> Result<FitReport, SparseCodingError> {
    let mut run = FitRun::start(backend, basis, data, codes, settings)?;
    let mut report = FitReport::default();
    while let Some(record) = run.step(backend, basis, data, codes)? {
        let go_on = on_batch(&record);
        report.batches.push(record);
        if !go_on {
            report.cancelled = true;
            if run.position().batch > 0 {
                run.finish_pass(backend, basis, data, codes)?;
            }
            break;
        }
    }
    report.passes = run.passes;
    Ok(report)
}
