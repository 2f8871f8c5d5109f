//! Host side of `shaders/local_rbm.wgsl`: the local-patch RBM's up pass, per-position down
//! products and the gathering reconstruction on the device, the twins of
//! `local_rbm::passes` (tests/gpu_local_rbm.rs compares them on lavapipe).
//!
//! Each call here uploads its operands and reads the result back, for one bank group (the
//! whole layer); the device-resident trainer (`local_rbm_trainer`) keeps its buffers and
//! splits the banks into groups where a layer passes the storage-binding limit.

use super::buffers::{read_back, uniform_bytes, upload, zeros_f32};
use super::shader::{assemble, module, Checks};
use super::{GpuContext, GpuError};
use crate::local_rbm::{CoverLists, LocalRbm};
use crate::model::VisibleUnits;

const GEOMETRY: &str = include_str!("../../shaders/local_rbm_geometry.wgsl");
const SHADER: &str = include_str!("../../shaders/local_rbm.wgsl");
const TRAIN_SHADER: &str = include_str!("../../shaders/local_rbm_train.wgsl");
/// Outputs per workgroup side of the passes' products (local_rbm.wgsl's BLOCK).
const BLOCK: u32 = 64;
const GATHER_WIDTH: u32 = 64;

/// `struct LocalDims` of local_rbm.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LocalDims {
    pub rows: u32,
    pub cols: u32,
    pub channels: u32,
    pub patch_side: u32,
    pub stride: u32,
    pub units: u32,
    pub positions: u32,
    pub positions_cols: u32,
    pub width: u32,
    pub tied: u32,
    pub cases: u32,
    pub activation: u32,
    pub first_position: u32,
    pub group_positions: u32,
    pub gather_flags: u32,
    pub _pad: u32,
}

/// `gather_flags`: add onto the sums earlier bank groups stored.
pub(crate) const GATHER_ACCUMULATE: u32 = 1;
/// `gather_flags`: the last group adds the bias and applies the activation.
pub(crate) const GATHER_FINISH: u32 = 2;

/// The passes' module as compiled.
pub(crate) fn source() -> String {
    assemble(&format!("{GEOMETRY}\n{SHADER}"), &[], false)
}

/// The training step's module as compiled (with Philox).
pub(crate) fn train_source() -> String {
    assemble(&format!("{GEOMETRY}\n{TRAIN_SHADER}"), &[], true)
}

/// `struct TrainParams` of local_rbm_train.wgsl.
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TrainParams {
    pub key_lo: u32,
    pub key_hi: u32,
    pub step_lo: u32,
    pub step_hi: u32,
    pub count: u32,
    pub learning_rate: f32,
    pub momentum: f32,
    pub weight_penalty: f32,
    pub sparsity_penalty: f32,
    pub sparsity_target: f32,
    pub tied_scale: f32,
    pub _pad: u32,
}

pub(crate) fn dims(layer: &LocalRbm, cases: usize) -> LocalDims {
    let g = &layer.geometry;
    LocalDims {
        rows: g.rows as u32,
        cols: g.cols as u32,
        channels: g.channels as u32,
        patch_side: g.patch as u32,
        stride: g.stride as u32,
        units: g.hidden_per_patch as u32,
        positions: g.positions() as u32,
        positions_cols: g.positions_cols() as u32,
        width: g.patch_inputs() as u32,
        tied: g.tied as u32,
        cases: cases as u32,
        activation: matches!(layer.visible_units, VisibleUnits::Bernoulli) as u32,
        first_position: 0,
        group_positions: g.positions() as u32,
        gather_flags: GATHER_FINISH,
        _pad: 0,
    }
}

/// Runs `entry` over `buffers` (the bindings its code uses: the pipeline's layout is derived
/// from them) with the layer's dims at binding 0.
fn dispatch(ctx: &GpuContext, entry: &str, dims: &LocalDims, buffers: &[(u32, &wgpu::Buffer)], groups: (u32, u32, u32)) {
    let device = &ctx.device;
    let shader = module(device, "local_rbm", source(), Checks::Bounded);
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: None,
        module: &shader,
        entry_point: Some(entry),
        compilation_options: Default::default(),
        cache: None,
    });
    let uniform = uniform_bytes(ctx, "local_dims", bytemuck::bytes_of(dims));
    let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: uniform.as_entire_binding() }];
    entries.extend(buffers.iter().map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() }));
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor { label: Some(entry), layout: &pipeline.get_bind_group_layout(0), entries: &entries });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(groups.0, groups.1, groups.2);
    }
    ctx.queue.submit([encoder.finish()]);
}

/// `σ(c + up(visible))` for `visible` of `cases × n_visible`: `cases × n_hidden`.
pub async fn hidden_probabilities(ctx: &GpuContext, layer: &LocalRbm, visible: &[f32]) -> Result<Vec<f32>, GpuError> {
    let g = &layer.geometry;
    let cases = visible.len() / g.n_visible();
    let d = dims(layer, cases);
    let (weights, bias, input) = (upload(ctx, "local_weights", &layer.weights), upload(ctx, "local_hidden_bias", &layer.hidden_bias), upload(ctx, "local_visible", visible));
    let output = zeros_f32(ctx, "local_hidden", cases * g.n_hidden());
    let groups = ((g.hidden_per_patch as u32).div_ceil(BLOCK), (cases as u32).div_ceil(BLOCK), g.positions() as u32);
    dispatch(ctx, "up", &d, &[(1, &weights), (2, &bias), (3, &input), (4, &output)], groups);
    read_back(ctx, &output, 0, cases * g.n_hidden()).await
}

/// `E[v | hidden]` for `hidden` of `cases × n_hidden`: the per-position products, then the
/// gather over `cover`.
pub async fn visible_expectations(ctx: &GpuContext, layer: &LocalRbm, cover: &CoverLists, hidden: &[f32]) -> Result<Vec<f32>, GpuError> {
    let g = &layer.geometry;
    let cases = hidden.len() / g.n_hidden();
    let d = dims(layer, cases);
    let weights = upload(ctx, "local_weights", &layer.weights);
    let input = upload(ctx, "local_hidden", hidden);
    let products = zeros_f32(ctx, "local_products", cases * g.positions() * g.patch_inputs());
    let groups = ((g.patch_inputs() as u32).div_ceil(BLOCK), (cases as u32).div_ceil(BLOCK), g.positions() as u32);
    dispatch(ctx, "down_products", &d, &[(1, &weights), (3, &input), (4, &products)], groups);
    let (visible_bias, starts, entries) = (upload(ctx, "local_visible_bias", &layer.visible_bias), upload(ctx, "cover_starts", &cover.starts), upload(ctx, "cover_entries", &cover.entries));
    let output = zeros_f32(ctx, "local_visible", cases * g.n_visible());
    let groups = ((g.n_visible() as u32).div_ceil(GATHER_WIDTH), cases as u32, 1);
    dispatch(ctx, "gather", &d, &[(2, &visible_bias), (3, &products), (4, &output), (5, &starts), (6, &entries)], groups);
    read_back(ctx, &output, 0, cases * g.n_visible()).await
}
