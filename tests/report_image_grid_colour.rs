#![cfg(not(target_arch = "wasm32"))]
//! Filter images in DEEP's grey mode and in colour mode, on a case small enough to work out
//! every pixel by hand.

use deepbelief::report::image_grid::{tile, tile_colour, Scaling};

/// Two 1×2 tiles side by side: the grid is 7 × 3 (one-pixel frame and gap); tile 0 covers
/// pixels (1, 1) and (2, 1), tile 1 covers (4, 1) and (5, 1).
const TILES: [f32; 4] = [0.5, -1.0, 2.0, 0.0];
const PIXELS: [(usize, usize); 4] = [(1, 1), (2, 1), (4, 1), (5, 1)];

fn rgba_at(data: &[u8], width: usize, (x, y): (usize, usize)) -> [u8; 4] {
    let at = (y * width + x) * 4;
    data[at..at + 4].try_into().unwrap()
}

#[test]
fn colour_mode_draws_positive_red_negative_blue_zero_black_scaled_per_tile() {
    let image = tile_colour(&TILES, 2, (1, 2), 2);
    assert_eq!((image.width, image.height), (7, 3));
    // Tile 0: max|w| = 1, so 0.5 → red 127.5 rounded to 128 and −1 → full blue.
    // Tile 1: max|w| = 2, so 2 → full red and 0 → black.
    let expected = [[128, 0, 0, 255], [0, 0, 255, 255], [255, 0, 0, 255], [0, 0, 0, 255]];
    for (pixel, want) in PIXELS.iter().zip(expected) {
        assert_eq!(rgba_at(&image.data, image.width, *pixel), want, "pixel {pixel:?}");
    }
    // The frame keeps the grid colour.
    assert_eq!(rgba_at(&image.data, image.width, (0, 0)), [40, 40, 48, 255]);
    assert_eq!(rgba_at(&image.data, image.width, (3, 1)), [40, 40, 48, 255]);
}

#[test]
fn grey_mode_puts_zero_at_mid_grey_scaled_per_tile() {
    let image = tile(&TILES, 2, (1, 2), 2, Scaling::SymmetricPerTile);
    // grey = 255·(w + max)/(2·max): 0.5 of 1 → 191.25, −1 → 0, 2 of 2 → 255, 0 → 127.5.
    let expected = [191, 0, 255, 128];
    for (pixel, want) in PIXELS.iter().zip(expected) {
        assert_eq!(rgba_at(&image.data, image.width, *pixel), [want, want, want, 255], "pixel {pixel:?}");
    }
}

#[test]
fn shapes_that_do_not_fit_the_values_draw_only_whole_tiles_and_never_panic() {
    use deepbelief::report::image_grid::tile_grey;
    // Rows × columns, (2^63 + 1) × 2, wraps around to 2 in 64 bits; no such tile fits.
    let wrapping = (usize::MAX / 2 + 2, 2);
    let nothing = tile_grey(&TILES, 1, wrapping, 1, Scaling::Unit);
    assert_eq!((nothing.width, nothing.height), (2, 1));
    assert!(nothing.pixels.iter().all(|&p| p == 0));
    // Huge in one direction, empty in the other.
    let empty = tile(&TILES, 3, (0, usize::MAX), 3, Scaling::Unit);
    assert_eq!((empty.width, empty.height), (2, 1));
    // Asked for three 1×2 tiles but given values for two: two are drawn.
    let two = tile_grey(&TILES, 3, (1, 2), 3, Scaling::Unit);
    assert_eq!((two.width, two.height), (7, 3));
    assert_eq!(two.pixels[7 + 4], 255, "tile 1's first pixel is 2.0, clamped to white");
}
