//! Moore's whole RTRL step resident on the device (issue 20): the weights, both frames, the
//! sensitivity tensors and the gradient live there; a step uploads nothing but its example and
//! reads back nothing but `E` and the output. Several steps whose examples are known ahead are
//! recorded into one submission ([`DeviceRtrl::train_steps`]) and one compute pass, with one
//! upload of all their examples and one read-back of every step's `E` and output, since at
//! small n a submission and a map cost more than the step.
//!
//! Per step, in Moore's order (`recurrent::rtrl::Rtrl::train_step` is the CPU reference;
//! tests/gpu_rtrl.rs compares them over many steps), all dispatches, no copies:
//! 1. `forward` (rtrl_step.wgsl) per layer, reading the input from the step's slot of the
//!    examples buffer, then `output_delta` (`∂E/∂y`, `E`, `δ^y`, and `E` and `y` into the
//!    step's slot of the results);
//! 2. where the output's tensor is folded, the rows `δ^yᵀ w^{y,k}` (rtrl_fold.wgsl's `fold`;
//!    a one-row gpu::gemm with `DEEPBELIEF_RTRL_FUSED=0`);
//! 3. per tensor block and dependent layer, in increasing layer order and per column chunk:
//!    the products `w^{i,k} ξ^{·,k}` (gpu::gemm, reading the weights in place in the flat
//!    parameter buffer), then the Kronecker term and σ' (reading σ' and the block's source in
//!    place in the frames); then `∂E/∂y · ξ^{·,y}` into the flat gradient; where the output
//!    feeds no later step its tensor is not formed: the gradient is `(δ^yᵀ w^{y,k}) · ξ^{·,k}`
//!    (a row times the tensor). Where a tensor is folded right after it is finished (the
//!    formed output's by `∂E/∂y`, a layer feeding a folded output by its row),
//!    rtrl_fold.wgsl's `finish_fold` does both in one pass; otherwise (a recurrent edge into
//!    the output, or `DEEPBELIEF_RTRL_FUSED=0`) rtrl_sensitivity.wgsl (k = 0) finishes and
//!    `fold` folds;
//! 4. the shortcut: `backprop` per shortcut layer below the output, from the output down;
//! 5. `gradient_euler`: the shortcut blocks' `δ^m ⊗ a^n` and `θ ← θ − rate · ∂E/∂θ` in one.
//!
//! The frames and the tensors alternate between two buffer sets by the step's parity (this
//! step's and the previous), so the dispatches of both parities are prepared once (pipelines,
//! uniforms, bind groups, GEMM calls) and replayed; a step's slot is a dynamic uniform offset.
//! Layers start at storage-binding-aligned offsets in the frame, so kernels bind a layer's σ'
//! or activations in place. `P` is cut into column chunks whose tensors fit the storage
//! binding size (WebGPU's default 128 MiB, or `binding_bytes` for tests), as in
//! `gpu::recurrent`. [`DeviceRtrl::profile`] times every dispatch of a step.

use super::gemm::{GemmCall, GemmKernels, GemmOp, MatRef, Tiling};
use super::recurrent::{chunk_width, SensitivityDims};
use super::recurrent_fold::FoldDims;
use super::{shader, GpuContext, GpuError};
use crate::recurrent::graph::Source;
use crate::recurrent::{Network, RtrlMode};
use serde::Serialize;
use wgpu::util::DeviceExt;

const SHADER: &str = include_str!("../../shaders/rtrl_step.wgsl");
const WG: u32 = 64;
/// Words of a block's entry in the graph table, and the table's header (rtrl_step.wgsl).
const STRIDE: usize = 7;
const HEAD: usize = 4;

/// `struct StepDims` of rtrl_step.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct StepDims {
    pub layer: u32,
    pub rows: u32,
    pub block: u32,
    pub blocks: u32,
    pub total: u32,
    pub outputs: u32,
    pub out_offset: u32,
    pub count: u32,
    pub rate: f32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

/// The kernels as compiled.
pub(crate) fn source() -> String {
    shader::assemble(SHADER, &[], false)
}

/// A/B knobs of the sensitivity products, read from the environment when a [`DeviceRtrl`] is
/// built (native only; the browser takes the defaults), so one device run can profile several
/// (`PROFILE_SETTINGS` in bench/rtrl_device.sh):
/// - `DEEPBELIEF_RTRL_TILING=auto|small|medium|wide|large|huge` (auto: `Tiling::auto`);
/// - `DEEPBELIEF_RTRL_SPLIT_K=auto|N` (auto: `gemm::auto_splits`; the products' k is a layer's
///   fan-in, 2n on the adder);
/// - `DEEPBELIEF_RTRL_FUSED=1|0` (1, the default: where a tensor is folded into the gradient
///   right after it is formed, `finish_fold` finishes it and folds it in one pass, and `fold`
///   forms the rows `δ^yᵀ w^{y,k}`; 0: the finishing kernel, then `fold`, and the rows as
///   one-row GEMMs, the dispatches of 2026-11-29).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtrlKnobs {
    pub tiling: Option<Tiling>,
    pub split_k: Option<u32>,
    pub fused: bool,
}

impl Default for RtrlKnobs {
    fn default() -> Self {
        RtrlKnobs { tiling: None, split_k: None, fused: true }
    }
}

impl RtrlKnobs {
    pub fn from_env() -> Result<RtrlKnobs, GpuError> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            RtrlKnobs::parse(|name| std::env::var(name).ok())
        }
        #[cfg(target_arch = "wasm32")]
        {
            Ok(RtrlKnobs::default())
        }
    }

    /// The knobs `var` gives (an unknown value is an error naming the variable).
    pub fn parse(var: impl Fn(&str) -> Option<String>) -> Result<RtrlKnobs, GpuError> {
        let mut knobs = RtrlKnobs::default();
        if let Some(v) = var("DEEPBELIEF_RTRL_TILING") {
            knobs.tiling = match v.trim() {
                "auto" | "" => None,
                "small" => Some(Tiling::Small),
                "medium" => Some(Tiling::Medium),
                "wide" => Some(Tiling::Wide),
                "large" => Some(Tiling::Large),
                "huge" => Some(Tiling::Huge),
                other => return Err(GpuError(format!("DEEPBELIEF_RTRL_TILING: \"{other}\" is not a tiling (expected auto, small, medium, wide, large or huge)"))),
            };
        }
        if let Some(v) = var("DEEPBELIEF_RTRL_SPLIT_K") {
            knobs.split_k = match v.trim() {
                "auto" | "" => None,
                other => match other.parse::<u32>() {
                    Ok(n) if (1..=64).contains(&n) => Some(n),
                    _ => return Err(GpuError(format!("DEEPBELIEF_RTRL_SPLIT_K: \"{other}\" is not a split (expected auto or 1 to 64)"))),
                },
            };
        }
        if let Some(v) = var("DEEPBELIEF_RTRL_FUSED") {
            knobs.fused = match v.trim() {
                "1" | "" => true,
                "0" => false,
                other => return Err(GpuError(format!("DEEPBELIEF_RTRL_FUSED: \"{other}\" is not a setting (expected 1 or 0)"))),
            };
        }
        Ok(knobs)
    }

    /// `op` with the knobs' tiling and split.
    fn tune<'a>(&self, op: GemmOp<'a>) -> GemmOp<'a> {
        let op = if let Some(t) = self.tiling { op.tiling(t) } else { op };
        if let Some(s) = self.split_k { op.split_k(s) } else { op }
    }

    /// A short description for reports.
    pub fn describe(&self) -> String {
        let tiling = self.tiling.map_or("auto".to_string(), |t| format!("{t:?}").to_lowercase());
        let split = self.split_k.map_or("auto".to_string(), |n| n.to_string());
        format!("tiling {tiling}, split k {split}, fused {}", self.fused as u8)
    }
}

enum Compute {
    /// `dynamic`: the layout takes the step's slot as a dynamic offset (rtrl_step's kernels).
    Kernel { pipeline: usize, bind_group: wgpu::BindGroup, groups: (u32, u32, u32), dynamic: bool },
    Gemm(Box<GemmCall>),
}

/// One dispatch of a step (two for a split-k product), named for the profile.
struct Op {
    label: String,
    compute: Compute,
}

impl Op {
    fn kernel(label: impl Into<String>, pipeline: usize, bind_group: wgpu::BindGroup, groups: (u32, u32, u32), dynamic: bool) -> Op {
        Op { label: label.into(), compute: Compute::Kernel { pipeline, bind_group, groups, dynamic } }
    }

    fn dispatches(&self) -> usize {
        match &self.compute {
            Compute::Kernel { .. } => 1,
            Compute::Gemm(call) => 1 + (call.splits > 1) as usize,
        }
    }

    fn record(&self, pass: &mut wgpu::ComputePass<'_>, pipelines: &[wgpu::ComputePipeline], slot_offset: u32) {
        match &self.compute {
            Compute::Kernel { pipeline, bind_group, groups, dynamic } => {
                pass.set_pipeline(&pipelines[*pipeline]);
                let offsets = [slot_offset];
                pass.set_bind_group(0, bind_group, if *dynamic { &offsets[..] } else { &[] });
                pass.dispatch_workgroups(groups.0, groups.1, groups.2);
            }
            Compute::Gemm(call) => call.dispatch(pass, 0),
        }
    }
}

/// One tensor block: its column chunks and, per layer, `sets[i][set][chunk]` (two sets for
/// layers that are a recurrent source, one for the others, none where not dependent).
struct TensorBlock {
    chunks: Vec<(usize, usize)>,
    sets: Vec<Vec<Vec<wgpu::Buffer>>>,
}

impl TensorBlock {
    fn current(&self, layer: usize, parity: usize) -> &[wgpu::Buffer] {
        let sets = &self.sets[layer];
        &sets[parity % sets.len()]
    }

    fn previous(&self, layer: usize, parity: usize) -> &[wgpu::Buffer] {
        &self.sets[layer][1 - parity]
    }
}

/// What a batch of steps measured: per step `E` (f32 sums, as the device has them) and the
/// output (`steps × outputs`, row-major).
#[derive(Clone, Debug, Default)]
pub struct StepsReport {
    pub errors: Vec<f64>,
    pub outputs: Vec<f32>,
    /// The weights after the last step, where asked for (read in the same map).
    pub params: Option<Vec<f32>>,
}

/// One dispatch's mean time in [`RtrlProfile`].
#[derive(Clone, Debug, Serialize)]
pub struct RtrlDispatchTime {
    pub label: String,
    /// 2 for a split-k product (with its summing pass).
    pub dispatches: usize,
    pub microseconds: f64,
}

/// Where a step's time goes on the device ([`DeviceRtrl::profile`]).
#[derive(Clone, Debug, Serialize)]
pub struct RtrlProfile {
    /// Steps timed dispatch by dispatch, and as many again in one pass.
    pub steps: usize,
    pub dispatches_per_step: usize,
    pub dispatches: Vec<RtrlDispatchTime>,
    /// Σ of the dispatches' own times per step (each in its own pass).
    pub dispatch_sum_us: f64,
    /// Per step with the steps in one compute pass (as training records them).
    pub one_pass_us: f64,
    /// The knobs in force.
    pub knobs: String,
}

// Kernel indices into `DeviceRtrl::pipelines`.
const FORWARD: usize = 0;
const OUTPUT_DELTA: usize = 1;
const BACKPROP: usize = 2;
const SHORTCUT_GRADIENT: usize = 3;
const GRADIENT_EULER: usize = 4;
const SENSITIVITY: usize = 5;
const FINISH_FOLD: usize = 6;
const FOLD: usize = 7;

/// RTRL with every step on the device; see the module's documentation.
pub struct DeviceRtrl {
    pub mode: RtrlMode,
    pub knobs: RtrlKnobs,
    capacity: usize,
    layer_offsets: Vec<usize>,
    layers: Vec<usize>,
    params_len: usize,
    pipelines: Vec<wgpu::ComputePipeline>,
    params: wgpu::Buffer,
    /// Frame `p` is the current one at parity `p`, the other the previous.
    frames: [wgpu::Buffer; 2],
    work: wgpu::Buffer,
    gradient: wgpu::Buffer,
    /// `[inputs (capacity × n_in) | targets (capacity × n_out)]`.
    examples: wgpu::Buffer,
    /// `[E (capacity) | outputs (capacity × n_out)]`.
    results: wgpu::Buffer,
    /// Bytes between the slots' dynamic offsets.
    slot_stride: u32,
    tensors: Vec<Option<TensorBlock>>,
    /// A step's dispatches per parity, in order.
    step_ops: [Vec<Op>; 2],
    /// The gradient_euler uniforms (per parity), rewritten when the rate changes.
    euler_dims: Vec<wgpu::Buffer>,
    euler_template: StepDims,
    rate: Option<f32>,
    parity: usize,
    _keep: Vec<wgpu::Buffer>,
    _gemm: GemmKernels,
}

/// `len` values of a frame from `offset` (a layer's σ' or activations), bound in place.
fn in_frame(frame: &wgpu::Buffer, offset: usize, len: usize) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: frame, offset: (offset * 4) as u64, size: std::num::NonZeroU64::new((len.max(1) * 4) as u64) })
}

fn round_up(value: usize, align: usize) -> usize {
    value.div_ceil(align) * align
}

impl DeviceRtrl {
    /// `net`'s weights uploaded, the frames and tensors zero (a sequence start), room for
    /// `capacity` steps per submission; `binding_bytes` caps each tensor chunk (the device's
    /// storage binding size when `None`). The knobs come from the environment (native).
    pub fn new(ctx: &GpuContext, net: &Network, mode: RtrlMode, binding_bytes: Option<u64>, capacity: usize) -> Result<Self, GpuError> {
        Self::with_knobs(ctx, net, mode, binding_bytes, capacity, RtrlKnobs::from_env()?)
    }

    pub fn with_knobs(ctx: &GpuContext, net: &Network, mode: RtrlMode, binding_bytes: Option<u64>, capacity: usize, knobs: RtrlKnobs) -> Result<Self, GpuError> {
        let graph = &net.graph;
        let device = &ctx.device;
        let capacity = capacity.max(1);
        let limits = device.limits();
        let device_binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        let binding = binding_bytes.unwrap_or(device_binding);
        // Every layer starts at a storage-binding offset alignment, so a kernel can bind its
        // activations or σ' in place.
        let align = (limits.min_storage_buffer_offset_alignment as usize / 4).max(1);
        let layers = graph.layers.clone();
        let mut layer_offsets = Vec::with_capacity(layers.len());
        let mut total = 0;
        for &n in &layers {
            layer_offsets.push(total);
            total = round_up(total + n, align);
        }
        let (n_in, n_out, out) = (layers[0], *layers.last().expect("layers"), graph.output());
        let params_len = net.params.len();
        for (what, values) in [("parameters", params_len), ("frame", 2 * total)] {
            if (values * 4) as u64 > device_binding {
                return Err(GpuError(format!("the {what} ({values} values) exceed the storage binding size of {device_binding} bytes")));
            }
        }
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
        let zeros = |label: &str, len: usize| device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: (len.max(1) * 4) as u64, usage, mapped_at_creation: false });
        let shortcut_layers = graph.shortcut_layers();
        let recurrent_sources = graph.recurrent_sources();
        let with_tensor = |b: &crate::recurrent::Block| !(mode == RtrlMode::Shortcut && shortcut_layers[b.to]);
        let mut table: Vec<u32> = vec![n_in as u32, (capacity * n_in) as u32, capacity as u32, 0];
        for b in &net.blocks {
            let (kind, from) = match b.source {
                Source::Layer(k) => (0, k),
                Source::Previous(q) => (1, q),
                Source::Bias => (2, 0),
            };
            table.extend([b.to as u32, kind, from as u32, b.rows as u32, b.cols as u32, b.offset as u32, !with_tensor(b) as u32]);
        }
        debug_assert_eq!(table.len(), HEAD + STRIDE * net.blocks.len());
        table.extend(layer_offsets.iter().map(|&o| o as u32));
        let graph_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("rtrl graph"), contents: bytemuck::cast_slice(&table), usage: wgpu::BufferUsages::STORAGE });
        let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("rtrl params"), contents: bytemuck::cast_slice(&net.params), usage });
        let frames = [zeros("rtrl frame 0", 2 * total), zeros("rtrl frame 1", 2 * total)];
        let work = zeros("rtrl work", n_out + 1 + total);
        let gradient = zeros("rtrl gradient", params_len);
        let examples = zeros("rtrl examples", capacity * (n_in + n_out));
        let results = zeros("rtrl results", capacity * (1 + n_out));
        let slot_stride = limits.min_uniform_buffer_offset_alignment.max(16);
        let slot_words: Vec<u32> = (0..capacity).flat_map(|s| std::iter::once(s as u32).chain(std::iter::repeat_n(0, slot_stride as usize / 4 - 1))).collect();
        let slots = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("rtrl slots"), contents: bytemuck::cast_slice(&slot_words), usage: wgpu::BufferUsages::UNIFORM });
        let ones = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("rtrl bias source"), contents: bytemuck::bytes_of(&1.0f32), usage: wgpu::BufferUsages::STORAGE });
        let dummy = zeros("rtrl dummy", 1);

        use wgpu::BufferBindingType::{Storage, Uniform};
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("rtrl_step"),
            entries: &[
                shader::buffer_entry(0, Uniform, false),
                shader::buffer_entry(1, Storage { read_only: true }, false),
                shader::buffer_entry(2, Storage { read_only: false }, false),
                shader::buffer_entry(3, Storage { read_only: false }, false),
                shader::buffer_entry(4, Storage { read_only: true }, false),
                shader::buffer_entry(5, Storage { read_only: true }, false),
                shader::buffer_entry(6, Storage { read_only: false }, false),
                shader::buffer_entry(7, Storage { read_only: false }, false),
                shader::buffer_entry(8, Storage { read_only: false }, false),
                shader::buffer_entry(9, Uniform, true),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some("rtrl_step"), bind_group_layouts: &[Some(&layout)], immediate_size: 0 });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("rtrl_step"), source: wgpu::ShaderSource::Wgsl(source().into()) });
        let mut pipelines: Vec<wgpu::ComputePipeline> = ["forward", "output_delta", "backprop", "shortcut_gradient", "gradient_euler"]
            .iter()
            .map(|entry| device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some(entry), layout: Some(&pipeline_layout), module: &module, entry_point: Some(entry), compilation_options: Default::default(), cache: None }))
            .collect();
        let sensitivity_module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("rtrl_sensitivity"), source: wgpu::ShaderSource::Wgsl(super::recurrent::source().into()) });
        pipelines.push(device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some("rtrl_sensitivity"), layout: None, module: &sensitivity_module, entry_point: Some("main"), compilation_options: Default::default(), cache: None }));
        let fold_module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("rtrl_fold"), source: wgpu::ShaderSource::Wgsl(super::recurrent_fold::source().into()) });
        for entry in ["finish_fold", "fold"] {
            pipelines.push(device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some(entry), layout: None, module: &fold_module, entry_point: Some(entry), compilation_options: Default::default(), cache: None }));
        }
        let sensitivity_layout = pipelines[SENSITIVITY].get_bind_group_layout(0);
        let fold_layouts = [pipelines[FINISH_FOLD].get_bind_group_layout(0), pipelines[FOLD].get_bind_group_layout(0)];

        let base = StepDims { blocks: net.blocks.len() as u32, total: total as u32, outputs: n_out as u32, out_offset: layer_offsets[out] as u32, ..Default::default() };
        let mut keep = Vec::new();
        let mut euler_dims = Vec::new();
        let step_group = |dims: StepDims, parity: usize| -> (wgpu::BindGroup, wgpu::Buffer) {
            let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("rtrl step dims"), contents: bytemuck::bytes_of(&dims), usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST });
            let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("rtrl_step"),
                layout: &layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: graph_buffer.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 2, resource: params.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 3, resource: frames[parity].as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 4, resource: frames[1 - parity].as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 5, resource: examples.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 6, resource: work.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 7, resource: gradient.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 8, resource: results.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 9, resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer: &slots, offset: 0, size: std::num::NonZeroU64::new(16) }) },
                ],
            });
            (group, uniform)
        };
        let per_invocation = |count: usize| shader::grid((count as u32).div_ceil(WG));
        // rtrl_fold.wgsl: `finishing` (σ' and the block's source) makes it finish_fold, else fold.
        let fold_op = |label: String, dims: FoldDims, row: wgpu::BindingResource<'_>, tensor: &wgpu::Buffer, finishing: Option<(wgpu::BindingResource<'_>, wgpu::BindingResource<'_>)>, out: &wgpu::Buffer, keep: &mut Vec<wgpu::Buffer>| -> Op {
            let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("rtrl fold dims"), contents: bytemuck::bytes_of(&dims), usage: wgpu::BufferUsages::UNIFORM });
            let mut entries = vec![
                wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: row },
                wgpu::BindGroupEntry { binding: 4, resource: tensor.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 5, resource: out.as_entire_binding() },
            ];
            let pipeline = if finishing.is_some() { FINISH_FOLD } else { FOLD };
            if let Some((deriv, source)) = finishing {
                entries.extend([wgpu::BindGroupEntry { binding: 1, resource: deriv }, wgpu::BindGroupEntry { binding: 2, resource: source }]);
            }
            let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some("rtrl fold"), layout: &fold_layouts[pipeline - FINISH_FOLD], entries: &entries });
            keep.push(uniform);
            Op::kernel(label, pipeline, bind_group, super::recurrent_fold::groups(dims.width as usize), false)
        };

        let widest = *layers.iter().max().expect("layers");
        // The output layer feeds no layer within a step (it is the highest); unless it feeds
        // the next step, its tensor serves only the gradient, ∂E/∂w = ∂E/∂y · ξ^{·,y} =
        // δ^y · (Σ_k w^{y,k} ξ^{·,k} + own term), δ^y = σ'(net^y) ⊙ ∂E/∂y: so the products are
        // taken as (δ^yᵀ w^{y,k}) · ξ^{·,k}, a row times the tensor instead of a matrix times it
        // (Moore forms ξ^{·,y}; this is the same sum in another order, and a third fewer FLOPs
        // on the Elman adder).
        let fold_output = !recurrent_sources[out];
        let mut tensors = Vec::new();
        for b in &net.blocks {
            if !with_tensor(b) {
                tensors.push(None);
                continue;
            }
            let p = b.len();
            let width = chunk_width(widest, widest, p, binding)?;
            let chunks: Vec<(usize, usize)> = (0..p).step_by(width).map(|c0| (c0, width.min(p - c0))).collect();
            let dependents = graph.dependents(b.to);
            let sets = (0..layers.len())
                .map(|i| {
                    let count = if i == 0 || !dependents[i] || (i == out && fold_output) { 0 } else if recurrent_sources[i] { 2 } else { 1 };
                    (0..count).map(|_| chunks.iter().map(|&(_, w)| zeros("rtrl sensitivity", layers[i] * w)).collect()).collect()
                })
                .collect();
            tensors.push(Some(TensorBlock { chunks, sets }));
        }

        let gemm = GemmKernels::new(ctx);
        let folds = fold_output && tensors.iter().flatten().any(|t| t.sets[out].is_empty());
        let folded: Vec<wgpu::Buffer> = net.blocks.iter().map(|b| zeros("rtrl folded row", if b.to == out { b.cols } else { 1 })).collect();
        let mut step_ops: [Vec<Op>; 2] = [Vec::new(), Vec::new()];
        for (parity, ops) in step_ops.iter_mut().enumerate() {
            let (frame, prev) = (&frames[parity], &frames[1 - parity]);
            // 1. The forward step, then ∂E/∂y, E and δ^y.
            for (i, &n) in layers.iter().enumerate().skip(1) {
                let (bind_group, _) = step_group(StepDims { layer: i as u32, rows: n as u32, ..base }, parity);
                ops.push(Op::kernel(format!("forward layer {i}"), FORWARD, bind_group, shader::grid(n as u32), true));
            }
            let (bind_group, _) = step_group(base, parity);
            ops.push(Op::kernel("output_delta", OUTPUT_DELTA, bind_group, (1, 1, 1), true));
            // 2. Folding the output: the row δ^yᵀ w^{y,k} of every block into the output.
            if folds {
                let delta_offset = (n_out + 1 + layer_offsets[out]) as u64;
                for (ci, cb) in net.blocks.iter().enumerate().filter(|(_, cb)| cb.to == out && cb.source != Source::Bias) {
                    if knobs.fused {
                        // δ^y (n_out) times w^{y,k} (n_out × n_k), both in place: a fold.
                        let dims = FoldDims { rows: n_out as u32, width: cb.cols as u32, block_cols: 1, row_offset: delta_offset as u32, tensor_offset: cb.offset as u32, ..Default::default() };
                        ops.push(fold_op(format!("fold row δ^yᵀ {} (fold {}×{})", cb.name(), n_out, cb.cols), dims, work.as_entire_binding(), &params, None, &folded[ci], &mut keep));
                        continue;
                    }
                    let op = GemmOp::new(1, n_out as u32, cb.cols as u32, &work, &params, &folded[ci]).with_a(MatRef::at(&work, delta_offset, n_out as u32)).with_b(MatRef::at(&params, cb.offset as u64, cb.cols as u32));
                    ops.push(Op { label: format!("fold row δ^yᵀ {} (gemm 1×{}×{})", cb.name(), n_out, cb.cols), compute: Compute::Gemm(Box::new(gemm.prepare(ctx, &op)?)) });
                }
            }
            // 3. The tensors, and their gradients. Where a tensor is folded into the gradient
            // right after it is formed (the output's tensor by ∂E/∂y where it is formed, or a
            // layer feeding the output by δ^yᵀ w^{y,k} where the output's is folded), finish_fold
            // finishes it and folds it in one pass (knobs.fused); the other folds (a recurrent
            // edge into the output reads the previous step's tensor) run after the block's
            // tensors. A block's gradient is written by its first term and added to by the rest.
            for (index, block) in net.blocks.iter().enumerate() {
                let Some(t) = &tensors[index] else { continue };
                let source = match block.source {
                    Source::Layer(k) => in_frame(frame, layer_offsets[k], block.cols),
                    Source::Previous(q) => in_frame(prev, layer_offsets[q], block.cols),
                    Source::Bias => ones.as_entire_binding(),
                };
                let formed = !t.sets[out].is_empty();
                let folds_here = !formed && fold_output && graph.dependents(block.to)[out];
                let mut written = false;
                if folds_here && block.to == out {
                    // The own term δ^y_s a^n_t (it writes the block's gradient).
                    let (bind_group, _) = step_group(StepDims { block: index as u32, count: block.len() as u32, ..base }, parity);
                    ops.push(Op::kernel(format!("∂E/∂{}: own term", block.name()), SHORTCUT_GRADIENT, bind_group, per_invocation(block.len()), true));
                    written = true;
                }
                // The row that folds layer i's tensor as it is finished, where fused.
                let fused_row = |i: usize| -> Option<(String, wgpu::BindingResource<'_>)> {
                    if !knobs.fused {
                        None
                    } else if formed && i == out {
                        Some(("∂E/∂y·ξ^y".to_string(), work.as_entire_binding()))
                    } else if folds_here {
                        let ci = net.blocks.iter().position(|cb| cb.to == out && cb.source == Source::Layer(i))?;
                        Some((format!("(δ^yᵀ {})·ξ", net.blocks[ci].name()), folded[ci].as_entire_binding()))
                    } else {
                        None
                    }
                };
                for i in 1..layers.len() {
                    if t.sets[i].is_empty() {
                        continue;
                    }
                    let fused = fused_row(i);
                    for (c, &(col0, width)) in t.chunks.iter().enumerate() {
                        let chunk = if t.chunks.len() > 1 { format!(" chunk {c}") } else { String::new() };
                        let tensor_out = &t.current(i, parity)[c];
                        let mut terms = 0;
                        for cb in net.blocks.iter().filter(|cb| cb.to == i) {
                            let b = match cb.source {
                                Source::Layer(k) if k > 0 && !t.sets[k].is_empty() => &t.current(k, parity)[c],
                                Source::Previous(q) if q > 0 && !t.sets[q].is_empty() => &t.previous(q, parity)[c],
                                _ => continue,
                            };
                            let op = GemmOp::new(layers[i] as u32, cb.cols as u32, width as u32, &params, b, tensor_out).with_a(MatRef::at(&params, cb.offset as u64, cb.cols as u32));
                            let op = knobs.tune(if terms > 0 { op.accumulate() } else { op });
                            let call = gemm.prepare(ctx, &op)?;
                            let label = format!("ξ[{}] layer {i}{chunk} += {}·ξ (gemm {}×{}×{}, {:?}, {} split)", block.name(), cb.name(), layers[i], cb.cols, width, call.tiling, call.splits);
                            ops.push(Op { label, compute: Compute::Gemm(Box::new(call)) });
                            terms += 1;
                        }
                        let deriv = in_frame(frame, total + layer_offsets[i], layers[i]);
                        let own = (i == block.to) as u32;
                        if let Some((what, row)) = &fused {
                            let dims = FoldDims { rows: layers[i] as u32, width: width as u32, block_cols: block.cols as u32, col0: col0 as u32, own, accumulate: (terms > 0) as u32, gradient_accumulate: written as u32, gradient_offset: (block.offset + col0) as u32, ..Default::default() };
                            let label = format!("ξ[{}] layer {i}{chunk}: Kronecker term, σ', ∂E/∂{} {} {what} (finish_fold)", block.name(), block.name(), if written { "+=" } else { "=" });
                            ops.push(fold_op(label, dims, row.clone(), tensor_out, Some((deriv, source.clone())), &gradient, &mut keep));
                            continue;
                        }
                        let dims = SensitivityDims { rows: layers[i] as u32, k: 0, width: width as u32, block_cols: block.cols as u32, col0: col0 as u32, own, accumulate: (terms > 0) as u32, finish: 1 };
                        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("rtrl sensitivity dims"), contents: bytemuck::bytes_of(&dims), usage: wgpu::BufferUsages::UNIFORM });
                        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                            label: Some("rtrl_sensitivity"),
                            layout: &sensitivity_layout,
                            entries: &[
                                wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 1, resource: dummy.as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 2, resource: dummy.as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 3, resource: deriv },
                                wgpu::BindGroupEntry { binding: 4, resource: source.clone() },
                                wgpu::BindGroupEntry { binding: 5, resource: tensor_out.as_entire_binding() },
                            ],
                        });
                        keep.push(uniform);
                        ops.push(Op::kernel(format!("ξ[{}] layer {i}{chunk}: Kronecker term, σ'", block.name()), SENSITIVITY, bind_group, ((width as u32).div_ceil(16), (layers[i] as u32).div_ceil(16), 1), false));
                    }
                    if fused.is_some() {
                        written = true;
                    }
                }
                // The folds not fused above: a row times a finished tensor.
                let fold_dims = |rows: usize, col0: usize, width: usize, written: bool| FoldDims { rows: rows as u32, width: width as u32, col0: col0 as u32, block_cols: 1, gradient_accumulate: written as u32, gradient_offset: (block.offset + col0) as u32, ..Default::default() };
                if formed && !knobs.fused {
                    for (c, &(col0, width)) in t.chunks.iter().enumerate() {
                        let y = &t.current(out, parity)[c];
                        ops.push(fold_op(format!("∂E/∂{} = ∂E/∂y·ξ^y chunk {c} (fold)", block.name()), fold_dims(n_out, col0, width, false), work.as_entire_binding(), y, None, &gradient, &mut keep));
                    }
                } else if folds_here {
                    // (δ^yᵀ w^{y,k}) ξ^{·,k} of every incoming block of the output with a tensor.
                    for (ci, cb) in net.blocks.iter().enumerate().filter(|(_, cb)| cb.to == out) {
                        let source = match cb.source {
                            Source::Layer(k) if k > 0 && !t.sets[k].is_empty() && !knobs.fused => t.current(k, parity),
                            Source::Previous(q) if q > 0 && !t.sets[q].is_empty() => t.previous(q, parity),
                            _ => continue,
                        };
                        for (c, &(col0, width)) in t.chunks.iter().enumerate() {
                            let label = format!("∂E/∂{} {} (δ^yᵀ {})·ξ chunk {c} (fold)", block.name(), if written { "+=" } else { "=" }, cb.name());
                            ops.push(fold_op(label, fold_dims(cb.cols, col0, width, written), folded[ci].as_entire_binding(), &source[c], None, &gradient, &mut keep));
                        }
                        written = true;
                    }
                    if !written {
                        return Err(GpuError(format!("{}: the output depends on it, yet no term reaches the output", block.name())));
                    }
                }
            }
            // 4. The shortcut's δ's below the output, from the output down.
            if net.blocks.iter().any(|b| !with_tensor(b)) {
                for i in (1..out).rev().filter(|&i| shortcut_layers[i]) {
                    let (bind_group, _) = step_group(StepDims { layer: i as u32, rows: layers[i] as u32, ..base }, parity);
                    ops.push(Op::kernel(format!("backprop layer {i}"), BACKPROP, bind_group, per_invocation(layers[i]), true));
                }
            }
            // 5. The shortcut blocks' gradients and the Euler step.
            let euler = StepDims { count: params_len as u32, ..base };
            let (bind_group, uniform) = step_group(euler, parity);
            euler_dims.push(uniform);
            ops.push(Op::kernel("gradient_euler", GRADIENT_EULER, bind_group, per_invocation(params_len), true));
        }
        keep.extend(folded);
        keep.extend([graph_buffer, slots, ones, dummy]);
        Ok(DeviceRtrl {
            mode,
            knobs,
            capacity,
            layer_offsets,
            layers,
            params_len,
            pipelines,
            params,
            frames,
            work,
            gradient,
            examples,
            results,
            slot_stride,
            tensors,
            step_ops,
            euler_dims,
            euler_template: StepDims { count: params_len as u32, ..base },
            rate: None,
            parity: 0,
            _keep: keep,
            _gemm: gemm,
        })
    }

    /// Steps per submission.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Dispatches a step records (a split-k product counts 2), and no copies.
    pub fn dispatches_per_step(&self) -> usize {
        self.step_ops[0].iter().map(Op::dispatches).sum()
    }

    /// Replaces the weights on the device (the tensors and frames stay).
    pub fn set_params(&self, ctx: &GpuContext, params: &[f32]) {
        assert_eq!(params.len(), self.params_len, "parameter count");
        ctx.queue.write_buffer(&self.params, 0, bytemuck::cast_slice(params));
    }

    /// The weights, read back.
    pub async fn params(&self, ctx: &GpuContext) -> Result<Vec<f32>, GpuError> {
        ctx.read_back(&self.params, self.params_len).await
    }

    /// The last step's gradient `∂E/∂θ`, read back.
    pub async fn gradient(&self, ctx: &GpuContext) -> Result<Vec<f32>, GpuError> {
        ctx.read_back(&self.gradient, self.params_len).await
    }

    /// The last step's activations per layer, read back.
    pub async fn activations(&self, ctx: &GpuContext) -> Result<Vec<Vec<f32>>, GpuError> {
        // The last step ran at parity `self.parity − 1`.
        let end = self.layer_offsets.last().expect("layers") + self.layers.last().expect("layers");
        let frame = ctx.read_back(&self.frames[(self.parity + 1) % 2], end).await?;
        Ok(self.layer_offsets.iter().zip(&self.layers).map(|(&o, &n)| frame[o..o + n].to_vec()).collect())
    }

    /// Back to a sequence start: frames and tensors zero (the weights stay).
    pub fn reset(&mut self, ctx: &GpuContext) {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        for buffer in self.frames.iter().chain([&self.work, &self.gradient]) {
            encoder.clear_buffer(buffer, 0, None);
        }
        for t in self.tensors.iter().flatten() {
            t.sets.iter().flatten().flatten().for_each(|b| encoder.clear_buffer(b, 0, None));
        }
        ctx.queue.submit([encoder.finish()]);
        self.parity = 0;
    }

    /// The last step's `∂a^layer/∂w` of block `block` (`n_layer × P`), read back, when kept.
    pub async fn sensitivity(&self, ctx: &GpuContext, block: usize, layer: usize) -> Result<Option<Vec<f32>>, GpuError> {
        let Some(Some(t)) = self.tensors.get(block) else { return Ok(None) };
        if t.sets.get(layer).is_none_or(Vec::is_empty) {
            return Ok(None);
        }
        // The last step ran at parity `self.parity − 1`.
        let current = t.current(layer, (self.parity + 1) % 2);
        let rows = self.layers[layer];
        let ranges: Vec<(&wgpu::Buffer, u64, u64)> = current.iter().zip(&t.chunks).map(|(buf, &(_, w))| (buf, 0, (rows * w * 4) as u64)).collect();
        let parts = super::read_ranges(ctx, &ranges).await?;
        let p: usize = t.chunks.iter().map(|c| c.1).sum();
        let mut out = vec![0.0f32; rows * p];
        for (part, &(c0, w)) in parts.iter().zip(&t.chunks) {
            let values: Vec<f32> = bytemuck::pod_collect_to_vec(part);
            for j in 0..rows {
                out[j * p + c0..j * p + c0 + w].copy_from_slice(&values[j * w..(j + 1) * w]);
            }
        }
        Ok(Some(out))
    }

    /// Online steps (Moore's `process()` each, weight step included) on the examples
    /// `inputs` (`steps × n_in`) and `targets` (`steps × n_out`), recorded `capacity` at a time
    /// into one submission each; every step's `E` and output come back.
    pub async fn train_steps(&mut self, ctx: &GpuContext, inputs: &[f32], targets: &[f32], rate: f32) -> Result<StepsReport, GpuError> {
        self.run_steps(ctx, inputs, targets, rate, false).await
    }

    /// [`DeviceRtrl::train_steps`], the weights read back with the last submission's results.
    pub async fn train_steps_reading_params(&mut self, ctx: &GpuContext, inputs: &[f32], targets: &[f32], rate: f32) -> Result<StepsReport, GpuError> {
        self.run_steps(ctx, inputs, targets, rate, true).await
    }

    /// Sets the rate and uploads `count` steps' examples from `start` into their slots.
    fn stage(&mut self, ctx: &GpuContext, inputs: &[f32], targets: &[f32], rate: f32, start: usize, count: usize) {
        let (n_in, n_out) = (self.layers[0], *self.layers.last().expect("layers"));
        if self.rate != Some(rate) {
            for uniform in &self.euler_dims {
                ctx.queue.write_buffer(uniform, 0, bytemuck::bytes_of(&StepDims { rate, ..self.euler_template }));
            }
            self.rate = Some(rate);
        }
        ctx.queue.write_buffer(&self.examples, 0, bytemuck::cast_slice(&inputs[start * n_in..(start + count) * n_in]));
        ctx.queue.write_buffer(&self.examples, (self.capacity * n_in * 4) as u64, bytemuck::cast_slice(&targets[start * n_out..(start + count) * n_out]));
    }

    fn check_examples(&self, inputs: &[f32], targets: &[f32]) -> usize {
        let (n_in, n_out) = (self.layers[0], *self.layers.last().expect("layers"));
        let steps = inputs.len() / n_in.max(1);
        assert!(inputs.len() == steps * n_in && targets.len() == steps * n_out, "examples' sizes");
        steps
    }

    async fn run_steps(&mut self, ctx: &GpuContext, inputs: &[f32], targets: &[f32], rate: f32, read_params: bool) -> Result<StepsReport, GpuError> {
        let n_out = *self.layers.last().expect("layers");
        let steps = self.check_examples(inputs, targets);
        let mut report = StepsReport { errors: Vec::with_capacity(steps), outputs: Vec::with_capacity(steps * n_out), params: None };
        let mut start = 0;
        while start < steps {
            let count = self.capacity.min(steps - start);
            self.stage(ctx, inputs, targets, rate, start, count);
            let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("rtrl steps") });
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("rtrl steps"), timestamp_writes: None });
                for s in 0..count {
                    self.record_step(&mut pass, s);
                }
            }
            ctx.queue.submit([encoder.finish()]);
            start += count;
            let outputs_at = (self.capacity * 4) as u64;
            let mut ranges = vec![(&self.results, 0, (count * 4) as u64), (&self.results, outputs_at, (count * n_out * 4) as u64)];
            if read_params && start == steps {
                ranges.push((&self.params, 0, (self.params_len * 4) as u64));
            }
            let parts = super::read_ranges(ctx, &ranges).await?;
            let errors: Vec<f32> = bytemuck::pod_collect_to_vec(&parts[0]);
            report.errors.extend(errors.iter().map(|&e| e as f64));
            report.outputs.extend(bytemuck::pod_collect_to_vec::<u8, f32>(&parts[1]));
            if let Some(params) = parts.get(2) {
                report.params = Some(bytemuck::pod_collect_to_vec(params));
            }
        }
        Ok(report)
    }

    /// One step reading slot `s` of the staged examples and writing slot `s` of the results.
    fn record_step(&mut self, pass: &mut wgpu::ComputePass<'_>, s: usize) {
        let offset = s as u32 * self.slot_stride;
        for op in &self.step_ops[self.parity] {
            op.record(pass, &self.pipelines, offset);
        }
        self.parity = 1 - self.parity;
    }

    /// Where a step's time goes: GPU timestamps around every dispatch of `steps` online steps
    /// (each dispatch in its own compute pass; a split-k product and its summing pass count as
    /// one), then around the same number of steps in one pass, as training records them. Runs
    /// real steps on `inputs`/`targets` (at most `capacity`; the weights move). Needs the
    /// adapter's `TIMESTAMP_QUERY` feature.
    pub async fn profile(&mut self, ctx: &GpuContext, inputs: &[f32], targets: &[f32], rate: f32) -> Result<RtrlProfile, GpuError> {
        if !ctx.device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return Err(GpuError(format!("{} offers no timestamp queries, so it cannot be profiled", ctx.adapter_info.name)));
        }
        let ops = self.step_ops[0].len();
        // A query set holds at most 4096 timestamps; two steps at least, for both parities.
        let steps = self.check_examples(inputs, targets).min(self.capacity).min((4094 / (2 * ops)).max(1));
        if steps == 0 {
            return Err(GpuError("profile: no examples".into()));
        }
        let device = &ctx.device;
        let count = (2 * ops * steps + 2) as u32;
        let queries = device.create_query_set(&wgpu::QuerySetDescriptor { label: Some("rtrl_profile"), ty: wgpu::QueryType::Timestamp, count });
        let resolved = device.create_buffer(&wgpu::BufferDescriptor { label: Some("rtrl_profile_ticks"), size: 8 * count as u64, usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
        self.stage(ctx, inputs, targets, rate, 0, steps);
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("rtrl_profile") });
        for s in 0..steps {
            for (i, op) in self.step_ops[self.parity].iter().enumerate() {
                let q = (2 * (s * ops + i)) as u32;
                let writes = wgpu::ComputePassTimestampWrites { query_set: &queries, beginning_of_pass_write_index: Some(q), end_of_pass_write_index: Some(q + 1) };
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(&op.label), timestamp_writes: Some(writes) });
                op.record(&mut pass, &self.pipelines, s as u32 * self.slot_stride);
            }
            self.parity = 1 - self.parity;
        }
        {
            let last = count - 2;
            let writes = wgpu::ComputePassTimestampWrites { query_set: &queries, beginning_of_pass_write_index: Some(last), end_of_pass_write_index: Some(last + 1) };
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("rtrl steps in one pass"), timestamp_writes: Some(writes) });
            for s in 0..steps {
                self.record_step(&mut pass, s);
            }
        }
        encoder.resolve_query_set(&queries, 0..count, &resolved, 0);
        ctx.queue.submit([encoder.finish()]);
        let bytes = super::read_ranges(ctx, &[(&resolved, 0, 8 * count as u64)]).await?;
        let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&bytes[0]);
        let us_per_tick = ctx.queue.get_timestamp_period() as f64 / 1000.0;
        let span = |q: usize| ticks[q + 1].saturating_sub(ticks[q]) as f64 * us_per_tick;
        let times: Vec<RtrlDispatchTime> = self.step_ops[0]
            .iter()
            .enumerate()
            .map(|(i, op)| RtrlDispatchTime { label: op.label.clone(), dispatches: op.dispatches(), microseconds: (0..steps).map(|s| span(2 * (s * ops + i))).sum::<f64>() / steps as f64 })
            .collect();
        Ok(RtrlProfile {
            steps,
            dispatches_per_step: self.dispatches_per_step(),
            dispatch_sum_us: times.iter().map(|t| t.microseconds).sum(),
            dispatches: times,
            one_pass_us: span(count as usize - 2) / steps as f64,
            knobs: self.knobs.describe(),
        })
    }
}
