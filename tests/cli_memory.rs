#![cfg(not(target_arch = "wasm32"))]
//! `train`'s memory ceiling: a run whose estimated peak exceeds the machine's memory (or
//! `--max-memory`) is refused at once, with the figure and the limit; and the estimate
//! (`train::memory`, shared with the page) covers what a run really takes.

mod support;

use deepbelief::format::read_model;
use deepbelief::train::memory::{estimate_training_memory, RunShape};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::cli::*;

/// Runs `args`, killing the process if it outlives `limit`; returns (success, stderr, seconds).
fn run_with_limit(args: &[&str], limit: Duration) -> (bool, String, f64) {
    let started = Instant::now();
    let mut child = Command::new(binary()).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            return (status.success(), stderr, started.elapsed().as_secs_f64());
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("deepbelief {args:?} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_stack_too_large_for_the_machine_is_refused_before_allocating() {
    let out = temp_dir("memory-huge");
    let images = small_images().to_str().unwrap();
    let args = ["train", "--train-images", images, "--rbm-layers", "65536,65536", "--backend", "cpu", "--out", out.to_str().unwrap()];
    let (success, error, seconds) = run_with_limit(&args, Duration::from_secs(60));
    assert!(!success, "refused");
    // The second layer alone is 65536² weights: 16 GiB each copy of them.
    assert!(error.contains("needs an estimated") && error.contains("GiB") && error.contains("physical memory"), "{error}");
    assert!(error.contains("at its peak in "), "the peak's stage: {error}");
    assert!(seconds < 30.0, "refused at once, not after allocating: {seconds} s");
    assert!(!out.join("model.json").exists());
}

#[test]
fn max_memory_sets_the_limit() {
    let images = small_images().to_str().unwrap();
    let out = temp_dir("memory-flag");
    let mut args = small_train_args(images, out.to_str().unwrap());
    args.extend(["--max-memory", "1MiB"]);
    let error = run_fails(&args);
    assert!(error.contains("more than --max-memory of 1.0 MiB (1048576 bytes)"), "{error}");
    assert!(!out.join("model.json").exists());

    let mut args = small_train_args(images, out.to_str().unwrap());
    args.extend(["--max-memory", "1.5 GiB"]);
    run_ok(&args);
    assert!(out.join("model.json").exists());

    for bad in ["12XB", "0", "-5", "GiB"] {
        let mut args = small_train_args(images, out.to_str().unwrap());
        args.extend(["--max-memory", bad]);
        let error = run_fails(&args);
        assert!(error.contains("--max-memory") && error.contains("expected bytes or a size with a unit"), "{bad}: {error}");
    }
}

/// The highest resident-set size (VmHWM) a running process has reached, in bytes.
fn high_water_mark(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse::<u64>().ok().map(|kib| kib * 1024)
}

#[test]
fn the_estimate_covers_the_measured_peak_of_a_run() {
    if !std::path::Path::new("/proc/self/status").exists() {
        return; // no way to measure the peak here
    }
    let out = temp_dir("memory-measured");
    let images = small_images().to_str().unwrap();
    let args = [
        "train", "--train-images", images, "--rbm-layers", "2500,2500", "--epochs", "1", "--init-trials", "3", "--batch-size", "100",
        "--backend", "cpu", "--out", out.to_str().unwrap(),
    ];
    let mut child = Command::new(binary()).args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        peak = peak.max(high_water_mark(child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(peak > 0, "measured");
    let model = read_model(&out).expect("the run succeeded");
    let shape = RunShape { n_cases: SMALL_CASES, n_inputs: 784, bytes_per_input: 1, stack: &model.config, supervised: None };
    let estimate = estimate_training_memory(&shape);
    // The process's own code and libraries are not part of the estimate.
    const PROGRAM: u64 = 96 << 20;
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    assert!(peak <= estimate.bytes + PROGRAM, "measured {:.0} MiB, estimated {:.0} MiB ({})", mib(peak), mib(estimate.bytes), estimate.stage);
    assert!(estimate.bytes <= 3 * peak, "the estimate errs high, but not wildly: measured {:.0} MiB, estimated {:.0} MiB", mib(peak), mib(estimate.bytes));
}
