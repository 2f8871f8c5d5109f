//! Parity suite for the device-resident update kernels (`shaders/update*.wgsl`,
//! `shaders/reduce.wgsl`, `shaders/schedule.wgsl`) against the CPU reference, shared by the
//! native test file (lavapipe) and the web one (WebGPU in headless Chromium). Each check is
//! an async fn returning `Ok(summary)` or `Err(what disagreed)`.
//!
//! Tolerances. Arrays (weights, velocities, penalised gradients, biases, q, d, means) are
//! compared normwise: max |gpu − cpu| ≤ rel · max |cpu| over the array. Elementwise relative
//! errors are meaningless for entries that cancel to near zero (a bias step of 1e-4 computed
//! from column means of ~0.5), where the f32 rounding of the inputs and one-ulp differences of
//! fused multiply-adds land. Scalars (cosine, RMS, sums, free energies) are compared
//! relatively. The reference sums in f64 (column means in f32), the kernels in f32.

use super::check::Outcome;
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::{Activation, Backend, Weights};
use deepbelief::eval::free_energy::free_energy;
use deepbelief::gpu::gemm::{fused_update_partials, staggered_half_tasks, GemmKernels, GemmOp, FUSED_UPDATE_STORAGE_BUFFERS};
use deepbelief::gpu::reduce::{self, partial_count, record, Dispatch, ReduceKernels, Target};
use deepbelief::gpu::schedule::{self, EpochFigures, ScheduleBuffers, ScheduleKernels, TrainState};
use deepbelief::gpu::update::{update_partial_count, BIAS_STEPS_STORAGE_BUFFERS, HiddenBiasBuffers, UpdateKernels, VisibleBiasBuffers, WeightUpdateBuffers};
use deepbelief::gpu::GpuContext;
use deepbelief::model::rbm::squared_difference;
use deepbelief::model::{Rbm, VisibleUnits};
use deepbelief::train::config::{CdConfig, Schedule};
use deepbelief::train::contrastive_divergence::column_means;
use deepbelief::train::penalties::SparsityEstimate;
use deepbelief::train::schedule::{adapt_learning_rate, adapt_momentum, RateState};
use deepbelief::train::weights_update::{update_bias, update_weights, WeightStep};

pub struct Gpu {
    pub ctx: GpuContext,
    update: UpdateKernels,
    reduce: ReduceKernels,
    schedule: ScheduleKernels,
    gemm: GemmKernels,
}

impl Gpu {
    pub async fn new() -> Result<Self, String> {
        let ctx = GpuContext::new().await.map_err(|e| e.to_string())?;
        let device = &ctx.device;
        let (update, reduce, schedule) = (UpdateKernels::new(device), ReduceKernels::new(device), ScheduleKernels::new(device));
        let gemm = GemmKernels::new(&ctx);
        Ok(Gpu { ctx, update, reduce, schedule, gemm })
    }

    fn upload(&self, data: &[f32]) -> wgpu::Buffer {
        let buffer = reduce::storage_buffer(&self.ctx.device, "test", data.len());
        self.ctx.queue.write_buffer(&buffer, 0, bytemuck::cast_slice(data));
        buffer
    }

    fn write(&self, buffer: &wgpu::Buffer, data: &[f32]) {
        self.ctx.queue.write_buffer(buffer, 0, bytemuck::cast_slice(data));
    }

    fn zeros(&self, words: usize) -> wgpu::Buffer {
        reduce::storage_buffer(&self.ctx.device, "test", words)
    }

    fn run(&self, steps: &[&dyn Dispatch]) {
        let mut encoder = self.ctx.device.create_command_encoder(&Default::default());
        record(&mut encoder, "test", steps);
        self.ctx.queue.submit([encoder.finish()]);
    }

    async fn read(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>, String> {
        self.ctx.read_back(buffer, len).await.map_err(|e| e.to_string())
    }

    async fn state(&self, buffer: &wgpu::Buffer) -> Result<TrainState, String> {
        schedule::read_state(&self.ctx, buffer).await.map_err(|e| e.to_string())
    }
}

/// SplitMix64: reproducible test data on both targets.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    }
    fn uniform(&mut self, low: f32, high: f32) -> f32 {
        low + (high - low) * self.next()
    }
    fn vec(&mut self, n: usize, low: f32, high: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(low, high)).collect()
    }
}

/// Normwise relative error max_k |gpu_k − cpu_k| / max_k |cpu_k|; Err above `rel`. (An
/// elementwise relative error is meaningless for entries that cancel to near zero, where the
/// f32 rounding of the inputs lands; see the module comment.)
fn compare(name: &str, gpu: &[f32], cpu: &[f32], rel: f64) -> Result<f64, String> {
    if gpu.len() != cpu.len() {
        return Err(format!("{name}: {} values from the GPU, {} from the CPU", gpu.len(), cpu.len()));
    }
    let scale = cpu.iter().fold(0.0f64, |m, &c| m.max((c as f64).abs())).max(1e-30);
    let mut worst = (0.0f64, 0usize);
    for (k, (&g, &c)) in gpu.iter().zip(cpu).enumerate() {
        let error = (g as f64 - c as f64).abs() / scale;
        let error = if error.is_nan() { f64::INFINITY } else { error };
        if error > worst.0 {
            worst = (error, k);
        }
    }
    if worst.0 <= rel {
        Ok(worst.0)
    } else {
        Err(format!("{name}: element {} gpu {} cpu {} (error {:.3e} of max |cpu| {scale:.3e} > {rel:e})", worst.1, gpu[worst.1], cpu[worst.1], worst.0))
    }
}

fn compare_scalar(name: &str, gpu: f64, cpu: f64, rel: f64) -> Result<f64, String> {
    let error = (gpu - cpu).abs() / cpu.abs().max(1e-30);
    if error <= rel || gpu == cpu {
        Ok(error)
    } else {
        Err(format!("{name}: gpu {gpu} cpu {cpu} (relative {error:.3e} > {rel:e})"))
    }
}

fn config(schedule: Schedule, learning_rate: f32, momentum: f32) -> CdConfig {
    CdConfig { schedule, learning_rate, initial_momentum: momentum, weight_penalty: 1e-4, sparsity_penalty: 0.001, sparsity_target: 0.1, ..Default::default() }
}

/// Tolerances of [`check_one_update`]: arrays normwise, scalars relatively.
struct UpdateTolerances {
    weights: f64,
    velocity: f64,
    gradient: f64,
    rms: f64,
    increment: f64,
    cosine: f64,
    rates: f64,
}

/// One batch's update and schedule step on the CPU (`update_weights` from `start` = weights,
/// velocity and raw gradient, then `RateState::after_batch`) against the GPU's weights,
/// velocity and penalised gradient (`gpu`, same order) and its training state `after`.
/// Returns the errors as a summary.
#[allow(clippy::too_many_arguments)]
fn check_one_update(cfg: &CdConfig, gpu: [&[f32]; 3], after: &TrainState, start: [Vec<f32>; 3], previous: Option<&[f32]>, mean_input: &[f32], d: &[f32], tolerances: &UpdateTolerances) -> Result<String, String> {
    let [mut w, mut v, mut g] = start;
    let step = WeightStep { learning_rate: cfg.learning_rate, momentum: cfg.initial_momentum, weight_penalty: cfg.weight_penalty, mean_input, sparsity_derivative: d };
    let figures = update_weights(&mut w, &mut v, &mut g, previous, &step);
    let mut rates = RateState::new(cfg);
    rates.after_batch(figures.cosine);

    let ew = compare("weights", gpu[0], &w, tolerances.weights)?;
    let ev = compare("velocity", gpu[1], &v, tolerances.velocity)?;
    let eg = compare("penalised gradient", gpu[2], &g, tolerances.gradient)?;
    let erms = compare_scalar("gradient RMS", after.last_gradient_rms as f64, figures.gradient_rms, tolerances.rms)?;
    let einc = compare_scalar("max increment", after.last_max_increment as f64, figures.max_increment as f64, tolerances.increment)?;
    let ecos = match (after.last_cosine(), figures.cosine) {
        (Some(gc), Some(cc)) => compare_scalar("cosine", gc as f64, cc, tolerances.cosine)?,
        (None, None) => 0.0,
        (gc, cc) => return Err(format!("cosine: gpu {gc:?} cpu {cc:?}")),
    };
    compare_scalar("learning rate", after.learning_rate as f64, rates.learning_rate as f64, tolerances.rates)?;
    compare_scalar("momentum", after.momentum as f64, rates.momentum as f64, tolerances.rates)?;
    Ok(format!("rel err W {ew:.1e} V {ev:.1e} G' {eg:.1e}, cosine {ecos:.1e} ({:?}), RMS {erms:.1e}, max inc {einc:.1e}", figures.cosine))
}

/// One fused weight update plus the schedule step on nv × nh weights, against
/// `update_weights` and `RateState::after_batch`. Without a previous gradient the P buffer
/// holds NaN, so reading it would show.
pub async fn weight_update(gpu: &Gpu, nv: usize, nh: usize, with_previous: bool) -> Outcome {
    let n = nv * nh;
    let mut noise = Noise(17 + n as u64);
    let w0 = noise.vec(n, -0.05, 0.05);
    let v0 = noise.vec(n, -0.01, 0.01);
    let g0 = noise.vec(n, -0.1, 0.1);
    let p: Vec<f32> = g0.iter().map(|g| 0.6 * g + noise.uniform(-0.05, 0.05)).collect();
    let mean_input = noise.vec(nv, 0.0, 1.0);
    let d = noise.vec(nh, -0.002, 0.002);
    let cfg = config(Schedule::Adaptive, 0.05, 0.5);
    let state0 = TrainState { has_previous: with_previous as u32, ..TrainState::from_config(&cfg) };

    let device = &gpu.ctx.device;
    let (weights, velocity, gradient) = (gpu.upload(&w0), gpu.upload(&v0), gpu.upload(&g0));
    let previous = if with_previous { gpu.upload(&p) } else { gpu.upload(&vec![f32::NAN; n]) };
    let (mean_buffer, d_buffer) = (gpu.upload(&mean_input), gpu.upload(&d));
    let state = schedule::create_state_buffer(device, &state0);
    let n_partials = update_partial_count(nv, nh);
    let partials = gpu.zeros(4 * n_partials as usize);
    let log = schedule::create_batch_log(device, 4);
    let update = gpu.update.weight_update(
        device,
        nv,
        nh,
        &WeightUpdateBuffers { weights: &weights, velocity: &velocity, gradient: &gradient, previous: &previous, mean_input: &mean_buffer, sparsity_derivative: &d_buffer, state: &state, partials: &partials },
    );
    let end = gpu.schedule.step(device, &ScheduleBuffers { state: &state, update_partials: &partials, n_update_partials: n_partials, error_partials: None, n_weights: n, batch_log: &log, log_capacity: 4 });
    gpu.run(&[&update, &end]);
    let (gw, gv, gg) = (gpu.read(&weights, n).await?, gpu.read(&velocity, n).await?, gpu.read(&gradient, n).await?);
    let after = gpu.state(&state).await?;

    let tolerances = UpdateTolerances { weights: 1e-6, velocity: 1e-6, gradient: 1e-6, rms: 1e-5, increment: 1e-6, cosine: 1e-5, rates: 1e-6 };
    let errors = check_one_update(&cfg, [&gw, &gv, &gg], &after, [w0, v0, g0], with_previous.then_some(&p[..]), &mean_input, &d, &tolerances)?;
    if after.has_previous != 1 || after.batch_index != 1 {
        return Err(format!("state flags after one batch: {after:?}"));
    }
    Ok(format!("weight update {nv}x{nh} previous={with_previous}: {errors}; lr {} momentum {}", after.learning_rate, after.momentum))
}

/// The CD gradient `v0ᵀh0/rows − vkᵀhk/chains` as one paired product with the weight update
/// fused into its epilogue, plus the schedule step, against the gradient summed in f64 on the
/// CPU, `update_weights` and `RateState::after_batch`. Where the device offers too few storage
/// buffers for the fused variant, `Ok` says so unless `required` (trainers then use the
/// separate update, which [`weight_update`] checks).
pub async fn fused_gradient_update(gpu: &Gpu, nv: usize, nh: usize, rows: usize, chains: usize, with_previous: bool, required: bool) -> Outcome {
    if !gpu.gemm.supports_fused_update() {
        let offered = gpu.ctx.device.limits().max_storage_buffers_per_shader_stage;
        let message = format!("fused update {nv}x{nh}: the device offers {offered} storage buffers per stage, the fused update needs {FUSED_UPDATE_STORAGE_BUFFERS}");
        return if required { Err(message) } else { Ok(format!("{message}; trainers use the separate update")) };
    }
    let n = nv * nh;
    let mut noise = Noise(29 + n as u64 + rows as u64);
    let v0 = noise.vec(rows * nv, 0.0, 1.0);
    let h0 = noise.vec(rows * nh, 0.0, 1.0);
    let vk = noise.vec(chains * nv, 0.0, 1.0);
    let hk = noise.vec(chains * nh, 0.0, 1.0);
    let w0 = noise.vec(n, -0.05, 0.05);
    let vel0 = noise.vec(n, -0.01, 0.01);
    let p: Vec<f32> = noise.vec(n, -0.05, 0.05);
    let mean_input = noise.vec(nv, 0.0, 1.0);
    let d = noise.vec(nh, -0.002, 0.002);
    let cfg = config(Schedule::Adaptive, 0.05, 0.5);
    let state0 = TrainState { has_previous: with_previous as u32, ..TrainState::from_config(&cfg) };

    let device = &gpu.ctx.device;
    let (v0_buf, h0_buf, vk_buf, hk_buf) = (gpu.upload(&v0), gpu.upload(&h0), gpu.upload(&vk), gpu.upload(&hk));
    let (weights, velocity, gradient) = (gpu.upload(&w0), gpu.upload(&vel0), gpu.upload(&vec![f32::NAN; n]));
    let previous = if with_previous { gpu.upload(&p) } else { gpu.upload(&vec![f32::NAN; n]) };
    let (mean_buffer, d_buffer) = (gpu.upload(&mean_input), gpu.upload(&d));
    let state = schedule::create_state_buffer(device, &state0);
    let n_partials = fused_update_partials(nv as u32, nh as u32);
    let partials = gpu.zeros(4 * n_partials as usize);
    let log = schedule::create_batch_log(device, 4);
    let op = GemmOp::new(nv as u32, (rows + chains) as u32, nh as u32, &v0_buf, &h0_buf, &gradient)
        .transpose_a()
        .alpha(1.0 / rows as f32)
        .paired(&vk_buf, &hk_buf, rows as u32, -1.0 / chains as f32)
        .fused_update(WeightUpdateBuffers { weights: &weights, velocity: &velocity, gradient: &gradient, previous: &previous, mean_input: &mean_buffer, sparsity_derivative: &d_buffer, state: &state, partials: &partials });
    let call = gpu.gemm.prepare(&gpu.ctx, &op).map_err(|e| e.to_string())?;
    // Aligned fused gradients read whole vec4 with every tiling (2048 × 2100 takes Large tiles),
    // and read and write the weights, velocity and gradients a vec4 at a time.
    if call.vec4 != (nv % 4 == 0 && nh % 4 == 0) || call.vec4_outputs != call.vec4 {
        return Err(format!("fused gradient {nv}x{nh} ({:?} tiles): vec4 loads {}, vec4 outputs {}, expected {}", call.tiling, call.vec4, call.vec4_outputs, !call.vec4));
    }
    let end = gpu.schedule.step(device, &ScheduleBuffers { state: &state, update_partials: &partials, n_update_partials: n_partials, error_partials: None, n_weights: n, batch_log: &log, log_capacity: 4 });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        call.dispatch(&mut pass, 0);
    }
    record(&mut encoder, "test", &[&end]);
    gpu.ctx.queue.submit([encoder.finish()]);
    let (gw, gv, gg) = (gpu.read(&weights, n).await?, gpu.read(&velocity, n).await?, gpu.read(&gradient, n).await?);
    let after = gpu.state(&state).await?;

    let mut g = vec![0.0f32; n];
    for i in 0..nv {
        for j in 0..nh {
            let positive: f64 = (0..rows).map(|r| v0[r * nv + i] as f64 * h0[r * nh + j] as f64).sum();
            let negative: f64 = (0..chains).map(|c| vk[c * nv + i] as f64 * hk[c * nh + j] as f64).sum();
            g[i * nh + j] = (positive / rows as f64 - negative / chains as f64) as f32;
        }
    }
    // The gradient's own rounding (f32 products against the f64 sums) carries into G' and V.
    let tolerances = UpdateTolerances { weights: 1e-6, velocity: 1e-5, gradient: 1e-5, rms: 1e-5, increment: 1e-5, cosine: 1e-4, rates: 1e-5 };
    let errors = check_one_update(&cfg, [&gw, &gv, &gg], &after, [w0, vel0, g], with_previous.then_some(&p[..]), &mean_input, &d, &tolerances)?;
    let half_tasks = staggered_half_tasks(call.tiling, nv as u32, nh as u32);
    Ok(format!("fused gradient + update {nv}x{nh} ({rows} rows, {chains} chains, {:?} tiles, {half_tasks} half tasks) previous={with_previous}: {errors}", call.tiling))
}

/// Both bias steps in one dispatch (`UpdateKernels::bias_steps`) against the visible (with the
/// squared error) and hidden steps run one after the other on copies of the same state: the
/// same arithmetic in the same order, so every output must agree bit for bit. Where the device
/// offers too few storage buffers, `Ok` says so unless `required`.
pub async fn bias_steps_in_one_dispatch(gpu: &Gpu, nv: usize, nh: usize, rows: usize, chains: usize, required: bool) -> Outcome {
    if !gpu.update.supports_bias_steps() {
        let offered = gpu.ctx.device.limits().max_storage_buffers_per_shader_stage;
        let message = format!("bias steps {nv}+{nh}: the device offers {offered} storage buffers per stage, one dispatch needs {BIAS_STEPS_STORAGE_BUFFERS}");
        return if required { Err(message) } else { Ok(format!("{message}; trainers use two")) };
    }
    let mut noise = Noise(41 + nv as u64 * 3 + nh as u64);
    let cfg = config(Schedule::Adaptive, 0.07, 0.6);
    let device = &gpu.ctx.device;
    let v0 = noise.vec(rows * nv, 0.0, 1.0);
    let vk = noise.vec(chains * nv, 0.0, 1.0);
    let source = noise.vec(rows * nv, 0.0, 1.0);
    let h0 = noise.vec(rows * nh, 0.0, 1.0);
    let hk = noise.vec(chains * nh, 0.0, 1.0);
    let (vb, hb, vvel, hvel) = (noise.vec(nv, -0.5, 0.5), noise.vec(nh, -0.5, 0.5), noise.vec(nv, -0.01, 0.01), noise.vec(nh, -0.01, 0.01));
    let q: Vec<f32> = (0..nh).map(|j| [0.003, 0.5, 0.995, 0.1][j % 4]).collect();
    let (v0_buf, vk_buf, source_buf, h0_buf, hk_buf) = (gpu.upload(&v0), gpu.upload(&vk), gpu.upload(&source), gpu.upload(&h0), gpu.upload(&hk));
    let n_errors = deepbelief::gpu::update::bias_error_partial_count(nv) as usize;
    // Two copies of the state: one for the separate steps, one for the single dispatch.
    let mut outputs = Vec::new();
    for one_dispatch in [false, true] {
        let state = schedule::create_state_buffer(device, &TrainState::from_config(&cfg));
        let (vb_buf, hb_buf, vvel_buf, hvel_buf, q_buf) = (gpu.upload(&vb), gpu.upload(&hb), gpu.upload(&vvel), gpu.upload(&hvel), gpu.upload(&q));
        let (mean_buf, d_buf, errors) = (gpu.zeros(nv), gpu.zeros(nh), gpu.zeros(n_errors));
        let visible = VisibleBiasBuffers { positive: &v0_buf, negative: &vk_buf, bias: &vb_buf, velocity: &vvel_buf, mean_input: &mean_buf, state: &state };
        let hidden = HiddenBiasBuffers { positive: &h0_buf, negative: &hk_buf, bias: &hb_buf, velocity: &hvel_buf, smoothed: &q_buf, sparsity_derivative: &d_buf, state: &state };
        if one_dispatch {
            let both = gpu.update.bias_steps(device, rows, chains, nv, nh, &visible, &hidden, &source_buf, &errors).ok_or("bias_steps refused a supported device")?;
            gpu.run(&[&both]);
        } else {
            let v = gpu.update.visible_bias_error_step(device, rows, chains, nv, &visible, &source_buf, &errors);
            let h = gpu.update.hidden_bias_step(device, rows, chains, nh, &hidden);
            gpu.run(&[&v, &h]);
        }
        let mut all = Vec::new();
        for (buffer, len) in [(&vb_buf, nv), (&vvel_buf, nv), (&mean_buf, nv), (&errors, n_errors), (&hb_buf, nh), (&hvel_buf, nh), (&q_buf, nh), (&d_buf, nh)] {
            all.push(gpu.read(buffer, len).await?);
        }
        outputs.push(all);
    }
    let names = ["visible bias", "visible velocity", "mean input", "error partials", "hidden bias", "hidden velocity", "smoothed q", "sparsity d"];
    for ((name, two), one) in names.iter().zip(&outputs[0]).zip(&outputs[1]) {
        if let Some(k) = two.iter().zip(one).position(|(a, b)| a.to_bits() != b.to_bits()) {
            return Err(format!("bias steps {nv}+{nh}: {name}[{k}] is {} in one dispatch, {} in two", one[k], two[k]));
        }
    }
    Ok(format!("bias steps {nv}+{nh} ({rows} rows, {chains} chains): one dispatch equals two, bit for bit"))
}

/// Three batches of the two bias steps (column means, sparsity estimate with saturated
/// units, momentum steps) against the CPU's `column_means`, `SparsityEstimate` and `update_bias`.
pub async fn bias_steps(gpu: &Gpu, nv: usize, nh: usize, rows: usize, chains: usize) -> Outcome {
    let mut noise = Noise(5 + nv as u64 * 7 + nh as u64);
    let cfg = config(Schedule::Adaptive, 0.07, 0.6);
    let state0 = TrainState::from_config(&cfg);
    let device = &gpu.ctx.device;
    let state = schedule::create_state_buffer(device, &state0);
    let mut vb = noise.vec(nv, -0.5, 0.5);
    let mut hb = noise.vec(nh, -0.5, 0.5);
    let mut vvel = noise.vec(nv, -0.01, 0.01);
    let mut hvel = noise.vec(nh, -0.01, 0.01);
    // Smoothed estimates spanning both saturation zones.
    let mut sparsity = SparsityEstimate { smoothed: (0..nh).map(|j| [0.003, 0.5, 0.995, 0.1, 0.0105, 0.9895][j % 6]).collect() };
    let (vb_buf, hb_buf, vvel_buf, hvel_buf) = (gpu.upload(&vb), gpu.upload(&hb), gpu.upload(&vvel), gpu.upload(&hvel));
    let q_buf = gpu.upload(&sparsity.smoothed);
    let (mean_buf, d_buf) = (gpu.zeros(nv), gpu.zeros(nh));
    let (v0_buf, vk_buf, h0_buf, hk_buf) = (gpu.zeros(rows * nv), gpu.zeros(chains * nv), gpu.zeros(rows * nh), gpu.zeros(chains * nh));
    let visible = gpu.update.visible_bias_step(device, rows, chains, nv, &VisibleBiasBuffers { positive: &v0_buf, negative: &vk_buf, bias: &vb_buf, velocity: &vvel_buf, mean_input: &mean_buf, state: &state });
    let hidden = gpu.update.hidden_bias_step(
        device,
        rows,
        chains,
        nh,
        &HiddenBiasBuffers { positive: &h0_buf, negative: &hk_buf, bias: &hb_buf, velocity: &hvel_buf, smoothed: &q_buf, sparsity_derivative: &d_buf, state: &state },
    );
    let mut worst = [0.0f64; 9];
    for batch in 0..3 {
        let v0 = noise.vec(rows * nv, 0.0, 1.0);
        let vk = noise.vec(chains * nv, 0.0, 1.0);
        // Hidden activities low enough that the saturated units stay saturated for a while.
        let h0: Vec<f32> = (0..rows * nh).map(|k| if (k % nh).is_multiple_of(6) { noise.uniform(0.0, 0.002) } else { noise.next() }).collect();
        let hk = noise.vec(chains * nh, 0.0, 1.0);
        for (buffer, data) in [(&v0_buf, &v0), (&vk_buf, &vk), (&h0_buf, &h0), (&hk_buf, &hk)] {
            gpu.write(buffer, data);
        }
        gpu.run(&[&visible, &hidden]);

        sparsity.update(&column_means(&h0, rows, nh));
        let d = sparsity.derivative(cfg.sparsity_penalty, cfg.sparsity_target);
        let mean_input = column_means(&v0, rows, nv);
        let step = WeightStep { learning_rate: cfg.learning_rate, momentum: cfg.initial_momentum, weight_penalty: cfg.weight_penalty, mean_input: &mean_input, sparsity_derivative: &d };
        let visible_gradient: Vec<f32> = mean_input.iter().zip(column_means(&vk, chains, nv)).map(|(p, n)| p - n).collect();
        let hidden_gradient: Vec<f32> = column_means(&h0, rows, nh).iter().zip(column_means(&hk, chains, nh)).zip(&d).map(|((p, n), d)| p - n - d).collect();
        update_bias(&mut vb, &mut vvel, &visible_gradient, &step);
        update_bias(&mut hb, &mut hvel, &hidden_gradient, &step);

        // The velocities are lr·(mean(v0) − mean(vk)), differences of means of ~0.5 that cancel
        // to ~0.01, so their error is the means' error magnified: at 100 rows the CPU's
        // sequential f32 column sums agree with the kernel's to ~5e-7 of the mean, at 2500 rows
        // only to ~2.5e-6 (the CPU's own rounding: see the f64 comparison below). The velocity
        // tolerance follows the reference's accuracy.
        let velocity_tolerance = if rows.max(chains) > 500 { 5e-5 } else { 1e-5 };
        let gpu_mean = gpu.read(&mean_buf, nv).await?;
        let checks = [
            compare(&format!("batch {batch}: mean input"), &gpu_mean, &mean_input, 1e-5)?,
            compare(&format!("batch {batch}: smoothed q"), &gpu.read(&q_buf, nh).await?, &sparsity.smoothed, 1e-6)?,
            compare(&format!("batch {batch}: sparsity derivative"), &gpu.read(&d_buf, nh).await?, &d, 1e-5)?,
            compare(&format!("batch {batch}: visible bias"), &gpu.read(&vb_buf, nv).await?, &vb, 1e-6)?,
            compare(&format!("batch {batch}: visible velocity"), &gpu.read(&vvel_buf, nv).await?, &vvel, velocity_tolerance)?,
            compare(&format!("batch {batch}: hidden bias"), &gpu.read(&hb_buf, nh).await?, &hb, 1e-6)?,
            compare(&format!("batch {batch}: hidden velocity"), &gpu.read(&hvel_buf, nh).await?, &hvel, velocity_tolerance)?,
        ];
        for (w, c) in worst.iter_mut().zip(checks) {
            *w = w.max(c);
        }
        // Both against column means summed in f64: the kernel's must be at least as good.
        let exact: Vec<f32> = (0..nv).map(|c| ((0..rows).map(|r| v0[r * nv + c] as f64).sum::<f64>() / rows as f64) as f32).collect();
        let (gpu_exact, cpu_exact) = (compare("mean vs f64", &gpu_mean, &exact, 1.0)?, compare("mean vs f64", &mean_input, &exact, 1.0)?);
        if gpu_exact > cpu_exact.max(3e-7) {
            return Err(format!("batch {batch}: column means off the f64 sums by {gpu_exact:.1e} (the CPU's f32 sums: {cpu_exact:.1e})"));
        }
        worst[7] = worst[7].max(gpu_exact);
        worst[8] = worst[8].max(cpu_exact);
    }
    let saturated = sparsity.smoothed.iter().filter(|&&q| !(0.01..=0.99).contains(&q)).count();
    if saturated == 0 {
        return Err("the test no longer reaches the anti-saturation terms".into());
    }
    Ok(format!(
        "bias steps nv={nv} nh={nh} rows={rows} chains={chains} ({saturated} saturated units): rel err mean {:.1e} q {:.1e} d {:.1e} b {:.1e} vb {:.1e} c {:.1e} vc {:.1e}; mean vs f64 sums: gpu {:.1e} cpu {:.1e}",
        worst[0], worst[1], worst[2], worst[3], worst[4], worst[5], worst[6], worst[7], worst[8]
    ))
}

/// The schedule kernel fed hand-picked cosines through crafted partials, against
/// `RateState::after_batch`, then the epoch accumulators, the batch log and the host's
/// epoch-start writes.
pub async fn schedule_rules(gpu: &Gpu, kind: Schedule) -> Outcome {
    let cfg = config(kind, 0.1, 0.5);
    let device = &gpu.ctx.device;
    let state = schedule::create_state_buffer(device, &TrainState::from_config(&cfg));
    let n_partials = 300u32;
    let partials = gpu.zeros(4 * n_partials as usize);
    let errors = gpu.zeros(5);
    let capacity = 80u32;
    let log = schedule::create_batch_log(device, capacity as usize);
    let n_weights = 784 * 500;
    let step = gpu.schedule.step(device, &ScheduleBuffers { state: &state, update_partials: &partials, n_update_partials: n_partials, error_partials: Some((&errors, 5)), n_weights, batch_log: &log, log_capacity: capacity });
    // Cosines: the first batch has none; then the brief's 0.6, 0.4, −0.6, 0.1; then runs that
    // drive the learning rate into both clamps.
    let mut cosines: Vec<Option<f32>> = vec![None, Some(0.6), Some(0.4), Some(-0.6), Some(0.1), Some(-0.4), Some(0.35), Some(-0.2)];
    cosines.extend([Some(0.9); 16]);
    cosines.extend([Some(-0.9); 45]);
    let mut rates = RateState::new(&cfg);
    let mut expected = Vec::new();
    let mut cpu_figures = (0.0f64, 0usize, 0.0f64, 0.0f32, 0.0f64);
    for (batch, cosine) in cosines.iter().enumerate() {
        let c = cosine.unwrap_or(0.25);
        let norm = 2.0f32 + batch as f32; // Σg'² split in two halves below
        let increment = 0.001 * (1 + batch % 7) as f32;
        let mut words = vec![0.0f32; 4 * n_partials as usize];
        // Two partials, at both ends (the rest zero), each holding half of (dot, norm², prev
        // norm²), so the kernel's cosine is c up to f32 rounding.
        words[0..4].copy_from_slice(&[c * norm / 2.0, norm / 2.0, norm / 2.0, increment]);
        words[4 * 299..4 * 300].copy_from_slice(&[c * norm / 2.0, norm / 2.0, norm / 2.0, increment / 2.0]);
        gpu.write(&partials, &words);
        let error = [0.5f32, 0.25, 0.0, 0.125 * batch as f32, 1.0];
        gpu.write(&errors, &error);
        gpu.run(&[&step]);

        let first = batch == 0;
        let cos64 = (!first).then_some(c as f64);
        rates.after_batch(cos64);
        expected.push((cos64, rates.learning_rate, rates.momentum));
        if let Some(c) = cos64 {
            cpu_figures.0 += c;
            cpu_figures.1 += 1;
        }
        cpu_figures.2 += ((norm as f64) / n_weights as f64).sqrt();
        cpu_figures.3 = cpu_figures.3.max(increment);
        cpu_figures.4 += error.iter().map(|&e| e as f64).sum::<f64>();
    }
    let batches = cosines.len();
    let (after, records, _) = schedule::read_epoch(&gpu.ctx, &state, &log, batches, &[]).await.map_err(|e| e.to_string())?;
    if records.len() != batches || after.batch_index as usize != batches {
        return Err(format!("{} records, batch index {}", records.len(), after.batch_index));
    }
    // Two views of the rates. Stepwise: each batch's rule applied to the device's own previous
    // rates must match the CPU rule (≤ 1e-6: the same f32 operations, but WGSL allows
    // divisions of 2.5 ulp and SwiftShader's ÷1.5 is off by one ulp now and then). Trajectory:
    // against `RateState` run alone, 1e-6 over the brief's sequence (the first five batches),
    // 1e-5 over the long runs where those ulps can accumulate.
    let (mut worst_step, mut worst_path) = (0.0f64, 0.0f64);
    let (mut lr_before, mut momentum_before) = (cfg.learning_rate, cfg.initial_momentum);
    for (batch, (record, (cosine, lr, momentum))) in records.iter().zip(&expected).enumerate() {
        if (record.cosine_valid != 0.0) != cosine.is_some() {
            return Err(format!("batch {batch}: cosine validity gpu {} cpu {cosine:?}", record.cosine_valid));
        }
        let (mut lr_step, mut momentum_step) = (lr_before, momentum_before);
        if let Some(c) = cosine {
            compare_scalar(&format!("batch {batch}: cosine"), record.cosine as f64, *c, 1e-6)?;
            if kind == Schedule::Adaptive {
                (lr_step, momentum_step) = (adapt_learning_rate(lr_before, *c), adapt_momentum(momentum_before, *c));
            }
        }
        worst_step = worst_step.max(compare_scalar(&format!("batch {batch}: learning-rate step"), record.learning_rate as f64, lr_step as f64, 1e-6)?);
        worst_step = worst_step.max(compare_scalar(&format!("batch {batch}: momentum step"), record.momentum as f64, momentum_step as f64, 1e-6)?);
        let tolerance = if batch < 5 { 1e-6 } else { 1e-5 };
        worst_path = worst_path.max(compare_scalar(&format!("batch {batch}: learning rate"), record.learning_rate as f64, *lr as f64, tolerance)?);
        worst_path = worst_path.max(compare_scalar(&format!("batch {batch}: momentum"), record.momentum as f64, *momentum as f64, tolerance)?);
        (lr_before, momentum_before) = (record.learning_rate, record.momentum);
    }
    compare_scalar("final learning rate", after.learning_rate as f64, rates.learning_rate as f64, 1e-5)?;
    compare_scalar("final momentum", after.momentum as f64, rates.momentum as f64, 1e-5)?;
    if kind == Schedule::Adaptive {
        let lrs: Vec<f32> = records.iter().map(|r| r.learning_rate).collect();
        if !lrs.contains(&1.0) || !lrs.contains(&0.001) {
            return Err(format!("the learning rate never reached both clamps: {lrs:?}"));
        }
    } else if records.iter().any(|r| r.learning_rate != 0.1 || r.momentum != 0.5) {
        return Err("the fixed schedule changed a rate".into());
    }
    for figures in [EpochFigures::from_log(&after, &records), EpochFigures::from_state(&after)] {
        compare_scalar("cosine mean", figures.gradient_cosine, cpu_figures.0 / cpu_figures.1 as f64, 1e-5)?;
        compare_scalar("RMS mean", figures.gradient_rms, cpu_figures.2 / batches as f64, 1e-5)?;
        compare_scalar("epoch max increment", figures.max_increment as f64, cpu_figures.3 as f64, 0.0)?;
        compare_scalar("squared error", figures.squared_error, cpu_figures.4, 1e-6)?;
    }
    if after.cosine_count as usize != cpu_figures.1 {
        return Err(format!("cosine count {} != {}", after.cosine_count, cpu_figures.1));
    }
    // Epoch start: accumulators cleared, rates replaced by the host, then one more batch.
    schedule::begin_epoch(&gpu.ctx.queue, &state);
    schedule::set_rates(&gpu.ctx.queue, &state, 0.05, 0.7);
    gpu.run(&[&step]);
    let next = gpu.state(&state).await?;
    let c = next.last_cosine().ok_or("no cosine after the epoch start")?;
    let mut rates = RateState::new(&config(kind, 0.05, 0.7));
    rates.after_batch(Some(c as f64));
    if next.batch_index != 1 || next.cosine_count != 1 || next.squared_error != 1.0 + 0.75 + 0.125 * (batches - 1) as f32 {
        return Err(format!("after begin_epoch: {next:?}"));
    }
    compare_scalar("rate after set_rates", next.learning_rate as f64, rates.learning_rate as f64, 1e-6)?;
    compare_scalar("momentum after set_rates", next.momentum as f64, rates.momentum as f64, 1e-6)?;
    Ok(format!("schedule {kind:?}: {batches} batches, rates rel err stepwise {worst_step:.1e}, along the run {worst_path:.1e}; final lr {} momentum {:e}", after.learning_rate, after.momentum))
}

/// Column means, max |x| and sums of squared differences (accumulated over batches) against
/// the CPU.
pub async fn reductions(gpu: &Gpu) -> Outcome {
    let device = &gpu.ctx.device;
    let mut noise = Noise(99);
    let mut summary = Vec::new();
    for (rows, width) in [(100, 784), (7, 29), (13, 500), (1, 53), (2500, 784)] {
        let matrix = noise.vec(rows * width, 0.0, 1.0);
        let buffer = gpu.upload(&matrix);
        let out = gpu.zeros(width);
        let step = gpu.reduce.column_means(device, &buffer, rows, width, &out);
        gpu.run(&[&step]);
        let e = compare(&format!("column means {rows}x{width}"), &gpu.read(&out, width).await?, &column_means(&matrix, rows, width), 1e-5)?;
        summary.push(format!("colmeans {rows}x{width} {e:.1e}"));
    }
    let scalars = gpu.zeros(4);
    for n in [784 * 500, 53 * 29, 1, 2048 * 300 + 5, 9_000_001] {
        let mut values = noise.vec(n, -0.3, 0.3);
        values[n / 3] = -0.75; // the largest magnitude is negative
        let buffer = gpu.upload(&values);
        let partials = gpu.zeros(partial_count(n) as usize);
        let steps = gpu.reduce.max_abs(device, &buffer, n, &partials, Target { buffer: &scalars, slot: 1, accumulate: false });
        gpu.run(&[&steps]);
        let got = gpu.read(&scalars, 4).await?[1];
        let want = values.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        if got != want {
            return Err(format!("max |x| over {n}: gpu {got} cpu {want}"));
        }
    }
    summary.push("max|x| exact".into());
    // Squared differences, accumulated into slot 2 over three batches.
    let (rows, width) = (100, 784);
    let n = rows * width;
    let (a_buf, b_buf, partials) = (gpu.zeros(n), gpu.zeros(n), gpu.zeros(partial_count(n) as usize));
    let steps = gpu.reduce.sum_sq_diff(device, &a_buf, &b_buf, n, &partials, Target { buffer: &scalars, slot: 2, accumulate: true });
    let mut cpu = 0.0f64;
    let mut worst = 0.0f64;
    for _ in 0..3 {
        let a = noise.vec(n, 0.0, 1.0);
        let b: Vec<f32> = a.iter().map(|x| x * 0.8 + noise.uniform(0.0, 0.2)).collect();
        gpu.write(&a_buf, &a);
        gpu.write(&b_buf, &b);
        gpu.run(&[&steps]);
        cpu += squared_difference(&a, &b);
        worst = worst.max(compare_scalar("accumulated squared difference", gpu.read(&scalars, 4).await?[2] as f64, cpu, 1e-5)?);
    }
    summary.push(format!("sq diff (3 batches accumulated) {worst:.1e}"));
    Ok(format!("reductions: {}", summary.join(", ")))
}

/// Per-case free energies and their sum against `eval::free_energy` (f64).
pub async fn free_energies(gpu: &Gpu, units: VisibleUnits, nv: usize, nh: usize, rows: usize) -> Outcome {
    let device = &gpu.ctx.device;
    let mut noise = Noise(3 + nv as u64);
    let rbm = Rbm {
        visible_units: units,
        n_visible: nv,
        n_hidden: nh,
        weights: noise.vec(nv * nh, -0.1, 0.1),
        visible_bias: noise.vec(nv, -1.0, 1.0),
        hidden_bias: noise.vec(nh, -2.0, 2.0),
    };
    let visible: Vec<f32> = match units {
        VisibleUnits::Bernoulli => (0..rows * nv).map(|_| if noise.next() < 0.3 { 1.0 } else { 0.0 }).collect(),
        VisibleUnits::Gaussian => (0..rows * nv).map(|_| noise.uniform(-2.0, 2.0)).collect(),
    };
    let mut hidden_input = vec![0.0; rows * nh];
    CpuBackend.visible_to_hidden(Weights { values: &rbm.weights, n_visible: nv, n_hidden: nh }, &visible, &rbm.hidden_bias, Activation::Linear, &mut hidden_input);
    let (v_buf, x_buf, b_buf) = (gpu.upload(&visible), gpu.upload(&hidden_input), gpu.upload(&rbm.visible_bias));
    let per_case = gpu.zeros(rows);
    let total = gpu.zeros(2);
    let energy = gpu.reduce.free_energy(device, &v_buf, &x_buf, &b_buf, rows, nv, nh, units, &per_case);
    let sum = gpu.reduce.finish_sum(device, &per_case, rows, Target { buffer: &total, slot: 1, accumulate: false });
    gpu.run(&[&energy, &sum]);
    let gpu_cases = gpu.read(&per_case, rows).await?;
    let gpu_total = gpu.read(&total, 2).await?[1];
    let cpu_cases = free_energy(&CpuBackend, &rbm, &visible);
    let mut worst = 0.0f64;
    for (r, (&g, &c)) in gpu_cases.iter().zip(&cpu_cases).enumerate() {
        worst = worst.max(compare_scalar(&format!("free energy of case {r}"), g as f64, c, 1e-5)?);
    }
    let e_total = compare_scalar("summed free energy", gpu_total as f64, cpu_cases.iter().sum(), 1e-5)?;
    Ok(format!("free energy {units:?} {nv}x{nh}, {rows} cases (mean {:.2}): worst case rel err {worst:.1e}, sum {e_total:.1e}", cpu_cases.iter().sum::<f64>() / rows as f64))
}

/// Several CD batches with everything after the GEMMs on the device (bias steps, weight
/// update with the gradient ping-pong, squared error, schedule), the host writing only the
/// batch data and reading once at the end, against the CPU's `train_batch` update path.
pub async fn device_batches(gpu: &Gpu, nv: usize, nh: usize, rows: usize, batches: usize) -> Outcome {
    let device = &gpu.ctx.device;
    let mut noise = Noise(2024 + nv as u64);
    let cfg = config(Schedule::Adaptive, 0.05, 0.5);
    let n = nv * nh;
    let mut w = noise.vec(n, -0.05, 0.05);
    let mut vb = noise.vec(nv, -0.3, 0.3);
    let mut hb = noise.vec(nh, -0.3, 0.3);
    let (mut vw, mut vvb, mut vhb) = (vec![0.0f32; n], vec![0.0f32; nv], vec![0.0f32; nh]);
    let mut sparsity = SparsityEstimate::new(nh);
    let mut rates = RateState::new(&cfg);
    let mut previous: Option<Vec<f32>> = None;

    let state = schedule::create_state_buffer(device, &TrainState::from_config(&cfg));
    let (w_buf, vw_buf, vb_buf, hb_buf) = (gpu.upload(&w), gpu.zeros(n), gpu.upload(&vb), gpu.upload(&hb));
    let (vvb_buf, vhb_buf, q_buf) = (gpu.zeros(nv), gpu.zeros(nh), gpu.upload(&sparsity.smoothed));
    let (mean_buf, d_buf) = (gpu.zeros(nv), gpu.zeros(nh));
    let gradients = [gpu.zeros(n), gpu.zeros(n)];
    let (v0_buf, vk_buf, h0_buf, hk_buf) = (gpu.zeros(rows * nv), gpu.zeros(rows * nv), gpu.zeros(rows * nh), gpu.zeros(rows * nh));
    let n_partials = update_partial_count(nv, nh);
    let partials = gpu.zeros(4 * n_partials as usize);
    let error_partials = gpu.zeros(partial_count(rows * nv) as usize);
    let log = schedule::create_batch_log(device, batches);
    let visible = gpu.update.visible_bias_step(device, rows, rows, nv, &VisibleBiasBuffers { positive: &v0_buf, negative: &vk_buf, bias: &vb_buf, velocity: &vvb_buf, mean_input: &mean_buf, state: &state });
    let hidden = gpu.update.hidden_bias_step(
        device,
        rows,
        rows,
        nh,
        &HiddenBiasBuffers { positive: &h0_buf, negative: &hk_buf, bias: &hb_buf, velocity: &vhb_buf, smoothed: &q_buf, sparsity_derivative: &d_buf, state: &state },
    );
    let updates: Vec<_> = (0..2)
        .map(|parity| {
            gpu.update.weight_update(
                device,
                nv,
                nh,
                &WeightUpdateBuffers {
                    weights: &w_buf,
                    velocity: &vw_buf,
                    gradient: &gradients[parity],
                    previous: &gradients[1 - parity],
                    mean_input: &mean_buf,
                    sparsity_derivative: &d_buf,
                    state: &state,
                    partials: &partials,
                },
            )
        })
        .collect();
    let error = gpu.reduce.sum_sq_diff_partials(device, &v0_buf, &vk_buf, rows * nv, &error_partials);
    let end = gpu.schedule.step(
        device,
        &ScheduleBuffers {
            state: &state,
            update_partials: &partials,
            n_update_partials: n_partials,
            error_partials: Some((&error_partials, partial_count(rows * nv))),
            n_weights: n,
            batch_log: &log,
            log_capacity: batches as u32,
        },
    );
    // A fixed pattern gives successive gradients a shared direction; its sign per batch sets
    // the cosines' signs and the noise their size.
    let (pattern_v, pattern_h) = (noise.vec(nv, -1.0, 1.0), noise.vec(nh, -1.0, 1.0));
    let signs = [1.0f32, 1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0];
    let mut cpu_cosines = Vec::new();
    let (mut squared_error, mut rms_sum, mut max_increment) = (0.0f64, 0.0f64, 0.0f32);
    for batch in 0..batches {
        let s = signs[batch % signs.len()];
        let case_sign: Vec<f32> = (0..rows).map(|_| if noise.next() < 0.5 { -1.0 } else { 1.0 }).collect();
        let v0: Vec<f32> = (0..rows * nv).map(|k| (0.5 + 0.3 * case_sign[k / nv] * pattern_v[k % nv] + noise.uniform(-0.2, 0.2)).clamp(0.0, 1.0)).collect();
        let h0: Vec<f32> = (0..rows * nh).map(|k| (0.5 + 0.3 * s * case_sign[k / nh] * pattern_h[k % nh] + noise.uniform(-0.2, 0.2)).clamp(0.0, 1.0)).collect();
        let vk: Vec<f32> = v0.iter().map(|x| 0.6 * x + 0.2 + noise.uniform(-0.05, 0.05)).collect();
        let hk: Vec<f32> = h0.iter().map(|x| 0.6 * x + 0.2 + noise.uniform(-0.05, 0.05)).collect();
        let mut gradient = vec![0.0f32; n];
        CpuBackend.accumulate_outer((nv, nh), &v0, &h0, 1.0 / rows as f32, &mut gradient);
        CpuBackend.accumulate_outer((nv, nh), &vk, &hk, -1.0 / rows as f32, &mut gradient);
        // The host's only per-batch traffic here stands in for the GEMM helper's kernels.
        for (buffer, data) in [(&v0_buf, &v0), (&vk_buf, &vk), (&h0_buf, &h0), (&hk_buf, &hk), (&gradients[batch % 2], &gradient)] {
            gpu.write(buffer, data);
        }
        gpu.run(&[&visible, &hidden, &updates[batch % 2], &error, &end]);

        // CPU: the update half of CdTrainer::train_batch.
        sparsity.update(&column_means(&h0, rows, nh));
        let d = sparsity.derivative(cfg.sparsity_penalty, cfg.sparsity_target);
        let mean_input = column_means(&v0, rows, nv);
        let step = WeightStep { learning_rate: rates.learning_rate, momentum: rates.momentum, weight_penalty: cfg.weight_penalty, mean_input: &mean_input, sparsity_derivative: &d };
        let figures = update_weights(&mut w, &mut vw, &mut gradient, previous.as_deref(), &step);
        let visible_gradient: Vec<f32> = mean_input.iter().zip(column_means(&vk, rows, nv)).map(|(p, n)| p - n).collect();
        let hidden_gradient: Vec<f32> = column_means(&h0, rows, nh).iter().zip(column_means(&hk, rows, nh)).zip(&d).map(|((p, n), d)| p - n - d).collect();
        update_bias(&mut vb, &mut vvb, &visible_gradient, &step);
        update_bias(&mut hb, &mut vhb, &hidden_gradient, &step);
        previous = Some(gradient);
        rates.after_batch(figures.cosine);
        if let Some(c) = figures.cosine {
            if [0.3, 0.5].iter().any(|t| (c.abs() - t).abs() < 1e-3) {
                return Err(format!("batch {batch}: cosine {c} too near a rule threshold for an f32/f64 comparison; change the data"));
            }
        }
        cpu_cosines.push(figures.cosine);
        squared_error += squared_difference(&v0, &vk);
        rms_sum += figures.gradient_rms;
        max_increment = max_increment.max(figures.max_increment);
    }
    let (after, records, _) = schedule::read_epoch(&gpu.ctx, &state, &log, batches, &[]).await.map_err(|e| e.to_string())?;
    let ew = compare("weights", &gpu.read(&w_buf, n).await?, &w, 1e-6)?;
    let evw = compare("weight velocity", &gpu.read(&vw_buf, n).await?, &vw, 1e-5)?;
    let evb = compare("visible bias", &gpu.read(&vb_buf, nv).await?, &vb, 1e-6)?;
    let ehb = compare("hidden bias", &gpu.read(&hb_buf, nh).await?, &hb, 1e-6)?;
    let eq = compare("smoothed q", &gpu.read(&q_buf, nh).await?, &sparsity.smoothed, 1e-6)?;
    let last = batches - 1;
    let eg = compare("last penalised gradient", &gpu.read(&gradients[last % 2], n).await?, previous.as_deref().unwrap(), 1e-6)?;
    let mut ecos = 0.0f64;
    for (batch, (record, cosine)) in records.iter().zip(&cpu_cosines).enumerate() {
        match cosine {
            Some(c) => ecos = ecos.max(compare_scalar(&format!("batch {batch}: cosine"), record.cosine as f64, *c, 1e-5)?),
            None if record.cosine_valid == 0.0 => {}
            None => return Err(format!("batch {batch}: the GPU found a cosine {}", record.cosine)),
        }
    }
    // Up to 2.5 ulp per WGSL division (÷1.1, ÷1.2, ÷1.5) over a few batches.
    compare_scalar("learning rate", after.learning_rate as f64, rates.learning_rate as f64, 3e-6)?;
    compare_scalar("momentum", after.momentum as f64, rates.momentum as f64, 3e-6)?;
    let figures = EpochFigures::from_log(&after, &records);
    let valid: Vec<f64> = cpu_cosines.iter().flatten().copied().collect();
    let ecm = compare_scalar("epoch cosine", figures.gradient_cosine, valid.iter().sum::<f64>() / valid.len() as f64, 1e-5)?;
    let erms = compare_scalar("epoch RMS", figures.gradient_rms, rms_sum / batches as f64, 1e-5)?;
    let einc = compare_scalar("epoch max increment", figures.max_increment as f64, max_increment as f64, 1e-5)?;
    let esq = compare_scalar("epoch squared error", figures.squared_error, squared_error, 1e-5)?;
    let cosines: Vec<String> = cpu_cosines.iter().map(|c| c.map_or("-".into(), |c| format!("{c:.2}"))).collect();
    Ok(format!(
        "{batches} device batches {nv}x{nh} rows {rows}: cosines [{}], lr {} momentum {}; rel err W {ew:.1e} Vw {evw:.1e} b {evb:.1e} c {ehb:.1e} q {eq:.1e} G' {eg:.1e} cos {ecos:.1e}; epoch cos {ecm:.1e} rms {erms:.1e} inc {einc:.1e} sq {esq:.1e}",
        cosines.join(" "),
        after.learning_rate,
        after.momentum
    ))
}

/// Seconds per batch of the update half of a CD batch (visible and hidden bias steps, weight
/// update, squared error, schedule: 5 dispatches in one compute pass per batch), `batches`
/// batches per submission, on a device opened with the adapter's limits. Native only (it
/// blocks on the clock).
#[cfg(not(target_arch = "wasm32"))]
pub async fn time_update(nv: usize, nh: usize, rows: usize, batches: usize) -> Result<String, String> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = instance.request_adapter(&wgpu::RequestAdapterOptions { power_preference: wgpu::PowerPreference::HighPerformance, ..Default::default() }).await.map_err(|e| e.to_string())?;
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor { label: Some("bench"), required_limits: adapter.limits(), ..Default::default() })
        .await
        .map_err(|e| e.to_string())?;
    let (update, reduce, sched) = (UpdateKernels::new(&device), ReduceKernels::new(&device), ScheduleKernels::new(&device));
    let n = nv * nh;
    let mut noise = Noise(1);
    let filled = |words: usize, low: f32, high: f32, noise: &mut Noise| {
        let buffer = reduce::storage_buffer(&device, "bench", words);
        queue.write_buffer(&buffer, 0, bytemuck::cast_slice(&noise.vec(words, low, high)));
        buffer
    };
    let (w, vw, g0, g1) = (filled(n, -0.05, 0.05, &mut noise), filled(n, 0.0, 0.0, &mut noise), filled(n, -0.1, 0.1, &mut noise), filled(n, -0.1, 0.1, &mut noise));
    let (v0, vk, h0, hk) = (filled(rows * nv, 0.0, 1.0, &mut noise), filled(rows * nv, 0.0, 1.0, &mut noise), filled(rows * nh, 0.0, 1.0, &mut noise), filled(rows * nh, 0.0, 1.0, &mut noise));
    let (vb, hb, vvb, vhb, q, mean, d) = (filled(nv, 0.0, 0.0, &mut noise), filled(nh, 0.0, 0.0, &mut noise), filled(nv, 0.0, 0.0, &mut noise), filled(nh, 0.0, 0.0, &mut noise), filled(nh, 0.5, 0.5, &mut noise), filled(nv, 0.0, 0.0, &mut noise), filled(nh, 0.0, 0.0, &mut noise));
    // Rates small enough that the weights stay finite through many batches of the same data.
    let cfg = config(Schedule::Adaptive, 0.001, 0.5);
    let state = schedule::create_state_buffer(&device, &TrainState::from_config(&cfg));
    let n_partials = update_partial_count(nv, nh);
    let partials = reduce::storage_buffer(&device, "partials", 4 * n_partials as usize);
    let error_partials = reduce::storage_buffer(&device, "error", partial_count(rows * nv) as usize);
    let log = schedule::create_batch_log(&device, batches);
    let visible = update.visible_bias_step(&device, rows, rows, nv, &VisibleBiasBuffers { positive: &v0, negative: &vk, bias: &vb, velocity: &vvb, mean_input: &mean, state: &state });
    let hidden = update.hidden_bias_step(&device, rows, rows, nh, &HiddenBiasBuffers { positive: &h0, negative: &hk, bias: &hb, velocity: &vhb, smoothed: &q, sparsity_derivative: &d, state: &state });
    let grads = [&g0, &g1];
    let weights: Vec<_> = (0..2)
        .map(|p| {
            update.weight_update(&device, nv, nh, &WeightUpdateBuffers { weights: &w, velocity: &vw, gradient: grads[p], previous: grads[1 - p], mean_input: &mean, sparsity_derivative: &d, state: &state, partials: &partials })
        })
        .collect();
    let error = reduce.sum_sq_diff_partials(&device, &v0, &vk, rows * nv, &error_partials);
    let end = sched.step(
        &device,
        &ScheduleBuffers { state: &state, update_partials: &partials, n_update_partials: n_partials, error_partials: Some((&error_partials, partial_count(rows * nv))), n_weights: n, batch_log: &log, log_capacity: batches as u32 },
    );
    let steps: [(&str, &dyn Dispatch); 5] = [("visible bias", &visible), ("hidden bias", &hidden), ("weights", &weights), ("squared error", &error), ("schedule", &end)];
    // `only`: time one step alone (still one pass per batch); `one_pass`: all batches in a
    // single compute pass instead of one pass per batch.
    let time = |only: Option<usize>, one_pass: bool| {
        let (mut best, mut host) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..4 {
            schedule::begin_epoch(&queue, &state);
            let mut encoder = device.create_command_encoder(&Default::default());
            let mut pass = one_pass.then(|| encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("epoch"), timestamp_writes: None }).forget_lifetime());
            for batch in 0..batches {
                let mut own = (!one_pass).then(|| encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("batch"), timestamp_writes: None }).forget_lifetime());
                let pass = own.as_mut().or(pass.as_mut()).unwrap();
                for (k, (_, step)) in steps.iter().enumerate() {
                    if only.is_none_or(|o| o == k) {
                        if k == 2 {
                            weights[batch % 2].record_in(pass);
                        } else {
                            step.record_in(pass);
                        }
                    }
                }
            }
            drop(pass);
            let started = std::time::Instant::now();
            let commands = encoder.finish();
            host = host.min(started.elapsed().as_secs_f64());
            queue.submit([commands]);
            device.poll(wgpu::PollType::wait_indefinitely()).map_err(|e| e.to_string())?;
            best = best.min(started.elapsed().as_secs_f64());
        }
        Ok::<(f64, f64), String>((best / batches as f64, host / batches as f64))
    };
    let (per_batch, finish) = time(None, false)?;
    let (one_pass, _) = time(None, true)?;
    let parts = (0..steps.len()).map(|k| time(Some(k), false).map(|t| format!("{} {:.1}", steps[k].0, t.0 * 1e6))).collect::<Result<Vec<_>, String>>()?;
    let bytes = (n * 7 * 4 + 2 * rows * (nv + nh) * 4) as f64;
    Ok(format!(
        "{}: update half of a batch {nv}x{nh}, rows {rows}: {:.1} us/batch ({batches} batches per submission, a pass per batch, best of 4, of which encoder.finish {:.1}; {:.1} us with the whole submission in one pass; alone, us: {}), ~{:.0} GB/s of the {:.1} MB it must move",
        adapter.get_info().name,
        per_batch * 1e6,
        finish * 1e6,
        one_pass * 1e6,
        parts.join(", "),
        bytes / per_batch / 1e9,
        bytes / 1e6
    ))
}
