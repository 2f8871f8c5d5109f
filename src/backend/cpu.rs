//! The CPU reference backend: single-threaded GEMM calls on fixed output tiles, spread over
//! rayon.
//!
//! It is the ground truth every other backend is tested against, so it favours plain,
//! obviously-correct code; the speed comes from the GEMM crate and from rayon.
//!
//! GEMM: natively the `gemm` crate (AVX-512/AVX2 kernels picked at run time; on the tiled
//! 100×784×500 products ~200 GFLOP/s on 2 Zen 4 cores against ~120–140 for `matrixmultiply`);
//! in wasm32 `matrixmultiply`, whose simd128 kernel is the faster of the two there.
//!
//! Determinism: the output is cut into tiles whose sizes depend only on the matrix shapes,
//! never on the number of threads, and each tile is one single-threaded GEMM call. So every
//! output element is computed by the same sequence of operations whichever thread runs its
//! tile, and a seed gives bit-identical weights on 1 or N threads (tests/cpu_determinism.rs).
//! Tile shapes must not follow the thread count because the result of one GEMM call does
//! depend on its shape: `gemm` picks its blocking along k from m and n, and `matrixmultiply`
//! rounds edge tiles differently from full ones (chunking by `current_num_threads()` gave
//! different weights on 1 and 2 threads).

use super::strided::{sgemm, Strided};
use super::{Activation, Backend, OuterProduct, Weights};
use super::wide::wide;
use crate::rng::{philox4x32_10, philox4x32_10_lanes, RngStream};
use rayon::prelude::*;

pub struct CpuBackend;

/// Output columns per tile. 64 keeps a tile's slab of the right-hand matrix in L2 and gives
/// 8 tiles for 500 hidden units (balanced over 2 threads); measured best of 32–256 here.
const TILE_COLS: usize = 64;
/// Output rows per tile at most; taller outputs are cut into equal row blocks.
const TILE_ROWS: usize = 512;
/// Elements per Bernoulli task.
const BERNOULLI_BLOCK: usize = 4096;

/// The output matrix, shared by the tasks that write disjoint tiles of it.
#[derive(Clone, Copy)]
struct Output {
    ptr: *mut f32,
    cols: usize,
}

impl Output {
    /// Pointer to element (row, col).
    fn at(self, row: usize, col: usize) -> *mut f32 {
        self.ptr.wrapping_add(row * self.cols + col)
    }
}

// SAFETY: the tasks write disjoint tiles of the output.
unsafe impl Send for Output {}
unsafe impl Sync for Output {}

/// `(start, len)` of the blocks that cut `len` into pieces of at most `max` (a multiple of 16).
fn blocks(len: usize, max: usize) -> impl Iterator<Item = (usize, usize)> {
    let count = len.div_ceil(max).max(1);
    let size = len.div_ceil(count).next_multiple_of(16).min(max).max(1);
    (0..len.div_ceil(size)).map(move |b| (b * size, size.min(len - b * size)))
}

/// `out (m×n) = beta·out + alpha·a·b`, then `epilogue(col0, row)` on every row segment of every
/// tile, right after that tile's product (while it is in cache). The tiling depends only on
/// (m, n), so the result does not depend on the thread count.
fn tiled_product(
    (m, k, n): (usize, usize, usize),
    alpha: f32,
    a: Strided,
    b: Strided,
    beta: f32,
    out: &mut [f32],
    epilogue: impl Fn(usize, &mut [f32]) + Sync,
) {
    assert_eq!(out.len(), m * n);
    if m == 0 || n == 0 {
        return;
    }
    let tiles: Vec<((usize, usize), (usize, usize))> =
        blocks(m, TILE_ROWS).flat_map(|rows| blocks(n, TILE_COLS).map(move |cols| (rows, cols))).collect();
    let c = Output { ptr: out.as_mut_ptr(), cols: n };
    tiles.into_par_iter().for_each(|((r0, tm), (c0, tn))| {
        // SAFETY: the callers assert the operand lengths; tiles are disjoint.
        unsafe { sgemm(tm, k, tn, alpha, a.at(r0, 0), b.at(0, c0), beta, c.at(r0, c0), n) };
        wide(#[inline(always)] || {
            for r in r0..r0 + tm {
                // SAFETY: row r of this tile, inside `out` and written by this task only.
                epilogue(c0, unsafe { std::slice::from_raw_parts_mut(c.at(r, c0), tn) });
            }
        });
    });
}

/// Adds the bias and applies the activation to one row segment starting at column `col0`.
fn bias_activation(bias: &[f32], activation: Activation) -> impl Fn(usize, &mut [f32]) + Sync + '_ {
    #[inline(always)]
    move |col0, row| {
        let bias = &bias[col0..col0 + row.len()];
        match activation {
            Activation::Linear => row.iter_mut().zip(bias).for_each(|(x, b)| *x += b),
            Activation::Sigmoid => row.iter_mut().zip(bias).for_each(|(x, b)| *x = 1.0 / (1.0 + exp(-(*x + b)))),
        }
    }
}

/// `e^x` within 2 ulp of libm on [-87, 88], the range it clamps its input to: Cephes'
/// `expf` without branches or calls, so loops over it vectorise (SSE2 natively, simd128 in
/// wasm). libm's `expf` is a call per element, and in wasm a slow software one.
#[inline(always)]
fn exp(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two (Cody–Waite) so that n·LN2_HI is exact.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding 1.5·2²³ rounds to the nearest integer and leaves it in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * LOG2_E + ROUND;
    let n = shifted - ROUND;
    let n_bits = shifted.to_bits().wrapping_sub(ROUND.to_bits()) as i32;
    let r = x - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let e_r = p * r * r + r + 1.0;
    e_r * f32::from_bits(((n_bits + 127) as u32) << 23)
}

impl Backend for CpuBackend {
    fn describe(&self) -> String {
        let threads = rayon::current_num_threads();
        if threads > 1 {
            format!("CPU (rayon, {threads} threads)")
        } else {
            "CPU (single-threaded)".to_string()
        }
    }

    fn visible_to_hidden(&self, w: Weights, visible: &[f32], hidden_bias: &[f32], activation: Activation, hidden: &mut [f32]) {
        let (nv, nh) = (w.n_visible, w.n_hidden);
        let rows = visible.len() / nv;
        assert!(visible.len() == rows * nv && hidden.len() == rows * nh && hidden_bias.len() == nh && w.values.len() == nv * nh);
        let (v, w_) = (Strided::rows(visible, 0, nv), Strided::rows(w.values, 0, nh));
        tiled_product((rows, nv, nh), 1.0, v, w_, 0.0, hidden, bias_activation(hidden_bias, activation));
    }

    fn hidden_to_visible(&self, w: Weights, hidden: &[f32], visible_bias: &[f32], activation: Activation, visible: &mut [f32]) {
        let (nv, nh) = (w.n_visible, w.n_hidden);
        let rows = hidden.len() / nh;
        assert!(hidden.len() == rows * nh && visible.len() == rows * nv && visible_bias.len() == nv && w.values.len() == nv * nh);
        // Wᵀ through strides: element (j, i) of Wᵀ is W[i * nh + j].
        let (h, wt) = (Strided::rows(hidden, 0, nh), Strided::transposed(w.values, 0, nh));
        tiled_product((rows, nh, nv), 1.0, h, wt, 0.0, visible, bias_activation(visible_bias, activation));
    }

    fn accumulate_outer(&self, (nv, nh): (usize, usize), visible: &[f32], hidden: &[f32], scale: f32, gradient: &mut [f32]) {
        let rows = visible.len() / nv;
        assert!(visible.len() == rows * nv && hidden.len() == rows * nh && gradient.len() == nv * nh);
        // Visibleᵀ through strides: row i of the product reads column i of `visible`.
        let (vt, h) = (Strided::transposed(visible, 0, nv), Strided::rows(hidden, 0, nh));
        tiled_product((nv, rows, nh), scale, vt, h, 1.0, gradient, |_, _| {});
    }

    /// Each block of rows is one task: its products straight into `gradient` (the first with
    /// beta = 0, so the buffer needs no clearing), then `visit` while the block is in cache. A
    /// block's products sum over the batch (k ≤ 512 for batches up to 512 cases), which the
    /// `gemm` crate does in one pass per output element in order, so the values are those of
    /// `accumulate_outer`'s column tiles.
    fn outer_products_by_blocks(&self, (nv, nh): (usize, usize), products: &[OuterProduct], gradient: &mut [f32], block_rows: usize, visit: &(dyn Fn(usize, &mut [f32]) + Sync)) {
        assert_eq!(gradient.len(), nv * nh);
        for p in products {
            let rows = p.visible.len() / nv.max(1);
            assert!(p.visible.len() == rows * nv && p.hidden.len() == rows * nh);
        }
        if products.is_empty() {
            gradient.fill(0.0);
        }
        gradient.par_chunks_mut((block_rows * nh).max(1)).enumerate().for_each(|(b, block)| {
            let (r0, tm) = (b * block_rows, block.len() / nh);
            // Column tiles as in `accumulate_outer` (TILE_COLS wide products ran faster than
            // whole rows here).
            for (c0, tn) in blocks(nh, TILE_COLS) {
                for (index, p) in products.iter().enumerate() {
                    // Visibleᵀ through strides: row i of the product reads column i of `visible`.
                    let (vt, h) = (Strided::transposed(p.visible, 0, nv), Strided::rows(p.hidden, 0, nh));
                    let beta = if index == 0 { 0.0 } else { 1.0 };
                    if index == 0 && p.visible.is_empty() {
                        block.fill(0.0); // an empty batch: no product to overwrite the block
                    }
                    // SAFETY: the operand lengths are asserted above; the block is this task's.
                    unsafe { sgemm(tm, p.visible.len() / nv, tn, p.scale, vt.at(r0, 0), h.at(0, c0), beta, block.as_mut_ptr().add(c0), nh) };
                }
            }
            visit(b, block);
        });
    }

    fn bernoulli(&self, probabilities: &[f32], stream: RngStream, samples: &mut [f32]) {
        assert_eq!(probabilities.len(), samples.len());
        samples.par_chunks_mut(BERNOULLI_BLOCK).zip(probabilities.par_chunks(BERNOULLI_BLOCK)).enumerate().for_each(|(block, (out, p))| {
            let first_group = (block * BERNOULLI_BLOCK / 4) as u64;
            // Groups of four uniforms (one Philox block) past the runs of PHILOX_LANES blocks.
            let tail_group = first_group + (p.len() / (4 * PHILOX_LANES) * PHILOX_LANES) as u64;
            wide(#[inline(always)] || {
                let mut out = out.chunks_exact_mut(4 * PHILOX_LANES);
                let mut p = p.chunks_exact(4 * PHILOX_LANES);
                for (run, (out, p)) in (&mut out).zip(&mut p).enumerate() {
                    let uniforms = uniforms_lanes(&stream, first_group + (run * PHILOX_LANES) as u64);
                    for ((s, &prob), u) in out.iter_mut().zip(p).zip(uniforms) {
                        *s = if u < prob { 1.0 } else { 0.0 };
                    }
                }
                // The last partial run of Philox blocks, a block at a time.
                let (out, p) = (out.into_remainder(), p.remainder());
                for (group, (out, p)) in out.chunks_mut(4).zip(p.chunks(4)).enumerate() {
                    let uniforms = uniforms4(&stream, tail_group + group as u64);
                    for ((s, &prob), u) in out.iter_mut().zip(p).zip(uniforms) {
                        *s = if u < prob { 1.0 } else { 0.0 };
                    }
                }
            });
        });
    }
}

/// Philox blocks drawn side by side by `uniforms_lanes`: 16 blocks, 64 uniforms. Measured
/// alone (`bernoulli` on 50,000 probabilities, one thread, AVX-512, same run): 1.4 ns a sample,
/// against 4.5–5.4 for a block at a time; 8 lanes 3.2, 4 lanes 4.4.
const PHILOX_LANES: usize = 16;

/// `stream.uniform(4·first_group + k)` for k in 0..4·PHILOX_LANES: `uniforms4` for consecutive
/// groups at once, the Philox rounds running over the counters in vector registers. Plain
/// loops, not `array::map`, which is not always inlined (and then runs as baseline code).
#[inline(always)]
fn uniforms_lanes(stream: &RngStream, first_group: u64) -> [f32; 4 * PHILOX_LANES] {
    let mut counters = [[0u32; PHILOX_LANES]; 4];
    for l in 0..PHILOX_LANES {
        let group = first_group + l as u64;
        counters[0][l] = group as u32;
        counters[1][l] = stream.step as u32;
        counters[2][l] = (stream.step >> 32) as u32;
        counters[3][l] = stream.purpose as u32 | ((group >> 32) as u32) << 8;
    }
    let words = philox4x32_10_lanes(counters, stream.key);
    // Uniform 4·l + w is word w of block l. The top 24 bits fit an i32, whose conversion to
    // f32 vectorises everywhere (an unsigned one needs AVX-512).
    let mut uniforms = [0.0f32; 4 * PHILOX_LANES];
    for l in 0..PHILOX_LANES {
        for w in 0..4 {
            uniforms[4 * l + w] = ((words[w][l] >> 8) as i32) as f32 * (1.0 / 16_777_216.0);
        }
    }
    uniforms
}

/// `stream.uniform(4·group + i)` for i in 0..4 from one Philox block: `RngStream::uniform`
/// draws the four from the same block and keeps one, so this is 4× less work for the same
/// values (tests/engine_suite/checks/operations.rs and the test below check them against `uniform`).
fn uniforms4(stream: &RngStream, group: u64) -> [f32; 4] {
    let counter = [group as u32, stream.step as u32, (stream.step >> 32) as u32, stream.purpose as u32 | ((group >> 32) as u32) << 8];
    philox4x32_10(counter, stream.key).map(|x| (x >> 8) as f32 * (1.0 / 16_777_216.0))
}

#[cfg(test)]
mod tests {
    use super::{bias_activation, blocks, exp, uniforms4, uniforms_lanes, Activation};
    use crate::rng::{Purpose, RngStream};

    #[test]
    fn uniforms4_are_the_streams_uniforms() {
        let stream = RngStream::new(0x1234_5678_9abc, (7 << 10) | 3, Purpose::ChainHidden);
        for group in [0u64, 1, 2, 1023, 1 << 30, (1 << 32) - 1, 1 << 32, (1 << 33) + 5] {
            let expected: Vec<f32> = (0..4).map(|i| stream.uniform(4 * group + i)).collect();
            assert_eq!(uniforms4(&stream, group).to_vec(), expected, "group {group}");
        }
    }

    #[test]
    fn uniforms_lanes_are_the_streams_uniforms() {
        let stream = RngStream::new(0x1234_5678_9abc, (7 << 10) | 3, Purpose::ChainHidden);
        for first_group in [0u64, 16, 1000, (1 << 32) - 2] {
            let expected: Vec<f32> = (0..4 * super::PHILOX_LANES as u64).map(|k| stream.uniform(4 * first_group + k)).collect();
            assert_eq!(uniforms_lanes(&stream, first_group).to_vec(), expected, "groups from {first_group}");
            assert_eq!(super::wide(|| uniforms_lanes(&stream, first_group)).to_vec(), expected, "wide, groups from {first_group}");
        }
    }

    #[test]
    fn sigmoid_rows_are_the_same_at_every_vector_width() {
        // Outside `wide` the epilogue runs as baseline (SSE2) code, inside it as AVX-512 or
        // AVX2 code where the CPU has them: the bits must not change.
        let x: Vec<f32> = (0..1000).map(|k| (k as f32 - 500.0) * 0.21).collect();
        let bias: Vec<f32> = (0..1000).map(|k| (k % 7) as f32 * 0.3 - 1.0).collect();
        let epilogue = bias_activation(&bias, Activation::Sigmoid);
        let (mut plain, mut wide_) = (x.clone(), x.clone());
        epilogue(0, &mut plain);
        super::wide(|| epilogue(0, &mut wide_));
        for k in 0..x.len() {
            let expected = 1.0 / (1.0 + exp(-(x[k] + bias[k])));
            assert_eq!((plain[k].to_bits(), wide_[k].to_bits()), (expected.to_bits(), expected.to_bits()), "x {}", x[k]);
        }
    }

    #[test]
    fn exp_is_within_2_ulp_of_libm() {
        let mut worst = 0;
        let mut x = -87.0f32;
        while x < 88.0 {
            let (ours, libm) = (exp(x), x.exp());
            let ulps = (ours.to_bits() as i64 - libm.to_bits() as i64).unsigned_abs();
            worst = worst.max(ulps);
            assert!(ulps <= 2, "exp({x}) = {ours}, libm {libm}");
            x += 0.0137;
        }
        assert!(worst <= 2);
        assert!(exp(-200.0) < 1e-37);
        assert!(exp(200.0) > 1e38 && exp(200.0).is_finite());
        assert_eq!(exp(0.0), 1.0);
    }

    #[test]
    fn blocks_cover_the_range_in_order() {
        for (len, max) in [(0, 64), (1, 64), (29, 64), (64, 64), (65, 64), (500, 64), (784, 64), (784, 512), (100, 512), (5000, 512)] {
            let all: Vec<(usize, usize)> = blocks(len, max).collect();
            let mut next = 0;
            for &(start, size) in &all {
                assert_eq!(start, next);
                assert!(size > 0 && size <= max);
                next += size;
            }
            assert_eq!(next, len, "{len} by {max}: {all:?}");
        }
    }
}
