//! Turning database columns into RBM inputs in [0, 1], as the DEEP program does.
//! The fitted [`Preprocessing`] is saved with a model so that a test database
//! is transformed exactly like the training one.

use serde::{Deserialize, Serialize};

use std::collections::HashMap;

use super::database::{name_key, Database};
use super::error::{DataError, DataErrorKind};
use super::{CaseValues, Dataset, Targets};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scaling {
    /// (x - min) / (max - min), so the training data span 0..1.
    Rescale,
    /// 1 if x is above the training mean, else 0.
    BinarySplit,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preprocessing {
    pub scaling: Scaling,
    /// Column indices (in the training database) of the non-constant inputs.
    pub kept: Vec<usize>,
    pub kept_names: Vec<String>,
    /// Training statistics of each kept column, aligned with `kept`.
    pub min: Vec<f64>,
    pub max: Vec<f64>,
    pub mean: Vec<f64>,
    /// Inputs dropped because they were constant in the training data.
    pub dropped_names: Vec<String>,
}

impl Preprocessing {
    /// Learns the scaling of `input_columns` from `db`, dropping constant columns,
    /// which carry no information and cannot be rescaled.
    pub fn fit(
        db: &Database,
        input_columns: &[usize],
        scaling: Scaling,
    ) -> Result<Self, DataError> {
        let fail =
            |message: String| DataError::new(&db.source_name, DataErrorKind::Preprocess(message));
        check_columns(db, input_columns)?;
        check_distinct(db, input_columns, "an input")?;
        if db.n_cases == 0 {
            return Err(DataError::new(&db.source_name, DataErrorKind::Empty));
        }
        if input_columns.is_empty() {
            return Err(fail(
                "no input variables selected (expected at least one)".into(),
            ));
        }
        let mut fitted = Preprocessing {
            scaling,
            kept: Vec::new(),
            kept_names: Vec::new(),
            min: Vec::new(),
            max: Vec::new(),
            mean: Vec::new(),
            dropped_names: Vec::new(),
        };
        for &column in input_columns {
            let (mut min, mut max, mut mean) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
            for case in 0..db.n_cases {
                let x = db.value(case, column);
                min = min.min(x);
                max = max.max(x);
                // A running mean stays within [min, max], where a sum of values near
                // f64::MAX overflows to infinity (saved as `null`, a model nothing loads).
                // Both terms are divided before subtracting so that neither can overflow.
                let count = (case + 1) as f64;
                mean += x / count - mean / count;
            }
            if let Some((statistic, value)) = [("minimum", min), ("maximum", max), ("mean", mean)].into_iter().find(|(_, v)| !v.is_finite()) {
                return Err(fail(format!(
                    "variable {}: its {statistic} over the training cases is {value} (expected a finite number)",
                    db.names[column]
                )));
            }
            if max == min {
                fitted.dropped_names.push(db.names[column].clone());
                continue;
            }
            fitted.kept.push(column);
            fitted.kept_names.push(db.names[column].clone());
            fitted.min.push(min);
            fitted.max.push(max);
            fitted.mean.push(mean);
        }
        if fitted.kept.is_empty() {
            return Err(fail(format!(
                "all {} input variables are constant ({}); expected at least one that varies",
                input_columns.len(),
                fitted.dropped_names.join(", ")
            )));
        }
        Ok(fitted)
    }

    /// Builds the dataset for `db`, which may be a test database with its columns
    /// in another order: each kept input is found by name among `input_columns`.
    /// `target_columns` are copied unscaled.
    pub fn apply(
        &self,
        db: &Database,
        input_columns: &[usize],
        target_columns: &[usize],
    ) -> Result<Dataset, DataError> {
        check_columns(db, input_columns)?;
        check_columns(db, target_columns)?;
        if db.n_cases == 0 {
            return Err(DataError::new(&db.source_name, DataErrorKind::Empty));
        }
        let selected_names: Vec<String> =
            input_columns.iter().map(|&c| db.names[c].clone()).collect();
        // A map, not a search per kept input, so wide databases take linear time.
        let selected: HashMap<String, usize> = input_columns
            .iter()
            .rev()
            .map(|&c| (name_key(&db.names[c]), c))
            .collect();
        let columns: Vec<usize> = self
            .kept_names
            .iter()
            .map(|name| {
                selected
                    .get(&name_key(name))
                    .copied()
                    .ok_or_else(|| {
                        DataError::new(
                            &db.source_name,
                            DataErrorKind::UnknownVariable {
                                name: name.clone(),
                                available: selected_names.clone(),
                            },
                        )
                    })
            })
            .collect::<Result<_, _>>()?;

        let mut values = Vec::with_capacity(db.n_cases * columns.len());
        for case in 0..db.n_cases {
            for (k, &column) in columns.iter().enumerate() {
                values.push(self.scale(k, db.value(case, column)));
            }
        }
        // Targets are kept as f32, where values beyond ±3.4e38 would become infinite.
        for &column in target_columns {
            if let Some(case) = (0..db.n_cases).find(|&case| !(db.value(case, column) as f32).is_finite()) {
                return Err(DataError::new(
                    &db.source_name,
                    DataErrorKind::Preprocess(format!(
                        "target variable {}: case {} holds {:e}, beyond the largest target this program keeps (expected at most {:e} in size)",
                        db.names[column],
                        case + 1,
                        db.value(case, column),
                        f32::MAX
                    )),
                ));
            }
        }
        let targets = (!target_columns.is_empty()).then(|| Targets {
            names: target_columns
                .iter()
                .map(|&c| db.names[c].clone())
                .collect(),
            values: (0..db.n_cases)
                .flat_map(|case| {
                    target_columns
                        .iter()
                        .map(move |&c| db.value(case, c) as f32)
                })
                .collect(),
        });
        Ok(Dataset {
            name: db.source_name.clone(),
            n_cases: db.n_cases,
            n_inputs: columns.len(),
            image_shape: None,
            values: CaseValues::Floats(values),
            labels: None,
            input_names: self.kept_names.clone(),
            targets,
        })
    }

    /// Scales one value of kept input `k`.
    fn scale(&self, k: usize, x: f64) -> f32 {
        match self.scaling {
            // Values of a test set outside the training range are clamped, so
            // the RBM never sees inputs beyond [0, 1].
            Scaling::Rescale => {
                let (min, max) = (self.min[k], self.max[k]);
                let unit = if (max - min).is_finite() {
                    (x - min) / (max - min)
                } else {
                    // The range of values near ±f64::MAX overflows; halving is exact, so
                    // this is the same ratio without the overflow.
                    (x / 2.0 - min / 2.0) / (max / 2.0 - min / 2.0)
                };
                unit.clamp(0.0, 1.0) as f32
            }
            Scaling::BinarySplit => {
                if x > self.mean[k] {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }
}

/// Fits the preprocessing on `db` and applies it; inputs and targets are named.
pub fn dataset_from_database(
    db: &Database,
    inputs: &[&str],
    targets: &[&str],
    scaling: Scaling,
) -> Result<(Dataset, Preprocessing), DataError> {
    let input_columns = db.column_indices(inputs)?;
    let target_columns = db.column_indices(targets)?;
    check_distinct(db, &target_columns, "a target")?;
    let preprocessing = Preprocessing::fit(db, &input_columns, scaling)?;
    let dataset = preprocessing.apply(db, &input_columns, &target_columns)?;
    Ok((dataset, preprocessing))
}

fn check_columns(db: &Database, columns: &[usize]) -> Result<(), DataError> {
    match columns.iter().find(|&&c| c >= db.n_vars()) {
        Some(&c) => Err(DataError::new(
            &db.source_name,
            DataErrorKind::Preprocess(format!(
                "column index {c} is out of range (expected less than {}, the number of variables)",
                db.n_vars()
            )),
        )),
        None => Ok(()),
    }
}

/// A variable selected twice would silently become two identical units (or outputs).
fn check_distinct(db: &Database, columns: &[usize], role: &str) -> Result<(), DataError> {
    let mut first_at = HashMap::with_capacity(columns.len());
    for (at, &column) in columns.iter().enumerate() {
        if let Some(first) = first_at.insert(column, at) {
            return Err(DataError::new(
                &db.source_name,
                DataErrorKind::Preprocess(format!(
                    "variable {} is selected twice as {role}, at places {} and {} of the list (expected each variable at most once)",
                    db.names[column],
                    first + 1,
                    at + 1
                )),
            ));
        }
    }
    Ok(())
}
