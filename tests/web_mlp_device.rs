#![cfg(target_arch = "wasm32")]
//! The page's supervised stage on WebGPU (issue 21) in headless Chromium: a plain 784-25-15-10
//! MLP with Toman's adaptive rule, trained through `train_supervised_device` (the engine's
//! resident rule, `Engine::train_mlp_async`) as the worker drives it, follows the same run on
//! the CPU (`train_supervised`) epoch by epoch: every epoch's RMS/2 within 2e-5 relative and
//! the final weights within 1e-4 — tests/gpu_mlp.rs's tolerances (the device sums the error and
//! keeps its rates in f32). A device destroyed mid-stage hands the rest to the CPU with a
//! notice, the epochs numbered on; returning `false` from the progress callback stops the stage.

mod support;

use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;
use support::web_playground::{js, json};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const CASES: usize = 200;
const CLASSES: usize = 10;
const SIDE: usize = 28;
const EPOCHS: usize = 40;

/// `CASES` 28 × 28 digits-like images: class k lights column band k (a stroke 2 wide, rows
/// 4–23) over a faint deterministic speckle, so the net has something to learn.
fn idx_files() -> (Vec<u8>, Vec<u8>) {
    use deepbelief::data::idx::{encode_idx_images, encode_idx_labels, IdxImages};
    let mut state = 777u32;
    let mut pixels = Vec::with_capacity(CASES * SIDE * SIDE);
    let mut labels = Vec::with_capacity(CASES);
    for case in 0..CASES {
        let class = case % CLASSES;
        labels.push(class as u8);
        for row in 0..SIDE {
            for col in 0..SIDE {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let speckle = (state >> 24) as u8 / 8;
                let stroke = (4..24).contains(&row) && col / 2 == class + 4;
                pixels.push(if stroke { 255 - speckle } else { speckle });
            }
        }
    }
    (encode_idx_images(&IdxImages { count: CASES, rows: SIDE, cols: SIDE, pixels }), encode_idx_labels(&labels))
}

fn plain_mlp() -> Value {
    json!({
        "stack": { "layers": [] },
        "supervised": {
            "hidden": [25, 15], "optimizer": "adaptive_step", "output": "logistic", "weight_penalty": 0.0,
            "max_iterations": EPOCHS, "fine_tune": false, "seed": 3,
        },
    })
}

/// A playground with the digits loaded and the plain MLP's run started (its greedy stage, with
/// no layers, finished at once).
fn started() -> deepbelief::web::Playground {
    let (images, labels) = idx_files();
    let mut pg = deepbelief::web::Playground::new();
    pg.load_idx("digits", &images, Some("labels".into()), Some(labels)).expect("the digits load");
    pg.start_training(js(plain_mlp())).expect("a plain MLP starts");
    assert!(pg.supervised_pending(), "the supervised stage is all there is to train");
    pg
}

/// A progress callback recording each supervised epoch's criterion; it answers `false` (stop)
/// from epoch `stop_at` on (0: never).
fn recorder(stop_at: usize) -> (js_sys::Function, Rc<RefCell<Vec<(usize, f64)>>>) {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let sink = seen.clone();
    let closure = Closure::<dyn FnMut(JsValue) -> JsValue>::new(move |progress: JsValue| {
        let progress = json(progress);
        assert_eq!(progress["stage"], "supervised", "{progress}");
        let epoch = progress["iteration"].as_u64().unwrap() as usize;
        sink.borrow_mut().push((epoch, progress["criterion"].as_f64().unwrap()));
        JsValue::from_bool(stop_at == 0 || epoch < stop_at)
    });
    (closure.into_js_value().unchecked_into(), seen)
}

/// Toman's RMS/2 from the criterion Σ(o − t)²/(2N): sqrt(2E / outputs) / 2.
fn rms_half(criterion: f64) -> f64 {
    (2.0 * criterion / CLASSES as f64).sqrt() / 2.0
}

/// The run on WebGPU, as the worker drives it: `{ran_on, post}` and the summary.
async fn on_webgpu(pg: &mut deepbelief::web::Playground, on_progress: js_sys::Function) -> (Value, Value) {
    let chosen = json(JsFuture::from(pg.choose_backend("webgpu".into(), None, None)).await.expect("choose_backend"));
    assert_eq!(chosen["backend"], "webgpu", "WebGPU adapter (Chromium needs --enable-unsafe-webgpu): {chosen}");
    let place = json(pg.supervised_place().unwrap());
    assert_eq!(place, json!({ "device": true, "notice": null }), "the adaptive rule goes onto the device");
    let promise = pg.train_supervised_device(on_progress).unwrap_or_else(|e| panic!("{:?}", JsValue::from(e)));
    let done = json(JsFuture::from(promise).await.unwrap_or_else(|e| panic!("the device stage failed: {e:?}")));
    let summary = json(pg.finish_supervised_device().unwrap_or_else(|e| panic!("{:?}", JsValue::from(e))));
    (done, summary)
}

/// Every supervised layer's weights and biases of the saved model, in order.
fn saved_params(pg: &deepbelief::web::Playground) -> Vec<f64> {
    let saved: Value = serde_json::from_str(&pg.save_model().unwrap_or_else(|e| panic!("{:?}", JsValue::from(e)))).unwrap();
    let layers = saved["supervised"]["layers"].as_array().unwrap_or_else(|| panic!("no supervised layers in {}", &saved["supervised"]));
    assert!(saved["layers"].as_array().is_some_and(|l| l.is_empty()), "a plain MLP has no RBM layers");
    let mut params = Vec::new();
    for layer in layers {
        for key in ["weights", "bias"] {
            let values = layer[key].as_array().unwrap_or_else(|| panic!("layer field {key} missing: {}", layer.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>().join(", ")).unwrap_or_default()));
            params.extend(values.iter().map(|v| v.as_f64().unwrap()));
        }
    }
    params
}

#[wasm_bindgen_test]
async fn a_plain_mlp_on_webgpu_follows_the_cpu_epoch_by_epoch() {
    let mut cpu = started();
    let (cpu_progress, cpu_epochs) = recorder(0);
    let cpu_summary = json(cpu.train_supervised(&cpu_progress, None).unwrap_or_else(|e| panic!("{:?}", JsValue::from(e))));

    let mut gpu = started();
    let (gpu_progress, gpu_epochs) = recorder(0);
    let (done, gpu_summary) = on_webgpu(&mut gpu, gpu_progress).await;
    assert_eq!(done, json!({ "ran_on": "gpu", "post": [] }), "trained on the device throughout");

    let (cpu_epochs, gpu_epochs) = (cpu_epochs.borrow().clone(), gpu_epochs.borrow().clone());
    assert_eq!(cpu_epochs.len(), EPOCHS);
    assert_eq!(gpu_epochs.iter().map(|e| e.0).collect::<Vec<_>>(), (1..=EPOCHS).collect::<Vec<_>>(), "every epoch reported, in order");
    let mut worst = 0.0f64;
    for (&(epoch, c), &(_, g)) in cpu_epochs.iter().zip(&gpu_epochs) {
        let relative = (rms_half(g) - rms_half(c)).abs() / rms_half(c);
        worst = worst.max(relative);
        assert!(relative <= 2e-5, "epoch {epoch}: RMS/2 {} on WebGPU, {} on the CPU (relative {relative:.2e} > 2e-5)", rms_half(g), rms_half(c));
    }
    assert!(cpu_epochs[EPOCHS - 1].1 < 0.8 * cpu_epochs[0].1, "the rule learns: criterion {} → {}", cpu_epochs[0].1, cpu_epochs[EPOCHS - 1].1);
    for key in ["iterations", "rollbacks", "stop"] {
        assert_eq!(gpu_summary["outcome"]["supervised"][key], cpu_summary["outcome"]["supervised"][key], "outcome.supervised.{key}");
    }
    assert_eq!(gpu_summary["outcome"]["supervised"]["initial_criterion"], cpu_summary["outcome"]["supervised"]["initial_criterion"], "the same start");
    let (cpu_weights, gpu_weights) = (saved_params(&cpu), saved_params(&gpu));
    assert_eq!(cpu_weights.len(), gpu_weights.len());
    let gap = cpu_weights.iter().zip(&gpu_weights).map(|(c, g)| (c - g).abs()).fold(0.0, f64::max);
    assert!(gap <= 1e-4, "final weights differ by {gap:.2e} > 1e-4");
    assert!(gpu_summary["classification"]["n_cases"].as_u64() == Some(CASES as u64), "{gpu_summary}");
    web_sys::console::log_1(&format!("worst epoch gap {worst:.2e}, weights {gap:.2e}").into());
}

#[wasm_bindgen_test]
async fn a_lost_device_hands_the_stage_to_the_cpu() {
    let mut pg = started();
    pg.simulate_gpu_loss_after(10);
    let (progress, epochs) = recorder(0);
    let (done, summary) = on_webgpu(&mut pg, progress).await;
    let post = done["post"].as_array().unwrap();
    assert_eq!(post.len(), 2, "a notice and the CPU backend: {done}");
    assert_eq!(post[0]["event"], "notice");
    assert!(post[0]["message"].as_str().unwrap().contains("continuing on the CPU"), "{done}");
    assert_eq!((&post[1]["event"], &post[1]["backend"]), (&json!("backend"), &json!("cpu")));
    let epochs = epochs.borrow();
    assert_eq!(epochs.iter().map(|e| e.0).collect::<Vec<_>>(), (1..=EPOCHS).collect::<Vec<_>>(), "the epochs numbered on through the fall-back");
    assert_eq!(summary["outcome"]["supervised"]["iterations"], EPOCHS);
    assert!(epochs[EPOCHS - 1].1 < epochs[0].1, "the error falls: {} → {}", epochs[0].1, epochs[EPOCHS - 1].1);
    assert_eq!(json(pg.supervised_place().unwrap())["device"], false, "the failed device is not used again");
}

#[wasm_bindgen_test]
async fn answering_false_stops_the_stage() {
    let mut pg = started();
    let (progress, epochs) = recorder(5);
    let (_, summary) = on_webgpu(&mut pg, progress).await;
    assert_eq!(epochs.borrow().len(), 5, "no epoch after the one answered false");
    assert_eq!(summary["stopped"], true);
    assert_eq!(summary["outcome"]["supervised"]["iterations"], 5);
    assert_eq!(summary["outcome"]["supervised"]["stop"], "cancelled");
    assert!(!pg.supervised_pending(), "the stopped stage's weights are kept");
}
