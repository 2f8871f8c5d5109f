#![cfg(not(target_arch = "wasm32"))]
//! `deepbelief rtrl` (issue 20): the written recurrent.json reads back through
//! `format::recurrent`, its weights give the held-out evaluation it records, and a resumed
//! feed-forward run (no state to lose) equals one uninterrupted run bit for bit; the summary's
//! accuracy on 2-bit addition reaches 100%; bad flags and a damaged file name their field.

mod support;

use deepbelief::format::recurrent::{from_json, read, to_json};
use deepbelief::recurrent::{evaluate, TaskSpec};
use serde_json::Value;
use support::cli::*;

fn summary(stdout: &str) -> Value {
    serde_json::from_str(stdout.lines().last().expect("a summary line")).expect("the summary is JSON")
}

const ADD2: [&str; 12] = ["rtrl", "--task", "add", "--bits", "2", "--preset", "feedforward", "--hidden", "4", "--rate", "0.03", "--json"];

#[test]
fn trains_writes_and_reads_back() {
    let out = temp_dir("rtrl-add");
    let out_arg = out.display().to_string();
    let figures = summary(&run_ok(&[&ADD2[..], &["--steps", "40000", "--out", &out_arg]].concat()));
    assert_eq!(figures["accuracy"], 1.0, "{figures}");
    let saved = read(&out.join("recurrent.json")).unwrap();
    assert_eq!(saved.steps, 40_000);
    assert_eq!(saved.task, TaskSpec::Add { bits: 2 });
    assert_eq!(saved.graph.layers, vec![4, 4, 2]);
    assert_eq!(saved.history.len(), 10);
    // The saved weights give the recorded held-out evaluation.
    let net = saved.network().unwrap();
    let again = evaluate(&net, saved.task, saved.seed, 2000);
    let recorded = saved.evaluation.unwrap();
    assert_eq!((again.accuracy(), again.mean_error()), (recorded.accuracy, recorded.mean_error));
    assert_eq!(figures["mean_error"].as_f64().unwrap(), recorded.mean_error);
    // Written and read, the record is the same.
    assert_eq!(from_json("copy", &to_json(&saved).unwrap()).unwrap(), saved);
}

#[test]
fn a_resumed_feed_forward_run_is_the_uninterrupted_run() {
    let (whole, split) = (temp_dir("rtrl-whole"), temp_dir("rtrl-split"));
    let (whole_arg, split_arg) = (whole.display().to_string(), split.display().to_string());
    run_ok(&[&ADD2[..], &["--steps", "30000", "--out", &whole_arg]].concat());
    run_ok(&[&ADD2[..], &["--steps", "20000", "--out", &split_arg]].concat());
    let resume = split.join("recurrent.json").display().to_string();
    run_ok(&["rtrl", "--resume", &resume, "--steps", "10000", "--out", &split_arg, "--json"]);
    let (a, b) = (read(&whole.join("recurrent.json")).unwrap(), read(&split.join("recurrent.json")).unwrap());
    assert_eq!(b.steps, 30_000);
    assert_eq!(a.params, b.params, "the task stream and the weights continue exactly");
    assert_eq!(b.history.len(), 20);
}

#[test]
fn bad_flags_and_files_name_their_field() {
    let out = temp_dir("rtrl-bad");
    let out_arg = out.display().to_string();
    let err = run_fails(&["rtrl", "--task", "add", "--bits", "0", "--out", &out_arg]);
    assert!(err.contains("bits") && err.contains("is 0"), "{err}");
    let err = run_fails(&["rtrl", "--task", "not", "--rate", "NaN", "--steps", "10", "--out", &out_arg]);
    assert!(err.contains("rate") && err.contains("NaN"), "{err}");
    let err = run_fails(&["rtrl", "--task", "recall", "--delay", "0", "--out", &out_arg]);
    assert!(err.contains("delay"), "{err}");
    let err = run_fails(&["rtrl", "--trainer", "bptt", "--truncation", "0", "--task", "not", "--out", &out_arg]);
    assert!(err.contains("truncation"), "{err}");
    // A damaged file: a NaN weight (JSON null), a graph edge to a missing layer.
    run_ok(&["rtrl", "--task", "not", "--steps", "100", "--out", &out_arg]);
    let path = out.join("recurrent.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let broken = text.replace("\"to\":2", "\"to\":9");
    let err = from_json("broken", &broken).unwrap_err();
    assert!(err.contains("edges[1].to") && err.contains("layer 9"), "{err}");
    let wrong_task = text.replace("{\"task\":\"not\"}", "{\"task\":\"add\",\"bits\":3}");
    let err = from_json("wrong", &wrong_task).unwrap_err();
    assert!(err.contains("task add has 6 inputs"), "{err}");
    std::fs::write(&path, text.replace("\"format\":\"deepbelief-recurrent/1\"", "\"format\":\"deepbelief-recurrent/0\"")).unwrap();
    let err = run_fails(&["rtrl", "--resume", &path.display().to_string(), "--steps", "10", "--out", &out_arg]);
    assert!(err.contains("format") && err.contains("deepbelief-recurrent/1"), "{err}");
}

#[test]
fn bench_rtrl_rows_follow_moores_adder() {
    use deepbelief::recurrent::{Network, Preset, Rtrl, RtrlMode, TaskStream};
    let stdout = run_ok(&["bench", "--rtrl", "--sizes", "2,3", "--rtrl-steps", "4", "--repeats", "2", "--json"]);
    let rows: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    for (row, n) in rows.iter().zip([2usize, 3]) {
        assert_eq!(row["bits"], n as u64);
        assert_eq!(row["layers"], serde_json::json!([2 * n, 2 * n, n]));
        assert_eq!(row["preset"], "elman");
        assert_eq!(row["mode"], "shortcut");
        assert!(row["microseconds_per_step"].as_f64().unwrap() > 0.0);
        // The timed steps' mean E is the adder's run from seed 1 after 3 warm-up steps.
        let task = TaskSpec::Add { bits: n };
        let mut net = Network::initialise(Preset::Elman.graph(2 * n, 2 * n, n), 1, 2.0).unwrap();
        let mut rtrl = Rtrl::new(&net, RtrlMode::Shortcut).unwrap();
        let mut stream = TaskStream::new(task, 1);
        let errors: Vec<f64> = (0..3 + 8)
            .map(|_| {
                let e = stream.next_example();
                rtrl.train_step(&mut net, &e.input, &e.target, 0.01).error
            })
            .collect();
        let mean = errors[3..].iter().sum::<f64>() / 8.0;
        assert!((row["mean_error"].as_f64().unwrap() - mean).abs() < 1e-12, "{row} vs {mean}");
    }
}
