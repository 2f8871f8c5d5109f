//! `deepbelief sparse-coding` (issue 18): learns a sparse coding basis (Raina, Madhavan & Ng
//! §3.2, §6) on natural-image patches (`--images`: grey PNGs cut into `--patches` random
//! `--patch × --patch` patches, each patch's mean removed and everything scaled to unit
//! variance, optionally ZCA-whitened with `--whiten`) or on MNIST digits (`--mnist`: the first
//! `--patches` images, pixels in [0, 1], as they are). β is `--beta`, or chosen so that a
//! fraction `--sparsity` (default 0.03) of the codes are non-zero at the optimum for the initial
//! basis (coordinate descent on the first 1,000 cases, on the CPU). Then `--passes` passes over
//! the cases in mini-batches of `--batch`, each a code step (`--solver raina|cd`) and a basis
//! step, where `--backend` says (the engine's `fit_sparse_coding`: the device runs Raina's
//! solver; coordinate descent runs on the CPU, with a notice). Writes
//! `sparse_coding.json` (format `deepbelief-sparse-coding/1`) and `bases.png` (one tile per
//! basis vector, each scaled to its own max|b|) into `--out`, both staged and renamed together.

use crate::backend_choice::{self, BackendChoice};
use crate::grey_images::read_grey_images;
use crate::out_lock::OutLock;
use crate::output::Output;
use clap::{Args, ValueEnum};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::patches::{self, Zca};
use deepbelief::format::sparse_coding::{to_json, SavedSettings, SavedSparseCoding, FORMAT};
use deepbelief::report::atomic::AtomicFile;
use deepbelief::report::image_grid::{filters_of, tile_grey, Scaling};
use deepbelief::sparse_coding::fit::BatchRecord;
use deepbelief::sparse_coding::inputs::centre_and_scale;
use deepbelief::sparse_coding::{beta_for_sparsity, Basis, BasisStepSettings, CodeSolver, FitSettings, SparsitySearch, SparsitySettings, StatisticsRule};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;

/// ZCA's ε for `--whiten`, on patches of unit variance per pixel.
const ZCA_EPSILON: f64 = 0.1;
/// The target sparsity when neither `--beta` nor `--sparsity` is given (Table 4's 3%).
const DEFAULT_SPARSITY: f64 = 0.03;
/// Cases the β search codes (the first ones).
const SEARCH_CASES: usize = 1000;
/// The largest basis, so a typo cannot ask for a basis of terabytes.
const MAX_BASES: usize = 65_536;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SolverChoice {
    /// Raina et al.'s parallel solver (§6.1).
    Raina,
    /// Cyclic coordinate descent (scikit-learn's lasso_cd).
    Cd,
}

#[derive(Args, Debug)]
pub struct SparseCodingArgs {
    /// Grey PNG images (colour is averaged to grey) to cut patches from: files, or folders
    /// whose *.png files are all read.
    #[arg(long, value_name = "DIR_OR_FILE", num_args = 1.., conflicts_with = "mnist", required_unless_present = "mnist")]
    pub images: Vec<PathBuf>,
    /// An MNIST IDX image file (raw or gzip): whole images as cases, pixels in [0, 1].
    #[arg(long, value_name = "IDX_FILE")]
    pub mnist: Option<PathBuf>,
    /// --images: the side of the square patches.
    #[arg(long, value_name = "PIXELS", default_value_t = 32)]
    pub patch: usize,
    /// --images: patches sampled; --mnist: the first this many images (at most the file's).
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub patches: usize,
    /// Basis vectors.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub bases: usize,
    /// β, the weight of the L1 penalty.
    #[arg(long, value_name = "BETA", conflicts_with = "sparsity")]
    pub beta: Option<f64>,
    /// Choose β so this fraction of the codes is non-zero (default 0.03 without --beta).
    #[arg(long, value_name = "FRACTION")]
    pub sparsity: Option<f64>,
    /// Cases per mini-batch (at least the number of cases: full-batch alternation).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub batch: usize,
    /// Passes over the cases.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub passes: usize,
    /// What each basis step minimises: forgetting (online dictionary learning's statistics,
    /// as scikit-learn: older batches count less), whole-set (every case's latest codes alike:
    /// each step lowers the whole set's objective), or forgetting-first-pass (forgetting in the
    /// first pass, the whole set after: the lowest objective after one pass and after many).
    #[arg(long, value_enum, default_value_t = StatisticsChoice::ForgettingFirstPass)]
    pub statistics: StatisticsChoice,
    /// The code step's solver (default: cd on the CPU, raina on a GPU).
    #[arg(long, value_enum)]
    pub solver: Option<SolverChoice>,
    /// Where the fit runs: cpu, gpu, or auto (a hardware GPU when there is one). The device
    /// runs Raina's solver; with --solver cd the fit runs on the CPU.
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
    /// --images: ZCA-whiten the centred patches (ε = 0.1).
    #[arg(long)]
    pub whiten: bool,
    /// Seed of the patch sampling and of the initial basis.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Folder for sparse_coding.json and bases.png (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Print the summary as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StatisticsChoice {
    ForgettingFirstPass,
    Forgetting,
    WholeSet,
}

impl StatisticsChoice {
    pub fn rule(self) -> StatisticsRule {
        match self {
            StatisticsChoice::Forgetting => StatisticsRule::Forgetting,
            StatisticsChoice::WholeSet => StatisticsRule::WholeSet,
            StatisticsChoice::ForgettingFirstPass => StatisticsRule::ForgettingFirstPass,
        }
    }
}

/// The cases, `rows × width`, and the tile shape of a basis vector.
struct Inputs {
    values: Vec<f32>,
    width: usize,
    tile: Option<[usize; 2]>,
    source: serde_json::Value,
}

fn check_args(args: &SparseCodingArgs) -> Result<(), String> {
    if args.patch == 0 || args.patch > 64 {
        return Err(format!("--patch is {}, expected 1 to 64 pixels", args.patch));
    }
    if args.patches == 0 {
        return Err("--patches is 0, expected at least 1".into());
    }
    if args.bases == 0 || args.bases > MAX_BASES {
        return Err(format!("--bases is {}, expected 1 to {MAX_BASES}", args.bases));
    }
    if let Some(beta) = args.beta {
        if !(beta > 0.0 && beta.is_finite()) {
            return Err(format!("--beta is {beta}, expected a finite number > 0"));
        }
    }
    if let Some(sparsity) = args.sparsity {
        if !(sparsity > 0.0 && sparsity < 1.0) {
            return Err(format!("--sparsity is {sparsity}, expected a fraction of non-zero codes strictly between 0 and 1"));
        }
    }
    if args.batch == 0 {
        return Err("--batch is 0, expected at least 1 case".into());
    }
    if args.passes == 0 {
        return Err("--passes is 0, expected at least 1".into());
    }
    if args.whiten && args.mnist.is_some() {
        return Err("--whiten applies to --images patches, not to --mnist".into());
    }
    Ok(())
}

fn read_inputs(args: &SparseCodingArgs) -> Result<Inputs, String> {
    if let Some(path) = &args.mnist {
        let (values, width) = patches::read_unit_inputs(path, Some(args.patches)).map_err(|e| format!("--mnist {}: {e}", path.display()))?;
        let side = (width as f64).sqrt() as usize;
        let tile = (side * side == width).then_some([side, side]);
        let cases = values.len() / width.max(1);
        return Ok(Inputs { values, width, tile, source: json!({ "mnist": path.display().to_string(), "cases": cases, "preprocessing": "pixels / 255" }) });
    }
    let (files, images) = read_grey_images(&args.images, "--images")?;
    let mut sampled = patches::sample_patches(&images, args.patch, args.patches, args.seed).map_err(|e| format!("--images: {e}"))?;
    let width = sampled.width();
    let deviation = centre_and_scale(&mut sampled.values, width).map_err(|e| format!("--images: {e}"))?;
    if args.whiten {
        let zca = Zca::fit(&CpuBackend, &sampled.values, width, ZCA_EPSILON).map_err(|e| format!("--whiten: {e}"))?;
        sampled.values = zca.apply(&CpuBackend, &sampled.values);
    }
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let preprocessing = if args.whiten { "patch mean removed, divided by the deviation, ZCA-whitened (epsilon 0.1)" } else { "patch mean removed, divided by the deviation" };
    let source = json!({ "images": names, "patch": args.patch, "patches": args.patches, "deviation": deviation, "whiten": args.whiten, "preprocessing": preprocessing });
    Ok(Inputs { values: sampled.values, width, tile: Some([args.patch, args.patch]), source })
}

fn solver(choice: SolverChoice) -> CodeSolver {
    match choice {
        SolverChoice::Raina => CodeSolver::raina(),
        SolverChoice::Cd => CodeSolver::coordinate_descent(),
    }
}

/// `sparse_coding.json` and `bases.png`, each written under a temporary name, then both
/// renamed: a failure leaves neither half-written nor one without the other.
fn write_outputs(args: &SparseCodingArgs, saved: &SavedSparseCoding, basis: &Basis) -> Result<(), String> {
    let text = to_json(saved)?;
    let tiles = filters_of(&basis.values, basis.n_inputs, basis.n_bases, basis.n_bases);
    let [rows, cols] = saved.tile.unwrap_or([1, basis.n_inputs]);
    let columns = (basis.n_bases as f64).sqrt().ceil() as usize;
    let grid = tile_grey(&tiles, basis.n_bases, (rows, cols), columns.max(1), Scaling::SymmetricPerTile);
    let png = deepbelief::report::png::encode_grey_png(&grid)?;
    let mut staged = Vec::new();
    for (name, bytes) in [("sparse_coding.json", text.as_bytes()), ("bases.png", &png[..])] {
        let path = args.out.join(name);
        let mut file = AtomicFile::create(&path)?;
        file.write_all(bytes).map_err(|e| format!("{}: cannot write the file ({e})", path.display()))?;
        file.finish_writing()?;
        staged.push(file);
    }
    staged.into_iter().try_for_each(AtomicFile::commit)
}

pub fn run(args: SparseCodingArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    check_args(&args)?;
    let engine = backend_choice::engine(args.backend)?;
    let solver_choice = args.solver.unwrap_or(if engine.is_gpu() { SolverChoice::Raina } else { SolverChoice::Cd });
    let inputs = read_inputs(&args)?;
    let cases = inputs.values.len() / inputs.width;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("--out {}: {e}", args.out.display()))?;
    let _lock = OutLock::acquire(&args.out)?;
    let mut basis = Basis::initialise(inputs.width, args.bases, args.seed).map_err(|e| e.to_string())?;
    let (beta, search): (f64, Option<SparsitySearch>) = match args.beta {
        Some(beta) => (beta, None),
        None => {
            let target = args.sparsity.unwrap_or(DEFAULT_SPARSITY);
            let sample = &inputs.values[..cases.min(SEARCH_CASES) * inputs.width];
            let search = beta_for_sparsity(&CpuBackend, &basis, sample, &SparsitySettings::new(target), &CodeSolver::coordinate_descent()).map_err(|e| format!("--sparsity {target}: {e}"))?;
            output.text(&format!("β {:.6} gives {:.2}% non-zero codes on {} cases ({} code steps)", search.beta, 100.0 * search.nonzero_fraction, search.cases, search.evaluations));
            (search.beta, Some(search))
        }
    };
    let settings = FitSettings { beta, solver: solver(solver_choice), basis_step: BasisStepSettings::default(), batch_size: args.batch, passes: args.passes, track_whole_set: true, statistics: args.statistics.rule() };
    let on_cpu = engine.sparse_coding_device(&settings).err().flatten();
    if let Some(why) = &on_cpu {
        eprintln!("notice: {why}; running on the CPU");
    }
    let side = if on_cpu.is_some() { "the CPU".to_string() } else { engine.describe() };
    output.text(&format!("sparse coding: {cases} cases of {} inputs, {} bases, β {beta:.6}, {} solver, batches of {}, {} statistics, {} passes, on {side}", inputs.width, args.bases, settings.solver.name(), args.batch, settings.statistics.name(), args.passes));
    let batches = cases.div_ceil(args.batch);
    let mut progress = |r: &BatchRecord| {
        output.text(&format!(
            "  pass {} batch {}/{batches}: objective {:.6} → {:.6}, {:.2}% non-zero, code iterations {:.1} (most {}{}), basis iterations {}, {:.2} + {:.2} s",
            r.pass,
            r.batch + 1,
            r.objective_after_codes,
            r.objective_after_basis,
            100.0 * r.nonzero_fraction,
            r.codes.iterations_mean,
            r.codes.iterations_max,
            if r.codes.unconverged > 0 { format!(", {} at the limit", r.codes.unconverged) } else { String::new() },
            r.basis_iterations,
            r.seconds_codes,
            r.seconds_basis,
        ));
        true
    };
    let mut codes = vec![0.0f32; cases * args.bases];
    let run = pollster::block_on(engine.fit_sparse_coding(&mut basis, &inputs.values, &mut codes, &settings, &mut progress))?;
    if let Some(notice) = run.notice.as_ref().filter(|&notice| Some(notice) != on_cpu.as_ref()) {
        eprintln!("notice: {notice}; it ran on the CPU");
    }
    let backend = if run.on_device { "gpu" } else { "cpu" };
    let report = run.report;
    let seconds: f64 = report.passes.iter().map(|p| p.seconds).sum();
    let saved = SavedSparseCoding {
        format: FORMAT.to_string(),
        n_inputs: basis.n_inputs,
        n_bases: basis.n_bases,
        tile: inputs.tile,
        settings: SavedSettings { beta, beta_search: search, solver: settings.solver, basis_step: settings.basis_step, batch_size: args.batch, passes: args.passes, statistics: settings.statistics, seed: args.seed },
        inputs: inputs.source,
        history: report.passes.clone(),
        batches: report.batches,
        seconds,
        basis: basis.values.clone(),
    };
    write_outputs(&args, &saved, &basis)?;
    let (first, last) = (report.passes.first().expect("pass 0").objective, report.passes.last().expect("a pass").objective);
    output.text(&format!(
        "objective {:.6} → {:.6} (reconstruction {:.6}, penalty {:.6}), {:.2}% non-zero codes, {seconds:.2} s; wrote {}",
        first.total,
        last.total,
        last.reconstruction,
        last.penalty,
        100.0 * last.nonzero_fraction,
        args.out.display()
    ));
    output.finish(&json!({
        "objective": last.total, "initial_objective": first.total, "reconstruction": last.reconstruction, "penalty": last.penalty,
        "nonzero_fraction": last.nonzero_fraction, "beta": beta, "passes": args.passes, "seconds": seconds, "solver": settings.solver.name(),
        "backend": backend,
    }));
    Ok(())
}
