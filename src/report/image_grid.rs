//! Tiles many small grey images (filters, samples, digits) into one RGBA picture.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scaling {
    /// Values are already in [0, 1] (pixels, probabilities).
    Unit,
    /// Each tile is mapped symmetrically from [−max|w|, max|w|] to black..white, so zero is
    /// mid-grey and the sign of each weight is visible (DEEP's grey mode for filters).
    SymmetricPerTile,
}

#[derive(Serialize)]
pub struct RgbaImage {
    pub width: usize,
    pub height: usize,
    pub data: Vec<u8>,
}

/// `images` holds `count` images of `rows × cols`, each contiguous. Tiles are separated by
/// a one-pixel gap and laid out `columns` to a row.
pub fn tile(images: &[f32], count: usize, (rows, cols): (usize, usize), columns: usize, scaling: Scaling) -> RgbaImage {
    let columns = columns.clamp(1, count.max(1));
    let grid_rows = count.div_ceil(columns);
    let width = columns * (cols + 1) + 1;
    let height = grid_rows * (rows + 1) + 1;
    let mut data = vec![0u8; width * height * 4];
    for px in data.chunks_exact_mut(4) {
        px.copy_from_slice(&[40, 40, 48, 255]);
    }
    for k in 0..count {
        let image = &images[k * rows * cols..(k + 1) * rows * cols];
        let (low, high) = match scaling {
            Scaling::Unit => (0.0, 1.0),
            Scaling::SymmetricPerTile => {
                let max = image.iter().fold(0.0f32, |m, x| m.max(x.abs())).max(1e-12);
                (-max, max)
            }
        };
        let (x0, y0) = ((k % columns) * (cols + 1) + 1, (k / columns) * (rows + 1) + 1);
        for r in 0..rows {
            for c in 0..cols {
                let v = ((image[r * cols + c] - low) / (high - low)).clamp(0.0, 1.0);
                let grey = (v * 255.0).round() as u8;
                let at = ((y0 + r) * width + x0 + c) * 4;
                data[at..at + 4].copy_from_slice(&[grey, grey, grey, 255]);
            }
        }
    }
    RgbaImage { width, height, data }
}

/// The first `count` hidden units' weight vectors as `count` images (column `j` of W).
pub fn filters_of(weights: &[f32], n_visible: usize, n_hidden: usize, count: usize) -> Vec<f32> {
    let count = count.min(n_hidden);
    let mut out = Vec::with_capacity(count * n_visible);
    for j in 0..count {
        out.extend((0..n_visible).map(|i| weights[i * n_hidden + j]));
    }
    out
}

/// Binary PGM (P5) of the grid's grey channel: viewable anywhere, no image crate needed.
pub fn to_pgm(image: &RgbaImage) -> Vec<u8> {
    let mut out = format!("P5\n{} {}\n255\n", image.width, image.height).into_bytes();
    out.extend(image.data.chunks_exact(4).map(|px| px[0]));
    out
}
