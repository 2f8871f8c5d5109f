#![cfg(not(target_arch = "wasm32"))]
//! The engine seam's own rules (issue 16), which the CLI and the page both go through: the
//! backend choice (`auto` skips software adapters, `gpu` takes any and explains a missing one)
//! and the fold of training events into a `TrainingRun`. The GPU cases run on Mesa lavapipe
//! (a software adapter): `WGPU_BACKEND=vulkan VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json`.

use deepbelief::engine::layer::LayerEvent;
use deepbelief::engine::run::TrainingRun;
use deepbelief::engine::{is_software_adapter, Engine, EngineChoice};
use deepbelief::train::{EpochReport, GreedyEvent, StopReason};

#[test]
fn software_adapters_are_recognised_by_type_or_name() {
    assert!(is_software_adapter("Cpu", ""));
    assert!(is_software_adapter("Other", "google swiftshader"));
    assert!(is_software_adapter("Other", "llvmpipe (LLVM 15.0.6, 256 bits)"));
    assert!(is_software_adapter("Other", "Microsoft Basic Render Driver WARP"));
    assert!(!is_software_adapter("DiscreteGpu", "NVIDIA H100 80GB HBM3"));
    assert!(!is_software_adapter("Other", "apple m2"));
}

fn choose(choice: EngineChoice, device: Result<(), &'static str>) -> Result<(Engine, Option<String>), String> {
    let chosen = pollster::block_on(Engine::choose_with(choice, None, || async move {
        match device {
            Ok(()) => Engine::gpu().await,
            Err(e) => Err(e.to_string()),
        }
    }))?;
    Ok((chosen.engine, chosen.notice))
}

#[test]
fn cpu_never_asks_for_a_device_and_a_missing_one_is_explained() {
    let called = std::cell::Cell::new(false);
    let chosen = pollster::block_on(Engine::choose_with(EngineChoice::Cpu, None, || async {
        called.set(true);
        Err::<Engine, String>("unreachable".into())
    }))
    .unwrap();
    assert!(!chosen.engine.is_gpu() && chosen.notice.is_none() && !called.get());

    let (engine, notice) = choose(EngineChoice::Auto, Err("no GPU adapter available")).unwrap();
    assert!(!engine.is_gpu());
    assert!(notice.unwrap().contains("no GPU adapter available"));
    assert_eq!(choose(EngineChoice::Gpu, Err("no GPU adapter available")).err().as_deref(), Some("no GPU adapter available"));
}

#[test]
fn auto_skips_the_software_adapter_that_gpu_takes() {
    if pollster::block_on(Engine::gpu()).is_err() {
        eprintln!("skipped: no wgpu adapter (install mesa-vulkan-drivers for lavapipe)");
        return;
    }
    let (engine, notice) = choose(EngineChoice::Auto, Ok(())).unwrap();
    assert!(!engine.is_gpu(), "lavapipe is a software adapter");
    assert!(notice.as_deref().is_some_and(|n| n.contains("software")), "{notice:?}");
    let (engine, notice) = choose(EngineChoice::Gpu, Ok(())).unwrap();
    assert!(engine.is_gpu() && notice.is_none());
    // The page names the adapter where wgpu cannot: that name decides too.
    let chosen = pollster::block_on(Engine::choose_with(EngineChoice::Auto, Some("google swiftshader"), Engine::gpu)).unwrap();
    assert!(chosen.notice.unwrap().contains("google swiftshader"));
}

fn report(epoch: usize, stop: Option<StopReason>) -> EpochReport {
    EpochReport {
        epoch,
        cd_k: 1,
        reconstruction_error: epoch as f64,
        learning_rate: 0.1,
        momentum: 0.5,
        gradient_cosine: 0.0,
        gradient_rms: 0.0,
        increment_ratio: 0.0,
        epochs_without_improvement: 0,
        seconds: 0.0,
        cases_per_second: 0.0,
        stop,
    }
}

#[test]
fn training_run_folds_greedy_and_device_events_per_layer() {
    let mut run = TrainingRun::default();
    run.record(&GreedyEvent::LayerStarted { layer: 0, trial_errors: vec![0.3, 0.2], best_trial: 1 }, None);
    run.record(&GreedyEvent::Epoch { layer: 0, report: report(1, None), metrics: None }, None);
    run.record_layer_event(0, &LayerEvent::Epoch { report: report(2, None), metrics: None });
    // The device failed after epoch 1's state came back: epoch 2 is redone on the CPU.
    run.record_layer_event(0, &LayerEvent::FellBack { message: "lost".into(), resumed_at: 1 });
    run.record_layer_event(0, &LayerEvent::Epoch { report: report(2, Some(StopReason::MaxEpochs)), metrics: None });
    run.record(&GreedyEvent::LayerFinished { layer: 0 }, None);
    // A cancelled layer reports its stop only through the step that closes it.
    run.record(&GreedyEvent::LayerStarted { layer: 1, trial_errors: vec![0.1], best_trial: 0 }, None);
    run.record(&GreedyEvent::LayerFinished { layer: 1 }, Some(StopReason::Cancelled));

    let outcomes = run.outcomes();
    assert_eq!(outcomes.len(), 2);
    assert_eq!(outcomes[0].epochs.iter().map(|e| e.epoch).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(outcomes[0].stop, StopReason::MaxEpochs);
    assert_eq!(outcomes[0].init_error, 0.2, "without a measured initial error the best trial's stands for it");
    assert_eq!(outcomes[1].stop, StopReason::Cancelled);
    // A new run from layer 0 replaces what was there.
    run.record(&GreedyEvent::LayerStarted { layer: 0, trial_errors: vec![0.5], best_trial: 0 }, None);
    assert_eq!(run.layers.len(), 1);
    assert!(run.layers[0].epochs.is_empty());
}
