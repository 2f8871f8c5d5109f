#![cfg(not(target_arch = "wasm32"))]
//! A/B timing of GEMM kernel choices ([`Tuning`], tilings) on a real GPU, for the device
//! machine: ignored in ordinary test runs (it takes minutes and a GPU with GiBs of memory).
//! Every choice runs on the same random operands, rounds interleave the choices so that clock
//! and temperature drift hits them alike, and each choice's output is first compared with the
//! automatic choice's on a ragged product (every tile edge cut).
//!
//! ```text
//! GEMM_AB_SHAPES='nn:8192x8192x8192 nnb:10000x8192x4096 ntb:10000x4096x8192 tn:8192x10000x4096' \
//! GEMM_AB_TUNINGS='base; g=8; va,vb; db; t=huge' GEMM_AB_ROUNDS=3 GEMM_AB_REPEATS=10 \
//! cargo test --release --test gpu_gemm_ab -- --ignored --nocapture
//! ```
//!
//! Shapes are `layout:MxKxN`: `nn` A·B, `nnb` A·B + bias → sigmoid (the autoencoder's encoder),
//! `ntb` A·Bᵀ + bias → sigmoid (its decoder), `nt` A·Bᵀ, `tn` alpha·Aᵀ·B + C (its gradients).
//! A tuning is `base` (the automatic choice) or comma-separated changes to it: `g=G`
//! (group_rows), `va`, `vb`, `vo`, `db`, `dk`, `ui`, `rp`, `es`, `un` (each `=0` to clear; see
//! [`Tuning`]'s fields), `t=large|huge|wide|medium`.

use deepbelief::backend::Activation;
use deepbelief::gpu::buffers::{self, read_back, upload};
use deepbelief::gpu::gemm::{GemmKernels, GemmOp, Tiling, Tuning};
use deepbelief::gpu::GpuContext;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    Nn,
    NnBias,
    Nt,
    NtBias,
    Tn,
}

struct Shape {
    name: String,
    layout: Layout,
    m: u32,
    k: u32,
    n: u32,
}

fn parse_shape(text: &str) -> Shape {
    let (layout, dims) = text.split_once(':').unwrap_or_else(|| panic!("GEMM_AB_SHAPES: {text:?} is not layout:MxKxN"));
    let layout = match layout {
        "nn" => Layout::Nn,
        "nnb" => Layout::NnBias,
        "nt" => Layout::Nt,
        "ntb" => Layout::NtBias,
        "tn" => Layout::Tn,
        other => panic!("GEMM_AB_SHAPES: layout {other:?} is not nn, nnb, nt, ntb or tn"),
    };
    let d: Vec<u32> = dims.split('x').map(|v| v.parse().unwrap_or_else(|_| panic!("GEMM_AB_SHAPES: {dims:?} is not MxKxN"))).collect();
    assert_eq!(d.len(), 3, "GEMM_AB_SHAPES: {dims:?} is not MxKxN");
    Shape { name: text.to_string(), layout, m: d[0], k: d[1], n: d[2] }
}

/// A tuning string applied to the automatic choice (`tiling`, `tuning`).
fn apply(text: &str, mut tiling: Tiling, mut tuning: Tuning) -> (Tiling, Tuning) {
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty() && *s != "base") {
        let (key, value) = item.split_once('=').unwrap_or((item, "1"));
        let flag = value != "0";
        match key {
            "g" => tuning.group_rows = value.parse().expect("g=G"),
            "va" => tuning.vec_a = flag,
            "vb" => tuning.vec_b = flag,
            "vo" => tuning.vec_out = flag,
            "db" => tuning.double_buffer = flag,
            "dk" => tuning.deep_k = flag,
            "ui" => tuning.unchecked_interior = flag,
            "rp" => tuning.register_prefetch = flag,
            "es" => tuning.sample_epilogue = flag,
            "un" => tuning.unroll = flag,
            "t" => {
                tiling = match value {
                    "large" => Tiling::Large,
                    "huge" => Tiling::Huge,
                    "wide" => Tiling::Wide,
                    "medium" => Tiling::Medium,
                    "small" => Tiling::Small,
                    other => panic!("GEMM_AB_TUNINGS: tiling {other:?}"),
                }
            }
            other => panic!("GEMM_AB_TUNINGS: unknown key {other:?}"),
        }
    }
    (tiling, tuning)
}

/// Uniform values in [lo, hi) from a 32-bit LCG: cheap for hundreds of MiB, and never zeros.
fn values(len: usize, seed: u32, lo: f32, hi: f32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2654435761).wrapping_add(12345);
    (0..len)
        .map(|_| {
            x = x.wrapping_mul(1664525).wrapping_add(1013904223);
            lo + (hi - lo) * ((x >> 8) as f32 / 16_777_216.0)
        })
        .collect()
}

struct Operands {
    a: wgpu::Buffer,
    b: wgpu::Buffer,
    c: wgpu::Buffer,
    bias: wgpu::Buffer,
}

fn operands(ctx: &GpuContext, s: &Shape, seed: u32) -> Operands {
    let (m, k, n) = (s.m as usize, s.k as usize, s.n as usize);
    Operands {
        a: upload(ctx, "ab_a", &values(m * k, seed, 0.0, 1.0)),
        b: upload(ctx, "ab_b", &values(k * n, seed + 1, -0.05, 0.05)),
        c: upload(ctx, "ab_c", &values(m * n, seed + 2, -0.5, 0.5)),
        bias: upload(ctx, "ab_bias", &values(n, seed + 3, -1.0, 1.0)),
    }
}

fn op<'a>(s: &Shape, o: &'a Operands) -> GemmOp<'a> {
    let base = GemmOp::new(s.m, s.k, s.n, &o.a, &o.b, &o.c);
    match s.layout {
        Layout::Nn => base,
        Layout::NnBias => base.bias(&o.bias).activation(Activation::Sigmoid),
        Layout::Nt => base.transpose_b(),
        Layout::NtBias => base.transpose_b().bias(&o.bias).activation(Activation::Sigmoid),
        Layout::Tn => base.transpose_a().alpha(1e-4).accumulate(),
    }
}

/// `base` with the changes of `text` to its automatic (or forced) choices.
fn tuned<'a>(kernels: &GemmKernels, ctx: &GpuContext, base: GemmOp<'a>, text: &str) -> Result<GemmOp<'a>, String> {
    if text.trim() == "base" {
        return Ok(base);
    }
    let auto = kernels.prepare(ctx, &base).map_err(|e| e.0)?;
    let (tiling, tuning) = apply(text, auto.tiling, auto.tuning);
    Ok(base.tiling(tiling).tuning(tuning))
}

/// Seconds for `repeats` back-to-back products in one pass, after the queue drained.
fn time(ctx: &GpuContext, kernels: &GemmKernels, op: &GemmOp, repeats: u32) -> Result<f64, String> {
    let call = kernels.prepare(ctx, op).map_err(|e| e.0)?;
    pollster::block_on(buffers::wait_idle(ctx)).map_err(|e| e.0)?;
    let start = Instant::now();
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        for _ in 0..repeats {
            call.dispatch(&mut pass, 0);
        }
    }
    ctx.queue.submit([encoder.finish()]);
    pollster::block_on(buffers::wait_idle(ctx)).map_err(|e| e.0)?;
    Ok(start.elapsed().as_secs_f64())
}

/// Max |tuned − auto| / max |auto| of one product on a ragged shape (`GEMM_AB_CHECK_DIMS`) of
/// the same layout, both with `tiling` (the timed shape's automatic tiling).
fn check(ctx: &GpuContext, kernels: &GemmKernels, layout: Layout, tiling: Tiling, text: &str) -> Result<f64, String> {
    let dims = std::env::var("GEMM_AB_CHECK_DIMS").unwrap_or_else(|_| "1036x1028x1044".into());
    let d = parse_shape(&format!("nn:{dims}"));
    let s = Shape { name: String::new(), layout, m: d.m, k: d.k, n: d.n };
    let o = operands(ctx, &s, 7);
    let out = |op: GemmOp| -> Result<Vec<f32>, String> {
        let c0 = values((s.m * s.n) as usize, 9, -0.5, 0.5);
        ctx.queue.write_buffer(&o.c, 0, bytemuck::cast_slice(&c0));
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        kernels.record(ctx, &mut encoder, &op).map_err(|e| e.0)?;
        ctx.queue.submit([encoder.finish()]);
        pollster::block_on(read_back::<f32>(ctx, &o.c, 0, (s.m * s.n) as usize)).map_err(|e| e.0)
    };
    let want = out(op(&s, &o).tiling(tiling))?;
    let got = out(tuned(kernels, ctx, op(&s, &o).tiling(tiling), text)?)?;
    let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64;
    let worst = got.iter().zip(&want).fold(0.0f64, |m, (g, w)| if g.is_finite() { m.max((*g as f64 - *w as f64).abs()) } else { f64::INFINITY });
    Ok(worst / scale)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
#[ignore = "timing on a real GPU: run on the device machine (see the file's header)"]
fn gemm_ab() {
    let env = |key: &str, default: &str| std::env::var(key).unwrap_or_else(|_| default.to_string());
    let shapes: Vec<Shape> = env("GEMM_AB_SHAPES", "nn:8192x8192x8192").split_whitespace().map(parse_shape).collect();
    let tunings: Vec<String> = env("GEMM_AB_TUNINGS", "base").split(';').map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect();
    let rounds: usize = env("GEMM_AB_ROUNDS", "3").parse().expect("GEMM_AB_ROUNDS");
    let repeats: u32 = env("GEMM_AB_REPEATS", "10").parse().expect("GEMM_AB_REPEATS");
    let ctx = pollster::block_on(buffers::context_with_adapter_limits()).expect("a GPU");
    eprintln!("adapter: {:?}", ctx.summary());
    let kernels = GemmKernels::new(&ctx);

    let mut mismatches = 0;
    if env("GEMM_AB_CHECK", "1") == "1" {
        let mut layouts: Vec<(Layout, Tiling)> = Vec::new();
        for s in &shapes {
            let tiling = Tiling::auto(s.m, s.n);
            if !layouts.contains(&(s.layout, tiling)) {
                layouts.push((s.layout, tiling));
            }
        }
        for (layout, tiling) in layouts {
            for t in &tunings {
                match check(&ctx, &kernels, layout, tiling, t) {
                    Ok(e) => {
                        let verdict = if e < 1e-5 { "" } else { "  MISMATCH" };
                        println!("check {layout:?} {tiling:?} [{t}]: max |tuned - auto| / max |auto| = {e:.1e}{verdict}");
                        mismatches += usize::from(e >= 1e-5);
                    }
                    Err(e) => println!("check {layout:?} {tiling:?} [{t}]: not possible: {e}"),
                }
            }
        }
    }

    // times[shape][tuning] = seconds per product, one per round.
    let mut times = vec![vec![Vec::new(); tunings.len()]; shapes.len()];
    let mut chosen = vec![vec![String::new(); tunings.len()]; shapes.len()];
    let all: Vec<Operands> = shapes.iter().enumerate().map(|(si, s)| operands(&ctx, s, 1 + si as u32)).collect();
    for (si, s) in shapes.iter().enumerate() {
        let o = &all[si];
        for (ti, t) in tunings.iter().enumerate() {
            // Warm-up: compiles the pipeline.
            match tuned(&kernels, &ctx, op(s, o), t).and_then(|op| {
                let call = kernels.prepare(&ctx, &op).map_err(|e| e.0)?;
                chosen[si][ti] = format!("{:?} {:?} x{}", call.tiling, call.tuning, call.splits);
                time(&ctx, &kernels, &op, 1)
            }) {
                Ok(_) => {}
                Err(e) => {
                    chosen[si][ti].clear();
                    println!("{} [{t}]: not possible: {e}", s.name)
                }
            }
        }
    }
    for round in 0..rounds {
        for (si, s) in shapes.iter().enumerate() {
            let o = &all[si];
            for (ti, t) in tunings.iter().enumerate() {
                if chosen[si][ti].is_empty() {
                    continue;
                }
                let op = tuned(&kernels, &ctx, op(s, o), t).unwrap();
                let seconds = time(&ctx, &kernels, &op, repeats).unwrap() / repeats as f64;
                times[si][ti].push(seconds);
                let tflops = 2.0 * s.m as f64 * s.k as f64 * s.n as f64 / seconds / 1e12;
                println!("round {round} {} [{t}]: {:.3} ms, {tflops:.2} TFLOP/s", s.name, seconds * 1e3);
            }
        }
    }
    println!("\nmedian of {rounds} rounds of {repeats} products; ratio: base time / this time (> 1 faster)");
    for (si, s) in shapes.iter().enumerate() {
        let base = if times[si][0].is_empty() { f64::NAN } else { median(&mut times[si][0].clone()) };
        for (ti, t) in tunings.iter().enumerate() {
            if times[si][ti].is_empty() {
                continue;
            }
            let mut v = times[si][ti].clone();
            let med = median(&mut v);
            let (lo, hi) = (v[0], v[v.len() - 1]);
            let tflops = |x: f64| 2.0 * s.m as f64 * s.k as f64 * s.n as f64 / x / 1e12;
            println!("{:<24} {:<28} {:7.3} ms {:6.2} TFLOP/s ({:.2}-{:.2}) x{:.3}  {}", s.name, format!("[{t}]"), med * 1e3, tflops(med), tflops(hi), tflops(lo), base / med, chosen[si][ti]);
        }
    }
    assert_eq!(mismatches, 0, "{mismatches} choices differ from the automatic one (see MISMATCH above)");
}
