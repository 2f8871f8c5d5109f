//! Host side of `shaders/gemm.wgsl`: every matrix product of RBM training, on buffers that stay
//! on the device.
//!
//! ```text
//! C = alpha · op(A) · op(B) [+ C] [+ bias] [→ sigmoid]   and optionally   S = Bernoulli(C)
//! ```
//!
//! Use: make one [`GemmKernels`] per device (it compiles each variant once, on first use),
//! describe a product with a [`GemmOp`], and either
//! - [`GemmKernels::record`] it into a `CommandEncoder` (one compute pass per call), or
//! - [`GemmKernels::prepare`] it once into a [`GemmCall`] (uniforms and bind group built once)
//!   and [`GemmCall::dispatch`] it into a compute pass as often as needed, with a
//!   [`StepTable`] slot selecting the per-batch RNG step and batch start.
//!
//! Nothing here reads back or submits, except the [`gemm_gflops`] benchmark. The CPU reference
//! mapping (row-major, W is `n_visible × n_hidden`):
//!
//! | `Backend` call | op |
//! | --- | --- |
//! | `visible_to_hidden` | `GemmOp::new(rows, nv, nh, v, W, h).bias(hb).activation(..)` |
//! | `hidden_to_visible` | `GemmOp::new(rows, nh, nv, h, W, v).transpose_b().bias(vb)..` (W read as n × k) |
//! | `accumulate_outer` | `GemmOp::new(nv, rows, nh, v, h, grad).transpose_a().alpha(scale).accumulate()` |
//! | `bernoulli` after `visible_to_hidden` | `.sample(h_sample, stream)` |
//!
//! Kernel design (see the header of gemm.wgsl): workgroup-memory tiles, 4 × 4 or 8 × 8
//! outputs per invocation held in vec4 registers, register double buffering of the global
//! loads, and split k (a second, summing dispatch) for small outputs with long k. Natively the
//! kernel is compiled without wgpu's loop counters and index clamps
//! ([`Checks::Trusted`](crate::gpu::shader::Checks::Trusted): it guards every access itself). Measured on an NVIDIA H100 through Vulkan (`deepbelief
//! bench`, 2026-11-22): 8192³ 32.3 TFLOP/s (26.9 with wgpu's checks; PyTorch sgemm in the same
//! run 50.9, the issue's cuBLAS figure 33.5); in CD-1 batches of 192 on 4096 × 11008 the three
//! 192 × 4096 × 11008 products run at about 31 and the paired 4096 × 384 × 11008 gradient at
//! 27.5; 100 × 784 × 500 takes about 20 µs (latency-bound). Tried and dropped: split k in one
//! dispatch (the last workgroup of a tile sums the splits after a storage barrier and an atomic
//! count: 37 µs against 25 for 100 × 784 × 500), k groups inside a workgroup (8 groups of
//! 32 invocations on 16 × 32 tiles: 35 µs), and 128 × 128 tiles with k steps of 16 (the fused
//! 4096 × 384 × 11008 gradient: 2.21 ms against 1.53 with steps of 8).
//!
//! The CD weight update can run as the gradient product's epilogue ([`GemmOp::fused_update`],
//! `shaders/gemm_update.wgsl`) where the device offers [`FUSED_UPDATE_STORAGE_BUFFERS`]
//! storage buffers per stage: on the H100, 4096 × 11008 batches of 192 took 3.17 ms against
//! 3.32 with the update's own pass (gradient + update 1.53 ms against 1.26 + 0.47).
//!
//! Sharing rules (WebGPU's): an op's output buffers (C, samples) must differ from each other and
//! from every input buffer of the same op; `prepare` returns an error otherwise.

mod kernels;
mod throughput;
mod variant;

pub use kernels::{GemmCall, GemmKernels};
#[doc(hidden)]
pub use kernels::Params as GemmParams;
pub(crate) use kernels::variant_sources;
pub use variant::{vec4_aligned, FUSED_UPDATE_STORAGE_BUFFERS};
pub use throughput::{gemm_gflops, gemm_gflops_with, GemmVariant};

use super::buffers::StepTable;
use crate::backend::Activation;
use crate::gpu::update::WeightUpdateBuffers;
use crate::rng::RngStream;

/// Output tile per workgroup and outputs per invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tiling {
    /// 32 × 64 tile, 4 × 4 per invocation, 128 invocations, k step 16 (6 KiB of workgroup
    /// memory): twice the workgroups of Medium, for GPUs where that beats split k.
    Small,
    /// 64 × 64 tile, 4 × 4 per invocation, 256 invocations, k step 16 (8 KiB): small and
    /// mid-sized outputs, with split k.
    Medium,
    /// 128 × 128 tile, 8 × 8 per invocation, 256 invocations, k step 8 (8 KiB): the most
    /// arithmetic per byte moved, for outputs with hundreds of tiles.
    Large,
    /// 64 × 128 tile, 4 × 8 per invocation, 256 invocations, k step 16 (12 KiB).
    Wide,
    /// 128 × 256 tile, 8 × 16 per invocation, 256 invocations, k step 8 (12.5 KiB): twice
    /// Large's arithmetic per slab element read, for the largest outputs.
    Huge,
}

/// Sizes behind a [`Tiling`]: tile `bm × bn` of C, k step `bk`, `tm × tn` outputs per invocation.
#[derive(Clone, Copy, Debug)]
pub struct TileDims {
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub tm: u32,
    pub tn: u32,
}

impl Tiling {
    pub const ALL: [Tiling; 5] = [Tiling::Small, Tiling::Medium, Tiling::Large, Tiling::Wide, Tiling::Huge];

    pub fn dims(self) -> TileDims {
        match self {
            Tiling::Small => TileDims { bm: 32, bn: 64, bk: 16, tm: 4, tn: 4 },
            Tiling::Medium => TileDims { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4 },
            Tiling::Large => TileDims { bm: 128, bn: 128, bk: 8, tm: 8, tn: 8 },
            Tiling::Wide => TileDims { bm: 64, bn: 128, bk: 16, tm: 4, tn: 8 },
            Tiling::Huge => TileDims { bm: 128, bn: 256, bk: 8, tm: 8, tn: 16 },
        }
    }

    /// [`Self::dims`] with the k step a [`Tuning`] asks for (`deep_k`: 16 for Large).
    pub fn dims_tuned(self, tuning: &Tuning) -> TileDims {
        let mut d = self.dims();
        if tuning.deep_k {
            d.bk = 16;
        }
        d
    }

    /// Number of output tiles for an `m × n` product.
    pub fn tiles(self, m: u32, n: u32) -> u32 {
        let d = self.dims();
        m.div_ceil(d.bm) * n.div_ceil(d.bn)
    }

    /// The tiling for an `m × n` output, from measurements on an H100 (Vulkan, see the
    /// module docs and `deepbelief bench --gemm-sweep`): Large when it has ≥ 256 tiles (8192³:
    /// 25 TFLOP/s against Wide's 20 and Medium's 18), Wide when it has ≥ 96 (192 × 11008: 18
    /// against Medium's 16 and Large's 12, whose 128-row tiles waste a third of 192 rows;
    /// 192 × 4096 with k = 11008 split 8 ways: 20.0 against Medium's 18.9), Small with split k
    /// for ≤ 128 rows and fewer than 96 Medium tiles (a batch of 100: 100 × 784 × 500 at 4.4
    /// TFLOP/s against Medium's 4.0, 100 × 500 × 784 at 4.4 against 3.8; but 192-row batches
    /// through a 576 × 1024 layer took 1.27 s per million examples with Small against 0.82),
    /// else Medium.
    pub fn auto(m: u32, n: u32) -> Tiling {
        if Tiling::Large.tiles(m, n) >= 256 {
            Tiling::Large
        } else if Tiling::Wide.tiles(m, n) >= 96 {
            Tiling::Wide
        } else if m <= 128 && Tiling::Medium.tiles(m, n) < 96 {
            Tiling::Small
        } else {
            Tiling::Medium
        }
    }
}

/// Workgroups of the mid-sized tilings that an H100 runs at once (132 SMs × 2), the wave of
/// [`auto_splits`]. On an H100, 4096 × 11008 batches of 192 ran their 192 × 4096 × 11008
/// products (258 Wide tiles: one nearly full wave) at 33.7 TFLOP/s unsplit against 32.0 with
/// 4 splits, while 192 × 2304 × 16000 (375 tiles: 71% of two waves) was faster with 2 splits
/// (95% of three): 14.5 s per million examples against 15.4.
pub const WAVE: u32 = 264;

/// Split-k factor for an `m × n × k` product: with 96–511 tiles and k ≥ 2048, the split (chunks
/// of ≥ 1024, at most 8) whose workgroups fill whole waves best (see [`WAVE`]; H100:
/// 192 × 11008 × 4096 NT from 12.7 to 19.2 TFLOP/s, 20.0 with Wide tiles and 8 splits);
/// 1 for other outputs of ≥ 96 tiles; else
/// one split per 4 k steps when that gives at least 4, at most 256 workgroups in all and 16
/// splits. From `deepbelief bench --gemm-sweep` on an H100: 100 × 784 × 500 is best with
/// 4–12 splits (unsplit 0.9 TFLOP/s), 100 × 500 × 784 with 4–8, while the gradient
/// 784 × 200 × 500 is best unsplit (5.9 against 4.7 with 2 splits): the summing pass costs
/// more than short k gains. With vec4 loads, 256 workgroups beat 512 and 128 in whole CD-1
/// batches of 784 × 500 (A/B twice: 82.4–83.2 µs a batch against 83.9–84.4 and 85.2–85.3).
pub fn auto_splits(tiling: Tiling, m: u32, n: u32, k: u32) -> u32 {
    let tiles = tiling.tiles(m, n).max(1);
    if tiles >= 96 {
        // Mid-sized outputs with long k (the hidden → visible product of a wide layer,
        // 192 × 4096 × 11008: 96 Wide tiles, under one wave of an H100's 132 SMs) still
        // leave most of the GPU idle: split k, as far as that fills the waves better by more
        // than 2% (each split adds its partial sums' traffic and the summing pass).
        if tiles >= 512 || k < 2048 {
            return 1;
        }
        let fill = |splits: u32| {
            let groups = tiles * splits;
            groups as f64 / (groups.div_ceil(WAVE) * WAVE) as f64
        };
        let mut best = 1;
        for splits in 2..=(k / 1024).clamp(1, 8) {
            if fill(splits) > fill(best) + 0.02 {
                best = splits;
            }
        }
        return best;
    }
    let by_k = k / (4 * tiling.dims().bk);
    if by_k < 4 {
        return 1;
    }
    256u32.div_ceil(tiles).min(by_k).clamp(1, 16)
}

/// Kernel choices beyond the tiling and split k, picked per product by
/// `variant.rs::auto_tuning` (or forced through [`GemmOp::tuning`], for tests and A/B runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tuning {
    /// Tile rows walked together, column by column within the band (Triton's GROUP_M), so
    /// that the workgroups resident at once share rows of A and columns of B in L2; 1: tiles
    /// row-major over the whole grid.
    pub group_rows: u32,
    /// Slab loads of A as whole vec4 (needs [`variant::vec4_aligned`]).
    pub vec_a: bool,
    /// Slab loads of B as whole vec4 (likewise).
    pub vec_b: bool,
    /// Outputs read and written a vec4 at a time (needs aligned outputs: `vec4_outputs`).
    pub vec_out: bool,
    /// Two slabs of workgroup memory, one barrier per k step instead of two.
    pub double_buffer: bool,
    /// k steps of 16 instead of 8 (Large only).
    pub deep_k: bool,
    /// Tiles wholly inside the matrices take a k loop without bounds checks (not paired).
    pub unchecked_interior: bool,
    /// The next k step's global loads issued before this step's arithmetic (register double
    /// buffering); false: right before their stores into workgroup memory.
    pub register_prefetch: bool,
    /// The epilogue can sample (needed by a product with [`GemmOp::sample`]).
    pub sample_epilogue: bool,
    /// The k steps of one slab written out instead of a loop.
    pub unroll: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning { group_rows: 1, vec_a: false, vec_b: false, vec_out: false, double_buffer: false, deep_k: false, unchecked_interior: false, register_prefetch: true, sample_epilogue: true, unroll: false }
    }
}

/// Element type of the A operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Element {
    F32,
    /// Bytes packed 4 per u32, value = byte / 255 (exactly `f32::from(b) / 255.0`).
    U8,
}

/// A row-major matrix in a device buffer: element (r, c) is at `offset + r · ld + c`, counted in
/// elements (in bytes for [`Element::U8`]).
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub offset: u64,
    pub ld: u32,
}

impl<'a> MatRef<'a> {
    /// The matrix at the start of `buffer` with row stride `ld`.
    pub fn new(buffer: &'a wgpu::Buffer, ld: u32) -> Self {
        MatRef { buffer, offset: 0, ld }
    }

    /// The matrix starting at element `offset` of `buffer`.
    pub fn at(buffer: &'a wgpu::Buffer, offset: u64, ld: u32) -> Self {
        MatRef { buffer, offset, ld }
    }
}

/// A vector in a device buffer, starting at element `offset`.
#[derive(Clone, Copy, Debug)]
pub struct VecRef<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub offset: u64,
}

impl<'a> VecRef<'a> {
    pub fn new(buffer: &'a wgpu::Buffer) -> Self {
        VecRef { buffer, offset: 0 }
    }
}

/// Row selection for A: stored row `s` of A is row `order[start + slot.row_shift + s]` of the
/// matrix the [`MatRef`] describes (the shuffled batch; the data never moves).
#[derive(Clone, Copy, Debug)]
pub struct Gather<'a> {
    /// u32 row indices.
    pub order: &'a wgpu::Buffer,
    pub start: u32,
}

/// Bernoulli samples of the epilogue's output: `out[r, j] = uniform(index_base + r·n + j) < C[r, j]`
/// for the stream's key and purpose, and step `stream.step + slot.step`.
#[derive(Clone, Copy, Debug)]
pub struct SampleTo<'a> {
    pub out: MatRef<'a>,
    pub stream: RngStream,
    pub index_base: u64,
}

/// The second operand pair of a [`GemmOp::paired`] product: k rows `k_split ..` of op(A) and
/// op(B) come from `a` and `b` (same layouts and strides as the first pair), scaled by `alpha`.
#[derive(Clone, Copy, Debug)]
pub struct Pair<'a> {
    pub a: MatRef<'a>,
    pub b: MatRef<'a>,
    pub k_split: u32,
    pub alpha: f32,
}

/// Partials a fused update of an `m × n` gradient writes: one per task (an output tile, or
/// half of one: see [`staggered_half_tasks`]).
pub fn fused_update_partials(m: u32, n: u32) -> u32 {
    fused_update_tasks(Tiling::auto(m, n), m, n)
}

/// Workgroups (tasks) of a fused update of an `m × n` gradient with `tiling`: one per tile,
/// plus one for each tile split into two half tasks.
pub(super) fn fused_update_tasks(tiling: Tiling, m: u32, n: u32) -> u32 {
    tiling.tiles(m, n) + staggered_half_tasks(tiling, m, n) / 2
}

/// Half-height tasks a fused update of an `m × n` gradient starts with, interleaved with whole
/// tiles (gemm.wgsl's `main`): for 8-row-per-invocation tilings with at least a wave of tiles,
/// enough to start half a wave ([`WAVE`]) of workgroups half a tile out of phase with the
/// rest, taken from the first tile row. Else 0. (4096 × 11008 batches of 192 on an H100:
/// 15.77 s per million examples against 15.97–15.98.)
pub fn staggered_half_tasks(tiling: Tiling, m: u32, n: u32) -> u32 {
    let d = tiling.dims();
    if d.tm != 8 || m < d.bm || tiling.tiles(m, n) < WAVE {
        return 0;
    }
    (WAVE / 2).min(2 * n.div_ceil(d.bn)) / 2 * 2
}

/// One matrix product: `C = alpha · op(A) · op(B) [+ C if accumulate] [+ bias] → activation`,
/// then optionally Bernoulli samples of C. `op(A)` is `m × k`, `op(B)` is `k × n`, C is `m × n`.
#[derive(Clone, Copy, Debug)]
pub struct GemmOp<'a> {
    pub m: u32,
    pub k: u32,
    pub n: u32,
    /// Stored `m × k`, or `k × m` when `a_transposed`.
    pub a: MatRef<'a>,
    pub a_element: Element,
    pub a_transposed: bool,
    pub a_gather: Option<Gather<'a>>,
    /// Stored `k × n`, or `n × k` when `b_transposed`.
    pub b: MatRef<'a>,
    pub b_transposed: bool,
    pub c: MatRef<'a>,
    pub alpha: f32,
    /// Add the product to C's current values (beta = 1) instead of overwriting them.
    pub accumulate: bool,
    /// `n` values added per column.
    pub bias: Option<VecRef<'a>>,
    pub activation: Activation,
    pub sample: Option<SampleTo<'a>>,
    /// `C = alpha·A·B + pair.alpha·A2·B2` with the k range cut at `pair.k_split` (no bias, u8
    /// or gathered A with it).
    pub pair: Option<Pair<'a>>,
    /// `None`: [`Tiling::auto`].
    pub tiling: Option<Tiling>,
    /// Split-k factor (k cut into this many ranges, summed by a second dispatch); `None`:
    /// [`auto_splits`].
    pub split_k: Option<u32>,
    /// Per-batch slots for [`GemmCall::dispatch`]; `None`: a single zero slot.
    pub slots: Option<&'a StepTable>,
    /// The weight update as the epilogue (no accumulate, bias, activation, sample or split k).
    pub update: Option<WeightUpdateBuffers<'a>>,
    /// `None`: `variant.rs::auto_tuning`. A forced choice the product cannot take (vec4
    /// loads of misaligned operands, say) is an error of `prepare`.
    pub tuning: Option<Tuning>,
}

impl<'a> GemmOp<'a> {
    /// `C = A · B` with A `m × k`, B `k × n`, C `m × n`, all packed (ld = number of columns).
    pub fn new(m: u32, k: u32, n: u32, a: &'a wgpu::Buffer, b: &'a wgpu::Buffer, c: &'a wgpu::Buffer) -> Self {
        GemmOp {
            m,
            k,
            n,
            a: MatRef::new(a, k),
            a_element: Element::F32,
            a_transposed: false,
            a_gather: None,
            b: MatRef::new(b, n),
            b_transposed: false,
            c: MatRef::new(c, n),
            alpha: 1.0,
            accumulate: false,
            bias: None,
            activation: Activation::Linear,
            sample: None,
            pair: None,
            tiling: None,
            split_k: None,
            slots: None,
            update: None,
            tuning: None,
        }
    }

    /// A is stored `k × m` (packed: ld = m); op(A) = Aᵀ.
    pub fn transpose_a(mut self) -> Self {
        self.a_transposed = true;
        self.a.ld = self.m;
        self
    }

    /// B is stored `n × k` (packed: ld = k); op(B) = Bᵀ.
    pub fn transpose_b(mut self) -> Self {
        self.b_transposed = true;
        self.b.ld = self.k;
        self
    }

    /// A holds u8 values packed 4 per u32 (value = byte / 255); offsets and ld in bytes.
    pub fn u8_a(mut self) -> Self {
        self.a_element = Element::U8;
        self
    }

    pub fn gather_a(mut self, order: &'a wgpu::Buffer, start: u32) -> Self {
        self.a_gather = Some(Gather { order, start });
        self
    }

    pub fn with_a(mut self, a: MatRef<'a>) -> Self {
        self.a = a;
        self
    }

    pub fn with_b(mut self, b: MatRef<'a>) -> Self {
        self.b = b;
        self
    }

    pub fn with_c(mut self, c: MatRef<'a>) -> Self {
        self.c = c;
        self
    }

    pub fn alpha(mut self, alpha: f32) -> Self {
        self.alpha = alpha;
        self
    }

    pub fn accumulate(mut self) -> Self {
        self.accumulate = true;
        self
    }

    pub fn bias(mut self, bias: &'a wgpu::Buffer) -> Self {
        self.bias = Some(VecRef::new(bias));
        self
    }

    pub fn activation(mut self, activation: Activation) -> Self {
        self.activation = activation;
        self
    }

    /// Bernoulli samples of C into `out` (packed `m × n`), stream indices `r · n + j`.
    pub fn sample(mut self, out: &'a wgpu::Buffer, stream: RngStream) -> Self {
        self.sample = Some(SampleTo { out: MatRef::new(out, self.n), stream, index_base: 0 });
        self
    }

    /// Cuts k at `k_split`: k rows from `k_split` on come from `a2` and `b2` (packed like A and
    /// B, with the same strides) and are scaled by `alpha2` instead of alpha. The CD gradient
    /// `v0ᵀh0/rows − vkᵀhk/chains` as one product of depth rows + chains.
    pub fn paired(mut self, a2: &'a wgpu::Buffer, b2: &'a wgpu::Buffer, k_split: u32, alpha2: f32) -> Self {
        self.pair = Some(Pair { a: MatRef::new(a2, self.a.ld), b: MatRef::new(b2, self.b.ld), k_split, alpha: alpha2 });
        self
    }

    pub fn tiling(mut self, tiling: Tiling) -> Self {
        self.tiling = Some(tiling);
        self
    }

    pub fn tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }

    pub fn split_k(mut self, splits: u32) -> Self {
        self.split_k = Some(splits);
        self
    }

    pub fn slots(mut self, slots: &'a StepTable) -> Self {
        self.slots = Some(slots);
        self
    }

    /// The CD weight update as the product's epilogue (`shaders/gemm_update.wgsl`): C must be
    /// `update.gradient` (packed `nv × nh`); each element then gets
    /// `g' = g − (wp·w + mean_input[i]·d[j]); v = m·v + lr·g'; w += v; G ← g'` with the rates of
    /// `state`, and each tile writes its `(Σ g'·p, Σ g'², Σ p², max |v|)` partial
    /// ([`fused_update_partials`] of them), as
    /// [`UpdateKernels::weight_update`](crate::gpu::update::UpdateKernels::weight_update) does in
    /// a pass of its own on the same buffers. Needs [`GemmKernels::supports_fused_update`].
    pub fn fused_update(mut self, update: WeightUpdateBuffers<'a>) -> Self {
        self.update = Some(update);
        self
    }
}
