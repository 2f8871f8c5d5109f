#![cfg(not(target_arch = "wasm32"))]
//! GPU evaluation, generative chains and AIS (src/gpu/{evaluate,chains,ais}.rs) against the CPU
//! reference, natively on lavapipe:
//! `WGPU_BACKEND=vulkan VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json cargo test --test gpu_eval -- --nocapture`.
//! The bodies live in tests/common_gpu_eval and also run in headless Chromium
//! (tests/web_gpu_eval.rs).

mod common_gpu_eval;

use common_gpu_eval::{random_rbm, stroke_bytes, Outcome};
use deepbelief::data::{load_idx_dataset, Dataset};
use deepbelief::gpu::GpuContext;
use deepbelief::model::VisibleUnits;
use std::path::Path;

fn context() -> GpuContext {
    let ctx = pollster::block_on(GpuContext::new()).expect("a wgpu adapter (install mesa-vulkan-drivers for lavapipe)");
    eprintln!("adapter: {:?}", ctx.summary());
    ctx
}

fn check(outcome: Outcome) {
    match outcome {
        Ok(report) => eprintln!("{report}"),
        Err(reason) => panic!("{reason}"),
    }
}

fn mnist(n: usize) -> Dataset {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mnist/train-10k-images-idx3-ubyte.gz");
    load_idx_dataset(&path, None).expect("../shared/data/mnist (see /work/shared/TOOLCHAIN.md)").take_first(n)
}

#[test]
fn evaluation_matches_cpu_on_mnist() {
    let ctx = context();
    // 2500 cases: chunks of 1024 plus a tail; max_cases 2000 spreads them.
    let data = mnist(2500);
    let rbm = random_rbm(784, 200, 1, 0.05, VisibleUnits::Bernoulli);
    check(pollster::block_on(common_gpu_eval::evaluation_matches_cpu(&ctx, &rbm, &data, 2000, 1e-5)));
}

#[test]
fn evaluation_matches_cpu_on_small_random_rbms() {
    let ctx = context();
    let data = stroke_bytes(300, 37, 5);
    check(pollster::block_on(common_gpu_eval::evaluation_matches_cpu(&ctx, &random_rbm(37, 13, 2, 0.5, VisibleUnits::Bernoulli), &data, usize::MAX, 1e-5)));
    let floats = common_gpu_eval::binarised(&stroke_bytes(70, 20, 6));
    check(pollster::block_on(common_gpu_eval::evaluation_matches_cpu(&ctx, &random_rbm(20, 300, 3, 0.3, VisibleUnits::Gaussian), &floats, usize::MAX, 1e-5)));
}

#[test]
fn propagation_matches_cpu_on_mnist() {
    let ctx = context();
    check(pollster::block_on(common_gpu_eval::propagation_matches_cpu(&ctx, &mnist(5000), &[300, 50])));
}
