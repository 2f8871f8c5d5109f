//! `deepbelief gpu-check`: is there a usable wgpu device, and do its kernels agree with the CPU?

use crate::output::Output;
use clap::Args;
use deepbelief::engine::Engine;
use serde_json::json;

#[derive(Args, Debug)]
pub struct GpuCheckArgs {
    /// Print the result as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: GpuCheckArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    let engine = pollster::block_on(Engine::gpu())?;
    let error = pollster::block_on(engine.self_check())?;
    let adapter = engine.adapter().expect("a GPU engine has an adapter");
    output.text(&format!("{} ({}, {}): largest difference from the CPU reference {error:e}", adapter.name, adapter.backend, adapter.device_type));
    output.finish(&json!({ "adapter": adapter, "max_abs_error": error }));
    Ok(())
}
