#![cfg(target_arch = "wasm32")]
//! Sparse coding on the page through the wasm API (`SparseCodingTrainer`,
//! src/web/sparse_coding.rs) on the synthetic strokes, in headless Chromium: settings errors
//! name their field; on the CPU each step is `sparse_coding::fit`'s mini-batch bit for bit (the
//! objective falls step by step); the patches are `data::patches::sample_patches`' with the
//! blank ones skipped; β from a target sparsity; the views have their shapes and counts; the
//! saved file reads back with the run's basis and records; on WebGPU (where the session has a
//! device path) the objective falls as the CPU's does.
//!
//! `CHROMEDRIVER=/usr/bin/chromedriver wasm-pack test --headless --chrome --release --mode
//! no-install --test web_sparse_coding`

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::patches::{sample_patches, GreyImage};
use deepbelief::format::sparse_coding::{from_json, SavedSparseCoding};
use deepbelief::report::image_grid::{tile, Scaling};
use deepbelief::sparse_coding::{fit, Basis, BasisStepSettings, BatchRecord, CodeSolver, FitSettings, StatisticsRule};
use deepbelief::web::{Playground, SparseCodingTrainer};
use serde_json::{json, Value};
use support::web_playground::strokes::{loaded, pixels, CASES};
use support::web_playground::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

/// 8 × 8 strokes: 64 inputs.
const SIDE: usize = 8;
const BASES: usize = 12;

/// The strokes with no case held out, so the training cases are every case in order.
fn all_training() -> Playground {
    let mut pg = loaded(SIDE);
    pg.set_held_out(0.0, None).unwrap_or_else(|e| panic!("{}", error_message(e)));
    pg
}

fn trainer(pg: &Playground, config: Value) -> SparseCodingTrainer {
    SparseCodingTrainer::new(pg, js(config)).unwrap_or_else(|e| panic!("{}", error_message(e)))
}

async fn resolve(promise: js_sys::Promise) -> Result<Value, String> {
    match JsFuture::from(promise).await {
        Ok(value) => Ok(json(value)),
        Err(error) => Err(js_sys::Reflect::get(&error, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_else(|| format!("{error:?}"))),
    }
}

fn number(report: &Value, name: &str) -> f64 {
    report[name].as_f64().unwrap_or_else(|| panic!("no number {name} in {report}"))
}

fn strokes_data() -> Vec<f32> {
    let (bytes, _) = pixels(SIDE, CASES);
    bytes.iter().map(|&b| f32::from(b) / 255.0).collect()
}

fn read_back(trainer: &SparseCodingTrainer) -> SavedSparseCoding {
    from_json("model_json()", &trainer.model_json().unwrap_or_else(|e| panic!("{}", error_message(e)))).unwrap_or_else(|e| panic!("{e}"))
}

/// Whole cases, a given β: 60 cases in batches of 20, 3 passes.
fn whole_config(backend: &str) -> Value {
    json!({ "patch": 0, "bases": BASES, "beta": 0.3, "batch_size": 20, "passes": 3, "statistics": "whole_set", "seed": 3, "backend": backend })
}

#[wasm_bindgen_test]
fn settings_errors_name_their_field() {
    let pg = loaded(SIDE);
    let nan = |field: &str| {
        let object = js_sys::Object::new();
        js_sys::Reflect::set(&object, &field.into(), &JsValue::from_f64(f64::NAN)).unwrap();
        JsValue::from(object)
    };
    let mut cases: Vec<(String, JsValue)> = ["patch", "cases", "bases", "sparsity", "beta", "batch_size", "passes", "seed"].iter().map(|f| (f.to_string(), nan(f))).collect();
    for (field, value) in [
        ("patch", json!(-1)),
        ("patch", json!(2.5)),
        ("patch", json!(9)),
        ("patch", json!(65)),
        ("cases", json!(0)),
        ("bases", json!(0)),
        ("bases", json!("ten")),
        ("sparsity", json!(0)),
        ("sparsity", json!(1)),
        ("beta", json!(0)),
        ("beta", json!(-1)),
        ("solver", json!("lars")),
        ("solver", json!(2)),
        ("batch_size", json!(0)),
        ("passes", json!(0)),
        ("statistics", json!("sometimes")),
        ("seed", json!(-1)),
        ("backend", json!("tpu")),
        ("adapter_name", json!(3)),
        ("base", json!(10)),
    ] {
        cases.push((field.to_string(), js(json!({ field: value }))));
    }
    for (field, config) in cases {
        let error = message(SparseCodingTrainer::new(&pg, config));
        assert!(error.starts_with(&format!("{field}:")), "{field}: the error does not name it: {error}");
    }
    // 100,000 patches with 4,096 codes each would take 1.6 GB.
    let error = message(SparseCodingTrainer::new(&pg, js(json!({ "patch": 4, "cases": 100_000, "bases": 4096 }))));
    assert!(error.starts_with("cases:") && error.contains("MiB"), "{error}");
    assert!(message(SparseCodingTrainer::new(&Playground::new(), JsValue::UNDEFINED)).contains("no data"), "no data loaded");
    let csv = "a,b,c\n0.1,0.2,0.3\n0.4,0.5,0.6\n0.7,0.8,0.9\n";
    let mut database = Playground::new();
    database.load_database("table.csv", csv, vec![], vec![]).unwrap_or_else(|e| panic!("{}", error_message(e)));
    let error = message(SparseCodingTrainer::new(&database, JsValue::UNDEFINED));
    assert!(error.starts_with("patch:") && error.contains("not images"), "{error}");
    SparseCodingTrainer::new(&database, js(json!({ "patch": 0, "bases": 2 }))).unwrap_or_else(|e| panic!("whole cases of a database: {}", error_message(e)));
    // Every setting left out is a default; null is too.
    SparseCodingTrainer::new(&pg, js(json!({ "patch": 4, "cases": 50 }))).unwrap_or_else(|e| panic!("{}", error_message(e)));
    SparseCodingTrainer::new(&pg, js(json!({ "patch": 4, "cases": 50, "beta": null }))).unwrap_or_else(|e| panic!("{}", error_message(e)));
}

/// The reference: `fit` on the strokes from the same initial basis, every batch's record.
fn reference_fit() -> (Basis, Vec<BatchRecord>) {
    let data = strokes_data();
    let mut basis = Basis::initialise(SIDE * SIDE, BASES, 3).unwrap();
    let settings = FitSettings { beta: 0.3, solver: CodeSolver::coordinate_descent(), basis_step: BasisStepSettings::default(), batch_size: 20, passes: 3, track_whole_set: true, statistics: StatisticsRule::WholeSet };
    let mut codes = vec![0.0f32; CASES * BASES];
    let report = fit(&CpuBackend, &mut basis, &data, &mut codes, &settings, &mut |_| true).unwrap();
    (basis, report.batches)
}

#[wasm_bindgen_test]
async fn cpu_steps_are_fits_batches_and_lower_the_objective() {
    let pg = all_training();
    let t = trainer(&pg, whole_config("cpu"));
    let started = resolve(t.start()).await.unwrap_or_else(|e| panic!("start: {e}"));
    assert_eq!(
        (started["backend"].as_str(), started["n_inputs"].as_u64(), started["n_bases"].as_u64(), started["cases"].as_u64(), started["batches"].as_u64(), started["tile"].clone(), started["beta_search"].clone(), started["sparsity"].clone()),
        (Some("cpu"), Some(64), Some(BASES as u64), Some(CASES as u64), Some(3), json!([SIDE, SIDE]), Value::Null, Value::Null),
        "{started}"
    );
    // Zero codes: the objective is ½‖X‖².
    let half_norm: f64 = strokes_data().iter().map(|&x| 0.5 * f64::from(x) * f64::from(x)).sum();
    assert!((number(&started, "objective") - half_norm).abs() <= 1e-9 * half_norm, "{started} vs ½‖X‖² = {half_norm}");
    assert_eq!(number(&started, "nonzero_fraction"), 0.0);

    let (reference_basis, reference) = reference_fit();
    let mut previous = number(&started, "objective");
    for (k, expected) in reference.iter().enumerate() {
        let report = resolve(t.step()).await.unwrap_or_else(|e| panic!("step {}: {e}", k + 1));
        assert_eq!((report["pass"].as_u64(), report["batch"].as_u64(), report["step"].as_u64()), (Some(expected.pass as u64), Some(expected.batch as u64 + 1), Some(k as u64 + 1)), "{report}");
        let objective = number(&report, "objective");
        assert_eq!(objective, expected.objective_after_basis, "step {}: the session is fit's batch bit for bit", k + 1);
        assert!(objective <= previous * (1.0 + 1e-9), "step {}: the objective rose from {previous} to {objective}", k + 1);
        assert_eq!(report["done"].as_bool(), Some(k + 1 == reference.len()), "{report}");
        previous = objective;
    }
    assert!(previous < 0.8 * number(&started, "objective"), "the objective fell only from {} to {previous}", number(&started, "objective"));
    // A finished run stays finished.
    let again = resolve(t.step()).await.unwrap();
    assert_eq!((again["done"].as_bool(), number(&again, "objective"), again["step"].as_u64()), (Some(true), previous, Some(9)), "{again}");

    // The saved file: fit's basis, every batch, the whole set before the first pass and after each.
    let saved = read_back(&t);
    assert_eq!(saved.basis, reference_basis.values, "the saved basis is fit's");
    assert_eq!((saved.n_inputs, saved.n_bases, saved.tile, saved.batches.len(), saved.history.len()), (64, BASES, Some([SIDE, SIDE]), 9, 4));
    assert_eq!((saved.settings.beta, saved.settings.beta_search, saved.settings.batch_size, saved.settings.passes, saved.settings.seed), (0.3, None, 20, 3, 3));
    assert_eq!(saved.batches.iter().map(|b| b.objective_after_basis).collect::<Vec<_>>(), reference.iter().map(|b| b.objective_after_basis).collect::<Vec<_>>());
    assert!((saved.history[3].objective.total - previous).abs() <= 1e-5 * previous, "the measured objective after the last pass {} vs the steps' {previous}", saved.history[3].objective.total);

    // The views: 12 tiles of 8 × 8 in 4 columns; 5 cases above their reconstructions.
    let bases = image(t.bases(100).unwrap());
    assert_eq!((bases.width, bases.height), (4 * (SIDE + 1) + 1, 3 * (SIDE + 1) + 1));
    let four = image(t.bases(4).unwrap());
    assert_eq!((four.width, four.height), (2 * (SIDE + 1) + 1, 2 * (SIDE + 1) + 1));
    let pairs = image(t.reconstructions(5).unwrap());
    assert_eq!((pairs.width, pairs.height), (5 * (SIDE + 1) + 1, 2 * (SIDE + 1) + 1));
    let histogram = json(t.code_histogram(10).unwrap());
    let counts: Vec<u64> = serde_json::from_value(histogram["values"]["counts"].clone()).unwrap();
    let edges: Vec<f64> = serde_json::from_value(histogram["values"]["edges"].clone()).unwrap();
    let per_case: Vec<u64> = serde_json::from_value(histogram["per_case"].clone()).unwrap();
    let per_basis: Vec<u64> = serde_json::from_value(histogram["per_basis"].clone()).unwrap();
    let nonzero = histogram["nonzero"].as_u64().unwrap();
    assert_eq!((counts.len(), edges.len(), per_basis.len()), (10, 11, BASES));
    assert!((edges[0] + edges[10]).abs() < 1e-12 && edges[10] > 0.0, "symmetric edges: {edges:?}");
    assert_eq!((counts.iter().sum::<u64>(), per_basis.iter().sum::<u64>(), per_case.iter().sum::<u64>()), (nonzero, nonzero, CASES as u64));
    assert_eq!(per_case.iter().enumerate().map(|(c, &n)| c as u64 * n).sum::<u64>(), nonzero);
    assert_eq!(nonzero + histogram["zeros"].as_u64().unwrap(), (CASES * BASES) as u64);
    assert!((number(&histogram, "nonzero_fraction") - t.nonzero_fraction()).abs() < 1e-15 && nonzero > 0, "{histogram}");
    assert!(message(t.code_histogram(0)).starts_with("bins:"));
}

#[wasm_bindgen_test]
async fn patches_are_sample_patches_inked_ones_and_beta_meets_the_target() {
    let pg = all_training();
    let config = json!({ "patch": 4, "cases": 200, "bases": 8, "sparsity": 0.25, "batch_size": 100, "passes": 4, "seed": 5, "backend": "cpu" });
    let t = trainer(&pg, config.clone());
    let started = resolve(t.start()).await.unwrap_or_else(|e| panic!("start: {e}"));
    assert_eq!((started["n_inputs"].as_u64(), started["cases"].as_u64(), started["tile"].clone(), started["patch"].as_u64(), started["sparsity"].as_f64()), (Some(16), Some(200), json!([4, 4]), Some(4), Some(0.25)), "{started}");
    let search = &started["beta_search"];
    assert!((number(search, "nonzero_fraction") - 0.25).abs() <= 0.05 * 0.25 + 1e-12, "the search's fraction {search}");
    assert_eq!(number(&started, "beta"), number(search, "beta"));
    let mut previous = number(&started, "objective");
    for k in 1..=8 {
        let report = resolve(t.step()).await.unwrap_or_else(|e| panic!("step {k}: {e}"));
        let objective = number(&report, "objective");
        assert!(objective <= previous * (1.0 + 1e-9), "step {k}: the objective rose from {previous} to {objective}");
        previous = objective;
    }
    assert!(t.done());
    let fraction = t.nonzero_fraction();
    assert!(fraction > 0.25 / 3.0 && fraction < 0.25 * 3.0, "after learning, {fraction} of the codes are non-zero (target 0.25)");

    // The patches: sample_patches' of the training images, those with less ink than 1 skipped.
    let saved = read_back(&t);
    let candidates = saved.inputs["candidates"].as_u64().unwrap() as usize;
    assert!(candidates >= 200, "{}", saved.inputs);
    let images: Vec<GreyImage> = strokes_data().chunks_exact(SIDE * SIDE).map(|p| GreyImage { rows: SIDE, cols: SIDE, pixels: p.to_vec() }).collect();
    let cut = sample_patches(&images, 4, candidates, 5).unwrap();
    let inked: Vec<f32> = cut.values.chunks_exact(16).filter(|p| p.iter().map(|x| x.abs()).sum::<f32>() >= 1.0).flatten().copied().collect();
    assert_eq!(inked.len(), 200 * 16, "{candidates} candidates give {} inked patches", inked.len() / 16);
    let expected = tile(&inked[..6 * 16], 6, (4, 4), 6, Scaling::Unit);
    let drawn = image(t.reconstructions(6).unwrap());
    assert_eq!((drawn.width, drawn.height), (expected.width, 2 * 5 + 1));
    assert_eq!(&drawn.data[..expected.data.len() - 4 * expected.width], &expected.data[..expected.data.len() - 4 * expected.width], "the first patches drawn are the reference's");
    assert_eq!((saved.tile, saved.inputs["patch"].as_u64(), saved.settings.beta_search.map(|s| s.target)), (Some([4, 4]), Some(4), Some(0.25)));

    // The same settings cut the same patches and learn the same basis.
    let twin = trainer(&pg, config);
    resolve(twin.start()).await.unwrap();
    for _ in 0..8 {
        resolve(twin.step()).await.unwrap();
    }
    assert_eq!(read_back(&twin).basis, saved.basis);
}

#[wasm_bindgen_test]
async fn start_and_step_refuse_out_of_order() {
    let pg = all_training();
    let t = trainer(&pg, whole_config("cpu"));
    assert!(resolve(t.step()).await.unwrap_err().contains("start()"), "step before start");
    assert!(t.model_json().is_err(), "model_json before start");
    resolve(t.start()).await.unwrap();
    assert!(resolve(t.start()).await.unwrap_err().contains("started already"));
}

/// `backend: "gpu"` takes SwiftShader too. Where the session steps on the device, every step
/// lowers the objective and the run ends within 1% of the CPU's; where it has no device path
/// yet, it says why and steps on the CPU as the CPU run does.
#[wasm_bindgen_test]
async fn webgpu_steps_lower_the_objective_as_the_cpu_does() {
    let pg = all_training();
    let device = trainer(&pg, whole_config("gpu"));
    let start = resolve(device.start()).await.unwrap_or_else(|e| panic!("start: {e}"));
    let cpu = trainer(&pg, whole_config("cpu"));
    let cpu_start = resolve(cpu.start()).await.unwrap();
    assert!((number(&start, "objective") - number(&cpu_start, "objective")).abs() <= 1e-6 * number(&cpu_start, "objective"));
    let on_device = start["backend"].as_str() == Some("gpu");
    if !on_device {
        assert!(!start["backend_reason"].as_str().unwrap_or("").is_empty(), "the CPU without a reason: {start}");
    }
    let mut previous = number(&start, "objective");
    let (mut gpu_last, mut cpu_last) = (0.0, 0.0);
    for k in 1..=9 {
        let report = resolve(device.step()).await.unwrap_or_else(|e| panic!("step {k}: {e}"));
        let objective = number(&report, "objective");
        assert!(objective <= previous * (1.0 + 1e-6), "step {k}: the objective rose from {previous} to {objective}");
        previous = objective;
        gpu_last = objective;
        cpu_last = number(&resolve(cpu.step()).await.unwrap(), "objective");
        if !on_device {
            assert_eq!(objective, cpu_last, "step {k}: on the CPU the session is the CPU run");
        }
    }
    assert!((gpu_last - cpu_last).abs() <= 0.01 * cpu_last, "after 3 passes: {} {gpu_last}, the CPU {cpu_last}", start["backend"]);
}
