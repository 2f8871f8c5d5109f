//! Gibbs samples for the page: generative chains through the model in training, on the CPU
//! (`GenerativeChains`) or, when the page trains on WebGPU, on the device (`engine::chains`,
//! only the images read back). Both follow the model as it trains, and restart from the same
//! choice of start (data cases or random top states) when a layer is added, since the top
//! RBM's width changes.

use super::{image_to_js, js_error, Playground};
use crate::backend::cpu::CpuBackend;
use crate::engine::chains::{ChainStart, Chains};
use crate::report::image_grid::{self, Scaling};
use crate::sample::GenerativeChains;
use wasm_bindgen::prelude::*;

#[derive(Clone, Debug)]
pub(super) struct ChainSpec {
    count: usize,
    from_data: bool,
    /// Data cases the chains start from, when chosen; else the first `count`.
    cases: Option<Vec<usize>>,
    seed: u64,
}

impl ChainSpec {
    fn start_cases(&self, n_cases: usize) -> Vec<usize> {
        match &self.cases {
            Some(cases) => cases.clone(),
            None => (0..self.count.min(n_cases)).collect(),
        }
    }
}

#[wasm_bindgen]
impl Playground {
    /// Starts generative chains from data cases: the given `cases` (indices into the loaded
    /// data), or else the first `count` (the embedded default is interleaved by class, so these
    /// show every digit); or, without `from_data`, `count` chains from random top states.
    pub fn start_chains(&mut self, count: usize, from_data: bool, cases: Option<Vec<u32>>, seed: u64) -> Result<(), JsError> {
        let n_cases = self.data()?.n_cases;
        let cases = match cases {
            Some(cases) if from_data => {
                if cases.is_empty() {
                    return Err(JsError::new("cases: expected at least one data case"));
                }
                if let Some(bad) = cases.iter().find(|&&k| k as usize >= n_cases) {
                    return Err(JsError::new(&format!("cases: case {bad} is out of range (the data has {n_cases} cases, numbered from 0)")));
                }
                Some(cases.into_iter().map(|k| k as usize).collect::<Vec<_>>())
            }
            _ => None,
        };
        let count = cases.as_ref().map_or(count, Vec::len).max(1);
        let spec = ChainSpec { count, from_data, cases, seed };
        let previous = self.chain_spec.replace(spec);
        match self.new_cpu_chains() {
            Ok(chains) => {
                self.drop_chains();
                self.chains = Some(chains);
                Ok(())
            }
            Err(e) => {
                self.chain_spec = previous;
                Err(e)
            }
        }
    }

    /// Advances the chains `steps` Gibbs steps on the CPU and returns them as seen at the pixels.
    pub fn advance_chains(&mut self, steps: usize, columns: usize) -> Result<JsValue, JsError> {
        let shape = self.image_shape()?;
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        let layers = self.chains.as_ref().map(|c| c.layers);
        if layers != Some(model.layers.len()) {
            self.chains = Some(self.new_cpu_chains()?);
        }
        let chains = self.chains.as_mut().ok_or_else(|| JsError::new("no chains started"))?;
        chains.chains.advance(&model, &CpuBackend, steps);
        let images = chains.chains.images(&model, &CpuBackend);
        Ok(image_to_js(image_grid::tile(&images, chains.chains.n_chains, shape, columns, Scaling::Unit)))
    }

    /// The same on the WebGPU device; resolves to the image. Rejects if the device fails (the
    /// caller goes on with `advance_chains`).
    pub fn gpu_advance_chains(&mut self, steps: usize, columns: usize) -> js_sys::Promise {
        let prepared = self.prepare_gpu_chains(steps);
        let shape = self.image_shape();
        let state = self.gpu.clone();
        wasm_bindgen_futures::future_to_promise(async move {
            let (chains, model) = prepared.map_err(JsValue::from)?;
            let shape = shape.map_err(JsValue::from)?;
            let images = chains.images(&model).await.map_err(|e| JsValue::from(js_error(e)))?;
            let image = image_grid::tile(&images, chains.n_chains(), shape, columns, Scaling::Unit);
            state.borrow_mut().chains = Some(chains);
            Ok(image_to_js(image))
        })
    }

    /// Gibbs steps taken since the chains (last) started.
    pub fn chain_steps(&self) -> u64 {
        match &self.gpu.borrow().chains {
            Some(chains) => chains.steps_done(),
            None => self.chains.as_ref().map_or(0, |c| c.chains.steps_done),
        }
    }
}

/// CPU chains with the depth of the model they started on.
pub(super) struct CpuChains {
    chains: GenerativeChains,
    layers: usize,
}

impl Playground {
    pub(super) fn drop_chains(&mut self) {
        self.chains = None;
        self.gpu.borrow_mut().chains = None;
    }

    fn new_cpu_chains(&self) -> Result<CpuChains, JsError> {
        let spec = self.chain_spec.as_ref().ok_or_else(|| JsError::new("no chains started"))?;
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        let data = self.data()?;
        let chains = if spec.from_data {
            GenerativeChains::from_data(&model, &CpuBackend, data, &spec.start_cases(data.n_cases), spec.seed)
        } else {
            GenerativeChains::from_random(&model, &CpuBackend, spec.count, spec.seed)
        };
        Ok(CpuChains { chains, layers: model.layers.len() })
    }

    /// The device chains, following the current model (new ones for a deeper model), advanced
    /// `steps` steps: everything but the read-back, which the caller awaits.
    fn prepare_gpu_chains(&mut self, steps: usize) -> Result<(Chains, crate::model::Dbn), JsError> {
        let spec = self.chain_spec.clone().ok_or_else(|| JsError::new("no chains started"))?;
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        let engine = self.gpu.borrow().device().ok_or_else(|| JsError::new("no WebGPU device"))?;
        let existing = self.gpu.borrow_mut().chains.take();
        let mut chains = match existing {
            Some(chains) if chains.n_layers() == model.layers.len() => {
                chains.set_model(&model).map_err(js_error)?;
                chains
            }
            _ => {
                let data = self.data()?;
                let cases = spec.start_cases(data.n_cases);
                let start = if spec.from_data { ChainStart::Data { data, cases: &cases } } else { ChainStart::Random { count: spec.count } };
                Chains::start(&engine, &model, start, spec.seed).map_err(js_error)?
            }
        };
        chains.advance(&model, steps);
        Ok((chains, model))
    }
}
