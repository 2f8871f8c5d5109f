//! Stacked sparse autoencoders (UFLDL's "Stacked Autoencoders" and "Self-Taught Learning"
//! exercises): greedy layer-wise pretraining, a SoftMax output on the top features, and
//! fine-tuning of the encoders together with the SoftMax by backpropagation.
//!
//! - Pretraining: layer 1 trains on the inputs; layer k trains on the hidden activations
//!   `a₂ = f(W₁x + b₁)` of layer k − 1 over the same cases. Each layer is one `train` call
//!   through a caller-supplied trainer (the engine's, so a layer can train on the device).
//! - The encoders `(W₁, b₁)` are sigmoid layers in the RBM layout (`n_in × n_out`, row `i` for
//!   input `i`), so [`AutoencoderStack::dbn_view`] makes a [`Dbn`] whose RBMs carry them as
//!   `weights` and `hidden_bias`, and the supervised pipeline (`train_supervised`,
//!   `complete_network`, `optimise`) runs on that view unchanged. The decoders play no part in
//!   classification: the view's visible biases are the decoders' `b₂` only to keep the RBMs
//!   well-formed, and the downward pass of the view is not the decoder.
//! - Fine-tuning backpropagates through the complete net (encoders, then the supervised
//!   layers) and puts the tuned `W₁, b₁` back; `W₂, b₂` stay as pretrained, as a DBN's visible
//!   biases do.

use serde::Serialize;

use super::cost::{Cost, CostSettings};
use super::lbfgs::LbfgsSettings;
use super::model::Autoencoder;
use super::optimise::{Method, TrainReport};
use super::sgd::SgdSettings;
use crate::backend::Backend;
use crate::model::{Dbn, Rbm, VisibleUnits};
use crate::supervised::conjugate_gradient::CgSettings;
use crate::supervised::dropout::DropoutRates;
use crate::supervised::optimise::{optimise, Method as NetMethod, OptimiseReport};
use crate::supervised::{complete_network, train_supervised, Cases, Network, Optimizer, Stage, SupervisedConfig, SupervisedError, SupervisedOutcome};

/// The optimiser of one layer, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MethodName {
    #[serde(rename = "lbfgs")]
    Lbfgs,
    #[serde(rename = "cg")]
    ConjugateGradient,
    #[serde(rename = "sgd")]
    Sgd,
}

impl MethodName {
    pub const ALL: [MethodName; 3] = [MethodName::Lbfgs, MethodName::ConjugateGradient, MethodName::Sgd];

    pub fn name(self) -> &'static str {
        match self {
            MethodName::Lbfgs => "lbfgs",
            MethodName::ConjugateGradient => "cg",
            MethodName::Sgd => "sgd",
        }
    }

    pub fn from_name(name: &str) -> Option<MethodName> {
        MethodName::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// How one layer trains: its size, `J`'s λ, ρ and β, and the optimiser.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerSettings {
    pub n_hidden: usize,
    pub cost: CostSettings,
    pub method: MethodName,
    /// L-BFGS or CG iterations, or SGD epochs.
    pub iterations: usize,
    /// Seed of the initial weights (and SGD's order).
    pub seed: u64,
}

impl LayerSettings {
    /// UFLDL's stacked-autoencoder exercise: ρ = 0.1, λ = 3e−3, β = 3, 400 L-BFGS iterations.
    pub fn ufldl_stacked(n_hidden: usize, seed: u64) -> LayerSettings {
        LayerSettings { n_hidden, cost: CostSettings { weight_decay: 3e-3, sparsity_target: 0.1, sparsity_weight: 3.0 }, method: MethodName::Lbfgs, iterations: 400, seed }
    }

    /// The optimiser with its settings: minFunc's L-BFGS (at least 1000 evaluations, 5 per
    /// iteration beyond that), the crate's CG, or SGD seeded from `seed`.
    pub fn method(&self) -> Method {
        match self.method {
            MethodName::Lbfgs => Method::Lbfgs(LbfgsSettings { max_iterations: self.iterations, max_evaluations: self.iterations.saturating_mul(5).max(1000), ..LbfgsSettings::default() }),
            MethodName::ConjugateGradient => Method::ConjugateGradient(CgSettings { max_iterations: self.iterations, ..CgSettings::default() }),
            MethodName::Sgd => Method::Sgd(SgdSettings { epochs: self.iterations, seed: self.seed, ..SgdSettings::default() }),
        }
    }
}

/// `J` and its three terms: a layer's record here, each step of an
/// [`AutoencoderSession`](crate::engine::autoencoder_session::AutoencoderSession) (the page
/// reads them as `total`, `reconstruction`, …), and an evaluation of the device's cost.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CostTerms {
    pub total: f64,
    /// `½‖x̂ − x‖²/m`.
    pub reconstruction: f64,
    /// `(λ/2)(‖W₁‖² + ‖W₂‖²)`.
    pub weight_decay: f64,
    /// `β Σⱼ KL(ρ ‖ ρ̂ⱼ)`.
    pub sparsity: f64,
}

impl From<&Cost> for CostTerms {
    fn from(cost: &Cost) -> CostTerms {
        CostTerms { total: cost.total, reconstruction: cost.reconstruction, weight_decay: cost.weight_decay, sparsity: cost.sparsity }
    }
}

/// Mean, smallest and largest of the hidden units' mean activations ρ̂.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ActivationSummary {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

impl ActivationSummary {
    pub fn of(values: &[f32]) -> ActivationSummary {
        let n = values.len().max(1) as f64;
        let mean = values.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
        let min = values.iter().copied().fold(f32::INFINITY, f32::min);
        let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        ActivationSummary { mean, min: f64::from(min), max: f64::from(max) }
    }
}

/// How one layer's pretraining went.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerRecord {
    /// Cases it trained on.
    pub cases: usize,
    pub initial: CostTerms,
    pub last: CostTerms,
    pub iterations: usize,
    pub evaluations: usize,
    /// The optimiser's reason for stopping (`max_iterations`, `optimal`, …).
    pub stop: String,
    /// `J` after each iteration (SGD: each epoch's mean).
    pub history: Vec<f64>,
    /// ρ̂ at the end, over the training cases.
    pub mean_activation: ActivationSummary,
    pub seconds: f64,
    /// Where `J` was computed: "cpu" or "gpu".
    pub backend: String,
}

impl LayerRecord {
    pub fn from_report(report: &TrainReport, cases: usize, seconds: f64, backend: &str) -> LayerRecord {
        LayerRecord {
            cases,
            initial: CostTerms::from(&report.initial),
            last: CostTerms::from(&report.last),
            iterations: report.iterations,
            evaluations: report.evaluations,
            stop: report.stop.clone(),
            history: report.history.clone(),
            mean_activation: ActivationSummary::of(&report.last.mean_activation),
            seconds,
            backend: backend.to_string(),
        }
    }
}

/// One autoencoder of the stack with its settings and, when it was trained here, its record.
#[derive(Clone, Debug, PartialEq)]
pub struct StackLayer {
    pub autoencoder: Autoencoder,
    pub settings: LayerSettings,
    pub record: Option<LayerRecord>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct AutoencoderStack {
    pub layers: Vec<StackLayer>,
}

impl AutoencoderStack {
    /// Inputs, then each layer's hidden units: e.g. `[784, 200, 200]`.
    pub fn sizes(&self) -> Vec<usize> {
        let mut sizes: Vec<usize> = self.layers.first().map(|l| vec![l.autoencoder.n_visible]).unwrap_or_default();
        sizes.extend(self.layers.iter().map(|l| l.autoencoder.n_hidden));
        sizes
    }

    /// The hidden activations `a₂` of layer `through` (1-based; 0 returns the inputs) of the
    /// cases in `inputs`.
    pub fn encode(&self, backend: &dyn Backend, inputs: &[f32], through: usize) -> Vec<f32> {
        let mut current = inputs.to_vec();
        for layer in &self.layers[..through] {
            let rows = current.len() / layer.autoencoder.n_visible.max(1);
            let mut next = vec![0.0; rows * layer.autoencoder.n_hidden];
            layer.autoencoder.encode(backend, &current, &mut next);
            current = next;
        }
        current
    }

    /// The encoders as a DBN of Bernoulli RBMs: `weights = W₁`, `hidden_bias = b₁`
    /// (`visible_bias = b₂`, unused by the supervised pipeline).
    pub fn dbn_view(&self) -> Dbn {
        let layers = self
            .layers
            .iter()
            .map(|l| {
                let a = &l.autoencoder;
                Rbm { visible_units: VisibleUnits::Bernoulli, n_visible: a.n_visible, n_hidden: a.n_hidden, weights: a.w1.clone(), visible_bias: a.b2.clone(), hidden_bias: a.b1.clone() }
            })
            .collect();
        Dbn { layers }
    }

    /// Puts a view's (tuned) weights and hidden biases back into the encoders.
    pub fn set_encoders(&mut self, dbn: &Dbn) {
        assert_eq!(dbn.layers.len(), self.layers.len(), "one RBM per autoencoder");
        for (layer, rbm) in self.layers.iter_mut().zip(&dbn.layers) {
            assert_eq!((rbm.n_visible, rbm.n_hidden), (layer.autoencoder.n_visible, layer.autoencoder.n_hidden), "the view's shape");
            layer.autoencoder.w1.clone_from(&rbm.weights);
            layer.autoencoder.b1.clone_from(&rbm.hidden_bias);
        }
    }
}

/// Trains one layer: `(layer index, model, its training cases, J's settings, optimiser)` →
/// the report and where it ran ("cpu" or "gpu").
pub type LayerTrainer<'a> = dyn FnMut(usize, &mut Autoencoder, &[f32], &CostSettings, &Method) -> Result<(TrainReport, String), String> + 'a;

/// Greedy layer-wise pretraining of `layers` on `inputs` (rows × `n_visible`): layer k starts
/// from UFLDL's initialisation with its own seed and trains through `train_layer` on the `a₂`
/// of layer k − 1 (computed by `backend`) over all the cases. Errors name the layer (from 1).
pub fn pretrain(backend: &dyn Backend, inputs: &[f32], n_visible: usize, layers: &[LayerSettings], train_layer: &mut LayerTrainer) -> Result<AutoencoderStack, String> {
    if n_visible == 0 || inputs.is_empty() || !inputs.len().is_multiple_of(n_visible) {
        return Err(format!("{} input values do not make whole cases of {n_visible} inputs", inputs.len()));
    }
    if layers.is_empty() {
        return Err("no layers to train".into());
    }
    let cases = inputs.len() / n_visible;
    let mut stack = AutoencoderStack::default();
    let mut below = n_visible;
    let mut features: Option<Vec<f32>> = None;
    for (k, settings) in layers.iter().enumerate() {
        let fail = |e: String| format!("layer {} ({below}→{}): {e}", k + 1, settings.n_hidden);
        settings.cost.validate().map_err(|e| fail(e.to_string()))?;
        if settings.n_hidden == 0 || settings.iterations == 0 {
            return Err(fail(format!("{} hidden units and {} iterations, expected at least 1 of each", settings.n_hidden, settings.iterations)));
        }
        let data = features.as_deref().unwrap_or(inputs);
        let mut model = Autoencoder::initialise(below, settings.n_hidden, settings.seed);
        let start = crate::clock::now_seconds();
        let (report, side) = train_layer(k, &mut model, data, &settings.cost, &settings.method()).map_err(fail)?;
        let seconds = crate::clock::now_seconds() - start;
        let record = LayerRecord::from_report(&report, cases, seconds, &side);
        if k + 1 < layers.len() {
            let mut next = vec![0.0; cases * settings.n_hidden];
            model.encode(backend, data, &mut next);
            features = Some(next);
        }
        below = settings.n_hidden;
        stack.layers.push(StackLayer { autoencoder: model, settings: settings.clone(), record: Some(record) });
    }
    Ok(stack)
}

/// [`pretrain`] with every layer on the CPU reference (`autoencoder::train`).
pub fn pretrain_on_cpu(inputs: &[f32], n_visible: usize, layers: &[LayerSettings], on_iteration: &mut dyn FnMut(usize, usize, f64) -> bool) -> Result<AutoencoderStack, String> {
    let backend = crate::backend::cpu::CpuBackend;
    let mut trainer = |k: usize, model: &mut Autoencoder, data: &[f32], settings: &CostSettings, method: &Method| {
        super::train(&backend, model, data, settings, method, &mut |i, j| on_iteration(k, i, j)).map(|r| (r, "cpu".to_string())).map_err(|e| e.to_string())
    };
    pretrain(&backend, inputs, n_visible, layers, &mut trainer)
}

/// The supervised penalty `PenFac · Σw² / n_weights` that equals UFLDL's `(λ/2)·Σw²` over
/// `n_weights` weights.
pub fn penalty_for_lambda(lambda: f64, n_weights: usize) -> f64 {
    lambda * n_weights as f64 / 2.0
}

/// UFLDL's supervised settings on a stack: a SoftMax on the top features by full-batch CG
/// (`supervised_iterations`, UFLDL's softmaxTrain runs 100 L-BFGS ones) with the penalty
/// that is UFLDL's λ = 1e−4 on its `n_features × n_classes` weights; fine-tuning by CG for
/// `fine_tune_iterations`, the same `PenFac` spread over every weight. Tolerances are
/// DEEP's (relative change 5e−5 and 1e−5).
pub fn ufldl_supervised(n_features: usize, n_classes: usize, supervised_iterations: usize, fine_tune_iterations: usize, fine_tune: bool, seed: u64) -> SupervisedConfig {
    SupervisedConfig {
        weight_penalty: penalty_for_lambda(1e-4, n_features * n_classes),
        max_iterations: supervised_iterations,
        fine_tune,
        fine_tune_max_iterations: fine_tune_iterations,
        fine_tune_optimizer: Some(Optimizer::ConjugateGradient),
        seed,
        ..SupervisedConfig::deep()
    }
}

/// The supervised stage on the stack's top features: [`train_supervised`] on the encoders'
/// DBN view with fine-tuning off (run [`fine_tune`] after it). `targets` are
/// `n_cases × n_outputs`; the stack is not changed.
pub fn train_output(
    backend: &dyn Backend,
    stack: &AutoencoderStack,
    inputs: &[f32],
    targets: &[f32],
    n_outputs: usize,
    config: &SupervisedConfig,
    on_iteration: &mut dyn FnMut(usize, f64) -> bool,
) -> Result<(Network, SupervisedOutcome), SupervisedError> {
    let mut view = stack.dbn_view();
    let config = SupervisedConfig { fine_tune: false, ..config.clone() };
    train_supervised(backend, &mut view, inputs, targets, n_outputs, &config, None, &mut |_, i, v| on_iteration(i, v))
}

/// Fine-tunes the encoders and `net` together by backprop on the supervised criterion (the
/// config's fine-tuning optimiser, iterations, tolerance and penalty; SGD with its dropout,
/// without image shifts), then puts the tuned `W₁, b₁` back into the stack.
pub fn fine_tune(
    backend: &dyn Backend,
    stack: &mut AutoencoderStack,
    net: &mut Network,
    inputs: &[f32],
    targets: &[f32],
    config: &SupervisedConfig,
    on_iteration: &mut dyn FnMut(usize, f64) -> bool,
) -> Result<OptimiseReport, SupervisedError> {
    config.validate().map_err(SupervisedError::Config)?;
    let mut view = stack.dbn_view();
    let n_inputs = view.layers.first().ok_or_else(|| SupervisedError::Data("the stack has no layers".into()))?.n_visible;
    let n_outputs = net.n_outputs();
    if inputs.is_empty() || !inputs.len().is_multiple_of(n_inputs) || targets.len() != inputs.len() / n_inputs * n_outputs {
        return Err(SupervisedError::Data(format!("{} input values and {} target values do not make whole cases of {n_inputs} inputs and {n_outputs} targets", inputs.len(), targets.len())));
    }
    let mut complete = complete_network(&view, net);
    let cases = Cases { inputs, targets, n_inputs, n_outputs };
    let method = match config.fine_tune_optimizer.unwrap_or(config.optimizer) {
        Optimizer::ConjugateGradient => NetMethod::ConjugateGradient { max_iterations: config.fine_tune_max_iterations, tolerance: config.fine_tune_tolerance },
        rule if rule.is_step_rule() => NetMethod::StepRule(crate::supervised::full_batch::FullBatchSettings { optimizer: rule, rules: config.step_rules, epochs: config.fine_tune_max_iterations }),
        _ => NetMethod::Sgd {
            epochs: config.fine_tune_max_iterations,
            tolerance: config.fine_tune_tolerance,
            batch_size: config.batch_size,
            learning_rate: config.fine_tune_learning_rate,
            final_rate_fraction: config.final_rate_fraction,
            momentum: config.momentum,
            seed: config.seed ^ (Stage::FineTune as u64 + 1),
            dropout: DropoutRates { input: config.fine_tune_input_dropout as f32, hidden: config.fine_tune_hidden_dropout as f32 },
            shift: None,
        },
    };
    let report = optimise(backend, &mut complete, cases, config.weight_penalty, method, None, "fine-tuning", on_iteration)?;
    let mut layers = complete.layers.into_iter();
    for rbm in &mut view.layers {
        let layer = layers.next().expect("one layer per encoder");
        rbm.weights = layer.weights;
        rbm.hidden_bias = layer.bias;
    }
    net.layers = layers.collect();
    stack.set_encoders(&view);
    Ok(report)
}
