//! Gibbs samples for the page: generative chains through the model in training
//! (`engine::chains`), on the CPU or, when the page trains on WebGPU, on the device (only the
//! images read back). Both follow the model as it trains, and restart from the same choice of
//! start (data cases or random top states) when a layer is added, since the top RBM's width
//! changes.

use super::{image_to_js, js_error, Playground};
use crate::engine::chains::{start_cases, CaseChoice, ChainStart, Chains};
use crate::engine::Engine;
use crate::report::image_grid::{self, Scaling};
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
    fn start_cases(&self, n_cases: usize) -> Result<Vec<usize>, JsError> {
        start_cases(n_cases, CaseChoice::ChosenOrFirst { chosen: self.cases.as_deref(), count: self.count }).map_err(|e| JsError::new(&e))
    }

    /// The chains' start in `data`.
    fn start<'a>(&self, data: &'a crate::data::Dataset, cases: &'a [usize]) -> ChainStart<'a> {
        if self.from_data {
            ChainStart::Data { data, cases }
        } else {
            ChainStart::Random { count: self.count }
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
                let cases: Vec<usize> = cases.into_iter().map(|k| k as usize).collect();
                // Checked now, so that a bad choice leaves the chains as they were.
                start_cases(n_cases, CaseChoice::ChosenOrFirst { chosen: Some(&cases), count: cases.len() }).map_err(|e| JsError::new(&e))?;
                Some(cases)
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
        let layers = self.chains.as_ref().map(Chains::n_layers);
        if layers != Some(model.layers.len()) {
            self.chains = Some(self.new_cpu_chains()?);
        }
        let chains = self.chains.as_mut().ok_or_else(|| JsError::new("no chains started"))?;
        chains.advance(&model, steps);
        let images = chains.cpu_images(&model).expect("the page's CPU chains");
        Ok(image_to_js(image_grid::tile(&images, chains.n_chains(), shape, columns, Scaling::Unit)))
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
            None => self.chains.as_ref().map_or(0, Chains::steps_done),
        }
    }
}

impl Playground {
    pub(super) fn drop_chains(&mut self) {
        self.chains = None;
        self.gpu.borrow_mut().chains = None;
    }

    /// New chains on the CPU through the current model, from the chosen start.
    fn new_cpu_chains(&self) -> Result<Chains, JsError> {
        let spec = self.chain_spec.as_ref().ok_or_else(|| JsError::new("no chains started"))?;
        let model = self.model().ok_or_else(|| JsError::new("no model yet"))?;
        let data = self.data()?;
        let cases = if spec.from_data { spec.start_cases(data.n_cases)? } else { Vec::new() };
        Chains::start(&Engine::Cpu, &model, spec.start(data, &cases), spec.seed).map_err(js_error)
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
                let cases = if spec.from_data { spec.start_cases(data.n_cases)? } else { Vec::new() };
                Chains::start(&engine, &model, spec.start(data, &cases), spec.seed).map_err(js_error)?
            }
        };
        chains.advance(&model, steps);
        Ok((chains, model))
    }
}
