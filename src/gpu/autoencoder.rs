//! The sparse autoencoder's full-batch cost `J` and gradient on the device (issue 17; CPU
//! reference [`autoencoder::cost`](crate::autoencoder::cost), same layouts: both matrices
//! `n_visible × n_hidden`, θ in UFLDL's block order `W1, W2, b1, b2`).
//!
//! The data, the parameters, every activation and the gradient stay on the device: a
//! [`GpuCost`] uploads the cases once, and per evaluation only θ (or nothing, when a device
//! optimiser writes θ in place: [`GpuCost::evaluate_resident`]). One evaluation is one compute
//! pass and one submission, reading back `J`'s three sums (32 bytes), plus the gradient when the
//! optimiser runs on the host ([`GpuCost::evaluate_into`]; the [`AsyncObjective`] the stepwise
//! L-BFGS awaits, in a browser too; natively also the sync `Objective` the CPU's L-BFGS and
//! conjugate gradient minimise).
//!
//! The pass (`shaders/autoencoder_cost.wgsl` has the details): five products through the tuned
//! GEMM kernels of [`gemm`](crate::gpu::gemm), with their fused epilogues doing the rest of the
//! element-wise work where they can:
//!
//! | product | GEMM epilogue | then |
//! | --- | --- | --- |
//! | `a₂ = σ(X·W₁ + b₁)` | bias + sigmoid | column sums → ρ̂, KL, `s = β(−ρ/ρ̂ + (1−ρ)/(1−ρ̂))` |
//! | `x̂ = σ(a₂·W₂ᵀ + b₂)` | bias + sigmoid | `δ₃ = (x̂ − x)·x̂(1 − x̂)` fused with Σ(x̂ − x)² and δ₃'s column sums (∇b₂) |
//! | `δ₃·W₂ + s` | the sparsity term as the bias | `δ₂ = (…)⊙a₂(1 − a₂)` fused with its column sums (∇b₁) |
//! | `∇W₂ = δ₃ᵀ·a₂/m + λW₂` | alpha = 1/m, accumulating onto λW₂ | |
//! | `∇W₁ = Xᵀ·δ₂/m + λW₁` | alpha = 1/m, accumulating onto λW₁ | |
//!
//! `λW` is written by the same kernel that sums ‖W‖² and checks θ for NaN/Inf.
//!
//! Precision: the matrices are f32 as on the CPU; the sums of `J` are f32 on the device in a
//! fixed order (deterministic on one device; see the shader header), scaled and added in f64
//! on the host. NaN or infinity anywhere (θ, the data, a saturated hidden unit whose ρ̂ is 0
//! or 1, the gradient) is a [`CostError::NonFinite`] naming it as the CPU does, never a
//! number; a lost or failed device is a [`GpuError`], never a panic.
//!
//! Nothing is allocated per evaluation but the command buffer: bind groups, GEMM calls,
//! uniforms, the host's f32 copy of θ and the read-back buffers are made once.

mod kernels;
mod layout;

pub use kernels::AutoencoderKernels;
#[doc(hidden)]
pub use kernels::Params as AutoencoderParams;
pub(crate) use kernels::source;
pub use layout::{Block, ParamLayout, StatsLayout};

pub(crate) use self::layout::RESULTS;
use self::layout::{COLUMNS_PER_GROUP, WORKGROUP};
use super::buffers::{self, read_back};
use super::gemm::{GemmCall, GemmOp, MatRef, VecRef};
use super::{GpuContext, GpuError};
use crate::autoencoder::optimise::record_evaluation;
use crate::autoencoder::stepwise::AsyncObjective;
use crate::autoencoder::{CostError, CostSettings};
use crate::backend::Activation;
use std::fmt;

/// `J` and its three terms, in f64 from the device's f32 sums.
pub type DeviceCost = crate::autoencoder::stack::CostTerms;

/// Why an evaluation gave no number: the cost itself (shape, setting, NaN/Inf, as the CPU
/// reports it) or the device.
#[derive(Debug)]
pub enum GpuCostError {
    Cost(CostError),
    Device(GpuError),
}

impl fmt::Display for GpuCostError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            GpuCostError::Cost(e) => write!(f, "{e}"),
            GpuCostError::Device(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for GpuCostError {}

impl Clone for GpuCostError {
    fn clone(&self) -> Self {
        match self {
            GpuCostError::Cost(e) => GpuCostError::Cost(e.clone()),
            GpuCostError::Device(e) => GpuCostError::Device(GpuError(e.0.clone())),
        }
    }
}

impl From<CostError> for GpuCostError {
    fn from(e: CostError) -> Self {
        GpuCostError::Cost(e)
    }
}

impl From<GpuError> for GpuCostError {
    fn from(e: GpuError) -> Self {
        GpuCostError::Device(e)
    }
}

fn non_finite(what: String) -> GpuCostError {
    GpuCostError::Cost(CostError::NonFinite { what })
}

/// One recorded dispatch: a kernel of autoencoder_cost.wgsl (on the cost's bind group) or a
/// prepared product.
enum Dispatch {
    Kernel { pipeline: wgpu::ComputePipeline, groups: (u32, u32) },
    Product(GemmCall),
}

/// The device buffers of one batch: resident between evaluations.
struct Buffers {
    theta: wgpu::Buffer,
    gradient: wgpu::Buffer,
    /// X: nothing reads it back, but the bind groups must not outlive it on the web.
    _data: wgpu::Buffer,
    _hidden: wgpu::Buffer,
    _output: wgpu::Buffer,
    _hidden_delta: wgpu::Buffer,
    stats: wgpu::Buffer,
    params: wgpu::Buffer,
    /// Read-back of the gradient with the results after it.
    gradient_staging: wgpu::Buffer,
    /// Read-back of the results only.
    result_staging: wgpu::Buffer,
}

/// The cost and gradient of a sparse autoencoder on one resident batch.
pub struct GpuCost {
    ctx: GpuContext,
    rows: usize,
    layout: ParamLayout,
    stats: StatsLayout,
    settings: CostSettings,
    buffers: Buffers,
    bind_group: wgpu::BindGroup,
    forward: Vec<Dispatch>,
    backward: Vec<Dispatch>,
    /// θ in f32 as uploaded, zero in the gaps (kept to upload without allocating).
    host_params: Vec<f32>,
    /// Evaluations through the [`Objective`] interface.
    pub evaluations: usize,
    /// The first and the latest failed evaluation through the [`Objective`] interface (which
    /// can only answer NaN); `last_error` is cleared by a successful one.
    pub first_error: Option<GpuCostError>,
    pub last_error: Option<GpuCostError>,
    /// Bytes this cost has read back from the device (J's sums, gradients, ρ̂, the reads that
    /// name a NaN): what a host optimiser pays per evaluation, against a device one's.
    bytes_read_back: std::cell::Cell<u64>,
}

const MAX_GROUPS: usize = 65_535;

impl GpuCost {
    /// Uploads `data` (rows × n_visible) and prepares every dispatch of an evaluation. θ is
    /// zero until [`Self::set_params`].
    pub fn new(ctx: &GpuContext, kernels: &AutoencoderKernels, n_visible: usize, n_hidden: usize, data: &[f32], settings: CostSettings) -> Result<GpuCost, GpuCostError> {
        settings.validate()?;
        let (v, h) = (n_visible, n_hidden);
        if v == 0 || h == 0 || data.is_empty() || !data.len().is_multiple_of(v) {
            return Err(CostError::Shape(format!("{} data values do not make whole cases of {v} inputs (with {h} hidden units)", data.len())).into());
        }
        if let Some(k) = data.iter().position(|x| !x.is_finite()) {
            return Err(non_finite(format!("input value {} of case {} is {}", k % v, k / v, data[k])));
        }
        if let Some(failure) = ctx.failure() {
            return Err(GpuError(failure).into());
        }
        let rows = data.len() / v;
        let layout = ParamLayout::new(v, h);
        let stats = StatsLayout::new(&layout, rows);
        check_sizes(ctx, rows, &layout, &stats)?;

        let device = &ctx.device;
        let zeros = |label: &str, len: usize| buffers::zeros_f32(ctx, label, len);
        let buffers = Buffers {
            theta: zeros("autoencoder_theta", layout.len),
            gradient: zeros("autoencoder_gradient", layout.len),
            _data: buffers::upload(ctx, "autoencoder_data", data),
            _hidden: zeros("autoencoder_hidden", rows * h),
            _output: zeros("autoencoder_output", rows * v),
            _hidden_delta: zeros("autoencoder_hidden_delta", rows * h),
            stats: zeros("autoencoder_stats", stats.len),
            params: buffers::uniform_bytes(ctx, "autoencoder_params", bytemuck::bytes_of(&uniform(rows, &layout, &stats, &settings))),
            gradient_staging: staging(device, "autoencoder_gradient_read", 4 * (layout.len + RESULTS) as u64),
            result_staging: staging(device, "autoencoder_result_read", 4 * RESULTS as u64),
        };
        let b = &buffers;
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("autoencoder_cost"),
            layout: &kernels.layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: b.params.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: b.theta.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 2, resource: b._data.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 3, resource: b._hidden.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 4, resource: b._output.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 5, resource: b._hidden_delta.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 6, resource: b.gradient.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 7, resource: b.stats.as_entire_binding() },
            ],
        });

        let (m, v32, h32) = (rows as u32, v as u32, h as u32);
        let inv_rows = 1.0 / rows as f32;
        let theta_at = |offset: usize| MatRef::at(&b.theta, offset as u64, h32);
        let bias_at = |buffer, offset: usize| Some(VecRef { buffer, offset: offset as u64 });
        let prepare = |op: GemmOp| kernels.gemm.prepare(ctx, &op).map(Dispatch::Product);
        let mut encode = GemmOp::new(m, v32, h32, &b._data, &b.theta, &b._hidden).with_b(theta_at(0)).activation(Activation::Sigmoid);
        encode.bias = bias_at(&b.theta, layout.b1);
        let mut decode = GemmOp::new(m, h32, v32, &b._hidden, &b.theta, &b._output).transpose_b().with_b(theta_at(layout.w2)).activation(Activation::Sigmoid);
        decode.bias = bias_at(&b.theta, layout.b2);
        let mut back = GemmOp::new(m, v32, h32, &b._output, &b.theta, &b._hidden_delta).with_b(theta_at(layout.w2));
        back.bias = bias_at(&b.stats, stats.delta);
        let decoder_gradient = GemmOp::new(v32, m, h32, &b._output, &b._hidden, &b.gradient).transpose_a().with_c(MatRef::at(&b.gradient, layout.w2 as u64, h32)).alpha(inv_rows).accumulate();
        let encoder_gradient = GemmOp::new(v32, m, h32, &b._data, &b._hidden_delta, &b.gradient).transpose_a().with_c(MatRef::at(&b.gradient, 0, h32)).alpha(inv_rows).accumulate();

        let p = &kernels.pipelines;
        let kernel = |pipeline: &wgpu::ComputePipeline, groups: (usize, usize)| Dispatch::Kernel { pipeline: pipeline.clone(), groups: (groups.0 as u32, groups.1 as u32) };
        let columns = |width: usize| (width.div_ceil(COLUMNS_PER_GROUP), stats.row_groups);
        let finish = |width: usize| (width.div_ceil(WORKGROUP), 1);
        let forward = vec![
            kernel(&p.decay, (stats.decay_groups, 1)),
            prepare(encode)?,
            kernel(&p.mean_activation_partials, columns(h)),
            kernel(&p.finish_mean_activation, finish(h)),
            prepare(decode)?,
            kernel(&p.output_delta, columns(v)),
            kernel(&p.finish_cost, (1, 1)),
        ];
        let backward = vec![
            kernel(&p.finish_output_bias, finish(v)),
            prepare(back)?,
            kernel(&p.hidden_delta, columns(h)),
            kernel(&p.finish_hidden_bias, finish(h)),
            prepare(decoder_gradient)?,
            prepare(encoder_gradient)?,
        ];
        Ok(GpuCost {
            ctx: ctx.clone(),
            rows,
            layout,
            stats,
            settings,
            buffers,
            bind_group,
            forward,
            backward,
            host_params: vec![0.0; layout.len],
            evaluations: 0,
            first_error: None,
            last_error: None,
            bytes_read_back: std::cell::Cell::new(0),
        })
    }

    pub fn layout(&self) -> &ParamLayout {
        &self.layout
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn settings(&self) -> CostSettings {
        self.settings
    }

    /// Changes λ, ρ and β (one small write; the next evaluation uses them).
    pub fn set_settings(&mut self, settings: CostSettings) -> Result<(), CostError> {
        settings.validate()?;
        self.settings = settings;
        let params = uniform(self.rows, &self.layout, &self.stats, &settings);
        self.ctx.queue.write_buffer(&self.buffers.params, 0, bytemuck::bytes_of(&params));
        Ok(())
    }

    /// θ on the device, laid out as [`Self::layout`] says (for a device optimiser: write it in
    /// place, then [`Self::evaluate_resident`]).
    pub fn params_buffer(&self) -> &wgpu::Buffer {
        &self.buffers.theta
    }

    /// The gradient of the last evaluation with the gradient, laid out like θ.
    pub fn gradient_buffer(&self) -> &wgpu::Buffer {
        &self.buffers.gradient
    }

    /// Uploads the flat θ (`W1, W2, b1, b2`, as `Autoencoder::to_params`), rounded to f32 as the
    /// CPU cost rounds it; a value that is not finite in f32 is an error naming it.
    pub fn set_params(&mut self, params: &[f64]) -> Result<(), GpuCostError> {
        if params.len() != self.layout.n_params() {
            return Err(CostError::Shape(format!("the parameter vector has {} values; a {}×{} autoencoder has {}", params.len(), self.layout.n_visible, self.layout.n_hidden, self.layout.n_params())).into());
        }
        let mut bad = None;
        for block in self.layout.blocks() {
            let device = &mut self.host_params[block.device..block.device + block.len];
            for (k, (d, &p)) in device.iter_mut().zip(&params[block.flat..block.flat + block.len]).enumerate() {
                *d = p as f32;
                if !d.is_finite() && bad.is_none() {
                    bad = Some((block.device + k, *d));
                }
            }
        }
        if let Some((e, value)) = bad {
            return Err(non_finite(format!("{} is {value}", self.layout.name_of(e).unwrap_or_default())));
        }
        self.ctx.queue.write_buffer(&self.buffers.theta, 0, bytemuck::cast_slice(&self.host_params));
        Ok(())
    }

    /// Bytes read back so far by this cost's own evaluations and reads.
    pub fn bytes_read_back(&self) -> u64 {
        self.bytes_read_back.get()
    }

    fn count_read(&self, bytes: u64) {
        self.bytes_read_back.set(self.bytes_read_back.get() + bytes);
    }

    /// `J` at the θ on the device; with `gradient`, also the gradient, left on the device
    /// ([`Self::gradient_buffer`]). Reads back 32 bytes.
    pub async fn evaluate_resident(&mut self, gradient: bool) -> Result<DeviceCost, GpuCostError> {
        let mut encoder = self.record(gradient)?;
        encoder.copy_buffer_to_buffer(&self.buffers.stats, 0, &self.buffers.result_staging, 0, 4 * RESULTS as u64);
        self.ctx.queue.submit([encoder.finish()]);
        let results = {
            let bytes = super::map_staging(&self.ctx, &self.buffers.result_staging).await?;
            let results = results_of(&bytes);
            drop(bytes);
            self.buffers.result_staging.unmap();
            results
        };
        self.count_read(4 * RESULTS as u64);
        self.judge_results(results).await
    }

    /// Records an evaluation's pass at the resident θ into `encoder`, for a device optimiser
    /// that reads J's sums ([`Self::results_buffer`]) with its own scalars and then has them
    /// judged ([`Self::judge_results`]).
    pub(crate) fn record_into(&self, encoder: &mut wgpu::CommandEncoder, gradient: bool) -> Result<(), GpuError> {
        if let Some(failure) = self.ctx.failure() {
            return Err(GpuError(failure));
        }
        self.record_pass(encoder, gradient);
        Ok(())
    }

    /// The buffer whose first [`RESULTS`] f32 are an evaluation's sums and
    /// error counts.
    pub(crate) fn results_buffer(&self) -> &wgpu::Buffer {
        &self.buffers.stats
    }

    /// `J` at `params` (forward passes only).
    pub async fn cost_at(&mut self, params: &[f64]) -> Result<DeviceCost, GpuCostError> {
        self.set_params(params)?;
        self.evaluate_resident(false).await
    }

    /// `J` and its gradient at `params`, the gradient written into `gradient` (flat, like
    /// `params`): one upload of θ, one submission, one read-back of the gradient and `J`.
    pub async fn evaluate_into(&mut self, params: &[f64], gradient: &mut [f64]) -> Result<DeviceCost, GpuCostError> {
        if gradient.len() != self.layout.n_params() {
            return Err(CostError::Shape(format!("the gradient vector has {} values; the parameters {}", gradient.len(), self.layout.n_params())).into());
        }
        self.set_params(params)?;
        let mut encoder = self.record(true)?;
        let gradient_bytes = 4 * self.layout.len as u64;
        encoder.copy_buffer_to_buffer(&self.buffers.gradient, 0, &self.buffers.gradient_staging, 0, gradient_bytes);
        encoder.copy_buffer_to_buffer(&self.buffers.stats, 0, &self.buffers.gradient_staging, gradient_bytes, 4 * RESULTS as u64);
        self.ctx.queue.submit([encoder.finish()]);
        self.count_read(gradient_bytes + 4 * RESULTS as u64);
        let (results, bad) = {
            let bytes = super::map_staging(&self.ctx, &self.buffers.gradient_staging).await?;
            let (values, tail) = bytes.split_at(gradient_bytes as usize);
            let mut bad = None;
            for block in self.layout.blocks() {
                let words = values[4 * block.device..4 * (block.device + block.len)].chunks_exact(4);
                for (k, (g, word)) in gradient[block.flat..block.flat + block.len].iter_mut().zip(words).enumerate() {
                    let value = f32::from_le_bytes([word[0], word[1], word[2], word[3]]);
                    *g = f64::from(value);
                    if !value.is_finite() && bad.is_none() {
                        bad = Some((block.device + k, value));
                    }
                }
            }
            let results = results_of(tail);
            drop(bytes);
            self.buffers.gradient_staging.unmap();
            (results, bad)
        };
        let cost = self.judge_results(results).await?;
        if let Some((e, value)) = bad {
            return Err(non_finite(format!("gradient {} is {value}", self.layout.name_of(e).unwrap_or_default())));
        }
        Ok(cost)
    }

    /// `(J, gradient)` at `params`.
    pub async fn evaluate(&mut self, params: &[f64]) -> Result<(f64, Vec<f64>), GpuCostError> {
        let mut gradient = vec![0.0; self.layout.n_params()];
        let cost = self.evaluate_into(params, &mut gradient).await?;
        Ok((cost.total, gradient))
    }

    /// ρ̂ of the last evaluation: each hidden unit's mean activation over the batch.
    pub async fn mean_activation(&self) -> Result<Vec<f32>, GpuError> {
        self.count_read(4 * self.layout.n_hidden as u64);
        read_back(&self.ctx, &self.buffers.stats, self.stats.rho as u64, self.layout.n_hidden).await
    }

    /// The evaluation's pass, recorded into a new encoder.
    fn record(&self, gradient: bool) -> Result<wgpu::CommandEncoder, GpuError> {
        if let Some(failure) = self.ctx.failure() {
            return Err(GpuError(failure));
        }
        let mut encoder = self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("autoencoder_cost") });
        self.record_pass(&mut encoder, gradient);
        Ok(encoder)
    }

    fn record_pass(&self, encoder: &mut wgpu::CommandEncoder, gradient: bool) {
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("autoencoder_cost"), timestamp_writes: None });
            let steps = if gradient { self.forward.iter().chain(&self.backward[..]) } else { self.forward.iter().chain(&[][..]) };
            for step in steps {
                match step {
                    Dispatch::Kernel { pipeline, groups } => {
                        pass.set_pipeline(pipeline);
                        pass.set_bind_group(0, &self.bind_group, &[]);
                        pass.dispatch_workgroups(groups.0, groups.1, 1);
                    }
                    Dispatch::Product(call) => call.dispatch(&mut pass, 0),
                }
            }
        }
    }

    /// The cost from the device's sums, or the error the CPU would report, in its order:
    /// θ, the reconstruction, a saturated unit, the sparsity term.
    pub(crate) async fn judge_results(&self, results: [f32; RESULTS]) -> Result<DeviceCost, GpuCostError> {
        let [squared_error, squares, divergence, bad_params, saturated, bad_delta, ..] = results.map(f64::from);
        if bad_params != 0.0 {
            self.count_read(4 * self.layout.len as u64);
            let theta: Vec<f32> = read_back(&self.ctx, &self.buffers.theta, 0, self.layout.len).await?;
            let what = match theta.iter().position(|x| !x.is_finite()) {
                Some(e) => format!("{} is {}", self.layout.name_of(e).unwrap_or_else(|| format!("parameter {e} (padding)")), theta[e]),
                None => format!("{bad_params} parameters were not finite on the device, but are on reading them back"),
            };
            return Err(non_finite(what));
        }
        let reconstruction = 0.5 * squared_error / self.rows as f64;
        if !reconstruction.is_finite() {
            return Err(non_finite(format!("the reconstruction error is {reconstruction}")));
        }
        let h = self.layout.n_hidden;
        if saturated != 0.0 || bad_delta != 0.0 {
            self.count_read(4 * self.stats.kl as u64);
            let stats: Vec<f32> = read_back(&self.ctx, &self.buffers.stats, 0, self.stats.kl).await?;
            let rho = self.settings.sparsity_target;
            let means = &stats[self.stats.rho..self.stats.rho + h];
            if let Some(j) = means.iter().position(|&m| !(m > 0.0 && m < 1.0)) {
                let mean = f64::from(means[j]);
                let kl = rho * (rho / mean).ln() + (1.0 - rho) * ((1.0 - rho) / (1.0 - mean)).ln();
                return Err(non_finite(format!("the sparsity penalty: hidden unit {j}'s mean activation ρ̂ is {mean}, so KL(ρ‖ρ̂) is {kl} (the unit is saturated over the whole batch)")));
            }
            let deltas = &stats[self.stats.delta..self.stats.delta + h];
            let j = deltas.iter().position(|d| !d.is_finite()).unwrap_or(0);
            return Err(non_finite(format!("the sparsity term β(−ρ/ρ̂ + (1−ρ)/(1−ρ̂)) of hidden unit {j} is {} (ρ̂ = {})", deltas[j], means[j])));
        }
        let weight_decay = 0.5 * self.settings.weight_decay * squares;
        let sparsity = self.settings.sparsity_weight * divergence;
        for (term, value) in [("the weight decay", weight_decay), ("the sparsity penalty", sparsity)] {
            if !value.is_finite() {
                return Err(non_finite(format!("{term} is {value}")));
            }
        }
        Ok(DeviceCost { total: reconstruction + weight_decay + sparsity, reconstruction, weight_decay, sparsity })
    }

    pub(crate) fn record_outcome(&mut self, result: Result<DeviceCost, GpuCostError>) -> f64 {
        record_evaluation(&mut self.evaluations, &mut self.first_error, &mut self.last_error, result.map(|cost| cost.total))
    }
}

/// The optimisers' async seam ([`Lbfgs`](crate::autoencoder::lbfgs::Lbfgs)) on the device's
/// cost: each evaluation awaits its read-back, so a browser can drive L-BFGS on WebGPU. A failed
/// evaluation answers NaN, which the line search backs away from; the error is kept in
/// `first_error` / `last_error`, and a lost device (a [`GpuCostError::Device`]) interrupts the
/// iteration, to be taken again elsewhere.
impl AsyncObjective for GpuCost {
    async fn value(&mut self, x: &[f64]) -> f64 {
        let result = self.cost_at(x).await;
        self.record_outcome(result)
    }

    async fn value_and_gradient(&mut self, x: &[f64], gradient: &mut [f64]) -> f64 {
        let result = self.evaluate_into(x, gradient).await;
        if result.is_err() {
            gradient.fill(f64::NAN);
        }
        self.record_outcome(result)
    }

    fn interrupted(&self) -> bool {
        matches!(self.last_error, Some(GpuCostError::Device(_)))
    }
}

/// The CPU's L-BFGS and conjugate gradient on the device's cost, natively (a browser cannot
/// block on the device): [`AsyncObjective`]'s evaluations, blocked on.
#[cfg(not(target_arch = "wasm32"))]
impl crate::supervised::conjugate_gradient::Objective for GpuCost {
    fn value(&mut self, x: &[f64]) -> f64 {
        pollster::block_on(AsyncObjective::value(self, x))
    }

    fn value_and_gradient(&mut self, x: &[f64], gradient: &mut [f64]) -> f64 {
        pollster::block_on(AsyncObjective::value_and_gradient(self, x, gradient))
    }
}

fn uniform(rows: usize, layout: &ParamLayout, stats: &StatsLayout, settings: &CostSettings) -> AutoencoderParams {
    AutoencoderParams {
        rows: rows as u32,
        n_visible: layout.n_visible as u32,
        n_hidden: layout.n_hidden as u32,
        n_params: layout.len as u32,
        w2_offset: layout.w2 as u32,
        b1_offset: layout.b1 as u32,
        b2_offset: layout.b2 as u32,
        row_groups: stats.row_groups as u32,
        rho_offset: stats.rho as u32,
        delta_offset: stats.delta as u32,
        kl_offset: stats.kl as u32,
        columns_offset: stats.columns as u32,
        recon_offset: stats.recon as u32,
        recon_groups: stats.recon_groups as u32,
        decay_offset: stats.decay as u32,
        decay_groups: stats.decay_groups as u32,
        decay_span: stats.decay_span as u32,
        weight_decay: settings.weight_decay as f32,
        sparsity_target: settings.sparsity_target as f32,
        sparsity_weight: settings.sparsity_weight as f32,
        inv_rows: 1.0 / rows as f32,
        _pad0: 0,
        _pad1: 0,
        _pad2: 0,
    }
}

/// The shapes the kernels index with u32 and dispatch within WebGPU's grid limits, and the
/// buffers within the device's: an error naming what is too large, before anything is made.
fn check_sizes(ctx: &GpuContext, rows: usize, layout: &ParamLayout, stats: &StatsLayout) -> Result<(), GpuError> {
    let (v, h) = (layout.n_visible, layout.n_hidden);
    let too_large = |what: String| Err(GpuError(format!("autoencoder cost: {what}")));
    let widest = v.max(h);
    if widest.div_ceil(COLUMNS_PER_GROUP) > MAX_GROUPS || widest.div_ceil(WORKGROUP) > MAX_GROUPS || stats.row_groups > MAX_GROUPS {
        return too_large(format!("{rows} cases of {v} inputs and {h} hidden units exceed the 65,535 workgroups of one grid dimension"));
    }
    let limits = ctx.device.limits();
    let binding = limits.max_storage_buffer_binding_size.min(limits.max_buffer_size);
    let sized = [("the data (cases × inputs)", rows * v), ("the hidden activations (cases × hidden units)", rows * h), ("the parameters", layout.len), ("the statistics", stats.len)];
    for (what, len) in sized {
        let bytes = 4 * len as u64;
        if len >= u32::MAX as usize / 4 || bytes > binding {
            return too_large(format!("{what} take {bytes} bytes, over this device's storage binding limit of {binding} bytes"));
        }
    }
    Ok(())
}

fn staging(device: &wgpu::Device, label: &str, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size: bytes.next_multiple_of(8), usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST, mapped_at_creation: false })
}

fn results_of(bytes: &[u8]) -> [f32; RESULTS] {
    let mut results = [0.0f32; RESULTS];
    for (r, word) in results.iter_mut().zip(bytes.chunks_exact(4)) {
        *r = f32::from_le_bytes([word[0], word[1], word[2], word[3]]);
    }
    results
}
