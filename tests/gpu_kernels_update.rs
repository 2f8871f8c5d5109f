#![cfg(not(target_arch = "wasm32"))]
//! The device-resident update, reduction, schedule and free-energy kernels against the CPU
//! reference on native wgpu (Mesa lavapipe in CI):
//! `WGPU_BACKEND=vulkan VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json cargo test --test gpu_kernels_update`.
//! The checks live in tests/support/gpu_update.rs, shared with the web suite (`web_gpu_update.rs`).

mod support;

use deepbelief::model::VisibleUnits;
use deepbelief::train::config::Schedule;
use support::check::check;
use support::gpu_update::*;

fn gpu() -> Gpu {
    pollster::block_on(Gpu::new()).expect("a wgpu adapter (install mesa-vulkan-drivers for lavapipe)")
}

#[test]
fn weight_update_784x500() {
    let gpu = gpu();
    check(pollster::block_on(weight_update(&gpu, 784, 500, true)));
    check(pollster::block_on(weight_update(&gpu, 784, 500, false)));
}

#[test]
fn weight_update_53x29() {
    let gpu = gpu();
    check(pollster::block_on(weight_update(&gpu, 53, 29, true)));
    check(pollster::block_on(weight_update(&gpu, 53, 29, false)));
}

/// Past 4096 workgroups of 1024 weights the spans grow (here 1280 weights per workgroup).
/// The update as the gradient product's epilogue: Medium tiles with edges (784 × 500), Small
/// ones (53 × 29), Large ones with edges (2048 × 2100, 272 tiles: it starts with half tasks);
/// lavapipe offers the storage buffers.
#[test]
fn fused_gradient_update_matches_cpu() {
    use deepbelief::gpu::gemm::{staggered_half_tasks, Tiling};
    assert!(staggered_half_tasks(Tiling::Large, 2048, 2100) > 0, "the 2048 × 2100 case should cover the staggered start");
    let gpu = gpu();
    check(pollster::block_on(fused_gradient_update(&gpu, 784, 500, 100, 100, true, true)));
    check(pollster::block_on(fused_gradient_update(&gpu, 784, 500, 100, 100, false, true)));
    check(pollster::block_on(fused_gradient_update(&gpu, 53, 29, 7, 13, true, true)));
    check(pollster::block_on(fused_gradient_update(&gpu, 2048, 2100, 8, 8, true, true)));
}

#[test]
fn weight_update_long_spans() {
    let gpu = gpu();
    check(pollster::block_on(weight_update(&gpu, 2049, 2100, true)));
}

#[test]
fn bias_steps_in_one_dispatch_equal_two() {
    let gpu = gpu();
    check(pollster::block_on(bias_steps_in_one_dispatch(&gpu, 784, 500, 100, 100, true)));
    check(pollster::block_on(bias_steps_in_one_dispatch(&gpu, 53, 29, 7, 13, true)));
}

#[test]
fn bias_steps_and_sparsity() {
    let gpu = gpu();
    check(pollster::block_on(bias_steps(&gpu, 784, 500, 100, 100)));
    check(pollster::block_on(bias_steps(&gpu, 53, 29, 7, 13)));
    check(pollster::block_on(bias_steps(&gpu, 784, 500, 2500, 1000)));
}

#[test]
fn schedule_adaptive_and_fixed() {
    let gpu = gpu();
    check(pollster::block_on(schedule_rules(&gpu, Schedule::Adaptive)));
    check(pollster::block_on(schedule_rules(&gpu, Schedule::Fixed)));
}

#[test]
fn column_means_max_abs_squared_error() {
    check(pollster::block_on(reductions(&gpu())));
}

#[test]
fn free_energy_bernoulli_and_gaussian() {
    let gpu = gpu();
    check(pollster::block_on(free_energies(&gpu, VisibleUnits::Bernoulli, 784, 500, 50)));
    check(pollster::block_on(free_energies(&gpu, VisibleUnits::Gaussian, 784, 500, 20)));
    check(pollster::block_on(free_energies(&gpu, VisibleUnits::Gaussian, 53, 29, 7)));
    check(pollster::block_on(free_energies(&gpu, VisibleUnits::Bernoulli, 53, 29, 7)));
}

#[test]
fn device_resident_batches() {
    let gpu = gpu();
    check(pollster::block_on(device_batches(&gpu, 784, 500, 100, 6)));
    check(pollster::block_on(device_batches(&gpu, 53, 29, 7, 8)));
}

#[test]
fn grid_folds_past_the_dimension_limit() {
    use deepbelief::gpu::reduce::grid;
    assert_eq!(grid(1), (1, 1));
    assert_eq!(grid(65_535), (65_535, 1));
    assert_eq!(grid(65_536), (65_535, 2));
    assert_eq!(grid(200_000), (65_535, 4));
}

/// Timing of the update half of a device-resident CD batch (bias steps, weight update,
/// squared error, schedule) on whatever adapter is present, with the adapter's own limits so
/// large layers fit: `cargo test --release --test gpu_kernels_update -- --ignored --nocapture`.
/// Shapes from `UPDATE_BENCH_SHAPES="784x500x100,4096x11008x192"` (nv x nh x rows).
#[test]
#[ignore]
fn time_update_dispatches() {
    let shapes = std::env::var("UPDATE_BENCH_SHAPES").unwrap_or_else(|_| "784x500x100".into());
    for shape in shapes.split(',') {
        let dims: Vec<usize> = shape.split('x').map(|d| d.parse().expect("nv x nh x rows")).collect();
        let line = pollster::block_on(time_update(dims[0], dims[1], dims[2], 200)).unwrap();
        eprintln!("{line}");
    }
}
