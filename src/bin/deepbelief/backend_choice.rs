//! `--backend cpu|gpu|auto`. Only the CPU backend exists in this build; the GPU training
//! backend arrives with the next issue, so `gpu` is refused rather than silently replaced.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::Backend;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    Cpu,
    Gpu,
    /// The fastest backend available: the CPU in this build.
    #[default]
    Auto,
}

impl BackendChoice {
    pub fn resolve(self) -> Result<Box<dyn Backend>, String> {
        match self {
            BackendChoice::Cpu | BackendChoice::Auto => Ok(Box::new(CpuBackend)),
            BackendChoice::Gpu => Err("--backend gpu: the GPU training backend is not built yet (the next issue adds it); use --backend cpu or auto".into()),
        }
    }
}
