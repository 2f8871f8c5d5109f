//! Compiling the GEMM variants and preparing, recording and dispatching products: the host
//! side of `shaders/gemm.wgsl` (see the parent module for the operation and its layouts).

use super::variant::{auto_tuning, check_fused_update, check_tuning, env_override, slab_strides, FUSED_UPDATE_STORAGE_BUFFERS};
use super::{auto_splits, staggered_half_tasks, Element, GemmOp, Tiling, Tuning};
use crate::gpu::buffers::{self, window, StepTable};
use crate::gpu::shader::{self, Const, PipelineCache, SlotDispatch};
use crate::gpu::{GpuContext, GpuError};
use crate::backend::Activation;
use crate::rng::RngStream;
use bytemuck::{Pod, Zeroable};

const SOURCE: &str = include_str!("../../../shaders/gemm.wgsl");
const SCALAR_OPERANDS: &str = include_str!("../../../shaders/gemm_operands_scalar.wgsl");
const VEC4_OPERANDS: &str = include_str!("../../../shaders/gemm_operands_vec4.wgsl");
const UPDATE_SOURCE: &str = include_str!("../../../shaders/gemm_update.wgsl");
const SCALAR_OUTPUTS: &str = include_str!("../../../shaders/gemm_outputs_scalar.wgsl");
const VEC4_OUTPUTS: &str = include_str!("../../../shaders/gemm_outputs_vec4.wgsl");
/// What the variants without the fused update get in place of gemm_update.wgsl's entry.
const NO_UPDATE: &str = "fn finish_update(c00: Block, c01: Block, c10: Block, c11: Block, r0: u32, c0: u32, tid: u32, task: u32, whole: bool) {}\n";

const FLAG_ACCUMULATE: u32 = 1;
const FLAG_BIAS: u32 = 2;
const FLAG_SIGMOID: u32 = 4;
const FLAG_SAMPLE: u32 = 8;

/// `struct Params` of gemm.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub struct Params {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub tiles_n: u32,
    pub tiles_total: u32,
    pub lda: u32,
    pub ldb: u32,
    pub ldc: u32,
    pub a_offset: u32,
    pub b_offset: u32,
    pub c_offset: u32,
    pub bias_offset: u32,
    pub order_offset: u32,
    pub sample_offset: u32,
    pub lds: u32,
    pub flags: u32,
    pub alpha: f32,
    pub purpose: u32,
    pub key: [u32; 2],
    pub step: [u32; 2],
    pub index_base: [u32; 2],
    pub splits: u32,
    pub k_chunk: u32,
    pub k_split: u32,
    pub alpha2: f32,
    pub half_tasks: u32,
    pub group_rows: u32,
}

/// The compile-time choices that make one GEMM variant (one pipeline each).
#[derive(Clone, Copy, Debug)]
struct Variant {
    tiling: Tiling,
    a_transposed: bool,
    a_u8: bool,
    a_gather: bool,
    b_transposed: bool,
    paired: bool,
    update: bool,
    /// The vec4 operand bindings (gemm_operands_vec4.wgsl): with either vec4 load below.
    vec: bool,
    /// Slab loads of A, of B, as whole vec4 (variant.rs).
    vec_a: bool,
    vec_b: bool,
    /// Outputs a vec4 at a time (see `vec4_outputs`).
    vec_out: bool,
    /// Two slabs of workgroup memory.
    double_buffer: bool,
    /// k steps of 16 (Large).
    deep_k: bool,
    /// Tiles inside the matrices without bounds checks.
    interior: bool,
    /// Register double buffering of the global loads.
    prefetch: bool,
    /// The sampling epilogue compiled in.
    sampling: bool,
    /// Each slab's k steps written out.
    unroll: bool,
}

impl Variant {
    fn of(op: &GemmOp, tiling: Tiling, tuning: &Tuning) -> Self {
        Variant {
            tiling,
            a_transposed: op.a_transposed,
            a_u8: op.a_element == Element::U8,
            a_gather: op.a_gather.is_some(),
            b_transposed: op.b_transposed,
            paired: op.pair.is_some(),
            update: op.update.is_some(),
            vec: tuning.vec_a || tuning.vec_b,
            vec_a: tuning.vec_a,
            vec_b: tuning.vec_b,
            vec_out: tuning.vec_out,
            double_buffer: tuning.double_buffer,
            deep_k: tuning.deep_k,
            interior: tuning.unchecked_interior,
            prefetch: tuning.register_prefetch,
            sampling: tuning.sample_epilogue,
            unroll: tuning.unroll,
        }
    }

    fn tuning(&self) -> Tuning {
        Tuning {
            group_rows: 1,
            vec_a: self.vec_a,
            vec_b: self.vec_b,
            vec_out: self.vec_out,
            double_buffer: self.double_buffer,
            deep_k: self.deep_k,
            unchecked_interior: self.interior,
            register_prefetch: self.prefetch,
            sample_epilogue: self.sampling,
            unroll: self.unroll,
        }
    }

    /// The pipeline cache's name of the variant.
    fn key(&self) -> String {
        let bit = u8::from;
        format!(
            "{:?}-at{}-u8{}-g{}-bt{}-p{}-up{}-v{}{}{}-vo{}-db{}-dk{}-ui{}-rp{}-s{}-un{}",
            self.tiling,
            bit(self.a_transposed),
            bit(self.a_u8),
            bit(self.a_gather),
            bit(self.b_transposed),
            bit(self.paired),
            bit(self.update),
            bit(self.vec),
            bit(self.vec_a),
            bit(self.vec_b),
            bit(self.vec_out),
            bit(self.double_buffer),
            bit(self.deep_k),
            bit(self.interior),
            bit(self.prefetch),
            bit(self.sampling),
            bit(self.unroll)
        )
    }

    /// The variant's WGSL: the operand and output files it picks, gemm.wgsl, the update
    /// epilogue or its empty stand-in, with the constants prepended.
    fn source(&self) -> String {
        let d = self.tiling.dims_tuned(&self.tuning());
        let (a_stride, b_stride) = slab_strides(self.tiling, self.a_transposed, self.b_transposed);
        let operands = if self.vec { VEC4_OPERANDS } else { SCALAR_OPERANDS };
        let outputs = if self.vec_out { VEC4_OUTPUTS } else { SCALAR_OUTPUTS };
        let source = if self.update { format!("{}\n{operands}\n{outputs}\n{SOURCE}\n{UPDATE_SOURCE}", crate::gpu::schedule::STATE_SHADER) } else { format!("{operands}\n{outputs}\n{SOURCE}\n{NO_UPDATE}") };
        shader::assemble(
            &source,
            &[
                ("BM", Const::U32(d.bm)),
                ("BN", Const::U32(d.bn)),
                ("BK", Const::U32(d.bk)),
                ("TM", Const::U32(d.tm)),
                ("TN", Const::U32(d.tn)),
                ("WG_X", Const::U32(d.bn / d.tn)),
                ("WG_Y", Const::U32(d.bm / d.tm)),
                ("A_TRANS", Const::Bool(self.a_transposed)),
                ("A_U8", Const::Bool(self.a_u8)),
                ("A_GATHER", Const::Bool(self.a_gather)),
                ("B_TRANS", Const::Bool(self.b_transposed)),
                ("PAIRED", Const::Bool(self.paired)),
                ("UPDATE", Const::Bool(self.update)),
                ("VEC", Const::Bool(self.vec)),
                ("VEC_A", Const::Bool(self.vec_a)),
                ("VEC_B", Const::Bool(self.vec_b)),
                ("DOUBLE", Const::Bool(self.double_buffer)),
                ("SLABS", Const::U32(if self.double_buffer { 2 } else { 1 })),
                ("INTERIOR", Const::Bool(self.interior)),
                ("PREFETCH", Const::Bool(self.prefetch)),
                ("SAMPLING", Const::Bool(self.sampling)),
                ("UNROLL", Const::Bool(self.unroll)),
                ("A_STRIDE", Const::U32(a_stride)),
                ("B_STRIDE", Const::U32(b_stride)),
            ],
            true,
        )
    }
}

/// (key, source) of every GEMM variant: each tiling with each combination of the eight
/// choices, a superset of those a `GemmOp` can ask for.
pub(crate) fn variant_sources() -> Vec<(String, String)> {
    let mut all = Vec::new();
    for tiling in Tiling::ALL {
        for bits in 0u32..1 << 8 {
            let bit = |i: u32| bits >> i & 1 == 1;
            let vec = bit(6);
            let variant = Variant { tiling, a_transposed: bit(0), a_u8: bit(1), a_gather: bit(2), b_transposed: bit(3), paired: bit(4), update: bit(5), vec, vec_a: vec, vec_b: vec, vec_out: bit(7), double_buffer: false, deep_k: false, interior: false, prefetch: true, sampling: true, unroll: false };
            all.push((variant.key(), variant.source()));
        }
    }
    // The tuned choices (variant.rs): for each tiling and operand layout, each choice alone,
    // and together (as the H100's rules combine them).
    let knobs: [&[&str]; 12] = [&["va"], &["vb"], &["va", "vb"], &["db"], &["dk"], &["ui"], &["rp0"], &["s"], &["un"], &["un", "ui"], &["un", "ui", "va", "vb", "db"], &["un", "ui", "va", "vb", "dk", "s"]];
    for tiling in Tiling::ALL {
        for layout in 0u32..4 {
            for set in knobs {
                let on = |k: &str| set.contains(&k);
                if (on("dk") && tiling != Tiling::Large) || (on("db") && on("dk")) {
                    continue;
                }
                let variant = Variant {
                    tiling,
                    a_transposed: layout & 1 == 1,
                    a_u8: false,
                    a_gather: false,
                    b_transposed: layout & 2 == 2,
                    paired: false,
                    update: false,
                    vec: on("va") || on("vb"),
                    vec_a: on("va"),
                    vec_b: on("vb"),
                    vec_out: false,
                    double_buffer: on("db"),
                    deep_k: on("dk"),
                    interior: on("ui"),
                    prefetch: !on("rp0"),
                    sampling: on("s"),
                    unroll: on("un"),
                };
                all.push((variant.key(), variant.source()));
            }
        }
    }
    all
}

/// The GEMM pipelines of one device, compiled per variant on first use, and the placeholder
/// buffers bound where an op has no bias, samples or order.
pub struct GemmKernels {
    layout: wgpu::BindGroupLayout,
    pipelines: PipelineCache,
    /// The fused-update variants' layout and pipelines, where the device offers
    /// [`FUSED_UPDATE_STORAGE_BUFFERS`] storage buffers per stage.
    update: Option<(wgpu::BindGroupLayout, PipelineCache)>,
    unused_read: wgpu::Buffer,
    unused_write: wgpu::Buffer,
    unused_partials: wgpu::Buffer,
    zero_slot: StepTable,
}

/// A prepared product: its pipeline, uniforms and bind group, ready to dispatch any number of
/// times (its buffers must outlive the dispatches' submission).
pub struct GemmCall {
    call: SlotDispatch,
    /// Split k: the summing pass and the buffer of partial sums.
    finish: Option<(wgpu::ComputePipeline, (u32, u32, u32), wgpu::Buffer)>,
    /// The variant chosen, for reports.
    pub tiling: Tiling,
    pub splits: u32,
    /// Whether an operand is read a vec4 at a time (see `variant.rs`).
    pub vec4: bool,
    /// Whether the outputs are read and written a vec4 at a time (see `vec4_outputs`).
    pub vec4_outputs: bool,
    /// Every kernel choice made.
    pub tuning: Tuning,
}

impl GemmCall {
    /// Records the product into `pass` with the values of step-table slot `slot`
    /// (0 for an op without a table).
    pub fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, slot: u32) {
        if self.call.groups.0 == 0 {
            return;
        }
        self.call.record(pass, slot);
        // The summing pass keeps the product's bind group (and slot offset) bound.
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
        let entries = [
            shader::buffer_entry(0, Uniform, false),
            shader::buffer_entry(1, Uniform, true),
            shader::buffer_entry(2, Storage { read_only: true }, false),
            shader::buffer_entry(3, Storage { read_only: true }, false),
            shader::buffer_entry(4, Storage { read_only: false }, false),
            shader::buffer_entry(5, Storage { read_only: true }, false),
            shader::buffer_entry(6, Storage { read_only: false }, false),
            shader::buffer_entry(7, Storage { read_only: true }, false),
            shader::buffer_entry(8, Storage { read_only: false }, false),
        ];
        let layout = ctx.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("gemm"), entries: &entries });
        let pipelines = PipelineCache::new(&ctx.device, "gemm", &layout).with_checks(shader::Checks::Trusted);
        let update = (ctx.device.limits().max_storage_buffers_per_shader_stage >= FUSED_UPDATE_STORAGE_BUFFERS).then(|| {
            let mut update_entries = entries.to_vec();
            update_entries.extend([
                shader::buffer_entry(9, Uniform, false),
                shader::buffer_entry(10, Storage { read_only: false }, false),
                shader::buffer_entry(11, Storage { read_only: true }, false),
                shader::buffer_entry(12, Storage { read_only: true }, false),
                shader::buffer_entry(13, Storage { read_only: true }, false),
            ]);
            let layout = ctx.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("gemm_update"), entries: &update_entries });
            let pipelines = PipelineCache::new(&ctx.device, "gemm_update", &layout).with_checks(shader::Checks::Trusted);
            (layout, pipelines)
        });
        GemmKernels {
            pipelines,
            layout,
            update,
            unused_read: buffers::zeros(ctx, "gemm_unused_read", 16),
            unused_write: buffers::zeros(ctx, "gemm_unused_write", 16),
            unused_partials: buffers::zeros(ctx, "gemm_unused_partials", 16),

            zero_slot: StepTable::new(ctx, &[buffers::StepSlot::default()]),
        }
    }

    /// Whether this device runs [`GemmOp::fused_update`] products (they bind
    /// [`FUSED_UPDATE_STORAGE_BUFFERS`] storage buffers, more than WebGPU's default 8).
    pub fn supports_fused_update(&self) -> bool {
        self.update.is_some()
    }

    fn pipeline(&self, ctx: &GpuContext, tiling: Tiling, tuning: &Tuning, op: &GemmOp, entry_point: &str) -> wgpu::ComputePipeline {
        let variant = Variant::of(op, tiling, tuning);
        let pipelines = match (&self.update, variant.update) {
            (Some((_, pipelines)), true) => pipelines,
            _ => &self.pipelines,
        };
        pipelines.get(&ctx.device, &variant.key(), entry_point, || variant.source())
    }

    /// Validates `op`, builds its uniforms and bind group, and picks its pipeline.
    pub fn prepare(&self, ctx: &GpuContext, op: &GemmOp) -> Result<GemmCall, GpuError> {
        let (m, k, n) = (op.m as u64, op.k as u64, op.n as u64);
        let huge = op.update.is_none() && env_override().is_some_and(|o| o.huge);
        let tiling = op.tiling.unwrap_or_else(|| match Tiling::auto(op.m, op.n) {
            Tiling::Large if huge => Tiling::Huge,
            auto => auto,
        });
        let limits = ctx.device.limits();
        let tuning = match op.tuning {
            Some(forced) => {
                check_tuning(op, tiling, &forced, &limits)?;
                forced
            }
            None => auto_tuning(op, tiling, &limits, &ctx.adapter_info),
        };
        if let Some(update) = &op.update {
            check_fused_update(op, update, tiling, self.update.is_some())?;
        }
        let pipeline = self.pipeline(ctx, tiling, &tuning, op, "main");

        // Aliasing: WebGPU forbids a buffer bound writable twice, or writable and read-only.
        if op.pair.is_some() && (op.bias.is_some() || op.a_gather.is_some() || op.a_element == Element::U8) {
            return Err(GpuError("gemm: a paired product takes no bias, u8 or gathered A (their bindings hold the second pair)".into()));
        }
        let writable = [Some(op.c.buffer), op.sample.map(|s| s.out.buffer)];
        let readable = [Some(op.a.buffer), Some(op.b.buffer), op.bias.map(|b| b.buffer), op.a_gather.map(|g| g.order), op.pair.map(|p| p.a.buffer), op.pair.map(|p| p.b.buffer)];
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
        // With a pair, the first operands are k_split deep and the second k − k_split.
        let (k1, k2) = match op.pair {
            Some(p) => ((p.k_split as u64).min(k), k - (p.k_split as u64).min(k)),
            None => (k, 0),
        };
        let (a_rows, a_cols) = if op.a_transposed { (k1, m) } else { (m, k1) };
        let (b_rows, b_cols) = if op.b_transposed { (n, k1) } else { (k1, n) };
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
        let bias_window = match (op.bias, op.pair) {
            (Some(bias), _) => Some(window(ctx, bias.buffer, bias.offset * 4, Some(n * 4), "gemm bias")?),
            (None, Some(p)) if !empty && k2 > 0 => {
                let (rows, cols) = if op.b_transposed { (n, k2) } else { (k2, n) };
                Some(window(ctx, p.b.buffer, p.b.offset * 4, Some(extent(rows, cols, p.b.ld, "B2")? * 4), "gemm operand B2")?)
            }
            _ => None,
        };
        let sample_window = match op.sample {
            Some(s) => Some(window(ctx, s.out.buffer, s.out.offset * 4, Some(extent(m, n, s.out.ld, "sample output")? * 4), "gemm sample output")?),
            None => None,
        };
        let order_window = match (op.a_gather, op.pair) {
            (Some(g), _) => Some(window(ctx, g.order, 0, None, "gemm row order")?),
            (None, Some(p)) if !empty && k2 > 0 => {
                let (rows, cols) = if op.a_transposed { (k2, m) } else { (m, k2) };
                Some(window(ctx, p.a.buffer, p.a.offset * 4, Some(extent(rows, cols, p.a.ld, "A2")? * 4), "gemm operand A2")?)
            }
            _ => None,
        };

        let tiles_n = op.n.div_ceil(tiling.dims().bn);
        let tiles_total = tiling.tiles(op.m, op.n);
        let half_tasks = if op.update.is_some() { staggered_half_tasks(tiling, op.m, op.n) } else { 0 };
        let bk = tiling.dims_tuned(&tuning).bk;
        // The k axis the kernel walks: a pair's first operands padded to whole k steps.
        let walked_k = match op.pair {
            Some(_) => (k1 as u32).next_multiple_of(bk) + k2 as u32,
            None => op.k,
        };
        // The fused update needs each tile's whole sum in one workgroup.
        let auto = if op.update.is_some() { 1 } else { auto_splits(tiling, op.m, op.n, op.k) };
        let mut splits = op.split_k.unwrap_or(auto).clamp(1, walked_k.max(1));
        let max_binding = ctx.device.limits().max_storage_buffer_binding_size;
        if op.split_k.is_none() {
            while splits > 1 && splits as u64 * m * n * 4 > max_binding {
                splits -= 1;
            }
        }
        let k_chunk = walked_k.div_ceil(splits).next_multiple_of(bk).max(bk);
        let splits = walked_k.div_ceil(k_chunk).max(1);
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
            k: walked_k,
            tiles_n,
            tiles_total,
            lda: op.a.ld,
            ldb: op.b.ld,
            ldc: op.c.ld,
            a_offset: u32_offset(a_window.as_ref().map_or(0, |w| w.residual / a_size), "A")?,
            b_offset: u32_offset(b_window.as_ref().map_or(0, |w| w.residual / 4), "B")?,
            c_offset: u32_offset(c_window.residual / 4, "C")?,
            bias_offset: u32_offset(bias_window.as_ref().map_or(0, |w| w.residual / 4), "bias")?,
            order_offset: match op.pair {
                Some(_) => u32_offset(order_window.as_ref().map_or(0, |w| w.residual / 4), "A2")?,
                None => op.a_gather.map_or(0, |g| g.start),
            },
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
            k_split: op.pair.map_or(op.k, |p| p.k_split.min(op.k)),
            alpha2: op.pair.map_or(0.0, |p| p.alpha),
            half_tasks,
            group_rows: tuning.group_rows,
        };
        let params = crate::gpu::buffers::uniform_bytes(ctx, "gemm_params", bytemuck::bytes_of(&params));
        fn read<'b>(w: Option<buffers::Window<'b>>, unused: &'b wgpu::Buffer) -> wgpu::BindingResource<'b> {
            match w {
                Some(w) => wgpu::BindingResource::Buffer(w.binding),
                None => unused.as_entire_binding(),
            }
        }
        let slots = op.slots.unwrap_or(&self.zero_slot);
        let mut entries = vec![
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
        ];
        let layout = match (&op.update, &self.update) {
            (Some(update), Some((layout, _))) => {
                // Velocity and the per-tile partials take the sample and split-k bindings.
                entries[6].resource = update.velocity.as_entire_binding();
                entries[8].resource = update.partials.as_entire_binding();
                entries.extend([
                    wgpu::BindGroupEntry { binding: 9, resource: update.state.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 10, resource: update.weights.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 11, resource: update.previous.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 12, resource: update.mean_input.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 13, resource: update.sparsity_derivative.as_entire_binding() },
                ]);
                layout
            }
            _ => &self.layout,
        };
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some("gemm"), layout, entries: &entries });
        let finish = partials.map(|partials| {
            let quads = op.m * op.n.div_ceil(4);
            (self.pipeline(ctx, tiling, &tuning, op, "finish"), shader::grid(quads.div_ceil(256)), partials)
        });
        Ok(GemmCall {
            call: SlotDispatch::new(pipeline, bind_group, if m == 0 || n == 0 { (0, 0, 0) } else { shader::grid(tiles_total * splits + half_tasks / 2) }, slots),
            finish,
            tiling,
            splits,
            vec4: tuning.vec_a || tuning.vec_b,
            vec4_outputs: tuning.vec_out,
            tuning,
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
