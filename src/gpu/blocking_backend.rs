//! The [`Backend`] trait on the GPU kernels, natively: every call uploads its operands, runs the
//! GEMM or sampling kernel of `shaders/`, and waits for the result. It lets everything written
//! against the trait — initialisation trials, metrics, greedy propagation, supervised training
//! and fine-tuning, generative chains — run on the GPU unchanged, and lets the one
//! engine suite (tests/engine_suite/checks/operations.rs) check the GPU kernels through the
//! same calls as the CPU reference.
//!
//! The device-resident paths (`GpuCdTrainer`, `gpu::evaluate`, `GpuChains`, `gpu::ais`) are far
//! faster for whole epochs; this is for the work around them. Native only: a browser cannot
//! block on the GPU.
//!
//! Failures never produce garbage: a call the device cannot run (a lost device, an operand over
//! the binding limit) is computed by the CPU reference instead, with one notice on standard
//! error, and every later call goes to the CPU too once the device has failed.

use super::buffers::{self, read_back};
use super::gemm::{GemmKernels, GemmOp};
use super::sample::{SampleKernels, SampleOp};
use super::{GpuContext, GpuError};
use crate::backend::cpu::CpuBackend;
use crate::backend::{Activation, Backend, Weights};
use crate::rng::RngStream;
use std::sync::atomic::{AtomicBool, Ordering};

pub struct GpuBackend {
    ctx: GpuContext,
    gemm: GemmKernels,
    sample: SampleKernels,
    /// Set after the first failure: later calls go straight to the CPU.
    failed: AtomicBool,
}

impl GpuBackend {
    pub fn new(ctx: GpuContext) -> Self {
        GpuBackend { gemm: GemmKernels::new(&ctx), sample: SampleKernels::new(&ctx), ctx, failed: AtomicBool::new(false) }
    }

    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Whether a call has failed on the device (and everything since ran on the CPU).
    pub fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Runs `gpu` unless the device has failed before; `None` (after one notice) on failure,
    /// and the caller computes on the CPU.
    fn attempt<T>(&self, what: &str, gpu: impl FnOnce() -> Result<T, GpuError>) -> Option<T> {
        if self.has_failed() {
            return None;
        }
        match gpu() {
            Ok(value) => Some(value),
            Err(e) => {
                if !self.failed.swap(true, Ordering::Relaxed) {
                    eprintln!("notice: {what} failed on the GPU ({e}); this and later work runs on the CPU");
                }
                None
            }
        }
    }

    /// Records `op` (built over device copies of the host slices) and reads `len` f32 of `out`.
    fn product(&self, op: &GemmOp, out: &wgpu::Buffer, len: usize) -> Result<Vec<f32>, GpuError> {
        let mut encoder = self.ctx.device.create_command_encoder(&Default::default());
        self.gemm.record(&self.ctx, &mut encoder, op)?;
        self.ctx.queue.submit([encoder.finish()]);
        pollster::block_on(read_back(&self.ctx, out, 0, len))
    }

    /// `act(input · W + bias)` (`forward`) or `act(input · Wᵀ + bias)`, `rows` rows.
    fn linear_map(&self, weights: Weights, input: &[f32], bias: &[f32], activation: Activation, rows: usize, forward: bool) -> Result<Vec<f32>, GpuError> {
        let (nv, nh) = (weights.n_visible, weights.n_hidden);
        let (width_in, width_out) = if forward { (nv, nh) } else { (nh, nv) };
        let ctx = &self.ctx;
        let (a, w, b) = (buffers::upload(ctx, "backend_input", input), buffers::upload(ctx, "backend_weights", weights.values), buffers::upload(ctx, "backend_bias", bias));
        let out = buffers::zeros_f32(ctx, "backend_output", rows * width_out);
        let op = GemmOp::new(rows as u32, width_in as u32, width_out as u32, &a, &w, &out).bias(&b).activation(activation);
        let op = if forward { op } else { op.transpose_b() };
        self.product(&op, &out, rows * width_out)
    }
}

impl Backend for GpuBackend {
    fn describe(&self) -> String {
        format!("GPU (wgpu: {}, {:?})", self.ctx.adapter_info.name, self.ctx.adapter_info.backend)
    }

    fn visible_to_hidden(&self, weights: Weights, visible: &[f32], hidden_bias: &[f32], activation: Activation, hidden: &mut [f32]) {
        let rows = hidden.len() / weights.n_hidden.max(1);
        if rows == 0 {
            return;
        }
        match self.attempt("visible → hidden", || self.linear_map(weights, visible, hidden_bias, activation, rows, true)) {
            Some(values) => hidden.copy_from_slice(&values),
            None => CpuBackend.visible_to_hidden(weights, visible, hidden_bias, activation, hidden),
        }
    }

    fn hidden_to_visible(&self, weights: Weights, hidden: &[f32], visible_bias: &[f32], activation: Activation, visible: &mut [f32]) {
        let rows = visible.len() / weights.n_visible.max(1);
        if rows == 0 {
            return;
        }
        match self.attempt("hidden → visible", || self.linear_map(weights, hidden, visible_bias, activation, rows, false)) {
            Some(values) => visible.copy_from_slice(&values),
            None => CpuBackend.hidden_to_visible(weights, hidden, visible_bias, activation, visible),
        }
    }

    fn accumulate_outer(&self, weights_shape: (usize, usize), visible: &[f32], hidden: &[f32], scale: f32, gradient: &mut [f32]) {
        let (nv, nh) = weights_shape;
        let rows = visible.len() / nv.max(1);
        if rows == 0 {
            return;
        }
        let gpu = || {
            let ctx = &self.ctx;
            let (v, h, g) = (buffers::upload(ctx, "backend_visible", visible), buffers::upload(ctx, "backend_hidden", hidden), buffers::upload(ctx, "backend_gradient", gradient));
            self.product(&GemmOp::new(nv as u32, rows as u32, nh as u32, &v, &h, &g).transpose_a().alpha(scale).accumulate(), &g, nv * nh)
        };
        match self.attempt("the gradient product", gpu) {
            Some(values) => gradient.copy_from_slice(&values),
            None => CpuBackend.accumulate_outer(weights_shape, visible, hidden, scale, gradient),
        }
    }

    fn bernoulli(&self, probabilities: &[f32], stream: RngStream, samples: &mut [f32]) {
        if samples.is_empty() {
            return;
        }
        let gpu = || {
            let ctx = &self.ctx;
            let (p, out) = (buffers::upload(ctx, "backend_probabilities", probabilities), buffers::zeros_f32(ctx, "backend_samples", samples.len()));
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            self.sample.record(ctx, &mut encoder, &SampleOp::bernoulli(&p, &out, samples.len() as u32, stream))?;
            ctx.queue.submit([encoder.finish()]);
            pollster::block_on(read_back(ctx, &out, 0, samples.len()))
        };
        match self.attempt("Bernoulli sampling", gpu) {
            Some(values) => samples.copy_from_slice(&values),
            None => CpuBackend.bernoulli(probabilities, stream, samples),
        }
    }
}
