//! Host side of `shaders/rtrl_sensitivity.wgsl` (issue 20): one layer's RTRL sensitivity update
//! for one weight block, `deriv ⊙ (Σ_t A_t · B_t + the Kronecker term)`, on the device, the
//! CPU reference being `recurrent::rtrl`'s `update_history` (`tests/gpu_rtrl.rs` compares them).
//!
//! The terms' matrices go side by side (`A = [A_1 | A_2 | …]`, `rows × K`) and their tensors are
//! stacked (`B = [B_1; B_2; …]`, `K × P`), so the sum is one product. `P` is cut into column
//! chunks whose `B` and output each fit the device's storage binding size (WebGPU's default is
//! 128 MiB; a 256-unit layer's tensor for a 256 × 256 matrix is 64 MiB, its stacked sources more),
//! one dispatch per chunk.
//!
//! This is the kernel and its parity with the CPU, one call at a time with uploads and a
//! read-back; the resident RTRL step (tensors kept on the device across steps, the engine's
//! entry and fall-back) is not built yet (docs/RECURRENT.md).

use super::{GpuContext, GpuError};
use crate::recurrent::products::Term;
use wgpu::util::DeviceExt;

const SHADER: &str = include_str!("../../shaders/rtrl_sensitivity.wgsl");
const TILE: u32 = 16;

/// `struct Dims` of rtrl_sensitivity.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SensitivityDims {
    pub rows: u32,
    pub k: u32,
    pub width: u32,
    pub block_cols: u32,
    pub col0: u32,
    pub own: u32,
    pub accumulate: u32,
    pub finish: u32,
}

/// The kernel as compiled.
pub(crate) fn source() -> String {
    super::shader::assemble(SHADER, &[], false)
}

/// The Kronecker term of the block's destination layer: the block's width and its source.
#[derive(Clone, Copy)]
pub struct OwnTerm<'a> {
    pub block_cols: usize,
    pub source: &'a [f32],
}

/// Columns per chunk so that `k × width` and `rows × width` f32 each fit `binding_bytes`.
pub fn chunk_width(rows: usize, k: usize, p: usize, binding_bytes: u64) -> Result<usize, GpuError> {
    let widest = rows.max(k).max(1) as u64 * 4;
    let width = (binding_bytes / widest).min(p as u64) as usize;
    if width == 0 {
        return Err(GpuError(format!("a sensitivity column of {} values exceeds the storage binding size of {binding_bytes} bytes", rows.max(k))));
    }
    Ok(width)
}

/// `out (rows × p) = deriv ⊙ (Σ terms + own)`, on the device; `binding_bytes` caps each chunk's
/// buffers (the device's limit when `None`).
pub async fn sensitivity_update(ctx: &GpuContext, rows: usize, p: usize, terms: &[Term<'_>], deriv: &[f32], own: Option<OwnTerm<'_>>, binding_bytes: Option<u64>) -> Result<Vec<f32>, GpuError> {
    assert_eq!(deriv.len(), rows);
    let k: usize = terms.iter().map(|t| t.k).sum();
    for t in terms {
        assert!(t.a.len() == rows * t.k && t.b.len() == t.k * p, "term sizes");
    }
    let limits = ctx.device.limits();
    let binding = binding_bytes.unwrap_or(limits.max_storage_buffer_binding_size.min(limits.max_buffer_size));
    let width = chunk_width(rows, k, p, binding)?;
    // A = [A_1 | A_2 | …], rows × K.
    let mut a = Vec::with_capacity(rows * k);
    for j in 0..rows {
        for t in terms {
            a.extend_from_slice(&t.a[j * t.k..(j + 1) * t.k]);
        }
    }
    let device = &ctx.device;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("rtrl_sensitivity"), source: wgpu::ShaderSource::Wgsl(source().into()) });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("rtrl_sensitivity"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    // Bindings may not be empty: a layer with no incoming tensors binds one zero.
    let storage = |label, data: &[f32]| {
        let data = if data.is_empty() { &[0.0f32][..] } else { data };
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: bytemuck::cast_slice(data), usage: wgpu::BufferUsages::STORAGE })
    };
    let (a_buffer, deriv_buffer) = (storage("a", &a), storage("deriv", deriv));
    let source_buffer = storage("source", own.map(|o| o.source).unwrap_or(&[]));
    let mut out = vec![0.0f32; rows * p];
    let mut col0 = 0;
    while col0 < p {
        let w = width.min(p - col0);
        let mut b = Vec::with_capacity(k * w);
        for t in terms {
            for l in 0..t.k {
                b.extend_from_slice(&t.b[l * p + col0..l * p + col0 + w]);
            }
        }
        let dims = SensitivityDims {
            rows: rows as u32,
            k: k as u32,
            width: w as u32,
            block_cols: own.map_or(1, |o| o.block_cols) as u32,
            col0: col0 as u32,
            own: own.is_some() as u32,
            accumulate: 0,
            finish: 1,
        };
        let dims = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("dims"), contents: bytemuck::bytes_of(&dims), usage: wgpu::BufferUsages::UNIFORM });
        let b_buffer = storage("b", &b);
        let output = device.create_buffer(&wgpu::BufferDescriptor { label: Some("out"), size: (rows * w * 4) as u64, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("rtrl_sensitivity"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: dims.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: a_buffer.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: b_buffer.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: deriv_buffer.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 4, resource: source_buffer.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 5, resource: output.as_entire_binding() },
            ],
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups((w as u32).div_ceil(TILE), (rows as u32).div_ceil(TILE), 1);
        }
        ctx.queue.submit([encoder.finish()]);
        let chunk = ctx.read_back(&output, rows * w).await?;
        for j in 0..rows {
            out[j * p + col0..j * p + col0 + w].copy_from_slice(&chunk[j * w..(j + 1) * w]);
        }
        col0 += w;
    }
    Ok(out)
}

/// One weight block's tensors on the device: per dependent layer, the current and (for
/// recurrent sources) the previous tensor, each as column chunks (`n_i × width_c`, row-major),
/// and the gradient's chunks.
struct DeviceBlock {
    chunks: Vec<(usize, usize)>,
    dependents: Vec<bool>,
    current: Vec<Vec<wgpu::Buffer>>,
    previous: Vec<Vec<wgpu::Buffer>>,
    gradient: Vec<wgpu::Buffer>,
}

/// Moore's RTRL step with the sensitivity tensors resident on the device (issue 20): the
/// forward step, `∂E/∂y`, `E` and the shortcut's back-propagation on the host (all `O(n²)`),
/// each step's weights, `σ'`, sources and `∂E/∂y` uploaded (`O(n²)`), the tensor updates and
/// the gradient `∂E/∂y · ξ^{·,y}` on the device (`O(n⁴)`; the products through `gpu::gemm`,
/// the Kronecker term and σ' through rtrl_sensitivity.wgsl), the gradient read back (`O(n²)`) and
/// the Euler step on the host. The same arithmetic as `recurrent::Rtrl` but for the order of
/// the products' sums (tests/gpu_rtrl.rs).
pub struct GpuRtrl {
    pipeline: wgpu::ComputePipeline,
    /// The products `w^{i,k} · ξ` and `∂E/∂y · ξ^{·,y}` go through the crate's tuned GEMM
    /// kernels; rtrl_sensitivity.wgsl (k = 0) adds the Kronecker term and scales by σ'.
    gemm: super::gemm::GemmKernels,
    blocks: Vec<Option<DeviceBlock>>,
    weights: Vec<wgpu::Buffer>,
    deriv: Vec<wgpu::Buffer>,
    sources: Vec<wgpu::Buffer>,
    de_dy: wgpu::Buffer,
    dummy: wgpu::Buffer,
    shortcut_layers: Vec<bool>,
    recurrent_sources: Vec<bool>,
    prev: crate::recurrent::Frame,
    frame: crate::recurrent::Frame,
    host_de_dy: Vec<f32>,
    gradient: Vec<f32>,
}

impl GpuRtrl {
    /// The tensors of `net` in `mode` allocated (zero) on the device; `binding_bytes` caps each
    /// chunk (the device's limit when `None`).
    pub fn new(ctx: &GpuContext, net: &crate::recurrent::Network, mode: crate::recurrent::RtrlMode, binding_bytes: Option<u64>) -> Result<Self, GpuError> {
        use crate::recurrent::RtrlMode;
        let graph = &net.graph;
        let device = &ctx.device;
        let limits = device.limits();
        let binding = binding_bytes.unwrap_or(limits.max_storage_buffer_binding_size.min(limits.max_buffer_size));
        let widest = *graph.layers.iter().max().expect("layers");
        let shortcut_layers = graph.shortcut_layers();
        let recurrent_sources = graph.recurrent_sources();
        let zeros = |label: &str, len: usize| {
            device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: (len.max(1) * 4) as u64, usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC, mapped_at_creation: false })
        };
        let mut blocks = Vec::new();
        for b in &net.blocks {
            if mode == RtrlMode::Shortcut && shortcut_layers[b.to] {
                blocks.push(None);
                continue;
            }
            let p = b.len();
            let width = chunk_width(widest, widest, p, binding)?;
            let chunks: Vec<(usize, usize)> = (0..p).step_by(width).map(|c0| (c0, width.min(p - c0))).collect();
            let dependents = graph.dependents(b.to);
            let per_layer = |keep: &dyn Fn(usize) -> bool| -> Vec<Vec<wgpu::Buffer>> {
                (0..graph.layers.len()).map(|i| if i > 0 && dependents[i] && keep(i) { chunks.iter().map(|&(_, w)| zeros("sensitivity", graph.layers[i] * w)).collect() } else { Vec::new() }).collect()
            };
            let current = per_layer(&|_| true);
            let previous = per_layer(&|i| recurrent_sources[i]);
            let gradient = chunks.iter().map(|&(_, w)| zeros("gradient", w)).collect();
            blocks.push(Some(DeviceBlock { chunks, dependents, current, previous, gradient }));
        }
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("rtrl_sensitivity"), source: wgpu::ShaderSource::Wgsl(source().into()) });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some("rtrl_sensitivity"), layout: None, module: &module, entry_point: Some("main"), compilation_options: Default::default(), cache: None });
        Ok(GpuRtrl {
            pipeline,
            gemm: super::gemm::GemmKernels::new(ctx),
            weights: net.blocks.iter().map(|b| zeros("weights", b.len())).collect(),
            deriv: graph.layers.iter().map(|&n| zeros("deriv", n)).collect(),
            sources: net.blocks.iter().map(|b| zeros("source", b.cols)).collect(),
            de_dy: zeros("de_dy", graph.layers[graph.output()]),
            dummy: zeros("dummy", 1),
            blocks,
            shortcut_layers,
            recurrent_sources,
            prev: crate::recurrent::Frame::zeros(graph),
            frame: crate::recurrent::Frame::zeros(graph),
            host_de_dy: vec![0.0; graph.layers[graph.output()]],
            gradient: vec![0.0; net.params.len()],
        })
    }

    pub fn frame(&self) -> &crate::recurrent::Frame {
        &self.frame
    }

    pub fn gradient(&self) -> &[f32] {
        &self.gradient
    }

    /// The last step's `∂a^layer/∂w` of block `block`, read back (`n_layer × P`), when kept.
    pub async fn sensitivity(&self, ctx: &GpuContext, block: usize, layer: usize) -> Result<Option<Vec<f32>>, GpuError> {
        let Some(Some(b)) = self.blocks.get(block) else { return Ok(None) };
        if b.current[layer].is_empty() {
            return Ok(None);
        }
        let rows = (b.current[layer][0].size() / 4) as usize / b.chunks[0].1;
        let ranges: Vec<(&wgpu::Buffer, u64, u64)> = b.current[layer].iter().zip(&b.chunks).map(|(buf, &(_, w))| (buf, 0, (rows * w * 4) as u64)).collect();
        let parts = super::read_ranges(ctx, &ranges).await?;
        let p: usize = b.chunks.iter().map(|c| c.1).sum();
        let mut out = vec![0.0f32; rows * p];
        for (part, &(c0, w)) in parts.iter().zip(&b.chunks) {
            let values: Vec<f32> = bytemuck::pod_collect_to_vec(part);
            for j in 0..rows {
                out[j * p + c0..j * p + c0 + w].copy_from_slice(&values[j * w..(j + 1) * w]);
            }
        }
        Ok(Some(out))
    }

    #[allow(clippy::too_many_arguments)]
    fn dispatch(&self, ctx: &GpuContext, encoder: &mut wgpu::CommandEncoder, dims: SensitivityDims, a: &wgpu::Buffer, b: &wgpu::Buffer, deriv: &wgpu::Buffer, source: &wgpu::Buffer, out: &wgpu::Buffer) {
        let device = &ctx.device;
        let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("dims"), contents: bytemuck::bytes_of(&dims), usage: wgpu::BufferUsages::UNIFORM });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("rtrl_sensitivity"),
            layout: &self.pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: a.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: b.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: deriv.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 4, resource: source.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 5, resource: out.as_entire_binding() },
            ],
        });
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(dims.width.div_ceil(TILE), dims.rows.div_ceil(TILE), 1);
    }

    /// One step: forward, `∂E/∂y`, `E`, the tensors and the gradient (weights unchanged).
    pub async fn step(&mut self, ctx: &GpuContext, net: &crate::recurrent::Network, input: &[f32], target: &[f32]) -> Result<f64, GpuError> {
        use crate::recurrent::graph::Source;
        use crate::recurrent::Network;
        std::mem::swap(&mut self.prev, &mut self.frame);
        for b in self.blocks.iter_mut().flatten() {
            for i in 1..b.current.len() {
                if self.recurrent_sources[i] && b.dependents[i] {
                    std::mem::swap(&mut b.current[i], &mut b.previous[i]);
                }
            }
        }
        net.forward(&self.prev, input, &mut self.frame);
        let error = Network::output_error(&self.frame, target, &mut self.host_de_dy);
        let graph = &net.graph;
        let out_layer = graph.output();
        let queue = &ctx.queue;
        for (index, block) in net.blocks.iter().enumerate() {
            queue.write_buffer(&self.weights[index], 0, bytemuck::cast_slice(net.block_values(block)));
            let source: &[f32] = match block.source {
                Source::Layer(n) => &self.frame.act[n],
                Source::Previous(n) => &self.prev.act[n],
                Source::Bias => &[1.0],
            };
            queue.write_buffer(&self.sources[index], 0, bytemuck::cast_slice(source));
        }
        for i in 1..graph.layers.len() {
            queue.write_buffer(&self.deriv[i], 0, bytemuck::cast_slice(&self.frame.deriv[i]));
        }
        queue.write_buffer(&self.de_dy, 0, bytemuck::cast_slice(&self.host_de_dy));
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        for (index, block) in net.blocks.iter().enumerate() {
            let Some(tensors) = self.blocks[index].as_ref() else { continue };
            for i in 1..graph.layers.len() {
                if !tensors.dependents[i] {
                    continue;
                }
                let rows = graph.layers[i] as u32;
                for (c, &(col0, width)) in tensors.chunks.iter().enumerate() {
                    let out = &tensors.current[i][c];
                    let mut terms = 0;
                    for (ci, cb) in net.blocks.iter().enumerate().filter(|(_, cb)| cb.to == i) {
                        let b = match cb.source {
                            Source::Layer(k) if k > 0 && tensors.dependents[k] => &tensors.current[k][c],
                            Source::Previous(q) if q > 0 && tensors.dependents[q] => &tensors.previous[q][c],
                            _ => continue,
                        };
                        let op = super::gemm::GemmOp::new(rows, cb.cols as u32, width as u32, &self.weights[ci], b, out);
                        self.gemm.record(ctx, &mut encoder, &if terms > 0 { op.accumulate() } else { op })?;
                        terms += 1;
                    }
                    let dims = SensitivityDims { rows, k: 0, width: width as u32, block_cols: block.cols as u32, col0: col0 as u32, own: (i == block.to) as u32, accumulate: (terms > 0) as u32, finish: 1 };
                    self.dispatch(ctx, &mut encoder, dims, &self.dummy, &self.dummy, &self.deriv[i], &self.sources[index], out);
                }
            }
            if tensors.dependents[out_layer] {
                for (c, &(_, width)) in tensors.chunks.iter().enumerate() {
                    let op = super::gemm::GemmOp::new(1, graph.layers[out_layer] as u32, width as u32, &self.de_dy, &tensors.current[out_layer][c], &tensors.gradient[c]);
                    self.gemm.record(ctx, &mut encoder, &op)?;
                }
            }
        }
        ctx.queue.submit([encoder.finish()]);
        let mut ranges = Vec::new();
        for (index, tensors) in self.blocks.iter().enumerate() {
            let Some(tensors) = tensors else { continue };
            if !tensors.dependents[out_layer] {
                let b = &net.blocks[index];
                self.gradient[b.offset..b.offset + b.len()].fill(0.0);
                continue;
            }
            for (buffer, &(_, w)) in tensors.gradient.iter().zip(&tensors.chunks) {
                ranges.push((buffer, 0u64, (w * 4) as u64));
            }
        }
        let parts = super::read_ranges(ctx, &ranges).await?;
        let mut part = parts.iter();
        for (index, tensors) in self.blocks.iter().enumerate() {
            let Some(tensors) = tensors else { continue };
            if !tensors.dependents[out_layer] {
                continue;
            }
            let offset = net.blocks[index].offset;
            for &(c0, w) in &tensors.chunks {
                let values: Vec<f32> = bytemuck::pod_collect_to_vec(part.next().expect("one part per chunk"));
                self.gradient[offset + c0..offset + c0 + w].copy_from_slice(&values[..w]);
            }
        }
        if self.blocks.iter().any(Option::is_none) {
            let with_tensor: Vec<bool> = self.blocks.iter().map(Option::is_some).collect();
            let scratch = || graph.layers.iter().map(|&n| vec![0.0f32; n]).collect::<Vec<_>>();
            let (mut de_da, mut delta) = (scratch(), scratch());
            crate::recurrent::rtrl::shortcut_gradients(net, &self.shortcut_layers, &self.prev, &self.frame, &self.host_de_dy, &with_tensor, &mut de_da, &mut delta, &mut self.gradient);
        }
        Ok(error)
    }

    /// [`GpuRtrl::step`], then the Euler step `θ ← θ − rate · ∂E/∂θ` on the host.
    pub async fn train_step(&mut self, ctx: &GpuContext, net: &mut crate::recurrent::Network, input: &[f32], target: &[f32], rate: f32) -> Result<f64, GpuError> {
        let error = self.step(ctx, net, input, target).await?;
        net.params.iter_mut().zip(&self.gradient).for_each(|(w, g)| *w -= rate * g);
        Ok(error)
    }
}
