//! An easily separable data set: case k of class k % 3 lights the top, middle or bottom two
//! rows of its image, with a little deterministic speckle.

use super::SIDE;
use deepbelief::data::idx::{encode_idx_images, encode_idx_labels, IdxImages};
use deepbelief::web::Playground;

pub const CLASSES: usize = 3;

/// `count` SIDE × SIDE images and their labels, as IDX files.
pub fn synthetic_idx(count: usize) -> (Vec<u8>, Vec<u8>) {
    let mut pixels = Vec::with_capacity(count * SIDE * SIDE);
    let mut state = 12345u32;
    let mut labels = Vec::with_capacity(count);
    for case in 0..count {
        let class = case % CLASSES;
        labels.push(class as u8);
        for row in 0..SIDE {
            for _ in 0..SIDE {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let speckle = (state >> 24) as u8 / 4;
                pixels.push(if row / 2 == class { 255 - speckle } else { speckle });
            }
        }
    }
    (encode_idx_images(&IdxImages { count, rows: SIDE, cols: SIDE, pixels }), encode_idx_labels(&labels))
}

/// A playground holding `count` cases.
pub fn loaded(count: usize) -> Playground {
    let (images, labels) = synthetic_idx(count);
    let mut playground = Playground::new();
    playground.load_idx("synthetic-images", &images, Some("synthetic-labels".into()), Some(labels)).expect("synthetic data load");
    playground
}
