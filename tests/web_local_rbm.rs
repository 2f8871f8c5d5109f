#![cfg(target_arch = "wasm32")]
//! The page's Local RBM mode through the wasm API (`LocalRbmTrainer`, src/web/local_rbm.rs)
//! in headless Chromium: config errors name their field; on the CPU each step is
//! `LocalCdTrainer::train_epoch` on the same grating crops bit for bit, and the filters view is
//! `filters_picture` of the same model (a grid of the patch positions); on WebGPU the device
//! session trains, its error falls, and a lost device hands the run to the CPU, which finishes.
//!
//! `CHROMEDRIVER=/usr/bin/chromedriver wasm-pack test --headless --chrome --release --mode
//! no-install --test web_local_rbm`

mod support;

use deepbelief::bench::sparse_coding::grating_images;
use deepbelief::local_rbm::crops::image_crops;
use deepbelief::local_rbm::filters::filters_picture;
use deepbelief::local_rbm::{Geometry, LocalCdSettings, LocalCdTrainer};
use deepbelief::model::VisibleUnits;
use deepbelief::web::{LocalRbmTrainer, Playground};
use serde_json::{json, Value};
use support::web_playground::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn small(backend: &str) -> Value {
    json!({ "backend": backend, "image_size": 16, "patch": 8, "stride": 4, "hidden_per_patch": 6, "cases": 256, "batch_size": 32, "epochs": 3, "learning_rate": 0.02, "seed": 4 })
}

async fn resolve(promise: js_sys::Promise) -> Result<Value, String> {
    match JsFuture::from(promise).await {
        Ok(value) => Ok(json(value)),
        Err(error) => Err(js_sys::Reflect::get(&error, &"message".into()).ok().and_then(|m| m.as_string()).unwrap_or_else(|| format!("{error:?}"))),
    }
}

fn refused(config: Value) -> String {
    match LocalRbmTrainer::new(&Playground::new(), js(config.clone())) {
        Ok(_) => panic!("{config}: accepted"),
        Err(e) => error_message(e),
    }
}

#[wasm_bindgen_test]
fn config_errors_name_their_field() {
    for (config, field) in [
        (json!({ "image_size": 32, "patch": 40 }), "patch"),
        (json!({ "image_size": 30, "patch": 12, "stride": 4 }), "stride"),
        (json!({ "hidden_per_patch": 0 }), "hidden_per_patch"),
        (json!({ "learning_rate": -1 }), "learning_rate"),
        (json!({ "cases": 0 }), "cases"),
        (json!({ "colour": true }), "colour"),
        (json!({ "source": "data" }), "source"),
    ] {
        let message = refused(config.clone());
        assert!(message.contains(field), "{config}: the error does not name {field}: {message}");
    }
}

#[wasm_bindgen_test]
async fn cpu_steps_are_the_trainers_epochs_and_filters_its_picture() {
    let trainer = LocalRbmTrainer::new(&Playground::new(), js(small("cpu"))).unwrap_or_else(|e| panic!("{}", error_message(e)));
    let start = resolve(trainer.start()).await.unwrap();
    assert_eq!((start["backend"].as_str(), start["positions"].as_u64(), start["positions_side"].as_u64(), start["cases"].as_u64()), (Some("cpu"), Some(9), Some(3), Some(256)), "{start}");
    let geometry = Geometry::new(16, 16, 1, 8, 4, 6, false).unwrap();
    let cases = image_crops(&grating_images(8, 64, 4), 16, 256, 4, VisibleUnits::Gaussian).unwrap();
    let settings = LocalCdSettings { visible_units: VisibleUnits::Gaussian, epochs: 3, batch_size: 32, learning_rate: 0.02, seed: 4, ..LocalCdSettings::default() };
    let mut reference = LocalCdTrainer::new(settings, geometry, &cases).unwrap();
    for epoch in 1..=3 {
        let step = resolve(trainer.step()).await.unwrap();
        let expected = reference.train_epoch(&cases).unwrap();
        assert_eq!(step["epoch"].as_u64(), Some(epoch), "{step}");
        assert_eq!(step["reconstruction_error"].as_f64(), Some(expected.reconstruction_error), "epoch {epoch}: {step}");
        assert_eq!(step["done"].as_bool(), Some(epoch == 3), "{step}");
    }
    let errors = trainer.errors();
    assert!(errors[2] < errors[0], "the error did not fall: {errors:?}");
    assert!(resolve(trainer.step()).await.unwrap_err().contains("epochs"), "a fourth step was taken");
    let picture = filters_picture(&reference.model, 4);
    let view = trainer.filters(4).unwrap_or_else(|e| panic!("{}", error_message(e)));
    let field = |name: &str| js_sys::Reflect::get(&view, &name.into()).unwrap();
    assert_eq!((field("width").as_f64(), field("height").as_f64()), (Some(picture.width as f64), Some(picture.height as f64)), "the filters view's size");
    let data = field("data");
    let bytes = js_sys::Uint8ClampedArray::from(data).to_vec();
    let grey: Vec<u8> = bytes.chunks_exact(4).map(|p| p[0]).collect();
    assert_eq!(grey, picture.pixels, "the filters view is not filters_picture of the same model");
}

#[wasm_bindgen_test]
async fn webgpu_trains_and_a_lost_device_hands_over_to_the_cpu() {
    let trainer = LocalRbmTrainer::new(&Playground::new(), js(small("gpu"))).unwrap_or_else(|e| panic!("{}", error_message(e)));
    let start = resolve(trainer.start()).await.unwrap();
    assert_eq!(start["backend"].as_str(), Some("gpu"), "Chromium's WebGPU was not used: {start}");
    let first = resolve(trainer.step()).await.unwrap();
    assert_eq!(first["backend"].as_str(), Some("gpu"), "{first}");
    trainer.simulate_gpu_loss();
    let second = resolve(trainer.step()).await.unwrap();
    assert_eq!((second["epoch"].as_u64(), second["backend"].as_str()), (Some(2), Some("cpu")), "{second}");
    assert!(second["backend_reason"].as_str().is_some_and(|r| r.contains("failed")), "{second}");
    let third = resolve(trainer.step()).await.unwrap();
    assert_eq!(third["done"].as_bool(), Some(true), "{third}");
    let errors = trainer.errors();
    assert!(errors.iter().all(|e| e.is_finite()) && errors[2] < errors[0], "{errors:?}");
}
