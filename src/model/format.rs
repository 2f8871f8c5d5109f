//! Saved-model format: versioned JSON, validated field by field on load so a bad file
//! gets an error naming what is wrong instead of a model full of garbage.

use super::Rbm;
use serde::{Deserialize, Serialize};

pub const FORMAT_NAME: &str = "deepbelief-rbm";
pub const FORMAT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
pub struct SavedRbm {
    pub format: String,
    pub version: u32,
    /// `(rows, cols)` when the visible layer is an image, so viewers can draw filters.
    pub image_shape: Option<(usize, usize)>,
    pub rbm: Rbm,
}

#[derive(Debug)]
pub struct ModelFileError {
    pub source_name: String,
    pub message: String,
}

impl std::fmt::Display for ModelFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}: {}", self.source_name, self.message)
    }
}

impl std::error::Error for ModelFileError {}

pub fn to_json(rbm: &Rbm, image_shape: Option<(usize, usize)>) -> String {
    let saved = SavedRbm { format: FORMAT_NAME.into(), version: FORMAT_VERSION, image_shape, rbm: rbm.clone() };
    serde_json::to_string(&saved).expect("an RBM always serialises")
}

pub fn from_json(source_name: &str, text: &str) -> Result<SavedRbm, ModelFileError> {
    let fail = |message: String| ModelFileError { source_name: source_name.to_string(), message };
    let saved: SavedRbm = serde_json::from_str(text)
        .map_err(|e| fail(format!("not a valid model file (line {}, column {}): {e}", e.line(), e.column())))?;
    if saved.format != FORMAT_NAME {
        return Err(fail(format!("field `format` is \"{}\", expected \"{FORMAT_NAME}\"", saved.format)));
    }
    if saved.version != FORMAT_VERSION {
        return Err(fail(format!("field `version` is {}, this build reads version {FORMAT_VERSION}", saved.version)));
    }
    let rbm = &saved.rbm;
    let expect_len = |field: &str, found: usize, expected: usize| {
        if found == expected {
            Ok(())
        } else {
            Err(fail(format!("field `rbm.{field}` has {found} values, expected {expected}")))
        }
    };
    expect_len("weights", rbm.weights.len(), rbm.n_visible * rbm.n_hidden)?;
    expect_len("visible_bias", rbm.visible_bias.len(), rbm.n_visible)?;
    expect_len("hidden_bias", rbm.hidden_bias.len(), rbm.n_hidden)?;
    if let Some((rows, cols)) = saved.image_shape {
        if rows * cols != rbm.n_visible {
            return Err(fail(format!("field `image_shape` is {rows}×{cols}, which does not match {} visible units", rbm.n_visible)));
        }
    }
    if !rbm.is_finite() {
        return Err(fail("the model holds NaN or infinite parameters".into()));
    }
    Ok(saved)
}
