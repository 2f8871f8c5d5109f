//! Which variant of gemm.wgsl a [`GemmOp`] needs, beyond its layouts: whether it may read its
//! operands and its outputs a vec4 at a time, and whether a fused weight update is well formed.

use super::{Element, GemmOp, Tiling};
use crate::backend::Activation;
use crate::gpu::update::WeightUpdateBuffers;
use crate::gpu::GpuError;

/// Storage buffers a fused-update variant binds (gemm.wgsl's 7 and gemm_update.wgsl's 4).
pub const FUSED_UPDATE_STORAGE_BUFFERS: u32 = 11;

/// Whether `op` reads its operands a vec4 at a time (`shaders/gemm_operands_vec4.wgsl`). It can
/// with f32 A without a gather, and along each operand's contiguous axis the extent, the row
/// stride and the offset all multiples of 4 (so no vector straddles an edge and every bound
/// window holds whole vectors; windows start on 256-byte boundaries, which keeps offsets'
/// residues). Whether it does, from measurements on an H100 (same run, A/B):
/// - Small and Medium tiles: always. There the products are latency-bound and gain
///   (100 × 784 × 500 NN 4.0–4.3 → 4.6 TFLOP/s, the 784 × 500 CD-1 batch 86 → 83 µs).
/// - Large and Wide tiles: only for the fused gradient and update (Aᵀ, B untransposed, see
///   [`GemmOp::fused_update`]), where each fetched vec4 is stored whole into the k-major slabs.
///   Raina shapes, four runs each: 4096 × 11008 took 16.07–16.15 s per million examples
///   against 16.24–16.25, 2304 × 16000 14.10–14.15 against 14.41–14.43. The same layout
///   without the update lost (4096 × 192 × 11008 24.9 against 27.2 TFLOP/s, 2304 × 192 × 16000
///   24.2 against 26.1), and layouts that scatter each vector into four slab rows lost too
///   (192 × 4096 × 11008 NN 32.2 → 29.5, 8192³ 32.3 → 30.8).
pub(super) fn vec4_operands(op: &GemmOp, tiling: Tiling) -> bool {
    let fused_gradient = op.update.is_some() && op.a_transposed && !op.b_transposed;
    if !matches!(tiling, Tiling::Small | Tiling::Medium) && !fused_gradient {
        return false;
    }
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

/// Whether `op` reads and writes its outputs (C, the samples, split k's partials, and the fused
/// update's weights, velocity and previous gradient) a vec4 at a time
/// (`shaders/gemm_outputs_vec4.wgsl`): where every quad of 4 columns the epilogue touches is one
/// aligned vec4, that is n, and C's and the samples' offsets and row strides, are multiples of 4
/// (windows then start and end on 16-byte boundaries too). The fused update's outputs are packed
/// from offset 0, so it takes them with its vec4 operands. Other products with Large tiles keep
/// scalar outputs. Measured on an H100, A/B twice:
/// - the 4096 × 11008 fused gradient and update: 1.17 ms against 1.44 with scalar accesses
///   (and 1.11 with no epilogue traffic at all); Raina 4096 × 11008 14.47 s per million
///   examples against 15.86;
/// - the 784 × 500 CD-1 epoch (Small and Medium tiles, split k): 0.040 s against 0.044;
/// - plain products with Large tiles lost: 8192³ 32.3 → 23.5 TFLOP/s, 4096 × 192 × 11008 Aᵀ·B
///   27.5 → 22.0.
pub(super) fn vec4_outputs(op: &GemmOp, tiling: Tiling) -> bool {
    if op.update.is_some() {
        return vec4_operands(op, tiling);
    }
    if tiling == Tiling::Large {
        return false;
    }
    let aligned = |x: u64| x % 4 == 0;
    let samples_ok = op.sample.is_none_or(|s| aligned(s.out.offset) && aligned(s.out.ld as u64));
    aligned(op.n as u64) && aligned(op.c.offset) && aligned(op.c.ld as u64) && samples_ok
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
