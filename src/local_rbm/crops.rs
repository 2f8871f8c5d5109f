//! Training cases for a local-patch RBM: random square crops of grey images (Raina et al. cut
//! theirs from van Hateren's natural images), `sample_patches`' Philox draw. For Gaussian
//! visible units each crop's mean is removed and all values divided by their common standard
//! deviation, so the data are near zero mean and unit variance, as unit-variance Gaussian
//! units assume; for binary units the grey levels are rescaled to [0, 1] over the whole set.

use crate::data::patches::{sample_patches, GreyImage};
use crate::model::VisibleUnits;

/// `count` crops of `side × side` (one channel), `count × side²`, row-major.
pub fn image_crops(images: &[GreyImage], side: usize, count: usize, seed: u64, units: VisibleUnits) -> Result<Vec<f32>, String> {
    let mut values = sample_patches(images, side, count, seed).map_err(|e| format!("--images: {e}"))?.values;
    let width = side * side;
    match units {
        VisibleUnits::Gaussian => {
            for crop in values.chunks_exact_mut(width) {
                let mean = crop.iter().map(|&x| x as f64).sum::<f64>() / width as f64;
                crop.iter_mut().for_each(|x| *x -= mean as f32);
            }
            let variance = values.iter().map(|&x| (x as f64).powi(2)).sum::<f64>() / values.len() as f64;
            if variance <= 0.0 || !variance.is_finite() {
                return Err("--images: every crop is flat (no variation left after removing its mean)".into());
            }
            let scale = (1.0 / variance.sqrt()) as f32;
            values.iter_mut().for_each(|x| *x *= scale);
        }
        VisibleUnits::Bernoulli => {
            let (lo, hi) = values.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            let range = (hi - lo).max(1e-12);
            values.iter_mut().for_each(|x| *x = (*x - lo) / range);
        }
    }
    Ok(values)
}
