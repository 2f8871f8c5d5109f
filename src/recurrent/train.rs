//! Online training on a task stream: one example per step through RTRL (Moore's
//! `RNN::process`, a weight step every step) or truncated BPTT (a weight step per chunk), with
//! a running record of the error and accuracy, and a held-out evaluation.

use super::bptt::Bptt;
use super::error::{positive, RecurrentError};
use super::network::{Frame, Network};
use super::rtrl::{Rtrl, RtrlMode};
use super::tasks::{judge, TaskSpec, TaskStream};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "trainer")]
pub enum TrainerSpec {
    Rtrl { mode: RtrlMode },
    Bptt { truncation: usize },
}

impl TrainerSpec {
    pub fn name(&self) -> &'static str {
        match self {
            TrainerSpec::Rtrl { .. } => "rtrl",
            TrainerSpec::Bptt { .. } => "bptt",
        }
    }
}

/// A trainer's state: the sensitivities (RTRL) or the chunk being gathered (BPTT).
#[derive(Clone, Debug)]
pub enum Trainer {
    Rtrl(Box<Rtrl>),
    Bptt(Bptt),
}

impl Trainer {
    pub fn new(net: &Network, spec: TrainerSpec) -> Result<Self, RecurrentError> {
        Ok(match spec {
            TrainerSpec::Rtrl { mode } => Trainer::Rtrl(Box::new(Rtrl::new(net, mode)?)),
            TrainerSpec::Bptt { truncation } => Trainer::Bptt(Bptt::new(net, truncation)?),
        })
    }

    /// One example; returns `E(τ)`; the weights move (every step, or at a chunk's end).
    pub fn train_step(&mut self, net: &mut Network, input: &[f32], target: &[f32], rate: f32) -> f64 {
        match self {
            Trainer::Rtrl(rtrl) => rtrl.train_step(net, input, target, rate).error,
            Trainer::Bptt(bptt) => bptt.train_step(net, input, target, rate).error,
        }
    }

    pub fn output(&self) -> &[f32] {
        match self {
            Trainer::Rtrl(rtrl) => rtrl.frame().output(),
            Trainer::Bptt(bptt) => bptt.frame().output(),
        }
    }

    pub fn frame(&self) -> &Frame {
        match self {
            Trainer::Rtrl(rtrl) => rtrl.frame(),
            Trainer::Bptt(bptt) => bptt.frame(),
        }
    }
}

/// Error and accuracy over a stretch of steps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    pub steps: u64,
    /// Σ E(τ) over all steps.
    pub error_sum: f64,
    /// Scored steps, those entirely right, and their right bits (letters) of `bits_scored`.
    pub scored: u64,
    pub right: u64,
    pub bits_right: u64,
    pub bits_scored: u64,
}

impl Tally {
    pub fn add(&mut self, spec: &TaskSpec, error: f64, output: &[f32], target: &[f32], scored: bool) {
        self.steps += 1;
        self.error_sum += error;
        if scored {
            let (right, bits) = judge(spec, output, target);
            self.scored += 1;
            self.right += right as u64;
            self.bits_right += bits as u64;
            self.bits_scored += if matches!(spec, TaskSpec::Predict) { 1 } else { target.len() as u64 };
        }
    }

    pub fn mean_error(&self) -> f64 {
        self.error_sum / self.steps.max(1) as f64
    }

    /// Fraction of scored steps whose whole output was right.
    pub fn accuracy(&self) -> f64 {
        self.right as f64 / self.scored.max(1) as f64
    }

    pub fn bit_accuracy(&self) -> f64 {
        self.bits_right as f64 / self.bits_scored.max(1) as f64
    }
}

/// One line of the training record: the tally of the steps since the previous line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Steps trained so far (all runs of the model together).
    pub step: u64,
    pub mean_error: f64,
    pub accuracy: f64,
    pub bit_accuracy: f64,
}

/// Steps `count` examples of `stream` through `trainer` at `rate`, calling `report` with the
/// tally every `every` steps (and at the end, when steps are left over).
pub fn train(net: &mut Network, trainer: &mut Trainer, stream: &mut TaskStream, rate: f32, count: u64, every: u64, mut report: impl FnMut(u64, &Tally)) -> Result<Tally, RecurrentError> {
    positive("rate", rate as f64)?;
    let (mut all, mut window) = (Tally::default(), Tally::default());
    for done in 1..=count {
        let example = stream.next_example();
        let error = trainer.train_step(net, &example.input, &example.target, rate);
        if !error.is_finite() {
            return Err(RecurrentError::new("rate", format!("{rate} made the error {error} at step {}; expected a smaller rate", stream.position)));
        }
        let output = trainer.output();
        all.add(&stream.spec, error, output, &example.target, example.scored);
        window.add(&stream.spec, error, output, &example.target, example.scored);
        if done % every.max(1) == 0 || done == count {
            report(stream.position, &window);
            window = Tally::default();
        }
    }
    Ok(all)
}

/// The weights' accuracy without learning: `count` steps of a held-out stream (the seed's
/// examples from position 2⁴⁰ on), from a zero state.
pub fn evaluate(net: &Network, spec: TaskSpec, seed: u64, count: u64) -> Tally {
    let mut stream = TaskStream::at(spec, seed ^ 0x5EED_0FE5_A1A1, 0);
    if !matches!(spec, TaskSpec::Predict) {
        stream.position = 1 << 40;
    }
    let (mut prev, mut frame) = (Frame::zeros(&net.graph), Frame::zeros(&net.graph));
    let mut de_dy = vec![0.0; spec.outputs()];
    let mut tally = Tally::default();
    for _ in 0..count {
        let example = stream.next_example();
        std::mem::swap(&mut prev, &mut frame);
        net.forward(&prev, &example.input, &mut frame);
        let error = Network::output_error(&frame, &example.target, &mut de_dy);
        tally.add(&spec, error, frame.output(), &example.target, example.scored);
    }
    tally
}
