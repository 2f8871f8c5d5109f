//! Device-resident CD-k training of one Bernoulli RBM: the GPU counterpart of
//! [`CdTrainer`](crate::train::CdTrainer), with the same semantics and random streams.
//!
//! The data go to the device once (pixels as u8, 4 per u32; other data as f32). Each epoch the
//! host shuffles the case order with the same ChaCha stream as `CdTrainer` (`trial_rng(seed, 0)`,
//! a Fisher–Yates shuffle of the previous order), uploads it, writes one [`StepTable`] slot per
//! batch (RNG step `(step << 10)`, row shift `batch · batch_size`), records every batch into
//! command buffers (one submission per [`BATCHES_PER_SUBMIT`] batches, which bounds a
//! submission's run time for browser watchdogs), and reads back only the epoch scalars: the
//! training state, the batch log and max |W| ([`schedule::read_epoch`]). The epoch-end rules
//! (`Convergence`, `RateState::after_epoch`, `ChainLength`) run on the host, as on the CPU.
//!
//! One batch (rows cases; CD-k with k fixed for the epoch):
//!
//! 1. gather: `v0 ← data[order[start..start + rows]]` as f32 (for the bias step, the squared
//!    error and the gradient);
//! 2. `h0 = σ(v0·W + c)` from the u8 data through the gather GEMM, fused with the hidden sample
//!    `hs` (stream `HiddenSample`, chain step 0);
//! 3. for each chain step s: `vk = σ(hs·Wᵀ + b)` (+ sample with `VisibleSample`, chain step s,
//!    when `mean_field_visible` is off); at s = 0 the squared-error partials of `v0 − vk`;
//!    `hk = σ(vk·W + c)`, sampled into `hs` with `ChainHidden`, chain step s + 1, unless last;
//! 4. `G = v0ᵀh0 / rows − vkᵀhk / rows` (two GEMMs into the gradient of this batch's parity);
//! 5. visible and hidden bias steps (column means, sparsity estimate), the fused weight update
//!    (gradient / previous-gradient ping-pong), and the schedule step.
//!
//! Samples use `RngStream::new(seed, (step << 10) | chain_step, purpose)` as
//! `CdTrainer::stream`, so GPU and CPU draw the same uniforms; samples differ only where a
//! probability lies within rounding of its uniform (near-ties).
//!
//! Measured (release build, `deepbelief bench --backend gpu --json`, NVIDIA H100 80GB HBM3 through
//! Vulkan, 2026-11-22): 784 × 500 CD-1, batches of 100, 60,000 cases (the 10k MNIST file tiled
//! 6×): 0.078 s per epoch (PyTorch 2.11 fp32, TF32 off, the same loop in
//! `bench/torch_rbm.py`: 0.32 s, launch-bound). Raina et al. (2009) Table 2 shapes, batches of 192:
//! 576×1024 0.95 s per million examples, 1024×4096 3.51, 2304×16000 21.7, 4096×11008 24.7
//! (PyTorch: 16.3; before the NT GEMM fix, 30.7 with `hidden → visible` at 9 TFLOP/s).
//! Parity on lavapipe (tests/gpu_trainer.rs): max |Δw| ≈ 3e-7 of max |w| after 2 epochs.
//!
//! Not supported (constructing returns an error naming the setting, so callers can fall back to
//! the CPU): Gaussian visible units, persistent CD, `sample_inputs`. On divergence (NaN/Inf) the
//! epoch returns [`TrainError::NonFinite`] but, unlike the CPU, does not roll the weights back.

use super::buffers::{self, StepSlot, StepTable};
use super::gemm::{GemmCall, GemmKernels, GemmOp};
use super::reduce::{partial_count, Dispatch, ReduceKernels, Step, Target};
use super::schedule::{self, EpochFigures, ScheduleBuffers, ScheduleKernels, TrainState};
use super::shader;
use super::update::{update_partial_count, HiddenBiasBuffers, UpdateKernels, VisibleBiasBuffers, WeightUpdateBuffers};
use super::{GpuContext, GpuError};
use crate::backend::Activation;
use crate::clock::now_seconds;
use crate::data::{CaseValues, Dataset};
use crate::model::{Rbm, VisibleUnits};
use crate::rng::{Purpose, RngStream};
use crate::train::config::CdConfig;
use crate::train::contrastive_divergence::EpochReport;
use crate::train::init::trial_rng;
use crate::train::schedule::{close_epoch, ChainLength, Convergence, RateState, StopReason};
use crate::train::{CdTrainer, TrainError};
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// Batches recorded per submission.
pub const BATCHES_PER_SUBMIT: usize = 64;

/// `shaders/gather.wgsl`; `byte_to_unit` is appended from gemm.wgsl so both kernels convert
/// pixels identically.
const GATHER_SHADER: &str = include_str!("../../shaders/gather.wgsl");

/// `byte_to_unit` of gemm.wgsl (exactly the CPU's `b as f32 / 255.0`), reused verbatim.
fn byte_to_unit_source() -> &'static str {
    let source = include_str!("../../shaders/gemm.wgsl");
    let start = source.find("fn byte_to_unit").expect("gemm.wgsl defines byte_to_unit");
    let end = start + source[start..].find("\n}\n").expect("end of byte_to_unit") + 3;
    &source[start..end]
}

/// Checks that `config` and `data` are what the GPU trainer supports; the message names the
/// setting that is not.
pub fn check_supported(config: &CdConfig) -> Result<(), GpuError> {
    if config.visible_units != VisibleUnits::Bernoulli {
        return Err(GpuError("the GPU trainer supports Bernoulli visible units only (visible_units = gaussian runs on the CPU)".into()));
    }
    if config.persistent {
        return Err(GpuError("the GPU trainer does not support persistent CD yet (persistent = true runs on the CPU)".into()));
    }
    if config.sample_inputs {
        return Err(GpuError("the GPU trainer does not support sample_inputs (binarised inputs of higher layers) yet".into()));
    }
    Ok(())
}

struct GatherCall {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    groups: (u32, u32, u32),
    slot_offsets: Vec<u32>,
    _params: wgpu::Buffer,
}

impl GatherCall {
    fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, slot: u32) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[self.slot_offsets[slot as usize]]);
        pass.dispatch_workgroups(self.groups.0, self.groups.1, self.groups.2);
    }
}

/// The prepared dispatches of one batch size and chain length.
struct Plan {
    gather: GatherCall,
    positive: GemmCall,
    /// Per chain step: visible GEMM, hidden GEMM.
    chain: Vec<(GemmCall, GemmCall)>,
    error: Step,
    /// Per gradient parity: positive and negative outer products.
    gradient: Vec<(GemmCall, GemmCall)>,
    visible: Step,
    hidden: Step,
    update: Vec<Step>,
    end: Step,
}

struct DeviceBuffers {
    data: wgpu::Buffer,
    data_u8: bool,
    order: wgpu::Buffer,
    v0: wgpu::Buffer,
    h0: wgpu::Buffer,
    hs: wgpu::Buffer,
    vk: wgpu::Buffer,
    vks: wgpu::Buffer,
    hk: wgpu::Buffer,
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
    schedule: ScheduleKernels,
    gather_layout: wgpu::BindGroupLayout,
    gather: wgpu::ComputePipeline,
}

/// CD-k training of one Bernoulli RBM on the device. See the module docs.
pub struct GpuCdTrainer {
    pub config: CdConfig,
    ctx: GpuContext,
    kernels: Kernels,
    b: DeviceBuffers,
    table: StepTable,
    /// (k, full-batch plan, tail plan when the last batch is shorter).
    plans: Option<(usize, Plan, Option<Plan>)>,
    max_steps: Vec<Step>,
    n_visible: usize,
    n_hidden: usize,
    n_cases: usize,
    batch_size: usize,
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
}

impl GpuCdTrainer {
    /// Takes over a freshly built CPU trainer (its configuration and its initialised RBM, which
    /// `CdTrainer::new` chose by random trials) at epoch 0, and uploads `data` once.
    pub fn from_cpu(ctx: GpuContext, cpu: &CdTrainer, data: &Dataset) -> Result<Self, GpuError> {
        if cpu.epoch != 0 {
            return Err(GpuError(format!("the CPU trainer has done {} epochs; the GPU trainer starts at epoch 0", cpu.epoch)));
        }
        Self::new(ctx, cpu.config.clone(), &cpu.rbm, data)
    }

    /// A trainer at epoch 0 for `config`, starting from `rbm` (as `CdTrainer` after its
    /// initialisation), with `data` uploaded once.
    pub fn new(ctx: GpuContext, config: CdConfig, rbm: &Rbm, data: &Dataset) -> Result<Self, GpuError> {
        check_supported(&config)?;
        config.validate(data.n_cases).map_err(|e| GpuError(format!("invalid setting {e}")))?;
        if rbm.visible_units != VisibleUnits::Bernoulli {
            return Err(GpuError("the GPU trainer supports Bernoulli visible units only".into()));
        }
        if data.n_inputs != rbm.n_visible || data.n_cases == 0 {
            return Err(GpuError(format!("{}: {} cases of {} inputs for a model with {} visible units", data.name, data.n_cases, data.n_inputs, rbm.n_visible)));
        }
        let (nv, nh, n_cases) = (rbm.n_visible, rbm.n_hidden, data.n_cases);
        let batch_size = config.cases_per_batch(n_cases);
        let batches = n_cases.div_ceil(batch_size);
        let device = &ctx.device;

        let (data_buffer, data_u8) = match &data.values {
            CaseValues::Bytes(bytes) => (buffers::upload_bytes(&ctx, "data_u8", bytes), true),
            _ => {
                let mut all = vec![0.0f32; n_cases * nv];
                let cases: Vec<usize> = (0..n_cases).collect();
                data.gather_into(&cases, &mut all);
                (buffers::upload(&ctx, "data_f32", &all), false)
            }
        };
        let f = |label: &str, len: usize| buffers::zeros_f32(&ctx, label, len);
        let n = nv * nh;
        let n_partials = update_partial_count(nv, nh) as usize;
        let b = DeviceBuffers {
            data: data_buffer,
            data_u8,
            order: buffers::zeros(&ctx, "order", 4 * n_cases as u64),
            v0: f("v0", batch_size * nv),
            h0: f("h0", batch_size * nh),
            hs: f("hidden_sample", batch_size * nh),
            vk: f("vk", batch_size * nv),
            vks: f("vk_sample", batch_size * nv),
            hk: f("hk", batch_size * nh),
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
            error_partials: f("error_partials", partial_count(batch_size * nv) as usize),
            log: schedule::create_batch_log(device, batches),
            max_partials: f("max_partials", partial_count(n) as usize),
            max_out: f("max_weight", 1),
        };
        use wgpu::BufferBindingType::{Storage, Uniform};
        let gather_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("gather"),
            entries: &[
                shader::buffer_entry(0, Uniform, false),
                shader::buffer_entry(1, Uniform, true),
                shader::buffer_entry(2, Storage { read_only: true }, false),
                shader::buffer_entry(3, Storage { read_only: true }, false),
                shader::buffer_entry(4, Storage { read_only: false }, false),
            ],
        });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("gather"),
            source: wgpu::ShaderSource::Wgsl(format!("{GATHER_SHADER}\n{}", byte_to_unit_source()).into()),
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor { label: Some("gather"), bind_group_layouts: &[Some(&gather_layout)], immediate_size: 0 });
        let gather = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("gather"),
            layout: Some(&layout),
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let kernels = Kernels { gemm: GemmKernels::new(&ctx), update: UpdateKernels::new(device), reduce: ReduceKernels::new(device), schedule: ScheduleKernels::new(device), gather_layout, gather };
        let max_steps = kernels.reduce.max_abs(device, &b.weights, n, &b.max_partials, Target { buffer: &b.max_out, slot: 0, accumulate: false });
        let table = StepTable::new(&ctx, &vec![StepSlot::default(); batches]);
        Ok(GpuCdTrainer {
            rates: RateState::new(&config),
            chain_length: ChainLength::new(&config),
            convergence: Convergence::new(&config),
            order: (0..n_cases).collect(),
            shuffle_rng: trial_rng(config.seed, 0),
            config,
            ctx,
            kernels,
            b,
            table,
            plans: None,
            max_steps,
            n_visible: nv,
            n_hidden: nh,
            n_cases,
            batch_size,
            batches,
            epoch: 0,
            step: 0,
            stopped: None,
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

    fn plan(&self, rows: usize, k: usize) -> Result<Plan, GpuError> {
        let (ctx, kn, b) = (&self.ctx, &self.kernels, &self.b);
        let device = &ctx.device;
        let (nv, nh) = (self.n_visible, self.n_hidden);
        let (r, v, h) = (rows as u32, nv as u32, nh as u32);
        let seed = self.config.seed;
        let table = &self.table;
        let gather_params = {
            use wgpu::util::DeviceExt;
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("gather_params"),
                contents: bytemuck::cast_slice(&[r, v, b.data_u8 as u32, 0]),
                usage: wgpu::BufferUsages::UNIFORM,
            })
        };
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("gather"),
            layout: &kn.gather_layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: gather_params.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: table.binding() },
                wgpu::BindGroupEntry { binding: 2, resource: b.data.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: b.order.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 4, resource: b.v0.as_entire_binding() },
            ],
        });
        let gather = GatherCall {
            pipeline: kn.gather.clone(),
            bind_group,
            groups: shader::grid(((rows * nv).div_ceil(256)) as u32),
            slot_offsets: (0..table.len()).map(|i| table.offset(i)).collect(),
            _params: gather_params,
        };
        let mut positive = GemmOp::new(r, v, h, &b.data, &b.weights, &b.h0)
            .gather_a(&b.order, 0)
            .bias(&b.hidden_bias)
            .activation(Activation::Sigmoid)
            .sample(&b.hs, RngStream::new(seed, 0, Purpose::HiddenSample))
            .slots(table);
        if b.data_u8 {
            positive = positive.u8_a();
        }
        let positive = kn.gemm.prepare(ctx, &positive)?;
        let negative_visible = if self.config.mean_field_visible { &b.vk } else { &b.vks };
        let mut chain = Vec::with_capacity(k);
        for s in 0..k {
            let mut vis = GemmOp::new(r, h, v, &b.hs, &b.weights, &b.vk).transpose_b().bias(&b.visible_bias).activation(Activation::Sigmoid).slots(table);
            if !self.config.mean_field_visible {
                vis = vis.sample(&b.vks, RngStream::new(seed, s as u64, Purpose::VisibleSample));
            }
            let mut hid = GemmOp::new(r, v, h, negative_visible, &b.weights, &b.hk).bias(&b.hidden_bias).activation(Activation::Sigmoid).slots(table);
            if s + 1 < k {
                hid = hid.sample(&b.hs, RngStream::new(seed, s as u64 + 1, Purpose::ChainHidden));
            }
            chain.push((kn.gemm.prepare(ctx, &vis)?, kn.gemm.prepare(ctx, &hid)?));
        }
        let error = kn.reduce.sum_sq_diff_partials(device, &b.v0, &b.vk, rows * nv, &b.error_partials);
        let mut gradient = Vec::new();
        for g in &b.gradients {
            let pos = GemmOp::new(v, r, h, &b.v0, &b.h0, g).transpose_a().alpha(1.0 / rows as f32).slots(table);
            let neg = GemmOp::new(v, r, h, negative_visible, &b.hk, g).transpose_a().alpha(-1.0 / rows as f32).accumulate().slots(table);
            gradient.push((kn.gemm.prepare(ctx, &pos)?, kn.gemm.prepare(ctx, &neg)?));
        }
        let visible = kn.update.visible_bias_step(
            device,
            rows,
            rows,
            nv,
            &VisibleBiasBuffers { positive: &b.v0, negative: negative_visible, bias: &b.visible_bias, velocity: &b.visible_velocity, mean_input: &b.mean_input, state: &b.state },
        );
        let hidden = kn.update.hidden_bias_step(
            device,
            rows,
            rows,
            nh,
            &HiddenBiasBuffers {
                positive: &b.h0,
                negative: &b.hk,
                bias: &b.hidden_bias,
                velocity: &b.hidden_velocity,
                smoothed: &b.smoothed,
                sparsity_derivative: &b.sparsity_derivative,
                state: &b.state,
            },
        );
        let update = (0..2)
            .map(|p| {
                kn.update.weight_update(
                    device,
                    nv,
                    nh,
                    &WeightUpdateBuffers {
                        weights: &b.weights,
                        velocity: &b.velocity,
                        gradient: &b.gradients[p],
                        previous: &b.gradients[1 - p],
                        mean_input: &b.mean_input,
                        sparsity_derivative: &b.sparsity_derivative,
                        state: &b.state,
                        partials: &b.partials,
                    },
                )
            })
            .collect();
        let end = kn.schedule.step(
            device,
            &ScheduleBuffers {
                state: &b.state,
                update_partials: &b.partials,
                n_update_partials: update_partial_count(nv, nh),
                error_partials: Some((&b.error_partials, partial_count(rows * nv))),
                n_weights: nv * nh,
                batch_log: &b.log,
                log_capacity: self.batches as u32,
            },
        );
        Ok(Plan { gather, positive, chain, error, gradient, visible, hidden, update, end })
    }

    fn record_batch(plan: &Plan, pass: &mut wgpu::ComputePass<'_>, slot: u32, parity: usize) {
        plan.gather.dispatch(pass, slot);
        plan.positive.dispatch(pass, slot);
        for (s, (vis, hid)) in plan.chain.iter().enumerate() {
            vis.dispatch(pass, slot);
            if s == 0 {
                plan.error.record_in(pass);
            }
            hid.dispatch(pass, slot);
        }
        plan.gradient[parity].0.dispatch(pass, slot);
        plan.gradient[parity].1.dispatch(pass, slot);
        plan.visible.record_in(pass);
        plan.hidden.record_in(pass);
        plan.update[parity].record_in(pass);
        plan.end.record_in(pass);
    }

    /// One pass over the data on the device; the same report as `CdTrainer::train_epoch`.
    pub async fn train_epoch(&mut self) -> Result<EpochReport, TrainError> {
        let gpu = |e: GpuError| TrainError::Data(e.to_string());
        let started = now_seconds();
        self.order.shuffle(&mut self.shuffle_rng);
        let k = self.chain_length.current();
        if self.plans.as_ref().is_none_or(|p| p.0 != k) {
            let full = self.plan(self.batch_size, k).map_err(gpu)?;
            let tail_rows = self.n_cases - (self.batches - 1) * self.batch_size;
            let tail = if tail_rows != self.batch_size { Some(self.plan(tail_rows, k).map_err(gpu)?) } else { None };
            self.plans = Some((k, full, tail));
        }
        let order: Vec<u32> = self.order.iter().map(|&i| i as u32).collect();
        self.ctx.queue.write_buffer(&self.b.order, 0, bytemuck::cast_slice(&order));
        let slots: Vec<StepSlot> = (0..self.batches).map(|b| StepSlot { step: (self.step + b as u64) << 10, row_shift: (b * self.batch_size) as u32 }).collect();
        self.table.write(&self.ctx.queue, 0, &slots);
        schedule::begin_epoch(&self.ctx.queue, &self.b.state);
        let (_, full, tail) = self.plans.as_ref().unwrap();
        for first in (0..self.batches).step_by(BATCHES_PER_SUBMIT) {
            let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("cd_epoch") });
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("cd_batches"), timestamp_writes: None });
                for batch in first..(first + BATCHES_PER_SUBMIT).min(self.batches) {
                    let plan = if batch + 1 == self.batches { tail.as_ref().unwrap_or(full) } else { full };
                    let parity = ((self.step + batch as u64) % 2) as usize;
                    Self::record_batch(plan, &mut pass, batch as u32, parity);
                }
                if first + BATCHES_PER_SUBMIT >= self.batches {
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

    /// Reads the weights and biases back into a host [`Rbm`] (one submission).
    pub async fn download_rbm(&self) -> Result<Rbm, GpuError> {
        let (nv, nh) = (self.n_visible, self.n_hidden);
        let parts = schedule::read_ranges(
            &self.ctx,
            &[(&self.b.weights, 0, (4 * nv * nh) as u64), (&self.b.visible_bias, 0, (4 * nv) as u64), (&self.b.hidden_bias, 0, (4 * nh) as u64)],
        )
        .await?;
        let floats = |bytes: &[u8]| bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect::<Vec<f32>>();
        Ok(Rbm { visible_units: VisibleUnits::Bernoulli, n_visible: nv, n_hidden: nh, weights: floats(&parts[0]), visible_bias: floats(&parts[1]), hidden_bias: floats(&parts[2]) })
    }
}
