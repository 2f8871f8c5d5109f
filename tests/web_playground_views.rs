#![cfg(target_arch = "wasm32")]
//! The page's views through the wasm API (`wasm-pack test`), on a small synthetic IDX data
//! set: filter images in both modes, hidden histograms, reconstructions, chains from chosen
//! cases on the CPU and on WebGPU, and the dream.

mod support;

use wasm_bindgen_test::*;
use support::web_playground::strokes::*;
use support::web_playground::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn filter_images_have_the_grid_size_and_colour_follows_the_grey_mode() {
    let pg = trained(SIDE, "[8, 4]");
    let grey = image(pg.filters_image(8, 4, "grey").unwrap());
    let colour = image(pg.filters_image(8, 4, "colour").unwrap());
    for im in [&grey, &colour] {
        assert_eq!((im.width, im.height), (4 * (SIDE + 1) + 1, 2 * (SIDE + 1) + 1));
    }
    let (mut red, mut blue) = (0, 0);
    for k in 0..8 {
        for y in 0..SIDE {
            for x in 0..SIDE {
                let [g, _, _, _] = tile_pixel(&grey, 4, k, x, y);
                let [r, green, b, a] = tile_pixel(&colour, 4, k, x, y);
                assert_eq!((green, a), (0, 255));
                assert!(r == 0 || b == 0, "a pixel cannot be red and blue");
                // Both scale by the tile's max|w|: grey = 127.5 + 127.5·w/max, red = 255·w/max
                // for w ≥ 0 and blue = −255·w/max for w < 0.
                let from_colour = 127.5 + r as f64 / 2.0 - b as f64 / 2.0;
                assert!((g as f64 - from_colour).abs() <= 1.0, "tile {k} ({x}, {y}): grey {g}, colour ({r}, {b})");
                red += (r > 0) as usize;
                blue += (b > 0) as usize;
            }
        }
    }
    assert!(red > 0 && blue > 0, "trained filters have weights of both signs ({red} red, {blue} blue pixels)");
    assert_eq!(grey.data[..4], colour.data[..4], "same frame colour");
    let error = error_message(pg.filters_image(8, 4, "sepia").unwrap_err());
    assert!(error.contains("mode") && error.contains("sepia"), "{error}");
}

#[wasm_bindgen_test]
fn histograms_count_every_training_case_and_unit() {
    let pg = trained(SIDE, "[8, 4]");
    let layers = js_sys::Array::from(&pg.hidden_histograms(10).unwrap());
    assert_eq!(layers.length(), 2);
    for (layer, units) in [(0, 8), (1, 4)] {
        let entry = layers.get(layer);
        assert_eq!(field(&entry, "layer").as_f64(), Some(layer as f64));
        let edges: Vec<f64> = js_sys::Array::from(&field(&entry, "edges")).iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(edges.len(), 11);
        assert_eq!((edges[0], edges[10]), (0.0, 1.0));
        let total: f64 = js_sys::Array::from(&field(&entry, "counts")).iter().map(|v| v.as_f64().unwrap()).sum();
        assert_eq!(total as usize, n_train(SIDE) * units, "layer {layer}");
    }
    assert!(pg.hidden_histograms(0).is_err());
}

#[wasm_bindgen_test]
fn reconstructions_sit_beside_their_inputs() {
    let pg = trained(SIDE, "[8, 4]");
    let im = image(pg.reconstructions(5, 5).unwrap());
    assert_eq!((im.width, im.height), (10 * (SIDE + 1) + 1, SIDE + 2));
    let (data, _) = pixels(SIDE, CASES);
    let mut differs = false;
    for k in 0..5 {
        for y in 0..SIDE {
            for x in 0..SIDE {
                let byte = data[k * SIDE * SIDE + y * SIDE + x];
                assert_eq!(tile_pixel(&im, 10, 2 * k, x, y), [byte, byte, byte, 255], "input tile of case {k}");
                differs |= tile_pixel(&im, 10, 2 * k + 1, x, y)[0] != byte;
            }
        }
    }
    assert!(differs, "the reconstructions are not copies of the inputs");
}

#[wasm_bindgen_test]
fn chains_from_chosen_cases_start_as_those_cases() {
    // One layer: a chain's state at step 0 is its case itself, seen at the pixels.
    let mut pg = trained(SIDE, "[8]");
    pg.start_chains(99, true, Some(vec![7, 3]), 1).unwrap();
    let im = image(pg.advance_chains(0, 2).unwrap());
    assert_eq!(pg.chain_steps(), 0);
    assert_eq!(im.width, 2 * (SIDE + 1) + 1, "two chains, one per chosen case");
    let (data, _) = pixels(SIDE, CASES);
    for (k, case) in [7usize, 3].into_iter().enumerate() {
        for y in 0..SIDE {
            for x in 0..SIDE {
                let byte = data[case * SIDE * SIDE + y * SIDE + x];
                assert_eq!(tile_pixel(&im, 2, k, x, y), [byte, byte, byte, 255], "chain {k} (case {case}) at ({x}, {y})");
            }
        }
    }
    pg.advance_chains(3, 2).unwrap();
    assert_eq!(pg.chain_steps(), 3);
    let error = error_message(pg.start_chains(1, true, Some(vec![CASES as u32]), 1).unwrap_err());
    assert!(error.contains("cases") && error.contains(&CASES.to_string()), "{error}");
    assert_eq!(pg.chain_steps(), 3, "a bad start keeps the running chains");
}

#[wasm_bindgen_test]
fn dream_runs_one_chain_through_the_stack() {
    let mut pg = trained(SIDE, "[8, 4]");
    assert!(pg.advance_dream(1).is_err(), "no dream before start_dream");
    pg.start_dream(3).unwrap();
    let first = image(pg.advance_dream(2).unwrap());
    assert_eq!((first.width, first.height), (SIDE + 2, SIDE + 2));
    assert_eq!(pg.dream_steps(), 2);
    let later = image(pg.advance_dream(20).unwrap());
    assert_eq!(pg.dream_steps(), 22);
    pg.start_dream(3).unwrap();
    assert_eq!(image(pg.advance_dream(2).unwrap()).data, first.data, "the same seed dreams the same");
    assert_eq!(later.data.len(), first.data.len());
}

#[wasm_bindgen_test]
async fn gpu_chains_from_chosen_cases_start_as_those_cases() {
    let mut pg = trained(SIDE, "[8]");
    wasm_bindgen_futures::JsFuture::from(pg.gpu_connect()).await.expect("WebGPU adapter (Chromium needs --enable-unsafe-webgpu)");
    pg.start_chains(1, true, Some(vec![11, 2, 5]), 4).unwrap();
    let im = image(wasm_bindgen_futures::JsFuture::from(pg.gpu_advance_chains(0, 3)).await.expect("GPU chains"));
    let (data, _) = pixels(SIDE, CASES);
    for (k, case) in [11usize, 2, 5].into_iter().enumerate() {
        for y in 0..SIDE {
            for x in 0..SIDE {
                let byte = data[case * SIDE * SIDE + y * SIDE + x];
                let [r, ..] = tile_pixel(&im, 3, k, x, y);
                assert!(r.abs_diff(byte) <= 1, "GPU chain {k} (case {case}) at ({x}, {y}): {r} vs {byte}");
            }
        }
    }
    wasm_bindgen_futures::JsFuture::from(pg.gpu_advance_chains(5, 3)).await.expect("GPU chains");
    assert_eq!(pg.chain_steps(), 5);
}
