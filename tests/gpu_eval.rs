#![cfg(not(target_arch = "wasm32"))]
//! GPU evaluation, generative chains and AIS (src/gpu/{evaluate,chains,ais}.rs) against the CPU
//! reference, natively on lavapipe:
//! `WGPU_BACKEND=vulkan VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json cargo test --test gpu_eval -- --nocapture`.
//! The bodies live in tests/support/gpu_eval.rs and also run in headless Chromium
//! (tests/web_gpu_eval.rs). The engine suite (tests/engine_suite) checks the engine's
//! evaluation, binary chains and AIS (run for run and against exact log Z) on every backend;
//! these check the kernels' other figures (cross-entropy, pseudo-log-likelihood, unit
//! statistics, propagation), Gaussian units and MNIST's sizes.

mod support;

use deepbelief::model::VisibleUnits;
use support::check::check;
use support::device::context;
use support::gpu_eval::{self, random_rbm, stroke_bytes};
use support::mnist::mnist;

#[test]
fn evaluation_matches_cpu_on_mnist() {
    let ctx = context();
    // 2500 cases: chunks of 1024 plus a tail; max_cases 2000 spreads them.
    let data = mnist(2500);
    let rbm = random_rbm(784, 200, 1, 0.05, VisibleUnits::Bernoulli);
    check(pollster::block_on(gpu_eval::evaluation_matches_cpu(&ctx, &rbm, &data, 2000, 1e-5)));
}

#[test]
fn evaluation_matches_cpu_on_small_random_rbms() {
    let ctx = context();
    let data = stroke_bytes(300, 37, 5);
    check(pollster::block_on(gpu_eval::evaluation_matches_cpu(&ctx, &random_rbm(37, 13, 2, 0.5, VisibleUnits::Bernoulli), &data, usize::MAX, 1e-5)));
    let floats = gpu_eval::binarised(&stroke_bytes(70, 20, 6));
    check(pollster::block_on(gpu_eval::evaluation_matches_cpu(&ctx, &random_rbm(20, 300, 3, 0.3, VisibleUnits::Gaussian), &floats, usize::MAX, 1e-5)));
}

#[test]
fn propagation_matches_cpu_on_mnist() {
    let ctx = context();
    check(pollster::block_on(gpu_eval::propagation_matches_cpu(&ctx, &mnist(5000), &[300, 50])));
}

/// Gaussian visible units (the engine suite's chains are binary): real-valued states with
/// Gaussian noise from the shared stream, equal to 1e-3 after 12 steps.
#[test]
fn gaussian_generative_chains_match_cpu() {
    let ctx = context();
    let gaussian = gpu_eval::random_dbn(30, &[20], 0.1, VisibleUnits::Gaussian);
    check(pollster::block_on(gpu_eval::chains_match_cpu(&ctx, &gaussian, None, 40, 12, 1e-3, 0.9)));
}

/// `deepbelief eval` and `deepbelief sample` with `--backend gpu` (lavapipe here; `auto` would
/// refuse a software adapter) against `--backend cpu` on a small trained two-layer model.
#[test]
fn cli_eval_and_sample_on_the_gpu_match_the_cpu() {
    use support::cli::{last_json, run_ok, small_images, train_small_model};
    let (model, _) = train_small_model("gpu-eval-model");
    let (model, images) = (model.to_str().unwrap(), small_images().to_str().unwrap());
    let eval = |backend: &str, binarize: bool| {
        let mut args = vec!["eval", "--model", model, "--images", images, "--max-cases", "300", "--ais-runs", "20", "--ais-betas", "60", "--backend", backend, "--json"];
        if binarize {
            args.push("--binarize");
        }
        last_json(&run_ok(&args))
    };
    for binarize in [false, true] {
        let (cpu, gpu) = (eval("cpu", binarize), eval("gpu", binarize));
        assert_eq!((cpu["backend"].as_str(), gpu["backend"].as_str()), (Some("cpu"), Some("gpu")));
        assert!(gpu["adapter"]["name"].as_str().is_some_and(|n| !n.is_empty()), "{gpu}");
        let close = |c: &serde_json::Value, g: &serde_json::Value, tolerance: f64, what: &str| {
            let (c, g) = (c.as_f64().unwrap(), g.as_f64().unwrap());
            assert!((c - g).abs() <= tolerance * c.abs(), "{what}: cpu {c} gpu {g}");
        };
        for key in ["recon_error", "free_energy", "top_free_energy"] {
            close(&cpu[key], &gpu[key], 1e-5, key);
        }
        for k in 0..2 {
            close(&cpu["layer_recon_errors"][k], &gpu["layer_recon_errors"][k], 1e-5, "layer_recon_errors");
        }
        // 60 AIS steps on a 784 × 30 layer: the runs follow the CPU's draw for draw.
        for key in ["ais_logz", "ais_loglik", "ais_log_weights_std"] {
            close(&cpu[key], &gpu[key], 1e-4, key);
        }
    }
    let dir = support::cli::temp_dir("gpu-sample");
    let sample = |backend: &str, from_data: bool| {
        let out = dir.join(format!("{backend}-{from_data}.png"));
        let out = out.to_str().unwrap().to_string();
        let mut args = vec!["sample", "--model", model, "--count", "12", "--columns", "4", "--steps", "20", "--backend", backend, "--json", "--out", &out];
        if from_data {
            args.extend(["--from", "data", "--images", images]);
        }
        (last_json(&run_ok(&args)), std::fs::read(&out).expect("the PNG"))
    };
    for from_data in [false, true] {
        let ((cpu, cpu_png), (gpu, gpu_png)) = (sample("cpu", from_data), sample("gpu", from_data));
        assert_eq!(gpu["backend"].as_str(), Some("gpu"));
        let (c, g) = (cpu["mean_intensity"].as_f64().unwrap(), gpu["mean_intensity"].as_f64().unwrap());
        assert!(c > 0.0 && (c - g).abs() <= 1e-3 * c, "mean intensity: cpu {c} gpu {g}");
        // Same uniforms, probabilities within rounding: the pictures are the same bytes unless a
        // near-tie flipped a sample.
        assert_eq!(cpu_png.len(), gpu_png.len());
        eprintln!("sample (from data: {from_data}): PNGs {}", if cpu_png == gpu_png { "identical" } else { "differ" });
    }
}

#[test]
fn submissions_shrink_for_wide_layers() {
    use deepbelief::gpu::chains::{steps_per_submit, STEPS_PER_SUBMIT};
    use deepbelief::gpu::evaluate::{chunk_cases, CHUNK_CASES, FLOPS_PER_SUBMIT};
    // Two products of 2·nv·nh operations per case (or per chain and step), at most
    // FLOPS_PER_SUBMIT per submission, within [64, CHUNK_CASES] cases and [1, 32] steps.
    assert_eq!(chunk_cases(784, 500), CHUNK_CASES);
    assert_eq!(chunk_cases(4096, 11008), 64);
    let wide = chunk_cases(2000, 2000);
    assert!(wide > 64 && wide < CHUNK_CASES && 4.0 * (wide * 2000 * 2000) as f64 <= FLOPS_PER_SUBMIT, "{wide}");
    assert_eq!(steps_per_submit(10, 784, 500), STEPS_PER_SUBMIT);
    assert_eq!(steps_per_submit(100, 784, 500), 25);
    assert_eq!(steps_per_submit(10_000, 4096, 4096), 1);
}

#[test]
fn mismatched_data_is_an_error_not_a_device_failure() {
    use deepbelief::gpu::evaluate::{EvalKernels, GpuDataset, GpuRbm};
    let ctx = context();
    let kernels = EvalKernels::new(&ctx);
    let data = GpuDataset::upload(&ctx, &stroke_bytes(10, 30, 1)).unwrap();
    let rbm = GpuRbm::upload(&ctx, &random_rbm(31, 5, 1, 0.1, VisibleUnits::Bernoulli));
    let error = pollster::block_on(kernels.reconstruction_errors(&ctx, &rbm, &data, usize::MAX)).expect_err("31 visible units for 30 inputs");
    assert!(error.to_string().contains("30 inputs"), "{error}");
    assert!(kernels.propagate(&ctx, &rbm, &data).is_err());
    assert!(pollster::block_on(kernels.hidden_unit_statistics(&ctx, &rbm, &data, 5)).is_err());
}
