//! Recurrent nets by RTRL (issue 20) through `engine::recurrent::RecurrentSession`, from the
//! engine's side (every step on the device where the engine has one, several steps per
//! submission), against the CPU reference (`recurrent::Trainer`) step for step, and against a
//! reference outside the engine: the first step's `E` from an f64 forward pass written out as
//! plain loops.
//!
//! Tolerances. The device sums the forward step, the products and `E` in other orders and in
//! f32 ([`STEP_TOLERANCE`] of each step's `E`, relative to max(E, 10⁻²)); after 300 online steps
//! the weights differ by the rounding those steps accumulate ([`WEIGHT_TOLERANCE`] of the
//! largest weight; tests/gpu_rtrl.rs sees 10⁻⁵–10⁻⁶ on lavapipe).

use crate::engine_suite::Harness;
use deepbelief::engine::recurrent::RecurrentSession;
use deepbelief::engine::Engine;
use deepbelief::recurrent::train::TrainerSpec;
use deepbelief::recurrent::{Network, Preset, RtrlMode, TaskSpec, TaskStream};

const STEP_TOLERANCE: f64 = 1e-4;
const WEIGHT_TOLERANCE: f64 = 1e-4;
const F64_TOLERANCE: f64 = 1e-5;

/// Moore's 3-bit adder on the Elman net (6-6-3) with the shortcut: tensors for the hidden
/// layer's blocks, back-propagation for the output's.
fn adder() -> (Network, TaskSpec, TrainerSpec) {
    let task = TaskSpec::Add { bits: 3 };
    (Network::initialise(Preset::Elman.graph(6, 6, 3), 1, 2.0).expect("a net"), task, TrainerSpec::Rtrl { mode: RtrlMode::Shortcut })
}

/// `E` of `net`'s first step from a zero state on `input`, in f64 plain loops.
fn first_error_f64(net: &Network, input: &[f32], target: &[f32]) -> f64 {
    let mut acts: Vec<Vec<f64>> = vec![input.iter().map(|&x| x as f64).collect()];
    for i in 1..net.graph.layers.len() {
        let mut sums = vec![0.0f64; net.graph.layers[i]];
        for b in net.blocks.iter().filter(|b| b.to == i) {
            let w = net.block_values(b);
            for (j, sum) in sums.iter_mut().enumerate() {
                *sum += match b.source {
                    deepbelief::recurrent::Source::Layer(k) => (0..b.cols).map(|l| w[j * b.cols + l] as f64 * acts[k][l]).sum::<f64>(),
                    deepbelief::recurrent::Source::Previous(_) => 0.0, // the previous state is zero
                    deepbelief::recurrent::Source::Bias => w[j] as f64,
                };
            }
        }
        acts.push(sums.iter().map(|x| x.tanh()).collect());
    }
    0.5 * acts.last().unwrap().iter().zip(target).map(|(y, &d)| (y - d as f64).powi(2)).sum::<f64>()
}

async fn trained(engine: &Engine, steps: u64, every: u64) -> Result<(RecurrentSession, Vec<f64>), String> {
    let (net, task, spec) = adder();
    let mut session = RecurrentSession::new(engine, net, spec)?;
    let mut stream = TaskStream::new(task, 7);
    let mut errors = Vec::new();
    session.train(&mut stream, 0.02, steps, every, |_, _| {}, |e, _, _| errors.push(e)).await?;
    Ok((session, errors))
}

fn weight_gap(a: &[f32], b: &[f32]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, &x| m.max(x.abs() as f64)).max(1e-30);
    super::max_gap(a, b) / scale
}

pub async fn recurrent_session_follows_cpu<H: Harness>(h: &H) -> Result<String, String> {
    let steps = 300;
    let (session, errors) = trained(h.engine(), steps, 100).await?;
    let (cpu, cpu_errors) = trained(&Engine::Cpu, steps, 100).await?;
    ensure!(session.on_device() == h.engine().is_gpu(), "the session ran on {} with a {} engine", session.backend_name(), if h.engine().is_gpu() { "GPU" } else { "CPU" });
    ensure!(errors.len() == steps as usize, "{} step errors for {steps} steps", errors.len());
    let mut worst = 0.0f64;
    for (t, (e, c)) in errors.iter().zip(&cpu_errors).enumerate() {
        let gap = (e - c).abs() / c.max(1e-2);
        ensure!(gap <= STEP_TOLERANCE, "step {t}: E {e} against the CPU's {c}");
        worst = worst.max(gap);
    }
    let gap = weight_gap(&session.net.params, &cpu.net.params);
    ensure!(gap <= WEIGHT_TOLERANCE, "after {steps} steps the weights are {gap:.2e} (relative) from the CPU's");
    let (net, task, _) = adder();
    let first = TaskStream::new(task, 7).next_example();
    let exact = first_error_f64(&net, &first.input, &first.target);
    ensure!((errors[0] - exact).abs() <= F64_TOLERANCE * exact.max(1e-2), "the first step's E is {} against {exact} in f64", errors[0]);
    ensure!(errors[..50].iter().sum::<f64>() > errors[steps as usize - 50..].iter().sum::<f64>(), "the error did not fall over {steps} steps");
    Ok(format!("{steps} steps on {}: E within {worst:.1e} of the CPU's per step, weights {gap:.1e}; first E {:.6} (f64 {exact:.6})", session.backend_name(), errors[0]))
}

pub async fn recurrent_device_loss_resumes_on_cpu<H: Harness>(h: &H) -> Result<String, String> {
    if !h.engine().is_gpu() {
        return super::skipped("no device to lose on the CPU");
    }
    let (net, task, spec) = adder();
    let mut session = RecurrentSession::new(h.engine(), net.clone(), spec)?;
    let mut stream = TaskStream::new(task, 7);
    session.train(&mut stream, 0.02, 100, 50, |_, _| {}, |_, _, _| {}).await?;
    let before_loss = session.net.params.clone();
    session.simulate_device_loss();
    let mut reports = Vec::new();
    session.train(&mut stream, 0.02, 100, 50, |step, _| reports.push(step), |_, _, _| {}).await?;
    ensure!(!session.on_device(), "the session is still on the device after its loss");
    let why = session.reason.clone().ok_or("no message about the loss")?;
    ensure!(why.contains("lost"), "the message does not name the loss: {why}");
    ensure!(reports == [150, 200], "the reports came at steps {reports:?}");
    // The reference: the CPU from the same weights, its tensors from zero, the same examples.
    let mut reference = net;
    reference.params = before_loss;
    let mut trainer = deepbelief::recurrent::Trainer::new(&reference, spec).map_err(|e| e.to_string())?;
    let mut replay = TaskStream::at(task, 7, 100);
    for _ in 0..100 {
        let e = replay.next_example();
        trainer.train_step(&mut reference, &e.input, &e.target, 0.02);
    }
    let gap = weight_gap(&session.net.params, &reference.params);
    ensure!(gap <= WEIGHT_TOLERANCE, "after the loss the weights are {gap:.2e} (relative) from a CPU run from the same weights");
    Ok(format!("lost after 100 steps ({why}); the CPU's 100 more steps are {gap:.1e} from a CPU run from the synced weights"))
}
