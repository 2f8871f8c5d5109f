//! Generative Gibbs chains through a stack on either engine: on the CPU
//! (`sample::GenerativeChains`) or on the device (`gpu::chains::GpuChains`, only the images
//! read back). The CLI's `sample` and the page's sample views start and advance them here.

use super::Engine;
use crate::backend::cpu::CpuBackend;
use crate::data::Dataset;
use crate::gpu::chains::GpuChains;
use crate::gpu::GpuContext;
use crate::model::Dbn;
use crate::sample::GenerativeChains;

/// Where the chains start: data cases propagated up, or random top states.
#[derive(Clone, Copy, Debug)]
pub enum ChainStart<'a> {
    Data { data: &'a Dataset, cases: &'a [usize] },
    Random { count: usize },
}

/// Chains on one engine, for the model they started on (its depth fixed).
pub struct Chains {
    place: Place,
    layers: usize,
}

enum Place {
    Cpu(GenerativeChains),
    Gpu { chains: GpuChains, ctx: GpuContext },
}

impl Chains {
    /// New chains through `dbn` on `engine`.
    pub fn start(engine: &Engine, dbn: &Dbn, start: ChainStart, seed: u64) -> Result<Chains, String> {
        let place = match engine {
            Engine::Cpu => Place::Cpu(match start {
                ChainStart::Data { data, cases } => GenerativeChains::from_data(dbn, &CpuBackend, data, cases, seed),
                ChainStart::Random { count } => GenerativeChains::from_random(dbn, &CpuBackend, count, seed),
            }),
            Engine::Gpu(ctx) => {
                let chains = match start {
                    ChainStart::Data { data, cases } => GpuChains::from_data(ctx, dbn, data, cases, seed),
                    ChainStart::Random { count } => GpuChains::from_random(ctx, dbn, count, seed),
                }
                .map_err(|e| e.to_string())?;
                Place::Gpu { chains, ctx: ctx.clone() }
            }
        };
        Ok(Chains { place, layers: dbn.layers.len() })
    }

    pub fn n_chains(&self) -> usize {
        match &self.place {
            Place::Cpu(chains) => chains.n_chains,
            Place::Gpu { chains, .. } => chains.n_chains,
        }
    }

    /// The depth of the model the chains started on.
    pub fn n_layers(&self) -> usize {
        self.layers
    }

    pub fn on_gpu(&self) -> bool {
        matches!(self.place, Place::Gpu { .. })
    }

    pub fn steps_done(&self) -> u64 {
        match &self.place {
            Place::Cpu(chains) => chains.steps_done,
            Place::Gpu { chains, .. } => chains.steps_done,
        }
    }

    /// Follows the model in training: the device copy of the weights is rewritten (the CPU
    /// chains read `dbn` at every step).
    pub fn set_model(&self, dbn: &Dbn) -> Result<(), String> {
        match &self.place {
            Place::Cpu(_) => Ok(()),
            Place::Gpu { chains, ctx } => chains.set_model(ctx, dbn).map_err(|e| e.to_string()),
        }
    }

    /// `steps` Gibbs steps in the top RBM (on the device: recorded and submitted).
    pub fn advance(&mut self, dbn: &Dbn, steps: usize) {
        match &mut self.place {
            Place::Cpu(chains) => chains.advance(dbn, &CpuBackend, steps),
            Place::Gpu { chains, ctx } => chains.advance(ctx, steps),
        }
    }

    /// The chains as seen at the visible units (mean field down through the stack), one row of
    /// `n_visible` values per chain.
    pub async fn images(&self, dbn: &Dbn) -> Result<Vec<f32>, String> {
        match &self.place {
            Place::Cpu(chains) => Ok(chains.images(dbn, &CpuBackend)),
            Place::Gpu { chains, ctx } => chains.images(ctx).await.map_err(|e| e.to_string()),
        }
    }
}
