//! Evaluation of an RBM on the device: the GPU counterparts of `eval::reconstruction_errors`,
//! `eval::mean_free_energy`, `eval::pseudo_log_likelihood`, `eval::hidden_unit_statistics` and
//! `train::greedy::propagate_dataset`, on a model ([`GpuRbm`]) and a data set ([`GpuDataset`])
//! uploaded once.
//!
//! The evaluated cases are the CPU's (`spread_cases`), uploaded as an index list. They run in
//! chunks of at most [`CHUNK_CASES`] (fewer for wide layers, see [`chunk_cases`]), one submission each, so no submission runs long enough to trip a
//! browser's GPU watchdog: gather the chunk's rows as f32 (`shaders/evaluate.wgsl`), the
//! matrix products through [`GemmKernels`], then a kernel writing one value per case. Per-case
//! values stay on the device and are summed once at the end (`reduce.wgsl`'s `finish_sum`),
//! so only a few scalars come back (the unit statistics: three per hidden unit).
//!
//! Agreement with the CPU (which sums in f64): ~1e-6 relative for the sums (f32 terms, fixed
//! tree order), the GEMMs' f32 rounding in the linear parts. Measured on lavapipe
//! (tests/gpu_eval.rs, 2000 MNIST digits, 784 × 200): MSE, cross-entropy, free energy and
//! pseudo-log-likelihood within 1.3e-7 relative; unit means 6.4e-7 and deviations 4e-8
//! absolute, skewness 5e-5 relative; propagated probabilities 3.6e-7 absolute. The pseudo-log-likelihood draws its
//! flipped units from the CPU's ChaCha stream (host side: one index per case), so both score
//! the same flips; the GPU sums the free-energy difference term by term (see the shader
//! header), which is closer to the exact value than the CPU's difference of two f32 GEMMs.

use super::buffers;
use super::gemm::{GemmCall, GemmKernels, GemmOp, MatRef};
use super::reduce::{self, Dispatch, ReduceKernels, Step, Target};
use super::{GpuContext, GpuError};
use crate::backend::Activation;
use crate::data::split::spread_cases;
use crate::data::{CaseValues, Dataset};
use crate::eval::metrics::FLAT_UNIT_DEVIATION;
use crate::eval::{ReconstructionErrors, UnitStats};
use crate::model::{Rbm, VisibleUnits};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SOURCE: &str = include_str!("../../shaders/evaluate.wgsl");

/// Most cases per submission of the per-case measures.
pub const CHUNK_CASES: usize = 1024;
/// Floating-point operations per submission, at most (down to one step or 64 cases): a slow
/// GPU (~10 GFLOP/s: integrated graphics, SwiftShader) finishes that well inside a browser
/// watchdog's few seconds. 784 × 500 layers keep chunks of 1024 cases.
pub const FLOPS_PER_SUBMIT: f64 = 4e9;

/// Cases per chunk for an `nv × nh` layer (two products of 2·nv·nh per case).
pub fn chunk_cases(nv: usize, nh: usize) -> usize {
    ((FLOPS_PER_SUBMIT / (4.0 * nv as f64 * nh as f64)) as usize).clamp(64, CHUNK_CASES)
}
/// Cases per submission of [`EvalKernels::propagate`] (a single product each).
pub const PROPAGATE_CHUNK: usize = 4096;

const IS_U8: u32 = 1;
const BINARIZE: u32 = 2;
pub(crate) const GAUSSIAN: u32 = 4;
pub(crate) const SECOND_PASS: u32 = 8;

/// evaluate.wgsl as compiled (common.wgsl's `byte_to_unit` converts pixels as the GEMM does).
pub(crate) fn source() -> String {
    super::shader::assemble(SOURCE, &[], false)
}

/// `struct Params` of evaluate.wgsl (tests/gpu_uniform_layout.rs compares the two).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    pub rows: u32,
    pub width: u32,
    pub n_hidden: u32,
    pub flags: u32,
    pub index_start: u32,
    pub out_offset: u32,
    pub count: f32,
    pub _pad: u32,
}

/// An RBM's parameters on the device.
pub struct GpuRbm {
    pub n_visible: usize,
    pub n_hidden: usize,
    pub visible_units: VisibleUnits,
    /// n_visible × n_hidden, row-major (as `Rbm::weights`).
    pub weights: wgpu::Buffer,
    pub visible_bias: wgpu::Buffer,
    pub hidden_bias: wgpu::Buffer,
}

impl GpuRbm {
    pub fn upload(ctx: &GpuContext, rbm: &Rbm) -> Self {
        GpuRbm {
            n_visible: rbm.n_visible,
            n_hidden: rbm.n_hidden,
            visible_units: rbm.visible_units,
            weights: buffers::upload(ctx, "rbm_weights", &rbm.weights),
            visible_bias: buffers::upload(ctx, "rbm_visible_bias", &rbm.visible_bias),
            hidden_bias: buffers::upload(ctx, "rbm_hidden_bias", &rbm.hidden_bias),
        }
    }

    /// Overwrites the parameters with those of `rbm`, which must have the same shape (a model
    /// that trained on: the chains sampling from it follow without new buffers).
    pub fn write(&self, ctx: &GpuContext, rbm: &Rbm) -> Result<(), GpuError> {
        if (rbm.n_visible, rbm.n_hidden, rbm.visible_units) != (self.n_visible, self.n_hidden, self.visible_units) {
            return Err(GpuError(format!("a {} × {} RBM does not fit the {} × {} one on the device", rbm.n_visible, rbm.n_hidden, self.n_visible, self.n_hidden)));
        }
        ctx.queue.write_buffer(&self.weights, 0, bytemuck::cast_slice(&rbm.weights));
        ctx.queue.write_buffer(&self.visible_bias, 0, bytemuck::cast_slice(&rbm.visible_bias));
        ctx.queue.write_buffer(&self.hidden_bias, 0, bytemuck::cast_slice(&rbm.hidden_bias));
        Ok(())
    }

    pub fn visible_activation(&self) -> Activation {
        match self.visible_units {
            VisibleUnits::Bernoulli => Activation::Sigmoid,
            VisibleUnits::Gaussian => Activation::Linear,
        }
    }
}

/// A data set on the device: u8 pixels packed 4 per u32 (as the trainer keeps them) or f32.
pub struct GpuDataset {
    pub n_cases: usize,
    pub n_inputs: usize,
    pub values: wgpu::Buffer,
    pub is_u8: bool,
}

impl GpuDataset {
    pub fn upload(ctx: &GpuContext, data: &Dataset) -> Result<Self, GpuError> {
        let (values, is_u8) = match &data.values {
            CaseValues::Bytes(bytes) => (bytes.len() as u64, true),
            CaseValues::Floats(floats) => (4 * floats.len() as u64, false),
        };
        check_buffer_size(ctx, values, &data.name)?;
        let values = match &data.values {
            CaseValues::Bytes(bytes) => buffers::upload_bytes(ctx, "data_u8", bytes),
            CaseValues::Floats(floats) => buffers::upload(ctx, "data_f32", floats),
        };
        Ok(GpuDataset { n_cases: data.n_cases, n_inputs: data.n_inputs, values, is_u8 })
    }

    /// All values as f32, case by case (u8 pixels as byte / 255).
    pub async fn download(&self, ctx: &GpuContext) -> Result<Vec<f32>, GpuError> {
        let len = self.n_cases * self.n_inputs;
        if self.is_u8 {
            let words: Vec<u32> = buffers::read_back(ctx, &self.values, 0, len.div_ceil(4)).await?;
            let bytes: &[u8] = bytemuck::cast_slice(&words);
            Ok(bytes[..len].iter().map(|&b| f32::from(b) / 255.0).collect())
        } else {
            buffers::read_back(ctx, &self.values, 0, len).await
        }
    }

    /// The data set as `propagate_dataset` returns it, for the propagated values of `source`
    /// (whose labels it keeps).
    pub async fn to_propagated_dataset(&self, ctx: &GpuContext, source: &Dataset) -> Result<Dataset, GpuError> {
        let values = self.download(ctx).await?;
        Ok(Dataset {
            labels: source.labels.clone(),
            input_names: (0..self.n_inputs).map(|j| format!("h{j}")).collect(),
            ..Dataset::from_floats(&format!("{} (propagated)", source.name), self.n_inputs, values)
        })
    }
}

fn check_buffer_size(ctx: &GpuContext, bytes: u64, what: &str) -> Result<(), GpuError> {
    let max = ctx.device.limits().max_buffer_size;
    if bytes > max {
        return Err(GpuError(format!("{what}: {bytes} bytes exceed this device's buffer limit of {max} bytes")));
    }
    Ok(())
}

/// Records `steps` into one compute pass and submits it.
fn submit(ctx: &GpuContext, label: &str, record: impl FnOnce(&mut wgpu::ComputePass<'_>)) {
    let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes: None });
        record(&mut pass);
    }
    ctx.queue.submit([encoder.finish()]);
}

/// `(start, rows)` of each chunk of `n` cases.
pub(crate) fn chunks(n: usize, size: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..n).step_by(size.max(1)).map(move |start| (start, size.min(n - start)))
}

/// The products of one chunk size, rebuilt only when the size changes (the last chunk).
struct Products<'a> {
    rows: usize,
    calls: Vec<GemmCall>,
    build: Box<dyn Fn(usize) -> Result<Vec<GemmCall>, GpuError> + 'a>,
}

impl<'a> Products<'a> {
    fn new(build: impl Fn(usize) -> Result<Vec<GemmCall>, GpuError> + 'a) -> Self {
        Products { rows: 0, calls: Vec::new(), build: Box::new(build) }
    }

    fn for_rows(&mut self, rows: usize) -> Result<&[GemmCall], GpuError> {
        if rows != self.rows {
            self.calls = (self.build)(rows)?;
            self.rows = rows;
        }
        Ok(&self.calls)
    }
}

/// The compiled evaluation kernels of one device, with the GEMM and reduction kernels they
/// use. Build once per device.
pub struct EvalKernels {
    pub gemm: GemmKernels,
    pub reduce: ReduceKernels,
    gather: wgpu::ComputePipeline,
    pub(crate) recon: wgpu::ComputePipeline,
    pub(crate) pll: wgpu::ComputePipeline,
    pub(crate) moments: wgpu::ComputePipeline,
}

/// `Params` of evaluate.wgsl.
#[allow(clippy::too_many_arguments)]
pub(crate) fn params(device: &wgpu::Device, rows: usize, width: usize, n_hidden: usize, flags: u32, index_start: usize, out_offset: usize, count: f32) -> wgpu::Buffer {
    let values = Params { rows: rows as u32, width: width as u32, n_hidden: n_hidden as u32, flags, index_start: index_start as u32, out_offset: out_offset as u32, count, _pad: 0 };
    reduce::uniform_of(device, "evaluate_params", &values)
}

impl EvalKernels {
    pub fn new(ctx: &GpuContext) -> Self {
        let device = &ctx.device;
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some("evaluate"), source: wgpu::ShaderSource::Wgsl(source().into()) });
        EvalKernels {
            gemm: GemmKernels::new(ctx),
            reduce: ReduceKernels::new(device),
            gather: reduce::pipeline(device, &module, "gather_cases"),
            recon: reduce::pipeline(device, &module, "recon_terms"),
            pll: reduce::pipeline(device, &module, "pll_terms"),
            moments: reduce::pipeline(device, &module, "unit_moments"),
        }
    }

    /// Rows `index[start..start + rows]` of `data` into `out` (rows × n_inputs f32).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn gather(&self, ctx: &GpuContext, data: &GpuDataset, index: &wgpu::Buffer, start: usize, rows: usize, binarize: bool, out: &wgpu::Buffer) -> Step {
        let flags = if data.is_u8 { IS_U8 } else { 0 } | if binarize { BINARIZE } else { 0 };
        let p = params(&ctx.device, rows, data.n_inputs, 0, flags, start, 0, 0.0);
        let groups = (rows * data.n_inputs).div_ceil(256) as u32;
        Step::new(&ctx.device, "gather_cases", &self.gather, p, &[(1, &data.values), (2, index), (7, out)], reduce::grid(groups))
    }

    /// Sums the first `n` values of each buffer into `result[slot]`, then reads `result` back.
    async fn sums(&self, ctx: &GpuContext, values: &[&wgpu::Buffer], n: usize) -> Result<Vec<f64>, GpuError> {
        let result = buffers::zeros_f32(ctx, "evaluate_result", values.len());
        let steps: Vec<Step> = values
            .iter()
            .enumerate()
            .map(|(slot, v)| self.reduce.finish_sum(&ctx.device, v, n, Target { buffer: &result, slot: slot as u32, accumulate: false }))
            .collect();
        submit(ctx, "evaluate_sums", |pass| steps.record_in(pass));
        Ok(buffers::read_back::<f32>(ctx, &result, 0, values.len()).await?.into_iter().map(f64::from).collect())
    }

    /// `eval::reconstruction_errors` on the device.
    pub async fn reconstruction_errors(&self, ctx: &GpuContext, rbm: &GpuRbm, data: &GpuDataset, max_cases: usize) -> Result<ReconstructionErrors, GpuError> {
        let (nv, nh) = check_shapes(ctx, rbm, data)?;
        let (index, n) = case_index(ctx, data, max_cases);
        let chunk = chunk_cases(nv, nh).min(n.max(1));
        let f = |label: &str, len: usize| buffers::zeros_f32(ctx, label, len);
        let (v, h, a) = (f("eval_v", chunk * nv), f("eval_h", chunk * nh), f("eval_a", chunk * nv));
        let (squared, cross_entropy) = (f("eval_squared", n), f("eval_cross_entropy", n));
        let bernoulli = rbm.visible_units == VisibleUnits::Bernoulli;
        let mut products = Products::new(|rows| {
            let r = rows as u32;
            Ok(vec![
                self.gemm.prepare(ctx, &GemmOp::new(r, nv as u32, nh as u32, &v, &rbm.weights, &h).bias(&rbm.hidden_bias).activation(Activation::Sigmoid))?,
                self.gemm.prepare(ctx, &GemmOp::new(r, nh as u32, nv as u32, &h, &rbm.weights, &a).transpose_b().bias(&rbm.visible_bias))?,
            ])
        });
        for (start, rows) in chunks(n, chunk) {
            let gather = self.gather(ctx, data, &index, start, rows, false, &v);
            let p = params(&ctx.device, rows, nv, nh, if bernoulli { 0 } else { GAUSSIAN }, 0, start, 0.0);
            let terms = Step::new(&ctx.device, "recon_terms", &self.recon, p, &[(3, &v), (4, &a), (7, &squared), (8, &cross_entropy)], reduce::grid(rows as u32));
            let calls = products.for_rows(rows)?;
            submit(ctx, "reconstruction_errors", |pass| {
                gather.record_in(pass);
                calls.iter().for_each(|c| c.dispatch(pass, 0));
                terms.record_in(pass);
            });
        }
        let sums = self.sums(ctx, &[&squared, &cross_entropy], n).await?;
        let n_cases = n.max(1) as f64;
        Ok(ReconstructionErrors { mean_squared_error: sums[0] / (n_cases * nv as f64), cross_entropy: bernoulli.then_some(sums[1] / n_cases) })
    }

    /// `eval::mean_free_energy` on the device; with `binarize`, of the data set at 0.5 first
    /// (as `deepbelief eval --binarize`).
    pub async fn mean_free_energy(&self, ctx: &GpuContext, rbm: &GpuRbm, data: &GpuDataset, max_cases: usize, binarize: bool) -> Result<f64, GpuError> {
        let (nv, nh) = check_shapes(ctx, rbm, data)?;
        let (index, n) = case_index(ctx, data, max_cases);
        let chunk = chunk_cases(nv, nh).min(n.max(1));
        let (v, x) = (buffers::zeros_f32(ctx, "eval_v", chunk * nv), buffers::zeros_f32(ctx, "eval_x", chunk * nh));
        let energies = buffers::zeros_f32(ctx, "eval_free_energies", n);
        let chunk_energies = buffers::zeros_f32(ctx, "eval_chunk_free_energies", chunk);
        let mut products = Products::new(|rows| Ok(vec![self.gemm.prepare(ctx, &GemmOp::new(rows as u32, nv as u32, nh as u32, &v, &rbm.weights, &x).bias(&rbm.hidden_bias))?]));
        for (start, rows) in chunks(n, chunk) {
            let gather = self.gather(ctx, data, &index, start, rows, binarize, &v);
            let energy = self.reduce.free_energy(&ctx.device, &v, &x, &rbm.visible_bias, rows, nv, nh, rbm.visible_units, &chunk_energies);
            let calls = products.for_rows(rows)?;
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            reduce::record(&mut encoder, "mean_free_energy", &[&gather]);
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                calls.iter().for_each(|c| c.dispatch(&mut pass, 0));
                energy.record_in(&mut pass);
            }
            // reduce.wgsl's free_energy writes from case 0; the chunk's values join the rest here.
            encoder.copy_buffer_to_buffer(&chunk_energies, 0, &energies, 4 * start as u64, 4 * rows as u64);
            ctx.queue.submit([encoder.finish()]);
        }
        Ok(self.sums(ctx, &[&energies], n).await?[0] / n.max(1) as f64)
    }

    /// `eval::pseudo_log_likelihood` on the device, with the CPU's flipped units.
    pub async fn pseudo_log_likelihood(&self, ctx: &GpuContext, rbm: &GpuRbm, data: &GpuDataset, max_cases: usize, seed: u64) -> Result<f64, GpuError> {
        if rbm.visible_units != VisibleUnits::Bernoulli {
            return Err(GpuError("the pseudo-log-likelihood is defined only for binary (Bernoulli) visible units".into()));
        }
        let (nv, nh) = check_shapes(ctx, rbm, data)?;
        let (index, n) = case_index(ctx, data, max_cases);
        // One draw per case in case order, as the CPU's batches make them.
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let flips: Vec<u32> = (0..n).map(|_| rng.random_range(0..nv) as u32).collect();
        let flips = buffers::upload(ctx, "pll_flips", &flips);
        let chunk = chunk_cases(nv, nh).min(n.max(1));
        let (v, x) = (buffers::zeros_f32(ctx, "eval_v", chunk * nv), buffers::zeros_f32(ctx, "eval_x", chunk * nh));
        let terms = buffers::zeros_f32(ctx, "pll_terms", n);
        let mut products = Products::new(|rows| Ok(vec![self.gemm.prepare(ctx, &GemmOp::new(rows as u32, nv as u32, nh as u32, &v, &rbm.weights, &x).bias(&rbm.hidden_bias))?]));
        for (start, rows) in chunks(n, chunk) {
            let gather = self.gather(ctx, data, &index, start, rows, true, &v);
            let p = params(&ctx.device, rows, nv, nh, 0, start, start, 0.0);
            let resources = [(2, &flips), (3, &v), (4, &x), (5, &rbm.weights), (6, &rbm.visible_bias), (7, &terms)];
            let pll = Step::new(&ctx.device, "pll_terms", &self.pll, p, &resources, reduce::grid(rows as u32));
            let calls = products.for_rows(rows)?;
            submit(ctx, "pseudo_log_likelihood", |pass| {
                gather.record_in(pass);
                calls.iter().for_each(|c| c.dispatch(pass, 0));
                pll.record_in(pass);
            });
        }
        Ok(self.sums(ctx, &[&terms], n).await?[0] / n.max(1) as f64)
    }

    /// `eval::hidden_unit_statistics` on the device: two passes over the cases (sums, then
    /// central moments about the mean), the hidden probabilities recomputed in the second.
    pub async fn hidden_unit_statistics(&self, ctx: &GpuContext, rbm: &GpuRbm, data: &GpuDataset, max_cases: usize) -> Result<Vec<UnitStats>, GpuError> {
        let (nv, nh) = check_shapes(ctx, rbm, data)?;
        let (index, n) = case_index(ctx, data, max_cases);
        if n == 0 {
            return Ok(vec![UnitStats { mean_activation: f64::NAN, standard_deviation: f64::NAN, skewness: 0.0 }; nh]);
        }
        let chunk = chunk_cases(nv, nh).min(n);
        let (v, h) = (buffers::zeros_f32(ctx, "eval_v", chunk * nv), buffers::zeros_f32(ctx, "eval_h", chunk * nh));
        let moments = buffers::zeros_f32(ctx, "unit_moments", 3 * nh);
        let mut products = Products::new(|rows| {
            Ok(vec![self.gemm.prepare(ctx, &GemmOp::new(rows as u32, nv as u32, nh as u32, &v, &rbm.weights, &h).bias(&rbm.hidden_bias).activation(Activation::Sigmoid))?])
        });
        for flags in [0, SECOND_PASS] {
            for (start, rows) in chunks(n, chunk) {
                let gather = self.gather(ctx, data, &index, start, rows, false, &v);
                let p = params(&ctx.device, rows, nh, nh, flags, 0, 0, n as f32);
                let step = Step::new(&ctx.device, "unit_moments", &self.moments, p, &[(3, &h), (7, &moments)], reduce::grid(nh.div_ceil(256) as u32));
                let calls = products.for_rows(rows)?;
                submit(ctx, "hidden_unit_statistics", |pass| {
                    gather.record_in(pass);
                    calls.iter().for_each(|c| c.dispatch(pass, 0));
                    step.record_in(pass);
                });
            }
        }
        let m = buffers::read_back::<f32>(ctx, &moments, 0, 3 * nh).await?;
        let count = n as f64;
        Ok((0..nh)
            .map(|j| {
                let standard_deviation = (m[nh + j] as f64 / count).sqrt();
                let skewness = if standard_deviation < FLAT_UNIT_DEVIATION { 0.0 } else { m[2 * nh + j] as f64 / count / standard_deviation.powi(3) };
                UnitStats { mean_activation: m[j] as f64 / count, standard_deviation, skewness }
            })
            .collect())
    }

    /// `train::greedy::propagate_dataset` on the device: the hidden probabilities of every
    /// case, as an f32 data set that stays on the device (`download` it if needed). The
    /// products bind one chunk of the data at a time, so the data set may exceed one binding.
    pub fn propagate(&self, ctx: &GpuContext, rbm: &GpuRbm, data: &GpuDataset) -> Result<GpuDataset, GpuError> {
        let (nv, nh) = check_shape(rbm, data)?;
        let bytes = 4 * (data.n_cases * nh) as u64;
        check_buffer_size(ctx, bytes, "the propagated data")?;
        let out = buffers::zeros(ctx, "propagated", bytes);
        for (start, rows) in chunks(data.n_cases, PROPAGATE_CHUNK) {
            let a_offset = (start * nv) as u64;
            let mut op = GemmOp::new(rows as u32, nv as u32, nh as u32, &data.values, &rbm.weights, &out)
                .with_a(MatRef::at(&data.values, a_offset, nv as u32))
                .with_c(MatRef::at(&out, (start * nh) as u64, nh as u32))
                .bias(&rbm.hidden_bias)
                .activation(Activation::Sigmoid);
            if data.is_u8 {
                op = op.u8_a();
            }
            let call = self.gemm.prepare(ctx, &op)?;
            submit(ctx, "propagate", |pass| call.dispatch(pass, 0));
        }
        Ok(GpuDataset { n_cases: data.n_cases, n_inputs: nh, values: out, is_u8: false })
    }
}

fn check_shape(rbm: &GpuRbm, data: &GpuDataset) -> Result<(usize, usize), GpuError> {
    if data.n_inputs != rbm.n_visible {
        return Err(GpuError(format!("data of {} inputs for a model with {} visible units", data.n_inputs, rbm.n_visible)));
    }
    Ok((rbm.n_visible, rbm.n_hidden))
}

/// Checks that the data fit the model, and that the kernels can bind the whole data set and
/// weight matrix (a chunk's cases may lie anywhere in the data), with an error that says so
/// rather than a device validation failure.
pub(crate) fn check_shapes(ctx: &GpuContext, rbm: &GpuRbm, data: &GpuDataset) -> Result<(usize, usize), GpuError> {
    check_shape(rbm, data)?;
    let limit = ctx.device.limits().max_storage_buffer_binding_size;
    for (buffer, what) in [(&data.values, "the data set"), (&rbm.weights, "the weight matrix")] {
        if buffer.size() > limit {
            return Err(GpuError(format!("{what} takes {} bytes, over this device's storage binding limit of {limit} bytes", buffer.size())));
        }
    }
    Ok((rbm.n_visible, rbm.n_hidden))
}

/// The CPU's evaluated cases (`spread_cases`) on the device, and how many there are.
fn case_index(ctx: &GpuContext, data: &GpuDataset, max_cases: usize) -> (wgpu::Buffer, usize) {
    let cases: Vec<u32> = spread_cases(data.n_cases, max_cases).into_iter().map(|c| c as u32).collect();
    (buffers::upload(ctx, "eval_cases", &cases), cases.len())
}
