//! `test`, `eval` and `export` of a saved stack of sparse autoencoders (`model.json` of
//! `deepbelief autoencoder`, "deepbelief-autoencoder/2" or /1); the commands read the file
//! once and come here when its format says so.
//!
//! - `test`: the stack and its SoftMax on labelled IDX images; cases whose label is not one of
//!   the model's classes (a self-taught model of digits 0–4 on all ten) are left out and
//!   counted; the confusion matrix, the misclassification and the criterion.
//! - `eval`: per layer, on the data as the encoders below deliver it: J with its three terms,
//!   the reconstruction error (mean squared error per input) and ρ̂'s mean, min and max.
//! - `export`: the parameters as a NumPy archive (`report::autoencoder_npz`).

use crate::autoencoder_inputs::{read_idx, Images};
use crate::autoencoder_supervised::{classes_of, evaluate, labelled};
use crate::backend_choice;
use crate::eval::EvalArgs;
use crate::export::ExportArgs;
use crate::output::Output;
use crate::supervised_stage::error_text;
use crate::test::TestArgs;
use deepbelief::autoencoder::stack::ActivationSummary;
use deepbelief::autoencoder::{cost, Workspace};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::split::spread_cases;
use deepbelief::format::autoencoder::{InputPreprocessing, SavedAutoencoder};
use deepbelief::report::atomic::AtomicFile;
use deepbelief::report::autoencoder_npz::write_autoencoder_npz;
use deepbelief::report::classification::write_predictions;
use deepbelief::supervised::confusion::predictions;
use serde_json::json;
use std::path::Path;

/// IDX images as the model's first layer sees them.
fn model_images(model: &SavedAutoencoder, source: &str, images: &Path, labels: Option<&Path>, flags: [&str; 2]) -> Result<Images, String> {
    if let InputPreprocessing::Patches { .. } = model.preprocessing {
        return Err(format!("{source}: the model was trained on image patches (--images); {} takes IDX images, for models trained on --mnist", flags[0]));
    }
    let data = read_idx(images, labels, usize::MAX, None, [flags[0], flags[1], ""])?;
    let n_visible = model.stack.layers[0].autoencoder.n_visible;
    if data.width != n_visible {
        return Err(format!("{} {}: {} inputs per image, but the model's first layer has {n_visible}", flags[0], images.display(), data.width));
    }
    Ok(data)
}

pub fn test(args: &TestArgs, model: SavedAutoencoder, source: &str) -> Result<(), String> {
    let output = Output { json: args.json };
    let saved = model.supervised.as_ref().ok_or_else(|| format!("{source}: the autoencoder model has no supervised layers (train it with --labels)"))?;
    if args.activations.is_some() {
        return Err("--activations: writes the layers of DBN models; an autoencoder model's features are its encoders' outputs (not written by test)".into());
    }
    let labels = args.test_labels.as_deref().ok_or("--test-labels: the autoencoder model's classes are labels; give the IDX label file of --test-images")?;
    let images = model_images(&model, source, &args.test_images, Some(labels), ["--test-images", "--test-labels"])?;
    let classes = classes_of(saved, source)?;
    let what = format!("--test-images {}", args.test_images.display());
    let cases = labelled(&images, &classes, &what)?;
    let backend = CpuBackend;
    let evaluation = evaluate(&backend, &model.stack, saved, &cases);
    let name = args.test_images.file_name().map_or_else(|| what.clone(), |n| n.to_string_lossy().into_owned());
    output.text(&format!("{name}: criterion {:.6}{}", evaluation.criterion, error_text(&evaluation)));
    if cases.left_out > 0 {
        output.text(&format!("  ({} cases left out: their labels are not among the model's classes {})", cases.left_out, saved.target_names.join(" ")));
    }
    if let Some(confusion) = &evaluation.confusion {
        output.text(&confusion.render());
    }
    if let Some(path) = &args.predictions {
        let n_outputs = saved.target_names.len();
        let mut file = AtomicFile::create(path)?;
        let mut writer = std::io::BufWriter::new(&mut file);
        write_predictions(&mut writer, &evaluation.outputs, &predictions(&cases.targets, n_outputs), n_outputs, &saved.target_names)
            .and_then(|()| std::io::Write::flush(&mut writer))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        drop(writer);
        file.commit()?;
        output.text(&format!("wrote {}", path.display()));
    }
    output.finish(&json!({
        "cases": evaluation.n_cases,
        "cases_of_other_classes": cases.left_out,
        "criterion": evaluation.criterion,
        "test_error": evaluation.confusion.as_ref().map(|c| c.error_fraction()),
        "per_class_error": evaluation.confusion.as_ref().map(|c| c.per_class_error()),
        "confusion": evaluation.confusion.as_ref().map(|c| c.to_json()),
        "fine_tuned": saved.fine_tuned,
        "sizes": model.stack.sizes(),
    }));
    Ok(())
}

pub fn eval(args: &EvalArgs, model: SavedAutoencoder, source: &str) -> Result<(), String> {
    let output = Output { json: args.json };
    if args.max_cases == Some(0) {
        return Err("--max-cases is 0, expected at least 1 case".into());
    }
    if args.binarize {
        return Err(format!("--binarize: binarises the data for an RBM's free energy and AIS; {source} is an autoencoder model, evaluated on its inputs as they are"));
    }
    let images = model_images(&model, source, &args.images, None, ["--images", ""])?;
    let picked = spread_cases(images.cases(), args.max_cases.unwrap_or(usize::MAX));
    let inputs = crate::autoencoder_inputs::rows(&images.values, images.width, &picked);
    let engine = backend_choice::engine(args.backend)?;
    let backend = engine.backend();
    output.text(&format!("{}: {} cases; autoencoders {:?}; computing on {}", args.images.display(), picked.len(), model.stack.sizes(), engine.describe()));
    let mut work = Workspace::new();
    let mut layers = Vec::new();
    let mut data = inputs;
    for (k, layer) in model.stack.layers.iter().enumerate() {
        let a = &layer.autoencoder;
        let c = cost(backend.as_ref(), a, &data, &layer.settings.cost, &mut work).map_err(|e| format!("layer {}: {e}", k + 1))?;
        // ½‖x̂ − x‖²/m is the reconstruction term; per input it is twice that over n_visible.
        let recon_error = 2.0 * c.reconstruction / a.n_visible as f64;
        let rho = ActivationSummary::of(&c.mean_activation);
        output.text(&format!(
            "layer {}: J {:.6} (reconstruction {:.6}, weight decay {:.6}, sparsity {:.6}); reconstruction error {recon_error:.6} per input; ρ̂ mean {:.4}, min {:.4}, max {:.4} (target {})",
            k + 1, c.total, c.reconstruction, c.weight_decay, c.sparsity, rho.mean, rho.min, rho.max, layer.settings.cost.sparsity_target
        ));
        layers.push(json!({
            "J": c.total, "reconstruction": c.reconstruction, "weight_decay": c.weight_decay, "sparsity": c.sparsity,
            "recon_error": recon_error, "rho_mean": rho.mean, "rho_min": rho.min, "rho_max": rho.max, "rho_target": layer.settings.cost.sparsity_target,
        }));
        if k + 1 < model.stack.layers.len() {
            let mut next = vec![0.0; data.len() / a.n_visible * a.n_hidden];
            a.encode(backend.as_ref(), &data, &mut next);
            data = next;
        }
    }
    output.finish(&json!({
        "model": "autoencoder",
        "cases": picked.len(),
        "sizes": model.stack.sizes(),
        "recon_error": layers[0]["recon_error"],
        "layers": layers,
        "backend": if engine.is_gpu() { "gpu" } else { "cpu" },
    }));
    Ok(())
}

pub fn export(args: &ExportArgs, model: SavedAutoencoder) -> Result<(), String> {
    let output = Output { json: args.json };
    let names = write_autoencoder_npz(&args.npz, &model)?;
    output.text(&format!("wrote {} ({})", args.npz.display(), names.join(", ")));
    output.finish(&json!({ "npz": args.npz.display().to_string(), "layers": model.stack.sizes(), "arrays": names }));
    Ok(())
}
