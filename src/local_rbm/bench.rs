//! Raina et al.'s Table 3 on the CPU reference: seconds per million examples of CD-1 for the
//! overlapping-patch model (24×24 patches 8 apart, 192 hidden units each, Gaussian visible
//! units, batches of 192) at a given image size: 48² (a scaled version, 16 positions), 144²
//! and 192² (the paper's two columns). One CD-1 update per batch, as `LocalCdTrainer` trains;
//! the cases are grating crops (the time does not depend on the values).

use super::crops::image_crops;
use super::geometry::Geometry;
use super::train::{LocalCdSettings, LocalCdTrainer};
use crate::bench::sparse_coding::grating_images;
use crate::clock::now_seconds;
use crate::model::VisibleUnits;
use serde::Serialize;

pub const PATCH: usize = 24;
pub const STRIDE: usize = 8;
pub const HIDDEN_PER_PATCH: usize = 192;
pub const BATCH: usize = 192;
pub const SIZES: [usize; 3] = [48, 144, 192];

/// Table 3's dual-core CPU (Goto BLAS) and GTX 280 seconds per million examples, by image side.
pub fn paper_seconds_per_million(size: usize) -> Option<(f64, f64)> {
    match size {
        144 => Some((32_236.0, 3_415.0)),
        192 => Some((65_235.0, 6_435.0)),
        _ => None,
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LocalBenchRow {
    pub image_size: usize,
    pub positions: usize,
    pub n_visible: usize,
    pub n_hidden: usize,
    pub weights: usize,
    pub batch: usize,
    pub batches_timed: usize,
    /// Each timed batch's seconds (one CD-1 update each); on the device one figure, the mean
    /// of the batches submitted back to back.
    pub seconds: Vec<f64>,
    pub seconds_median: f64,
    pub seconds_per_million: f64,
    /// Table 3's dual-core CPU and GPU figures for this shape, when it is one of the paper's.
    pub paper_dual_core_cpu: Option<f64>,
    pub paper_gtx_280: Option<f64>,
    /// A sanity figure (finite, below the data's variance of ~1): on the CPU the mean
    /// `(v0 − v1)²` of the timed batches; on the device the mean-field reconstruction error of
    /// the model after them, computed by the CPU reference.
    pub reconstruction_error: f64,
    pub device: String,
    /// The device's product kernels (`gpu::local_rbm::LocalTiling::name`); `None` on the CPU.
    pub tiling: Option<String>,
}

/// The benchmark's CD-1 settings: the defaults but a learning rate of 0.002. At Raina's overlap
/// (each pixel under 9 patches of 192 units) the default 0.02, tuned at 16², diverges within
/// a few batches (measured at 48²: reconstruction error 1.2 → 5,000 → 1.8e8 over three
/// epochs; 0.002 lowers it steadily), and the row's reconstruction error is its sanity check.
/// The rate does not change the work timed.
pub const BENCH_LEARNING_RATE: f32 = 0.002;

fn bench_settings(seed: u64) -> LocalCdSettings {
    LocalCdSettings { batch_size: BATCH, seed, learning_rate: BENCH_LEARNING_RATE, ..Default::default() }
}

/// Times `batches` CD-1 batches after `warmups` untimed ones at `size`².
pub fn bench_cpu(size: usize, warmups: usize, batches: usize, seed: u64) -> Result<LocalBenchRow, String> {
    if batches == 0 {
        return Err("--local-batches: 0; expected at least 1 timed batch".into());
    }
    let geometry = Geometry::new(size, size, 1, PATCH, STRIDE, HIDDEN_PER_PATCH, false).map_err(|e| format!("--local-sizes {size}: {e}"))?;
    let images = grating_images(4, 2 * size, seed);
    let cases = image_crops(&images, size, BATCH, seed, VisibleUnits::Gaussian)?;
    let settings = bench_settings(seed);
    let mut trainer = LocalCdTrainer::new(settings, geometry, &cases)?;
    for _ in 0..warmups {
        trainer.train_batch(&cases);
    }
    let mut seconds = Vec::with_capacity(batches);
    let mut squared = 0.0;
    for _ in 0..batches {
        let started = now_seconds();
        squared += trainer.train_batch(&cases);
        seconds.push(now_seconds() - started);
    }
    let mut sorted = seconds.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let paper = paper_seconds_per_million(size);
    Ok(LocalBenchRow {
        image_size: size,
        positions: geometry.positions(),
        n_visible: geometry.n_visible(),
        n_hidden: geometry.n_hidden(),
        weights: geometry.weight_count(),
        batch: BATCH,
        batches_timed: batches,
        seconds,
        seconds_median: median,
        seconds_per_million: median / BATCH as f64 * 1e6,
        paper_dual_core_cpu: paper.map(|p| p.0),
        paper_gtx_280: paper.map(|p| p.1),
        reconstruction_error: squared / (batches * cases.len()) as f64,
        device: crate::backend::Backend::describe(&crate::backend::cpu::CpuBackend),
        tiling: None,
    })
}

/// As [`bench_cpu`] on the device (`gpu::local_rbm_trainer`): the batch uploaded once, the
/// model resident, `warmups` untimed batches, then `batches` submitted back to back and timed
/// together up to the device's idle (the per-batch figure is their mean).
pub async fn bench_gpu(ctx: &crate::gpu::GpuContext, size: usize, warmups: usize, batches: usize, seed: u64) -> Result<LocalBenchRow, String> {
    use crate::gpu::buffers::{upload, wait_idle};
    use crate::gpu::local_rbm_trainer::GpuLocalTrainer;
    if batches == 0 {
        return Err("--local-batches: 0; expected at least 1 timed batch".into());
    }
    let geometry = Geometry::new(size, size, 1, PATCH, STRIDE, HIDDEN_PER_PATCH, false).map_err(|e| format!("--local-sizes {size}: {e}"))?;
    crate::gpu::local_rbm_trainer::check_fit(ctx, &geometry, BATCH).map_err(|e| format!("--local-sizes {size}: {e}"))?;
    let images = grating_images(4, 2 * size, seed);
    let cases = image_crops(&images, size, BATCH, seed, VisibleUnits::Gaussian)?;
    let settings = bench_settings(seed);
    let start = LocalCdTrainer::new(settings.clone(), geometry, &cases)?.model;
    let mut trainer = GpuLocalTrainer::new(ctx, &start, settings, BATCH);
    let tiling = trainer.tiling().name().to_string();
    let batch = upload(ctx, "local_bench_batch", &cases);
    warm_up(ctx, &mut trainer, &batch, warmups.max(1)).await?;
    let started = now_seconds();
    for _ in 0..batches {
        trainer.train_batch(ctx, &batch);
    }
    wait_idle(ctx).await.map_err(|e| e.to_string())?;
    let per_batch = (now_seconds() - started) / batches as f64;
    let model = trainer.model(ctx).await.map_err(|e| e.to_string())?;
    if !model.is_finite() {
        return Err(format!("--local-sizes {size}: the device's weights went non-finite"));
    }
    let reconstruction_error = model.reconstruction_error(&cases);
    let paper = paper_seconds_per_million(size);
    let info = &ctx.adapter_info;
    Ok(LocalBenchRow {
        image_size: size,
        positions: geometry.positions(),
        n_visible: geometry.n_visible(),
        n_hidden: geometry.n_hidden(),
        weights: geometry.weight_count(),
        batch: BATCH,
        batches_timed: batches,
        seconds: vec![per_batch],
        seconds_median: per_batch,
        seconds_per_million: per_batch / BATCH as f64 * 1e6,
        paper_dual_core_cpu: paper.map(|p| p.0),
        paper_gtx_280: paper.map(|p| p.1),
        reconstruction_error,
        device: format!("{} ({:?})", info.name, info.backend),
        tiling: Some(tiling),
    })
}

/// At least `batches` untimed batches, and more until `bench::gpu_warm_up_seconds` have passed
/// (the GPU's clock rises only after sustained work: a fixed 2–3 batches left 192² at 84 s per
/// million instead of 31, docs/LOCAL_RBM.md), then the device idle.
async fn warm_up(ctx: &crate::gpu::GpuContext, trainer: &mut crate::gpu::local_rbm_trainer::GpuLocalTrainer, batch: &wgpu::Buffer, batches: usize) -> Result<(), String> {
    use crate::gpu::buffers::wait_idle;
    let seconds = crate::bench::gpu_warm_up_seconds();
    let started = now_seconds();
    let mut done = 0;
    loop {
        // In rounds of a few batches, so the wait is never long past the time asked.
        for _ in 0..batches.saturating_sub(done).max(4) {
            trainer.train_batch(ctx, batch);
            done += 1;
        }
        wait_idle(ctx).await.map_err(|e| e.to_string())?;
        if done >= batches && now_seconds() - started >= seconds {
            return Ok(());
        }
    }
}

/// Where a batch's time goes at `size`² on the device: the trainer of [`bench_gpu`] (the
/// tiling `DEEPBELIEF_LOCAL_TILING` picks), `warmups` untimed batches, then GPU timestamps
/// around every dispatch of `batches` batches (`GpuLocalTrainer::profile`). Needs the
/// adapter's timestamp queries; the error says so where they are missing.
pub async fn profile_gpu(ctx: &crate::gpu::GpuContext, size: usize, warmups: usize, batches: usize, seed: u64) -> Result<crate::gpu::local_rbm_trainer::LocalProfile, String> {
    use crate::gpu::buffers::upload;
    use crate::gpu::local_rbm_trainer::GpuLocalTrainer;
    let geometry = Geometry::new(size, size, 1, PATCH, STRIDE, HIDDEN_PER_PATCH, false).map_err(|e| format!("--local-sizes {size}: {e}"))?;
    crate::gpu::local_rbm_trainer::check_fit(ctx, &geometry, BATCH).map_err(|e| format!("--local-sizes {size}: {e}"))?;
    let images = grating_images(4, 2 * size, seed);
    let cases = image_crops(&images, size, BATCH, seed, VisibleUnits::Gaussian)?;
    let settings = bench_settings(seed);
    let start = LocalCdTrainer::new(settings.clone(), geometry, &cases)?.model;
    let mut trainer = GpuLocalTrainer::new(ctx, &start, settings, BATCH);
    let batch = upload(ctx, "local_bench_batch", &cases);
    warm_up(ctx, &mut trainer, &batch, warmups).await?;
    trainer.profile(ctx, &batch, batches).await.map_err(|e| format!("--local-profile at {size}²: {}", e.0))
}
