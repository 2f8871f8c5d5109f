#![cfg(not(target_arch = "wasm32"))]
//! `deepbelief autoencoder` (issue 17): 20 L-BFGS iterations lower J on patches of a small
//! generated PNG set and on the first 200 MNIST digits; model.json (a one-layer
//! "deepbelief-autoencoder/2" stack) parses, holds the parameters of the stated shape and the
//! same final J as the summary line, and agrees with the CPU reference's J recomputed from
//! those parameters; filters.png is a PNG of the tile grid's size; AUTOENCODER.LOG is written;
//! bad values name their flag or file.

mod support;

use deepbelief::autoencoder::{cost, Autoencoder, CostSettings, Workspace};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::patches::read_unit_inputs;
use deepbelief::report::image_grid::GreyImage;
use serde_json::Value;
use std::path::Path;
use support::cli::*;

/// Three 48×48 grey images of oriented stripes with a little deterministic texture, enough
/// structure for edge-like patches.
fn write_stripe_images(dir: &Path) {
    for (k, (fx, fy)) in [(0.35f32, 0.1f32), (-0.2, 0.3), (0.05, -0.4)].into_iter().enumerate() {
        let side = 48;
        let pixels = (0..side * side)
            .map(|i| {
                let (y, x) = ((i / side) as f32, (i % side) as f32);
                let texture = ((i * 2_654_435_761 + k * 97) % 1000) as f32 / 1000.0 - 0.5;
                (((fx * x + fy * y).sin() * 0.4 + 0.5 + 0.1 * texture).clamp(0.0, 1.0) * 255.0) as u8
            })
            .collect();
        deepbelief::report::png::write_grey_png(&dir.join(format!("stripes-{k}.png")), &GreyImage { width: side, height: side, pixels }).expect("write a test PNG");
    }
}

fn parameters(document: &Value, name: &str) -> Vec<f32> {
    document["layers"][0][name].as_array().unwrap_or_else(|| panic!("layers[0].{name}")).iter().map(|v| v.as_f64().expect("a number") as f32).collect()
}

fn read_model(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("model.json")).unwrap()).expect("model.json parses")
}

/// Runs the command with `--json`, checks the files and the summary, returns model.json.
fn train_and_check(input: &[&str], out: &Path, n_visible: usize, n_hidden: usize, tile: usize) -> Value {
    let hidden = n_hidden.to_string();
    let mut args = vec!["autoencoder"];
    args.extend_from_slice(input);
    args.extend_from_slice(&["--hidden", &hidden, "--iterations", "20", "--out", out.to_str().unwrap(), "--json"]);
    let summary = last_json(&run_ok(&args));
    assert_eq!(folder_listing(out), ["AUTOENCODER.LOG", "filters.png", "model.json"]);
    let document = read_model(out);
    assert_eq!(document["format"], "deepbelief-autoencoder/2");
    assert_eq!(document["layers"].as_array().map(Vec::len), Some(1));
    let layer = &document["layers"][0];
    assert_eq!(layer["n_visible"], n_visible);
    assert_eq!(layer["n_hidden"], n_hidden);
    let training = &layer["training"];
    let (initial, last) = (training["initial"]["J"].as_f64().unwrap(), training["final"]["J"].as_f64().unwrap());
    assert!(last < 0.9 * initial, "J {initial} → {last}: 20 iterations should lower it");
    // The file keeps measured figures to 15 significant digits.
    assert!((summary["J"].as_f64().unwrap() - last).abs() <= 1e-13 * last.abs(), "summary J {} vs the file's {last}", summary["J"]);
    assert_eq!(summary["iterations"], 20);
    assert_eq!(summary["backend"], "cpu");
    let terms = ["reconstruction", "weight_decay", "sparsity"].map(|t| summary[t].as_f64().unwrap());
    assert!((terms.iter().sum::<f64>() - last).abs() <= 1e-9 * last.abs());
    let rho = training["mean_activation"]["mean"].as_f64().unwrap();
    assert!(rho > 0.0 && rho < 1.0, "mean ρ̂ {rho}");
    assert_eq!(parameters(&document, "W1").len(), n_visible * n_hidden);
    assert_eq!(parameters(&document, "b2").len(), n_visible);
    let png = std::fs::read(out.join("filters.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let columns = (n_hidden as f64).sqrt().ceil() as usize;
    let rows = n_hidden.div_ceil(columns);
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap()) as usize;
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap()) as usize;
    assert_eq!((width, height), (columns * (tile + 1) + 1, rows * (tile + 1) + 1), "one tile per hidden unit, one-pixel gaps");
    document
}

#[test]
fn patches_of_png_images_train_and_write_the_model_and_filters() {
    let images = temp_dir("ae-images");
    write_stripe_images(&images);
    let out = temp_dir("ae-patches");
    let document = train_and_check(&["--images", images.to_str().unwrap(), "--patches", "1000"], &out, 64, 16, 8);
    assert_eq!(document["pretraining_data"]["files"].as_array().unwrap().len(), 3);
    assert_eq!(document["inputs"]["preprocessing"], "patches");
    assert!(document["inputs"]["clip"].as_f64().unwrap() > 0.0);
}

#[test]
fn mnist_digits_train_and_match_the_cpu_cost_of_the_saved_parameters() {
    let mnist = shared_mnist("train-10k-images-idx3-ubyte.gz");
    if !mnist.exists() {
        eprintln!("skipped: no MNIST at {}", mnist.display());
        return;
    }
    let out = temp_dir("ae-mnist");
    let document = train_and_check(&["--mnist", mnist.to_str().unwrap(), "--patches", "200"], &out, 784, 20, 28);
    let model = Autoencoder { n_visible: 784, n_hidden: 20, w1: parameters(&document, "W1"), b1: parameters(&document, "b1"), w2: parameters(&document, "W2"), b2: parameters(&document, "b2") };
    let (data, _) = read_unit_inputs(&mnist, Some(200)).unwrap();
    // UFLDL's MNIST exercises' settings are the defaults with --mnist.
    let settings = CostSettings { weight_decay: 3e-3, sparsity_target: 0.1, sparsity_weight: 3.0 };
    assert_eq!(document["layers"][0]["settings"]["rho"], 0.1);
    let expected = cost(&CpuBackend, &model, &data, &settings, &mut Workspace::new()).unwrap().total;
    let saved = document["layers"][0]["training"]["final"]["J"].as_f64().unwrap();
    assert!((expected - saved).abs() <= 1e-5 * saved.abs(), "J of the saved parameters {expected}, reported {saved}");
}

#[test]
fn bad_values_name_their_flag_or_file() {
    let out = temp_dir("ae-bad");
    let out = out.to_str().unwrap();
    let mnist = shared_mnist("train-10k-images-idx3-ubyte.gz");
    let mnist = mnist.to_str().unwrap();
    assert!(run_fails(&["autoencoder", "--mnist", mnist, "--rho", "1.5", "--out", out]).contains("--rho is 1.5"));
    assert!(run_fails(&["autoencoder", "--mnist", mnist, "--hidden", "0", "--out", out]).contains("--hidden is 0"));
    assert!(run_fails(&["autoencoder", "--mnist", mnist, "--method", "newton", "--out", out]).contains("--method"));
    assert!(run_fails(&["autoencoder", "--images", "/no/such/folder", "--out", out]).contains("--images /no/such/folder: no such file"));
    let not_png = temp_dir("ae-not-png").join("noise.png");
    std::fs::write(&not_png, b"not a png").unwrap();
    let stderr = run_fails(&["autoencoder", "--images", not_png.to_str().unwrap(), "--out", out]);
    assert!(stderr.contains("noise.png") && stderr.contains("not a readable PNG"), "{stderr}");
    let stderr = run_fails(&["autoencoder", "--mnist", not_png.to_str().unwrap(), "--out", out]);
    assert!(stderr.contains("--mnist") && stderr.contains("noise.png"), "{stderr}");
}

/// The device's cost driving the CPU's L-BFGS (Mesa lavapipe here: `WGPU_BACKEND=vulkan
/// VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json`) starts from the CPU's J and
/// ends near the CPU run's: f32 sums in another order part the two paths only slightly.
#[test]
fn the_gpu_cost_trains_as_the_cpu_reference_does() {
    let images = temp_dir("ae-images-gpu");
    write_stripe_images(&images);
    let images = images.to_str().unwrap();
    let (cpu_out, gpu_out) = (temp_dir("ae-cpu"), temp_dir("ae-gpu"));
    let common = ["autoencoder", "--images", images, "--patches", "1000", "--hidden", "16", "--iterations", "20", "--json", "--out"];
    let output = run(&[&common[..], &[gpu_out.to_str().unwrap(), "--backend", "gpu"]].concat());
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--backend gpu"), "failed for another reason than a missing adapter:\n{stderr}");
        eprintln!("skipped: no GPU adapter ({stderr})");
        return;
    }
    let gpu = last_json(&String::from_utf8(output.stdout).unwrap());
    let cpu = last_json(&run_ok(&[&common[..], &[cpu_out.to_str().unwrap()]].concat()));
    assert_eq!((gpu["backend"].as_str(), cpu["backend"].as_str()), (Some("gpu"), Some("cpu")));
    let initial = |dir: &Path| read_model(dir)["layers"][0]["training"]["initial"]["J"].clone();
    assert_eq!(initial(&gpu_out), initial(&cpu_out), "same seed, same patches, same starting J");
    let (g, c) = (gpu["J"].as_f64().unwrap(), cpu["J"].as_f64().unwrap());
    assert!(g < 0.9 * initial(&gpu_out).as_f64().unwrap(), "the device run lowered J");
    assert!((g - c).abs() <= 0.05 * c, "J after 20 iterations: GPU {g}, CPU {c}");
}

/// UFLDL whitens the images before `normalizeData`, so what trains still lies in [0.1, 0.9], a
/// sigmoid decoder's reach; whitening after the mapping left targets it cannot reconstruct.
#[test]
fn whitened_patches_are_normalised_after_whitening_and_train() {
    let images = temp_dir("ae-zca-images");
    write_stripe_images(&images);
    let out = temp_dir("ae-zca");
    let document = train_and_check(&["--images", images.to_str().unwrap(), "--patches", "1000", "--zca"], &out, 64, 16, 8);
    assert_eq!(document["inputs"]["zca"], true);
    let range = document["inputs"]["range"].as_array().expect("inputs.range");
    let (low, high) = (range[0].as_f64().unwrap(), range[1].as_f64().unwrap());
    assert!(low >= 0.1 - 1e-6 && high <= 0.9 + 1e-6 && high > low, "inputs span [{low}, {high}], not inside [0.1, 0.9]");
}
