//! Tiles many small images (filters, samples, digits) into one picture: RGBA for the page,
//! one grey byte per pixel for PNG files. Filters come in DEEP's grey mode or in colour
//! (the sign as hue, the size as brightness).

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
pub fn tile(images: &[f32], count: usize, shape: (usize, usize), columns: usize, scaling: Scaling) -> RgbaImage {
    let grid = GridLayout::fitting(count, shape, columns, images.len());
    let mut data = vec![0u8; grid.width * grid.height * 4];
    for px in data.chunks_exact_mut(4) {
        px.copy_from_slice(&[40, 40, 48, 255]);
    }
    paint_tiles(images, &grid, scaling, |at, grey| data[at * 4..at * 4 + 4].copy_from_slice(&[grey, grey, grey, 255]));
    RgbaImage { width: grid.width, height: grid.height, data }
}

/// As [`tile`], in colour: each tile is scaled by its own max|w| like
/// `Scaling::SymmetricPerTile`, but positive values are drawn red and negative ones blue, with
/// brightness `|w| / max|w|`, so zero is black. Small weights of either sign vanish instead of
/// sitting at mid-grey, which makes the shape of a filter's strong part easier to see.
pub fn tile_colour(images: &[f32], count: usize, shape: (usize, usize), columns: usize) -> RgbaImage {
    let grid = GridLayout::fitting(count, shape, columns, images.len());
    let mut data = vec![0u8; grid.width * grid.height * 4];
    for px in data.chunks_exact_mut(4) {
        px.copy_from_slice(&[40, 40, 48, 255]);
    }
    visit_tiles(images, &grid, |at, value, max_abs| {
        let signed = (value / max_abs).clamp(-1.0, 1.0);
        let level = (signed.abs() * 255.0).round() as u8;
        let rgba = if signed >= 0.0 { [level, 0, 0, 255] } else { [0, 0, level, 255] };
        data[at * 4..at * 4 + 4].copy_from_slice(&rgba);
    });
    RgbaImage { width: grid.width, height: grid.height, data }
}

/// One byte per pixel, for PNG files.
#[derive(Clone, Debug, PartialEq)]
pub struct GreyImage {
    pub width: usize,
    pub height: usize,
    /// Row-major, `width × height`.
    pub pixels: Vec<u8>,
}

/// As [`tile`], in grey levels, with black gaps and frame: digits drawn white on black
/// (grey = value × 255 for `Scaling::Unit`) stand out without a visible grid colour.
pub fn tile_grey(images: &[f32], count: usize, shape: (usize, usize), columns: usize, scaling: Scaling) -> GreyImage {
    let grid = GridLayout::fitting(count, shape, columns, images.len());
    let mut pixels = vec![0u8; grid.width * grid.height];
    paint_tiles(images, &grid, scaling, |at, grey| pixels[at] = grey);
    GreyImage { width: grid.width, height: grid.height, pixels }
}

/// Where the tiles go: `columns` to a row (at most `count`), one-pixel gaps and frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridLayout {
    pub count: usize,
    pub tile_shape: (usize, usize),
    pub columns: usize,
    pub width: usize,
    pub height: usize,
}

impl GridLayout {
    pub fn new(count: usize, (rows, cols): (usize, usize), columns: usize) -> GridLayout {
        let columns = columns.clamp(1, count.max(1));
        let grid_rows = count.div_ceil(columns);
        // Saturating, so an absurd shape gives an absurd size instead of a wrapped small one.
        let width = columns.saturating_mul(cols.saturating_add(1)).saturating_add(1);
        let height = grid_rows.saturating_mul(rows.saturating_add(1)).saturating_add(1);
        GridLayout { count, tile_shape: (rows, cols), columns, width, height }
    }

    /// The layout of the whole tiles that `n_values` values hold, at most `count` of them.
    /// A shape that does not fit the values (from a damaged file, say) draws fewer tiles, or
    /// none, instead of reading past the values or sizing a picture that cannot exist: the
    /// picture then holds at most a few pixels per value.
    fn fitting(count: usize, (rows, cols): (usize, usize), columns: usize, n_values: usize) -> GridLayout {
        let whole_tiles = match rows.checked_mul(cols) {
            Some(pixels) if pixels > 0 => n_values / pixels,
            _ => 0,
        };
        let count = count.min(whole_tiles);
        let shape = if count == 0 { (0, 0) } else { (rows, cols) };
        GridLayout::new(count, shape, columns)
    }
}

/// Calls `put(pixel index, grey)` for every pixel of every tile.
fn paint_tiles(images: &[f32], grid: &GridLayout, scaling: Scaling, mut put: impl FnMut(usize, u8)) {
    visit_tiles(images, grid, |at, value, max_abs| {
        let (low, high) = match scaling {
            Scaling::Unit => (0.0, 1.0),
            Scaling::SymmetricPerTile => (-max_abs, max_abs),
        };
        let v = ((value - low) / (high - low)).clamp(0.0, 1.0);
        put(at, (v * 255.0).round() as u8);
    });
}

/// Calls `visit(pixel index, value, the tile's max |value|)` for every pixel of every tile.
fn visit_tiles(images: &[f32], grid: &GridLayout, mut visit: impl FnMut(usize, f32, f32)) {
    let (rows, cols) = grid.tile_shape;
    for k in 0..grid.count {
        let image = &images[k * rows * cols..(k + 1) * rows * cols];
        let max_abs = image.iter().fold(0.0f32, |m, x| m.max(x.abs())).max(1e-12);
        let (x0, y0) = ((k % grid.columns) * (cols + 1) + 1, (k / grid.columns) * (rows + 1) + 1);
        for r in 0..rows {
            for c in 0..cols {
                visit((y0 + r) * grid.width + x0 + c, image[r * cols + c], max_abs);
            }
        }
    }
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
