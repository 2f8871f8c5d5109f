//! The sensitivity update's products: `C (m × n) = Σ_t A_t (m × k_t) · B_t (k_t × n)`, all
//! row-major, then an epilogue on each column tile while it is in cache.
//!
//! The shapes are a small matrix (a weight matrix, `n_i × n_k`) times a wide one (a
//! sensitivity tensor, `n_k × P` with `P` a weight matrix's size), so the output is cut into
//! tiles of `TILE_COLS` columns and all rows; each tile is one single-threaded GEMM call per
//! term (the `gemm` crate natively, `matrixmultiply` in wasm, as `backend::cpu`), tiles spread
//! over rayon. The tiling depends only on the shapes, so results do not depend on the thread
//! count.

use crate::backend::strided::{sgemm, Strided};
use rayon::prelude::*;

/// Output columns per tile: a 256 × 256 × 256 tile is ~34 MFLOP, enough per task.
const TILE_COLS: usize = 256;

/// One product term `A · B`: `a` is `m × k`, `b` is `k × n`, both row-major.
#[derive(Clone, Copy)]
pub struct Term<'a> {
    pub a: &'a [f32],
    pub k: usize,
    pub b: &'a [f32],
}

/// A column tile of the output, handed to the epilogue: rows `0..rows`, columns
/// `c0..c0 + width` of the `m × n` output.
pub struct Tile {
    ptr: *mut f32,
    n: usize,
    pub c0: usize,
    pub width: usize,
    pub rows: usize,
}

impl Tile {
    /// Row `r` of the tile: `width` values starting at column `c0`.
    pub fn row(&mut self, r: usize) -> &mut [f32] {
        assert!(r < self.rows);
        // SAFETY: inside the output, in this tile's columns, which only this task touches.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(r * self.n + self.c0), self.width) }
    }
}

#[derive(Clone, Copy)]
struct SendPtr(*mut f32);
// SAFETY: tasks write disjoint column tiles of the output.
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}

impl SendPtr {
    /// Through a method, so closures capture the whole (Send) wrapper, not its raw field.
    fn get(self) -> *mut f32 {
        self.0
    }
}

/// `out (m × n) = Σ terms`, then `epilogue(tile)` on every column tile (zeros when there is no
/// term). Each term's `a` must hold `m × k` values and `b` `k × n`.
pub fn sum_of_products(m: usize, n: usize, terms: &[Term], out: &mut [f32], epilogue: impl Fn(&mut Tile) + Sync) {
    assert_eq!(out.len(), m * n, "output size");
    for t in terms {
        assert!(t.a.len() == m * t.k && t.b.len() == t.k * n, "term sizes");
    }
    if m == 0 || n == 0 {
        return;
    }
    let c = SendPtr(out.as_mut_ptr());
    let tiles = n.div_ceil(TILE_COLS);
    (0..tiles).into_par_iter().for_each(|tile| {
        let base = c.get();
        let c0 = tile * TILE_COLS;
        let width = TILE_COLS.min(n - c0);
        let mut first = true;
        for t in terms.iter().filter(|t| t.k > 0) {
            // SAFETY: sizes asserted above; the tile's columns belong to this task only.
            unsafe {
                let (a, b) = (Strided { ptr: t.a.as_ptr(), row_stride: t.k, col_stride: 1 }, Strided { ptr: t.b.as_ptr().add(c0), row_stride: n, col_stride: 1 });
                sgemm(m, t.k, width, 1.0, a, b, if first { 0.0 } else { 1.0 }, base.add(c0), n)
            };
            first = false;
        }
        let mut view = Tile { ptr: base, n, c0, width, rows: m };
        if first {
            for r in 0..m {
                view.row(r).fill(0.0);
            }
        }
        epilogue(&mut view);
    });
}

/// `out (n) = vᵀ · B` for `B` `k × n` row-major: the gradient `Σ_j ∂E/∂y_j · ∂y_j/∂w`.
pub fn vector_times_matrix(v: &[f32], b: &[f32], out: &mut [f32]) {
    let n = out.len();
    sum_of_products(1, n, &[Term { a: v, k: v.len(), b }], out, |_| {});
}
