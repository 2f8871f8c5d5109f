//! Preparing natural-image patches for sparse coding: each patch's mean removed (the basis
//! then codes structure, not brightness, and no basis vector is spent on the DC level), then
//! every value divided by one global scale, the standard deviation of all the mean-removed
//! values, so the data have unit variance per pixel on average and a β means the same for any
//! set of photographs. Optional ZCA whitening (`data::patches::Zca`) comes after, on these
//! values. (Olshausen & Field, and Lee et al., code pre-whitened images; Raina et al. do not say.)

use super::error::SparseCodingError;

/// Removes each case's mean and divides everything by the mean-removed values' standard
/// deviation, in place; returns that deviation.
pub fn centre_and_scale(values: &mut [f32], width: usize) -> Result<f64, SparseCodingError> {
    if width == 0 || values.is_empty() || !values.len().is_multiple_of(width) {
        return Err(SparseCodingError::Shape { field: "patches", message: format!("{} values do not make whole patches of {width} pixels", values.len()) });
    }
    let mut sum_squares = 0.0f64;
    let mut centred: Vec<f64> = Vec::with_capacity(values.len());
    for patch in values.chunks_exact(width) {
        let mean = patch.iter().map(|&x| f64::from(x)).sum::<f64>() / width as f64;
        for &x in patch {
            let c = f64::from(x) - mean;
            sum_squares += c * c;
            centred.push(c);
        }
    }
    let deviation = (sum_squares / values.len() as f64).sqrt();
    if !(deviation > 0.0 && deviation.is_finite()) {
        return Err(SparseCodingError::Setting { field: "patches", value: deviation, expected: "patches with some contrast (every mean-removed patch is flat, or a value is not finite)" });
    }
    values.iter_mut().zip(centred).for_each(|(v, c)| *v = (c / deviation) as f32);
    Ok(deviation)
}

#[cfg(test)]
mod tests {
    use super::centre_and_scale;

    #[test]
    fn patches_lose_their_means_and_get_unit_variance() {
        let mut values = vec![1.0f32, 2.0, 3.0, 10.0, 10.0, 16.0];
        let deviation = centre_and_scale(&mut values, 3).unwrap();
        // Centred: −1, 0, 1, −2, −2, 4; mean square 26/6.
        assert!((deviation - (26.0f64 / 6.0).sqrt()).abs() < 1e-12);
        for patch in values.chunks(3) {
            assert!(patch.iter().sum::<f32>().abs() < 1e-6);
        }
        let mean_square: f32 = values.iter().map(|v| v * v).sum::<f32>() / 6.0;
        assert!((mean_square - 1.0).abs() < 1e-6);
        assert!(centre_and_scale(&mut [5.0, 5.0], 2).unwrap_err().to_string().contains("patches"));
        assert!(centre_and_scale(&mut [1.0, 2.0, 3.0], 2).unwrap_err().to_string().contains("whole patches of 2"));
    }
}
