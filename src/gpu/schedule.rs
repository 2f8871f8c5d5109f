//! Host side of `shaders/schedule.wgsl` and of the device-resident training state
//! (`shaders/schedule_state.wgsl`).
//!
//! After each batch one single-workgroup dispatch finishes the weight update's partials (and
//! the squared-error partials) into scalars, computes the gradient cosine and RMS, applies
//! Masters' adaptive rules to the learning rate and momentum in the state buffer (or leaves
//! them for the fixed schedule), and accumulates the epoch figures plus one record per batch
//! in a log. The host reads the state and the log once per epoch ([`read_epoch`]), applies the
//! epoch-end rules (`RateState::after_epoch`, convergence) on the CPU, and writes the rates
//! back ([`set_rates`]) with the accumulators cleared ([`begin_epoch`]).
//!
//! Precision: the cosine and RMS are f32 here (f64 on the CPU): ~1e-6 relative for the
//! shapes of interest. A cosine within that of a rule threshold (±0.3, ±0.5) could take the
//! other branch than the CPU would; the rules themselves are the same f32 operations.

use super::reduce::{pipeline, uniform_of, Step};
use super::{GpuContext, GpuError};
use crate::train::config::{CdConfig, Schedule};
use bytemuck::{Pod, Zeroable};

/// schedule_state.wgsl and schedule.wgsl (whose `schedule_and_gather` also needs gather.wgsl).
/// schedule_state.wgsl: `struct TrainState`, prepended to every kernel that reads the state.
pub(crate) const STATE_SHADER: &str = include_str!("../../shaders/schedule_state.wgsl");
pub(crate) const SHADER: &str = concat!(include_str!("../../shaders/schedule_state.wgsl"), include_str!("../../shaders/schedule.wgsl"));

/// schedule.wgsl's own module as compiled.
pub(crate) fn source() -> String {
    super::shader::assemble(SHADER, &[], false)
}

/// `struct ScheduleParams` of schedule.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
pub struct ScheduleParams {
    pub n_update_partials: u32,
    pub n_error_partials: u32,
    pub n_weights: u32,
    pub log_capacity: u32,
}

/// The training state on the device: 24 words of 4 bytes (96 bytes), exactly the WGSL
/// `TrainState` of `shaders/schedule_state.wgsl` (word offsets in its header).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TrainState {
    /// Word 0: the rate the next batch's updates use.
    pub learning_rate: f32,
    /// Word 1.
    pub momentum: f32,
    /// Word 2 (constant).
    pub weight_penalty: f32,
    /// Word 3 (constant).
    pub sparsity_penalty: f32,
    /// Word 4 (constant).
    pub sparsity_target: f32,
    /// Word 5: 1 = adaptive schedule, 0 = fixed.
    pub adaptive: u32,
    /// Word 6: 0 = the next batch has no previous gradient (no cosine, P unread).
    pub has_previous: u32,
    /// Word 7: batches done this epoch; the next batch-log slot.
    pub batch_index: u32,
    /// Words 8–12: epoch accumulators, zeroed by [`begin_epoch`].
    pub cosine_sum: f32,
    pub cosine_count: u32,
    pub rms_sum: f32,
    pub max_increment: f32,
    pub squared_error: f32,
    /// Words 13–20: the last batch's finished scalars.
    pub last_dot: f32,
    pub last_norm: f32,
    pub last_prev_norm: f32,
    pub last_max_increment: f32,
    pub last_cosine: f32,
    pub last_cosine_valid: u32,
    pub last_gradient_rms: f32,
    pub last_squared_error: f32,
    /// Words 21–23.
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

const _: () = assert!(std::mem::size_of::<TrainState>() == 96);
/// Byte offset of `batch_index`; [`begin_epoch`] zeroes words 7..=12.
const EPOCH_WORDS: (u64, usize) = (7 * 4, 6);

impl TrainState {
    /// The state at the start of training with `config` (the CPU's `RateState::new`, the
    /// penalties, no previous gradient).
    pub fn from_config(config: &CdConfig) -> Self {
        TrainState {
            learning_rate: config.learning_rate,
            momentum: config.initial_momentum,
            weight_penalty: config.weight_penalty,
            sparsity_penalty: config.sparsity_penalty,
            sparsity_target: config.sparsity_target,
            adaptive: (config.schedule == Schedule::Adaptive) as u32,
            ..Default::default()
        }
    }

    /// The last batch's cosine, as the CPU's `UpdateFigures::cosine`.
    pub fn last_cosine(&self) -> Option<f32> {
        (self.last_cosine_valid != 0).then_some(self.last_cosine)
    }
}

/// One batch's record in the batch log (8 words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BatchRecord {
    /// 0 when not valid.
    pub cosine: f32,
    /// 1.0 when the cosine is valid, else 0.0.
    pub cosine_valid: f32,
    pub gradient_rms: f32,
    pub max_increment: f32,
    pub squared_error: f32,
    /// Rates after this batch's adaptation.
    pub learning_rate: f32,
    pub momentum: f32,
    pub _pad: f32,
}

pub const BATCH_RECORD_BYTES: usize = std::mem::size_of::<BatchRecord>();

/// An epoch's figures as `CdTrainer::train_epoch` aggregates them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpochFigures {
    pub batches: usize,
    /// Σ squared reconstruction differences (divide by cases × inputs for the report).
    pub squared_error: f64,
    /// Mean of the valid cosines (0 when none).
    pub gradient_cosine: f64,
    /// Mean over batches of the gradient RMS.
    pub gradient_rms: f64,
    pub max_increment: f32,
    /// Rates at the end of the epoch (before the epoch-end rules).
    pub learning_rate: f32,
    pub momentum: f32,
}

impl EpochFigures {
    /// From the batch log, summed in f64 in batch order like the CPU (preferred).
    pub fn from_log(state: &TrainState, log: &[BatchRecord]) -> Self {
        let valid: Vec<f64> = log.iter().filter(|r| r.cosine_valid != 0.0).map(|r| r.cosine as f64).collect();
        EpochFigures {
            batches: log.len(),
            squared_error: log.iter().map(|r| r.squared_error as f64).sum(),
            gradient_cosine: if valid.is_empty() { 0.0 } else { valid.iter().sum::<f64>() / valid.len() as f64 },
            gradient_rms: log.iter().map(|r| r.gradient_rms as f64).sum::<f64>() / log.len().max(1) as f64,
            max_increment: log.iter().fold(0.0f32, |m, r| m.max(r.max_increment)),
            learning_rate: state.learning_rate,
            momentum: state.momentum,
        }
    }

    /// From the state's f32 accumulators alone (when the log was too short).
    pub fn from_state(state: &TrainState) -> Self {
        let batches = state.batch_index as usize;
        EpochFigures {
            batches,
            squared_error: state.squared_error as f64,
            gradient_cosine: if state.cosine_count > 0 { state.cosine_sum as f64 / state.cosine_count as f64 } else { 0.0 },
            gradient_rms: state.rms_sum as f64 / batches.max(1) as f64,
            max_increment: state.max_increment,
            learning_rate: state.learning_rate,
            momentum: state.momentum,
        }
    }
}

/// A buffer holding `state`, usable as the update kernels' uniform, the schedule kernel's
/// storage, and a copy source/destination.
pub fn create_state_buffer(device: &wgpu::Device, state: &TrainState) -> wgpu::Buffer {
    super::buffers::buffer_with(
        device,
        "train_state",
        bytemuck::bytes_of(state),
        wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
    )
}

/// A batch log for `capacity` batches (8 words each).
pub fn create_batch_log(device: &wgpu::Device, capacity: usize) -> wgpu::Buffer {
    super::reduce::storage_buffer(device, "batch_log", capacity.max(1) * BATCH_RECORD_BYTES / 4)
}

/// Replaces the whole state (queue-ordered: takes effect before the next submission).
pub fn write_state(queue: &wgpu::Queue, state_buffer: &wgpu::Buffer, state: &TrainState) {
    queue.write_buffer(state_buffer, 0, bytemuck::bytes_of(state));
}

/// Zeroes the epoch accumulators and the batch index.
pub fn begin_epoch(queue: &wgpu::Queue, state_buffer: &wgpu::Buffer) {
    queue.write_buffer(state_buffer, EPOCH_WORDS.0, &[0u8; EPOCH_WORDS.1 * 4]);
}

/// Sets the learning rate and momentum (after the host's epoch-end rules).
pub fn set_rates(queue: &wgpu::Queue, state_buffer: &wgpu::Buffer, learning_rate: f32, momentum: f32) {
    queue.write_buffer(state_buffer, 0, bytemuck::cast_slice(&[learning_rate, momentum]));
}

/// The next batch gets no cosine (as after `CdTrainer::reset_momentum`; zero the velocity
/// buffers too, e.g. with `CommandEncoder::clear_buffer`).
pub fn forget_previous(queue: &wgpu::Queue, state_buffer: &wgpu::Buffer) {
    queue.write_buffer(state_buffer, 6 * 4, bytemuck::bytes_of(&0u32));
}

/// Buffers of the schedule step.
pub struct ScheduleBuffers<'a> {
    pub state: &'a wgpu::Buffer,
    /// The weight update's partials and their count (`update::update_partial_count`).
    pub update_partials: &'a wgpu::Buffer,
    pub n_update_partials: u32,
    /// The squared-error partials (`ReduceKernels::sum_sq_diff_partials`) and their count, if
    /// the batch measures a reconstruction error.
    pub error_partials: Option<(&'a wgpu::Buffer, u32)>,
    /// nv · nh (the RMS divisor).
    pub n_weights: usize,
    /// The batch log and its capacity in batches (0 for none: a 1-record buffer still binds).
    pub batch_log: &'a wgpu::Buffer,
    pub log_capacity: u32,
}

/// The compiled schedule pipeline. Build once per device.
pub struct ScheduleKernels {
    schedule: wgpu::ComputePipeline,
    /// Bound when there are no error partials.
    empty: wgpu::Buffer,
}

impl ScheduleKernels {
    pub fn new(device: &wgpu::Device) -> Self {
        let module = super::shader::module(device, "schedule", source(), super::shader::Checks::Bounded);
        ScheduleKernels { schedule: pipeline(device, &module, "schedule"), empty: super::reduce::storage_buffer(device, "no_error_partials", 4) }
    }

    /// The end-of-batch step (one workgroup).
    pub fn step(&self, device: &wgpu::Device, b: &ScheduleBuffers) -> Step {
        let (errors, n_errors) = b.error_partials.unwrap_or((&self.empty, 0));
        let params = uniform_of(device, "schedule_params", &ScheduleParams { n_update_partials: b.n_update_partials, n_error_partials: n_errors, n_weights: b.n_weights as u32, log_capacity: b.log_capacity });
        Step::new(device, "schedule", &self.schedule, params, &[(1, b.state), (2, b.update_partials), (3, errors), (4, b.batch_log)], (1, 1))
    }
}

pub use super::read_ranges;

pub async fn read_state(ctx: &GpuContext, state_buffer: &wgpu::Buffer) -> Result<TrainState, GpuError> {
    let parts = read_ranges(ctx, &[(state_buffer, 0, 96)]).await?;
    Ok(bytemuck::pod_read_unaligned(&parts[0]))
}

/// The state and the first `batches` log records (capped at the log's size), plus any
/// `extra` ranges (e.g. the max |weight| scalar), in one read.
pub async fn read_epoch(ctx: &GpuContext, state_buffer: &wgpu::Buffer, batch_log: &wgpu::Buffer, batches: usize, extra: &[(&wgpu::Buffer, u64, u64)]) -> Result<(TrainState, Vec<BatchRecord>, Vec<Vec<u8>>), GpuError> {
    let records = batches.min(batch_log.size() as usize / BATCH_RECORD_BYTES);
    let mut ranges = vec![(state_buffer, 0, 96), (batch_log, 0, (records * BATCH_RECORD_BYTES) as u64)];
    ranges.extend_from_slice(extra);
    let mut parts = read_ranges(ctx, &ranges).await?;
    let rest = parts.split_off(2);
    let state = bytemuck::pod_read_unaligned(&parts[0]);
    let log = parts[1].chunks_exact(BATCH_RECORD_BYTES).map(bytemuck::pod_read_unaligned).collect();
    Ok((state, log, rest))
}
