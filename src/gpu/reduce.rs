//! Host side of `shaders/reduce.wgsl`: deterministic f32 reductions on device buffers
//! (column means, max |x|, sums of squared differences, per-case free energies and their
//! sum), plus the small recording vocabulary the update and schedule kernels share.
//!
//! Every operation is built once into a [`Step`] (pipeline + bind group + its own parameter
//! uniform) and then recorded into a caller's compute pass as often as needed, so a batch's
//! dispatches go into one submission with no host read-back. The caller keeps the buffers it
//! passed alive as long as the step is used (on the web a dropped `wgpu::Buffer` is
//! destroyed).
//!
//! Precision: WGSL has no f64, so sums are f32 in a fixed order (see the shader header) and
//! deterministic on a given device. Against the CPU's f64 sums the relative difference is the
//! f32 rounding of the terms plus O(log n) tree levels, ~1e-7–1e-6 for sums of positive terms;
//! maxima are exact.

use crate::model::VisibleUnits;

const SHADER: &str = include_str!("../../shaders/reduce.wgsl");

/// Elements per workgroup of the `partial_*` passes while there are at most
/// [`MAX_PARTIALS`] of them (256 threads × 8).
pub const PARTIAL_SPAN: usize = 2048;
/// Cap on the workgroups of a partial pass (and so on the partials a finish pass folds);
/// longer vectors give each workgroup a longer span.
pub const MAX_PARTIALS: usize = 4096;
/// WebGPU's default `maxComputeWorkgroupsPerDimension`.
pub const MAX_GROUPS_PER_DIM: u32 = 65_535;
/// Column-mean workgroups cover this many columns (× 32 row lanes).
pub const COLUMNS_PER_GROUP: usize = 8;

const ACCUMULATE: u32 = 1;
const GAUSSIAN: u32 = 2;

/// Something that records its dispatches into an open compute pass.
pub trait Dispatch {
    fn record_in(&self, pass: &mut wgpu::ComputePass<'_>);
}

/// Records `steps` in order into one compute pass on `encoder`. WebGPU orders dispatches of a
/// pass: each sees the storage writes of the ones before it.
pub fn record(encoder: &mut wgpu::CommandEncoder, label: &str, steps: &[&dyn Dispatch]) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: None });
    for step in steps {
        step.record_in(&mut pass);
    }
}

/// One dispatch, ready to record: a pipeline, its bind group, the grid, and the parameter
/// uniform it owns.
pub struct Step {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    grid: (u32, u32),
    _params: wgpu::Buffer,
}

impl Step {
    pub(crate) fn new(device: &wgpu::Device, label: &str, pipeline: &wgpu::ComputePipeline, params: wgpu::Buffer, resources: &[(u32, &wgpu::Buffer)], grid: (u32, u32)) -> Self {
        let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: params.as_entire_binding() }];
        entries.extend(resources.iter().map(|&(binding, buffer)| wgpu::BindGroupEntry { binding, resource: buffer.as_entire_binding() }));
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(label), layout: &pipeline.get_bind_group_layout(0), entries: &entries });
        Step { pipeline: pipeline.clone(), bind_group, grid, _params: params }
    }

    /// Workgroups dispatched, as (x, y).
    pub fn grid(&self) -> (u32, u32) {
        self.grid
    }
}

impl Dispatch for Step {
    fn record_in(&self, pass: &mut wgpu::ComputePass<'_>) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups(self.grid.0, self.grid.1, 1);
    }
}

impl<T: Dispatch> Dispatch for [T] {
    fn record_in(&self, pass: &mut wgpu::ComputePass<'_>) {
        for step in self {
            step.record_in(pass);
        }
    }
}

impl<T: Dispatch> Dispatch for Vec<T> {
    fn record_in(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.as_slice().record_in(pass)
    }
}

/// A 1-D count of workgroups as a grid within the per-dimension limit: (min(g, 65535), ⌈g / 65535⌉).
/// The kernel numbers workgroups `x + y·65535` and skips those past the real count (used by
/// `free_energy`, one workgroup per case).
pub fn grid(groups: u32) -> (u32, u32) {
    let groups = groups.max(1);
    let y = groups.div_ceil(MAX_GROUPS_PER_DIM);
    assert!(y <= MAX_GROUPS_PER_DIM, "{groups} workgroups exceed the 65,535² grid");
    (groups.min(MAX_GROUPS_PER_DIM), y)
}

/// Workgroups and the span (elements per workgroup, a multiple of 256) of a pass over `n`
/// elements that aims at `target_span` elements per workgroup and at most [`MAX_PARTIALS`]
/// workgroups.
pub(crate) fn split(n: usize, target_span: usize) -> (u32, u32) {
    let groups = n.div_ceil(target_span).clamp(1, MAX_PARTIALS);
    let span = n.div_ceil(groups).max(1).next_multiple_of(256);
    assert!(span <= u32::MAX as usize / 2 && n < u32::MAX as usize - span, "{n} elements");
    (n.div_ceil(span).max(1) as u32, span as u32)
}

/// Partial values a `partial_*` pass over `n` elements writes (one per workgroup, ≤ 4096).
pub fn partial_count(n: usize) -> u32 {
    split(n, PARTIAL_SPAN).0
}

/// A uniform buffer holding `value`, a `#[repr(C)]` twin of a WGSL struct.
pub(crate) fn uniform_of<T: bytemuck::Pod>(device: &wgpu::Device, label: &str, value: &T) -> wgpu::Buffer {
    super::buffers::buffer_with(device, label, bytemuck::bytes_of(value), wgpu::BufferUsages::UNIFORM)
}

/// `struct ReduceParams` of reduce.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ReduceParams {
    pub n: u32,
    pub rows: u32,
    pub width: u32,
    pub flags: u32,
    pub slot: u32,
    pub span: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// reduce.wgsl as compiled.
pub(crate) fn source() -> String {
    super::shader::assemble(SHADER, &[], false)
}

pub(crate) fn pipeline(device: &wgpu::Device, module: &wgpu::ShaderModule, entry_point: &str) -> wgpu::ComputePipeline {
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry_point),
        layout: None,
        module,
        entry_point: Some(entry_point),
        compilation_options: Default::default(),
        cache: None,
    })
}

/// A zero-filled f32 storage buffer of `words` values (at least one) that can be copied to
/// and from, for partials, scalars and the like.
pub fn storage_buffer(device: &wgpu::Device, label: &str, words: usize) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (words.max(1) * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// Where a finished scalar goes: `buffer[slot]`, replaced or accumulated into (sum: `+=`,
/// max: max with the value there), e.g. an epoch accumulator across batches.
#[derive(Clone, Copy)]
pub struct Target<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub slot: u32,
    pub accumulate: bool,
}

/// The compiled pipelines of `reduce.wgsl`, one per entry point. Build once per device.
pub struct ReduceKernels {
    column_means: wgpu::ComputePipeline,
    partial_sum_sq_diff: wgpu::ComputePipeline,
    partial_max_abs: wgpu::ComputePipeline,
    finish_sum: wgpu::ComputePipeline,
    finish_max: wgpu::ComputePipeline,
    free_energy: wgpu::ComputePipeline,
}

#[allow(clippy::too_many_arguments)]
fn params(device: &wgpu::Device, label: &str, n: usize, rows: usize, width: usize, flags: u32, slot: u32, span: u32) -> wgpu::Buffer {
    uniform_of(device, label, &ReduceParams { n: n as u32, rows: rows as u32, width: width as u32, flags, slot, span, _pad0: 0, _pad1: 0 })
}

impl ReduceKernels {
    pub fn new(device: &wgpu::Device) -> Self {
        let module = super::shader::module(device, "reduce", source(), super::shader::Checks::Bounded);
        ReduceKernels {
            column_means: pipeline(device, &module, "column_means"),
            partial_sum_sq_diff: pipeline(device, &module, "partial_sum_sq_diff"),
            partial_max_abs: pipeline(device, &module, "partial_max_abs"),
            finish_sum: pipeline(device, &module, "finish_sum"),
            finish_max: pipeline(device, &module, "finish_max"),
            free_energy: pipeline(device, &module, "free_energy"),
        }
    }

    /// `out[c] = Σ_r matrix[r, c] / rows` for a `rows × width` matrix (`out` holds ≥ width).
    pub fn column_means(&self, device: &wgpu::Device, matrix: &wgpu::Buffer, rows: usize, width: usize, out: &wgpu::Buffer) -> Step {
        assert!(rows > 0 && width > 0);
        let groups = width.div_ceil(COLUMNS_PER_GROUP) as u32;
        assert!(groups <= MAX_GROUPS_PER_DIM, "width {width} too large for one column-mean dispatch");
        let p = params(device, "column_means", 0, rows, width, 0, 0, 0);
        Step::new(device, "column_means", &self.column_means, p, &[(1, matrix), (4, out)], (groups, 1))
    }

    /// `partials[g] = Σ (a[k] − b[k])²` over workgroup g's elements of the first `n`;
    /// `partials` holds ≥ [`partial_count`]`(n)` values. Finish with [`Self::finish_sum`] or let
    /// the schedule kernel take them as the batch's squared reconstruction error.
    pub fn sum_sq_diff_partials(&self, device: &wgpu::Device, a: &wgpu::Buffer, b: &wgpu::Buffer, n: usize, partials: &wgpu::Buffer) -> Step {
        let (count, span) = split(n, PARTIAL_SPAN);
        let p = params(device, "sum_sq_diff", n, 0, 0, 0, 0, span);
        Step::new(device, "sum_sq_diff", &self.partial_sum_sq_diff, p, &[(1, a), (2, b), (4, partials)], (count, 1))
    }

    /// `partials[g] = max |a[k]|` over workgroup g's elements of the first `n`.
    pub fn max_abs_partials(&self, device: &wgpu::Device, a: &wgpu::Buffer, n: usize, partials: &wgpu::Buffer) -> Step {
        let (count, span) = split(n, PARTIAL_SPAN);
        let p = params(device, "max_abs", n, 0, 0, 0, 0, span);
        Step::new(device, "max_abs", &self.partial_max_abs, p, &[(1, a), (4, partials)], (count, 1))
    }

    /// `target = Σ values[k]` over the first `n` (one workgroup; fixed order).
    pub fn finish_sum(&self, device: &wgpu::Device, values: &wgpu::Buffer, n: usize, target: Target) -> Step {
        let p = params(device, "finish_sum", n, 0, 0, if target.accumulate { ACCUMULATE } else { 0 }, target.slot, 0);
        Step::new(device, "finish_sum", &self.finish_sum, p, &[(1, values), (4, target.buffer)], (1, 1))
    }

    /// `target = max values[k]` over the first `n` (values assumed ≥ 0, as from max |x|).
    pub fn finish_max(&self, device: &wgpu::Device, values: &wgpu::Buffer, n: usize, target: Target) -> Step {
        let p = params(device, "finish_max", n, 0, 0, if target.accumulate { ACCUMULATE } else { 0 }, target.slot, 0);
        Step::new(device, "finish_max", &self.finish_max, p, &[(1, values), (4, target.buffer)], (1, 1))
    }

    /// `target = Σ_k (a[k] − b[k])²` over the first `n`: two dispatches through `partials`.
    pub fn sum_sq_diff(&self, device: &wgpu::Device, a: &wgpu::Buffer, b: &wgpu::Buffer, n: usize, partials: &wgpu::Buffer, target: Target) -> Vec<Step> {
        vec![self.sum_sq_diff_partials(device, a, b, n, partials), self.finish_sum(device, partials, partial_count(n) as usize, target)]
    }

    /// `target = max_k |a[k]|` over the first `n` (e.g. max |weight| for the convergence ratio).
    pub fn max_abs(&self, device: &wgpu::Device, a: &wgpu::Buffer, n: usize, partials: &wgpu::Buffer, target: Target) -> Vec<Step> {
        vec![self.max_abs_partials(device, a, n, partials), self.finish_max(device, partials, partial_count(n) as usize, target)]
    }

    /// Free energy of each case: `out[r] = −b·v_r − Σ_j softplus(x_rj)` (Bernoulli) or
    /// `½|v_r − b|² − Σ_j softplus(x_rj)` (Gaussian), given `visible` (rows × nv), the hidden
    /// inputs `hidden_input` = v·W + c (rows × nh, from the GEMM) and the visible bias (nv).
    /// One workgroup per case. Sum with [`Self::finish_sum`] over `out` (n = rows).
    #[allow(clippy::too_many_arguments)]
    pub fn free_energy(
        &self,
        device: &wgpu::Device,
        visible: &wgpu::Buffer,
        hidden_input: &wgpu::Buffer,
        visible_bias: &wgpu::Buffer,
        rows: usize,
        n_visible: usize,
        n_hidden: usize,
        units: VisibleUnits,
        out: &wgpu::Buffer,
    ) -> Step {
        let flags = if units == VisibleUnits::Gaussian { GAUSSIAN } else { 0 };
        let p = params(device, "free_energy", n_hidden, rows, n_visible, flags, 0, 0);
        Step::new(device, "free_energy", &self.free_energy, p, &[(1, visible), (2, hidden_input), (3, visible_bias), (4, out)], grid(rows as u32))
    }
}
