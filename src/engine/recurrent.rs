//! Online training of a recurrent net (issue 20) on the engine's backend: RTRL with every step
//! on the device (`gpu::recurrent_step::DeviceRtrl`, several steps per submission) where the
//! engine has one, else the CPU reference (`recurrent::Trainer`: RTRL or truncated BPTT, which
//! has no device path). The CLI's `deepbelief rtrl` and the page's Sequences mode drive it.
//!
//! The host keeps the weights of the last completed batch (read back with the batch's `E`
//! and outputs in one map). A lost device costs the batch in flight: the session goes on on
//! the CPU from those weights, the task stream rewound to the batch's start, and the
//! sensitivity tensors and activations restart at zero (as at a sequence start: the CPU
//! cannot read the device's tensors any more), with a message saying so.

use super::Engine;
use crate::gpu::recurrent_step::DeviceRtrl;
use crate::gpu::GpuContext;
use crate::recurrent::train::{Tally, TrainerSpec};
use crate::recurrent::{Frame, Network, TaskStream, Trainer};

/// Steps recorded per device submission at most (between two reports fewer).
pub const DEVICE_BATCH: usize = 256;

enum Backend {
    Cpu(Box<Trainer>),
    Gpu { ctx: GpuContext, rtrl: Box<DeviceRtrl> },
}

pub struct RecurrentSession {
    /// The weights: the device's as of the last completed batch, or the CPU's.
    pub net: Network,
    spec: TrainerSpec,
    backend: Backend,
    /// Why the steps run on the CPU where a device was offered (or lost).
    pub reason: Option<String>,
    /// The last step's output (whichever side ran it).
    output: Vec<f32>,
}

impl RecurrentSession {
    /// `net` trained by `spec` on `engine`: RTRL on the device when the engine has one,
    /// everything else on the CPU (with the reason).
    pub fn new(engine: &Engine, net: Network, spec: TrainerSpec) -> Result<Self, String> {
        let outputs = net.graph.layers[net.graph.output()];
        let mut reason = None;
        let backend = match (engine, spec) {
            (Engine::Gpu(ctx), TrainerSpec::Rtrl { mode }) => {
                // The CPU's size limit applies too: the fall-back must be able to take over.
                crate::recurrent::Rtrl::new(&net, mode).map_err(|e| e.to_string())?;
                match DeviceRtrl::new(ctx, &net, mode, None, DEVICE_BATCH) {
                    Ok(rtrl) => Backend::Gpu { ctx: ctx.clone(), rtrl: Box::new(rtrl) },
                    Err(e) => {
                        reason = Some(format!("the device cannot hold this net ({e})"));
                        Backend::Cpu(Box::new(Trainer::new(&net, spec).map_err(|e| e.to_string())?))
                    }
                }
            }
            (Engine::Gpu(_), TrainerSpec::Bptt { .. }) => {
                reason = Some("truncated BPTT has no device path".into());
                Backend::Cpu(Box::new(Trainer::new(&net, spec).map_err(|e| e.to_string())?))
            }
            (Engine::Cpu, _) => Backend::Cpu(Box::new(Trainer::new(&net, spec).map_err(|e| e.to_string())?)),
        };
        Ok(RecurrentSession { net, spec, backend, reason, output: vec![0.0; outputs] })
    }

    pub fn on_device(&self) -> bool {
        matches!(self.backend, Backend::Gpu { .. })
    }

    /// Where the steps run, for logs.
    pub fn backend_name(&self) -> String {
        match &self.backend {
            Backend::Gpu { ctx, .. } => {
                let s = ctx.summary();
                format!("gpu: {} ({})", s.name, s.backend)
            }
            Backend::Cpu(_) => "cpu".into(),
        }
    }

    /// The last step's output.
    pub fn output(&self) -> &[f32] {
        &self.output
    }

    /// The last step's activations per layer (read back from the device there).
    pub async fn activations(&self) -> Result<Vec<Vec<f32>>, String> {
        match &self.backend {
            Backend::Cpu(trainer) => Ok(trainer.frame().act.clone()),
            Backend::Gpu { ctx, rtrl } => rtrl.activations(ctx).await.map_err(|e| e.to_string()),
        }
    }

    /// The last step's sensitivity `∂a^layer/∂w` of parameter block `block` (`n_layer × P`),
    /// where RTRL keeps one.
    pub async fn sensitivity(&self, block: usize, layer: usize) -> Result<Option<Vec<f32>>, String> {
        match &self.backend {
            Backend::Cpu(trainer) => Ok(match trainer.as_ref() {
                Trainer::Rtrl(rtrl) => rtrl.sensitivity(block, layer).map(<[f32]>::to_vec),
                Trainer::Bptt(_) => None,
            }),
            Backend::Gpu { ctx, rtrl } => rtrl.sensitivity(ctx, block, layer).await.map_err(|e| e.to_string()),
        }
    }

    /// Trains `count` examples of `stream` at `rate`, calling `report` with the tally of each
    /// `every` steps (and of the rest at the end). `step` is called with every step's `E`,
    /// output and example (the page's charts). A non-finite error stops with an error naming
    /// the rate.
    #[allow(clippy::too_many_arguments)]
    pub async fn train(&mut self, stream: &mut TaskStream, rate: f32, count: u64, every: u64, mut report: impl FnMut(u64, &Tally), mut step: impl FnMut(f64, &[f32], &crate::recurrent::Example)) -> Result<Tally, String> {
        crate::recurrent::error::positive("rate", rate as f64).map_err(|e| e.to_string())?;
        let every = every.max(1);
        let (mut all, mut window) = (Tally::default(), Tally::default());
        let mut done = 0u64;
        while done < count {
            let until_report = every - done % every;
            let batch = match self.backend {
                Backend::Gpu { .. } => until_report.min(count - done).min(DEVICE_BATCH as u64),
                Backend::Cpu(_) => 1,
            };
            let start = stream.position;
            let examples: Vec<_> = (0..batch).map(|_| stream.next_example()).collect();
            let results = match self.run_batch(&examples, rate).await {
                Ok(results) => results,
                Err(why) => {
                    self.fall_back(&why)?;
                    *stream = TaskStream::at(stream.spec, stream.seed, start);
                    continue;
                }
            };
            for (index, (example, (error, output))) in examples.iter().zip(results).enumerate() {
                if !error.is_finite() {
                    return Err(crate::recurrent::RecurrentError::new("rate", format!("{rate} made the error {error} at step {}; expected a smaller rate", start + 1 + index as u64)).to_string());
                }
                all.add(&stream.spec, error, &output, &example.target, example.scored);
                window.add(&stream.spec, error, &output, &example.target, example.scored);
                step(error, &output, example);
                self.output = output;
            }
            done += batch;
            if done % every == 0 || done == count {
                report(stream.position, &window);
                window = Tally::default();
            }
        }
        Ok(all)
    }

    /// `(E, output)` of every example, the weights moved.
    async fn run_batch(&mut self, examples: &[crate::recurrent::Example], rate: f32) -> Result<Vec<(f64, Vec<f32>)>, String> {
        match &mut self.backend {
            Backend::Cpu(trainer) => Ok(examples
                .iter()
                .map(|e| {
                    let error = trainer.train_step(&mut self.net, &e.input, &e.target, rate);
                    (error, trainer.output().to_vec())
                })
                .collect()),
            Backend::Gpu { ctx, rtrl } => {
                let inputs: Vec<f32> = examples.iter().flat_map(|e| e.input.iter().copied()).collect();
                let targets: Vec<f32> = examples.iter().flat_map(|e| e.target.iter().copied()).collect();
                let report = rtrl.train_steps_reading_params(ctx, &inputs, &targets, rate).await.map_err(|e| e.to_string())?;
                if let Some(params) = report.params {
                    // Only finite weights become the host's (the fall-back's starting point).
                    if params.iter().all(|w| w.is_finite()) {
                        self.net.params = params;
                    }
                }
                let outputs = self.output.len();
                Ok(report.errors.iter().zip(report.outputs.chunks_exact(outputs.max(1))).map(|(&e, y)| (e, y.to_vec())).collect())
            }
        }
    }

    fn fall_back(&mut self, why: &str) -> Result<(), String> {
        if !self.on_device() {
            return Err(why.to_string());
        }
        self.backend = Backend::Cpu(Box::new(Trainer::new(&self.net, self.spec).map_err(|e| e.to_string())?));
        self.reason = Some(format!("the device was lost ({why}), so the CPU goes on from the weights of the last completed batch; the sensitivities and activations restart at zero"));
        Ok(())
    }

    /// The last frame on the CPU side (zero on the device, whose frame stays there).
    pub fn cpu_frame(&self) -> Option<&Frame> {
        match &self.backend {
            Backend::Cpu(trainer) => Some(trainer.frame()),
            Backend::Gpu { .. } => None,
        }
    }

    /// Testing hook: destroys the device, as a driver reset or a lost adapter would.
    pub fn simulate_device_loss(&self) {
        if let Backend::Gpu { ctx, .. } = &self.backend {
            ctx.device.destroy();
        }
    }
}
