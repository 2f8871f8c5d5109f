//! The benchmarks for `www/bench.html`: the same `bench::bench_cpu_epoch` the CLI runs, here
//! on the wasm build (threaded when the page is cross-origin isolated), and the CD-1 epochs and
//! GEMM kernels of `bench::bench_gpu_web` (the same benchmark, GEMMs timed by wall time), here
//! on the browser's WebGPU device.

use super::to_js;
use crate::bench::{bench_cpu_epoch, tile_cases, GpuBenchReport};
use crate::data::idx::{dataset_from_idx, parse_idx_images};
use crate::data::Dataset;
use crate::engine::Engine;
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
        let failed = |e: String| JsValue::from(JsError::new(&e));
        let engine = Engine::gpu().await.map_err(failed)?;
        let (report, gemm_repeats) = engine.bench_gpu_web(&data, n_hidden, batch_size, repeats.max(1)).await.map_err(failed)?;
        to_js(&WebGpuBenchReport { report, gemm_repeats }).map_err(JsValue::from)
    }))
}
