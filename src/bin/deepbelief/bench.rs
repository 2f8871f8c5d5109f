//! `deepbelief bench`: seconds per CD-1 training epoch (`deepbelief::bench`), on the CPU
//! (`cpu_epoch_s`) or the GPU (`gpu_epoch_s`, plus GEMM GFLOP/s per kernel shape and the
//! Raina, Madhavan & Ng 2009 Table 2 shapes in seconds per million examples).
//!
//! GPU data: the IDX file's cases tiled to `--cases` (default 60,000: the 10k MNIST file
//! repeated 6 times, so an epoch has the full MNIST training set's shape); the Raina shapes
//! train on random binary bytes (see `deepbelief::bench::random_binary_cases`).
//!
//! `--autoencoder`: issue 17's sweep instead (`deepbelief::bench::autoencoder`): one
//! full-batch sparse-autoencoder cost and gradient over `--cases` (10,000) for each `v × v/2`
//! of `--sizes`, one row per size (and on the GPU per variant: `resident`, `upload_download`),
//! printed as it is measured; with `--json` each row is a JSON line.

use crate::backend_choice::{self, BackendChoice};
use crate::output::Output;
use clap::Args;
use deepbelief::bench::autoencoder::{AutoencoderBenchRow, AutoencoderBenchSettings, SIZES};
use deepbelief::data::load_idx_dataset;
use std::io::Write;
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
    /// Backend to time: cpu, gpu, or auto (the GPU when an adapter exists).
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
    /// GPU only: cases per epoch, the file's cases tiled (default 60,000 = MNIST's training
    /// set size). With --autoencoder: the cases of the batch (default 10,000).
    #[arg(long, value_name = "N")]
    pub cases: Option<usize>,
    /// GPU only: skip the Raina et al. (2009) Table 2 shapes.
    #[arg(long)]
    pub no_raina: bool,
    /// GPU only: batches timed per Raina shape (whole epochs, rounded up).
    #[arg(long, value_name = "N", default_value_t = 300)]
    pub raina_batches: usize,
    /// GPU only: also time each dispatch of a batch of every shape with GPU timestamps
    /// (needs an adapter with timestamp queries).
    #[arg(long)]
    pub profile: bool,
    /// GPU only: time the CD products of the MNIST and largest Raina shapes for every tiling
    /// and split-k factor (prints the best of each, and the automatic choice).
    #[arg(long)]
    pub gemm_sweep: bool,
    /// Time the sparse autoencoder's full-batch cost and gradient (issue 17) instead of RBM
    /// epochs: one v × v/2 network per --sizes, random inputs in [0, 1] from Philox, λ = 1e-4,
    /// β = 3, ρ = 0.01.
    #[arg(long)]
    pub autoencoder: bool,
    /// --autoencoder: the visible sizes v, comma-separated; --rtrl: the bits n (default
    /// 16,32,64,96,128).
    #[arg(long, value_name = "V,V,...", value_delimiter = ',', default_values_t = SIZES)]
    pub sizes: Vec<usize>,
    /// --autoencoder: untimed evaluations before the timed ones (on the GPU at least 1).
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub warmups: usize,
    /// --autoencoder on the GPU: sizes up to this v also report the CPU's J on the same data
    /// and weights (fields J_cpu, J_relative_difference).
    #[arg(long, value_name = "V", default_value_t = 1024)]
    pub check_up_to: usize,
    #[command(flatten)]
    pub sparse_coding: crate::bench_sparse_coding::SparseCodingBenchArgs,
    #[command(flatten)]
    pub local_rbm: crate::bench_local_rbm::LocalRbmBenchArgs,
    #[command(flatten)]
    pub rtrl: crate::bench_rtrl::RtrlBenchArgs,
    /// Print the report as one JSON object on the last line of standard output (with
    /// --autoencoder, one JSON object per line, each size and variant).
    #[arg(long)]
    pub json: bool,
}

fn run_autoencoder(args: &BenchArgs, output: Output) -> Result<(), String> {
    let engine = backend_choice::engine(args.backend)?;
    let settings = AutoencoderBenchSettings { cases: args.cases.unwrap_or(deepbelief::bench::autoencoder::CASES), warmups: args.warmups, repeats: args.repeats, check_up_to: args.check_up_to, ..Default::default() };
    let print = |r: &AutoencoderBenchRow| {
        let check = match (r.cost_cpu, r.cost_relative_difference) {
            (Some(cpu), Some(difference)) => format!(" (CPU J {cpu:.6}, relative difference {difference:.1e})"),
            _ => String::new(),
        };
        output.text(&format!(
            "autoencoder {}×{}, {} cases, {} {}: median {:.4} s, min {:.4} s of {}, {:.0} GFLOP/s, J {:.6}{check}; {}",
            r.size, r.hidden, r.cases, r.backend, r.variant, r.seconds_median, r.seconds_min, r.seconds.len(), r.gflops, r.cost, r.device
        ));
        if output.json {
            // Each row as it is measured: a sweep cut short by a time limit keeps what it has.
            let line = serde_json::to_string(r).expect("a benchmark row serialises");
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}").and_then(|_| out.flush());
        }
    };
    pollster::block_on(engine.bench_autoencoder(&args.sizes, &settings, print))?;
    Ok(())
}

pub fn run(args: BenchArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    if args.sparse_coding.sparse_coding {
        return crate::bench_sparse_coding::run(&args.sparse_coding, args.cases, args.backend, output);
    }
    if args.autoencoder {
        return run_autoencoder(&args, output);
    }
    if args.local_rbm.local_rbm {
        return crate::bench_local_rbm::run(&args.local_rbm, args.backend, output);
    }
    if args.rtrl.rtrl {
        return crate::bench_rtrl::run(&args.rtrl, &args.sizes, args.repeats, args.backend, output);
    }
    let engine = backend_choice::engine(args.backend)?;
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
    if engine.is_gpu() {
        let cases = args.cases.unwrap_or(60_000);
        if cases == 0 {
            return Err("--cases is 0, expected at least one case".into());
        }
        if args.gemm_sweep {
            let (b, v, h) = (args.batch_size as u32, data.n_inputs as u32, args.hidden as u32);
            let rows = pollster::block_on(engine.gemm_sweep(b, v, h, &[1, 2, 3, 4, 6, 8, 12, 16]))?;
            for shape in rows.chunk_by(|a, b| (&a.variant, a.m, a.k, a.n) == (&b.variant, b.m, b.k, b.n)) {
                let mut sorted = shape.to_vec();
                sorted.sort_by(|a, b| b.gflops.total_cmp(&a.gflops));
                let s = &sorted[0];
                let top: Vec<String> = sorted.iter().take(4).map(|r| format!("{} ×{} {:.0}", r.tiling, r.splits, r.gflops)).collect();
                output.text(&format!("  sweep {:>10} {:>5}×{:>5}×{:>5}: auto {:.0} GFLOP/s; best {}", s.variant, s.m, s.k, s.n, s.auto_gflops, top.join(", ")));
            }
            output.finish(&serde_json::to_value(&rows).map_err(|e| e.to_string())?);
            return Ok(());
        }
        let tiled = deepbelief::bench::tile_cases(&data, cases);
        let report = pollster::block_on(engine.bench_gpu(&tiled, args.hidden, args.batch_size, args.repeats, !args.no_raina, args.raina_batches, args.profile))?;
        let m = &report.mnist;
        output.text(&format!(
            "{} cases, {}×{} RBM, batches of {}: {:.4} s per epoch on the GPU (median of {}), {:.1} GFLOP/s; {}",
            m.cases, m.n_visible, m.n_hidden, m.batch_size, m.gpu_epoch_s, args.repeats, m.gflops, report.backend
        ));
        for g in &report.gemm {
            output.text(&format!("  GEMM {:>26} {:>5}×{:>5}×{:>5} ({}): {:.0} GFLOP/s", g.role, g.m, g.k, g.n, g.variant, g.gflops));
        }
        for r in &report.raina {
            output.text(&format!("  Raina {}×{} batch {}: {:.2} s per 1M examples ({} batches timed, {:.0} GFLOP/s)", r.n_visible, r.n_hidden, r.batch_size, r.seconds_per_million, r.batches_timed, r.gflops));
        }
        for p in &report.profiles {
            let b = &p.profile;
            output.text(&format!(
                "  profile {}×{} batch {}: {:.1} µs per batch in one pass, {:.1} µs in the dispatches alone ({} batches)",
                p.n_visible, p.n_hidden, p.batch_size, b.one_pass_us, b.dispatch_sum_us, b.batches
            ));
            for d in &b.dispatches {
                output.text(&format!("    {:>18}: {:8.1} µs", d.label, d.microseconds));
            }
        }
        output.finish(&serde_json::to_value(&report).map_err(|e| e.to_string())?);
        return Ok(());
    }
    let report = deepbelief::bench::bench_cpu_epoch(&data, args.hidden, args.batch_size, args.repeats);
    output.text(&format!(
        "{} cases, {}×{} RBM, batches of {}: {:.3} s per epoch (median of {}), {:.1} GFLOP/s; {}",
        report.cases, report.n_visible, report.n_hidden, report.batch_size, report.cpu_epoch_s, report.repeats, report.gflops, report.backend
    ));
    output.finish(&serde_json::to_value(&report).map_err(|e| e.to_string())?);
    Ok(())
}
