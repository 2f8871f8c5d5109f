#![cfg(not(target_arch = "wasm32"))]
//! The backend-neutral suite (tests/backend_suite) on the CPU reference backend.

mod backend_suite;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::{load_idx_dataset, Dataset};
use std::path::Path;

fn mnist(n: usize) -> Dataset {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mnist/train-10k-images-idx3-ubyte.gz");
    load_idx_dataset(&path, None).expect("../shared/data/mnist").take_first(n)
}

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
