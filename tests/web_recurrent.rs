#![cfg(target_arch = "wasm32")]
//! The Sequences mode's wasm API (`SequenceTrainer`, `rtrl_time`; src/web/recurrent.rs) in
//! headless Chromium: settings errors name their field; on the CPU a trainer's chunks are the
//! CPU reference's online RTRL steps bit for bit (`recurrent::Trainer` on the same stream); the
//! held-out sequence and a sensitivity tensor have their shapes (none under the shortcut); the
//! timing row is the benchmark's; on WebGPU every step's E follows the CPU's.
//!
//! `CHROMEDRIVER=/usr/bin/chromedriver wasm-pack test --headless --chrome --release --mode
//! no-install --test web_recurrent`

mod support;

use deepbelief::recurrent::train::TrainerSpec;
use deepbelief::recurrent::{Network, Preset, RtrlMode, TaskSpec, TaskStream, Trainer};
use deepbelief::web::{rtrl_time, Playground, SequenceTrainer};
use serde_json::{json, Value};
use support::web_playground::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

async fn resolve(promise: js_sys::Promise) -> Result<Value, String> {
    match JsFuture::from(promise).await {
        Ok(value) => Ok(json(value)),
        Err(error) => Err(js_sys::Reflect::get(&error, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_else(|| format!("{error:?}"))),
    }
}

fn refused(config: Value) -> String {
    match SequenceTrainer::new(&Playground::new(), js(config.clone())) {
        Ok(_) => panic!("{config} was accepted"),
        Err(e) => error_message(e),
    }
}

/// The CPU reference: the 2-bit adder on Elman's 4-4-2 net, seed 1, scale 2, rate 0.05, RTRL
/// with the shortcut, `steps` online steps: every step's E.
fn reference(steps: usize) -> Vec<f64> {
    let task = TaskSpec::Add { bits: 2 };
    let mut net = Network::initialise(Preset::Elman.graph(4, 4, 2), 1, 2.0).unwrap();
    let mut trainer = Trainer::new(&net, TrainerSpec::Rtrl { mode: RtrlMode::Shortcut }).unwrap();
    let mut stream = TaskStream::new(task, 1);
    (0..steps)
        .map(|_| {
            let e = stream.next_example();
            trainer.train_step(&mut net, &e.input, &e.target, 0.05)
        })
        .collect()
}

fn errors(report: &Value) -> Vec<f64> {
    report["errors"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
}

#[wasm_bindgen_test]
fn bad_settings_name_their_field() {
    assert!(refused(json!({"task": "sum"})).starts_with("task:"));
    assert!(refused(json!({"rate": -1.0})).starts_with("rate:"));
    assert!(refused(json!({"bits": 0})).starts_with("bits:"));
    assert!(refused(json!({"preset": "hopfield"})).starts_with("preset:"));
    assert!(refused(json!({"hidden": 1000})).starts_with("hidden:"));
    let unknown = refused(json!({"bogus": 1}));
    assert!(unknown.contains("bogus"), "{unknown}");
}

#[wasm_bindgen_test]
async fn cpu_chunks_are_the_reference_steps() {
    let pg = Playground::new();
    let trainer = SequenceTrainer::new(&pg, js(json!({"backend": "cpu"}))).unwrap();
    let started = resolve(trainer.start()).await.unwrap();
    assert_eq!(started["backend"], "cpu");
    assert_eq!(started["layers"], json!([4, 4, 2]));
    let names: Vec<&str> = started["blocks"].as_array().unwrap().iter().map(|b| b["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["w[1←0]", "w[2←1]", "μ[1←1]", "b[1]", "b[2]"]);
    let mut all = Vec::new();
    let mut last = Value::Null;
    for _ in 0..3 {
        last = resolve(trainer.train(200)).await.unwrap();
        all.extend(errors(&last));
    }
    assert_eq!(last["step"], 600);
    assert_eq!(all, reference(600), "the chunks' E are the CPU reference's bit for bit");
    let first: f64 = all[..100].iter().sum();
    let later: f64 = all[500..].iter().sum();
    assert!(later < first, "the error did not fall: {first} then {later}");

    let sequence = json(trainer.sequence(12).unwrap());
    assert_eq!((sequence["steps"].as_u64(), sequence["hidden"].as_u64(), sequence["outputs"].as_u64()), (Some(12), Some(4), Some(2)));
    assert_eq!(sequence["hidden_values"].as_array().unwrap().len(), 48);
    assert!(sequence["hidden_values"].as_array().unwrap().iter().all(|v| v.as_f64().unwrap().abs() <= 1.0));
    // μ[1←1] (block 2) keeps layer 1's tensor: 4 units × 16; w[2←1] (block 1) takes the shortcut.
    let tensor = resolve(trainer.sensitivity(2, 1)).await.unwrap();
    assert_eq!((tensor["units"].as_u64(), tensor["rows"].as_u64(), tensor["cols"].as_u64()), (Some(4), Some(4), Some(4)));
    assert_eq!(tensor["values"].as_array().unwrap().len(), 64);
    assert!(tensor["max_abs"].as_f64().unwrap() > 0.0);
    assert_eq!(resolve(trainer.sensitivity(1, 2)).await.unwrap(), Value::Null);
    let saved = trainer.model_json().unwrap();
    assert!(saved.contains("deepbelief-recurrent/1"));
}

#[wasm_bindgen_test]
async fn the_timing_row_is_the_benchmarks() {
    use deepbelief::bench::rtrl::{bench_rtrl, RtrlBenchSettings};
    let pg = Playground::new();
    let row = resolve(rtrl_time(&pg, 3, false, 4)).await.unwrap();
    assert_eq!((row["bits"].as_u64(), row["backend"].as_str()), (Some(3), Some("cpu")));
    // At least the 4 steps asked for, fourfold more until they took 30 ms.
    let steps = row["steps"].as_u64().unwrap() as usize;
    assert!(steps >= 4 && (steps / 4).is_power_of_two() && steps <= 4096, "{steps} steps");
    let us = row["microseconds_per_step"].as_f64().unwrap();
    assert!(us > 0.0 && (us * steps as f64 >= 30_000.0 || steps == 4096), "{us} µs × {steps} steps");
    let settings = RtrlBenchSettings { steps, warmups: 2, repeats: 1, ..Default::default() };
    let bench = bench_rtrl(&[3], &settings, |_| {}).unwrap();
    assert_eq!(row["mean_error"].as_f64().unwrap(), bench[0].mean_error);
    assert!(resolve(rtrl_time(&pg, 0, false, 4)).await.unwrap_err().starts_with("bits:"));
}

#[wasm_bindgen_test]
async fn webgpu_steps_follow_the_cpu() {
    let pg = Playground::new();
    let trainer = SequenceTrainer::new(&pg, js(json!({"backend": "gpu"}))).unwrap();
    let started = resolve(trainer.start()).await.unwrap();
    assert_eq!(started["backend"], "gpu", "{started}");
    let mut all = Vec::new();
    for _ in 0..2 {
        all.extend(errors(&resolve(trainer.train(150)).await.unwrap()));
    }
    let cpu = reference(300);
    for (t, (g, c)) in all.iter().zip(&cpu).enumerate() {
        assert!((g - c).abs() <= 1e-4 * c.max(1e-2), "step {t}: E {g} on WebGPU, {c} on the CPU");
    }
    let row = resolve(rtrl_time(&pg, 3, true, 4)).await.unwrap();
    assert_eq!(row["backend"], "gpu");
    // The device's timed steps are the benchmark's steps on the CPU (as many as it timed).
    use deepbelief::bench::rtrl::{bench_rtrl, RtrlBenchSettings};
    let settings = RtrlBenchSettings { steps: row["steps"].as_u64().unwrap() as usize, warmups: 2, repeats: 1, ..Default::default() };
    let cpu_error = bench_rtrl(&[3], &settings, |_| {}).unwrap()[0].mean_error;
    assert!((row["mean_error"].as_f64().unwrap() - cpu_error).abs() <= 1e-4 * cpu_error, "{row} against the CPU's mean E {cpu_error}");
}
