//! The result of a shared check and the numbers checks are made of, the same on both targets.

/// A check's one-line report of what it measured, or why it failed.
pub type Outcome = Result<String, String>;

/// Prints a passed check's report (standard error natively, the console in the browser) and
/// fails the test with the reason of a failed one.
pub fn check(outcome: Outcome) {
    match outcome {
        Ok(report) => log(&report),
        Err(reason) => panic!("{reason}"),
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub fn log(line: &str) {
    eprintln!("{line}");
}

#[cfg(target_arch = "wasm32")]
pub fn log(line: &str) {
    web_sys::console::log_1(&line.into());
}

/// A device error as a check's failure.
pub fn gpu<T>(result: Result<T, deepbelief::gpu::GpuError>) -> Result<T, String> {
    result.map_err(|e| e.to_string())
}

/// Deterministic pseudo-random u32 (SplitMix32-style hash of the index).
pub fn hash(mut x: u32) -> u32 {
    x = x.wrapping_add(0x9E37_79B9);
    x = (x ^ (x >> 16)).wrapping_mul(0x85EB_CA6B);
    x = (x ^ (x >> 13)).wrapping_mul(0xC2B2_AE35);
    x ^ (x >> 16)
}

/// Values in [lo, hi), deterministic in (seed, k).
pub fn values(len: usize, seed: u32, lo: f32, hi: f32) -> Vec<f32> {
    (0..len).map(|k| lo + (hi - lo) * (hash(hash(seed) ^ k as u32) >> 8) as f32 / 16_777_216.0).collect()
}

/// Smooth values in ±0.8 that vary with `k`: `sin(k · seed) · 0.8`.
pub fn wave(n: usize, seed: f32) -> Vec<f32> {
    (0..n).map(|k| (k as f32 * seed).sin() * 0.8).collect()
}

/// |gpu − cpu| / |cpu|, 0 when they are equal.
pub fn relative(gpu: f64, cpu: f64) -> f64 {
    if gpu == cpu {
        0.0
    } else {
        (gpu - cpu).abs() / cpu.abs().max(1e-30)
    }
}
