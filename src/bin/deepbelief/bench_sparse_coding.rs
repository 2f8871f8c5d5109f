//! `deepbelief bench --sparse-coding`: issue 18's Table 4 replica (`deepbelief::bench::sparse_coding`):
//! one pass of sparse coding over `--cases` (5,000) `--patch` (32) patches with `--bases` (1,024)
//! in mini-batches of `--coding-batch` (1,000), per target sparsity of `--sparsities`
//! (0.03,0.06,0.10) and solver of `--solvers` (cd,raina), one row each, printed as measured
//! (with `--json`, one JSON object per line). Patches come from `--patch-images` (grey PNGs), or
//! without them from Philox-drawn gratings, as `bench/sparse_coding_sklearn.py` and
//! `bench/sparse_coding_torch.py` draw them. `bench --backend gpu` runs Raina's solver on the
//! device (`--solvers` then defaults to raina alone; a cd row runs on the CPU, its `device` says
//! so).

use crate::backend_choice::{self, BackendChoice};
use crate::grey_images::read_grey_images;
use crate::output::Output;
use clap::{Args, ValueEnum};
use deepbelief::bench::sparse_coding::{self as table4, bench_patches, grating_images, SparseCodingBenchRow, SparseCodingBenchSettings};
use deepbelief::sparse_coding::CodeSolver;
use std::io::Write;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchSolver {
    Cd,
    Raina,
}

#[derive(Args, Debug)]
pub struct SparseCodingBenchArgs {
    /// Time one pass of sparse coding (issue 18, Raina et al.'s Table 4) instead of RBM epochs.
    #[arg(long)]
    pub sparse_coding: bool,
    /// --sparse-coding: grey PNG images (files or folders) to cut the patches from; without
    /// them, 8 generated 256×256 grating images.
    #[arg(long, value_name = "DIR_OR_FILE", num_args = 1..)]
    pub patch_images: Vec<PathBuf>,
    /// --sparse-coding: the side of the square patches.
    #[arg(long, value_name = "PIXELS", default_value_t = table4::PATCH)]
    pub patch: usize,
    /// --sparse-coding: basis vectors.
    #[arg(long, value_name = "N", default_value_t = table4::BASES)]
    pub bases: usize,
    /// --sparse-coding: cases per mini-batch.
    #[arg(long, value_name = "N", default_value_t = table4::BATCH)]
    pub coding_batch: usize,
    /// --sparse-coding: target fractions of non-zero codes, comma-separated; β is chosen for each.
    #[arg(long, value_name = "S,S,...", value_delimiter = ',', default_values_t = table4::SPARSITIES)]
    pub sparsities: Vec<f64>,
    /// --sparse-coding: the code step's solvers, comma-separated (default: cd,raina on the CPU,
    /// raina on a GPU, where cd runs on the CPU).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub solvers: Option<Vec<BenchSolver>>,
    /// --sparse-coding: what each basis step minimises (as `sparse-coding --statistics`; one
    /// pass: forgetting-first-pass is forgetting, scikit-learn's statistics).
    #[arg(long, value_enum, default_value_t = crate::sparse_coding::StatisticsChoice::ForgettingFirstPass)]
    pub coding_statistics: crate::sparse_coding::StatisticsChoice,
}

/// Runs the replica where `backend` says; `cases` is `bench --cases` (default 5,000).
pub fn run(args: &SparseCodingBenchArgs, cases: Option<usize>, backend: BackendChoice, output: Output) -> Result<(), String> {
    let engine = backend_choice::engine(backend)?;
    let default_solvers = if engine.is_gpu() { vec![BenchSolver::Raina] } else { vec![BenchSolver::Cd, BenchSolver::Raina] };
    let solvers = args
        .solvers
        .as_ref()
        .unwrap_or(&default_solvers)
        .iter()
        .map(|s| match s {
            BenchSolver::Cd => CodeSolver::coordinate_descent(),
            BenchSolver::Raina => CodeSolver::raina(),
        })
        .collect();
    let settings = SparseCodingBenchSettings { cases: cases.unwrap_or(table4::CASES), patch: args.patch, bases: args.bases, batch: args.coding_batch, sparsities: args.sparsities.clone(), solvers, statistics: args.coding_statistics.rule() };
    table4::check_settings(&settings)?;
    let (images, data_name) = if args.patch_images.is_empty() {
        (grating_images(table4::GRATING_IMAGES, table4::GRATING_SIDE, table4::DATA_SEED), "gratings")
    } else {
        (read_grey_images(&args.patch_images, "--patch-images")?.1, "images")
    };
    let data = bench_patches(&images, settings.patch, settings.cases).map_err(|e| format!("--sparse-coding: {e}"))?;
    let print = |r: &SparseCodingBenchRow| {
        output.text(&format!(
            "sparse coding {} × {}, {} bases, batches of {}, {:.0}% target (β {:.4}), {}: {:.2} s per pass ({:.2} codes + {:.2} basis{}), objective {:.4} ({:.4} with the pass's codes), {:.2}% non-zero ({:.2}%), code iterations {:.1} (most {}), basis iterations {:.1}; {}",
            r.cases,
            r.inputs,
            r.bases,
            r.batch,
            100.0 * r.sparsity_target,
            r.beta,
            r.solver,
            r.seconds,
            r.seconds_codes,
            r.seconds_basis,
            r.seconds_with_transfers.map(|s| format!("; {s:.2} with the transfers")).unwrap_or_default(),
            r.objective,
            r.objective_stored,
            100.0 * r.nonzero_fraction,
            100.0 * r.nonzero_fraction_stored,
            r.code_iterations_mean,
            r.code_iterations_max,
            r.basis_iterations_mean,
            r.device
        ));
        if output.json {
            // Each row as it is measured: a run cut short keeps what it has.
            let line = serde_json::to_string(r).expect("a benchmark row serialises");
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}").and_then(|_| out.flush());
        }
    };
    pollster::block_on(engine.bench_sparse_coding(&data, &settings, data_name, print))?;
    Ok(())
}
