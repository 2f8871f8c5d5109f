//! The one error type of sparse coding: every message names the field it concerns (`beta`,
//! `data`, `basis`, `codes`, …) and says what was expected.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum SparseCodingError {
    /// A setting out of its range: β, a tolerance, a target sparsity, a batch size.
    Setting { field: &'static str, value: f64, expected: &'static str },
    /// A buffer that does not fit the basis, or a basis of no vectors or no inputs.
    Shape { field: &'static str, message: String },
    /// A NaN or an infinity in an input (`data`, `basis` or starting `codes`).
    NonFinite { field: &'static str, at: String, value: f32 },
    /// No β reaches the target sparsity (more non-zero codes than the problem admits).
    Unreachable { target: f64, beta: f64, reached: f64 },
}

impl fmt::Display for SparseCodingError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            SparseCodingError::Setting { field, value, expected } => write!(f, "sparse coding setting {field} is {value}; expected {expected}"),
            SparseCodingError::Shape { field, message } => write!(f, "sparse coding {field}: {message}"),
            SparseCodingError::NonFinite { field, at, value } => write!(f, "sparse coding {field}{at} is {value}; expected a finite number"),
            SparseCodingError::Unreachable { target, beta, reached } => write!(
                f,
                "sparse coding sparsity: the target {target} (fraction of non-zero codes) is not reachable; at β = {beta:e} only {reached} of the codes are non-zero"
            ),
        }
    }
}

impl std::error::Error for SparseCodingError {}

/// `Ok` when `value` is finite and `> 0`, else a [`SparseCodingError::Setting`] naming `field`.
pub fn positive(field: &'static str, value: f64) -> Result<(), SparseCodingError> {
    if value > 0.0 && value.is_finite() {
        Ok(())
    } else {
        Err(SparseCodingError::Setting { field, value, expected: "a finite number > 0" })
    }
}

/// An error naming the first NaN or infinity of `values`, seen as rows of `width`.
pub fn check_finite(field: &'static str, values: &[f32], width: usize, row_name: &str, column_name: &str) -> Result<(), SparseCodingError> {
    match values.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(k) => Err(SparseCodingError::NonFinite { field, at: format!("[{row_name} {}, {column_name} {}]", k / width.max(1), k % width.max(1)), value: values[k] }),
    }
}
