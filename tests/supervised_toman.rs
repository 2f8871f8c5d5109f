#![cfg(not(target_arch = "wasm32"))]
//! Toman's MLP training (issue 21) against references: each rule's first steps computed by
//! hand (adaptive step's rate updates, momentum and robust-training rollback; iRprop+'s sign
//! rule and weight backtracking; FANN's iRprop− and Quickprop; the bold driver), the driver's
//! first epoch against the exact gradient, the rollback restoring the best weights bit for
//! bit, XOR solved by every rule, Toman's error measure, his text format's parser and its
//! errors, NaN settings refused by name, and the `mlp` command's save and resume.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::supervised::adaptive_step::AdaptiveStep;
use deepbelief::supervised::bold_driver::BoldDriver;
use deepbelief::supervised::criterion::{criterion, criterion_and_gradient, criterion_and_gradient_timed, Cases, StageSeconds};
use deepbelief::supervised::full_batch::{reported_error, rms_half, train_full_batch, uniform_start, EpochRecord, FullBatchSettings, StepNote, StepRule};
use deepbelief::supervised::optimise::{optimise, Method, StopKind};
use deepbelief::supervised::quickprop::Quickprop;
use deepbelief::supervised::rprop::{IRpropMinusFann, IRpropPlus};
use deepbelief::supervised::toman_text::{parse_toman_text, to_toman_text};
use deepbelief::supervised::{Network, Optimizer, OutputKind, StepRuleSettings, SupervisedConfig};
use support::cli::{last_json, run_fails, run_ok, temp_dir};

const XOR_INPUTS: [f32; 8] = [0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0];
const XOR_TARGETS: [f32; 4] = [0.0, 1.0, 1.0, 0.0];

fn xor() -> Cases<'static> {
    Cases { inputs: &XOR_INPUTS, targets: &XOR_TARGETS, n_inputs: 2, n_outputs: 1 }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

fn settings() -> StepRuleSettings {
    StepRuleSettings { up: 1.2, down: 0.8, ..StepRuleSettings::default() }
}

/// Toman's error: sqrt(Σ (d − y)² / (patterns · outputs)) / 2, by hand on a 1-1 net.
#[test]
fn logistic_criterion_and_rms_half_by_hand() {
    let backend = CpuBackend;
    let mut net = Network::zeros(&[1, 2], OutputKind::Logistic);
    net.set_params(&[1.0, -2.0, 0.5, 0.0]);
    let inputs = [1.0f32, 0.0];
    let targets = [1.0f32, 0.0, 0.0, 1.0];
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 1, n_outputs: 2 };
    let s = |x: f64| 1.0 / (1.0 + (-x).exp());
    // Case 1: logits (1.5, −2); case 2: (0.5, 0).
    let sum = (s(1.5) - 1.0).powi(2) + s(-2.0).powi(2) + s(0.5).powi(2) + (s(0.0) - 1.0).powi(2);
    let value = criterion(&net, &backend, cases, 0.0);
    assert!(close(value, sum / 4.0, 1e-6), "criterion {value}, expected Σ/(2N) = {}", sum / 4.0);
    let toman = (sum / 4.0).sqrt() / 2.0;
    assert!(close(rms_half(&net, &backend, cases), toman, 1e-6));
    assert!(close(reported_error(OutputKind::Logistic, value, 0.0, 2), toman, 1e-6));
}

/// FANN's derivative clip: a saturated unit's y(1 − y) is taken at y clipped to [0.01, 0.99];
/// without the clip the gradient is exact. A 1-1-1 net on one case, by hand.
#[test]
fn fann_derivative_clip_by_hand() {
    let backend = CpuBackend;
    let mut net = Network::zeros(&[1, 1, 1], OutputKind::Logistic);
    // Hidden: σ(20 · 1 + 0) ≈ 1 − 2e-9 (saturated); output: σ(8 · h − 1).
    net.set_params(&[20.0, 0.0, 8.0, -1.0]);
    let (inputs, targets) = ([1.0f32], [0.0f32]);
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 1, n_outputs: 1 };
    let s = |x: f64| 1.0 / (1.0 + (-x).exp());
    let h = s(20.0) as f32 as f64;
    let o = s(8.0 * h - 1.0) as f32 as f64;
    let clip = |y: f64| y.clamp(0.01, 0.99);
    for (fann, out_slope, hidden_slope) in [(false, o * (1.0 - o), h * (1.0 - h)), (true, clip(o) * (1.0 - clip(o)), clip(h) * (1.0 - clip(h)))] {
        let mut g = vec![0.0; 4];
        criterion_and_gradient_timed(&net, &backend, cases, 0.0, &mut g, &mut StageSeconds::default(), fann);
        // ∂E/∂logit_out = (o − t) · slope (E = Σ(o − t)²/2 for one case).
        let d_out = o * out_slope;
        assert!(close(g[3] as f64, d_out, 1e-5), "fann {fann}: output bias {} vs {d_out}", g[3]);
        assert!(close(g[2] as f64, d_out * h, 1e-5));
        let d_hidden = d_out * 8.0 * hidden_slope;
        assert!((g[1] as f64 - d_hidden).abs() <= 1e-5 * d_hidden.abs().max(1e-12), "fann {fann}: hidden bias {} vs {d_hidden}", g[1]);
    }
}

/// The adaptive-step rule on two weights, every number by hand (up 1.2, down 0.8,
/// momentum 0.7, first rate 0.5, growth 1.02, robust factor 0.5).
#[test]
fn adaptive_step_rates_momentum_and_rollback_by_hand() {
    let mut rule = AdaptiveStep::new(2, settings());
    let mut w = [0.5f32, -0.25];
    // Epoch 1: no last δ, so both rates × down: 0.4; δ = −g; w + 0.4 δ.
    assert_eq!(rule.step(&mut w, 1.0, &[0.2, -0.4]), StepNote::Stepped);
    assert_eq!(rule.rates, vec![0.5 * 0.8, 0.5 * 0.8]);
    assert!(close(w[0] as f64, 0.5 - 0.4 * 0.2, 1e-7) && close(w[1] as f64, -0.25 + 0.4 * 0.4, 1e-7), "{w:?}");
    let best = w;
    // Epoch 2 (a new best): weight 0's δ keeps its sign (× up), weight 1's flips (× down).
    rule.step(&mut w, 0.9, &[0.1, 0.3]);
    assert!(close(rule.rates[0], 0.4 * 1.2, 1e-15) && close(rule.rates[1], 0.4 * 0.8, 1e-15), "{:?}", rule.rates);
    let (m0, m1) = (-0.1 + 0.7 * -0.2, -0.3 + 0.7 * 0.4);
    assert!(close(rule.last_delta[0], m0, 1e-7) && close(rule.last_delta[1], m1, 1e-7), "{:?}", rule.last_delta);
    assert!(close(w[0] as f64, best[0] as f64 + 0.48 * m0, 1e-6) && close(w[1] as f64, best[1] as f64 + 0.32 * m1, 1e-6), "{w:?}");
    // Epoch 3: just under best × 1.02 → an ordinary step.
    let mut probe = AdaptiveStep::new(2, settings());
    let mut pw = [0.5f32, -0.25];
    probe.step(&mut pw, 1.0, &[0.2, -0.4]);
    assert_eq!(probe.step(&mut pw, 1.0199, &[0.1, 0.3]), StepNote::Stepped);
    // Epoch 3: at best × 1.02 → the best weights (epoch 2's start) back bit for bit, rates
    // halved, both memories cleared, no step.
    assert_eq!(rule.step(&mut w, 0.9 * 1.02, &[5.0, 5.0]), StepNote::RolledBack);
    assert_eq!(w.map(f32::to_bits), best.map(f32::to_bits));
    assert!(close(rule.rates[0], 0.24, 1e-15) && close(rule.rates[1], 0.16, 1e-15));
    assert_eq!(rule.last_delta, vec![0.0, 0.0]);
    assert_eq!(rule.last_raw_delta, vec![0.0, 0.0]);
    // Epoch 4 at the best error (not lower, not 2% higher): a step from cleared memories,
    // so × down again and no momentum.
    assert_eq!(rule.step(&mut w, 0.9, &[0.1, 0.1]), StepNote::Stepped);
    assert!(close(rule.rates[0], 0.24 * 0.8, 1e-15));
    assert!(close(w[0] as f64, best[0] as f64 - 0.192 * 0.1, 1e-6), "{w:?}");
    assert_eq!(rule.best.as_ref().unwrap().0, 0.9);
}

#[test]
fn adaptive_step_caps_the_rate_and_skips_non_finite_weights() {
    let s = StepRuleSettings { initial_rate: 9.0, ..settings() };
    let mut rule = AdaptiveStep::new(2, s);
    let mut w = [0.0f32, 0.0];
    rule.step(&mut w, 1.0, &[-1.0, -1.0]); // × down: 7.2
    rule.step(&mut w, 0.5, &[-1.0, -1.0]); // × up: 8.64
    rule.step(&mut w, 0.4, &[-1.0, -1e38]); // × up: 10.368 → capped at 10; weight 1 overflows f32
    assert_eq!(rule.rates[0], 10.0);
    // The overflowing weight is not written, its memories are cleared and its rate × 0.5.
    assert!(w[1].is_finite());
    assert_eq!(rule.last_delta[1], 0.0);
    assert_eq!(rule.last_raw_delta[1], 0.0);
    assert_eq!(rule.rates[1], 5.0);
}

/// iRprop+ by hand: Δ0 0.1, increase 1.2, decrease 0.5.
#[test]
fn irprop_plus_sign_rule_and_backtracking_by_hand() {
    let mut rule = IRpropPlus::new(2, settings());
    let mut w = [1.0f32, 0.0];
    // No last gradient: Δw = −sign(g)·Δ0.
    rule.step(&mut w, 1.0, &[0.5, -0.5]);
    assert!(close(w[0] as f64, 0.9, 1e-7) && close(w[1] as f64, 0.1, 1e-7), "{w:?}");
    // Weight 0 keeps its sign: Δ 0.12; weight 1 flips: Δ 0.05, no backtrack (error fell),
    // no move, its gradient forgotten.
    rule.step(&mut w, 0.8, &[0.4, 0.2]);
    assert!(close(w[0] as f64, 0.78, 1e-6) && close(w[1] as f64, 0.1, 1e-7), "{w:?}");
    assert!(close(rule.steps[0], 0.12, 1e-12) && close(rule.steps[1], 0.05, 1e-12));
    assert_eq!(rule.last_gradient[1], 0.0);
    // The error rose: weight 0 flips → Δ 0.06 and its last change (−0.12) is taken back;
    // weight 1 had no last gradient → an ordinary step of its Δ 0.05.
    assert_eq!(rule.step(&mut w, 0.9, &[-0.3, 0.1]), StepNote::RolledBack);
    assert!(close(w[0] as f64, 0.9, 1e-6) && close(w[1] as f64, 0.05, 1e-6), "{w:?}");
    assert!(close(rule.steps[0], 0.06, 1e-12));
    // The Δ bounds: Δmax 50.
    let mut capped = IRpropPlus::new(1, StepRuleSettings { rprop_delta_zero: 45.0, ..settings() });
    let mut x = [0.0f32];
    capped.step(&mut x, 1.0, &[1.0]);
    capped.step(&mut x, 1.0, &[1.0]);
    assert_eq!(capped.steps[0], 50.0);
}

/// FANN 2.2's iRprop−: the first step is Δ0·1.2 (its `≥ 0` test), a sign change shrinks Δ
/// and zeroes the slope, and a zero slope still moves the weight up (its quirk).
#[test]
fn fann_irprop_minus_by_hand() {
    let mut rule = IRpropMinusFann::new(2, settings());
    let mut w = [1.0f32, 0.0];
    rule.step(&mut w, 1.0, &[0.5, -0.5]); // slopes −0.5, +0.5
    assert!(close(w[0] as f64, 1.0 - 0.12, 1e-7) && close(w[1] as f64, 0.12, 1e-7), "{w:?}");
    rule.step(&mut w, 1.0, &[-0.5, 0.0]); // weight 0 flips: Δ 0.06, slope 0 → +0.06; weight 1: slope 0 → +0.144
    assert!(close(rule.steps[0], 0.06, 1e-12) && close(rule.steps[1], 0.144, 1e-12));
    assert!(close(w[0] as f64, 0.88 + 0.06, 1e-6) && close(w[1] as f64, 0.12 + 0.144, 1e-6), "{w:?}");
    assert_eq!(rule.last_slope[0], 0.0);
}

/// FANN's Quickprop on one weight and one case: rate 0.7, μ 1.75, decay −0.0001.
#[test]
fn quickprop_by_hand() {
    let s = settings();
    let mut rule = Quickprop::new(1, 1, s);
    let mut w = [0.5f32];
    // No last step: the linear term ε·slope, slope = −g + decay·w.
    rule.step(&mut w, 1.0, &[0.2]);
    let slope1 = -0.2f64 + -0.0001 * 0.5;
    let step1 = 0.7 * slope1;
    assert!(close(w[0] as f64, 0.5 + step1, 1e-6), "{w:?}");
    // A negative last step and a still negative slope: linear term plus, since the slope is
    // not below shrink · last slope, the quadratic estimate.
    let w1 = w[0] as f64;
    rule.step(&mut w, 1.0, &[0.1]);
    let slope2 = -0.1 - 0.0001 * w1;
    let shrink = 1.75 / 2.75;
    assert!(slope2 >= shrink * slope1);
    let step2 = 0.7 * slope2 + step1 * slope2 / (slope1 - slope2);
    assert!(close(w[0] as f64, w1 + step2, 1e-6), "{} vs {}", w[0], w1 + step2);
    // The slope grew past shrink · last slope: the largest step, μ · last step.
    let w2 = w[0] as f64;
    rule.step(&mut w, 1.0, &[0.3]);
    let slope3 = -0.3 - 0.0001 * w2;
    assert!(slope3 < shrink * slope2);
    assert!(close(w[0] as f64, w2 + 0.7 * slope3 + 1.75 * step2, 1e-6));
}

/// Bold driver on one weight: rate 0.7, no momentum; up 1.1, down 0.5.
#[test]
fn bold_driver_by_hand() {
    let mut rule = BoldDriver::new(1, StepRuleSettings { momentum: 0.0, ..settings() });
    let mut w = [1.0f32];
    rule.step(&mut w, 1.0, &[0.2]);
    assert!(close(w[0] as f64, 1.0 - 0.14, 1e-7));
    // Lower error: accepted, rate × 1.1.
    assert_eq!(rule.step(&mut w, 0.8, &[0.1]), StepNote::Stepped);
    assert!(close(rule.rate, 0.77, 1e-12) && close(w[0] as f64, 0.86 - 0.077, 1e-6));
    // Higher error: back to 0.86, rate × 0.5, a shorter step along the kept gradient 0.1.
    assert_eq!(rule.step(&mut w, 0.9, &[5.0]), StepNote::Rejected);
    assert!(close(rule.rate, 0.385, 1e-12) && close(w[0] as f64, 0.86 - 0.0385, 1e-6), "{w:?}");
}

fn xor_net(hidden: usize, seed: u64, range: f64) -> Network {
    let mut net = Network::zeros(&[2, hidden, 1], OutputKind::Logistic);
    uniform_start(&mut net, range, seed);
    net
}

/// The driver's first adaptive epoch is the rule applied to the exact gradient.
#[test]
fn first_adaptive_epoch_uses_the_exact_gradient() {
    let backend = CpuBackend;
    let mut net = xor_net(2, 3, 1.0);
    let start = net.to_params();
    let mut g = vec![0.0; net.n_params()];
    let value = criterion_and_gradient(&net, &backend, xor(), 0.0, &mut g);
    let settings = FullBatchSettings { optimizer: Optimizer::AdaptiveStep, rules: settings(), epochs: 1 };
    let mut records = Vec::new();
    let mut after_first = Vec::new();
    train_full_batch(&backend, &mut net, xor(), 0.0, settings, None, "test", &mut |r: &EpochRecord, after: &Network| {
        records.push(*r);
        after_first = after.to_params();
        true
    })
    .unwrap();
    assert_eq!(records[0].criterion, value);
    assert!(close(records[0].error, (2.0 * value).sqrt() / 2.0, 1e-12));
    // Every rate × down (0.4), no momentum yet: w − 0.4·g.
    assert_ne!(after_first, start);
    for (k, ((&a, &w), &g)) in after_first.iter().zip(&start).zip(&g).enumerate() {
        let expected = (w as f64 - 0.4 * g as f64) as f32;
        assert!((a - expected).abs() <= 1e-7, "parameter {k}: {a} vs {expected}");
    }
}

/// With rates large enough to overshoot, robust training rolls back, and the weights after
/// a rollback are exactly the weights that gave the lowest error so far.
#[test]
fn robust_training_restores_the_best_weights_bit_for_bit() {
    let backend = CpuBackend;
    let mut net = xor_net(3, 5, 1.0);
    let rules = StepRuleSettings { initial_rate: 40.0, max_step: 100.0, up: 1.5, down: 0.9, ..settings() };
    let settings = FullBatchSettings { optimizer: Optimizer::AdaptiveStep, rules, epochs: 60 };
    let mut before = net.to_params();
    let mut best: Option<(f64, Vec<f32>)> = None;
    let mut rollbacks = 0;
    train_full_batch(&backend, &mut net, xor(), 0.0, settings, None, "test", &mut |r: &EpochRecord, after: &Network| {
        // r.error belongs to the weights before this epoch's update.
        if best.as_ref().is_none_or(|(e, _)| r.error < *e) {
            best = Some((r.error, before.clone()));
        }
        if r.note == StepNote::RolledBack {
            rollbacks += 1;
            let restored: Vec<u32> = after.to_params().iter().map(|x| x.to_bits()).collect();
            let kept: Vec<u32> = best.as_ref().unwrap().1.iter().map(|x| x.to_bits()).collect();
            assert_eq!(restored, kept, "epoch {}: the rollback restored other weights", r.epoch);
            assert!(r.error >= best.as_ref().unwrap().0 * 1.02);
        }
        before = after.to_params();
        true
    })
    .unwrap();
    assert!(rollbacks > 0, "these rates should overshoot at least once");
}

/// Every rule solves XOR (RMS/2 below 0.05: every output on the right side of 0.5).
#[test]
fn every_rule_solves_xor() {
    let backend = CpuBackend;
    let cases = [
        (Optimizer::AdaptiveStep, settings()),
        (Optimizer::Rprop, settings()),
        (Optimizer::RpropMinus, settings()),
        (Optimizer::Quickprop, StepRuleSettings { learning_rate: 2.0, ..settings() }),
        (Optimizer::BoldDriver, StepRuleSettings { learning_rate: 2.0, ..settings() }),
        (Optimizer::Backprop, StepRuleSettings { learning_rate: 2.0, momentum: 0.9, ..settings() }),
        (Optimizer::Incremental, StepRuleSettings { learning_rate: 1.0, momentum: 0.5, ..settings() }),
    ];
    for (optimizer, rules) in cases {
        let mut net = xor_net(4, 1, 1.0);
        let settings = FullBatchSettings { optimizer, rules: StepRuleSettings { target_error: 0.05, ..rules }, epochs: 5000 };
        let outcome = train_full_batch(&backend, &mut net, xor(), 0.0, settings, None, "xor", &mut |_: &EpochRecord, _: &Network| true).unwrap();
        let outputs = net.predict(&backend, &XOR_INPUTS);
        assert_eq!(outcome.stop, StopKind::TargetReached, "{optimizer:?}: error {} after {} epochs", outcome.error, outcome.epochs);
        assert!(outputs.iter().zip(XOR_TARGETS).all(|(o, t)| (o - t).abs() < 0.5), "{optimizer:?}: {outputs:?}");
        assert!(rms_half(&net, &backend, xor()) <= 0.05 + 1e-9, "{optimizer:?}");
    }
}

/// The rules as supervised-stage optimisers: through `optimise` on a SoftMax net they lower
/// its criterion; a settings file names them and their step_rules.
#[test]
fn step_rules_serve_the_supervised_stage() {
    let backend = CpuBackend;
    let inputs: Vec<f32> = (0..60).map(|k| ((k * 37 % 11) as f32) / 10.0).collect();
    let targets: Vec<f32> = (0..20).flat_map(|c| if inputs[3 * c] > inputs[3 * c + 1] { [1.0, 0.0] } else { [0.0, 1.0] }).collect();
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 3, n_outputs: 2 };
    for optimizer in [Optimizer::AdaptiveStep, Optimizer::Rprop, Optimizer::Quickprop, Optimizer::BoldDriver] {
        let mut net = Network::zeros(&[3, 4, 2], OutputKind::SoftMax);
        uniform_start(&mut net, 0.5, 2);
        let start = criterion(&net, &backend, cases, 0.1);
        let method = Method::StepRule(FullBatchSettings { optimizer, rules: settings(), epochs: 100 });
        let report = optimise(&backend, &mut net, cases, 0.1, method, None, "test", &mut |_, _| true).unwrap();
        assert!(report.final_criterion < 0.8 * start, "{optimizer:?}: {start} → {}", report.final_criterion);
    }
    let config: SupervisedConfig = serde_json::from_str(r#"{"optimizer": "adaptive_step", "output": "logistic", "step_rules": {"up": 1.3, "target_error": 0.04}}"#).unwrap();
    assert_eq!(config.optimizer, Optimizer::AdaptiveStep);
    assert_eq!(config.step_rules.up, 1.3);
    assert_eq!(config.step_rules.down, StepRuleSettings::default().down);
    assert_eq!((StepRuleSettings::default().up, StepRuleSettings::default().down), deepbelief::supervised::config::CHOSEN_UP_DOWN);
    assert!(config.validate().is_ok());
}

#[test]
fn nan_settings_are_refused_naming_the_field() {
    for (name, s) in [
        ("step_rules.up", StepRuleSettings { up: f64::NAN, ..settings() }),
        ("step_rules.momentum", StepRuleSettings { momentum: f64::NAN, ..settings() }),
        ("step_rules.max_error_growth", StepRuleSettings { max_error_growth: f64::NAN, ..settings() }),
        ("step_rules.rprop_delta_max", StepRuleSettings { rprop_delta_max: f64::INFINITY, ..settings() }),
        ("step_rules.quickprop_mu", StepRuleSettings { quickprop_mu: f64::NAN, ..settings() }),
        ("step_rules.target_error", StepRuleSettings { target_error: -1.0, ..settings() }),
    ] {
        assert_eq!(s.validate().unwrap_err().field, name);
        let config = SupervisedConfig { step_rules: s, ..SupervisedConfig::default() };
        assert_eq!(config.validate().unwrap_err().field, name);
        let mut net = xor_net(2, 1, 1.0);
        let err = train_full_batch(&CpuBackend, &mut net, xor(), 0.0, FullBatchSettings { optimizer: Optimizer::AdaptiveStep, rules: s, epochs: 1 }, None, "t", &mut |_: &EpochRecord, _: &Network| true).unwrap_err();
        assert!(err.to_string().contains(name), "{err}");
    }
}

const TOMAN_XOR: &str = "#Training set\n#Number of inputs\n2\n#inputs description <name> <min> <max>\nx1 0.0 1.0\nx2 0.0 1.0\n#Number of outputs\n1\n#outputs description <name> <min> <max>\nout 0.0 1.0\n#Number of patterns\n4\n#Patterns <inputs> | <outputs>\n0.0 0.0 | 0.0\n0.0 1.0 | 1.0\n1.0 0.0 | 1.0\n1.0 1.0 | 0.0\n";

#[test]
fn toman_text_format_reads_and_round_trips() {
    let data = parse_toman_text(TOMAN_XOR).unwrap();
    assert_eq!((data.n_inputs(), data.n_outputs(), data.n_patterns()), (2, 1, 4));
    assert_eq!(data.inputs, XOR_INPUTS);
    assert_eq!(data.targets, XOR_TARGETS);
    assert_eq!(data.inputs_described[1].name, "x2");
    // Toman's own example line.
    let one = TOMAN_XOR.replace("4\n#Patterns", "1\n#Patterns").replace("0.0 0.0 | 0.0\n0.0 1.0 | 1.0\n1.0 0.0 | 1.0\n1.0 1.0 | 0.0\n", "0.6200877192982455 0.5163709677419356 | 0.0\n");
    let parsed = parse_toman_text(&one).unwrap();
    assert_eq!(parsed.inputs, [0.6200877192982455f64 as f32, 0.5163709677419356f64 as f32]);
    let again = parse_toman_text(&to_toman_text(&parsed)).unwrap();
    assert_eq!(again, parsed);
}

#[test]
fn toman_text_errors_name_the_line_and_field() {
    let cases = [
        (TOMAN_XOR.replace("0.0 1.0 | 1.0", "0.0 abc | 1.0"), 15, "pattern 2 input 2", "expected a finite number, got \"abc\""),
        (TOMAN_XOR.replace("1.0 0.0 | 1.0", "1.0 0.0 1.0"), 16, "pattern 3", "no \"|\""),
        (TOMAN_XOR.replace("1.0 1.0 | 0.0", "1.0 | 0.0"), 17, "pattern 4 inputs", "expected 2 values, got 1"),
        (TOMAN_XOR.replace("x2 0.0 1.0", "x2 0.0"), 6, "input 2 description", "expected <name> <min> <max>"),
        (TOMAN_XOR.replace("x1 0.0 1.0", "x1 2.0 1.0"), 5, "input 1 max", "expected at least the min"),
        (TOMAN_XOR.replacen("\n2\n", "\ntwo\n", 1), 3, "number of inputs", "expected a whole number"),
        (TOMAN_XOR.replace("0.0 0.0 | 0.0", "0.0 0.0 | NaN"), 14, "pattern 1 output 1", "expected a finite number"),
        (format!("{TOMAN_XOR}1.0 1.0 | 1.0\n"), 18, "after the last pattern", "4 patterns declared"),
    ];
    for (text, line, field, message) in cases {
        let err = parse_toman_text(&text).unwrap_err();
        assert_eq!((err.line, err.field.as_str()), (line, field), "{err}");
        assert!(err.message.contains(message), "{err}");
        assert!(err.to_string().starts_with(&format!("line {line}, {field}:")), "{err}");
    }
    let cut = TOMAN_XOR.replace("1.0 1.0 | 0.0\n", "");
    let err = parse_toman_text(&cut).unwrap_err();
    assert_eq!((err.line, err.field.as_str()), (0, "pattern 4"), "{err}");
}

/// `deepbelief mlp` on Toman's text format: trains, saves, and resumes from its own file
/// where it stopped (the resumed run starts at the saved error exactly); NaN flags are
/// refused by name.
#[test]
fn mlp_command_trains_saves_and_resumes() {
    let dir = temp_dir("mlp-toman");
    let data = dir.join("xor.txt");
    std::fs::write(&data, TOMAN_XOR).unwrap();
    let out = dir.join("run1");
    let (data_s, out_s) = (data.to_str().unwrap(), out.to_str().unwrap());
    let first = last_json(&run_ok(&["mlp", "--toman-data", data_s, "--layers", "2,4,1", "--optimizer", "rprop", "--epochs", "40", "--init-range", "1", "--out", out_s, "--json"]));
    assert_eq!(first["epochs"], 40);
    let saved = deepbelief::format::mlp::read(&out.join("mlp.json")).unwrap();
    assert_eq!(saved.epochs, 40);
    assert_eq!(saved.network.output, OutputKind::Logistic);
    assert!(close(saved.error, first["error"].as_f64().unwrap(), 1e-12));
    for name in ["MLP.LOG", "errors.csv"] {
        assert!(out.join(name).exists(), "{name}");
    }
    let log = std::fs::read_to_string(out.join("MLP.LOG")).unwrap();
    assert!(log.contains("output calculation") && log.contains("weights update"), "{log}");
    let out2 = dir.join("run2");
    let resumed = last_json(&run_ok(&["mlp", "--toman-data", data_s, "--weights", out.join("mlp.json").to_str().unwrap(), "--optimizer", "rprop", "--epochs", "30", "--out", out2.to_str().unwrap(), "--json"]));
    assert_eq!(resumed["epochs_in_all"], 70);
    assert_eq!(resumed["initial_error"].as_f64().unwrap(), saved.error);
    let bad = run_fails(&["mlp", "--toman-data", data_s, "--layers", "2,4,1", "--up", "NaN", "--out", out_s]);
    assert!(bad.contains("step_rules.up") && bad.contains("--up"), "{bad}");
    let bad = run_fails(&["mlp", "--toman-data", data_s, "--layers", "2,4,2", "--out", out_s]);
    assert!(bad.contains("1 outputs per case"), "{bad}");
}

/// The rules as the `train` command's supervised stage: `--optimizer adaptive --output
/// logistic --target-error` on RBM features runs the adaptive rule (DEEP.LOG says so, the
/// criterion falls from the zero-weight start), and a NaN `--step-up` is refused by name.
#[test]
fn train_command_runs_a_step_rule_in_the_supervised_stage() {
    use support::cli::{small_images, small_labels, small_train_args};
    let out = temp_dir("toman-train");
    let (images, labels, out_s) = (small_images().to_str().unwrap(), small_labels().to_str().unwrap(), out.to_str().unwrap());
    let mut args = small_train_args(images, out_s);
    args.extend(["--train-labels", labels, "--optimizer", "adaptive", "--output", "logistic", "--supervised-max-iters", "40", "--json"]);
    let figures = last_json(&run_ok(&args));
    let supervised = &figures["supervised"]["outcome"]["supervised"];
    assert_eq!(supervised["iterations"], 40, "{supervised}");
    // The stage starts with zero output weights (no hidden layers, so no penalty yet): every
    // output 0.5, criterion Σ(0.5 − t)² / 2 per case = 10 · 0.25 / 2.
    assert!(close(supervised["initial_criterion"].as_f64().unwrap(), 1.25, 1e-9), "{supervised}");
    assert!(supervised["final_criterion"].as_f64().unwrap() < 0.6, "{supervised}");
    let stages = &supervised["stage_seconds"];
    for stage in ["forward", "error", "gradient", "update"] {
        assert!(stages[stage].as_f64().is_some_and(|s| s >= 0.0), "{supervised}");
    }
    assert!(supervised["rollbacks"].as_u64().is_some(), "{supervised}");
    let log = std::fs::read_to_string(out.join("DEEP.LOG")).unwrap();
    assert!(log.contains("adaptive_step") && log.contains("logistic") && log.contains("supervised stage seconds"), "{log}");
    let mut bad = small_train_args(images, out_s);
    bad.extend(["--train-labels", labels, "--optimizer", "adaptive", "--step-up", "NaN"]);
    let message = run_fails(&bad);
    assert!(message.contains("step_rules.up") && message.contains("--step-up"), "{message}");
}

/// Levenberg–Marquardt: on a linear net (residuals linear in the weights) one step with a
/// tiny λ lands on the least-squares solution of the normal equations, solved here by hand.
#[test]
fn levenberg_marquardt_step_is_least_squares_on_a_linear_net() {
    let backend = CpuBackend;
    let inputs = [0.0f32, 1.0, 1.0, 0.5, 2.0, -1.0, -1.0, 2.0, 0.5, 0.5];
    let targets = [1.0f32, 2.5, -0.5, 3.0, 1.2];
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 2, n_outputs: 1 };
    let mut net = Network::zeros(&[2, 1], OutputKind::Linear);
    // Normal equations for (w1, w2, b): Σ x xᵀ θ = Σ x t with x = (x1, x2, 1).
    let mut a = [[0.0f64; 3]; 3];
    let mut rhs = [0.0f64; 3];
    for c in 0..5 {
        let x = [inputs[2 * c] as f64, inputs[2 * c + 1] as f64, 1.0];
        for i in 0..3 {
            rhs[i] += x[i] * targets[c] as f64;
            for j in 0..3 {
                a[i][j] += x[i] * x[j];
            }
        }
    }
    let flat: Vec<f64> = a.iter().flatten().copied().collect();
    let exact = deepbelief::supervised::levenberg_marquardt::solve_shifted(&flat, 0.0, &rhs).unwrap();
    // The solver itself: A · x = rhs.
    for i in 0..3 {
        assert!(close((0..3).map(|j| a[i][j] * exact[j]).sum::<f64>(), rhs[i], 1e-12));
    }
    let rules = StepRuleSettings { lm_lambda: 1e-9, ..settings() };
    let settings = FullBatchSettings { optimizer: Optimizer::LevenbergMarquardt, rules, epochs: 1 };
    train_full_batch(&backend, &mut net, cases, 0.0, settings, None, "lm", &mut |_: &EpochRecord, _: &Network| true).unwrap();
    let params = net.to_params();
    for (k, (&p, &e)) in params.iter().zip(&exact).enumerate() {
        assert!((p as f64 - e).abs() < 1e-4, "parameter {k}: {p} vs least squares {e}");
    }
}

#[test]
fn levenberg_marquardt_solves_xor_and_refuses_what_it_cannot_do() {
    let backend = CpuBackend;
    let mut net = xor_net(3, 1, 1.0);
    let settings = FullBatchSettings { optimizer: Optimizer::LevenbergMarquardt, rules: StepRuleSettings { target_error: 0.05, ..settings() }, epochs: 200 };
    let outcome = train_full_batch(&backend, &mut net, xor(), 0.0, settings, None, "lm", &mut |_: &EpochRecord, _: &Network| true).unwrap();
    assert_eq!(outcome.stop, StopKind::TargetReached, "error {} after {} epochs", outcome.error, outcome.epochs);
    assert!(outcome.epochs < 100, "{} epochs", outcome.epochs);
    let mut softmax = Network::zeros(&[2, 2], OutputKind::SoftMax);
    let two = [1.0f32, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0];
    let cases = Cases { inputs: &XOR_INPUTS, targets: &two, n_inputs: 2, n_outputs: 2 };
    let err = train_full_batch(&backend, &mut softmax, cases, 0.0, settings, None, "lm", &mut |_: &EpochRecord, _: &Network| true).unwrap_err();
    assert!(err.to_string().contains("not SoftMax"), "{err}");
    let err = train_full_batch(&backend, &mut net, xor(), 0.5, settings, None, "lm", &mut |_: &EpochRecord, _: &Network| true).unwrap_err();
    assert!(err.to_string().contains("penalty must be 0"), "{err}");
    let mut big = Network::zeros(&[784, 25, 15, 10], OutputKind::Logistic);
    let inputs = vec![0.0f32; 784 * 200];
    let targets = vec![0.0f32; 10 * 200];
    let cases = Cases { inputs: &inputs, targets: &targets, n_inputs: 784, n_outputs: 10 };
    let err = train_full_batch(&backend, &mut big, cases, 0.0, settings, None, "lm", &mut |_: &EpochRecord, _: &Network| true).unwrap_err();
    assert!(err.to_string().contains("is for small nets"), "{err}");
}
