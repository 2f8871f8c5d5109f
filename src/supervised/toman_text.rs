//! Toman's plain-text data set format (*Hardware accelerated neural networks*, §6.1,
//! "Výpis 4: Dataset format"): `#` lines are comments; then the number of inputs, one
//! `<name> <min> <max>` line per input, the number of outputs, one such line per output,
//! the number of patterns, and one line per pattern, its inputs, `|`, its outputs:
//!
//! ```text
//! #Number of inputs
//! 2
//! #inputs description <name> <min> <max>
//! x1 0.0 1.0
//! x2 0.0 1.0
//! #Number of outputs
//! 1
//! #outputs description <name> <min> <max>
//! out 0.0 1.0
//! #Number of patterns
//! 4
//! #Patterns <inputs> | <outputs>
//! 0.0 1.0 | 1.0
//! ```
//!
//! Values are used as written (the ranges are kept, not applied). Every error names the
//! line (from 1) and the field, and says what was expected.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct Variable {
    pub name: String,
    pub min: f64,
    pub max: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TomanData {
    pub inputs_described: Vec<Variable>,
    pub outputs_described: Vec<Variable>,
    /// `patterns × inputs`, row-major.
    pub inputs: Vec<f32>,
    /// `patterns × outputs`, row-major.
    pub targets: Vec<f32>,
}

impl TomanData {
    pub fn n_inputs(&self) -> usize {
        self.inputs_described.len()
    }
    pub fn n_outputs(&self) -> usize {
        self.outputs_described.len()
    }
    pub fn n_patterns(&self) -> usize {
        self.inputs.len() / self.n_inputs().max(1)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TomanTextError {
    /// 1-based; 0 when the file ended early.
    pub line: usize,
    pub field: String,
    pub message: String,
}

impl fmt::Display for TomanTextError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.line == 0 {
            write!(f, "at the end of the file, {}: {}", self.field, self.message)
        } else {
            write!(f, "line {}, {}: {}", self.line, self.field, self.message)
        }
    }
}

impl std::error::Error for TomanTextError {}

/// Most inputs, outputs or patterns a header may declare (a lying header cannot make the
/// reader allocate without bound: patterns are read before they are stored).
const MAX_COUNT: usize = 100_000_000;

fn error(line: usize, field: impl Into<String>, message: impl Into<String>) -> TomanTextError {
    TomanTextError { line, field: field.into(), message: message.into() }
}

fn shown(text: &str) -> String {
    let short: String = text.chars().take(40).collect();
    format!("\"{short}\"{}", if text.chars().count() > 40 { "…" } else { "" })
}

fn number(line: usize, field: &str, text: &str) -> Result<f64, TomanTextError> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(error(line, field, format!("expected a finite number, got {}", shown(text)))),
    }
}

fn count(line: usize, field: &str, text: &str, least: usize) -> Result<usize, TomanTextError> {
    match text.trim().parse::<usize>() {
        Ok(n) if (least..=MAX_COUNT).contains(&n) => Ok(n),
        _ => Err(error(line, field, format!("expected a whole number from {least} to {MAX_COUNT}, got {}", shown(text.trim())))),
    }
}

/// The meaningful lines (not blank, not `#`), with their 1-based numbers.
struct Lines<'a> {
    lines: Box<dyn Iterator<Item = (usize, &'a str)> + 'a>,
}

impl<'a> Lines<'a> {
    fn next(&mut self, field: &str) -> Result<(usize, &'a str), TomanTextError> {
        self.lines.next().ok_or_else(|| error(0, field, "the file ended; expected more lines"))
    }

    fn describe(&mut self, kind: &str) -> Result<Vec<Variable>, TomanTextError> {
        let count_field = format!("number of {kind}s");
        let (line, text) = self.next(&count_field)?;
        let n = count(line, &count_field, text, 1)?;
        let mut variables = Vec::with_capacity(n.min(4096));
        for k in 1..=n {
            let field = format!("{kind} {k} description");
            let (line, text) = self.next(&field)?;
            let parts: Vec<&str> = text.split_whitespace().collect();
            if parts.len() != 3 {
                return Err(error(line, field, format!("expected <name> <min> <max>, got {} fields", parts.len())));
            }
            let min = number(line, &format!("{kind} {k} min"), parts[1])?;
            let max = number(line, &format!("{kind} {k} max"), parts[2])?;
            if min > max {
                return Err(error(line, format!("{kind} {k} max"), format!("expected at least the min {min}, got {max}")));
            }
            variables.push(Variable { name: parts[0].to_string(), min, max });
        }
        Ok(variables)
    }
}

/// Parses a data set in Toman's format.
pub fn parse_toman_text(text: &str) -> Result<TomanData, TomanTextError> {
    let mut lines = Lines { lines: Box::new(text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))) };
    let inputs_described = lines.describe("input")?;
    let outputs_described = lines.describe("output")?;
    let (line, text) = lines.next("number of patterns")?;
    let n_patterns = count(line, "number of patterns", text, 1)?;
    let (n_in, n_out) = (inputs_described.len(), outputs_described.len());
    let mut inputs = Vec::new();
    let mut targets = Vec::new();
    for p in 1..=n_patterns {
        let (line, text) = lines.next(&format!("pattern {p}"))?;
        let Some((left, right)) = text.split_once('|') else {
            return Err(error(line, format!("pattern {p}"), "expected <inputs> | <outputs> (no \"|\")"));
        };
        for (side, values, width, out) in [("input", left, n_in, &mut inputs), ("output", right, n_out, &mut targets)] {
            let parts: Vec<&str> = values.split_whitespace().collect();
            if parts.len() != width {
                return Err(error(line, format!("pattern {p} {side}s"), format!("expected {width} values, got {}", parts.len())));
            }
            for (k, part) in parts.iter().enumerate() {
                out.push(number(line, &format!("pattern {p} {side} {}", k + 1), part)? as f32);
            }
        }
    }
    if let Ok((line, text)) = lines.next("") {
        return Err(error(line, "after the last pattern", format!("expected the end of the file ({n_patterns} patterns declared), got {}", shown(text))));
    }
    Ok(TomanData { inputs_described, outputs_described, inputs, targets })
}

/// Writes a data set in Toman's format (values with Rust's shortest round-trip digits, so
/// `parse_toman_text` reads back the same `f32`s).
pub fn to_toman_text(data: &TomanData) -> String {
    let mut out = String::from("#Training set\n#Number of inputs\n");
    let describe = |out: &mut String, variables: &[Variable]| {
        for v in variables {
            out.push_str(&format!("{} {:?} {:?}\n", v.name, v.min, v.max));
        }
    };
    out.push_str(&format!("{}\n#inputs description <name> <min> <max>\n", data.n_inputs()));
    describe(&mut out, &data.inputs_described);
    out.push_str(&format!("#Number of outputs\n{}\n#outputs description <name> <min> <max>\n", data.n_outputs()));
    describe(&mut out, &data.outputs_described);
    out.push_str(&format!("#Number of patterns\n{}\n#Patterns <inputs> | <outputs>\n", data.n_patterns()));
    for (x, t) in data.inputs.chunks(data.n_inputs().max(1)).zip(data.targets.chunks(data.n_outputs().max(1))) {
        let join = |v: &[f32]| v.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(" ");
        out.push_str(&format!("{} | {}\n", join(x), join(t)));
    }
    out
}
