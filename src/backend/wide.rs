//! Elementwise loops compiled for the widest vector unit the CPU has.
//!
//! Release builds target baseline x86-64 (SSE2: 4 f32 or 2 f64 lanes), so the trainer's
//! elementwise passes (sigmoids, Philox, the weight update and its f64 sums) would run at a
//! quarter of what AVX-512 gives. `wide(work)` runs `work` inside a function compiled with
//! AVX-512 or AVX2 enabled, picked at run time as the `gemm` crate picks its kernels; `work`
//! must be `#[inline(always)]` so that its body is compiled there too.
//!
//! The result does not depend on the path taken: the loops use plain IEEE adds, multiplies,
//! divides, compares and integer ops with a fixed order of operations (Rust never contracts
//! `a * b + c` into a fused multiply-add, and the sums keep explicit lanes), and those give the
//! same bits at any vector width. tests below check the kernels' wide and plain results agree.
//! Elsewhere (wasm32 with simd128, other targets) `work` just runs.

/// Runs `work` compiled for AVX-512 (F, VL, DQ, BW) or AVX2 where the CPU has them.
#[inline(always)]
pub(crate) fn wide<R>(work: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw")]
        unsafe fn avx512<R>(work: impl FnOnce() -> R) -> R {
            work()
        }
        #[target_feature(enable = "avx2")]
        unsafe fn avx2<R>(work: impl FnOnce() -> R) -> R {
            work()
        }
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512vl") && has!("avx512dq") && has!("avx512bw") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { avx512(work) };
        }
        if has!("avx2") {
            // SAFETY: as above.
            return unsafe { avx2(work) };
        }
    }
    work()
}
