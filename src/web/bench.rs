//! The CPU benchmark for `www/bench.html`: the same `bench::bench_cpu_epoch` the CLI runs,
//! here on the wasm build (threaded when the page is cross-origin isolated).

use super::to_js;
use crate::bench::bench_cpu_epoch;
use crate::data::idx::{dataset_from_idx, parse_idx_images};
use wasm_bindgen::prelude::*;

/// Parses IDX image bytes (raw or gzip) and times CD-1 epochs of a 784-500 RBM, batch 100,
/// over all of them: one warm-up epoch, then the median of `repeats`. Returns a `BenchReport`.
#[wasm_bindgen]
pub fn bench_cpu(images: &[u8], repeats: usize) -> Result<JsValue, JsError> {
    let parsed = parse_idx_images("bench images", images).map_err(|e| JsError::new(&e.to_string()))?;
    let data = dataset_from_idx(parsed, None, "bench images").map_err(|e| JsError::new(&e.to_string()))?;
    to_js(&bench_cpu_epoch(&data, 500, 100, repeats))
}
