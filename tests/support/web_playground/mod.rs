//! For the page API's wasm tests: two small synthetic IDX data sets built in the test (no files
//! in the browser), `bands` and `strokes`, and readers for the values the API returns.

pub mod bands;
pub mod strokes;

use serde_json::Value;
use wasm_bindgen::prelude::*;

/// Both data sets hold SIDE × SIDE images.
pub const SIDE: usize = 6;

pub fn js(value: Value) -> JsValue {
    serde::Serialize::serialize(&value, &serde_wasm_bindgen::Serializer::json_compatible()).expect("a plain JS value")
}

pub fn json(value: JsValue) -> Value {
    serde_wasm_bindgen::from_value(value).expect("a JSON-like value")
}

/// The message of an error the API returned.
pub fn error_message(error: JsError) -> String {
    let value: JsValue = error.into();
    js_sys::Reflect::get(&value, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_default()
}

/// The message of a failed call.
#[track_caller]
pub fn message<T>(result: Result<T, JsError>) -> String {
    error_message(result.err().expect("the call must fail"))
}

pub fn field(object: &JsValue, name: &str) -> JsValue {
    js_sys::Reflect::get(object, &name.into()).unwrap()
}

pub struct Image {
    pub width: usize,
    pub height: usize,
    pub data: Vec<u8>,
}

pub fn image(value: JsValue) -> Image {
    Image {
        width: field(&value, "width").as_f64().unwrap() as usize,
        height: field(&value, "height").as_f64().unwrap() as usize,
        data: js_sys::Uint8ClampedArray::from(field(&value, "data")).to_vec(),
    }
}

/// The RGBA of pixel (`x`, `y`) of tile `k` in a grid of `columns` tiles of SIDE × SIDE.
pub fn tile_pixel(image: &Image, columns: usize, k: usize, x: usize, y: usize) -> [u8; 4] {
    let (x0, y0) = ((k % columns) * (SIDE + 1) + 1, (k / columns) * (SIDE + 1) + 1);
    let at = ((y0 + y) * image.width + x0 + x) * 4;
    image.data[at..at + 4].try_into().unwrap()
}
