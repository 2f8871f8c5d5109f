//! The dispatches of one epoch (and of the end-of-run measurement) before the rule: the
//! narrow path (the first layer's GEMM, the `narrow` kernel, one gradient product per layer)
//! and the general one (GEMMs and elementwise kernels per layer), with the buffers they bind.

use super::{gradient_splits, DeltaParams, Dispatch, MlpKernels, MlpLayout, NarrowLayer, NarrowParams, Step, NARROW_WG, SPAN};
use crate::backend::Activation;
use crate::gpu::buffers;
use crate::gpu::gemm::{GemmOp, MatRef, Tiling, VecRef};
use crate::gpu::reduce::split;
use crate::gpu::{GpuContext, GpuError};
use crate::supervised::Network;

/// Where the narrow path keeps each layer's activations and deltas: one buffer of each, the
/// layers' blocks at offsets that are multiples of 64 elements.
#[derive(Default)]
pub(super) struct NarrowBlocks {
    /// Per layer: activation offset and row stride (n_out + 1: a ones column at n_out, the
    /// next layer's bias input), delta offset and stride (n_out).
    layers: Vec<(usize, usize, usize, usize)>,
    /// Elements of the activation buffer, and of the delta buffer.
    pub acts: usize,
    deltas: usize,
}

impl NarrowBlocks {
    pub fn new(net: &Network, rows: usize) -> NarrowBlocks {
        let (mut acts, mut deltas) = (0, 0);
        let layers = net
            .layers
            .iter()
            .map(|l| {
                let at = (acts, l.n_out + 1, deltas, l.n_out);
                acts = (acts + rows * (l.n_out + 1)).next_multiple_of(64);
                deltas = (deltas + rows * l.n_out).next_multiple_of(64);
                at
            })
            .collect();
        NarrowBlocks { layers, acts, deltas }
    }
}

/// What both paths share.
pub(super) struct Shared<'a> {
    pub ctx: &'a GpuContext,
    pub kernels: &'a MlpKernels,
    pub layout: &'a MlpLayout,
    pub rows: usize,
    pub clip: u32,
    pub targets: &'a wgpu::Buffer,
    pub weights: &'a wgpu::Buffer,
    pub gradient: &'a wgpu::Buffer,
    pub knobs: super::knobs::Knobs,
}

/// An epoch's steps up to the error partials and the gradient, and the measurement's.
pub(super) struct Parts {
    pub epoch: Vec<Step>,
    pub measure: Vec<Step>,
    /// The partials (a row of `row` values per workgroup: the error pair, then the folded
    /// gradient's) and how many rows.
    pub partials: wgpu::Buffer,
    pub groups: u32,
    pub row: u32,
    /// The gradient's elements `step` sums from the partials (empty: all from the products).
    pub fold: std::ops::Range<usize>,
}

fn product(ctx: &GpuContext, kernels: &MlpKernels, label: String, op: GemmOp) -> Result<Step, GpuError> {
    Ok(Step { label, dispatch: Dispatch::Product(kernels.gemm.prepare(ctx, &op)?) })
}

impl Shared<'_> {
    /// The first layer's forward product: `σ(x·W_1 + b_1)` into `out`.
    fn first_forward(&self, input: MatRef, out: MatRef) -> Result<Step, GpuError> {
        let (ni, no, w, b) = self.layout.layers[0];
        let mut op = GemmOp::new(self.rows as u32, ni as u32, no as u32, input.buffer, self.weights, out.buffer).with_a(input).with_b(MatRef::at(self.weights, w as u64, no as u32)).with_c(out).activation(Activation::Sigmoid);
        op.bias = Some(VecRef { buffer: self.weights, offset: b as u64 });
        op.tiling = self.knobs.forward_tiling;
        let tiling = op.tiling.map_or_else(|| format!("auto ({:?})", Tiling::auto(op.m, op.n)), |t| format!("{t:?}")).to_lowercase();
        product(self.ctx, self.kernels, format!("forward 1: {}×{}×{} GEMM + bias + sigmoid, {tiling} tiles", self.rows, ni, no), op)
    }

    /// The narrow path: the inputs with a ones column, every layer's activations (with their
    /// ones columns) and deltas in one buffer each.
    pub fn narrow(&self, net: &Network, inputs: &[f32], blocks: &NarrowBlocks, kept: &mut Vec<wgpu::Buffer>) -> Result<Parts, GpuError> {
        let (ctx, rows) = (self.ctx, self.rows);
        let n_in = net.n_inputs();
        // A row stride of whole vec4s, the ones at column n_in, zeros after it.
        let ld_in = (n_in + 1).next_multiple_of(4);
        let mut padded = vec![0.0f32; rows * ld_in];
        for (row, case) in padded.chunks_exact_mut(ld_in).zip(inputs.chunks_exact(n_in)) {
            row[..n_in].copy_from_slice(case);
            row[n_in] = 1.0;
        }
        let data = buffers::upload(ctx, "mlp_inputs_ones", &padded);
        drop(padded);
        let mut acts = vec![0.0f32; blocks.acts.max(1)];
        for &(at, ld, _, _) in &blocks.layers {
            for r in 0..rows {
                acts[at + r * ld + ld - 1] = 1.0;
            }
        }
        let activations = buffers::upload(ctx, "mlp_activations", &acts);
        let deltas = buffers::zeros_f32(ctx, "mlp_deltas", blocks.deltas.max(1));
        let shapes: Vec<NarrowLayer> = self
            .layout
            .layers
            .iter()
            .zip(&blocks.layers)
            .map(|(&(n_in, n_out, w, b), &(act, act_ld, delta, delta_ld))| NarrowLayer { n_in: n_in as u32, n_out: n_out as u32, w: w as u32, b: b as u32, act: act as u32, act_ld: act_ld as u32, delta: delta as u32, delta_ld: delta_ld as u32 })
            .collect();
        let shape = buffers::upload(ctx, "mlp_shapes", &shapes);
        let groups = rows.div_ceil(NARROW_WG).clamp(1, 4096) as u32;
        // Folded: the gradient from the second layer's block to the end, per workgroup.
        let fold = if self.knobs.fold && self.layout.layers.len() > 1 { self.layout.layers[1].2..self.layout.len } else { 0..0 };
        let row = 2 + fold.len();
        let partials = buffers::zeros_f32(ctx, "mlp_partials", row * groups as usize);
        let params = NarrowParams { rows: rows as u32, layers: shapes.len() as u32, clip: self.clip, stride: groups * NARROW_WG as u32, row: row as u32, fold_from: fold.start as u32, fold: u32::from(!fold.is_empty()), _pad: 0 };
        let params = buffers::uniform_bytes(ctx, "mlp_narrow_params", bytemuck::bytes_of(&params));
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("mlp_narrow"),
            layout: &self.kernels.narrow_layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 13, resource: params.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 14, resource: shape.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 15, resource: self.weights.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 16, resource: self.targets.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 17, resource: activations.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 18, resource: deltas.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 19, resource: partials.as_entire_binding() },
            ],
        });
        let sizes: Vec<String> = net.sizes()[1..].iter().map(usize::to_string).collect();
        let folded = if fold.is_empty() { "" } else { ", their gradients' partials" };
        let narrow = || Step { label: format!("narrow: layers {} forward, output delta, deltas{folded}", sizes.join("→")), dispatch: Dispatch::Kernel { pipeline: self.kernels.narrow.clone(), bind_group: bind_group.clone(), groups } };
        let (act0, ld0) = (blocks.layers[0].0, blocks.layers[0].1);
        let forward = || self.first_forward(MatRef::at(&data, 0, ld_in as u32), MatRef::at(&activations, act0 as u64, ld0 as u32));
        let mut epoch = vec![forward()?, narrow()];
        let inv_rows = 1.0 / rows as f32;
        for (k, &(ni, no, w, _)) in self.layout.layers.iter().enumerate().rev() {
            if fold.contains(&w) {
                continue;
            }
            let input = if k == 0 { MatRef::at(&data, 0, ld_in as u32) } else { MatRef::at(&activations, blocks.layers[k - 1].0 as u64, blocks.layers[k - 1].1 as u32) };
            let (delta_at, delta_ld) = (blocks.layers[k].2, blocks.layers[k].3);
            let splits = gradient_splits(ctx, ni + 1, no, rows, self.knobs.gradient_splits);
            let op = GemmOp::new((ni + 1) as u32, rows as u32, no as u32, input.buffer, &deltas, self.gradient)
                .transpose_a()
                .with_a(input)
                .with_b(MatRef::at(&deltas, delta_at as u64, delta_ld as u32))
                .with_c(MatRef::at(self.gradient, w as u64, no as u32))
                .alpha(inv_rows)
                .split_k(splits);
            epoch.push(product(ctx, self.kernels, format!("gradient {}: [a 1]ᵀ·δ {}×{}×{}, split k {splits}", k + 1, ni + 1, rows, no), op)?);
        }
        let measure = vec![forward()?, narrow()];
        kept.extend([data, activations, deltas, shape, params]);
        Ok(Parts { epoch, measure, partials, groups, row: row as u32, fold })
    }

    /// The general path: per layer a forward GEMM; `output_delta`; per layer the weight and
    /// bias gradient products and (below the top) the backward product and `hidden_delta`.
    pub fn general(&self, net: &Network, inputs: &[f32], kept: &mut Vec<wgpu::Buffer>) -> Result<Parts, GpuError> {
        let (ctx, rows, layout, kernels) = (self.ctx, self.rows, self.layout, self.kernels);
        let device = &ctx.device;
        let n_out = net.n_outputs();
        let data = buffers::upload(ctx, "mlp_inputs", inputs);
        let ones = buffers::upload(ctx, "mlp_ones", &vec![1.0f32; rows]);
        let activations: Vec<wgpu::Buffer> = net.layers.iter().map(|l| buffers::zeros_f32(ctx, "mlp_activations", rows * l.n_out)).collect();
        let deltas: Vec<wgpu::Buffer> = net.layers.iter().map(|l| buffers::zeros_f32(ctx, "mlp_deltas", rows * l.n_out)).collect();
        let (groups, _) = split(rows * n_out, SPAN);
        let partials = buffers::zeros_f32(ctx, "mlp_partials", 2 * groups as usize);
        let delta_kernel = |label: String, pipeline: &wgpu::ComputePipeline, values: &wgpu::Buffer, delta: &wgpu::Buffer, n: usize, kept: &mut Vec<wgpu::Buffer>| {
            let (groups, span) = split(n, SPAN);
            let params = buffers::uniform_bytes(ctx, "mlp_delta_params", bytemuck::bytes_of(&DeltaParams { n: n as u32, span, clip: self.clip, _pad: 0 }));
            let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("mlp_delta"),
                layout: &kernels.delta_layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: params.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: values.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 2, resource: self.targets.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 3, resource: delta.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 4, resource: partials.as_entire_binding() },
                ],
            });
            kept.push(params);
            Step { label, dispatch: Dispatch::Kernel { pipeline: pipeline.clone(), bind_group, groups } }
        };
        let m = rows as u32;
        let inv_rows = 1.0 / rows as f32;
        let last = layout.layers.len() - 1;
        let forward = |kept: &mut Vec<wgpu::Buffer>| -> Result<Vec<Step>, GpuError> {
            let mut steps = Vec::new();
            for (k, &(ni, no, w, b)) in layout.layers.iter().enumerate() {
                let input = if k == 0 { &data } else { &activations[k - 1] };
                let mut op = GemmOp::new(m, ni as u32, no as u32, input, self.weights, &activations[k]).with_b(MatRef::at(self.weights, w as u64, no as u32)).activation(Activation::Sigmoid);
                op.bias = Some(VecRef { buffer: self.weights, offset: b as u64 });
                steps.push(product(ctx, kernels, format!("forward {}: {rows}×{ni}×{no} GEMM + bias + sigmoid", k + 1), op)?);
            }
            steps.push(delta_kernel("output_delta".into(), &kernels.output_delta, &activations[last], &deltas[last], rows * n_out, kept));
            Ok(steps)
        };
        let mut epoch = forward(kept)?;
        for k in (0..layout.layers.len()).rev() {
            let (ni, no, w, b) = layout.layers[k];
            let input = if k == 0 { &data } else { &activations[k - 1] };
            let weight_gradient = GemmOp::new(ni as u32, m, no as u32, input, &deltas[k], self.gradient).transpose_a().with_c(MatRef::at(self.gradient, w as u64, no as u32)).alpha(inv_rows);
            epoch.push(product(ctx, kernels, format!("weight gradient {}: {ni}×{rows}×{no}", k + 1), weight_gradient)?);
            let bias_gradient = GemmOp::new(1, m, no as u32, &ones, &deltas[k], self.gradient).transpose_a().with_c(MatRef::at(self.gradient, b as u64, no as u32)).alpha(inv_rows);
            epoch.push(product(ctx, kernels, format!("bias gradient {}: 1×{rows}×{no}", k + 1), bias_gradient)?);
            if k > 0 {
                let back = GemmOp::new(m, no as u32, ni as u32, &deltas[k], self.weights, &deltas[k - 1]).transpose_b().with_b(MatRef::at(self.weights, w as u64, no as u32));
                epoch.push(product(ctx, kernels, format!("backward {}: {rows}×{no}×{ni}", k + 1), back)?);
                epoch.push(delta_kernel(format!("hidden_delta {k}"), &kernels.hidden_delta, &activations[k - 1], &deltas[k - 1], rows * ni, kept));
            }
        }
        let measure = forward(kept)?;
        kept.extend([data, ones]);
        kept.extend(activations);
        kept.extend(deltas);
        Ok(Parts { epoch, measure, partials, groups, row: 2, fold: 0..0 })
    }
}
