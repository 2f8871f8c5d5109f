//! `deepbelief mlp` (issue 21): a plain all-sigmoid MLP (no RBM layers) trained full batch
//! by Toman's adaptive step sizes with robust training, or by FANN's rules (iRprop+, FANN's
//! iRprop−, Quickprop, batch or incremental back-propagation), the bold driver, or the
//! supervised stage's CG. Data: MNIST IDX images and labels (pixels / 255, one-hot 0/1
//! targets) or Toman's text format (`--toman-data`). `--weights` resumes from a saved
//! mlp.json. Writes mlp.json (`deepbelief-mlp/1`, also every `--checkpoint-every` epochs),
//! errors.csv (every epoch) and MLP.LOG (settings, errors, stage timers) into `--out`,
//! each through a temporary file and a rename. docs/TOMAN.md describes it all.

use crate::backend_choice::{self, BackendChoice};
use crate::out_lock::OutLock;
use crate::output::Output;
use clap::{Args, ValueEnum};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::Backend;
use deepbelief::data::idx::{read_idx_images, read_idx_labels};
use deepbelief::format::mlp::{self, SavedMlp, FORMAT};
use deepbelief::report::atomic::write_atomically;
use deepbelief::supervised::criterion::{Cases, StageSeconds};
use deepbelief::supervised::full_batch::{rms_half, uniform_start, EpochRecord, FullBatchSettings, StepNote};
use deepbelief::supervised::held_out::arg_max;
use deepbelief::supervised::optimise::{optimise, Method};
use deepbelief::supervised::toman_text::{parse_toman_text, to_toman_text, TomanData, Variable};
use deepbelief::supervised::{Network, Optimizer, OutputKind, StepRuleSettings};
use serde_json::json;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MlpOptimizer {
    /// Toman's per-weight adaptive steps with momentum and robust-training rollback.
    Adaptive,
    /// iRprop+ with FANN's parameters.
    Rprop,
    /// FANN 2.2's own RPROP (iRprop−).
    RpropFann,
    /// Quickprop as FANN 2.2 computes it.
    Quickprop,
    /// Bold driver: one rate, up after a better epoch, step undone and rate down after a worse.
    BoldDriver,
    /// Full-batch gradient descent with momentum.
    Backprop,
    /// Case-by-case gradient descent with momentum, in data order.
    Incremental,
    /// Full-batch Polak–Ribière conjugate gradient (the supervised stage's).
    Cg,
    /// Levenberg–Marquardt (small nets only: cases × outputs × parameters ≤ 20 million).
    Lm,
}

impl MlpOptimizer {
    fn optimizer(self) -> Optimizer {
        match self {
            MlpOptimizer::Adaptive => Optimizer::AdaptiveStep,
            MlpOptimizer::Rprop => Optimizer::Rprop,
            MlpOptimizer::RpropFann => Optimizer::RpropMinus,
            MlpOptimizer::Quickprop => Optimizer::Quickprop,
            MlpOptimizer::BoldDriver => Optimizer::BoldDriver,
            MlpOptimizer::Backprop => Optimizer::Backprop,
            MlpOptimizer::Incremental => Optimizer::Incremental,
            MlpOptimizer::Cg => Optimizer::ConjugateGradient,
            MlpOptimizer::Lm => Optimizer::LevenbergMarquardt,
        }
    }
}

#[derive(Args, Debug)]
pub struct MlpArgs {
    /// Layer sizes, inputs to outputs, e.g. 784,25,15,10 (Toman's); every unit logistic.
    /// Taken from --weights when resuming.
    #[arg(long, value_name = "SIZES", required_unless_present = "weights")]
    pub layers: Option<String>,
    /// MNIST IDX images (raw or gzip): pixels / 255 as inputs.
    #[arg(long, value_name = "IDX_FILE", requires = "labels", required_unless_present = "toman_data", conflicts_with = "toman_data")]
    pub images: Option<PathBuf>,
    /// MNIST IDX labels of --images: one-hot targets (1 for the class, 0 elsewhere).
    #[arg(long, value_name = "IDX_FILE")]
    pub labels: Option<PathBuf>,
    /// A data set in Toman's text format (inputs | outputs per pattern).
    #[arg(long, value_name = "FILE")]
    pub toman_data: Option<PathBuf>,
    /// Use only the first N cases.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Also write the cases in Toman's text format to FILE (e.g. for FANN or his program).
    #[arg(long, value_name = "FILE")]
    pub write_toman_data: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = MlpOptimizer::Adaptive)]
    pub optimizer: MlpOptimizer,
    /// Epochs at most (CG: iterations); 0 only loads, converts and scores.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub epochs: usize,
    /// Stop once Toman's error (RMS/2) is at most this (0: run every epoch).
    #[arg(long, value_name = "E", default_value_t = 0.0)]
    pub target_error: f64,
    /// Adaptive step: rate factor when a gradient keeps its sign [1.3].
    #[arg(long, value_name = "F")]
    pub up: Option<f64>,
    /// Adaptive step: rate factor when it changes sign [0.7].
    #[arg(long, value_name = "F")]
    pub down: Option<f64>,
    /// Adaptive step: every weight's first rate [0.5].
    #[arg(long, value_name = "R")]
    pub initial_rate: Option<f64>,
    /// Adaptive step: the largest rate [10].
    #[arg(long, value_name = "R")]
    pub max_step: Option<f64>,
    /// Momentum of adaptive, backprop, incremental and bold driver [0.7].
    #[arg(long, value_name = "M")]
    pub momentum: Option<f64>,
    /// Adaptive step: no robust training (no best weights, no rollback).
    #[arg(long)]
    pub no_robust: bool,
    /// Robust training: roll back when the error reaches best × this [1.02].
    #[arg(long, value_name = "G")]
    pub max_error_growth: Option<f64>,
    /// Robust training: rates × this on a rollback [0.5].
    #[arg(long, value_name = "F")]
    pub robust_factor: Option<f64>,
    /// Backprop, incremental and Quickprop's rate; the bold driver's first [0.7].
    #[arg(long, value_name = "R")]
    pub learning_rate: Option<f64>,
    /// Take logistic derivatives as FANN 2.2 does (the unit's value clipped to [0.01, 0.99]),
    /// for epoch-by-epoch parity with FANN; without it, the exact gradient.
    #[arg(long)]
    pub fann_derivative_clip: bool,
    /// Starting weights and biases uniform in ±RANGE [0.1, FANN's].
    #[arg(long, value_name = "RANGE", default_value_t = 0.1)]
    pub init_range: f64,
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Resume from a saved mlp.json (its weights; the rule starts afresh).
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    /// Save mlp.json every N epochs as well as at the end (0: only at the end).
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub checkpoint_every: usize,
    /// Folder for mlp.json, errors.csv and MLP.LOG (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Where to train: `gpu` runs Toman's adaptive rule resident on the device (the other
    /// rules: their products on the device, the rule on the host); a lost device continues on
    /// the CPU from the last weights read back.
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
    /// Print the summary as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
    /// With --backend gpu and the adaptive rule: instead of training, time each dispatch of
    /// an epoch on the device (GPU timestamps, one pass per dispatch, 8 epochs after 2 to warm
    /// up) and the epoch with all of a submission's epochs in one pass; prints the table
    /// (with --json, one JSON object). Needs the adapter's timestamp queries.
    #[arg(long)]
    pub profile: bool,
}

/// `--profile`: the device's per-dispatch times of an epoch of `net` on `cases`.
fn profile(engine: &deepbelief::engine::Engine, net: &Network, cases: Cases, rules: &StepRuleSettings, output: &Output) -> Result<(), String> {
    use deepbelief::gpu::mlp::{DeviceMlp, MlpKernels};
    let deepbelief::engine::Engine::Gpu(ctx) = engine else {
        return Err("--profile times the device: add --backend gpu".into());
    };
    let kernels = MlpKernels::new(ctx);
    let mut device = DeviceMlp::new(ctx, &kernels, net, cases.inputs, cases.targets, rules).map_err(|e| e.to_string())?;
    pollster::block_on(device.run_epochs(2)).map_err(|e| e.to_string())?;
    let report = pollster::block_on(device.profile(8)).map_err(|e| format!("--profile: {e}"))?;
    output.text(&format!("profile of one epoch ({} dispatches; mean of {} epochs, each step in its own pass):", report.dispatches_per_epoch, report.epochs));
    for step in &report.steps {
        output.text(&format!("  {:>9.1} µs  {}{}", step.microseconds, step.label, if step.dispatches > 1 { format!(" ({} dispatches)", step.dispatches) } else { String::new() }));
    }
    output.text(&format!("  {:>9.1} µs  sum of the steps", report.step_sum_us));
    output.text(&format!("  {:>9.1} µs  per epoch with {} epochs in one pass (as training records them)", report.one_pass_us, report.epochs));
    if output.json {
        println!("{}", serde_json::to_string(&report).map_err(|e| e.to_string())?);
    }
    Ok(())
}

fn parse_sizes(text: &str) -> Result<Vec<usize>, String> {
    let sizes: Vec<usize> = text
        .split(',')
        .map(|p| match p.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!("--layers: \"{}\" is not a layer size (expected whole numbers ≥ 1 separated by commas, e.g. 784,25,15,10)", p.trim())),
        })
        .collect::<Result<_, _>>()?;
    if sizes.len() < 2 {
        return Err("--layers: expected at least inputs and outputs, e.g. 784,25,15,10".into());
    }
    Ok(sizes)
}

fn step_rules(args: &MlpArgs) -> Result<StepRuleSettings, String> {
    let mut s = StepRuleSettings::default();
    let fields: [(Option<f64>, &mut f64, &str); 8] = [
        (args.up, &mut s.up, "--up"),
        (args.down, &mut s.down, "--down"),
        (args.initial_rate, &mut s.initial_rate, "--initial-rate"),
        (args.max_step, &mut s.max_step, "--max-step"),
        (args.momentum, &mut s.momentum, "--momentum"),
        (args.max_error_growth, &mut s.max_error_growth, "--max-error-growth"),
        (args.robust_factor, &mut s.robust_factor, "--robust-factor"),
        (args.learning_rate, &mut s.learning_rate, "--learning-rate"),
    ];
    for (value, field, _) in fields {
        if let Some(v) = value {
            *field = v;
        }
    }
    s.robust = !args.no_robust;
    s.fann_derivative_clip = args.fann_derivative_clip;
    s.target_error = args.target_error;
    s.validate().map_err(|e| {
        let flag = e.field.trim_start_matches("step_rules.").replace('_', "-");
        format!("invalid setting {} (--{flag}): {}", e.field, e.message)
    })?;
    Ok(s)
}

/// The cases, one-hot for IDX labels.
fn load(args: &MlpArgs) -> Result<(TomanData, String), String> {
    if let Some(path) = &args.toman_data {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read the file ({e})", path.display()))?;
        let data = parse_toman_text(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok((data, path.display().to_string()));
    }
    let (images_path, labels_path) = (args.images.as_ref().expect("clap requires one"), args.labels.as_ref().expect("clap requires it"));
    let images = read_idx_images(images_path).map_err(|e| format!("{}: {e}", images_path.display()))?;
    let labels = read_idx_labels(labels_path).map_err(|e| format!("{}: {e}", labels_path.display()))?;
    if labels.len() != images.count {
        return Err(format!("{}: {} labels for {} images in {}", labels_path.display(), labels.len(), images.count, images_path.display()));
    }
    let classes = labels.iter().copied().max().map_or(0, |m| m as usize + 1).max(10);
    let width = images.rows * images.cols;
    let inputs = images.pixels.iter().map(|&b| f32::from(b) / 255.0).collect();
    let mut targets = vec![0.0f32; labels.len() * classes];
    for (case, &label) in labels.iter().enumerate() {
        targets[case * classes + label as usize] = 1.0;
    }
    let unit = |prefix: &str, n: usize| (0..n).map(|k| Variable { name: format!("{prefix}{k}"), min: 0.0, max: 1.0 }).collect();
    Ok((TomanData { inputs_described: unit("pixel", width), outputs_described: unit("class", classes), inputs, targets }, images_path.display().to_string()))
}

fn misclassified(net: &Network, backend: &dyn Backend, cases: Cases) -> f64 {
    let outputs = net.predict(backend, cases.inputs);
    let wrong = outputs.chunks(cases.n_outputs).zip(cases.targets.chunks(cases.n_outputs)).filter(|(o, t)| arg_max(o) != arg_max(t)).count();
    wrong as f64 / cases.n_cases().max(1) as f64
}

fn save(out: &Path, saved: &SavedMlp) -> Result<(), String> {
    write_atomically(&out.join("mlp.json"), mlp::to_json(saved)?.as_bytes())
}

pub fn run(args: MlpArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    let rules = step_rules(&args)?;
    if !(args.init_range.is_finite() && args.init_range > 0.0 && args.init_range <= 100.0) {
        return Err(format!("--init-range is {}, expected a finite number in (0, 100]", args.init_range));
    }
    let resumed = args.weights.as_ref().map(|p| mlp::read(p)).transpose()?;
    let sizes = match (&args.layers, &resumed) {
        (Some(text), Some(saved)) => {
            let sizes = parse_sizes(text)?;
            if sizes != saved.network.sizes() {
                return Err(format!("--layers {text} differs from the saved net's {:?} in {}", saved.network.sizes(), args.weights.as_ref().expect("resumed").display()));
            }
            sizes
        }
        (Some(text), None) => parse_sizes(text)?,
        (None, Some(saved)) => saved.network.sizes(),
        (None, None) => unreachable!("clap requires --layers without --weights"),
    };
    let (mut data, source) = load(&args)?;
    if let Some(limit) = args.limit {
        let n = limit.min(data.n_patterns()).max(1);
        data.inputs.truncate(n * data.n_inputs());
        data.targets.truncate(n * data.n_outputs());
    }
    if data.n_inputs() != sizes[0] || data.n_outputs() != *sizes.last().expect("two sizes") {
        return Err(format!("{source}: {} inputs and {} outputs per case; the net {:?} takes {} and gives {}", data.n_inputs(), data.n_outputs(), sizes, sizes[0], sizes.last().expect("two sizes")));
    }
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: cannot create the output folder ({e})", args.out.display()))?;
    let _lock = OutLock::acquire(&args.out)?;
    if let Some(path) = &args.write_toman_data {
        write_atomically(path, to_toman_text(&data).as_bytes())?;
    }
    let backend = CpuBackend;
    let engine = backend_choice::engine(args.backend)?;
    let cases = Cases { inputs: &data.inputs, targets: &data.targets, n_inputs: data.n_inputs(), n_outputs: data.n_outputs() };
    let (mut net, epochs_before) = match &resumed {
        Some(saved) => (saved.network.clone(), saved.epochs),
        None => {
            let mut net = Network::zeros(&sizes, OutputKind::Logistic);
            uniform_start(&mut net, args.init_range, args.seed);
            (net, 0)
        }
    };
    if net.output != OutputKind::Logistic {
        return Err(format!("{}: the saved net's outputs are {:?}; `deepbelief mlp` trains logistic ones", args.weights.as_ref().expect("resumed").display(), net.output));
    }
    let optimizer = args.optimizer.optimizer();
    output.text(&format!("{source}: {} cases, net {:?} (all logistic), {:?}, up/down {}/{}, on {}", data.n_patterns(), sizes, optimizer, rules.up, rules.down, engine.describe()));
    if args.profile {
        if optimizer != Optimizer::AdaptiveStep {
            return Err("--profile times the device's adaptive rule: use --optimizer adaptive".into());
        }
        return profile(&engine, &net, cases, &rules, &output);
    }
    let initial_error = rms_half(&net, &backend, cases);
    let mut records: Vec<EpochRecord> = Vec::new();
    let started = deepbelief::clock::now_seconds();
    let mut ran_on = "cpu";
    let (epochs, stop, times) = if args.epochs == 0 {
        (0, "no epochs".to_string(), StageSeconds::default())
    } else if optimizer == Optimizer::ConjugateGradient {
        let mut report = |iteration: usize, value: f64| {
            let error = (2.0 * value / cases.n_outputs as f64).sqrt() / 2.0;
            records.push(EpochRecord { epoch: iteration, error, criterion: value, note: StepNote::Stepped });
            !(rules.target_error > 0.0 && error <= rules.target_error)
        };
        let report = optimise(&backend, &mut net, cases, 0.0, Method::ConjugateGradient { max_iterations: args.epochs, tolerance: 0.0 }, None, "the MLP", &mut report).map_err(|e| e.to_string())?;
        (report.iterations, format!("{:?}", report.stop), StageSeconds { forward: report.seconds, ..StageSeconds::default() })
    } else {
        let settings = FullBatchSettings { optimizer, rules, epochs: args.epochs };
        let every = args.checkpoint_every;
        let mut checkpoint_failed = None;
        let mut on_epoch = |record: &EpochRecord, net: Option<&Network>| {
            records.push(*record);
            if record.epoch.is_multiple_of(10) || record.epoch == 1 {
                output.text(&format!("epoch {:5}  error {:.6}{}", epochs_before + record.epoch, record.error, if record.note == StepNote::Stepped { "" } else { "  (rolled back)" }));
            }
            // A checkpoint holds the weights after this epoch's update; its error is the
            // epoch's (that of the weights before it), as close as the loop knows.
            if let Some(net) = net.filter(|_| every > 0 && record.epoch.is_multiple_of(every)) {
                let saved = SavedMlp { format: FORMAT.into(), network: net.clone(), optimizer, step_rules: rules, epochs: epochs_before + record.epoch, error: record.error };
                if let Err(e) = save(&args.out, &saved) {
                    checkpoint_failed = Some(e);
                    return false;
                }
            }
            true
        };
        let run = engine.train_mlp(&mut net, cases, settings, every, &mut on_epoch).map_err(|e| e.to_string())?;
        if let Some(e) = checkpoint_failed {
            return Err(e);
        }
        if let Some((after, why)) = &run.fell_back {
            eprintln!("notice: the device failed after {} epochs ({why}); the run continued on the CPU from the weights of epoch {}", epochs_before + after, epochs_before + after);
        }
        ran_on = run.ran_on;
        let outcome = run.outcome;
        (outcome.epochs, format!("{:?}", outcome.stop), outcome.times)
    };
    let seconds = deepbelief::clock::now_seconds() - started;
    let error = rms_half(&net, &backend, cases);
    let wrong = misclassified(&net, &backend, cases);
    let saved = SavedMlp { format: FORMAT.into(), network: net.clone(), optimizer, step_rules: rules, epochs: epochs_before + epochs, error };
    save(&args.out, &saved)?;
    let mut csv = String::from("epoch,error_rms_half,criterion,note\n");
    for r in &records {
        csv.push_str(&format!("{},{},{},{:?}\n", epochs_before + r.epoch, r.error, r.criterion, r.note));
    }
    write_atomically(&args.out.join("errors.csv"), csv.as_bytes())?;
    let rollbacks = records.iter().filter(|r| r.note != StepNote::Stepped).count();
    let log = mlp_log(&MlpLog { source: &source, data: &data, sizes: &sizes, optimizer, rules: &rules, resumed_from: args.weights.as_deref(), epochs_before, init_range: args.init_range, seed: args.seed, initial_error, records: &records, stop: &stop, error, wrong, rollbacks, times: &times, seconds, ran_on });
    write_atomically(&args.out.join("MLP.LOG"), log.as_bytes())?;
    output.text(&format!("{epochs} epochs ({stop}): error (RMS/2) {error:.6}, misclassified {:.2}% of the training cases; {seconds:.1} s", 100.0 * wrong));
    output.finish(&json!({
        "epochs": epochs,
        "epochs_in_all": epochs_before + epochs,
        "stop": stop,
        "initial_error": initial_error,
        "error": error,
        "misclassified": wrong,
        "rollbacks": rollbacks,
        "seconds": seconds,
        "stage_seconds": times,
        "ran_on": ran_on,
        "errors_at": records.iter().filter(|r| [1, 100, 265, 369, 500, 1000].contains(&(epochs_before + r.epoch))).map(|r| json!([epochs_before + r.epoch, r.error])).collect::<Vec<_>>(),
        "out": args.out,
    }));
    Ok(())
}

struct MlpLog<'a> {
    source: &'a str,
    data: &'a TomanData,
    sizes: &'a [usize],
    optimizer: Optimizer,
    rules: &'a StepRuleSettings,
    resumed_from: Option<&'a Path>,
    epochs_before: usize,
    init_range: f64,
    seed: u64,
    initial_error: f64,
    records: &'a [EpochRecord],
    stop: &'a str,
    error: f64,
    wrong: f64,
    rollbacks: usize,
    times: &'a StageSeconds,
    seconds: f64,
    ran_on: &'a str,
}

/// MLP.LOG: DEEP.LOG's plain sections for a plain MLP (data, network, settings, the error
/// every 10 epochs, the result, Toman's stage timers).
fn mlp_log(l: &MlpLog) -> String {
    let mut s = String::new();
    s.push_str("DEEPBELIEF MLP (all-sigmoid, Toman's training; docs/TOMAN.md)\n\nDATA\n");
    s.push_str(&format!("  source: {}\n  cases: {}   inputs: {}   outputs: {}\n\n", l.source, l.data.n_patterns(), l.data.n_inputs(), l.data.n_outputs()));
    s.push_str(&format!("NETWORK\n  layers: {}\n", l.sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join("-")));
    match l.resumed_from {
        Some(path) => s.push_str(&format!("  start: resumed from {} after {} epochs\n\n", path.display(), l.epochs_before)),
        None => s.push_str(&format!("  start: weights and biases uniform in ±{} (seed {})\n\n", l.init_range, l.seed)),
    }
    s.push_str(&format!("OPTIMIZER\n  {:?}\n", l.optimizer));
    let r = l.rules;
    s.push_str(&format!(
        "  adaptive step: initial rate {}, up {}, down {}, max step {}, momentum {}, robust {} (growth {}, factor {})\n  backprop/incremental/quickprop rate {}; rprop increase {}, decrease {}, delta min {}, max {}, zero {}; quickprop mu {}, decay {}; bold driver {}/{}\n  target error {}; FANN's derivative clip {}\n\n",
        r.initial_rate, r.up, r.down, r.max_step, r.momentum, r.robust, r.max_error_growth, r.robust_factor, r.learning_rate, r.rprop_increase, r.rprop_decrease, r.rprop_delta_min, r.rprop_delta_max, r.rprop_delta_zero, r.quickprop_mu, r.quickprop_decay, r.bold_increase, r.bold_decrease, r.target_error, r.fann_derivative_clip
    ));
    s.push_str(&format!("ERROR (RMS/2 at each epoch's start)\n  start: {:.6}\n", l.initial_error));
    for rec in l.records.iter().filter(|rec| rec.epoch % 10 == 0 || rec.epoch == 1 || rec.epoch == l.records.len()) {
        s.push_str(&format!("  epoch {:6}  {:.6}{}\n", l.epochs_before + rec.epoch, rec.error, if rec.note == StepNote::Stepped { "" } else { "  rolled back" }));
    }
    s.push_str(&format!("\nRESULT\n  epochs: {}   stop: {}   rollbacks: {}\n  error (RMS/2): {:.6}\n  misclassified training cases: {:.2}%\n\n", l.records.len(), l.stop, l.rollbacks, l.error, 100.0 * l.wrong));
    let t = l.times;
    let per = |x: f64| 1000.0 * x / l.records.len().max(1) as f64;
    s.push_str(&format!("STAGE TIMES (Toman's Table 6 stages; ms per epoch, s in all; ran on {})\n", l.ran_on));
    if l.ran_on == "gpu" {
        s.push_str("  (the device runs the four stages in one submission: their time shows as the update's)\n");
    }
    for (name, x) in [("output calculation", t.forward), ("error calculation", t.error), ("gradient calculation", t.gradient), ("weights update", t.update)] {
        s.push_str(&format!("  {name:22} {:10.3} ms {:10.3} s\n", per(x), x));
    }
    s.push_str(&format!("  {:22} {:10.3} ms {:10.3} s (wall {:.3} s)\n", "total", per(t.total()), t.total(), l.seconds));
    s
}
