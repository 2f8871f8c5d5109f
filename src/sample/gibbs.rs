//! Block Gibbs chains on one RBM: `h ~ p(h | v)`, then `v ~ p(v | h)`, repeated.
//! The chains keep their binary visible state between calls so a viewer can watch them
//! evolve; `probabilities` holds the last `p(v | h)`, which is what gets drawn.

use crate::backend::{Activation, Backend};
use crate::data::Dataset;
use crate::model::Rbm;
use crate::rng::{Purpose, RngStream};

pub struct GibbsChains {
    pub n_chains: usize,
    pub n_visible: usize,
    state: Vec<f32>,
    pub probabilities: Vec<f32>,
    pub steps_done: u64,
    seed: u64,
}

impl GibbsChains {
    /// Chains started from the given data cases.
    pub fn from_cases(data: &Dataset, cases: &[usize], seed: u64) -> Self {
        let mut state = vec![0.0; cases.len() * data.n_inputs];
        data.gather_into(cases, &mut state);
        GibbsChains { n_chains: cases.len(), n_visible: data.n_inputs, probabilities: state.clone(), state, steps_done: 0, seed }
    }

    pub fn advance(&mut self, rbm: &Rbm, backend: &dyn Backend, steps: usize) {
        assert_eq!(rbm.n_visible, self.n_visible);
        let mut hidden = vec![0.0; self.n_chains * rbm.n_hidden];
        let mut hidden_sample = hidden.clone();
        for _ in 0..steps {
            backend.visible_to_hidden(rbm.weights(), &self.state, &rbm.hidden_bias, Activation::Sigmoid, &mut hidden);
            backend.bernoulli(&hidden, RngStream::new(self.seed, self.steps_done, Purpose::GibbsHidden), &mut hidden_sample);
            backend.hidden_to_visible(rbm.weights(), &hidden_sample, &rbm.visible_bias, Activation::Sigmoid, &mut self.probabilities);
            backend.bernoulli(&self.probabilities, RngStream::new(self.seed, self.steps_done, Purpose::GibbsVisible), &mut self.state);
            self.steps_done += 1;
        }
    }
}
