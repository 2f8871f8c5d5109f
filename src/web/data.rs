//! Data for the page: IDX images (and labels), DEEP databases, the held-out split, and
//! thumbnails. A load replaces the current data only if it parses; a model whose visible
//! layer no longer matches is dropped.

use super::{image_to_js, js_error, to_js, Playground};
use crate::data::{idx, Dataset};
use crate::report::image_grid::{self, Scaling};
use serde::Serialize;
use wasm_bindgen::prelude::*;

#[derive(Serialize)]
pub(super) struct DataSummary {
    name: String,
    n_cases: usize,
    n_inputs: usize,
    image_shape: Option<(usize, usize)>,
    class_counts: Vec<usize>,
}

#[wasm_bindgen]
impl Playground {
    /// Parses IDX images (and optional labels), raw or gzip. The new data replaces the old only
    /// if it parses; a model whose visible layer no longer matches is dropped.
    pub fn load_idx(&mut self, images_name: &str, images: &[u8], labels_name: Option<String>, labels: Option<Vec<u8>>) -> Result<JsValue, JsError> {
        let parsed = idx::parse_idx_images(images_name, images).map_err(js_error)?;
        let labels = match (labels_name, labels) {
            (Some(name), Some(bytes)) => Some((name.clone(), idx::parse_idx_labels(&name, &bytes).map_err(js_error)?)),
            _ => None,
        };
        let dataset = idx::dataset_from_idx(parsed, labels, images_name).map_err(js_error)?;
        if self.model().is_some_and(|m| m.layers[0].n_visible != dataset.n_inputs) {
            self.trainer = None;
            self.drop_chains();
        }
        let mut class_counts = Vec::new();
        for &label in dataset.labels.iter().flatten() {
            let label = label as usize;
            if class_counts.len() <= label {
                class_counts.resize(label + 1, 0);
            }
            class_counts[label] += 1;
        }
        let summary = DataSummary { name: dataset.name.clone(), n_cases: dataset.n_cases, n_inputs: dataset.n_inputs, image_shape: dataset.image_shape, class_counts };
        self.data = Some(dataset);
        to_js(&summary)
    }

    /// The first `count` cases as a thumbnail grid.
    pub fn data_preview(&self, count: usize, columns: usize) -> Result<JsValue, JsError> {
        let data = self.data()?;
        let count = count.min(data.n_cases);
        let cases: Vec<usize> = (0..count).collect();
        let mut values = vec![0.0; count * data.n_inputs];
        data.gather_into(&cases, &mut values);
        Ok(image_to_js(image_grid::tile(&values, count, self.image_shape()?, columns, Scaling::Unit)))
    }

}

impl Playground {
    pub(super) fn data(&self) -> Result<&Dataset, JsError> {
        self.data.as_ref().ok_or_else(|| JsError::new("no data loaded yet"))
    }

    pub(super) fn image_shape(&self) -> Result<(usize, usize), JsError> {
        let data = self.data()?;
        Ok(data.image_shape.unwrap_or((1, data.n_inputs)))
    }
}

/// Which loaded cases are held out (for the held-out free energy and as the test set of the
/// supervised stage); the rest train.
#[derive(Clone, Debug, Default)]
pub(super) struct Split {
    pub held_out: Vec<usize>,
}
