//! Generative Gibbs chains through a stack on either engine: on the CPU
//! (`sample::GenerativeChains`) or on the device (`gpu::chains::GpuChains`, only the images
//! read back). The CLI's `sample` and the page's sample views start and advance them here, and
//! choose the data cases they start from with [`start_cases`].

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

/// Which data cases chains start from.
#[derive(Clone, Copy, Debug)]
pub enum CaseChoice<'a> {
    /// `count` starts spread evenly through the data; with more chains than cases, cases start
    /// several chains (the CLI's `--from data`).
    Spread { count: usize },
    /// The `chosen` cases, or else the first `count` (the page's: its embedded default is
    /// interleaved by class, so the first cases show every digit).
    ChosenOrFirst { chosen: Option<&'a [usize]>, count: usize },
}

/// The data cases (indices into `n_cases`) chains start from, one per chain. Chosen cases must
/// be at least one, each in range.
pub fn start_cases(n_cases: usize, choice: CaseChoice) -> Result<Vec<usize>, String> {
    match choice {
        CaseChoice::Spread { count } if n_cases == 0 && count > 0 => Err("the data has no cases to start chains from".into()),
        CaseChoice::Spread { count } => Ok((0..count).map(|k| k * n_cases / count).collect()),
        CaseChoice::ChosenOrFirst { chosen: None, count } => Ok((0..count.min(n_cases)).collect()),
        CaseChoice::ChosenOrFirst { chosen: Some([]), .. } => Err("cases: expected at least one data case".into()),
        CaseChoice::ChosenOrFirst { chosen: Some(cases), .. } => match cases.iter().find(|&&k| k >= n_cases) {
            Some(bad) => Err(format!("cases: case {bad} is out of range (the data has {n_cases} cases, numbered from 0)")),
            None => Ok(cases.to_vec()),
        },
    }
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

    /// [`Self::images`] of chains on the CPU, which need no await (the page's CPU views run
    /// synchronously); `None` for chains on the device.
    pub fn cpu_images(&self, dbn: &Dbn) -> Option<Vec<f32>> {
        match &self.place {
            Place::Cpu(chains) => Some(chains.images(dbn, &CpuBackend)),
            Place::Gpu { .. } => None,
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

#[cfg(test)]
mod tests {
    use super::{start_cases, CaseChoice};

    #[test]
    fn spread_starts_cover_the_file_and_repeat_cases_when_chains_outnumber_them() {
        assert_eq!(start_cases(10, CaseChoice::Spread { count: 4 }).unwrap(), vec![0, 2, 5, 7]);
        assert_eq!(start_cases(2, CaseChoice::Spread { count: 4 }).unwrap(), vec![0, 0, 1, 1]);
    }

    #[test]
    fn the_page_starts_from_chosen_cases_or_else_the_first() {
        assert_eq!(start_cases(10, CaseChoice::ChosenOrFirst { chosen: None, count: 3 }).unwrap(), vec![0, 1, 2]);
        assert_eq!(start_cases(2, CaseChoice::ChosenOrFirst { chosen: None, count: 3 }).unwrap(), vec![0, 1]);
        assert_eq!(start_cases(10, CaseChoice::ChosenOrFirst { chosen: Some(&[7, 3, 7]), count: 1 }).unwrap(), vec![7, 3, 7]);
        assert_eq!(start_cases(10, CaseChoice::ChosenOrFirst { chosen: Some(&[]), count: 3 }).unwrap_err(), "cases: expected at least one data case");
        assert_eq!(start_cases(10, CaseChoice::ChosenOrFirst { chosen: Some(&[3, 10]), count: 2 }).unwrap_err(), "cases: case 10 is out of range (the data has 10 cases, numbered from 0)");
    }
}
