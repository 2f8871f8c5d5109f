//! A training report in the manner of DEEP.LOG, the log of Masters' DEEP program: the data,
//! the architecture, every setting, and per layer the initialisation, the training run and
//! a summary of the unsupervised weights with each hidden unit's mean activation (Q-mean)
//! and skewness over the training cases. Fixed-width columns, so it reads well in any
//! editor and diffs cleanly between runs.
//!
//! A run with supervised layers adds their sections through
//! [`DeepLog::render_with_supervised`] and a [`SupervisedLog`] (see
//! [`super::deep_log_supervised`]): the supervised architecture and parameters, the
//! reconstruction errors, the output weights with their CONSTANT, the criterion, the
//! confusion matrices and Masters' Analyze tables. `render()` alone is the unsupervised
//! report, unchanged.
//!
//! When the whole model is fine-tuned, `LayerLog::activity` must be measured on the
//! pretrained RBM, before fine-tuning, so the Q-mean and skewness rows record the pretrained
//! state as Masters' report does; the report says so. The Bias and |w| rows describe
//! whichever RBM `LayerLog::rbm` points to.

use crate::model::{Rbm, VisibleUnits};
pub use super::deep_log_supervised::{analyze_tables, AnalyzeTables, SupervisedLog};
use crate::train::{EpochReport, StackConfig, StopReason};
use std::fmt::Write;

/// Hidden units per block of the weights summary: 8 columns of 11 characters fit in 100.
const UNITS_PER_BLOCK: usize = 8;

pub struct DeepLog<'a> {
    /// e.g. "deepbelief 0.1.0".
    pub program: String,
    pub data: DataSummary,
    pub config: &'a StackConfig,
    pub backend: String,
    pub layers: Vec<LayerLog<'a>>,
}

pub struct DataSummary {
    pub train_file: String,
    pub labels_file: Option<String>,
    pub n_cases: usize,
    pub image_shape: Option<(usize, usize)>,
    /// Per-input mean and standard deviation of the inputs in [0, 1], before standardisation.
    pub input_means: Vec<f32>,
    pub input_sds: Vec<f32>,
    pub standardised: bool,
    /// How a database became inputs, one line each (empty for image files).
    pub preprocessing: Vec<String>,
}

/// Mean, spread and skewness of one hidden unit's activation probability over the cases.
#[derive(Clone, Copy, Debug)]
pub struct UnitActivity {
    pub q_mean: f64,
    pub q_sd: f64,
    pub skewness: f64,
}

pub struct LayerLog<'a> {
    pub rbm: &'a Rbm,
    /// Every initialisation trial's reconstruction error (on `init_cases` cases) and the winner.
    pub trial_errors: Vec<f64>,
    pub best_trial: usize,
    /// Mean-field reconstruction error before and after training, on `measured_cases` cases.
    pub init_error: f64,
    pub final_error: f64,
    pub measured_cases: usize,
    pub epochs: Vec<EpochReport>,
    pub stop: StopReason,
    /// One per hidden unit, in the model's (sorted) order; measured before any fine-tuning.
    pub activity: Vec<UnitActivity>,
}

pub fn stop_description(stop: StopReason, config: &StackConfig) -> String {
    match stop {
        StopReason::Converged => format!("converged (max|increment| / max|weight| below {:e})", config.rbm.convergence_tolerance),
        StopReason::NoImprovement => format!("no new minimum of max|increment| / max|weight| for {} epochs", config.rbm.max_no_improvement),
        StopReason::MaxEpochs => format!("reached the epoch limit ({})", config.rbm.epochs),
        StopReason::Cancelled => "cancelled".into(),
    }
}

pub(super) fn units_name(units: VisibleUnits) -> &'static str {
    match units {
        VisibleUnits::Bernoulli => "bernoulli",
        VisibleUnits::Gaussian => "gaussian",
    }
}

/// `name ........ value`, so values line up in one column.
/// An empty name continues the entry above.
pub(super) fn entry(out: &mut String, name: &str, value: impl std::fmt::Display) {
    if name.is_empty() {
        let _ = writeln!(out, "{:29}{value}", "");
        return;
    }
    let dots = 26usize.saturating_sub(name.chars().count() + 1);
    let _ = writeln!(out, "  {name} {} {value}", ".".repeat(dots.max(2)));
}

fn min_mean_max(values: &[f32]) -> String {
    let min = values.iter().copied().fold(f32::INFINITY, f32::min);
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mean = values.iter().map(|&v| v as f64).sum::<f64>() / values.len().max(1) as f64;
    format!("min {min:.4}   mean {mean:.4}   max {max:.4}")
}

impl DeepLog<'_> {
    pub fn render(&self) -> String {
        self.render_with_supervised(None)
    }

    /// The report, with the supervised sections when `supervised` is given.
    pub fn render_with_supervised(&self, supervised: Option<&SupervisedLog>) -> String {
        let mut out = String::new();
        match supervised {
            None => {
                let _ = writeln!(out, "DEEP.LOG  {}: greedy layer-wise training of a deep belief net", self.program);
            }
            Some(s) if self.config.is_plain_mlp() => {
                let _ = writeln!(out, "DEEP.LOG  {}: a plain MLP with a supervised {} output (no RBM stage)", self.program, s.output);
            }
            Some(s) => {
                let tuned = if s.fine_tuned { ", then fine-tuning of the whole model" } else { "" };
                let _ = writeln!(out, "DEEP.LOG  {}: deep belief net with a supervised {} output{tuned}", self.program, s.output);
            }
        }
        self.render_data(&mut out);
        self.render_architecture(&mut out);
        if let Some(s) = supervised {
            s.render_architecture(&mut out, self);
        }
        self.render_parameters(&mut out);
        if let Some(s) = supervised {
            s.render_parameters(&mut out);
        }
        for (index, layer) in self.layers.iter().enumerate() {
            self.render_layer(&mut out, index, layer);
        }
        if let Some(s) = supervised {
            s.render_results(&mut out, self);
        }
        out
    }

    fn render_data(&self, out: &mut String) {
        let d = &self.data;
        let _ = writeln!(out, "\nDATA");
        entry(out, "Training file", &d.train_file);
        entry(out, "Labels file", d.labels_file.as_deref().unwrap_or("none"));
        entry(out, "Cases", d.n_cases);
        let shape = d.image_shape.map(|(r, c)| format!(" ({r} x {c} images)")).unwrap_or_default();
        entry(out, "Inputs", format!("{}{shape}", d.input_means.len()));
        entry(out, "Input means", min_mean_max(&d.input_means));
        entry(out, "Input std devs", min_mean_max(&d.input_sds));
        let constant = d.input_sds.iter().filter(|&&s| s == 0.0).count();
        entry(out, "Constant inputs", format!("{constant} of {}", d.input_sds.len()));
        for line in &d.preprocessing {
            entry(out, "Database scaling", line);
        }
        let standardisation = if d.standardised { "each input to mean 0, sd 1 (constant inputs to 0)" } else { "none (inputs in [0, 1])" };
        entry(out, "Standardisation", standardisation);
    }

    fn render_architecture(&self, out: &mut String) {
        let _ = writeln!(out, "\nARCHITECTURE");
        if self.config.is_plain_mlp() {
            let _ = writeln!(out, "  RBM stage: none (zero RBM layers): a plain MLP, trained by the supervised stage alone");
            return;
        }
        let Some(first) = self.layers.first().map(|l| l.rbm) else {
            let _ = writeln!(out, "  (no layers trained)");
            return;
        };
        let mut sizes = vec![format!("{} {}", first.n_visible, units_name(first.visible_units))];
        sizes.extend(self.layers.iter().map(|l| l.rbm.n_hidden.to_string()));
        let parameters: usize = self.layers.iter().map(|l| l.rbm.weights.len() + l.rbm.n_visible + l.rbm.n_hidden).sum();
        let _ = writeln!(out, "  Architecture: {}", sizes.join(" -> "));
        let _ = writeln!(out, "  {} RBM layer(s), {parameters} parameters (weights and biases)", self.layers.len());
    }

    fn render_parameters(&self, out: &mut String) {
        let _ = writeln!(out, "\nPARAMETERS");
        entry(out, "backend", &self.backend);
        entry(out, "layers", format!("{:?}", self.config.layers));
        if self.config.is_plain_mlp() {
            // No RBM trains: its settings would describe nothing.
            entry(out, "RBM stage", "none (zero RBM layers)");
            return;
        }
        entry(out, "greedy_mean_field", self.config.greedy_mean_field);
        for (name, shown) in setting_entries(&self.config.rbm) {
            // The hidden size of each layer comes from `layers`.
            if name != "n_hidden" {
                entry(out, &name, shown);
            }
        }
    }

    fn render_layer(&self, out: &mut String, index: usize, layer: &LayerLog) {
        let rbm = layer.rbm;
        let _ = writeln!(
            out,
            "\nLAYER {} of {}: {} visible ({}) -> {} hidden",
            index + 1,
            self.config.layers.len(),
            rbm.n_visible,
            units_name(rbm.visible_units),
            rbm.n_hidden
        );
        let best = layer.trial_errors.get(layer.best_trial).copied().unwrap_or(f64::NAN);
        entry(out, "Initialisation", format!("{} random trial(s); best is trial {}, error {best:.6}", layer.trial_errors.len(), layer.best_trial + 1));
        let trials: Vec<String> = layer.trial_errors.iter().take(20).map(|e| format!("{e:.6}")).collect();
        let more = layer.trial_errors.len().saturating_sub(20);
        entry(out, "Trial errors", format!("{}{}", trials.join(" "), if more > 0 { format!(" (and {more} more)") } else { String::new() }));
        entry(out, "Reconstruction error", format!("{:.6} at initialisation, {:.6} after training", layer.init_error, layer.final_error));
        entry(out, "", format!("(mean field, mean squared error per input over {} cases)", layer.measured_cases));
        // An empty f64 sum is −0.0, which would print as "-0.00 s".
        let seconds: f64 = layer.epochs.iter().map(|e| e.seconds).sum::<f64>() + 0.0;
        entry(out, "Epochs", format!("{} in {seconds:.2} s", layer.epochs.len()));
        entry(out, "Stopped", stop_description(layer.stop, self.config));

        let _ = writeln!(
            out,
            "\n  {:>6}  {:>3}  {:>12}  {:>10}  {:>9}  {:>11}  {:>8}",
            "Epoch", "k", "Recon error", "Learn rate", "Momentum", "Incr ratio", "Seconds"
        );
        for e in &layer.epochs {
            let _ = writeln!(
                out,
                "  {:>6}  {:>3}  {:>12.6}  {:>10.6}  {:>9.4}  {:>11.3e}  {:>8.2}",
                e.epoch, e.cd_k, e.reconstruction_error, e.learning_rate, e.momentum, e.increment_ratio, e.seconds
            );
        }
        render_weights_summary(out, layer);
    }
}

/// `(name, value)` for each field of a settings struct that serialises to a JSON object, for
/// the PARAMETERS sections; f64 numbers print as f32, since the settings are f32 and should
/// show as written, not widened.
pub fn setting_entries(settings: &impl serde::Serialize) -> Vec<(String, String)> {
    let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(settings) else {
        return Vec::new();
    };
    fields
        .into_iter()
        .map(|(name, value)| {
            let shown = match value {
                serde_json::Value::Null => "none".to_string(),
                serde_json::Value::String(s) => s,
                serde_json::Value::Number(n) if n.is_f64() => (n.as_f64().unwrap_or(f64::NAN) as f32).to_string(),
                other => other.to_string(),
            };
            (name, shown)
        })
        .collect()
}

/// Masters' unsupervised weights summary, transposed to fit any layer size: hidden units as
/// columns in blocks, one row per figure.
fn render_weights_summary(out: &mut String, layer: &LayerLog) {
    let rbm = layer.rbm;
    let nh = rbm.n_hidden;
    let _ = writeln!(out, "\n  Unsupervised weights (hidden units sorted by descending sum |w|;");
    let _ = writeln!(out, "  Q = activation probability over {} training cases)", layer.measured_cases);
    let column = |j: usize| (0..rbm.n_visible).map(move |i| rbm.weights[i * nh + j]);
    type Row<'r> = (&'static str, Box<dyn Fn(usize) -> f64 + 'r>);
    let rows: [Row; 6] = [
        ("Q-mean", Box::new(|j| layer.activity.get(j).map_or(f64::NAN, |a| a.q_mean))),
        ("Q-sd", Box::new(|j| layer.activity.get(j).map_or(f64::NAN, |a| a.q_sd))),
        ("Skewness", Box::new(|j| layer.activity.get(j).map_or(f64::NAN, |a| a.skewness))),
        ("Bias", Box::new(|j| rbm.hidden_bias[j] as f64)),
        ("Sum |w|", Box::new(move |j| column(j).map(|w| w.abs() as f64).sum())),
        ("Max |w|", Box::new(move |j| column(j).fold(0.0f32, |m, w| m.max(w.abs())) as f64)),
    ];
    for start in (0..nh).step_by(UNITS_PER_BLOCK) {
        let units = start..(start + UNITS_PER_BLOCK).min(nh);
        let _ = write!(out, "\n  {:<9}", "Hidden");
        for j in units.clone() {
            let _ = write!(out, "{:>11}", j + 1);
        }
        let _ = writeln!(out);
        for (name, value) in &rows {
            let _ = write!(out, "  {name:<9}");
            for j in units.clone() {
                let _ = write!(out, "{:>11.5}", value(j));
            }
            let _ = writeln!(out);
        }
    }
}
