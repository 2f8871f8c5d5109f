//! The supervised sections of the DEEP.LOG report: what sits above the RBM stack, how it was
//! trained, the output weights with their CONSTANT, the criterion, confusion matrices and
//! Masters' Analyze tables.
//!
//! The caller fills a [`SupervisedLog`] and renders it with the unsupervised part:
//!
//! ```ignore
//! let analyze = analyze_tables(&backend, &pretrained_dbn, &train_data, 10_000);
//! let supervised = SupervisedLog { architecture, output: "softmax".into(), /* … */ analyze: Some(analyze) };
//! let text = deep_log.render_with_supervised(Some(&supervised));
//! ```

use super::deep_log::{entry, units_name, DeepLog};
use crate::backend::Backend;
use crate::data::split::spread_cases;
use crate::data::Dataset;
use crate::eval::for_each_batch;
use crate::model::Dbn;
use crate::supervised::confusion::ConfusionMatrix;
use std::fmt::Write;

/// Output-layer targets per block of the weights table: 8 columns of 11 characters.
const TARGETS_PER_BLOCK: usize = 8;
/// Top hidden units per line of the Analyze table.
const UNITS_PER_LINE: usize = 8;

/// Everything the supervised part of a run leaves for the report. Plain data, so the caller
/// decides where each figure comes from.
#[derive(Clone, Debug, Default)]
pub struct SupervisedLog {
    /// The complete architecture, inputs first and outputs last, e.g. `[784, 500, 100, 10]`:
    /// the first `DeepLog::layers.len()` steps are the RBM layers, then the supervised
    /// hidden layers, then the output layer.
    pub architecture: Vec<usize>,
    /// The output type, e.g. "softmax" or "linear".
    pub output: String,
    /// Whether the whole model was fine-tuned after the supervised layers were trained.
    pub fine_tuned: bool,
    /// Every supervised setting as `(name, value)`: optimizer, penalty, tolerance, annealing
    /// iterations, SVD on or off, … ([`super::deep_log::setting_entries`] turns a
    /// serialisable settings struct into these).
    pub parameters: Vec<(String, String)>,
    /// How training went, as `(name, value)`: iterations, stop reason, seconds, ….
    pub outcome: Vec<(String, String)>,
    /// Mean-field reconstruction error of each RBM layer after fine-tuning (the errors at
    /// initialisation and after pretraining are in the layer logs); empty without
    /// fine-tuning.
    pub fine_tuned_reconstruction: Vec<f64>,
    /// Per target, the weight from each input of the output layer, then the CONSTANT (bias)
    /// last: `n_targets × (n_inputs + 1)`.
    pub output_weights: Vec<Vec<f32>>,
    pub target_names: Vec<String>,
    /// e.g. "mean squared error" or "log likelihood".
    pub criterion_name: String,
    /// The final value of the criterion on the training data.
    pub criterion_value: f64,
    /// Confusion matrices with what they were measured on, e.g. ("training data", …),
    /// ("test data", …); empty for regression.
    pub confusion: Vec<(String, ConfusionMatrix)>,
    /// From [`analyze_tables`] on the pretrained stack (before fine-tuning), or `None`.
    pub analyze: Option<AnalyzeTables>,
}

/// Masters' Analyze tables: how well the RBM stack reproduces its inputs, and how active its
/// top hidden units are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnalyzeTables {
    pub n_cases: usize,
    pub input_names: Vec<String>,
    /// Per input, its mean over the cases.
    pub input_mean: Vec<f64>,
    /// Per input, the mean of its mean-field reconstruction: up through every RBM layer by
    /// activation probabilities, then back down (an expected value for Gaussian inputs).
    pub reconstruction_mean: Vec<f64>,
    /// Per unit of the top hidden layer, its mean activation probability.
    pub top_hidden_mean: Vec<f64>,
}

/// The Analyze tables over at most `max_cases` cases spread evenly through `data`.
pub fn analyze_tables(backend: &dyn Backend, dbn: &Dbn, data: &Dataset, max_cases: usize) -> AnalyzeTables {
    let depth = dbn.layers.len();
    if let Some(first) = dbn.layers.first() {
        assert_eq!(data.n_inputs, first.n_visible, "data and model disagree on the number of inputs");
    }
    let n_top = dbn.top().map_or(0, |top| top.n_hidden);
    let cases = spread_cases(data.n_cases, max_cases);
    let mut input_sum = vec![0.0f64; data.n_inputs];
    let mut reconstruction_sum = vec![0.0f64; data.n_inputs];
    let mut top_sum = vec![0.0f64; n_top];
    let add_columns = |sums: &mut [f64], rows: &[f32]| {
        for row in rows.chunks_exact(sums.len().max(1)) {
            for (s, &v) in sums.iter_mut().zip(row) {
                *s += v as f64;
            }
        }
    };
    for_each_batch(data, &cases, |visible| {
        add_columns(&mut input_sum, visible);
        let top = dbn.propagate_up(backend, visible, depth);
        add_columns(&mut top_sum, &top);
        add_columns(&mut reconstruction_sum, &dbn.propagate_down(backend, &top, depth));
    });
    let n = cases.len().max(1) as f64;
    let mean = |sums: Vec<f64>| sums.into_iter().map(|s| s / n).collect();
    AnalyzeTables {
        n_cases: cases.len(),
        input_names: data.input_names.clone(),
        input_mean: mean(input_sum),
        reconstruction_mean: mean(reconstruction_sum),
        top_hidden_mean: mean(top_sum),
    }
}

impl SupervisedLog {
    fn n_unsupervised(&self, deep: &DeepLog) -> usize {
        deep.layers.len().min(self.architecture.len().saturating_sub(1))
    }

    pub(super) fn render_architecture(&self, out: &mut String, deep: &DeepLog) {
        let _ = writeln!(out, "\n  Complete model: {}", self.architecture.iter().map(usize::to_string).collect::<Vec<_>>().join(" -> "));
        let _ = writeln!(out, "\n  {:>5}  {:<12}  {:>7}  {:>7}  Activation", "Layer", "Section", "Inputs", "Units");
        let n_unsupervised = self.n_unsupervised(deep);
        let steps = self.architecture.len().saturating_sub(1);
        for (k, pair) in self.architecture.windows(2).enumerate() {
            let (section, activation) = if k < n_unsupervised {
                let visible = deep.layers[k].rbm.visible_units;
                ("unsupervised", format!("logistic (RBM, {} visible)", units_name(visible)))
            } else if k + 1 < steps {
                ("supervised", "logistic".to_string())
            } else {
                ("output", self.output.clone())
            };
            let _ = writeln!(out, "  {:>5}  {:<12}  {:>7}  {:>7}  {}", k + 1, section, pair[0], pair[1], activation);
        }
        let parameters: usize = self.architecture.windows(2).map(|p| (p[0] + 1) * p[1]).sum();
        let _ = writeln!(out, "  {parameters} weights and hidden/output biases (RBM visible biases not counted)");
    }

    pub(super) fn render_parameters(&self, out: &mut String) {
        let _ = writeln!(out, "\nSUPERVISED PARAMETERS");
        entry(out, "output", &self.output);
        entry(out, "fine_tune", self.fine_tuned);
        for (name, value) in &self.parameters {
            entry(out, name, value);
        }
        if self.fine_tuned {
            let _ = writeln!(out, "  (Q-mean, Q-sd and Skewness in the layer sections below were measured on the pretrained RBMs, before fine-tuning.)");
        }
    }

    pub(super) fn render_results(&self, out: &mut String, deep: &DeepLog) {
        let _ = writeln!(out, "\nSUPERVISED TRAINING");
        for (name, value) in &self.outcome {
            entry(out, name, value);
        }
        entry(out, "Criterion", format!("{} = {:.6}", self.criterion_name, self.criterion_value));
        self.render_reconstruction(out, deep);
        self.render_output_weights(out);
        for (measured_on, matrix) in &self.confusion {
            // Not upper-cased like the other headings: the label may hold a file name.
            let _ = writeln!(out, "\nCLASSIFICATION: {measured_on}");
            for line in matrix.render().lines() {
                let _ = writeln!(out, "{}{line}", if line.is_empty() { "" } else { "  " });
            }
        }
        if let Some(tables) = &self.analyze {
            render_analyze(out, tables, deep.layers.len());
        }
    }

    fn render_reconstruction(&self, out: &mut String, deep: &DeepLog) {
        if deep.layers.is_empty() {
            return;
        }
        let _ = writeln!(out, "\nRECONSTRUCTION ERROR PER LAYER (mean field, mean squared error per input)");
        let tuned = !self.fine_tuned_reconstruction.is_empty();
        let _ = write!(out, "  {:>5}  {:>14}  {:>14}", "Layer", "Initialised", "Pretrained");
        let _ = writeln!(out, "{}", if tuned { format!("  {:>14}", "Fine-tuned") } else { String::new() });
        for (k, layer) in deep.layers.iter().enumerate() {
            let _ = write!(out, "  {:>5}  {:>14.6}  {:>14.6}", k + 1, layer.init_error, layer.final_error);
            let after = self.fine_tuned_reconstruction.get(k).map(|e| format!("  {e:>14.6}")).unwrap_or_default();
            let _ = writeln!(out, "{after}");
        }
    }

    /// Rows are the output layer's inputs and the CONSTANT, columns the targets, so any
    /// number of inputs fits.
    fn render_output_weights(&self, out: &mut String) {
        let n_targets = self.output_weights.len();
        let n_rows = self.output_weights.first().map_or(0, Vec::len);
        let _ = writeln!(out, "\nOUTPUT WEIGHTS ({n_targets} target(s); one row per input of the output layer, CONSTANT is the bias)");
        let name = |t: usize| -> String { self.target_names.get(t).cloned().unwrap_or_else(|| format!("Target {}", t + 1)).chars().take(10).collect() };
        for start in (0..n_targets).step_by(TARGETS_PER_BLOCK) {
            let targets = start..(start + TARGETS_PER_BLOCK).min(n_targets);
            let _ = write!(out, "\n  {:<9}", "Input");
            for t in targets.clone() {
                let _ = write!(out, " {:>10}", name(t));
            }
            let _ = writeln!(out);
            for row in 0..n_rows {
                let label = if row + 1 == n_rows { "CONSTANT".to_string() } else { (row + 1).to_string() };
                let _ = write!(out, "  {label:<9}");
                for t in targets.clone() {
                    let _ = write!(out, " {:>10.5}", self.output_weights[t].get(row).copied().unwrap_or(f32::NAN));
                }
                let _ = writeln!(out);
            }
        }
    }
}

fn render_analyze(out: &mut String, tables: &AnalyzeTables, depth: usize) {
    let _ = writeln!(out, "\nANALYZE: INPUT VERSUS RECONSTRUCTION ACTIVATION PROBABILITY");
    let _ = writeln!(out, "  (means over {} cases; reconstruction up through {depth} RBM layer(s) and back down, mean field)", tables.n_cases);
    let _ = writeln!(out, "\n  {:<16} {:>12} {:>14} {:>12}", "Input", "Input mean", "Reconstructed", "Difference");
    for (i, (&x, &r)) in tables.input_mean.iter().zip(&tables.reconstruction_mean).enumerate() {
        let name: String = tables.input_names.get(i).cloned().unwrap_or_else(|| (i + 1).to_string()).chars().take(16).collect();
        let _ = writeln!(out, "  {name:<16} {x:>12.5} {r:>14.5} {:>12.5}", r - x);
    }
    let _ = writeln!(out, "\nANALYZE: TOP-LAYER HIDDEN ACTIVATION PROBABILITY ({} units, means over {} cases)", tables.top_hidden_mean.len(), tables.n_cases);
    for (line, chunk) in tables.top_hidden_mean.chunks(UNITS_PER_LINE).enumerate() {
        let first = line * UNITS_PER_LINE + 1;
        let _ = write!(out, "  {:>5}-{:<5}", first, first + chunk.len() - 1);
        for p in chunk {
            let _ = write!(out, " {p:>9.5}");
        }
        let _ = writeln!(out);
    }
}
