//! The compiled pipelines of `shaders/sparse_coding_codes.wgsl` and
//! `shaders/sparse_coding_basis.wgsl`, their uniforms' and records' Rust twins, and the GEMM
//! kernels the steps run their products through: built once per device.

use crate::gpu::gemm::GemmKernels;
use crate::gpu::shader::{self, buffer_entry};
use crate::gpu::GpuContext;

const CODES: &str = include_str!("../../../shaders/sparse_coding_codes.wgsl");
const BASIS: &str = include_str!("../../../shaders/sparse_coding_basis.wgsl");

/// `struct CodeParams` of sparse_coding_codes.wgsl (tests/gpu_uniform_layout.rs compares them).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CodeParams {
    pub rows: u32,
    pub n_bases: u32,
    pub n_inputs: u32,
    /// Slots of the active list the iteration kernels run over.
    pub slots: u32,
    pub c_offset: u32,
    pub g_offset: u32,
    pub qd_offset: u32,
    pub max_iterations: u32,
    pub beta: f32,
    pub tolerance: f32,
    pub warm: u32,
    pub _pad: u32,
}

/// `struct CaseRecord` of sparse_coding_codes.wgsl: one case's state in the code step.
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CaseRecord {
    /// [`RUNNING`], [`STOPPED`] (by the rule, or at the optimum), or 2: stopped at the
    /// iteration limit.
    pub status: u32,
    pub iterations: u32,
    /// The case's objective as the line search tracks it (`measure_cases`: `½‖x − Ba‖²`).
    pub objective: f32,
    pub l1: f32,
    pub nonzero: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

pub const RUNNING: u32 = 0;
pub const STOPPED: u32 = 1;

/// `struct BasisParams` of sparse_coding_basis.wgsl.
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BasisParams {
    pub n_inputs: u32,
    pub n_bases: u32,
    pub len: u32,
    pub t_offset: u32,
    pub span: u32,
    pub groups: u32,
    pub start_offset: u32,
    pub change_offset: u32,
    pub tolerance: f32,
    pub half_data: f32,
    /// The forgetting factor `scale_statistics` multiplies the statistics by.
    pub forget: f32,
    pub _pad1: u32,
}

/// `struct BasisState` of sparse_coding_basis.wgsl: the basis step's progress.
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BasisState {
    pub running: u32,
    pub iterations: u32,
    pub accepted: u32,
    /// Some column has a step (`η_j > 0`): some code is not zero.
    pub any_step: u32,
    pub objective: f32,
    pub before: f32,
    /// The sum of the accepted changes.
    pub decrease: f32,
    pub last_change: f32,
}

/// Columns per `candidate_step` workgroup (`COLS` of sparse_coding_basis.wgsl).
pub const CANDIDATE_COLUMNS: usize = 16;

/// The code-step kernel module as compiled.
pub(crate) fn codes_source() -> String {
    shader::assemble(CODES, &[], false)
}

/// The basis-step kernel module as compiled.
pub(crate) fn basis_source() -> String {
    shader::assemble(BASIS, &[], false)
}

/// The entry points of sparse_coding_codes.wgsl.
pub(crate) struct CodePipelines {
    pub start_cases: wgpu::ComputePipeline,
    pub refresh: wgpu::ComputePipeline,
    pub direction: wgpu::ComputePipeline,
    pub line_search: wgpu::ComputePipeline,
    pub finish_cases: wgpu::ComputePipeline,
    pub measure_cases: wgpu::ComputePipeline,
}

/// The entry points of sparse_coding_basis.wgsl.
pub(crate) struct BasisPipelines {
    pub column_steps: wgpu::ComputePipeline,
    pub gradient_start: wgpu::ComputePipeline,
    pub objective_start: wgpu::ComputePipeline,
    pub candidate: wgpu::ComputePipeline,
    pub change_partials: wgpu::ComputePipeline,
    pub decide: wgpu::ComputePipeline,
    pub accept: wgpu::ComputePipeline,
    pub scale_statistics: wgpu::ComputePipeline,
}

/// Sparse coding's kernels on one device: the two modules' pipelines (one bind-group layout
/// each) and the GEMM variants, compiled on first use.
pub struct SparseCodingKernels {
    pub(crate) gemm: GemmKernels,
    pub(crate) code_layout: wgpu::BindGroupLayout,
    pub(crate) basis_layout: wgpu::BindGroupLayout,
    pub(crate) codes: CodePipelines,
    pub(crate) basis: BasisPipelines,
}

impl SparseCodingKernels {
    pub fn new(ctx: &GpuContext) -> Self {
        use wgpu::BufferBindingType::{Storage, Uniform};
        let device = &ctx.device;
        let read = Storage { read_only: true };
        let write = Storage { read_only: false };
        let code_entries = [
            buffer_entry(0, Uniform, false),
            buffer_entry(1, read, false),
            buffer_entry(2, write, false),
            buffer_entry(3, write, false),
            buffer_entry(4, write, false),
            buffer_entry(5, read, false),
            buffer_entry(6, read, false),
            buffer_entry(7, write, false),
        ];
        let basis_entries = [
            buffer_entry(0, Uniform, false),
            buffer_entry(1, write, false),
            buffer_entry(2, write, false),
            buffer_entry(3, write, false),
            buffer_entry(4, write, false),
            buffer_entry(5, read, false),
            buffer_entry(6, write, false),
            buffer_entry(7, write, false),
        ];
        let code_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("sparse_coding_codes"), entries: &code_entries });
        let basis_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("sparse_coding_basis"), entries: &basis_entries });
        // Every loop runs to a bound the kernel computes; the index clamps stay (these kernels
        // move little data next to the products).
        let pipelines = |label: &str, source: String, layout: &wgpu::BindGroupLayout| {
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some(label), bind_group_layouts: &[Some(layout)], immediate_size: 0 });
            let module = shader::module(device, label, source, shader::Checks::Bounded);
            move |entry_point: &str| {
                device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry_point),
                    layout: Some(&pipeline_layout),
                    module: &module,
                    entry_point: Some(entry_point),
                    compilation_options: wgpu::PipelineCompilationOptions { constants: &[], zero_initialize_workgroup_memory: false },
                    cache: None,
                })
            }
        };
        let code = pipelines("sparse_coding_codes", codes_source(), &code_layout);
        let codes = CodePipelines {
            start_cases: code("start_cases"),
            refresh: code("refresh"),
            direction: code("direction_step"),
            line_search: code("line_search"),
            finish_cases: code("finish_cases"),
            measure_cases: code("measure_cases"),
        };
        let step = pipelines("sparse_coding_basis", basis_source(), &basis_layout);
        let basis = BasisPipelines {
            column_steps: step("column_steps"),
            gradient_start: step("gradient_start"),
            objective_start: step("objective_start"),
            candidate: step("candidate_step"),
            change_partials: step("change_partials"),
            decide: step("decide"),
            accept: step("accept"),
            scale_statistics: step("scale_statistics"),
        };
        SparseCodingKernels { gemm: GemmKernels::new(ctx), code_layout, basis_layout, codes, basis }
    }
}
