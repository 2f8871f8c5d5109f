#![cfg(target_arch = "wasm32")]
//! The page's sparse autoencoder through the wasm API (`AutoencoderTrainer`, src/web/autoencoder.rs)
//! on the synthetic strokes, on the CPU and on WebGPU in headless Chromium: settings errors name
//! their field; J at the start is the CPU reference's; L-BFGS steps lower J (on the device, each
//! step's J is the CPU reference's at the parameters it reached); SGD epochs lower it; the views have their shapes; a lost device
//! fails one step, keeps the parameters, and the CPU goes on.
//!
//! `CHROMEDRIVER=/usr/bin/chromedriver wasm-pack test --headless --chrome --release --mode
//! no-install --test web_autoencoder`

mod support;

use deepbelief::autoencoder::{cost, Autoencoder, CostSettings, Workspace};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::format::autoencoder::{from_json, SavedAutoencoder};
use deepbelief::web::{AutoencoderTrainer, Playground};
use serde_json::{json, Value};
use support::web_playground::strokes::{loaded, pixels, CASES};
use support::web_playground::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// 8 × 8 strokes: 64 inputs, as the exercise's patches.
const SIDE: usize = 8;
const HIDDEN: usize = 10;

fn trainer(pg: &Playground, config: Value) -> AutoencoderTrainer {
    AutoencoderTrainer::new(pg, js(config)).unwrap_or_else(|e| panic!("{}", error_message(e)))
}

async fn resolve(promise: js_sys::Promise) -> Result<Value, String> {
    match JsFuture::from(promise).await {
        Ok(value) => Ok(json(value)),
        Err(error) => Err(js_sys::Reflect::get(&error, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_else(|| format!("{error:?}"))),
    }
}

fn total(report: &Value) -> f64 {
    report["cost"]["total"].as_f64().unwrap_or_else(|| panic!("no cost.total in {report}"))
}

/// `J` of `config`'s initial model on the strokes by the CPU reference, outside the API.
fn reference_j(config: &Value) -> f64 {
    let data = strokes_data();
    let model = Autoencoder::initialise(SIDE * SIDE, HIDDEN, config["seed"].as_u64().unwrap_or(1));
    let settings = CostSettings { weight_decay: config["lambda"].as_f64().unwrap_or(3e-3), sparsity_target: config["rho"].as_f64().unwrap_or(0.1), sparsity_weight: config["beta"].as_f64().unwrap_or(3.0) };
    cost(&CpuBackend, &model, &data, &settings, &mut Workspace::new()).expect("a finite J").total
}

fn lbfgs_config(backend: &str, iterations: usize) -> Value {
    json!({ "hidden": HIDDEN, "iterations": iterations, "backend": backend, "seed": 3 })
}

/// Starts, steps `steps` times; the J of the start and of every step. Each step must lower J.
async fn run(pg: &Playground, config: Value, steps: usize) -> (Value, Vec<Value>, AutoencoderTrainer) {
    let trainer = trainer(pg, config);
    let started = resolve(trainer.start()).await.unwrap_or_else(|e| panic!("start: {e}"));
    let mut reports = Vec::new();
    let mut previous = total(&started);
    for k in 1..=steps {
        let report = resolve(trainer.step()).await.unwrap_or_else(|e| panic!("step {k}: {e}"));
        assert_eq!(report["iteration"], json!(k), "step {k}: {report}");
        let j = total(&report);
        assert!(j < previous, "step {k}: J rose or stalled from {previous} to {j}");
        previous = j;
        reports.push(report);
    }
    (started, reports, trainer)
}

#[wasm_bindgen_test]
fn settings_errors_name_their_field() {
    let pg = loaded(SIDE);
    let nan = |field: &str| {
        let object = js_sys::Object::new();
        js_sys::Reflect::set(&object, &field.into(), &JsValue::from_f64(f64::NAN)).unwrap();
        JsValue::from(object)
    };
    let mut cases: Vec<(String, JsValue)> = ["hidden", "rho", "lambda", "beta", "iterations", "batch_size", "learning_rate", "momentum", "cases", "seed", "memory"].iter().map(|f| (f.to_string(), nan(f))).collect();
    for (field, value) in [
        ("hidden", json!(0)),
        ("hidden", json!(2.5)),
        ("hidden", json!("ten")),
        ("rho", json!(0)),
        ("rho", json!(1)),
        ("lambda", json!(-1e-3)),
        ("beta", json!(-1)),
        ("method", json!("newton")),
        ("method", json!(3)),
        ("iterations", json!(0)),
        ("batch_size", json!(0)),
        ("learning_rate", json!(0)),
        ("learning_rate", json!(-0.1)),
        ("momentum", json!(1)),
        ("cases", json!(0)),
        ("seed", json!(-1)),
        ("backend", json!("tpu")),
        ("hiden", json!(10)),
    ] {
        cases.push((field.to_string(), js(json!({ field: value }))));
    }
    for (field, config) in cases {
        let error = message(AutoencoderTrainer::new(&pg, config));
        assert!(error.starts_with(&format!("{field}:")), "{field}: the error does not name it: {error}");
    }
    assert!(message(AutoencoderTrainer::new(&Playground::new(), JsValue::UNDEFINED)).contains("no data"), "no data loaded");
    // Every setting left out is a default; null is too.
    AutoencoderTrainer::new(&pg, JsValue::NULL).unwrap_or_else(|e| panic!("{}", error_message(e)));
    AutoencoderTrainer::new(&pg, js(json!({ "rho": null }))).unwrap_or_else(|e| panic!("{}", error_message(e)));
}

#[wasm_bindgen_test]
async fn cpu_lbfgs_starts_at_the_reference_j_lowers_it_and_draws_its_views() {
    let pg = loaded(SIDE);
    let config = lbfgs_config("cpu", 6);
    let (started, reports, trainer) = run(&pg, config.clone(), 6).await;
    assert_eq!((started["backend"].as_str(), started["n_visible"].as_u64(), started["n_hidden"].as_u64(), started["cases"].as_u64()), (Some("cpu"), Some(64), Some(HIDDEN as u64), Some(CASES as u64)), "{started}");
    let reference = reference_j(&config);
    assert!((total(&started) - reference).abs() <= 1e-12 * reference, "J at the start {} vs the CPU reference {reference}", total(&started));
    let c = &started["cost"];
    let sum = c["reconstruction"].as_f64().unwrap() + c["weight_decay"].as_f64().unwrap() + c["sparsity"].as_f64().unwrap();
    assert!((sum - total(&started)).abs() <= 1e-12 * sum, "the terms add up to J: {c}");
    let last = reports.last().unwrap();
    assert_eq!((last["done"].as_bool(), last["stop"].as_str()), (Some(true), Some("max_iterations")), "{last}");
    assert!(reports[..5].iter().all(|r| r["done"] == json!(false) && r["stop"].is_null()), "only the last step is done");
    assert!(last["evaluations"].as_u64().unwrap() >= 7 && last["seconds"].as_f64().unwrap() >= 0.0, "{last}");
    // A finished run stays finished.
    let again = resolve(trainer.step()).await.unwrap();
    assert_eq!((again["done"].as_bool(), again["iteration"].as_u64(), total(&again)), (Some(true), Some(6), total(last)), "{again}");

    let filters = image(trainer.filters(100).unwrap());
    // 10 tiles of 8 × 8 in 4 columns, 3 rows, a one-pixel frame around each.
    assert_eq!((filters.width, filters.height), (4 * (SIDE + 1) + 1, 3 * (SIDE + 1) + 1));
    let four = image(trainer.filters(4).unwrap());
    assert_eq!((four.width, four.height), (2 * (SIDE + 1) + 1, 2 * (SIDE + 1) + 1));
    let pairs = image(trainer.reconstructions(5).unwrap());
    assert_eq!((pairs.width, pairs.height), (5 * (SIDE + 1) + 1, 2 * (SIDE + 1) + 1));
    let sparsity = json(trainer.sparsity().unwrap());
    let rho_hat = sparsity["rho_hat"].as_array().unwrap();
    assert_eq!((sparsity["rho"].as_f64(), rho_hat.len()), (Some(0.1), HIDDEN));
    assert!(rho_hat.iter().all(|r| r.as_f64().is_some_and(|r| r > 0.0 && r < 1.0)), "{sparsity}");

    // The model file reads back (format::autoencoder checks every field) with the run's record.
    let text = trainer.model_json().unwrap();
    assert!(text.contains("\"format\": \"deepbelief-autoencoder/2\""), "{}", &text[..200.min(text.len())]);
    let saved = read_back(&trainer);
    assert_eq!((saved.stack.layers.len(), saved.pretraining_data.cases, saved.preprocessing.image_shape()), (1, CASES, Some((SIDE, SIDE))));
    let layer = &saved.stack.layers[0];
    let record = layer.record.as_ref().expect("a training record");
    assert_eq!((layer.settings.n_hidden, layer.settings.iterations, layer.settings.seed, record.iterations, record.history.len(), record.stop.as_str(), record.backend.as_str()), (HIDDEN, 6, 3, 6, 6, "max_iterations", "cpu"));
    assert!((record.last.total - total(last)).abs() <= 1e-13 * total(last) && (record.initial.total - total(&started)).abs() <= 1e-13 * total(&started), "{record:?}");
    // The saved parameters give the J the last step reported.
    let (model, data) = (saved_model(&trainer), strokes_data());
    let settings = CostSettings { weight_decay: 3e-3, sparsity_target: 0.1, sparsity_weight: 3.0 };
    let j = cost(&CpuBackend, &model, &data, &settings, &mut Workspace::new()).unwrap().total;
    assert!((j - total(last)).abs() <= 1e-9 * j, "the saved model's J {j} vs the last step's {}", total(last));
}

#[wasm_bindgen_test]
async fn start_and_step_refuse_out_of_order() {
    let pg = loaded(SIDE);
    let t = trainer(&pg, lbfgs_config("cpu", 3));
    assert!(resolve(t.step()).await.unwrap_err().contains("start()"), "step before start");
    assert!(t.model_json().is_err(), "model_json before start");
    resolve(t.start()).await.unwrap();
    assert!(resolve(t.start()).await.unwrap_err().contains("started already"));
}

#[wasm_bindgen_test]
async fn sgd_epochs_lower_j_on_the_cpu() {
    let pg = loaded(SIDE);
    let config = json!({ "hidden": HIDDEN, "method": "sgd", "iterations": 4, "batch_size": 10, "learning_rate": 0.3, "momentum": 0.5, "seed": 3 });
    let (started, reports, _) = run(&pg, config.clone(), 4).await;
    assert_eq!(started["backend"].as_str(), Some("cpu"));
    assert!(started["backend_reason"].as_str().unwrap().contains("SGD"), "{started}");
    assert!((total(&started) - reference_j(&config)).abs() <= 1e-12 * total(&started));
    assert_eq!((reports[3]["done"].as_bool(), reports[3]["stop"].as_str()), (Some(true), Some("max_iterations")));
    // 60 cases in batches of 10: 6 steps and one measurement per epoch, after the start's.
    assert_eq!(reports[3]["evaluations"].as_u64(), Some(1 + 4 * 7));
}

/// The trainer's model file, read back by the format's reader.
fn read_back(trainer: &AutoencoderTrainer) -> SavedAutoencoder {
    from_json("model_json()", &trainer.model_json().unwrap()).unwrap_or_else(|e| panic!("{e}"))
}

/// The parameters a trainer would save.
fn saved_model(trainer: &AutoencoderTrainer) -> Autoencoder {
    read_back(trainer).stack.layers[0].autoencoder.clone()
}

fn strokes_data() -> Vec<f32> {
    let (bytes, _) = pixels(SIDE, CASES);
    bytes.iter().map(|&b| f32::from(b) / 255.0).collect()
}

/// The device's L-BFGS (`backend: "gpu"` takes SwiftShader too): J at the start within f32
/// rounding of the CPU's, and after every iteration the CPU reference's J at the parameters the
/// trainer then holds (1e-5 relative); the run ends within 10% of the CPU run (the first line
/// search is a knife edge that rounding can tip: tests/engine_suite/checks/autoencoder.rs).
#[wasm_bindgen_test]
async fn webgpu_lbfgs_reports_the_reference_j_of_its_iterates() {
    let pg = loaded(SIDE);
    let data = strokes_data();
    let settings = CostSettings { weight_decay: 3e-3, sparsity_target: 0.1, sparsity_weight: 3.0 };
    let relative = |a: f64, b: f64| (a - b).abs() / b.abs();
    let device = trainer(&pg, lbfgs_config("gpu", 5));
    let start = resolve(device.start()).await.unwrap();
    assert_eq!(start["backend"].as_str(), Some("gpu"), "{start}");
    let mut previous = total(&start);
    let mut gpu = Vec::new();
    for k in 1..=5 {
        let report = resolve(device.step()).await.unwrap_or_else(|e| panic!("step {k}: {e}"));
        assert_eq!(report["backend"].as_str(), Some("gpu"));
        let j = total(&report);
        assert!(j < previous, "step {k}: J rose or stalled from {previous} to {j}");
        let reference = cost(&CpuBackend, &saved_model(&device), &data, &settings, &mut Workspace::new()).unwrap().total;
        assert!(relative(j, reference) <= 1e-5, "step {k}: the device reports J {j}, the CPU reference has {reference} at its parameters");
        previous = j;
        gpu.push(j);
    }
    let (cpu_start, cpu, _) = run(&pg, lbfgs_config("cpu", 5), 5).await;
    assert!(relative(total(&start), total(&cpu_start)) <= 1e-5, "J at the start: device {} CPU {}", total(&start), total(&cpu_start));
    assert!(relative(gpu[4], total(&cpu[4])) <= 0.1, "after 5 iterations: device J {} CPU J {}", gpu[4], total(&cpu[4]));
    // Two steps at once on the device (whose read-backs wait): the second is refused, the first
    // completes.
    let device = trainer(&pg, lbfgs_config("gpu", 5));
    resolve(device.start()).await.unwrap();
    let (first, second) = (device.step(), device.step());
    assert!(resolve(second).await.unwrap_err().contains("running already"));
    assert_eq!(resolve(first).await.unwrap()["iteration"], json!(1));
}

/// A device lost between iterations: the next step rejects naming it, the parameters are those
/// of the last good step, and the step after takes the iteration on the CPU and lowers J.
#[wasm_bindgen_test]
async fn a_lost_device_fails_one_step_and_the_cpu_goes_on() {
    let pg = loaded(SIDE);
    let (_, reports, trainer) = run(&pg, lbfgs_config("gpu", 8), 2).await;
    let before = trainer.model_json().unwrap();
    trainer.simulate_gpu_loss();
    let error = resolve(trainer.step()).await.expect_err("a step on a lost device");
    assert!(error.contains("lost"), "{error}");
    let before = from_json("before", &before).unwrap().stack.layers[0].autoencoder.clone();
    assert_eq!(saved_model(&trainer), before, "the parameters moved");
    let mut previous = total(&reports[1]);
    for k in 3..=5 {
        let report = resolve(trainer.step()).await.unwrap_or_else(|e| panic!("step {k} on the CPU: {e}"));
        assert_eq!((report["iteration"].as_u64(), report["backend"].as_str()), (Some(k), Some("cpu")), "{report}");
        assert!(report["backend_reason"].as_str().unwrap().contains("lost"), "{report}");
        assert!(total(&report) < previous, "step {k}: J {} after {previous}", total(&report));
        previous = total(&report);
    }
}
