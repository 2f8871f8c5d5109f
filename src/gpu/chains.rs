//! Generative Gibbs chains through a whole DBN on the device: the GPU counterpart of
//! [`GenerativeChains`](crate::sample::GenerativeChains), with the same random streams.
//!
//! All chains are the rows of one batch. A Gibbs step in the top RBM is two GEMMs with fused
//! epilogues: `h = σ(v·W + c)` sampled into `hs` (stream `GibbsHidden`, step = steps done),
//! then `E[v | hs] = act(hs·Wᵀ + b)`, sampled into the state (`GibbsVisible`) for Bernoulli
//! visible units, or copied and given Gaussian noise from the same stream (Gaussian units).
//! The step number reaches the prepared products through a [`StepTable`] slot, so a submission
//! holds up to [`steps_per_submit`] steps and the products are prepared once. Starting states
//! come from data cases propagated up (sigmoid GEMMs, as `Dbn::propagate_up`) or from random
//! top hidden states (`RandomStart`); [`GpuChains::images`] propagates the top visible
//! expectations down to the data layer and is the only read-back.
//!
//! Parity: every uniform equals the CPU's; probabilities differ by f32 rounding (GEMM order,
//! exp), so a sample flips only where a probability lies within ~1e-7 of its uniform. After a
//! flip the two chains go separate ways, so long runs agree in distribution, not state by state.
//!
//! Measured (`deepbelief sample`, release build, NVIDIA H100 through Vulkan, 16-core host):
//! 1000 chains × 1000 steps in the top 500 × 500 RBM of a 784-500-500 DBN, with the PNG:
//! 0.49 s wall on the GPU, 2.16 s on the CPU backend (mean intensity 0.15329 vs 0.15331).

use super::buffers::{self, StepSlot, StepTable};
use super::evaluate::{GpuRbm, FLOPS_PER_SUBMIT};
use super::gemm::{GemmCall, GemmKernels, GemmOp};
use super::sample::{SampleCall, SampleKernels, SampleOp};
use super::{GpuContext, GpuError};
use crate::backend::Activation;
use crate::data::Dataset;
use crate::model::Dbn;
use crate::rng::{Purpose, RngStream};

/// Most Gibbs steps per submission.
pub const STEPS_PER_SUBMIT: usize = 32;

/// Steps per submission for `rows` chains (or AIS runs) in an `nv × nh` RBM: up to
/// [`STEPS_PER_SUBMIT`], fewer when the two products of a step (4·rows·nv·nh operations) would
/// exceed [`FLOPS_PER_SUBMIT`] together (browser watchdogs).
pub fn steps_per_submit(rows: usize, nv: usize, nh: usize) -> usize {
    ((FLOPS_PER_SUBMIT / (4.0 * rows as f64 * nv as f64 * nh as f64)) as usize).clamp(1, STEPS_PER_SUBMIT)
}

/// The prepared step of the top RBM.
struct StepCalls {
    hidden: GemmCall,
    visible: GemmCall,
    /// Gaussian visible units: noise added to the copied expectations.
    noise: Option<SampleCall>,
}

pub struct GpuChains {
    pub n_chains: usize,
    layers: Vec<GpuRbm>,
    gemm: GemmKernels,
    /// Top RBM's visible state (binary, or real for a Gaussian one-layer model).
    state: wgpu::Buffer,
    /// Last `E[v | h]` of the top RBM.
    expectations: wgpu::Buffer,
    /// Bound to the prepared hidden product (which writes it); kept alive with it.
    _hidden: wgpu::Buffer,
    hidden_sample: wgpu::Buffer,
    table: StepTable,
    calls: StepCalls,
    pub steps_done: u64,
    steps_per_submit: usize,
}

fn submit(ctx: &GpuContext, encoder: wgpu::CommandEncoder) {
    ctx.queue.submit([encoder.finish()]);
}

/// `rows` rows through `layer` upwards (sigmoid probabilities) or downwards (its visible
/// activation), into a new buffer.
fn propagate(ctx: &GpuContext, gemm: &GemmKernels, layer: &GpuRbm, input: &wgpu::Buffer, rows: usize, up: bool) -> Result<wgpu::Buffer, GpuError> {
    let (nv, nh, r) = (layer.n_visible as u32, layer.n_hidden as u32, rows as u32);
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    let out = if up {
        let out = buffers::zeros_f32(ctx, "chains_up", rows * layer.n_hidden);
        gemm.record(ctx, &mut encoder, &GemmOp::new(r, nv, nh, input, &layer.weights, &out).bias(&layer.hidden_bias).activation(Activation::Sigmoid))?;
        out
    } else {
        let out = buffers::zeros_f32(ctx, "chains_down", rows * layer.n_visible);
        gemm.record(ctx, &mut encoder, &GemmOp::new(r, nh, nv, input, &layer.weights, &out).transpose_b().bias(&layer.visible_bias).activation(layer.visible_activation()))?;
        out
    };
    submit(ctx, encoder);
    Ok(out)
}

impl GpuChains {
    /// Chains started from data cases propagated deterministically up to the top RBM
    /// (`GenerativeChains::from_data`).
    pub fn from_data(ctx: &GpuContext, dbn: &Dbn, data: &Dataset, cases: &[usize], seed: u64) -> Result<Self, GpuError> {
        let layers = upload(ctx, dbn)?;
        if data.n_inputs != layers[0].n_visible {
            return Err(GpuError(format!("data of {} inputs for a model with {} visible units", data.n_inputs, layers[0].n_visible)));
        }
        let gemm = GemmKernels::new(ctx);
        let mut input = vec![0.0; cases.len() * data.n_inputs];
        data.gather_into(cases, &mut input);
        let mut state = buffers::upload(ctx, "chains_input", &input);
        for layer in &layers[..layers.len() - 1] {
            state = propagate(ctx, &gemm, layer, &state, cases.len(), true)?;
        }
        let expectations = copy_of(ctx, &state, cases.len() * layers[layers.len() - 1].n_visible);
        Self::assemble(ctx, layers, gemm, state, expectations, cases.len(), seed)
    }

    /// Chains started from uniformly random binary states of the top hidden layer
    /// (`GenerativeChains::from_random`).
    pub fn from_random(ctx: &GpuContext, dbn: &Dbn, n_chains: usize, seed: u64) -> Result<Self, GpuError> {
        let layers = upload(ctx, dbn)?;
        let gemm = GemmKernels::new(ctx);
        let top = &layers[layers.len() - 1];
        let len = n_chains * top.n_hidden;
        let half = buffers::upload(ctx, "chains_half", &vec![0.5f32; len]);
        let hidden = buffers::zeros_f32(ctx, "chains_random_start", len);
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        SampleKernels::new(ctx).record(ctx, &mut encoder, &SampleOp::bernoulli(&half, &hidden, len as u32, RngStream::new(seed, 0, Purpose::RandomStart)))?;
        submit(ctx, encoder);
        let expectations = propagate(ctx, &gemm, top, &hidden, n_chains, false)?;
        let state = copy_of(ctx, &expectations, n_chains * top.n_visible);
        Self::assemble(ctx, layers, gemm, state, expectations, n_chains, seed)
    }

    fn assemble(ctx: &GpuContext, layers: Vec<GpuRbm>, gemm: GemmKernels, state: wgpu::Buffer, expectations: wgpu::Buffer, n_chains: usize, seed: u64) -> Result<Self, GpuError> {
        let top = &layers[layers.len() - 1];
        let (nv, nh, n) = (top.n_visible as u32, top.n_hidden as u32, n_chains as u32);
        let hidden = buffers::zeros_f32(ctx, "chains_hidden", n_chains * top.n_hidden);
        let hidden_sample = buffers::zeros_f32(ctx, "chains_hidden_sample", n_chains * top.n_hidden);
        let table = StepTable::new(ctx, &[StepSlot::default(); STEPS_PER_SUBMIT]);
        let (hidden_stream, visible_stream) = (RngStream::new(seed, 0, Purpose::GibbsHidden), RngStream::new(seed, 0, Purpose::GibbsVisible));
        let hidden_call = gemm.prepare(
            ctx,
            &GemmOp::new(n, nv, nh, &state, &top.weights, &hidden).bias(&top.hidden_bias).activation(Activation::Sigmoid).sample(&hidden_sample, hidden_stream).slots(&table),
        )?;
        let visible_op = GemmOp::new(n, nh, nv, &hidden_sample, &top.weights, &expectations).transpose_b().bias(&top.visible_bias).activation(top.visible_activation()).slots(&table);
        let (visible, noise) = match top.visible_activation() {
            Activation::Sigmoid => (gemm.prepare(ctx, &visible_op.sample(&state, visible_stream))?, None),
            Activation::Linear => {
                let noise = SampleKernels::new(ctx).prepare(ctx, &SampleOp::gaussian_noise(&state, n * nv, visible_stream).slots(&table))?;
                (gemm.prepare(ctx, &visible_op)?, Some(noise))
            }
        };
        let calls = StepCalls { hidden: hidden_call, visible, noise };
        let steps_per_submit = steps_per_submit(n_chains, top.n_visible, top.n_hidden);
        Ok(GpuChains { n_chains, layers, gemm, state, expectations, _hidden: hidden, hidden_sample, table, calls, steps_done: 0, steps_per_submit })
    }

    /// Layers of the model the chains sample from.
    pub fn n_layers(&self) -> usize {
        self.layers.len()
    }

    /// Samples from `dbn` from now on: the same architecture with new parameters (the model in
    /// training, after another epoch). The chains keep their state.
    pub fn set_model(&self, ctx: &GpuContext, dbn: &Dbn) -> Result<(), GpuError> {
        if dbn.layers.len() != self.layers.len() {
            return Err(GpuError(format!("a model of {} layers does not fit chains of {}", dbn.layers.len(), self.layers.len())));
        }
        self.layers.iter().zip(&dbn.layers).try_for_each(|(on_device, rbm)| on_device.write(ctx, rbm))
    }

    /// `steps` Gibbs steps in the top RBM (`GenerativeChains::advance`).
    pub fn advance(&mut self, ctx: &GpuContext, steps: usize) {
        let state_bytes = self.state.size().min(self.expectations.size());
        let mut left = steps;
        while left > 0 {
            let count = left.min(self.steps_per_submit);
            let slots: Vec<StepSlot> = (0..count).map(|i| StepSlot { step: self.steps_done + i as u64, row_shift: 0 }).collect();
            self.table.write(&ctx.queue, 0, &slots);
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            for slot in 0..count as u32 {
                {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    self.calls.hidden.dispatch(&mut pass, slot);
                    self.calls.visible.dispatch(&mut pass, slot);
                }
                if let Some(noise) = &self.calls.noise {
                    encoder.copy_buffer_to_buffer(&self.expectations, 0, &self.state, 0, state_bytes);
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    noise.dispatch(&mut pass, slot);
                }
            }
            submit(ctx, encoder);
            self.steps_done += count as u64;
            left -= count;
        }
    }

    /// The chains seen at the data layer: `n_chains × n_inputs` expectations
    /// (`GenerativeChains::images`).
    pub async fn images(&self, ctx: &GpuContext) -> Result<Vec<f32>, GpuError> {
        let mut current: Option<wgpu::Buffer> = None;
        for layer in self.layers[..self.layers.len() - 1].iter().rev() {
            let input = current.as_ref().unwrap_or(&self.expectations);
            current = Some(propagate(ctx, &self.gemm, layer, input, self.n_chains, false)?);
        }
        let out = current.as_ref().unwrap_or(&self.expectations);
        buffers::read_back(ctx, out, 0, self.n_chains * self.layers[0].n_visible).await
    }

    /// As bytes (0–255), clamped, for pixel data in [0, 1] (`GenerativeChains::image_bytes`).
    pub async fn image_bytes(&self, ctx: &GpuContext) -> Result<Vec<u8>, GpuError> {
        Ok(self.images(ctx).await?.iter().map(|&x| (x.clamp(0.0, 1.0) * 255.0).round() as u8).collect())
    }

    /// The top RBM's visible state (for tests and diagnostics).
    pub async fn state(&self, ctx: &GpuContext) -> Result<Vec<f32>, GpuError> {
        buffers::read_back(ctx, &self.state, 0, self.n_chains * self.layers[self.layers.len() - 1].n_visible).await
    }

    /// The top RBM's hidden samples of the last step (for tests: replaying a step on the CPU).
    pub async fn hidden_sample(&self, ctx: &GpuContext) -> Result<Vec<f32>, GpuError> {
        buffers::read_back(ctx, &self.hidden_sample, 0, self.n_chains * self.layers[self.layers.len() - 1].n_hidden).await
    }
}

fn upload(ctx: &GpuContext, dbn: &Dbn) -> Result<Vec<GpuRbm>, GpuError> {
    if dbn.layers.is_empty() {
        return Err(GpuError("generative chains need a DBN with at least one layer".into()));
    }
    Ok(dbn.layers.iter().map(|rbm| GpuRbm::upload(ctx, rbm)).collect())
}

fn copy_of(ctx: &GpuContext, source: &wgpu::Buffer, len: usize) -> wgpu::Buffer {
    let copy = buffers::zeros_f32(ctx, "chains_copy", len);
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(source, 0, &copy, 0, 4 * len as u64);
    submit(ctx, encoder);
    copy
}
