//! Inputs for autoencoders: natural-image patches as in the UFLDL sparse autoencoder
//! exercise (`sampleIMAGES`, `normalizeData`), optional ZCA whitening (UFLDL's
//! `ZCAWhite = U·diag(1/√(λ + ε))·Uᵀ`), and whole images scaled to [0, 1] (MNIST).
//!
//! Patches are flattened row by row (the crate's image layout, as IDX and the filter tiles);
//! MATLAB's `patch(:)` in the exercise is column by column, which only transposes each tile.

use std::fmt;

use nalgebra::{DMatrix, SymmetricEigen};

use super::idx::IdxImages;
use crate::backend::{Activation, Backend, Weights};
use crate::rng::{Purpose, RngStream};

/// A grey image, row-major, values in any range (the exercise's IMAGES are whitened).
#[derive(Clone, Debug, PartialEq)]
pub struct GreyImage {
    pub rows: usize,
    pub cols: usize,
    pub pixels: Vec<f32>,
}

/// `count` square patches of `side × side` pixels, one after another, each row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Patches {
    pub side: usize,
    pub count: usize,
    pub values: Vec<f32>,
}

impl Patches {
    pub fn width(&self) -> usize {
        self.side * self.side
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum PatchError {
    NoImages,
    /// A patch side or count of zero.
    Empty { field: &'static str },
    /// The image's pixel buffer does not hold rows × cols values.
    PixelCount { image: usize, pixels: usize, rows: usize, cols: usize },
    TooSmall { image: usize, rows: usize, cols: usize, side: usize },
    NonFinite { image: usize, pixel: usize },
    /// Every mean-removed patch value is zero, so there is no σ to scale by.
    Flat,
    /// `dim` does not divide the values, or ZCA's ε is not a positive number.
    Whitening(String),
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            PatchError::NoImages => write!(f, "no images to cut patches from"),
            PatchError::Empty { field } => write!(f, "patch {field} is 0; expected at least 1"),
            PatchError::PixelCount { image, pixels, rows, cols } => write!(f, "image {image} has {pixels} pixels; expected {rows} × {cols} = {}", rows * cols),
            PatchError::TooSmall { image, rows, cols, side } => write!(f, "image {image} is {rows} × {cols} pixels, smaller than a {side} × {side} patch"),
            PatchError::NonFinite { image, pixel } => write!(f, "image {image}, pixel {pixel} (row-major) is not a finite number"),
            PatchError::Flat => write!(f, "every patch is flat (σ = 0 after removing each patch's mean); nothing to normalise"),
            PatchError::Whitening(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for PatchError {}

/// `count` random `side × side` patches (UFLDL's `sampleIMAGES`): patch `k` comes from
/// image `⌊u₃ₖ·n⌋` at row `⌊u₃ₖ₊₁·(rows − side + 1)⌋`, column `⌊u₃ₖ₊₂·(cols − side + 1)⌋`,
/// `uᵢ` the Philox stream `(seed, step 0, DataSample)`.
pub fn sample_patches(images: &[GreyImage], side: usize, count: usize, seed: u64) -> Result<Patches, PatchError> {
    if images.is_empty() {
        return Err(PatchError::NoImages);
    }
    if side == 0 {
        return Err(PatchError::Empty { field: "side" });
    }
    if count == 0 {
        return Err(PatchError::Empty { field: "count" });
    }
    for (image, im) in images.iter().enumerate() {
        if im.pixels.len() != im.rows * im.cols {
            return Err(PatchError::PixelCount { image, pixels: im.pixels.len(), rows: im.rows, cols: im.cols });
        }
        if im.rows < side || im.cols < side {
            return Err(PatchError::TooSmall { image, rows: im.rows, cols: im.cols, side });
        }
        if let Some(pixel) = im.pixels.iter().position(|p| !p.is_finite()) {
            return Err(PatchError::NonFinite { image, pixel });
        }
    }
    let stream = RngStream::new(seed, 0, Purpose::DataSample);
    let pick = |index: u64, n: usize| ((stream.uniform(index) as f64 * n as f64) as usize).min(n - 1);
    let mut values = Vec::with_capacity(count * side * side);
    for k in 0..count as u64 {
        let im = &images[pick(3 * k, images.len())];
        let row = pick(3 * k + 1, im.rows - side + 1);
        let col = pick(3 * k + 2, im.cols - side + 1);
        for r in row..row + side {
            values.extend_from_slice(&im.pixels[r * im.cols + col..r * im.cols + col + side]);
        }
    }
    Ok(Patches { side, count, values })
}

/// UFLDL's `normalizeData`, in place: remove each patch's mean, clip at ±3σ (σ the standard
/// deviation of all the mean-removed values, normalised by N − 1 as MATLAB's `std`), scale
/// to [−1, 1] and map to [0.1, 0.9] — the range of the sigmoid decoder. Returns 3σ.
pub fn normalise_patches(patches: &mut Patches) -> Result<f64, PatchError> {
    let width = patches.width();
    if width == 0 || patches.values.is_empty() {
        return Err(PatchError::Empty { field: if width == 0 { "side" } else { "count" } });
    }
    let mut centred: Vec<f64> = Vec::with_capacity(patches.values.len());
    for patch in patches.values.chunks_exact(width) {
        let mean = patch.iter().map(|&x| f64::from(x)).sum::<f64>() / width as f64;
        centred.extend(patch.iter().map(|&x| f64::from(x) - mean));
    }
    let n = centred.len() as f64;
    let mean = centred.iter().sum::<f64>() / n;
    let variance = centred.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0).max(1.0);
    let clip = 3.0 * variance.sqrt();
    if clip.is_nan() || clip <= 0.0 {
        return Err(PatchError::Flat);
    }
    for (value, x) in patches.values.iter_mut().zip(centred) {
        let scaled = x.clamp(-clip, clip) / clip;
        *value = ((scaled + 1.0) * 0.4 + 0.1) as f32;
    }
    Ok(clip)
}

/// A ZCA whitening transform fitted to a set of cases.
#[derive(Clone, Debug, PartialEq)]
pub struct Zca {
    pub dim: usize,
    /// Each input's mean over the fitted cases.
    pub mean: Vec<f32>,
    /// `U·diag(1/√(λ + ε))·Uᵀ`, `dim × dim`, symmetric.
    pub matrix: Vec<f32>,
}

impl Zca {
    /// Fits to `values` (cases × dim): `Σ = x̄ᵀx̄/m` of the mean-removed cases (a backend
    /// product), its eigendecomposition in `f64`, and the regulariser `epsilon` (UFLDL uses 0.1
    /// for 8×8 patches).
    pub fn fit(backend: &dyn Backend, values: &[f32], dim: usize, epsilon: f64) -> Result<Zca, PatchError> {
        if dim == 0 || values.is_empty() || !values.len().is_multiple_of(dim) {
            return Err(PatchError::Whitening(format!("{} values do not make whole cases of {dim} inputs", values.len())));
        }
        if !(epsilon > 0.0 && epsilon.is_finite()) {
            return Err(PatchError::Whitening(format!("ZCA epsilon is {epsilon}; expected a positive number")));
        }
        let rows = values.len() / dim;
        let mut sums = vec![0.0f64; dim];
        for case in values.chunks_exact(dim) {
            sums.iter_mut().zip(case).for_each(|(s, &x)| *s += f64::from(x));
        }
        let mean: Vec<f32> = sums.iter().map(|s| (s / rows as f64) as f32).collect();
        let centred: Vec<f32> = values.chunks_exact(dim).flat_map(|case| case.iter().zip(&mean).map(|(x, m)| x - m)).collect();
        let mut covariance = vec![0.0f32; dim * dim];
        backend.accumulate_outer((dim, dim), &centred, &centred, 1.0 / rows as f32, &mut covariance);
        let sigma = DMatrix::from_fn(dim, dim, |i, j| 0.5 * (f64::from(covariance[i * dim + j]) + f64::from(covariance[j * dim + i])));
        let eigen = SymmetricEigen::new(sigma);
        let scales: Vec<f64> = eigen.eigenvalues.iter().map(|&l| 1.0 / (l.max(0.0) + epsilon).sqrt()).collect();
        let u = &eigen.eigenvectors;
        let mut matrix = vec![0.0f32; dim * dim];
        for i in 0..dim {
            for j in 0..dim {
                matrix[i * dim + j] = (0..dim).map(|k| u[(i, k)] * scales[k] * u[(j, k)]).sum::<f64>() as f32;
            }
        }
        Ok(Zca { dim, mean, matrix })
    }

    /// The whitened cases `W(x − mean)`, as one backend product (`W` is symmetric, so it
    /// serves as its own `dim × dim` weight matrix, with bias `−W·mean`).
    pub fn apply(&self, backend: &dyn Backend, values: &[f32]) -> Vec<f32> {
        let dim = self.dim;
        assert!(values.len().is_multiple_of(dim), "{} values do not make whole cases of {dim} inputs", values.len());
        let bias: Vec<f32> = (0..dim).map(|j| -(0..dim).map(|i| f64::from(self.matrix[i * dim + j]) * f64::from(self.mean[i])).sum::<f64>() as f32).collect();
        let mut out = vec![0.0f32; values.len()];
        let weights = Weights { values: &self.matrix, n_visible: dim, n_hidden: dim };
        backend.visible_to_hidden(weights, values, &bias, Activation::Linear, &mut out);
        out
    }
}

/// The first `limit` images (all without one) as autoencoder inputs: byte / 255, row-major,
/// `rows·cols` values per image.
pub fn unit_inputs(images: &IdxImages, limit: Option<usize>) -> Vec<f32> {
    let count = limit.map_or(images.count, |l| l.min(images.count));
    images.pixels[..count * images.rows * images.cols].iter().map(|&b| f32::from(b) / 255.0).collect()
}

/// Reads an IDX image file (MNIST; raw or gzip) into autoencoder inputs: the values and the
/// pixels per image.
#[cfg(not(target_arch = "wasm32"))]
pub fn read_unit_inputs(path: &std::path::Path, limit: Option<usize>) -> Result<(Vec<f32>, usize), super::DataError> {
    let images = super::idx::read_idx_images(path)?;
    Ok((unit_inputs(&images, limit), images.rows * images.cols))
}
