//! The prepared dispatches of one batch: built once per (batch rows, chain length), recorded
//! for every batch with the batch's [`StepTable`] slot.
//!
//! Buffer roles (rows = cases in the batch, chains = rows for CD or the persistent chains):
//! - `v0` (rows × nv): the batch as f32, gathered through the shuffled order; with
//!   `sample_inputs` the gather lands in `v0_probabilities` and `v0` holds its Bernoulli sample;
//! - `h0` (rows × nh): positive hidden probabilities;
//! - `hs` (chains × nh): the hidden sample that drives the next visible step;
//! - `vk`, `vks` (chains × nv): visible means and samples of the chain; for PCD the last step
//!   writes its visible state straight into `persistent`, which is the next batch's start;
//! - `hk` (chains × nh): hidden probabilities at the chain's end.

use super::{DeviceBuffers, GatherParams, Kernels};
use crate::backend::Activation;
use crate::gpu::buffers::StepTable;
use crate::gpu::gemm::{fused_update_partials, GemmCall, GemmOp};
use crate::gpu::reduce::{partial_count, Dispatch, Step};
use crate::gpu::sample::{SampleCall, SampleOp};
use crate::gpu::schedule::ScheduleParams;
use crate::gpu::shader::{self, SlotDispatch};
use crate::gpu::update::{bias_error_partial_count, update_partial_count, HiddenBiasBuffers, VisibleBiasBuffers, WeightUpdateBuffers};
use crate::gpu::{GpuContext, GpuError};
use crate::model::VisibleUnits;
use crate::rng::{Purpose, RngStream};
use crate::train::config::CdConfig;

pub(super) struct GatherCall {
    call: SlotDispatch,
    _params: Vec<wgpu::Buffer>,
}

/// One step of the negative chain.
struct ChainStep {
    visible: GemmCall,
    /// Gaussian noise added to the visible means (sampled Gaussian visibles).
    noise: Option<SampleCall>,
    hidden: GemmCall,
}

pub(super) struct Plan {
    gather: GatherCall,
    input_sample: Option<SampleCall>,
    positive: GemmCall,
    /// PCD: hidden probabilities and sample of the persistent chains.
    chain_start: Option<GemmCall>,
    chain: Vec<ChainStep>,
    /// PCD: the mean-field reconstruction of the batch, for the reported error.
    reconstruction: Option<GemmCall>,
    /// Its own squared-error dispatch, unless the visible bias step computes it (`fused_error`).
    error: Step,
    fused_error: bool,
    /// Per gradient parity: `v0ᵀh0/rows − vkᵀhk/chains` as one paired product, with the
    /// weight update as its epilogue where `update` is empty.
    gradient: Vec<GemmCall>,
    /// The visible bias step, or both bias steps in one dispatch (then `hidden` is `None`).
    visible: Step,
    hidden: Option<Step>,
    /// Per gradient parity: the weight update's own pass, unless fused into the gradient.
    update: Vec<Step>,
    /// The schedule step, with the next batch's gather in the same dispatch.
    end: GatherCall,
}

/// Shapes and settings the plan depends on.
pub(super) struct PlanShape<'a> {
    pub rows: usize,
    pub chains: usize,
    pub k: usize,
    pub n_visible: usize,
    pub n_hidden: usize,
    pub batches: usize,
    pub config: &'a CdConfig,
    /// The weight update as the gradient product's epilogue (needs
    /// `GemmKernels::supports_fused_update`), and both bias steps in one dispatch where the
    /// device has the buffers for it too.
    pub fused_update: bool,
}

pub(super) fn build(ctx: &GpuContext, kn: &Kernels, b: &DeviceBuffers, table: &StepTable, shape: &PlanShape) -> Result<Plan, GpuError> {
    let device = &ctx.device;
    let config = shape.config;
    let (rows, chains, k, nv, nh) = (shape.rows, shape.chains, shape.k, shape.n_visible, shape.n_hidden);
    let (r, c, v, h) = (rows as u32, chains as u32, nv as u32, nh as u32);
    let seed = config.seed;
    let gaussian = config.visible_units == VisibleUnits::Gaussian;
    let visible_activation = if gaussian { Activation::Linear } else { Activation::Sigmoid };
    let persistent = b.persistent.as_ref();

    let gathered = b.v0_probabilities.as_ref().unwrap_or(&b.v0);
    let gather = gather_call(ctx, kn, b, table, rows, nv, gathered);
    let input_sample = match &b.v0_probabilities {
        Some(probabilities) => Some(kn.sample.prepare(ctx, &SampleOp::bernoulli(probabilities, &b.v0, r * v, RngStream::new(seed, 0, Purpose::InputSample)).slots(table))?),
        None => None,
    };
    // The positive product reads the gathered f32 batch: the gather runs anyway (the gradient
    // and the bias step need v0), and on an H100 the f32 product is 7 µs faster than one that
    // gathers and unpacks the u8 pixels itself (22 against 29 µs for 100 × 784 × 500).
    let mut positive = GemmOp::new(r, v, h, &b.v0, &b.weights, &b.h0)
    .bias(&b.hidden_bias)
    .activation(Activation::Sigmoid)
    .slots(table);
    if persistent.is_none() {
        positive = positive.sample(&b.hs, RngStream::new(seed, 0, Purpose::HiddenSample));
    }
    let positive = kn.gemm.prepare(ctx, &positive)?;
    let chain_start = match persistent {
        Some(state) => Some(kn.gemm.prepare(
            ctx,
            &GemmOp::new(c, v, h, state, &b.weights, &b.hk)
                .bias(&b.hidden_bias)
                .activation(Activation::Sigmoid)
                .sample(&b.hs, RngStream::new(seed, 0, Purpose::HiddenSample))
                .slots(table),
        )?),
        None => None,
    };

    // Where each chain step's visible state lands: the persistent chains at the last PCD step.
    let visible_state = |s: usize| -> &wgpu::Buffer {
        match persistent {
            Some(state) if s + 1 == k => state,
            _ if config.mean_field_visible => &b.vk,
            _ => &b.vks,
        }
    };
    let mut chain = Vec::with_capacity(k);
    for s in 0..k {
        let state = visible_state(s);
        let stream = RngStream::new(seed, s as u64, Purpose::VisibleSample);
        let base = GemmOp::new(c, h, v, &b.hs, &b.weights, state).transpose_b().bias(&b.visible_bias).activation(visible_activation).slots(table);
        let (visible, noise) = match (config.mean_field_visible, gaussian) {
            (true, _) | (false, true) => (base, None),
            // Bernoulli sample of the means (kept in vk, which must differ from the samples).
            (false, false) => (GemmOp::new(c, h, v, &b.hs, &b.weights, &b.vk).transpose_b().bias(&b.visible_bias).activation(visible_activation).slots(table).sample(state, stream), None),
        };
        let noise = match (config.mean_field_visible, gaussian) {
            (false, true) => Some(kn.sample.prepare(ctx, &SampleOp::gaussian_noise(state, c * v, stream).slots(table))?),
            _ => noise,
        };
        let mut hidden = GemmOp::new(c, v, h, state, &b.weights, &b.hk).bias(&b.hidden_bias).activation(Activation::Sigmoid).slots(table);
        if s + 1 < k {
            hidden = hidden.sample(&b.hs, RngStream::new(seed, s as u64 + 1, Purpose::ChainHidden));
        }
        chain.push(ChainStep { visible: kn.gemm.prepare(ctx, &visible)?, noise, hidden: kn.gemm.prepare(ctx, &hidden)? });
    }
    let negative_visible = visible_state(k - 1);

    // The reported error compares each case with its one-step mean reconstruction: the chain's
    // first visible means for CD (before any noise), a separate product for PCD.
    let (reconstruction, error_source) = match &b.reconstruction {
        Some(out) => (Some(kn.gemm.prepare(ctx, &GemmOp::new(r, h, v, &b.h0, &b.weights, out).transpose_b().bias(&b.visible_bias).activation(visible_activation).slots(table))?), out),
        None => (None, if !config.mean_field_visible && gaussian { visible_state(0) } else { &b.vk }),
    };
    let error = kn.reduce.sum_sq_diff_partials(device, &b.v0, error_source, rows * nv, &b.error_partials);

    // Both terms in one product of depth rows + chains: one dispatch instead of two, and on an
    // H100 the deeper product runs faster too (784 × 200 × 500 TN at 5.9 TFLOP/s against 4.4
    // for k = 100).
    // Per gradient parity: the weight update's buffers (this batch's gradient, the last one's
    // as `previous`), for its own pass or the product's epilogue.
    let update_buffers = |p: usize| WeightUpdateBuffers {
        weights: &b.weights,
        velocity: &b.velocity,
        gradient: &b.gradients[p],
        previous: &b.gradients[1 - p],
        mean_input: &b.mean_input,
        sparsity_derivative: &b.sparsity_derivative,
        state: &b.state,
        partials: &b.partials,
    };
    let mut gradient = Vec::new();
    for (p, g) in b.gradients.iter().enumerate() {
        let mut op = GemmOp::new(v, r + c, h, &b.v0, &b.h0, g).transpose_a().alpha(1.0 / rows as f32).paired(negative_visible, &b.hk, r, -1.0 / chains as f32).slots(table);
        if shape.fused_update {
            op = op.fused_update(update_buffers(p));
        }
        gradient.push(kn.gemm.prepare(ctx, &op)?);
    }
    // With one chain step (or PCD's separate reconstruction) the error's source still holds
    // the reconstruction when the visible bias step runs, which then sums the error too.
    // (Not with Gaussian noise: the error is taken before the noise lands on the same buffer.)
    let noisy = gaussian && !config.mean_field_visible;
    let fused_error = (k == 1 && !noisy) || b.reconstruction.is_some();
    let visible_buffers = VisibleBiasBuffers { positive: &b.v0, negative: negative_visible, bias: &b.visible_bias, velocity: &b.visible_velocity, mean_input: &b.mean_input, state: &b.state };
    let (visible, n_error_partials) = if fused_error {
        (kn.update.visible_bias_error_step(device, rows, chains, nv, &visible_buffers, error_source, &b.error_partials), bias_error_partial_count(nv))
    } else {
        (kn.update.visible_bias_step(device, rows, chains, nv, &visible_buffers), partial_count(rows * nv))
    };
    let hidden_buffers = HiddenBiasBuffers {
        positive: &b.h0,
        negative: &b.hk,
        bias: &b.hidden_bias,
        velocity: &b.hidden_velocity,
        smoothed: &b.smoothed,
        sparsity_derivative: &b.sparsity_derivative,
        state: &b.state,
    };
    // Both bias steps in one dispatch where the device has the storage buffers for it (and
    // the visible step sums the error): one dispatch fewer per batch.
    let both = match shape.fused_update && fused_error {
        true => kn.update.bias_steps(device, rows, chains, nv, nh, &visible_buffers, &hidden_buffers, error_source, &b.error_partials),
        false => None,
    };
    let (visible, hidden) = match both {
        Some(both) => (both, None),
        None => (visible, Some(kn.update.hidden_bias_step(device, rows, chains, nh, &hidden_buffers))),
    };
    let update_steps = if shape.fused_update { 0 } else { 2 };
    let update = (0..update_steps).map(|p| kn.update.weight_update(device, nv, nh, &update_buffers(p))).collect();
    let end = schedule_gather_call(
        ctx,
        kn,
        b,
        table,
        rows,
        nv,
        gathered,
        &ScheduleParams { n_update_partials: if shape.fused_update { fused_update_partials(v, h) } else { update_partial_count(nv, nh) }, n_error_partials, n_weights: (nv * nh) as u32, log_capacity: shape.batches as u32 },
        &b.partials,
        &b.error_partials,
    );
    Ok(Plan { gather, input_sample, positive, chain_start, chain, reconstruction, error, fused_error, gradient, visible, hidden, update, end })
}

fn gather_params(ctx: &GpuContext, b: &DeviceBuffers, rows: usize, nv: usize) -> wgpu::Buffer {
    let n_cases = (b.order.size() / 4) as u32;
    crate::gpu::buffers::uniform_bytes(ctx, "gather_params", bytemuck::bytes_of(&GatherParams { rows: rows as u32, width: nv as u32, is_u8: b.data_u8 as u32, n_cases }))
}

/// schedule_gather.wgsl: the schedule step (`schedule_params` as schedule.wgsl's
/// ScheduleParams) in workgroup 0, the next batch's gather into `out` in the others.
#[allow(clippy::too_many_arguments)]
fn schedule_gather_call(
    ctx: &GpuContext,
    kn: &Kernels,
    b: &DeviceBuffers,
    table: &StepTable,
    rows: usize,
    nv: usize,
    out: &wgpu::Buffer,
    schedule_params: &ScheduleParams,
    update_partials: &wgpu::Buffer,
    error_partials: &wgpu::Buffer,
) -> GatherCall {
    let device = &ctx.device;
    let params = gather_params(ctx, b, rows, nv);
    let schedule = crate::gpu::buffers::uniform_bytes(ctx, "schedule_params", bytemuck::bytes_of(schedule_params));
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("schedule_and_gather"),
        layout: &kn.schedule_gather_layout,
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: schedule.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: b.state.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 2, resource: update_partials.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 3, resource: error_partials.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 4, resource: b.log.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 5, resource: params.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 6, resource: table.binding() },
            wgpu::BindGroupEntry { binding: 7, resource: b.data.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 8, resource: b.order.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 9, resource: out.as_entire_binding() },
        ],
    });
    let groups = 1 + (rows * nv).div_ceil(256) as u32;
    GatherCall { call: SlotDispatch::new(kn.schedule_gather.clone(), bind_group, shader::grid(groups), table), _params: vec![params, schedule] }
}

fn gather_call(ctx: &GpuContext, kn: &Kernels, b: &DeviceBuffers, table: &StepTable, rows: usize, nv: usize, out: &wgpu::Buffer) -> GatherCall {
    let device = &ctx.device;
    let params = gather_params(ctx, b, rows, nv);
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("gather"),
        layout: &kn.gather_layout,
        entries: &[
            wgpu::BindGroupEntry { binding: 5, resource: params.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 6, resource: table.binding() },
            wgpu::BindGroupEntry { binding: 7, resource: b.data.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 8, resource: b.order.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 9, resource: out.as_entire_binding() },
        ],
    });
    GatherCall { call: SlotDispatch::new(kn.gather.clone(), bind_group, shader::grid(((rows * nv).div_ceil(256)) as u32), table), _params: vec![params] }
}

/// One recorded dispatch of a batch (a split-k GEMM records its summing pass with it).
pub(super) enum Call<'a> {
    Gather(&'a GatherCall),
    Gemm(&'a GemmCall),
    Sample(&'a SampleCall),
    Step(&'a Step),
}

impl Call<'_> {
    pub(super) fn dispatch(&self, pass: &mut wgpu::ComputePass<'_>, slot: u32) {
        match self {
            Call::Gather(gather) => gather.call.record(pass, slot),
            Call::Gemm(call) => call.dispatch(pass, slot),
            Call::Sample(call) => call.dispatch(pass, slot),
            Call::Step(step) => step.record_in(pass),
        }
    }
}

impl Plan {
    /// The batch's dispatches in order, named for profiles; `parity` picks the gradient buffer.
    /// Each batch gathers the next one in its last dispatch, so only an epoch's `first` batch
    /// gathers its own.
    pub(super) fn calls(&self, parity: usize, first: bool) -> Vec<(&'static str, Call<'_>)> {
        let mut calls = Vec::new();
        if first {
            calls.push(("gather", Call::Gather(&self.gather)));
        }
        if let Some(sample) = &self.input_sample {
            calls.push(("input sample", Call::Sample(sample)));
        }
        calls.push(("positive v·W", Call::Gemm(&self.positive)));
        if let Some(start) = &self.chain_start {
            calls.push(("chain start", Call::Gemm(start)));
        }
        for (s, step) in self.chain.iter().enumerate() {
            calls.push(("chain h·Wᵀ", Call::Gemm(&step.visible)));
            if s == 0 && self.reconstruction.is_none() && !self.fused_error {
                calls.push(("squared error", Call::Step(&self.error)));
            }
            if let Some(noise) = &step.noise {
                calls.push(("gaussian noise", Call::Sample(noise)));
            }
            calls.push(("chain v·W", Call::Gemm(&step.hidden)));
        }
        if let Some(reconstruction) = &self.reconstruction {
            calls.push(("reconstruction", Call::Gemm(reconstruction)));
            if !self.fused_error {
                calls.push(("squared error", Call::Step(&self.error)));
            }
        }
        let fused = self.update.is_empty();
        if !fused {
            calls.push(("gradient v0ᵀh0 − vkᵀhk", Call::Gemm(&self.gradient[parity])));
        }
        // With the update fused into the gradient, the bias steps go first: they write the
        // mean input and the sparsity derivative that the update reads.
        let visible = match (&self.hidden, self.fused_error) {
            (None, _) => "bias steps + squared error",
            (Some(_), true) => "visible bias + squared error",
            (Some(_), false) => "visible bias",
        };
        calls.push((visible, Call::Step(&self.visible)));
        if let Some(hidden) = &self.hidden {
            calls.push(("hidden bias", Call::Step(hidden)));
        }
        if fused {
            calls.push(("gradient + weight update", Call::Gemm(&self.gradient[parity])));
        } else {
            calls.push(("weight update", Call::Step(&self.update[parity])));
        }
        calls.push(("schedule + next gather", Call::Gather(&self.end)));
        calls
    }

    /// The gather of this plan's batch alone (what an epoch's first batch starts with).
    pub(super) fn gather(&self) -> Call<'_> {
        Call::Gather(&self.gather)
    }

    /// Records one batch: `slot` selects its RNG step and first row, `parity` its gradient
    /// buffer; the `first` of an epoch gathers its own cases.
    pub(super) fn record_batch(&self, pass: &mut wgpu::ComputePass<'_>, slot: u32, parity: usize, first: bool) {
        for (_, call) in self.calls(parity, first) {
            call.dispatch(pass, slot);
        }
    }
}
