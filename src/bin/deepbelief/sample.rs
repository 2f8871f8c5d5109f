//! `deepbelief sample`: Gibbs chains in the top RBM, seen at the pixels as a PNG grid.

use crate::backend_choice::{self, BackendChoice};
use crate::input::load_model_input;
use crate::output::Output;
use clap::{Args, ValueEnum};
use deepbelief::engine::chains::{start_cases, CaseChoice, ChainStart, Chains};
use deepbelief::format::read_model;
use deepbelief::report::image_grid::{tile_grey, Scaling};
use deepbelief::report::png::write_grey_png;
use serde_json::json;
use std::path::PathBuf;

/// More chains than this would make a PNG few viewers open.
const MAX_CHAINS: usize = 10_000;

#[derive(Args, Debug)]
pub struct SampleArgs {
    /// Model folder (reads model.json) or model file.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// Number of chains, one tile each.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub count: usize,
    /// Tiles per row.
    #[arg(long, value_name = "C", default_value_t = 10)]
    pub columns: usize,
    /// Gibbs steps in the top RBM before the picture is taken.
    #[arg(long, value_name = "S", default_value_t = 100)]
    pub steps: usize,
    /// Start from random top-layer states, or from data cases propagated up.
    #[arg(long, value_enum, default_value_t = Start::Random)]
    pub from: Start,
    /// Cases to start from with --from data (spread evenly through the file).
    #[arg(long, value_name = "FILE")]
    pub images: Option<PathBuf>,
    /// Seed of the random starts and the Gibbs sampling.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Compute backend: gpu (all chains on the device; only the images come back), cpu, or
    /// auto (a hardware GPU when one is found, else the CPU).
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    pub backend: BackendChoice,
    /// The PNG to write.
    #[arg(long, value_name = "FILE.png")]
    pub out: PathBuf,
    /// Print the final figures as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Start {
    Random,
    Data,
}

pub fn run(args: SampleArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    if !(1..=MAX_CHAINS).contains(&args.count) {
        return Err(format!("--count is {}, expected 1 to {MAX_CHAINS} chains", args.count));
    }
    if args.columns == 0 {
        return Err("--columns is 0, expected at least 1 tile per row".into());
    }
    let model = read_model(&args.model).map_err(|e| e.to_string())?;
    let dbn = &model.dbn;
    // Spread through the file; with more chains than cases, cases start several chains.
    let start_data = match (args.from, &args.images) {
        (Start::Random, None) => None,
        (Start::Data, Some(images)) => {
            let data = load_model_input(images, &model, "--images")?;
            let starts = start_cases(data.n_cases, CaseChoice::Spread { count: args.count })?;
            Some((data, starts))
        }
        (Start::Data, None) => return Err("--from data needs --images FILE: the data cases the chains start from".into()),
        (Start::Random, Some(_)) => return Err("--images is used only with --from data (the chains start from random states by default)".into()),
    };
    let engine = backend_choice::engine(args.backend)?;
    let adapter = engine.adapter();
    let start = match &start_data {
        Some((data, cases)) => ChainStart::Data { data, cases },
        None => ChainStart::Random { count: args.count },
    };
    let mut chains = Chains::start(&engine, dbn, start, args.seed)?;
    chains.advance(dbn, args.steps);
    let mut images = pollster::block_on(chains.images(dbn))?;
    // Gaussian models work in standardised units; the picture is in pixels.
    if let Some(standardisation) = &model.standardisation {
        standardisation.restore_in_place(&mut images);
    }
    let n_visible = dbn.layers[0].n_visible;
    let shape = model.image_shape.unwrap_or((1, n_visible));
    let grid = tile_grey(&images, args.count, shape, args.columns, Scaling::Unit);
    write_grey_png(&args.out, &grid)?;

    let mean_intensity = grid.pixels.iter().map(|&p| p as f64).sum::<f64>() / grid.pixels.len() as f64 / 255.0;
    output.text(&format!(
        "{} chains, {} Gibbs steps from {} starts on {}: wrote {} ({}×{} pixels)",
        args.count,
        args.steps,
        if args.from == Start::Data { "data" } else { "random" },
        adapter.as_ref().map_or_else(|| "the CPU".to_string(), |a| format!("the GPU ({}, {})", a.name, a.backend)),
        args.out.display(),
        grid.width,
        grid.height
    ));
    output.finish(&json!({
        "out": args.out.display().to_string(),
        "count": args.count,
        "steps": args.steps,
        "width": grid.width,
        "height": grid.height,
        "mean_intensity": mean_intensity,
        "backend": if adapter.is_some() { "gpu" } else { "cpu" },
        "adapter": adapter,
    }));
    Ok(())
}
