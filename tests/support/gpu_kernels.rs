//! One GPU kernel suite, many platforms: the bodies of the Philox / GEMM / sampling parity tests,
//! run natively on lavapipe by tests/gpu_kernels_gemm.rs and on WebGPU in headless Chromium by
//! tests/web_gpu_gemm.rs. Each returns a one-line report (max errors, mismatch counts) or the
//! reason it failed.

use super::check::{gpu, hash, values, Outcome};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::{Activation, Backend, Weights};
use deepbelief::gpu::buffers::{self, StepSlot, StepTable};
use deepbelief::gpu::gemm::{self, GemmKernels, GemmOp, GemmVariant, MatRef, SampleTo, Tiling, Tuning};
use deepbelief::gpu::sample::{self, SampleKernels, SampleOp};
use deepbelief::gpu::GpuContext;
use deepbelief::rng::{philox4x32_10, Purpose, RngStream};

async fn run(ctx: &GpuContext, record: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<(), String>) -> Result<(), String> {
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    record(&mut encoder)?;
    ctx.queue.submit([encoder.finish()]);
    Ok(())
}

async fn read(ctx: &GpuContext, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>, String> {
    gpu(buffers::read_back::<f32>(ctx, buffer, 0, len).await)
}

// ---------------------------------------------------------------------------------------------
// Philox

pub async fn philox_matches_cpu(ctx: &GpuContext) -> Outcome {
    // Random123's known answers, then hashed counters and keys.
    let mut cases = vec![
        ([0u32; 4], [0u32; 2]),
        ([u32::MAX; 4], [u32::MAX; 2]),
        ([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]),
    ];
    for t in 0..4096u32 {
        let h = |j: u32| hash(t * 8 + j);
        cases.push(([h(0), h(1), h(2), h(3)], [h(4), h(5)]));
    }
    let blocks = gpu(sample::philox_blocks(ctx, &cases).await)?;
    ensure!(blocks[0] == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8], "known answer 0: {:x?}", blocks[0]);
    let block_mismatches = cases.iter().zip(&blocks).filter(|((c, k), g)| philox4x32_10(*c, *k) != **g).count();
    ensure!(block_mismatches == 0, "{block_mismatches} of {} Philox blocks differ", cases.len());

    // Uniforms: every purpose, steps beyond 2^32, indices across 2^32 and 2^34 (the counter's
    // high bits), consecutive runs crossing block boundaries.
    let mut uniform_cases = Vec::new();
    let purposes = [Purpose::HiddenSample, Purpose::VisibleSample, Purpose::GibbsHidden, Purpose::GibbsVisible, Purpose::InputSample, Purpose::ChainHidden, Purpose::RandomStart];
    let steps = [0u64, 1, 12_345, (1 << 32) + 7, u64::MAX - 3];
    let bases = [0u64, 1_000_003, (1 << 32) - 5, (1 << 34) - 3, (1 << 40) + 11, u64::MAX - 70];
    for (p, &purpose) in purposes.iter().enumerate() {
        for (s, &step) in steps.iter().enumerate() {
            let stream = RngStream::new(0x0123_4567_89ab_cdef ^ ((p as u64) << 40) ^ s as u64, step, purpose);
            for &base in &bases {
                for i in 0..64u64 {
                    uniform_cases.push((stream, base.wrapping_add(i)));
                }
            }
        }
    }
    let gpu_uniforms = gpu(sample::uniforms(ctx, &uniform_cases).await)?;
    let mut uniform_mismatches = 0;
    for ((stream, index), g) in uniform_cases.iter().zip(&gpu_uniforms) {
        if stream.uniform(*index).to_bits() != g.to_bits() {
            uniform_mismatches += 1;
        }
    }
    ensure!(uniform_mismatches == 0, "{uniform_mismatches} of {} uniforms differ", uniform_cases.len());
    Ok(format!("philox: {} blocks and {} uniforms (indices up to 2^64, steps up to 2^64) bit-identical", cases.len(), uniform_cases.len()))
}

// ---------------------------------------------------------------------------------------------
// GEMM

/// Worst errors of one comparison: elementwise relative to Σ|a||b| + |bias| + |old C| (the
/// scale of f32 rounding in a dot product), and absolute.
#[derive(Default, Clone, Copy)]
struct Errors {
    relative: f64,
    absolute: f64,
}

impl Errors {
    fn add(&mut self, gpu: &[f32], cpu: &[f32], scale: &[f32]) {
        for ((g, c), s) in gpu.iter().zip(cpu).zip(scale) {
            let diff = (*g as f64 - *c as f64).abs();
            self.absolute = self.absolute.max(diff);
            self.relative = self.relative.max(diff / (*s as f64).max(1e-30));
        }
    }

    fn max(self, other: Errors) -> Errors {
        Errors { relative: self.relative.max(other.relative), absolute: self.absolute.max(other.absolute) }
    }
}

fn abs(values: &[f32]) -> Vec<f32> {
    values.iter().map(|x| x.abs()).collect()
}

/// Σ_k |a_ik| |b_kj| (+ |bias_j|) for the relative-error scale, by the CPU reference.
fn scale_v2h(w: &[f32], nv: usize, nh: usize, v: &[f32], bias: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; v.len() / nv * nh];
    CpuBackend.visible_to_hidden(Weights { values: &abs(w), n_visible: nv, n_hidden: nh }, &abs(v), &abs(bias), Activation::Linear, &mut out);
    out
}

fn scale_h2v(w: &[f32], nv: usize, nh: usize, h: &[f32], bias: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; h.len() / nh * nv];
    CpuBackend.hidden_to_visible(Weights { values: &abs(w), n_visible: nv, n_hidden: nh }, &abs(h), &abs(bias), Activation::Linear, &mut out);
    out
}

fn scale_outer(nv: usize, nh: usize, v: &[f32], h: &[f32], alpha: f32, old: &[f32]) -> Vec<f32> {
    let mut out = abs(old);
    CpuBackend.accumulate_outer((nv, nh), &abs(v), &abs(h), alpha.abs(), &mut out);
    out
}

/// The three RBM products with every tiling and split-k factor (`None`: automatic), against
/// `CpuBackend`, on `rows × nv × nh`.
/// Every tiling × split k × kernel tuning (`None`: the automatic choice) against the CPU. A
/// forced tuning applies to the products it can take (vec4 loads to aligned ones only).
pub async fn gemm_matches_cpu(ctx: &GpuContext, shapes: &[(usize, usize, usize)], tilings: &[Tiling], splits: &[Option<u32>], tunings: &[Option<Tuning>]) -> Outcome {
    let kernels = GemmKernels::new(ctx);
    let mut lines = Vec::new();
    let mut worst = Errors::default();
    let mut worst_sigmoid = 0.0f64;
    let mut output_kinds = [false; 2]; // scalar, vec4
    let mut refused = 0;
    for &(rows, nv, nh) in shapes {
        let (r, v_, h_) = (rows as u32, nv as u32, nh as u32);
        let seed = (rows * 1_000_003 + nv * 1009 + nh) as u32;
        let w = values(nv * nh, seed, -0.1, 0.1);
        let v = values(rows * nv, seed + 1, 0.0, 1.0);
        let h = values(rows * nh, seed + 2, 0.0, 1.0);
        let hb = values(nh, seed + 3, -1.0, 1.0);
        let vb = values(nv, seed + 4, -1.0, 1.0);
        let g0 = values(nv * nh, seed + 5, -0.5, 0.5);
        let alpha = -0.37f32;
        let weights = Weights { values: &w, n_visible: nv, n_hidden: nh };

        let mut cpu_h_lin = vec![0.0; rows * nh];
        CpuBackend.visible_to_hidden(weights, &v, &hb, Activation::Linear, &mut cpu_h_lin);
        let mut cpu_h_sig = vec![0.0; rows * nh];
        CpuBackend.visible_to_hidden(weights, &v, &hb, Activation::Sigmoid, &mut cpu_h_sig);
        let mut cpu_v_lin = vec![0.0; rows * nv];
        CpuBackend.hidden_to_visible(weights, &h, &vb, Activation::Linear, &mut cpu_v_lin);
        let mut cpu_g = g0.clone();
        CpuBackend.accumulate_outer((nv, nh), &v, &h, alpha, &mut cpu_g);
        let (s_h, s_v, s_g) = (scale_v2h(&w, nv, nh, &v, &hb), scale_h2v(&w, nv, nh, &h, &vb), scale_outer(nv, nh, &v, &h, alpha, &g0));

        let w_buf = buffers::upload(ctx, "w", &w);
        let v_buf = buffers::upload(ctx, "v", &v);
        let h_buf = buffers::upload(ctx, "h", &h);
        let hb_buf = buffers::upload(ctx, "hb", &hb);
        let vb_buf = buffers::upload(ctx, "vb", &vb);
        let variants = tilings.iter().flat_map(|&t| splits.iter().flat_map(move |&s| tunings.iter().map(move |&u| (t, s, u))));
        for (tiling, split, tuning) in variants.filter(|(t, _, u)| u.is_none_or(|u| !u.deep_k || *t == Tiling::Large)) {
            let out_h = buffers::zeros_f32(ctx, "out_h", rows * nh);
            let out_h_sig = buffers::zeros_f32(ctx, "out_h_sig", rows * nh);
            let out_v = buffers::zeros_f32(ctx, "out_v", rows * nv);
            let g_buf = buffers::upload(ctx, "g", &g0);
            let mut variant_refused = false;
            run(ctx, |encoder| {
                let ops = [
                    GemmOp::new(r, v_, h_, &v_buf, &w_buf, &out_h).bias(&hb_buf),
                    GemmOp::new(r, v_, h_, &v_buf, &w_buf, &out_h_sig).bias(&hb_buf).activation(Activation::Sigmoid),
                    GemmOp::new(r, h_, v_, &h_buf, &w_buf, &out_v).transpose_b().bias(&vb_buf),
                    GemmOp::new(v_, r, h_, &v_buf, &h_buf, &g_buf).transpose_a().alpha(alpha).accumulate(),
                ];
                for op in ops {
                    let mut op = op.tiling(tiling);
                    op.split_k = split;
                    if let Some(t) = tuning {
                        let aligned = gemm::vec4_aligned(&op);
                        op = op.tuning(Tuning { vec_a: t.vec_a && aligned, vec_b: t.vec_b && aligned, ..t });
                        // A choice this adapter cannot take (two slabs past lavapipe's 16 KiB of
                        // workgroup memory, say) is refused by prepare, as the automatic choice
                        // would never pick it here; it is counted, not run.
                        match kernels.prepare(ctx, &op) {
                            Ok(_) => gpu(kernels.record(ctx, encoder, &op))?,
                            Err(_) => variant_refused = true,
                        }
                        continue;
                    }
                    // Packed outputs from offset 0: whole-vec4 outputs exactly when n is a
                    // multiple of 4, except with Large tiles (both kinds must agree with the CPU).
                    let vec4_outputs = gpu(kernels.prepare(ctx, &op))?.vec4_outputs;
                    ensure!(vec4_outputs == (op.n % 4 == 0 && tiling != Tiling::Large), "{rows}x{nv}x{nh} {tiling:?}: vec4 outputs {vec4_outputs} for n = {}", op.n);
                    output_kinds[vec4_outputs as usize] = true;
                    gpu(kernels.record(ctx, encoder, &op))?;
                }
                Ok(())
            })
            .await?;
            if variant_refused {
                refused += 1;
                continue;
            }
            let mut e = Errors::default();
            let gpu_h = read(ctx, &out_h, rows * nh).await?;
            e.add(&gpu_h, &cpu_h_lin, &s_h);
            let gpu_v = read(ctx, &out_v, rows * nv).await?;
            e.add(&gpu_v, &cpu_v_lin, &s_v);
            let gpu_g = read(ctx, &g_buf, nv * nh).await?;
            e.add(&gpu_g, &cpu_g, &s_g);
            let gpu_h_sig = read(ctx, &out_h_sig, rows * nh).await?;
            let sig = gpu_h_sig.iter().zip(&cpu_h_sig).fold(0.0f64, |m, (g, c)| m.max((*g as f64 - *c as f64).abs()));
            ensure!(e.relative <= 1e-5, "{rows}x{nv}x{nh} {tiling:?} split {split:?} {tuning:?}: relative error {:.3e} (absolute {:.3e})", e.relative, e.absolute);
            ensure!(sig <= 1e-5, "{rows}x{nv}x{nh} {tiling:?} split {split:?} {tuning:?}: sigmoid outputs differ by {sig:.3e}");
            worst = worst.max(e);
            worst_sigmoid = worst_sigmoid.max(sig);
        }
        lines.push(format!("{rows}x{nv}x{nh}"));
    }
    let mixed = shapes.iter().any(|s| s.1 % 4 == 0 && s.2 % 4 == 0) && shapes.iter().any(|s| s.1 % 4 != 0 || s.2 % 4 != 0);
    ensure!(!mixed || !tunings.contains(&None) || output_kinds == [true, true], "these shapes should take both scalar and vec4 outputs, took {output_kinds:?}");
    Ok(format!(
        "gemm NN/NT/TN(+accumulate) with bias, tilings {tilings:?} x splits {splits:?} x {} tunings ({refused} variants refused by the adapter's limits), shapes {}: max relative error {:.2e} (max abs {:.2e}), sigmoid max abs {:.2e}",
        tunings.len(),
        lines.join(" "),
        worst.relative,
        worst.absolute,
        worst_sigmoid
    ))
}

/// Digit-like 28 × 28 images: two or three thick anti-aliased strokes per case, so most
/// pixels are 0, many 255, and the edges take every value in between.
pub fn stroke_pixels(cases: usize) -> Vec<u8> {
    let mut pixels = vec![0u8; cases * 784];
    for case in 0..cases {
        let strokes = 2 + hash(case as u32) % 2;
        for s in 0..strokes {
            let p = |j: u32| 4.0 + 20.0 * (hash(hash(case as u32 * 16 + s) ^ j) >> 8) as f32 / 16_777_216.0;
            let (x0, y0, x1, y1) = (p(1), p(2), p(3), p(4));
            for y in 0..28 {
                for x in 0..28 {
                    let (px, py) = (x as f32, y as f32);
                    let (dx, dy) = (x1 - x0, y1 - y0);
                    let t = (((px - x0) * dx + (py - y0) * dy) / (dx * dx + dy * dy).max(1e-6)).clamp(0.0, 1.0);
                    let d = ((px - x0 - t * dx).powi(2) + (py - y0 - t * dy).powi(2)).sqrt();
                    let value = (255.0 * (2.2 - d).clamp(0.0, 1.0)) as u8;
                    let at = case * 784 + y * 28 + x;
                    pixels[at] = pixels[at].max(value);
                }
            }
        }
    }
    pixels
}

/// The first layer's products with the data as gathered u8 rows: exact conversion (through an
/// identity matrix), hidden probabilities, and the data-side gradient, against the CPU on the
/// same batch converted to f32.
pub async fn gemm_u8_gather_matches_cpu(ctx: &GpuContext, pixels: &[u8], n_inputs: usize) -> Outcome {
    let n_cases = pixels.len() / n_inputs;
    let (rows, nh, start) = (100usize.min(n_cases / 2), 500usize, 17usize.min(n_cases / 4));
    // A shuffled order (Fisher–Yates with the hash).
    let mut order: Vec<u32> = (0..n_cases as u32).collect();
    for i in (1..n_cases).rev() {
        order.swap(i, hash(i as u32 ^ 0x5eed) as usize % (i + 1));
    }
    let batch: Vec<f32> = (0..rows).flat_map(|r| pixels[order[start + r] as usize * n_inputs..][..n_inputs].iter().map(|&b| f32::from(b) / 255.0)).collect();
    let kernels = GemmKernels::new(ctx);
    let data = buffers::upload_bytes(ctx, "pixels", pixels);
    let order_buf = buffers::upload(ctx, "order", &order);
    let (r, nv, nh_) = (rows as u32, n_inputs as u32, nh as u32);

    // 1. Through the identity: C = A · I must reproduce byte / 255 bit for bit.
    let identity: Vec<f32> = (0..n_inputs * n_inputs).map(|k| if k / n_inputs == k % n_inputs { 1.0 } else { 0.0 }).collect();
    let identity = buffers::upload(ctx, "identity", &identity);
    let copy = buffers::zeros_f32(ctx, "copy", rows * n_inputs);
    run(ctx, |e| gpu(kernels.record(ctx, e, &GemmOp::new(r, nv, nv, &data, &identity, &copy).u8_a().gather_a(&order_buf, start as u32)))).await?;
    let copied = read(ctx, &copy, rows * n_inputs).await?;
    let inexact = copied.iter().zip(&batch).filter(|(g, c)| g.to_bits() != c.to_bits()).count();
    if let Some(k) = (0..copied.len()).find(|&k| copied[k].to_bits() != batch[k].to_bits()) {
        return Err(format!("{inexact} gathered pixels differ from byte / 255, first at {k}: gpu {:e} ({:#x}) cpu {:e} ({:#x})", copied[k], copied[k].to_bits(), batch[k], batch[k].to_bits()));
    }
    let distinct = {
        let mut seen = [false; 256];
        for r in 0..rows {
            for &b in &pixels[order[start + r] as usize * n_inputs..][..n_inputs] {
                seen[b as usize] = true;
            }
        }
        seen.iter().filter(|&&s| s).count()
    };

    // 2. Hidden probabilities and 3. the gradient vᵀh, with A gathered (and transposed).
    let w = values(n_inputs * nh, 99, -0.05, 0.05);
    let hb = values(nh, 98, -1.0, 1.0);
    let h = values(rows * nh, 97, 0.0, 1.0);
    let g0 = values(n_inputs * nh, 96, -0.1, 0.1);
    let alpha = 0.01f32;
    let weights = Weights { values: &w, n_visible: n_inputs, n_hidden: nh };
    let mut cpu_h = vec![0.0; rows * nh];
    CpuBackend.visible_to_hidden(weights, &batch, &hb, Activation::Linear, &mut cpu_h);
    let mut cpu_g = g0.clone();
    CpuBackend.accumulate_outer((n_inputs, nh), &batch, &h, alpha, &mut cpu_g);
    let (w_buf, hb_buf, h_buf, g_buf) = (buffers::upload(ctx, "w", &w), buffers::upload(ctx, "hb", &hb), buffers::upload(ctx, "h", &h), buffers::upload(ctx, "g", &g0));
    let out_h = buffers::zeros_f32(ctx, "out_h", rows * nh);
    let mut e = Errors::default();
    for tiling in Tiling::ALL {
        let g_buf_t = buffers::upload(ctx, "g", &g0);
        run(ctx, |enc| {
            gpu(kernels.record(ctx, enc, &GemmOp::new(r, nv, nh_, &data, &w_buf, &out_h).u8_a().gather_a(&order_buf, start as u32).bias(&hb_buf).tiling(tiling)))?;
            gpu(kernels.record(ctx, enc, &GemmOp::new(nv, r, nh_, &data, &h_buf, &g_buf_t).with_a(MatRef::new(&data, nv)).transpose_a().u8_a().gather_a(&order_buf, start as u32).alpha(alpha).accumulate().tiling(tiling)))
        })
        .await?;
        e.add(&read(ctx, &out_h, rows * nh).await?, &cpu_h, &scale_v2h(&w, n_inputs, nh, &batch, &hb));
        e.add(&read(ctx, &g_buf_t, n_inputs * nh).await?, &cpu_g, &scale_outer(n_inputs, nh, &batch, &h, alpha, &g0));
    }
    drop(g_buf);
    ensure!(e.relative <= 1e-5, "u8 gather: relative error {:.3e}", e.relative);
    Ok(format!(
        "u8 gather ({n_cases} cases, batch {rows} from {start}, {distinct} distinct byte values): conversion bit-exact, NN+TN max relative error {:.2e} (abs {:.2e})",
        e.relative, e.absolute
    ))
}

// ---------------------------------------------------------------------------------------------
// Sampling

/// The fused epilogue's samples against `CpuBackend::bernoulli` on the CPU's probabilities.
pub async fn fused_bernoulli_matches_cpu(ctx: &GpuContext) -> Outcome {
    let kernels = GemmKernels::new(ctx);
    let mut reports = Vec::new();
    for (rows, nv, nh, index_base) in [(100usize, 784usize, 500usize, 0u64), (37, 53, 29, 0), (65, 130, 257, 0), (37, 53, 29, 5), (64, 64, 64, (1 << 32) + 2)] {
        let w = values(nv * nh, 7 + nh as u32, -4.0 / (nv as f32).sqrt(), 4.0 / (nv as f32).sqrt());
        let v = values(rows * nv, 8, 0.0, 1.0);
        let hb = values(nh, 9, -1.0, 1.0);
        let stream = RngStream::new(0xdead_beef_1234, (1 << 32) + 77, Purpose::HiddenSample);
        let mut cpu_p = vec![0.0; rows * nh];
        CpuBackend.visible_to_hidden(Weights { values: &w, n_visible: nv, n_hidden: nh }, &v, &hb, Activation::Sigmoid, &mut cpu_p);
        let cpu_s: Vec<f32> = if index_base == 0 {
            let mut s = vec![0.0; rows * nh];
            CpuBackend.bernoulli(&cpu_p, stream, &mut s);
            s
        } else {
            cpu_p.iter().enumerate().map(|(k, &p)| if stream.uniform(index_base + k as u64) < p { 1.0 } else { 0.0 }).collect()
        };
        let (w_buf, v_buf, hb_buf) = (buffers::upload(ctx, "w", &w), buffers::upload(ctx, "v", &v), buffers::upload(ctx, "hb", &hb));
        let (p_buf, s_buf) = (buffers::zeros_f32(ctx, "p", rows * nh), buffers::zeros_f32(ctx, "s", rows * nh));
        let mut op = GemmOp::new(rows as u32, nv as u32, nh as u32, &v_buf, &w_buf, &p_buf).bias(&hb_buf).activation(Activation::Sigmoid);
        op.sample = Some(SampleTo { out: MatRef::new(&s_buf, nh as u32), stream, index_base });
        run(ctx, |e| gpu(kernels.record(ctx, e, &op))).await?;
        let gpu_p = read(ctx, &p_buf, rows * nh).await?;
        let gpu_s = read(ctx, &s_buf, rows * nh).await?;
        // Exact against the GPU's own probabilities.
        let own = (0..rows * nh).filter(|&k| gpu_s[k] != if stream.uniform(index_base + k as u64) < gpu_p[k] { 1.0 } else { 0.0 }).count();
        ensure!(own == 0, "{rows}x{nv}x{nh}: {own} samples differ from uniform < the GPU's own probability");
        // Against the CPU: mismatches only at near-ties.
        let mut mismatches = 0;
        let mut widest = 0.0f32;
        for k in 0..rows * nh {
            if gpu_s[k] != cpu_s[k] {
                mismatches += 1;
                let gap = (cpu_p[k] - stream.uniform(index_base + k as u64)).abs();
                widest = widest.max(gap);
                ensure!(gap < 1e-6, "{rows}x{nv}x{nh}: sample {k} differs with |p - u| = {gap:e}");
            }
        }
        ensure!(mismatches <= 5, "{rows}x{nv}x{nh}: {mismatches} samples differ from the CPU");
        let ones = gpu_s.iter().filter(|&&s| s == 1.0).count();
        ensure!(ones > 0 && ones < rows * nh, "{rows}x{nv}x{nh}: degenerate samples ({ones} ones)");
        reports.push(format!("{rows}x{nv}x{nh}@{index_base}: {mismatches} mismatches"));
    }
    Ok(format!("fused bernoulli vs CpuBackend::bernoulli: {}", reports.join(", ")))
}

/// Standalone Bernoulli against `CpuBackend::bernoulli` (bit for bit) and offsets.
pub async fn bernoulli_matches_cpu(ctx: &GpuContext) -> Outcome {
    let kernels = SampleKernels::new(ctx);
    let mut total = 0;
    for (len, index_base, offset) in [(50_000usize, 0u64, 0u64), (1, 0, 0), (4099, 0, 3), (1003, 1, 0), (777, (1 << 34) + 3, 65)] {
        let p = values(len, len as u32, 0.0, 1.0);
        let stream = RngStream::new(42 + len as u64, 3 + index_base, Purpose::VisibleSample);
        let expected: Vec<f32> = if index_base == 0 {
            let mut s = vec![0.0; len];
            CpuBackend.bernoulli(&p, stream, &mut s);
            s
        } else {
            p.iter().enumerate().map(|(k, &p)| if stream.uniform(index_base + k as u64) < p { 1.0 } else { 0.0 }).collect()
        };
        let mut padded = vec![0.5f32; offset as usize];
        padded.extend(&p);
        let p_buf = buffers::upload(ctx, "p", &padded);
        let s_buf = buffers::zeros_f32(ctx, "s", len + offset as usize + 3);
        let mut op = SampleOp::bernoulli(&p_buf, &s_buf, len as u32, stream);
        op.index_base = index_base;
        if let sample::SampleKind::Bernoulli { probabilities } = &mut op.kind {
            probabilities.offset = offset;
        }
        op.out.offset = offset + 1;
        run(ctx, |e| gpu(kernels.record(ctx, e, &op))).await?;
        let got = gpu(buffers::read_back::<f32>(ctx, &s_buf, 0, len + offset as usize + 3).await)?;
        let body = &got[offset as usize + 1..][..len];
        let differ = body.iter().zip(&expected).filter(|(a, b)| a != b).count();
        ensure!(differ == 0, "bernoulli len {len} base {index_base}: {differ} differ");
        ensure!(got[offset as usize] == 0.0 && got[offset as usize + 1 + len] == 0.0, "bernoulli wrote outside its range");
        total += len;
    }
    Ok(format!("bernoulli: {total} samples bit-identical to the CPU (offsets, index bases up to 2^34)"))
}

/// Gaussian noise against `Backend::add_gaussian_noise`, and its moments.
pub async fn gaussian_noise_matches_cpu(ctx: &GpuContext) -> Outcome {
    let kernels = SampleKernels::new(ctx);
    let len = 200_001usize;
    let base = values(len, 5, -2.0, 2.0);
    let stream = RngStream::new(2024, 11, Purpose::VisibleSample);
    let mut cpu = base.clone();
    CpuBackend.add_gaussian_noise(&mut cpu, stream);
    let buf = buffers::upload(ctx, "values", &base);
    run(ctx, |e| gpu(kernels.record(ctx, e, &SampleOp::gaussian_noise(&buf, len as u32, stream)))).await?;
    let got = read(ctx, &buf, len).await?;
    let max_diff = got.iter().zip(&cpu).fold(0.0f64, |m, (g, c)| m.max((*g as f64 - *c as f64).abs()));
    ensure!(max_diff <= 1e-4, "gaussian noise differs from the CPU by {max_diff:e}");
    let noise: Vec<f64> = got.iter().zip(&base).map(|(g, b)| (*g - *b) as f64).collect();
    let mean = noise.iter().sum::<f64>() / len as f64;
    let var = noise.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / len as f64;
    ensure!(mean.abs() < 0.01 && (var - 1.0).abs() < 0.02, "noise mean {mean}, variance {var}");

    // An odd index base: element k uses uniforms 2(base + k), 2(base + k) + 1.
    let (short, index_base) = (1001usize, 7u64);
    let zeros = buffers::zeros_f32(ctx, "zeros", short);
    let mut op = SampleOp::gaussian_noise(&zeros, short as u32, stream);
    op.index_base = index_base;
    run(ctx, |e| gpu(kernels.record(ctx, e, &op))).await?;
    let got = read(ctx, &zeros, short).await?;
    let mut base_diff = 0.0f64;
    for (k, g) in got.iter().enumerate() {
        let e = index_base + k as u64;
        let u1 = stream.uniform(2 * e).max(1.0 / 16_777_216.0);
        let u2 = stream.uniform(2 * e + 1);
        let want = (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos();
        base_diff = base_diff.max((*g as f64 - want as f64).abs());
    }
    ensure!(base_diff <= 1e-4, "gaussian noise at index base {index_base} differs by {base_diff:e}");
    Ok(format!("gaussian noise ({len} values): max |gpu - cpu| {max_diff:.2e} (offset base {base_diff:.2e}), mean {mean:.4}, variance {var:.4}"))
}

// ---------------------------------------------------------------------------------------------
// Prepared calls, step tables, windows, one-pass chains

/// A prepared call dispatched with several step-table slots, operands at unaligned offsets with
/// padded row strides, and a CD-1 chain recorded as one compute pass.
pub async fn prepared_calls_and_offsets(ctx: &GpuContext) -> Outcome {
    let kernels = GemmKernels::new(ctx);
    let samplers = SampleKernels::new(ctx);

    // 1. Windows: A at element 3 with ld k + 5, B at element 70 with ld n + 2, C at element
    //    1000 with ld n + 3, bias at element 9.
    let (m, k, n) = (37usize, 53usize, 29usize);
    let (a_off, lda, b_off, ldb, c_off, ldc, bias_off) = (3usize, k + 5, 70usize, n + 2, 1000usize, n + 3, 9usize);
    let a_full = values(a_off + m * lda, 1, -1.0, 1.0);
    let b_full = values(b_off + k * ldb, 2, -1.0, 1.0);
    let bias_full = values(bias_off + n, 3, -1.0, 1.0);
    let a: Vec<f32> = (0..m).flat_map(|r| a_full[a_off + r * lda..][..k].to_vec()).collect();
    let b: Vec<f32> = (0..k).flat_map(|r| b_full[b_off + r * ldb..][..n].to_vec()).collect();
    let bias = &bias_full[bias_off..];
    let mut cpu = vec![0.0; m * n];
    CpuBackend.visible_to_hidden(Weights { values: &b, n_visible: k, n_hidden: n }, &a, bias, Activation::Linear, &mut cpu);
    let (a_buf, b_buf, bias_buf) = (buffers::upload(ctx, "a", &a_full), buffers::upload(ctx, "b", &b_full), buffers::upload(ctx, "bias", &bias_full));
    let c_buf = buffers::zeros_f32(ctx, "c", c_off + m * ldc);
    let mut op = GemmOp::new(m as u32, k as u32, n as u32, &a_buf, &b_buf, &c_buf)
        .with_a(MatRef::at(&a_buf, a_off as u64, lda as u32))
        .with_b(MatRef::at(&b_buf, b_off as u64, ldb as u32))
        .with_c(MatRef::at(&c_buf, c_off as u64, ldc as u32));
    op.bias = Some(gemm::VecRef { buffer: &bias_buf, offset: bias_off as u64 });
    run(ctx, |e| gpu(kernels.record(ctx, e, &op))).await?;
    let c_full = read(ctx, &c_buf, c_off + m * ldc).await?;
    let mut window_err = 0.0f64;
    for r in 0..m {
        for j in 0..n {
            window_err = window_err.max((c_full[c_off + r * ldc + j] as f64 - cpu[r * n + j] as f64).abs());
        }
        for j in n..ldc {
            ensure!(r + 1 == m || c_full[c_off + r * ldc + j] == 0.0, "gemm wrote into C's row padding");
        }
    }
    ensure!(window_err < 1e-5, "offset operands: error {window_err:e}");

    // 2. Step-table slots: one prepared fused-sample call, three batches (step + row shift).
    let (rows, nv, nh, n_cases) = (20usize, 30usize, 12usize, 100usize);
    let data = values(n_cases * nv, 4, 0.0, 1.0);
    let order: Vec<u32> = (0..n_cases as u32).map(|i| (i * 37 + 11) % n_cases as u32).collect();
    let w = values(nv * nh, 5, -1.0, 1.0);
    let hb = values(nh, 6, -0.5, 0.5);
    let base = RngStream::new(77, 1000, Purpose::HiddenSample);
    let slots = [StepSlot { step: 0, row_shift: 0 }, StepSlot { step: 5, row_shift: 20 }, StepSlot { step: (1 << 32) + 1, row_shift: 60 }];
    let table = StepTable::new(ctx, &slots);
    let (data_buf, order_buf, w_buf, hb_buf) = (buffers::upload(ctx, "data", &data), buffers::upload(ctx, "order", &order), buffers::upload(ctx, "w", &w), buffers::upload(ctx, "hb", &hb));
    let outs: Vec<(wgpu::Buffer, wgpu::Buffer)> = (0..3).map(|_| (buffers::zeros_f32(ctx, "p", rows * nh), buffers::zeros_f32(ctx, "s", rows * nh))).collect();
    let calls = outs
        .iter()
        .map(|(p, s)| {
            gpu(kernels.prepare(
                ctx,
                &GemmOp::new(rows as u32, nv as u32, nh as u32, &data_buf, &w_buf, p)
                    .gather_a(&order_buf, 0)
                    .bias(&hb_buf)
                    .activation(Activation::Sigmoid)
                    .sample(s, base)
                    .slots(&table),
            ))
        })
        .collect::<Result<Vec<_>, _>>()?;
    run(ctx, |e| {
        let mut pass = e.begin_compute_pass(&Default::default());
        for (i, call) in calls.iter().enumerate() {
            call.dispatch(&mut pass, i as u32);
        }
        Ok(())
    })
    .await?;
    let mut slot_mismatches = 0;
    for (i, (p, s)) in outs.iter().enumerate() {
        let batch: Vec<f32> = (0..rows).flat_map(|r| data[order[slots[i].row_shift as usize + r] as usize * nv..][..nv].to_vec()).collect();
        let mut cpu_p = vec![0.0; rows * nh];
        CpuBackend.visible_to_hidden(Weights { values: &w, n_visible: nv, n_hidden: nh }, &batch, &hb, Activation::Sigmoid, &mut cpu_p);
        let gpu_p = read(ctx, p, rows * nh).await?;
        let err = gpu_p.iter().zip(&cpu_p).fold(0.0f64, |m, (g, c)| m.max((*g as f64 - *c as f64).abs()));
        ensure!(err < 1e-5, "slot {i}: probabilities differ by {err:e}");
        let stream = RngStream::new(77, 1000 + slots[i].step, Purpose::HiddenSample);
        let gpu_s = read(ctx, s, rows * nh).await?;
        slot_mismatches += (0..rows * nh).filter(|&k| gpu_s[k] != if stream.uniform(k as u64) < gpu_p[k] { 1.0 } else { 0.0 }).count();
    }
    ensure!(slot_mismatches == 0, "{slot_mismatches} slot samples differ from the slot's stream");

    // 3. A CD-1 step recorded as one compute pass: h0 = σ(v W + hb) → sample, v1 = σ(h0s Wᵀ + vb),
    //    h1 = σ(v1 W + hb), G += vᵀh0 − v1ᵀh1, visible noise on a copy.
    let (rows, nv, nh) = (32usize, 40usize, 24usize);
    let v = values(rows * nv, 10, 0.0, 1.0);
    let w = values(nv * nh, 11, -0.5, 0.5);
    let hb = values(nh, 12, -0.5, 0.5);
    let vb = values(nv, 13, -0.5, 0.5);
    let hidden_stream = RngStream::new(5, 9, Purpose::HiddenSample);
    let noise_stream = RngStream::new(5, 9, Purpose::VisibleSample);
    let weights = Weights { values: &w, n_visible: nv, n_hidden: nh };
    let mut h0 = vec![0.0; rows * nh];
    CpuBackend.visible_to_hidden(weights, &v, &hb, Activation::Sigmoid, &mut h0);
    let up = |name: &str, x: &[f32]| buffers::upload(ctx, name, x);
    let (v_buf, w_buf, hb_buf, vb_buf) = (up("v", &v), up("w", &w), up("hb", &hb), up("vb", &vb));
    let (h0_buf, h0s_buf, v1_buf, h1_buf) = (buffers::zeros_f32(ctx, "h0", rows * nh), buffers::zeros_f32(ctx, "h0s", rows * nh), buffers::zeros_f32(ctx, "v1", rows * nv), buffers::zeros_f32(ctx, "h1", rows * nh));
    let g_buf = buffers::zeros_f32(ctx, "g", nv * nh);
    let noisy = buffers::zeros_f32(ctx, "noisy", rows * nv);
    let (r, nv_, nh_) = (rows as u32, nv as u32, nh as u32);
    let chain = [
        gpu(kernels.prepare(ctx, &GemmOp::new(r, nv_, nh_, &v_buf, &w_buf, &h0_buf).bias(&hb_buf).activation(Activation::Sigmoid).sample(&h0s_buf, hidden_stream)))?,
        gpu(kernels.prepare(ctx, &GemmOp::new(r, nh_, nv_, &h0s_buf, &w_buf, &v1_buf).transpose_b().bias(&vb_buf).activation(Activation::Sigmoid)))?,
        gpu(kernels.prepare(ctx, &GemmOp::new(r, nv_, nh_, &v1_buf, &w_buf, &h1_buf).bias(&hb_buf).activation(Activation::Sigmoid)))?,
        gpu(kernels.prepare(ctx, &GemmOp::new(nv_, r, nh_, &v_buf, &h0_buf, &g_buf).transpose_a().accumulate()))?,
        gpu(kernels.prepare(ctx, &GemmOp::new(nv_, r, nh_, &v1_buf, &h1_buf, &g_buf).transpose_a().alpha(-1.0).accumulate()))?,
    ];
    let noise_call = gpu(samplers.prepare(ctx, &SampleOp::gaussian_noise(&noisy, (rows * nv) as u32, noise_stream)))?;
    run(ctx, |e| {
        let mut pass = e.begin_compute_pass(&Default::default());
        for call in &chain {
            call.dispatch(&mut pass, 0);
        }
        noise_call.dispatch(&mut pass, 0);
        Ok(())
    })
    .await?;
    // The CPU chain from the GPU's own hidden samples (so near-tie flips cannot cascade).
    let h0s = read(ctx, &h0s_buf, rows * nh).await?;
    let mut v1 = vec![0.0; rows * nv];
    CpuBackend.hidden_to_visible(weights, &h0s, &vb, Activation::Sigmoid, &mut v1);
    let mut h1 = vec![0.0; rows * nh];
    CpuBackend.visible_to_hidden(weights, &v1, &hb, Activation::Sigmoid, &mut h1);
    let mut g = vec![0.0; nv * nh];
    CpuBackend.accumulate_outer((nv, nh), &v, &h0, 1.0, &mut g);
    CpuBackend.accumulate_outer((nv, nh), &v1, &h1, -1.0, &mut g);
    let mut noise = vec![0.0; rows * nv];
    CpuBackend.add_gaussian_noise(&mut noise, noise_stream);
    let diff = |a: &[f32], b: &[f32]| a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((*x as f64 - *y as f64).abs()));
    let h0_err = diff(&read(ctx, &h0_buf, rows * nh).await?, &h0);
    let v1_err = diff(&read(ctx, &v1_buf, rows * nv).await?, &v1);
    let h1_err = diff(&read(ctx, &h1_buf, rows * nh).await?, &h1);
    let g_err = diff(&read(ctx, &g_buf, nv * nh).await?, &g);
    let noise_err = diff(&read(ctx, &noisy, rows * nv).await?, &noise);
    ensure!(h0_err < 1e-5 && v1_err < 1e-5 && h1_err < 1e-5 && g_err < 1e-4 && noise_err < 1e-4, "one-pass chain: h0 {h0_err:e} v1 {v1_err:e} h1 {h1_err:e} grad {g_err:e} noise {noise_err:e}");
    Ok(format!(
        "prepared calls: offsets/strides error {window_err:.1e}; 3 step-table slots exact; one-pass CD-1 chain max errors h0 {h0_err:.1e} v1 {v1_err:.1e} h1 {h1_err:.1e} grad {g_err:.1e} noise {noise_err:.1e}"
    ))
}

/// Achieved GFLOP/s on the RBM shapes (no assertion: for the report and regressions).
pub async fn throughput(ctx: &GpuContext, shapes: &[(u32, u32, u32, GemmVariant)], repeats: u32) -> Outcome {
    let mut lines = Vec::new();
    for &(m, k, n, variant) in shapes {
        let gflops = gpu(gemm::gemm_gflops(ctx, m, k, n, variant, repeats).await)?;
        ensure!(gflops.is_finite() && gflops > 0.0, "{m}x{k}x{n} {variant:?}: {gflops}");
        lines.push(format!("{m}x{k}x{n} {variant:?} {:?}: {gflops:.1}", Tiling::auto(m, n)));
    }
    Ok(format!("GFLOP/s: {}", lines.join("; ")))
}

/// More output tiles than one grid dimension allows (66,000 tiles of 32 rows): the workgroups
/// fold into a 2-D grid, for the product, its epilogue and its samples.
pub async fn many_workgroups_fold(ctx: &GpuContext) -> Outcome {
    let (rows, k, n) = (32 * 66_000usize, 3usize, 4usize);
    let a = values(rows * k, 21, -1.0, 1.0);
    let b = values(k * n, 22, -1.0, 1.0);
    let bias = values(n, 23, -0.5, 0.5);
    let stream = RngStream::new(9, 1, Purpose::InputSample);
    let mut cpu = vec![0.0; rows * n];
    CpuBackend.visible_to_hidden(Weights { values: &b, n_visible: k, n_hidden: n }, &a, &bias, Activation::Sigmoid, &mut cpu);
    let kernels = GemmKernels::new(ctx);
    let (a_buf, b_buf, bias_buf) = (buffers::upload(ctx, "a", &a), buffers::upload(ctx, "b", &b), buffers::upload(ctx, "bias", &bias));
    let (c_buf, s_buf) = (buffers::zeros_f32(ctx, "c", rows * n), buffers::zeros_f32(ctx, "s", rows * n));
    let op = GemmOp::new(rows as u32, k as u32, n as u32, &a_buf, &b_buf, &c_buf).bias(&bias_buf).activation(Activation::Sigmoid).sample(&s_buf, stream).tiling(Tiling::Small).split_k(1);
    ensure!(Tiling::Small.tiles(rows as u32, n as u32) > 65_535, "the test needs more than 65,535 tiles");
    run(ctx, |e| gpu(kernels.record(ctx, e, &op))).await?;
    let got = read(ctx, &c_buf, rows * n).await?;
    let samples = read(ctx, &s_buf, rows * n).await?;
    let err = got.iter().zip(&cpu).fold(0.0f64, |m, (g, c)| m.max((*g as f64 - *c as f64).abs()));
    ensure!(err < 1e-5, "folded grid: error {err:e}");
    let wrong = (0..rows * n).filter(|&i| samples[i] != if stream.uniform(i as u64) < got[i] { 1.0 } else { 0.0 }).count();
    ensure!(wrong == 0, "folded grid: {wrong} samples differ from their stream");
    Ok(format!("{} tiles folded into the grid: max error {err:.1e}, samples exact", Tiling::Small.tiles(rows as u32, n as u32)))
}
