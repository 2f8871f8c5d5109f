//! The one error type of the recurrent family: every message names the field it concerns
//! (`layers[1]`, `edges[2].to`, `rate`, `bits`, …) and says what was expected.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub struct RecurrentError {
    /// The field, as a path into the settings or the graph spec (`edges[2].to`).
    pub field: String,
    /// What it held and what was expected.
    pub message: String,
}

impl RecurrentError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        RecurrentError { field: field.into(), message: message.into() }
    }
}

impl fmt::Display for RecurrentError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "recurrent net {}: {}", self.field, self.message)
    }
}

impl std::error::Error for RecurrentError {}

/// `Ok` when `value` is finite and `> 0`, else an error naming `field`.
pub fn positive(field: &str, value: f64) -> Result<(), RecurrentError> {
    if value > 0.0 && value.is_finite() {
        Ok(())
    } else {
        Err(RecurrentError::new(field, format!("is {value}; expected a finite number > 0")))
    }
}
