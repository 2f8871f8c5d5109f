//! Choosing β for a target sparsity (the fraction of codes that are not zero; Raina et al.'s
//! Table 4 compares 3%, 6% and 10%, "obtained by using different β values").
//!
//! The fraction falls as β grows and is 0 from `β_max = max |Bᵀx|` over the sample on (there
//! `a = 0` meets the optimality conditions). The search brackets the target between
//! `β_max` and `β_max·10⁻³ʲ` (`j` = 1, 2, … until the fraction there is above the target), then
//! bisects `log β`, each evaluation a code step on the sample started from the previous
//! evaluation's codes. It stops when the fraction is within `tolerance·target` of the target, or
//! after `max_evaluations` with the closest β seen. The β found is for the basis it was searched
//! with: as the basis learns, the same β gives another sparsity.

use super::basis::Basis;
use super::codes::{solve_codes, CodeSolver};
use super::error::{positive, SparseCodingError};
use super::products::{check_data, correlations, nonzero_fraction};
use crate::backend::Backend;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SparsitySettings {
    /// The fraction of non-zero codes wanted, in (0, 1).
    pub target: f64,
    /// Relative: the search stops within `tolerance·target` of the target.
    pub tolerance: f64,
    pub max_evaluations: usize,
}

impl SparsitySettings {
    /// A 5% relative tolerance (3% ± 0.15%), at most 40 code steps.
    pub fn new(target: f64) -> SparsitySettings {
        SparsitySettings { target, tolerance: 0.05, max_evaluations: 40 }
    }

    pub fn validate(&self) -> Result<(), SparseCodingError> {
        if !(self.target > 0.0 && self.target < 1.0) {
            return Err(SparseCodingError::Setting { field: "sparsity", value: self.target, expected: "a fraction of non-zero codes strictly between 0 and 1" });
        }
        positive("sparsity_tolerance", self.tolerance)?;
        if self.max_evaluations == 0 {
            return Err(SparseCodingError::Setting { field: "max_evaluations", value: 0.0, expected: "at least 1" });
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SparsitySearch {
    pub beta: f64,
    /// The fraction of non-zero codes at `beta` on the sample.
    pub nonzero_fraction: f64,
    pub target: f64,
    pub tolerance: f64,
    /// Code steps run.
    pub evaluations: usize,
    /// Cases in the sample.
    pub cases: usize,
}

/// The β whose codes on `sample` (`m × k`) have the target fraction of non-zeros.
pub fn beta_for_sparsity(backend: &dyn Backend, basis: &Basis, sample: &[f32], settings: &SparsitySettings, solver: &CodeSolver) -> Result<SparsitySearch, SparseCodingError> {
    settings.validate()?;
    solver.validate()?;
    let rows = check_data(basis, sample)?;
    let beta_max = correlations(backend, basis, sample).iter().fold(0.0f64, |m, &c| m.max(f64::from(c.abs())));
    if beta_max == 0.0 {
        return Err(SparseCodingError::Unreachable { target: settings.target, beta: 0.0, reached: 0.0 });
    }
    let mut search = Search { codes: vec![0.0f32; rows * basis.n_bases], evaluations: 0, best: None, target: settings.target };
    let evaluate = |search: &mut Search, beta: f64| -> Result<f64, SparseCodingError> {
        solve_codes(backend, basis, sample, beta, solver, &mut search.codes)?;
        Ok(search.record(beta))
    };
    let close = |fraction: f64| (fraction - settings.target).abs() <= settings.tolerance * settings.target;
    let found = |beta: f64, nonzero_fraction: f64, evaluations: usize| SparsitySearch { beta, nonzero_fraction, target: settings.target, tolerance: settings.tolerance, evaluations, cases: rows };
    let mut high = beta_max;
    let mut low = beta_max;
    loop {
        low *= 1e-3;
        let fraction = evaluate(&mut search, low)?;
        if close(fraction) {
            return Ok(found(low, fraction, search.evaluations));
        }
        if fraction > settings.target {
            break;
        }
        high = low;
        if low < beta_max * 1e-12 || search.evaluations >= settings.max_evaluations {
            return Err(SparseCodingError::Unreachable { target: settings.target, beta: low, reached: fraction });
        }
    }
    while search.evaluations < settings.max_evaluations {
        let middle = (low * high).sqrt();
        let fraction = evaluate(&mut search, middle)?;
        if close(fraction) {
            return Ok(found(middle, fraction, search.evaluations));
        }
        if fraction > settings.target {
            low = middle;
        } else {
            high = middle;
        }
    }
    let (beta, fraction) = search.best.expect("at least one evaluation");
    Ok(found(beta, fraction, search.evaluations))
}

/// The search's state: the codes carried from one evaluation to the next, and the β whose
/// fraction came closest to the target.
struct Search {
    codes: Vec<f32>,
    evaluations: usize,
    best: Option<(f64, f64)>,
    target: f64,
}

impl Search {
    /// Counts an evaluation at `beta` of the codes just solved; their non-zero fraction.
    fn record(&mut self, beta: f64) -> f64 {
        self.evaluations += 1;
        let fraction = nonzero_fraction(&self.codes);
        if self.best.is_none_or(|(_, f)| (fraction - self.target).abs() < (f - self.target).abs()) {
            self.best = Some((beta, fraction));
        }
        fraction
    }
}
