#![cfg(target_arch = "wasm32")]
//! The playground's training API in the browser, end to end on a synthetic separable IDX set:
//! the plan, a two-layer run stepped to the end, batch stepping, the supervised stage (its
//! held-out error bounded, its confusion matrix summing to the held-out cases), and bad
//! settings that are refused by name while the run in place survives.

mod support;

use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use support::web_playground::bands::loaded;
use support::web_playground::{js, json, message};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn rbm_settings(epochs: usize) -> Value {
    json!({ "epochs": epochs, "batch_size": 40, "init_trials": 2, "init_cases": 100, "seed": 5 })
}

/// Steps to the end; returns the events' names.
fn run_to_end(playground: &mut deepbelief::web::Playground) -> Vec<String> {
    let mut events = Vec::new();
    for _ in 0..1000 {
        let event = json(playground.step().unwrap());
        let name = event["event"].as_str().unwrap().to_string();
        events.push(name.clone());
        if name == "finished" {
            return events;
        }
    }
    panic!("the run did not finish in 1000 steps");
}

#[wasm_bindgen_test]
fn start_training_returns_the_plan() {
    let mut playground = loaded(300);
    let config = json!({ "stack": { "layers": [20, 10], "rbm": rbm_settings(2) }, "supervised": { "hidden": [8], "fine_tune": true } });
    let plan = json(playground.start_training(js(config)).unwrap());
    let kinds: Vec<&str> = plan["steps"].as_array().unwrap().iter().map(|s| s["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["rbm", "rbm", "supervised", "fine_tune"]);
    assert_eq!(plan["steps"][0]["label"], "RBM 1 (36 → 20)");
    let plan = json(playground.start_training(js(json!({ "stack": { "layers": [20] } }))).unwrap());
    assert_eq!(plan["steps"].as_array().unwrap().len(), 1, "no supervised stage: {plan}");
}

#[wasm_bindgen_test]
fn a_two_layer_run_steps_to_the_end() {
    let mut playground = loaded(300);
    playground.set_held_out(0.2, None).unwrap();
    playground.start_training(js(json!({ "stack": { "layers": [12, 6], "rbm": rbm_settings(2), "monitor_cases": 100 } }))).unwrap();
    assert!(!playground.training_finished());
    let events = run_to_end(&mut playground);
    let count = |name: &str| events.iter().filter(|e| e.as_str() == name).count();
    assert_eq!((count("layer_started"), count("layer_finished"), count("epoch")), (2, 2, 4), "{events:?}");
    assert!(playground.training_finished());
    assert!(!playground.supervised_pending(), "no supervised stage configured");
}

#[wasm_bindgen_test]
fn step_batch_makes_six_batches_per_epoch() {
    let mut playground = loaded(300);
    playground.set_held_out(0.2, None).unwrap();
    // 240 training cases in batches of 40.
    playground.start_training(js(json!({ "stack": { "layers": [12], "rbm": rbm_settings(2), "monitor_cases": 100 } }))).unwrap();
    assert_eq!(json(playground.step_batch().unwrap())["event"], "layer_started");
    for batch in 1..=5 {
        let event = json(playground.step_batch().unwrap());
        assert_eq!(event["event"], "batch", "{event}");
        assert_eq!((event["batch"].as_u64(), event["batches"].as_u64()), (Some(batch), Some(6)));
        assert!(event["reconstruction_error"].as_f64().unwrap() > 0.0);
    }
    let epoch = json(playground.step_batch().unwrap());
    assert_eq!(epoch["event"], "epoch", "{epoch}");
    assert_eq!(epoch["report"]["epoch"], 1);
    // The held-out cases give the held-out free energy.
    assert!(epoch["metrics"]["free_energy_held_out"].is_number(), "{epoch}");
    // A whole epoch with step() after batch stepping.
    let epoch = json(playground.step().unwrap());
    assert_eq!(epoch["report"]["epoch"], 2);
}

#[wasm_bindgen_test]
fn bad_settings_are_refused_by_name_and_the_run_survives() {
    let mut playground = loaded(300);
    playground.start_training(js(json!({ "stack": { "layers": [12], "rbm": rbm_settings(1) } }))).unwrap();
    assert_eq!(json(playground.step().unwrap())["event"], "layer_started");
    let nan = js_sys::Object::new();
    let rbm = js_sys::Object::new();
    js_sys::Reflect::set(&rbm, &"learning_rate".into(), &JsValue::from_f64(f64::NAN)).unwrap();
    let stack = js_sys::Object::new();
    js_sys::Reflect::set(&stack, &"rbm".into(), &rbm).unwrap();
    js_sys::Reflect::set(&nan, &"stack".into(), &stack).unwrap();
    let text = message(playground.start_training(nan.into()));
    assert!(text.contains("learning_rate: expected a finite number"), "{text}");
    let text = message(playground.start_training(js(json!({ "stack": { "layers": [60000, 60000] } }))));
    assert!(text.starts_with("layers:") && text.contains("at most"), "{text}");
    let text = message(playground.start_training(js(json!({ "stack": { "layers": [12] }, "supervised": { "momentum": 2.0 } }))));
    assert!(text.contains("supervised.momentum"), "{text}");
    let text = message(playground.start_training(js(json!({ "stack": { "layers": [12], "colour": 1 } }))));
    assert!(text.contains("colour"), "{text}");
    assert_eq!(message(playground.set_cpu_threads(3)), "threads: expected 0 (every thread of the pool) or 1, got 3");
    // The run in place goes on where it was: its first epoch comes next.
    let epoch = json(playground.step().unwrap());
    assert_eq!((epoch["event"].as_str(), epoch["report"]["epoch"].as_u64()), (Some("epoch"), Some(1)));
}

/// Counts `on_progress` calls and checks their shape.
fn progress_counter() -> (js_sys::Function, js_sys::Array) {
    let calls = js_sys::Array::new();
    let function = js_sys::Function::new_with_args("calls", "return (p) => { calls.push(p.stage + ':' + p.iteration + ':' + Number.isFinite(p.criterion)); }");
    let on_progress: js_sys::Function = function.call1(&JsValue::NULL, &calls).unwrap().into();
    (on_progress, calls)
}

#[wasm_bindgen_test]
fn supervised_stage_classifies_the_held_out_cases() {
    let mut playground = loaded(300);
    playground.set_held_out(0.2, None).unwrap();
    let supervised = json!({ "max_iterations": 100, "seed": 2 });
    playground.start_training(js(json!({ "stack": { "layers": [12], "rbm": rbm_settings(3) }, "supervised": supervised }))).unwrap();
    run_to_end(&mut playground);
    assert!(playground.supervised_pending());
    let (on_progress, calls) = progress_counter();
    let summary = json(playground.train_supervised(&on_progress, None).unwrap());
    assert!(!playground.supervised_pending());
    assert_eq!(summary["stopped"], false);
    assert!(calls.length() > 0);
    assert!(calls.get(0).as_string().unwrap().starts_with("supervised:"), "{:?}", calls.get(0));
    assert!(calls.get(0).as_string().unwrap().ends_with(":true"));
    let classification = json(playground.classification().unwrap());
    assert_eq!(classification["set"], "held_out");
    assert_eq!(classification["n_cases"], 60);
    assert_eq!(classification["class_names"], json!(["0", "1", "2"]));
    let counts: Vec<Vec<u64>> = serde_json::from_value(classification["counts"].clone()).unwrap();
    assert_eq!(counts.iter().flatten().sum::<u64>(), 60);
    assert_eq!(counts.iter().map(|row| row.iter().sum::<u64>()).collect::<Vec<_>>(), [20, 20, 20], "the true classes of the held-out cases");
    // The classes differ in which rows are lit: an easy problem.
    let error = classification["error"].as_f64().unwrap();
    assert!(error <= 0.05, "held-out error {error}");
    let correct: u64 = (0..3).map(|c| counts[c][c]).sum();
    assert_eq!(((1.0 - error) * 60.0).round() as u64, correct);
    let diagonal = playground.confusion_cases(1, 1, 1000).unwrap().to_vec();
    assert_eq!(diagonal.len() as u64, counts[1][1]);
    let held_out = playground.held_out_cases();
    assert!(diagonal.iter().all(|&case| held_out.contains(&case) && case % 3 == 1), "held-out cases of class 1: {diagonal:?}");
    assert_eq!(playground.misclassified(1000).unwrap().length() as u64, 60 - correct);
    assert!(message(playground.confusion_cases(3, 0, 10)).starts_with("class: expected a class from 0 to 2"));
}

#[wasm_bindgen_test]
fn cancel_flag_stops_the_supervised_stage_and_training_cases_are_used_without_held_out() {
    let mut playground = loaded(150);
    playground.start_training(js(json!({ "stack": { "layers": [8], "rbm": rbm_settings(1) }, "supervised": { "max_iterations": 500 } }))).unwrap();
    assert!(message(playground.train_supervised(&progress_counter().0, None)).contains("still training"));
    run_to_end(&mut playground);
    let cancel = js_sys::Int32Array::new_with_length(1);
    cancel.set_index(0, 1);
    let (on_progress, calls) = progress_counter();
    let summary = json(playground.train_supervised(&on_progress, Some(cancel)).unwrap());
    assert_eq!(summary["stopped"], true);
    assert!(summary["outcome"]["supervised"]["iterations"].as_u64().unwrap() <= 1, "{summary}");
    assert!(calls.length() <= 2);
    let classification = json(playground.classification().unwrap());
    assert_eq!((classification["set"].as_str(), classification["n_cases"].as_u64()), (Some("train"), Some(150)));
}

/// An event without its timings, which differ from run to run.
fn without_timing(mut event: Value) -> Value {
    if let Some(report) = event.get_mut("report") {
        report["seconds"] = Value::Null;
        report["cases_per_second"] = Value::Null;
    }
    event
}

#[wasm_bindgen_test]
fn one_cpu_thread_trains_the_same_model() {
    let config = json!({ "stack": { "layers": [10], "rbm": rbm_settings(2), "monitor_cases": 0 } });
    let mut every = loaded(120);
    every.start_training(js(config.clone())).unwrap();
    let mut one = loaded(120);
    assert_eq!(one.set_cpu_threads(1).unwrap(), 1);
    one.start_training(js(config)).unwrap();
    for _ in 0..3 {
        assert_eq!(without_timing(json(every.step().unwrap())), without_timing(json(one.step().unwrap())));
    }
}

/// The worker's calls on a CPU run: `unit()` and `batch_unit()` train as `step()` and
/// `step_batch()` do, and post each event as it is, except `finished` (the worker posts its own).
#[wasm_bindgen_test]
async fn units_on_the_cpu_post_what_step_returns() {
    let config = json!({ "stack": { "layers": [10, 6], "rbm": rbm_settings(2), "monitor_cases": 50 } });
    let mut stepped = loaded(120);
    stepped.start_training(js(config.clone())).unwrap();
    let mut by_units = loaded(120);
    by_units.start_training(js(config)).unwrap();
    for call in 0..40 {
        let (expected, outcome) = if call % 3 == 1 {
            (json(stepped.step_batch().unwrap()), json(by_units.batch_unit().unwrap()))
        } else {
            (json(stepped.step().unwrap()), json(wasm_bindgen_futures::JsFuture::from(by_units.unit()).await.unwrap()))
        };
        assert!(by_units.before_unit().unwrap().is_null(), "nothing to announce on the CPU");
        assert_eq!(without_timing(outcome["unit"].clone()), without_timing(expected.clone()), "call {call}");
        let posted = if expected["event"] == "finished" { json!([]) } else { json!([outcome["unit"]]) };
        assert_eq!(outcome["post"], posted, "call {call}: {outcome}");
        if expected["event"] == "finished" {
            return;
        }
    }
    panic!("the run did not finish in 40 units");
}
