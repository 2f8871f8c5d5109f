//! The CPU reference backend: `matrixmultiply::sgemm` on row blocks spread over rayon.
//!
//! It is the ground truth every other backend is tested against, so it favours plain,
//! obviously-correct code; the speed comes from the GEMM crate and from rayon.

use super::{sigmoid, Activation, Backend, Weights};
use crate::rng::RngStream;
use rayon::prelude::*;

pub struct CpuBackend;

/// Rows per parallel task: enough work to amortise a task, few enough to balance threads.
fn rows_per_task(rows: usize, row_cost: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    let by_balance = rows.div_ceil(threads * 4).max(1);
    let by_work = (32_768 / row_cost.max(1)).max(1);
    by_balance.max(by_work).min(rows.max(1))
}

/// `out (m×n) = a (m×k, strides rsa/csa) · b (k×n, strides rsb/csb)`, then bias and activation.
#[allow(clippy::too_many_arguments)]
fn gemm_rows(m: usize, k: usize, n: usize, a: &[f32], rsa: isize, csa: isize, b: &[f32], rsb: isize, csb: isize, bias: &[f32], activation: Activation, out: &mut [f32]) {
    for row in out.chunks_exact_mut(n) {
        row.copy_from_slice(bias);
    }
    // SAFETY: the strides describe exactly the slices given (checked by the callers' asserts).
    unsafe {
        matrixmultiply::sgemm(m, k, n, 1.0, a.as_ptr(), rsa, csa, b.as_ptr(), rsb, csb, 1.0, out.as_mut_ptr(), n as isize, 1);
    }
    if activation == Activation::Sigmoid {
        for x in out.iter_mut() {
            *x = sigmoid(*x);
        }
    }
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
        let chunk = rows_per_task(rows, nv * nh);
        hidden.par_chunks_mut(chunk * nh).zip(visible.par_chunks(chunk * nv)).for_each(|(out, input)| {
            let m = input.len() / nv;
            gemm_rows(m, nv, nh, input, nv as isize, 1, w.values, nh as isize, 1, hidden_bias, activation, out);
        });
    }

    fn hidden_to_visible(&self, w: Weights, hidden: &[f32], visible_bias: &[f32], activation: Activation, visible: &mut [f32]) {
        let (nv, nh) = (w.n_visible, w.n_hidden);
        let rows = hidden.len() / nh;
        assert!(hidden.len() == rows * nh && visible.len() == rows * nv && visible_bias.len() == nv && w.values.len() == nv * nh);
        let chunk = rows_per_task(rows, nv * nh);
        visible.par_chunks_mut(chunk * nv).zip(hidden.par_chunks(chunk * nh)).for_each(|(out, input)| {
            let m = input.len() / nh;
            // Wᵀ through strides: element (j, i) of Wᵀ is W[i * nh + j].
            gemm_rows(m, nh, nv, input, nh as isize, 1, w.values, 1, nh as isize, visible_bias, activation, out);
        });
    }

    fn accumulate_outer(&self, (nv, nh): (usize, usize), visible: &[f32], hidden: &[f32], scale: f32, gradient: &mut [f32]) {
        let rows = visible.len() / nv;
        assert!(visible.len() == rows * nv && hidden.len() == rows * nh && gradient.len() == nv * nh);
        let chunk = rows_per_task(nv, rows * nh);
        gradient.par_chunks_mut(chunk * nh).enumerate().for_each(|(task, out)| {
            let first = task * chunk;
            let m = out.len() / nh;
            // Visibleᵀ through strides: row i of the product reads column (first + i) of `visible`.
            unsafe {
                matrixmultiply::sgemm(m, rows, nh, scale, visible[first..].as_ptr(), 1, nv as isize, hidden.as_ptr(), nh as isize, 1, 1.0, out.as_mut_ptr(), nh as isize, 1);
            }
        });
    }

    fn bernoulli(&self, probabilities: &[f32], stream: RngStream, samples: &mut [f32]) {
        assert_eq!(probabilities.len(), samples.len());
        samples.par_chunks_mut(4096).zip(probabilities.par_chunks(4096)).enumerate().for_each(|(block, (out, p))| {
            let base = (block * 4096) as u64;
            for (k, (s, &prob)) in out.iter_mut().zip(p).enumerate() {
                *s = if stream.uniform(base + k as u64) < prob { 1.0 } else { 0.0 };
            }
        });
    }
}
