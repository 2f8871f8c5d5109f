#![cfg(not(target_arch = "wasm32"))]
//! Stacked sparse autoencoders (issue 17, `autoencoder::stack`):
//! - greedy pretraining trains layer 2 on layer 1's hidden activations a₂: the stack equals a
//!   manual two-step run (train layer 1, encode, train layer 2) parameter for parameter, and
//!   the engine's CPU path gives the same stack;
//! - the encoders' DBN view is the stack: the complete net's outputs are the SoftMax of the
//!   encoded features, and the backprop gradient of the supervised criterion with respect to
//!   each encoder's W₁ and b₁ matches central finite differences taken on the stack itself;
//! - fine-tuning lowers the supervised criterion, and the stack it leaves (tuned W₁, b₁ put
//!   back, W₂, b₂ untouched) scores exactly the criterion fine-tuning reported.

mod support;

use deepbelief::autoencoder::stack::{self, fine_tune, pretrain_on_cpu, train_output, AutoencoderStack, LayerSettings, MethodName};
use deepbelief::autoencoder::{train, Autoencoder, CostSettings};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::engine::Engine;
use deepbelief::supervised::criterion::{criterion, criterion_and_gradient, layer_offsets};
use deepbelief::supervised::{complete_network, Cases, Network, OutputKind, SupervisedConfig};
use support::check::values;

const N_VISIBLE: usize = 12;

/// Cases of three classes: each class lights its own third of the inputs, with noise.
fn labelled_cases(n: usize, seed: u32) -> (Vec<f32>, Vec<f32>) {
    let noise = values(n * N_VISIBLE, seed, 0.0, 0.35);
    let mut inputs = Vec::with_capacity(n * N_VISIBLE);
    let mut targets = Vec::with_capacity(n * 3);
    for case in 0..n {
        let class = case % 3;
        for i in 0..N_VISIBLE {
            let on = if i / 4 == class { 0.6 } else { 0.0 };
            inputs.push(on + noise[case * N_VISIBLE + i]);
        }
        targets.extend((0..3).map(|k| if k == class { 1.0 } else { 0.0 }));
    }
    (inputs, targets)
}

fn layer(n_hidden: usize, iterations: usize, seed: u64) -> LayerSettings {
    LayerSettings { n_hidden, cost: CostSettings { weight_decay: 3e-3, sparsity_target: 0.1, sparsity_weight: 3.0 }, method: MethodName::Lbfgs, iterations, seed }
}

#[test]
fn layer_two_trains_on_layer_one_hidden_activations() {
    let (inputs, _) = labelled_cases(90, 3);
    let settings = [layer(8, 25, 11), layer(5, 25, 12)];
    let mut seen = Vec::new();
    let stack = pretrain_on_cpu(&inputs, N_VISIBLE, &settings, &mut |k, i, _| {
        seen.push((k, i));
        true
    })
    .expect("pretraining");
    assert_eq!(stack.sizes(), [N_VISIBLE, 8, 5]);

    // The same two steps by hand.
    let backend = CpuBackend;
    let mut first = Autoencoder::initialise(N_VISIBLE, 8, 11);
    train(&backend, &mut first, &inputs, &settings[0].cost, &settings[0].method(), &mut |_, _| true).unwrap();
    let mut hidden = vec![0.0; 90 * 8];
    first.encode(&backend, &inputs, &mut hidden);
    let mut second = Autoencoder::initialise(8, 5, 12);
    let report = train(&backend, &mut second, &hidden, &settings[1].cost, &settings[1].method(), &mut |_, _| true).unwrap();

    assert_eq!(stack.layers[0].autoencoder, first, "layer 1 is the autoencoder trained on the inputs");
    assert_eq!(stack.layers[1].autoencoder, second, "layer 2 is the autoencoder trained on layer 1's a₂");
    let record = stack.layers[1].record.as_ref().expect("a record");
    assert_eq!(record.last.total, report.last.total);
    assert_eq!(record.history, report.history);
    assert_eq!((record.cases, record.backend.as_str()), (90, "cpu"));
    assert!(record.last.total < record.initial.total);
    assert_eq!(stack.encode(&backend, &inputs, 1), hidden);
    // Progress names each layer, 25 iterations apiece (unless L-BFGS stopped early).
    assert!(seen.iter().any(|&(k, _)| k == 0) && seen.iter().any(|&(k, _)| k == 1));

    let engine = Engine::Cpu.pretrain_autoencoders(&inputs, N_VISIBLE, &settings, &mut |_, _, _| true).expect("engine pretraining");
    assert_eq!(engine.layers.iter().map(|l| &l.autoencoder).collect::<Vec<_>>(), stack.layers.iter().map(|l| &l.autoencoder).collect::<Vec<_>>());
}

#[test]
fn pretraining_errors_name_the_layer() {
    let (inputs, _) = labelled_cases(30, 3);
    let mut bad = layer(4, 5, 1);
    bad.cost.sparsity_target = 1.5;
    let error = pretrain_on_cpu(&inputs, N_VISIBLE, &[layer(6, 5, 1), bad], &mut |_, _, _| true).unwrap_err();
    assert!(error.starts_with("layer 2 (6→4)") && error.contains("sparsity_target"), "{error}");
    let error = pretrain_on_cpu(&inputs[..13], N_VISIBLE, &[layer(6, 5, 1)], &mut |_, _, _| true).unwrap_err();
    assert!(error.contains("13 input values"), "{error}");
}

/// A small pretrained stack (12-8-5) and a SoftMax trained on its top features.
fn stack_and_softmax() -> (AutoencoderStack, Network, Vec<f32>, Vec<f32>, SupervisedConfig) {
    let (inputs, targets) = labelled_cases(90, 5);
    let stack = pretrain_on_cpu(&inputs, N_VISIBLE, &[layer(8, 20, 1), layer(5, 20, 2)], &mut |_, _, _| true).unwrap();
    let config = stack::ufldl_supervised(5, 3, 50, 30, true, 1);
    let (net, outcome) = train_output(&CpuBackend, &stack, &inputs, &targets, 3, &config, &mut |_, _| true).expect("supervised stage");
    assert!(outcome.fine_tune.is_none(), "train_output leaves fine-tuning to fine_tune");
    (stack, net, inputs, targets, config)
}

#[test]
fn the_dbn_view_is_the_stack_and_its_gradient_matches_finite_differences() {
    let (stack, net, inputs, targets, config) = stack_and_softmax();
    let backend = CpuBackend;
    let complete = complete_network(&stack.dbn_view(), &net);
    assert_eq!(complete.sizes(), [N_VISIBLE, 8, 5, 3]);
    assert_eq!(complete.output, OutputKind::SoftMax);
    let features = stack.encode(&backend, &inputs, 2);
    assert_eq!(complete.predict(&backend, &inputs), net.predict(&backend, &features), "complete net = SoftMax of the encoded features");

    // The criterion as a function of the stack's own parameters.
    let penalty = config.weight_penalty;
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: N_VISIBLE, n_outputs: 3 };
    let criterion_of = |s: &AutoencoderStack| criterion(&complete_network(&s.dbn_view(), &net), &backend, cases, penalty);
    let mut gradient = vec![0.0; complete.n_params()];
    criterion_and_gradient(&complete, &backend, cases, penalty, &mut gradient);
    let offsets = layer_offsets(&complete);
    let h = 1e-2f32;
    let mut checked = 0;
    for k in 0..2 {
        let a = &stack.layers[k].autoencoder;
        let n_w = a.w1.len();
        // A spread of W₁ entries and every b₁ entry.
        let picks: Vec<(bool, usize)> = (0..n_w).step_by(7).map(|i| (true, i)).chain((0..a.n_hidden).map(|j| (false, j))).collect();
        for (is_weight, i) in picks {
            let mut nudged = stack.clone();
            let mut value = |delta: f32| {
                let layer = &mut nudged.layers[k].autoencoder;
                let slot = if is_weight { &mut layer.w1[i] } else { &mut layer.b1[i] };
                let saved = *slot;
                *slot = saved + delta;
                let v = criterion_of(&nudged);
                nudged.layers[k].autoencoder.w1.clone_from(&stack.layers[k].autoencoder.w1);
                nudged.layers[k].autoencoder.b1.clone_from(&stack.layers[k].autoencoder.b1);
                v
            };
            let numeric = (value(h) - value(-h)) / (2.0 * f64::from(h));
            let analytic = f64::from(gradient[offsets[k] + if is_weight { i } else { n_w + i }]);
            let error = (numeric - analytic).abs() / numeric.abs().max(analytic.abs()).max(1e-3);
            assert!(error < 2e-2, "layer {k} {} [{i}]: backprop {analytic}, finite difference {numeric}", if is_weight { "W1" } else { "b1" });
            checked += 1;
        }
    }
    assert!(checked > 30);
}

#[test]
fn fine_tuning_lowers_the_criterion_and_puts_the_tuned_encoders_back() {
    let (mut stack, mut net, inputs, targets, config) = stack_and_softmax();
    let backend = CpuBackend;
    let before = stack.clone();
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: N_VISIBLE, n_outputs: 3 };
    let start = criterion(&complete_network(&before.dbn_view(), &net), &backend, cases, config.weight_penalty);
    let report = fine_tune(&backend, &mut stack, &mut net, &inputs, &targets, &config, &mut |_, _| true).expect("fine-tuning");
    assert!((report.initial_criterion - start).abs() <= 1e-9 * start.abs(), "fine-tuning starts from the supervised stage's net: {} vs {start}", report.initial_criterion);
    assert!(report.final_criterion < 0.99 * report.initial_criterion, "criterion {} → {}", report.initial_criterion, report.final_criterion);
    let tuned = criterion(&complete_network(&stack.dbn_view(), &net), &backend, cases, config.weight_penalty);
    assert!((tuned - report.final_criterion).abs() <= 1e-9 * tuned.abs(), "the stack holds the tuned encoders: {tuned} vs {}", report.final_criterion);
    for (k, (after, was)) in stack.layers.iter().zip(&before.layers).enumerate() {
        assert_ne!(after.autoencoder.w1, was.autoencoder.w1, "layer {k}'s W1 was tuned");
        assert_eq!((&after.autoencoder.w2, &after.autoencoder.b2), (&was.autoencoder.w2, &was.autoencoder.b2), "layer {k}'s decoder is untouched");
    }
}
