//! Sparse coding on the device (issue 18; CPU reference [`crate::sparse_coding`], same layouts:
//! cases as rows, `X` is `m × k`, the codes `A` are `m × n`, the basis `B` is `k × n`
//! row-major).
//!
//! A [`DeviceFit`] uploads the cases and the codes once, in blocks of whole cases, and keeps
//! everything on the device across its steps: the basis, the whole set's statistics
//! `S = AᵀA` and `−T = −XᵀA`, every case's latest codes. One [`DeviceFit::step`] is one
//! mini-batch of [`fit`](crate::sparse_coding::fit), as the CPU's
//! [`FitRun::step`](crate::sparse_coding::fit::FitRun::step) does it:
//!
//! 1. the code step, block by block (`codes.rs`, `shaders/sparse_coding_codes.wgsl`): Raina's
//!    parallel solver, `Q = BᵀB` and `C = X·B` through the tuned GEMM kernels of
//!    [`gemm`](crate::gpu::gemm), then per iteration the directions, `D·Q` (GEMM) and the line
//!    search over the 21 step sizes per case, stopping each case by the paper's rule; the
//!    host reads the cases' records back every few iterations (the convergence check) and
//!    narrows the next iterations to the cases still running;
//! 2. the statistics: the block's old part taken away and its new part added, `AᵀA` and
//!    `XᵀA` of the new and old codes as one paired GEMM each; where the batch forgets
//!    ([`StatisticsRule::forgets_in`]) the statistics are first multiplied by the forgetting
//!    factor (`scale_statistics`) and only the new part is added (and as `ForgettingFirstPass`
//!    stops forgetting, the statistics are cleared and every block's part added);
//! 3. the basis step (`basis.rs`, `shaders/sparse_coding_basis.wgsl`): projected gradient
//!    descent with the ColumnMajoriser steps, `G = B·S − T` through the GEMM, the candidate
//!    and its column-norm projection, the exact change `½⟨B' − B, G + G'⟩`, accepted or
//!    rejected on the device; the state read back every few iterations.
//!
//! The record of the step is the CPU's [`BatchRecord`]: the code step's iterations and
//! objective (the per-case f32 objectives summed in f64), the batch's non-zero fraction, and
//! the whole set's objective before and after the basis step (`½‖X‖²` in f64, `½⟨B, G − T⟩`
//! from f32 partial sums added in f64, the accepted changes summed on the device, `β‖A‖₁`
//! from the per-case f32 sums added in f64).
//!
//! Only what the CPU reference calls [`CodeSolver::Raina`] and [`StepRule::ColumnMajoriser`]
//! run here; [`DeviceFit::new`] refuses the others (the engine runs them on the CPU).
//!
//! WebGPU's limits: every buffer a kernel binds stays within the device's storage binding
//! size; a mini-batch that would not is coded in several blocks (each case's code step is its
//! own, so the blocks' results are the batch's); `DeviceFit::new` says which buffer is too
//! large where even one case does not fit. Workgroup counts are spread over the grid's three
//! dimensions ([`shader::grid`]).

mod basis;
mod codes;
mod kernels;

pub use kernels::SparseCodingKernels;
#[doc(hidden)]
pub use kernels::{BasisParams, BasisState, CaseRecord, CodeParams};
pub(crate) use kernels::{basis_source, codes_source};

use self::basis::BasisBuffers;
use self::codes::{Block, CodeBuffers};
use super::{GpuContext, GpuError};
use crate::clock::now_seconds;
use crate::sparse_coding::basis_step::{half_norm2, Descent};
use crate::sparse_coding::codes::CodeStepReport;
use crate::sparse_coding::fit::FitPosition;
use crate::sparse_coding::products::{check_codes, check_data, Objective};
use crate::sparse_coding::{forgetting_factor, Basis, BasisStepSettings, BatchRecord, CodeSolver, FitSettings, PassRecord, RainaSettings, StepRule};
use std::sync::Arc;

/// Every region of a shared buffer starts on a multiple of this many f32 (256 bytes, WebGPU's
/// default `minStorageBufferOffsetAlignment`): the GEMMs bind them without residual offsets.
const ALIGN: usize = 64;

fn align(n: usize) -> usize {
    n.next_multiple_of(ALIGN)
}

/// Why the device cannot run a fit: the settings it does not implement, or the device.
pub fn unsupported(settings: &FitSettings) -> Option<String> {
    if !matches!(settings.solver, CodeSolver::Raina(_)) {
        return Some(format!("the device codes with Raina's solver; the {} solver runs on the CPU", settings.solver.name()));
    }
    if settings.basis_step.rule != StepRule::ColumnMajoriser {
        return Some("the device's basis step takes the ColumnMajoriser steps; the Lipschitz rule runs on the CPU".into());
    }
    None
}

/// The device's side of a sparse coding fit: the cases, every case's codes, the basis and the
/// statistics, resident between steps.
pub struct DeviceFit {
    ctx: GpuContext,
    kernels: Arc<SparseCodingKernels>,
    settings: FitSettings,
    raina: RainaSettings,
    basis_settings: BasisStepSettings,
    n_inputs: usize,
    n_bases: usize,
    rows: usize,
    blocks: Vec<Block>,
    /// The blocks of each mini-batch.
    batches: Vec<std::ops::Range<usize>>,
    code: CodeBuffers,
    basis: BasisBuffers,
    position: FitPosition,
    half_data: f64,
    /// The statistics are the forgetting ones; then their weighted `½‖X‖²`, number of cases and
    /// `‖A‖₁`; and each mini-batch's own `½‖X‖²`.
    forgetting: bool,
    weighted_half: f64,
    weighted_cases: f64,
    weighted_l1: f64,
    batch_half: Vec<f64>,
    /// Each case's `‖a‖₁` and non-zero codes (as the device last summed them).
    case_l1: Vec<f64>,
    case_nonzero: Vec<u32>,
    passes: Vec<PassRecord>,
    pass_seconds: f64,
}

impl DeviceFit {
    /// Uploads `basis`, `data` (`m × k`) and `codes` (`m × n`, every case's codes), with the
    /// statistics of the codes that are not zero, ready to step from `position`. The settings
    /// must be valid (the CPU's checks) and of the kinds the device runs ([`unsupported`]).
    pub fn new(ctx: &GpuContext, kernels: Arc<SparseCodingKernels>, basis: &Basis, data: &[f32], codes: &[f32], settings: &FitSettings, position: FitPosition) -> Result<DeviceFit, GpuError> {
        Self::with_block_limit(ctx, kernels, basis, data, codes, settings, position, usize::MAX)
    }

    /// [`Self::new`] with blocks of at most `block_limit` cases (for tests of batches split
    /// into blocks, which a device with WebGPU's limits does only for large batches).
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn with_block_limit(ctx: &GpuContext, kernels: Arc<SparseCodingKernels>, basis: &Basis, data: &[f32], codes: &[f32], settings: &FitSettings, position: FitPosition, block_limit: usize) -> Result<DeviceFit, GpuError> {
        settings.validate().map_err(|e| GpuError(e.to_string()))?;
        let rows = check_data(basis, data).map_err(|e| GpuError(e.to_string()))?;
        check_codes(basis, rows, codes).map_err(|e| GpuError(e.to_string()))?;
        if let Some(why) = unsupported(settings) {
            return Err(GpuError(why));
        }
        let CodeSolver::Raina(raina) = settings.solver else { unreachable!("checked by unsupported") };
        if let Some(failure) = ctx.failure() {
            return Err(GpuError(failure));
        }
        let (k, n) = (basis.n_inputs, basis.n_bases);
        let block_cap = codes::block_capacity(ctx, k, n)?.min(settings.batch_size).min(rows).min(block_limit.max(1));
        let half_data = half_norm2(data);
        let forgetting = settings.statistics.forgets_in(position.pass);
        // As FitRun::resume: forgetting from zeros starts with nothing, from codes with every
        // case at weight 1.
        let (weighted_half, weighted_cases) = if forgetting && codes.iter().all(|&a| a == 0.0) { (0.0, 0.0) } else { (half_data, rows as f64) };
        let weighted_l1 = codes.iter().map(|&a| f64::from(a.abs())).sum();
        let batch_half = (0..rows).step_by(settings.batch_size).map(|first| half_norm2(&data[first * k..(first + settings.batch_size).min(rows) * k])).collect();
        let basis_buffers = BasisBuffers::new(ctx, &kernels, basis, settings.basis_step.tolerance, weighted_half)?;
        let mut batches = Vec::new();
        let mut spans = Vec::new();
        for first in (0..rows).step_by(settings.batch_size) {
            let cases = settings.batch_size.min(rows - first);
            let start = spans.len();
            for block_first in (first..first + cases).step_by(block_cap) {
                spans.push((block_first, block_cap.min(first + cases - block_first)));
            }
            batches.push(start..spans.len());
        }
        let code = CodeBuffers::new(ctx, &kernels, k, n, block_cap, &basis_buffers)?;
        let mut blocks = Vec::with_capacity(spans.len());
        for (first, cases) in spans {
            blocks.push(Block::new(ctx, &kernels, &code, &basis_buffers, data, codes, first, cases, k, n)?);
        }
        let mut case_l1 = Vec::with_capacity(rows);
        let mut case_nonzero = Vec::with_capacity(rows);
        for a in codes.chunks_exact(n) {
            case_l1.push(a.iter().map(|&v| f64::from(v.abs())).sum());
            case_nonzero.push(a.iter().filter(|&&v| v != 0.0).count() as u32);
        }
        let mut fit = DeviceFit {
            ctx: ctx.clone(),
            kernels,
            settings: *settings,
            raina,
            basis_settings: settings.basis_step,
            n_inputs: k,
            n_bases: n,
            rows,
            blocks,
            batches,
            code,
            basis: basis_buffers,
            position,
            half_data,
            forgetting,
            weighted_half,
            weighted_cases,
            weighted_l1,
            batch_half,
            case_l1,
            case_nonzero,
            passes: Vec::new(),
            pass_seconds: 0.0,
        };
        fit.add_initial_statistics();
        Ok(fit)
    }

    /// The statistics of the blocks whose starting codes are not zero.
    fn add_initial_statistics(&mut self) {
        let mut encoder = self.ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            for block in self.blocks.iter().filter(|b| b.coded) {
                block.add_statistics(&mut pass, false);
            }
        }
        self.ctx.queue.submit([encoder.finish()]);
    }

    pub fn settings(&self) -> &FitSettings {
        &self.settings
    }

    pub fn position(&self) -> FitPosition {
        self.position
    }

    pub fn done(&self) -> bool {
        self.position.pass > self.settings.passes
    }

    /// With `track_whole_set`: the whole set's objective after each pass finished here.
    pub fn passes(&self) -> &[PassRecord] {
        &self.passes
    }

    /// Cases per block (the largest block).
    pub fn block_capacity(&self) -> usize {
        self.code.capacity
    }

    /// The next mini-batch's code step and basis step; its record, or `None` when every pass
    /// has been made. After a pass's last batch, with `track_whole_set`, the whole set's
    /// objective is measured on the device ([`Self::passes`]).
    pub async fn step(&mut self) -> Result<Option<BatchRecord>, GpuError> {
        if self.done() {
            return Ok(None);
        }
        let FitPosition { pass, batch } = self.position;
        let blocks = self.batches[batch].clone();
        let started = now_seconds();
        if self.forgetting && !self.settings.statistics.forgets_in(pass) {
            // ForgettingFirstPass from its second pass: the whole set's statistics.
            self.forgetting = false;
            self.basis.restart_statistics(&self.ctx, self.half_data);
            self.add_initial_statistics();
        }
        let mut factor = 1.0;
        if self.forgetting {
            factor = forgetting_factor((pass - 1) * self.batches.len() + batch, self.settings.batch_size);
            let cases: usize = self.blocks[blocks.clone()].iter().map(|b| b.rows).sum();
            self.weighted_half = factor * self.weighted_half + self.batch_half[batch];
            self.weighted_cases = factor * self.weighted_cases + cases as f64;
            self.basis.forget(&self.ctx, &self.kernels, factor, self.weighted_half);
        }
        for (index, b) in blocks.clone().enumerate() {
            self.code_step(b, index == 0, true).await?;
        }
        let coded = now_seconds();
        let outcome = self.basis_step(blocks.clone()).await?;
        let finished = now_seconds();
        self.pass_seconds += finished - started;
        let n = self.n_bases;
        let first_case = self.blocks[blocks.start].first;
        let mut cases = Vec::new();
        let mut nonzero = 0u64;
        let mut batch_l1 = 0.0f64;
        for (block, records) in blocks.clone().zip(&outcome.cases) {
            let first = self.blocks[block].first;
            for (offset, record) in records.iter().enumerate() {
                batch_l1 += f64::from(record.l1);
                self.case_l1[first + offset] = f64::from(record.l1);
                self.case_nonzero[first + offset] = record.nonzero;
                nonzero += u64::from(record.nonzero);
                cases.push((record.iterations as usize, record.status == kernels::STOPPED, f64::from(record.objective)));
            }
        }
        let l1_total: f64 = self.case_l1.iter().sum();
        let beta = self.settings.beta;
        // As FitRun::step: while forgetting, the weighted objective scaled to the set.
        let (to_set, l1_term) = if self.forgetting {
            self.weighted_l1 = factor * self.weighted_l1 + batch_l1;
            let to_set = self.rows as f64 / self.weighted_cases;
            (to_set, to_set * self.weighted_l1)
        } else {
            (1.0, l1_total)
        };
        let record = BatchRecord {
            pass,
            batch,
            first_case,
            cases: cases.len(),
            codes: CodeStepReport::from_cases(&cases),
            nonzero_fraction: nonzero as f64 / (cases.len() * n) as f64,
            objective_after_codes: to_set * outcome.before + beta * l1_term,
            objective_after_basis: to_set * outcome.after + beta * l1_term,
            basis_iterations: outcome.iterations,
            seconds_codes: coded - started,
            seconds_basis: finished - coded,
        };
        if batch + 1 == self.batches.len() {
            self.finish_pass().await?;
        } else {
            self.position.batch += 1;
        }
        Ok(Some(record))
    }

    /// Ends the pass under way: with `track_whole_set`, the whole set's objective measured on
    /// the device.
    pub async fn finish_pass(&mut self) -> Result<(), GpuError> {
        if self.settings.track_whole_set {
            let objective = self.measure().await?;
            self.passes.push(PassRecord { pass: self.position.pass, objective, seconds: self.pass_seconds });
        }
        self.position = FitPosition { pass: self.position.pass + 1, batch: 0 };
        self.pass_seconds = 0.0;
        Ok(())
    }

    /// The whole set's objective with every case's latest codes, from the reconstruction
    /// `A·Bᵀ` of each block (the sums per case in f32, over the cases in f64).
    pub async fn measure(&mut self) -> Result<Objective, GpuError> {
        let mut squared = 0.0f64;
        let mut l1 = 0.0f64;
        let mut nonzero = 0u64;
        for b in 0..self.blocks.len() {
            for record in self.measure_block(b).await? {
                squared += f64::from(record.objective);
                l1 += f64::from(record.l1);
                nonzero += u64::from(record.nonzero);
            }
        }
        let penalty = self.settings.beta * l1;
        Ok(Objective { total: squared + penalty, reconstruction: squared, penalty, nonzero_fraction: nonzero as f64 / (self.rows * self.n_bases).max(1) as f64 })
    }

    /// The basis step alone, on the statistics of every case's codes as they are (the
    /// objective `½‖X − ABᵀ‖²` before and after, as [`descend`](crate::sparse_coding::basis_step::descend)
    /// reports it).
    pub async fn descend(&mut self) -> Result<Descent, GpuError> {
        let outcome = self.basis_step(0..0).await?;
        Ok(Descent { iterations: outcome.iterations, retries: 0, reconstruction_before: outcome.before, reconstruction_after: outcome.after })
    }

    /// The basis as the device holds it. A column the device projected has norm 1 to within a
    /// few f32 roundings (at most 1 + 1e-6; `Basis::project_columns` makes it at most 1 in f64).
    pub async fn basis(&self) -> Result<Basis, GpuError> {
        let (basis, _) = self.snapshot(0..0).await?;
        Ok(basis)
    }

    /// The basis (as [`Self::basis`]: not projected again) and the codes of the cases of `batches` (in order), in
    /// one read-back.
    pub async fn snapshot(&self, batches: std::ops::Range<usize>) -> Result<(Basis, Vec<f32>), GpuError> {
        let (k, n) = (self.n_inputs, self.n_bases);
        let blocks = match (batches.start < batches.end).then(|| self.batches[batches.start].start..self.batches[batches.end - 1].end) {
            Some(blocks) => blocks,
            None => 0..0,
        };
        let mut ranges = vec![(&self.basis.basis, 0u64, (4 * k * n) as u64)];
        for block in &self.blocks[blocks] {
            ranges.push((&block.codes, 0, (4 * block.rows * n) as u64));
        }
        let parts = super::read_ranges(&self.ctx, &ranges).await?;
        let values: Vec<f32> = bytemuck::pod_collect_to_vec(&parts[0]);
        let codes = parts[1..].iter().flat_map(|part| bytemuck::pod_collect_to_vec::<u8, f32>(part)).collect();
        Ok((Basis { n_inputs: k, n_bases: n, values }, codes))
    }

    /// Every case's codes, `m × n`.
    pub async fn codes(&self) -> Result<Vec<f32>, GpuError> {
        let (_, codes) = self.snapshot(0..self.batches.len()).await?;
        Ok(codes)
    }

    /// The codes of `data` (`m × k`) for `basis` from zero by Raina's solver, on the device,
    /// in blocks of as many cases as the device holds; with the code step's report.
    pub async fn encode(ctx: &GpuContext, kernels: Arc<SparseCodingKernels>, basis: &Basis, data: &[f32], beta: f64, raina: &RainaSettings) -> Result<(Vec<f32>, CodeStepReport), GpuError> {
        let rows = check_data(basis, data).map_err(|e| GpuError(e.to_string()))?;
        let settings = FitSettings { beta, solver: CodeSolver::Raina(*raina), basis_step: BasisStepSettings::default(), batch_size: rows, passes: 1, track_whole_set: false, statistics: crate::sparse_coding::StatisticsRule::WholeSet };
        let codes = vec![0.0f32; rows * basis.n_bases];
        let mut fit = DeviceFit::new(ctx, kernels, basis, data, &codes, &settings, FitPosition { pass: 1, batch: 0 })?;
        let mut cases = Vec::with_capacity(rows);
        for b in 0..fit.blocks.len() {
            let records = fit.code_step(b, b == 0, false).await?;
            cases.extend(records.iter().map(|r| (r.iterations as usize, r.status == kernels::STOPPED, f64::from(r.objective))));
        }
        let codes = fit.codes().await?;
        Ok((codes, CodeStepReport::from_cases(&cases)))
    }
}
