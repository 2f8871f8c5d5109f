//! NumPy `.npz` archives of a DBN's parameters, for analysis outside this program:
//! `W1` (visible × hidden, float32, row-major like the model), `b1` (visible bias),
//! `c1` (hidden bias), then `W2`, `b2`, `c2` for the second layer, and so on, plus
//! the supervised layers (`supervised_W1`, `supervised_c1`, …), `visible_means` and, for
//! Gaussian models, `standardisation_mean` / `standardisation_sd`.

use super::atomic::AtomicFile;
use crate::format::SavedDbn;
use npyz::WriterBuilder;
use std::io::{Seek, Write};
use std::path::Path;

/// Writes the archive to `path`, whole or not at all (see `atomic`).
pub fn write_npz(path: &Path, model: &SavedDbn) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("{}: cannot write the archive ({e})", path.display());
    let mut npz = npyz::npz::NpzWriter::new(std::io::BufWriter::new(AtomicFile::create(path)?));
    for (k, layer) in model.dbn.layers.iter().enumerate() {
        let n = k + 1;
        write_array(&mut npz, &format!("W{n}"), &[layer.n_visible as u64, layer.n_hidden as u64], &layer.weights).map_err(fail)?;
        write_array(&mut npz, &format!("b{n}"), &[layer.n_visible as u64], &layer.visible_bias).map_err(fail)?;
        write_array(&mut npz, &format!("c{n}"), &[layer.n_hidden as u64], &layer.hidden_bias).map_err(fail)?;
    }
    // The supervised layers (a plain MLP's only ones): `supervised_W1` (inputs × units),
    // `supervised_c1` (the units' biases), … up to the output layer.
    if let Some(saved) = &model.supervised {
        for (k, layer) in saved.network.layers.iter().enumerate() {
            let n = k + 1;
            write_array(&mut npz, &format!("supervised_W{n}"), &[layer.n_in as u64, layer.n_out as u64], &layer.weights).map_err(fail)?;
            write_array(&mut npz, &format!("supervised_c{n}"), &[layer.n_out as u64], &layer.bias).map_err(fail)?;
        }
    }
    if let Some(means) = &model.visible_means {
        write_array(&mut npz, "visible_means", &[means.len() as u64], means).map_err(fail)?;
    }
    if let Some(s) = &model.standardisation {
        write_array(&mut npz, "standardisation_mean", &[s.mean.len() as u64], &s.mean).map_err(fail)?;
        write_array(&mut npz, "standardisation_sd", &[s.sd.len() as u64], &s.sd).map_err(fail)?;
    }
    // Dropping the writer would finish the zip too, but would swallow a failed write.
    let file = npz.zip_writer().finish().map_err(|e| format!("{}: cannot finish the archive ({e})", path.display()))?;
    file.into_inner().map_err(|e| fail(e.into_error()))?.commit()
}

pub(super) fn write_array<W: Write + Seek>(npz: &mut npyz::npz::NpzWriter<W>, name: &str, shape: &[u64], values: &[f32]) -> std::io::Result<()> {
    let mut writer = npz.array::<f32>(name, Default::default())?.default_dtype().shape(shape).begin_nd()?;
    writer.extend(values.iter().copied())?;
    writer.finish()
}
