//! Moore's whole RTRL step resident on the device (issue 20): the weights, both frames, the
//! sensitivity tensors and the gradient live there; a step uploads nothing but its example and
//! reads back nothing but `E` and the output. Several steps whose examples are known ahead are
//! recorded into one submission ([`DeviceRtrl::train_steps`]), with one read-back of every
//! step's `E` and output, since at small n a submission and a map cost more than the step.
//!
//! Per step, in Moore's order (`recurrent::rtrl::Rtrl::train_step` is the CPU reference;
//! tests/gpu_rtrl.rs compares them over many steps):
//! 1. the frame becomes the previous one (a copy, `O(n)`), the example is copied in;
//! 2. `forward` (rtrl_step.wgsl) per layer, `output_error` (`∂E/∂y`, `E`);
//! 3. per tensor block and dependent layer, in increasing layer order and per column chunk:
//!    the products `w^{i,k} ξ^{·,k}` (gpu::gemm, reading the weights in place in the flat
//!    parameter buffer) and rtrl_sensitivity.wgsl (k = 0) for the Kronecker term and σ';
//!    then `∂E/∂y · ξ^{·,y}` into the flat gradient; where the output feeds no later step its
//!    tensor is not formed: the gradient is `(δ^yᵀ w^{y,k}) · ξ^{·,k}` (the same sum, a row
//!    times the tensor instead of a matrix times it);
//! 4. the shortcut: `backprop` per shortcut layer from the output down, `shortcut_gradient`
//!    per shortcut block;
//! 5. `euler`: `θ ← θ − rate · ∂E/∂θ`.
//!
//! Current and previous tensors alternate between two buffer sets by the step's parity, so the
//! dispatches of both parities are prepared once (pipelines, uniforms, bind groups, GEMM calls)
//! and replayed. `P` is cut into column chunks whose tensors fit the storage binding size
//! (WebGPU's default 128 MiB, or `binding_bytes` for tests), as in `gpu::recurrent`.

use super::gemm::{GemmCall, GemmKernels, GemmOp, MatRef};
use super::recurrent::{chunk_width, SensitivityDims};
use super::{shader, GpuContext, GpuError};
use crate::recurrent::graph::Source;
use crate::recurrent::{Network, RtrlMode};
use wgpu::util::DeviceExt;

const SHADER: &str = include_str!("../../shaders/rtrl_step.wgsl");
const WG: u32 = 64;

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

enum Compute {
    Kernel { pipeline: usize, bind_group: wgpu::BindGroup, groups: (u32, u32, u32) },
    Gemm(Box<GemmCall>),
}

fn record(pass: &mut wgpu::ComputePass<'_>, pipelines: &[wgpu::ComputePipeline], ops: &[Compute]) {
    for op in ops {
        match op {
            Compute::Kernel { pipeline, bind_group, groups } => {
                pass.set_pipeline(&pipelines[*pipeline]);
                pass.set_bind_group(0, bind_group, &[]);
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

// Kernel indices into `DeviceRtrl::pipelines`.
const FORWARD: usize = 0;
const OUTPUT_ERROR: usize = 1;
const BACKPROP: usize = 2;
const SHORTCUT_GRADIENT: usize = 3;
const EULER: usize = 4;
const SENSITIVITY: usize = 5;

/// RTRL with every step on the device; see the module's documentation.
pub struct DeviceRtrl {
    pub mode: RtrlMode,
    capacity: usize,
    layer_offsets: Vec<usize>,
    layers: Vec<usize>,
    total: usize,
    params_len: usize,
    pipelines: Vec<wgpu::ComputePipeline>,
    params: wgpu::Buffer,
    frame: wgpu::Buffer,
    prev: wgpu::Buffer,
    desired: wgpu::Buffer,
    work: wgpu::Buffer,
    gradient: wgpu::Buffer,
    inputs: wgpu::Buffer,
    targets: wgpu::Buffer,
    errors: wgpu::Buffer,
    outputs: wgpu::Buffer,
    deriv: Vec<wgpu::Buffer>,
    /// Per block, its source copied out of the frames (`None` for a bias: a constant 1).
    source_copies: Vec<Option<(bool, usize, usize)>>,
    sources: Vec<wgpu::Buffer>,
    tensors: Vec<Option<TensorBlock>>,
    forward_ops: Vec<Compute>,
    /// Folding the output's tensor into the gradient: δ^y and the rows δ^yᵀ w^{y,k}.
    prologue_ops: Vec<Compute>,
    tensor_ops: [Vec<Compute>; 2],
    _folded: Vec<wgpu::Buffer>,
    shortcut_ops: Vec<Compute>,
    euler_dims: wgpu::Buffer,
    euler_template: StepDims,
    rate: Option<f32>,
    parity: usize,
    _gemm: GemmKernels,
}

impl DeviceRtrl {
    /// `net`'s weights uploaded, the frames and tensors zero (a sequence start), room for
    /// `capacity` steps per submission; `binding_bytes` caps each tensor chunk (the device's
    /// storage binding size when `None`).
    pub fn new(ctx: &GpuContext, net: &Network, mode: RtrlMode, binding_bytes: Option<u64>, capacity: usize) -> Result<Self, GpuError> {
        let graph = &net.graph;
        let device = &ctx.device;
        let capacity = capacity.max(1);
        let limits = device.limits();
        let device_binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        let binding = binding_bytes.unwrap_or(device_binding);
        let layers = graph.layers.clone();
        let mut layer_offsets = Vec::with_capacity(layers.len());
        let mut total = 0;
        for &n in &layers {
            layer_offsets.push(total);
            total += n;
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
        let mut table: Vec<u32> = Vec::new();
        for b in &net.blocks {
            let (kind, from) = match b.source {
                Source::Layer(k) => (0, k),
                Source::Previous(q) => (1, q),
                Source::Bias => (2, 0),
            };
            table.extend([b.to as u32, kind, from as u32, b.rows as u32, b.cols as u32, b.offset as u32]);
        }
        table.extend(layer_offsets.iter().map(|&o| o as u32));
        let graph_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("rtrl graph"), contents: bytemuck::cast_slice(&table), usage: wgpu::BufferUsages::STORAGE });
        let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("rtrl params"), contents: bytemuck::cast_slice(&net.params), usage });
        let (frame, prev) = (zeros("rtrl frame", 2 * total), zeros("rtrl prev", 2 * total));
        let desired = zeros("rtrl desired", n_out);
        let work = zeros("rtrl work", n_out + 1 + total);
        let gradient = zeros("rtrl gradient", params_len);
        let (inputs, targets) = (zeros("rtrl inputs", capacity * n_in), zeros("rtrl targets", capacity * n_out));
        let (errors, outputs) = (zeros("rtrl errors", capacity), zeros("rtrl outputs", capacity * n_out));

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
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some("rtrl_step"), bind_group_layouts: &[Some(&layout)], immediate_size: 0 });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("rtrl_step"), source: wgpu::ShaderSource::Wgsl(source().into()) });
        let mut pipelines: Vec<wgpu::ComputePipeline> = ["forward", "output_error", "backprop", "shortcut_gradient", "euler"]
            .iter()
            .map(|entry| device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some(entry), layout: Some(&pipeline_layout), module: &module, entry_point: Some(entry), compilation_options: Default::default(), cache: None }))
            .collect();
        let sensitivity_module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("rtrl_sensitivity"), source: wgpu::ShaderSource::Wgsl(super::recurrent::source().into()) });
        pipelines.push(device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some("rtrl_sensitivity"), layout: None, module: &sensitivity_module, entry_point: Some("main"), compilation_options: Default::default(), cache: None }));

        let base = StepDims { blocks: net.blocks.len() as u32, total: total as u32, outputs: n_out as u32, out_offset: layer_offsets[out] as u32, ..Default::default() };
        let step_group = |dims: StepDims| -> (wgpu::BindGroup, wgpu::Buffer) {
            let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("rtrl step dims"), contents: bytemuck::bytes_of(&dims), usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST });
            let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("rtrl_step"),
                layout: &layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: graph_buffer.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 2, resource: params.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 3, resource: frame.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 4, resource: prev.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 5, resource: desired.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 6, resource: work.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 7, resource: gradient.as_entire_binding() },
                ],
            });
            (group, uniform)
        };
        let per_invocation = |count: usize| shader::grid((count as u32).div_ceil(WG));

        let mut forward_ops = Vec::new();
        for (i, &n) in layers.iter().enumerate().skip(1) {
            let (bind_group, _) = step_group(StepDims { layer: i as u32, rows: n as u32, ..base });
            forward_ops.push(Compute::Kernel { pipeline: FORWARD, bind_group, groups: shader::grid(n as u32) });
        }
        let (bind_group, _) = step_group(base);
        forward_ops.push(Compute::Kernel { pipeline: OUTPUT_ERROR, bind_group, groups: (1, 1, 1) });

        let shortcut_layers = graph.shortcut_layers();
        let recurrent_sources = graph.recurrent_sources();
        let with_tensor = |b: &crate::recurrent::Block| !(mode == RtrlMode::Shortcut && shortcut_layers[b.to]);
        let mut shortcut_ops = Vec::new();
        if net.blocks.iter().any(|b| !with_tensor(b)) {
            for i in (1..layers.len()).rev().filter(|&i| shortcut_layers[i]) {
                let (bind_group, _) = step_group(StepDims { layer: i as u32, rows: layers[i] as u32, ..base });
                shortcut_ops.push(Compute::Kernel { pipeline: BACKPROP, bind_group, groups: per_invocation(layers[i]) });
            }
            for (index, b) in net.blocks.iter().enumerate().filter(|(_, b)| !with_tensor(b)) {
                let (bind_group, _) = step_group(StepDims { block: index as u32, count: b.len() as u32, ..base });
                shortcut_ops.push(Compute::Kernel { pipeline: SHORTCUT_GRADIENT, bind_group, groups: per_invocation(b.len()) });
            }
        }
        let euler_template = StepDims { count: params_len as u32, ..base };
        let (bind_group, euler_dims) = step_group(euler_template);
        shortcut_ops.push(Compute::Kernel { pipeline: EULER, bind_group, groups: per_invocation(params_len) });

        // The blocks' own sources, copied out of the frames after the forward step.
        let mut source_copies = Vec::new();
        let mut sources = Vec::new();
        for b in &net.blocks {
            match b.source {
                Source::Layer(k) => source_copies.push(Some((false, layer_offsets[k], b.cols))),
                Source::Previous(q) => source_copies.push(Some((true, layer_offsets[q], b.cols))),
                Source::Bias => source_copies.push(None),
            }
            let buffer = zeros("rtrl source", b.cols);
            if b.source == Source::Bias {
                ctx.queue.write_buffer(&buffer, 0, bytemuck::bytes_of(&1.0f32));
            }
            sources.push(buffer);
        }
        let deriv: Vec<wgpu::Buffer> = layers.iter().map(|&n| zeros("rtrl deriv", n)).collect();
        let dummy = zeros("rtrl dummy", 1);

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
        let sensitivity_layout = pipelines[SENSITIVITY].get_bind_group_layout(0);
        let mut tensor_ops: [Vec<Compute>; 2] = [Vec::new(), Vec::new()];
        // Folding the output: δ^y (the backprop kernel on the output layer, into work's δ
        // region; the shortcut recomputes it alike), then the row δ^yᵀ w^{y,k} of every block
        // into the output.
        let folds = fold_output && tensors.iter().flatten().any(|t| t.sets[out].is_empty());
        let folded: Vec<wgpu::Buffer> = net.blocks.iter().map(|b| zeros("rtrl folded row", if b.to == out { b.cols } else { 1 })).collect();
        let mut prologue = Vec::new();
        if folds {
            let (bind_group, _) = step_group(StepDims { layer: out as u32, rows: n_out as u32, ..base });
            prologue.push(Compute::Kernel { pipeline: BACKPROP, bind_group, groups: per_invocation(n_out) });
            let delta_offset = (n_out + 1 + layer_offsets[out]) as u64;
            for (ci, cb) in net.blocks.iter().enumerate().filter(|(_, cb)| cb.to == out && cb.source != Source::Bias) {
                let op = GemmOp::new(1, n_out as u32, cb.cols as u32, &work, &params, &folded[ci]).with_a(MatRef::at(&work, delta_offset, n_out as u32)).with_b(MatRef::at(&params, cb.offset as u64, cb.cols as u32));
                prologue.push(Compute::Gemm(Box::new(gemm.prepare(ctx, &op)?)));
            }
        }
        for (parity, ops) in tensor_ops.iter_mut().enumerate() {
            for (index, block) in net.blocks.iter().enumerate() {
                let Some(t) = &tensors[index] else { continue };
                for i in 1..layers.len() {
                    if t.sets[i].is_empty() {
                        continue;
                    }
                    for (c, &(col0, width)) in t.chunks.iter().enumerate() {
                        let out = &t.current(i, parity)[c];
                        let mut terms = 0;
                        for cb in net.blocks.iter().filter(|cb| cb.to == i) {
                            let b = match cb.source {
                                Source::Layer(k) if k > 0 && !t.sets[k].is_empty() => &t.current(k, parity)[c],
                                Source::Previous(q) if q > 0 && !t.sets[q].is_empty() => &t.previous(q, parity)[c],
                                _ => continue,
                            };
                            let op = GemmOp::new(layers[i] as u32, cb.cols as u32, width as u32, &params, b, out).with_a(MatRef::at(&params, cb.offset as u64, cb.cols as u32));
                            let op = if terms > 0 { op.accumulate() } else { op };
                            ops.push(Compute::Gemm(Box::new(gemm.prepare(ctx, &op)?)));
                            terms += 1;
                        }
                        let dims = SensitivityDims { rows: layers[i] as u32, k: 0, width: width as u32, block_cols: block.cols as u32, col0: col0 as u32, own: (i == block.to) as u32, accumulate: (terms > 0) as u32, finish: 1 };
                        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("rtrl sensitivity dims"), contents: bytemuck::bytes_of(&dims), usage: wgpu::BufferUsages::UNIFORM });
                        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                            label: Some("rtrl_sensitivity"),
                            layout: &sensitivity_layout,
                            entries: &[
                                wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 1, resource: dummy.as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 2, resource: dummy.as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 3, resource: deriv[i].as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 4, resource: sources[index].as_entire_binding() },
                                wgpu::BindGroupEntry { binding: 5, resource: out.as_entire_binding() },
                            ],
                        });
                        ops.push(Compute::Kernel { pipeline: SENSITIVITY, bind_group, groups: ((width as u32).div_ceil(16), (layers[i] as u32).div_ceil(16), 1) });
                    }
                }
                if !t.sets[out].is_empty() {
                    for (c, &(col0, width)) in t.chunks.iter().enumerate() {
                        let y = &t.current(out, parity)[c];
                        let op = GemmOp::new(1, n_out as u32, width as u32, &work, y, &gradient).with_a(MatRef::at(&work, 0, n_out as u32)).with_c(MatRef::at(&gradient, (block.offset + col0) as u64, width as u32));
                        ops.push(Compute::Gemm(Box::new(gemm.prepare(ctx, &op)?)));
                    }
                } else if fold_output && graph.dependents(block.to)[out] {
                    // The own term δ^y_s a^n_t first (it writes the block's gradient), then
                    // (δ^yᵀ w^{y,k}) ξ^{·,k} of every incoming block with a tensor, added.
                    let mut written = false;
                    if block.to == out {
                        let (bind_group, _) = step_group(StepDims { block: index as u32, count: block.len() as u32, ..base });
                        ops.push(Compute::Kernel { pipeline: SHORTCUT_GRADIENT, bind_group, groups: per_invocation(block.len()) });
                        written = true;
                    }
                    for (ci, cb) in net.blocks.iter().enumerate().filter(|(_, cb)| cb.to == out) {
                        let source = match cb.source {
                            Source::Layer(k) if k > 0 && !t.sets[k].is_empty() => t.current(k, parity),
                            Source::Previous(q) if q > 0 && !t.sets[q].is_empty() => t.previous(q, parity),
                            _ => continue,
                        };
                        for (c, &(col0, width)) in t.chunks.iter().enumerate() {
                            let op = GemmOp::new(1, cb.cols as u32, width as u32, &folded[ci], &source[c], &gradient).with_c(MatRef::at(&gradient, (block.offset + col0) as u64, width as u32));
                            ops.push(Compute::Gemm(Box::new(gemm.prepare(ctx, &if written { op.accumulate() } else { op })?)));
                        }
                        written = true;
                    }
                    if !written {
                        return Err(GpuError(format!("{}: the output depends on it, yet no term reaches the output", block.name())));
                    }
                }
            }
        }
        Ok(DeviceRtrl {
            mode,
            capacity,
            layer_offsets,
            layers,
            total,
            params_len,
            pipelines,
            params,
            frame,
            prev,
            desired,
            work,
            gradient,
            inputs,
            targets,
            errors,
            outputs,
            deriv,
            source_copies,
            sources,
            tensors,
            forward_ops,
            prologue_ops: prologue,
            tensor_ops,
            _folded: folded,
            shortcut_ops,
            euler_dims,
            euler_template,
            rate: None,
            parity: 0,
            _gemm: gemm,
        })
    }

    /// Steps per submission.
    pub fn capacity(&self) -> usize {
        self.capacity
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
        let frame = ctx.read_back(&self.frame, self.total).await?;
        Ok(self.layer_offsets.iter().zip(&self.layers).map(|(&o, &n)| frame[o..o + n].to_vec()).collect())
    }

    /// Back to a sequence start: frames and tensors zero (the weights stay).
    pub fn reset(&mut self, ctx: &GpuContext) {
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        for buffer in [&self.frame, &self.prev, &self.work, &self.gradient] {
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

    async fn run_steps(&mut self, ctx: &GpuContext, inputs: &[f32], targets: &[f32], rate: f32, read_params: bool) -> Result<StepsReport, GpuError> {
        let (n_in, n_out) = (self.layers[0], *self.layers.last().expect("layers"));
        let steps = inputs.len() / n_in.max(1);
        assert!(inputs.len() == steps * n_in && targets.len() == steps * n_out, "examples' sizes");
        if self.rate != Some(rate) {
            ctx.queue.write_buffer(&self.euler_dims, 0, bytemuck::bytes_of(&StepDims { rate, ..self.euler_template }));
            self.rate = Some(rate);
        }
        let mut report = StepsReport { errors: Vec::with_capacity(steps), outputs: Vec::with_capacity(steps * n_out), params: None };
        let mut start = 0;
        while start < steps {
            let count = self.capacity.min(steps - start);
            ctx.queue.write_buffer(&self.inputs, 0, bytemuck::cast_slice(&inputs[start * n_in..(start + count) * n_in]));
            ctx.queue.write_buffer(&self.targets, 0, bytemuck::cast_slice(&targets[start * n_out..(start + count) * n_out]));
            let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("rtrl steps") });
            for s in 0..count {
                self.record_step(&mut encoder, s);
            }
            ctx.queue.submit([encoder.finish()]);
            start += count;
            let mut ranges = vec![(&self.errors, 0, (count * 4) as u64), (&self.outputs, 0, (count * n_out * 4) as u64)];
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
    fn record_step(&mut self, encoder: &mut wgpu::CommandEncoder, s: usize) {
        let (n_in, n_out) = (self.layers[0] as u64, *self.layers.last().expect("layers") as u64);
        let out_offset = *self.layer_offsets.last().expect("layers") as u64;
        encoder.copy_buffer_to_buffer(&self.frame, 0, &self.prev, 0, (2 * self.total * 4) as u64);
        encoder.copy_buffer_to_buffer(&self.inputs, s as u64 * n_in * 4, &self.frame, 0, n_in * 4);
        encoder.copy_buffer_to_buffer(&self.targets, s as u64 * n_out * 4, &self.desired, 0, n_out * 4);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("rtrl forward"), timestamp_writes: None });
            record(&mut pass, &self.pipelines, &self.forward_ops);
        }
        if !self.tensor_ops[self.parity].is_empty() || !self.prologue_ops.is_empty() {
            for (i, buffer) in self.deriv.iter().enumerate().skip(1) {
                encoder.copy_buffer_to_buffer(&self.frame, ((self.total + self.layer_offsets[i]) * 4) as u64, buffer, 0, (self.layers[i] * 4) as u64);
            }
            for (copy, buffer) in self.source_copies.iter().zip(&self.sources) {
                if let Some((previous, offset, len)) = *copy {
                    encoder.copy_buffer_to_buffer(if previous { &self.prev } else { &self.frame }, (offset * 4) as u64, buffer, 0, (len * 4) as u64);
                }
            }
        }
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("rtrl tensors and weights"), timestamp_writes: None });
            record(&mut pass, &self.pipelines, &self.prologue_ops);
            record(&mut pass, &self.pipelines, &self.tensor_ops[self.parity]);
            record(&mut pass, &self.pipelines, &self.shortcut_ops);
        }
        encoder.copy_buffer_to_buffer(&self.work, n_out * 4, &self.errors, s as u64 * 4, 4);
        encoder.copy_buffer_to_buffer(&self.frame, out_offset * 4, &self.outputs, s as u64 * n_out * 4, n_out * 4);
        self.parity = 1 - self.parity;
    }
}
