#![cfg(not(target_arch = "wasm32"))]
//! The backend-neutral suite (tests/support/backend_suite.rs) on the wgpu kernels through `GpuBackend`
//! (natively; on Mesa lavapipe in CI:
//! `WGPU_BACKEND=vulkan VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json cargo test --test gpu_backend`).

mod support;

use deepbelief::gpu::blocking_backend::GpuBackend;
use support::backend_suite;
use support::device::context;
use support::mnist::mnist;

fn backend() -> GpuBackend {
    let backend = GpuBackend::new(context());
    eprintln!("{}", deepbelief::backend::Backend::describe(&backend));
    backend
}

/// Every call of a test ran on the device (none fell back to the CPU).
fn on_device(backend: &GpuBackend) {
    assert!(!backend.has_failed(), "a call fell back to the CPU");
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
