#![cfg(not(target_arch = "wasm32"))]
//! The recurrent family's graphs (issue 20): the Elman and Jordan forward passes against
//! values worked by hand on a net of one input, two hidden units and one output, the flat
//! parameter layout, and bad specs refused with errors naming the field.

use deepbelief::recurrent::train::TrainerSpec;
use deepbelief::recurrent::{EdgeSpec, Frame, GraphSpec, Network, Preset, RecurrentError, Rtrl, RtrlMode, TaskSpec, TaskStream, Trainer};

/// Two steps (inputs 1, then −0.5) from a zero state; returns each step's hidden and output.
fn run(net: &Network) -> Vec<(Vec<f32>, f32)> {
    let (mut prev, mut frame) = (Frame::zeros(&net.graph), Frame::zeros(&net.graph));
    [1.0f32, -0.5]
        .iter()
        .map(|&x| {
            std::mem::swap(&mut prev, &mut frame);
            net.forward(&prev, &[x], &mut frame);
            (frame.act[1].clone(), frame.output()[0])
        })
        .collect()
}

fn close(a: f32, b: f64) -> bool {
    (a as f64 - b).abs() < 1e-6
}

#[test]
fn elman_forward_matches_hand_computed_values() {
    // Blocks: w[1←0] (2×1), w[2←1] (1×2), μ[1←1] (2×2), b[1], b[2].
    let graph = Preset::Elman.graph(1, 2, 1);
    let names: Vec<String> = graph.blocks().iter().map(|b| b.name()).collect();
    assert_eq!(names, ["w[1←0]", "w[2←1]", "μ[1←1]", "b[1]", "b[2]"]);
    let params = vec![0.5, -1.0, /* w21 */ 1.0, 2.0, /* μ11 */ 0.5, 0.25, 0.0, -0.5, /* b1 */ 0.1, -0.2, /* b2 */ 0.05];
    let net = Network::new(graph, params).unwrap();
    let steps = run(&net);
    // Step 1: net¹ = (0.5·1 + 0.1, −1·1 − 0.2) = (0.6, −1.2); h = tanh(net¹);
    // y = tanh(h₀ + 2h₁ + 0.05).
    let h1 = [0.6f64.tanh(), (-1.2f64).tanh()];
    assert!(close(steps[0].0[0], 0.537_049_566_998_035_3) && close(steps[0].0[1], -0.833_654_607_012_155_2), "{:?}", steps[0]);
    assert!(close(steps[0].1, (h1[0] + 2.0 * h1[1] + 0.05).tanh()) && close(steps[0].1, -0.793_295_363_510_036_2));
    // Step 2: net¹ = (0.5·(−0.5) + 0.5h₀ + 0.25h₁ + 0.1, −1·(−0.5) − 0.5h₁ − 0.2)
    //             = (−0.089 888 868, 0.716 827 304).
    let n2 = [-0.25 + 0.5 * h1[0] + 0.25 * h1[1] + 0.1, 0.5 - 0.5 * h1[1] - 0.2];
    assert!((n2[0] - -0.089_888_868_254_021_15).abs() < 1e-12 && (n2[1] - 0.716_827_303_506_077_7).abs() < 1e-12);
    assert!(close(steps[1].0[0], -0.089_647_547_230_480_14) && close(steps[1].0[1], 0.614_940_214_553_184_9), "{:?}", steps[1]);
    assert!(close(steps[1].1, 0.830_651_080_261_830_9), "{}", steps[1].1);
}

#[test]
fn jordan_forward_matches_hand_computed_values() {
    // Blocks: w[1←0], w[2←1], μ[1←2] (2×1: the previous output into the hidden layer), b[1], b[2].
    let graph = Preset::Jordan.graph(1, 2, 1);
    let names: Vec<String> = graph.blocks().iter().map(|b| b.name()).collect();
    assert_eq!(names, ["w[1←0]", "w[2←1]", "μ[1←2]", "b[1]", "b[2]"]);
    let params = vec![0.5, -1.0, 1.0, 2.0, /* μ12 */ 0.5, -1.0, 0.1, -0.2, 0.05];
    let net = Network::new(graph, params).unwrap();
    let steps = run(&net);
    // Step 1 is Elman's (the previous output is 0): y = −0.793 295 364.
    assert!(close(steps[0].1, -0.793_295_363_510_036_2));
    // Step 2: net¹ = (0.5·(−0.5) + 0.5y + 0.1, 0.5 − y − 0.2) = (−0.546 647 682, 1.093 295 364).
    assert!(close(steps[1].0[0], -0.498_003_503_964_080_8) && close(steps[1].0[1], 0.798_077_748_683_770_9), "{:?}", steps[1]);
    assert!(close(steps[1].1, 0.817_140_947_672_114), "{}", steps[1].1);
}

#[test]
fn feed_forward_net_keeps_no_state() {
    let net = Network::initialise(Preset::FeedForward.graph(1, 2, 1), 3, 1.0).unwrap();
    let (zero, mut frame) = (Frame::zeros(&net.graph), Frame::zeros(&net.graph));
    let mut again = frame.clone();
    net.forward(&zero, &[0.3], &mut frame);
    let mut other = Frame::zeros(&net.graph);
    net.forward(&zero, &[-0.3], &mut other);
    net.forward(&other, &[0.3], &mut again);
    assert_eq!(frame.output(), again.output());
}

fn error_of(result: Result<impl std::fmt::Debug, RecurrentError>) -> RecurrentError {
    result.expect_err("a bad spec is refused")
}

#[test]
fn bad_specs_name_their_field() {
    let base = Preset::Elman.graph(2, 3, 1);
    // A recurrent edge to a layer that does not exist.
    let mut missing = base.clone();
    missing.edges.push(EdgeSpec::recurrent(1, 5));
    let e = error_of(missing.validate());
    assert_eq!(e.field, "edges[3].to");
    assert!(e.to_string().contains("layer 5") && e.to_string().contains("0 to 2"), "{e}");
    let mut missing_source = base.clone();
    missing_source.edges.push(EdgeSpec::recurrent(7, 1));
    assert_eq!(error_of(missing_source.validate()).field, "edges[3].from");
    // Zero units.
    let mut empty = base.clone();
    empty.layers[1] = 0;
    let e = error_of(empty.validate());
    assert_eq!(e.field, "layers[1]");
    assert!(e.to_string().contains("0 units"), "{e}");
    // A feed-forward edge that goes down, an edge into the input, a repeated edge.
    let mut down = base.clone();
    down.edges.push(EdgeSpec::feed_forward(2, 1));
    assert_eq!(error_of(down.validate()).field, "edges[3]");
    let mut into_input = base.clone();
    into_input.edges.push(EdgeSpec::recurrent(1, 0));
    assert_eq!(error_of(into_input.validate()).field, "edges[3].to");
    let mut twice = base.clone();
    twice.edges.push(EdgeSpec::recurrent(1, 1));
    let e = error_of(twice.validate());
    assert!(e.field == "edges[3]" && e.message.contains("edges[2]"), "{e}");
    // A layer nothing feeds, too few layers.
    let orphan = GraphSpec { layers: vec![2, 3, 1], edges: vec![EdgeSpec::feed_forward(0, 2)], biases: true };
    assert_eq!(error_of(orphan.validate()).field, "layers[1]");
    let huge = Preset::Elman.graph(65_536, 65_536, 1);
    let e = error_of(huge.validate());
    assert!(e.field == "layers" && e.message.contains("8590065665 parameters"), "{e}");
    let single = GraphSpec { layers: vec![2], edges: vec![], biases: false };
    assert_eq!(error_of(single.validate()).field, "layers");
    // Parameters of the wrong length or with a NaN, named by block and entry.
    assert_eq!(error_of(Network::new(base.clone(), vec![0.0; 3])).field, "params");
    let mut params = vec![0.0f32; base.parameter_count()];
    params[6 + 3 + 4] = f32::NAN; // μ[1←1][1, 1]
    let e = error_of(Network::new(base.clone(), params));
    assert_eq!(e.field, "params μ[1←1][1, 1]", "{e}");
}

#[test]
fn bad_settings_name_their_field() {
    let mut net = Network::initialise(Preset::Elman.graph(1, 2, 1), 1, 1.0).unwrap();
    let spec = TaskSpec::Not;
    let mut trainer = Trainer::new(&net, TrainerSpec::Rtrl { mode: RtrlMode::Shortcut }).unwrap();
    let mut stream = TaskStream::new(spec, 1);
    for rate in [f32::NAN, 0.0, -1.0, f32::INFINITY] {
        let e = error_of(deepbelief::recurrent::train(&mut net, &mut trainer, &mut stream, rate, 10, 10, |_, _| {}));
        assert_eq!(e.field, "rate", "{e}");
        assert!(e.to_string().contains(&format!("{rate}")), "{e}");
    }
    assert_eq!(error_of(Network::initialise(Preset::Elman.graph(1, 2, 1), 1, f32::NAN)).field, "init_scale");
    assert_eq!(error_of(TaskSpec::Add { bits: 0 }.validate()).field, "bits");
    assert_eq!(error_of(TaskSpec::Recall { bits: 2, delay: 0 }.validate()).field, "delay");
    assert_eq!(error_of(Trainer::new(&net, TrainerSpec::Bptt { truncation: 0 })).field, "truncation");
    // Tensors beyond the limit are refused up front, naming the layers.
    let huge = Network::initialise(Preset::Elman.graph(2, 2048, 1), 1, 1.0).unwrap();
    assert_eq!(error_of(Rtrl::new(&huge, RtrlMode::Full)).field, "layers");
}
