//! Stacks of local-patch layers (Raina et al.'s four-layer DBN): each layer's "image" is the
//! hidden feature map of the one below (`positions_rows × positions_cols × hidden_per_patch`),
//! and a dense layer is the special case of one patch covering the whole map (stride 1, one
//! position), so the same model, passes, trainer and file serve both.
//!
//! `--layers` takes comma-separated specifications: `local:PATCH:STRIDE:UNITS` (one filter bank
//! per position), `tied:PATCH:STRIDE:UNITS` (one shared bank, a convolutional RBM), and
//! `dense:UNITS`. Raina's geometry for 160² inputs (25,600 → 82,944 → 8,192 → 4,608 → 1,024):
//! `local:24:8:256,local:4:2:128,local:3:1:128,dense:1024`.

use super::geometry::Geometry;
use super::model::LocalRbm;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerSpec {
    Local { patch: usize, stride: usize, units: usize, tied: bool },
    Dense { units: usize },
}

/// A trained layer of a stack (the alias says what the stack holds).
pub type StackLayer = LocalRbm;

impl LayerSpec {
    /// Parses one `--layers` entry; errors name the flag and the entry.
    pub fn parse(text: &str) -> Result<LayerSpec, String> {
        let fail = |why: &str| format!("--layers: '{text}': {why}; expected local:PATCH:STRIDE:UNITS, tied:PATCH:STRIDE:UNITS or dense:UNITS");
        let parts: Vec<&str> = text.trim().split(':').collect();
        let number = |s: &str| s.parse::<usize>().map_err(|_| fail(&format!("'{s}' is not a whole number")));
        match parts.as_slice() {
            ["local" | "tied", patch, stride, units] => {
                Ok(LayerSpec::Local { patch: number(patch)?, stride: number(stride)?, units: number(units)?, tied: parts[0] == "tied" })
            }
            ["dense", units] => Ok(LayerSpec::Dense { units: number(units)? }),
            _ => Err(fail("unknown form")),
        }
    }

    pub fn parse_list(text: &str) -> Result<Vec<LayerSpec>, String> {
        let specs: Vec<LayerSpec> = text.split(',').filter(|s| !s.trim().is_empty()).map(LayerSpec::parse).collect::<Result<_, _>>()?;
        if specs.is_empty() {
            return Err("--layers: no layers given".into());
        }
        Ok(specs)
    }
}

/// The geometries of a stack over an input image of `rows × cols × channels`; an error names
/// `--layers` and the layer (1-based) besides the geometry's own flag.
pub fn plan_stack(rows: usize, cols: usize, channels: usize, specs: &[LayerSpec]) -> Result<Vec<Geometry>, String> {
    let mut plan = Vec::with_capacity(specs.len());
    let (mut r, mut c, mut ch) = (rows, cols, channels);
    for (k, spec) in specs.iter().enumerate() {
        let geometry = match *spec {
            LayerSpec::Local { patch, stride, units, tied } => Geometry::new(r, c, ch, patch, stride, units, tied),
            LayerSpec::Dense { units } => {
                if r != c {
                    Err(format!("a dense layer over a {r} × {c} map; expected a square map (one patch covering it)"))
                } else {
                    Geometry::new(r, c, ch, r, 1, units, false)
                }
            }
        }
        .map_err(|e| if k == 0 && specs.len() == 1 { e } else { format!("--layers, layer {} over a {r} × {c} × {ch} input: {e}", k + 1) })?;
        (r, c, ch) = geometry.feature_map();
        plan.push(geometry);
    }
    Ok(plan)
}

/// Hidden probabilities of `cases` through the trained layers, each the next one's input.
pub fn propagate(layers: &[LocalRbm], cases: &[f32]) -> Vec<f32> {
    let mut current = cases.to_vec();
    let mut buffers = super::PassBuffers::default();
    for layer in layers {
        let (nv, nh) = (layer.geometry.n_visible(), layer.geometry.n_hidden());
        let rows = current.len() / nv;
        let mut next = vec![0.0; rows * nh];
        for (input, output) in current.chunks(64 * nv).zip(next.chunks_mut(64 * nh)) {
            layer.hidden_probabilities(input, output, &mut buffers);
        }
        current = next;
    }
    current
}
