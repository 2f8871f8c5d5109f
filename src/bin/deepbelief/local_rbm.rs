//! `deepbelief local-rbm`: train a local-patch RBM (Raina, Madhavan & Ng 2009, §5) or a stack
//! of them, greedily, on square crops of grey images (PNG files or folders, or an IDX image
//! file; without `--images`, Philox gratings plus noise). Writes `local_rbm.bin` (format
//! `deepbelief-local-rbm/1`) and `filters.png` (the first layer's filters per patch position)
//! into `--out`, both atomically; `local_rbm.bin` is also written after every epoch (the layers
//! so far, the current one as it stands: a checkpoint). The stack trains through
//! `Engine::train_local_stack`: the CPU reference or, with `--backend gpu`, the device-resident
//! trainer with propagation between layers on the device and the fall-back to the CPU (with a
//! message) when the device is lost.

use crate::backend_choice::{self, BackendChoice};
use crate::grey_images::read_grey_images;
use crate::out_lock::OutLock;
use crate::output::Output;
use clap::{Args, ValueEnum};
use deepbelief::bench::sparse_coding::grating_images;
use deepbelief::data::idx::read_idx_images;
use deepbelief::data::patches::GreyImage;
use deepbelief::engine::local_stack::{LocalEpochEvent, LocalStackOptions};
use deepbelief::format::local_rbm::{write, write_parts, EpochRecord, SavedLocalStack};
use deepbelief::local_rbm::crops::image_crops;
use deepbelief::local_rbm::filters::filters_picture;
use deepbelief::local_rbm::stack::{plan_stack, LayerSpec};
use deepbelief::local_rbm::{default_learning_rate, LocalCdSettings};
use deepbelief::model::VisibleUnits;
use deepbelief::report::atomic::AtomicFile;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum VisibleChoice {
    Gaussian,
    Binary,
}

#[derive(Args, Debug)]
pub struct LocalRbmArgs {
    /// Side of the square input image in pixels (Raina: 144 or 192; their DBN 160).
    #[arg(long, default_value_t = 48)]
    pub image_size: usize,
    /// Channels per pixel; grey images give 1.
    #[arg(long, default_value_t = 1)]
    pub channels: usize,
    /// Patch side in pixels (Raina: 24).
    #[arg(long, default_value_t = 24)]
    pub patch: usize,
    /// Pixels between neighbouring patches (Raina: 8; 1 with --tied is a convolutional RBM).
    #[arg(long, default_value_t = 8)]
    pub stride: usize,
    /// Hidden units per patch position (Raina: 192).
    #[arg(long, default_value_t = 192)]
    pub hidden_per_patch: usize,
    /// One filter bank shared by all positions (a convolutional RBM).
    #[arg(long)]
    pub tied: bool,
    /// A stack instead of one layer: comma-separated local:PATCH:STRIDE:UNITS,
    /// tied:PATCH:STRIDE:UNITS or dense:UNITS, each over the feature map below (Raina's DBN at
    /// --image-size 160: local:24:8:256,local:4:2:128,local:3:1:128,dense:1024).
    #[arg(long)]
    pub layers: Option<String>,
    /// Visible units of the first layer (layers above are binary).
    #[arg(long, value_enum, default_value = "gaussian")]
    pub visible: VisibleChoice,
    #[arg(long, default_value_t = 192)]
    pub batch: usize,
    #[arg(long, default_value_t = 10)]
    pub epochs: usize,
    /// Crops cut from the images (a fresh set is not drawn per epoch).
    #[arg(long, default_value_t = 3840)]
    pub cases: usize,
    /// PNG files or folders of them, or one IDX image file; crops of --image-size are cut at
    /// random. Without it: 8 Philox grating images.
    #[arg(long, num_args = 1..)]
    pub images: Vec<PathBuf>,
    /// Every layer's rate; without it each layer's default scales with its overlap:
    /// min(0.02, 8 / fan-in) for Gaussian visible units, min(0.5, 32 / fan-in) for binary,
    /// fan-in = patches over a pixel × hidden units per patch.
    #[arg(long)]
    pub learning_rate: Option<f32>,
    #[arg(long)]
    pub weight_penalty: Option<f32>,
    #[arg(long)]
    pub sparsity_penalty: Option<f32>,
    #[arg(long)]
    pub sparsity_target: Option<f32>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Hidden units whose filters each position's cell shows in filters.png.
    #[arg(long, default_value_t = 16)]
    pub filters_per_position: usize,
    /// Folder for local_rbm.bin and filters.png (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Where each layer trains: cpu (the reference), gpu (the device-resident trainer: whole
    /// batches only, the model downloaded after each epoch), or auto.
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
    /// With --backend gpu: download the model (and its velocities) after every N epochs and
    /// after each layer's last, writing the checkpoint then; 0: only after each layer's last.
    /// Each download is also where a lost device resumes on the CPU.
    #[arg(long, default_value_t = 1)]
    pub checkpoint_every: usize,
    #[arg(long)]
    pub json: bool,
}

fn read_images(args: &LocalRbmArgs) -> Result<(Vec<GreyImage>, serde_json::Value), String> {
    if args.images.is_empty() {
        let side = args.image_size.max(64) * 2;
        return Ok((grating_images(8, side, args.seed), json!({ "gratings": { "count": 8, "side": side, "seed": args.seed } })));
    }
    let is_idx = args.images.len() == 1 && args.images[0].is_file() && !args.images[0].extension().is_some_and(|x| x.eq_ignore_ascii_case("png"));
    if is_idx {
        let path = &args.images[0];
        let idx = read_idx_images(path).map_err(|e| format!("--images {}: {e}", path.display()))?;
        let width = idx.rows * idx.cols;
        let images = idx.pixels.chunks_exact(width).map(|p| GreyImage { rows: idx.rows, cols: idx.cols, pixels: p.iter().map(|&b| b as f32 / 255.0).collect() }).collect();
        return Ok((images, json!({ "idx": path.display().to_string(), "images": idx.count })));
    }
    let (files, images) = read_grey_images(&args.images, "--images")?;
    Ok((images, json!({ "images": files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>() })))
}

pub fn run(args: LocalRbmArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    let specs = match &args.layers {
        Some(text) => LayerSpec::parse_list(text)?,
        None => vec![LayerSpec::Local { patch: args.patch, stride: args.stride, units: args.hidden_per_patch, tied: args.tied }],
    };
    let plan = plan_stack(args.image_size, args.image_size, args.channels, &specs)?;
    if args.channels != 1 {
        return Err(format!("--channels {}: the image inputs are grey (1 channel); more channels come only from a layer below", args.channels));
    }
    if args.cases == 0 {
        return Err("--cases: 0; expected at least 1".into());
    }
    let first_units = match args.visible {
        VisibleChoice::Gaussian => VisibleUnits::Gaussian,
        VisibleChoice::Binary => VisibleUnits::Bernoulli,
    };
    let base = LocalCdSettings::default();
    let units_of = |k: usize| if k == 0 { first_units } else { VisibleUnits::Bernoulli };
    let settings_of = |k: usize| LocalCdSettings {
        visible_units: units_of(k),
        epochs: args.epochs,
        batch_size: args.batch,
        // Unless given: scaled to the layer's overlap (`default_learning_rate`).
        learning_rate: args.learning_rate.unwrap_or_else(|| default_learning_rate(&plan[k], units_of(k))),
        weight_penalty: args.weight_penalty.unwrap_or(base.weight_penalty),
        sparsity_penalty: args.sparsity_penalty.unwrap_or(base.sparsity_penalty),
        sparsity_target: args.sparsity_target.unwrap_or(base.sparsity_target),
        seed: args.seed + k as u64,
        ..base.clone()
    };
    settings_of(0).validate()?;
    let (images, source) = read_images(&args)?;
    let cases = image_crops(&images, args.image_size, args.cases, args.seed, first_units)?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("--out {}: {e}", args.out.display()))?;
    let _lock = OutLock::acquire(&args.out)?;
    let engine = backend_choice::engine(args.backend)?;
    let parameters: usize = plan.iter().map(|g| g.weight_count() + g.hidden_bias_count() + g.n_visible()).sum();
    output.text(&format!("local-patch RBM: {} layer(s), {parameters} parameters, {} crops of {}² on {}", plan.len(), args.cases, args.image_size, engine.describe()));
    for (k, geometry) in plan.iter().enumerate() {
        output.text(&format!(
            "layer {}: {} × {} × {} → {} positions × {} units (patch {}, stride {}{}), {} weights",
            k + 1,
            geometry.rows,
            geometry.cols,
            geometry.channels,
            geometry.positions(),
            geometry.hidden_per_patch,
            geometry.patch,
            geometry.stride,
            if geometry.tied { ", tied" } else { "" },
            geometry.weight_count()
        ));
    }
    let settings: Vec<LocalCdSettings> = (0..plan.len()).map(settings_of).collect();
    let inputs = json!({ "source": source, "cases": args.cases, "image_size": args.image_size });
    let model_path = args.out.join("local_rbm.bin");
    // The checkpoint after every epoch: the layers trained so far and the one in training.
    let (mut done, mut history): (Vec<deepbelief::local_rbm::LocalRbm>, Vec<Vec<EpochRecord>>) = (Vec::new(), Vec::new());
    let mut checkpoint_error: Option<String> = None;
    // Seconds each epoch's checkpoint took to write, per layer (0 where none was written).
    let mut checkpoint_seconds: Vec<Vec<f64>> = Vec::new();
    let on_epoch = |event: &LocalEpochEvent| {
        if let Some(why) = event.fell_back {
            output.text(&format!("  the device was lost ({why})"));
            eprintln!("deepbelief local-rbm: continuing on the CPU: {why}");
        }
        if event.layer == history.len() {
            history.push(Vec::new());
        }
        history[event.layer].push(EpochRecord::from(event.report));
        output.text(&format!("  layer {} epoch {} ({}): reconstruction error {:.6}, {:.2} s", event.layer + 1, event.report.epoch, event.backend, event.report.reconstruction_error, event.report.seconds));
        if event.report.epoch == settings[event.layer].epochs {
            done.push(event.model.clone());
        }
        if event.layer == checkpoint_seconds.len() {
            checkpoint_seconds.push(Vec::new());
        }
        let started = std::time::Instant::now();
        if event.fresh {
            let mut layers: Vec<&deepbelief::local_rbm::LocalRbm> = done.iter().take(event.layer).collect();
            layers.push(event.model);
            if let Err(e) = write_checkpoint(&model_path, &layers, &settings[..layers.len()], &inputs, &history) {
                checkpoint_error.get_or_insert(e);
            }
        }
        checkpoint_seconds[event.layer].push(started.elapsed().as_secs_f64());
    };
    let training_started = std::time::Instant::now();
    let options = LocalStackOptions { download_every: args.checkpoint_every };
    let run = pollster::block_on(engine.train_local_stack_with(&plan, &settings, &cases, options, on_epoch))?;
    let training_seconds = training_started.elapsed().as_secs_f64();
    if let Some(e) = checkpoint_error {
        return Err(e);
    }
    let history: Vec<Vec<EpochRecord>> = run.epochs.iter().map(|e| e.iter().map(EpochRecord::from).collect()).collect();
    let last_error = history.last().and_then(|h| h.last()).map(|r| r.reconstruction_error).unwrap_or(f64::NAN);
    let saved = SavedLocalStack { layers: run.layers, settings, inputs, history };
    let png = deepbelief::report::png::encode_grey_png(&filters_picture(&saved.layers[0], args.filters_per_position))?;
    let mut model_file = AtomicFile::create(&model_path)?;
    {
        let mut writer = std::io::BufWriter::new(&mut model_file);
        write(&saved, &mut writer).map_err(|e| format!("{}: cannot write the file ({e})", model_path.display()))?;
        writer.flush().map_err(|e| format!("{}: cannot write the file ({e})", model_path.display()))?;
    }
    model_file.finish_writing()?;
    let png_path = args.out.join("filters.png");
    let mut png_file = AtomicFile::create(&png_path)?;
    png_file.write_all(&png).map_err(|e| format!("{}: cannot write the file ({e})", png_path.display()))?;
    png_file.finish_writing()?;
    model_file.commit()?;
    png_file.commit()?;
    output.text(&format!("wrote {} and {}", model_path.display(), png_path.display()));
    let epoch_seconds: Vec<Vec<f64>> = saved.history.iter().map(|h| h.iter().map(|r| r.seconds).collect()).collect();
    // Per layer: each epoch's train / score / download / checkpoint seconds, the propagation to
    // the next layer, the rate used, and the input's mean and spread (over the first 384 cases).
    let breakdown: Vec<serde_json::Value> = (0..saved.layers.len())
        .map(|k| {
            let epochs: Vec<serde_json::Value> = run.epoch_times[k]
                .iter()
                .enumerate()
                .map(|(e, t)| json!({ "train": t.train, "score": t.score, "download": t.download, "checkpoint": checkpoint_seconds.get(k).and_then(|c| c.get(e)).copied().unwrap_or(0.0) }))
                .collect();
            let errors: Vec<f64> = saved.history[k].iter().map(|r| r.reconstruction_error).collect();
            json!({ "layer": k + 1, "learning_rate": saved.settings[k].learning_rate, "input": run.input_stats.get(k), "reconstruction_errors": errors,
                    "epochs": epochs, "propagate_seconds": run.propagate_seconds.get(k) })
        })
        .collect();
    output.finish(&json!({
        "layers": saved.layers.len(), "parameters": parameters, "reconstruction_error": last_error, "epochs": args.epochs, "cases": args.cases,
        "backends": run.backends, "fell_back": run.fell_back,
        // Wall time of the whole stack's training (propagation, downloads and scoring included),
        // and each layer's epochs (on the device: the batches' submissions until idle).
        "training_seconds": training_seconds, "epoch_seconds": epoch_seconds, "layer_breakdown": breakdown,
    }));
    Ok(())
}

/// Writes the checkpoint through a temporary file and a rename.
fn write_checkpoint(path: &std::path::Path, layers: &[&deepbelief::local_rbm::LocalRbm], settings: &[LocalCdSettings], inputs: &serde_json::Value, history: &[Vec<EpochRecord>]) -> Result<(), String> {
    let mut file = AtomicFile::create(path)?;
    {
        let mut writer = std::io::BufWriter::new(&mut file);
        write_parts(layers, settings, inputs, history, &mut writer).map_err(|e| format!("{}: cannot write the checkpoint ({e})", path.display()))?;
        writer.flush().map_err(|e| format!("{}: cannot write the checkpoint ({e})", path.display()))?;
    }
    file.finish_writing()?;
    file.commit()
}
