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
//! loads, and split k (a second, summing dispatch) for small outputs with long k. Measured on an
//! NVIDIA H100 through Vulkan (release build, `throughput_table` in tests/gpu_kernels_gemm.rs):
//! 8192³ 25 TFLOP/s (cuBLAS: 33.5), 192 × 4096 × 11008 18, 100 × 784 × 500 3.2 (≈ 25 µs a
//! product, latency-bound), 784 × 100 × 500 (the gradient) 4.5. With the padded k-major tiles
//! and split k for long-k mid-sized outputs (`deepbelief bench`, 2026-11-22): 192 × 11008 × 4096
//! NN 19.9, NT (C = A·Bᵀ, 192 × 4096 output, k = 11008) 19.2 (was 9.0), TN 23.6.
//!
//! Sharing rules (WebGPU's): an op's output buffers (C, samples) must differ from each other and
//! from every input buffer of the same op; `prepare` returns an error otherwise.

use super::buffers::{self, window, StepTable};
use super::shader::{self, Const, PipelineCache};
use super::{GpuContext, GpuError};
use crate::backend::Activation;
use crate::rng::RngStream;
use bytemuck::{Pod, Zeroable};
use wgpu::util::DeviceExt;

const SOURCE: &str = include_str!("../../shaders/gemm.wgsl");

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
    pub const ALL: [Tiling; 4] = [Tiling::Small, Tiling::Medium, Tiling::Large, Tiling::Wide];

    pub fn dims(self) -> TileDims {
        match self {
            Tiling::Small => TileDims { bm: 32, bn: 64, bk: 16, tm: 4, tn: 4 },
            Tiling::Medium => TileDims { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4 },
            Tiling::Large => TileDims { bm: 128, bn: 128, bk: 8, tm: 8, tn: 8 },
            Tiling::Wide => TileDims { bm: 64, bn: 128, bk: 16, tm: 4, tn: 8 },
        }
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
    /// 192 × 4096 with k = 11008 split 8 ways: 20.0 against Medium's 18.9), else Medium with
    /// split k.
    pub fn auto(m: u32, n: u32) -> Tiling {
        if Tiling::Large.tiles(m, n) >= 256 {
            Tiling::Large
        } else if Tiling::Wide.tiles(m, n) >= 96 {
            Tiling::Wide
        } else {
            Tiling::Medium
        }
    }
}

/// Split-k factor for an `m × n × k` product: with 96–511 tiles and k ≥ 2048, enough splits
/// (chunks of ≥ 1024) for about 1024 workgroups (H100: 192 × 11008 × 4096 NT from 12.7 to
/// 19.2 TFLOP/s, 20.0 with Wide tiles and 8 splits); 1 for other outputs of ≥ 96 tiles; else
/// one split per 4 k steps when that gives at least 4, at most 512 workgroups in all and 16
/// splits. From `deepbelief bench --gemm-sweep` on an H100: 100 × 784 × 500 is best with 12
/// splits (3.3 TFLOP/s; unsplit 0.9), 100 × 500 × 784 with 6–8 (3.3), while the gradient
/// 784 × 200 × 500 is best unsplit (5.9 against 4.7 with 2 splits): the summing pass costs
/// more than short k gains.
pub fn auto_splits(tiling: Tiling, m: u32, n: u32, k: u32) -> u32 {
    let tiles = tiling.tiles(m, n).max(1);
    if tiles >= 96 {
        // Mid-sized outputs with long k (the hidden → visible product of a wide layer,
        // 192 × 4096 × 11008: 96 Wide tiles, under one wave of an H100's 132 SMs) still
        // leave most of the GPU idle: split k into chunks of at least 1024 until about 1024
        // workgroups are in flight.
        if tiles >= 512 || k < 2048 {
            return 1;
        }
        return 1024u32.div_ceil(tiles).min(k / 1024).clamp(1, 8);
    }
    let by_k = k / (4 * tiling.dims().bk);
    if by_k < 4 {
        return 1;
    }
    512u32.div_ceil(tiles).min(by_k).clamp(1, 16)
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
    /// `None`: [`Tiling::auto`].
    pub tiling: Option<Tiling>,
    /// Split-k factor (k cut into this many ranges, summed by a second dispatch); `None`:
    /// [`auto_splits`].
    pub split_k: Option<u32>,
    /// Per-batch slots for [`GemmCall::dispatch`]; `None`: a single zero slot.
    pub slots: Option<&'a StepTable>,
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
            tiling: None,
            split_k: None,
            slots: None,
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

    pub fn tiling(mut self, tiling: Tiling) -> Self {
        self.tiling = Some(tiling);
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
}

const FLAG_ACCUMULATE: u32 = 1;
const FLAG_BIAS: u32 = 2;
const FLAG_SIGMOID: u32 = 4;
const FLAG_SAMPLE: u32 = 8;

/// `struct Params` of gemm.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    m: u32,
    n: u32,
    k: u32,
    tiles_n: u32,
    tiles_total: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    a_offset: u32,
    b_offset: u32,
    c_offset: u32,
    bias_offset: u32,
    order_offset: u32,
    sample_offset: u32,
    lds: u32,
    flags: u32,
    alpha: f32,
    purpose: u32,
    key: [u32; 2],
    step: [u32; 2],
    index_base: [u32; 2],
    splits: u32,
    k_chunk: u32,
    pad: [u32; 2],
}

/// The GEMM pipelines of one device, compiled per variant on first use, and the placeholder
/// buffers bound where an op has no bias, samples or order.
pub struct GemmKernels {
    layout: wgpu::BindGroupLayout,
    pipelines: PipelineCache,
    unused_read: wgpu::Buffer,
    unused_write: wgpu::Buffer,
    unused_partials: wgpu::Buffer,
    zero_slot: StepTable,
}

/// A prepared product: its pipeline, uniforms and bind group, ready to dispatch any number of
/// times (its buffers must outlive the dispatches' submission).
pub struct GemmCall {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    groups: (u32, u32, u32),
    /// Split k: the summing pass and the buffer of partial sums.
    finish: Option<(wgpu::ComputePipeline, (u32, u32, u32), wgpu::Buffer)>,
    slot_offsets: Vec<u32>,
    /// The variant chosen, for reports.
    pub tiling: Tiling,
    pub splits: u32,
}

impl GemmCall {
    /// Records the product into `pass` with the values of step-table slot `slot`
    /// (0 for an op without a table).
    pub fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, slot: u32) {
        if self.groups.0 == 0 {
            return;
        }
        let offset = *self.slot_offsets.get(slot as usize).unwrap_or_else(|| panic!("slot {slot} of {}", self.slot_offsets.len()));
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[offset]);
        pass.dispatch_workgroups(self.groups.0, self.groups.1, self.groups.2);
        if let Some((pipeline, groups, _)) = &self.finish {
            pass.set_pipeline(pipeline);
            pass.dispatch_workgroups(groups.0, groups.1, groups.2);
        }
    }
}

fn u32_offset(value: u64, what: &str) -> Result<u32, GpuError> {
    u32::try_from(value).map_err(|_| GpuError(format!("{what}: offset {value} beyond 2^32 elements")))
}

impl GemmKernels {
    pub fn new(ctx: &GpuContext) -> Self {
        use wgpu::BufferBindingType::{Storage, Uniform};
        let layout = ctx.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("gemm"),
            entries: &[
                shader::buffer_entry(0, Uniform, false),
                shader::buffer_entry(1, Uniform, true),
                shader::buffer_entry(2, Storage { read_only: true }, false),
                shader::buffer_entry(3, Storage { read_only: true }, false),
                shader::buffer_entry(4, Storage { read_only: false }, false),
                shader::buffer_entry(5, Storage { read_only: true }, false),
                shader::buffer_entry(6, Storage { read_only: false }, false),
                shader::buffer_entry(7, Storage { read_only: true }, false),
                shader::buffer_entry(8, Storage { read_only: false }, false),
            ],
        });
        let pipelines = PipelineCache::new(&ctx.device, "gemm", &layout);
        GemmKernels {
            pipelines,
            layout,
            unused_read: buffers::zeros(ctx, "gemm_unused_read", 16),
            unused_write: buffers::zeros(ctx, "gemm_unused_write", 16),
            unused_partials: buffers::zeros(ctx, "gemm_unused_partials", 16),
            zero_slot: StepTable::new(ctx, &[buffers::StepSlot::default()]),
        }
    }

    fn pipeline(&self, ctx: &GpuContext, tiling: Tiling, op: &GemmOp, entry_point: &str) -> wgpu::ComputePipeline {
        let (a_u8, a_gather) = (op.a_element == Element::U8, op.a_gather.is_some());
        let key = format!("{tiling:?}-at{}-u8{}-g{}-bt{}", op.a_transposed as u8, a_u8 as u8, a_gather as u8, op.b_transposed as u8);
        let d = tiling.dims();
        self.pipelines.get(&ctx.device, &key, entry_point, || {
            shader::assemble(
                SOURCE,
                &[
                    ("BM", Const::U32(d.bm)),
                    ("BN", Const::U32(d.bn)),
                    ("BK", Const::U32(d.bk)),
                    ("TM", Const::U32(d.tm)),
                    ("TN", Const::U32(d.tn)),
                    ("WG_X", Const::U32(d.bn / d.tn)),
                    ("WG_Y", Const::U32(d.bm / d.tm)),
                    ("A_TRANS", Const::Bool(op.a_transposed)),
                    ("A_U8", Const::Bool(a_u8)),
                    ("A_GATHER", Const::Bool(a_gather)),
                    ("B_TRANS", Const::Bool(op.b_transposed)),
                    // Row strides (in vec4) of the k-major workgroup tiles: one vec4 of
                    // padding where the slab is filled along k, so that the 16 invocations
                    // storing one row's k values hit different banks (unpadded, they all hit
                    // the same bank: a 16-way conflict on every stash).
                    ("A_STRIDE", Const::U32(d.bm / 4 + u32::from(!op.a_transposed))),
                    ("B_STRIDE", Const::U32(d.bn / 4 + u32::from(op.b_transposed))),
                ],
                true,
            )
        })
    }

    /// Validates `op`, builds its uniforms and bind group, and picks its pipeline.
    pub fn prepare(&self, ctx: &GpuContext, op: &GemmOp) -> Result<GemmCall, GpuError> {
        let (m, k, n) = (op.m as u64, op.k as u64, op.n as u64);
        let tiling = op.tiling.unwrap_or_else(|| Tiling::auto(op.m, op.n));
        let pipeline = self.pipeline(ctx, tiling, op, "main");

        // Aliasing: WebGPU forbids a buffer bound writable twice, or writable and read-only.
        let writable = [Some(op.c.buffer), op.sample.map(|s| s.out.buffer)];
        let readable = [Some(op.a.buffer), Some(op.b.buffer), op.bias.map(|b| b.buffer), op.a_gather.map(|g| g.order)];
        if writable[1] == writable[0] {
            return Err(GpuError("gemm: C and the sample output must be different buffers".into()));
        }
        for w in writable.iter().flatten() {
            if readable.iter().flatten().any(|r| r == w) {
                return Err(GpuError("gemm: an output buffer is also an input (use separate buffers)".into()));
            }
        }

        // Operand extents (in elements) and binding windows.
        let extent = |rows: u64, cols: u64, ld: u32, what: &str| -> Result<u64, GpuError> {
            if rows > 1 && (ld as u64) < cols {
                return Err(GpuError(format!("gemm: {what} has {cols} columns but row stride {ld}")));
            }
            Ok(if rows == 0 || cols == 0 { 0 } else { (rows - 1) * ld as u64 + cols })
        };
        let (a_rows, a_cols) = if op.a_transposed { (k, m) } else { (m, k) };
        let (b_rows, b_cols) = if op.b_transposed { (n, k) } else { (k, n) };
        let a_size = if op.a_element == Element::U8 { 1 } else { 4 };
        let a_len = extent(a_rows, a_cols, op.a.ld, "A")?;
        let b_len = extent(b_rows, b_cols, op.b.ld, "B")?;
        let c_len = extent(m, n, op.c.ld, "C")?;
        let empty = m == 0 || n == 0 || k == 0;
        let a_window = if empty {
            None
        } else if op.a_gather.is_some() {
            Some(window(ctx, op.a.buffer, op.a.offset * a_size, None, "gemm operand A")?)
        } else {
            Some(window(ctx, op.a.buffer, op.a.offset * a_size, Some(a_len * a_size), "gemm operand A")?)
        };
        let b_window = if empty { None } else { Some(window(ctx, op.b.buffer, op.b.offset * 4, Some(b_len * 4), "gemm operand B")?) };
        let c_window = window(ctx, op.c.buffer, op.c.offset * 4, Some(c_len * 4), "gemm output C")?;
        let bias_window = match op.bias {
            Some(bias) => Some(window(ctx, bias.buffer, bias.offset * 4, Some(n * 4), "gemm bias")?),
            None => None,
        };
        let sample_window = match op.sample {
            Some(s) => Some(window(ctx, s.out.buffer, s.out.offset * 4, Some(extent(m, n, s.out.ld, "sample output")? * 4), "gemm sample output")?),
            None => None,
        };
        let order_window = match op.a_gather {
            Some(g) => Some(window(ctx, g.order, 0, None, "gemm row order")?),
            None => None,
        };

        let tiles_n = op.n.div_ceil(tiling.dims().bn);
        let tiles_total = tiling.tiles(op.m, op.n);
        let bk = tiling.dims().bk;
        let mut splits = op.split_k.unwrap_or_else(|| auto_splits(tiling, op.m, op.n, op.k)).clamp(1, op.k.max(1));
        let max_binding = ctx.device.limits().max_storage_buffer_binding_size;
        if op.split_k.is_none() {
            while splits > 1 && splits as u64 * m * n * 4 > max_binding {
                splits -= 1;
            }
        }
        let k_chunk = op.k.div_ceil(splits).next_multiple_of(bk).max(bk);
        let splits = op.k.div_ceil(k_chunk).max(1);
        let partials = if splits > 1 && m * n > 0 {
            let bytes = splits as u64 * m * n * 4;
            if bytes > max_binding {
                return Err(GpuError(format!("gemm: {splits} k splits of {m}×{n} need {bytes} bytes, over the binding limit")));
            }
            Some(buffers::zeros(ctx, "gemm_partials", bytes))
        } else {
            None
        };
        let mut flags = 0;
        if op.accumulate {
            flags |= FLAG_ACCUMULATE;
        }
        if op.bias.is_some() {
            flags |= FLAG_BIAS;
        }
        if op.activation == Activation::Sigmoid {
            flags |= FLAG_SIGMOID;
        }
        let stream = op.sample.map(|s| s.stream).unwrap_or(RngStream::new(0, 0, crate::rng::Purpose::HiddenSample));
        if op.sample.is_some() {
            flags |= FLAG_SAMPLE;
        }
        let index_base = op.sample.map_or(0, |s| s.index_base);
        let params = Params {
            m: op.m,
            n: op.n,
            k: op.k,
            tiles_n,
            tiles_total,
            lda: op.a.ld,
            ldb: op.b.ld,
            ldc: op.c.ld,
            a_offset: u32_offset(a_window.as_ref().map_or(0, |w| w.residual / a_size), "A")?,
            b_offset: u32_offset(b_window.as_ref().map_or(0, |w| w.residual / 4), "B")?,
            c_offset: u32_offset(c_window.residual / 4, "C")?,
            bias_offset: u32_offset(bias_window.as_ref().map_or(0, |w| w.residual / 4), "bias")?,
            order_offset: op.a_gather.map_or(0, |g| g.start),
            sample_offset: u32_offset(sample_window.as_ref().map_or(0, |w| w.residual / 4), "samples")?,
            lds: op.sample.map_or(0, |s| s.out.ld),
            flags,
            alpha: op.alpha,
            purpose: stream.purpose as u32,
            key: stream.key,
            step: [stream.step as u32, (stream.step >> 32) as u32],
            index_base: [index_base as u32, (index_base >> 32) as u32],
            splits,
            k_chunk,
            pad: [0; 2],
        };
        let params = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("gemm_params"),
            contents: bytemuck::bytes_of(&params),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        fn read<'b>(w: Option<buffers::Window<'b>>, unused: &'b wgpu::Buffer) -> wgpu::BindingResource<'b> {
            match w {
                Some(w) => wgpu::BindingResource::Buffer(w.binding),
                None => unused.as_entire_binding(),
            }
        }
        let slots = op.slots.unwrap_or(&self.zero_slot);
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("gemm"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: params.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: slots.binding() },
                wgpu::BindGroupEntry { binding: 2, resource: read(a_window, &self.unused_read) },
                wgpu::BindGroupEntry { binding: 3, resource: read(b_window, &self.unused_read) },
                wgpu::BindGroupEntry { binding: 4, resource: wgpu::BindingResource::Buffer(c_window.binding) },
                wgpu::BindGroupEntry { binding: 5, resource: read(bias_window, &self.unused_read) },
                wgpu::BindGroupEntry {
                    binding: 6,
                    resource: match sample_window {
                        Some(w) => wgpu::BindingResource::Buffer(w.binding),
                        None => self.unused_write.as_entire_binding(),
                    },
                },
                wgpu::BindGroupEntry { binding: 7, resource: read(order_window, &self.unused_read) },
                wgpu::BindGroupEntry { binding: 8, resource: partials.as_ref().unwrap_or(&self.unused_partials).as_entire_binding() },
            ],
        });
        let finish = partials.map(|partials| {
            let quads = op.m * op.n.div_ceil(4);
            (self.pipeline(ctx, tiling, op, "finish"), shader::grid(quads.div_ceil(256)), partials)
        });
        Ok(GemmCall {
            pipeline,
            bind_group,
            groups: if m == 0 || n == 0 { (0, 0, 0) } else { shader::grid(tiles_total * splits) },
            finish,
            slot_offsets: (0..slots.len()).map(|i| slots.offset(i)).collect(),
            tiling,
            splits,
        })
    }

    /// Prepares `op` and records it as one compute pass of `encoder` (slot 0).
    pub fn record(&self, ctx: &GpuContext, encoder: &mut wgpu::CommandEncoder, op: &GemmOp) -> Result<(), GpuError> {
        let call = self.prepare(ctx, op)?;
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("gemm"), timestamp_writes: None });
        call.dispatch(&mut pass, 0);
        Ok(())
    }
}

/// Operand layouts for [`gemm_gflops`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmVariant {
    /// `A · B` (visible → hidden).
    Nn,
    /// `A · Bᵀ` (hidden → visible).
    Nt,
    /// `Aᵀ · B` accumulated into C (the gradient).
    Tn,
    /// `A · B` with A as gathered u8 rows (the first layer's data).
    U8GatherNn,
}

/// Achieved GFLOP/s (2·m·k·n per product) of `repeats` back-to-back `m × k × n` products in one
/// submission, after one warm-up; [`Tiling::auto`]'s choice.
pub async fn gemm_gflops(ctx: &GpuContext, m: u32, k: u32, n: u32, variant: GemmVariant, repeats: u32) -> Result<f64, GpuError> {
    gemm_gflops_with(ctx, m, k, n, variant, None, None, repeats).await
}

/// [`gemm_gflops`] with a chosen tiling and split-k factor (`None`: automatic). Operands are zero-filled (the arithmetic's speed does
/// not depend on the values); each must fit one storage binding of `ctx`'s device (8192² f32
/// needs [`buffers::context_with_adapter_limits`]). Timed from submission to completion with
/// the host clock (`performance`-free JS clock on the web, so use runs of ≥ 100 ms there).
#[allow(clippy::too_many_arguments)]
pub async fn gemm_gflops_with(ctx: &GpuContext, m: u32, k: u32, n: u32, variant: GemmVariant, tiling: Option<Tiling>, split_k: Option<u32>, repeats: u32) -> Result<f64, GpuError> {
    let kernels = GemmKernels::new(ctx);
    let (mu, ku, nu) = (m as u64, k as u64, n as u64);
    let a = match variant {
        GemmVariant::U8GatherNn => buffers::zeros(ctx, "bench_a", mu * ku),
        _ => buffers::zeros(ctx, "bench_a", 4 * mu * ku),
    };
    let b = buffers::zeros(ctx, "bench_b", 4 * ku * nu);
    let c = buffers::zeros(ctx, "bench_c", 4 * mu * nu);
    let order: Vec<u32> = (0..m).rev().collect();
    let order = buffers::upload(ctx, "bench_order", &order);
    let mut op = match variant {
        GemmVariant::Nn => GemmOp::new(m, k, n, &a, &b, &c),
        GemmVariant::Nt => GemmOp::new(m, k, n, &a, &b, &c).transpose_b(),
        GemmVariant::Tn => GemmOp::new(m, k, n, &a, &b, &c).transpose_a().accumulate(),
        GemmVariant::U8GatherNn => GemmOp::new(m, k, n, &a, &b, &c).u8_a().gather_a(&order, 0),
    };
    op.tiling = tiling;
    op.split_k = split_k;
    let call = kernels.prepare(ctx, &op)?;
    let run = |count: u32| {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            for _ in 0..count {
                call.dispatch(&mut pass, 0);
            }
        }
        ctx.queue.submit([encoder.finish()]);
    };
    run(1);
    buffers::wait_idle(ctx).await?;
    let start = crate::clock::now_seconds();
    run(repeats.max(1));
    buffers::wait_idle(ctx).await?;
    let seconds = crate::clock::now_seconds() - start;
    Ok(2.0 * mu as f64 * ku as f64 * nu as f64 * repeats.max(1) as f64 / seconds / 1e9)
}
