#![cfg(not(target_arch = "wasm32"))]
//! The backend-neutral suite (tests/backend_suite) on the wgpu kernels through `GpuBackend`
//! (natively; on Mesa lavapipe in CI:
//! `WGPU_BACKEND=vulkan VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json cargo test --test gpu_backend`).

mod backend_suite;

use deepbelief::gpu::blocking_backend::GpuBackend;
use deepbelief::gpu::GpuContext;
use deepbelief::data::{load_idx_dataset, Dataset};
use std::path::Path;

fn backend() -> GpuBackend {
    let backend = GpuBackend::new(pollster::block_on(GpuContext::new()).expect("a wgpu adapter (install mesa-vulkan-drivers for lavapipe)"));
    eprintln!("{}", deepbelief::backend::Backend::describe(&backend));
    backend
}

/// Every call of a test ran on the device (none fell back to the CPU).
fn on_device(backend: &GpuBackend) {
    assert!(!backend.has_failed(), "a call fell back to the CPU");
}

fn mnist(n: usize) -> Dataset {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mnist/train-10k-images-idx3-ubyte.gz");
    load_idx_dataset(&path, None).expect("../shared/data/mnist").take_first(n)
}

#[test]
fn visible_to_hidden_matches_loops() {
    let backend = backend();
    backend_suite::visible_to_hidden_matches_loops(&backend);
    on_device(&backend);
}

#[test]
fn hidden_to_visible_matches_loops() {
    let backend = backend();
    backend_suite::hidden_to_visible_matches_loops(&backend);
    on_device(&backend);
}

#[test]
fn accumulate_outer_matches_loops() {
    let backend = backend();
    backend_suite::accumulate_outer_matches_loops(&backend);
    on_device(&backend);
}

#[test]
fn bernoulli_follows_its_stream_and_probabilities() {
    let backend = backend();
    backend_suite::bernoulli_follows_its_stream_and_probabilities(&backend);
    on_device(&backend);
}

#[test]
fn cd_epoch_matches_cpu() {
    let backend = backend();
    backend_suite::cd_epoch_matches_cpu(&backend, &mnist(300));
    on_device(&backend);
}

#[test]
fn supervised_gradient_matches_cpu() {
    let backend = backend();
    backend_suite::supervised_gradient_matches_cpu(&backend);
    on_device(&backend);
}
