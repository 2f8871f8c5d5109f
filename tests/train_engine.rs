#![cfg(not(target_arch = "wasm32"))]
//! The engine end to end on real MNIST: greedy stacks, PCD, Gaussian visible units, and the
//! generative sampler.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::Dataset;
use deepbelief::model::VisibleUnits;
use deepbelief::sample::GenerativeChains;
use deepbelief::train::{CdConfig, CdTrainer, GreedyEvent, GreedyTrainer, StackConfig, StopReason};
use deepbelief::eval::exact::{exact_gradient, exact_log_likelihood};
use support::mnist::mnist;

fn quick(n_hidden: usize) -> CdConfig {
    CdConfig { n_hidden, epochs: 2, batch_size: Some(50), init_trials: 3, init_cases: 200, ..CdConfig::deep() }
}

fn train_stack(config: StackConfig, data: &Dataset) -> (GreedyTrainer, Vec<GreedyEvent>) {
    let mut trainer = GreedyTrainer::new(config, data).unwrap();
    let mut events = Vec::new();
    while !trainer.finished() {
        events.push(trainer.step(&CpuBackend, data).unwrap());
    }
    (trainer, events)
}

#[test]
fn greedy_stack_has_chained_shapes_and_sorted_units() {
    let data = mnist(300);
    let config = StackConfig { layers: vec![24, 16, 8], rbm: quick(0), greedy_mean_field: false, monitor_cases: 100, ..StackConfig::default() };
    let (trainer, events) = train_stack(config, &data);
    assert_eq!(trainer.dbn.sizes(), vec![784, 24, 16, 8]);
    let started = events.iter().filter(|e| matches!(e, GreedyEvent::LayerStarted { .. })).count();
    let epochs = events.iter().filter(|e| matches!(e, GreedyEvent::Epoch { .. })).count();
    assert_eq!((started, epochs), (3, 6));
    for event in &events {
        if let GreedyEvent::Epoch { layer, metrics: Some(m), .. } = event {
            assert_eq!(m.hidden_units.len(), [24, 16, 8][*layer]);
            assert!(m.free_energy_train.is_finite() && m.pseudo_log_likelihood.unwrap() < 0.0 && m.recon_cross_entropy.unwrap() > 0.0);
        }
    }
    for (index, layer) in trainer.dbn.layers.iter().enumerate() {
        assert_eq!(layer.weights.len(), layer.n_visible * layer.n_hidden);
        let strength: Vec<f32> = (0..layer.n_hidden).map(|j| (0..layer.n_visible).map(|i| layer.weights[i * layer.n_hidden + j].abs()).sum()).collect();
        assert!(strength.windows(2).all(|w| w[0] >= w[1]), "layer {index} units not sorted: {strength:?}");
    }
    // Sorting permutes units, so the stack still reconstructs as well as before sorting.
    let error = trainer.dbn.layers[0].reconstruction_error(&CpuBackend, &data, 300);
    assert!(error < 0.07, "{error}");
}

#[test]
fn stack_configuration_errors_name_the_field() {
    let data = mnist(100);
    let bad = |config: StackConfig| GreedyTrainer::new(config, &data).err().expect("rejected").to_string();
    // Zero RBM layers is a plain MLP: the greedy trainer accepts it and is finished at once,
    // but a stack that must train RBMs still names the field.
    let plain = StackConfig { layers: vec![], ..StackConfig::default() };
    assert!(plain.validate(100).unwrap_err().to_string().contains("layers"));
    assert!(GreedyTrainer::new(plain, &data).expect("plain MLP accepted").finished());
    assert!(bad(StackConfig { layers: vec![10, 0], ..StackConfig::default() }).contains("layers"));
    let rbm = CdConfig { learning_rate: -1.0, ..CdConfig::default() };
    assert!(bad(StackConfig { layers: vec![10], rbm, ..StackConfig::default() }).contains("learning_rate"));
    let too_many_batches = CdConfig { n_batches: 101, batch_size: None, ..CdConfig::default() };
    assert!(bad(StackConfig { layers: vec![10], rbm: too_many_batches, ..StackConfig::default() }).contains("n_batches"));
}

/// Twelve binary inputs made of three prototypes with bit noise: small enough that the
/// exact log-likelihood is computable, structured enough that learning shows.
fn prototypes(n: usize) -> Dataset {
    let protos = [[1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0], [0, 0, 0, 0, 1, 1, 1, 1, 0, 1, 0, 1], [1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 0, 0]];
    let values = (0..n * 12)
        .map(|k| {
            let bit = protos[(k / 12) % 3][k % 12] as f32;
            if (k * 2654435761usize) % 97 < 5 { 1.0 - bit } else { bit }
        })
        .collect();
    Dataset::from_floats("prototypes", 12, values)
}

#[test]
fn persistent_cd_raises_the_exact_log_likelihood() {
    let data = prototypes(300);
    // PCD wants small steps without momentum: its chains assume the model moves slowly
    // (with momentum 0.9 the same run oscillated between −6 and −14 nats).
    let config = CdConfig { n_hidden: 6, epochs: 80, persistent: true, n_persistent_chains: 20, batch_size: Some(20), mean_field_visible: false, learning_rate: 0.02, initial_momentum: 0.0, final_momentum: 0.0, init_trials: 2, ..CdConfig::hinton() };
    let mut trainer = CdTrainer::new(config, &CpuBackend, &data).unwrap();
    let initial = exact_log_likelihood(&trainer.rbm, &data).unwrap();
    while !trainer.finished() {
        trainer.train_epoch(&CpuBackend, &data).unwrap();
    }
    let trained = exact_log_likelihood(&trainer.rbm, &data).unwrap();
    eprintln!("PCD exact log-likelihood {initial:.3} -> {trained:.3}");
    // Three noisy prototypes carry about ln 3 + 12·H(5/97) ≈ 3.5 nats; uniform is 12 ln 2 ≈ 8.3.
    // Measured: −7.88 → −4.10.
    assert!(trained > initial + 3.0 && trained > -4.5, "PCD: {initial} -> {trained}");
    assert_eq!(trainer.stopped, Some(StopReason::MaxEpochs));
}

#[test]
fn cd_k_gradient_points_along_the_exact_gradient() {
    let data = prototypes(120);
    for (k, persistent) in [(1, false), (4, false), (1, true)] {
        let config = CdConfig { n_hidden: 6, epochs: 1, batch_size: Some(120), cd_k_start: k, cd_k_end: k, persistent, n_persistent_chains: 120,
            learning_rate: 0.01, initial_momentum: 0.0, weight_penalty: 0.0, init_trials: 1, ..CdConfig::hinton() };
        let mut trainer = CdTrainer::new(config, &CpuBackend, &data).unwrap();
        let before = trainer.rbm.clone();
        let exact = exact_gradient(&before, &data).unwrap();
        trainer.train_epoch(&CpuBackend, &data).unwrap();
        // One full-batch step without momentum or penalties: the weight change is lr × the CD estimate.
        let step: Vec<f64> = trainer.rbm.weights.iter().zip(&before.weights).map(|(a, b)| (*a - *b) as f64).collect();
        let dot: f64 = step.iter().zip(&exact.weights).map(|(s, g)| s * g).sum();
        let norms = step.iter().map(|s| s * s).sum::<f64>().sqrt() * exact.weights.iter().map(|g| g.powi(2)).sum::<f64>().sqrt();
        let cosine = dot / norms;
        eprintln!("CD-{k} (persistent {persistent}): cosine with the exact gradient {cosine:.3}");
        assert!(cosine > 0.5, "CD-{k} persistent={persistent}: cosine {cosine}");
    }
}

#[test]
fn gaussian_visible_rbm_learns_standardised_data() {
    // Two clusters in 12 dimensions, standardised per input.
    let (n, d) = (400, 12);
    let mut values: Vec<f32> = (0..n * d)
        .map(|k| {
            let (case, input) = (k / d, k % d);
            let centre = if (case % 2 == 0) == (input < 6) { 1.5 } else { -1.5 };
            centre + ((k * 7919 % 101) as f32 / 101.0 - 0.5)
        })
        .collect();
    for input in 0..d {
        let column: Vec<f32> = (0..n).map(|c| values[c * d + input]).collect();
        let mean = column.iter().sum::<f32>() / n as f32;
        let sd = (column.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / n as f32).sqrt();
        for c in 0..n {
            values[c * d + input] = (values[c * d + input] - mean) / sd;
        }
    }
    let data = Dataset::from_floats("clusters", d, values);
    let config = CdConfig { n_hidden: 4, visible_units: VisibleUnits::Gaussian, epochs: 30, learning_rate: 0.01, mean_field_visible: false, ..CdConfig::hinton() };
    let mut trainer = CdTrainer::new(config, &CpuBackend, &data).unwrap();
    let initial = trainer.rbm.reconstruction_error(&CpuBackend, &data, n);
    while !trainer.finished() {
        trainer.train_epoch(&CpuBackend, &data).unwrap();
    }
    let trained = trainer.rbm.reconstruction_error(&CpuBackend, &data, n);
    // Each case is its cluster centre (≈ ±0.98 standardised) plus uniform noise, so a model
    // that found the clusters reconstructs to well under the unit variance of the data.
    assert!(trained < 0.5 * initial && trained < 0.3, "Gaussian RBM: {initial} -> {trained}");
}

#[test]
fn generative_chains_start_from_the_requested_data_and_move() {
    let data = mnist(300);
    let config = StackConfig { layers: vec![30, 20], rbm: quick(0), greedy_mean_field: true, monitor_cases: 0, ..StackConfig::default() };
    let (trainer, _) = train_stack(config, &data);
    let dbn = &trainer.dbn;
    let cases = [3usize, 7, 11];
    let mut chains = GenerativeChains::from_data(dbn, &CpuBackend, &data, &cases, 5);
    let mut input = vec![0.0; 3 * 784];
    data.gather_into(&cases, &mut input);
    assert_eq!(chains.state(), dbn.propagate_up(&CpuBackend, &input, 1).as_slice(), "starts from the cases propagated up");
    let mut previous = chains.state().to_vec();
    for _ in 0..3 {
        chains.advance(dbn, &CpuBackend, 1);
        assert_ne!(chains.state(), previous.as_slice(), "each step moves the chains");
        previous = chains.state().to_vec();
    }
    assert_eq!(chains.steps_done, 3);
    let images = chains.image_bytes(dbn, &CpuBackend);
    assert_eq!(images.len(), 3 * 784);
    let (low, high) = (images.iter().min().unwrap(), images.iter().max().unwrap());
    assert!(high - low > 100, "the images must show strokes on a background: {low}..{high}");

    let mut random = GenerativeChains::from_random(dbn, &CpuBackend, 4, 9);
    let start = random.state().to_vec();
    random.advance(dbn, &CpuBackend, 2);
    assert_ne!(random.state(), start.as_slice());
}
