//! The code step on the device (`shaders/sparse_coding_codes.wgsl` has the iteration): the
//! blocks of cases with their own buffers, the buffers the blocks share, and the host's loop
//! over convergence checks.
//!
//! Per check the host records a few iterations over the slots of the cases still running
//! (the active list it uploads), with `D·Q` as the smallest prepared product that holds them
//! (its rows a power of two from 32 on, or the block's), then reads the cases' records back
//! once: a case that stopped leaves the list, so the product shrinks as the cases converge,
//! as the CPU's packed batch does. `g` is recomputed as `A·Q − C` every
//! [`GRADIENT_REFRESH`] iterations, for the running cases only (a gathering product).

use super::basis::BasisBuffers;
use super::kernels::{CaseRecord, CodeParams, SparseCodingKernels, RUNNING};
use super::{align, DeviceFit};
use crate::gpu::buffers;
use crate::gpu::gemm::{GemmCall, GemmOp, MatRef, Pair};
use crate::gpu::shader::grid;
use crate::gpu::{GpuContext, GpuError};
use crate::sparse_coding::raina::GRADIENT_REFRESH;
use std::collections::BTreeMap;

/// The smallest product rows prepared for `D·Q`.
const SMALLEST_BUCKET: usize = 32;
/// Iterations between convergence checks while many cases run, and once few do (their
/// iterations cost little, the checks' round trips as much as ever).
const CHECK_EVERY: usize = 10;
const CHECK_EVERY_FEW: usize = 40;
const RECORD_BYTES: u64 = std::mem::size_of::<CaseRecord>() as u64;

/// Product rows for `count` slots: the smallest power of two from [`SMALLEST_BUCKET`] that
/// holds them, or `capacity` where that is smaller.
pub(super) fn bucket(count: usize, capacity: usize) -> usize {
    count.max(1).next_power_of_two().max(SMALLEST_BUCKET).min(capacity)
}

/// The most cases a block may hold on this device: every buffer a code kernel binds within the
/// storage binding size (the shared work buffer, `C`, `g` and the products, is the largest).
pub(super) fn block_capacity(ctx: &GpuContext, k: usize, n: usize) -> Result<usize, GpuError> {
    let limits = ctx.device.limits();
    let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) as usize;
    let per_case = 4 * (2 * n + n.max(k));
    let capacity = binding.saturating_sub(4 * 3 * super::ALIGN) / per_case;
    if capacity == 0 {
        return Err(GpuError(format!("sparse coding: one case's work on the device ({per_case} bytes: its Bᵀx, gradient and products for {n} bases and {k} inputs) exceeds this device's storage binding limit of {binding} bytes")));
    }
    Ok(capacity)
}

/// The code step's buffers shared by every block: sized for the largest block.
pub(super) struct CodeBuffers {
    pub capacity: usize,
    params: wgpu::Buffer,
    /// `C` at `c_offset`, `g` at `g_offset`, the products at `qd_offset`.
    work: wgpu::Buffer,
    direction: wgpu::Buffer,
    gram: wgpu::Buffer,
    active: wgpu::Buffer,
    old_codes: wgpu::Buffer,
    c_offset: usize,
    g_offset: usize,
    qd_offset: usize,
    staging: wgpu::Buffer,
    gram_product: GemmCall,
    /// `QD = D·Q` by product rows.
    direction_products: BTreeMap<usize, GemmCall>,
}

impl CodeBuffers {
    pub fn new(ctx: &GpuContext, kernels: &SparseCodingKernels, k: usize, n: usize, capacity: usize, basis: &BasisBuffers) -> Result<CodeBuffers, GpuError> {
        let c_offset = 0;
        let g_offset = align(capacity * n);
        let qd_offset = g_offset + align(capacity * n);
        let work = buffers::zeros_f32(ctx, "sparse_coding_work", qd_offset + align(capacity * n.max(k)));
        let direction = buffers::zeros_f32(ctx, "sparse_coding_direction", capacity * n);
        let gram = buffers::zeros_f32(ctx, "sparse_coding_gram", n * n);
        let active = buffers::zeros(ctx, "sparse_coding_active", 4 * capacity as u64);
        let old_codes = buffers::zeros_f32(ctx, "sparse_coding_old_codes", capacity * n);
        let params = buffers::uniform_bytes(ctx, "sparse_coding_code_params", bytemuck::bytes_of(&CodeParams::default()));
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some("sparse_coding_cases_read"), size: RECORD_BYTES * capacity as u64, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let (k32, n32) = (k as u32, n as u32);
        let gram_product = kernels.gemm.prepare(ctx, &GemmOp::new(n32, k32, n32, &basis.basis, &basis.basis, &gram).transpose_a())?;
        let mut direction_products = BTreeMap::new();
        let mut rows = capacity;
        loop {
            let op = GemmOp::new(rows as u32, n32, n32, &direction, &gram, &work).with_c(MatRef::at(&work, qd_offset as u64, n32));
            direction_products.insert(rows, kernels.gemm.prepare(ctx, &op)?);
            if rows <= SMALLEST_BUCKET {
                break;
            }
            rows = (rows - 1).next_power_of_two() / 2;
            rows = rows.max(SMALLEST_BUCKET).min(capacity);
            if direction_products.contains_key(&rows) {
                break;
            }
        }
        Ok(CodeBuffers { capacity, params, work, direction, gram, active, old_codes, c_offset, g_offset, qd_offset, staging, gram_product, direction_products })
    }

}

/// Whole cases of the set with their own buffers: `X` and the codes resident, and the
/// products and bind group that read them.
pub(super) struct Block {
    /// The first case's index in the set, and the number of cases.
    pub first: usize,
    pub rows: usize,
    _data: wgpu::Buffer,
    pub codes: wgpu::Buffer,
    cases: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    /// The codes are not all zero (coded before, or given so).
    pub coded: bool,
    /// `C = X·B`.
    correlations: GemmCall,
    /// `Y = A·Bᵀ` into the products' region.
    reconstruction: GemmCall,
    /// `S += AᵀA`, `−T −= XᵀA` of the block's codes; and with the old codes taken away.
    add: [GemmCall; 2],
    replace: [GemmCall; 2],
    /// `QA = A[active]·Q` by product rows, prepared on first use.
    refresh: BTreeMap<usize, GemmCall>,
}

impl Block {
    #[allow(clippy::too_many_arguments)]
    pub fn new(ctx: &GpuContext, kernels: &SparseCodingKernels, code: &CodeBuffers, basis: &BasisBuffers, data: &[f32], codes: &[f32], first: usize, rows: usize, k: usize, n: usize) -> Result<Block, GpuError> {
        let block_codes = &codes[first * n..(first + rows) * n];
        let coded = block_codes.iter().any(|&a| a != 0.0);
        let data_buffer = buffers::upload(ctx, "sparse_coding_data", &data[first * k..(first + rows) * k]);
        let codes_buffer = buffers::upload(ctx, "sparse_coding_codes", block_codes);
        let cases = buffers::zeros(ctx, "sparse_coding_cases", RECORD_BYTES * rows as u64);
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("sparse_coding_codes"),
            layout: &kernels.code_layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: code.params.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: data_buffer.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: codes_buffer.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: code.work.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 4, resource: code.direction.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 5, resource: code.gram.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 6, resource: code.active.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 7, resource: cases.as_entire_binding() },
            ],
        });
        let (m, k32, n32) = (rows as u32, k as u32, n as u32);
        let work = &code.work;
        let prepare = |op: GemmOp| kernels.gemm.prepare(ctx, &op);
        let correlations = prepare(GemmOp::new(m, k32, n32, &data_buffer, &basis.basis, work).with_c(MatRef::at(work, code.c_offset as u64, n32)))?;
        let reconstruction = prepare(GemmOp::new(m, n32, k32, &codes_buffer, &basis.basis, work).transpose_b().with_c(MatRef::at(work, code.qd_offset as u64, k32)))?;
        let statistics = &basis.statistics;
        let s_out = MatRef::at(statistics, 0, n32);
        let t_out = MatRef::at(statistics, basis.t_offset as u64, n32);
        let add = [
            prepare(GemmOp::new(n32, m, n32, &codes_buffer, &codes_buffer, statistics).transpose_a().with_c(s_out).accumulate())?,
            prepare(GemmOp::new(k32, m, n32, &data_buffer, &codes_buffer, statistics).transpose_a().with_c(t_out).alpha(-1.0).accumulate())?,
        ];
        let old = &code.old_codes;
        let mut s_replace = GemmOp::new(n32, 2 * m, n32, &codes_buffer, &codes_buffer, statistics).transpose_a().with_c(s_out).accumulate();
        s_replace.pair = Some(Pair { a: MatRef::new(old, n32), b: MatRef::new(old, n32), k_split: m, alpha: -1.0 });
        let mut t_replace = GemmOp::new(k32, 2 * m, n32, &data_buffer, &codes_buffer, statistics).transpose_a().with_c(t_out).alpha(-1.0).accumulate();
        t_replace.pair = Some(Pair { a: MatRef::new(&data_buffer, k32), b: MatRef::new(old, n32), k_split: m, alpha: 1.0 });
        let replace = [prepare(s_replace)?, prepare(t_replace)?];
        Ok(Block { first, rows, _data: data_buffer, codes: codes_buffer, cases, bind_group, coded, correlations, reconstruction, add, replace, refresh: BTreeMap::new() })
    }

    /// The cases' records (`CaseRecord` per case).
    pub fn cases_buffer(&self) -> &wgpu::Buffer {
        &self.cases
    }

    /// The block's part of the statistics: added (its codes were zero), or replacing its old
    /// part (the old codes in the shared `old_codes` buffer).
    pub fn add_statistics(&self, pass: &mut wgpu::ComputePass<'_>, replace: bool) {
        let calls = if replace { &self.replace } else { &self.add };
        calls.iter().for_each(|call| call.dispatch(pass, 0));
    }

    fn kernel(&self, pass: &mut wgpu::ComputePass<'_>, pipeline: &wgpu::ComputePipeline, groups: usize) {
        let (x, y, z) = grid(groups as u32);
        if x == 0 {
            return;
        }
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups(x, y, z);
    }
}

impl DeviceFit {
    /// The code kernels' parameters for `rows` cases, `slots` of them in the active list.
    fn code_params(&self, rows: usize, slots: usize, warm: bool) -> CodeParams {
        CodeParams {
            rows: rows as u32,
            n_bases: self.n_bases as u32,
            n_inputs: self.n_inputs as u32,
            slots: slots as u32,
            c_offset: self.code.c_offset as u32,
            g_offset: self.code.g_offset as u32,
            qd_offset: self.code.qd_offset as u32,
            max_iterations: self.raina.max_iterations.min(u32::MAX as usize) as u32,
            beta: self.settings.beta as f32,
            tolerance: self.raina.tolerance as f32,
            warm: u32::from(warm),
            _pad: 0,
        }
    }

    fn write_code_params(&self, rows: usize, slots: usize, warm: bool) {
        self.ctx.queue.write_buffer(&self.code.params, 0, bytemuck::bytes_of(&self.code_params(rows, slots, warm)));
    }

    /// The code step of block `b` from its codes (warm where they are not zero), with `Q = BᵀB`
    /// first where `with_gram`; then, where `statistics`, the block's statistics replaced.
    /// Returns the cases' records as the last convergence check read them.
    pub(super) async fn code_step(&mut self, b: usize, with_gram: bool, statistics: bool) -> Result<Vec<CaseRecord>, GpuError> {
        let n = self.n_bases;
        let (rows, warm) = (self.blocks[b].rows, self.blocks[b].coded);
        let capacity = self.code.capacity;
        self.prepare_refresh(b, bucket(rows, capacity))?;
        self.write_code_params(rows, rows, warm);
        self.write_active(&(0..rows as u32).collect::<Vec<u32>>());
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sparse_coding_codes") });
        // Forgetting adds the new part only: no old part to take away.
        let replace = warm && !self.forgetting;
        if replace && statistics {
            encoder.copy_buffer_to_buffer(&self.blocks[b].codes, 0, &self.code.old_codes, 0, 4 * (rows * n) as u64);
        }
        let first_bucket = bucket(rows, capacity);
        let mut iteration = 0;
        {
            let block = &self.blocks[b];
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sparse_coding_codes"), timestamp_writes: None });
            if with_gram {
                self.code.gram_product.dispatch(&mut pass, 0);
            }
            block.correlations.dispatch(&mut pass, 0);
            if warm {
                block.reconstruction.dispatch(&mut pass, 0);
            }
            block.kernel(&mut pass, &self.kernels.codes.start_cases, rows);
            if warm {
                block.refresh[&first_bucket].dispatch(&mut pass, 0);
                block.kernel(&mut pass, &self.kernels.codes.refresh, rows);
            }
            let iterations = CHECK_EVERY.min(self.raina.max_iterations);
            self.record_iterations(&mut pass, b, iteration, iterations, first_bucket, rows);
            iteration += iterations;
        }
        let mut records = self.read_cases(encoder, b).await?;
        loop {
            let running: Vec<u32> = records.iter().enumerate().filter(|(_, r)| r.status == RUNNING).map(|(i, _)| i as u32).collect();
            if running.is_empty() || iteration >= self.raina.max_iterations {
                break;
            }
            let slots = bucket(running.len(), capacity);
            self.prepare_refresh(b, slots)?;
            self.write_code_params(rows, running.len(), warm);
            self.write_active(&running);
            let chunk = if slots <= SMALLEST_BUCKET * 2 { CHECK_EVERY_FEW } else { CHECK_EVERY };
            let iterations = chunk.min(self.raina.max_iterations - iteration);
            let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sparse_coding_codes") });
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sparse_coding_codes"), timestamp_writes: None });
                self.record_iterations(&mut pass, b, iteration, iterations, slots, running.len());
            }
            iteration += iterations;
            records = self.read_cases(encoder, b).await?;
        }
        // ‖a‖₁ and the non-zero codes for the record, then the block's statistics: submitted
        // without waiting (the basis step's read-back comes after them).
        self.write_code_params(rows, rows, warm);
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sparse_coding_finish") });
        {
            let block = &self.blocks[b];
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sparse_coding_finish"), timestamp_writes: None });
            block.kernel(&mut pass, &self.kernels.codes.finish_cases, rows);
            if statistics {
                block.add_statistics(&mut pass, replace);
            }
        }
        self.ctx.queue.submit([encoder.finish()]);
        self.blocks[b].coded = true;
        Ok(records)
    }

    /// Iterations `first + 1 ..= first + count` over `active` slots, `D·Q` with `slots` rows.
    fn record_iterations(&self, pass: &mut wgpu::ComputePass<'_>, b: usize, first: usize, count: usize, slots: usize, active: usize) {
        let block = &self.blocks[b];
        let kernels = &self.kernels.codes;
        for iteration in first + 1..=first + count {
            if iteration > 1 && (iteration - 1).is_multiple_of(GRADIENT_REFRESH) {
                block.refresh[&slots].dispatch(pass, 0);
                block.kernel(pass, &kernels.refresh, active);
            }
            block.kernel(pass, &kernels.direction, active);
            self.code.direction_products[&slots].dispatch(pass, 0);
            block.kernel(pass, &kernels.line_search, active);
        }
    }

    /// Prepares block `b`'s `A[active]·Q` with `rows` product rows, once.
    fn prepare_refresh(&mut self, b: usize, rows: usize) -> Result<(), GpuError> {
        if self.blocks[b].refresh.contains_key(&rows) {
            return Ok(());
        }
        let n32 = self.n_bases as u32;
        let code = &self.code;
        let op = GemmOp::new(rows as u32, n32, n32, &self.blocks[b].codes, &code.gram, &code.work).gather_a(&code.active, 0).with_c(MatRef::at(&code.work, code.qd_offset as u64, n32));
        let call = self.kernels.gemm.prepare(&self.ctx, &op)?;
        self.blocks[b].refresh.insert(rows, call);
        Ok(())
    }

    /// The active list: `cases`, then zeros to the capacity (the product's spare rows gather
    /// case 0, whose results no kernel reads).
    fn write_active(&self, cases: &[u32]) {
        let mut list = vec![0u32; self.code.capacity];
        list[..cases.len()].copy_from_slice(cases);
        self.ctx.queue.write_buffer(&self.code.active, 0, bytemuck::cast_slice(&list));
    }

    /// Submits `encoder` with a copy of block `b`'s case records, and reads them back.
    async fn read_cases(&self, mut encoder: wgpu::CommandEncoder, b: usize) -> Result<Vec<CaseRecord>, GpuError> {
        let bytes = RECORD_BYTES * self.blocks[b].rows as u64;
        encoder.copy_buffer_to_buffer(&self.blocks[b].cases, 0, &self.code.staging, 0, bytes);
        self.ctx.queue.submit([encoder.finish()]);
        let records = {
            let view = crate::gpu::map_staging(&self.ctx, &self.code.staging).await?;
            bytemuck::pod_collect_to_vec(&view[..bytes as usize])
        };
        self.code.staging.unmap();
        Ok(records)
    }

    /// Block `b`'s cases measured: `½‖x − Ba‖²`, `‖a‖₁` and the non-zero codes of each.
    pub(super) async fn measure_block(&mut self, b: usize) -> Result<Vec<CaseRecord>, GpuError> {
        let rows = self.blocks[b].rows;
        self.write_code_params(rows, rows, true);
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("sparse_coding_measure") });
        {
            let block = &self.blocks[b];
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("sparse_coding_measure"), timestamp_writes: None });
            block.reconstruction.dispatch(&mut pass, 0);
            block.kernel(&mut pass, &self.kernels.codes.measure_cases, rows);
        }
        self.read_cases(encoder, b).await
    }
}
