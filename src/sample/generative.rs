//! Generative sampling from a DBN (Masters' `gen_threaded`): chains run in the top RBM,
//! started from data cases propagated up or from random top hidden states; to look at
//! them, the top RBM's visible expectations are propagated down to the pixels with
//! probabilities. Chains advance a few steps at a time so a page can animate many at once.

use crate::backend::{Activation, Backend};
use crate::data::Dataset;
use crate::model::Dbn;
use crate::rng::{Purpose, RngStream};

pub struct GenerativeChains {
    pub n_chains: usize,
    /// Binary (or, for a Gaussian one-layer model, real) visible state of the top RBM.
    state: Vec<f32>,
    /// Last `E[v | h]` of the top RBM; what `images` propagates down.
    expectations: Vec<f32>,
    pub steps_done: u64,
    seed: u64,
}

impl GenerativeChains {
    /// Chains started from data cases propagated deterministically up to the top RBM.
    pub fn from_data(dbn: &Dbn, backend: &dyn Backend, data: &Dataset, cases: &[usize], seed: u64) -> Self {
        let mut input = vec![0.0; cases.len() * data.n_inputs];
        data.gather_into(cases, &mut input);
        let state = dbn.propagate_up(backend, &input, dbn.layers.len() - 1);
        GenerativeChains { n_chains: cases.len(), expectations: state.clone(), state, steps_done: 0, seed }
    }

    /// Chains started from uniformly random binary states of the top hidden layer.
    pub fn from_random(dbn: &Dbn, backend: &dyn Backend, n_chains: usize, seed: u64) -> Self {
        let top = dbn.top().expect("a DBN with at least one layer");
        let half = vec![0.5; n_chains * top.n_hidden];
        let mut hidden = vec![0.0; half.len()];
        backend.bernoulli(&half, RngStream::new(seed, 0, Purpose::RandomStart), &mut hidden);
        let mut expectations = vec![0.0; n_chains * top.n_visible];
        backend.hidden_to_visible(top.weights(), &hidden, &top.visible_bias, top.visible_activation(), &mut expectations);
        GenerativeChains { n_chains, state: expectations.clone(), expectations, steps_done: 0, seed }
    }

    pub fn advance(&mut self, dbn: &Dbn, backend: &dyn Backend, steps: usize) {
        let top = dbn.top().expect("a DBN with at least one layer");
        let mut hidden = vec![0.0; self.n_chains * top.n_hidden];
        let mut hidden_sample = hidden.clone();
        for _ in 0..steps {
            backend.visible_to_hidden(top.weights(), &self.state, &top.hidden_bias, Activation::Sigmoid, &mut hidden);
            backend.bernoulli(&hidden, RngStream::new(self.seed, self.steps_done, Purpose::GibbsHidden), &mut hidden_sample);
            backend.hidden_to_visible(top.weights(), &hidden_sample, &top.visible_bias, top.visible_activation(), &mut self.expectations);
            let stream = RngStream::new(self.seed, self.steps_done, Purpose::GibbsVisible);
            match top.visible_activation() {
                Activation::Sigmoid => backend.bernoulli(&self.expectations, stream, &mut self.state),
                Activation::Linear => {
                    self.state.copy_from_slice(&self.expectations);
                    backend.add_gaussian_noise(&mut self.state, stream);
                }
            }
            self.steps_done += 1;
        }
    }

    /// The chains seen at the data layer: `n_chains × n_inputs` expectations.
    pub fn images(&self, dbn: &Dbn, backend: &dyn Backend) -> Vec<f32> {
        dbn.propagate_down(backend, &self.expectations, dbn.layers.len() - 1)
    }

    /// As bytes (0–255), clamped, for pixel data in [0, 1].
    pub fn image_bytes(&self, dbn: &Dbn, backend: &dyn Backend) -> Vec<u8> {
        self.images(dbn, backend).iter().map(|&x| (x.clamp(0.0, 1.0) * 255.0).round() as u8).collect()
    }

    /// The top RBM's current visible state (for tests and diagnostics).
    pub fn state(&self) -> &[f32] {
        &self.state
    }
}
