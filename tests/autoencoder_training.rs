#![cfg(not(target_arch = "wasm32"))]
//! The UFLDL exercise in miniature: a 64→25→64 sparse autoencoder trained by 400 L-BFGS
//! iterations on 10,000 normalised 8×8 patches of synthetic images (oriented sine gratings
//! plus noise, made here: no data files), and the other two optimisers on the same cost.

use deepbelief::autoencoder::lbfgs::LbfgsSettings;
use deepbelief::autoencoder::sgd::SgdSettings;
use deepbelief::autoencoder::{train, Autoencoder, CostSettings, Method, TrainReport};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::patches::{normalise_patches, sample_patches, GreyImage};
use deepbelief::supervised::conjugate_gradient::CgSettings;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Images of three gratings each (random orientation, wavelength 4–16 px, phase), plus
/// uniform noise of a fifth of the signal's amplitude.
fn grating_images(count: usize, side: usize, seed: u64) -> Vec<GreyImage> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let gratings: Vec<(f32, f32, f32, f32)> = (0..3)
                .map(|_| {
                    let angle = rng.random::<f32>() * std::f32::consts::PI;
                    let frequency = std::f32::consts::TAU / (4.0 + 12.0 * rng.random::<f32>());
                    (angle.cos() * frequency, angle.sin() * frequency, rng.random::<f32>() * std::f32::consts::TAU, 0.5 + rng.random::<f32>())
                })
                .collect();
            let pixels = (0..side * side)
                .map(|k| {
                    let (y, x) = ((k / side) as f32, (k % side) as f32);
                    let signal: f32 = gratings.iter().map(|&(fx, fy, phase, amplitude)| amplitude * (fx * x + fy * y + phase).sin()).sum();
                    signal + 0.6 * (rng.random::<f32>() - 0.5)
                })
                .collect();
            GreyImage { rows: side, cols: side, pixels }
        })
        .collect()
}

fn exercise_patches() -> Vec<f32> {
    let images = grating_images(6, 128, 11);
    let mut patches = sample_patches(&images, 8, 10_000, 1).unwrap();
    normalise_patches(&mut patches).unwrap();
    patches.values
}

fn run(data: &[f32], seed: u64, method: &Method) -> (Autoencoder, TrainReport) {
    let mut model = Autoencoder::initialise(64, 25, seed);
    let report = train(&CpuBackend, &mut model, data, &CostSettings::ufldl(), method, &mut |_, _| true).unwrap();
    (model, report)
}

#[test]
fn lbfgs_trains_the_exercise_network_deterministically() {
    let data = exercise_patches();
    let method = Method::Lbfgs(LbfgsSettings::default());
    let (model, report) = run(&data, 1, &method);
    // At the start every ρ̂ ≈ 0.5 against ρ = 0.01: β·25·KL(0.01‖0.5) ≈ 48 dominates J.
    assert!(report.initial.total > 30.0, "initial J {}", report.initial.total);
    assert_eq!(report.stop, "max_iterations", "{report:?}");
    assert_eq!((report.iterations, report.history.len()), (400, 400));
    assert!(report.evaluations >= 400 && report.evaluations < 1000, "{} evaluations", report.evaluations);
    assert!(report.history.windows(2).all(|w| w[1] <= w[0]), "J rose during L-BFGS");
    let last = &report.last;
    assert_eq!(last.total, *report.history.last().unwrap(), "the model holds the last iterate");
    assert!(last.total < 0.02 * report.initial.total, "J {} → {}", report.initial.total, last.total);
    // Sparse: mean activation near ρ = 0.01, and the reconstruction far better than the
    // constant 0.5 output's (½·64·E[(x − 0.5)²]).
    let mean_rho = last.mean_activation.iter().map(|&r| f64::from(r)).sum::<f64>() / 25.0;
    assert!(mean_rho < 0.03, "mean ρ̂ {mean_rho}");
    let constant: f64 = data.iter().map(|&x| 0.5 * (f64::from(x) - 0.5).powi(2)).sum::<f64>() / 10_000.0;
    assert!(last.reconstruction < 0.5 * constant, "reconstruction {} vs constant output {constant}", last.reconstruction);
    assert!(report.non_finite_trial.is_none());

    let (again, report_again) = run(&data, 1, &method);
    assert_eq!(again, model, "same seed, different weights");
    assert_eq!(report_again.history.iter().map(|j| j.to_bits()).collect::<Vec<_>>(), report.history.iter().map(|j| j.to_bits()).collect::<Vec<_>>());
    let (other, _) = run(&data, 2, &Method::Lbfgs(LbfgsSettings { max_iterations: 3, ..LbfgsSettings::default() }));
    assert_ne!(other.w1, model.w1);
}

#[test]
fn conjugate_gradient_and_sgd_lower_the_same_cost() {
    let data = exercise_patches();
    let (_, cg) = run(&data, 1, &Method::ConjugateGradient(CgSettings { max_iterations: 40, ..CgSettings::default() }));
    assert!(cg.last.total < 0.1 * cg.initial.total, "CG: J {} → {}", cg.initial.total, cg.last.total);
    assert!(cg.history.windows(2).all(|w| w[1] <= w[0]), "J rose during CG");
    let sgd = SgdSettings { epochs: 5, batch_size: 500, learning_rate: 0.05, momentum: 0.9, seed: 3 };
    let (_, report) = run(&data, 1, &Method::Sgd(sgd));
    assert_eq!(report.history.len(), 5);
    assert_eq!(report.evaluations, 5 * 20);
    assert!(report.last.total < 0.5 * report.initial.total, "SGD: J {} → {}", report.initial.total, report.last.total);
}
