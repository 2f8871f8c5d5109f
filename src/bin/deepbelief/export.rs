//! `deepbelief export`: a model's parameters as a NumPy .npz archive (see report::npz).

use crate::output::Output;
use clap::Args;
use deepbelief::format::autoencoder::{read_model_file, ModelFile};
use deepbelief::report::npz::write_npz;
use serde_json::json;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// Model folder (reads model.json) or model file.
    #[arg(long, value_name = "DIR")]
    pub model: PathBuf,
    /// The archive to write: W1 (visible × hidden), b1, c1, W2, b2, c2, …
    #[arg(long, value_name = "FILE.npz")]
    pub npz: PathBuf,
    /// Print the final figures as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ExportArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    let model = match read_model_file(&args.model).map_err(|e| e.to_string())? {
        ModelFile::Dbn(model) => *model,
        ModelFile::Autoencoder(model) => return crate::autoencoder_model::export(&args, *model),
    };
    write_npz(&args.npz, &model)?;
    let mut shapes: Vec<String> = model.dbn.layers.iter().enumerate().map(|(k, l)| format!("W{} {}×{}", k + 1, l.n_visible, l.n_hidden)).collect();
    if let Some(saved) = &model.supervised {
        shapes.extend(saved.network.layers.iter().enumerate().map(|(k, l)| format!("supervised_W{} {}×{}", k + 1, l.n_in, l.n_out)));
    }
    output.text(&format!("wrote {} ({})", args.npz.display(), shapes.join(", ")));
    output.finish(&json!({
        "npz": args.npz.display().to_string(),
        "layers": model.dbn.sizes(),
        "supervised_layers": model.supervised.as_ref().map(|saved| saved.network.sizes()),
    }));
    Ok(())
}
