//! `deepbelief autoencoder` (issue 17): trains one sparse autoencoder, the UFLDL exercise.
//! Inputs are either grey PNG images (`--images`, files or folders of `*.png`), cut into
//! `--patches` random `--patch × --patch` patches and normalised as UFLDL's `normalizeData`
//! (optionally ZCA-whitened after), or an MNIST IDX file (`--mnist`), whole images scaled to
//! [0, 1]. Writes `autoencoder.json` (settings, J and its terms, ρ̂, the parameters) and
//! `filters.png` (W1's columns, each tile scaled to its own max|w| as UFLDL's
//! `display_network`) into `--out`, each through a temporary file renamed into place.

use crate::backend_choice::{self, BackendChoice};
use crate::output::Output;
use clap::{Args, ValueEnum};
use deepbelief::autoencoder::lbfgs::LbfgsSettings;
use deepbelief::autoencoder::sgd::SgdSettings;
use deepbelief::autoencoder::{Autoencoder, CostSettings, Method, TrainReport};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::patches::{self, GreyImage, Zca};
use deepbelief::report::atomic::write_atomically;
use deepbelief::report::image_grid::{filters_of, tile_grey, Scaling};
use deepbelief::supervised::conjugate_gradient::CgSettings;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The version of `autoencoder.json`'s layout.
const FORMAT: &str = "deepbelief-autoencoder/1";
/// ZCA's ε, UFLDL's `epsilon = 0.1` for 8×8 patches.
const ZCA_EPSILON: f64 = 0.1;
/// The largest image side read from a PNG file, so a header cannot ask for an absurd buffer.
const MAX_IMAGE_SIDE: u32 = 16_384;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MethodChoice {
    Lbfgs,
    Cg,
    Sgd,
}

#[derive(Args, Debug)]
pub struct AutoencoderArgs {
    /// Grey PNG images (colour is averaged to grey) to cut patches from: files, or folders
    /// whose *.png files are all read.
    #[arg(long, value_name = "DIR_OR_FILE", num_args = 1.., conflicts_with = "mnist", required_unless_present = "mnist")]
    pub images: Vec<PathBuf>,
    /// An MNIST IDX image file (raw or gzip): whole images as inputs in [0, 1], no patches.
    #[arg(long, value_name = "IDX_FILE")]
    pub mnist: Option<PathBuf>,
    /// --images: the side of the square patches.
    #[arg(long, value_name = "PIXELS", default_value_t = 8)]
    pub patch: usize,
    /// --images: patches sampled; --mnist: the first this many images (at most the file's).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub patches: usize,
    /// Hidden units.
    #[arg(long, value_name = "N", default_value_t = 25)]
    pub hidden: usize,
    /// ρ, the target mean activation of each hidden unit.
    #[arg(long, value_name = "RHO", default_value_t = 0.01)]
    pub rho: f64,
    /// λ, the weight decay.
    #[arg(long, value_name = "LAMBDA", default_value_t = 1e-4)]
    pub lambda: f64,
    /// β, the weight of the sparsity penalty.
    #[arg(long, value_name = "BETA", default_value_t = 3.0)]
    pub beta: f64,
    /// L-BFGS or CG iterations, or SGD epochs.
    #[arg(long, value_name = "N", default_value_t = 400)]
    pub iterations: usize,
    /// The optimiser: full-batch L-BFGS (UFLDL's minFunc), conjugate gradient, or mini-batch SGD.
    #[arg(long, value_enum, default_value_t = MethodChoice::Lbfgs)]
    pub method: MethodChoice,
    /// --images: ZCA-whiten the normalised patches (ε = 0.1).
    #[arg(long)]
    pub zca: bool,
    /// Where the cost is computed: cpu, gpu, or auto (the GPU when an adapter exists).
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
    /// Seed of the patch sampling, the initial weights and SGD's order.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Folder for autoencoder.json and filters.png (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Print the summary as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
}

/// The training inputs, `rows × width`, and the tile shape of a filter.
struct Inputs {
    values: Vec<f32>,
    width: usize,
    tile: (usize, usize),
    source: serde_json::Value,
}

fn check_args(args: &AutoencoderArgs) -> Result<(), String> {
    if args.patch == 0 || args.patch > 64 {
        return Err(format!("--patch is {}, expected 1 to 64 pixels", args.patch));
    }
    if args.patches == 0 {
        return Err("--patches is 0, expected at least 1".into());
    }
    if args.hidden == 0 || args.hidden > deepbelief::train::config::MAX_HIDDEN {
        return Err(format!("--hidden is {}, expected 1 to {} units", args.hidden, deepbelief::train::config::MAX_HIDDEN));
    }
    if !(args.rho > 0.0 && args.rho < 1.0) {
        return Err(format!("--rho is {}, expected a number strictly between 0 and 1", args.rho));
    }
    if !(args.lambda >= 0.0 && args.lambda.is_finite()) {
        return Err(format!("--lambda is {}, expected a finite number ≥ 0", args.lambda));
    }
    if !(args.beta >= 0.0 && args.beta.is_finite()) {
        return Err(format!("--beta is {}, expected a finite number ≥ 0", args.beta));
    }
    if args.iterations == 0 {
        return Err("--iterations is 0, expected at least 1".into());
    }
    if args.zca && args.mnist.is_some() {
        return Err("--zca applies to --images patches, not to --mnist".into());
    }
    Ok(())
}

/// The PNG files named: each file as given, each folder's `*.png` in name order.
fn png_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|e| format!("--images {}: {e}", path.display()))?;
            let mut pngs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("png"))).collect();
            if pngs.is_empty() {
                return Err(format!("--images {}: the folder has no .png files", path.display()));
            }
            pngs.sort();
            files.extend(pngs);
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            return Err(format!("--images {}: no such file or folder", path.display()));
        }
    }
    Ok(files)
}

/// One PNG file as grey levels in [0, 1]: colour channels averaged, alpha ignored.
fn read_grey_png(path: &Path) -> Result<GreyImage, String> {
    let fail = |what: String| format!("--images {}: {what}", path.display());
    let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| fail(format!("not a readable PNG file ({e})")))?;
    let (width, height) = (reader.info().width, reader.info().height);
    if width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE {
        return Err(fail(format!("{width} × {height} pixels, expected at most {MAX_IMAGE_SIDE} on a side")));
    }
    let size = reader.output_buffer_size().ok_or_else(|| fail("the image is too large to decode".into()))?;
    let mut buffer = vec![0u8; size];
    let frame = reader.next_frame(&mut buffer).map_err(|e| fail(format!("not a readable PNG file ({e})")))?;
    let channels = frame.color_type.samples();
    let colour = match frame.color_type {
        png::ColorType::Grayscale | png::ColorType::GrayscaleAlpha => 1,
        png::ColorType::Rgb | png::ColorType::Rgba => 3,
        other => return Err(fail(format!("colour type {other:?} after expansion, expected grey or RGB"))),
    };
    let (rows, cols) = (frame.height as usize, frame.width as usize);
    let mut pixels = Vec::with_capacity(rows * cols);
    for row in buffer[..frame.buffer_size()].chunks_exact(frame.line_size) {
        for px in row[..cols * channels].chunks_exact(channels) {
            let sum: u32 = px[..colour].iter().map(|&b| u32::from(b)).sum();
            pixels.push(sum as f32 / (255.0 * colour as f32));
        }
    }
    Ok(GreyImage { rows, cols, pixels })
}

fn read_inputs(args: &AutoencoderArgs) -> Result<Inputs, String> {
    if let Some(path) = &args.mnist {
        let (values, width) = patches::read_unit_inputs(path, Some(args.patches)).map_err(|e| format!("--mnist {}: {e}", path.display()))?;
        let side = (width as f64).sqrt() as usize;
        let tile = if side * side == width { (side, side) } else { (1, width) };
        let cases = values.len() / width.max(1);
        return Ok(Inputs { values, width, tile, source: json!({ "mnist": path.display().to_string(), "cases": cases }) });
    }
    let files = png_files(&args.images)?;
    let images = files.iter().map(|f| read_grey_png(f)).collect::<Result<Vec<_>, _>>()?;
    let mut sampled = patches::sample_patches(&images, args.patch, args.patches, args.seed).map_err(|e| format!("--images: {e}"))?;
    let width = sampled.width();
    // Whitening comes first, as UFLDL's images were whitened before normalizeData: the mapping
    // to [0.1, 0.9] must be the last step, so the targets stay within a sigmoid's reach.
    if args.zca {
        let zca = Zca::fit(&CpuBackend, &sampled.values, width, ZCA_EPSILON).map_err(|e| format!("--zca: {e}"))?;
        sampled.values = zca.apply(&CpuBackend, &sampled.values);
    }
    let clip = patches::normalise_patches(&mut sampled).map_err(|e| format!("--images: {e}"))?;
    let values = sampled.values;
    let range = values.iter().fold([f32::INFINITY, f32::NEG_INFINITY], |[low, high], &v| [low.min(v), high.max(v)]);
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let source = json!({ "images": names, "patch": args.patch, "patches": args.patches, "clip": clip, "zca": args.zca, "range": range });
    Ok(Inputs { values, width, tile: (args.patch, args.patch), source })
}

fn method(args: &AutoencoderArgs) -> Method {
    match args.method {
        MethodChoice::Lbfgs => Method::Lbfgs(LbfgsSettings { max_iterations: args.iterations, max_evaluations: args.iterations.saturating_mul(5).max(1000), ..LbfgsSettings::default() }),
        MethodChoice::Cg => Method::ConjugateGradient(CgSettings { max_iterations: args.iterations, ..CgSettings::default() }),
        MethodChoice::Sgd => Method::Sgd(SgdSettings { epochs: args.iterations, seed: args.seed, ..SgdSettings::default() }),
    }
}

fn summary_of(values: &[f32]) -> serde_json::Value {
    let n = values.len().max(1) as f64;
    let mean = values.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
    let min = values.iter().copied().fold(f32::INFINITY, f32::min);
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    json!({ "mean": mean, "min": min, "max": max })
}

fn cost_json(cost: &deepbelief::autoencoder::Cost) -> serde_json::Value {
    json!({ "J": cost.total, "reconstruction": cost.reconstruction, "weight_decay": cost.weight_decay, "sparsity": cost.sparsity })
}

fn write_outputs(args: &AutoencoderArgs, inputs: &Inputs, model: &Autoencoder, report: &TrainReport, settings: &CostSettings, backend: &str, seconds: f64) -> Result<(), String> {
    std::fs::create_dir_all(&args.out).map_err(|e| format!("--out {}: {e}", args.out.display()))?;
    let document = json!({
        "format": FORMAT,
        "n_visible": model.n_visible,
        "n_hidden": model.n_hidden,
        "settings": {
            "rho": settings.sparsity_target, "lambda": settings.weight_decay, "beta": settings.sparsity_weight,
            "method": format!("{:?}", args.method).to_lowercase(), "iterations": args.iterations, "seed": args.seed, "backend": backend,
        },
        "inputs": inputs.source,
        "initial": cost_json(&report.initial),
        "final": cost_json(&report.last),
        "iterations": report.iterations,
        "evaluations": report.evaluations,
        "stop": report.stop,
        "history": report.history,
        "seconds": seconds,
        "mean_activation": summary_of(&report.last.mean_activation),
        "parameters": { "W1": model.w1, "b1": model.b1, "W2": model.w2, "b2": model.b2 },
    });
    let text = serde_json::to_string(&document).map_err(|e| e.to_string())?;
    write_atomically(&args.out.join("autoencoder.json"), text.as_bytes())?;
    let filters = filters_of(&model.w1, model.n_visible, model.n_hidden, model.n_hidden);
    let columns = (model.n_hidden as f64).sqrt().ceil() as usize;
    let grid = tile_grey(&filters, model.n_hidden, inputs.tile, columns.max(1), Scaling::SymmetricPerTile);
    deepbelief::report::png::write_grey_png(&args.out.join("filters.png"), &grid)
}

pub fn run(args: AutoencoderArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    check_args(&args)?;
    let settings = CostSettings { weight_decay: args.lambda, sparsity_target: args.rho, sparsity_weight: args.beta };
    let inputs = read_inputs(&args)?;
    let cases = inputs.values.len() / inputs.width;
    let engine = backend_choice::engine(args.backend)?;
    let backend = if engine.is_gpu() { "gpu" } else { "cpu" };
    output.text(&format!("sparse autoencoder {}→{}→{} on {cases} cases, {:?} on {}", inputs.width, args.hidden, inputs.width, args.method, engine.describe()));
    let mut model = Autoencoder::initialise(inputs.width, args.hidden, args.seed);
    let start = Instant::now();
    let mut progress = |iteration: usize, value: f64| {
        if iteration % 50 == 0 {
            output.text(&format!("  iteration {iteration}: J {value:.6}"));
        }
        true
    };
    let report = engine.train_autoencoder(&mut model, &inputs.values, &settings, &method(&args), &mut progress)?;
    let seconds = start.elapsed().as_secs_f64();
    write_outputs(&args, &inputs, &model, &report, &settings, backend, seconds)?;
    let last = &report.last;
    output.text(&format!(
        "J {:.6} → {:.6} (reconstruction {:.6}, weight decay {:.6}, sparsity {:.6}) after {} iterations ({}), {seconds:.2} s; wrote {}",
        report.initial.total, last.total, last.reconstruction, last.weight_decay, last.sparsity, report.iterations, report.stop, args.out.display()
    ));
    output.finish(&json!({
        "J": last.total, "reconstruction": last.reconstruction, "weight_decay": last.weight_decay, "sparsity": last.sparsity,
        "iterations": report.iterations, "seconds": seconds, "backend": backend,
    }));
    Ok(())
}
