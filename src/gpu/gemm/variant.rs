//! Which variant of gemm.wgsl a [`GemmOp`] needs, beyond its layouts: whether it may read its
//! operands and its outputs a vec4 at a time, and whether a fused weight update is well formed.

use super::{Element, GemmOp, Tiling, Tuning};
use crate::backend::Activation;
use crate::gpu::update::WeightUpdateBuffers;
use crate::gpu::GpuError;

/// Storage buffers a fused-update variant binds (gemm.wgsl's 7 and gemm_update.wgsl's 4).
pub const FUSED_UPDATE_STORAGE_BUFFERS: u32 = 11;

/// Whether `op`'s operands may be read a vec4 at a time (`shaders/gemm_operands_vec4.wgsl`):
/// f32 A without a gather, and along each operand's contiguous axis the extent, the row
/// stride and the offset all multiples of 4 (so no vector straddles an edge and every bound
/// window holds whole vectors; windows start on 256-byte boundaries, which keeps offsets'
/// residues).
pub fn vec4_aligned(op: &GemmOp) -> bool {
    let aligned = |x: u64| x % 4 == 0;
    let (k1, k2) = match op.pair {
        Some(p) => (p.k_split.min(op.k), op.k - p.k_split.min(op.k)),
        None => (op.k, 0),
    };
    let a_run_ok = if op.a_transposed { aligned(op.m as u64) } else { aligned(k1 as u64) && aligned(k2 as u64) };
    let b_run_ok = if op.b_transposed { aligned(k1 as u64) && aligned(k2 as u64) } else { aligned(op.n as u64) };
    let pair_ok = op.pair.is_none_or(|p| aligned(p.a.offset) && aligned(p.b.offset) && aligned(p.a.ld as u64) && aligned(p.b.ld as u64));
    let bias_ok = op.bias.is_none_or(|b| aligned(b.offset) && aligned(op.n as u64));
    op.a_element == Element::F32 && op.a_gather.is_none() && a_run_ok && b_run_ok && pair_ok && bias_ok && aligned(op.a.offset) && aligned(op.b.offset) && aligned(op.a.ld as u64) && aligned(op.b.ld as u64)
}

/// Whether every quad of 4 output columns the epilogue touches is one aligned vec4: n, and
/// C's and the samples' offsets and row strides, multiples of 4 (windows then start and end on
/// 16-byte boundaries too). The fused update's outputs are packed from offset 0.
fn outputs_aligned(op: &GemmOp) -> bool {
    let aligned = |x: u64| x % 4 == 0;
    let samples_ok = op.sample.is_none_or(|s| aligned(s.out.offset) && aligned(s.out.ld as u64));
    aligned(op.n as u64) && aligned(op.c.offset) && aligned(op.c.ld as u64) && samples_ok
}

/// Whether `op` reads its operands a vec4 at a time, where [`vec4_aligned`] allows it. From
/// measurements on an H100 (same run, A/B):
/// - Small and Medium tiles: always. There the products are latency-bound and gain
///   (100 × 784 × 500 NN 4.0–4.3 → 4.6 TFLOP/s, the 784 × 500 CD-1 batch 86 → 83 µs).
/// - Large and Wide tiles: only for the fused gradient and update (Aᵀ, B untransposed, see
///   [`GemmOp::fused_update`]), where each fetched vec4 is stored whole into the k-major slabs.
///   Raina shapes, four runs each: 4096 × 11008 took 16.07–16.15 s per million examples
///   against 16.24–16.25, 2304 × 16000 14.10–14.15 against 14.41–14.43. The same layout
///   without the update lost (4096 × 192 × 11008 24.9 against 27.2 TFLOP/s, 2304 × 192 × 16000
///   24.2 against 26.1), and layouts that scatter each vector into four slab rows lost too
///   (192 × 4096 × 11008 NN 32.2 → 29.5, 8192³ 32.3 → 30.8).
fn vec4_operands(op: &GemmOp, tiling: Tiling) -> bool {
    let fused_gradient = op.update.is_some() && op.a_transposed && !op.b_transposed;
    if !matches!(tiling, Tiling::Small | Tiling::Medium) && !fused_gradient {
        return false;
    }
    vec4_aligned(op)
}

/// Whether `op` reads and writes its outputs (C, the samples, split k's partials, and the fused
/// update's weights, velocity and previous gradient) a vec4 at a time
/// (`shaders/gemm_outputs_vec4.wgsl`), where they are aligned. The fused update takes them with
/// its vec4 operands. Other products with Large tiles keep scalar outputs. Measured on an
/// H100, A/B twice:
/// - the 4096 × 11008 fused gradient and update: 1.17 ms against 1.44 with scalar accesses
///   (and 1.11 with no epilogue traffic at all); Raina 4096 × 11008 14.47 s per million
///   examples against 15.86;
/// - the 784 × 500 CD-1 epoch (Small and Medium tiles, split k): 0.040 s against 0.044;
/// - plain products with Large tiles lost: 8192³ 32.3 → 23.5 TFLOP/s, 4096 × 192 × 11008 Aᵀ·B
///   27.5 → 22.0.
fn vec4_outputs(op: &GemmOp, tiling: Tiling) -> bool {
    if op.update.is_some() {
        return vec4_operands(op, tiling);
    }
    tiling != Tiling::Large && outputs_aligned(op)
}

/// The kernel choices for `op` with `tiling` where the op forces none: the rules above, the
/// H100's [`tuned_rule`] on NVIDIA's native Vulkan driver, then the native-only
/// `DEEPBELIEF_GEMM_TUNING` override (see [`env_override`]) on top.
pub(super) fn auto_tuning(op: &GemmOp, tiling: Tiling, limits: &wgpu::Limits, adapter: &wgpu::AdapterInfo) -> Tuning {
    let vec = vec4_operands(op, tiling);
    let plain = Tuning {
        group_rows: 1,
        vec_a: vec,
        vec_b: vec,
        vec_out: vec4_outputs(op, tiling),
        double_buffer: false,
        deep_k: false,
        unchecked_interior: false,
        register_prefetch: true,
        sample_epilogue: op.sample.is_some(),
        unroll: false,
    };
    let env = env_override();
    let rule = env.and_then(|o| o.rule).unwrap_or(if tuned_adapter(adapter) { TUNED_RULE } else { 0 });
    let ruled = tuned_rule(rule, op, tiling, plain);
    let auto = if check_tuning(op, tiling, &ruled, limits).is_ok() { ruled } else { plain };
    match env {
        Some(o) if op.update.is_none() && matches!(tiling, Tiling::Large | Tiling::Huge) => {
            let mut t = auto;
            if let Some(g) = o.group_rows {
                t.group_rows = g.max(1);
            }
            if let Some(v) = o.vec_a {
                t.vec_a = v && vec4_aligned(op);
            }
            if let Some(v) = o.vec_b {
                t.vec_b = v && vec4_aligned(op);
            }
            if let Some(v) = o.vec_out {
                t.vec_out = v && outputs_aligned(op);
            }
            if let Some(v) = o.double_buffer {
                t.double_buffer = v;
            }
            if let Some(v) = o.deep_k {
                t.deep_k = v && tiling == Tiling::Large;
            }
            if let Some(v) = o.unchecked_interior {
                t.unchecked_interior = v && op.pair.is_none();
            }
            if let Some(v) = o.register_prefetch {
                t.register_prefetch = v;
            }
            if let Some(v) = o.sample_epilogue {
                t.sample_epilogue = v || op.sample.is_some();
            }
            if let Some(v) = o.unroll {
                t.unroll = v;
            }
            if check_tuning(op, tiling, &t, limits).is_ok() {
                t
            } else {
                auto
            }
        }
        _ => auto,
    }
}

/// Whether the adapter takes the tuned rules: NVIDIA's native Vulkan driver, where they were
/// measured. Browsers, lavapipe and SwiftShader keep the plain kernels.
fn tuned_adapter(adapter: &wgpu::AdapterInfo) -> bool {
    !cfg!(target_arch = "wasm32") && adapter.vendor == 0x10DE && adapter.backend == wgpu::Backend::Vulkan
}

/// The rule NVIDIA's native Vulkan driver gets (see [`tuned_rule`]).
/// Measured on an H200 (the H100's kernel, same run, bench/gemm_tuning_device.sh, 2026-11-28):
/// rule 1 took the 8192³ square from 31.6 to 43.8 TFLOP/s and the autoencoder's products at
/// 8192 × 4096 on 10,000 cases from 30.8–31.6 to 40.1–44.6; its cost and gradient from 0.109 s
/// to 0.080 s (rules 2, 3 and 4 0.083, 0.080, 0.083; PyTorch's best 0.067). Rule 5 adds the
/// smaller tilings unrolled: 2048 × 1024's cost and gradient 0.0066 → 0.0061 s, the 784-500
/// RBM epoch over 60k cases 0.0392 → 0.0389 s (its 100 × 784 × 500 products 4.3 → 5.2
/// TFLOP/s), Raina's shapes within noise.
const TUNED_RULE: u32 = 5;

/// Kernel choices beyond `plain` for products without a fused update, by rule (measured on an
/// H100, see the module docs; `DEEPBELIEF_GEMM_TUNING=rule=N` picks one on any adapter):
/// 0 none; 1 Large tiles unrolled, with unchecked interior tiles; 2 as 1, and Aᵀ·B products
/// with vec4 loads and two slabs; 3 as 1, and every Large product with vec4 loads and k steps
/// of 16; 4 as 2, and every other tiling unrolled too; 5 as 1, and every other tiling unrolled
/// too.
fn tuned_rule(rule: u32, op: &GemmOp, tiling: Tiling, plain: Tuning) -> Tuning {
    let mut t = plain;
    if rule == 0 || op.update.is_some() {
        return t;
    }
    if tiling != Tiling::Large {
        t.unroll = rule == 4 || rule == 5;
        return t;
    }
    t.unroll = true;
    t.unchecked_interior = op.pair.is_none();
    let aligned = vec4_aligned(op);
    let gradient = op.a_transposed && !op.b_transposed;
    if (rule == 2 || rule == 4) && gradient && aligned {
        (t.vec_a, t.vec_b, t.double_buffer) = (true, true, true);
    }
    if rule == 3 && aligned {
        (t.vec_a, t.vec_b, t.deep_k) = (true, true, true);
    }
    t
}

/// Bytes of workgroup memory a variant's slabs take (gemm.wgsl's a_tile and b_tile).
pub(super) fn workgroup_bytes(tiling: Tiling, tuning: &Tuning, a_transposed: bool, b_transposed: bool) -> u32 {
    let d = tiling.dims_tuned(tuning);
    let (a_stride, b_stride) = slab_strides(tiling, a_transposed, b_transposed);
    let slabs = if tuning.double_buffer { 2 } else { 1 };
    16 * slabs * d.bk * (a_stride + b_stride)
}

/// Row strides (in vec4) of the k-major workgroup tiles: one vec4 of padding where the slab is
/// filled along k, so that the invocations storing one row's k values hit different banks
/// (unpadded, they all hit the same bank: a 16-way conflict on every stash).
pub(super) fn slab_strides(tiling: Tiling, a_transposed: bool, b_transposed: bool) -> (u32, u32) {
    let d = tiling.dims();
    (d.bm / 4 + u32::from(!a_transposed), d.bn / 4 + u32::from(b_transposed))
}

/// Whether `op` can run with `tuning` on a device with `limits`.
pub(super) fn check_tuning(op: &GemmOp, tiling: Tiling, tuning: &Tuning, limits: &wgpu::Limits) -> Result<(), GpuError> {
    if (tuning.vec_a || tuning.vec_b) && !vec4_aligned(op) {
        return Err(GpuError("gemm: vec4 operand loads need f32 operands with their contiguous extents, strides and offsets multiples of 4".into()));
    }
    let update_vec = op.update.is_some() && tuning.vec_out != (tuning.vec_a && tuning.vec_b);
    if (tuning.vec_out && !outputs_aligned(op)) || update_vec {
        return Err(GpuError("gemm: vec4 outputs need n and C's (and the samples') offsets and row strides multiples of 4, and with a fused update vec4 operands".into()));
    }
    if tuning.deep_k && tiling != Tiling::Large {
        return Err(GpuError(format!("gemm: k steps of 16 are a choice of Large tiles only, not {tiling:?}")));
    }
    if op.sample.is_some() && !tuning.sample_epilogue {
        return Err(GpuError("gemm: a product with samples needs the sampling epilogue".into()));
    }
    if op.pair.is_some() && tuning.unchecked_interior {
        return Err(GpuError("gemm: a paired product checks every load (its pairs meet inside a k step)".into()));
    }
    if tuning.group_rows == 0 {
        return Err(GpuError("gemm: group_rows is 0, expected at least 1 tile row".into()));
    }
    if op.update.is_some() && tiling.dims().tn > 8 {
        return Err(GpuError(format!("gemm: a fused update takes at most 8 columns per invocation, not {tiling:?} tiles")));
    }
    let bytes = workgroup_bytes(tiling, tuning, op.a_transposed, op.b_transposed);
    if bytes > limits.max_compute_workgroup_storage_size {
        return Err(GpuError(format!("gemm: {tiling:?} tiles with {tuning:?} take {bytes} bytes of workgroup memory, the device offers {}", limits.max_compute_workgroup_storage_size)));
    }
    Ok(())
}

/// What `DEEPBELIEF_GEMM_TUNING` asks for (native only; read once): comma-separated `key=value`
/// of `rule` (see [`tuned_rule`]; for any adapter), `g` (group_rows), `va`, `vb`, `vo`, `db`,
/// `dk`, `ui`, `rp`, `es`, `un` (0 or 1: the [`Tuning`] fields in that order from vec_a) and
/// `t` (`huge`: Huge tiles
/// where [`Tiling::auto`] picks Large). Applied to products without a fused update whose tiles
/// are Large or Huge, where the product can take it. For A/B runs of whole programs (the
/// autoencoder's benchmark) on one binary.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct EnvOverride {
    pub group_rows: Option<u32>,
    pub vec_a: Option<bool>,
    pub vec_b: Option<bool>,
    pub vec_out: Option<bool>,
    pub double_buffer: Option<bool>,
    pub deep_k: Option<bool>,
    pub unchecked_interior: Option<bool>,
    pub register_prefetch: Option<bool>,
    pub sample_epilogue: Option<bool>,
    pub unroll: Option<bool>,
    pub rule: Option<u32>,
    pub huge: bool,
}

pub(super) fn env_override() -> Option<EnvOverride> {
    #[cfg(not(target_arch = "wasm32"))]
    {
        static PARSED: std::sync::OnceLock<Option<EnvOverride>> = std::sync::OnceLock::new();
        *PARSED.get_or_init(|| std::env::var("DEEPBELIEF_GEMM_TUNING").ok().map(|text| parse_override(&text)))
    }
    #[cfg(target_arch = "wasm32")]
    None
}

#[cfg(not(target_arch = "wasm32"))]
fn parse_override(text: &str) -> EnvOverride {
    let mut o = EnvOverride::default();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty() && *s != "base") {
        let (key, value) = item.split_once('=').unwrap_or((item, "1"));
        let flag = value != "0";
        match key {
            "g" => o.group_rows = value.parse().ok(),
            "va" => o.vec_a = Some(flag),
            "vb" => o.vec_b = Some(flag),
            "vo" => o.vec_out = Some(flag),
            "db" => o.double_buffer = Some(flag),
            "dk" => o.deep_k = Some(flag),
            "ui" => o.unchecked_interior = Some(flag),
            "rp" => o.register_prefetch = Some(flag),
            "es" => o.sample_epilogue = Some(flag),
            "un" => o.unroll = Some(flag),
            "rule" => o.rule = value.parse().ok(),
            "t" => o.huge = value == "huge",
            _ => eprintln!("DEEPBELIEF_GEMM_TUNING: unknown key {key:?} (g, va, vb, vo, db, dk, ui, rp, es, un, rule, t)"),
        }
    }
    o
}

/// What a fused-update product must be: the gradient of an `m × n` layer, packed, with no other
/// epilogue, and buffers sized for it.
pub(super) fn check_fused_update(op: &GemmOp, update: &WeightUpdateBuffers, tiling: Tiling, supported: bool) -> Result<(), GpuError> {
    if !supported {
        return Err(GpuError(format!("gemm: this device offers fewer than {FUSED_UPDATE_STORAGE_BUFFERS} storage buffers per stage, which the fused update needs")));
    }
    if op.accumulate || op.bias.is_some() || op.activation != Activation::Linear || op.sample.is_some() || op.split_k.is_some_and(|s| s > 1) {
        return Err(GpuError("gemm: a fused update takes no accumulate, bias, activation, sample or split k".into()));
    }
    if op.c.buffer != update.gradient || op.c.offset != 0 || op.c.ld != op.n {
        return Err(GpuError("gemm: a fused update's product must be its gradient buffer, packed (ld = n) at offset 0".into()));
    }
    let weights = 4 * op.m as u64 * op.n as u64;
    let sized = [("weights", update.weights.size(), weights), ("velocity", update.velocity.size(), weights), ("previous gradient", update.previous.size(), weights), ("gradient", op.c.buffer.size(), weights), ("mean input", update.mean_input.size(), 4 * op.m as u64), ("sparsity derivative", update.sparsity_derivative.size(), 4 * op.n as u64), ("partials", update.partials.size(), 16 * super::fused_update_tasks(tiling, op.m, op.n) as u64)];
    for (what, size, needed) in sized {
        if size < needed {
            return Err(GpuError(format!("gemm: the fused update's {what} buffer has {size} bytes, {needed} needed")));
        }
    }
    let outputs = [op.c.buffer, update.weights, update.velocity, update.partials];
    let inputs = [Some(op.a.buffer), Some(op.b.buffer), op.pair.map(|p| p.a.buffer), op.pair.map(|p| p.b.buffer), Some(update.previous), Some(update.mean_input), Some(update.sparsity_derivative), Some(update.state)];
    for (i, out) in outputs.iter().enumerate() {
        if outputs[..i].contains(out) || inputs.iter().flatten().any(|b| b == out) {
            return Err(GpuError("gemm: the fused update's output buffers must differ from each other and from its inputs".into()));
        }
    }
    Ok(())
}
