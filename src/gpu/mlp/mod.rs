//! Toman's adaptive-step training of an all-sigmoid MLP on the device (issue 21), robust
//! training's best weights and rollback included: CPU reference
//! [`AdaptiveStep`](crate::supervised::adaptive_step::AdaptiveStep) in
//! [`train_full_batch`](crate::supervised::full_batch::train_full_batch); kernels
//! `shaders/mlp_adaptive.wgsl` (its header has the decision and the step).
//!
//! The cases, the weights, the best weights, every rate and delta memory, the activations and
//! the gradient stay on the device. Each layer's weights are followed by its biases, so
//! `[W; b]` is one `(n_in + 1) × n_out` block and its gradient one product `[a 1]ᵀ·δ / N` of
//! the layer's inputs with a ones column (stored beside them) and its deltas. An epoch, when
//! every layer after the first is at most [`NARROW`] units wide (Toman's 784-25-15-10):
//!
//! | step | how | dispatches |
//! | --- | --- | --- |
//! | `a_1 = σ(x·W_1 + b_1)` | GEMM (Small tiles), bias + sigmoid epilogue | 1 |
//! | the narrow layers' forward, `δ_L = (o − t)·o(1 − o)`, partial Σ(o − t)², every `δ_k`, the narrow layers' gradient partials per workgroup | `narrow` | 1 |
//! | `∇[W_1; b_1] = [x 1]ᵀ·δ_1 / N` | GEMM, split k (+ its sum) | 2 |
//! | error RMS/2, robust training's decision, the epoch's scalars appended to the history | `decide` | 1 |
//! | the rule: rates, momentum, step, or the rollback (the narrow layers' gradient: Σ of the partials) | `step` | 1 |
//!
//! Toman's net: 6 dispatches an epoch (10 with `DEEPBELIEF_MLP_KERNELS=gemm`: the narrow
//! layers' gradients as split-k products; 22 before the narrow kernel and the folded bias
//! gradients). The A/B knobs: `knobs.rs`. Wider nets take the general path: per layer a
//! forward GEMM, `output_delta`,
//! per layer the gradient product, the bias gradient (a product with a ones vector) and the
//! backward product with `hidden_delta`.
//!
//! [`DeviceMlp::run_epochs`] records several epochs into one compute pass of one submission;
//! `decide` writes each epoch's scalars (error, Σ(o − t)², decision: 32 bytes) into a history
//! row, copied out once at the end; nothing of the weights' size moves. An epoch whose error
//! reached the target (or, without robust training, is not finite) changes nothing, so the
//! epochs recorded after it repeat it and the host drops them. Weights come back only when
//! asked ([`DeviceMlp::weights`], checkpoints and the end). [`DeviceMlp::profile`] times each
//! dispatch (`deepbelief mlp --backend gpu --profile`).

use super::buffers::{self, read_back};
use super::gemm::{GemmCall, GemmKernels};
use super::reduce::split;
use super::shader::{self, buffer_entry};
use super::{map_staging, GpuContext, GpuError};
use crate::supervised::full_batch::StepNote;
use crate::supervised::{Network, OutputKind, StepRuleSettings};

mod build;
mod knobs;
mod profile;
use build::{NarrowBlocks, Shared};
pub use profile::{MlpDispatchTime, MlpProfile};

const SHADER: &str = include_str!("../../../shaders/mlp_adaptive.wgsl");

/// Every layer's block (its weights, then its biases) starts on a multiple of this many f32
/// (256 bytes).
const BLOCK_ALIGN: usize = 64;
/// Elements per workgroup of the elementwise passes, while that makes at most 4096 groups.
const SPAN: usize = 2048;
/// Weights per workgroup of `step` (one an invocation: the folded gradient's elements each
/// sum a partial per `narrow` workgroup).
const STEP_SPAN: usize = 256;
/// Scalars per epoch read back: mlp_adaptive.wgsl's slots ERROR … MEASURED and one spare.
const SCALARS: usize = 8;
/// Epochs one submission records at most.
pub const MAX_EPOCHS_PER_SUBMISSION: usize = 64;

const ERROR: usize = 0;
const SUM: usize = 1;
const DECISION: usize = 3;
const BEST: usize = 4;
const MEASURED: usize = 6;
const COUNTER: usize = 7;
/// The widest layer (inputs or outputs) after the first that the `narrow` kernel takes
/// (mlp_adaptive.wgsl's NARROW: its private arrays).
pub const NARROW: usize = 64;
const NARROW_WG: usize = 64;
const HOLD: f32 = 0.0;
const ROLLBACK: f32 = 3.0;

/// `struct DeltaParams` of mlp_adaptive.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DeltaParams {
    pub n: u32,
    pub span: u32,
    pub clip: u32,
    pub _pad: u32,
}

/// `struct RuleParams` of mlp_adaptive.wgsl.
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RuleParams {
    pub n: u32,
    pub span: u32,
    pub groups: u32,
    pub robust: u32,
    pub count: f32,
    pub target_error: f32,
    pub up: f32,
    pub down: f32,
    pub max_step: f32,
    pub momentum: f32,
    pub growth: f32,
    pub robust_factor: f32,
    pub row: u32,
    pub fold_at: u32,
    pub fold_len: u32,
    pub fold_scale: f32,
}

/// `struct NarrowParams` of mlp_adaptive.wgsl.
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NarrowParams {
    pub rows: u32,
    pub layers: u32,
    pub clip: u32,
    pub stride: u32,
    pub row: u32,
    pub fold_from: u32,
    pub fold: u32,
    pub _pad: u32,
}

/// `struct NarrowLayer` of mlp_adaptive.wgsl (a storage array of them): offsets in elements.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct NarrowLayer {
    n_in: u32,
    n_out: u32,
    w: u32,
    b: u32,
    act: u32,
    act_ld: u32,
    delta: u32,
    delta_ld: u32,
}

/// The kernel module as compiled.
pub(crate) fn source() -> String {
    shader::assemble(SHADER, &[], false)
}

/// The pipelines of mlp_adaptive.wgsl and the GEMM kernels, once per device.
pub struct MlpKernels {
    gemm: GemmKernels,
    delta_layout: wgpu::BindGroupLayout,
    rule_layout: wgpu::BindGroupLayout,
    narrow_layout: wgpu::BindGroupLayout,
    narrow: wgpu::ComputePipeline,
    output_delta: wgpu::ComputePipeline,
    hidden_delta: wgpu::ComputePipeline,
    decide: wgpu::ComputePipeline,
    measure: wgpu::ComputePipeline,
    step: wgpu::ComputePipeline,
}

impl MlpKernels {
    pub fn new(ctx: &GpuContext) -> MlpKernels {
        use wgpu::BufferBindingType::{Storage, Uniform};
        let device = &ctx.device;
        let (read, write) = (Storage { read_only: true }, Storage { read_only: false });
        let delta_entries = [buffer_entry(0, Uniform, false), buffer_entry(1, read, false), buffer_entry(2, read, false), buffer_entry(3, write, false), buffer_entry(4, write, false)];
        let rule_entries = [buffer_entry(5, Uniform, false), buffer_entry(6, read, false), buffer_entry(7, write, false), buffer_entry(8, write, false), buffer_entry(9, write, false), buffer_entry(10, write, false), buffer_entry(11, read, false), buffer_entry(12, write, false)];
        let narrow_entries = [buffer_entry(13, Uniform, false), buffer_entry(14, read, false), buffer_entry(15, read, false), buffer_entry(16, read, false), buffer_entry(17, write, false), buffer_entry(18, write, false), buffer_entry(19, write, false)];
        let delta_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("mlp_delta"), entries: &delta_entries });
        let rule_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("mlp_rule"), entries: &rule_entries });
        let narrow_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("mlp_narrow"), entries: &narrow_entries });
        let module = shader::module(device, "mlp_adaptive", source(), shader::Checks::Bounded);
        let pipeline = |layout: &wgpu::BindGroupLayout, entry_point: &str| {
            let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some(entry_point), bind_group_layouts: &[Some(layout)], immediate_size: 0 });
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry_point),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(entry_point),
                compilation_options: wgpu::PipelineCompilationOptions { constants: &[], zero_initialize_workgroup_memory: false },
                cache: None,
            })
        };
        MlpKernels {
            output_delta: pipeline(&delta_layout, "output_delta"),
            hidden_delta: pipeline(&delta_layout, "hidden_delta"),
            decide: pipeline(&rule_layout, "decide"),
            measure: pipeline(&rule_layout, "measure"),
            step: pipeline(&rule_layout, "step"),
            narrow: pipeline(&narrow_layout, "narrow"),
            narrow_layout,
            gemm: GemmKernels::new(ctx),
            delta_layout,
            rule_layout,
        }
    }
}

/// Where each layer's blocks lie in the padded device vector of weights (and of the gradient,
/// the best weights, the memories).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MlpLayout {
    /// `(n_in, n_out, weights offset, bias offset)` per layer; the biases follow the weights
    /// (bias offset = weights offset + n_in · n_out).
    pub layers: Vec<(usize, usize, usize, usize)>,
    /// Elements of the padded vector.
    pub len: usize,
}

impl MlpLayout {
    pub fn new(net: &Network) -> MlpLayout {
        let mut at = 0;
        let layers = net
            .layers
            .iter()
            .map(|l| {
                let w = at;
                let b = w + l.n_in * l.n_out;
                at = (b + l.n_out).next_multiple_of(BLOCK_ALIGN);
                (l.n_in, l.n_out, w, b)
            })
            .collect();
        MlpLayout { layers, len: at }
    }

    /// The flat vector (`Network::to_params` order) padded into the device layout.
    pub fn pad(&self, flat: &[f32]) -> Vec<f32> {
        let mut padded = vec![0.0; self.len];
        let mut at = 0;
        for &(n_in, n_out, w, b) in &self.layers {
            padded[w..w + n_in * n_out].copy_from_slice(&flat[at..at + n_in * n_out]);
            at += n_in * n_out;
            padded[b..b + n_out].copy_from_slice(&flat[at..at + n_out]);
            at += n_out;
        }
        padded
    }

    /// The device vector back in `Network::to_params` order.
    pub fn unpad(&self, padded: &[f32]) -> Vec<f32> {
        let mut flat = Vec::with_capacity(padded.len());
        for &(n_in, n_out, w, b) in &self.layers {
            flat.extend_from_slice(&padded[w..w + n_in * n_out]);
            flat.extend_from_slice(&padded[b..b + n_out]);
        }
        flat
    }
}

/// One epoch as the device saw it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceEpoch {
    /// RMS/2 at the epoch's start (N·K for a non-finite one with robust training; NaN without).
    pub error: f64,
    /// The criterion `Σ (o − t)² / (2N)`.
    pub criterion: f64,
    pub note: StepNote,
    /// Nothing changed: the target was reached, or the error was not finite without robust
    /// training. The host stops here.
    pub held: bool,
}

enum Dispatch {
    Kernel { pipeline: wgpu::ComputePipeline, bind_group: wgpu::BindGroup, groups: u32 },
    Product(GemmCall),
}

impl Dispatch {
    /// Dispatches it records: a split-k product also records its summing pass.
    fn count(&self) -> usize {
        match self {
            Dispatch::Kernel { .. } => 1,
            Dispatch::Product(call) => 1 + usize::from(call.splits > 1),
        }
    }
}

/// A step of an epoch and what the profile calls it.
struct Step {
    label: String,
    dispatch: Dispatch,
}

/// Split k for a gradient product `m × n` with k = `rows`: enough splits for a wave of
/// workgroups ([`gemm::WAVE`](super::gemm::WAVE)), each at least 128 deep, their partial sums
/// within a storage binding.
fn gradient_splits(ctx: &GpuContext, m: usize, n: usize, rows: usize, forced: Option<u32>) -> u32 {
    let tiles = super::gemm::Tiling::auto(m as u32, n as u32).tiles(m as u32, n as u32).max(1);
    let mut splits = forced.unwrap_or_else(|| super::gemm::WAVE.div_ceil(tiles).min((rows / 128) as u32)).clamp(1, rows.max(1) as u32);
    let binding = u64::from(ctx.device.limits().max_storage_buffer_binding_size);
    while splits > 1 && u64::from(splits) * (m * n * 4) as u64 > binding {
        splits -= 1;
    }
    splits
}

/// An all-sigmoid MLP, its cases and Toman's rule, resident on one device.
pub struct DeviceMlp {
    ctx: GpuContext,
    layout: MlpLayout,
    rows: usize,
    n_outputs: usize,
    weights: wgpu::Buffer,
    best: wgpu::Buffer,
    scalars: wgpu::Buffer,
    staging: wgpu::Buffer,
    /// Each epoch's scalars, appended by `decide`.
    history: wgpu::Buffer,
    epoch: Vec<Step>,
    measure: Vec<Step>,
    /// Buffers the dispatches bind: kept alive with them.
    _kept: Vec<wgpu::Buffer>,
    robust: bool,
}

impl DeviceMlp {
    /// Uploads the cases (`rows × n_inputs` inputs, `rows × n_outputs` targets) and `net`'s
    /// weights, and starts the rule: every rate `initial_rate`, memories zero, no best weights.
    /// Only logistic outputs (Toman's nets) and the rule's settings as `rules` validates them.
    pub fn new(ctx: &GpuContext, kernels: &MlpKernels, net: &Network, inputs: &[f32], targets: &[f32], rules: &StepRuleSettings) -> Result<DeviceMlp, GpuError> {
        if let Some(failure) = ctx.failure() {
            return Err(GpuError(failure));
        }
        rules.validate().map_err(|e| GpuError(format!("MLP on the device: {e}")))?;
        if net.output != OutputKind::Logistic {
            return Err(GpuError(format!("MLP on the device: logistic outputs only (Toman's nets), not {:?}", net.output)));
        }
        let (n_in, n_out) = (net.n_inputs(), net.n_outputs());
        let rows = inputs.len() / n_in;
        if rows == 0 || inputs.len() != rows * n_in || targets.len() != rows * n_out {
            return Err(GpuError(format!("MLP on the device: {} inputs and {} targets do not make whole cases of {n_in} inputs and {n_out} outputs", inputs.len(), targets.len())));
        }
        let layout = MlpLayout::new(net);
        let limits = ctx.device.limits();
        let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
        let narrow = net.layers.iter().skip(1).all(|l| l.n_in <= NARROW && l.n_out <= NARROW);
        let widest = net.layers.iter().map(|l| l.n_out).max().unwrap_or(1);
        let blocks = if narrow { NarrowBlocks::new(net, rows) } else { NarrowBlocks::default() };
        for (what, len) in [("the inputs (cases × inputs)", rows * (n_in + 4)), ("an activation matrix (cases × units)", rows * widest), ("the activations", blocks.acts), ("the rule's memories", 4 * layout.len)] {
            let bytes = 4 * len as u64;
            if len >= u32::MAX as usize / 4 || bytes > binding {
                return Err(GpuError(format!("MLP on the device: {what} take {bytes} bytes, over this device's storage binding limit of {binding} bytes")));
            }
        }
        let device = &ctx.device;
        let target_buffer = buffers::upload(ctx, "mlp_targets", targets);
        let weights = buffers::upload(ctx, "mlp_weights", &layout.pad(&net.to_params()));
        let best = buffers::zeros_f32(ctx, "mlp_best", layout.len);
        let memory: Vec<[f32; 4]> = vec![[rules.initial_rate as f32, 0.0, 0.0, 0.0]; layout.len];
        let memory = buffers::upload(ctx, "mlp_memory", &memory);
        let gradient = buffers::zeros_f32(ctx, "mlp_gradient", layout.len);
        let mut initial = [0.0f32; SCALARS];
        initial[BEST] = f32::MAX;
        let scalars = buffers::upload(ctx, "mlp_scalars", &initial);
        let history = buffers::zeros_f32(ctx, "mlp_history", SCALARS * MAX_EPOCHS_PER_SUBMISSION);
        let staging = device.create_buffer(&wgpu::BufferDescriptor { label: Some("mlp_read"), size: (4 * SCALARS * MAX_EPOCHS_PER_SUBMISSION) as u64, usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false });
        let knobs = knobs::Knobs::from_env()?;
        let shared = Shared { ctx, kernels, layout: &layout, rows, clip: u32::from(rules.fann_derivative_clip), targets: &target_buffer, weights: &weights, gradient: &gradient, knobs };
        let mut kept = vec![target_buffer.clone(), memory.clone(), gradient.clone()];
        let parts = if narrow { shared.narrow(net, inputs, &blocks, &mut kept)? } else { shared.general(net, inputs, &mut kept)? };

        let (rule_groups, rule_span) = split(layout.len, STEP_SPAN);
        let rule_params = RuleParams {
            n: layout.len as u32,
            span: rule_span,
            groups: parts.groups,
            robust: u32::from(rules.robust),
            count: (rows * n_out) as f32,
            target_error: rules.target_error as f32,
            up: rules.up as f32,
            down: rules.down as f32,
            max_step: rules.max_step as f32,
            momentum: rules.momentum as f32,
            growth: rules.max_error_growth as f32,
            robust_factor: rules.robust_factor as f32,
            row: parts.row,
            fold_at: parts.fold.start as u32,
            fold_len: parts.fold.len() as u32,
            fold_scale: 1.0 / rows as f32,
        };
        let rule_uniform = buffers::uniform_bytes(ctx, "mlp_rule_params", bytemuck::bytes_of(&rule_params));
        let rule_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("mlp_rule"),
            layout: &kernels.rule_layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 5, resource: rule_uniform.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 6, resource: parts.partials.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 7, resource: scalars.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 8, resource: weights.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 9, resource: best.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 10, resource: memory.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 11, resource: gradient.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 12, resource: history.as_entire_binding() },
            ],
        });
        let rule_kernel = |label: &str, pipeline: &wgpu::ComputePipeline, groups: u32| Step { label: label.into(), dispatch: Dispatch::Kernel { pipeline: pipeline.clone(), bind_group: rule_group.clone(), groups } };
        let mut epoch = parts.epoch;
        epoch.push(rule_kernel("decide", &kernels.decide, 1));
        epoch.push(rule_kernel("step", &kernels.step, rule_groups));
        let mut measure = parts.measure;
        measure.push(rule_kernel("measure", &kernels.measure, 1));
        kept.push(rule_uniform);
        kept.push(parts.partials);
        Ok(DeviceMlp { ctx: ctx.clone(), layout, rows, n_outputs: n_out, weights, best, scalars, staging, history, epoch, measure, _kept: kept, robust: rules.robust })
    }

    pub fn layout(&self) -> &MlpLayout {
        &self.layout
    }

    /// Dispatches one epoch records (a split-k product counts its summing pass).
    pub fn dispatches_per_epoch(&self) -> usize {
        self.epoch.iter().map(|s| s.dispatch.count()).sum()
    }

    fn record(pass: &mut wgpu::ComputePass<'_>, steps: &[Step]) {
        for step in steps {
            Self::record_one(pass, &step.dispatch);
        }
    }

    fn record_one(pass: &mut wgpu::ComputePass<'_>, dispatch: &Dispatch) {
        match dispatch {
            Dispatch::Kernel { pipeline, bind_group, groups } => {
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, bind_group, &[]);
                pass.dispatch_workgroups(*groups, 1, 1);
            }
            Dispatch::Product(call) => call.dispatch(pass, 0),
        }
    }

    /// Zeroes the history's row counter: the next `decide` writes row 0.
    fn restart_history(&self) {
        self.ctx.queue.write_buffer(&self.scalars, (4 * COUNTER) as u64, bytemuck::bytes_of(&0.0f32));
    }

    /// Records `steps` `count` times into one compute pass, then copies `count` rows of the
    /// history (or, for `measure`, the scalars) into the read-back buffer and reads them:
    /// `count × 8` values.
    async fn submit(&self, steps: &[Step], count: usize, from_history: bool) -> Result<Vec<f32>, GpuError> {
        if let Some(failure) = self.ctx.failure() {
            return Err(GpuError(failure));
        }
        self.restart_history();
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("mlp_epochs") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("mlp_epochs"), timestamp_writes: None });
            for _ in 0..count {
                Self::record(&mut pass, steps);
            }
        }
        let bytes = (4 * SCALARS * count) as u64;
        encoder.copy_buffer_to_buffer(if from_history { &self.history } else { &self.scalars }, 0, &self.staging, 0, bytes);
        self.ctx.queue.submit([encoder.finish()]);
        let view = map_staging(&self.ctx, &self.staging).await?;
        let values: Vec<f32> = bytemuck::pod_collect_to_vec(&view[..count * SCALARS * 4]);
        drop(view);
        self.staging.unmap();
        Ok(values)
    }

    /// Runs `count` epochs (at most [`MAX_EPOCHS_PER_SUBMISSION`]) in one submission and
    /// returns them up to and including the first that held (target reached, or a non-finite
    /// error without robust training).
    pub async fn run_epochs(&mut self, count: usize) -> Result<Vec<DeviceEpoch>, GpuError> {
        let count = count.clamp(1, MAX_EPOCHS_PER_SUBMISSION);
        let values = self.submit(&self.epoch, count, true).await?;
        Ok(self.epochs_from(&values))
    }

    /// Epoch records from history rows, up to and including the first that held.
    fn epochs_from(&self, values: &[f32]) -> Vec<DeviceEpoch> {
        let denominator = 2.0 * self.rows as f64;
        let mut epochs = Vec::with_capacity(values.len() / SCALARS);
        for s in values.chunks_exact(SCALARS) {
            let held = s[DECISION] == HOLD;
            let note = if s[DECISION] == ROLLBACK { StepNote::RolledBack } else { StepNote::Stepped };
            let criterion = f64::from(s[SUM]) / denominator;
            epochs.push(DeviceEpoch { error: f64::from(s[ERROR]), criterion, note, held });
            if held {
                break;
            }
        }
        epochs
    }

    /// RMS/2 of the current weights (one forward pass; reads 32 bytes).
    pub async fn measure(&mut self) -> Result<f64, GpuError> {
        let values = self.submit(&self.measure, 1, false).await?;
        Ok(f64::from(values[MEASURED]))
    }

    /// The current weights, in `Network::to_params` order.
    pub async fn weights(&self) -> Result<Vec<f32>, GpuError> {
        Ok(self.layout.unpad(&read_back(&self.ctx, &self.weights, 0, self.layout.len).await?))
    }

    /// The lowest error robust training has seen and its weights (`None` before the first
    /// epoch or without robust training).
    pub async fn best(&self) -> Result<Option<(f64, Vec<f32>)>, GpuError> {
        if !self.robust {
            return Ok(None);
        }
        let best_error = read_back::<f32>(&self.ctx, &self.scalars, BEST as u64, 1).await?[0];
        if best_error == f32::MAX {
            return Ok(None);
        }
        let weights = self.layout.unpad(&read_back(&self.ctx, &self.best, 0, self.layout.len).await?);
        Ok(Some((f64::from(best_error), weights)))
    }

    /// The end of a run, as the CPU's: the best weights if they beat the last ones (or the last
    /// ones are not finite), else the last; with their error.
    pub async fn finish(&mut self) -> Result<(f64, Vec<f32>), GpuError> {
        let last = self.measure().await?;
        if let Some((best_error, best)) = self.best().await? {
            if last.is_nan() || last > best_error {
                return Ok((best_error, best));
            }
        }
        Ok((last, self.weights().await?))
    }

    /// Cases and outputs per case.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.n_outputs)
    }
}
