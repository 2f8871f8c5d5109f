#![cfg(not(target_arch = "wasm32"))]
//! `CdTrainer::checkpoint` / `resume`: a trainer resumed from a checkpoint continues bit for bit
//! as the original would, for CD with the adaptive schedule and for PCD; a checkpoint that does
//! not fit the settings is refused by name.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::train::config::CdConfig;
use deepbelief::train::CdTrainer;
use support::mnist::mnist;

fn resumed_run_is_identical(config: CdConfig) {
    let data = mnist(300);
    let mut original = CdTrainer::new(config.clone(), &CpuBackend, &data).unwrap();
    original.train_epoch(&CpuBackend, &data).unwrap();
    let mut resumed = CdTrainer::resume(config, original.checkpoint()).unwrap();
    for _ in 0..2 {
        let a = original.train_epoch(&CpuBackend, &data).unwrap();
        let b = resumed.train_epoch(&CpuBackend, &data).unwrap();
        assert_eq!(a.reconstruction_error, b.reconstruction_error);
        assert_eq!(a.gradient_cosine, b.gradient_cosine);
    }
    assert_eq!(original.rbm.weights, resumed.rbm.weights);
    assert_eq!(original.rates.learning_rate, resumed.rates.learning_rate);
}

#[test]
fn adaptive_cd_resumes_exactly() {
    resumed_run_is_identical(CdConfig { n_hidden: 16, batch_size: Some(50), epochs: 5, init_trials: 2, init_cases: 100, seed: 3, ..CdConfig::default() });
}

#[test]
fn persistent_cd_resumes_exactly() {
    resumed_run_is_identical(CdConfig { n_hidden: 16, batch_size: Some(50), epochs: 5, persistent: true, n_persistent_chains: 20, seed: 4, ..CdConfig::hinton() });
}

#[test]
fn mismatched_checkpoint_is_refused() {
    let data = mnist(100);
    let config = CdConfig { n_hidden: 8, batch_size: Some(50), init_trials: 1, ..CdConfig::hinton() };
    let trainer = CdTrainer::new(config.clone(), &CpuBackend, &data).unwrap();
    let mut checkpoint = trainer.checkpoint();
    checkpoint.weight_velocity.pop();
    let error = CdTrainer::resume(config.clone(), checkpoint).err().expect("a short velocity must be refused");
    assert!(error.to_string().contains("8"), "{error}");
    let pcd = CdConfig { persistent: true, ..config };
    assert!(CdTrainer::resume(pcd, trainer.checkpoint()).is_err(), "PCD settings need persistent chains in the checkpoint");
}
