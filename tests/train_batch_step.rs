#![cfg(not(target_arch = "wasm32"))]
//! Batch stepping (`CdTrainer::train_next_batch`, `GreedyTrainer::step_batch`): an epoch made
//! one batch at a time is bit for bit the epoch `train_epoch` makes, which is in turn the epoch
//! of the implementation before batch stepping existed (figures recorded from commit bf7552f);
//! checkpoints taken between batch-stepped epochs still resume exactly.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::Dataset;
use deepbelief::train::config::CdConfig;
use deepbelief::train::{BatchEvent, BatchStep, CdTrainer, EpochReport, GreedyEvent, GreedyTrainer, StackConfig};
use support::mnist::mnist;

fn adaptive_cd() -> CdConfig {
    CdConfig { n_hidden: 16, batch_size: Some(50), epochs: 5, init_trials: 2, init_cases: 100, seed: 3, ..CdConfig::deep() }
}

fn persistent_cd() -> CdConfig {
    CdConfig { n_hidden: 16, batch_size: Some(50), epochs: 5, persistent: true, n_persistent_chains: 20, seed: 4, ..CdConfig::hinton() }
}

/// One epoch by single batches; returns the report and how many batches it took.
fn epoch_by_batches(trainer: &mut CdTrainer, data: &Dataset) -> (EpochReport, usize) {
    let mut batches = 0;
    loop {
        batches += 1;
        match trainer.train_next_batch(&CpuBackend, data).unwrap() {
            BatchStep::Batch(report) => {
                assert_eq!(report.batch, batches, "batches count up from 1");
                assert!(trainer.mid_epoch());
            }
            BatchStep::EpochEnded(report) => {
                assert!(!trainer.mid_epoch());
                return (report, batches);
            }
        }
    }
}

fn assert_same_epoch(a: &EpochReport, b: &EpochReport) {
    assert_eq!(a.epoch, b.epoch);
    assert_eq!(a.cd_k, b.cd_k);
    assert_eq!(a.reconstruction_error.to_bits(), b.reconstruction_error.to_bits(), "epoch {}: reconstruction error", a.epoch);
    assert_eq!(a.gradient_cosine.to_bits(), b.gradient_cosine.to_bits());
    assert_eq!(a.gradient_rms.to_bits(), b.gradient_rms.to_bits());
    assert_eq!(a.increment_ratio.to_bits(), b.increment_ratio.to_bits());
    assert_eq!(a.learning_rate.to_bits(), b.learning_rate.to_bits());
    assert_eq!(a.momentum.to_bits(), b.momentum.to_bits());
    assert_eq!(a.epochs_without_improvement, b.epochs_without_improvement);
    assert_eq!(a.stop, b.stop);
}

fn assert_same_model(a: &CdTrainer, b: &CdTrainer) {
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&a.rbm.weights), bits(&b.rbm.weights), "weights");
    assert_eq!(bits(&a.rbm.visible_bias), bits(&b.rbm.visible_bias), "visible biases");
    assert_eq!(bits(&a.rbm.hidden_bias), bits(&b.rbm.hidden_bias), "hidden biases");
}

fn batches_make_the_epoch(config: CdConfig, n_cases: usize, batches_per_epoch: usize) {
    let data = mnist(n_cases);
    let mut whole = CdTrainer::new(config.clone(), &CpuBackend, &data).unwrap();
    let mut stepped = CdTrainer::new(config, &CpuBackend, &data).unwrap();
    for _ in 0..3 {
        let a = whole.train_epoch(&CpuBackend, &data).unwrap();
        let (b, batches) = epoch_by_batches(&mut stepped, &data);
        assert_eq!(batches, batches_per_epoch);
        assert_same_epoch(&a, &b);
        assert_same_model(&whole, &stepped);
    }
}

#[test]
fn single_batches_make_the_epoch_bit_for_bit() {
    batches_make_the_epoch(adaptive_cd(), 300, 6);
    // 310 cases in batches of 50: six full batches and a last one of 10.
    batches_make_the_epoch(adaptive_cd(), 310, 7);
    batches_make_the_epoch(persistent_cd(), 300, 6);
}

/// Figures of `train_epoch` before batch stepping: commit bf7552f, this same run.
#[test]
fn epochs_match_the_implementation_before_batch_stepping() {
    let data = mnist(300);
    let mut trainer = CdTrainer::new(adaptive_cd(), &CpuBackend, &data).unwrap();
    let errors: Vec<f64> = (0..3).map(|_| trainer.train_epoch(&CpuBackend, &data).unwrap().reconstruction_error).collect();
    let weight_sum: f64 = trainer.rbm.weights.iter().map(|&w| w as f64).sum();
    assert_eq!(errors.iter().map(|e| e.to_bits()).collect::<Vec<_>>(), GOLDEN_ERROR_BITS, "errors {errors:?}");
    assert_eq!(weight_sum.to_bits(), GOLDEN_WEIGHT_SUM_BITS, "weight sum {weight_sum}");
}

const GOLDEN_ERROR_BITS: [u64; 3] = [4589366167368377904, 4589320510849829970, 4589229701806025233];
const GOLDEN_WEIGHT_SUM_BITS: u64 = 13839931704998387712;

#[test]
fn an_epoch_begun_by_batches_is_finished_by_train_epoch() {
    let data = mnist(300);
    let mut whole = CdTrainer::new(adaptive_cd(), &CpuBackend, &data).unwrap();
    let mut mixed = CdTrainer::new(adaptive_cd(), &CpuBackend, &data).unwrap();
    let a = whole.train_epoch(&CpuBackend, &data).unwrap();
    for _ in 0..2 {
        assert!(matches!(mixed.train_next_batch(&CpuBackend, &data).unwrap(), BatchStep::Batch(_)));
    }
    let b = mixed.train_epoch(&CpuBackend, &data).unwrap();
    assert_same_epoch(&a, &b);
    assert_same_model(&whole, &mixed);
}

#[test]
fn checkpoints_between_batch_stepped_epochs_resume_exactly() {
    for config in [adaptive_cd(), persistent_cd()] {
        let data = mnist(300);
        let mut original = CdTrainer::new(config.clone(), &CpuBackend, &data).unwrap();
        epoch_by_batches(&mut original, &data);
        let mut resumed = CdTrainer::resume(config, original.checkpoint()).unwrap();
        for _ in 0..2 {
            let (a, _) = epoch_by_batches(&mut original, &data);
            let b = resumed.train_epoch(&CpuBackend, &data).unwrap();
            assert_same_epoch(&a, &b);
        }
        assert_same_model(&original, &resumed);
    }
}

#[test]
fn greedy_step_batch_trains_the_same_stack_as_step() {
    let data = mnist(200);
    let config = StackConfig {
        layers: vec![12, 6],
        rbm: CdConfig { batch_size: Some(50), epochs: 2, init_trials: 2, init_cases: 100, seed: 9, ..CdConfig::deep() },
        monitor_cases: 50,
        ..StackConfig::deep()
    };
    let mut by_epoch = GreedyTrainer::new(config.clone(), &data).unwrap().with_held_out(mnist(250).subset(&(200..250).collect::<Vec<_>>()));
    let mut by_batch = GreedyTrainer::new(config, &data).unwrap().with_held_out(mnist(250).subset(&(200..250).collect::<Vec<_>>()));
    let mut epoch_reports = Vec::new();
    loop {
        match by_epoch.step(&CpuBackend, &data).unwrap() {
            GreedyEvent::Finished => break,
            GreedyEvent::Epoch { report, metrics, .. } => epoch_reports.push((report, metrics.expect("monitor on"))),
            _ => {}
        }
    }
    let (mut batches, mut index) = (0, 0);
    loop {
        match by_batch.step_batch(&CpuBackend, &data).unwrap() {
            BatchEvent::Batch(batch) => {
                assert_eq!(batch.report.batches, 4);
                batches += 1;
            }
            BatchEvent::Greedy(GreedyEvent::Finished) => break,
            BatchEvent::Greedy(GreedyEvent::Epoch { report, metrics, .. }) => {
                let (expected, expected_metrics) = &epoch_reports[index];
                assert_same_epoch(expected, &report);
                let metrics = metrics.expect("monitor on");
                assert_eq!(expected_metrics.free_energy_held_out.expect("held out"), metrics.free_energy_held_out.expect("held out"));
                index += 1;
            }
            BatchEvent::Greedy(_) => {}
        }
    }
    assert_eq!(index, epoch_reports.len());
    // 2 layers × 2 epochs × (4 batches, the last of which is reported as the epoch).
    assert_eq!(batches, 2 * 2 * 3);
    for (a, b) in by_epoch.dbn.layers.iter().zip(&by_batch.dbn.layers) {
        assert_eq!(a.weights, b.weights);
    }
    assert_eq!(by_batch.dbn.layers.len(), 2);
}
