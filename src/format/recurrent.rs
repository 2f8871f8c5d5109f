//! `recurrent.json`, format `deepbelief-recurrent/1` (docs/RECURRENT.md): a recurrent net's
//! graph and weights, the task and trainer that trained it, the steps trained so far (where
//! the task stream continues), the progress record and the last held-out evaluation.
//!
//! Written one top-level field per line, so a parse error's line names the damaged field.
//! Reading checks every field: unknown or missing fields, the format name, the graph (as
//! `GraphSpec::validate`), the parameters' count and finiteness, the task's inputs and outputs
//! against the graph's first and last layers, finite figures. The sensitivity tensors are not
//! saved (they are `O(n⁴)`): a continued run starts them, and the activations, at zero, as at
//! the start of a sequence.

use crate::recurrent::train::{Progress, TrainerSpec};
use crate::recurrent::{GraphSpec, Network, TaskSpec};
use serde::{Deserialize, Serialize};

pub const FORMAT: &str = "deepbelief-recurrent/1";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedRecurrent {
    pub format: String,
    pub graph: GraphSpec,
    /// The preset the graph came from, when it did (for people; not read back).
    pub preset: Option<String>,
    pub task: TaskSpec,
    pub trainer: TrainerSpec,
    pub rate: f32,
    pub init_scale: f32,
    pub seed: u64,
    /// Steps trained so far: the task stream's position.
    pub steps: u64,
    pub history: Vec<Progress>,
    pub evaluation: Option<Evaluation>,
    /// Seconds of training, all runs together.
    pub seconds: f64,
    /// Every parameter block in `GraphSpec::blocks` order, each row-major (destination unit
    /// as the row).
    pub params: Vec<f32>,
}

/// A held-out evaluation (`recurrent::evaluate`): no learning, from a zero state.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evaluation {
    pub steps: u64,
    pub mean_error: f64,
    pub accuracy: f64,
    pub bit_accuracy: f64,
}

impl SavedRecurrent {
    /// The net, checked.
    pub fn network(&self) -> Result<Network, String> {
        Network::new(self.graph.clone(), self.params.clone()).map_err(|e| e.to_string())
    }
}

/// The file's text; an error names a field that holds a NaN or an infinity.
pub fn to_json(saved: &SavedRecurrent) -> Result<String, String> {
    check(saved)?;
    let line = |name: &str, value: String| format!("\"{name}\":{value}");
    let fields = [
        line("format", compact(&saved.format)),
        line("graph", compact(&saved.graph)),
        line("preset", compact(&saved.preset)),
        line("task", compact(&saved.task)),
        line("trainer", compact(&saved.trainer)),
        line("rate", compact(&saved.rate)),
        line("init_scale", compact(&saved.init_scale)),
        line("seed", compact(&saved.seed)),
        line("steps", compact(&saved.steps)),
        line("history", compact(&saved.history)),
        line("evaluation", compact(&saved.evaluation)),
        line("seconds", compact(&saved.seconds)),
        line("params", compact(&saved.params)),
    ];
    Ok(format!("{{\n{}\n}}\n", fields.join(",\n")))
}

/// Reads the file's text; `source` names it in errors.
pub fn from_json(source: &str, text: &str) -> Result<SavedRecurrent, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("{source}: not a readable JSON file ({e})"))?;
    match value.get("format").and_then(|f| f.as_str()) {
        Some(FORMAT) => {}
        Some(other) => return Err(format!("{source}: format is {other:?}; expected {FORMAT:?}")),
        None => return Err(format!("{source}: no string field \"format\"; expected {FORMAT:?}")),
    }
    let saved: SavedRecurrent = serde_json::from_value(value).map_err(|e| format!("{source}: {e}"))?;
    check(&saved).map_err(|e| format!("{source}: {e}"))?;
    Ok(saved)
}

#[cfg(not(target_arch = "wasm32"))]
pub fn read(path: &std::path::Path) -> Result<SavedRecurrent, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    from_json(&path.display().to_string(), &text)
}

fn check(saved: &SavedRecurrent) -> Result<(), String> {
    saved.network()?;
    saved.task.validate().map_err(|e| e.to_string())?;
    let (inputs, outputs) = (saved.graph.layers[0], *saved.graph.layers.last().expect("validated"));
    if saved.task.inputs() != inputs || saved.task.outputs() != outputs {
        return Err(format!(
            "task {} has {} inputs and {} outputs; graph.layers has {inputs} inputs and {outputs} outputs",
            saved.task.name(),
            saved.task.inputs(),
            saved.task.outputs()
        ));
    }
    let finite = |name: String, value: f64| if value.is_finite() { Ok(()) } else { Err(format!("{name} is {value}; expected a finite number")) };
    if !(saved.rate > 0.0 && saved.rate.is_finite()) {
        return Err(format!("rate is {}; expected a finite number > 0", saved.rate));
    }
    if !(saved.init_scale > 0.0 && saved.init_scale.is_finite()) {
        return Err(format!("init_scale is {}; expected a finite number > 0", saved.init_scale));
    }
    finite("seconds".into(), saved.seconds)?;
    for (i, p) in saved.history.iter().enumerate() {
        finite(format!("history[{i}].mean_error"), p.mean_error)?;
    }
    if let Some(e) = &saved.evaluation {
        finite("evaluation.mean_error".into(), e.mean_error)?;
    }
    Ok(())
}

fn compact<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("the saved fields serialise")
}
