//! L-BFGS's vectors on the device (issue 17): [`DeviceVectors`] is the
//! [`LbfgsVectors`] space in which [`Lbfgs`](crate::autoencoder::lbfgs::Lbfgs) runs when its
//! point, gradient, direction and correction pairs live in device buffers, next to the cost's
//! resident θ ([`GpuCost`]). The algorithm (minFunc's L-BFGS, its strong-Wolfe line search and
//! stopping tests) is the host's, on scalars; the vector work is `shaders/lbfgs.wgsl`:
//!
//! - every operation is recorded, not run: a [`DeviceVectors::read`] submits what was recorded
//!   and reads back only the scalars asked for (4 bytes each), in one read-back. Per iteration:
//!   the direction's (its NaN/Inf count, `gᵀd`, `max|dᵢ|`, `Σ|dᵢ|`: 16 bytes), one per
//!   line-search trial (the cost's 32 bytes of J's sums with `∇fᵀd` and the gradient's NaN/Inf
//!   count: 40 bytes, in the same submission as the evaluation at `x + t·d`), and the move's
//!   (`Σ|gᵢ|`, `Σ|sᵢ|`, `yᵀs`, `yᵀy`: 16 bytes). Nothing of the parameter count's size moves.
//!   Uploads: a trial's step `t` (4 bytes), and `ρ = 1/yᵀs`, `γ = yᵀs/yᵀy` of each kept pair.
//! - the two-loop recursion is one recorded sequence (2 dispatches per pair and loop: each
//!   update `q ← q − αᵢyᵢ` fused with the next pair's dot product, the finish writing
//!   `αᵢ = ρᵢ·sᵢᵀq` into the scalars buffer, where the next update reads it): no read-back.
//! - the pairs are a ring of device buffers: `memory` pairs as asked, capped by
//!   `pair_budget` bytes (2·4·len bytes a pair) and by what the device can allocate (the ring
//!   is allocated at the start, halved until an allocation succeeds).
//!
//! Precision: the vectors are f32 (see the shader header): the device's L-BFGS follows the
//! host's in f64 to f32 rounding, until the first knife-edge choice of the line search, where
//! two runs of the same problem may part (tests/gpu_lbfgs.rs measures both).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::autoencoder::{Block, DeviceCost, GpuCost, GpuCostError, RESULTS as COST_RESULTS};
use super::reduce::split;
use super::shader::{self, buffer_entry};
use super::{map_staging, GpuContext, GpuError};
use crate::autoencoder::vectors::{Evaluator, LbfgsVectors, Lost};

const SHADER: &str = include_str!("../../shaders/lbfgs.wgsl");

/// Elements per workgroup of the elementwise and partial passes while that makes at most
/// 4096 workgroups (the reduce kernels' split).
const SPAN: usize = 2048;
/// `NONE` of lbfgs.wgsl: no slot.
const NONE: u32 = u32::MAX;
const HAS_A: u32 = 1;
const NEGATE: u32 = 2;
const SCALE: u32 = 4;
const REDUCE: u32 = 8;
/// Host constants per batch (a trial's step, −1, 1, …) and results read back per batch.
const CONSTANTS: u32 = 16;
const RESULT_SLOTS: u32 = 16;
/// Bytes of one entry of the op uniform buffer (WebGPU's default
/// `minUniformBufferOffsetAlignment`; larger where the device asks for more).
const OP_STRIDE: u64 = 256;
/// The pairs' memory budget when none is given: natively 16 GiB (minFunc's 100 pairs up to 20M
/// parameters), in a browser 256 MiB.
#[cfg(not(target_arch = "wasm32"))]
pub const DEFAULT_PAIR_BUDGET: u64 = 16 << 30;
#[cfg(target_arch = "wasm32")]
pub const DEFAULT_PAIR_BUDGET: u64 = 256 << 20;

/// `struct Op` of lbfgs.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Op {
    pub n: u32,
    pub span: u32,
    pub groups: u32,
    pub flags: u32,
    pub c_slot: u32,
    pub c_minus_slot: u32,
    pub scale_slot: u32,
    pub dot_slot: u32,
    pub bad_slot: u32,
    pub l1_slot: u32,
    pub max_slot: u32,
    pub _pad: u32,
}

impl Op {
    fn new(n: u32, span: u32, groups: u32) -> Op {
        Op { n, span, groups, flags: 0, c_slot: NONE, c_minus_slot: NONE, scale_slot: NONE, dot_slot: NONE, bad_slot: NONE, l1_slot: NONE, max_slot: NONE, _pad: 0 }
    }
}

/// The kernel module as compiled.
pub(crate) fn source() -> String {
    shader::assemble(SHADER, &[], false)
}

/// The pipelines of lbfgs.wgsl on one device, with their one bind-group layout.
pub struct LbfgsKernels {
    layout: wgpu::BindGroupLayout,
    combine: wgpu::ComputePipeline,
    update: wgpu::ComputePipeline,
    reduce_partials: wgpu::ComputePipeline,
    reduce_finish: wgpu::ComputePipeline,
}

impl LbfgsKernels {
    pub fn new(ctx: &GpuContext) -> LbfgsKernels {
        use wgpu::BufferBindingType::{Storage, Uniform};
        let device = &ctx.device;
        let (read, write) = (Storage { read_only: true }, Storage { read_only: false });
        let entries = [buffer_entry(0, Uniform, true), buffer_entry(1, read, false), buffer_entry(2, read, false), buffer_entry(3, write, false), buffer_entry(4, write, false), buffer_entry(5, write, false)];
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("lbfgs"), entries: &entries });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some("lbfgs"), bind_group_layouts: &[Some(&layout)], immediate_size: 0 });
        let module = shader::module(device, "lbfgs", source(), shader::Checks::Bounded);
        let pipeline = |entry_point: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry_point),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(entry_point),
                compilation_options: wgpu::PipelineCompilationOptions { constants: &[], zero_initialize_workgroup_memory: false },
                cache: None,
            })
        };
        LbfgsKernels { combine: pipeline("combine"), update: pipeline("update"), reduce_partials: pipeline("reduce_partials"), reduce_finish: pipeline("reduce_finish"), layout }
    }
}

/// A vector of the space: a device buffer of `len` f32. Cheap to clone (the same buffer); a
/// vector no clone of which is held outside the space is handed out again by
/// [`DeviceVectors::vector`].
#[derive(Clone, Debug)]
pub struct DeviceVector(Arc<VectorBuffer>);

#[derive(Debug)]
struct VectorBuffer {
    id: usize,
    buffer: wgpu::Buffer,
}

impl DeviceVector {
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.0.buffer
    }

    fn id(&self) -> usize {
        self.0.id
    }
}

/// A scalar of the space: its slot in the scalars buffer, read by [`DeviceVectors::read`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceScalar(u32);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    Combine,
    Update,
    ReducePartials,
    ReduceFinish,
}

/// Vector ids bound as a, b and out; [`DUMMY`] where unused.
type Bindings = [usize; 3];
const DUMMY: usize = usize::MAX;

struct Dispatch {
    kernel: Kernel,
    bindings: Bindings,
    op: Op,
    groups: u32,
}

enum Step {
    Dispatch(Dispatch),
    Copy { from: wgpu::Buffer, to: wgpu::Buffer, bytes: u64 },
}

/// The last reduction recorded, which later requests on the same vector join (one pass).
#[derive(Clone, Copy)]
struct LastReduction {
    a: usize,
    /// `b` once a dot product fixed it.
    b: Option<usize>,
    partial: usize,
    finish: usize,
}

struct Pair {
    s: DeviceVector,
    y: DeviceVector,
    /// Its ρ and α slots.
    slot: u32,
}

/// L-BFGS's vectors on a device: see the module's documentation.
pub struct DeviceVectors {
    ctx: GpuContext,
    layout: wgpu::BindGroupLayout,
    pipelines: [wgpu::ComputePipeline; 4],
    /// f32 per vector.
    len: usize,
    /// Where the flat parameter vector's blocks lie in a device vector.
    blocks: Vec<Block>,
    groups: u32,
    span: u32,
    /// Every vector made, by id.
    pool: Vec<DeviceVector>,
    /// The evaluation point: the cost's θ.
    theta: DeviceVector,
    /// The cost's gradient, where an evaluation leaves it.
    cost_gradient: Option<DeviceVector>,
    /// Bound where a kernel reads no vector (a and b), and where it writes none (out): two
    /// buffers, since one buffer may not be both read-only and writable in a dispatch.
    dummy: wgpu::Buffer,
    dummy_out: wgpu::Buffer,
    scalars: wgpu::Buffer,
    partials: wgpu::Buffer,
    ops: wgpu::Buffer,
    op_stride: u64,
    op_capacity: u64,
    op_offsets: HashMap<Op, u32>,
    bind_groups: HashMap<Bindings, wgpu::BindGroup>,
    staging: wgpu::Buffer,
    pending: Vec<Step>,
    last_reduction: Option<LastReduction>,
    constants_used: u32,
    results_used: u32,
    pairs: VecDeque<Pair>,
    capacity: usize,
    bytes_read_back: u64,
    reads: u64,
    bytes_downloaded: u64,
    lost: Option<String>,
    /// Why the memory holds fewer pairs than asked, where it does.
    capacity_note: Option<String>,
}

/// Slots of the scalars buffer, for a memory of `capacity` pairs.
#[derive(Clone, Copy)]
struct Slots {
    capacity: u32,
}

impl Slots {
    fn rho(self, k: u32) -> u32 {
        k
    }
    fn alpha(self, k: u32) -> u32 {
        self.capacity + k
    }
    fn gamma(self) -> u32 {
        2 * self.capacity
    }
    fn beta(self) -> u32 {
        2 * self.capacity + 1
    }
    fn constant(self, j: u32) -> u32 {
        2 * self.capacity + 2 + j
    }
    fn result(self, j: u32) -> u32 {
        self.constant(CONSTANTS) + j
    }
    fn len(self) -> u32 {
        self.result(RESULT_SLOTS)
    }
}

impl DeviceVectors {
    /// The space for L-BFGS on `cost`'s parameters: its θ is the evaluation point, its layout
    /// the vectors' (gaps stay zero), `memory` pairs at most, within `pair_budget` bytes and
    /// what the device can allocate.
    pub async fn for_cost(ctx: &GpuContext, kernels: &LbfgsKernels, cost: &GpuCost, memory: usize, pair_budget: u64) -> Result<DeviceVectors, GpuError> {
        let layout = cost.layout();
        let theta = cost.params_buffer().clone();
        let mut space = DeviceVectors::new(ctx, kernels, layout.len, layout.blocks().to_vec(), Some(theta), memory, pair_budget).await?;
        let gradient = space.register(cost.gradient_buffer().clone());
        space.cost_gradient = Some(gradient);
        Ok(space)
    }

    /// A space of plain vectors of `len` values (one block), for tests of the vector work.
    pub async fn plain(ctx: &GpuContext, kernels: &LbfgsKernels, len: usize, memory: usize, pair_budget: u64) -> Result<DeviceVectors, GpuError> {
        DeviceVectors::new(ctx, kernels, len, vec![Block { name: "x", flat: 0, device: 0, len }], None, memory, pair_budget).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn new(ctx: &GpuContext, kernels: &LbfgsKernels, len: usize, blocks: Vec<Block>, theta: Option<wgpu::Buffer>, memory: usize, pair_budget: u64) -> Result<DeviceVectors, GpuError> {
        if let Some(failure) = ctx.failure() {
            return Err(GpuError(failure));
        }
        if len == 0 || len >= u32::MAX as usize / 2 {
            return Err(GpuError(format!("L-BFGS on the device: vectors of {len} values (expected 1 to 2³¹)")));
        }
        let vector_bytes = 4 * len as u64;
        let limits = ctx.device.limits();
        let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        if vector_bytes > binding {
            return Err(GpuError(format!("L-BFGS on the device: a vector takes {vector_bytes} bytes, over this device's storage binding limit of {binding} bytes")));
        }
        let by_budget = (pair_budget / (2 * vector_bytes)) as usize;
        let capacity = memory.min(by_budget).max(1);
        let (groups, span) = split(len, SPAN);
        let device = &ctx.device;
        let slots = Slots { capacity: capacity as u32 };
        let scalars = super::reduce::storage_buffer(device, "lbfgs_scalars", slots.len() as usize);
        let op_stride = OP_STRIDE.max(u64::from(limits.min_uniform_buffer_offset_alignment));
        let op_capacity = 8 * capacity as u64 + 512;
        let ops = device.create_buffer(&wgpu::BufferDescriptor { label: Some("lbfgs_ops"), size: op_capacity * op_stride, usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let staging_bytes = 4 * (COST_RESULTS as u64 + u64::from(RESULT_SLOTS));
        let staging = device.create_buffer(&wgpu::BufferDescriptor { label: Some("lbfgs_read"), size: staging_bytes, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let dummy = super::reduce::storage_buffer(device, "lbfgs_dummy", 4);
        let dummy_out = super::reduce::storage_buffer(device, "lbfgs_dummy_out", 4);
        let partials = super::reduce::storage_buffer(device, "lbfgs_partials", 4 * groups as usize);
        let placeholder = DeviceVector(Arc::new(VectorBuffer { id: DUMMY, buffer: dummy.clone() }));
        let mut space = DeviceVectors {
            ctx: ctx.clone(),
            layout: kernels.layout.clone(),
            pipelines: [kernels.combine.clone(), kernels.update.clone(), kernels.reduce_partials.clone(), kernels.reduce_finish.clone()],
            len,
            blocks,
            groups,
            span,
            pool: Vec::new(),
            theta: placeholder,
            cost_gradient: None,
            dummy,
            dummy_out,
            scalars,
            partials,
            ops,
            op_stride,
            op_capacity,
            op_offsets: HashMap::new(),
            bind_groups: HashMap::new(),
            staging,
            pending: Vec::new(),
            last_reduction: None,
            constants_used: 0,
            results_used: 0,
            pairs: VecDeque::new(),
            capacity,
            bytes_read_back: 0,
            reads: 0,
            bytes_downloaded: 0,
            lost: None,
            capacity_note: (capacity < memory).then(|| format!("{capacity} of the {memory} pairs asked for fit the pair budget of {pair_budget} bytes ({} bytes a pair)", 2 * vector_bytes)),
        };
        space.theta = match theta {
            Some(buffer) => space.register(buffer),
            None => space.allocate(),
        };
        space.allocate_ring().await?;
        // γ = 1 before any pair (minFunc's initial Hessian scale), and the constants ±1.
        space.ctx.queue.write_buffer(&space.scalars, 4 * u64::from(slots.gamma()), bytemuck::bytes_of(&1.0f32));
        Ok(space)
    }

    /// Allocates the ring's `2·capacity` vectors up front, halving the capacity while the
    /// device runs out of memory.
    async fn allocate_ring(&mut self) -> Result<(), GpuError> {
        loop {
            let scope = self.ctx.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            let first = self.pool.len();
            for _ in 0..2 * self.capacity {
                self.allocate();
            }
            match scope.pop().await {
                None => return Ok(()),
                Some(error) if self.capacity > 1 => {
                    self.pool.truncate(first);
                    self.capacity /= 2;
                    self.capacity_note = Some(format!("out of memory for the pairs ({error}): {} kept", self.capacity));
                }
                Some(error) => return Err(GpuError(format!("L-BFGS on the device: no memory for one pair of {} values ({error})", self.len))),
            }
        }
    }

    fn slots(&self) -> Slots {
        Slots { capacity: self.capacity as u32 }
    }

    fn register(&mut self, buffer: wgpu::Buffer) -> DeviceVector {
        let vector = DeviceVector(Arc::new(VectorBuffer { id: self.pool.len(), buffer }));
        self.pool.push(vector.clone());
        vector
    }

    fn allocate(&mut self) -> DeviceVector {
        let buffer = super::buffers::zeros_f32(&self.ctx, "lbfgs_vector", self.len);
        self.register(buffer)
    }

    /// Values per vector (the padded parameter count).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Pairs kept at most: `memory` as asked, or fewer where the budget or the device's memory
    /// ran out.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Why [`Self::capacity`] is below the memory asked for, where it is.
    pub fn capacity_note(&self) -> Option<&str> {
        self.capacity_note.as_deref()
    }

    /// Pairs kept now.
    pub fn pairs(&self) -> usize {
        self.pairs.len()
    }

    /// Bytes the optimiser's scalars took to read back so far (the cost's 32 bytes per trial
    /// included; [`Self::download`]s not).
    pub fn bytes_read_back(&self) -> u64 {
        self.bytes_read_back
    }

    /// Read-backs so far (one per [`Self::read`] and per evaluation).
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// Bytes of whole vectors read back by [`Self::download`].
    pub fn bytes_downloaded(&self) -> u64 {
        self.bytes_downloaded
    }

    /// Why the device stopped answering, once it has.
    pub fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }

    /// A vector holding the flat `values` (as `Autoencoder::to_params` lays them out), rounded
    /// to f32, zero in the gaps between blocks. Uploads `4·len` bytes.
    pub fn upload(&mut self, values: &[f64]) -> Result<DeviceVector, String> {
        let expected: usize = self.blocks.iter().map(|b| b.len).sum();
        if values.len() != expected {
            return Err(format!("L-BFGS on the device: {} values for vectors of {expected}", values.len()));
        }
        let mut padded = vec![0.0f32; self.len];
        for block in &self.blocks {
            padded[block.device..block.device + block.len].iter_mut().zip(&values[block.flat..block.flat + block.len]).for_each(|(d, &v)| *d = v as f32);
        }
        let vector = self.vector();
        self.flush();
        self.ctx.queue.write_buffer(vector.buffer(), 0, bytemuck::cast_slice(&padded));
        Ok(vector)
    }

    /// The flat values of `vector` (the blocks, without the gaps), after everything recorded.
    /// Reads back `4·len` bytes: the page's snapshot of the model, never the optimiser's.
    pub async fn download(&mut self, vector: &DeviceVector) -> Result<Vec<f64>, Lost> {
        self.flush();
        self.bytes_downloaded += 4 * self.len as u64;
        let values: Vec<f32> = match super::buffers::read_back(&self.ctx, vector.buffer(), 0, self.len).await {
            Ok(values) => values,
            Err(e) => return Err(self.mark_lost(e.to_string())),
        };
        let expected: usize = self.blocks.iter().map(|b| b.len).sum();
        let mut flat = vec![0.0f64; expected];
        for block in &self.blocks {
            flat[block.flat..block.flat + block.len].iter_mut().zip(&values[block.device..block.device + block.len]).for_each(|(f, &v)| *f = f64::from(v));
        }
        Ok(flat)
    }

    fn mark_lost(&mut self, why: String) -> Lost {
        self.pending.clear();
        self.last_reduction = None;
        self.lost.get_or_insert(why.clone());
        Lost(why)
    }

    /// A slot holding the host's `value` (rounded to f32) for this batch.
    fn constant(&mut self, value: f64) -> u32 {
        if self.constants_used == CONSTANTS {
            self.flush();
        }
        let slot = self.slots().constant(self.constants_used);
        self.constants_used += 1;
        self.ctx.queue.write_buffer(&self.scalars, 4 * u64::from(slot), bytemuck::bytes_of(&(value as f32)));
        slot
    }

    fn result_slot(&mut self) -> u32 {
        assert!(self.results_used < RESULT_SLOTS, "L-BFGS on the device: more than {RESULT_SLOTS} scalars asked for in one read");
        let slot = self.slots().result(self.results_used);
        self.results_used += 1;
        slot
    }

    fn op(&self) -> Op {
        Op::new(self.len as u32, self.span, self.groups)
    }

    fn record(&mut self, kernel: Kernel, bindings: Bindings, op: Op, groups: u32) -> usize {
        self.pending.push(Step::Dispatch(Dispatch { kernel, bindings, op, groups }));
        self.pending.len() - 1
    }

    fn elementwise(&mut self, kernel: Kernel, bindings: Bindings, op: Op) {
        self.last_reduction = None;
        self.record(kernel, bindings, op, self.groups);
    }

    /// `out += c·a` or `out = c·out` (`a` None) with `c` from `c_slot` (minus `c_minus`,
    /// negated), then, with `next`, the partial sums of `next·out` for a finish.
    fn update(&mut self, a: Option<&DeviceVector>, out: &DeviceVector, c_slot: u32, c_minus: u32, negate: bool, next: Option<&DeviceVector>) {
        let mut op = self.op();
        op.flags = if a.is_none() { SCALE } else { 0 } | if negate { NEGATE } else { 0 } | if next.is_some() { REDUCE } else { 0 };
        op.c_slot = c_slot;
        op.c_minus_slot = c_minus;
        let bindings = [a.map_or(DUMMY, DeviceVector::id), next.map_or(DUMMY, DeviceVector::id), out.id()];
        self.elementwise(Kernel::Update, bindings, op);
    }

    /// The finish of a reduction into `slots` (dot, bad, l1, max), the dot scaled by `scale`.
    fn finish(&mut self, scale: u32, slots: [u32; 4]) -> usize {
        let mut op = Op::new(self.len as u32, self.span, self.groups);
        op.scale_slot = scale;
        [op.dot_slot, op.bad_slot, op.l1_slot, op.max_slot] = slots;
        self.record(Kernel::ReduceFinish, [DUMMY; 3], op, 1)
    }

    /// A reduction of `a` (with `b` for a dot product) into a result slot: `component` 0 dot,
    /// 1 NaN/Inf count, 2 Σ|a|, 3 max|a|. Joins the last reduction where it reads the same.
    fn reduction(&mut self, a: &DeviceVector, b: Option<&DeviceVector>, component: usize) -> DeviceScalar {
        if let Some(last) = self.last_reduction {
            let fits = last.a == a.id() && match (b, last.b) {
                (Some(b), Some(fixed)) => b.id() == fixed,
                _ => true,
            };
            if fits {
                if let (Some(b), None) = (b, last.b) {
                    if let Step::Dispatch(partial) = &mut self.pending[last.partial] {
                        partial.bindings[1] = b.id();
                    }
                    self.last_reduction = Some(LastReduction { b: Some(b.id()), ..last });
                }
                let Step::Dispatch(finish) = &self.pending[last.finish] else { unreachable!("a finish step") };
                let existing = [finish.op.dot_slot, finish.op.bad_slot, finish.op.l1_slot, finish.op.max_slot][component];
                if existing != NONE {
                    return DeviceScalar(existing);
                }
                let slot = self.result_slot();
                let Step::Dispatch(finish) = &mut self.pending[last.finish] else { unreachable!("a finish step") };
                match component {
                    0 => finish.op.dot_slot = slot,
                    1 => finish.op.bad_slot = slot,
                    2 => finish.op.l1_slot = slot,
                    _ => finish.op.max_slot = slot,
                }
                return DeviceScalar(slot);
            }
        }
        let slot = self.result_slot();
        let partial = self.record(Kernel::ReducePartials, [a.id(), b.map_or(a.id(), DeviceVector::id), DUMMY], self.op(), self.groups);
        let mut slots = [NONE; 4];
        slots[component] = slot;
        let finish = self.finish(NONE, slots);
        self.last_reduction = Some(LastReduction { a: a.id(), b: b.map(DeviceVector::id), partial, finish });
        DeviceScalar(slot)
    }

    /// Encodes what was recorded into `encoder`: runs of dispatches as compute passes, copies
    /// between them.
    fn encode(&mut self, encoder: &mut wgpu::CommandEncoder) {
        let steps = std::mem::take(&mut self.pending);
        self.last_reduction = None;
        // Every op entry and bind group first (the pass borrows them).
        let mut prepared = Vec::with_capacity(steps.len());
        for step in steps {
            match step {
                Step::Dispatch(d) => {
                    let offset = self.op_offset(d.op);
                    self.bind_group(d.bindings);
                    prepared.push(Ok((d.kernel, d.bindings, offset, d.groups)));
                }
                Step::Copy { from, to, bytes } => prepared.push(Err((from, to, bytes))),
            }
        }
        let mut at = 0;
        while at < prepared.len() {
            match &prepared[at] {
                Err((from, to, bytes)) => {
                    encoder.copy_buffer_to_buffer(from, 0, to, 0, *bytes);
                    at += 1;
                }
                Ok(_) => {
                    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("lbfgs"), timestamp_writes: None });
                    while let Some(Ok((kernel, bindings, offset, groups))) = prepared.get(at) {
                        pass.set_pipeline(&self.pipelines[*kernel as usize]);
                        pass.set_bind_group(0, &self.bind_groups[bindings], &[*offset]);
                        pass.dispatch_workgroups(*groups, 1, 1);
                        at += 1;
                    }
                }
            }
        }
    }

    /// The op's entry in the uniform buffer, written the first time it is used.
    fn op_offset(&mut self, op: Op) -> u32 {
        if let Some(&offset) = self.op_offsets.get(&op) {
            return offset;
        }
        if self.op_offsets.len() as u64 == self.op_capacity {
            // Entries of ops recorded in this batch may be rewritten only after it ran; the
            // batch being encoded now has every entry it uses in the map (they were looked up
            // first), so starting over is safe only for a new batch: never reached with the
            // capacity sized for the memory.
            panic!("L-BFGS on the device: more than {} distinct operations", self.op_capacity);
        }
        let offset = (self.op_offsets.len() as u64 * self.op_stride) as u32;
        self.ctx.queue.write_buffer(&self.ops, u64::from(offset), bytemuck::bytes_of(&op));
        self.op_offsets.insert(op, offset);
        offset
    }

    fn buffer_of(&self, id: usize) -> &wgpu::Buffer {
        if id == DUMMY {
            &self.dummy
        } else {
            self.pool[id].buffer()
        }
    }

    fn bind_group(&mut self, bindings: Bindings) {
        if self.bind_groups.contains_key(&bindings) {
            return;
        }
        let op_size = std::num::NonZeroU64::new(std::mem::size_of::<Op>() as u64);
        let [a, b, out] = bindings.map(|id| self.buffer_of(id));
        let out = if bindings[2] == DUMMY { &self.dummy_out } else { out };
        let entries = [
            wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: &self.ops, offset: 0, size: op_size }) },
            wgpu::BindGroupEntry { binding: 1, resource: a.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 2, resource: b.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 3, resource: out.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 4, resource: self.scalars.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 5, resource: self.partials.as_entire_binding() },
        ];
        let group = self.ctx.device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some("lbfgs"), layout: &self.layout, entries: &entries });
        self.bind_groups.insert(bindings, group);
    }

    /// Submits what was recorded, reading nothing.
    pub fn flush(&mut self) {
        if self.pending.is_empty() {
            self.constants_used = 0;
            return;
        }
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("lbfgs") });
        self.encode(&mut encoder);
        self.ctx.queue.submit([encoder.finish()]);
        self.constants_used = 0;
    }

    /// Submits `encoder` with what was recorded, then reads back the cost's results (where
    /// `stats` is its results buffer) and this batch's scalars in one read-back.
    async fn submit_and_read(&mut self, mut encoder: wgpu::CommandEncoder, scalars: &[DeviceScalar], stats: Option<&wgpu::Buffer>) -> Result<(Option<[f32; COST_RESULTS]>, Vec<f64>), Lost> {
        self.encode(&mut encoder);
        let stats_bytes = if stats.is_some() { 4 * COST_RESULTS as u64 } else { 0 };
        if let Some(stats) = stats {
            encoder.copy_buffer_to_buffer(stats, 0, &self.staging, 0, stats_bytes);
        }
        let first = self.slots().result(0);
        let results_bytes = 4 * u64::from(self.results_used);
        if results_bytes > 0 {
            encoder.copy_buffer_to_buffer(&self.scalars, 4 * u64::from(first), &self.staging, stats_bytes, results_bytes);
        }
        self.ctx.queue.submit([encoder.finish()]);
        self.constants_used = 0;
        self.results_used = 0;
        if stats_bytes + results_bytes == 0 {
            return Ok((None, Vec::new()));
        }
        let words: Vec<f32> = {
            let view = match map_staging(&self.ctx, &self.staging).await {
                Ok(view) => view,
                Err(e) => return Err(self.mark_lost(e.to_string())),
            };
            let words = bytemuck::pod_collect_to_vec(&view[..(stats_bytes + results_bytes) as usize]);
            drop(view);
            self.staging.unmap();
            words
        };
        self.bytes_read_back += stats_bytes + results_bytes;
        self.reads += 1;
        let (cost, results) = words.split_at(stats_bytes as usize / 4);
        let cost = stats.map(|_| std::array::from_fn(|k| cost[k]));
        Ok((cost, scalars.iter().map(|s| f64::from(results[(s.0 - first) as usize])).collect()))
    }

    /// `J` and `∇f` at `point` (which must be the cost's θ: [`LbfgsVectors::point`]), the
    /// gradient copied into `gradient`, and the scalars `then` asks for: one submission and one
    /// read-back (the cost's 32 bytes and 4 per scalar). A lost device answers NaN scalars and
    /// a [`GpuCostError::Device`].
    pub async fn evaluate_cost<F: FnOnce(&mut Self, &DeviceVector) -> Vec<DeviceScalar>>(&mut self, cost: &GpuCost, point: &DeviceVector, gradient: &mut DeviceVector, then: F) -> (Result<DeviceCost, GpuCostError>, Vec<f64>) {
        assert!(point.id() == self.theta.id() && cost.params_buffer() == self.theta.buffer(), "L-BFGS on the device: the cost evaluates at its own θ, the space's point");
        let cost_gradient = self.cost_gradient.clone().expect("a space made for a cost (DeviceVectors::for_cost)");
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("lbfgs_evaluation") });
        self.encode(&mut encoder);
        let recorded = cost.record_into(&mut encoder, true);
        self.copy(&cost_gradient, gradient);
        let wanted = then(self, gradient);
        if let Err(e) = recorded {
            self.mark_lost(e.to_string());
            self.results_used = 0;
            self.constants_used = 0;
            return (Err(GpuCostError::Device(e)), vec![f64::NAN; wanted.len()]);
        }
        match self.submit_and_read(encoder, &wanted, Some(cost.results_buffer())).await {
            Ok((Some(results), scalars)) => (cost.judge_results(results).await, scalars),
            Ok((None, _)) => unreachable!("an evaluation reads the cost's results"),
            Err(Lost(why)) => (Err(GpuCostError::Device(GpuError(why))), vec![f64::NAN; wanted.len()]),
        }
    }

    /// Copies `vector` into the cost's θ (a point to evaluate outside the line search).
    pub fn set_point(&mut self, vector: &DeviceVector) {
        let mut theta = self.theta.clone();
        self.copy(vector, &mut theta);
        self.flush();
    }
}

impl LbfgsVectors for DeviceVectors {
    type Vector = DeviceVector;
    type Scalar = DeviceScalar;

    fn vector(&mut self) -> DeviceVector {
        match self.pool.iter().find(|v| v.id() != self.theta.id() && Arc::strong_count(&v.0) == 1) {
            Some(free) => free.clone(),
            None => self.allocate(),
        }
    }

    fn point(&mut self) -> DeviceVector {
        self.theta.clone()
    }

    fn combine(&mut self, a: Option<&DeviceVector>, c: f64, b: &DeviceVector, out: &mut DeviceVector) {
        let mut op = self.op();
        op.c_slot = self.constant(c);
        op.flags = if a.is_some() { HAS_A } else { 0 };
        self.elementwise(Kernel::Combine, [a.map_or(DUMMY, DeviceVector::id), b.id(), out.id()], op);
    }

    fn add(&mut self, a: &DeviceVector, y: &mut DeviceVector) {
        let one = self.constant(1.0);
        self.update(Some(a), y, one, NONE, false, None);
    }

    fn copy(&mut self, a: &DeviceVector, out: &mut DeviceVector) {
        self.last_reduction = None;
        if a.id() != out.id() {
            self.pending.push(Step::Copy { from: a.buffer().clone(), to: out.buffer().clone(), bytes: 4 * self.len as u64 });
        }
    }

    fn dot(&mut self, a: &DeviceVector, b: &DeviceVector) -> DeviceScalar {
        self.reduction(a, Some(b), 0)
    }

    fn non_finite(&mut self, a: &DeviceVector) -> DeviceScalar {
        self.reduction(a, None, 1)
    }

    fn l1(&mut self, a: &DeviceVector) -> DeviceScalar {
        self.reduction(a, None, 2)
    }

    fn max_abs(&mut self, a: &DeviceVector) -> DeviceScalar {
        self.reduction(a, None, 3)
    }

    async fn read(&mut self, scalars: &[DeviceScalar]) -> Result<Vec<f64>, Lost> {
        if let Some(why) = self.lost.clone().or_else(|| self.ctx.failure()) {
            return Err(self.mark_lost(why));
        }
        let encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("lbfgs") });
        self.submit_and_read(encoder, scalars, None).await.map(|(_, values)| values)
    }

    fn push_pair(&mut self, s: &mut DeviceVector, y: &mut DeviceVector, ys: f64, yy: f64) {
        let (slot, s_next, y_next) = if self.pairs.len() == self.capacity {
            let oldest = self.pairs.pop_front().expect("a full memory holds pairs");
            (oldest.slot, oldest.s, oldest.y)
        } else {
            let slot = (0..self.capacity as u32).find(|k| self.pairs.iter().all(|p| p.slot != *k)).expect("a free slot below the capacity");
            (slot, self.vector(), self.vector())
        };
        let pair = Pair { s: std::mem::replace(s, s_next), y: std::mem::replace(y, y_next), slot };
        self.pairs.push_back(pair);
        // The two-loop recursion reads these from the scalars buffer; the writes land before
        // the next submission, and nothing recorded before them is still pending.
        self.flush();
        let slots = self.slots();
        self.ctx.queue.write_buffer(&self.scalars, 4 * u64::from(slots.rho(slot)), bytemuck::bytes_of(&((1.0 / ys) as f32)));
        self.ctx.queue.write_buffer(&self.scalars, 4 * u64::from(slots.gamma()), bytemuck::bytes_of(&((ys / yy) as f32)));
    }

    fn two_loop(&mut self, gradient: &DeviceVector, out: &mut DeviceVector) {
        let slots = self.slots();
        let pairs: Vec<(DeviceVector, DeviceVector, u32)> = self.pairs.iter().map(|p| (p.s.clone(), p.y.clone(), p.slot)).collect();
        self.combine(None, -1.0, gradient, out);
        let Some((s_newest, _, k_newest)) = pairs.last() else {
            self.update(None, out, slots.gamma(), NONE, false, None);
            return;
        };
        // αᵢ = ρᵢ·sᵢᵀq, q ← q − αᵢyᵢ, newest first; each update fused with the next dot.
        let partial = self.op();
        self.record(Kernel::ReducePartials, [s_newest.id(), out.id(), DUMMY], partial, self.groups);
        self.finish(slots.rho(*k_newest), [slots.alpha(*k_newest), NONE, NONE, NONE]);
        for i in (0..pairs.len()).rev() {
            let (_, y, k) = &pairs[i];
            match i.checked_sub(1).map(|j| &pairs[j]) {
                Some((s_next, _, k_next)) => {
                    self.update(Some(y), out, slots.alpha(*k), NONE, true, Some(s_next));
                    self.finish(slots.rho(*k_next), [slots.alpha(*k_next), NONE, NONE, NONE]);
                }
                None => self.update(Some(y), out, slots.alpha(*k), NONE, true, None),
            }
        }
        // q ← γq fused with the oldest pair's β = ρ·yᵀq; then q ← q + (αᵢ − β)sᵢ, oldest first.
        let (_, y_oldest, k_oldest) = &pairs[0];
        self.update(None, out, slots.gamma(), NONE, false, Some(y_oldest));
        self.finish(slots.rho(*k_oldest), [slots.beta(), NONE, NONE, NONE]);
        for i in 0..pairs.len() {
            let (s, _, k) = &pairs[i];
            match pairs.get(i + 1) {
                Some((_, y_next, k_next)) => {
                    self.update(Some(s), out, slots.alpha(*k), slots.beta(), false, Some(y_next));
                    self.finish(slots.rho(*k_next), [slots.beta(), NONE, NONE, NONE]);
                }
                None => self.update(Some(s), out, slots.alpha(*k), slots.beta(), false, None),
            }
        }
        self.last_reduction = None;
    }

    fn memory_capacity(&self) -> usize {
        self.capacity
    }
}

/// The device's cost as L-BFGS's evaluator on the device's vectors: each trial one submission
/// (the step onto θ, the cost's pass, `∇fᵀd`) and one read-back. A failed evaluation answers
/// NaN and is kept in `first_error` / `last_error` (as [`GpuCost`]'s other evaluations); a lost
/// device interrupts the iteration.
impl Evaluator<DeviceVectors> for GpuCost {
    async fn evaluate<F: FnOnce(&mut DeviceVectors, &DeviceVector) -> Vec<DeviceScalar>>(&mut self, space: &mut DeviceVectors, point: &DeviceVector, gradient: &mut DeviceVector, then: F) -> (f64, Vec<f64>) {
        let (result, scalars) = space.evaluate_cost(self, point, gradient, then).await;
        (self.record_outcome(result), scalars)
    }

    fn interrupted(&self) -> bool {
        matches!(self.last_error, Some(GpuCostError::Device(_)))
    }
}
