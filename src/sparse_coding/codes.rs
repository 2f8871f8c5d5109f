//! The code step: for a fixed basis, each case's codes minimise the L1-regularised least
//! squares problem (Raina et al.'s equation 6)
//!
//! `½‖x − Ba‖² + β‖a‖₁`,
//!
//! independently of every other case. Two solvers: Raina's parallel one ([`super::raina`]) and
//! cyclic coordinate descent ([`super::coordinate_descent`]), both starting from the codes
//! they are given (zeros, or the last step's codes: a warm start).

use super::basis::Basis;
use super::coordinate_descent::{self, CdSettings};
use super::error::SparseCodingError;
use super::products::{check_beta, check_codes, check_data};
use super::raina::{self, RainaSettings};
use crate::backend::Backend;
use serde::{Deserialize, Serialize};

/// Which solver computes the codes, with its settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeSolver {
    /// Raina, Madhavan & Ng §6.1: every coordinate's minimiser in parallel, a line search
    /// along the direction to them.
    Raina(RainaSettings),
    /// Cyclic coordinate descent (scikit-learn's `sparse_encode(algorithm='lasso_cd')`).
    CoordinateDescent(CdSettings),
}

impl CodeSolver {
    pub fn raina() -> CodeSolver {
        CodeSolver::Raina(RainaSettings::default())
    }

    pub fn coordinate_descent() -> CodeSolver {
        CodeSolver::CoordinateDescent(CdSettings::default())
    }

    /// `raina` or `cd`, as the CLI names them.
    pub fn name(&self) -> &'static str {
        match self {
            CodeSolver::Raina(_) => "raina",
            CodeSolver::CoordinateDescent(_) => "cd",
        }
    }

    pub fn validate(&self) -> Result<(), SparseCodingError> {
        match self {
            CodeSolver::Raina(settings) => settings.validate(),
            CodeSolver::CoordinateDescent(settings) => settings.validate(),
        }
    }
}

/// How a code step went over its cases.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CodeStepReport {
    pub cases: usize,
    /// Iterations (Raina) or sweeps over the coordinates (coordinate descent) per case: the
    /// mean and the most.
    pub iterations_mean: f64,
    pub iterations_max: usize,
    /// Cases that reached the iteration limit before the stopping rule.
    pub unconverged: usize,
    /// The cases' objective after the step, as the solver tracked it in `f64` (Raina: from the
    /// changes of its steps; coordinate descent: from `BᵀB a` and `Bᵀx`).
    pub objective: f64,
}

impl CodeStepReport {
    /// From each case's iterations, whether it met the stopping rule, and its objective.
    pub fn from_cases(cases: &[(usize, bool, f64)]) -> CodeStepReport {
        let total: usize = cases.iter().map(|c| c.0).sum();
        CodeStepReport {
            cases: cases.len(),
            iterations_mean: total as f64 / cases.len().max(1) as f64,
            iterations_max: cases.iter().map(|c| c.0).max().unwrap_or(0),
            unconverged: cases.iter().filter(|c| !c.1).count(),
            objective: cases.iter().map(|c| c.2).sum(),
        }
    }
}

/// The inputs of a code step checked: β, the solver's settings, the data and the starting
/// codes; the number of cases.
pub fn check_code_step(basis: &Basis, data: &[f32], beta: f64, solver: &CodeSolver, codes: &[f32]) -> Result<usize, SparseCodingError> {
    check_beta(beta)?;
    solver.validate()?;
    let rows = check_data(basis, data)?;
    check_codes(basis, rows, codes)?;
    Ok(rows)
}

/// Improves `codes` (`m × n`, the starting point) for `data` (`m × k`) by `solver`.
pub fn solve_codes(backend: &dyn Backend, basis: &Basis, data: &[f32], beta: f64, solver: &CodeSolver, codes: &mut [f32]) -> Result<CodeStepReport, SparseCodingError> {
    match solver {
        CodeSolver::Raina(settings) => raina::solve(backend, basis, data, beta, settings, codes),
        CodeSolver::CoordinateDescent(settings) => coordinate_descent::solve(backend, basis, data, beta, settings, codes),
    }
}

/// The codes of `data` (`m × k`) from zero.
pub fn encode(backend: &dyn Backend, basis: &Basis, data: &[f32], beta: f64, solver: &CodeSolver) -> Result<(Vec<f32>, CodeStepReport), SparseCodingError> {
    let rows = data.len() / basis.n_inputs.max(1);
    let mut codes = vec![0.0f32; rows * basis.n_bases];
    let report = solve_codes(backend, basis, data, beta, solver, &mut codes)?;
    Ok((codes, report))
}
