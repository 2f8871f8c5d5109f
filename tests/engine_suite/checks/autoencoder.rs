//! Sparse autoencoder parity (issue 17): `J`, its terms, every gradient block and ρ̂ from the
//! engine's side (the device's resident cost where the engine has a device, awaited through
//! `engine::autoencoder_session`) against the CPU reference and against the cost and gradient
//! written out here as plain f64 loops; and a few L-BFGS iterations through the session
//! (`Lbfgs` stepped with its vectors on the device where the engine has one, else the host's),
//! each iterate's J the CPU reference's at its parameters, against the CPU session, which must
//! equal the sync `lbfgs::minimise` on the CPU cost bit for bit; and a device lost mid-run
//! resuming on the CPU from the last downloaded iterate. The data are stroke images, 8 × 8 and 7 × 7, with odd hidden sizes and case counts past
//! a workgroup's 256 lanes.
//!
//! Tolerances: the engines multiply in f32 and sum `J`'s terms in f32 (device) or f64 (CPU), so
//! `J` agrees to 1e-5 relative and each gradient block to 1e-4 of its largest entry (what
//! tests/gpu_autoencoder.rs allows), ρ̂ to 1e-5, at every point of a run too. Two runs from the
//! same start agree pointwise only while their line searches make the same choices: the first
//! line search can split the device and CPU runs by 30% (it does so for the CPU alone on
//! reordered cases), so a device run is held to end within 10% of the CPU run's J. A run the
//! CPU resumes after a lost device starts afresh from the last downloaded iterate (the pairs
//! were on the device): it must be exactly the CPU's own run from that point.

use super::close;
use crate::engine_suite::Harness;
use crate::support::check::values;
use crate::support::gpu_eval::stroke_bytes;
use deepbelief::autoencoder::lbfgs::{self, IterationOutcome, Lbfgs, LbfgsSettings};
use deepbelief::autoencoder::stepwise::{block_on, Blocking};
use deepbelief::autoencoder::optimise::CostObjective;
use deepbelief::autoencoder::{cost, Autoencoder, CostSettings, Workspace};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::engine::autoencoder_session::{evaluate, AutoencoderSession, CostTerms, Evaluation, Optimiser};
use deepbelief::engine::Engine;

const J_TOLERANCE: f64 = 1e-5;
const GRADIENT_TOLERANCE: f64 = 1e-4;
const RHO_TOLERANCE: f64 = 1e-5;

fn settings() -> CostSettings {
    CostSettings { weight_decay: 3e-3, sparsity_target: 0.1, sparsity_weight: 3.0 }
}

/// `cases` stroke images of `n_visible` pixels in [0, 1].
fn strokes(cases: usize, n_visible: usize, seed: u32) -> Vec<f32> {
    let data = stroke_bytes(cases, n_visible, seed);
    let mut values = vec![0.0; cases * n_visible];
    data.gather_into(&(0..cases).collect::<Vec<_>>(), &mut values);
    values
}

/// UFLDL's initial weights with biases in ±0.5, so that every block is at a generic point.
fn model(n_visible: usize, n_hidden: usize, seed: u32) -> Autoencoder {
    let mut model = Autoencoder::initialise(n_visible, n_hidden, u64::from(seed));
    model.b1 = values(n_hidden, seed + 10, -0.5, 0.5);
    model.b2 = values(n_visible, seed + 11, -0.5, 0.5);
    model
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The cost, its gradient (flat: W1, W2, b1, b2) and ρ̂ as UFLDL's `sparseAutoencoderCost`
/// writes them, one case at a time in f64.
fn by_loops(model: &Autoencoder, data: &[f32], s: &CostSettings) -> Evaluation {
    let (v, h) = (model.n_visible, model.n_hidden);
    let m = data.len() / v;
    let w1 = |i: usize, j: usize| f64::from(model.w1[i * h + j]);
    let w2 = |i: usize, j: usize| f64::from(model.w2[i * h + j]);
    let case = |k: usize| data[k * v..(k + 1) * v].iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
    let hidden = |x: &[f64]| (0..h).map(|j| sigmoid(f64::from(model.b1[j]) + (0..v).map(|i| w1(i, j) * x[i]).sum::<f64>())).collect::<Vec<f64>>();
    let output = |a: &[f64]| (0..v).map(|i| sigmoid(f64::from(model.b2[i]) + (0..h).map(|j| w2(i, j) * a[j]).sum::<f64>())).collect::<Vec<f64>>();
    let mut rho_hat = vec![0.0; h];
    for k in 0..m {
        hidden(&case(k)).iter().zip(&mut rho_hat).for_each(|(a, r)| *r += a / m as f64);
    }
    let (rho, beta, lambda) = (s.sparsity_target, s.sparsity_weight, s.weight_decay);
    let sparsity_term: Vec<f64> = rho_hat.iter().map(|&r| beta * (-rho / r + (1.0 - rho) / (1.0 - r))).collect();
    let mut squared_error = 0.0;
    let (mut g_w1, mut g_w2, mut g_b1, mut g_b2) = (vec![0.0; v * h], vec![0.0; v * h], vec![0.0; h], vec![0.0; v]);
    for k in 0..m {
        let x = case(k);
        let a = hidden(&x);
        let y = output(&a);
        let delta3: Vec<f64> = (0..v).map(|i| (y[i] - x[i]) * y[i] * (1.0 - y[i])).collect();
        squared_error += (0..v).map(|i| (y[i] - x[i]).powi(2)).sum::<f64>();
        let delta2: Vec<f64> = (0..h).map(|j| ((0..v).map(|i| w2(i, j) * delta3[i]).sum::<f64>() + sparsity_term[j]) * a[j] * (1.0 - a[j])).collect();
        for i in 0..v {
            for j in 0..h {
                g_w1[i * h + j] += x[i] * delta2[j] / m as f64;
                g_w2[i * h + j] += delta3[i] * a[j] / m as f64;
            }
            g_b2[i] += delta3[i] / m as f64;
        }
        g_b1.iter_mut().zip(&delta2).for_each(|(g, d)| *g += d / m as f64);
    }
    let squares: f64 = model.w1.iter().chain(&model.w2).map(|&w| f64::from(w).powi(2)).sum();
    g_w1.iter_mut().zip(&model.w1).chain(g_w2.iter_mut().zip(&model.w2)).for_each(|(g, &w)| *g += lambda * f64::from(w));
    let kl: f64 = rho_hat.iter().map(|&r| rho * (rho / r).ln() + (1.0 - rho) * ((1.0 - rho) / (1.0 - r)).ln()).sum();
    let (reconstruction, weight_decay, sparsity) = (0.5 * squared_error / m as f64, 0.5 * lambda * squares, beta * kl);
    let cost = CostTerms { total: reconstruction + weight_decay + sparsity, reconstruction, weight_decay, sparsity };
    let gradient = [g_w1, g_w2, g_b1, g_b2].concat();
    Evaluation { cost, gradient, mean_activation: rho_hat.iter().map(|&r| r as f32).collect() }
}

/// The largest gap of `evaluation` from `reference`, relative as the tolerances say: J's terms,
/// each gradient block to its largest entry, ρ̂ absolute.
fn compare(what: &str, evaluation: &Evaluation, reference: &Evaluation, model: &Autoencoder) -> Result<(f64, f64), String> {
    let (e, r) = (&evaluation.cost, &reference.cost);
    for (term, a, b) in [("J", e.total, r.total), ("the reconstruction term", e.reconstruction, r.reconstruction), ("the weight decay", e.weight_decay, r.weight_decay), ("the sparsity penalty", e.sparsity, r.sparsity)] {
        ensure!(close(a, b, J_TOLERANCE), "{what}: {term} {a} vs {b} (relative {:.2e})", (a - b).abs() / b.abs());
    }
    ensure!(evaluation.gradient.len() == reference.gradient.len(), "{what}: {} gradient entries, expected {}", evaluation.gradient.len(), reference.gradient.len());
    let mut at = 0;
    let mut worst = 0.0f64;
    for (name, block) in model.blocks() {
        let (a, b) = (&evaluation.gradient[at..at + block.len()], &reference.gradient[at..at + block.len()]);
        let scale = b.iter().fold(0.0f64, |m, g| m.max(g.abs())).max(1e-30);
        let (k, gap) = a.iter().zip(b).map(|(x, y)| (x - y).abs()).enumerate().fold((0, 0.0f64), |best, (k, g)| if g > best.1 { (k, g) } else { best });
        ensure!(gap <= GRADIENT_TOLERANCE * scale, "{what}: gradient {name}[{k}] {} vs {} (gap {gap:.2e}, {:.2e} of the block's largest)", a[k], b[k], gap / scale);
        worst = worst.max(gap / scale);
        at += block.len();
    }
    ensure!(evaluation.mean_activation.len() == reference.mean_activation.len(), "{what}: {} ρ̂ values, expected {}", evaluation.mean_activation.len(), reference.mean_activation.len());
    let rho_gap = super::max_gap(&evaluation.mean_activation, &reference.mean_activation);
    ensure!(rho_gap <= RHO_TOLERANCE, "{what}: ρ̂ differs by {rho_gap:.2e}");
    Ok(((e.total - r.total).abs() / r.total.abs(), worst))
}

pub async fn autoencoder_cost_matches_loops_and_cpu<H: Harness>(h: &H) -> Result<String, String> {
    let mut report = Vec::new();
    for (v, hidden, cases, seed) in [(64, 25, 300, 3), (49, 16, 129, 8)] {
        let (model, data) = (model(v, hidden, seed), strokes(cases, v, seed));
        let evaluation = evaluate(h.engine(), &model, &data, &settings()).await?;
        let cpu = evaluate(&Engine::Cpu, &model, &data, &settings()).await?;
        let loops = by_loops(&model, &data, &settings());
        let shape = format!("{v}→{hidden}→{v} × {cases}");
        let (j_loops, g_loops) = compare(&format!("{shape}, against the f64 loops"), &evaluation, &loops, &model)?;
        let (j_cpu, g_cpu) = compare(&format!("{shape}, against the CPU engine"), &evaluation, &cpu, &model)?;
        compare(&format!("{shape}, the CPU engine against the f64 loops"), &cpu, &loops, &model)?;
        report.push(format!("{shape}: J {:.6}; relative gaps J/gradient: loops {j_loops:.1e}/{g_loops:.1e}, CPU {j_cpu:.1e}/{g_cpu:.1e}", evaluation.cost.total));
    }
    Ok(report.join("; "))
}

const ITERATIONS: usize = 8;

fn lbfgs_settings() -> LbfgsSettings {
    LbfgsSettings { max_iterations: ITERATIONS, ..LbfgsSettings::default() }
}

/// Starts a session on `engine` and steps it `steps` times: J at the start and after each step,
/// each checked against the CPU reference's J at the parameters the session then holds (so the
/// J reported is the accepted point's, whoever evaluated it).
async fn trajectory(engine: &Engine, model: &Autoencoder, data: &[f32], steps: usize) -> Result<(AutoencoderSession, Vec<f64>), String> {
    let mut session = AutoencoderSession::start(engine, model.clone(), data.into(), settings(), Optimiser::Lbfgs(lbfgs_settings())).await?;
    let reference = |session: &AutoencoderSession| cost(&CpuBackend, session.model(), data, &settings(), &mut Workspace::new()).map_err(|e| e.to_string());
    let mut js = vec![session.cost().total];
    for k in 0..=steps {
        if k > 0 {
            let report = session.step().await?;
            ensure!(report.iteration == k && report.cost == session.cost(), "step {k} reports iteration {} and J {:?}, the session holds {:?}", report.iteration, report.cost, session.cost());
            js.push(report.cost.total);
        }
        let (at, expected) = (session.cost(), reference(&session)?);
        // The terms to 1e-5 of J: near ρ̂ = ρ the KL term is a difference of nearly equal
        // logarithms, and f32's ρ̂ leaves it only a few digits of its own.
        let terms_close = [(at.reconstruction, expected.reconstruction), (at.weight_decay, expected.weight_decay), (at.sparsity, expected.sparsity)].iter().all(|(a, b)| (a - b).abs() <= J_TOLERANCE * expected.total);
        ensure!(close(at.total, expected.total, J_TOLERANCE) && terms_close, "after {k} iterations the session's J {at:?} is not the CPU reference's at its parameters ({expected:?})");
        ensure!(super::max_gap(session.mean_activation(), &expected.mean_activation) <= RHO_TOLERANCE, "after {k} iterations the session's ρ̂ is not the CPU reference's at its parameters");
    }
    Ok((session, js))
}

/// The relative gap of two runs' last J.
fn end_gap(run: &[f64], reference: &[f64]) -> f64 {
    let (a, b) = (run[run.len() - 1], reference[reference.len() - 1]);
    (a - b).abs() / b.abs()
}

pub async fn autoencoder_lbfgs_follows_cpu_and_minimise<H: Harness>(h: &H) -> Result<String, String> {
    let (v, hidden, cases, seed) = (64, 25, 300, 5);
    let (model, data) = (model(v, hidden, seed), strokes(cases, v, seed));
    let (session, run) = trajectory(h.engine(), &model, &data, ITERATIONS).await?;
    ensure!(session.on_device() == h.engine().is_gpu(), "the session runs on the device: {}, the engine is a GPU: {} ({:?})", session.on_device(), h.engine().is_gpu(), session.backend_reason());
    ensure!(session.stop().as_deref() == Some("max_iterations"), "after {ITERATIONS} iterations the run stops at max_iterations, not {:?}", session.stop());
    ensure!(run.windows(2).all(|w| w[1] < w[0]), "J did not fall every iteration: {run:?}");
    let (_, cpu) = trajectory(&Engine::Cpu, &model, &data, ITERATIONS).await?;
    // The sync L-BFGS on the CPU cost, outside the engine: the CPU session must be it exactly.
    let mut minimised = vec![cost(&CpuBackend, &model, &data, &settings(), &mut Workspace::new()).map_err(|e| e.to_string())?.total];
    let mut scratch = model.clone();
    let mut params = model.to_params();
    lbfgs::minimise(&mut CostObjective::new(&CpuBackend, &mut scratch, &data, settings()), &mut params, &lbfgs_settings(), &mut |_, j| {
        minimised.push(j);
        true
    })
    .map_err(|e| format!("minimise: J at the start is {}", e.value))?;
    ensure!(cpu == minimised, "the CPU session's J {cpu:?} differs from lbfgs::minimise's {minimised:?}");
    let loops = by_loops(&model, &data, &settings()).cost.total;
    ensure!(close(run[0], loops, J_TOLERANCE), "J at the start {} vs the f64 loops' {loops}", run[0]);
    // Pointwise agreement with the CPU run is not to be had: minFunc's cubic extrapolation in
    // the first line search is a knife edge (tests/gpu_autoencoder.rs), where this problem's CPU
    // run on its cases in reverse order ends the first iteration 28% away and the runs close in
    // on the same plateau later. A wrong device gradient would leave the run far behind.
    let gap = end_gap(&run, &cpu);
    ensure!(gap <= END_TOLERANCE, "after {ITERATIONS} iterations J is {} against the CPU run's {} (relative {gap:.1e})", run[ITERATIONS], cpu[ITERATIONS]);
    Ok(format!("J {:.5} → {:.5} in {ITERATIONS} iterations ({}), each the CPU reference's at its parameters; {gap:.1e} from the CPU run's end", run[0], run[ITERATIONS], if session.on_device() { "device" } else { "CPU" }))
}

/// How far a run may end from another of the same problem after a knife-edge first line search
/// (measured: up to 4e-2 after 8 iterations, for the device and for the CPU on reordered cases).
const END_TOLERANCE: f64 = 0.1;

pub async fn autoencoder_device_loss_resumes_on_cpu<H: Harness>(h: &H) -> Result<String, String> {
    if !h.engine().is_gpu() {
        return super::skipped("no device to lose on the CPU");
    }
    let (v, hidden, cases, seed) = (49, 16, 260, 9);
    let (model, data) = (model(v, hidden, seed), strokes(cases, v, seed));
    let (_, undisturbed) = trajectory(h.engine(), &model, &data, ITERATIONS).await?;
    let (mut session, mut run) = trajectory(h.engine(), &model, &data, 3).await?;
    ensure!(run[..] == undisturbed[..4], "the device is not deterministic: {run:?} vs {:?}", &undisturbed[..4]);
    let kept = session.model().clone();
    session.simulate_device_loss();
    let error = match session.step().await {
        Ok(report) => return Err(format!("a step on a destroyed device went through: {report:?}")),
        Err(error) => error,
    };
    ensure!(error.contains("lost"), "the failed step's error does not say the device was lost: {error}");
    ensure!(session.model() == &kept && session.iterations() == 3, "the failed step moved the parameters or counted an iteration");
    ensure!(!session.on_device() && session.backend_reason().is_some_and(|r| r.contains("lost")), "after the loss the session is on the device: {}, reason {:?}", session.on_device(), session.backend_reason());
    for k in 4..=ITERATIONS {
        let report = session.step().await?;
        ensure!(report.iteration == k, "the step after the loss is iteration {}, expected {k}", report.iteration);
        let expected = cost(&CpuBackend, session.model(), &data, &settings(), &mut Workspace::new()).map_err(|e| e.to_string())?;
        ensure!(report.cost.total == expected.total, "iteration {k} on the CPU reports J {}, the CPU reference has {}", report.cost.total, expected.total);
        run.push(report.cost.total);
    }
    // The device's pairs are lost with it: from the kept parameters the CPU takes exactly the
    // iterations of its own run started there (steepest descent first), counted from 4.
    let mut scratch = kept.clone();
    let mut objective = CostObjective::new(&CpuBackend, &mut scratch, &data, settings());
    let mut objective = Blocking(&mut objective);
    let mut fresh = block_on(Lbfgs::start(&mut objective, kept.to_params(), &lbfgs_settings())).map_err(|e| format!("the CPU's start at the kept parameters: J {}", e.value))?.resumed_after(3, 0);
    let mut expected = run[..4].to_vec();
    while let IterationOutcome::Iterated { value, .. } = block_on(fresh.iterate(&mut objective)) {
        expected.push(value);
    }
    ensure!(run == expected, "after the loss the session's J {run:?} is not the CPU's own run from the kept parameters {expected:?}");
    ensure!(run.windows(2).all(|w| w[1] < w[0]), "J did not fall every iteration across the loss: {run:?}");
    let gap = end_gap(&run, &undisturbed);
    ensure!(gap <= END_TOLERANCE, "device for 3 iterations then the CPU ends at J {} against the undisturbed device run's {} (relative {gap:.1e})", run[ITERATIONS], undisturbed[ITERATIONS]);
    Ok(format!("lost after 3 iterations ({error}); iterations 4–{ITERATIONS} the CPU's own run from the kept parameters, ending {gap:.1e} from an undisturbed device run"))
}
