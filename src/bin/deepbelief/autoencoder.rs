//! `deepbelief autoencoder` (issue 17): sparse autoencoders as in Stanford's UFLDL.
//!
//! - One autoencoder on image patches (`--images`, the sparse-autoencoder exercise) or on IDX
//!   images (`--mnist`, inputs in [0, 1]);
//! - a stack trained greedily (`--layers 200,200`): layer k on layer k − 1's hidden
//!   activations;
//! - with `--labels`, a SoftMax over the labelled classes (`--classes`) on the top features,
//!   then with `--fine-tune` the encoders and the SoftMax together by backprop (the
//!   stacked-autoencoder exercise);
//! - with `--unlabelled IMAGES` the autoencoders train on those images (`--unlabelled-classes`
//!   with `--unlabelled-labels` keeps some classes) and the SoftMax on the features of the
//!   labelled `--mnist` ones (the self-taught learning exercise).
//!
//! Writes `model.json` (docs/MODEL_FORMAT.md, "deepbelief-autoencoder/2"), `filters.png`
//! (the first layer's W1 columns, each tile scaled to its own max|w| as UFLDL's
//! `display_network`) and `AUTOENCODER.LOG` into `--out`: all three are written in full
//! before any is put in place, so a failed run leaves the folder as it was.

use crate::autoencoder_inputs::{read_idx, read_patches, ClassList, Images};
use crate::autoencoder_supervised::{self as supervised, SupervisedOptions, SupervisedResult};
use crate::backend_choice::{self, BackendChoice};
use crate::out_lock::OutLock;
use crate::output::Output;
use clap::{Args, ValueEnum};
use deepbelief::autoencoder::stack::{AutoencoderStack, LayerSettings, MethodName};
use deepbelief::autoencoder::CostSettings;
use deepbelief::format::autoencoder::{to_json_checked, SavedAutoencoder};
use deepbelief::report::atomic::AtomicFile;
use deepbelief::report::autoencoder_log::{AutoencoderLog, StageLog, SupervisedLog};
use deepbelief::report::image_grid::{filters_of, tile_grey, Scaling};
use deepbelief::report::png::encode_grey_png;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// The model file's name in `--out`.
pub const MODEL_FILE: &str = "model.json";
pub const LOG_FILE: &str = "AUTOENCODER.LOG";
/// Filters drawn in filters.png at most.
const FILTERS_SHOWN: usize = 400;

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
    /// An IDX image file (MNIST; raw or gzip): whole images as inputs in [0, 1], no patches.
    /// With --unlabelled, the labelled images the SoftMax trains on.
    #[arg(long, value_name = "IDX_FILE")]
    pub mnist: Option<PathBuf>,
    /// --images: the side of the square patches.
    #[arg(long, value_name = "PIXELS", default_value_t = 8)]
    pub patch: usize,
    /// --images: patches sampled; --mnist and --unlabelled: the first this many images of each
    /// (before --classes / --unlabelled-classes pick among them).
    #[arg(long, visible_alias = "cases", value_name = "N", default_value_t = 10_000)]
    pub patches: usize,
    /// Hidden units of a single autoencoder [default: 25 with --images, 196 with --mnist].
    #[arg(long, value_name = "N", conflicts_with = "layers")]
    pub hidden: Option<usize>,
    /// Hidden units of each layer of a stack, bottom up, e.g. 200,200.
    #[arg(long, value_name = "N,N,…", value_delimiter = ',', num_args = 1..)]
    pub layers: Vec<usize>,
    /// ρ, the target mean activation of each hidden unit [default: 0.01 with --images, UFLDL's
    /// patch exercise; 0.1 with --mnist, its MNIST exercises].
    #[arg(long, value_name = "RHO")]
    pub rho: Option<f64>,
    /// λ, the weight decay [default: 1e-4 with --images, 3e-3 with --mnist].
    #[arg(long, value_name = "LAMBDA")]
    pub lambda: Option<f64>,
    /// β, the weight of the sparsity penalty.
    #[arg(long, value_name = "BETA", default_value_t = 3.0)]
    pub beta: f64,
    /// L-BFGS or CG iterations, or SGD epochs, of each layer.
    #[arg(long, value_name = "N", default_value_t = 400)]
    pub iterations: usize,
    /// The optimiser: full-batch L-BFGS (UFLDL's minFunc), conjugate gradient, or mini-batch SGD.
    #[arg(long, value_enum, default_value_t = MethodChoice::Lbfgs)]
    pub method: MethodChoice,
    /// --images: ZCA-whiten the patches (ε = 0.1) before normalising them.
    #[arg(long)]
    pub zca: bool,
    /// IDX labels of --mnist: train a SoftMax over the labelled classes on the top features.
    #[arg(long, value_name = "IDX_FILE", requires = "mnist")]
    pub labels: Option<PathBuf>,
    /// The labelled classes the SoftMax learns, e.g. 0-4 (other cases are left out) [default: all].
    #[arg(long, value_name = "CLASSES", requires = "labels")]
    pub classes: Option<ClassList>,
    /// IDX images the autoencoders train on instead of --mnist (self-taught learning).
    #[arg(long, value_name = "IDX_FILE", requires = "labels")]
    pub unlabelled: Option<PathBuf>,
    /// IDX labels of --unlabelled, used only to pick --unlabelled-classes.
    #[arg(long, value_name = "IDX_FILE", requires = "unlabelled")]
    pub unlabelled_labels: Option<PathBuf>,
    /// The classes of --unlabelled kept for the autoencoders, e.g. 5-9.
    #[arg(long, value_name = "CLASSES", requires = "unlabelled_labels")]
    pub unlabelled_classes: Option<ClassList>,
    /// Iterations of the SoftMax's conjugate gradient (UFLDL's softmaxTrain runs 100).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub supervised_iterations: usize,
    /// UFLDL's λ on the SoftMax weights, (λ/2)·Σw².
    #[arg(long, value_name = "LAMBDA", default_value_t = 1e-4)]
    pub softmax_lambda: f64,
    /// After the SoftMax, fine-tune the encoders and the SoftMax together by backprop.
    #[arg(long, requires = "labels")]
    pub fine_tune: bool,
    /// Iterations of fine-tuning's conjugate gradient (UFLDL's exercise runs 400 of L-BFGS).
    #[arg(long, value_name = "N", default_value_t = 400)]
    pub fine_tune_iterations: usize,
    /// IDX test images: each supervised stage is scored on them too (AUTOENCODER.LOG).
    #[arg(long, value_name = "IDX_FILE", requires_all = ["labels", "test_labels"])]
    pub test_images: Option<PathBuf>,
    /// IDX labels of --test-images.
    #[arg(long, value_name = "IDX_FILE", requires = "test_images")]
    pub test_labels: Option<PathBuf>,
    /// Where the cost is computed: cpu, gpu, or auto (the GPU when an adapter exists).
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
    /// Seed of the patch sampling, the initial weights (layer k: seed + k − 1) and SGD's order.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Folder for model.json, filters.png and AUTOENCODER.LOG (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Print the summary as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
}

/// The layers' settings, every value checked and named by its flag.
fn layer_settings(args: &AutoencoderArgs) -> Result<Vec<LayerSettings>, String> {
    let mnist = args.mnist.is_some();
    if args.patch == 0 || args.patch > 64 {
        return Err(format!("--patch is {}, expected 1 to 64 pixels", args.patch));
    }
    if args.patches == 0 {
        return Err("--patches is 0, expected at least 1".into());
    }
    let sizes = if args.layers.is_empty() { vec![args.hidden.unwrap_or(if mnist { 196 } else { 25 })] } else { args.layers.clone() };
    let flag = if args.layers.is_empty() { "--hidden" } else { "--layers" };
    if let Some(&bad) = sizes.iter().find(|&&n| n == 0 || n > deepbelief::train::config::MAX_HIDDEN) {
        return Err(format!("{flag} is {bad}, expected 1 to {} units", deepbelief::train::config::MAX_HIDDEN));
    }
    let rho = args.rho.unwrap_or(if mnist { 0.1 } else { 0.01 });
    let lambda = args.lambda.unwrap_or(if mnist { 3e-3 } else { 1e-4 });
    if !(rho > 0.0 && rho < 1.0) {
        return Err(format!("--rho is {rho}, expected a number strictly between 0 and 1"));
    }
    if !(lambda >= 0.0 && lambda.is_finite()) {
        return Err(format!("--lambda is {lambda}, expected a finite number ≥ 0"));
    }
    if !(args.beta >= 0.0 && args.beta.is_finite()) {
        return Err(format!("--beta is {}, expected a finite number ≥ 0", args.beta));
    }
    for (flag, value) in [("--iterations", args.iterations), ("--supervised-iterations", args.supervised_iterations), ("--fine-tune-iterations", args.fine_tune_iterations)] {
        if value == 0 {
            return Err(format!("{flag} is 0, expected at least 1"));
        }
    }
    if !(args.softmax_lambda >= 0.0 && args.softmax_lambda.is_finite()) {
        return Err(format!("--softmax-lambda is {}, expected a finite number ≥ 0", args.softmax_lambda));
    }
    if args.zca && mnist {
        return Err("--zca applies to --images patches, not to --mnist".into());
    }
    for (flag, list) in [("--classes", &args.classes), ("--unlabelled-classes", &args.unlabelled_classes)] {
        if list.as_ref().is_some_and(|c| c.0.is_empty()) {
            return Err(format!("{flag} names no classes"));
        }
    }
    let method = match args.method {
        MethodChoice::Lbfgs => MethodName::Lbfgs,
        MethodChoice::Cg => MethodName::ConjugateGradient,
        MethodChoice::Sgd => MethodName::Sgd,
    };
    let cost = CostSettings { weight_decay: lambda, sparsity_target: rho, sparsity_weight: args.beta };
    Ok(sizes.iter().enumerate().map(|(k, &n_hidden)| LayerSettings { n_hidden, cost, method, iterations: args.iterations, seed: args.seed.wrapping_add(k as u64) }).collect())
}

/// The inputs of the autoencoders, the labelled images (with --labels) and the test images.
struct RunData {
    pretraining: Images,
    labelled: Option<Images>,
    test: Option<Images>,
}

fn read_data(args: &AutoencoderArgs) -> Result<RunData, String> {
    let Some(mnist) = &args.mnist else {
        return Ok(RunData { pretraining: read_patches(&args.images, args.patch, args.patches, args.zca, args.seed)?, labelled: None, test: None });
    };
    let main = read_idx(mnist, args.labels.as_deref(), args.patches, args.classes.as_ref(), ["--mnist", "--labels", "--classes"])?;
    let test = match (&args.test_images, &args.test_labels) {
        (Some(images), Some(labels)) => Some(read_idx(images, Some(labels), usize::MAX, None, ["--test-images", "--test-labels", ""])?),
        _ => None,
    };
    if let Some(t) = &test {
        if t.width != main.width {
            return Err(format!("--test-images: {} inputs per image, but --mnist has {}", t.width, main.width));
        }
    }
    let Some(unlabelled) = &args.unlabelled else {
        let labelled = main.labels.is_some().then(|| Images { values: main.values.clone(), labels: main.labels.clone(), record: main.record.clone(), preprocessing: main.preprocessing.clone(), ..main });
        // The label file picked the pretraining cases only where --classes kept some.
        let mut record = main.record.clone();
        record.files.truncate(if args.classes.is_some() { 2 } else { 1 });
        let pretraining = Images { labels: None, record, ..main };
        return Ok(RunData { pretraining, labelled, test });
    };
    let pretraining = read_idx(unlabelled, args.unlabelled_labels.as_deref(), args.patches, args.unlabelled_classes.as_ref(), ["--unlabelled", "--unlabelled-labels", "--unlabelled-classes"])?;
    if pretraining.width != main.width {
        return Err(format!("--unlabelled: {} inputs per image, but --mnist has {}", pretraining.width, main.width));
    }
    Ok(RunData { pretraining: Images { labels: None, ..pretraining }, labelled: Some(main), test })
}

fn filters_png(stack: &AutoencoderStack, tile: (usize, usize)) -> Result<Vec<u8>, String> {
    let first = &stack.layers[0].autoencoder;
    let shown = first.n_hidden.min(FILTERS_SHOWN);
    let filters = filters_of(&first.w1, first.n_visible, first.n_hidden, shown);
    let columns = (shown as f64).sqrt().ceil() as usize;
    encode_grey_png(&tile_grey(&filters, shown, tile, columns.max(1), Scaling::SymmetricPerTile))
}

/// Writes the three files, each in full under a temporary name, then renames them in place.
fn write_outputs(args: &AutoencoderArgs, model: &SavedAutoencoder, log: &str, width: usize) -> Result<(), String> {
    let model_text = to_json_checked(model).map_err(|e| format!("{}: {e}; nothing was written", args.out.join(MODEL_FILE).display()))?;
    let tile = model.preprocessing.image_shape().unwrap_or((1, width));
    let png = filters_png(&model.stack, tile)?;
    let mut staged = Vec::new();
    for (name, bytes) in [(MODEL_FILE, model_text.as_bytes()), ("filters.png", &png), (LOG_FILE, log.as_bytes())] {
        let path = args.out.join(name);
        let mut file = AtomicFile::create(&path)?;
        file.write_all(bytes).map_err(|e| format!("{}: cannot write the file ({e})", path.display()))?;
        file.finish_writing()?;
        staged.push(file);
    }
    staged.into_iter().try_for_each(AtomicFile::commit)
}

pub fn run(args: AutoencoderArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    let start = Instant::now();
    let layers = layer_settings(&args)?;
    let data = read_data(&args)?;
    let engine = backend_choice::engine(args.backend)?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("--out {}: cannot create the folder ({e})", args.out.display()))?;
    let _lock = OutLock::acquire(&args.out)?;
    let (inputs, width) = (&data.pretraining.values, data.pretraining.width);
    let sizes: Vec<String> = std::iter::once(width).chain(layers.iter().map(|l| l.n_hidden)).map(|n| n.to_string()).collect();
    output.text(&format!("sparse autoencoders {} on {} cases, {:?} on {}", sizes.join("-"), data.pretraining.cases(), args.method, engine.describe()));
    let mut progress = |layer: usize, iteration: usize, value: f64| {
        if iteration.is_multiple_of(50) {
            output.text(&format!("  layer {} iteration {iteration}: J {value:.6}", layer + 1));
        }
        true
    };
    let mut stack = engine.pretrain_autoencoders(inputs, width, &layers, &mut progress)?;
    for (k, layer) in stack.layers.iter().enumerate() {
        let r = layer.record.as_ref().expect("trained here");
        output.text(&format!(
            "layer {}: J {:.6} → {:.6} (reconstruction {:.6}, weight decay {:.6}, sparsity {:.6}) after {} iterations ({}), ρ̂ mean {:.4}, {:.1} s",
            k + 1, r.initial.total, r.last.total, r.last.reconstruction, r.last.weight_decay, r.last.sparsity, r.iterations, r.stop, r.mean_activation.mean, r.seconds
        ));
    }
    let supervised: Option<SupervisedResult> = match &data.labelled {
        Some(labelled) => {
            let options = SupervisedOptions { iterations: args.supervised_iterations, lambda: args.softmax_lambda, fine_tune: args.fine_tune, fine_tune_iterations: args.fine_tune_iterations, seed: args.seed };
            Some(supervised::run(engine.backend().as_ref(), &mut stack, labelled, data.test.as_ref(), &options, output)?)
        }
        None => None,
    };
    let model = SavedAutoencoder {
        preprocessing: data.pretraining.preprocessing.clone(),
        pretraining_data: data.pretraining.record.clone(),
        stack,
        supervised_data: supervised.as_ref().map(|s| s.data.clone()),
        supervised: supervised.as_ref().map(|s| s.saved.clone()),
    };
    let seconds = start.elapsed().as_secs_f64();
    let log = AutoencoderLog {
        program: format!("deepbelief {}", env!("CARGO_PKG_VERSION")),
        computed_on: engine.describe(),
        preprocessing: &model.preprocessing,
        pretraining_data: &model.pretraining_data,
        stack: &model.stack,
        supervised: supervised.as_ref().zip(model.supervised.as_ref()).map(|(s, saved)| SupervisedLog {
            saved,
            data: &s.data,
            penalty: s.penalty.clone(),
            stages: s.stages.iter().map(|stage| StageLog { name: stage.name, report: &stage.report, train: &stage.train, test: stage.test.as_ref() }).collect(),
            test: s.test.clone(),
        }),
        total_seconds: seconds,
    };
    write_outputs(&args, &model, &log.render(), width)?;
    output.text(&format!("{seconds:.1} s; wrote {MODEL_FILE}, filters.png and {LOG_FILE} into {}", args.out.display()));
    finish(output, &model, supervised.as_ref(), if engine.is_gpu() { "gpu" } else { "cpu" }, seconds);
    Ok(())
}

/// The `--json` summary: the top layer's J and terms (for one layer, the layer's), every
/// layer's figures, and each supervised stage's.
fn finish(output: Output, model: &SavedAutoencoder, supervised: Option<&SupervisedResult>, backend: &str, seconds: f64) {
    let records: Vec<_> = model.stack.layers.iter().filter_map(|l| l.record.as_ref()).collect();
    let top = records.last().expect("every layer was trained here");
    let layers: Vec<_> = records
        .iter()
        .map(|r| json!({ "J": r.last.total, "initial_J": r.initial.total, "reconstruction": r.last.reconstruction, "weight_decay": r.last.weight_decay, "sparsity": r.last.sparsity, "iterations": r.iterations, "stop": r.stop, "rho_mean": r.mean_activation.mean, "seconds": r.seconds }))
        .collect();
    let stages: Vec<_> = supervised
        .map(|s| {
            s.stages
                .iter()
                .map(|st| {
                    let error = |e: &deepbelief::supervised::evaluation::Evaluation| e.confusion.as_ref().map(|c| c.error_fraction());
                    json!({ "stage": st.name, "iterations": st.report.iterations, "criterion": st.report.final_criterion, "seconds": st.report.seconds, "train_error": error(&st.train), "test_error": st.test.as_ref().map(error) })
                })
                .collect()
        })
        .unwrap_or_default();
    output.finish(&json!({
        "J": top.last.total, "reconstruction": top.last.reconstruction, "weight_decay": top.last.weight_decay, "sparsity": top.last.sparsity,
        "iterations": top.iterations, "seconds": seconds, "backend": backend, "sizes": model.stack.sizes(), "layers": layers, "supervised": stages,
    }));
}
