//! Issue 18's Table 4 replica (Raina, Madhavan & Ng 2009): seconds for one pass of sparse
//! coding — code step and basis step on every mini-batch — over 5,000 patches of 32×32
//! pixels with 1,024 bases in mini-batches of 1,000, at β giving 3%, 6% and 10% non-zero
//! codes. `deepbelief bench --sparse-coding` prints one [`SparseCodingBenchRow`] per sparsity
//! and solver; the peers (scikit-learn's `MiniBatchDictionaryLearning` with coordinate descent,
//! and a NumPy port of Raina's algorithm) are in `bench/sparse_coding_sklearn.py`, which draws
//! the same patches and the same initial basis.
//!
//! Every row of a sparsity starts from the same problem: the patches (from PNG images, or
//! without them from [`grating_images`], Philox-drawn gratings plus noise), centred and scaled
//! as `sparse-coding --images` does ([`centre_and_scale`]); the initial basis
//! [`Basis::initialise`] (seed [`BASIS_SEED`]); β from [`beta_for_sparsity`] on the first 1,000
//! patches with coordinate descent (untimed). The timed part is [`fit`] for one pass from zero
//! codes. After it, untimed: the whole set's objective with each patch's codes from the pass
//! (`objective_stored`) and with codes solved afresh by coordinate descent for the final basis
//! (`objective`, the figure comparable across implementations whose code steps differ).
//!
//! On the device ([`bench_gpu`], `bench --sparse-coding --backend gpu`) the pass is
//! [`DeviceFit`]'s, Raina's solver and the ColumnMajoriser basis step: `seconds` is the batches'
//! steps with everything resident, `seconds_with_transfers` adds the upload and the read-back of
//! the basis and every code; one untimed warm-up pass goes first. The β search and the untimed
//! objectives stay on the CPU reference, so a device row and a CPU row of a sparsity share β and
//! compare their objectives on the same footing. The PyTorch port of the same pass is
//! `bench/sparse_coding_torch.py`.

use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::clock::now_seconds;
use crate::data::patches::{sample_patches, GreyImage};
use crate::rng::{Purpose, RngStream};
use crate::sparse_coding::inputs::centre_and_scale;
use crate::gpu::sparse_coding::{unsupported, DeviceFit, SparseCodingKernels};
use crate::gpu::GpuContext;
use crate::sparse_coding::fit::FitPosition;
use crate::sparse_coding::{beta_for_sparsity, encode, fit, objective, Basis, BasisStepSettings, CodeSolver, FitReport, FitSettings, SparsitySearch, SparsitySettings, StatisticsRule};
use serde::Serialize;
use std::sync::Arc;

/// Table 4's shape.
pub const CASES: usize = 5000;
pub const PATCH: usize = 32;
pub const BASES: usize = 1024;
pub const BATCH: usize = 1000;
pub const SPARSITIES: [f64; 3] = [0.03, 0.06, 0.10];
/// Patches cut by `sample_patches` with this seed (step 0 of `DataSample`).
pub const DATA_SEED: u64 = 1;
/// `Basis::initialise`'s seed.
pub const BASIS_SEED: u64 = 1;
/// Cases the β search codes (the first ones).
pub const SEARCH_CASES: usize = 1000;
/// The gratings: this many images of this side, from steps 2 (parameters) and 3 (noise) of
/// `DataSample` under seed `DATA_SEED`.
pub const GRATING_IMAGES: usize = 8;
pub const GRATING_SIDE: usize = 256;
const GRATING_PARAMETER_STEP: u64 = 2;
const GRATING_NOISE_STEP: u64 = 3;

/// What one run measures.
#[derive(Clone, Debug)]
pub struct SparseCodingBenchSettings {
    pub cases: usize,
    pub patch: usize,
    pub bases: usize,
    pub batch: usize,
    pub sparsities: Vec<f64>,
    pub solvers: Vec<CodeSolver>,
    pub statistics: StatisticsRule,
}

impl Default for SparseCodingBenchSettings {
    fn default() -> Self {
        SparseCodingBenchSettings { cases: CASES, patch: PATCH, bases: BASES, batch: BATCH, sparsities: SPARSITIES.to_vec(), solvers: vec![CodeSolver::coordinate_descent(), CodeSolver::raina()], statistics: StatisticsRule::default() }
    }
}

/// One sparsity and solver: a JSON line of `deepbelief bench --sparse-coding`.
#[derive(Clone, Debug, Serialize)]
pub struct SparseCodingBenchRow {
    pub sparsity_target: f64,
    pub beta: f64,
    /// The non-zero fraction the β search reached on its cases.
    pub search_nonzero_fraction: f64,
    /// `raina` or `cd`.
    pub solver: String,
    pub cases: usize,
    pub inputs: usize,
    pub bases: usize,
    pub batch: usize,
    /// `forgetting` or `whole-set`.
    pub statistics: &'static str,
    /// The pass, timed: every batch's code step and basis step.
    pub seconds: f64,
    pub seconds_codes: f64,
    pub seconds_basis: f64,
    /// On the device: `seconds` plus the upload of the cases, codes and basis and the read-back
    /// of the basis and every code (absent on the CPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_with_transfers: Option<f64>,
    /// The whole set's objective with codes solved afresh (coordinate descent) for the final
    /// basis; and with each patch's codes from the pass.
    pub objective: f64,
    pub objective_stored: f64,
    /// The fraction of non-zero codes: fresh (as `objective`), and from the pass.
    pub nonzero_fraction: f64,
    pub nonzero_fraction_stored: f64,
    /// Iterations (Raina) or sweeps (coordinate descent) per case: mean over the batches of
    /// their means, and the most.
    pub code_iterations_mean: f64,
    pub code_iterations_max: usize,
    /// Cases stopped by the iteration limit.
    pub unconverged: usize,
    pub basis_iterations_mean: f64,
    pub threads: usize,
    pub device: String,
    /// `images` or `gratings`.
    pub data: String,
}

/// `count` grey `side × side` images, each three gratings plus noise: grating `g` of image
/// `i` has angle `π·u₀`, wavelength `4 + 12·u₁` pixels, amplitude `0.5 + u₂` and phase `2π·u₃`
/// with `u_q` uniform `12i + 4g + q` of `(seed, step 2, DataSample)`; pixel `p` adds
/// `0.6·(u − 0.5)`, `u` uniform `i·side² + p` of `(seed, step 3, DataSample)`. In `f64`.
pub fn grating_images(count: usize, side: usize, seed: u64) -> Vec<GreyImage> {
    let parameters = RngStream::new(seed, GRATING_PARAMETER_STEP, Purpose::DataSample);
    let noise = RngStream::new(seed, GRATING_NOISE_STEP, Purpose::DataSample);
    (0..count)
        .map(|i| {
            let u = |g: usize, q: usize| f64::from(parameters.uniform((12 * i + 4 * g + q) as u64));
            let gratings: Vec<[f64; 4]> = (0..3).map(|g| [std::f64::consts::PI * u(g, 0), 4.0 + 12.0 * u(g, 1), 0.5 + u(g, 2), std::f64::consts::TAU * u(g, 3)]).collect();
            let pixels = (0..side * side)
                .map(|p| {
                    let (y, x) = ((p / side) as f64, (p % side) as f64);
                    let waves: f64 = gratings
                        .iter()
                        .map(|&[angle, wavelength, amplitude, phase]| {
                            let f = std::f64::consts::TAU / wavelength;
                            amplitude * (angle.cos() * f * x + angle.sin() * f * y + phase).sin()
                        })
                        .sum();
                    (waves + 0.6 * (f64::from(noise.uniform((i * side * side + p) as u64)) - 0.5)) as f32
                })
                .collect();
            GreyImage { rows: side, cols: side, pixels }
        })
        .collect()
}

/// The benchmark's patches: `cases` of `side × side` cut from `images` (seed [`DATA_SEED`]),
/// each patch's mean removed and all scaled to unit variance.
pub fn bench_patches(images: &[GreyImage], side: usize, cases: usize) -> Result<Vec<f32>, String> {
    let mut patches = sample_patches(images, side, cases, DATA_SEED).map_err(|e| e.to_string())?;
    centre_and_scale(&mut patches.values, side * side).map_err(|e| e.to_string())?;
    Ok(patches.values)
}

/// The settings a run accepts; an error names the flag.
pub fn check_settings(settings: &SparseCodingBenchSettings) -> Result<(), String> {
    let flags = [("--cases", settings.cases), ("--patch", settings.patch), ("--bases", settings.bases), ("--coding-batch", settings.batch)];
    if let Some((flag, _)) = flags.iter().find(|(_, value)| *value == 0) {
        return Err(format!("{flag} is 0; expected at least 1"));
    }
    if let Some(s) = settings.sparsities.iter().find(|&&s| !(s > 0.0 && s < 1.0)) {
        return Err(format!("--sparsities has {s}; expected fractions strictly between 0 and 1"));
    }
    if settings.sparsities.is_empty() || settings.solvers.is_empty() {
        return Err("--sparsities and --solvers need at least one value each".into());
    }
    Ok(())
}

/// The problem every row of a run shares: the initial basis, and per target sparsity the β
/// searched on the first [`SEARCH_CASES`] patches with coordinate descent (untimed, on the CPU).
struct Problem {
    initial: Basis,
    searches: Vec<(f64, SparsitySearch)>,
    inputs: usize,
    cases: usize,
}

fn problem(data: &[f32], settings: &SparseCodingBenchSettings) -> Result<Problem, String> {
    check_settings(settings)?;
    let inputs = settings.patch * settings.patch;
    let cases = data.len() / inputs;
    let initial = Basis::initialise(inputs, settings.bases, BASIS_SEED).map_err(|e| e.to_string())?;
    let sample = &data[..cases.min(SEARCH_CASES) * inputs];
    let mut searches = Vec::new();
    for &target in &settings.sparsities {
        let search = beta_for_sparsity(&CpuBackend, &initial, sample, &SparsitySettings::new(target), &CodeSolver::coordinate_descent()).map_err(|e| format!("sparsity {target}: {e}"))?;
        searches.push((target, search));
    }
    Ok(Problem { initial, searches, inputs, cases })
}

/// One pass's fit settings (no whole-set tracking: nothing untimed inside the timed part).
fn pass_settings(beta: f64, solver: CodeSolver, settings: &SparseCodingBenchSettings) -> FitSettings {
    FitSettings { beta, solver, basis_step: BasisStepSettings::default(), batch_size: settings.batch, passes: 1, track_whole_set: false, statistics: settings.statistics }
}

/// What a timed pass left, and how long it took.
struct Pass {
    basis: Basis,
    codes: Vec<f32>,
    report: FitReport,
    seconds: f64,
    seconds_with_transfers: Option<f64>,
    device: String,
}

/// The row of a pass: the untimed objectives (on the CPU reference) and the report's figures.
fn row_of(problem: &Problem, settings: &SparseCodingBenchSettings, (target, search): &(f64, SparsitySearch), solver: &CodeSolver, data: &[f32], data_name: &str, pass: Pass) -> Result<SparseCodingBenchRow, String> {
    let Pass { basis, codes, report, seconds, seconds_with_transfers, device } = pass;
    let stored = objective(&CpuBackend, &basis, data, &codes, search.beta).map_err(|e| e.to_string())?;
    let (fresh, _) = encode(&CpuBackend, &basis, data, search.beta, &CodeSolver::coordinate_descent()).map_err(|e| e.to_string())?;
    let solved = objective(&CpuBackend, &basis, data, &fresh, search.beta).map_err(|e| e.to_string())?;
    let batches = report.batches.len().max(1) as f64;
    Ok(SparseCodingBenchRow {
        sparsity_target: *target,
        beta: search.beta,
        search_nonzero_fraction: search.nonzero_fraction,
        solver: solver.name().into(),
        cases: problem.cases,
        inputs: problem.inputs,
        bases: settings.bases,
        batch: settings.batch,
        statistics: settings.statistics.name(),
        seconds,
        seconds_codes: report.batches.iter().map(|b| b.seconds_codes).sum(),
        seconds_basis: report.batches.iter().map(|b| b.seconds_basis).sum(),
        seconds_with_transfers,
        objective: solved.total,
        objective_stored: stored.total,
        nonzero_fraction: solved.nonzero_fraction,
        nonzero_fraction_stored: stored.nonzero_fraction,
        code_iterations_mean: report.batches.iter().map(|b| b.codes.iterations_mean).sum::<f64>() / batches,
        code_iterations_max: report.batches.iter().map(|b| b.codes.iterations_max).max().unwrap_or(0),
        unconverged: report.batches.iter().map(|b| b.codes.unconverged).sum(),
        basis_iterations_mean: report.batches.iter().map(|b| b.basis_iterations as f64).sum::<f64>() / batches,
        threads: rayon::current_num_threads(),
        device,
        data: data_name.into(),
    })
}

/// One pass on the CPU reference from zero codes, timed.
fn cpu_pass(initial: &Basis, data: &[f32], fit_settings: &FitSettings) -> Result<Pass, String> {
    let mut basis = initial.clone();
    let mut codes = vec![0.0f32; data.len() / initial.n_inputs * initial.n_bases];
    let started = now_seconds();
    let report = fit(&CpuBackend, &mut basis, data, &mut codes, fit_settings, &mut |_| true).map_err(|e| e.to_string())?;
    let seconds = now_seconds() - started;
    Ok(Pass { basis, codes, report, seconds, seconds_with_transfers: None, device: CpuBackend.describe() })
}

/// Every sparsity × solver row on the CPU reference, `on_row` seeing each as it is measured.
pub fn bench_cpu(data: &[f32], settings: &SparseCodingBenchSettings, data_name: &str, mut on_row: impl FnMut(&SparseCodingBenchRow)) -> Result<Vec<SparseCodingBenchRow>, String> {
    let problem = problem(data, settings)?;
    let mut rows = Vec::new();
    for target_search in &problem.searches {
        let search = &target_search.1;
        for solver in &settings.solvers {
            let pass = cpu_pass(&problem.initial, data, &pass_settings(search.beta, *solver, settings))?;
            let row = row_of(&problem, settings, target_search, solver, data, data_name, pass)?;
            on_row(&row);
            rows.push(row);
        }
    }
    Ok(rows)
}

/// One pass on the device from zero codes ([`DeviceFit`], as `Engine::fit_sparse_coding` runs
/// it). `seconds` is the batches' steps with the cases and codes resident (each step ends on a
/// read-back, so the device has finished it); `seconds_with_transfers` adds the upload of the
/// cases, codes and basis and the read-back of the basis and every code.
async fn device_pass(ctx: &GpuContext, kernels: &Arc<SparseCodingKernels>, initial: &Basis, data: &[f32], fit_settings: &FitSettings, batches: Option<usize>) -> Result<Pass, String> {
    let lost = |e: crate::gpu::GpuError| format!("sparse coding on the device: {e}");
    let codes = vec![0.0f32; data.len() / initial.n_inputs * initial.n_bases];
    let started = now_seconds();
    let mut device = DeviceFit::new(ctx, kernels.clone(), initial, data, &codes, fit_settings, FitPosition { pass: 1, batch: 0 }).map_err(lost)?;
    let mut report = FitReport::default();
    while let Some(record) = device.step().await.map_err(lost)? {
        report.batches.push(record);
        if batches.is_some_and(|b| report.batches.len() >= b) {
            break;
        }
    }
    let batches_done = report.batches.len();
    let (basis, codes) = device.snapshot(0..batches_done).await.map_err(lost)?;
    let seconds_with_transfers = now_seconds() - started;
    let seconds = report.batches.iter().map(|b| b.seconds_codes + b.seconds_basis).sum();
    Ok(Pass { basis, codes, report, seconds, seconds_with_transfers: Some(seconds_with_transfers), device: format!("GPU (wgpu: {}, {})", ctx.adapter_info.name, ctx.summary().backend) })
}

/// Every sparsity × solver row with Raina's solver on the device (after one untimed warm-up
/// pass that builds the kernels' pipelines, the GEMMs' first dispatches of these shapes, and
/// brings the GPU's clocks up: with one warm-up batch the first row took 0.87 s against the
/// others' 0.19–0.23 on an H200, for the same iteration counts);
/// rows of another solver run on the CPU reference (their `device` says so), as
/// `Engine::fit_sparse_coding` runs them.
pub async fn bench_gpu(ctx: &GpuContext, data: &[f32], settings: &SparseCodingBenchSettings, data_name: &str, mut on_row: impl FnMut(&SparseCodingBenchRow)) -> Result<Vec<SparseCodingBenchRow>, String> {
    let problem = problem(data, settings)?;
    let kernels = Arc::new(SparseCodingKernels::new(ctx));
    let mut rows = Vec::new();
    let mut warm = false;
    for target_search in &problem.searches {
        let search = &target_search.1;
        for solver in &settings.solvers {
            let fit_settings = pass_settings(search.beta, *solver, settings);
            let pass = if unsupported(&fit_settings).is_none() {
                if !warm {
                    device_pass(ctx, &kernels, &problem.initial, data, &fit_settings, None).await?;
                    warm = true;
                }
                device_pass(ctx, &kernels, &problem.initial, data, &fit_settings, None).await?
            } else {
                cpu_pass(&problem.initial, data, &fit_settings)?
            };
            let row = row_of(&problem, settings, target_search, solver, data, data_name, pass)?;
            on_row(&row);
            rows.push(row);
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gratings_are_the_philox_streams_values() {
        let images = grating_images(2, 5, 7);
        let parameters = RngStream::new(7, 2, Purpose::DataSample);
        let noise = RngStream::new(7, 3, Purpose::DataSample);
        // Image 1, pixel (row 2, column 3), written out.
        let (i, y, x) = (1usize, 2.0f64, 3.0f64);
        let mut expected = 0.0f64;
        for g in 0..3 {
            let u = |q: usize| f64::from(parameters.uniform((12 * i + 4 * g + q) as u64));
            let (angle, wavelength, amplitude, phase) = (std::f64::consts::PI * u(0), 4.0 + 12.0 * u(1), 0.5 + u(2), std::f64::consts::TAU * u(3));
            let f = std::f64::consts::TAU / wavelength;
            expected += amplitude * (angle.cos() * f * x + angle.sin() * f * y + phase).sin();
        }
        expected += 0.6 * (f64::from(noise.uniform((25 + 2 * 5 + 3) as u64)) - 0.5);
        assert_eq!(images[1].pixels[2 * 5 + 3], expected as f32);
        assert_ne!(images[0].pixels, images[1].pixels);
    }

    #[test]
    fn rows_report_one_pass_per_sparsity_and_solver() {
        let settings = SparseCodingBenchSettings { cases: 120, patch: 6, bases: 12, batch: 50, sparsities: vec![0.1, 0.2], solvers: vec![CodeSolver::coordinate_descent(), CodeSolver::raina()], statistics: StatisticsRule::default() };
        let data = bench_patches(&grating_images(2, 40, DATA_SEED), 6, 120).unwrap();
        let mut seen = 0;
        let rows = bench_cpu(&data, &settings, "gratings", |_| seen += 1).unwrap();
        assert_eq!((rows.len(), seen), (4, 4));
        for row in &rows {
            assert_eq!((row.cases, row.inputs, row.bases, row.batch), (120, 36, 12, 50));
            assert!((row.search_nonzero_fraction - row.sparsity_target).abs() <= 0.05 * row.sparsity_target, "{row:?}");
            assert!(row.seconds >= row.seconds_codes && row.seconds.is_finite());
            // Fresh codes for the final basis are at least as good as the pass's.
            assert!(row.objective <= row.objective_stored * (1.0 + 1e-6), "{row:?}");
            let initial = 0.5 * data.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>();
            assert!(row.objective < initial);
        }
        assert_eq!(rows[0].beta, rows[1].beta, "both solvers of a sparsity share β");
        assert!(check_settings(&SparseCodingBenchSettings { sparsities: vec![1.5], ..settings.clone() }).unwrap_err().contains("--sparsities has 1.5"));
        assert!(check_settings(&SparseCodingBenchSettings { bases: 0, ..settings }).unwrap_err().contains("--bases is 0"));
    }
}
