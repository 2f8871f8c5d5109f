//! Achieved GFLOP/s of the GEMM kernels on zero-filled operands: `deepbelief bench` and the
//! throughput tests.

use super::{GemmKernels, GemmOp, Tiling};
use crate::gpu::buffers;
use crate::gpu::{GpuContext, GpuError};

/// Operand layouts for [`gemm_gflops`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmVariant {
    /// `A · B` (visible → hidden).
    Nn,
    /// `A · Bᵀ` (hidden → visible).
    Nt,
    /// `Aᵀ · B` accumulated into C (the gradient).
    Tn,
    /// `A · B` with A as gathered u8 rows (the first layer's data).
    U8GatherNn,
}

/// Achieved GFLOP/s (2·m·k·n per product) of `repeats` back-to-back `m × k × n` products in one
/// submission, after one warm-up; [`Tiling::auto`]'s choice.
pub async fn gemm_gflops(ctx: &GpuContext, m: u32, k: u32, n: u32, variant: GemmVariant, repeats: u32) -> Result<f64, GpuError> {
    gemm_gflops_with(ctx, m, k, n, variant, None, None, repeats).await
}

/// [`gemm_gflops`] with a chosen tiling and split-k factor (`None`: automatic). Operands are zero-filled (the arithmetic's speed does
/// not depend on the values); each must fit one storage binding of `ctx`'s device (8192² f32
/// needs [`buffers::context_with_adapter_limits`]). Timed from submission to completion with
/// the host clock (`performance`-free JS clock on the web, so use runs of ≥ 100 ms there).
#[allow(clippy::too_many_arguments)]
pub async fn gemm_gflops_with(ctx: &GpuContext, m: u32, k: u32, n: u32, variant: GemmVariant, tiling: Option<Tiling>, split_k: Option<u32>, repeats: u32) -> Result<f64, GpuError> {
    let kernels = GemmKernels::new(ctx);
    let (mu, ku, nu) = (m as u64, k as u64, n as u64);
    let a = match variant {
        GemmVariant::U8GatherNn => buffers::zeros(ctx, "bench_a", mu * ku),
        _ => buffers::zeros(ctx, "bench_a", 4 * mu * ku),
    };
    let b = buffers::zeros(ctx, "bench_b", 4 * ku * nu);
    let c = buffers::zeros(ctx, "bench_c", 4 * mu * nu);
    let order: Vec<u32> = (0..m).rev().collect();
    let order = buffers::upload(ctx, "bench_order", &order);
    let mut op = match variant {
        GemmVariant::Nn => GemmOp::new(m, k, n, &a, &b, &c),
        GemmVariant::Nt => GemmOp::new(m, k, n, &a, &b, &c).transpose_b(),
        GemmVariant::Tn => GemmOp::new(m, k, n, &a, &b, &c).transpose_a().accumulate(),
        GemmVariant::U8GatherNn => GemmOp::new(m, k, n, &a, &b, &c).u8_a().gather_a(&order, 0),
    };
    op.tiling = tiling;
    op.split_k = split_k;
    let call = kernels.prepare(ctx, &op)?;
    let run = |count: u32| {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            for _ in 0..count {
                call.dispatch(&mut pass, 0);
            }
        }
        ctx.queue.submit([encoder.finish()]);
    };
    run(1);
    buffers::wait_idle(ctx).await?;
    let start = crate::clock::now_seconds();
    run(repeats.max(1));
    buffers::wait_idle(ctx).await?;
    let seconds = crate::clock::now_seconds() - start;
    Ok(2.0 * mu as f64 * ku as f64 * nu as f64 * repeats.max(1) as f64 / seconds / 1e9)
}
