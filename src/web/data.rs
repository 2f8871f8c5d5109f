//! Data for the page: IDX images (and labels), DEEP databases, the held-out split, and
//! thumbnails. A load replaces the current data only if it parses; a model whose visible
//! layer no longer matches is dropped. A run in progress keeps training on the cases it
//! started with (`Playground::training_data`), whatever is loaded meanwhile.

use super::{image_to_js, js_error, to_js, Playground};
use crate::data::split::{complement, held_out_cases};
use crate::data::{dataset_from_database, idx, parse_database, Dataset, Scaling};
use crate::report::image_grid::{self, Scaling as TileScaling};
use crate::supervised::evaluation::label_class_names;
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// The most thumbnails one image may hold.
const MAX_THUMBNAILS: usize = 10_000;

#[derive(Serialize)]
pub(super) struct DataSummary {
    name: String,
    n_cases: usize,
    n_train: usize,
    n_held_out: usize,
    n_inputs: usize,
    image_shape: Option<(usize, usize)>,
    class_names: Vec<String>,
    class_counts: Vec<usize>,
    held_out_class_counts: Vec<usize>,
    target_names: Vec<String>,
}

#[wasm_bindgen]
impl Playground {
    /// Parses IDX images (and optional labels), raw or gzip.
    pub fn load_idx(&mut self, images_name: &str, images: &[u8], labels_name: Option<String>, labels: Option<Vec<u8>>) -> Result<JsValue, JsError> {
        let parsed = idx::parse_idx_images(images_name, images).map_err(js_error)?;
        let labels = match (labels_name, labels) {
            (Some(name), Some(bytes)) => Some((name.clone(), idx::parse_idx_labels(&name, &bytes).map_err(js_error)?)),
            (None, Some(bytes)) => Some(("labels".to_string(), idx::parse_idx_labels("labels", &bytes).map_err(js_error)?)),
            _ => None,
        };
        // Labels that leave classes empty would make a SoftMax with dead outputs.
        if let Some((name, values)) = &labels {
            let values: Vec<u32> = values.iter().map(|&label| u32::from(label)).collect();
            idx::check_training_labels(name, &values).map_err(js_error)?;
        }
        let dataset = idx::dataset_from_idx(parsed, labels, images_name).map_err(js_error)?;
        self.install_data(dataset, None)
    }

    /// The variable names of a DEEP CSV or text database, in file order.
    pub fn database_columns(&self, name: &str, text: &str) -> Result<Vec<String>, JsError> {
        Ok(parse_database(name, text).map_err(js_error)?.names)
    }

    /// Loads a DEEP database with the named inputs (empty: every column that is not a target)
    /// and targets. Inputs are rescaled to [0, 1] on these data; constant ones are dropped.
    pub fn load_database(&mut self, name: &str, text: &str, inputs: Vec<String>, targets: Vec<String>) -> Result<JsValue, JsError> {
        let database = parse_database(name, text).map_err(js_error)?;
        let target_refs: Vec<&str> = targets.iter().map(String::as_str).collect();
        // Unknown targets are reported before they could shrink the default input list.
        database.column_indices(&target_refs).map_err(js_error)?;
        let inputs: Vec<&str> = if inputs.is_empty() {
            database.names.iter().filter(|n| !targets.iter().any(|t| t.eq_ignore_ascii_case(n))).map(String::as_str).collect()
        } else {
            inputs.iter().map(String::as_str).collect()
        };
        if let Some(both) = inputs.iter().find(|i| targets.iter().any(|t| t.eq_ignore_ascii_case(i))) {
            return Err(JsError::new(&format!("{name}: \"{both}\" is chosen as both an input and a target")));
        }
        let (dataset, preprocessing) = dataset_from_database(&database, &inputs, &target_refs, Scaling::Rescale).map_err(js_error)?;
        self.install_data(dataset, Some(preprocessing))
    }

    /// Holds out `fraction` of the cases (in [0, 0.5]): the same share of every class where the
    /// data have classes, otherwise a random choice drawn from `seed` (kept from the last call
    /// when `None`). Held-out cases never train, they give the held-out free energy and they
    /// are the supervised test set. Takes effect for the next run.
    pub fn set_held_out(&mut self, fraction: f64, seed: Option<u32>) -> Result<JsValue, JsError> {
        if !(fraction.is_finite() && (0.0..=0.5).contains(&fraction)) {
            return Err(JsError::new(&format!("held_out: expected a finite number in [0, 0.5], got {fraction}")));
        }
        self.data()?;
        self.split = self.new_split(fraction, seed.unwrap_or(self.split.seed));
        to_js(&self.summary()?)
    }

    /// The held-out cases, ascending.
    pub fn held_out_cases(&self) -> Vec<u32> {
        self.split.held_out.iter().map(|&case| case as u32).collect()
    }

    /// The current data's summary (`null` before any load).
    pub fn data_summary(&self) -> Result<JsValue, JsError> {
        match self.data {
            Some(_) => to_js(&self.summary()?),
            None => Ok(JsValue::NULL),
        }
    }

    /// The first `count` cases as a thumbnail grid.
    pub fn data_preview(&self, count: usize, columns: usize) -> Result<JsValue, JsError> {
        let count = count.min(self.data()?.n_cases).min(MAX_THUMBNAILS);
        let cases: Vec<usize> = (0..count).collect();
        self.thumbnails(&cases, columns)
    }

    /// The given cases (indices into the loaded data) as a thumbnail grid, in order.
    pub fn case_images(&self, cases: &[u32], columns: usize) -> Result<JsValue, JsError> {
        let data = self.data()?;
        if cases.len() > MAX_THUMBNAILS {
            return Err(JsError::new(&format!("cases: expected at most {MAX_THUMBNAILS} cases, got {}", cases.len())));
        }
        if let Some(&bad) = cases.iter().find(|&&c| c as usize >= data.n_cases) {
            return Err(JsError::new(&format!("cases: case {bad} is out of range (the data hold {} cases)", data.n_cases)));
        }
        let cases: Vec<usize> = cases.iter().map(|&c| c as usize).collect();
        self.thumbnails(&cases, columns)
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

    /// The loaded cases that train (every case not held out), in order.
    pub(super) fn training_case_indices(&self) -> Result<Vec<usize>, JsError> {
        let data = self.data()?;
        Ok(self.split.complement(data.n_cases))
    }

    fn thumbnails(&self, cases: &[usize], columns: usize) -> Result<JsValue, JsError> {
        let data = self.data()?;
        let mut values = vec![0.0; cases.len() * data.n_inputs];
        data.gather_into(cases, &mut values);
        Ok(image_to_js(image_grid::tile(&values, cases.len(), self.image_shape()?, columns.max(1), TileScaling::Unit)))
    }

    /// Makes `dataset` the current data, keeping the held-out fraction. A trained model whose
    /// visible layer no longer fits is dropped; one that fits stays (to test it on new data).
    fn install_data(&mut self, dataset: Dataset, preprocessing: Option<crate::data::Preprocessing>) -> Result<JsValue, JsError> {
        if dataset.n_cases < 2 {
            return Err(JsError::new(&format!("{}: expected at least 2 cases, got {}", dataset.name, dataset.n_cases)));
        }
        if self.model().is_some_and(|m| m.layers[0].n_visible != dataset.n_inputs) {
            *self.stack.borrow_mut() = None;
            self.training_data = None;
            self.supervised = None;
            self.drop_chains();
        }
        self.data = Some(dataset);
        self.split = self.new_split(self.split.fraction, self.split.seed);
        self.preprocessing = preprocessing;
        to_js(&self.summary()?)
    }

    /// The class of each loaded case and the class names: IDX labels ("0", "1", …) or, for two
    /// or more database targets, the largest target. `None` when the data have no classes.
    pub(super) fn classes(&self) -> Option<(Vec<u32>, Vec<String>)> {
        let data = self.data.as_ref()?;
        if let Some(targets) = data.targets.as_ref().filter(|t| t.n_targets() >= 2) {
            return Some((targets.classes(), targets.names.clone()));
        }
        let labels = data.labels.as_ref()?;
        Some((labels.clone(), label_class_names(labels)))
    }

    fn new_split(&self, fraction: f64, seed: u32) -> Split {
        let n_cases = self.data.as_ref().map_or(0, |d| d.n_cases);
        let classes = self.classes();
        Split::new(n_cases, classes.as_ref().map(|(classes, names)| (&classes[..], names.len())), fraction, seed)
    }

    fn summary(&self) -> Result<DataSummary, JsError> {
        let data = self.data()?;
        let (class_names, class_counts, held_out_class_counts) = match self.classes() {
            Some((classes, names)) => {
                let mut counts = vec![0; names.len()];
                let mut held_out_counts = vec![0; names.len()];
                for &class in &classes {
                    counts[class as usize] += 1;
                }
                for &case in &self.split.held_out {
                    held_out_counts[classes[case] as usize] += 1;
                }
                (names, counts, held_out_counts)
            }
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        Ok(DataSummary {
            name: data.name.clone(),
            n_cases: data.n_cases,
            n_train: data.n_cases - self.split.held_out.len(),
            n_held_out: self.split.held_out.len(),
            n_inputs: data.n_inputs,
            image_shape: data.image_shape,
            class_names,
            class_counts,
            held_out_class_counts,
            target_names: data.targets.as_ref().map(|t| t.names.clone()).unwrap_or_default(),
        })
    }
}

/// Which loaded cases are held out (for the held-out free energy and as the test set of the
/// supervised stage); the rest train.
#[derive(Clone, Debug, Default)]
pub(super) struct Split {
    /// The fraction asked for, kept when new data are loaded.
    pub fraction: f64,
    /// The seed of the random choice, kept when new data are loaded.
    pub seed: u32,
    /// Ascending case indices.
    pub held_out: Vec<usize>,
}

impl Split {
    /// `round(fraction · n_cases)` cases chosen at random from `seed`. With `classes` (one per
    /// case, below `n_classes`) every class gives its own share, within one case: a data set
    /// stored class by class, or interleaved with a period, would otherwise be held out
    /// unevenly by any choice that follows the order (every k-th case held out only zeros).
    pub fn new(n_cases: usize, classes: Option<(&[u32], usize)>, fraction: f64, seed: u32) -> Split {
        Split { fraction, seed, held_out: held_out_cases(n_cases, classes, fraction, u64::from(seed)) }
    }

    /// The cases that are not held out, ascending.
    pub fn complement(&self, n_cases: usize) -> Vec<usize> {
        complement(&self.held_out, n_cases)
    }
}
