//! How much memory a training run will need, worked out from its shape before anything is
//! allocated, so a run too large for the machine (the CLI) or the page is refused with the
//! figure instead of aborting part-way. The estimate follows what the trainers keep alive at
//! their busiest moment; it errs high rather than low, and ignores what is small beside it
//! (reports, schedules, a few rows of scratch).

use super::greedy::StackConfig;
use crate::supervised::{Optimizer, SupervisedConfig};
use crate::data::{CaseValues, Dataset};
use crate::supervised::evaluation::label_class_names;
use crate::supervised::network::BLOCK_ROWS;

const F32: u64 = 4;

/// Rows of the reconstruction error's blocks (`Rbm::reconstruction_error`).
const RECONSTRUCTION_ROWS: u64 = 256;

/// The shape of a run: its data, its stack and its supervised stage.
pub struct RunShape<'a> {
    pub n_cases: usize,
    pub n_inputs: usize,
    /// Bytes per stored input value: 1 for image bytes, 4 for floats.
    pub bytes_per_input: usize,
    pub stack: &'a StackConfig,
    /// The supervised stage, with its number of outputs, when the run has one.
    pub supervised: Option<(&'a SupervisedConfig, usize)>,
}

impl<'a> RunShape<'a> {
    /// The run of `stack` (and `supervised`, when the data have labels or targets for it)
    /// on `data`.
    pub fn of(data: &Dataset, stack: &'a StackConfig, supervised: Option<&'a SupervisedConfig>) -> RunShape<'a> {
        let bytes_per_input = match data.values {
            CaseValues::Bytes(_) => 1,
            CaseValues::Floats(_) => 4,
        };
        let n_outputs = match (&data.targets, &data.labels) {
            (Some(targets), _) => Some(targets.n_targets()),
            (None, Some(labels)) => Some(label_class_names(labels).len()),
            (None, None) => None,
        };
        RunShape { n_cases: data.n_cases, n_inputs: data.n_inputs, bytes_per_input, stack, supervised: supervised.zip(n_outputs) }
    }
}

/// The estimated peak, and the stage it falls in ("layer 2 (784 × 500)", "fine-tuning").
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryEstimate {
    pub bytes: u64,
    pub stage: String,
}

/// Saturating arithmetic: absurd shapes must give a huge figure, not wrap to a small one.
fn product(factors: &[usize]) -> u64 {
    factors.iter().fold(1u64, |acc, &f| acc.saturating_mul(f as u64))
}

fn sum(terms: &[u64]) -> u64 {
    terms.iter().fold(0u64, |acc, &t| acc.saturating_add(t))
}

pub fn estimate_training_memory(shape: &RunShape) -> MemoryEstimate {
    let n_cases = shape.n_cases;
    let data = product(&[n_cases, shape.n_inputs, shape.bytes_per_input]);
    let mut finished_layers = 0u64;
    let mut peak = MemoryEstimate { bytes: data, stage: "the data".into() };
    let mut n_visible = shape.n_inputs;
    for (index, &n_hidden) in shape.stack.layers.iter().enumerate() {
        let config = shape.stack.layer_config(index);
        let rbm = product(&[n_visible, n_hidden]).saturating_add(product(&[n_visible + n_hidden])).saturating_mul(F32);
        // Layers above the first train on the layer below's propagated probabilities.
        let layer_data = if index == 0 { 0 } else { product(&[n_cases, n_visible]).saturating_mul(F32) };
        let trials = config.init_trials.max(1);
        let initialisation = sum(&[
            rbm.saturating_mul(trials as u64),
            product(&[trials, RECONSTRUCTION_ROWS as usize, 2 * n_visible + n_hidden]).saturating_mul(F32),
        ]);
        let rows = config.cases_per_batch(n_cases.max(1)).min(n_cases.max(1));
        let chains = if config.persistent { config.n_persistent_chains } else { rows };
        let monitor = shape.stack.monitor_cases.min(n_cases);
        // The model, its velocity, the gradient, the previous gradient (adaptive schedule) and
        // the epoch's snapshot for rolling back a divergence.
        let training = sum(&[
            rbm.saturating_mul(5),
            product(&[rows, n_visible + n_hidden]).saturating_mul(3 * F32),
            product(&[chains, n_visible + n_hidden]).saturating_mul(2 * F32),
            product(&[monitor, n_visible + n_hidden]).saturating_mul(3 * F32),
        ]);
        // Closing the layer: its units sorted (a copy) and, below the top, the data
        // propagated through it for the next layer.
        let is_top = index + 1 == shape.stack.layers.len();
        let propagated = if is_top { 0 } else { product(&[n_cases, n_hidden]).saturating_mul(F32) };
        let closing = sum(&[rbm.saturating_mul(2), propagated]);
        let bytes = sum(&[data, finished_layers, layer_data, initialisation.max(training).max(closing)]);
        if bytes > peak.bytes {
            peak = MemoryEstimate { bytes, stage: format!("RBM layer {} ({n_visible} × {n_hidden})", index + 1) };
        }
        finished_layers = finished_layers.saturating_add(rbm);
        n_visible = n_hidden;
    }
    let mut saved_values = finished_layers / F32;
    if let Some((config, n_outputs)) = shape.supervised {
        let stage = supervised_memory(shape, config, n_outputs, data, finished_layers);
        if stage.bytes > peak.bytes {
            peak = stage;
        }
        saved_values = saved_values.saturating_add(parameters(&supervised_widths(shape, config, n_outputs)));
    }
    // model.json is rendered whole before it is written, a few copies of its text at once.
    let saving = sum(&[data, finished_layers, saved_values.saturating_mul(SAVED_TEXT_BYTES_PER_VALUE)]);
    if saving > peak.bytes {
        peak = MemoryEstimate { bytes: saving, stage: "saving model.json".into() };
    }
    peak
}

/// Bytes of model.json text alive per saved number while it is rendered: about 13
/// characters a number, in several strings at once (a layer, the layers joined, the whole
/// file), some with twice their length reserved as they grew. Measured: about 70 for a
/// 784-2500-2500 stack (tests/cli_memory.rs).
const SAVED_TEXT_BYTES_PER_VALUE: u64 = 80;

/// The widths of the supervised net: the stack's top, its hidden layers, the outputs.
fn supervised_widths(shape: &RunShape, config: &SupervisedConfig, n_outputs: usize) -> Vec<usize> {
    let mut widths = vec![shape.stack.layers.last().copied().unwrap_or(shape.n_inputs)];
    widths.extend(&config.hidden);
    widths.push(n_outputs);
    widths
}

/// Weights and biases of layers of these widths, one layer per adjacent pair.
fn parameters(widths: &[usize]) -> u64 {
    widths.windows(2).fold(0u64, |acc, pair| acc.saturating_add(product(&[pair[0] + 1, pair[1]])))
}

/// The supervised stage: the inputs as floats, the features on top of the stack, the
/// optimiser's copies of the parameters and a block of activations and deltas; then
/// fine-tuning, which does the same for the complete network.
fn supervised_memory(shape: &RunShape, config: &SupervisedConfig, n_outputs: usize, data: u64, stack_bytes: u64) -> MemoryEstimate {
    let n_cases = shape.n_cases;
    let layers = &shape.stack.layers;
    let widths = supervised_widths(shape, config, n_outputs);
    let top = widths[0];
    // CG keeps the weights, the gradient, the direction, a trial point, its gradient and the
    // best point; SGD fewer, annealing three nets.
    let copies = |optimizer: Optimizer| match optimizer {
        Optimizer::ConjugateGradient => 6,
        Optimizer::Sgd => 4,
        // Toman's adaptive step: weights, gradient, best weights, and three f64 vectors
        // (rates, two delta memories); the other step rules fewer.
        _ => 9,
    };
    let block = |widths: &[usize]| product(&[BLOCK_ROWS.min(n_cases.max(1)), widths.iter().sum()]).saturating_mul(2 * F32);
    let fixed = sum(&[data, stack_bytes, product(&[n_cases, shape.n_inputs]).saturating_mul(F32), product(&[n_cases, n_outputs]).saturating_mul(F32)]);
    // Propagating the inputs up keeps a copy of them and two adjacent layers at once.
    let mut all_widths = vec![shape.n_inputs];
    all_widths.extend(layers);
    let propagation = all_widths.windows(2).map(|pair| product(&[n_cases, pair[0] + pair[1]])).max().unwrap_or(0).saturating_mul(F32);
    let supervised = sum(&[
        fixed,
        propagation.max(product(&[n_cases, top]).saturating_mul(F32)),
        parameters(&widths).saturating_mul(copies(config.optimizer).max(3)),
        block(&widths),
    ]);
    let mut result = MemoryEstimate { bytes: supervised, stage: "the supervised stage".into() };
    if config.fine_tune {
        let mut complete = all_widths.clone();
        complete.extend(&widths[1..]);
        let optimizer = config.fine_tune_optimizer.unwrap_or(config.optimizer);
        let fine_tune = sum(&[fixed, parameters(&complete).saturating_mul(copies(optimizer)), block(&complete)]);
        if fine_tune > result.bytes {
            result = MemoryEstimate { bytes: fine_tune, stage: "fine-tuning".into() };
        }
    }
    result
}

/// `17.2 GiB`, `350 MiB`, `12 KiB`, `800 bytes`, `1 byte`.
pub fn describe_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, size) in UNITS {
        if bytes >= size {
            let value = bytes as f64 / size as f64;
            return if value < 10.0 { format!("{value:.1} {name}") } else { format!("{value:.0} {name}") };
        }
    }
    if bytes == 1 {
        "1 byte".into()
    } else {
        format!("{bytes} bytes")
    }
}
