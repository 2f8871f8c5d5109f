//! `deepbelief bench --rtrl` (issue 20): microseconds per online RTRL step on Moore's n-bit
//! adder (2n inputs, 2n hidden, n outputs) for each n of `--sizes` (default 16,32,64,96,128),
//! on the CPU (`deepbelief::bench::rtrl`) or with `--backend gpu` with the sensitivity tensors
//! resident on the device (the engine's `bench_rtrl`), one row per n printed as it is measured
//! (with `--json`, one JSON object per line). `bench/rtrl_numpy.py` is the NumPy peer.

use crate::backend_choice::{self, BackendChoice};
use crate::output::Output;
use clap::{Args, ValueEnum};
use deepbelief::bench::rtrl::{RtrlBenchRow, RtrlBenchSettings, SIZES};
use deepbelief::recurrent::{Preset, RtrlMode};
use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchPreset {
    Elman,
    Jordan,
    Feedforward,
}

#[derive(Args, Debug)]
pub struct RtrlBenchArgs {
    /// Time online RTRL steps (issue 20, Moore's adder) instead of RBM epochs; --sizes are the
    /// bits n (default 16,32,64,96,128).
    #[arg(long)]
    pub rtrl: bool,
    /// --rtrl: the graph (Moore timed elman and feedforward).
    #[arg(long, value_enum, default_value_t = BenchPreset::Elman)]
    pub rtrl_preset: BenchPreset,
    /// --rtrl: a sensitivity tensor for every weight (Moore's unoptimised RTRL).
    #[arg(long)]
    pub rtrl_no_shortcut: bool,
    /// --rtrl: timed steps per repeat (--repeats repeats, the median reported).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub rtrl_steps: usize,
    /// --rtrl --backend gpu: steps recorded per device submission (0: a repeat's steps in one;
    /// 1: every step submitted and read back on its own).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub rtrl_submit: usize,
    /// --rtrl --backend gpu: instead of timing, GPU timestamps around every dispatch of
    /// --rtrl-steps steps (each in its own pass), then the same steps in one pass: each
    /// dispatch's label and µs, the per-step sum and the one-pass time per n (with --json, one
    /// object per n). Needs the adapter's timestamp queries.
    #[arg(long)]
    pub rtrl_profile: bool,
}

/// `sizes` is `--sizes`; its autoencoder default stands for "not given".
pub fn run(args: &RtrlBenchArgs, sizes: &[usize], repeats: usize, backend: BackendChoice, output: Output) -> Result<(), String> {
    let engine = backend_choice::engine(backend)?;
    let sizes = if sizes == deepbelief::bench::autoencoder::SIZES { &SIZES[..] } else { sizes };
    let preset = match args.rtrl_preset {
        BenchPreset::Elman => Preset::Elman,
        BenchPreset::Jordan => Preset::Jordan,
        BenchPreset::Feedforward => Preset::FeedForward,
    };
    let mode = if args.rtrl_no_shortcut { RtrlMode::Full } else { RtrlMode::Shortcut };
    let settings = RtrlBenchSettings { preset, mode, steps: args.rtrl_steps, repeats, steps_per_submission: args.rtrl_submit, ..Default::default() };
    let print = |r: &RtrlBenchRow| {
        output.text(&format!(
            "rtrl {} n = {} ({} net, {} parameters, {:.1} M sensitivity values, {:?}): median {:.1} µs per step, min {:.1} of {} × {} steps ({} per submission), mean E {:.4}; {} ({} threads)",
            r.preset,
            r.bits,
            r.layers.iter().map(usize::to_string).collect::<Vec<_>>().join("-"),
            r.parameters,
            r.tensor_values as f64 / 1e6,
            r.mode,
            r.microseconds_per_step,
            r.microseconds_per_step_min,
            r.repeats_us.len(),
            r.steps,
            r.steps_per_submission,
            r.mean_error,
            r.backend,
            r.threads
        ));
        if output.json {
            let line = serde_json::to_string(r).expect("a benchmark row serialises");
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}").and_then(|_| out.flush());
        }
    };
    if args.rtrl_profile {
        let deepbelief::engine::Engine::Gpu(ctx) = &engine else {
            return Err("--rtrl-profile times the device: add --backend gpu".into());
        };
        let mut failed = None;
        pollster::block_on(deepbelief::bench::rtrl::profile_gpu(ctx, sizes, &settings, |bits, p| {
            output.text(&format!("rtrl profile n = {bits} ({}; {} dispatches per step; mean of {} steps, each dispatch in its own pass):", p.knobs, p.dispatches_per_step, p.steps));
            for d in &p.dispatches {
                output.text(&format!("  {:>9.1} µs  {}{}", d.microseconds, d.label, if d.dispatches > 1 { format!(" ({} dispatches)", d.dispatches) } else { String::new() }));
            }
            output.text(&format!("  {:>9.1} µs  sum of the dispatches per step", p.dispatch_sum_us));
            output.text(&format!("  {:>9.1} µs  per step with {} steps in one pass (as training records them)", p.one_pass_us, p.steps));
            if output.json {
                match serde_json::to_value(p) {
                    Ok(mut v) => {
                        v["bits"] = bits.into();
                        let mut out = std::io::stdout().lock();
                        let _ = writeln!(out, "{v}").and_then(|_| out.flush());
                    }
                    Err(e) => failed = Some(e.to_string()),
                }
            }
        }))?;
        return failed.map_or(Ok(()), Err);
    }
    pollster::block_on(engine.bench_rtrl(sizes, &settings, print))?;
    Ok(())
}
