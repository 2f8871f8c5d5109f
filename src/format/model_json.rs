//! Saved-model format (docs/MODEL_FORMAT.md): versioned JSON holding a whole DBN with what is
//! needed to use it on new data — the image shape, the training data's per-input means (for
//! AIS's base-rate model), the standardisation of Gaussian inputs, a database's scaling — and
//! the settings and outcome of training.
//!
//! Loading checks every field, so a damaged or hand-edited file gets an error naming the file
//! and the field instead of a model full of garbage. Version 1 files (`deepbelief-rbm`, one
//! RBM) are read and converted to a one-layer DBN.

use super::supervised as supervised_section;
use crate::data::error::{quote, sanitise, FOREIGN_MESSAGE_CHARS, QUOTED_CHARS};
use crate::data::{Preprocessing, Standardisation};
use crate::model::{Dbn, Rbm, VisibleUnits};
use crate::supervised::SavedSupervised;
use crate::train::{StackConfig, StopReason};
use serde::Serialize;
use serde_json::{Map, Value};

pub const FORMAT_NAME: &str = "deepbelief-dbn";
pub const FORMAT_VERSION: u32 = 2;
/// The single-RBM format of the first slice, still readable.
pub const RBM_FORMAT_NAME: &str = "deepbelief-rbm";
pub const RBM_FORMAT_VERSION: u32 = 1;

/// A trained DBN and everything needed to apply it to new data. With zero RBM layers it is a
/// plain MLP: only the supervised layers (`dbn.layers` and `training` empty).
#[derive(Clone, Debug, PartialEq)]
pub struct SavedDbn {
    /// `(rows, cols)` when the visible layer is an image, so viewers can draw filters.
    pub image_shape: Option<(usize, usize)>,
    /// Mean of each input over the training cases, in [0, 1] (before any standardisation).
    /// `None` for models converted from version 1, which did not record them.
    pub visible_means: Option<Vec<f32>>,
    /// How inputs were standardised for Gaussian visible units.
    pub standardisation: Option<Standardisation>,
    /// How a DEEP database's columns were turned into inputs (database training data only).
    pub preprocessing: Option<Preprocessing>,
    pub config: StackConfig,
    pub dbn: Dbn,
    /// One record per trained layer, bottom up (empty for converted version 1 files).
    pub training: Vec<LayerTraining>,
    /// Supervised layers on top of the DBN (absent in purely unsupervised models and in
    /// files written before they existed).
    pub supervised: Option<SavedSupervised>,
}

impl SavedDbn {
    /// Inputs per case: the first RBM's visible units, or a plain MLP's first layer's inputs.
    pub fn n_inputs(&self) -> usize {
        match (self.dbn.layers.first(), &self.supervised) {
            (Some(first), _) => first.n_visible,
            (None, Some(saved)) => saved.network.n_inputs(),
            (None, None) => 0,
        }
    }

    /// How the inputs are modelled: the first RBM's visible units, or for a plain MLP the
    /// setting its data were prepared for (Gaussian: standardised).
    pub fn visible_units(&self) -> VisibleUnits {
        self.dbn.layers.first().map_or(self.config.rbm.visible_units, |first| first.visible_units)
    }

    /// Zero RBM layers: the supervised layers alone.
    pub fn is_plain_mlp(&self) -> bool {
        self.dbn.layers.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayerTraining {
    /// 0-based, as in `layers`.
    pub layer: usize,
    pub epochs: usize,
    pub stop: StopReason,
    /// Mean-field reconstruction error of the initialised layer and of the trained one, on
    /// the same cases.
    pub init_error: f64,
    pub final_error: f64,
}

#[derive(Debug)]
pub struct ModelFileError {
    pub source_name: String,
    pub message: String,
}

impl std::fmt::Display for ModelFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}: {}", sanitise(&self.source_name, usize::MAX), self.message)
    }
}

impl std::error::Error for ModelFileError {}

/// Every stop reason, for reading names back (`StopReason` only serialises).
fn stop_reasons() -> [StopReason; 4] {
    // Exhaustive, so adding a reason breaks the build here until it is listed below.
    let _listed_below = |reason: StopReason| match reason {
        StopReason::Converged | StopReason::NoImprovement | StopReason::MaxEpochs | StopReason::Cancelled => (),
    };
    [StopReason::Converged, StopReason::NoImprovement, StopReason::MaxEpochs, StopReason::Cancelled]
}

pub fn stop_reason_name(reason: StopReason) -> String {
    serde_json::to_value(reason).ok().and_then(|v| v.as_str().map(str::to_string)).expect("stop reasons serialise as strings")
}

// ---------------------------------------------------------------- writing

#[derive(Serialize)]
struct LayerOut<'a> {
    visible_units: VisibleUnits,
    n_visible: usize,
    n_hidden: usize,
    weights: &'a [f32],
    visible_bias: &'a [f32],
    hidden_bias: &'a [f32],
}

/// The model as version-2 JSON: one top-level field per line and one layer per line, so a
/// parse error's line number points at the part of the file that is damaged.
pub fn to_json(model: &SavedDbn) -> String {
    let mut fields: Vec<(&str, String)> = vec![
        ("format", compact(&FORMAT_NAME)),
        ("version", compact(&FORMAT_VERSION)),
        ("image_shape", compact(&model.image_shape)),
        ("visible_means", compact(&model.visible_means)),
        ("standardisation", compact(&model.standardisation)),
        ("preprocessing", compact(&model.preprocessing)),
        ("config", compact(&model.config)),
    ];
    let layers: Vec<String> = model
        .dbn
        .layers
        .iter()
        .map(|l| {
            let out = LayerOut {
                visible_units: l.visible_units,
                n_visible: l.n_visible,
                n_hidden: l.n_hidden,
                weights: &l.weights,
                visible_bias: &l.visible_bias,
                hidden_bias: &l.hidden_bias,
            };
            format!("    {}", compact(&out))
        })
        .collect();
    fields.push(("layers", format!("[\n{}\n  ]", layers.join(",\n"))));
    let training: Vec<String> = model
        .training
        .iter()
        .map(|t| format!("    {}", compact(&LayerTraining { init_error: readable_f64(t.init_error), final_error: readable_f64(t.final_error), ..t.clone() })))
        .collect();
    fields.push(("training", if training.is_empty() { "[]".into() } else { format!("[\n{}\n  ]", training.join(",\n")) }));
    if let Some(supervised) = &model.supervised {
        let figures = SavedSupervised { train_criterion: readable_f64(supervised.train_criterion), train_error: supervised.train_error.map(readable_f64), ..supervised.clone() };
        fields.push(("supervised", compact(&supervised_section::to_value(&figures))));
    }
    let body: Vec<String> = fields.iter().map(|(name, value)| format!("  \"{name}\": {value}")).collect();
    format!("{{\n{}\n}}\n", body.join(",\n"))
}

/// As [`to_json`], but refuses a model holding a NaN or infinite number (JSON writes them as
/// `null`, which no loader accepts) or parts that disagree, naming the field: what is written
/// to a model file must load again.
pub fn to_json_checked(model: &SavedDbn) -> Result<String, String> {
    check_finite(model)?;
    check_consistency(model)?;
    Ok(to_json(model))
}

/// The first NaN or infinite number of the model, by field.
fn check_finite(model: &SavedDbn) -> Result<(), String> {
    fn all_finite<T: Copy + Into<f64>>(path: &str, values: &[T]) -> Result<(), String> {
        match values.iter().map(|&v| v.into()).enumerate().find(|(_, v): &(usize, f64)| !v.is_finite()) {
            Some((i, v)) => Err(format!("field `{path}[{i}]` is {v}, expected a finite number (a model file cannot hold it)")),
            None => Ok(()),
        }
    }
    let one = |path: &str, v: f64| if v.is_finite() { Ok(()) } else { Err(format!("field `{path}` is {v}, expected a finite number (a model file cannot hold it)")) };
    if let Some(means) = &model.visible_means {
        all_finite("visible_means", means)?;
    }
    if let Some(s) = &model.standardisation {
        all_finite("standardisation.mean", &s.mean)?;
        all_finite("standardisation.sd", &s.sd)?;
    }
    if let Some(p) = &model.preprocessing {
        all_finite("preprocessing.min", &p.min)?;
        all_finite("preprocessing.max", &p.max)?;
        all_finite("preprocessing.mean", &p.mean)?;
    }
    for (i, layer) in model.dbn.layers.iter().enumerate() {
        all_finite(&format!("layers[{i}].weights"), &layer.weights)?;
        all_finite(&format!("layers[{i}].visible_bias"), &layer.visible_bias)?;
        all_finite(&format!("layers[{i}].hidden_bias"), &layer.hidden_bias)?;
    }
    for (i, record) in model.training.iter().enumerate() {
        one(&format!("training[{i}].init_error"), record.init_error)?;
        one(&format!("training[{i}].final_error"), record.final_error)?;
    }
    if let Some(supervised) = &model.supervised {
        for (i, layer) in supervised.network.layers.iter().enumerate() {
            all_finite(&format!("supervised.layers[{i}].weights"), &layer.weights)?;
            all_finite(&format!("supervised.layers[{i}].bias"), &layer.bias)?;
        }
        one("supervised.train_criterion", supervised.train_criterion)?;
        if let Some(error) = supervised.train_error {
            one("supervised.train_error", error)?;
        }
    }
    Ok(())
}

/// A measured f64 figure to 15 significant digits. serde_json reads a decimal of up to 15
/// digits exactly but may miss a 17-digit one by an ulp, so a file read and written again
/// would change; 15 digits is far beyond the precision of any measurement in the file.
fn readable_f64(x: f64) -> f64 {
    if x.is_finite() {
        format!("{x:.14e}").parse().expect("a formatted float parses")
    } else {
        x
    }
}

fn compact<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("model parts always serialise")
}

// ---------------------------------------------------------------- reading

/// Reads a model from JSON text; `source_name` (usually the file path) begins every error.
pub fn from_json(source_name: &str, text: &str) -> Result<SavedDbn, ModelFileError> {
    let fail = |message: String| ModelFileError { source_name: source_name.to_string(), message };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        let (line, column) = (e.line(), e.column());
        fail(if e.is_eof() {
            format!("the file ends early, at line {line}, column {column}: it is truncated (expected the rest of the JSON model)")
        } else {
            format!("not valid JSON at line {line}, column {column}: {}", sanitise(&e.to_string(), FOREIGN_MESSAGE_CHARS))
        })
    })?;
    let Value::Object(mut top) = value else {
        return Err(fail(format!("expected a JSON object at the top level, found {}", kind_of(&value))));
    };
    let format = match top.remove("format") {
        Some(Value::String(name)) => name,
        Some(other) => return Err(fail(format!("field `format` is {}, expected the string \"{FORMAT_NAME}\"", kind_of(&other)))),
        None => return Err(fail(format!("field `format` is missing (expected \"{FORMAT_NAME}\"); this is not a deepbelief model file"))),
    };
    let version = top.remove("version").ok_or_else(|| fail("field `version` is missing".into()))?;
    let version = version.as_u64().ok_or_else(|| fail(format!("field `version` is {}, expected a whole number", kind_of(&version))))?;
    let readable = format!("this build reads \"{FORMAT_NAME}\" version {FORMAT_VERSION} and \"{RBM_FORMAT_NAME}\" version {RBM_FORMAT_VERSION}");
    let mut reader = FieldReader { top, fail: &fail };
    let model = match (format.as_str(), version) {
        (FORMAT_NAME, v) if v == FORMAT_VERSION as u64 => reader.dbn_v2()?,
        (RBM_FORMAT_NAME, v) if v == RBM_FORMAT_VERSION as u64 => reader.rbm_v1()?,
        (FORMAT_NAME | RBM_FORMAT_NAME, v) => return Err(fail(format!("field `version` is {v} for \"{format}\"; {readable}"))),
        (other, _) => return Err(fail(format!("field `format` is {}, expected \"{FORMAT_NAME}\" ({readable})", quote(other)))),
    };
    if let Some(unknown) = reader.top.keys().next() {
        return Err(fail(format!("unknown field `{}` (not part of \"{format}\" version {version})", sanitise(unknown, QUOTED_CHARS))));
    }
    check_consistency(&model).map_err(fail)?;
    Ok(model)
}

/// Reads `path`, or `path/model.json` when `path` is a folder.
#[cfg(not(target_arch = "wasm32"))]
pub fn read_model(path: &std::path::Path) -> Result<SavedDbn, ModelFileError> {
    let file = model_file_path(path);
    let source_name = file.display().to_string();
    let text = std::fs::read_to_string(&file)
        .map_err(|e| ModelFileError { source_name: source_name.clone(), message: format!("cannot read the model file ({e})") })?;
    from_json(&source_name, &text)
}

/// `path/model.json` for a folder, `path` itself otherwise.
#[cfg(not(target_arch = "wasm32"))]
pub fn model_file_path(path: &std::path::Path) -> std::path::PathBuf {
    if path.is_dir() {
        path.join("model.json")
    } else {
        path.to_path_buf()
    }
}

/// A serde error as a message may repeat it: serde quotes the input it could not read.
pub(super) fn foreign(error: impl std::fmt::Display) -> String {
    sanitise(&error.to_string(), FOREIGN_MESSAGE_CHARS)
}

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

struct FieldReader<'a> {
    top: Map<String, Value>,
    fail: &'a dyn Fn(String) -> ModelFileError,
}

impl FieldReader<'_> {
    fn take(&mut self, name: &str) -> Result<Value, ModelFileError> {
        self.top.remove(name).ok_or_else(|| (self.fail)(format!("field `{name}` is missing")))
    }

    fn dbn_v2(&mut self) -> Result<SavedDbn, ModelFileError> {
        let fail = self.fail;
        let image_shape = image_shape(self.take("image_shape")?, "image_shape").map_err(fail)?;
        let visible_means = match self.take("visible_means")? {
            Value::Null => None,
            value => Some(numbers(value, "visible_means").map_err(fail)?),
        };
        let standardisation = match self.take("standardisation")? {
            Value::Null => None,
            value => Some(standardisation(value).map_err(fail)?),
        };
        // Added with database training; absent means none.
        let preprocessing = match self.top.remove("preprocessing").unwrap_or(Value::Null) {
            Value::Null => None,
            value => Some(serde_json::from_value(value).map_err(|e| fail(format!("field `preprocessing`: {}", foreign(e))))?),
        };
        let config: StackConfig = serde_json::from_value(self.take("config")?).map_err(|e| fail(format!("field `config`: {}", foreign(e))))?;
        let layers = match self.take("layers")? {
            Value::Array(items) => {
                items.into_iter().enumerate().map(|(i, item)| rbm(item, &format!("layers[{i}]"))).collect::<Result<Vec<_>, _>>().map_err(fail)?
            }
            other => return Err(fail(format!("field `layers` is {}, expected an array of layers", kind_of(&other)))),
        };
        let training = match self.take("training")? {
            Value::Array(items) => {
                items.into_iter().enumerate().map(|(i, item)| layer_training(item, &format!("training[{i}]"))).collect::<Result<Vec<_>, _>>().map_err(fail)?
            }
            other => return Err(fail(format!("field `training` is {}, expected an array", kind_of(&other)))),
        };
        // Added with supervised nets; absent means none.
        let top_size = layers.last().map(|l: &Rbm| l.n_hidden);
        let supervised = match self.top.remove("supervised").unwrap_or(Value::Null) {
            Value::Null => None,
            value => Some(supervised_section::from_value(value, top_size).map_err(fail)?),
        };
        Ok(SavedDbn { image_shape, visible_means, standardisation, preprocessing, config, dbn: Dbn { layers }, training, supervised })
    }

    /// Version 1: `{format, version, image_shape, rbm}`; becomes a one-layer DBN whose
    /// training settings are the defaults, since the file did not record them.
    fn rbm_v1(&mut self) -> Result<SavedDbn, ModelFileError> {
        let fail = self.fail;
        let image_shape = image_shape(self.take("image_shape")?, "image_shape").map_err(fail)?;
        let rbm = rbm(self.take("rbm")?, "rbm").map_err(fail)?;
        let mut config = StackConfig { layers: vec![rbm.n_hidden], ..StackConfig::default() };
        config.rbm.n_hidden = rbm.n_hidden;
        config.rbm.visible_units = rbm.visible_units;
        Ok(SavedDbn {
            image_shape,
            visible_means: None,
            standardisation: None,
            preprocessing: None,
            config,
            dbn: Dbn { layers: vec![rbm] },
            training: Vec::new(),
            supervised: None,
        })
    }
}

fn object(value: Value, path: &str) -> Result<Map<String, Value>, String> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(format!("field `{path}` is {}, expected an object", kind_of(&other))),
    }
}

fn field(map: &mut Map<String, Value>, path: &str, name: &str) -> Result<Value, String> {
    map.remove(name).ok_or_else(|| format!("field `{path}.{name}` is missing"))
}

fn no_other_fields(map: &Map<String, Value>, path: &str) -> Result<(), String> {
    match map.keys().next() {
        Some(unknown) => Err(format!("unknown field `{path}.{}`", sanitise(unknown, QUOTED_CHARS))),
        None => Ok(()),
    }
}

fn count(value: &Value, path: &str) -> Result<usize, String> {
    value.as_u64().and_then(|n| usize::try_from(n).ok()).ok_or_else(|| format!("field `{path}` is {}, expected a whole number", kind_of(value)))
}

fn float(value: &Value, path: &str) -> Result<f64, String> {
    match value.as_f64() {
        Some(x) if x.is_finite() => Ok(x),
        _ => Err(format!("field `{path}` is {}, expected a finite number", kind_of(value))),
    }
}

/// An array of finite f32 values; NaN and infinities are written by JSON encoders as `null`.
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

fn image_shape(value: Value, path: &str) -> Result<Option<(usize, usize)>, String> {
    match &value {
        Value::Null => Ok(None),
        Value::Array(items) if items.len() == 2 => Ok(Some((count(&items[0], &format!("{path}[0]"))?, count(&items[1], &format!("{path}[1]"))?))),
        _ => Err(format!("field `{path}` is {}, expected [rows, columns] or null", kind_of(&value))),
    }
}

fn visible_units(value: &Value, path: &str) -> Result<VisibleUnits, String> {
    serde_json::from_value(value.clone()).map_err(|_| format!("field `{path}` is {}, expected \"bernoulli\" or \"gaussian\"", kind_of(value)))
}

fn rbm(value: Value, path: &str) -> Result<Rbm, String> {
    let mut map = object(value, path)?;
    let units = match map.remove("visible_units") {
        Some(units) => visible_units(&units, &format!("{path}.visible_units"))?,
        None => VisibleUnits::Bernoulli,
    };
    let n_visible = count(&field(&mut map, path, "n_visible")?, &format!("{path}.n_visible"))?;
    let n_hidden = count(&field(&mut map, path, "n_hidden")?, &format!("{path}.n_hidden"))?;
    let weights = numbers(field(&mut map, path, "weights")?, &format!("{path}.weights"))?;
    let visible_bias = numbers(field(&mut map, path, "visible_bias")?, &format!("{path}.visible_bias"))?;
    let hidden_bias = numbers(field(&mut map, path, "hidden_bias")?, &format!("{path}.hidden_bias"))?;
    no_other_fields(&map, path)?;
    if n_visible == 0 || n_hidden == 0 {
        return Err(format!("`{path}` has {n_visible} visible and {n_hidden} hidden units, expected at least one of each"));
    }
    let expect_len = |name: &str, found: usize, expected: usize, why: String| {
        if found == expected {
            Ok(())
        } else {
            Err(format!("field `{path}.{name}` has {found} values, expected {expected} ({why})"))
        }
    };
    // Sizes come from the file: their product must not wrap around to a small number.
    let n_weights = n_visible
        .checked_mul(n_hidden)
        .ok_or_else(|| format!("`{path}` has {n_visible} visible and {n_hidden} hidden units, too many to hold (n_visible × n_hidden overflows)"))?;
    expect_len("weights", weights.len(), n_weights, format!("n_visible {n_visible} × n_hidden {n_hidden}"))?;
    expect_len("visible_bias", visible_bias.len(), n_visible, "one per visible unit".into())?;
    expect_len("hidden_bias", hidden_bias.len(), n_hidden, "one per hidden unit".into())?;
    Ok(Rbm { visible_units: units, n_visible, n_hidden, weights, visible_bias, hidden_bias })
}

fn standardisation(value: Value) -> Result<Standardisation, String> {
    let mut map = object(value, "standardisation")?;
    let mean = numbers(field(&mut map, "standardisation", "mean")?, "standardisation.mean")?;
    let sd = numbers(field(&mut map, "standardisation", "sd")?, "standardisation.sd")?;
    no_other_fields(&map, "standardisation")?;
    if let Some(i) = sd.iter().position(|&s| s < 0.0) {
        return Err(format!("field `standardisation.sd[{i}]` is {}, expected a standard deviation (0 or more)", sd[i]));
    }
    Ok(Standardisation { mean, sd })
}

fn layer_training(value: Value, path: &str) -> Result<LayerTraining, String> {
    let mut map = object(value, path)?;
    let layer = count(&field(&mut map, path, "layer")?, &format!("{path}.layer"))?;
    let epochs = count(&field(&mut map, path, "epochs")?, &format!("{path}.epochs"))?;
    let stop_value = field(&mut map, path, "stop")?;
    let names: Vec<String> = stop_reasons().into_iter().map(stop_reason_name).collect();
    let stop = stop_reasons()
        .into_iter()
        .find(|&r| stop_value.as_str() == Some(stop_reason_name(r).as_str()))
        .ok_or_else(|| format!("field `{path}.stop` is {}, expected one of {}", kind_of(&stop_value), names.join(", ")))?;
    let init_error = float(&field(&mut map, path, "init_error")?, &format!("{path}.init_error"))?;
    let final_error = float(&field(&mut map, path, "final_error")?, &format!("{path}.final_error"))?;
    no_other_fields(&map, path)?;
    Ok(LayerTraining { layer, epochs, stop, init_error, final_error })
}

/// Checks that the parts agree with each other: layers chain, lengths match the visible
/// layer, the settings describe these layers.
fn check_consistency(model: &SavedDbn) -> Result<(), String> {
    let layers = &model.dbn.layers;
    if layers.is_empty() && model.supervised.is_none() {
        return Err("field `layers` is empty and there is no `supervised` section, expected at least one layer (a plain MLP, with zero RBM layers, has supervised layers)".into());
    }
    for (i, pair) in layers.windows(2).enumerate() {
        if pair[1].n_visible != pair[0].n_hidden {
            return Err(format!(
                "the layers do not chain: `layers[{}].n_visible` is {}, but `layers[{i}].n_hidden` is {} (each layer's visible units are the hidden units of the one below)",
                i + 1,
                pair[1].n_visible,
                pair[0].n_hidden
            ));
        }
        if pair[1].visible_units != VisibleUnits::Bernoulli {
            return Err(format!("field `layers[{}].visible_units` is gaussian; only the first layer may have Gaussian visible units", i + 1));
        }
    }
    let n_visible = model.n_inputs();
    let visible_units = model.visible_units();
    if let Some((rows, cols)) = model.image_shape {
        if rows.checked_mul(cols) != Some(n_visible) {
            return Err(format!("field `image_shape` is {rows}×{cols}, which does not match the {n_visible} visible units of `layers[0]`"));
        }
    }
    if let Some(means) = &model.visible_means {
        if means.len() != n_visible {
            return Err(format!("field `visible_means` has {} values, expected {n_visible} (one per visible unit)", means.len()));
        }
    }
    if let Some(s) = &model.standardisation {
        if visible_units != VisibleUnits::Gaussian {
            return Err("field `standardisation` is set, but `layers[0]` has bernoulli visible units (standardisation is for Gaussian ones)".into());
        }
        for (name, len) in [("mean", s.mean.len()), ("sd", s.sd.len())] {
            if len != n_visible {
                return Err(format!("field `standardisation.{name}` has {len} values, expected {n_visible} (one per visible unit)"));
            }
        }
    }
    if let Some(p) = &model.preprocessing {
        if p.kept.len() != n_visible || p.kept_names.len() != n_visible || p.min.len() != n_visible || p.max.len() != n_visible || p.mean.len() != n_visible {
            return Err(format!("field `preprocessing` describes {} inputs, expected {n_visible} (one per visible unit)", p.kept.len()));
        }
    }
    let sizes: Vec<usize> = layers.iter().map(|l| l.n_hidden).collect();
    if model.config.layers != sizes {
        return Err(format!("field `config.layers` is {:?}, but the layers have {:?} hidden units", model.config.layers, sizes));
    }
    if model.config.rbm.visible_units != visible_units {
        return Err(format!(
            "field `config.rbm.visible_units` is {:?}, but `layers[0].visible_units` is {:?}",
            model.config.rbm.visible_units, visible_units
        ));
    }
    // Batch settings were checked against the training cases, which are not in the file.
    model.config.validate_allowing_plain_mlp(usize::MAX).map_err(|e| {
        let path = if e.field == "layers" { "config.layers".to_string() } else { format!("config.rbm.{}", e.field) };
        format!("field `{path}`: {}", e.message)
    })?;
    for (k, record) in model.training.iter().enumerate() {
        if record.layer != k || k >= layers.len() {
            return Err(format!("field `training[{k}].layer` is {}, expected {k} (one record per layer, bottom up)", record.layer));
        }
    }
    Ok(())
}
