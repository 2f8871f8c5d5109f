//! The per-epoch monitor (`train::monitor::measure_epoch`) as one prepared plan on the device:
//! the dispatches of `gpu::evaluate`'s reconstruction errors, free energies, pseudo-log-likelihood
//! and hidden unit statistics, over the same cases, with the same kernels in the same order (so
//! the figures are those measures' own, bit for bit), built once for a model and data whose
//! buffers stay put (a trainer's resident ones) and replayed after every epoch.
//!
//! Called one by one, those measures cost five read-backs and the buffers, bind groups and
//! products of each call. Prepared, an epoch's monitor is a few submissions (each bounded as
//! `gpu::evaluate`'s are, for browser watchdogs: at most two products a chunk), one upload (the
//! pseudo-likelihood's flipped units, drawn per epoch) and one read-back of 5 sums and 3 values
//! per hidden unit. Measured on an H100 (tests/gpu_monitor.rs `monitor_cost_against_an_epoch`,
//! 784 × 500 CD-1, batches of 100, 1,000 measured and 1,000 held-out cases): 1.1–1.8 ms an
//! epoch against 2.2–3.3 ms one by one; 10–15% of a 10,000-case epoch (8–18 ms; 24% one by
//! one), 2% of a 60,000-case one (63–95 ms). The CPU's monitor costs the same share in
//! arithmetic (8 products a measured case against 5 a trained one).

use super::buffers;
use super::evaluate::{chunk_cases, chunks, params, EvalKernels, GpuDataset, GpuRbm, GAUSSIAN, SECOND_PASS};
use super::gemm::{GemmCall, GemmOp};
use super::reduce::{self, Dispatch, Step, Target};
use super::{read_ranges, GpuContext, GpuError};
use crate::backend::Activation;
use crate::data::split::spread_cases;
use crate::eval::metrics::FLAT_UNIT_DEVIATION;
use crate::eval::UnitStats;
use crate::model::VisibleUnits;
use crate::train::monitor::EpochMetrics;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Slots of the result buffer.
const SQUARED: u32 = 0;
const CROSS_ENTROPY: u32 = 1;
const FREE_ENERGY: u32 = 2;
const HELD_OUT_FREE_ENERGY: u32 = 3;
const PSEUDO_LIKELIHOOD: u32 = 4;
const SLOTS: usize = 5;

/// What a dispatch in a pass runs.
enum Work {
    Step(usize),
    Product(usize),
}

enum Op {
    Pass(Vec<Work>),
    ClearMoments,
    /// The chunk's free energies (written from case 0) to their place among all cases.
    CopyEnergies { held_out: bool, start: usize, rows: usize },
}

/// Per-case and per-chunk buffers, owned here: on the web a dropped buffer is destroyed.
struct Scratch {
    v: wgpu::Buffer,
    h: wgpu::Buffer,
    a: wgpu::Buffer,
    x: wgpu::Buffer,
    chunk_energies: wgpu::Buffer,
    squared: wgpu::Buffer,
    cross_entropy: wgpu::Buffer,
    energies: wgpu::Buffer,
    held_out_energies: wgpu::Buffer,
    pll_terms: wgpu::Buffer,
    flips: wgpu::Buffer,
    moments: wgpu::Buffer,
    result: wgpu::Buffer,
    _train_index: wgpu::Buffer,
    _held_out_index: wgpu::Buffer,
}

/// The three products of a chunk of `rows` cases: `h = σ(vW + c)`, `a = hWᵀ + b`, `x = vW + c`.
#[derive(Clone, Copy)]
struct Products {
    hidden: usize,
    visible: usize,
    linear: usize,
}

/// The monitor of one model on one training set (and optional held-out set), ready to run.
pub struct MonitorPlan {
    n_visible: usize,
    n_hidden: usize,
    n_train: usize,
    n_held_out: Option<usize>,
    bernoulli: bool,
    steps: Vec<Step>,
    products: Vec<GemmCall>,
    submissions: Vec<Vec<Op>>,
    s: Scratch,
    // Kept for the steps' and products' bindings.
    _rbm: GpuRbm,
    _train: GpuDataset,
    _held_out: Option<GpuDataset>,
}

impl MonitorPlan {
    /// Prepares the monitor of `rbm` on at most `max_cases` cases of `train` and of `held_out`,
    /// spread as `data::split::spread_cases` spreads them. The buffers of `rbm` and the data are
    /// bound as they are: write new weights into them, not new buffers.
    pub fn new(ctx: &GpuContext, kernels: &EvalKernels, rbm: GpuRbm, train: GpuDataset, held_out: Option<GpuDataset>, max_cases: usize) -> Result<Self, GpuError> {
        let (nv, nh) = super::evaluate::check_shapes(ctx, &rbm, &train)?;
        if let Some(held_out) = &held_out {
            super::evaluate::check_shapes(ctx, &rbm, held_out)?;
        }
        let index = |data: &GpuDataset, label: &str| {
            let cases: Vec<u32> = spread_cases(data.n_cases, max_cases).into_iter().map(|c| c as u32).collect();
            (buffers::upload(ctx, label, &cases), cases.len())
        };
        let (train_index, n_train) = index(&train, "monitor_train_cases");
        let (held_out_index, n_held_out) = match &held_out {
            Some(data) => index(data, "monitor_held_out_cases"),
            None => (buffers::zeros(ctx, "monitor_held_out_cases", 4), 0),
        };
        let chunk = chunk_cases(nv, nh).min(n_train.max(n_held_out).max(1));
        let f = |label: &str, len: usize| buffers::zeros_f32(ctx, label, len);
        let s = Scratch {
            v: f("monitor_v", chunk * nv),
            h: f("monitor_h", chunk * nh),
            a: f("monitor_a", chunk * nv),
            x: f("monitor_x", chunk * nh),
            chunk_energies: f("monitor_chunk_free_energies", chunk),
            squared: f("monitor_squared", n_train),
            cross_entropy: f("monitor_cross_entropy", n_train),
            energies: f("monitor_free_energies", n_train),
            held_out_energies: f("monitor_held_out_free_energies", n_held_out),
            pll_terms: f("monitor_pll_terms", n_train),
            flips: f("monitor_pll_flips", n_train),
            moments: f("monitor_unit_moments", 3 * nh),
            result: f("monitor_result", SLOTS),
            _train_index: train_index,
            _held_out_index: held_out_index,
        };
        let bernoulli = rbm.visible_units == VisibleUnits::Bernoulli;
        let mut plan = MonitorPlan {
            n_visible: nv,
            n_hidden: nh,
            n_train,
            n_held_out: held_out.as_ref().map(|_| n_held_out),
            bernoulli,
            steps: Vec::new(),
            products: Vec::new(),
            submissions: Vec::new(),
            s,
            _rbm: rbm,
            _train: train,
            _held_out: held_out,
        };
        plan.record_plan(ctx, kernels, chunk)?;
        Ok(plan)
    }

    fn step(&mut self, step: Step) -> Work {
        self.steps.push(step);
        Work::Step(self.steps.len() - 1)
    }

    /// The products for chunks of `rows` cases, made once per size.
    fn products_for(&mut self, ctx: &GpuContext, kernels: &EvalKernels, made: &mut Vec<(usize, Products)>, rows: usize) -> Result<Products, GpuError> {
        if let Some((_, p)) = made.iter().find(|(r, _)| *r == rows) {
            return Ok(*p);
        }
        let (r, nv, nh) = (rows as u32, self.n_visible as u32, self.n_hidden as u32);
        let (rbm, s) = (&self._rbm, &self.s);
        let ops = [
            GemmOp::new(r, nv, nh, &s.v, &rbm.weights, &s.h).bias(&rbm.hidden_bias).activation(Activation::Sigmoid),
            GemmOp::new(r, nh, nv, &s.h, &rbm.weights, &s.a).transpose_b().bias(&rbm.visible_bias),
            GemmOp::new(r, nv, nh, &s.v, &rbm.weights, &s.x).bias(&rbm.hidden_bias),
        ];
        let calls = ops.iter().map(|op| kernels.gemm.prepare(ctx, op)).collect::<Result<Vec<_>, _>>()?;
        let first = self.products.len();
        self.products.extend(calls);
        let p = Products { hidden: first, visible: first + 1, linear: first + 2 };
        made.push((rows, p));
        Ok(p)
    }

    /// The submissions, in `gpu::evaluate`'s order of dispatches within each measure.
    fn record_plan(&mut self, ctx: &GpuContext, kernels: &EvalKernels, chunk: usize) -> Result<(), GpuError> {
        let device = &ctx.device;
        let (nv, nh, n) = (self.n_visible, self.n_hidden, self.n_train);
        let mut made = Vec::new();
        let units = self._rbm.visible_units;
        self.submissions.push(vec![Op::ClearMoments]);
        for (start, rows) in chunks(n, chunk) {
            let p = self.products_for(ctx, kernels, &mut made, rows)?;
            // Reconstruction errors and the statistics' first pass (sums): σ(vW + c) serves both.
            let gather = self.step(kernels.gather(ctx, &self._train, &self.s._train_index, start, rows, false, &self.s.v));
            let flags = if self.bernoulli { 0 } else { GAUSSIAN };
            let recon_params = params(device, rows, nv, nh, flags, 0, start, 0.0);
            let recon = Step::new(device, "recon_terms", &kernels.recon, recon_params, &[(3, &self.s.v), (4, &self.s.a), (7, &self.s.squared), (8, &self.s.cross_entropy)], reduce::grid(rows as u32));
            let recon = self.step(recon);
            let moments = self.moments_step(ctx, kernels, rows, 0);
            self.submissions.push(vec![Op::Pass(vec![gather, Work::Product(p.hidden), Work::Product(p.visible), recon, moments])]);
            // Free energy, then the pseudo-log-likelihood of the binarised cases.
            let gather = self.step(kernels.gather(ctx, &self._train, &self.s._train_index, start, rows, false, &self.s.v));
            let energy = kernels.reduce.free_energy(device, &self.s.v, &self.s.x, &self._rbm.visible_bias, rows, nv, nh, units, &self.s.chunk_energies);
            let energy = self.step(energy);
            let mut ops = vec![Op::Pass(vec![gather, Work::Product(p.linear), energy]), Op::CopyEnergies { held_out: false, start, rows }];
            if self.bernoulli {
                let gather = self.step(kernels.gather(ctx, &self._train, &self.s._train_index, start, rows, true, &self.s.v));
                let pll_params = params(device, rows, nv, nh, 0, start, start, 0.0);
                let s = &self.s;
                let resources = [(2, &s.flips), (3, &s.v), (4, &s.x), (5, &self._rbm.weights), (6, &self._rbm.visible_bias), (7, &s.pll_terms)];
                let pll = Step::new(device, "pll_terms", &kernels.pll, pll_params, &resources, reduce::grid(rows as u32));
                let pll = self.step(pll);
                ops.push(Op::Pass(vec![gather, Work::Product(p.linear), pll]));
            }
            self.submissions.push(ops);
        }
        // The statistics' second pass: central moments about the means the first one summed.
        for (start, rows) in chunks(n, chunk) {
            let p = self.products_for(ctx, kernels, &mut made, rows)?;
            let gather = self.step(kernels.gather(ctx, &self._train, &self.s._train_index, start, rows, false, &self.s.v));
            let moments = self.moments_step(ctx, kernels, rows, SECOND_PASS);
            self.submissions.push(vec![Op::Pass(vec![gather, Work::Product(p.hidden), moments])]);
        }
        if let Some(n_held_out) = self.n_held_out {
            for (start, rows) in chunks(n_held_out, chunk) {
                let p = self.products_for(ctx, kernels, &mut made, rows)?;
                let held_out = self._held_out.as_ref().expect("a held-out count comes with held-out data");
                let gather = self.step(kernels.gather(ctx, held_out, &self.s._held_out_index, start, rows, false, &self.s.v));
                let energy = kernels.reduce.free_energy(device, &self.s.v, &self.s.x, &self._rbm.visible_bias, rows, nv, nh, units, &self.s.chunk_energies);
                let energy = self.step(energy);
                self.submissions.push(vec![Op::Pass(vec![gather, Work::Product(p.linear), energy]), Op::CopyEnergies { held_out: true, start, rows }]);
            }
        }
        let sums = [
            (SQUARED, &self.s.squared, n),
            (CROSS_ENTROPY, &self.s.cross_entropy, n),
            (FREE_ENERGY, &self.s.energies, n),
            (HELD_OUT_FREE_ENERGY, &self.s.held_out_energies, self.n_held_out.unwrap_or(0)),
            (PSEUDO_LIKELIHOOD, &self.s.pll_terms, n),
        ];
        let sums: Vec<Step> = sums.iter().map(|&(slot, values, n)| kernels.reduce.finish_sum(device, values, n, Target { buffer: &self.s.result, slot, accumulate: false })).collect();
        let sums = sums.into_iter().map(|step| self.step(step)).collect();
        self.submissions.push(vec![Op::Pass(sums)]);
        Ok(())
    }

    fn moments_step(&mut self, ctx: &GpuContext, kernels: &EvalKernels, rows: usize, flags: u32) -> Work {
        let nh = self.n_hidden;
        let p = params(&ctx.device, rows, nh, nh, flags, 0, 0, self.n_train as f32);
        let step = Step::new(&ctx.device, "unit_moments", &kernels.moments, p, &[(3, &self.s.h), (7, &self.s.moments)], reduce::grid(nh.div_ceil(256) as u32));
        self.step(step)
    }

    fn record(&self, encoder: &mut wgpu::CommandEncoder, ops: &[Op]) {
        for op in ops {
            match op {
                Op::Pass(work) => {
                    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("epoch_monitor"), timestamp_writes: None });
                    for w in work {
                        match *w {
                            Work::Step(i) => self.steps[i].record_in(&mut pass),
                            Work::Product(i) => self.products[i].dispatch(&mut pass, 0),
                        }
                    }
                }
                Op::ClearMoments => encoder.clear_buffer(&self.s.moments, 0, None),
                &Op::CopyEnergies { held_out, start, rows } => {
                    let to = if held_out { &self.s.held_out_energies } else { &self.s.energies };
                    encoder.copy_buffer_to_buffer(&self.s.chunk_energies, 0, to, 4 * start as u64, 4 * rows as u64);
                }
            }
        }
    }

    /// The monitor's figures for the model as its buffers hold it now; `seed` chooses the
    /// pseudo-likelihood's flipped units (`train::monitor::monitor_seed`).
    pub async fn measure(&self, ctx: &GpuContext, seed: u64) -> Result<EpochMetrics, GpuError> {
        let (nv, nh, n) = (self.n_visible, self.n_hidden, self.n_train);
        if self.bernoulli {
            // One draw per case in case order, as the CPU's batches make them.
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let flips: Vec<u32> = (0..n).map(|_| rng.random_range(0..nv) as u32).collect();
            ctx.queue.write_buffer(&self.s.flips, 0, bytemuck::cast_slice(&flips));
        }
        for ops in &self.submissions {
            let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("epoch_monitor") });
            self.record(&mut encoder, ops);
            ctx.queue.submit([encoder.finish()]);
        }
        let parts = read_ranges(ctx, &[(&self.s.result, 0, 4 * SLOTS as u64), (&self.s.moments, 0, 4 * 3 * nh as u64)]).await?;
        let sums: Vec<f64> = bytemuck::pod_collect_to_vec::<u8, f32>(&parts[0]).into_iter().map(f64::from).collect();
        let m: Vec<f32> = bytemuck::pod_collect_to_vec(&parts[1]);
        let cases = n.max(1) as f64;
        let count = n as f64;
        let hidden_units = (0..nh)
            .map(|j| {
                let standard_deviation = (m[nh + j] as f64 / count).sqrt();
                let skewness = if standard_deviation < FLAT_UNIT_DEVIATION { 0.0 } else { m[2 * nh + j] as f64 / count / standard_deviation.powi(3) };
                UnitStats { mean_activation: m[j] as f64 / count, standard_deviation, skewness }
            })
            .collect();
        Ok(EpochMetrics {
            recon_mse: sums[SQUARED as usize] / (cases * nv as f64),
            recon_cross_entropy: self.bernoulli.then(|| sums[CROSS_ENTROPY as usize] / cases),
            free_energy_train: sums[FREE_ENERGY as usize] / cases,
            free_energy_held_out: self.n_held_out.map(|held| sums[HELD_OUT_FREE_ENERGY as usize] / held.max(1) as f64),
            pseudo_log_likelihood: self.bernoulli.then(|| sums[PSEUDO_LIKELIHOOD as usize] / cases),
            hidden_units,
        })
    }
}
