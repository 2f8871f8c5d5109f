//! What the test files share, written once: each includes it with `mod support;` and imports
//! what it uses (so the rest looks unused from there).
//!
//! - `check`: the `Outcome` of a shared check, `check` to report or fail it on either target,
//!   and deterministic test numbers;
//! - `fixtures`: seeded random RBMs and hand-made data sets;
//! - `mnist` (native): the shared MNIST files in ../shared/data/mnist;
//! - `device`: a wgpu device (lavapipe natively, WebGPU in the browser);
//! - `cli` (native): the built binary, temporary folders, a small IDX file;
//! - `gpu_kernels`, `gpu_eval`, `gpu_update`: GPU parity checks against the CPU reference, run
//!   natively on lavapipe and in headless Chromium on WebGPU (the engine-neutral checks live in
//!   tests/engine_suite);
//! - `web_playground` (wasm): synthetic data sets and readers for the page API's values.

#![allow(dead_code)]
// `ensure!(x <= tol)` fails on NaN, which is the point.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

/// Returns `Err(message)` from the enclosing check unless `$cond` holds.
#[allow(unused_macros)]
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

pub mod check;
#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
pub mod device;
pub mod fixtures;
pub mod gpu_eval;
pub mod gpu_kernels;
pub mod gpu_update;
#[cfg(not(target_arch = "wasm32"))]
pub mod mnist;
#[cfg(target_arch = "wasm32")]
pub mod web_playground;
