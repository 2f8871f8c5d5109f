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
