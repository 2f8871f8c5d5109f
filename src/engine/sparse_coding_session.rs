//! Sparse coding learnt one mini-batch at a time, on the device or the CPU (issue 18): the
//! page's wasm API drives it one message at a time, and the engine suite checks it on every
//! backend.
//!
//! One [`SparseCodingSession::step`] is one mini-batch of [`fit`](crate::sparse_coding::fit):
//! its code step, then the basis step on the whole set's statistics. On a GPU engine, for the
//! settings the device runs (Raina's solver, the ColumnMajoriser basis step), the steps run on
//! the device ([`DeviceFit`]: everything resident, awaited read-backs, so a browser can drive
//! it); otherwise, and where the device cannot hold the problem, on the CPU, with the reason
//! in [`SparseCodingSession::backend_reason`]. On the CPU the session steps a [`FitRun`] (so a
//! CPU session takes `fit`'s steps bit for bit).
//!
//! After each device step the basis and the batch's codes are read back (one read-back), so
//! the session always holds the last good basis and every case's latest codes on the host,
//! and a lost device costs only the step in flight: that step fails naming the loss, the basis
//! and codes stay as they were before it, and the next step takes the same mini-batch again on
//! the CPU (a [`FitRun`] resumed from them).
//!
//! Each step's report has the whole set's objective after the step (from the statistics
//! `S = AᵀA`, `T = XᵀA` and `‖A‖₁`, as the batch record has it), the fraction of non-zero codes
//! over the whole set with every case's latest codes, and the step's seconds.

use std::sync::Arc;

use super::Engine;
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::clock::now_seconds;
use crate::gpu::sparse_coding::{DeviceFit, SparseCodingKernels};
use crate::sparse_coding::basis_step::half_norm2;
use crate::sparse_coding::fit::{FitPosition, FitRun};
use crate::sparse_coding::products::{check_codes, check_data, objective, reconstruct, Objective};
use crate::sparse_coding::{Basis, BatchRecord, FitSettings, PassRecord};

/// What one step did.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StepReport {
    /// The mini-batch's record (`None` once every pass has been made: nothing was done).
    pub record: Option<BatchRecord>,
    /// The whole set's objective `½‖X − BA‖² + β‖A‖₁` with every case's latest codes, after
    /// the step.
    pub objective: f64,
    /// The fraction of non-zero codes over the whole set, after the step.
    pub nonzero_fraction: f64,
    /// This step's wall-clock time.
    pub seconds: f64,
    /// Every pass has been made: no further step changes the basis.
    pub done: bool,
}

/// Where the steps run.
enum Side {
    Cpu(Box<FitRun>),
    /// The device, and where its fit stands (its records of whole passes are the session's).
    Device(Box<DeviceFit>),
}

/// A sparse coding fit in progress, one mini-batch at a time.
pub struct SparseCodingSession {
    side: Side,
    /// Why the steps run on the CPU where a device was offered (or lost).
    backend_reason: Option<String>,
    data: Arc<[f32]>,
    settings: FitSettings,
    /// The last good basis.
    basis: Basis,
    /// Every case's latest codes, `m × n`.
    codes: Vec<f32>,
    /// Non-zero codes of each case, for the whole set's fraction.
    nonzero: Vec<u32>,
    records: Vec<BatchRecord>,
    /// With `track_whole_set`: the whole set's objective before the first pass and after each.
    passes: Vec<PassRecord>,
    initial_objective: f64,
    objective: f64,
    /// The objective after each step.
    history: Vec<f64>,
    seconds: f64,
    /// The engine the session was started on, for a simulated loss.
    engine: Engine,
}

impl SparseCodingSession {
    /// A fit of `basis` to `data` (`m × k`, cases as rows) from zero codes, ready to step where
    /// `engine` says.
    pub async fn start(engine: &Engine, basis: Basis, data: Arc<[f32]>, settings: FitSettings) -> Result<SparseCodingSession, String> {
        let rows = check_data(&basis, &data).map_err(|e| e.to_string())?;
        let codes = vec![0.0f32; rows * basis.n_bases];
        Self::start_with_codes(engine, basis, data, codes, settings).await
    }

    /// [`Self::start`] from given codes (`m × n`: a warm start).
    pub async fn start_with_codes(engine: &Engine, basis: Basis, data: Arc<[f32]>, codes: Vec<f32>, settings: FitSettings) -> Result<SparseCodingSession, String> {
        let started = now_seconds();
        settings.validate().map_err(|e| e.to_string())?;
        let rows = check_data(&basis, &data).map_err(|e| e.to_string())?;
        check_codes(&basis, rows, &codes).map_err(|e| e.to_string())?;
        let n = basis.n_bases;
        let (side, backend_reason) = match engine.sparse_coding_device(&settings) {
            Ok(ctx) => match DeviceFit::new(ctx, Arc::new(SparseCodingKernels::new(ctx)), &basis, &data, &codes, &settings, FitPosition { pass: 1, batch: 0 }) {
                Ok(device) => (Some(Side::Device(Box::new(device))), None),
                Err(e) => (None, Some(format!("the device cannot run this fit ({e}), so the CPU does"))),
            },
            Err(reason) => (None, reason),
        };
        let side = match side {
            Some(side) => side,
            None => Side::Cpu(Box::new(FitRun::start(&CpuBackend, &basis, &data, &codes, &settings).map_err(|e| e.to_string())?)),
        };
        let measured = |data: &[f32]| -> Result<Objective, String> {
            if codes.iter().all(|&a| a == 0.0) {
                let half = half_norm2(data);
                Ok(Objective { total: half, reconstruction: half, penalty: 0.0, nonzero_fraction: 0.0 })
            } else {
                objective(&CpuBackend, &basis, data, &codes, settings.beta).map_err(|e| e.to_string())
            }
        };
        let (initial_objective, passes) = match &side {
            Side::Cpu(run) => match run.passes().first() {
                Some(pass) => (pass.objective.total, run.passes().to_vec()),
                None => (measured(&data)?.total, Vec::new()),
            },
            Side::Device(_) => {
                let at_start = measured(&data)?;
                (at_start.total, if settings.track_whole_set { vec![PassRecord { pass: 0, objective: at_start, seconds: 0.0 }] } else { Vec::new() })
            }
        };
        let nonzero = codes.chunks_exact(n).map(|a| a.iter().filter(|&&v| v != 0.0).count() as u32).collect();
        Ok(SparseCodingSession {
            side,
            backend_reason,
            data,
            settings,
            basis,
            codes,
            nonzero,
            records: Vec::new(),
            passes,
            initial_objective,
            objective: initial_objective,
            history: Vec::new(),
            seconds: now_seconds() - started,
            engine: engine.clone(),
        })
    }

    /// One mini-batch: its code step and the basis step. A lost device is an error naming it;
    /// the basis and codes keep their values from before the step, and the next step takes
    /// the same mini-batch on the CPU.
    pub async fn step(&mut self) -> Result<StepReport, String> {
        let started = now_seconds();
        if self.done() {
            return Ok(StepReport { record: None, objective: self.objective, nonzero_fraction: self.nonzero_fraction(), seconds: 0.0, done: true });
        }
        let record = match &mut self.side {
            Side::Cpu(run) => {
                let record = run.step(&CpuBackend, &mut self.basis, &self.data, &mut self.codes).map_err(|e| e.to_string())?;
                self.passes = run.passes().to_vec();
                record
            }
            Side::Device(device) => {
                let position = device.position();
                match Self::device_step(device).await {
                    Ok((record, basis, codes)) => {
                        self.basis = basis;
                        let n = self.basis.n_bases;
                        self.codes[record.first_case * n..(record.first_case + record.cases) * n].copy_from_slice(&codes);
                        self.passes.truncate(usize::from(self.settings.track_whole_set));
                        self.passes.extend_from_slice(device.passes());
                        Some(record)
                    }
                    Err(why) => {
                        self.fall_back(&why, position)?;
                        return Err(format!(
                            "the device was lost during pass {} batch {} ({why}); the basis and codes keep their values from before it, and the next step takes that batch again on the CPU",
                            position.pass,
                            position.batch + 1
                        ));
                    }
                }
            }
        };
        let seconds = now_seconds() - started;
        self.seconds += seconds;
        let record = record.expect("a step of a run not done");
        self.count_nonzero(record.first_case, record.cases);
        self.objective = record.objective_after_basis;
        self.history.push(self.objective);
        self.records.push(record.clone());
        Ok(StepReport { record: Some(record), objective: self.objective, nonzero_fraction: self.nonzero_fraction(), seconds, done: self.done() })
    }

    /// One step on the device and the state it leaves: its record, the basis and the batch's
    /// codes (one read-back).
    async fn device_step(device: &mut DeviceFit) -> Result<(BatchRecord, Basis, Vec<f32>), String> {
        let record = device.step().await.map_err(|e| e.to_string())?.ok_or("the device's fit had no batch left")?;
        let (basis, codes) = device.snapshot(record.batch..record.batch + 1).await.map_err(|e| e.to_string())?;
        Ok((record, basis, codes))
    }

    /// The steps move to the CPU for good, from the last good basis and codes, at `position`.
    fn fall_back(&mut self, why: &str, position: FitPosition) -> Result<(), String> {
        let run = FitRun::resume(&CpuBackend, &self.basis, &self.data, &self.codes, &self.settings, position).map_err(|e| e.to_string())?;
        self.side = Side::Cpu(Box::new(run.with_passes(self.passes.clone())));
        self.backend_reason = Some(format!("the device was lost ({why}), so the CPU goes on from the last good basis"));
        Ok(())
    }

    fn count_nonzero(&mut self, first: usize, cases: usize) {
        let n = self.basis.n_bases;
        for (case, a) in self.codes[first * n..(first + cases) * n].chunks_exact(n).enumerate() {
            self.nonzero[first + case] = a.iter().filter(|&&v| v != 0.0).count() as u32;
        }
    }

    /// Whether the steps run on the device.
    pub fn on_device(&self) -> bool {
        matches!(self.side, Side::Device(_))
    }

    /// Why the steps run on the CPU although the session was started on a device.
    pub fn backend_reason(&self) -> Option<&str> {
        self.backend_reason.as_deref()
    }

    /// The pass under way (1-based) and its next mini-batch (0-based).
    pub fn position(&self) -> FitPosition {
        match &self.side {
            Side::Cpu(run) => run.position(),
            Side::Device(device) => device.position(),
        }
    }

    /// Every pass has been made.
    pub fn done(&self) -> bool {
        self.position().pass > self.settings.passes
    }

    pub fn batches_per_pass(&self) -> usize {
        self.rows().div_ceil(self.settings.batch_size)
    }

    /// The basis after the last step.
    pub fn basis(&self) -> &Basis {
        &self.basis
    }

    /// Every case's latest codes, `m × n`.
    pub fn codes(&self) -> &[f32] {
        &self.codes
    }

    pub fn data(&self) -> &Arc<[f32]> {
        &self.data
    }

    pub fn rows(&self) -> usize {
        self.data.len() / self.basis.n_inputs
    }

    pub fn settings(&self) -> &FitSettings {
        &self.settings
    }

    /// Every step's record, in order.
    pub fn records(&self) -> &[BatchRecord] {
        &self.records
    }

    /// With `track_whole_set`: the whole set's objective measured from the reconstruction
    /// before the first pass and after each finished pass (where the steps ran).
    pub fn passes(&self) -> &[PassRecord] {
        &self.passes
    }

    /// The whole set's objective with every case's latest codes (from the statistics, as the
    /// batch records have it; at the start, measured).
    pub fn objective(&self) -> f64 {
        self.objective
    }

    pub fn initial_objective(&self) -> f64 {
        self.initial_objective
    }

    /// The objective after each step.
    pub fn history(&self) -> &[f64] {
        &self.history
    }

    /// The fraction of non-zero codes over the whole set.
    pub fn nonzero_fraction(&self) -> f64 {
        let total: u64 = self.nonzero.iter().map(|&c| u64::from(c)).sum();
        total as f64 / self.codes.len().max(1) as f64
    }

    /// The whole set's objective measured from the reconstruction `BA` (on the CPU), with its
    /// parts: a check on the statistics' figure.
    pub fn measure(&self) -> Result<Objective, String> {
        objective(&CpuBackend, &self.basis, &self.data, &self.codes, self.settings.beta).map_err(|e| e.to_string())
    }

    /// The reconstructions `Ba` of cases `first .. first + count` (`count × k`, on the CPU).
    pub fn reconstructions(&self, first: usize, count: usize) -> Result<Vec<f32>, String> {
        let rows = self.rows();
        if first >= rows || count == 0 || first + count > rows {
            return Err(format!("cases {first}..{} are not among the {rows} cases", first + count));
        }
        let n = self.basis.n_bases;
        Ok(reconstruct(&CpuBackend as &dyn Backend, &self.basis, &self.codes[first * n..(first + count) * n]))
    }

    /// Wall-clock seconds of the start and every step.
    pub fn seconds(&self) -> f64 {
        self.seconds
    }

    /// Testing hook: destroys the device, as a driver reset or a lost adapter would.
    pub fn simulate_device_loss(&self) {
        if self.on_device() {
            self.engine.simulate_loss();
        }
    }
}
