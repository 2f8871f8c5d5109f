//! The fused weight update: penalties, momentum step, and the figures the schedules need
//! (gradient cosine and RMS, largest increment), in one parallel pass over the weights.
//!
//! Rows are split into fixed blocks, and within a row element `j` adds into partial sum
//! `j % LANES`: the per-element arithmetic is that of the scalar rule, and the sums have a
//! fixed shape (lanes, then blocks in order) that does not depend on the number of threads,
//! so the result is bit-identical for any thread count. The lanes let the compiler keep
//! `LANES` independent sums in vector registers instead of one serial chain of f64 adds (4
//! cycles each, the whole cost of this pass before), and the largest increment is a plain
//! compare-and-select (`f32::max` handles NaN by a branch and does not vectorise).

use crate::backend::wide::wide;
use crate::backend::{Backend, OuterProduct};
use rayon::prelude::*;
use std::sync::Mutex;

pub struct WeightStep<'a> {
    pub learning_rate: f32,
    pub momentum: f32,
    pub weight_penalty: f32,
    /// Batch mean of each visible unit: the sparsity penalty's weight gradient is
    /// `mean_input[i] · sparsity_derivative[j]`.
    pub mean_input: &'a [f32],
    pub sparsity_derivative: &'a [f32],
}

pub struct UpdateFigures {
    /// Cosine between this gradient and the previous one (None on the first batch).
    pub cosine: Option<f64>,
    pub gradient_rms: f64,
    pub max_increment: f32,
}

/// Rows of weights per block at most: blocks are the unit of parallel work, of the partial
/// sums, and of the gradient blocks `update_weights_from_products` asks the backend for.
const MAX_ROWS_PER_BLOCK: usize = 128;
/// Blocks come in multiples of this many, so they spread evenly over 2, 4 or 8 threads.
const BLOCKS_MULTIPLE: usize = 8;

/// Rows per block for `n_visible` rows: a multiple of 8 equal blocks of at most
/// `MAX_ROWS_PER_BLOCK` rows (784 rows: 8 of 98, whose 98 × 500 gradient, 196 KB, stays in L2
/// between its product and its update). Depends on the shape only, so the sums are the same
/// on any number of threads.
fn rows_per_block(n_visible: usize) -> usize {
    let blocks = n_visible.div_ceil(BLOCKS_MULTIPLE * MAX_ROWS_PER_BLOCK).max(1) * BLOCKS_MULTIPLE;
    n_visible.div_ceil(blocks).max(1)
}

/// Partial sums per reduction: 8 f64 fill one AVX-512 register (two AVX2, four SSE2).
const LANES: usize = 8;

/// A block's partial sums, one per lane.
#[derive(Clone, Copy)]
struct Sums {
    dot: [f64; LANES],
    norm: [f64; LANES],
    previous_norm: [f64; LANES],
    max_increment: [f32; LANES],
}

impl Sums {
    const ZERO: Sums = Sums { dot: [0.0; LANES], norm: [0.0; LANES], previous_norm: [0.0; LANES], max_increment: [0.0; LANES] };

    /// (dot, norm, previous norm, max increment), the lanes added in order.
    fn total(&self) -> (f64, f64, f64, f32) {
        let sum = |lanes: &[f64; LANES]| lanes.iter().sum::<f64>();
        (sum(&self.dot), sum(&self.norm), sum(&self.previous_norm), self.max_increment.iter().fold(0.0f32, |m, &x| if x > m { x } else { m }))
    }
}

/// `gradient` enters as the raw log-likelihood estimate and leaves with the penalties
/// applied (the form the next batch's cosine compares against).
pub fn update_weights(weights: &mut [f32], velocity: &mut [f32], gradient: &mut [f32], previous: Option<&[f32]>, step: &WeightStep) -> UpdateFigures {
    let block_rows = rows_per_block(step.mean_input.len());
    let block = block_rows * step.sparsity_derivative.len().max(1);
    let partials: Vec<Sums> = weights
        .par_chunks_mut(block)
        .zip(velocity.par_chunks_mut(block))
        .zip(gradient.par_chunks_mut(block))
        .enumerate()
        .map(|(index, ((w, v), g))| update_block(index * block_rows, w, v, g, previous, step))
        .collect();
    figures(&partials, previous.is_some(), weights.len())
}

/// `update_weights` on the gradient `Σ scale · visibleᵀ · hidden` of `products`, which
/// `backend` makes a block of rows at a time: each block is updated as soon as it is made,
/// while it is in cache, instead of in a second pass over the whole matrix. The same blocks
/// and sums as `update_weights`, so the same results bit for bit (tests/train_rules.rs).
pub fn update_weights_from_products(
    backend: &dyn Backend,
    products: &[OuterProduct],
    weights: &mut [f32],
    velocity: &mut [f32],
    gradient: &mut [f32],
    previous: Option<&[f32]>,
    step: &WeightStep,
) -> UpdateFigures {
    let shape = (step.mean_input.len(), step.sparsity_derivative.len());
    assert!(weights.len() == shape.0 * shape.1 && velocity.len() == weights.len());
    let block_rows = rows_per_block(shape.0);
    let block = block_rows * shape.1.max(1);
    // Each block's weights, velocities and sums, for whichever task the backend visits it on.
    let slots: Vec<Mutex<(&mut [f32], &mut [f32], Sums)>> =
        weights.chunks_mut(block).zip(velocity.chunks_mut(block)).map(|(w, v)| Mutex::new((w, v, Sums::ZERO))).collect();
    backend.outer_products_by_blocks(shape, products, gradient, block_rows, &|index, g| {
        let mut slot = slots[index].lock().expect("a weight block");
        let (w, v, sums) = &mut *slot;
        assert_eq!(w.len(), g.len(), "gradient block {index}");
        *sums = update_block(index * block_rows, w, v, g, previous, step);
    });
    let partials: Vec<Sums> = slots.into_iter().map(|slot| slot.into_inner().expect("a weight block").2).collect();
    figures(&partials, previous.is_some(), weights.len())
}

/// The block of rows from `first_row`: the update and its partial sums.
fn update_block(first_row: usize, w: &mut [f32], v: &mut [f32], g: &mut [f32], previous: Option<&[f32]>, step: &WeightStep) -> Sums {
    let n_hidden = step.sparsity_derivative.len();
    let offset = first_row * n_hidden;
    let previous = previous.map(|p| &p[offset..offset + g.len()]);
    let mut sums = Sums::ZERO;
    wide(#[inline(always)] || {
        let rows = w.chunks_exact_mut(n_hidden).zip(v.chunks_exact_mut(n_hidden)).zip(g.chunks_exact_mut(n_hidden));
        for (row, ((w, v), g)) in rows.enumerate() {
            update_row(w, v, g, step.mean_input[first_row + row], step, &mut sums);
            if let Some(p) = previous {
                compare_row(g, &p[row * n_hidden..(row + 1) * n_hidden], &mut sums);
            }
        }
    });
    sums
}

/// The figures from the blocks' partial sums, added in block order.
fn figures(partials: &[Sums], has_previous: bool, len: usize) -> UpdateFigures {
    let (dot, norm, previous_norm, max_increment) = partials.iter().map(Sums::total).fold((0.0, 0.0, 0.0, 0.0f32), |a, p| (a.0 + p.0, a.1 + p.1, a.2 + p.2, a.3.max(p.3)));
    let cosine = (has_previous && norm > 0.0 && previous_norm > 0.0).then(|| dot / (norm * previous_norm).sqrt());
    UpdateFigures { cosine, gradient_rms: (norm / len.max(1) as f64).sqrt(), max_increment }
}

/// One row of weights (visible unit `i`, whose batch mean is `mean_input`): penalties and
/// momentum step, then the row's share of the gradient norm and largest increment. Two loops
/// over the row (the second reads it from L1) because each alone has the shape the compiler
/// vectorises: a plain elementwise loop, and lane sums over groups of `LANES`.
#[inline(always)]
fn update_row(w: &mut [f32], v: &mut [f32], g: &mut [f32], mean_input: f32, step: &WeightStep, sums: &mut Sums) {
    let (penalty, momentum, rate) = (step.weight_penalty, step.momentum, step.learning_rate);
    let d = &step.sparsity_derivative[..g.len()];
    for (((w, v), g), &d) in w.iter_mut().zip(v.iter_mut()).zip(g.iter_mut()).zip(d) {
        *g -= penalty * *w + mean_input * d;
        *v = momentum * *v + rate * *g;
        *w += *v;
    }
    let (mut norm, mut max_increment) = (sums.norm, sums.max_increment);
    in_lanes([g, v], |[g, v], lane| {
        norm[lane] += g as f64 * g as f64;
        let increment = v.abs();
        max_increment[lane] = if increment > max_increment[lane] { increment } else { max_increment[lane] };
    });
    (sums.norm, sums.max_increment) = (norm, max_increment);
}

/// The row's share of the dot product with the previous gradient and of that gradient's norm.
#[inline(always)]
fn compare_row(g: &[f32], p: &[f32], sums: &mut Sums) {
    let (mut dot, mut previous_norm) = (sums.dot, sums.previous_norm);
    in_lanes([g, p], |[g, p], lane| {
        dot[lane] += g as f64 * p as f64;
        previous_norm[lane] += p as f64 * p as f64;
    });
    (sums.dot, sums.previous_norm) = (dot, previous_norm);
}

/// `element([a[j], b[j]], j % LANES)` for j along the rows `[a, b]` (of `a`'s length): whole
/// groups of `LANES` as fixed-size arrays (no bounds checks inside, so the compiler turns each
/// lane array update into one vector operation), then the tail.
#[inline(always)]
fn in_lanes(rows: [&[f32]; 2], mut element: impl FnMut([f32; 2], usize)) {
    let n = rows[0].len();
    let whole = n - n % LANES;
    for start in (0..whole).step_by(LANES) {
        let groups: [&[f32; LANES]; 2] = rows.map(|row| row[start..start + LANES].try_into().expect("a whole group"));
        for lane in 0..LANES {
            element(groups.map(|group| group[lane]), lane);
        }
    }
    for j in whole..n {
        element(rows.map(|row| row[j]), j - whole);
    }
}

/// Biases take the same momentum step without the weight penalty.
pub fn update_bias(bias: &mut [f32], velocity: &mut [f32], gradient: &[f32], step: &WeightStep) {
    for ((b, v), g) in bias.iter_mut().zip(velocity.iter_mut()).zip(gradient) {
        *v = step.momentum * *v + step.learning_rate * g;
        *b += *v;
    }
}
