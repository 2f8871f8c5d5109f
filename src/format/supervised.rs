//! The `supervised` section of a saved model (docs/MODEL_FORMAT.md): the supervised layers on
//! top of the DBN, their output type, the names of the outputs, where the targets came from
//! and how training went. Read field by field like the rest of the file, so a damaged
//! section gets an error naming the field.

use super::model_json::foreign;
use crate::data::error::{is_plain, quote, sanitise, QUOTED_CHARS};
use crate::supervised::{Layer, Network, OutputKind, SavedSupervised, SupervisedConfig, TargetSource};
use serde_json::{json, Value};

pub fn to_value(s: &SavedSupervised) -> Value {
    json!({
        "output": s.network.output,
        "layers": s.network.layers,
        "config": s.config,
        "fine_tuned": s.fine_tuned,
        "target_source": s.target_source,
        "target_names": s.target_names,
        "train_criterion": s.train_criterion,
        "train_error": s.train_error,
    })
}

/// Reads the section; `top_size` is the DBN's top layer size, which the first supervised
/// layer must take as inputs.
/// `top_size` is the top RBM's hidden units, the first layer's inputs; `None` for a plain
/// MLP (zero RBM layers), whose first layer's own `n_in` is the model's inputs.
pub fn from_value(value: Value, top_size: Option<usize>) -> Result<SavedSupervised, String> {
    let path = "supervised";
    let Value::Object(mut map) = value else {
        return Err(format!("field `{path}` is not an object"));
    };
    let mut take = |name: &str| map.remove(name).ok_or_else(|| format!("field `{path}.{name}` is missing"));
    let output: OutputKind = serde_json::from_value(take("output")?).map_err(|_| format!("field `{path}.output` is not \"linear\", \"soft_max\" or \"logistic\""))?;
    let layers_value = take("layers")?;
    let config: SupervisedConfig = serde_json::from_value(take("config")?).map_err(|e| format!("field `{path}.config`: {}", foreign(e)))?;
    let fine_tuned = take("fine_tuned")?.as_bool().ok_or_else(|| format!("field `{path}.fine_tuned` is not a boolean"))?;
    let target_source: TargetSource =
        serde_json::from_value(take("target_source")?).map_err(|_| format!("field `{path}.target_source` is not \"labels\" or \"database\""))?;
    let target_names: Vec<String> = serde_json::from_value(take("target_names")?).map_err(|_| format!("field `{path}.target_names` is not an array of strings"))?;
    let train_criterion = finite(take("train_criterion")?, "train_criterion")?;
    let train_error = match take("train_error")? {
        Value::Null => None,
        value => Some(finite(value, "train_error")?),
    };
    if let Some(unknown) = map.keys().next() {
        return Err(format!("unknown field `{path}.{}`", sanitise(unknown, QUOTED_CHARS)));
    }
    // The names are printed in reports and on the terminal.
    if let Some((i, name)) = target_names.iter().enumerate().find(|(_, name)| name.is_empty() || !is_plain(name)) {
        return Err(format!("field `{path}.target_names[{i}]` is {}, expected a name of 1 to {QUOTED_CHARS} printable characters", quote(name)));
    }
    let Value::Array(items) = layers_value else {
        return Err(format!("field `{path}.layers` is not an array of layers"));
    };
    if items.is_empty() {
        return Err(format!("field `{path}.layers` is empty, expected at least the output layer"));
    }
    let mut layers = Vec::with_capacity(items.len());
    let mut n_in = top_size;
    for (i, item) in items.into_iter().enumerate() {
        let layer = layer(item, &format!("{path}.layers[{i}]"), n_in)?;
        n_in = Some(layer.n_out);
        layers.push(layer);
    }
    let n_in = n_in.expect("at least the output layer");
    if target_names.len() != n_in {
        return Err(format!("field `{path}.target_names` has {} names, but the output layer has {n_in} units", target_names.len()));
    }
    config.validate().map_err(|e| format!("field `{path}.config.{}`: {}", e.field, e.message))?;
    Ok(SavedSupervised { network: Network { layers, output }, config, fine_tuned, target_source, target_names, train_criterion, train_error })
}

fn finite(value: Value, name: &str) -> Result<f64, String> {
    value.as_f64().filter(|x| x.is_finite()).ok_or_else(|| format!("field `supervised.{name}` is not a finite number"))
}

fn layer(value: Value, path: &str, n_in_expected: Option<usize>) -> Result<Layer, String> {
    let Value::Object(mut map) = value else {
        return Err(format!("field `{path}` is not an object"));
    };
    let mut count = |name: &str| {
        map.remove(name).and_then(|v| v.as_u64()).and_then(|n| usize::try_from(n).ok()).ok_or_else(|| format!("field `{path}.{name}` is missing or not a whole number"))
    };
    let (n_in, n_out) = (count("n_in")?, count("n_out")?);
    let mut numbers = |name: &str| -> Result<Vec<f32>, String> {
        let Some(Value::Array(items)) = map.remove(name) else {
            return Err(format!("field `{path}.{name}` is missing or not an array of numbers"));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, x)| x.as_f64().map(|x| x as f32).filter(|x| x.is_finite()).ok_or_else(|| format!("field `{path}.{name}[{i}]` is not a finite number")))
            .collect()
    };
    let weights = numbers("weights")?;
    let bias = numbers("bias")?;
    if let Some(unknown) = map.keys().next() {
        return Err(format!("unknown field `{path}.{}`", sanitise(unknown, QUOTED_CHARS)));
    }
    let n_in_expected = n_in_expected.unwrap_or(n_in);
    if n_in != n_in_expected || n_in == 0 {
        return Err(format!("field `{path}.n_in` is {n_in}, expected {n_in_expected} (the size of the layer below)"));
    }
    // Sizes come from the file: their product must not wrap around to a small number.
    let n_weights = n_in.checked_mul(n_out).ok_or_else(|| format!("field `{path}` has {n_in} inputs and {n_out} outputs, too many to hold (n_in × n_out overflows)"))?;
    if n_out == 0 || weights.len() != n_weights || bias.len() != n_out {
        return Err(format!(
            "field `{path}` has {} weights and {} biases, expected {n_weights} (n_in {n_in} × n_out {n_out}) and {n_out}",
            weights.len(),
            bias.len(),
        ));
    }
    Ok(Layer { n_in, n_out, weights, bias })
}
