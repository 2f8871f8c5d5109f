//! The filters picture: the first layer's spatial filters tiled in the image's geometry. Cell
//! `(pr, pc)` of a `positions_rows × positions_cols` grid shows the filters of the first
//! `per_position` hidden units of the patch at that position (channels averaged), each scaled
//! symmetrically (zero mid-grey), so neighbouring cells show how the untied filters vary
//! across the image. A tied layer has one bank: one cell.

use super::model::LocalRbm;
use crate::report::image_grid::{tile_grey, GreyImage, Scaling};

/// Grey pixels between cells.
const CELL_GAP: usize = 3;

pub fn filters_picture(layer: &LocalRbm, per_position: usize) -> GreyImage {
    let g = &layer.geometry;
    let (units, p, channels) = (g.hidden_per_patch, g.patch, g.channels);
    let shown = per_position.clamp(1, units);
    let columns = (shown as f64).sqrt().ceil() as usize;
    let (grid_rows, grid_cols) = if g.tied { (1, 1) } else { (g.positions_rows(), g.positions_cols()) };
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
            tile_grey(&tiles, shown, (p, p), columns, Scaling::SymmetricPerTile)
        })
        .collect();
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
