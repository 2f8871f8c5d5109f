#![cfg(not(target_arch = "wasm32"))]
//! The Philox, GEMM and sampling kernels on native wgpu (Mesa lavapipe in CI) against the CPU
//! reference. The test bodies live in tests/support/gpu_kernels.rs and also run in headless Chromium
//! (tests/web_gpu_gemm.rs). Run with WGPU_BACKEND=vulkan
//! VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json to pin lavapipe.

mod support;

use deepbelief::gpu::gemm::{GemmVariant, Tiling, Tuning};
use support::check::check;
use support::device::context;
use support::gpu_kernels;

#[test]
fn philox_in_wgsl_is_bit_identical() {
    let ctx = context();
    check(pollster::block_on(gpu_kernels::philox_matches_cpu(&ctx)));
}

#[test]
fn gemm_products_match_cpu_on_rbm_and_odd_shapes() {
    let ctx = context();
    let shapes = [(100, 784, 500), (37, 53, 29), (1, 1, 1), (65, 130, 257), (129, 7, 131)];
    check(pollster::block_on(gpu_kernels::gemm_matches_cpu(&ctx, &shapes, &Tiling::ALL, &[None, Some(1), Some(3)], &[None])));
}

/// The kernel choices the H100's tuned rules take (variant.rs::tuned_rule) and the A/B
/// harness's others, forced on this adapter: unrolled k loops with unchecked interior tiles,
/// vec4 slab loads, two slabs, k steps of 16, grouped tile order. Ragged shapes cut every tile
/// edge, so the interior/edge split and the bounds checks are both exercised.
#[test]
fn gemm_tunings_match_cpu() {
    let ctx = context();
    let shapes = [(100, 784, 500), (37, 53, 29), (260, 132, 264), (129, 7, 131)];
    let plain = Tuning { register_prefetch: true, sample_epilogue: false, ..Tuning::default() };
    let tunings = [
        Some(Tuning { unroll: true, unchecked_interior: true, ..plain }),
        Some(Tuning { unroll: true, unchecked_interior: true, vec_a: true, vec_b: true, double_buffer: true, ..plain }),
        Some(Tuning { unroll: true, unchecked_interior: true, vec_a: true, vec_b: true, deep_k: true, ..plain }),
        Some(Tuning { group_rows: 8, register_prefetch: false, ..plain }),
    ];
    check(pollster::block_on(gpu_kernels::gemm_matches_cpu(&ctx, &shapes, &[Tiling::Large, Tiling::Huge, Tiling::Small], &[None, Some(2)], &tunings)));
}

#[test]
fn gemm_u8_gather_matches_cpu_on_strokes_and_mnist() {
    let ctx = context();
    check(pollster::block_on(gpu_kernels::gemm_u8_gather_matches_cpu(&ctx, &gpu_kernels::stroke_pixels(300), 784)));
    let images = support::mnist::shared_mnist("t10k-images-idx3-ubyte.gz");
    if images.exists() {
        let dataset = deepbelief::data::load_idx_dataset(&images, None).unwrap();
        let deepbelief::data::CaseValues::Bytes(bytes) = &dataset.values else { panic!("MNIST pixels are bytes") };
        check(pollster::block_on(gpu_kernels::gemm_u8_gather_matches_cpu(&ctx, &bytes[..1000 * 784], 784)));
    } else {
        eprintln!("(no MNIST at {}: strokes only)", images.display());
    }
}

#[test]
fn fused_bernoulli_matches_cpu() {
    let ctx = context();
    check(pollster::block_on(gpu_kernels::fused_bernoulli_matches_cpu(&ctx)));
}

#[test]
fn bernoulli_matches_cpu() {
    let ctx = context();
    check(pollster::block_on(gpu_kernels::bernoulli_matches_cpu(&ctx)));
}

#[test]
fn gaussian_noise_matches_cpu() {
    let ctx = context();
    check(pollster::block_on(gpu_kernels::gaussian_noise_matches_cpu(&ctx)));
}

#[test]
fn prepared_calls_slots_offsets_and_one_pass_chain() {
    let ctx = context();
    check(pollster::block_on(gpu_kernels::prepared_calls_and_offsets(&ctx)));
}

#[test]
fn many_workgroups_fold_into_the_grid() {
    let ctx = context();
    check(pollster::block_on(gpu_kernels::many_workgroups_fold(&ctx)));
}

#[test]
fn gemm_throughput_is_measured() {
    let ctx = context();
    let shapes = [
        (100, 784, 500, GemmVariant::Nn),
        (100, 500, 784, GemmVariant::Nt),
        (784, 100, 500, GemmVariant::Tn),
        (100, 784, 500, GemmVariant::U8GatherNn),
        (192, 576, 1024, GemmVariant::Nn),
    ];
    check(pollster::block_on(gpu_kernels::throughput(&ctx, &shapes, 5)));
}

/// The GFLOP/s table for the report (on a real GPU: `cargo test --release --test
/// gpu_kernels_gemm throughput_table -- --ignored --nocapture`). Uses the adapter's own limits,
/// which 8192² f32 operands (256 MiB) need; `GEMM_TABLE_ALL=1` adds every tiling and a split-k
/// sweep for the small shapes.
#[test]
#[ignore]
fn throughput_table() {
    use deepbelief::gpu::gemm::{auto_splits, gemm_gflops_with};
    let ctx = pollster::block_on(deepbelief::gpu::buffers::context_with_adapter_limits()).expect("a wgpu adapter");
    eprintln!("adapter: {:?}", ctx.summary());
    let all = std::env::var("GEMM_TABLE_ALL").is_ok();
    let shapes = [
        (100, 784, 500, GemmVariant::Nn, "hidden = v·W"),
        (100, 500, 784, GemmVariant::Nt, "visible = h·Wᵀ"),
        (784, 100, 500, GemmVariant::Tn, "gradient += vᵀ·h"),
        (100, 784, 500, GemmVariant::U8GatherNn, "hidden = pixels[order]·W"),
        (100, 784, 500, GemmVariant::Nt, "literal NT"),
        (100, 784, 500, GemmVariant::Tn, "literal TN"),
        (192, 576, 1024, GemmVariant::Nn, ""),
        (192, 4096, 11008, GemmVariant::Nn, ""),
        (8192, 8192, 8192, GemmVariant::Nn, ""),
    ];
    for (m, k, n, variant, what) in shapes {
        let flops = 2.0 * m as f64 * k as f64 * n as f64;
        let repeats = (5e10 / flops).clamp(3.0, 2000.0) as u32;
        let tiling = Tiling::auto(m, n);
        let gflops = pollster::block_on(gemm_gflops_with(&ctx, m, k, n, variant, None, None, repeats)).unwrap();
        let mut line = format!("{m}x{k}x{n} {variant:?} {what}: {gflops:.0} GFLOP/s ({tiling:?}, split {})", auto_splits(tiling, m, n, k));
        if all {
            for t in Tiling::ALL {
                for split in [1, 2, 4, 8, 12, 16] {
                    if split > 1 && flops > 1e10 {
                        continue;
                    }
                    let g = pollster::block_on(gemm_gflops_with(&ctx, m, k, n, variant, Some(t), Some(split), repeats)).unwrap();
                    line += &format!(" {t:?}/{split}:{g:.0}");
                }
            }
        }
        eprintln!("{line}");
    }
}

/// The CD gradient as one paired product, `alpha·Aᵀ·B + alpha2·A2ᵀ·B2` (k cut at k_split), with
/// split k in one pass (native Vulkan) and in two, against an f64 reference.
#[test]
fn paired_product_and_split_k_match_reference() {
    use deepbelief::gpu::buffers::{read_back, upload, zeros_f32};
    use deepbelief::gpu::gemm::{GemmKernels, GemmOp};
    let ctx = context();
    let kernels = GemmKernels::new(&ctx);
    let value = |i: usize, salt: usize| (((i * 2654435761 + salt * 40503) % 1000) as f32) / 1000.0 - 0.5;
    for &(m, k1, k2, n, tiling, splits) in &[(53usize, 37usize, 21usize, 29usize, Tiling::Medium, 1u32), (130, 100, 100, 70, Tiling::Small, 3), (784, 100, 100, 500, Tiling::Medium, 1), (65, 64, 200, 257, Tiling::Wide, 4), (132, 100, 60, 260, Tiling::Large, 1), (68, 64, 36, 132, Tiling::Wide, 2)] {
        let a: Vec<f32> = (0..k1 * m).map(|i| value(i, 1)).collect();
        let b: Vec<f32> = (0..k1 * n).map(|i| value(i, 2)).collect();
        let a2: Vec<f32> = (0..k2 * m).map(|i| value(i, 3)).collect();
        let b2: Vec<f32> = (0..k2 * n).map(|i| value(i, 4)).collect();
        let (alpha, alpha2) = (0.25f32, -0.125f32);
        let (ga, gb, ga2, gb2, gc) = (upload(&ctx, "a", &a), upload(&ctx, "b", &b), upload(&ctx, "a2", &a2), upload(&ctx, "b2", &b2), zeros_f32(&ctx, "c", m * n));
        let op = GemmOp::new(m as u32, (k1 + k2) as u32, n as u32, &ga, &gb, &gc).transpose_a().alpha(alpha).paired(&ga2, &gb2, k1 as u32, alpha2).tiling(tiling).split_k(splits);
        // vec4 loads need m and n (the contiguous axes of Aᵀ and B) to be multiples of 4, and
        // are used with Small and Medium tiles (Large and Wide only with a fused update).
        let vec4 = m % 4 == 0 && n % 4 == 0 && matches!(tiling, Tiling::Small | Tiling::Medium);
        let call = kernels.prepare(&ctx, &op).expect("a valid paired product");
        assert_eq!(call.vec4, vec4, "{m}×{n} {tiling:?}: vec4 loads");
        assert_eq!(call.vec4_outputs, n % 4 == 0 && tiling != Tiling::Large, "{m}×{n} {tiling:?}: vec4 outputs (and split k's partials)");
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        kernels.record(&ctx, &mut encoder, &op).expect("a valid paired product");
        ctx.queue.submit([encoder.finish()]);
        let got: Vec<f32> = pollster::block_on(read_back(&ctx, &gc, 0, m * n)).unwrap();
        let mut worst = 0.0f64;
        for i in 0..m {
            for j in 0..n {
                let mut want = 0.0f64;
                for p in 0..k1 {
                    want += alpha as f64 * a[p * m + i] as f64 * b[p * n + j] as f64;
                }
                for p in 0..k2 {
                    want += alpha2 as f64 * a2[p * m + i] as f64 * b2[p * n + j] as f64;
                }
                worst = worst.max((got[i * n + j] as f64 - want).abs());
            }
        }
        assert!(worst < 1e-5, "{m}×({k1}+{k2})×{n} {tiling:?} ×{splits}: max |error| {worst:e}");
    }
}
