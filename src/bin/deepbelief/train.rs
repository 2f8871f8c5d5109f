//! `deepbelief train`: greedy layer-wise training, then (with labels or targets) the
//! supervised layers and optional fine-tuning, then model.json, DEEP.LOG and filters.png.

use crate::input::{load_training_data, TrainingData};
use crate::output::Output;
use crate::progress::Progress;
use crate::memory_limit::check_memory;
use crate::out_lock::OutLock;
use crate::supervised_data::{dataset_inputs, training_targets, TargetSet};
use crate::supervised_stage::{self, SupervisedRun};
use crate::train_settings::{describe_config_error, TrainArgs, TrainSettings};
use crate::backend_choice::{self, BackendChoice};
use deepbelief::backend::Backend;
use deepbelief::engine::run::TrainingRun;
use deepbelief::engine::stack::{FellBack, StackEvent, StackRun};
use deepbelief::engine::Engine;
use deepbelief::data::split::spread_cases;
use deepbelief::data::Dataset;
use deepbelief::format::{self, SavedDbn};
use deepbelief::report::deep_log::{stop_description, DataSummary};
use deepbelief::report::training_log::{self, LayerOutcome, MEASURED_CASES};
use deepbelief::report::image_grid::{self, Scaling};
use deepbelief::report::atomic::AtomicFile;
use deepbelief::report::classification::{ActivationSelection, Section};
use deepbelief::report::png::encode_grey_png;
use deepbelief::model::Dbn;
use deepbelief::train::memory::RunShape;
use deepbelief::train::{GreedyEvent, GreedyTrainer, TrainError};
use serde_json::json;
use std::io::Write;
use std::path::Path;

/// First-layer filters drawn in filters.png.
const FILTERS_SHOWN: usize = 100;
const FILTER_COLUMNS: usize = 10;

pub fn run(args: TrainArgs) -> Result<(), String> {
    let settings = args.settings()?;
    let output = Output { json: settings.json };
    // With a GPU the epochs run device-resident (see `train_layers`), and the work around
    // them (initialisation trials, measurements, propagation, supervised training) runs on its
    // kernels through the `Backend` trait; otherwise all of it runs on the CPU reference.
    let engine = backend_choice::engine(settings.backend)?;
    let backend = engine.backend();
    let data = load_training_data(&settings.data)?;
    let dataset = &data.dataset;
    settings.stack.validate_allowing_plain_mlp(dataset.n_cases).map_err(describe_config_error)?;
    // Everything that can be checked before training is: a refusal after it wastes the run.
    let targets = training_targets(dataset);
    let plain_mlp = settings.stack.is_plain_mlp();
    if plain_mlp && targets.is_none() {
        return Err("--rbm-layers 0: a plain MLP (zero RBM layers) is trained by the supervised stage alone, which needs training labels (--train-labels) or database targets (--targets)".into());
    }
    if targets.is_none() && settings.supervised.test_images.is_some() {
        return Err("--test-images tests the supervised layers, which need training labels (--train-labels) or database targets (--targets)".into());
    }
    check_activation_selection(&settings, targets.as_ref())?;
    check_memory(&RunShape::of(dataset, &settings.stack, Some(&settings.supervised.config)), settings.max_memory)?;
    std::fs::create_dir_all(&settings.out).map_err(|e| format!("{}: cannot create the output folder ({e})", settings.out.display()))?;
    let _lock = OutLock::acquire(&settings.out)?;
    check_output_paths(&settings)?;
    output.text(&format!(
        "{}: {} cases of {} inputs; layers {:?}; {}",
        dataset.name,
        dataset.n_cases,
        dataset.n_inputs,
        settings.stack.layers,
        backend.describe()
    ));

    let (dbn, outcomes) = if plain_mlp {
        output.text("no RBM stage (zero RBM layers): a plain MLP, trained by the supervised stage alone");
        (Dbn::default(), Vec::new())
    } else {
        let (trainer, run) = train_layers(&settings, &engine, backend.as_ref(), dataset, output)?;
        (trainer.dbn, run.outcomes())
    };
    let mut model = SavedDbn {
        image_shape: dataset.image_shape,
        visible_means: Some(data.raw_statistics.mean.clone()),
        standardisation: data.standardisation.clone(),
        preprocessing: data.preprocessing.clone(),
        config: settings.stack.clone(),
        training: training_log::training_records(&outcomes),
        dbn,
        supervised: None,
    };
    let supervised = match targets {
        Some(targets) => Some(supervised_stage::run(&settings, backend.as_ref(), &data, &mut model, targets, output)?),
        None => None,
    };
    // Every file is rendered under a temporary name first, and put in place only once all
    // of them are: a failure on the way leaves the folder as it was.
    let staged = stage_outputs(&settings, &data, &model, &outcomes, backend.as_ref(), supervised.as_ref())?;
    let mut written = Vec::new();
    for file in staged {
        let path = file.target().display().to_string();
        file.commit()?;
        written.push(path);
    }

    // The top RBM's figures; none for a plain MLP.
    let last = outcomes.last();
    output.text(&format!("wrote {}", written.join(", ")));
    output.finish(&json!({
        "recon_error": last.map(|l| l.final_error),
        "init_error": last.map(|l| l.init_error),
        "epochs": last.map(|l| l.epochs.len()),
        "stop": last.map(|l| format::stop_reason_name(l.stop)),
        "layers": outcomes.iter().enumerate().map(|(layer, o)| json!({
            "layer": layer,
            "n_hidden": model.dbn.layers[layer].n_hidden,
            "epochs": o.epochs.len(),
            "stop": format::stop_reason_name(o.stop),
            "init_error": o.init_error,
            "recon_error": o.final_error,
            "seconds": o.epochs.iter().map(|e| e.seconds).sum::<f64>(),
        })).collect::<Vec<_>>(),
        "out": settings.out.display().to_string(),
        "supervised": supervised.as_ref().map(|run| json!({
            "outcome": run.outcome,
            "train": run.train.to_json(),
            "test": run.test.as_ref().map(|(file, evaluation)| json!({"file": file, "figures": evaluation.to_json()})),
        })),
        "train_error": supervised.as_ref().and_then(|run| run.train.confusion.as_ref().map(|c| c.error_fraction())),
        "test_error": supervised.as_ref().and_then(|run| run.test.as_ref()).and_then(|(_, e)| e.confusion.as_ref().map(|c| c.error_fraction())),
    }));
    Ok(())
}

/// Drives the engine's stack run unit by unit, each layer on the device where it can be (a
/// layer the device cannot hold stays on the CPU, with a notice, unless `--backend gpu`
/// demanded the GPU; a device lost mid-layer hands over to the CPU), measuring each layer
/// before and after on a fixed set of cases.
fn train_layers(settings: &TrainSettings, engine: &Engine, backend: &dyn Backend, dataset: &Dataset, output: Output) -> Result<(GreedyTrainer, TrainingRun), String> {
    let n_layers = settings.stack.layers.len();
    let measured = dataset.subset(&spread_cases(dataset.n_cases, MEASURED_CASES));
    let mut stack = StackRun::new(settings.stack.clone(), dataset, None).map_err(train_error)?.measuring(measured);
    let mut progress = Progress::new(output);
    loop {
        match pollster::block_on(stack.unit(backend, dataset)).map_err(train_error)? {
            StackEvent::Greedy(GreedyEvent::LayerStarted { layer, .. }) => {
                progress.layer_started(layer, n_layers, settings.stack.rbm.epochs);
                if engine.is_gpu() {
                    match stack.place_on_device(engine, dataset) {
                        Ok(_) => {}
                        Err(e) if settings.backend == BackendChoice::Gpu => return Err(format!("--backend gpu: layer {}: {e}", layer + 1)),
                        Err(e) => eprintln!("notice: layer {} trains on the CPU: {e}", layer + 1),
                    }
                }
            }
            StackEvent::Greedy(GreedyEvent::Epoch { layer, report, metrics }) => progress.epoch(layer, &report, metrics.as_ref()),
            StackEvent::FellBack(FellBack { layer, message, resumed_at }) => {
                eprintln!("notice: layer {}: the GPU failed ({message}); continuing on the CPU from epoch {resumed_at}", layer + 1)
            }
            StackEvent::Greedy(GreedyEvent::LayerFinished { layer }) => {
                let outcome = stack.record().layers[layer].outcome();
                progress.layer_finished(
                    layer,
                    n_layers,
                    format!(
                        "{} epochs, reconstruction error {:.6} -> {:.6}; stopped: {}",
                        outcome.epochs.len(),
                        outcome.init_error,
                        outcome.final_error,
                        stop_description(outcome.stop, &settings.stack)
                    ),
                );
            }
            StackEvent::Greedy(GreedyEvent::Finished) => break,
        }
    }
    let run = stack.record().clone();
    Ok((stack.into_greedy(), run))
}

fn train_error(error: TrainError) -> String {
    match error {
        TrainError::Config(e) => describe_config_error(e),
        other => other.to_string(),
    }
}

/// The files `train` writes into `--out`, in the order they are put in place: model.json
/// last, so a model file beside the others means they all come from its run.
fn output_names(settings: &TrainSettings) -> Vec<&'static str> {
    let mut names = vec!["filters.png", "DEEP.LOG"];
    if settings.supervised.activations.is_some() {
        names.push(ACTIVATION_FILE);
    }
    names.push("model.json");
    names
}

const ACTIVATION_FILE: &str = "activations.txt";

/// Refuses, before training, an output name taken by a folder or something else a file
/// cannot replace.
fn check_output_paths(settings: &TrainSettings) -> Result<(), String> {
    for name in output_names(settings) {
        let path = settings.out.join(name);
        if let Ok(metadata) = std::fs::symlink_metadata(&path) {
            if !metadata.is_file() {
                return Err(format!("{}: train writes a file there, but it is a folder or another kind of entry; move it away or choose another --out", path.display()));
            }
        }
    }
    Ok(())
}

/// `--activations` against the stack and, for the supervised sections, the supervised
/// layers that the training data's labels or targets will give.
fn check_activation_selection(settings: &TrainSettings, targets: Option<&TargetSet>) -> Result<(), String> {
    let Some(selection) = settings.supervised.activations else { return Ok(()) };
    let (hidden, n_outputs) = match targets {
        Some(targets) => (settings.supervised.config.hidden.clone(), targets.names.len()),
        None if selection.section != Section::Unsupervised => {
            return Err(format!(
                "--activations {selection}: without training labels (--train-labels) or targets (--targets) the model has no supervised layers; choose unsupervised:LAYER (1 to {})",
                settings.stack.layers.len()
            ))
        }
        None => (Vec::new(), 0),
    };
    selection.layer_width(&settings.stack.layers, &hidden, n_outputs).map(|_| ()).map_err(|e| format!("--activations: {e}"))
}

/// Renders every output into a temporary file beside its target; returns them in the order
/// of `output_names`.
fn stage_outputs(
    settings: &TrainSettings,
    data: &TrainingData,
    model: &SavedDbn,
    outcomes: &[LayerOutcome],
    backend: &dyn Backend,
    supervised: Option<&SupervisedRun>,
) -> Result<Vec<AtomicFile>, String> {
    let stage = |name: &str, bytes: &[u8]| {
        let path = settings.out.join(name);
        let mut file = AtomicFile::create(&path)?;
        file.write_all(bytes).map_err(|e| format!("{}: cannot write the file ({e})", path.display()))?;
        file.finish_writing()?;
        Ok::<AtomicFile, String>(file)
    };
    let mut staged = vec![stage("filters.png", &filters_png(model)?)?];

    let data_summary = DataSummary {
        train_file: settings.data.train_images.display().to_string(),
        labels_file: settings.data.train_labels.as_ref().map(|p| p.display().to_string()),
        n_cases: data.dataset.n_cases,
        image_shape: data.dataset.image_shape,
        input_means: data.raw_statistics.mean.clone(),
        input_sds: data.raw_statistics.sd.clone(),
        standardised: data.standardisation.is_some(),
        preprocessing: data.preprocessing.as_ref().map(training_log::describe_preprocessing).unwrap_or_default(),
    };
    let program = format!("deepbelief {}", env!("CARGO_PKG_VERSION"));
    let measured_cases = data.dataset.n_cases.min(MEASURED_CASES);
    let log = training_log::deep_log(program, data_summary, &model.config, backend.describe(), &model.dbn, outcomes, measured_cases);
    let supervised_log = supervised.map(|run| run.log(model));
    staged.push(stage("DEEP.LOG", log.render_with_supervised(supervised_log.as_ref()).as_bytes())?);

    if let Some(selection) = settings.supervised.activations {
        let path = settings.out.join(ACTIVATION_FILE);
        let mut file = AtomicFile::create(&path)?;
        write_activations(&mut file, &path, backend, model, &dataset_inputs(&data.dataset), selection)?;
        file.finish_writing()?;
        staged.push(file);
    }
    staged.push(stage("model.json", format::to_json_checked(model).map_err(|e| format!("{}: not written: {e}", settings.out.join("model.json").display()))?.as_bytes())?);
    Ok(staged)
}

/// The activation file: `# SELECTION`, then the selected layer's activations, one line per
/// case of `inputs`. Shared with `test`.
pub fn write_activations(file: &mut AtomicFile, path: &Path, backend: &dyn Backend, model: &SavedDbn, inputs: &[f32], selection: ActivationSelection) -> Result<(), String> {
    let mut writer = std::io::BufWriter::new(file);
    training_log::write_activation_file(&mut writer, backend, &model.dbn, model.supervised.as_ref(), inputs, selection).map_err(|e| format!("{}: {e}", path.display()))?;
    writer.flush().map_err(|e| format!("{}: cannot write the file ({e})", path.display()))
}

/// The first layer's strongest filters as a PNG, each scaled symmetrically so zero is
/// mid-grey: the first RBM's, or a plain MLP's first layer's (the same `n_in × n_out` layout).
fn filters_png(model: &SavedDbn) -> Result<Vec<u8>, String> {
    let (weights, n_visible, n_hidden) = match (model.dbn.layers.first(), &model.supervised) {
        (Some(rbm), _) => (&rbm.weights, rbm.n_visible, rbm.n_hidden),
        (None, Some(saved)) => {
            let first = &saved.network.layers[0];
            (&first.weights, first.n_in, first.n_out)
        }
        (None, None) => return Err("filters.png: the model has no layers".into()),
    };
    let shape = model.image_shape.unwrap_or((1, n_visible));
    let count = n_hidden.min(FILTERS_SHOWN);
    let filters = image_grid::filters_of(weights, n_visible, n_hidden, count);
    encode_grey_png(&image_grid::tile_grey(&filters, count, shape, FILTER_COLUMNS, Scaling::SymmetricPerTile)).map_err(|e| format!("filters.png: cannot encode the PNG ({e})"))
}
