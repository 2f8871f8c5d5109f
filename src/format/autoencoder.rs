//! The saved stack of sparse autoencoders (docs/MODEL_FORMAT.md, "deepbelief-autoencoder"):
//! versioned JSON holding every layer's W₁ b₁ W₂ b₂ with its settings and training record,
//! how the inputs were preprocessed, what each stage trained on, and the optional supervised
//! layers (the `supervised` section of `model_json`, read by `format::supervised`).
//!
//! Version 2 (`"format": "deepbelief-autoencoder/2"`) is written; version 1 (one autoencoder,
//! the first `deepbelief autoencoder`'s `autoencoder.json`) is read as a one-layer stack.
//! Reading checks every field, size and number (NaN and infinities are refused, lengths must
//! match the stated shapes, sizes may not overflow), with errors naming the file and the
//! field; nothing is allocated beyond what the parsed text holds.

use serde_json::{json, Map, Value};

use super::model_json::ModelFileError;
use super::supervised as supervised_section;
use crate::autoencoder::stack::{ActivationSummary, AutoencoderStack, CostTerms, LayerRecord, LayerSettings, MethodName, StackLayer};
use crate::autoencoder::{Autoencoder, CostSettings};
use crate::data::error::{quote, sanitise, FOREIGN_MESSAGE_CHARS, QUOTED_CHARS};
use crate::supervised::SavedSupervised;

pub const FORMAT: &str = "deepbelief-autoencoder/2";
/// One autoencoder (`autoencoder.json` of the first CLI), still readable.
pub const FORMAT_V1: &str = "deepbelief-autoencoder/1";
/// The prefix every version's format name starts with.
pub const FORMAT_FAMILY: &str = "deepbelief-autoencoder/";
/// The longest file name or stop reason a model file may hold.
const MAX_NAME_CHARS: usize = 4096;

/// How raw data became the first layer's inputs.
#[derive(Clone, Debug, PartialEq)]
pub enum InputPreprocessing {
    /// Whole images (IDX, e.g. MNIST), each byte / 255, so inputs are in [0, 1].
    UnitPixels { image_shape: Option<(usize, usize)> },
    /// Square patches sampled from grey images (UFLDL's `sampleIMAGES`): ZCA-whitened first
    /// when `zca`, then each patch's mean removed, clipped at ±`clip` (3σ of all patches) and
    /// mapped to [0.1, 0.9] (`normalizeData`); `range` is the inputs' smallest and largest value.
    Patches { side: usize, clip: f64, zca: bool, range: Option<[f64; 2]> },
}

impl InputPreprocessing {
    /// The tile shape of a first-layer filter.
    pub fn image_shape(&self) -> Option<(usize, usize)> {
        match self {
            InputPreprocessing::UnitPixels { image_shape } => *image_shape,
            InputPreprocessing::Patches { side, .. } => Some((*side, *side)),
        }
    }
}

/// The data one stage trained on.
#[derive(Clone, Debug, PartialEq)]
pub struct DataRecord {
    pub files: Vec<String>,
    pub cases: usize,
    /// The label classes kept (a self-taught run's subsets); `None`: every case of the files.
    pub classes: Option<Vec<u32>>,
}

/// A trained stack of sparse autoencoders with what is needed to use it on new data.
#[derive(Clone, Debug, PartialEq)]
pub struct SavedAutoencoder {
    pub preprocessing: InputPreprocessing,
    /// What the autoencoders trained on.
    pub pretraining_data: DataRecord,
    pub stack: AutoencoderStack,
    /// What the supervised layers trained on; present exactly when they are.
    pub supervised_data: Option<DataRecord>,
    pub supervised: Option<SavedSupervised>,
}

// ---------------------------------------------------------------- writing

fn compact(value: &Value) -> String {
    serde_json::to_string(value).expect("JSON values always serialise")
}

fn settings_value(s: &LayerSettings) -> Value {
    json!({ "rho": s.cost.sparsity_target, "lambda": s.cost.weight_decay, "beta": s.cost.sparsity_weight, "method": s.method.name(), "iterations": s.iterations, "seed": s.seed })
}

/// A measured figure to 15 significant digits: serde_json reads a decimal of up to 15 digits
/// exactly but may miss a 17-digit one by an ulp, so a file read and written again would
/// change (as `model_json` writes its figures).
fn readable(x: f64) -> f64 {
    if x.is_finite() {
        format!("{x:.14e}").parse().expect("a formatted float parses")
    } else {
        x
    }
}

fn terms_value(t: &CostTerms) -> Value {
    json!({ "J": readable(t.total), "reconstruction": readable(t.reconstruction), "weight_decay": readable(t.weight_decay), "sparsity": readable(t.sparsity) })
}

fn record_value(r: &LayerRecord) -> Value {
    let a = &r.mean_activation;
    json!({
        "cases": r.cases, "initial": terms_value(&r.initial), "final": terms_value(&r.last), "iterations": r.iterations, "evaluations": r.evaluations,
        "stop": r.stop, "history": r.history.iter().map(|&x| readable(x)).collect::<Vec<f64>>(),
        "mean_activation": { "mean": readable(a.mean), "min": a.min, "max": a.max },
        "seconds": readable(r.seconds), "backend": r.backend,
    })
}

fn layer_value(layer: &StackLayer) -> Value {
    let a = &layer.autoencoder;
    json!({
        "n_visible": a.n_visible, "n_hidden": a.n_hidden, "settings": settings_value(&layer.settings),
        "training": layer.record.as_ref().map(record_value),
        "W1": a.w1, "b1": a.b1, "W2": a.w2, "b2": a.b2,
    })
}

fn preprocessing_value(p: &InputPreprocessing) -> Value {
    match p {
        InputPreprocessing::UnitPixels { image_shape } => json!({ "preprocessing": "unit_pixels", "image_shape": image_shape.map(|(r, c)| [r, c]) }),
        InputPreprocessing::Patches { side, clip, zca, range } => json!({ "preprocessing": "patches", "side": side, "clip": readable(*clip), "zca": zca, "range": range.map(|r| r.map(readable)) }),
    }
}

fn data_value(d: &DataRecord) -> Value {
    json!({ "files": d.files, "cases": d.cases, "classes": d.classes })
}

/// The model as version-2 JSON: one top-level field per line and one layer per line, so a
/// parse error's line number points at the damaged part.
pub fn to_json(model: &SavedAutoencoder) -> String {
    let layers: Vec<String> = model.stack.layers.iter().map(|l| format!("    {}", compact(&layer_value(l)))).collect();
    let fields = [
        ("format", compact(&json!(FORMAT))),
        ("inputs", compact(&preprocessing_value(&model.preprocessing))),
        ("pretraining_data", compact(&data_value(&model.pretraining_data))),
        ("layers", format!("[\n{}\n  ]", layers.join(",\n"))),
        ("supervised_data", compact(&model.supervised_data.as_ref().map_or(Value::Null, data_value))),
        ("supervised", compact(&model.supervised.as_ref().map_or(Value::Null, |s| {
            supervised_section::to_value(&SavedSupervised { train_criterion: readable(s.train_criterion), train_error: s.train_error.map(readable), ..s.clone() })
        }))),
    ];
    let body: Vec<String> = fields.iter().map(|(name, value)| format!("  \"{name}\": {value}")).collect();
    format!("{{\n{}\n}}\n", body.join(",\n"))
}

/// As [`to_json`], but refuses what the file could not hold or would not load again: a NaN
/// or infinite number (JSON would write `null`), or parts that disagree; the error names the
/// field. It is the reader's own check of the written text.
pub fn to_json_checked(model: &SavedAutoencoder) -> Result<String, String> {
    let text = to_json(model);
    from_json("the model to write", &text).map_err(|e| e.message)?;
    Ok(text)
}

/// Writes the model to `path` through a temporary file renamed into place.
#[cfg(not(target_arch = "wasm32"))]
pub fn write_model(path: &std::path::Path, model: &SavedAutoencoder) -> Result<(), String> {
    let text = to_json_checked(model).map_err(|e| format!("{}: {e}; nothing was written", path.display()))?;
    crate::report::atomic::write_atomically(path, text.as_bytes())
}

// ---------------------------------------------------------------- reading

fn kind_of(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {}", quote(s)),
        Value::Array(a) => format!("an array of {} values", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

/// The fields of one JSON object, taken one by one; `path` names it in errors.
struct Fields {
    map: Map<String, Value>,
    path: String,
}

impl Fields {
    fn of(value: Value, path: &str) -> Result<Fields, String> {
        match value {
            Value::Object(map) => Ok(Fields { map, path: path.to_string() }),
            other => Err(format!("field `{path}` is {}, expected an object", kind_of(&other))),
        }
    }

    fn at(&self, name: &str) -> String {
        if self.path.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.path)
        }
    }

    fn take(&mut self, name: &str) -> Result<Value, String> {
        self.map.remove(name).ok_or_else(|| format!("field `{}` is missing", self.at(name)))
    }

    /// Absent or null: `None`.
    fn optional(&mut self, name: &str) -> Option<Value> {
        self.map.remove(name).filter(|v| !v.is_null())
    }

    fn count(&mut self, name: &str) -> Result<usize, String> {
        let value = self.take(name)?;
        value.as_u64().and_then(|n| usize::try_from(n).ok()).ok_or_else(|| format!("field `{}` is {}, expected a whole number", self.at(name), kind_of(&value)))
    }

    fn float(&mut self, name: &str) -> Result<f64, String> {
        let value = self.take(name)?;
        finite(&value, &self.at(name))
    }

    fn boolean(&mut self, name: &str) -> Result<bool, String> {
        let value = self.take(name)?;
        value.as_bool().ok_or_else(|| format!("field `{}` is {}, expected true or false", self.at(name), kind_of(&value)))
    }

    fn text(&mut self, name: &str) -> Result<String, String> {
        let value = self.take(name)?;
        plain_text(&value, &self.at(name))
    }

    fn numbers(&mut self, name: &str) -> Result<Vec<f32>, String> {
        let value = self.take(name)?;
        numbers(value, &self.at(name))
    }

    fn done(self) -> Result<(), String> {
        match self.map.keys().next() {
            Some(unknown) => Err(format!("unknown field `{}`", self.at(&sanitise(unknown, QUOTED_CHARS)))),
            None => Ok(()),
        }
    }
}

fn finite(value: &Value, path: &str) -> Result<f64, String> {
    value.as_f64().filter(|x| x.is_finite()).ok_or_else(|| format!("field `{path}` is {}, expected a finite number", kind_of(value)))
}

fn plain_text(value: &Value, path: &str) -> Result<String, String> {
    match value {
        // Names are printed in reports and on the terminal.
        Value::String(s) if !s.is_empty() && s.chars().count() <= MAX_NAME_CHARS && sanitise(s, MAX_NAME_CHARS) == *s => Ok(s.clone()),
        other => Err(format!("field `{path}` is {}, expected a string of 1 to {MAX_NAME_CHARS} printable characters", kind_of(other))),
    }
}

/// An array of finite `f32` values.
fn numbers(value: Value, path: &str) -> Result<Vec<f32>, String> {
    let Value::Array(items) = value else {
        return Err(format!("field `{path}` is {}, expected an array of numbers", kind_of(&value)));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item.as_f64() {
            Some(x) if (x as f32).is_finite() => Ok(x as f32),
            _ => Err(format!("field `{path}[{i}]` is {}, expected a finite number", kind_of(item))),
        })
        .collect()
}

fn finite_list(value: Value, path: &str) -> Result<Vec<f64>, String> {
    let Value::Array(items) = value else {
        return Err(format!("field `{path}` is {}, expected an array of numbers", kind_of(&value)));
    };
    items.iter().enumerate().map(|(i, item)| finite(item, &format!("{path}[{i}]"))).collect()
}

fn image_shape(value: Option<Value>, path: &str) -> Result<Option<(usize, usize)>, String> {
    let Some(value) = value else { return Ok(None) };
    let side = |v: &Value| v.as_u64().and_then(|n| usize::try_from(n).ok()).filter(|&n| n > 0);
    match &value {
        Value::Array(items) if items.len() == 2 => match (side(&items[0]), side(&items[1])) {
            (Some(rows), Some(cols)) => Ok(Some((rows, cols))),
            _ => Err(format!("field `{path}` is {}, expected [rows, columns] of whole numbers ≥ 1", kind_of(&value))),
        },
        _ => Err(format!("field `{path}` is {}, expected [rows, columns] or null", kind_of(&value))),
    }
}

fn preprocessing(value: Value) -> Result<InputPreprocessing, String> {
    let mut f = Fields::of(value, "inputs")?;
    let kind = f.text("preprocessing")?;
    let p = match kind.as_str() {
        "unit_pixels" => InputPreprocessing::UnitPixels { image_shape: image_shape(f.optional("image_shape"), "inputs.image_shape")? },
        "patches" => {
            let side = f.count("side")?;
            let clip = f.float("clip")?;
            let zca = f.boolean("zca")?;
            let range = match f.optional("range") {
                None => None,
                Some(v) => match finite_list(v, "inputs.range")?.as_slice() {
                    &[low, high] if low <= high => Some([low, high]),
                    _ => return Err("field `inputs.range` is not [smallest, largest]".into()),
                },
            };
            if side == 0 || clip <= 0.0 {
                return Err(format!("field `inputs` has side {side} and clip {clip}, expected a side ≥ 1 and a clip > 0"));
            }
            InputPreprocessing::Patches { side, clip, zca, range }
        }
        _ => return Err(format!("field `inputs.preprocessing` is {}, expected \"unit_pixels\" or \"patches\"", quote(&kind))),
    };
    f.done()?;
    Ok(p)
}

fn data_record(value: Value, path: &str) -> Result<DataRecord, String> {
    let mut f = Fields::of(value, path)?;
    let files = match f.take("files")? {
        Value::Array(items) => items.iter().enumerate().map(|(i, v)| plain_text(v, &format!("{path}.files[{i}]"))).collect::<Result<Vec<_>, _>>()?,
        other => return Err(format!("field `{path}.files` is {}, expected an array of file names", kind_of(&other))),
    };
    let cases = f.count("cases")?;
    let classes = match f.optional("classes") {
        None => None,
        Some(Value::Array(items)) => {
            let classes = items
                .iter()
                .enumerate()
                .map(|(i, v)| v.as_u64().and_then(|c| u32::try_from(c).ok()).ok_or_else(|| format!("field `{path}.classes[{i}]` is {}, expected a class label (a whole number)", kind_of(v))))
                .collect::<Result<Vec<u32>, _>>()?;
            if classes.is_empty() || classes.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!("field `{path}.classes` is {classes:?}, expected labels in increasing order, at least one"));
            }
            Some(classes)
        }
        Some(other) => return Err(format!("field `{path}.classes` is {}, expected an array of labels or null", kind_of(&other))),
    };
    f.done()?;
    if cases == 0 {
        return Err(format!("field `{path}.cases` is 0, expected at least 1"));
    }
    Ok(DataRecord { files, cases, classes })
}

fn layer_settings(value: Value, path: &str, n_hidden: usize) -> Result<LayerSettings, String> {
    let mut f = Fields::of(value, path)?;
    let cost = CostSettings { sparsity_target: f.float("rho")?, weight_decay: f.float("lambda")?, sparsity_weight: f.float("beta")? };
    let name = f.text("method")?;
    let method = MethodName::from_name(&name).ok_or_else(|| format!("field `{path}.method` is {}, expected \"lbfgs\", \"cg\" or \"sgd\"", quote(&name)))?;
    let iterations = f.count("iterations")?;
    let seed = f.take("seed")?;
    let seed = seed.as_u64().ok_or_else(|| format!("field `{path}.seed` is {}, expected a whole number", kind_of(&seed)))?;
    f.done()?;
    cost.validate().map_err(|e| match e {
        crate::autoencoder::CostError::Setting { field, value, expected } => {
            let name = match field {
                "sparsity_target" => "rho",
                "weight_decay" => "lambda",
                _ => "beta",
            };
            format!("field `{path}.{name}` is {value}, expected {expected}")
        }
        other => format!("field `{path}`: {other}"),
    })?;
    if iterations == 0 {
        return Err(format!("field `{path}.iterations` is 0, expected at least 1"));
    }
    Ok(LayerSettings { n_hidden, cost, method, iterations, seed })
}

fn cost_terms(value: Value, path: &str) -> Result<CostTerms, String> {
    let mut f = Fields::of(value, path)?;
    let terms = CostTerms { total: f.float("J")?, reconstruction: f.float("reconstruction")?, weight_decay: f.float("weight_decay")?, sparsity: f.float("sparsity")? };
    f.done()?;
    Ok(terms)
}

fn activation_summary(value: Value, path: &str) -> Result<ActivationSummary, String> {
    let mut f = Fields::of(value, path)?;
    let summary = ActivationSummary { mean: f.float("mean")?, min: f.float("min")?, max: f.float("max")? };
    f.done()?;
    let in_unit = |x: f64| (0.0..=1.0).contains(&x);
    if !(in_unit(summary.min) && in_unit(summary.max) && summary.min <= summary.mean && summary.mean <= summary.max) {
        return Err(format!("field `{path}` has min {}, mean {}, max {}, expected 0 ≤ min ≤ mean ≤ max ≤ 1", summary.min, summary.mean, summary.max));
    }
    Ok(summary)
}

/// A layer record; `cases` and `backend` come from elsewhere in version 1.
fn layer_record(f: &mut Fields, cases: usize, backend: String) -> Result<LayerRecord, String> {
    let path = f.path.clone();
    let at = |name: &str| if path.is_empty() { name.to_string() } else { format!("{path}.{name}") };
    Ok(LayerRecord {
        cases,
        initial: cost_terms(f.take("initial")?, &at("initial"))?,
        last: cost_terms(f.take("final")?, &at("final"))?,
        iterations: f.count("iterations")?,
        evaluations: f.count("evaluations")?,
        stop: f.text("stop")?,
        history: finite_list(f.take("history")?, &at("history"))?,
        mean_activation: activation_summary(f.take("mean_activation")?, &at("mean_activation"))?,
        seconds: {
            let seconds = f.float("seconds")?;
            if seconds < 0.0 {
                return Err(format!("field `{}` is {seconds}, expected 0 or more", at("seconds")));
            }
            seconds
        },
        backend,
    })
}

fn backend_name(value: Value, path: &str) -> Result<String, String> {
    match value.as_str() {
        Some(name @ ("cpu" | "gpu")) => Ok(name.to_string()),
        _ => Err(format!("field `{path}` is {}, expected \"cpu\" or \"gpu\"", kind_of(&value))),
    }
}

/// W₁ b₁ W₂ b₂ of an `n_visible × n_hidden` autoencoder from `f`, lengths checked.
fn parameters(f: &mut Fields, n_visible: usize, n_hidden: usize) -> Result<Autoencoder, String> {
    let path = f.path.clone();
    if n_visible == 0 || n_hidden == 0 {
        return Err(format!("`{path}` has {n_visible} inputs and {n_hidden} hidden units, expected at least one of each"));
    }
    // Sizes come from the file: their product must not wrap around to a small number.
    let n_weights = n_visible.checked_mul(n_hidden).ok_or_else(|| format!("`{path}` has {n_visible} inputs and {n_hidden} hidden units, too many to hold (n_visible × n_hidden overflows)"))?;
    let mut block = |name: &str, expected: usize, why: String| -> Result<Vec<f32>, String> {
        let values = f.numbers(name)?;
        if values.len() != expected {
            return Err(format!("field `{}` has {} values, expected {expected} ({why})", f.at(name), values.len()));
        }
        Ok(values)
    };
    let shape = format!("n_visible {n_visible} × n_hidden {n_hidden}");
    let w1 = block("W1", n_weights, shape.clone())?;
    let b1 = block("b1", n_hidden, "one per hidden unit".into())?;
    let w2 = block("W2", n_weights, shape)?;
    let b2 = block("b2", n_visible, "one per input".into())?;
    Ok(Autoencoder { n_visible, n_hidden, w1, b1, w2, b2 })
}

fn stack_layer(value: Value, path: &str) -> Result<StackLayer, String> {
    let mut f = Fields::of(value, path)?;
    let n_visible = f.count("n_visible")?;
    let n_hidden = f.count("n_hidden")?;
    let settings = layer_settings(f.take("settings")?, &format!("{path}.settings"), n_hidden)?;
    let record = match f.optional("training") {
        None => None,
        Some(value) => {
            let mut r = Fields::of(value, &format!("{path}.training"))?;
            let cases = r.count("cases")?;
            let backend = backend_name(r.take("backend")?, &r.at("backend"))?;
            let record = layer_record(&mut r, cases, backend)?;
            r.done()?;
            Some(record)
        }
    };
    let autoencoder = parameters(&mut f, n_visible, n_hidden)?;
    f.done()?;
    Ok(StackLayer { autoencoder, settings, record })
}

/// Checks that the parts agree: layers chain, the preprocessing fits the first layer, the
/// supervised layers come with the data they trained on.
fn check_consistency(model: &SavedAutoencoder) -> Result<(), String> {
    let layers = &model.stack.layers;
    let first = layers.first().ok_or("field `layers` is empty, expected at least one layer")?;
    for (k, pair) in layers.windows(2).enumerate() {
        if pair[1].autoencoder.n_visible != pair[0].autoencoder.n_hidden {
            return Err(format!(
                "the layers do not chain: `layers[{}].n_visible` is {}, but `layers[{k}].n_hidden` is {} (each layer's inputs are the hidden units of the one below)",
                k + 1,
                pair[1].autoencoder.n_visible,
                pair[0].autoencoder.n_hidden
            ));
        }
    }
    let n_visible = first.autoencoder.n_visible;
    if let Some((rows, cols)) = model.preprocessing.image_shape() {
        if rows.checked_mul(cols) != Some(n_visible) {
            return Err(format!("field `inputs` describes {rows}×{cols} images, which does not match the {n_visible} inputs of `layers[0]`"));
        }
    }
    match (&model.supervised, &model.supervised_data) {
        (Some(_), None) => Err("field `supervised_data` is null, but the model has supervised layers (expected the data they trained on)".into()),
        (None, Some(_)) => Err("field `supervised_data` is set, but `supervised` is null".into()),
        _ => Ok(()),
    }
}

/// Reads a stack from JSON text (version 2, or version 1 as one layer); `source_name`
/// (usually the file path) begins every error.
pub fn from_json(source_name: &str, text: &str) -> Result<SavedAutoencoder, ModelFileError> {
    let fail = |message: String| ModelFileError { source_name: source_name.to_string(), message };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        let (line, column) = (e.line(), e.column());
        fail(if e.is_eof() {
            format!("the file ends early, at line {line}, column {column}: it is truncated (expected the rest of the JSON model)")
        } else {
            format!("not valid JSON at line {line}, column {column}: {}", sanitise(&e.to_string(), FOREIGN_MESSAGE_CHARS))
        })
    })?;
    let mut top = Fields::of(value, "").map_err(|_| fail("expected a JSON object at the top level".into()))?;
    let format = match top.take("format").map_err(&fail)? {
        Value::String(name) => name,
        other => return Err(fail(format!("field `format` is {}, expected the string \"{FORMAT}\"", kind_of(&other)))),
    };
    let model = match format.as_str() {
        FORMAT => version_2(&mut top),
        FORMAT_V1 => version_1(&mut top),
        other => Err(format!("field `format` is {}, expected \"{FORMAT}\" (this build reads \"{FORMAT}\" and \"{FORMAT_V1}\")", quote(other))),
    }
    .map_err(&fail)?;
    top.done().map_err(|e| fail(format!("{e} (not part of \"{format}\")")))?;
    check_consistency(&model).map_err(&fail)?;
    Ok(model)
}

fn version_2(top: &mut Fields) -> Result<SavedAutoencoder, String> {
    let preprocessing = preprocessing(top.take("inputs")?)?;
    let pretraining_data = data_record(top.take("pretraining_data")?, "pretraining_data")?;
    let layers = match top.take("layers")? {
        Value::Array(items) => items.into_iter().enumerate().map(|(i, item)| stack_layer(item, &format!("layers[{i}]"))).collect::<Result<Vec<_>, _>>()?,
        other => return Err(format!("field `layers` is {}, expected an array of layers", kind_of(&other))),
    };
    let top_size = layers.last().ok_or("field `layers` is empty, expected at least one layer")?.autoencoder.n_hidden;
    let supervised_data = top.optional("supervised_data").map(|v| data_record(v, "supervised_data")).transpose()?;
    let supervised = top.optional("supervised").map(|v| supervised_section::from_value(v, Some(top_size))).transpose()?;
    Ok(SavedAutoencoder { preprocessing, pretraining_data, stack: AutoencoderStack { layers }, supervised_data, supervised })
}

/// Version 1: one autoencoder, its settings, the inputs' description, the record's fields
/// at the top level and the parameters under `parameters`.
fn version_1(top: &mut Fields) -> Result<SavedAutoencoder, String> {
    let n_visible = top.count("n_visible")?;
    let n_hidden = top.count("n_hidden")?;
    let mut settings_fields = Fields::of(top.take("settings")?, "settings")?;
    let backend = backend_name(settings_fields.take("backend")?, "settings.backend")?;
    let settings = layer_settings(Value::Object(std::mem::take(&mut settings_fields.map)), "settings", n_hidden)?;
    let mut inputs = Fields::of(top.take("inputs")?, "inputs")?;
    let (preprocessing, pretraining_data) = if let Some(mnist) = inputs.optional("mnist") {
        let file = plain_text(&mnist, "inputs.mnist")?;
        let cases = inputs.count("cases")?;
        let side = (n_visible as f64).sqrt().round() as usize;
        let image_shape = (side * side == n_visible).then_some((side, side));
        (InputPreprocessing::UnitPixels { image_shape }, DataRecord { files: vec![file], cases, classes: None })
    } else {
        let files = match inputs.take("images")? {
            Value::Array(items) => items.iter().enumerate().map(|(i, v)| plain_text(v, &format!("inputs.images[{i}]"))).collect::<Result<Vec<_>, _>>()?,
            other => return Err(format!("field `inputs.images` is {}, expected an array of file names", kind_of(&other))),
        };
        let side = inputs.count("patch")?;
        let cases = inputs.count("patches")?;
        let clip = inputs.float("clip")?;
        let zca = inputs.boolean("zca")?;
        let range = match inputs.optional("range") {
            None => None,
            Some(v) => match finite_list(v, "inputs.range")?.as_slice() {
                &[low, high] if low <= high => Some([low, high]),
                _ => return Err("field `inputs.range` is not [smallest, largest]".into()),
            },
        };
        if side == 0 || clip <= 0.0 || cases == 0 {
            return Err(format!("field `inputs` has patch {side}, patches {cases} and clip {clip}, expected a patch ≥ 1, patches ≥ 1 and a clip > 0"));
        }
        (InputPreprocessing::Patches { side, clip, zca, range }, DataRecord { files, cases, classes: None })
    };
    inputs.done()?;
    let record = layer_record(top, pretraining_data.cases, backend)?;
    let mut parameter_fields = Fields::of(top.take("parameters")?, "parameters")?;
    let autoencoder = parameters(&mut parameter_fields, n_visible, n_hidden)?;
    parameter_fields.done()?;
    let layer = StackLayer { autoencoder, settings, record: Some(record) };
    Ok(SavedAutoencoder { preprocessing, pretraining_data, stack: AutoencoderStack { layers: vec![layer] }, supervised_data: None, supervised: None })
}

/// The `format` field of a JSON model file, if the text is an object that has a string there;
/// the rest is skipped without being kept.
pub fn format_name(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Head {
        format: Option<Value>,
    }
    serde_json::from_str::<Head>(text).ok()?.format?.as_str().map(str::to_string)
}

/// A model file of either family.
#[derive(Clone, Debug)]
pub enum ModelFile {
    Dbn(Box<super::SavedDbn>),
    Autoencoder(Box<SavedAutoencoder>),
}

/// Reads `path` (or `path/model.json` for a folder) as a DBN or an autoencoder stack, by its
/// `format` field; a file that is neither (or not JSON) gets the DBN reader's error.
#[cfg(not(target_arch = "wasm32"))]
pub fn read_model_file(path: &std::path::Path) -> Result<ModelFile, ModelFileError> {
    let file = super::model_file_path(path);
    let source_name = file.display().to_string();
    let text = std::fs::read_to_string(&file).map_err(|e| ModelFileError { source_name: source_name.clone(), message: format!("cannot read the model file ({e})") })?;
    match format_name(&text) {
        Some(name) if name.starts_with(FORMAT_FAMILY) => from_json(&source_name, &text).map(|model| ModelFile::Autoencoder(Box::new(model))),
        _ => super::from_json(&source_name, &text).map(|model| ModelFile::Dbn(Box::new(model))),
    }
}
