//! Local-patch RBM parity (issue 19, Raina et al. 2009 §5): a two-layer stack (an untied
//! Gaussian local layer over 16 × 16 grating crops, patches of 8 at stride 4, then a dense
//! binary layer over its 3 × 3 × 6 feature map) trained through `Engine::train_local_stack` on
//! the engine's backend — on a device: CD-1 resident there, the second layer's input propagated
//! on the device — against the CPU engine's run of the same stack, and against references
//! outside the engine: the first layer's hidden probabilities written out here as f64 loops
//! over the dense RBM the local layer is (`to_dense`), and training taking the first layer's
//! mean-field reconstruction error below 0.8 of the bias-only error (the data's per-unit
//! variance), the dense layer's no higher than it.
//! And a device lost after the first epoch: the stack resumes on the CPU from the state
//! downloaded after that epoch, and ends like an all-CPU run.
//!
//! Tolerances: one device CD-1 batch equals the CPU's within 2e-5 (tests/gpu_local_rbm.rs); a
//! stack's parameters after a few epochs each within [`STACK_TOLERANCE`] of the CPU's largest
//! entry (a Bernoulli sample whose probability sits within f32 noise of its uniform can flip,
//! which moves a few weights by one learning-rate step).

use super::max_gap;
use crate::engine_suite::Harness;
use deepbelief::bench::sparse_coding::grating_images;
use deepbelief::engine::local_stack::LocalStackRun;
use deepbelief::engine::Engine;
use deepbelief::local_rbm::crops::image_crops;
use deepbelief::local_rbm::stack::{plan_stack, propagate, LayerSpec};
use deepbelief::local_rbm::{Geometry, LocalCdSettings, LocalRbm};
use deepbelief::model::VisibleUnits;

const STACK_TOLERANCE: f64 = 1e-3;
const LOOPS_TOLERANCE: f64 = 1e-5;
const SIDE: usize = 16;
const CASES: usize = 192;
const BATCH: usize = 32;

fn problem(epochs: usize) -> (Vec<Geometry>, Vec<LocalCdSettings>, Vec<f32>) {
    let specs = [LayerSpec::Local { patch: 8, stride: 4, units: 6, tied: false }, LayerSpec::Dense { units: 10 }];
    let plan = plan_stack(SIDE, SIDE, 1, &specs).expect("a valid plan");
    let settings = (0..plan.len())
        .map(|k| LocalCdSettings {
            visible_units: if k == 0 { VisibleUnits::Gaussian } else { VisibleUnits::Bernoulli },
            epochs,
            batch_size: BATCH,
            learning_rate: if k == 0 { 0.1 } else { 0.2 },
            momentum_switch_epoch: 2,
            seed: 7 + k as u64,
            ..LocalCdSettings::default()
        })
        .collect();
    let cases = image_crops(&grating_images(4, 48, 3), SIDE, CASES, 5, VisibleUnits::Gaussian).expect("crops");
    (plan, settings, cases)
}

/// The largest gap of any parameter array, relative to the reference array's largest entry.
fn layer_gap(layer: &LocalRbm, reference: &LocalRbm) -> f64 {
    let scale = |v: &[f32]| v.iter().fold(0.0f64, |m, &x| m.max(f64::from(x).abs())).max(1e-30);
    [(&layer.weights, &reference.weights), (&layer.hidden_bias, &reference.hidden_bias), (&layer.visible_bias, &reference.visible_bias)]
        .iter()
        .map(|(a, b)| max_gap(a, b) / scale(b))
        .fold(0.0, f64::max)
}

fn stack_gap(run: &LocalStackRun, reference: &LocalStackRun) -> f64 {
    run.layers.iter().zip(&reference.layers).map(|(a, b)| layer_gap(a, b)).fold(0.0, f64::max)
}

/// Each unit's variance over the cases: the error of reconstructing every case by the means.
fn bias_only_error(cases: &[f32], n: usize) -> f64 {
    let rows = cases.len() / n;
    let mut total = 0.0;
    for i in 0..n {
        let mean = (0..rows).map(|r| f64::from(cases[r * n + i])).sum::<f64>() / rows as f64;
        total += (0..rows).map(|r| (f64::from(cases[r * n + i]) - mean).powi(2)).sum::<f64>();
    }
    total / cases.len() as f64
}

pub async fn local_rbm_stack_matches_cpu_and_loops<H: Harness>(h: &H) -> Result<String, String> {
    let (plan, settings, cases) = problem(3);
    let mut epochs_seen = 0;
    let run = h.engine().train_local_stack(&plan, &settings, &cases, |_| epochs_seen += 1).await?;
    let expected_backend = if h.engine().is_gpu() { "gpu" } else { "cpu" };
    ensure!(run.fell_back.is_none() && run.backends.iter().all(|b| *b == expected_backend), "the stack ran on {:?} (fell back: {:?}), expected {expected_backend}", run.backends, run.fell_back);
    ensure!(epochs_seen == 6, "{epochs_seen} epochs reported, expected 3 per layer");
    let cpu = Engine::Cpu.train_local_stack(&plan, &settings, &cases, |_| {}).await?;
    let gap = stack_gap(&run, &cpu);
    ensure!(gap <= STACK_TOLERANCE, "the stack's parameters are {gap:.2e} (relative) from the CPU engine's");

    // Layer 1's hidden probabilities by f64 loops over the dense RBM it is.
    let dense = run.layers[0].to_dense();
    let (nv, nh) = (dense.n_visible, dense.n_hidden);
    let few = 4;
    let engine_hidden = propagate(&run.layers[..1], &cases[..few * nv]);
    let mut loops_gap = 0.0f64;
    for r in 0..few {
        for j in 0..nh {
            let x: f64 = f64::from(dense.hidden_bias[j]) + (0..nv).map(|i| f64::from(cases[r * nv + i]) * f64::from(dense.weights[i * nh + j])).sum::<f64>();
            loops_gap = loops_gap.max((1.0 / (1.0 + (-x).exp()) - f64::from(engine_hidden[r * nh + j])).abs());
        }
    }
    ensure!(loops_gap <= LOOPS_TOLERANCE, "layer 1's hidden probabilities are {loops_gap:.1e} from the f64 loops");

    // The first layer reconstructs its input better than its means do; the dense layer, over
    // sparse features of little variance (target 0.05), no worse.
    let mut input = cases.clone();
    let mut errors = Vec::new();
    for (k, layer) in run.layers.iter().enumerate() {
        let (error, floor) = (layer.reconstruction_error(&input), bias_only_error(&input, layer.geometry.n_visible()));
        let bound = if k == 0 { 0.8 * floor } else { 1.01 * floor };
        ensure!(error < bound, "layer {}: reconstruction error {error:.4} not below {bound:.4} (bias-only {floor:.4})", k + 1);
        errors.push(format!("{error:.4} (bias-only {floor:.4})"));
        input = propagate(std::slice::from_ref(layer), &input);
    }
    Ok(format!("local 16² p8 s4 × 6 + dense 10, 3 epochs each on {expected_backend}: {gap:.1e} from the CPU engine, {loops_gap:.1e} from f64 loops; errors {}", errors.join(", ")))
}

pub async fn local_rbm_device_loss_resumes_on_cpu<H: Harness>(h: &H) -> Result<String, String> {
    if !h.engine().is_gpu() {
        return super::skipped("no device to lose on the CPU");
    }
    let (plan, settings, cases) = problem(3);
    let mut events = Vec::new();
    let run = h
        .engine()
        .train_local_stack(&plan, &settings, &cases, |event| {
            events.push((event.layer, event.report.epoch, event.backend, event.fell_back.map(str::to_string)));
            if event.layer == 0 && event.report.epoch == 1 {
                h.engine().simulate_loss();
            }
        })
        .await?;
    let why = run.fell_back.clone().ok_or("the run did not report leaving the device")?;
    ensure!(why.contains("after epoch 1"), "the fall-back does not resume from epoch 1's download: {why}");
    ensure!(run.backends == ["cpu", "cpu"], "after the loss the layers finished on {:?}", run.backends);
    let backends: Vec<(usize, usize, &str)> = events.iter().map(|e| (e.0, e.1, e.2)).collect();
    ensure!(backends == [(0, 1, "gpu"), (0, 2, "cpu"), (0, 3, "cpu"), (1, 1, "cpu"), (1, 2, "cpu"), (1, 3, "cpu")], "epochs ran as {backends:?}");
    ensure!(events[1].3.is_some() && events.iter().filter(|e| e.3.is_some()).count() == 1, "the fall-back's message came with {:?}", events.iter().map(|e| e.3.is_some()).collect::<Vec<_>>());
    let cpu = Engine::Cpu.train_local_stack(&plan, &settings, &cases, |_| {}).await?;
    let gap = stack_gap(&run, &cpu);
    ensure!(gap <= STACK_TOLERANCE, "after the loss the stack is {gap:.2e} (relative) from an all-CPU run");
    Ok(format!("lost after layer 1's epoch 1 ({why}); the CPU finished the stack {gap:.1e} from an all-CPU run"))
}
