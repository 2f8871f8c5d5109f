//! Host side of `shaders/rtrl_fold.wgsl` (issue 20): a sensitivity tensor chunk folded into the
//! gradient by a row, `gradient[offset + c] (+)= Σ_j row[j] · t[j, c]`, with the tensor finished
//! on the way (`finish_fold`: the Kronecker term and σ' after the GEMM, written back) or read as
//! it is (`fold`). `gpu::recurrent_step::DeviceRtrl` records both; this file has their uniform,
//! a plain-loop CPU reference and a one-call device run for the test that compares them
//! (tests/gpu_rtrl.rs).

use super::{buffers, shader, GpuContext, GpuError};
use wgpu::util::DeviceExt;

const SHADER: &str = include_str!("../../shaders/rtrl_fold.wgsl");
/// Columns per workgroup (rtrl_fold.wgsl's COLS).
pub(crate) const COLS: u32 = 32;

/// `struct FoldDims` of rtrl_fold.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct FoldDims {
    /// The tensor's rows (the row's length).
    pub rows: u32,
    /// The chunk's columns.
    pub width: u32,
    /// The block's columns `n_n` (the Kronecker term's `t = p mod n_n`).
    pub block_cols: u32,
    /// The chunk's first column within the block's `P`.
    pub col0: u32,
    /// 1: this layer is the block's destination, add the Kronecker term.
    pub own: u32,
    /// 1: the tensor holds the GEMM's product (else the layer has no incoming term).
    pub accumulate: u32,
    /// 1: add to the gradient (an earlier dispatch wrote the block's entries this step).
    pub gradient_accumulate: u32,
    /// Where the chunk's column 0 sits in the flat gradient.
    pub gradient_offset: u32,
    /// Where the row starts in its buffer.
    pub row_offset: u32,
    /// Where the tensor starts in its buffer (0 for a chunk's own buffer; a weight block's
    /// offset in the parameters where fold forms δ^yᵀ w^{y,k}).
    pub tensor_offset: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// The kernels as compiled.
pub(crate) fn source() -> String {
    shader::assemble(SHADER, &[], false)
}

/// Workgroups for a chunk of `width` columns.
pub(crate) fn groups(width: usize) -> (u32, u32, u32) {
    shader::grid((width as u32).div_ceil(COLS))
}

/// One fold as a test states it: the tensor chunk (`rows × width`, row-major, from
/// `dims.tensor_offset`: the GEMM's product for `finish`, the finished tensor otherwise), σ',
/// the block's own source (for the Kronecker term), the row (from `dims.row_offset`) and the
/// gradient before.
pub struct FoldCase<'a> {
    pub dims: FoldDims,
    /// `finish_fold` (true) or `fold`.
    pub finish: bool,
    pub tensor: &'a [f32],
    pub deriv: &'a [f32],
    pub source: &'a [f32],
    pub row: &'a [f32],
    pub gradient: &'a [f32],
}

/// The tensor and gradient after the kernel, in plain loops (f64 sums).
pub fn finish_fold_reference(case: &FoldCase<'_>) -> (Vec<f32>, Vec<f32>) {
    let d = case.dims;
    let (rows, width) = (d.rows as usize, d.width as usize);
    let mut tensor = case.tensor.to_vec();
    let mut gradient = case.gradient.to_vec();
    let (row_at, tensor_at) = (d.row_offset as usize, d.tensor_offset as usize);
    for c in 0..width {
        let p = (d.col0 as usize) + c;
        let mut sum = 0.0f64;
        for j in 0..rows {
            let at = tensor_at + j * width + c;
            if case.finish {
                let mut x = if d.accumulate != 0 { tensor[at] } else { 0.0 };
                if d.own != 0 && j == p / d.block_cols as usize {
                    x += case.source[p % d.block_cols as usize];
                }
                tensor[at] = case.deriv[j] * x;
            }
            sum += case.row[row_at + j] as f64 * tensor[at] as f64;
        }
        let at = d.gradient_offset as usize + c;
        gradient[at] = if d.gradient_accumulate != 0 { (gradient[at] as f64 + sum) as f32 } else { sum as f32 };
    }
    (tensor, gradient)
}

/// The kernel on `case`, one call with uploads and a read-back: the tensor and the gradient.
pub async fn finish_fold(ctx: &GpuContext, case: &FoldCase<'_>) -> Result<(Vec<f32>, Vec<f32>), GpuError> {
    let device = &ctx.device;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("rtrl_fold"), source: wgpu::ShaderSource::Wgsl(source().into()) });
    let entry = if case.finish { "finish_fold" } else { "fold" };
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor { label: Some(entry), layout: None, module: &module, entry_point: Some(entry), compilation_options: Default::default(), cache: None });
    let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("rtrl fold dims"), contents: bytemuck::bytes_of(&case.dims), usage: wgpu::BufferUsages::UNIFORM });
    let tensor = buffers::upload(ctx, "tensor", case.tensor);
    let gradient = buffers::upload(ctx, "gradient", case.gradient);
    let (deriv, source, row) = (buffers::upload(ctx, "deriv", case.deriv), buffers::upload(ctx, "source", case.source), buffers::upload(ctx, "row", case.row));
    let mut entries = vec![
        wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() },
        wgpu::BindGroupEntry { binding: 3, resource: row.as_entire_binding() },
        wgpu::BindGroupEntry { binding: 4, resource: tensor.as_entire_binding() },
        wgpu::BindGroupEntry { binding: 5, resource: gradient.as_entire_binding() },
    ];
    if case.finish {
        entries.extend([wgpu::BindGroupEntry { binding: 1, resource: deriv.as_entire_binding() }, wgpu::BindGroupEntry { binding: 2, resource: source.as_entire_binding() }]);
    }
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(entry), layout: &pipeline.get_bind_group_layout(0), entries: &entries });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        let (x, y, z) = groups(case.dims.width as usize);
        pass.dispatch_workgroups(x, y, z);
    }
    ctx.queue.submit([encoder.finish()]);
    let parts = super::read_ranges(ctx, &[(&tensor, 0, (case.tensor.len() * 4) as u64), (&gradient, 0, (case.gradient.len() * 4) as u64)]).await?;
    Ok((bytemuck::pod_collect_to_vec(&parts[0]), bytemuck::pod_collect_to_vec(&parts[1])))
}
