//! The geometry of a local-patch RBM layer (Raina, Madhavan & Ng 2009, §5): an image of
//! `rows × cols × channels` visible units tiled by square patches of `patch × patch` pixels
//! whose top-left corners are `stride` apart, each patch connected to its own group of
//! `hidden_per_patch` hidden units.
//!
//! Layouts (row-major everywhere, as the rest of the crate):
//! - a visible case: pixel `(r, c)`, channel `ch` at `(r·cols + c)·channels + ch`;
//! - a patch's inputs: offset `(dr·patch + dc)·channels + ch` reads pixel `(r₀ + dr, c₀ + dc)`;
//! - a hidden case: position `(pr, pc)` (index `pr·positions_cols + pc`), unit `j` at
//!   `position·hidden_per_patch + j`, i.e. a feature map `positions_rows × positions_cols ×
//!   hidden_per_patch`, which is the next layer's "image" with the units as its channels.
//!
//! Every pixel must be covered by some patch (`stride ≤ patch` and the last patch reaching
//! the far edge), so reconstruction gathers something for every visible unit.

use serde::{Deserialize, Serialize};

/// Weights one layer may hold at most: 2³⁰ f32 (4 GiB), and training keeps three such arrays
/// (weights, velocity, gradient). Raina's largest layer (192², 53.5M) is 2% of it.
pub const MAX_LAYER_WEIGHTS: u64 = 1 << 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    pub rows: usize,
    pub cols: usize,
    pub channels: usize,
    pub patch: usize,
    pub stride: usize,
    pub hidden_per_patch: usize,
    /// One filter bank shared by every position (a convolutional RBM) instead of one per patch.
    pub tied: bool,
}

impl Geometry {
    /// Checks the geometry; errors name the CLI flag that sets the offending value.
    pub fn new(rows: usize, cols: usize, channels: usize, patch: usize, stride: usize, hidden_per_patch: usize, tied: bool) -> Result<Geometry, String> {
        if rows == 0 || cols == 0 {
            return Err(format!("--image-size: the image is {rows} × {cols} pixels; expected at least 1 × 1"));
        }
        if channels == 0 {
            return Err("--channels: 0 channels; expected at least 1".into());
        }
        if patch == 0 {
            return Err("--patch: a patch of 0 pixels; expected at least 1".into());
        }
        if patch > rows || patch > cols {
            return Err(format!("--patch: a {patch} × {patch} patch does not fit in the {rows} × {cols} image (--image-size)"));
        }
        if stride == 0 {
            return Err("--stride: 0; expected at least 1 pixel between patches".into());
        }
        if stride > patch {
            return Err(format!("--stride: patches {patch} pixels wide (--patch) and {stride} apart leave pixels between them that no patch covers; expected a stride of at most {patch}"));
        }
        for (side, name) in [(rows, "rows"), (cols, "columns")] {
            if !(side - patch).is_multiple_of(stride) {
                let covered = (side - patch) / stride * stride + patch;
                return Err(format!(
                    "--stride: patches of {patch} at stride {stride} cover {covered} of the image's {side} {name}, leaving the last {} uncovered; expected (size − patch) to be a multiple of the stride (e.g. --image-size {covered} or {})",
                    side - covered,
                    covered + stride
                ));
            }
        }
        if hidden_per_patch == 0 {
            return Err("--hidden-per-patch: 0 hidden units per patch; expected at least 1".into());
        }
        let geometry = Geometry { rows, cols, channels, patch, stride, hidden_per_patch, tied };
        let weights = geometry.weight_count_u64();
        if weights > MAX_LAYER_WEIGHTS {
            return Err(format!(
                "--hidden-per-patch / --patch / --image-size: this layer would hold {weights} weights ({} positions × {} inputs × {hidden_per_patch} units), more than the {MAX_LAYER_WEIGHTS} allowed (4 GiB of f32, three times over while training)",
                geometry.positions(),
                geometry.patch_inputs()
            ));
        }
        Ok(geometry)
    }

    pub fn positions_rows(&self) -> usize {
        (self.rows - self.patch) / self.stride + 1
    }

    pub fn positions_cols(&self) -> usize {
        (self.cols - self.patch) / self.stride + 1
    }

    pub fn positions(&self) -> usize {
        self.positions_rows() * self.positions_cols()
    }

    /// Inputs of one patch: `patch² · channels`.
    pub fn patch_inputs(&self) -> usize {
        self.patch * self.patch * self.channels
    }

    pub fn n_visible(&self) -> usize {
        self.rows * self.cols * self.channels
    }

    pub fn n_hidden(&self) -> usize {
        self.positions() * self.hidden_per_patch
    }

    /// Filter banks held: one per position, or one when tied.
    pub fn banks(&self) -> usize {
        if self.tied {
            1
        } else {
            self.positions()
        }
    }

    fn weight_count_u64(&self) -> u64 {
        self.banks() as u64 * self.patch_inputs() as u64 * self.hidden_per_patch as u64
    }

    pub fn weight_count(&self) -> usize {
        self.banks() * self.patch_inputs() * self.hidden_per_patch
    }

    /// Hidden biases held: per position and unit, or per unit when tied.
    pub fn hidden_bias_count(&self) -> usize {
        self.banks() * self.hidden_per_patch
    }

    /// Index in a visible case of input `offset` of the patch at `position`.
    pub fn pixel_of(&self, position: usize, offset: usize) -> usize {
        let (pr, pc) = (position / self.positions_cols(), position % self.positions_cols());
        let ch = offset % self.channels;
        let dc = (offset / self.channels) % self.patch;
        let dr = offset / (self.channels * self.patch);
        ((pr * self.stride + dr) * self.cols + pc * self.stride + dc) * self.channels + ch
    }

    /// The geometry the hidden feature map offers a layer above: positions as pixels, the
    /// units as channels.
    pub fn feature_map(&self) -> (usize, usize, usize) {
        (self.positions_rows(), self.positions_cols(), self.hidden_per_patch)
    }
}

/// For every visible unit, the `(position, offset)` pairs of the patches covering it, in
/// ascending position order: the down pass gathers over these lists, so each output has one
/// writer and no atomics are needed. Stored flat (CSR): unit `i`'s pairs are
/// `entries[starts[i]..starts[i + 1]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoverLists {
    pub starts: Vec<u32>,
    /// `position · patch_inputs + offset`: the index into one case's patch products.
    pub entries: Vec<u32>,
}

impl CoverLists {
    pub fn new(g: &Geometry) -> CoverLists {
        let (n, width) = (g.n_visible(), g.patch_inputs());
        let mut counts = vec![0u32; n + 1];
        for position in 0..g.positions() {
            for offset in 0..width {
                counts[g.pixel_of(position, offset) + 1] += 1;
            }
        }
        for i in 0..n {
            counts[i + 1] += counts[i];
        }
        let starts = counts;
        let mut fill = starts.clone();
        let mut entries = vec![0u32; starts[n] as usize];
        // Positions ascend in the outer loop, so each list comes out in position order.
        for position in 0..g.positions() {
            for offset in 0..width {
                let pixel = g.pixel_of(position, offset);
                entries[fill[pixel] as usize] = (position * width + offset) as u32;
                fill[pixel] += 1;
            }
        }
        CoverLists { starts, entries }
    }

    pub fn covering(&self, pixel: usize) -> &[u32] {
        &self.entries[self.starts[pixel] as usize..self.starts[pixel + 1] as usize]
    }
}
