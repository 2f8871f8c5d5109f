//! `sparse_coding.json`, format `deepbelief-sparse-coding/1` (docs/SPARSE_CODING.md): a learnt
//! basis with the settings that learnt it, the whole set's objective before and after each
//! pass, every mini-batch's record, and where the cases came from.
//!
//! Written one top-level field per line, so a parse error's line names the damaged field.
//! Reading checks every field: unknown or missing fields, the format name, the basis's length
//! against `n_inputs × n_bases`, column norms at most 1, finite numbers.

use crate::sparse_coding::basis::column_norms;
use crate::sparse_coding::fit::{BatchRecord, PassRecord};
use crate::sparse_coding::{Basis, BasisStepSettings, CodeSolver, SparsitySearch, StatisticsRule};
use serde::{Deserialize, Serialize};

pub const FORMAT: &str = "deepbelief-sparse-coding/1";

/// How far a saved column's norm may exceed 1 (rounding of the written decimals).
const NORM_SLACK: f64 = 1e-5;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedSparseCoding {
    pub format: String,
    pub n_inputs: usize,
    pub n_bases: usize,
    /// `[rows, cols]` of a basis vector drawn as an image, when the inputs are images.
    pub tile: Option<[usize; 2]>,
    pub settings: SavedSettings,
    /// Where the cases came from and how they were prepared (for people; not read back).
    pub inputs: serde_json::Value,
    /// The whole set's objective before the first pass (pass 0) and after each pass.
    pub history: Vec<PassRecord>,
    pub batches: Vec<BatchRecord>,
    /// Seconds of the fit (the β search not included).
    pub seconds: f64,
    /// `k × n`, row-major: `basis[i·n + j]` is component `i` of basis vector `j`.
    pub basis: Vec<f32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedSettings {
    pub beta: f64,
    /// The search that chose β, when it came from a target sparsity.
    pub beta_search: Option<SparsitySearch>,
    pub solver: CodeSolver,
    pub basis_step: BasisStepSettings,
    pub batch_size: usize,
    pub passes: usize,
    /// Files written before the field read as the default.
    #[serde(default)]
    pub statistics: StatisticsRule,
    pub seed: u64,
}

impl SavedSparseCoding {
    /// The basis, checked.
    pub fn to_basis(&self) -> Result<Basis, String> {
        Basis::from_values(self.n_inputs, self.n_bases, self.basis.clone()).map_err(|e| e.to_string())
    }
}

/// The file's text; an error names a field that holds a NaN or an infinity (JSON has none).
pub fn to_json(saved: &SavedSparseCoding) -> Result<String, String> {
    check(saved)?;
    let line = |name: &str, value: String| format!("\"{name}\":{value}");
    let fields = [
        line("format", compact(&saved.format)),
        line("n_inputs", compact(&saved.n_inputs)),
        line("n_bases", compact(&saved.n_bases)),
        line("tile", compact(&saved.tile)),
        line("settings", compact(&saved.settings)),
        line("inputs", compact(&saved.inputs)),
        line("history", compact(&saved.history)),
        line("batches", compact(&saved.batches)),
        line("seconds", compact(&saved.seconds)),
        line("basis", compact(&saved.basis)),
    ];
    Ok(format!("{{\n{}\n}}\n", fields.join(",\n")))
}

/// Reads the file's text; `source` names it in errors.
pub fn from_json(source: &str, text: &str) -> Result<SavedSparseCoding, String> {
    // The format first, so a file of another kind is named as such, not by its first unknown field.
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("{source}: not a readable JSON file ({e})"))?;
    match value.get("format").and_then(|f| f.as_str()) {
        Some(FORMAT) => {}
        Some(other) => return Err(format!("{source}: format is {other:?}; expected {FORMAT:?}")),
        None => return Err(format!("{source}: no string field \"format\"; expected {FORMAT:?}")),
    }
    let saved: SavedSparseCoding = serde_json::from_value(value).map_err(|e| format!("{source}: {e}"))?;
    check(&saved).map_err(|e| format!("{source}: {e}"))?;
    Ok(saved)
}

#[cfg(not(target_arch = "wasm32"))]
pub fn read(path: &std::path::Path) -> Result<SavedSparseCoding, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    from_json(&path.display().to_string(), &text)
}

/// Every field's consistency: the basis's shape, finiteness and norms, finite figures.
fn check(saved: &SavedSparseCoding) -> Result<(), String> {
    let (k, n) = (saved.n_inputs, saved.n_bases);
    if k == 0 || n == 0 {
        return Err(format!("n_inputs is {k} and n_bases {n}; expected at least 1 of each"));
    }
    if k.checked_mul(n) != Some(saved.basis.len()) {
        return Err(format!("basis has {} values; expected n_inputs × n_bases = {k} × {n}", saved.basis.len()));
    }
    if let Some(i) = saved.basis.iter().position(|v| !v.is_finite()) {
        return Err(format!("basis[{i}] is {}; expected a finite number", saved.basis[i]));
    }
    if let Some((j, norm)) = column_norms(&saved.basis, n).into_iter().enumerate().find(|(_, norm)| *norm > 1.0 + NORM_SLACK) {
        return Err(format!("basis vector {j} has norm {norm}; expected at most 1"));
    }
    if let Some([rows, cols]) = saved.tile {
        if rows.checked_mul(cols) != Some(k) {
            return Err(format!("tile is {rows} × {cols}; expected n_inputs = {k} pixels"));
        }
    }
    let finite = |name: String, value: f64| if value.is_finite() { Ok(()) } else { Err(format!("{name} is {value}; expected a finite number")) };
    finite("settings.beta".into(), saved.settings.beta)?;
    finite("seconds".into(), saved.seconds)?;
    for (i, pass) in saved.history.iter().enumerate() {
        finite(format!("history[{i}].objective.total"), pass.objective.total)?;
        finite(format!("history[{i}].objective.reconstruction"), pass.objective.reconstruction)?;
    }
    for (i, batch) in saved.batches.iter().enumerate() {
        finite(format!("batches[{i}].objective_after_codes"), batch.objective_after_codes)?;
        finite(format!("batches[{i}].objective_after_basis"), batch.objective_after_basis)?;
        finite(format!("batches[{i}].codes.objective"), batch.codes.objective)?;
    }
    Ok(())
}

/// One field's compact JSON.
fn compact<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("the saved fields serialise")
}
