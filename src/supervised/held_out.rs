//! Early stopping on a held-out slice of the training cases, and random image shifts.
//!
//! Mini-batch training of a SoftMax on 500 RBM features reaches 0% training error on 10k
//! MNIST cases and then only overfits (93.5% test accuracy with DEEP's settings). Holding
//! out a class-stratified tenth of the cases, scoring it after every epoch and keeping the
//! best weights stops at the epoch that generalises best, whatever the learning rate or the
//! size of the net (an extension beyond DEEP, which trains to a tolerance).
//!
//! Shifting each training image by up to a pixel in each direction, fresh every epoch, is
//! the cheapest known regulariser for fine-tuning on small image sets (Simard et al. 2003
//! used larger distortions); it applies only where the inputs are pixels of a known shape.

use super::criterion::Cases;
use super::network::{Network, OutputKind};
use crate::backend::Backend;
use crate::data::split::{complement, held_out_cases};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Held-out cases and how long to wait for a new best score.
#[derive(Clone, Copy)]
pub struct HeldOut<'a> {
    pub cases: Cases<'a>,
    /// Epochs without a new best held-out score before training stops.
    pub patience: usize,
}

/// The held-out score of a net: the classification error for SoftMax outputs (what the
/// user reads), the mean squared error for linear and logistic ones (whose targets may be real values).
/// Lower is better.
pub fn held_out_score(net: &Network, backend: &dyn Backend, cases: Cases) -> f64 {
    let outputs = net.predict(backend, cases.inputs);
    let n_cases = cases.n_cases().max(1);
    let width = cases.n_outputs;
    match net.output {
        OutputKind::SoftMax => {
            let wrong = outputs.chunks(width).zip(cases.targets.chunks(width)).filter(|(o, t)| arg_max(o) != arg_max(t)).count();
            wrong as f64 / n_cases as f64
        }
        OutputKind::Linear | OutputKind::Logistic => outputs.iter().zip(cases.targets).map(|(&o, &t)| ((o - t) as f64).powi(2)).sum::<f64>() / (n_cases * width).max(1) as f64,
    }
}

/// The index of the largest value (the first of equals).
pub fn arg_max(values: &[f32]) -> usize {
    values.iter().enumerate().fold(0, |best, (i, &v)| if v > values[best] { i } else { best })
}

/// Splits the cases of `targets` (`n_outputs` each) into (training, held-out) case indices,
/// both ascending: `data::split::held_out_cases`, stratified by each case's largest target
/// when `stratify` (SoftMax outputs), otherwise a seeded random choice.
pub fn split_held_out(targets: &[f32], n_outputs: usize, stratify: bool, fraction: f64, seed: u64) -> (Vec<usize>, Vec<usize>) {
    let n_cases = targets.len() / n_outputs.max(1);
    let classes: Vec<u32> = if stratify { targets.chunks(n_outputs.max(1)).map(|t| arg_max(t) as u32).collect() } else { Vec::new() };
    let held_out = held_out_cases(n_cases, stratify.then_some((&classes[..], n_outputs)), fraction, seed ^ 0x5eed_4e1d);
    (complement(&held_out, n_cases), held_out)
}

/// Copies the given cases' inputs and targets, in order.
pub fn gather(cases: &Cases, picked: &[usize]) -> (Vec<f32>, Vec<f32>) {
    let (ni, no) = (cases.n_inputs, cases.n_outputs);
    let inputs = picked.iter().flat_map(|&c| &cases.inputs[c * ni..(c + 1) * ni]).copied().collect();
    let targets = picked.iter().flat_map(|&c| &cases.targets[c * no..(c + 1) * no]).copied().collect();
    (inputs, targets)
}

/// Random translations of images of `shape` (rows, columns) by up to `max_pixels` in each
/// direction; pixels shifted in from outside copy the nearest edge pixel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shift {
    pub shape: (usize, usize),
    pub max_pixels: usize,
}

impl Shift {
    /// Shifts every image of `images` (each `rows · columns` values) in place, each by its
    /// own offset drawn from `rng`.
    pub fn apply(&self, images: &mut [f32], rng: &mut ChaCha8Rng, scratch: &mut Vec<f32>) {
        let (rows, cols) = self.shape;
        let size = rows * cols;
        if self.max_pixels == 0 || size == 0 {
            return;
        }
        let m = self.max_pixels as i64;
        scratch.resize(size, 0.0);
        for image in images.chunks_exact_mut(size) {
            let (dy, dx) = (rng.random_range(-m..=m), rng.random_range(-m..=m));
            if dy == 0 && dx == 0 {
                continue;
            }
            scratch.copy_from_slice(image);
            for r in 0..rows {
                let source_row = (r as i64 - dy).clamp(0, rows as i64 - 1) as usize;
                for c in 0..cols {
                    let source_col = (c as i64 - dx).clamp(0, cols as i64 - 1) as usize;
                    image[r * cols + c] = scratch[source_row * cols + source_col];
                }
            }
        }
    }
}
