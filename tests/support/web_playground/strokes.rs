//! Four classes of strokes (a bar at a class-dependent row or column) with a sprinkle of
//! case-dependent pixels, so every case differs; and a Playground trained on them.

use super::{error_message, field};
use deepbelief::data::idx::{encode_idx_images, encode_idx_labels, IdxImages};
use deepbelief::web::Playground;

pub const CASES: usize = 60;

/// `cases` `side` × `side` images (pixels) and their labels.
pub fn pixels(side: usize, cases: usize) -> (Vec<u8>, Vec<u8>) {
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

pub fn loaded(side: usize) -> Playground {
    let (pixels, labels) = pixels(side, CASES);
    let images = encode_idx_images(&IdxImages { count: CASES, rows: side, cols: side, pixels });
    let mut pg = Playground::new();
    pg.load_idx("synthetic-images.idx", &images, Some("synthetic-labels.idx".into()), Some(encode_idx_labels(&labels))).unwrap_or_else(|e| panic!("{}", error_message(e)));
    pg
}

pub fn trained(side: usize, layers: &str) -> Playground {
    let mut pg = loaded(side);
    let config = format!(r#"{{"stack": {{"layers": {layers}, "monitor_cases": 0, "rbm": {{"epochs": 3, "batch_size": 10, "init_trials": 2, "seed": 5}}}}, "supervised": null}}"#);
    pg.start_training(js_sys::JSON::parse(&config).unwrap()).unwrap_or_else(|e| panic!("{}", error_message(e)));
    for _ in 0..100 {
        if pg.training_finished() {
            break;
        }
        pg.step().unwrap_or_else(|e| panic!("{}", error_message(e)));
    }
    assert!(pg.training_finished(), "training did not finish in 100 steps");
    pg
}

/// Training cases (held-out ones excluded) of the data `loaded(side)` gives, from the data
/// summary the load returns.
pub fn n_train(side: usize) -> usize {
    let (pixels, labels) = pixels(side, CASES);
    let images = encode_idx_images(&IdxImages { count: CASES, rows: side, cols: side, pixels });
    let summary = Playground::new()
        .load_idx("synthetic-images.idx", &images, Some("synthetic-labels.idx".into()), Some(encode_idx_labels(&labels)))
        .unwrap_or_else(|e| panic!("{}", error_message(e)));
    field(&summary, "n_train").as_f64().or(field(&summary, "n_cases").as_f64()).unwrap() as usize
}
