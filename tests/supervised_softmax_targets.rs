#![cfg(not(target_arch = "wasm32"))]
//! A classifier forced on a database whose targets are real values (as in Masters' SYNTH
//! examples): the class of each case is its largest target, so the criterion is a
//! log-likelihood (never negative) and the confusion matrix counts those classes.

mod support;

use support::cli::*;

/// Inputs X1..X4 in [0, 1]; targets T1..T3 = 3·(X_k − 0.5), between −1.5 and 1.5. Returns the
/// file's text and each case's largest target (0-based).
fn synth_database() -> (String, Vec<usize>) {
    let mut text = String::from("X1 X2 X3 X4 T1 T2 T3\n");
    let mut classes = Vec::new();
    for k in 0..150u32 {
        let x: Vec<f64> = (0..4u32).map(|i| ((k * (13 + 6 * i) + 7 * i) % 101) as f64 / 100.0).collect();
        let t: Vec<f64> = x[..3].iter().map(|v| 3.0 * (v - 0.5)).collect();
        classes.push((0..3).fold(0, |best, i| if t[i] > t[best] { i } else { best }));
        text += &format!("{} {} {} {} {} {} {}\n", x[0], x[1], x[2], x[3], t[0], t[1], t[2]);
    }
    (text, classes)
}

#[test]
fn a_forced_classifier_on_real_valued_targets_keeps_a_non_negative_criterion() {
    let dir = temp_dir("softmax-real-targets");
    let (text, classes) = synth_database();
    let data = dir.join("synth.txt");
    std::fs::write(&data, text).unwrap();
    let out = dir.join("model");
    let output = run(&[
        "train", "--data", data.to_str().unwrap(), "--targets", "T1,T2,T3", "--rbm-layers", "8", "--epochs", "5", "--init-trials", "2",
        "--batches", "4", "--output", "softmax", "--anneal-iters", "30", "--out", out.to_str().unwrap(), "--json",
    ]);
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    let trained = last_json(&stdout);

    // Every criterion reported along the way, and the final one, is a log-likelihood ≥ 0.
    let reported: Vec<f64> = stderr.lines().filter_map(|line| line.split("criterion ").nth(1)?.split_whitespace().next()?.parse().ok()).collect();
    assert!(!reported.is_empty(), "{stderr}");
    assert!(reported.iter().all(|&c| c >= 0.0), "{reported:?}");
    let criterion = trained["supervised"]["train"]["criterion"].as_f64().unwrap();
    assert!(criterion >= 0.0, "{trained}");

    // The confusion matrix's rows are the cases of each largest-target class.
    let counts = &trained["supervised"]["train"]["confusion"]["counts"];
    let row_totals: Vec<u64> = (0..3).map(|c| counts[c].as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).sum()).collect();
    let expected: Vec<u64> = (0..3).map(|c| classes.iter().filter(|&&k| k == c).count() as u64).collect();
    assert_eq!(row_totals, expected, "{trained}");
    // How well so small a net learns is not the point here (other tests hold quality).
    let error = trained["train_error"].as_f64().unwrap();

    // `test` on the same file scores the same classes the same way.
    let tested = last_json(&run_ok(&["test", "--model", out.to_str().unwrap(), "--data", data.to_str().unwrap(), "--json"]));
    assert!((tested["criterion"].as_f64().unwrap() - criterion).abs() < 1e-9, "{tested}");
    assert_eq!(tested["test_error"].as_f64(), Some(error), "{tested}");
}
