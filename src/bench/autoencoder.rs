//! Issue 17's sweep (Klaus & Welles 2014, Table 6): one full-batch sparse-autoencoder cost and
//! gradient over `m` cases (10,000) for `v × v/2` networks, on the CPU reference
//! ([`autoencoder::cost_and_gradient`]) or on the device ([`GpuCost`]). `deepbelief bench
//! --autoencoder` prints one [`AutoencoderBenchRow`] per size and variant; its peers are
//! `bench/autoencoder_numpy.py` and `bench/autoencoder_torch.py`, run together by
//! `bench/autoencoder_device.sh`.
//!
//! Every run of every size sees the same problem: inputs uniform in [0, 1) from Philox
//! ([`bench_data`]: the first `m·v` values of one stream, so a size's data does not depend on
//! the sizes run before it) and UFLDL's initial weights ([`Autoencoder::initialise`], seed
//! [`INIT_SEED`]), with λ = 1e−4, β = 3, ρ = 0.01. So `J` is comparable across backends and
//! with the PyTorch peer, which draws the same numbers.
//!
//! On the device two variants are timed: `resident` ([`GpuCost::evaluate_resident`] with the
//! gradient: θ and the gradient stay on the device and only `J` comes back, what an optimiser
//! on the device pays per evaluation) and `upload_download` ([`GpuCost::evaluate_into`]: θ
//! uploaded from f64, the gradient read back into f64, what the host's L-BFGS pays).

use super::{median, now};
use crate::autoencoder::{cost, cost_and_gradient, Autoencoder, CostError, CostSettings, Workspace};
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::gpu::autoencoder::{AutoencoderKernels, GpuCost, GpuCostError};
use crate::gpu::GpuContext;
use crate::rng::{philox4x32_10, Purpose, RngStream};
use rayon::prelude::*;
use serde::Serialize;

/// Klaus & Welles' Table 6 sizes `v` (each network `v × v/2`).
pub const SIZES: [usize; 8] = [64, 128, 256, 512, 1024, 2048, 4096, 8192];
/// Cases in the batch (the paper's 10,000).
pub const CASES: usize = 10_000;
/// The data's Philox stream: `(DATA_SEED, DATA_STEP, Purpose::DataSample)`. Patch sampling uses
/// step 0 of that purpose; step 1 keeps the benchmark's inputs independent of it.
pub const DATA_SEED: u64 = 1;
pub const DATA_STEP: u64 = 1;
/// `Autoencoder::initialise`'s seed.
pub const INIT_SEED: u64 = 1;

/// What one sweep runs.
#[derive(Clone, Copy, Debug)]
pub struct AutoencoderBenchSettings {
    pub cases: usize,
    /// Untimed evaluations before the timed ones (at least 1 on the device: the first
    /// compiles the GEMM variants).
    pub warmups: usize,
    /// Timed evaluations; the median and the minimum are reported.
    pub repeats: usize,
    /// On the device, sizes up to this `v` also get the CPU's `J` on the same data and θ.
    pub check_up_to: usize,
    pub cost: CostSettings,
}

impl Default for AutoencoderBenchSettings {
    fn default() -> Self {
        AutoencoderBenchSettings { cases: CASES, warmups: 2, repeats: 3, check_up_to: 1024, cost: CostSettings::ufldl() }
    }
}

/// One size on one backend, one variant: a JSON line of `deepbelief bench --autoencoder`.
#[derive(Clone, Debug, Serialize)]
pub struct AutoencoderBenchRow {
    /// `v`, the inputs (and outputs).
    pub size: usize,
    /// `v/2`.
    pub hidden: usize,
    pub cases: usize,
    /// `cpu` or `gpu`.
    pub backend: String,
    /// `cost_and_gradient` (CPU), `resident` or `upload_download` (GPU).
    pub variant: String,
    pub seconds_median: f64,
    pub seconds_min: f64,
    /// Every timed evaluation, in order.
    pub seconds: Vec<f64>,
    pub warmups: usize,
    /// `J` at the initial θ.
    #[serde(rename = "J")]
    pub cost: f64,
    /// The GPU rows of sizes up to `check_up_to`: the CPU reference's `J` on the same data
    /// and θ, and `|J − J_cpu| / J_cpu`.
    #[serde(rename = "J_cpu", skip_serializing_if = "Option::is_none")]
    pub cost_cpu: Option<f64>,
    #[serde(rename = "J_relative_difference", skip_serializing_if = "Option::is_none")]
    pub cost_relative_difference: Option<f64>,
    /// The five products' work (`10·m·v·h` FLOP) per second at the median.
    pub gflops: f64,
    /// rayon threads of the CPU rows (the GPU rows' host work is single-threaded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// The CPU backend's or the adapter's description.
    pub device: String,
}

/// Inputs of `cases × v` values: value `k` is uniform `k` of the stream
/// `(DATA_SEED, DATA_STEP, Purpose::DataSample)`, as `RngStream::uniform` draws it.
pub fn bench_data(cases: usize, v: usize) -> Vec<f32> {
    let stream = RngStream::new(DATA_SEED, DATA_STEP, Purpose::DataSample);
    let mut values = vec![0.0f32; cases * v];
    // One Philox block gives four consecutive values; tasks of whole blocks.
    const BLOCKS_PER_TASK: usize = 1 << 14;
    values.par_chunks_mut(4 * BLOCKS_PER_TASK).enumerate().for_each(|(task, chunk)| {
        for (b, four) in chunk.chunks_mut(4).enumerate() {
            let block = (task * BLOCKS_PER_TASK + b) as u64;
            let counter = [block as u32, stream.step as u32, (stream.step >> 32) as u32, stream.purpose as u32 | ((block >> 32) as u32) << 8];
            let words = philox4x32_10(counter, stream.key);
            four.iter_mut().zip(words).for_each(|(x, w)| *x = (w >> 8) as f32 * (1.0 / 16_777_216.0));
        }
    });
    values
}

/// The five products of one evaluation: `X·W₁`, `a₂·W₂ᵀ`, `δ₃·W₂`, `δ₃ᵀa₂`, `Xᵀδ₂`.
pub fn evaluation_flops(cases: usize, v: usize, h: usize) -> f64 {
    10.0 * cases as f64 * v as f64 * h as f64
}

/// The sizes a sweep accepts: `v ≥ 2` (at least one hidden unit); an error names the bad one.
pub fn check_sizes(sizes: &[usize], settings: &AutoencoderBenchSettings) -> Result<(), String> {
    if sizes.is_empty() {
        return Err("--sizes is empty; expected visible sizes such as 64,128".into());
    }
    if let Some(v) = sizes.iter().find(|&&v| v < 2) {
        return Err(format!("--sizes has {v}; expected sizes of at least 2 (a v × v/2 network needs a hidden unit)"));
    }
    if settings.cases == 0 {
        return Err("--cases is 0; expected at least one case".into());
    }
    if settings.repeats == 0 {
        return Err("--repeats is 0; expected at least 1 timed evaluation".into());
    }
    Ok(())
}

fn row(v: usize, settings: &AutoencoderBenchSettings, backend: &str, variant: &str, runs: Vec<f64>, cost: f64, device: String) -> AutoencoderBenchRow {
    let seconds_median = median(&runs);
    AutoencoderBenchRow {
        size: v,
        hidden: v / 2,
        cases: settings.cases,
        backend: backend.into(),
        variant: variant.into(),
        seconds_median,
        seconds_min: runs.iter().copied().fold(f64::INFINITY, f64::min),
        seconds: runs,
        warmups: settings.warmups,
        cost,
        cost_cpu: None,
        cost_relative_difference: None,
        gflops: evaluation_flops(settings.cases, v, v / 2) / seconds_median / 1e9,
        threads: None,
        device,
    }
}

/// `warmups` untimed then `repeats` timed calls of `evaluate`; the seconds of the timed ones
/// and the last `J`.
fn time_sync<E>(settings: &AutoencoderBenchSettings, mut evaluate: impl FnMut() -> Result<f64, E>) -> Result<(Vec<f64>, f64), E> {
    let mut j = f64::NAN;
    for _ in 0..settings.warmups {
        j = evaluate()?;
    }
    let mut runs = Vec::with_capacity(settings.repeats);
    for _ in 0..settings.repeats {
        let started = now();
        j = evaluate()?;
        runs.push(now() - started);
    }
    Ok((runs, j))
}

/// One size on the CPU reference: `cost_and_gradient` on `CpuBackend`.
pub fn bench_cpu_size(v: usize, settings: &AutoencoderBenchSettings) -> Result<AutoencoderBenchRow, CostError> {
    let h = v / 2;
    let data = bench_data(settings.cases, v);
    let model = Autoencoder::initialise(v, h, INIT_SEED);
    let mut work = Workspace::new();
    let mut gradient = Autoencoder::zeros(v, h);
    let (runs, cost) = time_sync(settings, || cost_and_gradient(&CpuBackend, &model, &data, &settings.cost, &mut work, &mut gradient).map(|c| c.total))?;
    Ok(AutoencoderBenchRow { threads: Some(rayon::current_num_threads()), ..row(v, settings, "cpu", "cost_and_gradient", runs, cost, CpuBackend.describe()) })
}

/// One size on the device: the `resident` and `upload_download` rows, each with the CPU's
/// `J` where `v ≤ settings.check_up_to`.
pub async fn bench_gpu_size(ctx: &GpuContext, kernels: &AutoencoderKernels, v: usize, settings: &AutoencoderBenchSettings) -> Result<Vec<AutoencoderBenchRow>, GpuCostError> {
    let h = v / 2;
    let data = bench_data(settings.cases, v);
    let model = Autoencoder::initialise(v, h, INIT_SEED);
    let params = model.to_params();
    let device = format!("GPU (wgpu: {}, {})", ctx.adapter_info.name, ctx.summary().backend);
    let mut gpu = GpuCost::new(ctx, kernels, v, h, &data, settings.cost)?;
    // The first evaluation compiles the GEMM variants of these shapes: never timed.
    let warmups = settings.warmups.max(1);

    gpu.set_params(&params)?;
    let mut j = f64::NAN;
    for _ in 0..warmups {
        j = gpu.evaluate_resident(true).await?.total;
    }
    let mut runs = Vec::with_capacity(settings.repeats);
    for _ in 0..settings.repeats {
        let started = now();
        j = gpu.evaluate_resident(true).await?.total;
        runs.push(now() - started);
    }
    let settings = AutoencoderBenchSettings { warmups, ..*settings };
    let resident = row(v, &settings, "gpu", "resident", runs, j, device.clone());

    let mut gradient = vec![0.0f64; params.len()];
    for _ in 0..warmups {
        j = gpu.evaluate_into(&params, &mut gradient).await?.total;
    }
    let mut runs = Vec::with_capacity(settings.repeats);
    for _ in 0..settings.repeats {
        let started = now();
        j = gpu.evaluate_into(&params, &mut gradient).await?.total;
        runs.push(now() - started);
    }
    let transfer = row(v, &settings, "gpu", "upload_download", runs, j, device);
    drop(gpu);

    let mut rows = vec![resident, transfer];
    if v <= settings.check_up_to {
        let reference = cost(&CpuBackend, &model, &data, &settings.cost, &mut Workspace::new())?.total;
        for r in &mut rows {
            r.cost_cpu = Some(reference);
            r.cost_relative_difference = Some((r.cost - reference).abs() / reference.abs());
        }
    }
    Ok(rows)
}

/// The device's sweep: one [`AutoencoderKernels`] for every size; `on_row` sees each row as it
/// is measured (the CLI prints it at once, so a sweep cut short keeps what it measured).
pub async fn bench_gpu_sweep(ctx: &GpuContext, sizes: &[usize], settings: &AutoencoderBenchSettings, mut on_row: impl FnMut(&AutoencoderBenchRow)) -> Result<Vec<AutoencoderBenchRow>, String> {
    check_sizes(sizes, settings)?;
    let kernels = AutoencoderKernels::new(ctx);
    let mut rows = Vec::new();
    for &v in sizes {
        let measured = bench_gpu_size(ctx, &kernels, v, settings).await.map_err(|e| format!("autoencoder {v}×{}: {e}", v / 2))?;
        measured.iter().for_each(&mut on_row);
        rows.extend(measured);
    }
    Ok(rows)
}

/// The CPU reference's sweep, row by row as [`bench_gpu_sweep`].
pub fn bench_cpu_sweep(sizes: &[usize], settings: &AutoencoderBenchSettings, mut on_row: impl FnMut(&AutoencoderBenchRow)) -> Result<Vec<AutoencoderBenchRow>, String> {
    check_sizes(sizes, settings)?;
    let mut rows = Vec::new();
    for &v in sizes {
        let measured = bench_cpu_size(v, settings).map_err(|e| format!("autoencoder {v}×{}: {e}", v / 2))?;
        on_row(&measured);
        rows.push(measured);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_the_philox_stream_value_by_value() {
        let stream = RngStream::new(DATA_SEED, DATA_STEP, Purpose::DataSample);
        // 3 × 7 = 21 values: the last block partly used; and more than one task.
        for (cases, v) in [(3, 7), (1, 4 * (1 << 14) + 5)] {
            let data = bench_data(cases, v);
            assert_eq!(data.len(), cases * v);
            for (k, &x) in data.iter().enumerate() {
                assert_eq!(x, stream.uniform(k as u64), "value {k} of {cases}×{v}");
            }
        }
        // A size's data is the prefix of a larger one's.
        assert_eq!(bench_data(2, 5)[..], bench_data(5, 4)[..10]);
    }

    #[test]
    fn cpu_rows_report_the_reference_cost() {
        let settings = AutoencoderBenchSettings { cases: 50, warmups: 1, repeats: 2, ..Default::default() };
        let rows = bench_cpu_sweep(&[6, 9], &settings, |_| {}).unwrap();
        assert_eq!(rows.len(), 2);
        for r in &rows {
            let (v, h) = (r.size, r.size / 2);
            let model = Autoencoder::initialise(v, h, INIT_SEED);
            let expected = cost(&CpuBackend, &model, &bench_data(50, v), &CostSettings::ufldl(), &mut Workspace::new()).unwrap().total;
            assert_eq!((r.hidden, r.cases, r.seconds.len()), (h, 50, 2));
            assert_eq!(r.cost, expected, "J of {v}×{h}");
            assert!(r.seconds_min <= r.seconds_median && r.seconds_median.is_finite());
        }
        let json = serde_json::to_value(&rows[0]).unwrap();
        for field in ["size", "backend", "seconds_median", "seconds_min", "J"] {
            assert!(json.get(field).is_some(), "field {field} missing from {json}");
        }
    }

    #[test]
    fn bad_sizes_are_named() {
        let settings = AutoencoderBenchSettings::default();
        assert!(check_sizes(&[64, 1], &settings).unwrap_err().contains("has 1"));
        assert!(check_sizes(&[], &settings).is_err());
        assert!(check_sizes(&[64], &AutoencoderBenchSettings { repeats: 0, ..settings }).unwrap_err().contains("--repeats"));
    }
}
