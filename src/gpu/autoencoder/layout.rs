//! Where things live in the device buffers of the autoencoder cost: the padded parameter
//! (and gradient) vector, and the small `stats` buffer of ρ̂, the sparsity term, the partial
//! sums and the results.

use crate::gpu::reduce::split;

/// Every block starts on a multiple of this many f32 (256 bytes, WebGPU's default
/// `minStorageBufferOffsetAlignment`), so the GEMMs bind each block without a residual
/// offset and can read it a vec4 at a time.
pub const BLOCK_ALIGN: usize = 64;

/// Rows per workgroup of the column-sum kernels (autoencoder_cost.wgsl's `ROWS_PER_GROUP`).
pub const ROWS_PER_GROUP: usize = 64;
/// Columns per workgroup of the column-sum kernels (`COLS`).
pub const COLUMNS_PER_GROUP: usize = 64;
/// Invocations per workgroup of the 1-D kernels (`WG`).
pub const WORKGROUP: usize = 256;
/// Parameters per `decay` workgroup while that makes at most 4096 workgroups.
pub const DECAY_SPAN: usize = 2048;
/// Results at the start of `stats`: the sums of J's three terms, three error counts, two
/// spare.
pub const RESULTS: usize = 8;

fn align(n: usize) -> usize {
    n.next_multiple_of(BLOCK_ALIGN)
}

/// The device layout of θ (and of the gradient): UFLDL's blocks `W1, W2, b1, b2` in that
/// order, as in [`Autoencoder::to_params`](crate::autoencoder::Autoencoder::to_params), each
/// starting on a multiple of [`BLOCK_ALIGN`] elements, zero in the gaps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamLayout {
    pub n_visible: usize,
    pub n_hidden: usize,
    pub w2: usize,
    pub b1: usize,
    pub b2: usize,
    /// Elements of the padded vector.
    pub len: usize,
}

/// One block: its name, where it starts in the flat vector and on the device, its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub name: &'static str,
    pub flat: usize,
    pub device: usize,
    pub len: usize,
}

impl ParamLayout {
    pub fn new(n_visible: usize, n_hidden: usize) -> ParamLayout {
        let weights = n_visible * n_hidden;
        let w2 = align(weights);
        let b1 = w2 + align(weights);
        let b2 = b1 + align(n_hidden);
        ParamLayout { n_visible, n_hidden, w2, b1, b2, len: b2 + align(n_visible) }
    }

    /// Parameters of the flat (unpadded) vector.
    pub fn n_params(&self) -> usize {
        2 * self.n_visible * self.n_hidden + self.n_hidden + self.n_visible
    }

    pub fn blocks(&self) -> [Block; 4] {
        let (v, h) = (self.n_visible, self.n_hidden);
        [
            Block { name: "W1", flat: 0, device: 0, len: v * h },
            Block { name: "W2", flat: v * h, device: self.w2, len: v * h },
            Block { name: "b1", flat: 2 * v * h, device: self.b1, len: h },
            Block { name: "b2", flat: 2 * v * h + h, device: self.b2, len: v },
        ]
    }

    /// The parameter at device index `e`, named as `autoencoder::cost` names it
    /// (`W1[visible i, hidden j]`, `b2[k]`); `None` in a gap.
    pub fn name_of(&self, e: usize) -> Option<String> {
        let h = self.n_hidden;
        self.blocks().into_iter().find(|b| (b.device..b.device + b.len).contains(&e)).map(|b| {
            let k = e - b.device;
            if b.name.starts_with('W') {
                format!("{}[visible {}, hidden {}]", b.name, k / h, k % h)
            } else {
                format!("{}[{k}]", b.name)
            }
        })
    }
}

/// Element offsets of the regions of the `stats` buffer, and the partial counts behind them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatsLayout {
    /// ρ̂, `h` values.
    pub rho: usize,
    /// `β(−ρ/ρ̂ + (1−ρ)/(1−ρ̂))`, `h` values: the GEMM's bias for δ₂.
    pub delta: usize,
    /// `KL(ρ‖ρ̂ⱼ)`, `h` values.
    pub kl: usize,
    /// Column partial sums, `row_groups × max(v, h)`.
    pub columns: usize,
    /// Σ(x̂ − x)² per `output_delta` workgroup.
    pub recon: usize,
    /// (Σw², non-finite count) per `decay` workgroup.
    pub decay: usize,
    pub len: usize,
    pub row_groups: usize,
    pub recon_groups: usize,
    pub decay_groups: usize,
    /// Parameters per `decay` workgroup (a multiple of 256).
    pub decay_span: usize,
}

impl StatsLayout {
    pub fn new(params: &ParamLayout, rows: usize) -> StatsLayout {
        let (v, h) = (params.n_visible, params.n_hidden);
        let row_groups = rows.div_ceil(ROWS_PER_GROUP);
        let recon_groups = v.div_ceil(COLUMNS_PER_GROUP) * row_groups;
        let (decay_groups, decay_span) = split(params.len, DECAY_SPAN);
        let rho = align(RESULTS);
        let delta = rho + align(h);
        let kl = delta + align(h);
        let columns = kl + align(h);
        let recon = columns + align(row_groups * v.max(h));
        let decay = recon + align(recon_groups);
        let len = decay + align(2 * decay_groups as usize);
        StatsLayout { rho, delta, kl, columns, recon, decay, len, row_groups, recon_groups, decay_groups: decay_groups as usize, decay_span: decay_span as usize }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_disjoint_and_in_flat_order() {
        for (v, h) in [(1, 1), (64, 25), (65, 33), (8192, 4096)] {
            let layout = ParamLayout::new(v, h);
            let blocks = layout.blocks();
            let mut flat_end = 0;
            let mut device_end = 0;
            for b in blocks {
                assert_eq!(b.device % BLOCK_ALIGN, 0, "{v}×{h} {}", b.name);
                assert_eq!(b.flat, flat_end);
                assert!(b.device >= device_end);
                flat_end += b.len;
                device_end = b.device + b.len;
            }
            assert_eq!(flat_end, layout.n_params());
            assert!(device_end <= layout.len);
        }
    }

    #[test]
    fn names_follow_the_cpu_cost() {
        let layout = ParamLayout::new(65, 33);
        assert_eq!(layout.name_of(0).as_deref(), Some("W1[visible 0, hidden 0]"));
        assert_eq!(layout.name_of(layout.w2 + 34).as_deref(), Some("W2[visible 1, hidden 1]"));
        assert_eq!(layout.name_of(layout.b2 + 64).as_deref(), Some("b2[64]"));
        assert_eq!(layout.name_of(65 * 33), None);
    }
}
