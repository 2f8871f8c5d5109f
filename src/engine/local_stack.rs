//! Greedy training of a stack of local-patch RBMs (Raina et al. 2009, §5) on the engine's
//! backend: each layer on the CPU reference (`LocalCdTrainer`) or the device-resident trainer
//! (`gpu::local_rbm_trainer`), with
//!
//! - propagation between layers on the device: each whole batch's hidden probabilities are
//!   computed into a new device buffer that is the next layer's batch (no host round trip of
//!   the data; only the column sums, for the next layer's initial visible biases, and the
//!   first [`DEVICE_SCORE_CASES`] cases, which score each epoch, come back);
//! - the state (model, velocities, step) downloaded after every epoch, shown to the caller
//!   (the CLI writes its checkpoint from it);
//! - the fall-back to the CPU when the device is lost (or fails): the layer resumes on the
//!   CPU from the last downloaded state, with the reason in [`LocalStackRun::fell_back`], and
//!   the layers above train on the CPU too, their inputs propagated on the CPU.
//!
//! On the device every layer trains whole batches only: the cases past the last whole batch
//! of the first layer's input are left out for the whole stack (also after a fall-back).

use super::Engine;
use crate::local_rbm::stack::propagate;
use crate::local_rbm::{Geometry, LocalCdSettings, LocalCdTrainer, LocalEpochReport, LocalRbm, LocalVelocities};

/// Cases a device layer scores its epochs on (mean-field reconstruction error on the CPU).
pub const DEVICE_SCORE_CASES: usize = 384;

/// What the caller sees after every epoch.
pub struct LocalEpochEvent<'a> {
    /// 0-based layer of the stack.
    pub layer: usize,
    pub report: &'a LocalEpochReport,
    /// The layer as it stands after the epoch (as downloaded, on the device).
    pub model: &'a LocalRbm,
    /// "cpu" or "gpu": where the epoch ran.
    pub backend: &'static str,
    /// Set on the first epoch after the device was lost: why, and from which state.
    pub fell_back: Option<&'a str>,
    /// Whether `model` is this epoch's state (on the device: downloaded after it); false on
    /// device epochs between downloads (`LocalStackOptions::download_every`), where `model` is
    /// the last download.
    pub fresh: bool,
    pub times: LocalEpochTimes,
}

/// Where an epoch's seconds went (on the CPU all in `train`).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct LocalEpochTimes {
    /// The batches' CD-1 updates (on the device: submitted until idle).
    pub train: f64,
    /// The reconstruction error of the scored cases (on the device: passes there, the
    /// reconstructions read back).
    pub score: f64,
    /// Reading the model and its velocities back from the device (0 where not downloaded).
    pub download: f64,
}

/// How a stack runs beyond its settings.
#[derive(Clone, Copy, Debug)]
pub struct LocalStackOptions {
    /// On the device, download the state (model and velocities: the checkpoint, and where a
    /// lost device resumes on the CPU) after every `download_every` epochs and always after a
    /// layer's last; 0: only after the last. A 47.8M-weight layer's state is 380 MB.
    pub download_every: usize,
}

impl Default for LocalStackOptions {
    fn default() -> Self {
        LocalStackOptions { download_every: 1 }
    }
}

/// Mean and spread of a layer's input over the scored cases: the mean of every value, and the
/// mean over units of each unit's standard deviation across cases (near 0: a layer with
/// nothing to learn; its reconstruction error is bounded by the spread's square).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct LocalInputStats {
    pub mean: f64,
    pub spread: f64,
    pub cases: usize,
}

impl LocalInputStats {
    pub fn of(cases: &[f32], n_visible: usize) -> LocalInputStats {
        let n = cases.len() / n_visible.max(1);
        if n == 0 {
            return LocalInputStats::default();
        }
        let (mut sum, mut sum_sq) = (vec![0.0f64; n_visible], vec![0.0f64; n_visible]);
        for case in cases.chunks_exact(n_visible) {
            for ((s, q), &x) in sum.iter_mut().zip(&mut sum_sq).zip(case) {
                *s += x as f64;
                *q += (x as f64) * (x as f64);
            }
        }
        let mean = sum.iter().sum::<f64>() / (n * n_visible) as f64;
        let spread = sum.iter().zip(&sum_sq).map(|(s, q)| (q / n as f64 - (s / n as f64).powi(2)).max(0.0).sqrt()).sum::<f64>() / n_visible as f64;
        LocalInputStats { mean, spread, cases: n }
    }
}

pub struct LocalStackRun {
    pub layers: Vec<LocalRbm>,
    pub epochs: Vec<Vec<LocalEpochReport>>,
    /// Where each layer finished: "cpu" or "gpu".
    pub backends: Vec<&'static str>,
    /// Why the run left the device, if it did.
    pub fell_back: Option<String>,
    /// Per layer, per epoch: where the seconds went.
    pub epoch_times: Vec<Vec<LocalEpochTimes>>,
    /// Per layer: seconds spent computing the next layer's input (0 for the last).
    pub propagate_seconds: Vec<f64>,
    /// Per layer: its input's mean and spread over the first [`DEVICE_SCORE_CASES`] cases.
    pub input_stats: Vec<LocalInputStats>,
}

/// A layer's input resident on the device: whole batches, their column means, the first
/// cases (for scoring) on the host.
struct DeviceInput {
    batches: Vec<wgpu::Buffer>,
    means: Vec<f32>,
    scored: Vec<f32>,
}

/// The device run of one layer ended: trained (with the next layer's input when asked), or
/// lost with the last downloaded state.
enum DeviceLayer {
    Trained { model: LocalRbm, next: Option<DeviceInput>, propagate_seconds: f64 },
    Lost { why: String, model: LocalRbm, velocity: LocalVelocities, step: u64, epoch: usize },
}

fn momentum_of(settings: &LocalCdSettings, epoch: usize) -> f32 {
    if epoch < settings.momentum_switch_epoch {
        settings.initial_momentum
    } else {
        settings.final_momentum
    }
}

impl Engine {
    /// Trains the layers of `plan` greedily on `cases` (`n × plan[0].n_visible()`), layer `k`
    /// with `settings[k]`; `on_epoch` sees every epoch. Errors: bad settings or data, a layer
    /// the device cannot hold (`check_fit`), divergence; a lost device is not an error.
    pub async fn train_local_stack(&self, plan: &[Geometry], settings: &[LocalCdSettings], cases: &[f32], on_epoch: impl FnMut(&LocalEpochEvent)) -> Result<LocalStackRun, String> {
        self.train_local_stack_with(plan, settings, cases, LocalStackOptions::default(), on_epoch).await
    }

    /// `train_local_stack` with `options`.
    pub async fn train_local_stack_with(&self, plan: &[Geometry], settings: &[LocalCdSettings], cases: &[f32], options: LocalStackOptions, mut on_epoch: impl FnMut(&LocalEpochEvent)) -> Result<LocalStackRun, String> {
        assert_eq!(plan.len(), settings.len());
        let nv = plan[0].n_visible();
        if cases.is_empty() || !cases.len().is_multiple_of(nv) {
            return Err(format!("--images: {} values do not make whole cases of {nv} visible units", cases.len()));
        }
        let mut run = LocalStackRun { layers: Vec::new(), epochs: Vec::new(), backends: Vec::new(), fell_back: None, epoch_times: Vec::new(), propagate_seconds: Vec::new(), input_stats: Vec::new() };
        // Whole batches of the first layer when the device trains it.
        let mut used = cases;
        let mut device_input: Option<DeviceInput> = None;
        // The fall-back's message, shown with the first epoch on the CPU.
        let mut note: Option<String> = None;
        if let Engine::Gpu(ctx) = self {
            let batch = settings[0].batch_size;
            let n = cases.len() / nv;
            if batch == 0 || n < batch {
                return Err(format!("--batch: {batch} cases per batch, but only {n} cases; the device trains whole batches"));
            }
            for (k, (g, s)) in plan.iter().zip(settings).enumerate() {
                s.validate()?;
                crate::gpu::local_rbm_trainer::check_fit(ctx, g, s.batch_size).map_err(|e| if plan.len() > 1 { format!("layer {}: {e}", k + 1) } else { e })?;
                if s.batch_size != batch {
                    return Err(format!("--batch: layer {} trains batches of {}, layer 1 of {batch}; a stack on the device propagates whole batches, so they must agree", k + 1, s.batch_size));
                }
            }
            used = &cases[..n / batch * batch * nv];
            let batches = used.chunks_exact(batch * nv).map(|b| crate::gpu::buffers::upload(ctx, "local_batch", b)).collect();
            device_input = Some(DeviceInput { batches, means: Vec::new(), scored: used[..(n / batch * batch).min(DEVICE_SCORE_CASES) * nv].to_vec() });
        }
        for (k, (geometry, layer_settings)) in plan.iter().zip(settings).enumerate() {
            let mut reports = Vec::with_capacity(layer_settings.epochs);
            let mut times = Vec::with_capacity(layer_settings.epochs);
            let mut resumed: Option<LocalCdTrainer> = None;
            if let (Engine::Gpu(ctx), Some(input)) = (self, device_input.take()) {
                let first = k == 0;
                let wants_next = k + 1 < plan.len();
                run.input_stats.push(LocalInputStats::of(&input.scored, geometry.n_visible()));
                match device_layer(ctx, k, *geometry, layer_settings, input, first.then_some(used), wants_next, options, &mut reports, &mut times, &mut on_epoch).await? {
                    DeviceLayer::Trained { model, next, propagate_seconds } => {
                        run.layers.push(model);
                        run.epochs.push(reports);
                        run.epoch_times.push(times);
                        run.propagate_seconds.push(propagate_seconds);
                        run.backends.push("gpu");
                        device_input = next;
                        if wants_next && device_input.is_none() {
                            run.fell_back = Some(format!("the device failed while propagating layer {}'s outputs; the layers above train on the CPU", k + 1));
                            note = run.fell_back.clone();
                        }
                        continue;
                    }
                    DeviceLayer::Lost { why, model, velocity, step, epoch } => {
                        run.fell_back = Some(format!("layer {}, epoch {}: {why}; resuming on the CPU from the state downloaded after epoch {epoch}", k + 1, epoch + 1));
                        note = run.fell_back.clone();
                        resumed = Some(LocalCdTrainer::resume_at(layer_settings.clone(), model, velocity, step, epoch));
                    }
                }
            }
            // The CPU: this layer's input propagated on the CPU through the layers below.
            let propagate_started = crate::clock::now_seconds();
            let input = if k == 0 { used.to_vec() } else { propagate(&run.layers, used) };
            if k > 0 {
                // The layer below's propagation (it trained on the CPU or fell back).
                if let Some(p) = run.propagate_seconds.get_mut(k - 1) {
                    *p += crate::clock::now_seconds() - propagate_started;
                }
            }
            if run.input_stats.len() == k {
                let nv_k = geometry.n_visible();
                run.input_stats.push(LocalInputStats::of(&input[..input.len().min(DEVICE_SCORE_CASES * nv_k)], nv_k));
            }
            let mut trainer = match resumed {
                Some(trainer) => trainer,
                None => LocalCdTrainer::new(layer_settings.clone(), *geometry, &input)?,
            };
            while trainer.epoch < layer_settings.epochs {
                let report = trainer.train_epoch(&input)?;
                let why = note.take();
                let epoch_times = LocalEpochTimes { train: report.seconds, ..Default::default() };
                on_epoch(&LocalEpochEvent { layer: k, report: &report, model: &trainer.model, backend: "cpu", fell_back: why.as_deref(), fresh: true, times: epoch_times });
                reports.push(report);
                times.push(epoch_times);
            }
            run.layers.push(trainer.model);
            run.epochs.push(reports);
            run.epoch_times.push(times);
            run.propagate_seconds.push(0.0);
            run.backends.push("cpu");
        }
        Ok(run)
    }

    /// One layer on the CPU or the device (a stack of one).
    pub async fn train_local_layer(&self, settings: LocalCdSettings, geometry: Geometry, cases: &[f32], mut on_epoch: impl FnMut(&LocalEpochReport)) -> Result<LocalLayerRun, String> {
        let mut run = self.train_local_stack(&[geometry], std::slice::from_ref(&settings), cases, |event| on_epoch(event.report)).await?;
        Ok(LocalLayerRun { model: run.layers.remove(0), epochs: run.epochs.remove(0), backend: run.backends[0], fell_back: run.fell_back })
    }
}

/// One trained local-patch layer and its epochs.
pub struct LocalLayerRun {
    pub model: LocalRbm,
    pub epochs: Vec<LocalEpochReport>,
    /// Where it finished: "cpu" or "gpu".
    pub backend: &'static str,
    pub fell_back: Option<String>,
}

/// Trains layer `k` on the device from `input`; `host_cases` is the layer's input on the host
/// where it has one (the first layer: its initial visible biases come from it, as the CPU's).
#[allow(clippy::too_many_arguments)]
async fn device_layer(
    ctx: &crate::gpu::GpuContext,
    k: usize,
    geometry: Geometry,
    settings: &LocalCdSettings,
    input: DeviceInput,
    host_cases: Option<&[f32]>,
    wants_next: bool,
    options: LocalStackOptions,
    reports: &mut Vec<LocalEpochReport>,
    times: &mut Vec<LocalEpochTimes>,
    on_epoch: &mut impl FnMut(&LocalEpochEvent),
) -> Result<DeviceLayer, String> {
    use crate::clock::now_seconds;
    use crate::gpu::buffers::{wait_idle, zeros_f32};
    use crate::gpu::local_rbm_trainer::GpuLocalTrainer;
    let initial = match host_cases {
        Some(cases) => LocalCdTrainer::new(settings.clone(), geometry, cases)?.model,
        None => LocalRbm::initialise(geometry, settings.visible_units, &input.means, settings.seed),
    };
    let mut device = GpuLocalTrainer::new(ctx, &initial, settings.clone(), settings.batch_size);
    let (mut model, mut velocity) = (initial, LocalVelocities::zeros(&geometry));
    // The state last downloaded: after `downloaded_epoch` epochs, at sampling step `downloaded_step`.
    let (mut downloaded_epoch, mut downloaded_step) = (0usize, 0u64);
    let lost = |why: String, model: LocalRbm, velocity: LocalVelocities, step: u64, epoch: usize| DeviceLayer::Lost { why, model, velocity, step, epoch };
    let nv = geometry.n_visible();
    let score_cases = input.scored.len() / nv;
    let score_batches = score_cases.div_ceil(settings.batch_size).min(input.batches.len());
    for epoch in 0..settings.epochs {
        if let Some(why) = ctx.failure() {
            return Ok(lost(why, model, velocity, downloaded_step, downloaded_epoch));
        }
        let started = now_seconds();
        for batch in &input.batches {
            device.train_batch(ctx, batch);
        }
        let idle = wait_idle(ctx).await;
        let trained_at = now_seconds();
        // The mean-field reconstruction error of the scored cases, computed on the device.
        let mut squared = 0.0f64;
        let mut failure = idle.err();
        for (b, batch) in input.batches[..score_batches].iter().enumerate() {
            if failure.is_some() {
                break;
            }
            match device.reconstruct(ctx, batch).await {
                Ok(v1) => {
                    let first = b * settings.batch_size;
                    let rows = (score_cases - first).min(settings.batch_size);
                    squared += crate::model::rbm::squared_difference(&input.scored[first * nv..(first + rows) * nv], &v1[..rows * nv]);
                }
                Err(e) => failure = Some(e),
            }
        }
        let scored_at = now_seconds();
        let last = epoch + 1 == settings.epochs;
        let download = last || (options.download_every > 0 && (epoch + 1).is_multiple_of(options.download_every));
        if failure.is_none() && download {
            match device.state(ctx).await {
                Ok((trained, trained_velocity)) => {
                    if !trained.is_finite() {
                        return Err(format!("layer {}: training diverged in epoch {} on the device (NaN or infinite weights); lower --learning-rate", k + 1, epoch + 1));
                    }
                    (model, velocity) = (trained, trained_velocity);
                    (downloaded_epoch, downloaded_step) = (epoch + 1, device.step);
                }
                Err(e) => failure = Some(e),
            }
        }
        if let Some(e) = failure {
            // The batches since the last download are lost with the device: resume there.
            return Ok(lost(e.to_string(), model, velocity, downloaded_step, downloaded_epoch));
        }
        let error = squared / (score_cases.max(1) * nv) as f64;
        if !error.is_finite() {
            return Err(format!("layer {}: training diverged in epoch {} on the device (reconstruction error {error}); lower --learning-rate", k + 1, epoch + 1));
        }
        let epoch_times = LocalEpochTimes { train: trained_at - started, score: scored_at - trained_at, download: now_seconds() - scored_at };
        device.epoch = epoch + 1;
        let report = LocalEpochReport { epoch: epoch + 1, reconstruction_error: error, momentum: momentum_of(settings, epoch), seconds: now_seconds() - started };
        on_epoch(&LocalEpochEvent { layer: k, report: &report, model: &model, backend: "gpu", fell_back: None, fresh: download, times: epoch_times });
        reports.push(report);
        times.push(epoch_times);
    }
    if !wants_next || ctx.failure().is_some() {
        return Ok(DeviceLayer::Trained { model, next: None, propagate_seconds: 0.0 });
    }
    let propagate_started = now_seconds();
    let nh = geometry.n_hidden();
    let sums = zeros_f32(ctx, "local_column_sums", nh);
    let batches: Vec<wgpu::Buffer> = input.batches.iter().map(|b| device.propagate(ctx, b, &sums)).collect();
    drop(input.batches);
    let score_batches = DEVICE_SCORE_CASES.div_ceil(settings.batch_size).min(batches.len());
    let score_cases = (score_batches * settings.batch_size).min(DEVICE_SCORE_CASES);
    let mut ranges = vec![(&sums, 0, (nh * 4) as u64)];
    ranges.extend(batches[..score_batches].iter().map(|b| (b, 0, b.size())));
    let next = match crate::gpu::read_ranges(ctx, &ranges).await {
        Ok(parts) => {
            let n = (batches.len() * settings.batch_size) as f32;
            let means = bytemuck::pod_collect_to_vec::<u8, f32>(&parts[0]).into_iter().map(|s| s / n).collect();
            let mut scored: Vec<f32> = parts[1..].iter().flat_map(|p| bytemuck::pod_collect_to_vec::<u8, f32>(p)).collect();
            scored.truncate(score_cases * nh);
            Some(DeviceInput { batches, means, scored })
        }
        Err(_) => None,
    };
    Ok(DeviceLayer::Trained { model, next, propagate_seconds: now_seconds() - propagate_started })
}
