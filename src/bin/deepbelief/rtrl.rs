//! `deepbelief rtrl` (issue 20): trains a recurrent net online on a generated task (Moore
//! 2009): `--task add|not|recall|predict` (`--bits n`, `--delay d`), a `--preset`
//! elman|jordan|feedforward graph (`--hidden` units; Moore's 2n for addition), `--trainer
//! rtrl` (Moore's RTRL, with the back-propagation shortcut unless `--no-shortcut`) or `bptt`
//! (truncated every `--truncation` steps), `--steps` examples at `--rate`, weights from
//! `--seed`. Prints the error and accuracy every `--report-every` steps and a held-out
//! evaluation at the end, and writes `recurrent.json` (format `deepbelief-recurrent/1`) into
//! `--out`, atomically. `--resume FILE` continues a saved model: its graph, task, trainer and
//! seed; the task stream goes on where it stopped; the sensitivities restart at zero.

use crate::backend_choice::{self, BackendChoice};
use crate::out_lock::OutLock;
use crate::output::Output;
use clap::{Args, ValueEnum};
use deepbelief::format::recurrent::{read, to_json, Evaluation, SavedRecurrent, FORMAT};
use deepbelief::recurrent::train::{Progress, TrainerSpec};
use deepbelief::engine::recurrent::RecurrentSession;
use deepbelief::recurrent::{evaluate, Network, Preset, RtrlMode, TaskSpec, TaskStream};
use deepbelief::report::atomic::write_atomically;
use serde_json::json;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TaskChoice {
    /// n-bit binary addition (2n inputs, n outputs, the sum modulo 2ⁿ).
    Add,
    /// Logical NOT with ±0.3 signals (Moore §2.6).
    Not,
    /// The n input bits of --delay steps before.
    Recall,
    /// Elman's letters (ba, dii, guuu): predict the next letter.
    Predict,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PresetChoice {
    Elman,
    Jordan,
    Feedforward,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TrainerChoice {
    /// Real-time recurrent learning (Moore's sensitivity tensors), a weight step per step.
    Rtrl,
    /// Truncated back-propagation through time, a weight step per --truncation steps.
    Bptt,
}

#[derive(Args, Debug)]
pub struct RtrlArgs {
    #[arg(long, value_enum, default_value_t = TaskChoice::Add, conflicts_with = "resume")]
    pub task: TaskChoice,
    /// add, recall: n, the bits of each number (recalled bits).
    #[arg(long, value_name = "N", default_value_t = 4, conflicts_with = "resume")]
    pub bits: usize,
    /// recall: how many steps back the target is.
    #[arg(long, value_name = "STEPS", default_value_t = 2, conflicts_with = "resume")]
    pub delay: usize,
    #[arg(long, value_enum, default_value_t = PresetChoice::Elman, conflicts_with = "resume")]
    pub preset: PresetChoice,
    /// Hidden units (default: 2n for add as Moore's nets, 2·n·delay (≥ 8) for recall, 2 for
    /// not, 20 for predict).
    #[arg(long, value_name = "N", conflicts_with = "resume")]
    pub hidden: Option<usize>,
    #[arg(long, value_enum, default_value_t = TrainerChoice::Rtrl, conflicts_with = "resume")]
    pub trainer: TrainerChoice,
    /// rtrl: a sensitivity tensor for every weight (no back-propagation shortcut).
    #[arg(long, conflicts_with = "resume")]
    pub no_shortcut: bool,
    /// bptt: steps per truncated chunk.
    #[arg(long, value_name = "STEPS", default_value_t = 16, conflicts_with = "resume")]
    pub truncation: usize,
    /// Examples to train on (one per time step).
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub steps: u64,
    /// The Euler step's rate (default 0.01; with --resume the file's).
    #[arg(long, value_name = "RATE")]
    pub rate: Option<f32>,
    /// Initial weights and biases uniform in ±scale/√fan-in.
    #[arg(long, value_name = "SCALE", default_value_t = 2.0, conflicts_with = "resume")]
    pub init_scale: f32,
    /// Seed of the initial weights and of the task's examples.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "resume")]
    pub seed: u64,
    /// Continue training a saved recurrent.json.
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
    /// Print the error and accuracy every this many steps (default: a tenth of --steps).
    #[arg(long, value_name = "N")]
    pub report_every: Option<u64>,
    /// Held-out steps of the final evaluation.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub eval_steps: u64,
    /// Folder for recurrent.json (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Print the summary as one JSON object on the last line of standard output.
    #[arg(long)]
    pub json: bool,
    /// Where RTRL runs: cpu, gpu (every step on the device, steps batched per submission), or
    /// auto (the GPU when a hardware adapter exists). BPTT runs on the CPU.
    #[arg(long, value_enum, default_value_t = BackendChoice::Cpu)]
    pub backend: BackendChoice,
}

fn task_spec(args: &RtrlArgs) -> TaskSpec {
    match args.task {
        TaskChoice::Add => TaskSpec::Add { bits: args.bits },
        TaskChoice::Not => TaskSpec::Not,
        TaskChoice::Recall => TaskSpec::Recall { bits: args.bits, delay: args.delay },
        TaskChoice::Predict => TaskSpec::Predict,
    }
}

fn preset(choice: PresetChoice) -> Preset {
    match choice {
        PresetChoice::Elman => Preset::Elman,
        PresetChoice::Jordan => Preset::Jordan,
        PresetChoice::Feedforward => Preset::FeedForward,
    }
}

/// A new model's record from the flags, or the saved one (`--resume`).
fn start(args: &RtrlArgs) -> Result<(SavedRecurrent, Network), String> {
    if let Some(path) = &args.resume {
        let mut saved = read(path)?;
        if let Some(rate) = args.rate {
            saved.rate = rate;
        }
        let net = saved.network()?;
        return Ok((saved, net));
    }
    let task = task_spec(args);
    task.validate().map_err(|e| format!("--{e}"))?;
    let hidden = args.hidden.unwrap_or(task.default_hidden());
    if hidden == 0 {
        return Err("--hidden is 0; expected at least 1 unit".into());
    }
    let preset = preset(args.preset);
    let graph = preset.graph(task.inputs(), hidden, task.outputs());
    let net = Network::initialise(graph.clone(), args.seed, args.init_scale).map_err(|e| format!("--{e}"))?;
    let trainer = match args.trainer {
        TrainerChoice::Rtrl => TrainerSpec::Rtrl { mode: if args.no_shortcut { RtrlMode::Full } else { RtrlMode::Shortcut } },
        TrainerChoice::Bptt => TrainerSpec::Bptt { truncation: args.truncation },
    };
    let saved = SavedRecurrent {
        format: FORMAT.into(),
        graph,
        preset: Some(preset.name().into()),
        task,
        trainer,
        rate: args.rate.unwrap_or(0.01),
        init_scale: args.init_scale,
        seed: args.seed,
        steps: 0,
        history: Vec::new(),
        evaluation: None,
        seconds: 0.0,
        params: Vec::new(),
    };
    Ok((saved, net))
}

pub fn run(args: RtrlArgs) -> Result<(), String> {
    let output = Output { json: args.json };
    if args.steps == 0 {
        return Err("--steps is 0; expected at least 1".into());
    }
    let (mut saved, mut net) = start(&args)?;
    if !(saved.rate > 0.0 && saved.rate.is_finite()) {
        return Err(format!("--rate is {}; expected a finite number > 0", saved.rate));
    }
    let engine = backend_choice::engine(args.backend)?;
    let mut session = RecurrentSession::new(&engine, net.clone(), saved.trainer).map_err(|e| format!("--{e}"))?;
    if let Some(reason) = &session.reason {
        eprintln!("notice: {reason}; running on the CPU");
    }
    let started_on_device = session.on_device();
    std::fs::create_dir_all(&args.out).map_err(|e| format!("--out {}: {e}", args.out.display()))?;
    let _lock = OutLock::acquire(&args.out)?;
    let mut stream = TaskStream::at(saved.task, saved.seed, saved.steps);
    let layers: Vec<String> = saved.graph.layers.iter().map(usize::to_string).collect();
    let trainer_name = match saved.trainer {
        TrainerSpec::Rtrl { mode: RtrlMode::Shortcut } => "RTRL with the back-propagation shortcut".to_string(),
        TrainerSpec::Rtrl { mode: RtrlMode::Full } => "RTRL (full)".to_string(),
        TrainerSpec::Bptt { truncation } => format!("truncated BPTT ({truncation} steps)"),
    };
    output.text(&format!(
        "rtrl: task {} ({} inputs, {} outputs), {} net {} ({} parameters), {trainer_name}, rate {}, steps {} to {}",
        saved.task.name(),
        saved.task.inputs(),
        saved.task.outputs(),
        saved.preset.as_deref().unwrap_or("custom"),
        layers.join("-"),
        net.params.len(),
        saved.rate,
        saved.steps,
        saved.steps + args.steps
    ));
    let every = args.report_every.unwrap_or((args.steps / 10).max(1));
    let started = std::time::Instant::now();
    let mut history = Vec::new();
    let all = pollster::block_on(session.train(&mut stream, saved.rate, args.steps, every, |step, tally| {
        output.text(&format!(
            "  step {step}: mean E {:.6}, accuracy {:.2}% (bits {:.2}%), {:.1} s",
            tally.mean_error(),
            100.0 * tally.accuracy(),
            100.0 * tally.bit_accuracy(),
            started.elapsed().as_secs_f64()
        ));
        history.push(Progress { step, mean_error: tally.mean_error(), accuracy: tally.accuracy(), bit_accuracy: tally.bit_accuracy() });
    }, |_, _, _| {}))
    .map_err(|e| format!("--{e}"))?;
    if started_on_device && !session.on_device() {
        eprintln!("notice: {}", session.reason.as_deref().unwrap_or("the device was lost"));
    }
    net = session.net.clone();
    let seconds = started.elapsed().as_secs_f64();
    let held_out = evaluate(&net, saved.task, saved.seed, args.eval_steps);
    let evaluation = Evaluation { steps: args.eval_steps, mean_error: held_out.mean_error(), accuracy: held_out.accuracy(), bit_accuracy: held_out.bit_accuracy() };
    saved.steps = stream.position;
    saved.history.extend(history);
    saved.evaluation = Some(evaluation);
    saved.seconds += seconds;
    saved.params = net.params.clone();
    let path = args.out.join("recurrent.json");
    write_atomically(&path, to_json(&saved)?.as_bytes())?;
    let per_step_us = 1e6 * seconds / args.steps as f64;
    output.text(&format!(
        "trained {} steps in {seconds:.2} s ({per_step_us:.1} µs per step), mean E {:.6}; held-out ({} steps): accuracy {:.2}% (bits {:.2}%), mean E {:.6}; wrote {}",
        args.steps,
        all.mean_error(),
        args.eval_steps,
        100.0 * evaluation.accuracy,
        100.0 * evaluation.bit_accuracy,
        evaluation.mean_error,
        path.display()
    ));
    output.finish(&json!({
        "task": saved.task.name(), "trainer": saved.trainer.name(), "layers": saved.graph.layers, "steps": saved.steps,
        "training_mean_error": all.mean_error(), "training_accuracy": all.accuracy(),
        "accuracy": evaluation.accuracy, "bit_accuracy": evaluation.bit_accuracy, "mean_error": evaluation.mean_error,
        "seconds": seconds, "microseconds_per_step": per_step_us, "model": path.display().to_string(), "backend": session.backend_name(),
    }));
    Ok(())
}
