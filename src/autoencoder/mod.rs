//! Sparse autoencoders (Stanford UFLDL / CS294A; Klaus & Welles, *Optimizing Propagation and
//! Sparsity Enforcement for a Fully Connected Scalable Feedforward Sparse Autoencoder*,
//! 2014): the CPU reference of the model family.
//!
//! - `model`: W₁, b₁, W₂, b₂ (untied), in the backends' `n_visible × n_hidden` layout, UFLDL's
//!   initialisation drawn from Philox;
//! - `cost`: the exact cost `J` (reconstruction, weight decay, KL sparsity over the whole
//!   batch) and its gradient, every product a `Backend` call, `J` summed in `f64`, NaN/Inf
//!   reported by name;
//! - `lbfgs` + `wolfe`: minFunc's L-BFGS and strong-Wolfe line search (the exercise's
//!   optimiser), on the same `Objective` as the supervised conjugate gradient, and stepwise
//!   ([`lbfgs::Lbfgs`]) on an `AsyncObjective` (`stepwise`: the page awaits the device), its
//!   vectors on the host or a device (`vectors`);
//! - `sgd`: mini-batch gradient descent with momentum;
//! - `optimise`: one entry point for the three;
//! - `stack`: stacked autoencoders, greedy pretraining and fine-tuning into a SoftMax.

pub mod cost;
pub mod lbfgs;
pub mod model;
pub mod optimise;
pub mod sgd;
pub mod stack;
pub mod stepwise;
pub mod vectors;
pub mod wolfe;

pub use cost::{cost, cost_and_gradient, Cost, CostError, CostSettings, Workspace};
pub use model::Autoencoder;
pub use optimise::{train, Method, TrainError, TrainReport};
