//! The benchmarks for `www/bench.html`: the same `bench::bench_cpu_epoch` the CLI runs, here
//! on the wasm build (threaded when the page is cross-origin isolated), and the CD-1 epochs and
//! GEMM kernels of `bench::bench_gpu`, here on the browser's WebGPU device.

use super::to_js;
use crate::bench::{bench_cpu_epoch, epoch_gemm_flops, tile_cases, GemmRow, GpuBenchReport, GpuEpochBench};
use crate::data::idx::{dataset_from_idx, parse_idx_images};
use crate::data::Dataset;
use crate::gpu::gemm::{gemm_gflops, GemmVariant};
use crate::gpu::trainer::GpuCdTrainer;
use crate::gpu::{GpuContext, GpuError};
use crate::model::{Rbm, VisibleUnits};
use crate::train::CdConfig;
use serde::Serialize;
use wasm_bindgen::prelude::*;

fn parse_images(images: &[u8]) -> Result<Dataset, JsError> {
    let parsed = parse_idx_images("bench images", images).map_err(|e| JsError::new(&e.to_string()))?;
    dataset_from_idx(parsed, None, "bench images").map_err(|e| JsError::new(&e.to_string()))
}

/// Parses IDX image bytes (raw or gzip) and times CD-1 epochs of a 784-500 RBM, batch 100,
/// over all of them: one warm-up epoch, then the median of `repeats`. Returns a `BenchReport`.
#[wasm_bindgen]
pub fn bench_cpu(images: &[u8], repeats: usize) -> Result<JsValue, JsError> {
    to_js(&bench_cpu_epoch(&parse_images(images)?, 500, 100, repeats))
}

/// A `GpuBenchReport` plus how many products each GEMM row timed.
#[derive(Serialize)]
struct WebGpuBenchReport {
    #[serde(flatten)]
    report: GpuBenchReport,
    gemm_repeats: Vec<u32>,
}

/// Parses IDX image bytes (raw or gzip), repeats them to `cases` cases, and times CD-1 epochs
/// of a `784 × n_hidden` RBM on a new WebGPU device (one warm-up epoch, then the median of
/// `repeats`), plus the four GEMM kernels of one batch. Resolves to a `GpuBenchReport` (no
/// Raina shapes: hours on a software adapter) with `gemm_repeats` added.
///
/// Not an `async fn`: the image bytes are parsed before the returned promise starts, so the
/// caller's view of them is never held across an await.
#[wasm_bindgen]
pub fn bench_webgpu(images: &[u8], n_hidden: usize, batch_size: usize, cases: usize, repeats: usize) -> Result<js_sys::Promise, JsError> {
    if n_hidden == 0 || batch_size == 0 || cases == 0 {
        return Err(JsError::new("bench_webgpu: n_hidden, batch_size and cases must be positive"));
    }
    let data = tile_cases(&parse_images(images)?, cases);
    Ok(wasm_bindgen_futures::future_to_promise(async move {
        let failed = |e: GpuError| JsValue::from(JsError::new(&e.to_string()));
        let ctx = GpuContext::new().await.map_err(failed)?;
        let report = bench_webgpu_on(&ctx, &data, n_hidden, batch_size, repeats.max(1)).await.map_err(failed)?;
        to_js(&report).map_err(JsValue::from)
    }))
}

// This is `bench::bench_gpu` with `raina = false`, except for the number of GEMM repeats.
// `bench_gemm_shapes` does ~2e11 FLOP per shape (20 to 2,000 products), a fraction of a second
// on a GPU but 40+ minutes on SwiftShader, whose tiled kernels ran at 0.01-0.1 GFLOP/s on this
// 2-core machine; a budget of wall time instead of work fits both.
async fn bench_webgpu_on(ctx: &GpuContext, data: &Dataset, n_hidden: usize, batch_size: usize, repeats: usize) -> Result<WebGpuBenchReport, GpuError> {
    let runs = time_epochs(ctx, data, n_hidden, batch_size, repeats).await?;
    let mut sorted = runs.clone();
    sorted.sort_by(f64::total_cmp);
    let gpu_epoch_s = sorted[sorted.len() / 2];
    let mnist = GpuEpochBench {
        gpu_epoch_s,
        gflops: epoch_gemm_flops(data.n_cases, data.n_inputs, n_hidden) / gpu_epoch_s / 1e9,
        epoch_runs_s: runs,
        cases: data.n_cases,
        n_visible: data.n_inputs,
        n_hidden,
        batch_size,
    };
    let (rows, nv, nh) = (batch_size as u32, data.n_inputs as u32, n_hidden as u32);
    let mut gemm = Vec::new();
    let mut gemm_repeats = Vec::new();
    for (role, variant, (m, k, n)) in [
        ("data → hidden (u8 gather)", GemmVariant::U8GatherNn, (rows, nv, nh)),
        ("visible → hidden", GemmVariant::Nn, (rows, nv, nh)),
        ("hidden → visible", GemmVariant::Nt, (rows, nh, nv)),
        ("gradient vᵀh", GemmVariant::Tn, (nv, rows, nh)),
    ] {
        let (gflops, count) = timed_gemm(ctx, m, k, n, variant).await?;
        gemm.push(GemmRow { role: role.into(), variant: format!("{variant:?}"), m, k, n, gflops });
        gemm_repeats.push(count);
    }
    let report = GpuBenchReport {
        gpu_epoch_s,
        mnist,
        data: data.name.clone(),
        raina: Vec::new(),
        gemm,
        profiles: Vec::new(),
        adapter: ctx.summary(),
        backend: format!("GPU (wgpu: {})", ctx.adapter_info.name),
        target: "wasm32".into(),
    };
    Ok(WebGpuBenchReport { report, gemm_repeats })
}

/// Seconds of each of `epochs` CD-1 epochs after one warm-up (which also compiles the
/// pipelines), with `bench::bench_gpu`'s settings: Hinton's, learning rate 0.1, Masters'
/// initialisation of trial 1.
async fn time_epochs(ctx: &GpuContext, data: &Dataset, n_hidden: usize, batch_size: usize, epochs: usize) -> Result<Vec<f64>, GpuError> {
    let config = CdConfig { n_hidden, batch_size: Some(batch_size), epochs: epochs + 1, learning_rate: 0.1, convergence_tolerance: 0.0, ..CdConfig::hinton() };
    let rbm = Rbm::initialise(VisibleUnits::Bernoulli, data.n_inputs, n_hidden, &data.input_means(), &mut crate::train::init::trial_rng(config.seed, 1));
    let mut trainer = GpuCdTrainer::new(ctx.clone(), config, &rbm, data)?;
    let mut runs = Vec::new();
    for epoch in 0..=epochs {
        let started = crate::clock::now_seconds();
        trainer.train_epoch().await.map_err(|e| GpuError(e.to_string()))?;
        if epoch > 0 {
            runs.push(crate::clock::now_seconds() - started);
        }
    }
    Ok(runs)
}

/// GFLOP/s of one kernel shape over at least ~1 s of products (the web clock has millisecond
/// steps), and how many products that took. A first short run sizes the second; a run that
/// already lasts long enough is the answer, which on SwiftShader is usually the first.
async fn timed_gemm(ctx: &GpuContext, m: u32, k: u32, n: u32, variant: GemmVariant) -> Result<(f64, u32), GpuError> {
    const ENOUGH_S: f64 = 1.0;
    const MAX_REPEATS: u32 = 2000;
    let flops = 2.0 * m as f64 * k as f64 * n as f64;
    let mut count = ((5e7 / flops) as u32).clamp(1, MAX_REPEATS);
    loop {
        let gflops = gemm_gflops(ctx, m, k, n, variant, count).await?;
        let seconds = flops * count as f64 / (gflops * 1e9);
        if seconds >= ENOUGH_S || count == MAX_REPEATS {
            return Ok((gflops, count));
        }
        let scale = (1.2 * ENOUGH_S / seconds.max(1e-3)).ceil();
        count = (count as f64 * scale).min(MAX_REPEATS as f64) as u32;
    }
}
