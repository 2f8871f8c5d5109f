#![cfg(target_arch = "wasm32")]
//! The page's views and files through the wasm API (`wasm-pack test`), on a small synthetic
//! IDX data set: filter images in both modes, hidden histograms, reconstructions, chains from
//! chosen cases, model save/load round trips and bad files, DEEP.LOG and the activation file.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::idx::{encode_idx_images, encode_idx_labels, IdxImages};
use deepbelief::model::format::from_json;
use deepbelief::web::Playground;
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const SIDE: usize = 6;
const CASES: usize = 60;

/// Four classes of 6×6 strokes (a bar at a class-dependent row or column) with a sprinkle of
/// case-dependent pixels, so every case differs.
fn pixels(side: usize, cases: usize) -> (Vec<u8>, Vec<u8>) {
    let mut pixels = vec![0u8; cases * side * side];
    let mut labels = Vec::with_capacity(cases);
    for (k, image) in pixels.chunks_exact_mut(side * side).enumerate() {
        let class = k % 4;
        labels.push(class as u8);
        for i in 0..side {
            let at = if class < 2 { (1 + 2 * class) * side + i } else { i * side + 2 * (class - 2) + 1 };
            image[at] = 255;
        }
        image[(k * 7) % (side * side)] = 128 + (k % 100) as u8;
    }
    (pixels, labels)
}

fn loaded(side: usize) -> Playground {
    let (pixels, labels) = pixels(side, CASES);
    let images = encode_idx_images(&IdxImages { count: CASES, rows: side, cols: side, pixels });
    let mut pg = Playground::new();
    pg.load_idx("synthetic-images.idx", &images, Some("synthetic-labels.idx".into()), Some(encode_idx_labels(&labels))).unwrap_or_else(|e| panic!("{}", message(e)));
    pg
}

fn trained(side: usize, layers: &str) -> Playground {
    let mut pg = loaded(side);
    let config = format!(r#"{{"stack": {{"layers": {layers}, "monitor_cases": 0, "rbm": {{"epochs": 3, "batch_size": 10, "init_trials": 2, "seed": 5}}}}, "supervised": null}}"#);
    pg.start_training(js_sys::JSON::parse(&config).unwrap()).unwrap_or_else(|e| panic!("{}", message(e)));
    for _ in 0..100 {
        if pg.training_finished() {
            break;
        }
        pg.step().unwrap_or_else(|e| panic!("{}", message(e)));
    }
    assert!(pg.training_finished(), "training did not finish in 100 steps");
    pg
}

fn message(error: JsError) -> String {
    js_sys::Error::from(JsValue::from(error)).message().into()
}

fn field(object: &JsValue, name: &str) -> JsValue {
    js_sys::Reflect::get(object, &name.into()).unwrap()
}

struct Image {
    width: usize,
    height: usize,
    data: Vec<u8>,
}

fn image(value: JsValue) -> Image {
    Image {
        width: field(&value, "width").as_f64().unwrap() as usize,
        height: field(&value, "height").as_f64().unwrap() as usize,
        data: js_sys::Uint8ClampedArray::from(field(&value, "data")).to_vec(),
    }
}

/// The RGBA of pixel (`x`, `y`) of tile `k` in a grid of `columns` tiles of SIDE × SIDE.
fn tile_pixel(image: &Image, columns: usize, k: usize, x: usize, y: usize) -> [u8; 4] {
    let (x0, y0) = ((k % columns) * (SIDE + 1) + 1, (k / columns) * (SIDE + 1) + 1);
    let at = ((y0 + y) * image.width + x0 + x) * 4;
    image.data[at..at + 4].try_into().unwrap()
}

/// Training cases (held-out ones excluded) of the data `loaded(side)` gives, from the data
/// summary the load returns.
fn n_train(side: usize) -> usize {
    let (pixels, labels) = pixels(side, CASES);
    let images = encode_idx_images(&IdxImages { count: CASES, rows: side, cols: side, pixels });
    let summary = Playground::new()
        .load_idx("synthetic-images.idx", &images, Some("synthetic-labels.idx".into()), Some(encode_idx_labels(&labels)))
        .unwrap_or_else(|e| panic!("{}", message(e)));
    field(&summary, "n_train").as_f64().or(field(&summary, "n_cases").as_f64()).unwrap() as usize
}

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
    let error = message(pg.filters_image(8, 4, "sepia").unwrap_err());
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
    let error = message(pg.start_chains(1, true, Some(vec![CASES as u32]), 1).unwrap_err());
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
fn saved_models_load_back_identically() {
    let pg = trained(SIDE, "[8, 4]");
    let text = pg.save_model().unwrap();
    let filters = image(pg.filters_image(8, 4, "grey").unwrap()).data;
    let parsed = from_json("saved", &text).expect("the CLI's reader accepts the page's file");
    assert_eq!(parsed.dbn.sizes(), vec![SIDE * SIDE, 8, 4]);
    assert_eq!(parsed.training.len(), 2);
    assert_eq!(parsed.image_shape, Some((SIDE, SIDE)));

    let mut other = loaded(SIDE);
    let summary = other.load_model("model.json", &text).unwrap_or_else(|e| panic!("{}", message(e)));
    assert_eq!(field(&summary, "parameters").as_f64(), Some((36 * 8 + 36 + 8 + 8 * 4 + 8 + 4) as f64));
    assert!(other.training_finished());
    assert_eq!(image(other.filters_image(8, 4, "grey").unwrap()).data, filters);
    assert_eq!(other.save_model().unwrap(), text);
}

#[wasm_bindgen_test]
fn bad_model_files_are_refused_and_the_model_survives() {
    let mut pg = trained(SIDE, "[8, 4]");
    let filters = image(pg.filters_image(8, 4, "grey").unwrap()).data;
    let saved = pg.save_model().unwrap();

    let error = message(pg.load_model("broken.json", "{ \"format\": ").unwrap_err());
    assert!(error.starts_with("broken.json:") && error.contains("line 1"), "{error}");

    let smaller = trained(SIDE - 1, "[8]").save_model().unwrap();
    let error = message(pg.load_model("small.json", &smaller).unwrap_err());
    assert!(error.starts_with("small.json:") && error.contains("n_visible") && error.contains("25") && error.contains("36"), "{error}");

    assert_eq!(image(pg.filters_image(8, 4, "grey").unwrap()).data, filters);
    assert_eq!(pg.save_model().unwrap(), saved);
}

/// The figure after `name ....` in a DEEP.LOG entry line.
fn entry_value<'a>(section: &'a str, name: &str) -> &'a str {
    let line = section.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| panic!("no {name} entry"));
    line.split(" .").last().unwrap().trim_start_matches('.').trim()
}

#[wasm_bindgen_test]
fn deep_log_reports_every_layer_and_its_epochs() {
    let pg = trained(SIDE, "[8, 4]");
    let log = pg.deep_log().unwrap();
    assert!(log.starts_with("DEEP.LOG"), "{log}");
    let second = log.find("LAYER 2 of 2").expect("a section for layer 2");
    let first = log.find("LAYER 1 of 2").expect("a section for layer 1");
    for section in [&log[first..second], &log[second..]] {
        let epochs: usize = entry_value(section, "Epochs").split(' ').next().unwrap().parse().unwrap();
        assert!(epochs >= 1, "every layer trained at least one epoch:\n{section}");
        for epoch in 1..=epochs {
            let row = section.lines().any(|l| l.split_whitespace().next() == Some(&epoch.to_string()) && l.split_whitespace().count() == 7);
            assert!(row, "no row for epoch {epoch}:\n{section}");
        }
    }
}

#[wasm_bindgen_test]
fn activation_file_holds_each_cases_probabilities() {
    let pg = trained(SIDE, "[8, 4]");
    let text = pg.activations("unsupervised:1").unwrap();
    let model = from_json("saved", &pg.save_model().unwrap()).unwrap();
    let (data, _) = pixels(SIDE, CASES);
    let inputs: Vec<f32> = data.iter().map(|&b| b as f32 / 255.0).collect();
    let expected = model.dbn.propagate_up(&CpuBackend, &inputs, 2);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("# unsupervised:1"));
    let rows: Vec<Vec<f32>> = lines.map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect()).collect();
    assert_eq!(rows.len(), CASES);
    for (k, row) in rows.iter().enumerate() {
        assert_eq!(row[..], expected[k * 4..(k + 1) * 4], "case {k}");
    }
    let error = message(pg.activations("output:0").unwrap_err());
    assert!(error.contains("no supervised layers"), "{error}");
    assert!(pg.activations("hidden").is_err());
}

#[wasm_bindgen_test]
fn supervised_layers_reach_the_log_the_file_and_the_activations() {
    let mut pg = loaded(SIDE);
    let config = r#"{"stack": {"layers": [8], "monitor_cases": 0, "rbm": {"epochs": 2, "batch_size": 10, "init_trials": 2, "seed": 5}},
                     "supervised": {"hidden": [], "max_iterations": 5, "anneal_iterations": 2}}"#;
    pg.start_training(js_sys::JSON::parse(config).unwrap()).unwrap_or_else(|e| panic!("{}", message(e)));
    while !pg.training_finished() {
        pg.step().unwrap_or_else(|e| panic!("{}", message(e)));
    }
    assert!(pg.supervised_pending());
    pg.train_supervised(&js_sys::Function::new_no_args(""), None).unwrap_or_else(|e| panic!("{}", message(e)));

    let log = pg.deep_log().unwrap();
    assert!(log.lines().next().unwrap().contains("supervised softmax output"), "{}", &log[..200]);
    assert!(log.contains("Complete model: 36 -> 8 -> 4"), "the supervised architecture section");

    let text = pg.save_model().unwrap();
    let saved = from_json("saved", &text).unwrap();
    assert_eq!(saved.supervised.as_ref().map(|s| s.network.n_outputs()), Some(4));
    let mut other = loaded(SIDE);
    let summary = other.load_model("model.json", &text).unwrap();
    let supervised = field(&summary, "supervised");
    assert_eq!(field(&supervised, "n_outputs").as_f64(), Some(4.0));
    assert_eq!(other.save_model().unwrap(), text);

    // SoftMax outputs: each case's four probabilities sum to 1.
    let outputs = other.activations("output:0").unwrap();
    let rows: Vec<f32> = outputs.lines().skip(1).map(|l| l.split_whitespace().map(|v| v.parse::<f32>().unwrap()).sum()).collect();
    assert_eq!(rows.len(), CASES);
    assert!(rows.iter().all(|s| (s - 1.0).abs() < 1e-5), "{rows:?}");
}

#[wasm_bindgen_test]
fn a_command_line_model_with_settings_for_more_data_loads_and_saves_unchanged() {
    // As `deepbelief train` writes it after training on 60,000 cases: batches of 600 and 100
    // batches, more than this page's 60 cases allow for training.
    let mut model = from_json("saved", &trained(SIDE, "[8]").save_model().unwrap()).unwrap();
    model.config.rbm.batch_size = Some(600);
    model.config.rbm.n_batches = 100;
    model.visible_means = Some(vec![0.25; SIDE * SIDE]);
    let text = deepbelief::model::format::to_json(&model);
    let mut pg = loaded(SIDE);
    pg.load_model("cli/model.json", &text).unwrap_or_else(|e| panic!("{}", message(e)));
    assert!(pg.training_finished());
    assert_eq!(pg.save_model().unwrap(), text, "the file's settings, means and records are kept");
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
