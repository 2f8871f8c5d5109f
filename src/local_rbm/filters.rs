//! The filters pictures. `filters_picture`: the first layer's spatial filters tiled in the
//! image's geometry. Cell `(pr, pc)` of a `positions_rows × positions_cols` grid shows the
//! filters of the first `per_position` hidden units of the patch at that position (channels
//! averaged), each scaled symmetrically (zero mid-grey), so neighbouring cells show how the
//! untied filters vary across the image. A tied layer has one bank: one cell.
//!
//! `stack_filters_picture`: a higher layer's filters in the same grid of its own positions,
//! each unit's weights projected linearly down to the image through the layers below
//! (`W₁ · W₂ · … · w`, no biases or sigmoids: the usual picture of a DBN's upper units) and
//! cropped to its position's receptive field, the pixels its units can see.

use super::geometry::{CoverLists, Geometry};
use super::model::LocalRbm;
use super::passes::{gather_reconstruction, patch_products_down};
use crate::backend::Activation;
use crate::report::image_grid::{tile_grey, GreyImage, Scaling};

/// Grey pixels between cells.
const CELL_GAP: usize = 3;

pub fn filters_picture(layer: &LocalRbm, per_position: usize) -> GreyImage {
    let g = &layer.geometry;
    let (units, p, channels) = (g.hidden_per_patch, g.patch, g.channels);
    let shown = per_position.clamp(1, units);
    let (grid_rows, grid_cols) = grid_of(g);
    let cells: Vec<GreyImage> = (0..grid_rows * grid_cols)
        .map(|position| {
            let bank = layer.bank(layer.bank_of(position));
            let mut tiles = Vec::with_capacity(shown * p * p);
            for j in 0..shown {
                for pixel in 0..p * p {
                    let sum: f32 = (0..channels).map(|ch| bank[(pixel * channels + ch) * units + j]).sum();
                    tiles.push(sum / channels as f32);
                }
            }
            tile_grey(&tiles, shown, (p, p), columns_for(shown), Scaling::SymmetricPerTile)
        })
        .collect();
    lay_out_cells(&cells, grid_cols)
}

/// The top layer of `layers` (a stack, bottom first) drawn as `filters_picture` draws the
/// first, each filter projected to the image and cropped to its receptive field. One layer:
/// `filters_picture` itself.
pub fn stack_filters_picture(layers: &[LocalRbm], per_position: usize) -> GreyImage {
    let top = layers.last().expect("a stack of at least one layer");
    if layers.len() == 1 {
        return filters_picture(top, per_position);
    }
    let shown = per_position.clamp(1, top.geometry.hidden_per_patch);
    let (grid_rows, grid_cols) = grid_of(&top.geometry);
    let covers: Vec<CoverLists> = layers[..layers.len() - 1].iter().map(|l| CoverLists::new(&l.geometry)).collect();
    let cells: Vec<GreyImage> = (0..grid_rows * grid_cols)
        .map(|position| {
            let field = receptive_field(layers, position);
            let tiles = projected_filters_with(layers, &covers, position, shown);
            tile_grey(&tiles, shown, (field.rows, field.cols), columns_for(shown), Scaling::SymmetricPerTile)
        })
        .collect();
    lay_out_cells(&cells, grid_cols)
}

/// The pixels of the input image that the units at one position of a stack's top layer see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceptiveField {
    pub row: usize,
    pub col: usize,
    pub rows: usize,
    pub cols: usize,
}

/// The receptive field of `position` of the top layer of `layers`: its patch in the map below,
/// then each layer's patches over that map's cells, down to the image. The same size at every
/// position.
pub fn receptive_field(layers: &[LocalRbm], position: usize) -> ReceptiveField {
    let top = &layers.last().expect("a stack of at least one layer").geometry;
    let (pr, pc) = (position / top.positions_cols(), position % top.positions_cols());
    // Half-open ranges of cells in the top layer's input, then in each input below.
    let (mut rows, mut cols) = ((pr * top.stride, pr * top.stride + top.patch), (pc * top.stride, pc * top.stride + top.patch));
    for below in layers[..layers.len() - 1].iter().rev() {
        let g = &below.geometry;
        rows = (rows.0 * g.stride, (rows.1 - 1) * g.stride + g.patch);
        cols = (cols.0 * g.stride, (cols.1 - 1) * g.stride + g.patch);
    }
    ReceptiveField { row: rows.0, col: cols.0, rows: rows.1 - rows.0, cols: cols.1 - cols.0 }
}

/// The first `shown` filters of the top layer's `position`, each projected to the image
/// through the layers below (channels averaged) and cropped to the position's receptive field:
/// `shown × rows × cols` values, unit by unit, row-major.
pub fn projected_filters(layers: &[LocalRbm], position: usize, shown: usize) -> Vec<f32> {
    let covers: Vec<CoverLists> = layers[..layers.len() - 1].iter().map(|l| CoverLists::new(&l.geometry)).collect();
    projected_filters_with(layers, &covers, position, shown)
}

fn projected_filters_with(layers: &[LocalRbm], covers: &[CoverLists], position: usize, shown: usize) -> Vec<f32> {
    let top = layers.last().expect("a stack of at least one layer");
    let g = &top.geometry;
    let (units, nv) = (g.hidden_per_patch, g.n_visible());
    let shown = shown.clamp(1, units);
    // Row j: unit j's weights laid out over the top layer's input (zero off its patch).
    let bank = top.bank(top.bank_of(position));
    let mut current = vec![0.0f32; shown * nv];
    for (j, row) in current.chunks_exact_mut(nv).enumerate() {
        for offset in 0..g.patch_inputs() {
            row[g.pixel_of(position, offset)] = bank[offset * units + j];
        }
    }
    // Down through each layer below, linearly: its products and gather with zero biases.
    for (layer, cover) in layers[..layers.len() - 1].iter().zip(covers).rev() {
        let below = &layer.geometry;
        let mut products = vec![0.0f32; shown * below.positions() * below.patch_inputs()];
        patch_products_down(layer, &current, &mut products);
        let mut visible = vec![0.0f32; shown * below.n_visible()];
        gather_reconstruction(below, cover, &products, &vec![0.0; below.n_visible()], Activation::Linear, &mut visible);
        current = visible;
    }
    let image = &layers[0].geometry;
    let field = receptive_field(layers, position);
    let channels = image.channels;
    let mut tiles = Vec::with_capacity(shown * field.rows * field.cols);
    for row in current.chunks_exact(image.n_visible()) {
        for r in field.row..field.row + field.rows {
            for c in field.col..field.col + field.cols {
                let at = (r * image.cols + c) * channels;
                tiles.push(row[at..at + channels].iter().sum::<f32>() / channels as f32);
            }
        }
    }
    tiles
}

/// Cells of the grid: one per position, or one when the bank is shared.
fn grid_of(g: &Geometry) -> (usize, usize) {
    if g.tied {
        (1, 1)
    } else {
        (g.positions_rows(), g.positions_cols())
    }
}

fn columns_for(shown: usize) -> usize {
    (shown as f64).sqrt().ceil() as usize
}

/// Equal cells, `grid_cols` to a row, `CELL_GAP` white pixels around each.
fn lay_out_cells(cells: &[GreyImage], grid_cols: usize) -> GreyImage {
    let grid_rows = cells.len().div_ceil(grid_cols);
    let (cell_w, cell_h) = (cells[0].width, cells[0].height);
    let width = grid_cols * (cell_w + CELL_GAP) + CELL_GAP;
    let height = grid_rows * (cell_h + CELL_GAP) + CELL_GAP;
    let mut pixels = vec![255u8; width * height];
    for (position, cell) in cells.iter().enumerate() {
        let (x0, y0) = (CELL_GAP + (position % grid_cols) * (cell_w + CELL_GAP), CELL_GAP + (position / grid_cols) * (cell_h + CELL_GAP));
        for y in 0..cell_h {
            pixels[(y0 + y) * width + x0..][..cell_w].copy_from_slice(&cell.pixels[y * cell_w..(y + 1) * cell_w]);
        }
    }
    GreyImage { width, height, pixels }
}
