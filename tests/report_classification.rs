//! Confusion matrix, predictions and activation files against hand-computed small cases.

use deepbelief::report::classification::{write_activations, write_predictions, ActivationSelection, Section};
use deepbelief::supervised::confusion::{predictions, ConfusionMatrix};

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Three classes, ten cases, worked by hand:
/// true 0: predicted 0,0,0,1      (4 cases, 1 error)
/// true 1: predicted 1,1,2        (3 cases, 1 error)
/// true 2: predicted 2,0,2        (3 cases, 1 error)
fn hand_matrix() -> ConfusionMatrix {
    let truth = [0, 0, 0, 0, 1, 1, 1, 2, 2, 2];
    let predicted = [0, 0, 0, 1, 1, 1, 2, 2, 0, 2];
    ConfusionMatrix::from_classes(&truth, &predicted, names(&["cat", "dog", "bird"]))
}

#[test]
fn counts_match_the_hand_computed_table() {
    let m = hand_matrix();
    assert_eq!(m.counts(), &[vec![3, 1, 0], vec![0, 2, 1], vec![1, 0, 2]]);
    assert_eq!(m.n_cases(), 10);
    assert_eq!(m.n_classes(), 3);
    assert!((m.error_fraction() - 0.3).abs() < 1e-12);
    let per_class = m.per_class_error();
    let expected = [0.25, 1.0 / 3.0, 1.0 / 3.0];
    for (got, want) in per_class.iter().zip(expected) {
        assert!((got - want).abs() < 1e-12, "per-class error {got} != {want}");
    }
}

#[test]
fn sums_are_consistent() {
    // A larger pseudo-random case: rows sum to each class's true count, the whole table to
    // n_cases, and the error fraction is 1 − trace / n.
    let n_classes = 7;
    let truth: Vec<usize> = (0..500).map(|k| (k * 37 + k / 11) % n_classes).collect();
    let predicted: Vec<usize> = (0..500).map(|k| if k % 3 == 0 { (k * 5) % n_classes } else { (k * 37 + k / 11) % n_classes }).collect();
    let m = ConfusionMatrix::from_classes(&truth, &predicted, Vec::new());
    assert_eq!(m.n_classes(), n_classes);
    for c in 0..n_classes {
        let true_count = truth.iter().filter(|&&t| t == c).count();
        assert_eq!(m.counts()[c].iter().sum::<usize>(), true_count, "row {c}");
        let predicted_count = predicted.iter().filter(|&&p| p == c).count();
        assert_eq!(m.counts().iter().map(|r| r[c]).sum::<usize>(), predicted_count, "column {c}");
    }
    assert_eq!(m.n_cases(), 500);
    let trace: usize = (0..n_classes).map(|c| m.counts()[c][c]).sum();
    let correct = truth.iter().zip(&predicted).filter(|(t, p)| t == p).count();
    assert_eq!(trace, correct);
    assert!((m.error_fraction() - (1.0 - trace as f64 / 500.0)).abs() < 1e-12);
    assert!(m.error_fraction() > 0.0);
}

#[test]
fn from_outputs_takes_the_largest_target_and_output() {
    // Targets one-hot except the last case, whose largest target is class 2.
    let targets = [1.0, 0.0, 0.0, /**/ 0.0, 1.0, 0.0, /**/ 0.0, 0.0, 1.0, /**/ 0.1, 0.2, 0.7];
    let outputs = [0.8, 0.1, 0.1, /**/ 0.6, 0.3, 0.1, /**/ 0.2, 0.2, 0.6, /**/ 0.5, 0.4, 0.1];
    let m = ConfusionMatrix::from_outputs(&outputs, &targets, 3, Vec::new());
    assert_eq!(m.counts(), &[vec![1, 0, 0], vec![1, 0, 0], vec![1, 0, 1]]);
    assert_eq!(m.class_names(), &names(&["Class 0", "Class 1", "Class 2"]));
    assert!((m.error_fraction() - 0.5).abs() < 1e-12);
}

#[test]
fn ties_go_to_the_lowest_index() {
    assert_eq!(predictions(&[0.5, 0.5, 0.1, /**/ 0.2, 0.7, 0.7, /**/ 1.0, 1.0, 1.0], 3), vec![0, 1, 0]);
    // A tied target row counts as the first of the tied classes too.
    let m = ConfusionMatrix::from_outputs(&[0.0, 0.9], &[0.5, 0.5], 2, names(&["a", "b"]));
    assert_eq!(m.counts(), &[vec![0, 1], vec![0, 0]]);
    // NaN outputs never win.
    assert_eq!(predictions(&[f32::NAN, 0.1, 0.3], 3), vec![2]);
}

#[test]
fn class_without_cases_has_undefined_error() {
    let m = ConfusionMatrix::from_classes(&[0, 0, 2], &[0, 1, 2], names(&["a", "b", "c"]));
    let per_class = m.per_class_error();
    assert!((per_class[0] - 0.5).abs() < 1e-12);
    assert!(per_class[1].is_nan());
    assert_eq!(per_class[2], 0.0);
    assert_eq!(m.to_json()["per_class_error"][1], serde_json::Value::Null);
}

#[test]
fn render_shows_counts_percentages_and_errors() {
    let text = hand_matrix().render();
    for needle in ["Counts", "Row percent", "Total percent", "Misclassification: 30.00% (3 of 10 cases)", "cat", "dog", "bird"] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    // The cat row of the row-% table: 3 of 4 and 1 of 4.
    assert!(text.contains("75.00") && text.contains("25.00"), "{text}");
    // Per-class error of dog: 1 of 3.
    assert!(text.contains("33.33"), "{text}");

    // Each row of the row-% table sums to 100.
    let row_block: Vec<&str> = text.split("Row percent").nth(1).unwrap().split("Total percent").next().unwrap().lines().skip(2).filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(row_block.len(), 3, "{row_block:?}");
    for line in row_block {
        let sum: f64 = line.split_whitespace().skip(1).map(|v| v.parse::<f64>().unwrap()).sum();
        assert!((sum - 100.0).abs() < 0.02, "row {line:?} sums to {sum}");
    }
    // The total-% table sums to 100 over all cells.
    let total_block = text.split("Total percent").nth(1).unwrap().split("Misclassification").next().unwrap();
    let total: f64 = total_block.lines().skip(2).flat_map(|l| l.split_whitespace().skip(1)).map(|v| v.parse::<f64>().unwrap()).sum();
    assert!((total - 100.0).abs() < 0.05, "total % sums to {total}");
}

#[test]
fn json_holds_the_figures() {
    let json = hand_matrix().to_json();
    assert_eq!(json["counts"][0], serde_json::json!([3, 1, 0]));
    assert_eq!(json["n_cases"], 10);
    assert!((json["error_fraction"].as_f64().unwrap() - 0.3).abs() < 1e-12);
    assert_eq!(json["class_names"][2], "bird");
    assert!((json["per_class_error"][0].as_f64().unwrap() - 0.25).abs() < 1e-12);
}

#[test]
fn predictions_file_has_one_line_per_case() {
    let outputs = [0.1f32, 0.9, /**/ 0.7, 0.3, /**/ 0.25, 0.75];
    let mut file = Vec::new();
    write_predictions(&mut file, &outputs, &[1, 1, 0], 2, &names(&["no", "yes please"])).unwrap();
    let text = String::from_utf8(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines, ["case true predicted no yes_please", "0 1 1 0.1 0.9", "1 1 0 0.7 0.3", "2 0 1 0.25 0.75"]);
}

#[test]
fn activation_file_lines_and_values() {
    let (n_cases, width) = (4, 3);
    let activations: Vec<f32> = (0..n_cases * width).map(|k| k as f32 / 7.0).collect();

    let mut all = Vec::new();
    write_activations(&mut all, &activations, n_cases, width, None, "unsupervised:1").unwrap();
    let text = String::from_utf8(all).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + n_cases);
    assert_eq!(lines[0], "unsupervised:1");
    for (case, line) in lines[1..].iter().enumerate() {
        let values: Vec<f32> = line.split_whitespace().map(|v| v.parse().unwrap()).collect();
        assert_eq!(values, activations[case * width..(case + 1) * width]);
    }

    let mut one = Vec::new();
    write_activations(&mut one, &activations, n_cases, width, Some(2), "").unwrap();
    let values: Vec<f32> = String::from_utf8(one).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(values, (0..n_cases).map(|c| activations[c * width + 2]).collect::<Vec<_>>());
}

#[test]
fn selections_parse_and_check() {
    let s: ActivationSelection = "unsupervised:1:5".parse().unwrap();
    // Numbered from 1 in the text, as in DEEP; 0-based indices in the fields.
    assert_eq!(s, ActivationSelection { section: Section::Unsupervised, layer: 0, neuron: Some(4) });
    assert_eq!(s.to_string(), "unsupervised:1:5");
    assert_eq!("output:1".parse::<ActivationSelection>().unwrap(), ActivationSelection { section: Section::Output, layer: 0, neuron: None });
    assert_eq!("Output".parse::<ActivationSelection>().unwrap().section, Section::Output);
    assert_eq!("supervised:1:2".parse::<ActivationSelection>().unwrap().section, Section::Supervised);

    for (bad, says) in [
        ("hidden:1", "unknown section 'hidden'"),
        ("unsupervised", "layer is missing"),
        ("unsupervised:x", "layer 'x' is not a whole number"),
        ("supervised:1:-1", "neuron '-1'"),
        ("unsupervised:0", "numbered from 1"),
        ("unsupervised:1:0", "neuron '0'"),
        ("output:2", "one layer"),
        ("unsupervised:1:2:3", "too many parts"),
    ] {
        let error = bad.parse::<ActivationSelection>().unwrap_err();
        assert!(error.contains(says) && error.contains("expected"), "{bad}: {error}");
    }

    let sizes = [500, 300];
    assert_eq!(s.layer_width(&sizes, &[], 10), Ok(500));
    assert_eq!("unsupervised:2".parse::<ActivationSelection>().unwrap().layer_width(&sizes, &[], 10), Ok(300));
    assert!("unsupervised:2:301".parse::<ActivationSelection>().unwrap().layer_width(&sizes, &[], 10).unwrap_err().contains("300 neurons"));
    assert!("supervised:1".parse::<ActivationSelection>().unwrap().layer_width(&sizes, &[], 10).unwrap_err().contains("0 layer(s)"));
    assert_eq!("output:1:10".parse::<ActivationSelection>().unwrap().layer_width(&sizes, &[], 10), Ok(10));
}
