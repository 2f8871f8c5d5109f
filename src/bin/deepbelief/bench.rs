//! `deepbelief bench`: seconds per CD-1 training epoch on the CPU (`deepbelief::bench`).

use crate::backend_choice::BackendChoice;
use crate::output::Output;
use clap::Args;
use deepbelief::data::load_idx_dataset;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// IDX image file to train on.
    #[arg(long, value_name = "FILE", default_value = "../shared/data/mnist/train-10k-images-idx3-ubyte.gz")]
    pub images: PathBuf,
    /// Hidden units of the RBM trained.
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub hidden: usize,
    /// Cases per mini-batch.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub batch_size: usize,
    /// Timed epochs (after one warm-up); the median is reported.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub repeats: usize,
    /// Backend to time (the CPU in this build).
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
    /// Print the report as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: BenchArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    // Only the CPU is timed in this build; `resolve` refuses `gpu` with the reason.
    args.backend.resolve()?;
    let data = load_idx_dataset(&args.images, None).map_err(|e| e.to_string())?;
    if args.hidden == 0 || args.hidden > deepbelief::train::config::MAX_HIDDEN {
        return Err(format!("--hidden is {}, expected 1 to {} units", args.hidden, deepbelief::train::config::MAX_HIDDEN));
    }
    if args.batch_size == 0 || args.batch_size > data.n_cases {
        return Err(format!("--batch-size is {}, expected 1 to {} (the cases in {})", args.batch_size, data.n_cases, args.images.display()));
    }
    if args.repeats == 0 {
        return Err("--repeats is 0, expected at least 1 timed epoch".into());
    }
    let report = deepbelief::bench::bench_cpu_epoch(&data, args.hidden, args.batch_size, args.repeats);
    output.text(&format!(
        "{} cases, {}×{} RBM, batches of {}: {:.3} s per epoch (median of {}), {:.1} GFLOP/s; {}",
        report.cases, report.n_visible, report.n_hidden, report.batch_size, report.cpu_epoch_s, report.repeats, report.gflops, report.backend
    ));
    output.finish(&serde_json::to_value(&report).map_err(|e| e.to_string())?);
    Ok(())
}
