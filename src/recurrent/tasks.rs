//! Generated tasks, one example per time step, drawn from the Philox stream (`DataSample`,
//! step = the example's position), so a stream restarts anywhere and a port draws the same.
//!
//! Signals use Moore's encoding (§2.6): true is `+0.3`, false `−0.3`; an output counts as
//! true when it is positive.
//!
//! - `add`: Moore's benchmark (§6.2): two random `n`-bit numbers side by side (`2n` inputs,
//!   least significant bit first) and their sum modulo `2ⁿ` (`n` outputs); every step is
//!   independent.
//! - `not`: Moore's §2.6 example: one random bit in, its negation out.
//! - `recall`: delayed recall: `n` random bits in every step; the target is the bits of
//!   `delay` steps before (steps before the first `delay` are not scored).
//! - `predict`: Elman's (1990) letter sequence: random consonants `b`, `d`, `g`, each followed
//!   by its vowels (`ba`, `dii`, `guuu`); six one-hot inputs, the target is the next letter.
//!   Only steps whose next letter is a vowel are predictable, and only those are scored (the
//!   arg-max output must be that letter).

use super::error::RecurrentError;
use crate::rng::{Purpose, RngStream};
use serde::{Deserialize, Serialize};

pub const TRUE: f32 = 0.3;
pub const FALSE: f32 = -0.3;

pub fn signal(bit: bool) -> f32 {
    if bit {
        TRUE
    } else {
        FALSE
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "task")]
pub enum TaskSpec {
    Add { bits: usize },
    Not,
    Recall { bits: usize, delay: usize },
    Predict,
}

/// The largest `n` of `add` and `recall`.
pub const MAX_BITS: usize = 4096;

/// Elman's letters: consonants then vowels; a consonant `c` is followed by `c + 1` copies of
/// its vowel (`b → a`, `d → ii`, `g → uuu`).
pub const LETTERS: [char; 6] = ['b', 'd', 'g', 'a', 'i', 'u'];

/// One step's example.
#[derive(Clone, Debug, PartialEq)]
pub struct Example {
    pub input: Vec<f32>,
    pub target: Vec<f32>,
    /// Whether the step counts in the accuracy.
    pub scored: bool,
}

impl TaskSpec {
    pub fn name(&self) -> &'static str {
        match self {
            TaskSpec::Add { .. } => "add",
            TaskSpec::Not => "not",
            TaskSpec::Recall { .. } => "recall",
            TaskSpec::Predict => "predict",
        }
    }

    pub fn validate(&self) -> Result<(), RecurrentError> {
        let bits = match *self {
            TaskSpec::Add { bits } | TaskSpec::Recall { bits, .. } => bits,
            _ => return Ok(()),
        };
        if bits == 0 || bits > MAX_BITS {
            return Err(RecurrentError::new("bits", format!("is {bits}; expected 1 to {MAX_BITS}")));
        }
        if let TaskSpec::Recall { delay, .. } = *self {
            if delay == 0 || delay > 1000 {
                return Err(RecurrentError::new("delay", format!("is {delay} steps; expected 1 to 1000")));
            }
        }
        Ok(())
    }

    pub fn inputs(&self) -> usize {
        match *self {
            TaskSpec::Add { bits } => 2 * bits,
            TaskSpec::Not => 1,
            TaskSpec::Recall { bits, .. } => bits,
            TaskSpec::Predict => LETTERS.len(),
        }
    }

    pub fn outputs(&self) -> usize {
        match *self {
            TaskSpec::Add { bits } => bits,
            TaskSpec::Not => 1,
            TaskSpec::Recall { bits, .. } => bits,
            TaskSpec::Predict => LETTERS.len(),
        }
    }

    /// The hidden units of Moore's nets: `2n` for `add` (as many as inputs), `2n` (at least 8)
    /// for `recall`, 2 for `not`, 20 for `predict`.
    pub fn default_hidden(&self) -> usize {
        match *self {
            TaskSpec::Add { bits } => 2 * bits,
            TaskSpec::Not => 2,
            TaskSpec::Recall { bits, delay } => (2 * bits * delay).max(8),
            TaskSpec::Predict => 20,
        }
    }
}

/// The examples of a task from a seed, in order; `at(position)` restarts anywhere.
#[derive(Clone, Debug)]
pub struct TaskStream {
    pub spec: TaskSpec,
    pub seed: u64,
    pub position: u64,
    /// `predict`: the letter sequence generated so far (ahead of `position`), and where its
    /// next word is drawn from.
    letters: std::collections::VecDeque<usize>,
    words_drawn: u64,
}

impl TaskStream {
    pub fn new(spec: TaskSpec, seed: u64) -> Self {
        TaskStream { spec, seed, position: 0, letters: Default::default(), words_drawn: 0 }
    }

    /// The stream from `position` on (the letter sequence replayed up to there).
    pub fn at(spec: TaskSpec, seed: u64, position: u64) -> Self {
        let mut stream = TaskStream::new(spec, seed);
        if matches!(spec, TaskSpec::Predict) {
            while stream.position < position {
                stream.next_letter();
                stream.position += 1;
            }
        }
        stream.position = position;
        stream
    }

    fn bits(&self, step: u64, count: usize) -> Vec<bool> {
        let stream = RngStream::new(self.seed, step, Purpose::DataSample);
        (0..count).map(|i| stream.uniform(i as u64) < 0.5).collect()
    }

    /// The next letter of `predict`'s sequence (pops it), drawing words as needed.
    fn next_letter(&mut self) -> usize {
        while self.letters.len() < 2 {
            let stream = RngStream::new(self.seed, self.words_drawn, Purpose::DataSample);
            self.words_drawn += 1;
            let consonant = ((stream.uniform(0) * 3.0) as usize).min(2);
            self.letters.push_back(consonant);
            self.letters.extend(std::iter::repeat_n(consonant + 3, consonant + 1));
        }
        self.letters.pop_front().expect("filled above")
    }

    /// The example at the current position, then advance.
    pub fn next_example(&mut self) -> Example {
        let step = self.position;
        self.position += 1;
        match self.spec {
            TaskSpec::Add { bits } => {
                let drawn = self.bits(step, 2 * bits);
                let (mut carry, mut target) = (false, Vec::with_capacity(bits));
                for i in 0..bits {
                    let (a, b) = (drawn[i], drawn[bits + i]);
                    target.push(signal(a ^ b ^ carry));
                    carry = (a && b) || (carry && (a ^ b));
                }
                Example { input: drawn.into_iter().map(signal).collect(), target, scored: true }
            }
            TaskSpec::Not => {
                let x = self.bits(step, 1)[0];
                Example { input: vec![signal(x)], target: vec![signal(!x)], scored: true }
            }
            TaskSpec::Recall { bits, delay } => {
                let input = self.bits(step, bits).into_iter().map(signal).collect();
                let delay = delay as u64;
                let (target, scored) = if step >= delay { (self.bits(step - delay, bits).into_iter().map(signal).collect(), true) } else { (vec![FALSE; bits], false) };
                Example { input, target, scored }
            }
            TaskSpec::Predict => {
                let letter = self.next_letter();
                let next = *self.letters.front().expect("at least one letter ahead");
                let one_hot = |l: usize| (0..LETTERS.len()).map(|i| signal(i == l)).collect();
                Example { input: one_hot(letter), target: one_hot(next), scored: next >= 3 }
            }
        }
    }
}

/// Whether an output is right: every bit's sign (add, not, recall) or the arg-max letter
/// (predict). Also the number of right bits (letters: 0 or 1).
pub fn judge(spec: &TaskSpec, output: &[f32], target: &[f32]) -> (bool, usize) {
    match spec {
        TaskSpec::Predict => {
            let argmax = |v: &[f32]| v.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(i, _)| i);
            let right = argmax(output) == argmax(target);
            (right, right as usize)
        }
        _ => {
            let right = output.iter().zip(target).filter(|(y, d)| (**y > 0.0) == (**d > 0.0)).count();
            (right == target.len(), right)
        }
    }
}
