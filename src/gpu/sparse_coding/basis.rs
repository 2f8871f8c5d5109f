//! The basis step on the device (`shaders/sparse_coding_basis.wgsl` has the iteration): the
//! basis, its candidate and gradients, the whole set's statistics, and the host's loop over
//! convergence checks.

use super::kernels::{BasisParams, BasisState, CaseRecord, SparseCodingKernels, CANDIDATE_COLUMNS};
use super::{align, DeviceFit};
use crate::gpu::buffers;
use crate::gpu::gemm::{GemmCall, GemmOp, MatRef};
use crate::gpu::reduce::split;
use crate::gpu::shader::grid;
use crate::gpu::{GpuContext, GpuError};
use crate::sparse_coding::Basis;

/// Iterations between reads of the basis step's state.
const CHECK_EVERY: usize = 8;
/// Elements per partial-sum workgroup the kernels aim at.
const SPAN: usize = 4096;
const STATE_BYTES: u64 = std::mem::size_of::<BasisState>() as u64;

/// The basis step's buffers, and the products over them.
pub(super) struct BasisBuffers {
    pub basis: wgpu::Buffer,
    _candidate: wgpu::Buffer,
    _gradient: wgpu::Buffer,
    _product: wgpu::Buffer,
    /// `S` (`n × n`) at 0, `−T` (`k × n`) at `t_offset`.
    pub statistics: wgpu::Buffer,
    pub t_offset: usize,
    scratch: wgpu::Buffer,
    start_offset: usize,
    state: wgpu::Buffer,
    params: wgpu::Buffer,
    params_value: BasisParams,
    bind_group: wgpu::BindGroup,
    groups: u32,
    staging: wgpu::Buffer,
    /// `G = B·S` and `P = B'·S`.
    gradient_product: GemmCall,
    candidate_product: GemmCall,
}

impl BasisBuffers {
    /// `basis` uploaded, statistics zero. The objective's `½‖X‖²` in f32 (for the stopping
    /// test) and the tolerance go into the kernels' parameters.
    pub fn new(ctx: &GpuContext, kernels: &SparseCodingKernels, basis: &Basis, tolerance: f64, half_data: f64) -> Result<BasisBuffers, GpuError> {
        let (k, n) = (basis.n_inputs, basis.n_bases);
        let len = k * n;
        let t_offset = align(n * n);
        let limits = ctx.device.limits();
        let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        for (what, values) in [("the basis (inputs × bases)", len), ("the statistics S = AᵀA and T = XᵀA (bases × (bases + inputs))", t_offset + len)] {
            let bytes = 4 * values as u64;
            if values >= u32::MAX as usize / 4 || bytes > binding {
                return Err(GpuError(format!("sparse coding: {what} take {bytes} bytes, over this device's storage binding limit of {binding} bytes")));
            }
        }
        let (groups, span) = split(len, SPAN);
        let start_offset = align(n);
        let change_offset = start_offset + align(groups as usize);
        let params = BasisParams {
            n_inputs: k as u32,
            n_bases: n as u32,
            len: len as u32,
            t_offset: t_offset as u32,
            span,
            groups,
            start_offset: start_offset as u32,
            change_offset: change_offset as u32,
            tolerance: tolerance as f32,
            half_data: half_data as f32,
            forget: 1.0,
            _pad1: 0,
        };
        let basis_buffer = buffers::upload(ctx, "sparse_coding_basis", &basis.values);
        let candidate = buffers::zeros_f32(ctx, "sparse_coding_candidate", len);
        let gradient = buffers::zeros_f32(ctx, "sparse_coding_gradient", len);
        let product = buffers::zeros_f32(ctx, "sparse_coding_product", len);
        let statistics = buffers::zeros_f32(ctx, "sparse_coding_statistics", t_offset + len);
        let scratch = buffers::zeros_f32(ctx, "sparse_coding_scratch", change_offset + align(groups as usize));
        let state = buffers::zeros(ctx, "sparse_coding_basis_state", STATE_BYTES);
        let params_value = params;
        let params = buffers::uniform_bytes(ctx, "sparse_coding_basis_params", bytemuck::bytes_of(&params_value));
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("sparse_coding_basis"),
            layout: &kernels.basis_layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: params.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: state.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: basis_buffer.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: candidate.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 4, resource: gradient.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 5, resource: product.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 6, resource: statistics.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 7, resource: scratch.as_entire_binding() },
            ],
        });
        let (k32, n32) = (k as u32, n as u32);
        let s = MatRef::at(&statistics, 0, n32);
        let gradient_product = kernels.gemm.prepare(ctx, &GemmOp::new(k32, n32, n32, &basis_buffer, &statistics, &gradient).with_b(s))?;
        let candidate_product = kernels.gemm.prepare(ctx, &GemmOp::new(k32, n32, n32, &candidate, &statistics, &product).with_b(s))?;
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("sparse_coding_basis_read"),
            size: (STATE_BYTES + 4 * groups as u64).next_multiple_of(8),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Ok(BasisBuffers {
            basis: basis_buffer,
            _candidate: candidate,
            _gradient: gradient,
            _product: product,
            statistics,
            t_offset,
            scratch,
            start_offset,
            state,
            params,
            params_value,
            bind_group,
            groups,
            staging,
            gradient_product,
            candidate_product,
        })
    }

    /// The forgetting statistics' decay: `S` and `−T` times `forget` on the device, submitted,
    /// with `half_data` (their weighted `½‖X‖²`) for the basis step's objective.
    pub(super) fn forget(&mut self, ctx: &GpuContext, kernels: &SparseCodingKernels, forget: f64, half_data: f64) {
        self.params_value.forget = forget as f32;
        self.params_value.half_data = half_data as f32;
        ctx.queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&self.params_value));
        let elements = self.t_offset + self.params_value.len as usize;
        let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sparse_coding_forget") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sparse_coding_forget"), timestamp_writes: None });
            self.kernel(&mut pass, &kernels.basis.scale_statistics, elements.div_ceil(256));
        }
        ctx.queue.submit([encoder.finish()]);
    }

    /// The statistics cleared (every block's part to be added again) for the whole set's
    /// objective, whose `½‖X‖²` is `half_data`.
    pub(super) fn restart_statistics(&mut self, ctx: &GpuContext, half_data: f64) {
        self.params_value.forget = 1.0;
        self.params_value.half_data = half_data as f32;
        ctx.queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&self.params_value));
        let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sparse_coding_restart") });
        encoder.clear_buffer(&self.statistics, 0, None);
        ctx.queue.submit([encoder.finish()]);
    }

    fn kernel(&self, pass: &mut wgpu::ComputePass<'_>, pipeline: &wgpu::ComputePipeline, groups: usize) {
        let (x, y, z) = grid(groups as u32);
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups(x, y, z);
    }
}

/// What a basis step did, with the code step's case records of the batch's blocks.
pub(super) struct BasisOutcome {
    /// `½‖X − ABᵀ‖²` of the whole set before and after, in f64.
    pub before: f64,
    pub after: f64,
    pub iterations: usize,
    pub cases: Vec<Vec<CaseRecord>>,
}

impl DeviceFit {
    /// The basis step on the whole set's statistics; the first read-back also brings the
    /// case records of `blocks` (their code step's outcome).
    pub(super) async fn basis_step(&mut self, blocks: std::ops::Range<usize>) -> Result<BasisOutcome, GpuError> {
        let n = self.n_bases;
        let max_iterations = self.basis_settings.max_iterations;
        let kernels = &self.kernels.basis;
        let b = &self.basis;
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sparse_coding_basis") });
        let mut recorded = CHECK_EVERY.min(max_iterations);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sparse_coding_basis"), timestamp_writes: None });
            b.kernel(&mut pass, &kernels.column_steps, n);
            b.gradient_product.dispatch(&mut pass, 0);
            b.kernel(&mut pass, &kernels.gradient_start, b.groups as usize);
            b.kernel(&mut pass, &kernels.objective_start, 1);
            self.record_basis_iterations(&mut pass, recorded);
        }
        let mut ranges = vec![(&b.state, 0, STATE_BYTES), (&b.scratch, 4 * b.start_offset as u64, 4 * b.groups as u64)];
        for block in &self.blocks[blocks] {
            ranges.push((block.cases_buffer(), 0, std::mem::size_of::<CaseRecord>() as u64 * block.rows as u64));
        }
        self.ctx.queue.submit([encoder.finish()]);
        let parts = crate::gpu::read_ranges(&self.ctx, &ranges).await?;
        let mut state: BasisState = bytemuck::pod_read_unaligned(&parts[0]);
        let partials: Vec<f32> = bytemuck::pod_collect_to_vec(&parts[1]);
        let cases = parts[2..].iter().map(|part| bytemuck::pod_collect_to_vec(part)).collect();
        while state.running != 0 && recorded < max_iterations {
            let iterations = CHECK_EVERY.min(max_iterations - recorded);
            let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sparse_coding_basis") });
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sparse_coding_basis"), timestamp_writes: None });
                self.record_basis_iterations(&mut pass, iterations);
            }
            recorded += iterations;
            encoder.copy_buffer_to_buffer(&self.basis.state, 0, &self.basis.staging, 0, STATE_BYTES);
            self.ctx.queue.submit([encoder.finish()]);
            state = {
                let view = crate::gpu::map_staging(&self.ctx, &self.basis.staging).await?;
                bytemuck::pod_read_unaligned(&view[..STATE_BYTES as usize])
            };
            self.basis.staging.unmap();
        }
        let half_data = if self.forgetting { self.weighted_half } else { self.half_data };
        let before = half_data + 0.5 * partials.iter().map(|&p| f64::from(p)).sum::<f64>();
        Ok(BasisOutcome { before, after: before + f64::from(state.decrease), iterations: state.iterations as usize, cases })
    }

    fn record_basis_iterations(&self, pass: &mut wgpu::ComputePass<'_>, iterations: usize) {
        let kernels = &self.kernels.basis;
        let b = &self.basis;
        let columns = self.n_bases.div_ceil(CANDIDATE_COLUMNS);
        for _ in 0..iterations {
            b.kernel(pass, &kernels.candidate, columns);
            b.candidate_product.dispatch(pass, 0);
            b.kernel(pass, &kernels.change_partials, b.groups as usize);
            b.kernel(pass, &kernels.decide, 1);
            b.kernel(pass, &kernels.accept, b.groups as usize);
        }
    }
}
