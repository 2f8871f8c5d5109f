//! Host side of `shaders/affine_sigmoid.wgsl`.

use super::{GpuContext, GpuError};
use wgpu::util::DeviceExt;

const SHADER: &str = include_str!("../../shaders/affine_sigmoid.wgsl");
const WORKGROUP_WIDTH: u32 = 64;

/// `struct Dims` of affine_sigmoid.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Dims {
    pub rows: u32,
    pub n_in: u32,
    pub n_out: u32,
    pub _pad: u32,
}

/// The kernel as compiled.
pub(crate) fn source() -> String {
    super::shader::assemble(SHADER, &[], false)
}

/// `sigmoid(bias + input · weights)` for `input` of `rows × n_in` and `weights` of `n_in × n_out`.
pub async fn affine_sigmoid(ctx: &GpuContext, input: &[f32], weights: &[f32], bias: &[f32], rows: usize, n_in: usize, n_out: usize) -> Result<Vec<f32>, GpuError> {
    assert!(input.len() == rows * n_in && weights.len() == n_in * n_out && bias.len() == n_out);
    let device = &ctx.device;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("affine_sigmoid"), source: wgpu::ShaderSource::Wgsl(source().into()) });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("affine_sigmoid"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let storage = |label, data: &[f32]| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some(label), contents: bytemuck::cast_slice(data), usage: wgpu::BufferUsages::STORAGE })
    };
    let dims = Dims { rows: rows as u32, n_in: n_in as u32, n_out: n_out as u32, _pad: 0 };
    let dims = device.create_buffer_init(&wgpu::util::BufferInitDescriptor { label: Some("dims"), contents: bytemuck::bytes_of(&dims), usage: wgpu::BufferUsages::UNIFORM });
    let (input, weights, bias) = (storage("input", input), storage("weights", weights), storage("bias", bias));
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("output"),
        size: (rows * n_out * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("affine_sigmoid"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: dims.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: input.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 2, resource: weights.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 3, resource: bias.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 4, resource: output.as_entire_binding() },
        ],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups((n_out as u32).div_ceil(WORKGROUP_WIDTH), rows as u32, 1);
    }
    ctx.queue.submit([encoder.finish()]);
    ctx.read_back(&output, rows * n_out).await
}

/// Runs the kernel on a fixed small problem and returns the largest absolute difference
/// from the CPU reference: the page's and the CLI's "does this GPU compute correctly" check.
pub async fn self_check(ctx: &GpuContext) -> Result<f32, GpuError> {
    use crate::backend::{cpu::CpuBackend, Activation, Backend, Weights};
    let (rows, n_in, n_out) = (7, 33, 130);
    let wave = |k: usize, f: f32| (k as f32 * f).sin() * 0.5;
    let input: Vec<f32> = (0..rows * n_in).map(|k| wave(k, 0.37).abs()).collect();
    let weights: Vec<f32> = (0..n_in * n_out).map(|k| wave(k, 0.11)).collect();
    let bias: Vec<f32> = (0..n_out).map(|k| wave(k, 0.7)).collect();
    let gpu = affine_sigmoid(ctx, &input, &weights, &bias, rows, n_in, n_out).await?;
    let mut cpu = vec![0.0; rows * n_out];
    CpuBackend.visible_to_hidden(Weights { values: &weights, n_visible: n_in, n_hidden: n_out }, &input, &bias, Activation::Sigmoid, &mut cpu);
    Ok(gpu.iter().zip(&cpu).fold(0.0f32, |m, (a, b)| m.max((a - b).abs())))
}
