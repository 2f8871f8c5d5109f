//! Sparse coding on the engine's side (issue 18, `deepbelief sparse-coding`, `bench
//! --sparse-coding`): a fit and the codes of new cases on the device where the engine is a GPU
//! and the settings are the device's (Raina's solver, the ColumnMajoriser basis step), else the
//! CPU reference, with a notice saying why. The page steps a fit through
//! [`sparse_coding_session`](super::sparse_coding_session) instead.

use std::sync::Arc;

use super::Engine;
use crate::backend::cpu::CpuBackend;
use crate::gpu::sparse_coding::{unsupported, DeviceFit, SparseCodingKernels};
use crate::gpu::GpuContext;
use crate::sparse_coding::basis_step::{descend, BasisStatistics, Descent};
use crate::sparse_coding::codes::CodeStepReport;
use crate::sparse_coding::products::{check_codes, check_data};
use crate::sparse_coding::fit::FitPosition;
use crate::sparse_coding::{encode, fit, Basis, BasisStepSettings, BatchRecord, CodeSolver, FitReport, FitSettings, PassRecord};

/// A fit's report, and where it ran.
#[derive(Clone, Debug)]
pub struct SparseCodingRun {
    pub report: FitReport,
    pub on_device: bool,
    /// Why a GPU engine's fit ran on the CPU.
    pub notice: Option<String>,
}

impl Engine {
    /// The device for a sparse coding fit with `settings`, or why the CPU runs it (`None`:
    /// the CPU engine, no notice).
    pub fn sparse_coding_device(&self, settings: &FitSettings) -> Result<&GpuContext, Option<String>> {
        match self {
            Engine::Cpu => Err(None),
            Engine::Gpu(ctx) => match unsupported(settings) {
                Some(why) => Err(Some(why)),
                None => Ok(ctx),
            },
        }
    }

    /// Fits `basis` to `data` (`m × k`) from `codes` (`m × n`) as
    /// [`fit`](crate::sparse_coding::fit) does, on the device where it can (see the module
    /// docs); `on_batch` sees each batch's record, `false` stops after it. The basis and codes
    /// are read back at the end.
    pub async fn fit_sparse_coding(&self, basis: &mut Basis, data: &[f32], codes: &mut [f32], settings: &FitSettings, on_batch: &mut dyn FnMut(&BatchRecord) -> bool) -> Result<SparseCodingRun, String> {
        let cpu = |notice: Option<String>, basis: &mut Basis, codes: &mut [f32], on_batch: &mut dyn FnMut(&BatchRecord) -> bool| {
            fit(&CpuBackend, basis, data, codes, settings, on_batch).map(|report| SparseCodingRun { report, on_device: false, notice }).map_err(|e| e.to_string())
        };
        let ctx = match self.sparse_coding_device(settings) {
            Ok(ctx) => ctx,
            Err(notice) => return cpu(notice, basis, codes, on_batch),
        };
        settings.validate().map_err(|e| e.to_string())?;
        let kernels = Arc::new(SparseCodingKernels::new(ctx));
        let mut device = match DeviceFit::new(ctx, kernels, basis, data, codes, settings, FitPosition { pass: 1, batch: 0 }) {
            Ok(device) => device,
            Err(e) => return cpu(Some(format!("the device cannot run this fit ({e})")), basis, codes, on_batch),
        };
        let lost = |e: crate::gpu::GpuError| format!("sparse coding on the device failed: {e}");
        let mut report = FitReport::default();
        let mut passes = Vec::new();
        if settings.track_whole_set {
            passes.push(PassRecord { pass: 0, objective: device.measure().await.map_err(lost)?, seconds: 0.0 });
        }
        while let Some(record) = device.step().await.map_err(lost)? {
            let go_on = on_batch(&record);
            report.batches.push(record);
            if !go_on {
                report.cancelled = true;
                if device.position().batch > 0 {
                    device.finish_pass().await.map_err(lost)?;
                }
                break;
            }
        }
        passes.extend_from_slice(device.passes());
        report.passes = passes;
        let (learnt, all_codes) = device.snapshot(0..settings_batches(data.len() / basis.n_inputs, settings.batch_size)).await.map_err(lost)?;
        *basis = learnt;
        codes.copy_from_slice(&all_codes);
        Ok(SparseCodingRun { report, on_device: true, notice: None })
    }

    /// The basis step alone (projected gradient, as
    /// [`descend`](crate::sparse_coding::basis_step::descend)) on the statistics of `data`
    /// (`m × k`) with `codes` (`m × n`): on the device for the ColumnMajoriser rule on a GPU
    /// engine, else on the CPU.
    pub async fn sparse_coding_basis_step(&self, basis: &mut Basis, data: &[f32], codes: &[f32], settings: &BasisStepSettings) -> Result<Descent, String> {
        settings.validate().map_err(|e| e.to_string())?;
        let rows = check_data(basis, data).map_err(|e| e.to_string())?;
        check_codes(basis, rows, codes).map_err(|e| e.to_string())?;
        let fit_settings = FitSettings { beta: 1.0, solver: CodeSolver::raina(), basis_step: *settings, batch_size: rows, passes: 1, track_whole_set: false, statistics: crate::sparse_coding::StatisticsRule::WholeSet };
        match self.sparse_coding_device(&fit_settings) {
            Ok(ctx) => {
                let kernels = Arc::new(SparseCodingKernels::new(ctx));
                let mut device = DeviceFit::new(ctx, kernels, basis, data, codes, &fit_settings, FitPosition { pass: 1, batch: 0 }).map_err(|e| e.to_string())?;
                let descent = device.descend().await.map_err(|e| e.to_string())?;
                *basis = device.basis().await.map_err(|e| e.to_string())?;
                Ok(descent)
            }
            Err(_) => {
                let statistics = BasisStatistics::of(&CpuBackend, basis.n_inputs, basis.n_bases, data, codes);
                Ok(descend(&CpuBackend, basis, &statistics, settings))
            }
        }
    }

    /// The codes of `data` (`m × k`) for `basis` from zero, with the code step's report: on
    /// the device for Raina's solver on a GPU engine, else on the CPU.
    pub async fn encode_sparse(&self, basis: &Basis, data: &[f32], beta: f64, solver: &CodeSolver) -> Result<(Vec<f32>, CodeStepReport), String> {
        match (self, solver) {
            (Engine::Gpu(ctx), CodeSolver::Raina(raina)) => {
                solver.validate().map_err(|e| e.to_string())?;
                let kernels = Arc::new(SparseCodingKernels::new(ctx));
                DeviceFit::encode(ctx, kernels, basis, data, beta, raina).await.map_err(|e| e.to_string())
            }
            _ => encode(&CpuBackend, basis, data, beta, solver).map_err(|e| e.to_string()),
        }
    }
}

/// Mini-batches per pass.
fn settings_batches(rows: usize, batch_size: usize) -> usize {
    rows.div_ceil(batch_size.max(1))
}
