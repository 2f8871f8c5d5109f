#![cfg(not(target_arch = "wasm32"))]
//! `deepbelief train`: its files, its JSON, settings from TOML and flags, and the errors bad
//! settings get.

mod support;

use deepbelief::format::read_model;
use support::cli::*;

#[test]
fn train_writes_model_log_and_filters_and_reports_progress() {
    let (out, figures) = train_small_model("train");
    for file in ["model.json", "DEEP.LOG", "filters.png"] {
        assert!(out.join(file).is_file(), "{file} missing in {}", out.display());
    }

    let recon = figures["recon_error"].as_f64().expect("recon_error");
    let init = figures["init_error"].as_f64().expect("init_error");
    assert!(recon.is_finite() && recon > 0.0, "{figures}");
    assert!(recon < init, "training must lower the top layer's error: {figures}");
    let layers = figures["layers"].as_array().expect("per-layer figures");
    assert_eq!(layers.len(), 2);
    for layer in layers {
        assert!(layer["recon_error"].as_f64().unwrap() < layer["init_error"].as_f64().unwrap(), "{layer}");
        assert_eq!(layer["epochs"], 2);
        assert_eq!(layer["stop"], "max_epochs");
    }

    let log = std::fs::read_to_string(out.join("DEEP.LOG")).unwrap();
    assert!(log.contains("Architecture: 784 bernoulli -> 30 -> 20"), "{log}");
    assert!(log.contains(&format!("Cases .................... {SMALL_CASES}")), "{log}");
    assert!(log.contains("learning_rate"), "every parameter is listed");
    assert!(log.contains("LAYER 1 of 2") && log.contains("LAYER 2 of 2"));
    // Q-mean and skewness rows: one value per hidden unit, 8 per block.
    let q_rows: Vec<&str> = log.lines().filter(|l| l.trim_start().starts_with("Q-mean")).collect();
    let skew_rows: Vec<&str> = log.lines().filter(|l| l.trim_start().starts_with("Skewness")).collect();
    assert_eq!(q_rows.len(), 30usize.div_ceil(8) + 20usize.div_ceil(8), "{log}");
    assert_eq!(skew_rows.len(), q_rows.len());
    let q_values: Vec<f64> = q_rows.iter().flat_map(|row| row.split_whitespace().skip(1).map(|v| v.parse::<f64>().unwrap())).collect();
    assert_eq!(q_values.len(), 50);
    assert!(q_values.iter().all(|q| (0.0..=1.0).contains(q)), "Q-means are probabilities");

    // The saved model is the trained one and reads back unchanged.
    let model = read_model(&out).expect("model.json loads");
    assert_eq!(model.dbn.sizes(), vec![784, 30, 20]);
    assert_eq!(model.image_shape, Some((28, 28)));
    assert_eq!(model.visible_means.as_ref().map(Vec::len), Some(784));
    assert_eq!(model.training.len(), 2);
    assert!((model.training[1].final_error - recon).abs() < 1e-12);
    let again = deepbelief::format::from_json("copy", &deepbelief::format::to_json(&model)).unwrap();
    assert_eq!(again, model);

    let filters = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(out.join("filters.png")).unwrap())).read_info().unwrap();
    // 30 filters, 10 per row: 3 rows of 28×28 tiles with 1-pixel gaps and frame.
    assert_eq!((filters.info().width, filters.info().height), (10 * 29 + 1, 3 * 29 + 1));
}

#[test]
fn plain_output_has_one_line_per_epoch_and_json_takes_the_last_line() {
    let out = temp_dir("train-lines");
    let images = small_images().to_str().unwrap();
    let stdout = run_ok(&small_train_args(images, out.to_str().unwrap()));
    // Not a terminal: per-epoch lines (layer, epoch, …) on standard output.
    let epoch_lines = stdout.lines().filter(|l| l.split_whitespace().take(2).all(|w| w.parse::<usize>().is_ok()) && l.split_whitespace().count() == 10).count();
    assert_eq!(epoch_lines, 4, "{stdout}");
    assert!(serde_json::from_str::<serde_json::Value>(stdout.lines().last().unwrap()).is_err(), "no JSON without --json");
}

fn write_config(dir: &std::path::Path, text: &str) -> String {
    let path = dir.join("train.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn toml_settings_are_used_and_flags_override_them() {
    let dir = temp_dir("train-toml");
    let images = small_images().to_str().unwrap();
    let config = write_config(
        &dir,
        &format!(
            "layers = [25, 15]\ngreedy_mean_field = false\n\n[data]\ntrain_images = {images:?}\n\n[rbm]\nepochs = 2\ninit_trials = 2\nlearning_rate = 0.05\ncd_k_end = 1\nweight_penalty = 0.0002\n"
        ),
    );
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    last_json(&run_ok(&["train", "--config", &config, "--out", out, "--json"]));
    let model = read_model(std::path::Path::new(out)).unwrap();
    assert_eq!(model.dbn.sizes(), vec![784, 25, 15]);
    assert_eq!(model.config.rbm.learning_rate, 0.05);
    assert_eq!(model.config.rbm.cd_k_end, 1);
    assert_eq!(model.config.rbm.weight_penalty, 0.0002);
    assert!(!model.config.greedy_mean_field);

    // Flags win over the file.
    run_ok(&["train", "--config", &config, "--out", out, "--rbm-layers", "12", "--learning-rate", "0.02", "--epochs", "1", "--greedy-mean-field", "true"]);
    let model = read_model(std::path::Path::new(out)).unwrap();
    assert_eq!(model.dbn.sizes(), vec![784, 12]);
    assert_eq!(model.config.rbm.learning_rate, 0.02);
    assert_eq!(model.training[0].epochs, 1);
    assert_eq!(model.config.rbm.weight_penalty, 0.0002, "file values the flags leave alone stay");
    assert!(model.config.greedy_mean_field);
}

#[test]
fn toml_typo_names_the_key_and_its_line() {
    let dir = temp_dir("train-toml-typo");
    let images = small_images().to_str().unwrap();
    let config = write_config(&dir, &format!("layers = [10]\n\n[data]\ntrain_images = {images:?}\n\n[rbm]\nepochs = 1\nlerning_rate = 0.1\n"));
    let stderr = run_fails(&["train", "--config", &config, "--out", dir.join("out").to_str().unwrap()]);
    assert!(stderr.contains(&config), "names the file: {stderr}");
    assert!(stderr.contains("lerning_rate") && stderr.contains("unknown field"), "{stderr}");
    assert!(stderr.contains("line 8"), "{stderr}");

    let config = write_config(&dir, "layers = [10]\n[data]\ntrain_imgs = \"x\"\n");
    let stderr = run_fails(&["train", "--config", &config, "--out", dir.join("out").to_str().unwrap()]);
    assert!(stderr.contains("train_imgs") && stderr.contains("line 3"), "{stderr}");
}

#[test]
fn bad_settings_fail_naming_the_field() {
    let dir = temp_dir("train-bad");
    let images = small_images().to_str().unwrap();
    let out = dir.join("out");
    let out = out.to_str().unwrap();
    let base = ["train", "--train-images", images, "--out", out, "--epochs", "1", "--init-trials", "1"];
    for (extra, expected) in [
        (vec!["--rbm-layers", "0"], "--rbm-layers"),
        (vec!["--rbm-layers", "500,,20"], "--rbm-layers"),
        (vec!["--rbm-layers", "20,x"], "--rbm-layers"),
        (vec!["--learning-rate", "NaN"], "learning_rate"),
        (vec!["--weight-penalty", "-1"], "weight_penalty"),
        (vec!["--batches", "501"], "n_batches"),
        (vec!["--batch-size", "0"], "batch_size"),
        (vec!["--cd-k", "0"], "cd_k_start"),
        (vec!["--sparsity-target", "inf"], "sparsity_target"),
        (vec!["--momentum-end", "1.5"], "final_momentum"),
    ] {
        let args: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
        let stderr = run_fails(&args);
        assert!(stderr.contains(expected), "{extra:?}: expected a message naming {expected}, got: {stderr}");
    }
    assert!(!std::path::Path::new(out).join("model.json").exists(), "nothing was trained");

    let stderr = run_fails(&["train", "--out", out]);
    assert!(stderr.contains("--train-images"), "{stderr}");

    let config = write_config(&dir, &format!("layers = [0]\n[data]\ntrain_images = {images:?}\n"));
    let stderr = run_fails(&["train", "--config", &config, "--out", out]);
    assert!(stderr.contains("layers"), "{stderr}");
}

#[test]
fn data_file_errors_name_the_file() {
    let dir = temp_dir("train-bad-data");
    let out = dir.join("out");
    let missing = dir.join("missing.idx");
    let stderr = run_fails(&["train", "--train-images", missing.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(stderr.contains("missing.idx"), "{stderr}");

    let labels = shared_mnist("train-10k-labels-idx1-ubyte.gz");
    let stderr =
        run_fails(&["train", "--train-images", small_images().to_str().unwrap(), "--train-labels", labels.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(stderr.contains("labels for") && stderr.contains("500"), "label count mismatch: {stderr}");
}

#[test]
fn gaussian_visible_units_standardise_the_inputs_and_save_the_scaling() {
    let out = temp_dir("train-gaussian");
    let images = small_images().to_str().unwrap();
    let mut args = vec![
        "train",
        "--train-images",
        images,
        "--rbm-layers",
        "20",
        "--epochs",
        "2",
        "--init-trials",
        "1",
        "--visible",
        "gaussian",
        "--hinton",
        "--learning-rate",
        "0.001",
    ];
    args.extend(["--out", out.to_str().unwrap(), "--json"]);
    let figures = last_json(&run_ok(&args));
    assert!(figures["recon_error"].as_f64().unwrap().is_finite());
    let model = read_model(&out).unwrap();
    let standardisation = model.standardisation.as_ref().expect("saved with the model");
    assert_eq!(standardisation.mean.len(), 784);
    assert_eq!(standardisation.sd[0], 0.0, "the corner pixel is always 0 in MNIST");
    assert!(standardisation.sd.iter().any(|&s| s > 0.3));
    assert_eq!(model.dbn.layers[0].visible_units, deepbelief::model::VisibleUnits::Gaussian);
    let log = std::fs::read_to_string(out.join("DEEP.LOG")).unwrap();
    assert!(log.contains("784 gaussian -> 20") && log.contains("mean 0, sd 1"), "{log}");
}

#[test]
fn database_inputs_are_scaled_and_eval_reapplies_the_scaling() {
    let dir = temp_dir("train-database");
    // A DEEP database: a header of names, one case per line; D is constant and gets dropped.
    let mut text = String::from("A B C D\n");
    for k in 0..120 {
        let a = (k % 10) as f64 / 3.0;
        text.push_str(&format!("{a} {} {} 7\n", 10.0 - a, (k % 3) as f64 * 100.0));
    }
    let db = dir.join("cases.txt");
    std::fs::write(&db, text).unwrap();
    let out = dir.join("out");
    let figures = last_json(&run_ok(&[
        "train",
        "--train-images",
        db.to_str().unwrap(),
        "--rbm-layers",
        "4",
        "--epochs",
        "3",
        "--init-trials",
        "2",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]));
    assert!(figures["recon_error"].as_f64().unwrap().is_finite());
    let model = read_model(&out).unwrap();
    let preprocessing = model.preprocessing.as_ref().expect("the database scaling is saved");
    assert_eq!(preprocessing.kept_names, ["A", "B", "C"]);
    assert_eq!(preprocessing.dropped_names, ["D"]);
    assert_eq!((model.image_shape, model.dbn.sizes()), (None, vec![3, 4]));
    let log = std::fs::read_to_string(out.join("DEEP.LOG")).unwrap();
    assert!(log.contains("dropped as constant: D"), "{log}");

    let eval =
        last_json(&run_ok(&["eval", "--model", out.to_str().unwrap(), "--images", db.to_str().unwrap(), "--ais-runs", "4", "--ais-betas", "30", "--json"]));
    assert!((eval["recon_error"].as_f64().unwrap() - figures["recon_error"].as_f64().unwrap()).abs() < 1e-6, "same data, same scaling: {eval} vs {figures}");

    let stderr = run_fails(&["eval", "--model", out.to_str().unwrap(), "--images", small_images().to_str().unwrap()]);
    assert!(stderr.contains("trained on a text database"), "{stderr}");
    let stderr = run_fails(&["train", "--train-images", db.to_str().unwrap(), "--inputs", "A,Z", "--out", out.to_str().unwrap()]);
    assert!(stderr.contains("cases.txt") && stderr.contains("\"Z\""), "{stderr}");
}

#[test]
fn gpu_backend_trains_the_same_stack_as_the_cpu() {
    // On CI the adapter is Mesa lavapipe; `--backend gpu` takes it, `auto` would not.
    let images = small_images().to_str().unwrap();
    let mut figures = Vec::new();
    let mut models = Vec::new();
    for backend in ["cpu", "gpu"] {
        let out = temp_dir(&format!("train-backend-{backend}"));
        let mut args = small_train_args(images, out.to_str().unwrap());
        args.extend(["--backend", backend, "--json"]);
        figures.push(last_json(&run_ok(&args)));
        models.push(deepbelief::format::read_model(&out).unwrap());
    }
    let (cpu, gpu) = (&figures[0], &figures[1]);
    let relative = |key: &str| ((cpu[key].as_f64().unwrap() - gpu[key].as_f64().unwrap()) / cpu[key].as_f64().unwrap()).abs();
    assert!(relative("recon_error") < 1e-3, "cpu {cpu} vs gpu {gpu}");
    assert_eq!(cpu["epochs"], gpu["epochs"]);
    for (c, g) in models[0].dbn.layers.iter().zip(&models[1].dbn.layers) {
        let scale = c.weights.iter().fold(0.0f32, |m, w| m.max(w.abs()));
        let worst = c.weights.iter().zip(&g.weights).fold(0.0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(worst / scale < 1e-3, "layer weights differ by {worst} (scale {scale})");
    }
}
