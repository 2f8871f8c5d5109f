//! The plain MLP's model file (`deepbelief mlp`, issue 21): format `deepbelief-mlp/1`, the
//! net in the supervised section's layer layout (`n_in × n_out` weights, row `i` for input
//! `i`, then the biases; `output` as there), how it was trained and how far. Toman's program
//! resumes from its saved weights; `deepbelief mlp --weights mlp.json` does the same (the
//! rule's rates and memories start afresh, as his do).

use crate::supervised::{Network, Optimizer, StepRuleSettings};
use serde::{Deserialize, Serialize};

pub const FORMAT: &str = "deepbelief-mlp/1";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedMlp {
    pub format: String,
    pub network: Network,
    pub optimizer: Optimizer,
    pub step_rules: StepRuleSettings,
    /// Epochs trained in all, over every resumed run.
    pub epochs: usize,
    /// Toman's RMS/2 on the training cases at the saved weights.
    pub error: f64,
}

/// The file's text (pretty JSON). Refuses non-finite parameters, naming the first.
pub fn to_json(saved: &SavedMlp) -> Result<String, String> {
    check_network(&saved.network)?;
    serde_json::to_string_pretty(saved).map_err(|e| format!("cannot encode the MLP: {e}"))
}

fn check_network(net: &Network) -> Result<(), String> {
    if net.layers.is_empty() {
        return Err("field `network.layers` is empty; expected at least the output layer".into());
    }
    for (k, layer) in net.layers.iter().enumerate() {
        if layer.weights.len() != layer.n_in * layer.n_out {
            return Err(format!("field `network.layers[{k}].weights` has {} values; expected n_in × n_out = {}", layer.weights.len(), layer.n_in * layer.n_out));
        }
        if layer.bias.len() != layer.n_out {
            return Err(format!("field `network.layers[{k}].bias` has {} values; expected n_out = {}", layer.bias.len(), layer.n_out));
        }
        if k > 0 && layer.n_in != net.layers[k - 1].n_out {
            return Err(format!("field `network.layers[{k}].n_in` is {}; expected the layer below's n_out {}", layer.n_in, net.layers[k - 1].n_out));
        }
        if let Some(i) = layer.weights.iter().position(|w| !w.is_finite()) {
            return Err(format!("field `network.layers[{k}].weights[{i}]` is not a finite number"));
        }
        if let Some(i) = layer.bias.iter().position(|w| !w.is_finite()) {
            return Err(format!("field `network.layers[{k}].bias[{i}]` is not a finite number"));
        }
    }
    Ok(())
}

/// Reads a model file's text; `source` names it in errors.
pub fn from_json(source: &str, text: &str) -> Result<SavedMlp, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("{source}: not JSON ({e})"))?;
    match value.get("format").and_then(|f| f.as_str()) {
        Some(FORMAT) => {}
        Some(other) => return Err(format!("{source}: format is {other:?}; expected {FORMAT:?}")),
        None => return Err(format!("{source}: no string field \"format\"; expected {FORMAT:?}")),
    }
    let saved: SavedMlp = serde_json::from_value(value).map_err(|e| format!("{source}: {e}"))?;
    check_network(&saved.network).map_err(|e| format!("{source}: {e}"))?;
    Ok(saved)
}

#[cfg(not(target_arch = "wasm32"))]
pub fn read(path: &std::path::Path) -> Result<SavedMlp, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read the file ({e})", path.display()))?;
    from_json(&path.display().to_string(), &text)
}
