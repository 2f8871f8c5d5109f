//! Sparse coding with an L1 penalty (Raina, Madhavan & Ng 2009, §3.2 and §6; Lee et al. 2006):
//! the CPU reference of the model family (issue 18).
//!
//! Given cases `x⁽ⁱ⁾ ∈ ℝᵏ` (rows of `X`), learn a basis `B` (`k × n`, columns `‖b_j‖ ≤ 1`) and
//! codes `A` minimising `½‖X − BA‖²_F + β‖A‖₁`, by alternating two convex steps:
//!
//! - `basis`: the model, `B` in the backends' `k × n` layout, seeded random unit columns, the
//!   norm projection;
//! - `products`: the shared products (`BᵀB`, `Bᵀx`, `Ba`) as [`Backend`](crate::backend::Backend)
//!   calls, and the objective summed in `f64`;
//! - `codes`: the code step's entry ([`solve_codes`], [`encode`]), with two solvers:
//!   `raina` (§6.1: every coordinate's minimiser in parallel, a line search over fixed step
//!   sizes) and `coordinate_descent` (scikit-learn's `lasso_cd`, the CPU reference);
//! - `basis_step`: projected gradient descent on `B`;
//! - `fit`: alternating minimisation over the whole set or mini-batches;
//! - `sparsity`: β for a target fraction of non-zero codes, by bisection;
//! - `inputs`: natural-image patches centred and scaled for it.
//!
//! Every function takes the backend and plain slices (cases as rows), so a device path can
//! provide the same steps through the engine.

pub mod basis;
pub mod basis_step;
pub mod codes;
pub mod coordinate_descent;
pub mod error;
pub mod fit;
pub mod inputs;
pub mod products;
pub mod raina;
pub mod sparsity;

pub use basis::Basis;
pub use basis_step::{basis_step, BasisStepReport, BasisStepSettings, StepRule};
pub use codes::{encode, solve_codes, CodeSolver, CodeStepReport};
pub use coordinate_descent::CdSettings;
pub use error::SparseCodingError;
pub use fit::{fit, forgetting_factor, BatchRecord, FitPosition, FitReport, FitRun, FitSettings, PassRecord, StatisticsRule};
pub use products::{objective, reconstruct, Objective};
pub use raina::RainaSettings;
pub use sparsity::{beta_for_sparsity, SparsitySearch, SparsitySettings};
