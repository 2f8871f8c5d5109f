//! The memory ceiling of `train`: the run's estimated peak (`train::memory`, the page's
//! estimate too) against the machine's physical memory or `--max-memory`, checked before
//! anything large is allocated.

use deepbelief::train::memory::{describe_bytes, estimate_training_memory, RunShape};

/// `--max-memory`: bytes, or a number with a binary unit (`KiB`, `MiB`, `GiB`, `TiB`; `K`,
/// `M`, `G`, `T` and `KB`, `MB`, `GB`, `TB` mean the same), e.g. `8GiB` or `1.5 GiB`.
pub fn parse_memory_size(text: &str) -> Result<u64, String> {
    let expected = "expected bytes or a size with a unit, e.g. 8GiB, 512MiB or 1073741824";
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return Err(format!("\"{text}\": unknown unit; {expected}")),
    };
    let value: f64 = number.parse().map_err(|_| format!("\"{text}\" is not a size; {expected}"))?;
    let bytes = value * scale as f64;
    if !(bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(format!("\"{text}\" is not a size of at least one byte; {expected}"));
    }
    Ok(bytes as u64)
}

/// The machine's physical memory: `MemTotal` of /proc/meminfo, where there is one.
fn physical_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: u64 = line.trim_start_matches("MemTotal:").trim().trim_end_matches("kB").trim().parse().ok()?;
    kib.checked_mul(1024)
}

/// Refuses a run whose estimated peak exceeds `max_memory` (or the physical memory).
pub fn check_memory(shape: &RunShape, max_memory: Option<u64>) -> Result<(), String> {
    let (limit, what) = match (max_memory, physical_memory()) {
        (Some(limit), _) => (limit, "--max-memory"),
        (None, Some(limit)) => (limit, "this machine's physical memory"),
        (None, None) => return Ok(()),
    };
    let need = estimate_training_memory(shape);
    if need.bytes > limit {
        return Err(format!(
            "this run needs an estimated {} (at its peak in {}), more than {what} of {}; use fewer or smaller layers (--rbm-layers) or fewer cases{}",
            with_exact_bytes(need.bytes),
            need.stage,
            with_exact_bytes(limit),
            if max_memory.is_some() { ", or raise --max-memory" } else { ", or set --max-memory if the estimate is wrong" }
        ));
    }
    Ok(())
}

/// `17.2 GiB (18468359168 bytes)`; plain `800 bytes` below a KiB.
fn with_exact_bytes(bytes: u64) -> String {
    match describe_bytes(bytes) {
        rounded if bytes < 1024 => rounded,
        rounded => format!("{rounded} ({bytes} bytes)"),
    }
}
