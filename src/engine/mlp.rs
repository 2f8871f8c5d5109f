//! A plain all-sigmoid MLP trained full batch on the engine (issue 21, `deepbelief mlp
//! --backend`). On a GPU engine Toman's adaptive-step rule runs resident on the device
//! ([`DeviceMlp`]: the rule, the best weights and the rollback there, only each epoch's
//! scalars read back); the other step rules run [`train_full_batch`] on the engine's
//! per-operation backend (the products on the device, the rule on the host). The CPU engine
//! runs [`train_full_batch`] on the CPU.
//!
//! The device's weights come back after every submission (a few dozen epochs, ending on
//! checkpoint epochs), so a lost device costs at most one submission: the run continues on the
//! CPU from those weights, the rule's rates and memories starting afresh as a resumed run's do
//! (docs/TOMAN.md), and the outcome says so.

use super::Engine;
use crate::gpu::mlp::{DeviceMlp, MlpKernels, MAX_EPOCHS_PER_SUBMISSION};
use crate::supervised::criterion::{Cases, StageSeconds};
use crate::supervised::full_batch::{train_full_batch, EpochRecord, FullBatchOutcome, FullBatchSettings, StepNote};
use crate::supervised::optimise::StopKind;
use crate::supervised::{Network, Optimizer, SupervisedError};

/// What [`Engine::train_mlp`] did beyond the CPU's outcome.
pub struct MlpOutcome {
    pub outcome: FullBatchOutcome,
    /// Where the epochs ran: "cpu", "gpu" (resident rule) or "gpu products" (host rule).
    pub ran_on: &'static str,
    /// Why the run left the device, and after how many epochs.
    pub fell_back: Option<(usize, String)>,
}

impl Engine {
    /// Trains `net` (logistic outputs) on `cases` for at most `settings.epochs` epochs, as
    /// [`train_full_batch`] does. `on_epoch` sees every epoch, with the weights after it on the
    /// epochs that are multiples of `checkpoint_every` (> 0) and where the CPU runs every epoch
    /// (`None` on the device's other epochs); it returns `false` to stop.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn train_mlp(&self, net: &mut Network, cases: Cases, settings: FullBatchSettings, checkpoint_every: usize, on_epoch: &mut dyn FnMut(&EpochRecord, Option<&Network>) -> bool) -> Result<MlpOutcome, SupervisedError> {
        pollster::block_on(self.train_mlp_async(net, cases, settings, checkpoint_every, on_epoch))
    }

    /// [`Engine::train_mlp`] for callers that cannot block on the device (the browser: the
    /// page and the wasm engine suite); natively `train_mlp` blocks on this.
    pub async fn train_mlp_async(&self, net: &mut Network, cases: Cases<'_>, settings: FullBatchSettings, checkpoint_every: usize, on_epoch: &mut dyn FnMut(&EpochRecord, Option<&Network>) -> bool) -> Result<MlpOutcome, SupervisedError> {
        let ctx = match self {
            Engine::Gpu(ctx) if settings.optimizer == Optimizer::AdaptiveStep => ctx,
            Engine::Gpu(_) => {
                let outcome = train_full_batch(self.backend().as_ref(), net, cases, 0.0, settings, None, "the MLP", &mut |r, n| on_epoch(r, Some(n)))?;
                return Ok(MlpOutcome { outcome, ran_on: "gpu products", fell_back: None });
            }
            Engine::Cpu => {
                let outcome = train_full_batch(self.backend().as_ref(), net, cases, 0.0, settings, None, "the MLP", &mut |r, n| on_epoch(r, Some(n)))?;
                return Ok(MlpOutcome { outcome, ran_on: "cpu", fell_back: None });
            }
        };
        // The epochs' time, from the first submission (kernels compiled, cases uploaded) to the
        // last weights read back.
        let mut started = f64::NAN;
        let mut finished = f64::NAN;
        let mut done = 0;
        let mut rollbacks = 0;
        let mut stop = StopKind::MaxIterations;
        let failure = 'device: {
            let kernels = MlpKernels::new(ctx);
            let mut device = match DeviceMlp::new(ctx, &kernels, net, cases.inputs, cases.targets, &settings.rules) {
                Ok(device) => device,
                Err(e) => break 'device Some(e.to_string()),
            };
            started = crate::clock::now_seconds();
            while done < settings.epochs {
                let mut count = (settings.epochs - done).min(MAX_EPOCHS_PER_SUBMISSION);
                if checkpoint_every > 0 {
                    count = count.min(checkpoint_every - done % checkpoint_every);
                }
                let batch = match device.run_epochs(count).await {
                    Ok(batch) => batch,
                    Err(e) => break 'device Some(e.to_string()),
                };
                match device.weights().await {
                    Ok(weights) => net.set_params(&weights),
                    Err(e) => break 'device Some(e.to_string()),
                }
                let last = batch.len() - 1;
                for (k, e) in batch.iter().enumerate() {
                    done += 1;
                    if e.note != StepNote::Stepped {
                        rollbacks += 1;
                    }
                    if !e.error.is_finite() {
                        return Err(SupervisedError::NonFinite { stage: "the MLP", iteration: done });
                    }
                    let record = EpochRecord { epoch: done, error: e.error, criterion: e.criterion, note: e.note };
                    let checkpoint = k == last && checkpoint_every > 0 && done.is_multiple_of(checkpoint_every);
                    let keep_going = on_epoch(&record, checkpoint.then_some(&*net));
                    if e.held {
                        stop = StopKind::TargetReached;
                        break;
                    }
                    if !keep_going {
                        stop = StopKind::Cancelled;
                        break;
                    }
                }
                if stop != StopKind::MaxIterations {
                    break;
                }
            }
            finished = crate::clock::now_seconds();
            match device.finish().await {
                Ok((_, weights)) => net.set_params(&weights),
                Err(e) => break 'device Some(e.to_string()),
            }
            None
        };
        let seconds = if finished.is_nan() { crate::clock::now_seconds() - started } else { finished - started };
        // The device runs Toman's four stages in one submission: its time is the update's.
        let device_times = StageSeconds { update: if seconds.is_nan() { 0.0 } else { seconds }, ..StageSeconds::default() };
        let Some(why) = failure else {
            let criterion = crate::supervised::criterion::criterion(net, &crate::backend::cpu::CpuBackend, cases, 0.0);
            let error = crate::supervised::full_batch::reported_error(net.output, criterion, 0.0, cases.n_outputs);
            let outcome = FullBatchOutcome { epochs: done, stop, error, criterion, rollbacks, times: device_times };
            return Ok(MlpOutcome { outcome, ran_on: "gpu", fell_back: None });
        };
        // The rest on the CPU from the last weights that came back.
        let rest = FullBatchSettings { epochs: settings.epochs - done, ..settings };
        let offset = done;
        let mut outcome = if rest.epochs == 0 {
            let criterion = crate::supervised::criterion::criterion(net, &crate::backend::cpu::CpuBackend, cases, 0.0);
            let error = crate::supervised::full_batch::reported_error(net.output, criterion, 0.0, cases.n_outputs);
            FullBatchOutcome { epochs: 0, stop, error, criterion, rollbacks: 0, times: StageSeconds::default() }
        } else {
            train_full_batch(&crate::backend::cpu::CpuBackend, net, cases, 0.0, rest, None, "the MLP", &mut |r, n| {
                let record = EpochRecord { epoch: r.epoch + offset, ..*r };
                on_epoch(&record, Some(n))
            })?
        };
        outcome.epochs += offset;
        outcome.rollbacks += rollbacks;
        outcome.times.update += device_times.update;
        Ok(MlpOutcome { outcome, ran_on: "gpu", fell_back: Some((offset, why)) })
    }
}
