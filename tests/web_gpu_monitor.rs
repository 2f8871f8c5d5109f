#![cfg(target_arch = "wasm32")]
//! The page's WebGPU training in headless Chromium (`wasm-pack test --headless --chrome`):
//! every epoch event carries the per-epoch monitor (the free-energy chart plots
//! `metrics.free_energy_train` against `metrics.free_energy_held_out`), measured on the device,
//! and after a lost device the CPU's epochs carry it too. The run goes through `unit()`, as the
//! worker drives it: the layer moves onto the device as it starts, the first device epoch is
//! announced (`before_unit`), and a lost device gives the worker's notice and `backend` event.
//! The figures of a layer's last epoch
//! are the CPU reference's (`measure_epoch`) on the saved layer, whose sorted hidden units
//! neither the free energy nor the reconstruction sees; tolerance 1e-5 relative (f32 sums on
//! the device).

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::{idx, Dataset};
use deepbelief::train::monitor::{measure_epoch, monitor_seed};
use serde_json::{json, Value};
use support::web_playground::bands::{loaded, synthetic_idx};
use support::web_playground::{js, json};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const CASES: usize = 90;
const MONITOR_CASES: usize = 1000;
const SEED: u64 = 5;

fn settings() -> Value {
    json!({
        "stack": { "layers": [8], "monitor_cases": MONITOR_CASES, "rbm": { "epochs": 3, "batch_size": 10, "init_trials": 2, "seed": SEED } },
        "supervised": null,
    })
}

/// A playground with 20% held out and the run on WebGPU (its device destroyed after
/// `lose_after` device epochs) started up to its first layer's start, which is on the device.
async fn started(lose_after: u32) -> deepbelief::web::Playground {
    let mut pg = loaded(CASES);
    pg.set_held_out(0.2, Some(3)).unwrap();
    pg.start_training(js(settings())).unwrap();
    pg.simulate_gpu_loss_after(lose_after);
    let chosen = json(JsFuture::from(pg.choose_backend("webgpu".into(), None, None)).await.expect("choose_backend"));
    assert_eq!(chosen["backend"], "webgpu", "WebGPU adapter (Chromium needs --enable-unsafe-webgpu): {chosen}");
    assert!(pg.before_unit().unwrap().is_null(), "nothing to announce before a layer's start");
    let started = unit(&mut pg).await;
    assert_eq!(started["unit"]["event"], "layer_started", "{started}");
    assert_eq!(started["post"], json!([started["unit"]]), "the layer goes onto the device without a notice");
    assert!(pg.training_on_gpu(), "the layer trains on the GPU");
    pg
}

async fn unit(pg: &mut deepbelief::web::Playground) -> Value {
    json(JsFuture::from(pg.unit()).await.expect("a unit"))
}

/// A device epoch through `unit()`: the epoch event, posted as it is.
async fn device_epoch(pg: &mut deepbelief::web::Playground) -> Value {
    let outcome = unit(pg).await;
    assert_eq!(outcome["unit"]["event"], "epoch", "{outcome}");
    assert_eq!(outcome["post"], json!([outcome["unit"]]), "{outcome}");
    outcome["unit"].clone()
}

/// The page's training and held-out cases, as the run sees them.
fn split(pg: &deepbelief::web::Playground) -> (Dataset, Dataset) {
    let (images, labels) = synthetic_idx(CASES);
    let parsed = idx::parse_idx_images("synthetic-images", &images).unwrap();
    let labels = idx::parse_idx_labels("synthetic-labels", &labels).unwrap();
    let all = idx::dataset_from_idx(parsed, Some(("synthetic-labels".into(), labels)), "synthetic-images").unwrap();
    let held: Vec<usize> = pg.held_out_cases().into_iter().map(|c| c as usize).collect();
    assert!(!held.is_empty());
    let training: Vec<usize> = (0..CASES).filter(|c| !held.contains(c)).collect();
    (all.subset(&training), all.subset(&held))
}

fn assert_monitored(event: &Value) {
    let metrics = &event["metrics"];
    for key in ["free_energy_train", "free_energy_held_out", "recon_mse", "pseudo_log_likelihood"] {
        assert!(metrics[key].as_f64().is_some_and(f64::is_finite), "epoch {}: metrics.{key} missing: {event}", event["report"]["epoch"]);
    }
}

/// Closes the layer (the next `step`) and checks `last` (its last epoch event) against the CPU
/// reference on the saved layer.
fn check_against_cpu(pg: &mut deepbelief::web::Playground, last: &Value) {
    assert_eq!(json(pg.step().unwrap())["event"], "layer_finished");
    let saved = deepbelief::format::from_json("model.json", &pg.save_model().unwrap()).unwrap();
    let (training, held_out) = split(pg);
    let epoch = last["report"]["epoch"].as_u64().unwrap() as usize;
    let reference = measure_epoch(&CpuBackend, &saved.dbn.layers[0], &training, Some(&held_out), MONITOR_CASES, monitor_seed(SEED, epoch));
    let metrics = &last["metrics"];
    let pairs = [
        ("free_energy_train", reference.free_energy_train),
        ("free_energy_held_out", reference.free_energy_held_out.unwrap()),
        ("recon_mse", reference.recon_mse),
        ("pseudo_log_likelihood", reference.pseudo_log_likelihood.unwrap()),
    ];
    for (key, cpu) in pairs {
        let page = metrics[key].as_f64().unwrap();
        assert!((page - cpu).abs() <= 1e-5 * cpu.abs().max(1e-3), "epoch {epoch}: metrics.{key}: page {page}, CPU reference {cpu}");
    }
}

#[wasm_bindgen_test]
async fn webgpu_epochs_carry_the_monitor_of_the_cpu_reference() {
    let mut pg = started(0).await;
    let busy = json(pg.before_unit().unwrap());
    assert_eq!(busy["event"], "busy", "the first device epoch is announced: {busy}");
    assert!(busy["message"].as_str().unwrap().starts_with("Compiling the WebGPU kernels"), "{busy}");
    let mut last = None;
    while pg.training_on_gpu() {
        let event = device_epoch(&mut pg).await;
        assert_monitored(&event);
        assert!(pg.before_unit().unwrap().is_null(), "only the run's first device epoch is announced");
        last = Some(event);
    }
    check_against_cpu(&mut pg, &last.expect("at least one GPU epoch"));
}

#[wasm_bindgen_test]
async fn epochs_after_a_lost_device_carry_the_monitor() {
    let mut pg = started(1).await;
    assert_monitored(&device_epoch(&mut pg).await);
    let outcome = unit(&mut pg).await;
    let fell_back = &outcome["unit"];
    assert_eq!(fell_back["event"], "fell_back", "{outcome}");
    assert_eq!(fell_back["resumed_at"], 1, "{outcome}");
    let post = outcome["post"].as_array().unwrap();
    assert_eq!(post.len(), 2, "a notice and the backend: {outcome}");
    assert_eq!(post[0]["event"], "notice");
    assert_eq!(post[0]["message"], format!("WebGPU failed ({}); continuing on the CPU", fell_back["message"].as_str().unwrap()));
    assert_eq!((&post[1]["event"], &post[1]["backend"], &post[1]["reason"]), (&json!("backend"), &json!("cpu"), &json!("WebGPU failed")));
    assert!(post[1]["threads"].as_u64().is_some_and(|t| t >= 1), "{outcome}");
    assert!(!pg.training_on_gpu(), "the layer goes on on the CPU");
    let last = loop {
        let event = unit(&mut pg).await["unit"].clone();
        assert_eq!(event["event"], "epoch", "expected the CPU's epochs, got {event}");
        assert_monitored(&event);
        if event["report"]["stop"] != Value::Null {
            break event;
        }
    };
    check_against_cpu(&mut pg, &last);
}
