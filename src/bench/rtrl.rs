//! Issue 20's sweep: microseconds per online RTRL step (Moore's `RNN::process`: forward,
//! `∂E/∂y`, `E`, the sensitivity tensors, the Euler step) on Moore's n-bit adder (§6.2): for
//! each `n`, a net of `2n` inputs, `2n` hidden tanh units and `n` outputs (the Elman preset
//! adds hidden → hidden), weights from Philox, examples from the task stream. Untimed warm-up
//! steps first, then `repeats` runs of `steps` steps each; the median and the minimum per step.
//! `bench/rtrl_numpy.py` times the same algorithm in NumPy.

use crate::recurrent::rtrl::tensor_values;
use crate::recurrent::{Network, Preset, RecurrentError, Rtrl, RtrlMode, TaskSpec, TaskStream};
use serde::Serialize;
use std::time::Instant;

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
}

impl Default for RtrlBenchSettings {
    fn default() -> Self {
        RtrlBenchSettings { preset: Preset::Elman, mode: RtrlMode::Shortcut, steps: 20, warmups: 3, repeats: 3, seed: 1, rate: 0.01 }
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
}

/// One row per `n` of `sizes`, handed to `report` as it is measured.
pub fn bench_rtrl(sizes: &[usize], settings: &RtrlBenchSettings, mut report: impl FnMut(&RtrlBenchRow)) -> Result<Vec<RtrlBenchRow>, RecurrentError> {
    if settings.steps == 0 || settings.repeats == 0 {
        return Err(RecurrentError::new("steps", "steps and repeats must be at least 1"));
    }
    let mut rows = Vec::new();
    for &bits in sizes {
        let task = TaskSpec::Add { bits };
        task.validate()?;
        let mut net = Network::initialise(settings.preset.graph(task.inputs(), 2 * bits, task.outputs()), settings.seed, 2.0)?;
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
            let start = Instant::now();
            for e in &examples {
                error += rtrl.train_step(&mut net, &e.input, &e.target, settings.rate).error;
            }
            per_step.push(1e6 * start.elapsed().as_secs_f64() / settings.steps as f64);
        }
        let mut sorted = per_step.clone();
        sorted.sort_by(f64::total_cmp);
        let row = RtrlBenchRow {
            bits,
            preset: settings.preset.name(),
            mode: settings.mode,
            layers: net.graph.layers.clone(),
            parameters: net.params.len(),
            tensor_values: tensor_values(&net, settings.mode),
            steps: settings.steps,
            microseconds_per_step: sorted[sorted.len() / 2],
            microseconds_per_step_min: sorted[0],
            repeats_us: per_step,
            mean_error: error / (settings.steps * settings.repeats) as f64,
            threads: rayon::current_num_threads(),
            backend: "cpu".into(),
        };
        report(&row);
        rows.push(row);
    }
    Ok(rows)
}
