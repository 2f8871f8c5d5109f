//! `local_rbm.bin`, format `deepbelief-local-rbm/1` (docs/LOCAL_RBM.md): a stack of local-patch
//! RBM layers. Binary, because Raina's models hold 28M–96M weights (JSON text would be ~10×
//! larger and slow to parse):
//!
//! ```text
//! bytes 0..8    magic  "DBLOCAL1"
//! bytes 8..16   u64 LE: length H of the header
//! 16..16+H      header, UTF-8 JSON: { format, layers: [{ geometry, visible_units,
//!               weights, hidden_bias, visible_bias (counts) }], settings, inputs, history }
//! then          per layer: weights, hidden_bias, visible_bias as f32 LE, in that order
//! ```
//!
//! Reading checks the magic, the format name, every layer's geometry (as `Geometry::new`
//! would), the counts against the geometry, that layer k + 1's input is layer k's feature
//! map, the total length, and that every value is finite.

use crate::local_rbm::{Geometry, LocalCdSettings, LocalEpochReport, LocalRbm};
use crate::model::VisibleUnits;
use serde::{Deserialize, Serialize};

pub const FORMAT: &str = "deepbelief-local-rbm/1";
pub const MAGIC: &[u8; 8] = b"DBLOCAL1";
/// A header longer than this is not one of ours (it holds no parameters).
const MAX_HEADER: u64 = 64 << 20;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedLayerHeader {
    pub geometry: Geometry,
    pub visible_units: VisibleUnits,
    pub weights: usize,
    pub hidden_bias: usize,
    pub visible_bias: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedHeader {
    pub format: String,
    pub layers: Vec<SavedLayerHeader>,
    /// The settings of each layer's training.
    pub settings: Vec<LocalCdSettings>,
    /// Where the cases came from (for people; not read back).
    pub inputs: serde_json::Value,
    /// Each layer's epochs.
    pub history: Vec<Vec<EpochRecord>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpochRecord {
    pub epoch: usize,
    pub reconstruction_error: f64,
    pub momentum: f32,
    pub seconds: f64,
}

impl From<&LocalEpochReport> for EpochRecord {
    fn from(r: &LocalEpochReport) -> Self {
        EpochRecord { epoch: r.epoch, reconstruction_error: r.reconstruction_error, momentum: r.momentum, seconds: r.seconds }
    }
}

#[derive(Clone, Debug)]
pub struct SavedLocalStack {
    pub layers: Vec<LocalRbm>,
    pub settings: Vec<LocalCdSettings>,
    pub inputs: serde_json::Value,
    pub history: Vec<Vec<EpochRecord>>,
}

/// Writes the file's bytes to `out`.
pub fn write(saved: &SavedLocalStack, out: &mut impl std::io::Write) -> Result<(), String> {
    let layers: Vec<&LocalRbm> = saved.layers.iter().collect();
    write_parts(&layers, &saved.settings, &saved.inputs, &saved.history, out)
}

/// `write` from borrowed layers (a checkpoint of a stack in training, without copying its
/// parameters): `settings` and `history` one per layer.
pub fn write_parts(layers: &[&LocalRbm], settings: &[LocalCdSettings], inputs: &serde_json::Value, history: &[Vec<EpochRecord>], out: &mut impl std::io::Write) -> Result<(), String> {
    let header = SavedHeader {
        format: FORMAT.to_string(),
        layers: layers
            .iter()
            .map(|l| SavedLayerHeader { geometry: l.geometry, visible_units: l.visible_units, weights: l.weights.len(), hidden_bias: l.hidden_bias.len(), visible_bias: l.visible_bias.len() })
            .collect(),
        settings: settings.to_vec(),
        inputs: inputs.clone(),
        history: history.to_vec(),
    };
    let text = serde_json::to_string(&header).map_err(|e| format!("header: {e}"))?;
    let fail = |e: std::io::Error| e.to_string();
    out.write_all(MAGIC).map_err(fail)?;
    out.write_all(&(text.len() as u64).to_le_bytes()).map_err(fail)?;
    out.write_all(text.as_bytes()).map_err(fail)?;
    let mut bytes = Vec::new();
    for layer in layers {
        for array in [&layer.weights, &layer.hidden_bias, &layer.visible_bias] {
            for chunk in array.chunks(1 << 16) {
                bytes.clear();
                bytes.extend(chunk.iter().flat_map(|x| x.to_le_bytes()));
                out.write_all(&bytes).map_err(fail)?;
            }
        }
    }
    Ok(())
}

/// Parses and checks a file's bytes; errors name the field or layer.
pub fn read(bytes: &[u8]) -> Result<SavedLocalStack, String> {
    if bytes.len() < 16 || &bytes[..8] != MAGIC {
        return Err(format!("not a {FORMAT} file (expected the magic bytes \"DBLOCAL1\")"));
    }
    let length = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    if length > MAX_HEADER || 16 + length > bytes.len() as u64 {
        return Err(format!("header length {length} runs past the file's {} bytes", bytes.len()));
    }
    let end = 16 + length as usize;
    let header: SavedHeader = serde_json::from_slice(&bytes[16..end]).map_err(|e| format!("header: {e}"))?;
    if header.format != FORMAT {
        return Err(format!("format: '{}'; expected '{FORMAT}'", header.format));
    }
    if header.layers.is_empty() {
        return Err("layers: none; expected at least one".into());
    }
    let mut offset = end;
    let mut layers = Vec::with_capacity(header.layers.len());
    for (k, h) in header.layers.iter().enumerate() {
        let g = h.geometry;
        let checked = Geometry::new(g.rows, g.cols, g.channels, g.patch, g.stride, g.hidden_per_patch, g.tied).map_err(|e| format!("layers[{k}].geometry: {e}"))?;
        if let Some(below) = layers.last().map(|l: &LocalRbm| l.geometry.feature_map()) {
            if below != (g.rows, g.cols, g.channels) {
                return Err(format!("layers[{k}].geometry: input {} × {} × {}, but layer {k}'s feature map is {below:?}", g.rows, g.cols, g.channels));
            }
        }
        let mut take = |count: usize, field: &str| -> Result<Vec<f32>, String> {
            let size = count.saturating_mul(4);
            if bytes.len() - offset < size {
                return Err(format!("layers[{k}].{field}: the file ends before its {count} values"));
            }
            let values: Vec<f32> = bytes[offset..offset + size].chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect();
            offset += size;
            if let Some(i) = values.iter().position(|x| !x.is_finite()) {
                return Err(format!("layers[{k}].{field}[{i}]: not a finite number"));
            }
            Ok(values)
        };
        let layer = LocalRbm { geometry: checked, visible_units: h.visible_units, weights: take(h.weights, "weights")?, hidden_bias: take(h.hidden_bias, "hidden_bias")?, visible_bias: take(h.visible_bias, "visible_bias")? };
        layer.check_shapes().map_err(|e| format!("layers[{k}].{e}"))?;
        layers.push(layer);
    }
    if offset != bytes.len() {
        return Err(format!("{} bytes after the last layer's values; expected none", bytes.len() - offset));
    }
    Ok(SavedLocalStack { layers, settings: header.settings, inputs: header.inputs, history: header.history })
}
