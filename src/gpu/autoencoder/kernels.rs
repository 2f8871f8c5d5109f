//! The compiled pipelines of `shaders/autoencoder_cost.wgsl` and the GEMM kernels the cost
//! runs its products through: built once per device, shared by every [`GpuCost`](super::GpuCost).

use crate::gpu::gemm::GemmKernels;
use crate::gpu::shader::{self, buffer_entry};
use crate::gpu::GpuContext;

const SHADER: &str = include_str!("../../../shaders/autoencoder_cost.wgsl");

/// `struct Params` of autoencoder_cost.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub rows: u32,
    pub n_visible: u32,
    pub n_hidden: u32,
    pub n_params: u32,
    pub w2_offset: u32,
    pub b1_offset: u32,
    pub b2_offset: u32,
    pub row_groups: u32,
    pub rho_offset: u32,
    pub delta_offset: u32,
    pub kl_offset: u32,
    pub columns_offset: u32,
    pub recon_offset: u32,
    pub recon_groups: u32,
    pub decay_offset: u32,
    pub decay_groups: u32,
    pub decay_span: u32,
    pub weight_decay: f32,
    pub sparsity_target: f32,
    pub sparsity_weight: f32,
    pub inv_rows: f32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

/// The kernel module as compiled.
pub(crate) fn source() -> String {
    shader::assemble(SHADER, &[], false)
}

/// The entry points of autoencoder_cost.wgsl.
pub(super) struct Pipelines {
    pub decay: wgpu::ComputePipeline,
    pub mean_activation_partials: wgpu::ComputePipeline,
    pub finish_mean_activation: wgpu::ComputePipeline,
    pub output_delta: wgpu::ComputePipeline,
    pub finish_cost: wgpu::ComputePipeline,
    pub finish_output_bias: wgpu::ComputePipeline,
    pub hidden_delta: wgpu::ComputePipeline,
    pub finish_hidden_bias: wgpu::ComputePipeline,
}

/// The autoencoder's kernels on one device: its own pipelines (one bind-group layout for all
/// entry points) and the GEMM variants, compiled on first use.
pub struct AutoencoderKernels {
    pub(super) gemm: GemmKernels,
    pub(super) layout: wgpu::BindGroupLayout,
    pub(super) pipelines: Pipelines,
}

impl AutoencoderKernels {
    pub fn new(ctx: &GpuContext) -> Self {
        use wgpu::BufferBindingType::{Storage, Uniform};
        let device = &ctx.device;
        let read = Storage { read_only: true };
        let write = Storage { read_only: false };
        let entries = [
            buffer_entry(0, Uniform, false),
            buffer_entry(1, read, false),
            buffer_entry(2, read, false),
            buffer_entry(3, read, false),
            buffer_entry(4, write, false),
            buffer_entry(5, write, false),
            buffer_entry(6, write, false),
            buffer_entry(7, write, false),
        ];
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("autoencoder_cost"), entries: &entries });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some("autoencoder_cost"), bind_group_layouts: &[Some(&layout)], immediate_size: 0 });
        // Every loop runs to a bound the kernel computes and every index is guarded, but these
        // kernels are bandwidth-bound: the index clamps cost little, so they stay.
        let module = shader::module(device, "autoencoder_cost", source(), shader::Checks::Bounded);
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
        let pipelines = Pipelines {
            decay: pipeline("decay"),
            mean_activation_partials: pipeline("mean_activation_partials"),
            finish_mean_activation: pipeline("finish_mean_activation"),
            output_delta: pipeline("output_delta"),
            finish_cost: pipeline("finish_cost"),
            finish_output_bias: pipeline("finish_output_bias"),
            hidden_delta: pipeline("hidden_delta_step"),
            finish_hidden_bias: pipeline("finish_hidden_bias"),
        };
        AutoencoderKernels { gemm: GemmKernels::new(ctx), layout, pipelines }
    }
}
