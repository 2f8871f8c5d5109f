//! `--backend cpu|gpu|auto`. Every command that computes (`bench`, `train`, `eval`, `sample`)
//! asks the engine for its choice ([`engine`]); the rule itself is `deepbelief::engine`'s, the
//! same on the page.

use deepbelief::engine::Engine;
pub use deepbelief::engine::EngineChoice as BackendChoice;

/// The engine for `choice`, with the notices on standard error: which GPU was taken, or why
/// `auto` runs on the CPU. `gpu` without a usable adapter is an error.
pub fn engine(choice: BackendChoice) -> Result<Engine, String> {
    let chosen = Engine::choose(choice).map_err(|e| format!("--backend gpu: {e}"))?;
    if let Some(notice) = &chosen.notice {
        eprintln!("notice: {notice}; running on the CPU");
    }
    if let Some(s) = chosen.engine.adapter() {
        eprintln!("GPU: {} ({}, {}, driver {})", s.name, s.backend, s.device_type, s.driver);
    }
    Ok(chosen.engine)
}
