#![cfg(not(target_arch = "wasm32"))]
//! RTRL's gradient against BPTT's and a numerical one (issue 20): over a sequence with the
//! weights held, `Σ_τ ∂E(τ)/∂θ` from Moore's sensitivity tensors must equal back-propagation
//! through time over the whole sequence, and both the central differences of an independent
//! f64 forward pass. The shortcut must give full RTRL's gradient wherever it applies.

use deepbelief::recurrent::graph::Source;
use deepbelief::recurrent::{sequence_gradient, EdgeSpec, Frame, GraphSpec, Network, Preset, Rtrl, RtrlMode};
use deepbelief::rng::{Purpose, RngStream};

/// A graph with every kind of edge: two hidden layers, a skip edge, self- and backward
/// recurrence, output → hidden2 feedback and a delayed input.
fn tangled() -> GraphSpec {
    GraphSpec {
        layers: vec![2, 3, 2, 2],
        edges: vec![
            EdgeSpec::feed_forward(0, 1),
            EdgeSpec::feed_forward(1, 2),
            EdgeSpec::feed_forward(2, 3),
            EdgeSpec::feed_forward(0, 3),
            EdgeSpec::recurrent(1, 1),
            EdgeSpec::recurrent(2, 1),
            EdgeSpec::recurrent(3, 2),
            EdgeSpec::recurrent(0, 2),
        ],
        biases: true,
    }
}

fn sequence(graph: &GraphSpec, steps: usize, seed: u64) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let (ni, no) = (graph.layers[0], *graph.layers.last().unwrap());
    let draw = |step: u64, n: usize, off: u64| {
        let s = RngStream::new(seed, step, Purpose::DataSample);
        (0..n).map(|i| 1.6 * s.uniform(i as u64 + off) - 0.8).collect::<Vec<f32>>()
    };
    ((0..steps).map(|t| draw(t as u64, ni, 0)).collect(), (0..steps).map(|t| draw(t as u64, no, 100)).collect())
}

/// The sum of the errors over the sequence in f64, written independently of the crate's
/// forward pass (eqs. 3.1–3.2 as loops).
fn loss_f64(net: &Network, params: &[f64], inputs: &[Vec<f32>], targets: &[Vec<f32>]) -> f64 {
    let g = &net.graph;
    let mut prev: Vec<Vec<f64>> = g.layers.iter().map(|&n| vec![0.0; n]).collect();
    let mut total = 0.0;
    for (x, d) in inputs.iter().zip(targets) {
        let mut act: Vec<Vec<f64>> = g.layers.iter().map(|&n| vec![0.0; n]).collect();
        act[0] = x.iter().map(|&v| v as f64).collect();
        for i in 1..g.layers.len() {
            let mut net_i = vec![0.0f64; g.layers[i]];
            for b in net.blocks.iter().filter(|b| b.to == i) {
                let w = &params[b.offset..b.offset + b.len()];
                for (j, n) in net_i.iter_mut().enumerate() {
                    for t in 0..b.cols {
                        let a = match b.source {
                            Source::Layer(k) => act[k][t],
                            Source::Previous(q) => prev[q][t],
                            Source::Bias => 1.0,
                        };
                        *n += w[j * b.cols + t] * a;
                    }
                }
            }
            act[i] = net_i.iter().map(|v| v.tanh()).collect();
        }
        total += 0.5 * act.last().unwrap().iter().zip(d).map(|(y, &d)| (y - d as f64).powi(2)).sum::<f64>();
        prev = act;
    }
    total
}

fn numerical_gradient(net: &Network, inputs: &[Vec<f32>], targets: &[Vec<f32>]) -> Vec<f64> {
    let base: Vec<f64> = net.params.iter().map(|&v| v as f64).collect();
    let h = 1e-6;
    (0..base.len())
        .map(|i| {
            let (mut plus, mut minus) = (base.clone(), base.clone());
            plus[i] += h;
            minus[i] -= h;
            (loss_f64(net, &plus, inputs, targets) - loss_f64(net, &minus, inputs, targets)) / (2.0 * h)
        })
        .collect()
}

fn rtrl_sum(net: &Network, mode: RtrlMode, inputs: &[Vec<f32>], targets: &[Vec<f32>]) -> Vec<f64> {
    let mut rtrl = Rtrl::new(net, mode).unwrap();
    let mut sum = vec![0.0f64; net.params.len()];
    for (x, d) in inputs.iter().zip(targets) {
        rtrl.step(net, x, d);
        sum.iter_mut().zip(rtrl.gradient()).for_each(|(s, &g)| *s += g as f64);
    }
    sum
}

/// The largest difference relative to the largest component of `reference`.
fn relative_difference(a: &[f64], reference: &[f64]) -> f64 {
    let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    a.iter().zip(reference).fold(0.0f64, |m, (x, y)| m.max((x - y).abs())) / scale
}

#[test]
fn rtrl_gradient_equals_bptt_and_numerical_on_every_edge_kind() {
    let net = Network::initialise(tangled(), 7, 1.5).unwrap();
    let (inputs, targets) = sequence(&net.graph, 7, 3);
    let rtrl = rtrl_sum(&net, RtrlMode::Full, &inputs, &targets);
    let (bptt, errors, _) = sequence_gradient(&net, &Frame::zeros(&net.graph), &inputs, &targets);
    let bptt: Vec<f64> = bptt.iter().map(|&g| g as f64).collect();
    let numerical = numerical_gradient(&net, &inputs, &targets);
    // The crate's f32 forward pass agrees with the f64 one.
    let loss: f64 = errors.iter().sum();
    let loss64 = loss_f64(&net, &net.params.iter().map(|&v| v as f64).collect::<Vec<_>>(), &inputs, &targets);
    assert!((loss - loss64).abs() < 1e-5 * loss64, "loss {loss} vs f64 {loss64}");
    assert!(numerical.iter().any(|g| g.abs() > 1e-2), "a gradient worth checking");
    for block in &net.blocks {
        let r = block.offset..block.offset + block.len();
        assert!(relative_difference(&rtrl[r.clone()], &bptt[r.clone()]) < 1e-4, "{}: RTRL {:?} vs BPTT {:?}", block.name(), &rtrl[r.clone()], &bptt[r.clone()]);
    }
    assert!(relative_difference(&rtrl, &bptt) < 1e-5, "RTRL vs BPTT: {}", relative_difference(&rtrl, &bptt));
    assert!(relative_difference(&rtrl, &numerical) < 1e-4, "RTRL vs numerical: {}", relative_difference(&rtrl, &numerical));
    assert!(relative_difference(&bptt, &numerical) < 1e-4, "BPTT vs numerical: {}", relative_difference(&bptt, &numerical));
}

#[test]
fn rtrl_gradient_equals_bptt_on_the_presets() {
    for preset in [Preset::Elman, Preset::Jordan, Preset::FeedForward] {
        let net = Network::initialise(preset.graph(4, 5, 3), 11, 2.0).unwrap();
        let (inputs, targets) = sequence(&net.graph, 12, 5);
        let (bptt, _, _) = sequence_gradient(&net, &Frame::zeros(&net.graph), &inputs, &targets);
        let bptt: Vec<f64> = bptt.iter().map(|&g| g as f64).collect();
        let numerical = numerical_gradient(&net, &inputs, &targets);
        for mode in [RtrlMode::Full, RtrlMode::Shortcut] {
            let rtrl = rtrl_sum(&net, mode, &inputs, &targets);
            assert!(relative_difference(&rtrl, &bptt) < 1e-5, "{preset:?} {mode:?}: RTRL vs BPTT {}", relative_difference(&rtrl, &bptt));
            assert!(relative_difference(&rtrl, &numerical) < 1e-4, "{preset:?} {mode:?}: RTRL vs numerical {}", relative_difference(&rtrl, &numerical));
        }
    }
}

#[test]
fn shortcut_covers_exactly_the_acyclic_paths() {
    assert_eq!(Preset::FeedForward.graph(2, 3, 1).shortcut_layers(), vec![false, true, true]);
    // Elman: the output's weights reach y without recurrence; the hidden layer feeds itself.
    assert_eq!(Preset::Elman.graph(2, 3, 1).shortcut_layers(), vec![false, false, true]);
    // Jordan: the output feeds the hidden layer at the next step, so nothing is acyclic.
    assert_eq!(Preset::Jordan.graph(2, 3, 1).shortcut_layers(), vec![false, false, false]);
    // A delayed input (input(τ−1) → hidden) depends on no weight: still acyclic.
    let mut delayed = Preset::FeedForward.graph(2, 3, 1);
    delayed.edges.push(EdgeSpec::recurrent(0, 1));
    assert_eq!(delayed.shortcut_layers(), vec![false, true, true]);
    // Recurrence in a layer the output does not depend on (2) leaves every path to the output
    // acyclic; layer 2's own gradient is zero, which the shortcut gives too.
    let mut dead_end = Preset::FeedForward.graph(2, 3, 1);
    dead_end.layers.insert(2, 2);
    dead_end.edges = vec![EdgeSpec::feed_forward(0, 1), EdgeSpec::feed_forward(1, 3), EdgeSpec::feed_forward(1, 2), EdgeSpec::recurrent(2, 2)];
    assert_eq!(dead_end.shortcut_layers(), vec![false, true, true, true]);
    assert_eq!(tangled().shortcut_layers(), vec![false, false, false, false]);
}

#[test]
fn shortcut_gives_full_rtrls_gradient_at_every_step() {
    for (preset, shortcut_blocks) in [(Preset::Elman, 2), (Preset::FeedForward, 4)] {
        let net = Network::initialise(preset.graph(3, 4, 2), 2, 1.5).unwrap();
        let (inputs, targets) = sequence(&net.graph, 9, 8);
        let (mut full, mut short) = (Rtrl::new(&net, RtrlMode::Full).unwrap(), Rtrl::new(&net, RtrlMode::Shortcut).unwrap());
        assert_eq!((0..net.blocks.len()).filter(|&b| short.uses_shortcut(b)).count(), shortcut_blocks, "{preset:?}");
        assert!((0..net.blocks.len()).all(|b| !full.uses_shortcut(b)));
        for (x, d) in inputs.iter().zip(&targets) {
            let (a, b) = (full.step(&net, x, d), short.step(&net, x, d));
            assert_eq!(a.error, b.error);
            let (g_full, g_short): (Vec<f64>, Vec<f64>) = (full.gradient().iter().map(|&v| v as f64).collect(), short.gradient().iter().map(|&v| v as f64).collect());
            assert!(relative_difference(&g_short, &g_full) < 1e-6, "{preset:?}: {}", relative_difference(&g_short, &g_full));
        }
    }
}

#[test]
fn online_training_steps_are_moores_euler_steps() {
    // train_step is step + θ ← θ − rate·∂E/∂θ with this step's gradient; the next step's
    // forward pass uses the moved weights.
    let mut net = Network::initialise(Preset::Elman.graph(2, 3, 2), 4, 1.0).unwrap();
    let (inputs, targets) = sequence(&net.graph, 4, 1);
    let mut trained = Rtrl::new(&net, RtrlMode::Full).unwrap();
    let mut copy = net.clone();
    let mut probe = Rtrl::new(&net, RtrlMode::Full).unwrap();
    for (x, d) in inputs.iter().zip(&targets) {
        let before = net.params.clone();
        trained.train_step(&mut net, x, d, 0.1);
        probe.step(&copy, x, d);
        for ((after, before), g) in net.params.iter().zip(&before).zip(probe.gradient()) {
            assert_eq!(*after, before - 0.1 * g);
        }
        copy.params.copy_from_slice(&net.params);
    }
}

#[test]
fn rtrl_does_not_depend_on_the_thread_count() {
    // n = 16 bits: P = 1024 columns, 4 tiles of the sensitivity products.
    let train = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut net = Network::initialise(Preset::Elman.graph(32, 32, 16), 1, 2.0).unwrap();
            let mut rtrl = Rtrl::new(&net, RtrlMode::Full).unwrap();
            let (inputs, targets) = sequence(&net.graph, 5, 2);
            for (x, d) in inputs.iter().zip(&targets) {
                rtrl.train_step(&mut net, x, d, 0.01);
            }
            (net.params, rtrl.sensitivity(2, 1).unwrap().to_vec())
        })
    };
    let (one, many) = (train(1), train(3));
    assert!(one.0 == many.0 && one.1 == many.1, "weights and μ[1←1]'s hidden sensitivities bit for bit");
}
