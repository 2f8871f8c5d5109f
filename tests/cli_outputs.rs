#![cfg(not(target_arch = "wasm32"))]
//! What a trained model gives back: `sample` PNGs, `export` NumPy archives, `eval` figures.

mod support;

use deepbelief::format::read_model;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use support::cli::*;

/// One small trained model shared by this file's tests.
fn model_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| train_small_model("outputs").0)
}

fn decode_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let mut reader = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap())).read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((frame.color_type, frame.bit_depth), (png::ColorType::Grayscale, png::BitDepth::Eight));
    pixels.truncate(frame.buffer_size());
    (frame.width, frame.height, pixels)
}

fn check_sample_grid(path: &Path, count: usize, columns: usize) {
    let (width, height, pixels) = decode_png(path);
    let rows = count.div_ceil(columns);
    assert_eq!((width as usize, height as usize), (columns * 29 + 1, rows * 29 + 1));
    let (w, h) = (width as usize, height as usize);
    // Frame and gaps are black: every 29th row and column.
    for y in (0..h).step_by(29) {
        assert!(pixels[y * w..(y + 1) * w].iter().all(|&p| p == 0), "row {y} is a border");
    }
    for x in (0..w).step_by(29) {
        assert!((0..h).all(|y| pixels[y * w + x] == 0), "column {x} is a border");
    }
    let mut levels = pixels.clone();
    levels.sort_unstable();
    levels.dedup();
    assert!(levels.len() > 50, "a picture, not a blank: {} grey levels", levels.len());
    assert!(pixels.iter().any(|&p| p > 128), "some bright (digit) pixels");
}

#[test]
fn sample_writes_a_grid_of_digits_from_random_or_data_starts() {
    let dir = temp_dir("sample");
    let model = model_dir().to_str().unwrap();
    let random = dir.join("random.png");
    let figures = last_json(&run_ok(&[
        "sample",
        "--model",
        model,
        "--count",
        "12",
        "--columns",
        "5",
        "--steps",
        "20",
        "--seed",
        "3",
        "--out",
        random.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!((figures["width"].as_u64(), figures["height"].as_u64()), (Some(5 * 29 + 1), Some(3 * 29 + 1)));
    check_sample_grid(&random, 12, 5);

    let from_data = dir.join("data.png");
    let images = small_images().to_str().unwrap();
    run_ok(&[
        "sample",
        "--model",
        model,
        "--count",
        "8",
        "--columns",
        "4",
        "--steps",
        "2",
        "--from",
        "data",
        "--images",
        images,
        "--out",
        from_data.to_str().unwrap(),
    ]);
    check_sample_grid(&from_data, 8, 4);

    let stderr = run_fails(&["sample", "--model", model, "--from", "data", "--out", from_data.to_str().unwrap()]);
    assert!(stderr.contains("--images"), "{stderr}");
    let stderr = run_fails(&["sample", "--model", model, "--columns", "0", "--out", from_data.to_str().unwrap()]);
    assert!(stderr.contains("--columns"), "{stderr}");
}

#[test]
fn export_writes_every_layer_with_the_model_values() {
    let dir = temp_dir("export");
    let npz_path = dir.join("model.npz");
    run_ok(&["export", "--model", model_dir().to_str().unwrap(), "--npz", npz_path.to_str().unwrap(), "--json"]);
    let model = read_model(model_dir()).unwrap();
    let mut npz = npyz::npz::NpzArchive::open(&npz_path).unwrap();
    for (k, layer) in model.dbn.layers.iter().enumerate() {
        let n = k + 1;
        for (name, shape, values) in [
            (format!("W{n}"), vec![layer.n_visible as u64, layer.n_hidden as u64], &layer.weights),
            (format!("b{n}"), vec![layer.n_visible as u64], &layer.visible_bias),
            (format!("c{n}"), vec![layer.n_hidden as u64], &layer.hidden_bias),
        ] {
            let array = npz.by_name(&name).unwrap().unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(array.shape(), shape.as_slice(), "{name}");
            assert_eq!(&array.into_vec::<f32>().unwrap(), values, "{name}");
        }
    }
    assert_eq!((model.dbn.layers[0].n_visible, model.dbn.layers[0].n_hidden, model.dbn.layers[1].n_hidden), (784, 30, 20));
    assert!(npz.by_name("W3").unwrap().is_none());
}

#[test]
fn eval_reports_reconstruction_free_energy_and_ais() {
    let test_images = shared_mnist("t10k-images-idx3-ubyte.gz");
    let args = [
        "eval",
        "--model",
        model_dir().to_str().unwrap(),
        "--images",
        test_images.to_str().unwrap(),
        "--max-cases",
        "500",
        "--ais-runs",
        "16",
        "--ais-betas",
        "300",
        "--json",
    ];
    let figures = last_json(&run_ok(&args));
    for key in ["recon_error", "free_energy", "ais_logz", "ais_loglik"] {
        assert!(figures[key].as_f64().is_some_and(f64::is_finite), "{key} in {figures}");
    }
    let loglik = figures["ais_loglik"].as_f64().unwrap();
    assert!(loglik < 0.0, "{figures}");
    let identity = -figures["free_energy"].as_f64().unwrap() - figures["ais_logz"].as_f64().unwrap();
    assert!((loglik - identity).abs() < 1e-9, "log-likelihood = −F − log Z");
    assert_eq!(figures["cases"], 500);
    assert_eq!(figures["layer_recon_errors"].as_array().unwrap().len(), 2);

    // Same seed, same estimate; binarised data score differently.
    assert_eq!(last_json(&run_ok(&args))["ais_logz"], figures["ais_logz"]);
    let mut binarised: Vec<&str> = args.to_vec();
    binarised.push("--binarize");
    let binary = last_json(&run_ok(&binarised));
    assert_eq!(binary["binarized"], true);
    assert_ne!(binary["free_energy"], figures["free_energy"]);
    assert_eq!(binary["recon_error"], figures["recon_error"], "reconstruction uses the data as given");

    let stderr = run_fails(&["eval", "--model", model_dir().to_str().unwrap(), "--images", test_images.to_str().unwrap(), "--ais-runs", "1"]);
    assert!(stderr.contains("--ais-runs") && stderr.contains("at least 2 runs"), "{stderr}");
}

#[test]
fn data_of_the_wrong_size_is_refused() {
    let dir = temp_dir("eval-size");
    let images = dir.join("tiny-images");
    let tiny = deepbelief::data::idx::IdxImages { count: 3, rows: 2, cols: 2, pixels: vec![0, 255, 128, 7, 1, 2, 3, 4, 5, 6, 7, 8] };
    std::fs::write(&images, deepbelief::data::idx::encode_idx_images(&tiny)).unwrap();
    let stderr = run_fails(&["eval", "--model", model_dir().to_str().unwrap(), "--images", images.to_str().unwrap()]);
    assert!(stderr.contains("4 inputs per case") && stderr.contains("784 units"), "{stderr}");
}
