#![cfg(not(target_arch = "wasm32"))]
//! The backend-neutral suite (tests/support/backend_suite.rs) on the CPU reference backend.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use support::backend_suite;
use support::mnist::mnist;

#[test]
fn visible_to_hidden_matches_loops() {
    backend_suite::visible_to_hidden_matches_loops(&CpuBackend);
}

#[test]
fn hidden_to_visible_matches_loops() {
    backend_suite::hidden_to_visible_matches_loops(&CpuBackend);
}

#[test]
fn accumulate_outer_matches_loops() {
    backend_suite::accumulate_outer_matches_loops(&CpuBackend);
}

#[test]
fn bernoulli_follows_its_stream_and_probabilities() {
    backend_suite::bernoulli_follows_its_stream_and_probabilities(&CpuBackend);
}

#[test]
fn cd_epoch_matches_cpu() {
    backend_suite::cd_epoch_matches_cpu(&CpuBackend, &mnist(300));
}

#[test]
fn supervised_gradient_matches_cpu() {
    backend_suite::supervised_gradient_matches_cpu(&CpuBackend);
}
