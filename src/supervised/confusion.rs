//! The confusion matrix of a classification: counts of cases by true and predicted class,
//! the misclassification rate and per-class errors. `report::classification` prints it as
//! Masters' DEEP does.

use serde_json::{json, Value};

#[derive(Clone, Debug, PartialEq)]
pub struct ConfusionMatrix {
    /// `counts[true][predicted]`.
    counts: Vec<Vec<usize>>,
    class_names: Vec<String>,
}

/// The index of the largest value of each row of `n_classes` (row-major), the first one on
/// ties, as Masters picks the class: the same rule as [`crate::data::Targets::classes`].
pub fn predictions(outputs: &[f32], n_classes: usize) -> Vec<usize> {
    assert!(n_classes > 0, "a classification needs at least one class");
    assert_eq!(outputs.len() % n_classes, 0, "{} values do not make whole cases of {n_classes} classes", outputs.len());
    outputs.chunks_exact(n_classes).map(arg_max).collect()
}

fn arg_max(row: &[f32]) -> usize {
    let mut best = 0;
    for (i, &value) in row.iter().enumerate() {
        // NaN never wins, so one broken output cannot hide the others.
        if value > row[best] || row[best].is_nan() && !value.is_nan() {
            best = i;
        }
    }
    best
}

/// "Class 0", "Class 1", …: the names of classes that were given none.
pub fn default_class_names(n_classes: usize) -> Vec<String> {
    (0..n_classes).map(|c| format!("Class {c}")).collect()
}

impl ConfusionMatrix {
    /// From network outputs and targets, both `n_cases × n_classes` row-major: the true class
    /// is the target with the largest value, the predicted class the output with the largest
    /// value (the first on ties). Empty `class_names` means "Class 0", "Class 1", ….
    pub fn from_outputs(outputs: &[f32], targets: &[f32], n_classes: usize, class_names: Vec<String>) -> ConfusionMatrix {
        assert_eq!(outputs.len(), targets.len(), "outputs and targets must hold the same cases");
        let names = if class_names.is_empty() { default_class_names(n_classes) } else { class_names };
        assert_eq!(names.len(), n_classes, "one name per class");
        ConfusionMatrix::from_classes(&predictions(targets, n_classes), &predictions(outputs, n_classes), names)
    }

    /// From class indices. The number of classes is `class_names.len()`, or, when that is
    /// empty, one more than the largest class seen.
    pub fn from_classes(true_classes: &[usize], predicted: &[usize], class_names: Vec<String>) -> ConfusionMatrix {
        assert_eq!(true_classes.len(), predicted.len(), "one prediction per case");
        let names = if class_names.is_empty() {
            let seen = true_classes.iter().chain(predicted).max().map_or(0, |&c| c + 1);
            default_class_names(seen)
        } else {
            class_names
        };
        let n = names.len();
        let mut counts = vec![vec![0; n]; n];
        for (&t, &p) in true_classes.iter().zip(predicted) {
            assert!(t < n && p < n, "class {} out of range ({n} classes)", t.max(p));
            counts[t][p] += 1;
        }
        ConfusionMatrix { counts, class_names: names }
    }

    pub fn counts(&self) -> &[Vec<usize>] {
        &self.counts
    }

    pub fn class_names(&self) -> &[String] {
        &self.class_names
    }

    pub fn n_classes(&self) -> usize {
        self.counts.len()
    }

    pub fn n_cases(&self) -> usize {
        self.counts.iter().flatten().sum()
    }

    pub fn n_correct(&self) -> usize {
        (0..self.n_classes()).map(|c| self.counts[c][c]).sum()
    }

    /// Misclassified cases as a fraction of all cases (0.025 is 2.5%); 0 with no cases.
    pub fn error_fraction(&self) -> f64 {
        let n = self.n_cases();
        if n == 0 {
            return 0.0;
        }
        (n - self.n_correct()) as f64 / n as f64
    }

    /// Per true class, the fraction of its cases predicted as another class; NaN for a class
    /// with no cases, where the rate is undefined.
    pub fn per_class_error(&self) -> Vec<f64> {
        self.counts
            .iter()
            .enumerate()
            .map(|(c, row)| {
                let total: usize = row.iter().sum();
                if total == 0 {
                    f64::NAN
                } else {
                    (total - row[c]) as f64 / total as f64
                }
            })
            .collect()
    }

    /// The figures for `--json`: counts, error fraction, per-class errors (null where a class
    /// has no cases) and class names.
    pub fn to_json(&self) -> Value {
        let per_class: Vec<Value> = self.per_class_error().into_iter().map(|e| if e.is_nan() { Value::Null } else { json!(e) }).collect();
        json!({
            "class_names": self.class_names,
            "counts": self.counts,
            "n_cases": self.n_cases(),
            "error_fraction": self.error_fraction(),
            "per_class_error": per_class,
        })
    }
}
