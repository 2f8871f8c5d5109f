//! Classification results as Masters' DEEP reports them — a confusion matrix (counts, row %
//! and total %), the misclassification rate and per-class errors — plus the predictions file
//! and the activation file (one line per case for a chosen section, layer and neuron).
//!
//! Indices are 0-based everywhere: classes, cases, layers and neurons.

use crate::supervised::confusion::{default_class_names, predictions, ConfusionMatrix};
use std::fmt::Write as _;
use std::io;

/// Widest class name shown in the tables; longer names are cut so the columns stay fixed.
const NAME_WIDTH: usize = 10;

// The matrix is computed where the supervised figures are (`supervised::confusion`); its
// printed form is a report's.
impl ConfusionMatrix {
    /// Fixed-width text: counts with totals, row percentages (each true class sums to 100),
    /// percentages of all cases, then the misclassification rate and per-class errors.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let n = self.n_cases();
        let _ = writeln!(out, "CONFUSION MATRIX ({n} cases; rows are true classes, columns predicted classes)");
        let row_totals: Vec<usize> = self.counts().iter().map(|r| r.iter().sum()).collect();

        let _ = writeln!(out, "\n  Counts");
        self.render_header(&mut out, true);
        for (c, row) in self.counts().iter().enumerate() {
            let cells: Vec<String> = row.iter().map(|v| v.to_string()).collect();
            self.render_row(&mut out, &self.short_name(c), &cells, Some(row_totals[c].to_string()));
        }
        let column_totals: Vec<String> = (0..self.n_classes()).map(|p| self.counts().iter().map(|r| r[p]).sum::<usize>().to_string()).collect();
        self.render_row(&mut out, "Total", &column_totals, Some(n.to_string()));

        let percent = |count: usize, of: usize| if of == 0 { "-".to_string() } else { format!("{:.2}", 100.0 * count as f64 / of as f64) };
        let _ = writeln!(out, "\n  Row percent (of each true class)");
        self.render_header(&mut out, false);
        for (c, row) in self.counts().iter().enumerate() {
            let cells: Vec<String> = row.iter().map(|&v| percent(v, row_totals[c])).collect();
            self.render_row(&mut out, &self.short_name(c), &cells, None);
        }

        let _ = writeln!(out, "\n  Total percent (of all cases)");
        self.render_header(&mut out, false);
        for (c, row) in self.counts().iter().enumerate() {
            let cells: Vec<String> = row.iter().map(|&v| percent(v, n)).collect();
            self.render_row(&mut out, &self.short_name(c), &cells, None);
        }

        let _ = writeln!(out, "\n  Misclassification: {:.2}% ({} of {n} cases)", 100.0 * self.error_fraction(), n - self.n_correct());
        let _ = writeln!(out, "\n  {:<w$}  {:>9}  {:>9}  {:>9}", "Class", "Cases", "Errors", "Error %", w = NAME_WIDTH);
        for (c, error) in self.per_class_error().into_iter().enumerate() {
            let shown = if error.is_nan() { "-".to_string() } else { format!("{:.2}", 100.0 * error) };
            let errors = row_totals[c] - self.counts()[c][c];
            let _ = writeln!(out, "  {:<w$}  {:>9}  {:>9}  {:>9}", self.short_name(c), row_totals[c], errors, shown, w = NAME_WIDTH);
        }
        out
    }

    fn short_name(&self, class: usize) -> String {
        self.class_names()[class].chars().take(NAME_WIDTH).collect()
    }

    fn render_header(&self, out: &mut String, with_total: bool) {
        let _ = write!(out, "  {:<w$}", "True \\ Pred", w = NAME_WIDTH + 1);
        for c in 0..self.n_classes() {
            let _ = write!(out, " {:>w$}", self.short_name(c), w = NAME_WIDTH);
        }
        if with_total {
            let _ = write!(out, " {:>w$}", "Total", w = NAME_WIDTH);
        }
        let _ = writeln!(out);
    }

    fn render_row(&self, out: &mut String, name: &str, cells: &[String], total: Option<String>) {
        let _ = write!(out, "  {:<w$}", name, w = NAME_WIDTH + 1);
        for cell in cells.iter().chain(total.as_ref()) {
            let _ = write!(out, " {:>w$}", cell, w = NAME_WIDTH);
        }
        let _ = writeln!(out);
    }
}

/// The predictions file: a header naming the columns, then per case its index, true class,
/// predicted class and the `n_classes` outputs (full f32 precision, so it reads back exactly).
pub fn write_predictions(out: &mut impl io::Write, outputs: &[f32], true_classes: &[usize], n_classes: usize, class_names: &[String]) -> io::Result<()> {
    let predicted = predictions(outputs, n_classes);
    assert_eq!(predicted.len(), true_classes.len(), "one true class per case");
    let names = if class_names.is_empty() { default_class_names(n_classes) } else { class_names.to_vec() };
    assert_eq!(names.len(), n_classes, "one name per class");
    let columns: Vec<String> = names.iter().map(|name| name.replace(char::is_whitespace, "_")).collect();
    writeln!(out, "case true predicted {}", columns.join(" "))?;
    for (case, (row, (&t, &p))) in outputs.chunks_exact(n_classes).zip(true_classes.iter().zip(&predicted)).enumerate() {
        write!(out, "{case} {t} {p}")?;
        for value in row {
            write!(out, " {value}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Which part of the model an activation file shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// Hidden layers of the RBM stack; layer k is the hidden layer of RBM k.
    Unsupervised,
    /// Hidden layers of the supervised net above the stack.
    Supervised,
    /// The output layer (its only layer is 0).
    Output,
}

/// `SECTION:LAYER[:NEURON]`, e.g. `unsupervised:1:5`, `supervised:1`, `output:1` or just
/// `output`; without a neuron the file holds every neuron of the layer. In the text, layers
/// and neurons are numbered from 1 as in Masters' DEEP; the fields hold 0-based indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActivationSelection {
    pub section: Section,
    /// 0-based index of the layer within its section.
    pub layer: usize,
    /// 0-based index of the neuron, or every neuron of the layer.
    pub neuron: Option<usize>,
}

const SELECTION_FORM: &str = "SECTION:LAYER[:NEURON] with SECTION unsupervised, supervised or output and layers and neurons numbered from 1, e.g. unsupervised:1:5 or output:1";

impl std::str::FromStr for ActivationSelection {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.trim().split(':').map(str::trim).collect();
        let section = match parts[0].to_ascii_lowercase().as_str() {
            "unsupervised" => Section::Unsupervised,
            "supervised" => Section::Supervised,
            "output" => Section::Output,
            other => return Err(format!("activation selection '{text}': unknown section '{other}'; expected {SELECTION_FORM}")),
        };
        if parts.len() > 3 {
            return Err(format!("activation selection '{text}': too many parts; expected {SELECTION_FORM}"));
        }
        if parts.len() == 1 && section != Section::Output {
            return Err(format!("activation selection '{text}': the layer is missing; expected {SELECTION_FORM}"));
        }
        // Numbered from 1 in the text; 0-based indices from here on.
        let index = |part: usize, what: &str| -> Result<Option<usize>, String> {
            parts
                .get(part)
                .map(|p| match p.parse::<usize>() {
                    Ok(number) if number >= 1 => Ok(number - 1),
                    _ => Err(format!("activation selection '{text}': {what} '{p}' is not a whole number ≥ 1 (numbered from 1 as in DEEP); expected {SELECTION_FORM}")),
                })
                .transpose()
        };
        let layer = index(1, "layer")?.unwrap_or(0);
        let neuron = index(2, "neuron")?;
        if section == Section::Output && layer != 0 {
            return Err(format!("activation selection '{text}': the output section has one layer, 1; expected output:1[:NEURON]"));
        }
        Ok(ActivationSelection { section, layer, neuron })
    }
}

impl std::fmt::Display for ActivationSelection {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let section = match self.section {
            Section::Unsupervised => "unsupervised",
            Section::Supervised => "supervised",
            Section::Output => "output",
        };
        write!(f, "{section}:{}", self.layer + 1)?;
        match self.neuron {
            Some(neuron) => write!(f, ":{}", neuron + 1),
            None => Ok(()),
        }
    }
}

impl ActivationSelection {
    /// Checks the selection against the model's layer sizes and returns the width of the
    /// chosen layer (its neuron count), so the caller knows how to slice the activations.
    pub fn layer_width(&self, unsupervised: &[usize], supervised: &[usize], n_outputs: usize) -> Result<usize, String> {
        let (name, sizes) = match self.section {
            Section::Unsupervised => ("unsupervised", unsupervised),
            Section::Supervised => ("supervised", supervised),
            Section::Output => ("output", std::slice::from_ref(&n_outputs)),
        };
        let Some(&width) = sizes.get(self.layer) else {
            return Err(format!("activation selection {self}: the {name} section has {} layer(s), numbered from 1", sizes.len()));
        };
        if let Some(neuron) = self.neuron {
            if neuron >= width {
                return Err(format!("activation selection {self}: layer {} of the {name} section has {width} neurons, numbered from 1", self.layer + 1));
            }
        }
        Ok(width)
    }
}

/// The activation file: `header` as the first line (when not empty), then one line per case
/// with that case's activation of `neuron`, or of every neuron of the layer when `None`.
/// `activations` is `n_cases × width`, row-major; values keep full f32 precision.
pub fn write_activations(out: &mut impl io::Write, activations: &[f32], n_cases: usize, width: usize, neuron: Option<usize>, header: &str) -> io::Result<()> {
    assert_eq!(activations.len(), n_cases * width, "activations must be n_cases × width");
    if let Some(neuron) = neuron {
        assert!(neuron < width, "neuron {neuron} out of range (layer of {width})");
    }
    if !header.is_empty() {
        writeln!(out, "{header}")?;
    }
    for row in activations.chunks_exact(width.max(1)).take(n_cases) {
        match neuron {
            Some(neuron) => writeln!(out, "{}", row[neuron])?,
            None => {
                let values: Vec<String> = row.iter().map(f32::to_string).collect();
                writeln!(out, "{}", values.join(" "))?;
            }
        }
    }
    Ok(())
}
