//! Issue 20's sweep: microseconds per online RTRL step (Moore's `RNN::process`: forward,
//! `∂E/∂y`, `E`, the sensitivity tensors, the Euler step) on Moore's n-bit adder (§6.2): for
//! each `n`, a net of `2n` inputs, `2n` hidden tanh units and `n` outputs (the Elman preset
//! adds hidden → hidden), weights from Philox, examples from the task stream. Untimed warm-up
//! steps first, then `repeats` runs of `steps` steps each; the median and the minimum per step.
//! `bench/rtrl_numpy.py` times the same algorithm in NumPy. On the device (`bench_gpu`),
//! `gpu::recurrent_step::DeviceRtrl`: the same steps, all of them on the device, recorded
//! `steps_per_submission` at a time into one submission (the examples are known ahead, as in
//! training); a repeat's time includes the examples' upload and the read-back of every step's
//! `E` and output (the steps are complete when it returns).

use crate::recurrent::rtrl::tensor_values;
use crate::recurrent::{Network, Preset, RecurrentError, Rtrl, RtrlMode, TaskSpec, TaskStream};
use serde::Serialize;
use crate::clock::now_seconds;

/// Moore's bit sizes around his crossovers (20–35 units) and up to the n = 128.
pub const SIZES: [usize; 5] = [16, 32, 64, 96, 128];

#[derive(Clone, Copy, Debug)]
pub struct RtrlBenchSettings {
    pub preset: Preset,
    pub mode: RtrlMode,
    /// Timed steps per repeat.
    pub steps: usize,
    pub warmups: usize,
    pub repeats: usize,
    pub seed: u64,
    pub rate: f32,
    /// Device steps recorded per submission; 0: a repeat's steps in one (the CPU ignores it).
    pub steps_per_submission: usize,
}

impl Default for RtrlBenchSettings {
    fn default() -> Self {
        RtrlBenchSettings { preset: Preset::Elman, mode: RtrlMode::Shortcut, steps: 20, warmups: 3, repeats: 3, seed: 1, rate: 0.01, steps_per_submission: 0 }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RtrlBenchRow {
    pub bits: usize,
    pub preset: &'static str,
    pub mode: RtrlMode,
    pub layers: Vec<usize>,
    pub parameters: usize,
    /// Values in all sensitivity tensors (both frames' copies).
    pub tensor_values: u64,
    pub steps: usize,
    /// Median over the repeats of (seconds of a repeat / its steps), in µs.
    pub microseconds_per_step: f64,
    pub microseconds_per_step_min: f64,
    pub repeats_us: Vec<f64>,
    /// Mean `E` of the timed steps (so a port's run can be compared).
    pub mean_error: f64,
    pub threads: usize,
    pub backend: String,
    /// Steps per device submission (1 on the CPU: every step completes before the next).
    pub steps_per_submission: usize,
}

/// Moore's adder net for `bits`, its task, and the stream after the warm-up.
fn adder(bits: usize, settings: &RtrlBenchSettings) -> Result<(TaskSpec, Network), RecurrentError> {
    let task = TaskSpec::Add { bits };
    task.validate()?;
    let net = Network::initialise(settings.preset.graph(task.inputs(), 2 * bits, task.outputs()), settings.seed, 2.0)?;
    Ok((task, net))
}

fn row(bits: usize, settings: &RtrlBenchSettings, net: &Network, per_step: Vec<f64>, error: f64, backend: String, steps_per_submission: usize) -> RtrlBenchRow {
    let mut sorted = per_step.clone();
    sorted.sort_by(f64::total_cmp);
    RtrlBenchRow {
        bits,
        preset: settings.preset.name(),
        mode: settings.mode,
        layers: net.graph.layers.clone(),
        parameters: net.params.len(),
        tensor_values: tensor_values(net, settings.mode),
        steps: settings.steps,
        microseconds_per_step: sorted[sorted.len() / 2],
        microseconds_per_step_min: sorted[0],
        repeats_us: per_step,
        mean_error: error / (settings.steps * settings.repeats) as f64,
        threads: rayon::current_num_threads(),
        backend,
        steps_per_submission,
    }
}

/// The device's rows: `DeviceRtrl` on the same nets, examples and steps as [`bench_rtrl`].
pub async fn bench_gpu(ctx: &crate::gpu::GpuContext, sizes: &[usize], settings: &RtrlBenchSettings, mut report: impl FnMut(&RtrlBenchRow)) -> Result<Vec<RtrlBenchRow>, String> {
    use crate::gpu::recurrent_step::DeviceRtrl;
    if settings.steps == 0 || settings.repeats == 0 {
        return Err(RecurrentError::new("steps", "steps and repeats must be at least 1").to_string());
    }
    let summary = ctx.summary();
    let backend = format!("gpu: {} ({})", summary.name, summary.backend);
    let per_submission = if settings.steps_per_submission == 0 { settings.steps } else { settings.steps_per_submission.min(settings.steps) };
    let flat = |examples: &[crate::recurrent::Example]| -> (Vec<f32>, Vec<f32>) { (examples.iter().flat_map(|e| e.input.iter().copied()).collect(), examples.iter().flat_map(|e| e.target.iter().copied()).collect()) };
    let mut rows = Vec::new();
    for &bits in sizes {
        let (task, net) = adder(bits, settings).map_err(|e| e.to_string())?;
        Rtrl::new(&net, settings.mode).map_err(|e| e.to_string())?; // the same size limit as the CPU's
        let mut rtrl = DeviceRtrl::new(ctx, &net, settings.mode, None, per_submission.max(settings.warmups)).map_err(|e| e.to_string())?;
        let mut stream = TaskStream::new(task, settings.seed);
        let warmups: Vec<_> = (0..settings.warmups).map(|_| stream.next_example()).collect();
        let (inputs, targets) = flat(&warmups);
        rtrl.train_steps(ctx, &inputs, &targets, settings.rate).await.map_err(|e| e.to_string())?;
        warm_clock(ctx, bits, settings).await?;
        let (mut per_step, mut error) = (Vec::with_capacity(settings.repeats), 0.0);
        for _ in 0..settings.repeats {
            let examples: Vec<_> = (0..settings.steps).map(|_| stream.next_example()).collect();
            let (inputs, targets) = flat(&examples);
            let start = now_seconds();
            let mut done = 0;
            while done < settings.steps {
                let count = per_submission.min(settings.steps - done);
                let (n_in, n_out) = (inputs.len() / settings.steps, targets.len() / settings.steps);
                let steps = rtrl.train_steps(ctx, &inputs[done * n_in..(done + count) * n_in], &targets[done * n_out..(done + count) * n_out], settings.rate).await.map_err(|e| e.to_string())?;
                error += steps.errors.iter().sum::<f64>();
                done += count;
            }
            per_step.push(1e6 * (now_seconds() - start) / settings.steps as f64);
        }
        if !error.is_finite() {
            return Err(format!("n = {bits}: the error became {error} on the device"));
        }
        let row = row(bits, settings, &net, per_step, error, backend.clone(), per_submission);
        report(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// Steps of a scratch copy of `net` on the device, back to back, for `bench::gpu_warm_up_seconds`:
/// the GPU's clock rises only after sustained work, and the timed steps are a few ms.
async fn warm_clock(ctx: &crate::gpu::GpuContext, bits: usize, settings: &RtrlBenchSettings) -> Result<(), String> {
    let seconds = crate::bench::gpu_warm_up_seconds();
    if seconds <= 0.0 {
        return Ok(());
    }
    let steps = 64;
    let (task, net) = adder(bits, settings).map_err(|e| e.to_string())?;
    let mut scratch = crate::gpu::recurrent_step::DeviceRtrl::new(ctx, &net, settings.mode, None, steps).map_err(|e| e.to_string())?;
    let mut stream = TaskStream::new(task, settings.seed ^ 0x5EED);
    let examples: Vec<_> = (0..steps).map(|_| stream.next_example()).collect();
    let inputs: Vec<f32> = examples.iter().flat_map(|e| e.input.iter().copied()).collect();
    let targets: Vec<f32> = examples.iter().flat_map(|e| e.target.iter().copied()).collect();
    let started = now_seconds();
    while now_seconds() - started < seconds {
        scratch.train_steps(ctx, &inputs, &targets, settings.rate).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `DeviceRtrl::profile` of Moore's adder net for each n of `sizes`, after the warm-up steps:
/// every dispatch of `settings.steps` steps (at most a query set's worth) timed on its own, then
/// the same number of steps in one pass. Handed to `report` as each is measured.
pub async fn profile_gpu(ctx: &crate::gpu::GpuContext, sizes: &[usize], settings: &RtrlBenchSettings, mut report: impl FnMut(usize, &crate::gpu::recurrent_step::RtrlProfile)) -> Result<(), String> {
    use crate::gpu::recurrent_step::DeviceRtrl;
    let flat = |examples: &[crate::recurrent::Example]| -> (Vec<f32>, Vec<f32>) { (examples.iter().flat_map(|e| e.input.iter().copied()).collect(), examples.iter().flat_map(|e| e.target.iter().copied()).collect()) };
    for &bits in sizes {
        let (task, net) = adder(bits, settings).map_err(|e| e.to_string())?;
        Rtrl::new(&net, settings.mode).map_err(|e| e.to_string())?;
        let steps = settings.steps.max(2);
        let mut rtrl = DeviceRtrl::new(ctx, &net, settings.mode, None, steps.max(settings.warmups)).map_err(|e| e.to_string())?;
        let mut stream = TaskStream::new(task, settings.seed);
        let warmups: Vec<_> = (0..settings.warmups).map(|_| stream.next_example()).collect();
        let (inputs, targets) = flat(&warmups);
        rtrl.train_steps(ctx, &inputs, &targets, settings.rate).await.map_err(|e| e.to_string())?;
        warm_clock(ctx, bits, settings).await?;
        let examples: Vec<_> = (0..steps).map(|_| stream.next_example()).collect();
        let (inputs, targets) = flat(&examples);
        let profile = rtrl.profile(ctx, &inputs, &targets, settings.rate).await.map_err(|e| format!("n = {bits}: {e}"))?;
        report(bits, &profile);
    }
    Ok(())
}

/// One row per `n` of `sizes`, handed to `report` as it is measured.
pub fn bench_rtrl(sizes: &[usize], settings: &RtrlBenchSettings, mut report: impl FnMut(&RtrlBenchRow)) -> Result<Vec<RtrlBenchRow>, RecurrentError> {
    if settings.steps == 0 || settings.repeats == 0 {
        return Err(RecurrentError::new("steps", "steps and repeats must be at least 1"));
    }
    let mut rows = Vec::new();
    for &bits in sizes {
        let (task, mut net) = adder(bits, settings)?;
        let mut rtrl = Rtrl::new(&net, settings.mode)?;
        let mut stream = TaskStream::new(task, settings.seed);
        for _ in 0..settings.warmups {
            let e = stream.next_example();
            rtrl.train_step(&mut net, &e.input, &e.target, settings.rate);
        }
        let mut per_step = Vec::with_capacity(settings.repeats);
        let mut error = 0.0;
        for _ in 0..settings.repeats {
            let examples: Vec<_> = (0..settings.steps).map(|_| stream.next_example()).collect();
            let start = now_seconds();
            for e in &examples {
                error += rtrl.train_step(&mut net, &e.input, &e.target, settings.rate).error;
            }
            per_step.push(1e6 * (now_seconds() - start) / settings.steps as f64);
        }
        let row = row(bits, settings, &net, per_step, error, "cpu".into(), 1);
        report(&row);
        rows.push(row);
    }
    Ok(rows)
}
