//! Pictures of the model for the page: receptive fields (grey or colour), hidden activation
//! histograms, reconstructions beside their inputs, and the dream: one chain in the top RBM,
//! started from a random top state and seen at the pixels.

use super::{image_to_js, to_js, Playground};
use crate::backend::cpu::CpuBackend;
use crate::data::Dataset;
use crate::format::SavedDbn;
use crate::model::Dbn;
use crate::report::histogram;
use crate::report::image_grid::{self, Scaling};
use crate::engine::chains::{ChainStart, Chains};
use crate::engine::Engine;
use serde::Serialize;
use std::borrow::Cow;
use wasm_bindgen::prelude::*;

/// Training cases the histograms are measured on: enough for smooth bars, quick to compute.
const HISTOGRAM_CASES: usize = 1000;

#[derive(Serialize)]
struct LayerHistogram {
    layer: usize,
    edges: Vec<f64>,
    counts: Vec<u64>,
}

#[wasm_bindgen]
impl Playground {
    /// The first `count` first-layer receptive fields, each scaled by its own max|w|.
    /// `mode` "grey": DEEP's grey mode, zero mid-grey; "colour": positive red, negative blue,
    /// zero black.
    pub fn filters_image(&self, count: usize, columns: usize, mode: &str) -> Result<JsValue, JsError> {
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        let rbm = &model.layers[0];
        let count = count.min(rbm.n_hidden);
        let filters = image_grid::filters_of(&rbm.weights, rbm.n_visible, rbm.n_hidden, count);
        let shape = self.image_shape()?;
        let image = match mode {
            "grey" => image_grid::tile(&filters, count, shape, columns, Scaling::SymmetricPerTile),
            "colour" => image_grid::tile_colour(&filters, count, shape, columns),
            other => return Err(JsError::new(&format!("mode: expected \"grey\" or \"colour\", got \"{other}\""))),
        };
        Ok(image_to_js(image))
    }

    /// Per layer, the histogram of hidden activation probabilities (`bins` bins over [0, 1])
    /// over up to 1000 training cases spread through the data, times the layer's units.
    pub fn hidden_histograms(&self, bins: usize) -> Result<JsValue, JsError> {
        if !(1..=1000).contains(&bins) {
            return Err(JsError::new(&format!("bins: expected a whole number in [1, 1000], got {bins}")));
        }
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        let training = self.training_cases()?;
        let histograms = histogram::hidden_histograms(&CpuBackend, &model, &training, HISTOGRAM_CASES, bins);
        let layers: Vec<LayerHistogram> = histograms.into_iter().enumerate().map(|(layer, h)| LayerHistogram { layer, edges: h.edges, counts: h.counts }).collect();
        to_js(&layers)
    }

    /// The first `count` cases, each followed by its mean-field reconstruction through the whole
    /// stack (probabilities up to the top, expectations back down), so every row holds
    /// `columns` input–reconstruction pairs side by side.
    pub fn reconstructions(&self, count: usize, columns: usize) -> Result<JsValue, JsError> {
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        let data = self.data()?;
        let count = count.min(data.n_cases);
        let cases: Vec<usize> = (0..count).collect();
        let mut inputs = vec![0.0; count * data.n_inputs];
        data.gather_into(&cases, &mut inputs);
        let depth = model.layers.len();
        let top = model.propagate_up(&CpuBackend, &inputs, depth);
        let reconstructed = model.propagate_down(&CpuBackend, &top, depth);
        let n = data.n_inputs;
        let mut pairs = Vec::with_capacity(2 * count * n);
        for (input, output) in inputs.chunks_exact(n).zip(reconstructed.chunks_exact(n)) {
            pairs.extend_from_slice(input);
            pairs.extend_from_slice(output);
        }
        Ok(image_to_js(image_grid::tile(&pairs, 2 * count, self.image_shape()?, 2 * columns.max(1), Scaling::Unit)))
    }

    /// Starts the dream: one chain from a random top-level state.
    pub fn start_dream(&mut self, seed: u64) -> Result<(), JsError> {
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        self.views.dream = Some(Dream { chain: Dream::chain(&model, seed)?, seed });
        Ok(())
    }

    /// Takes `steps` Gibbs steps in the top RBM and returns the state seen at the pixels. A
    /// model that has grown a layer since the dream started dreams afresh from the same seed.
    pub fn advance_dream(&mut self, steps: usize) -> Result<JsValue, JsError> {
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        let shape = self.image_shape()?;
        let dream = self.views.dream.as_mut().ok_or_else(|| JsError::new("no dream started"))?;
        if dream.chain.n_layers() != model.layers.len() {
            dream.chain = Dream::chain(&model, dream.seed)?;
        }
        dream.chain.advance(&model, steps);
        let image = dream.chain.cpu_images(&model).expect("the dream runs on the CPU");
        Ok(image_to_js(image_grid::tile(&image, 1, shape, 1, Scaling::Unit)))
    }

    /// Gibbs steps the dream has taken since it (last) started.
    pub fn dream_steps(&self) -> u64 {
        self.views.dream.as_ref().map_or(0, |d| d.chain.steps_done())
    }
}

impl Playground {
    /// The cases the run trains on (the held-out ones excluded): the run's own, or for no
    /// run the loaded data's current training cases.
    pub(super) fn training_cases(&self) -> Result<Cow<'_, Dataset>, JsError> {
        match &self.training_data {
            Some(training) => Ok(Cow::Borrowed(training)),
            None => Ok(Cow::Owned(self.split_training_cases()?)),
        }
    }

    /// The loaded cases that are not held out, in order.
    pub(super) fn split_training_cases(&self) -> Result<Dataset, JsError> {
        let data = self.data()?;
        let mut held_out = vec![false; data.n_cases];
        for &k in &self.split.held_out {
            if let Some(flag) = held_out.get_mut(k) {
                *flag = true;
            }
        }
        let cases: Vec<usize> = (0..data.n_cases).filter(|&k| !held_out[k]).collect();
        Ok(data.subset(&cases))
    }
}

/// The dream: one chain on the CPU (with the depth of the model it started on).
pub(super) struct Dream {
    chain: Chains,
    seed: u64,
}

impl Dream {
    fn chain(model: &Dbn, seed: u64) -> Result<Chains, JsError> {
        Chains::start(&Engine::Cpu, model, ChainStart::Random { count: 1 }, seed).map_err(|e| JsError::new(&e))
    }
}

#[derive(Default)]
pub(super) struct ViewState {
    pub dream: Option<Dream>,
    /// The model file last loaded, for what the page does not know of it (its data's means,
    /// its training records) when it is saved again unchanged.
    pub loaded: Option<SavedDbn>,
    /// What `files.rs` last measured for DEEP.LOG and model.json.
    pub measured: std::cell::RefCell<Option<super::files::MeasuredLayers>>,
}
