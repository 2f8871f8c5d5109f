//! Pictures of the model for the page: receptive fields and the like, as RGBA images.

use super::{image_to_js, Playground};
use crate::report::image_grid::{self, Scaling};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl Playground {
    /// The first `count` first-layer receptive fields, grey mode (zero is mid-grey).
    pub fn filters_image(&self, count: usize, columns: usize) -> Result<JsValue, JsError> {
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        let rbm = &model.layers[0];
        let count = count.min(rbm.n_hidden);
        let filters = image_grid::filters_of(&rbm.weights, rbm.n_visible, rbm.n_hidden, count);
        Ok(image_to_js(image_grid::tile(&filters, count, self.image_shape()?, columns, Scaling::SymmetricPerTile)))
    }
}

#[derive(Default)]
pub(super) struct ViewState {}
