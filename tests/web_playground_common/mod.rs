//! Shared by the playground's wasm tests: a synthetic, easily separable IDX data set built in
//! the test (no files in the browser), and conversions between serde values and `JsValue`s.

use deepbelief::data::idx::{encode_idx_images, encode_idx_labels, IdxImages};
use deepbelief::web::Playground;
use serde_json::Value;
use wasm_bindgen::JsValue;

pub const SIDE: usize = 6;
pub const CLASSES: usize = 3;

/// `count` 6×6 images, case k of class k % 3: class 0 lights the top two rows, class 1 the
/// middle two, class 2 the bottom two, each with a little deterministic speckle.
pub fn synthetic_idx(count: usize) -> (Vec<u8>, Vec<u8>) {
    let mut pixels = Vec::with_capacity(count * SIDE * SIDE);
    let mut state = 12345u32;
    let mut labels = Vec::with_capacity(count);
    for case in 0..count {
        let class = case % CLASSES;
        labels.push(class as u8);
        for row in 0..SIDE {
            for _ in 0..SIDE {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let speckle = (state >> 24) as u8 / 4;
                pixels.push(if row / 2 == class { 255 - speckle } else { speckle });
            }
        }
    }
    (encode_idx_images(&IdxImages { count, rows: SIDE, cols: SIDE, pixels }), encode_idx_labels(&labels))
}

/// A playground holding `count` synthetic cases.
pub fn loaded(count: usize) -> Playground {
    let (images, labels) = synthetic_idx(count);
    let mut playground = Playground::new();
    playground.load_idx("synthetic-images", &images, Some("synthetic-labels".into()), Some(labels)).expect("synthetic data load");
    playground
}

#[allow(dead_code)] // the data tests need no configs
pub fn js(value: Value) -> JsValue {
    serde::Serialize::serialize(&value, &serde_wasm_bindgen::Serializer::json_compatible()).expect("a plain JS value")
}

pub fn json(value: JsValue) -> Value {
    serde_wasm_bindgen::from_value(value).expect("a JSON-like value")
}

/// The message of a failed call.
#[track_caller]
pub fn message<T>(result: Result<T, wasm_bindgen::JsError>) -> String {
    let error = result.err().expect("the call must fail");
    let value: JsValue = error.into();
    js_sys::Reflect::get(&value, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_default()
}
