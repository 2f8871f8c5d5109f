//! One single-threaded strided product, `c = beta·c + alpha·a·b`: the `gemm` crate natively,
//! `matrixmultiply` in wasm (the `gemm` crate's SIMD dispatch does not build for wasm32). The
//! CPU backend's tiles, the local-patch RBM's per-position products and RTRL's tiles all call
//! it; callers spread the products over rayon, one tile, position or row block per task, so
//! every output element has one writer and results do not depend on the thread count.

/// A matrix operand: base pointer and element strides.
#[derive(Clone, Copy)]
pub(crate) struct Strided {
    pub ptr: *const f32,
    pub row_stride: usize,
    pub col_stride: usize,
}

// SAFETY: operands are only read; the writers own disjoint parts of the outputs.
unsafe impl Send for Strided {}
unsafe impl Sync for Strided {}

impl Strided {
    /// `data[offset..]` viewed with rows `row_stride` apart, columns contiguous.
    pub fn rows(data: &[f32], offset: usize, row_stride: usize) -> Strided {
        Strided { ptr: data[offset..].as_ptr(), row_stride, col_stride: 1 }
    }

    /// The transpose of `data[offset..]` viewed with rows `row_stride` apart.
    pub fn transposed(data: &[f32], offset: usize, row_stride: usize) -> Strided {
        Strided { ptr: data[offset..].as_ptr(), row_stride: 1, col_stride: row_stride }
    }

    /// The sub-matrix starting at (row, col).
    pub fn at(self, row: usize, col: usize) -> Strided {
        Strided { ptr: self.ptr.wrapping_add(row * self.row_stride + col * self.col_stride), ..self }
    }
}

/// A raw output pointer shared by tasks writing disjoint parts.
#[derive(Clone, Copy)]
pub(crate) struct OutPtr(pub *mut f32);
// SAFETY: as for `Strided`.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

impl OutPtr {
    /// The element `offset` places on (a method, so closures capture the whole `OutPtr`).
    pub fn at(self, offset: usize) -> *mut f32 {
        self.0.wrapping_add(offset)
    }
}

/// `c (m×n, row stride ldc) = beta·c + alpha·a·b`, `a` m×k, `b` k×n.
///
/// # Safety
/// The operands and `c` must describe valid memory for the shapes, and no other thread may
/// write the `m × n` block of `c`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sgemm(m: usize, k: usize, n: usize, alpha: f32, a: Strided, b: Strided, beta: f32, c: *mut f32, ldc: usize) {
    if m == 0 || n == 0 {
        return;
    }
    let s = |x: usize| x as isize;
    #[cfg(not(target_arch = "wasm32"))]
    gemm::gemm(
        m, n, k,
        c, 1, s(ldc), beta != 0.0,
        a.ptr, s(a.col_stride), s(a.row_stride),
        b.ptr, s(b.col_stride), s(b.row_stride),
        beta, alpha,
        false, false, false,
        gemm::Parallelism::None,
    );
    #[cfg(target_arch = "wasm32")]
    matrixmultiply::sgemm(
        m, k, n, alpha,
        a.ptr, s(a.row_stride), s(a.col_stride),
        b.ptr, s(b.row_stride), s(b.col_stride),
        beta, c, s(ldc), 1,
    );
}
