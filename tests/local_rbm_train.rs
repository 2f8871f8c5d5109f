#![cfg(not(target_arch = "wasm32"))]
//! A small local-patch RBM trained by CD-1 on crops of natural-image-like pictures (the
//! sparse-coding bench's Philox gratings plus noise) against its own untrained start and
//! against the best a bias-only model can do (predicting each pixel's mean).

use deepbelief::bench::sparse_coding::grating_images;
use deepbelief::local_rbm::crops::image_crops;
use deepbelief::local_rbm::stack::{plan_stack, propagate, LayerSpec};
use deepbelief::local_rbm::{Geometry, LocalCdSettings, LocalCdTrainer};
use deepbelief::model::VisibleUnits;

fn pixel_variance(cases: &[f32], nv: usize) -> f64 {
    let n = cases.len() / nv;
    let mut total = 0.0;
    for i in 0..nv {
        let mean = (0..n).map(|r| cases[r * nv + i] as f64).sum::<f64>() / n as f64;
        total += (0..n).map(|r| (cases[r * nv + i] as f64 - mean).powi(2)).sum::<f64>() / n as f64;
    }
    total / nv as f64
}

fn train(geometry: Geometry, units: VisibleUnits, settings: LocalCdSettings, epochs: usize) -> (f64, f64, f64) {
    let images = grating_images(6, 64, 11);
    let cases = image_crops(&images, geometry.rows, 1536, 5, units).unwrap();
    let mut trainer = LocalCdTrainer::new(LocalCdSettings { visible_units: units, ..settings }, geometry, &cases).unwrap();
    let before = trainer.model.reconstruction_error(&cases);
    for _ in 0..epochs {
        trainer.train_epoch(&cases).unwrap();
    }
    let after = trainer.model.reconstruction_error(&cases);
    (before, after, pixel_variance(&cases, geometry.n_visible()))
}

#[test]
fn cd1_lowers_reconstruction_error_on_image_crops() {
    let geometry = Geometry::new(16, 16, 1, 8, 4, 24, false).unwrap();
    let (before, after, bias_only) = train(geometry, VisibleUnits::Gaussian, LocalCdSettings { learning_rate: 0.02, ..Default::default() }, 10);
    eprintln!("gaussian local: before {before:.4}, after {after:.4}, bias-only {bias_only:.4}");
    assert!(after < 0.5 * before && after < 0.5 * bias_only, "before {before}, after {after}, bias-only {bias_only}");
}

#[test]
fn tied_layer_also_learns() {
    let geometry = Geometry::new(16, 16, 1, 6, 2, 16, true).unwrap();
    let (before, after, bias_only) = train(geometry, VisibleUnits::Gaussian, LocalCdSettings { learning_rate: 0.05, ..Default::default() }, 10);
    eprintln!("gaussian tied: before {before:.4}, after {after:.4}, bias-only {bias_only:.4}");
    assert!(after < 0.5 * before && after < 0.5 * bias_only, "before {before}, after {after}, bias-only {bias_only}");
}

#[test]
fn binary_layer_learns_and_a_second_layer_stacks_on_its_feature_map() {
    let plan = plan_stack(16, 16, 1, &LayerSpec::parse_list("local:8:4:24,local:2:1:16,dense:20").unwrap()).unwrap();
    let images = grating_images(6, 64, 11);
    let cases = image_crops(&images, 16, 1536, 5, VisibleUnits::Bernoulli).unwrap();
    let mut layers = Vec::new();
    let mut input = cases.clone();
    for (k, g) in plan.iter().enumerate() {
        let settings = LocalCdSettings { visible_units: VisibleUnits::Bernoulli, learning_rate: 0.5, sparsity_penalty: 0.01, ..Default::default() };
        let mut trainer = LocalCdTrainer::new(settings, *g, &input).unwrap();
        let before = trainer.model.reconstruction_error(&input);
        for _ in 0..6 {
            trainer.train_epoch(&input).unwrap();
        }
        let after = trainer.model.reconstruction_error(&input);
        let bias_only = pixel_variance(&input, g.n_visible());
        eprintln!("binary layer {}: before {before:.4}, after {after:.4}, bias-only {bias_only:.4}", k + 1);
        assert!(after < 0.8 * before && after < bias_only, "layer {}: before {before}, after {after}, bias-only {bias_only}", k + 1);
        layers.push(trainer.model);
        input = propagate(&layers[k..], &input);
        assert_eq!(input.len(), 1536 * g.n_hidden());
    }
    assert_eq!(propagate(&layers, &cases), input, "propagating the whole stack = layer by layer");
}

/// The default settings at a Raina-like overlap (24×24 patches 8 apart at 48², 192 units per
/// patch, each pixel under 9 patches: fan-in 1,728) lower the error every epoch; the old fixed
/// rate 0.02 went 1.2 → 5,000 → 1.8e8 here.
#[test]
fn default_rate_learns_at_rainas_overlap() {
    use deepbelief::local_rbm::{default_learning_rate, visible_fan_in};
    let g = Geometry::new(48, 48, 1, 24, 8, 192, false).unwrap();
    assert_eq!(visible_fan_in(&g), 9 * 192);
    assert_eq!(default_learning_rate(&Geometry::new(16, 16, 1, 8, 4, 24, false).unwrap(), VisibleUnits::Gaussian), 0.02, "small overlaps keep the measured 0.02");
    let cases = image_crops(&grating_images(8, 128, 1), 48, 768, 1, VisibleUnits::Gaussian).unwrap();
    let settings = LocalCdSettings { batch_size: 64, ..LocalCdSettings::for_layer(&g, VisibleUnits::Gaussian) };
    let mut trainer = LocalCdTrainer::new(settings, g, &cases).unwrap();
    let mut errors = vec![trainer.model.reconstruction_error(&cases)];
    for _ in 0..3 {
        trainer.train_epoch(&cases).unwrap();
        errors.push(trainer.model.reconstruction_error(&cases));
    }
    eprintln!("default rate {}: errors {errors:?}", trainer.settings.learning_rate);
    assert!(errors.windows(2).all(|w| w[1] < w[0]) && errors[3] < 0.9 * errors[0], "errors {errors:?}");
}
