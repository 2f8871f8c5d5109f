//! DeepBelief Playground: deep belief nets (RBM stacks) trained natively or in the browser.
//!
//! Data flows one way: `data` (IDX / DEEP databases, preprocessing) → `train` (schedules,
//! calling only `backend` operations) → `model` (plain, serialisable parameters) →
//! `format` (the saved model file) → `sample` / `report` (Gibbs chains, image grids). `web`
//! wraps it for a Web Worker.

pub mod autoencoder;
pub mod backend;
pub mod bench;
pub mod clock;
pub mod data;
pub mod engine;
pub mod eval;
pub mod format;
pub mod gpu;
pub mod local_rbm;
pub mod model;
pub mod preset;
pub mod report;
pub mod recurrent;
pub mod rng;
pub mod sample;
pub mod sparse_coding;
pub mod supervised;
pub mod train;

#[cfg(target_arch = "wasm32")]
pub mod web;
