//! NumPy `.npz` archives of a stacked autoencoder (`deepbelief export` of an autoencoder
//! model): per layer k (from 1) `W1_k` and `W2_k` (`n_visible × n_hidden`, float32, row-major
//! as the model stores them, so UFLDL's `W1` is `W1_k.T` and its `W2` is `W2_k`), `b1_k`
//! (hidden biases) and `b2_k` (output biases); then each supervised layer k as
//! `supervised_W_k` (`n_in × n_out`) and `supervised_b_k`, the last one the output layer.

use super::atomic::AtomicFile;
use super::npz::write_array;
use crate::format::autoencoder::SavedAutoencoder;
use std::path::Path;

/// Writes the archive to `path`, whole or not at all; returns the arrays' names in order.
pub fn write_autoencoder_npz(path: &Path, model: &SavedAutoencoder) -> Result<Vec<String>, String> {
    let fail = |e: std::io::Error| format!("{}: cannot write the archive ({e})", path.display());
    let mut npz = npyz::npz::NpzWriter::new(std::io::BufWriter::new(AtomicFile::create(path)?));
    let mut names = Vec::new();
    let mut add = |npz: &mut npyz::npz::NpzWriter<_>, name: String, shape: &[u64], values: &[f32]| {
        let result = write_array(npz, &name, shape, values);
        names.push(name);
        result
    };
    for (k, layer) in model.stack.layers.iter().enumerate() {
        let (a, n) = (&layer.autoencoder, k + 1);
        let (v, h) = (a.n_visible as u64, a.n_hidden as u64);
        add(&mut npz, format!("W1_{n}"), &[v, h], &a.w1).map_err(fail)?;
        add(&mut npz, format!("b1_{n}"), &[h], &a.b1).map_err(fail)?;
        add(&mut npz, format!("W2_{n}"), &[v, h], &a.w2).map_err(fail)?;
        add(&mut npz, format!("b2_{n}"), &[v], &a.b2).map_err(fail)?;
    }
    if let Some(supervised) = &model.supervised {
        for (k, layer) in supervised.network.layers.iter().enumerate() {
            let n = k + 1;
            add(&mut npz, format!("supervised_W_{n}"), &[layer.n_in as u64, layer.n_out as u64], &layer.weights).map_err(fail)?;
            add(&mut npz, format!("supervised_b_{n}"), &[layer.n_out as u64], &layer.bias).map_err(fail)?;
        }
    }
    // Dropping the writer would finish the zip too, but would swallow a failed write.
    let file = npz.zip_writer().finish().map_err(|e| format!("{}: cannot finish the archive ({e})", path.display()))?;
    file.into_inner().map_err(|e| fail(e.into_error()))?.commit()?;
    Ok(names)
}
