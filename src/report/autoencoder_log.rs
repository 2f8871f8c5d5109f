//! AUTOENCODER.LOG: the report of a stacked sparse autoencoder run, in the manner of DEEP.LOG
//! (`deep_log`): the data and their preprocessing, the architecture, and per layer its
//! settings, J with its three terms before and after, the optimiser's stop, ρ̂ against its
//! target, the seconds and the history of J; then the supervised stage and fine-tuning, each
//! with its criterion, timer and figures on the training (and test) data, and the confusion
//! matrices. Fixed-width columns, so runs diff cleanly.

use std::fmt::Write;

use super::deep_log::entry;
use crate::autoencoder::stack::{AutoencoderStack, CostTerms, StackLayer};
use crate::format::autoencoder::{DataRecord, InputPreprocessing};
use crate::supervised::evaluation::Evaluation;
use crate::supervised::optimise::OptimiseReport;
use crate::supervised::SavedSupervised;

/// Rows of J's history shown per layer at most (every k-th iteration beyond, and the last).
const HISTORY_ROWS: usize = 40;
/// Values per row of the history table.
const HISTORY_COLUMNS: usize = 5;

pub struct AutoencoderLog<'a> {
    /// e.g. "deepbelief 0.1.0".
    pub program: String,
    /// Where the layers' J was computed (the engine's description).
    pub computed_on: String,
    pub preprocessing: &'a InputPreprocessing,
    pub pretraining_data: &'a DataRecord,
    pub stack: &'a AutoencoderStack,
    pub supervised: Option<SupervisedLog<'a>>,
    /// Seconds of the whole run, reading the data included.
    pub total_seconds: f64,
}

pub struct SupervisedLog<'a> {
    pub saved: &'a SavedSupervised,
    pub data: &'a DataRecord,
    /// The penalty as set, in words (PenFac and the λ it stands for).
    pub penalty: String,
    pub stages: Vec<StageLog<'a>>,
    /// The test file, and the test cases left out for a label the model does not know.
    pub test: Option<(String, usize)>,
}

/// One supervised stage: its optimiser's report and the model's figures after it.
pub struct StageLog<'a> {
    pub name: &'static str,
    pub report: &'a OptimiseReport,
    pub train: &'a Evaluation,
    pub test: Option<&'a Evaluation>,
}

fn terms(t: &CostTerms) -> String {
    format!("{:.6}  (reconstruction {:.6}, weight decay {:.6}, sparsity {:.6})", t.total, t.reconstruction, t.weight_decay, t.sparsity)
}

fn error_text(e: &Evaluation) -> String {
    match &e.confusion {
        Some(c) => format!("criterion {:.6}, misclassified {:.2}% of {} ({} correct)", e.criterion, 100.0 * c.error_fraction(), e.n_cases, c.n_correct()),
        None => format!("criterion {:.6} on {} cases", e.criterion, e.n_cases),
    }
}

fn data_lines(out: &mut String, what: &str, d: &DataRecord) {
    for (k, file) in d.files.iter().enumerate() {
        entry(out, if k == 0 { what } else { "" }, file);
    }
    entry(out, "Cases", d.cases);
    entry(out, "Classes kept", d.classes.as_ref().map_or("all".to_string(), |c| format!("{c:?}")));
}

impl AutoencoderLog<'_> {
    pub fn render(&self) -> String {
        let mut out = String::new();
        let what = match &self.supervised {
            Some(s) if s.saved.fine_tuned => "stacked sparse autoencoders, a SoftMax output, then fine-tuning of the whole net",
            Some(_) => "stacked sparse autoencoders with a SoftMax output on their features",
            None => "stacked sparse autoencoders, greedy layer-wise",
        };
        let _ = writeln!(out, "AUTOENCODER.LOG  {}: {what}", self.program);
        self.render_data(&mut out);
        self.render_architecture(&mut out);
        for (k, layer) in self.stack.layers.iter().enumerate() {
            render_layer(&mut out, k, layer);
        }
        if let Some(s) = &self.supervised {
            s.render(&mut out);
        }
        self.render_timers(&mut out);
        out
    }

    fn render_data(&self, out: &mut String) {
        let _ = writeln!(out, "\nDATA");
        data_lines(out, "Pretraining file", self.pretraining_data);
        let inputs = match self.preprocessing {
            InputPreprocessing::UnitPixels { image_shape } => {
                format!("whole images, byte / 255 in [0, 1]{}", image_shape.map(|(r, c)| format!(" ({r} x {c})")).unwrap_or_default())
            }
            InputPreprocessing::Patches { side, clip, zca, .. } => {
                format!("{side} x {side} patches{}, mean removed, clipped at ±{clip:.4} (3σ), mapped to [0.1, 0.9]", if *zca { ", ZCA-whitened first" } else { "" })
            }
        };
        entry(out, "Inputs", inputs);
        if let Some(s) = &self.supervised {
            data_lines(out, "Supervised file", s.data);
        }
    }

    fn render_architecture(&self, out: &mut String) {
        let _ = writeln!(out, "\nARCHITECTURE");
        let mut sizes: Vec<String> = self.stack.sizes().iter().map(|s| s.to_string()).collect();
        if let Some(s) = &self.supervised {
            sizes.extend(s.saved.network.layers.iter().map(|l| l.n_out.to_string()));
        }
        let _ = writeln!(out, "  Architecture: {}", sizes.join(" -> "));
        let encoder_parameters: usize = self.stack.layers.iter().map(|l| l.autoencoder.n_params()).sum();
        let _ = writeln!(out, "  {} sparse autoencoder(s), {encoder_parameters} parameters (W1, b1, W2, b2 of each)", self.stack.layers.len());
        if let Some(s) = &self.supervised {
            let outputs = s.saved.target_names.join(" ");
            let _ = writeln!(out, "  Supervised: {:?} outputs, one per class ({outputs}), {} parameters", s.saved.network.output, s.saved.network.n_params());
        }
        entry(out, "Computed on", &self.computed_on);
    }

    fn render_timers(&self, out: &mut String) {
        let _ = writeln!(out, "\nTIMERS (seconds)");
        for (k, layer) in self.stack.layers.iter().enumerate() {
            if let Some(r) = &layer.record {
                entry(out, &format!("Layer {} pretraining", k + 1), format!("{:.1}", r.seconds));
            }
        }
        if let Some(s) = &self.supervised {
            for stage in &s.stages {
                entry(out, stage.name, format!("{:.1}", stage.report.seconds));
            }
        }
        entry(out, "Whole run", format!("{:.1}", self.total_seconds));
    }
}

fn render_layer(out: &mut String, k: usize, layer: &StackLayer) {
    let (a, s) = (&layer.autoencoder, &layer.settings);
    let _ = writeln!(out, "\nLAYER {}  {} -> {} -> {}", k + 1, a.n_visible, a.n_hidden, a.n_visible);
    entry(out, "rho (target activation)", s.cost.sparsity_target);
    entry(out, "lambda (weight decay)", s.cost.weight_decay);
    entry(out, "beta (sparsity weight)", s.cost.sparsity_weight);
    entry(out, "Optimiser", format!("{}, at most {} iterations", s.method.name(), s.iterations));
    entry(out, "Seed", s.seed);
    let Some(r) = &layer.record else {
        let _ = writeln!(out, "  (trained elsewhere: no record)");
        return;
    };
    entry(out, "Training cases", r.cases);
    entry(out, "Computed on", &r.backend);
    entry(out, "J before", terms(&r.initial));
    entry(out, "J after", terms(&r.last));
    entry(out, "Iterations", format!("{} ({} evaluations), stopped: {}", r.iterations, r.evaluations, r.stop));
    let m = &r.mean_activation;
    entry(out, "Mean activation rho-hat", format!("mean {:.4}   min {:.4}   max {:.4}   (target {})", m.mean, m.min, m.max, s.cost.sparsity_target));
    entry(out, "Seconds", format!("{:.1}", r.seconds));
    render_history(out, &r.history);
}

/// J after each iteration, `HISTORY_COLUMNS` to a row; long runs show every k-th and the last.
fn render_history(out: &mut String, history: &[f64]) {
    if history.is_empty() {
        return;
    }
    let step = history.len().div_ceil(HISTORY_ROWS * HISTORY_COLUMNS).max(1);
    let mut shown: Vec<usize> = (step - 1..history.len()).step_by(step).collect();
    if shown.last() != Some(&(history.len() - 1)) {
        shown.push(history.len() - 1);
    }
    let every = if step == 1 { "each iteration".to_string() } else { format!("every {step}th iteration and the last") };
    let _ = writeln!(out, "  J history ({every}):");
    for row in shown.chunks(HISTORY_COLUMNS) {
        let cells: Vec<String> = row.iter().map(|&i| format!("{:>5} {:<12.6}", i + 1, history[i])).collect();
        let _ = writeln!(out, "   {}", cells.join(" "));
    }
}

impl SupervisedLog<'_> {
    fn render(&self, out: &mut String) {
        let _ = writeln!(out, "\nSUPERVISED");
        let c = &self.saved.config;
        entry(out, "Output", format!("{:?} over classes {}", self.saved.network.output, self.saved.target_names.join(" ")));
        entry(out, "Penalty", &self.penalty);
        entry(out, "Optimiser", format!("{:?}, at most {} iterations, tolerance {}", c.optimizer, c.max_iterations, c.tolerance));
        if c.fine_tune {
            let optimiser = c.fine_tune_optimizer.unwrap_or(c.optimizer);
            entry(out, "Fine-tuning", format!("{optimiser:?}, at most {} iterations, tolerance {}", c.fine_tune_max_iterations, c.fine_tune_tolerance));
        }
        if let Some((file, left_out)) = &self.test {
            entry(out, "Test file", file);
            if *left_out > 0 {
                entry(out, "Test cases left out", format!("{left_out} (labels outside the model's classes)"));
            }
        }
        for stage in &self.stages {
            let r = stage.report;
            let _ = writeln!(out, "\n{}", stage.name.to_uppercase());
            entry(out, "Iterations", format!("{}, stopped: {:?}", r.iterations, r.stop));
            entry(out, "Criterion", format!("{:.6} -> {:.6} (with the penalty)", r.initial_criterion, r.final_criterion));
            entry(out, "Seconds", format!("{:.1}", r.seconds));
            entry(out, "Training data", error_text(stage.train));
            if let Some(test) = stage.test {
                entry(out, "Test data", error_text(test));
            }
        }
        if let Some(last) = self.stages.last() {
            for (what, evaluation) in [("training data", Some(last.train)), ("test data", last.test)] {
                if let Some(confusion) = evaluation.and_then(|e| e.confusion.as_ref()) {
                    let _ = writeln!(out, "\n{} AFTER {}\n{}", what.to_uppercase(), last.name.to_uppercase(), confusion.render().trim_end());
                }
            }
        }
    }
}
