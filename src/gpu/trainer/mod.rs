//! Device-resident CD-k / PCD training of one RBM: the GPU counterpart of
//! [`CdTrainer`](crate::train::CdTrainer), with the same semantics and random streams.
//!
//! The data go to the device once (pixels as u8, 4 per u32; other data as f32). Each epoch the
//! host shuffles the case order with the same ChaCha stream as `CdTrainer` (`trial_rng(seed, 0)`,
//! a Fisher–Yates shuffle of the previous order), uploads it, writes one [`StepTable`] slot per
//! batch (RNG step `(step << 10)`, row shift `batch · batch_size`), records every batch into
//! command buffers (at most [`BATCHES_PER_SUBMIT`] batches per submission, which bounds a
//! submission's run time for browser watchdogs, and fewer at the start: [`FIRST_SUBMIT`]), and reads back only the epoch scalars: the
//! training state, the batch log and max |W| ([`schedule::read_epoch`]). The epoch-end rules
//! (`Convergence`, `RateState::after_epoch`, `ChainLength`) run on the host, as on the CPU.
//!
//! One batch (rows cases; CD-k with k fixed for the epoch):
//!
//! 1. gather: `v0 ← data[order[start..start + rows]]` as f32 (for the bias step, the squared
//!    error and the gradient), run by the previous batch's last dispatch (only an epoch's first
//!    batch gathers on its own);
//! 2. `h0 = σ(v0·W + c)` through the GEMM, fused with the hidden sample `hs` (stream
//!    `HiddenSample`, chain step 0);
//! 3. for each chain step s: `vk = σ(hs·Wᵀ + b)` (+ sample with `VisibleSample`, chain step s,
//!    when `mean_field_visible` is off); at s = 0 the squared-error partials of `v0 − vk` (in
//!    the visible bias step when k = 1); `hk = σ(vk·W + c)`, sampled into `hs` with
//!    `ChainHidden`, chain step s + 1, unless last;
//! 4. visible and hidden bias steps (column means, sparsity estimate; the visible one also sums
//!    the squared error), in one dispatch where the device offers the 13 storage buffers that
//!    binds and the visible step sums the error;
//! 5. `G = v0ᵀh0 / rows − vkᵀhk / chains`: one paired GEMM of depth rows + chains into the
//!    gradient of this batch's parity, with the weight update as its epilogue (gradient /
//!    previous-gradient ping-pong) where the device offers the 11 storage buffers that binds,
//!    else the product then the update's own pass (`update.wgsl`) after the bias steps;
//! 6. the schedule step with the next batch's gather.
//!
//! Samples use `RngStream::new(seed, (step << 10) | chain_step, purpose)` as
//! `CdTrainer::stream`, so GPU and CPU draw the same uniforms; samples differ only where a
//! probability lies within rounding of its uniform (near-ties).
//!
//! Measured (release build, `deepbelief bench --backend gpu --json`, NVIDIA H100 80GB HBM3 through
//! Vulkan, 2026-11-22): 784 × 500 CD-1, batches of 100, 60,000 cases (the 10k MNIST file tiled
//! 6×): 0.040 s per epoch, 64 µs per batch in 6 entries (was 0.077 s, 119 µs in 11; PyTorch 2.11
//! fp32, TF32 off, the same loop in `bench/torch_rbm.py`: 0.20–0.31 s, launch-bound). Raina et
//! al. (2009) Table 2 shapes, batches of 192: 576×1024 0.54 s per million examples, 1024×4096
//! 2.2, 2304×16000 12.6, 4096×11008 14.4 (was 23.6; PyTorch: 16.3). The gains, largest first:
//! [`shader::Checks`] (wgpu's loop counters and index clamps left out of the kernels' code),
//! the weight update fused into the gradient product, whole-vec4 epilogue loads and stores
//! (docs/GPU_TUNING.md), one dispatch for both bias steps, vec4 loads and 256-workgroup split k
//! for small products, and a short first submission.
//! Parity on lavapipe (tests/gpu_trainer.rs): max |Δw| ≈ 3e-7 of max |w| after 2 epochs.
//!
//! Also as on the CPU: persistent CD (the chains live in a device buffer that the last chain
//! step overwrites), Gaussian visible units (linear visible means plus Box–Muller noise from the
//! same stream), `sample_inputs` (the gathered batch is Bernoulli-sampled with `InputSample`),
//! and the divergence rollback (device snapshot at the epoch's start, restored with momentum
//! reset). The full state moves between backends through [`CdCheckpoint`](crate::train::CdCheckpoint)
//! ([`GpuCdTrainer::checkpoint`], [`GpuCdTrainer::from_cpu`]), so a lost device costs at most the
//! epochs since the last checkpoint.

mod monitor;
mod plan;
mod profile;
mod state;

pub use profile::{BatchProfile, DispatchTime};

use super::buffers::{self, StepSlot, StepTable};
use super::gemm::{fused_update_partials, GemmKernels};
use super::reduce::{partial_count, Dispatch, ReduceKernels, Step, Target};
use super::sample::SampleKernels;
use super::schedule::{self, EpochFigures, TrainState};
use super::shader;
use super::update::{update_partial_count, UpdateKernels};
use super::{GpuContext, GpuError};
use crate::clock::now_seconds;
use crate::data::{CaseValues, Dataset};
use crate::model::{Rbm, VisibleUnits};
use crate::train::config::CdConfig;
use crate::train::contrastive_divergence::EpochReport;
use crate::train::init::trial_rng;
use crate::train::schedule::{close_epoch, ChainLength, Convergence, RateState, StopReason};
use crate::train::{CdTrainer, TrainError};
use plan::{Plan, PlanShape};
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// Batches recorded per submission.
pub const BATCHES_PER_SUBMIT: usize = 64;

/// Batches in an epoch's first submission. The device idles until it arrives, so it is short,
/// and the next ones double up to [`BATCHES_PER_SUBMIT`], so each is recorded while the device
/// runs the one before. (H100, 784 × 500 batches of 100: recording takes about 28 µs a batch,
/// the device 85; a first submission of 64 kept the device waiting 1–2 ms per epoch, and one of
/// 4 followed by 64 starved it while the 64 were recorded.)
const FIRST_SUBMIT: usize = 4;

/// `(first, end)` batch ranges of an epoch's submissions.
fn submissions(batches: usize) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let (mut first, mut size) = (0, FIRST_SUBMIT);
    while first < batches {
        let end = (first + size).min(batches);
        ranges.push((first, end));
        first = end;
        size = (2 * size).min(BATCHES_PER_SUBMIT);
    }
    ranges
}

/// `shaders/gather.wgsl`; common.wgsl's `byte_to_unit` converts pixels as the GEMM does.
const GATHER_SHADER: &str = include_str!("../../../shaders/gather.wgsl");

const SCHEDULE_GATHER_SHADER: &str = include_str!("../../../shaders/schedule_gather.wgsl");

/// The gather module and the schedule-and-gather module as compiled.
pub(crate) fn gather_sources() -> [(&'static str, String); 2] {
    [("gather", shader::assemble(GATHER_SHADER, &[], false)), ("schedule_and_gather", shader::assemble(&format!("{}\n{GATHER_SHADER}\n{SCHEDULE_GATHER_SHADER}", schedule::SHADER), &[], false))]
}

/// `struct GatherParams` of gather.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GatherParams {
    pub rows: u32,
    pub width: u32,
    pub is_u8: u32,
    pub n_cases: u32,
}

/// Checks that the device can hold this training run: every buffer within the adapter's
/// storage-binding and buffer-size limits. The message names the buffer and both sizes, so the
/// caller can fall back to the CPU with a useful notice.
pub fn check_fits(limits: &wgpu::Limits, config: &CdConfig, n_cases: usize, n_visible: usize, n_hidden: usize, data_u8: bool) -> Result<(), GpuError> {
    let rows = config.cases_per_batch(n_cases).max(if config.persistent { config.n_persistent_chains } else { 0 });
    let data_bytes = if data_u8 { n_cases * n_visible } else { 4 * n_cases * n_visible };
    let largest = [("the training data", data_bytes), ("the weights", 4 * n_visible * n_hidden), ("a batch of hidden units", 4 * rows * n_hidden), ("a batch of visible units", 4 * rows * n_visible)];
    let limit = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size) as usize;
    for (what, bytes) in largest {
        if bytes > limit {
            return Err(GpuError(format!("{what} need {bytes} bytes, more than this adapter binds in one buffer ({limit} bytes)")));
        }
    }
    Ok(())
}

struct DeviceBuffers {
    data: wgpu::Buffer,
    data_u8: bool,
    order: wgpu::Buffer,
    /// With `sample_inputs`: the gathered batch before its Bernoulli sample.
    v0_probabilities: Option<wgpu::Buffer>,
    v0: wgpu::Buffer,
    h0: wgpu::Buffer,
    hs: wgpu::Buffer,
    vk: wgpu::Buffer,
    vks: wgpu::Buffer,
    hk: wgpu::Buffer,
    /// PCD: the chains' visible states, carried from batch to batch.
    persistent: Option<wgpu::Buffer>,
    /// PCD: the batch's mean-field reconstruction (for the reported error).
    reconstruction: Option<wgpu::Buffer>,
    weights: wgpu::Buffer,
    velocity: wgpu::Buffer,
    gradients: [wgpu::Buffer; 2],
    visible_bias: wgpu::Buffer,
    hidden_bias: wgpu::Buffer,
    visible_velocity: wgpu::Buffer,
    hidden_velocity: wgpu::Buffer,
    smoothed: wgpu::Buffer,
    mean_input: wgpu::Buffer,
    sparsity_derivative: wgpu::Buffer,
    state: wgpu::Buffer,
    partials: wgpu::Buffer,
    error_partials: wgpu::Buffer,
    log: wgpu::Buffer,
    max_partials: wgpu::Buffer,
    max_out: wgpu::Buffer,
}

struct Kernels {
    gemm: GemmKernels,
    update: UpdateKernels,
    reduce: ReduceKernels,
    sample: SampleKernels,
    gather_layout: wgpu::BindGroupLayout,
    gather: wgpu::ComputePipeline,
    /// schedule.wgsl's `schedule_and_gather`: a batch's schedule step and the next batch's gather.
    schedule_gather_layout: wgpu::BindGroupLayout,
    schedule_gather: wgpu::ComputePipeline,
}

/// CD-k or PCD training of one RBM on the device. See the module docs.
pub struct GpuCdTrainer {
    pub config: CdConfig,
    ctx: GpuContext,
    kernels: Kernels,
    b: DeviceBuffers,
    /// Device copies of the model at the start of the epoch, restored on divergence.
    snapshot: state::Snapshot,
    table: StepTable,
    /// (k, full-batch plan, tail plan when the last batch is shorter).
    plans: Option<(usize, Plan, Option<Plan>)>,
    max_steps: Vec<Step>,
    visible_units: VisibleUnits,
    n_visible: usize,
    n_hidden: usize,
    n_cases: usize,
    batch_size: usize,
    chains: Option<usize>,
    batches: usize,
    order: Vec<usize>,
    shuffle_rng: ChaCha8Rng,
    pub rates: RateState,
    chain_length: ChainLength,
    convergence: Convergence,
    /// Epochs completed.
    pub epoch: usize,
    /// Batches completed: the counter of the sampling streams.
    step: u64,
    pub stopped: Option<StopReason>,
    init_trial_errors: Vec<f64>,
    init_best_trial: usize,
    /// The weight update runs as the gradient product's epilogue (see [`Self::set_fused_update`]).
    fused_update: bool,
    /// The per-epoch monitor, once [`Self::set_monitor`] turned it on.
    monitor: Option<crate::gpu::epoch_monitor::MonitorPlan>,
}

impl GpuCdTrainer {
    /// Takes over a CPU trainer between epochs (usually freshly built, so its RBM is the one
    /// its random trials chose), with its whole state, and uploads `data` once.
    pub fn from_cpu(ctx: GpuContext, cpu: &CdTrainer, data: &Dataset) -> Result<Self, GpuError> {
        let checkpoint = cpu.checkpoint();
        let mut trainer = Self::new(ctx, cpu.config.clone(), &checkpoint.rbm, data)?;
        trainer.restore(&checkpoint);
        Ok(trainer)
    }

    /// A trainer at epoch 0 for `config`, starting from `rbm` (as `CdTrainer` after its
    /// initialisation), with `data` uploaded once.
    pub fn new(ctx: GpuContext, config: CdConfig, rbm: &Rbm, data: &Dataset) -> Result<Self, GpuError> {
        config.validate(data.n_cases).map_err(|e| GpuError(format!("invalid setting {e}")))?;
        if rbm.visible_units != config.visible_units {
            return Err(GpuError(format!("the model has {:?} visible units but the settings ask for {:?}", rbm.visible_units, config.visible_units)));
        }
        if data.n_inputs != rbm.n_visible || data.n_cases == 0 {
            return Err(GpuError(format!("{}: {} cases of {} inputs for a model with {} visible units", data.name, data.n_cases, data.n_inputs, rbm.n_visible)));
        }
        let data_u8 = matches!(data.values, CaseValues::Bytes(_));
        check_fits(&ctx.device.limits(), &config, data.n_cases, rbm.n_visible, rbm.n_hidden, data_u8)?;
        let (nv, nh, n_cases) = (rbm.n_visible, rbm.n_hidden, data.n_cases);
        let batch_size = config.cases_per_batch(n_cases);
        let batches = n_cases.div_ceil(batch_size);
        let chains = config.persistent.then_some(config.n_persistent_chains);
        let chain_rows = chains.unwrap_or(batch_size);
        let device = &ctx.device;

        let data_buffer = match &data.values {
            CaseValues::Bytes(bytes) => buffers::upload_bytes(&ctx, "data_u8", bytes),
            _ => {
                let mut all = vec![0.0f32; n_cases * nv];
                let cases: Vec<usize> = (0..n_cases).collect();
                data.gather_into(&cases, &mut all);
                buffers::upload(&ctx, "data_f32", &all)
            }
        };
        let f = |label: &str, len: usize| buffers::zeros_f32(&ctx, label, len);
        let n = nv * nh;
        // Enough for either form of the weight update (its own pass, or fused per gradient tile).
        let n_partials = update_partial_count(nv, nh).max(fused_update_partials(nv as u32, nh as u32)) as usize;
        let persistent = chains.map(|n_chains| {
            // As the CPU: chains start from data cases spread through the set.
            let cases: Vec<usize> = (0..n_chains).map(|k| k * n_cases / n_chains).collect();
            let mut start = vec![0.0; n_chains * nv];
            data.gather_into(&cases, &mut start);
            buffers::upload(&ctx, "persistent_chains", &start)
        });
        let b = DeviceBuffers {
            data: data_buffer,
            data_u8,
            order: buffers::zeros(&ctx, "order", 4 * n_cases as u64),
            v0_probabilities: config.sample_inputs.then(|| f("v0_probabilities", batch_size * nv)),
            v0: f("v0", batch_size * nv),
            h0: f("h0", batch_size * nh),
            hs: f("hidden_sample", chain_rows * nh),
            vk: f("vk", chain_rows * nv),
            vks: f("vk_sample", chain_rows * nv),
            hk: f("hk", chain_rows * nh),
            persistent,
            reconstruction: chains.map(|_| f("reconstruction", batch_size * nv)),
            weights: buffers::upload(&ctx, "weights", &rbm.weights),
            velocity: f("weight_velocity", n),
            gradients: [f("gradient0", n), f("gradient1", n)],
            visible_bias: buffers::upload(&ctx, "visible_bias", &rbm.visible_bias),
            hidden_bias: buffers::upload(&ctx, "hidden_bias", &rbm.hidden_bias),
            visible_velocity: f("visible_velocity", nv),
            hidden_velocity: f("hidden_velocity", nh),
            smoothed: buffers::upload(&ctx, "sparsity_smoothed", &vec![0.5f32; nh]),
            mean_input: f("mean_input", nv),
            sparsity_derivative: f("sparsity_derivative", nh),
            state: schedule::create_state_buffer(device, &TrainState::from_config(&config)),
            partials: f("update_partials", 4 * n_partials),
            error_partials: f("error_partials", (partial_count(batch_size * nv) as usize).max(super::update::bias_error_partial_count(nv) as usize)),
            log: schedule::create_batch_log(device, batches),
            max_partials: f("max_partials", partial_count(n) as usize),
            max_out: f("max_weight", 1),
        };
        let kernels = Kernels::new(&ctx);
        let max_steps = kernels.reduce.max_abs(device, &b.weights, n, &b.max_partials, Target { buffer: &b.max_out, slot: 0, accumulate: false });
        let table = StepTable::new(&ctx, &vec![StepSlot::default(); batches]);
        let snapshot = state::Snapshot::new(&ctx, &b);
        let fused_update = kernels.gemm.supports_fused_update() && std::env::var("DEEPBELIEF_FUSED_UPDATE").as_deref() != Ok("0");
        Ok(GpuCdTrainer {
            fused_update,
            monitor: None,
            rates: RateState::new(&config),
            chain_length: ChainLength::new(&config),
            convergence: Convergence::new(&config),
            order: (0..n_cases).collect(),
            shuffle_rng: trial_rng(config.seed, 0),
            config,
            ctx,
            kernels,
            b,
            snapshot,
            table,
            plans: None,
            max_steps,
            visible_units: rbm.visible_units,
            n_visible: nv,
            n_hidden: nh,
            n_cases,
            batch_size,
            chains,
            batches,
            epoch: 0,
            step: 0,
            stopped: None,
            init_trial_errors: Vec::new(),
            init_best_trial: 0,
        })
    }

    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Gives the device back (e.g. to drop it after a loss).
    pub fn into_context(self) -> GpuContext {
        self.ctx
    }

    pub fn finished(&self) -> bool {
        self.stopped.is_some()
    }

    pub fn cancel(&mut self) {
        self.stopped.get_or_insert(StopReason::Cancelled);
    }

    /// Batches per epoch.
    pub fn batches_per_epoch(&self) -> usize {
        self.batches
    }

    /// Whether the kernels that bind more storage buffers than WebGPU's default 8 are used: the
    /// weight update as the epilogue of the gradient product (11) and, where the visible step
    /// sums the error, both bias steps in one dispatch (13). They are the default where the
    /// device offers the buffers; `DEEPBELIEF_FUSED_UPDATE=0` turns them off, for comparison.
    /// Both forms give the same weights up to rounding.
    pub fn fused_update(&self) -> bool {
        self.fused_update
    }

    /// Chooses the fused kernels or the default-limits ones (false where the device cannot fuse).
    pub fn set_fused_update(&mut self, fused: bool) {
        self.fused_update = fused && self.kernels.gemm.supports_fused_update();
        self.plans = None;
    }

    fn plan(&self, rows: usize, k: usize) -> Result<Plan, GpuError> {
        if let Some(failure) = self.ctx.failure() {
            return Err(GpuError(failure));
        }
        let shape = PlanShape {
            rows,
            chains: self.chains.unwrap_or(rows),
            k,
            n_visible: self.n_visible,
            n_hidden: self.n_hidden,
            batches: self.batches,
            config: &self.config,
            fused_update: self.fused_update,
        };
        plan::build(&self.ctx, &self.kernels, &self.b, &self.table, &shape)
    }

    /// Shuffles, uploads the order and the batches' step slots, and (re)builds the plans for
    /// this epoch's chain length, which it returns.
    fn prepare_epoch(&mut self) -> Result<usize, GpuError> {
        self.order.shuffle(&mut self.shuffle_rng);
        let k = self.chain_length.current();
        if self.plans.as_ref().is_none_or(|p| p.0 != k) {
            let full = self.plan(self.batch_size, k)?;
            let tail_rows = self.n_cases - (self.batches - 1) * self.batch_size;
            let tail = if tail_rows != self.batch_size { Some(self.plan(tail_rows, k)?) } else { None };
            self.plans = Some((k, full, tail));
        }
        let order: Vec<u32> = self.order.iter().map(|&i| i as u32).collect();
        self.ctx.queue.write_buffer(&self.b.order, 0, bytemuck::cast_slice(&order));
        let slots: Vec<StepSlot> = (0..self.batches).map(|b| StepSlot { step: (self.step + b as u64) << 10, row_shift: (b * self.batch_size) as u32 }).collect();
        self.table.write(&self.ctx.queue, 0, &slots);
        schedule::begin_epoch(&self.ctx.queue, &self.b.state);
        Ok(k)
    }

    /// One pass over the data on the device; the same report as `CdTrainer::train_epoch`. On
    /// divergence the device model goes back to the start of the epoch, momentum is reset, and
    /// [`TrainError::NonFinite`] is returned, as on the CPU.
    pub async fn train_epoch(&mut self) -> Result<EpochReport, TrainError> {
        let gpu = |e: GpuError| TrainError::Device(e.to_string());
        let started = now_seconds();
        let k = self.prepare_epoch().map_err(gpu)?;
        let (_, full, tail) = self.plans.as_ref().unwrap();
        for (first, end) in submissions(self.batches) {
            let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("cd_epoch") });
            if first == 0 {
                self.snapshot.save(&mut encoder, &self.b);
            }
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("cd_batches"), timestamp_writes: None });
                for batch in first..end {
                    let plan = if batch + 1 == self.batches { tail.as_ref().unwrap_or(full) } else { full };
                    let parity = ((self.step + batch as u64) % 2) as usize;
                    plan.record_batch(&mut pass, batch as u32, parity, batch == 0);
                }
                if end == self.batches {
                    self.max_steps.record_in(&mut pass);
                }
            }
            self.ctx.queue.submit([encoder.finish()]);
        }
        let (state, log, extra) = schedule::read_epoch(&self.ctx, &self.b.state, &self.b.log, self.batches, &[(&self.b.max_out, 0, 4)]).await.map_err(gpu)?;
        self.step += self.batches as u64;
        let figures = EpochFigures::from_log(&state, &log);
        let max_weight: f32 = bytemuck::pod_read_unaligned(&extra[0][..4]);
        let reconstruction_error = figures.squared_error / (self.n_cases * self.n_visible) as f64;
        if !reconstruction_error.is_finite() || !max_weight.is_finite() {
            self.roll_back();
            return Err(TrainError::NonFinite { epoch: self.epoch + 1 });
        }
        self.epoch += 1;
        let increment_ratio = (figures.max_increment / max_weight.max(1e-30)) as f64;
        // The device adapted the rates batch by batch; the epoch-level rules run here.
        self.rates.learning_rate = state.learning_rate;
        self.rates.momentum = state.momentum;
        let stop = close_epoch(&mut self.convergence, &mut self.rates, &mut self.chain_length, self.epoch, self.config.epochs, increment_ratio);
        schedule::set_rates(&self.ctx.queue, &self.b.state, self.rates.learning_rate, self.rates.momentum);
        self.stopped = stop;
        let seconds = now_seconds() - started;
        Ok(EpochReport {
            epoch: self.epoch,
            cd_k: k,
            reconstruction_error,
            learning_rate: self.rates.learning_rate,
            momentum: self.rates.momentum,
            gradient_cosine: figures.gradient_cosine,
            gradient_rms: figures.gradient_rms,
            increment_ratio,
            epochs_without_improvement: self.convergence.epochs_without_improvement,
            seconds,
            cases_per_second: self.n_cases as f64 / seconds.max(1e-9),
            stop,
        })
    }
}

impl Kernels {
    fn new(ctx: &GpuContext) -> Self {
        let device = &ctx.device;
        use wgpu::BufferBindingType::{Storage, Uniform};
        let gather_entries = [
            shader::buffer_entry(5, Uniform, false),
            shader::buffer_entry(6, Uniform, true),
            shader::buffer_entry(7, Storage { read_only: true }, false),
            shader::buffer_entry(8, Storage { read_only: true }, false),
            shader::buffer_entry(9, Storage { read_only: false }, false),
        ];
        let gather_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("gather"), entries: &gather_entries });
        let mut schedule_entries = vec![
            shader::buffer_entry(0, Uniform, false),
            shader::buffer_entry(1, Storage { read_only: false }, false),
            shader::buffer_entry(2, Storage { read_only: true }, false),
            shader::buffer_entry(3, Storage { read_only: true }, false),
            shader::buffer_entry(4, Storage { read_only: false }, false),
        ];
        schedule_entries.extend_from_slice(&gather_entries);
        let schedule_gather_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("schedule_and_gather"), entries: &schedule_entries });
        let compile = |label: &str, source: String, layout: &wgpu::BindGroupLayout, entry_point: &str| {
            let module = shader::module(device, label, source, shader::Checks::Bounded);
            let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some(label), bind_group_layouts: &[Some(layout)], immediate_size: 0 });
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: Some(&layout),
                module: &module,
                entry_point: Some(entry_point),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        let [(_, gather), (_, schedule_gather)] = gather_sources();
        let gather = compile("gather", gather, &gather_layout, "gather");
        let schedule_gather = compile("schedule_and_gather", schedule_gather, &schedule_gather_layout, "schedule_and_gather");
        Kernels {
            gemm: GemmKernels::new(ctx),
            update: UpdateKernels::new(device),
            reduce: ReduceKernels::new(device),
            sample: SampleKernels::new(ctx),
            gather_layout,
            gather,
            schedule_gather_layout,
            schedule_gather,
        }
    }
}
