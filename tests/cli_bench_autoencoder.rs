#![cfg(not(target_arch = "wasm32"))]
//! `deepbelief bench --autoencoder` (issue 17's sweep): one JSON line per size (and variant on
//! the GPU) whose J is the CPU reference's on the benchmark's problem, the device's J beside the
//! CPU's, no image file needed, bad sizes named. Tiny sizes: no timing is judged.
//!
//! The GPU case runs on Mesa lavapipe (`WGPU_BACKEND=vulkan
//! VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json`) and says so where there is no
//! adapter.

mod support;

use deepbelief::autoencoder::{cost, Autoencoder, CostSettings, Workspace};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::bench::autoencoder::{bench_data, INIT_SEED};
use serde_json::Value;
use support::cli::*;

const CASES: usize = 40;

fn rows(stdout: &str) -> Vec<Value> {
    stdout.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"))).collect()
}

fn reference_cost(v: usize) -> f64 {
    let model = Autoencoder::initialise(v, v / 2, INIT_SEED);
    cost(&CpuBackend, &model, &bench_data(CASES, v), &CostSettings::ufldl(), &mut Workspace::new()).expect("CPU cost").total
}

#[test]
fn cpu_rows_are_json_lines_with_the_reference_cost() {
    // The RBM benchmark's image file is not read in this mode.
    let stdout = run_ok(&["bench", "--autoencoder", "--sizes", "8,10", "--cases", "40", "--repeats", "2", "--warmups", "1", "--images", "/nonexistent/images.idx", "--json"]);
    let rows = rows(&stdout);
    assert_eq!(rows.len(), 2, "{stdout}");
    for (row, v) in rows.iter().zip([8, 10]) {
        assert_eq!(row["size"], v);
        assert_eq!(row["hidden"], v / 2);
        assert_eq!(row["cases"], CASES);
        assert_eq!(row["backend"], "cpu");
        assert_eq!(row["seconds"].as_array().map(Vec::len), Some(2));
        let (median, min) = (row["seconds_median"].as_f64().unwrap(), row["seconds_min"].as_f64().unwrap());
        assert!(min <= median && median.is_finite(), "{row}");
        assert_eq!(row["J"].as_f64(), Some(reference_cost(v)), "J of {v}: {row}");
    }
}

#[test]
fn gpu_rows_carry_the_cpu_cost_beside_their_own() {
    let output = run(&["bench", "--autoencoder", "--backend", "gpu", "--sizes", "12", "--cases", "40", "--repeats", "1", "--warmups", "1", "--json"]);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--backend gpu"), "failed for another reason than a missing adapter:\n{stderr}");
        eprintln!("skipped: no GPU adapter ({stderr})");
        return;
    }
    let rows = rows(&String::from_utf8(output.stdout).unwrap());
    let variants: Vec<&str> = rows.iter().map(|r| r["variant"].as_str().unwrap()).collect();
    assert_eq!(variants, ["resident", "upload_download"]);
    let reference = reference_cost(12);
    for row in &rows {
        assert_eq!((row["size"].as_u64(), row["backend"].as_str()), (Some(12), Some("gpu")));
        assert_eq!(row["J_cpu"].as_f64(), Some(reference), "{row}");
        let j = row["J"].as_f64().unwrap();
        let difference = row["J_relative_difference"].as_f64().unwrap();
        assert!(((j - reference).abs() / reference - difference).abs() < 1e-12, "{row}");
        assert!(difference < 1e-5, "device J {j} against the CPU's {reference}: {row}");
    }
}

#[test]
fn bad_sizes_are_named() {
    let stderr = run_fails(&["bench", "--autoencoder", "--sizes", "8,1", "--cases", "40"]);
    assert!(stderr.contains("--sizes has 1"), "{stderr}");
}
