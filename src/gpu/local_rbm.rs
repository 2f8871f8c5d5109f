//! Host side of `shaders/local_rbm.wgsl`: the local-patch RBM's up pass, per-position down
//! products and the gathering reconstruction on the device, the twins of
//! `local_rbm::passes` (tests/gpu_local_rbm.rs compares them on lavapipe).
//!
//! Each call here uploads its operands and reads the result back, for one bank group (the
//! whole layer); the device-resident trainer (`local_rbm_trainer`) keeps its buffers and
//! splits the banks into groups where a layer passes the storage-binding limit.
//!
//! The products (up, down_products, weight_update) come in tilings ([`LocalTiling`]): the
//! first kernels (local_rbm.wgsl, local_rbm_train.wgsl) or the blocked ones of
//! local_rbm_tile.wgsl (local_rbm_tiled.wgsl, local_rbm_train_tiled.wgsl), picked natively by
//! `DEEPBELIEF_LOCAL_TILING` so that one device run can time both.

use super::buffers::{read_back, uniform_bytes, upload, zeros_f32};
use super::shader::{assemble, module, Checks, Const};
use super::{GpuContext, GpuError};
use crate::local_rbm::{CoverLists, LocalRbm};
use crate::model::VisibleUnits;

const GEOMETRY: &str = include_str!("../../shaders/local_rbm_geometry.wgsl");
const SHADER: &str = include_str!("../../shaders/local_rbm.wgsl");
const TRAIN_SHADER: &str = include_str!("../../shaders/local_rbm_train.wgsl");
const TILE: &str = include_str!("../../shaders/local_rbm_tile.wgsl");
const TILED_SHADER: &str = include_str!("../../shaders/local_rbm_tiled.wgsl");
const TILED_TRAIN_SHADER: &str = include_str!("../../shaders/local_rbm_train_tiled.wgsl");
const GATHER_WIDTH: u32 = 64;

/// The environment variable that picks the products' tiling (native only).
pub const TILING_VARIABLE: &str = "DEEPBELIEF_LOCAL_TILING";

/// Which kernels compute the three products of a CD-1 batch (up, down_products,
/// weight_update); the gather, sampling and bias updates are the same in all.
///
/// - `Old`: local_rbm.wgsl / local_rbm_train.wgsl, 64 × 64 blocks of 16 × 16 invocations with
///   4 × 4 outputs each, k steps of 16, scalar workgroup-memory reads, `pixel_of` per element.
/// - The rest: local_rbm_tile.wgsl's blocks (vec4 workgroup-memory reads, the next step's
///   loads in registers during the arithmetic, one patch offset per invocation walked along the
///   patch), compiled without wgpu's index clamps:
///   `T8x8` 64 × 64 blocks, 8 × 8 outputs per invocation (64 invocations), k steps of 16;
///   `T4x8` 64 × 64, 4 × 8 (128 invocations), k 16; `T4x4` 64 × 64, 4 × 4 (256), k 16 (the old
///   block with the new loads and reads); `Wide` 64 × 192 blocks, 8 × 8 (192 invocations), k
///   steps of 12 (a block as wide as Table 3's 192 units).
///
/// All fit WebGPU's defaults (at most 256 invocations and 16 KiB of workgroup memory a
/// kernel; tests/gpu_local_rbm_tiling.rs checks). 192-wide shapes (cases, units) are 3 blocks
/// of 64, a patch's 576 inputs 9.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalTiling {
    Old,
    T8x8,
    T4x8,
    T4x4,
    Wide,
}

/// A blocked tiling's compile-time shape (local_rbm_tile.wgsl's constants).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileShape {
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub tm: u32,
    pub tn: u32,
}

impl TileShape {
    pub fn invocations(&self) -> u32 {
        (self.bm / self.tm) * (self.bn / self.tn)
    }

    /// Bytes of workgroup memory: one padded slab of each operand.
    pub fn workgroup_bytes(&self) -> u32 {
        self.bk * (self.bm / 4 + 1 + self.bn / 4 + 1) * 16
    }
}

impl LocalTiling {
    /// What `new` (and an unset knob, and the browser) means. Wide: on an H200 (2026-11-29, same
    /// run, Table 3's CD-1 batch) 144² took 17.9 s per million examples against 8x8's 21.9 and
    /// the old kernels' 26.7; at 192² it tied the old kernels (84.0 against 83.7; 8x8 120).
    pub const DEFAULT: LocalTiling = LocalTiling::Wide;
    pub const ALL: [LocalTiling; 5] = [LocalTiling::Old, LocalTiling::T8x8, LocalTiling::T4x8, LocalTiling::T4x4, LocalTiling::Wide];

    /// The knob's value for it.
    pub fn name(self) -> &'static str {
        match self {
            LocalTiling::Old => "old",
            LocalTiling::T8x8 => "8x8",
            LocalTiling::T4x8 => "4x8",
            LocalTiling::T4x4 => "4x4",
            LocalTiling::Wide => "wide",
        }
    }

    /// The blocked kernels' shape; `None` for the old kernels.
    pub fn shape(self) -> Option<TileShape> {
        match self {
            LocalTiling::Old => None,
            LocalTiling::T8x8 => Some(TileShape { bm: 64, bn: 64, bk: 16, tm: 8, tn: 8 }),
            LocalTiling::T4x8 => Some(TileShape { bm: 64, bn: 64, bk: 16, tm: 4, tn: 8 }),
            LocalTiling::T4x4 => Some(TileShape { bm: 64, bn: 64, bk: 16, tm: 4, tn: 4 }),
            LocalTiling::Wide => Some(TileShape { bm: 64, bn: 192, bk: 12, tm: 8, tn: 8 }),
        }
    }

    /// Outputs per workgroup, (rows, columns): the grids' divisors.
    pub fn block(self) -> (u32, u32) {
        self.shape().map_or((64, 64), |t| (t.bm, t.bn))
    }

    /// For reports: the name, block, outputs per invocation and k step.
    pub fn describe(self) -> String {
        match self.shape() {
            None => "old: 64 × 64 blocks, 4 × 4 outputs per invocation (256 invocations), k steps of 16, scalar reads".into(),
            Some(t) => format!("{}: {} × {} blocks, {} × {} outputs per invocation ({} invocations), k steps of {}", self.name(), t.bm, t.bn, t.tm, t.tn, t.invocations(), t.bk),
        }
    }

    /// The knob's value: `new` or nothing is [`Self::DEFAULT`]; anything unknown is an error
    /// naming the variable and the values it takes.
    pub fn parse(value: Option<&str>) -> Result<LocalTiling, String> {
        let Some(text) = value.map(str::trim) else { return Ok(Self::DEFAULT) };
        if text.is_empty() || text == "new" {
            return Ok(Self::DEFAULT);
        }
        Self::ALL.into_iter().find(|t| t.name() == text).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|t| t.name()).collect();
            format!("{TILING_VARIABLE}={text}: expected new (= {}) or one of {}", Self::DEFAULT.name(), names.join(", "))
        })
    }

    /// The knob as the environment sets it (native); the browser takes the default.
    pub fn from_env() -> Result<LocalTiling, String> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            Self::parse(std::env::var(TILING_VARIABLE).ok().as_deref())
        }
        #[cfg(target_arch = "wasm32")]
        {
            Ok(Self::DEFAULT)
        }
    }
}

fn tile_constants(t: TileShape) -> [(&'static str, Const); 5] {
    [("BM", Const::U32(t.bm)), ("BN", Const::U32(t.bn)), ("BK", Const::U32(t.bk)), ("TM", Const::U32(t.tm)), ("TN", Const::U32(t.tn))]
}

/// The blocked up and down_products as compiled for `t`.
pub(crate) fn tiled_source(t: TileShape) -> String {
    assemble(&format!("{GEOMETRY}\n{TILE}\n{TILED_SHADER}"), &tile_constants(t), false)
}

/// The blocked weight_update as compiled for `t`.
pub(crate) fn tiled_train_source(t: TileShape) -> String {
    assemble(&format!("{GEOMETRY}\n{TILE}\n{TILED_TRAIN_SHADER}"), &tile_constants(t), false)
}

/// Every blocked tiling's two modules, (module, variant, source), for `shader::kernel_sources`
/// (the modules share local_rbm.wgsl's and local_rbm_train.wgsl's uniforms, so their names).
pub(crate) fn tiled_sources() -> Vec<(&'static str, String, String)> {
    LocalTiling::ALL
        .into_iter()
        .filter_map(|t| t.shape().map(|shape| (t, shape)))
        .flat_map(|(t, shape)| [("local_rbm", format!("tiling={}", t.name()), tiled_source(shape)), ("local_rbm_train", format!("tiling={}", t.name()), tiled_train_source(shape))])
        .collect()
}

/// The passes' module of the products for `tiling` (the old module holds the gather and
/// column sums too): compiled without index clamps when blocked (every access is checked in
/// the kernel), with them when old.
pub(crate) fn products_module(device: &wgpu::Device, tiling: LocalTiling) -> wgpu::ShaderModule {
    match tiling.shape() {
        None => module(device, "local_rbm", source(), Checks::Bounded),
        Some(t) => module(device, &format!("local_rbm_tiled_{}", tiling.name()), tiled_source(t), Checks::Trusted),
    }
}

/// The weight update's module for `tiling`.
pub(crate) fn update_module(device: &wgpu::Device, tiling: LocalTiling) -> wgpu::ShaderModule {
    match tiling.shape() {
        None => module(device, "local_rbm_train", train_source(), Checks::Bounded),
        Some(t) => module(device, &format!("local_rbm_train_tiled_{}", tiling.name()), tiled_train_source(t), Checks::Trusted),
    }
}

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

/// Runs `entry` of `shader` over `buffers` (the bindings its code uses: the pipeline's layout
/// is derived from them) with the layer's dims at binding 0.
fn dispatch(ctx: &GpuContext, shader: &wgpu::ShaderModule, entry: &str, dims: &LocalDims, buffers: &[(u32, &wgpu::Buffer)], groups: (u32, u32, u32)) {
    let device = &ctx.device;
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: None,
        module: shader,
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

/// `σ(c + up(visible))` for `visible` of `cases × n_visible`: `cases × n_hidden`, with the
/// tiling `DEEPBELIEF_LOCAL_TILING` picks.
pub async fn hidden_probabilities(ctx: &GpuContext, layer: &LocalRbm, visible: &[f32]) -> Result<Vec<f32>, GpuError> {
    hidden_probabilities_with(ctx, layer, visible, LocalTiling::from_env().map_err(GpuError)?).await
}

/// [`hidden_probabilities`] with the products of `tiling`.
pub async fn hidden_probabilities_with(ctx: &GpuContext, layer: &LocalRbm, visible: &[f32], tiling: LocalTiling) -> Result<Vec<f32>, GpuError> {
    let g = &layer.geometry;
    let cases = visible.len() / g.n_visible();
    let d = dims(layer, cases);
    let (weights, bias, input) = (upload(ctx, "local_weights", &layer.weights), upload(ctx, "local_hidden_bias", &layer.hidden_bias), upload(ctx, "local_visible", visible));
    let output = zeros_f32(ctx, "local_hidden", cases * g.n_hidden());
    let (rows, columns) = tiling.block();
    let groups = ((g.hidden_per_patch as u32).div_ceil(columns), (cases as u32).div_ceil(rows), g.positions() as u32);
    dispatch(ctx, &products_module(&ctx.device, tiling), "up", &d, &[(1, &weights), (2, &bias), (3, &input), (4, &output)], groups);
    read_back(ctx, &output, 0, cases * g.n_hidden()).await
}

/// `E[v | hidden]` for `hidden` of `cases × n_hidden`: the per-position products, then the
/// gather over `cover`, with the tiling `DEEPBELIEF_LOCAL_TILING` picks.
pub async fn visible_expectations(ctx: &GpuContext, layer: &LocalRbm, cover: &CoverLists, hidden: &[f32]) -> Result<Vec<f32>, GpuError> {
    visible_expectations_with(ctx, layer, cover, hidden, LocalTiling::from_env().map_err(GpuError)?).await
}

/// [`visible_expectations`] with the products of `tiling`.
pub async fn visible_expectations_with(ctx: &GpuContext, layer: &LocalRbm, cover: &CoverLists, hidden: &[f32], tiling: LocalTiling) -> Result<Vec<f32>, GpuError> {
    let g = &layer.geometry;
    let cases = hidden.len() / g.n_hidden();
    let d = dims(layer, cases);
    let weights = upload(ctx, "local_weights", &layer.weights);
    let input = upload(ctx, "local_hidden", hidden);
    let products = zeros_f32(ctx, "local_products", cases * g.positions() * g.patch_inputs());
    let (rows, columns) = tiling.block();
    let groups = ((g.patch_inputs() as u32).div_ceil(columns), (cases as u32).div_ceil(rows), g.positions() as u32);
    dispatch(ctx, &products_module(&ctx.device, tiling), "down_products", &d, &[(1, &weights), (3, &input), (4, &products)], groups);
    let (visible_bias, starts, entries) = (upload(ctx, "local_visible_bias", &layer.visible_bias), upload(ctx, "cover_starts", &cover.starts), upload(ctx, "cover_entries", &cover.entries));
    let output = zeros_f32(ctx, "local_visible", cases * g.n_visible());
    let groups = ((g.n_visible() as u32).div_ceil(GATHER_WIDTH), cases as u32, 1);
    let passes = module(&ctx.device, "local_rbm", source(), Checks::Bounded);
    dispatch(ctx, &passes, "gather", &d, &[(2, &visible_bias), (3, &products), (4, &output), (5, &starts), (6, &entries)], groups);
    read_back(ctx, &output, 0, cases * g.n_visible()).await
}
