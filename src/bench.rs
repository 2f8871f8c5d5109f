//! CPU training throughput: CD-1 epochs through the real trainer and `CpuBackend`, plus a
//! GEMM-only figure for the batch's product shape. Shared by the CLI (`deepbelief bench`) and
//! the web page (`www/bench.html`), so native and wasm numbers measure the same code.
//! `bench/run.mjs` compares them with NumPy and scikit-learn run on the same machine.

pub mod autoencoder;
pub mod rtrl;
pub mod sparse_coding;

use crate::backend::cpu::CpuBackend;
use crate::backend::{Activation, Backend, OuterProduct, Weights};
use crate::data::Dataset;
use crate::rng::RngStream;
use crate::train::{CdConfig, CdTrainer};
use serde::Serialize;
use std::sync::Mutex;

/// The least time GPU benchmarks run untimed work back to back before timing. The H200's
/// clock governor idles it at 345 MHz and raises the clock to 1,980 MHz only after sustained
/// work, so a warm-up of a few milliseconds left every kernel up to 5.7× slower (measured on
/// the local RBM, docs/LOCAL_RBM.md). `DEEPBELIEF_BENCH_WARM_UP_S` overrides it natively.
pub const GPU_WARM_UP_SECONDS: f64 = 1.0;

/// [`GPU_WARM_UP_SECONDS`] (a quarter of it in the browser), or `DEEPBELIEF_BENCH_WARM_UP_S` where set to a finite value ≥ 0.
pub fn gpu_warm_up_seconds() -> f64 {
    let asked = if cfg!(target_arch = "wasm32") { None } else { std::env::var("DEEPBELIEF_BENCH_WARM_UP_S").ok().and_then(|v| v.trim().parse::<f64>().ok()) };
    // A page's charts time many sizes in a row and keep the clock up between them.
    let default = if cfg!(target_arch = "wasm32") { GPU_WARM_UP_SECONDS / 4.0 } else { GPU_WARM_UP_SECONDS };
    asked.filter(|s| s.is_finite() && *s >= 0.0).unwrap_or(default)
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Median wall-clock seconds of one epoch over all cases (after one warm-up epoch).
    pub cpu_epoch_s: f64,
    /// Every timed epoch, in order.
    pub epoch_runs_s: Vec<f64>,
    /// GEMM work of an epoch (5 products of 2·rows·n_visible·n_hidden per batch) divided by
    /// `cpu_epoch_s`: the whole epoch, sampling and updates included, as GFLOP/s.
    pub gflops: f64,
    /// `visible_to_hidden` alone on a `batch_size × n_visible × n_hidden` product (best of
    /// several timed runs).
    pub gemm_gflops: f64,
    /// Where an epoch's time goes (mean over the timed epochs).
    pub epoch_split_s: EpochSplit,
    /// rayon threads the backend ran on.
    pub threads: usize,
    pub cases: usize,
    pub n_visible: usize,
    pub n_hidden: usize,
    pub batch_size: usize,
    pub repeats: usize,
    pub backend: String,
    /// "native" or "wasm32".
    pub target: String,
}

/// Seconds per epoch inside each backend call, and the rest: the trainer's own work
/// (gathering cases, weight updates, statistics) between the calls.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EpochSplit {
    pub visible_to_hidden: f64,
    pub hidden_to_visible: f64,
    /// The weight gradient's products with the weight update fused into them
    /// (`outer_products_by_blocks`).
    pub accumulate_outer: f64,
    /// Bernoulli and Gaussian sampling.
    pub sampling: f64,
    pub trainer: f64,
}

/// Floating-point operations of the five GEMMs of one CD-1 epoch (v→h, h→v, v→h, and the two
/// outer products), each `2·rows·n_visible·n_hidden`.
pub fn epoch_gemm_flops(cases: usize, n_visible: usize, n_hidden: usize) -> f64 {
    10.0 * cases as f64 * n_visible as f64 * n_hidden as f64
}

/// Seconds from a fine clock: `performance.now()` in wasm, where `clock::now_seconds` (the
/// JS `Date`) ticks in whole milliseconds, too coarse for one backend call.
#[cfg(target_arch = "wasm32")]
fn now() -> f64 {
    use wasm_bindgen::JsCast;
    thread_local! {
        static PERFORMANCE_NOW: Option<(js_sys::Function, wasm_bindgen::JsValue)> = {
            let performance = js_sys::Reflect::get(&js_sys::global(), &"performance".into()).ok().filter(|p| p.is_object());
            performance.and_then(|p| Some((js_sys::Reflect::get(&p, &"now".into()).ok()?.dyn_into().ok()?, p)))
        };
    }
    let milliseconds = PERFORMANCE_NOW.with(|n| n.as_ref().and_then(|(now, performance)| now.call0(performance).ok()?.as_f64()));
    milliseconds.map_or_else(crate::clock::now_seconds, |ms| ms / 1e3)
}

#[cfg(not(target_arch = "wasm32"))]
fn now() -> f64 {
    crate::clock::now_seconds()
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// `CpuBackend`, adding up the time spent in each kind of call.
struct TimedBackend {
    /// visible_to_hidden, hidden_to_visible, accumulate_outer, sampling.
    seconds: Mutex<[f64; 4]>,
}

impl TimedBackend {
    fn timed<T>(&self, slot: usize, work: impl FnOnce() -> T) -> T {
        let started = now();
        let result = work();
        self.seconds.lock().expect("timer")[slot] += now() - started;
        result
    }
}

impl Backend for TimedBackend {
    fn describe(&self) -> String {
        CpuBackend.describe()
    }
    fn visible_to_hidden(&self, w: Weights, visible: &[f32], bias: &[f32], activation: Activation, hidden: &mut [f32]) {
        self.timed(0, || CpuBackend.visible_to_hidden(w, visible, bias, activation, hidden))
    }
    fn hidden_to_visible(&self, w: Weights, hidden: &[f32], bias: &[f32], activation: Activation, visible: &mut [f32]) {
        self.timed(1, || CpuBackend.hidden_to_visible(w, hidden, bias, activation, visible))
    }
    fn accumulate_outer(&self, shape: (usize, usize), visible: &[f32], hidden: &[f32], scale: f32, gradient: &mut [f32]) {
        self.timed(2, || CpuBackend.accumulate_outer(shape, visible, hidden, scale, gradient))
    }
    fn outer_products_by_blocks(&self, shape: (usize, usize), products: &[OuterProduct], gradient: &mut [f32], block_rows: usize, visit: &(dyn Fn(usize, &mut [f32]) + Sync)) {
        self.timed(2, || CpuBackend.outer_products_by_blocks(shape, products, gradient, block_rows, visit))
    }
    fn bernoulli(&self, probabilities: &[f32], stream: RngStream, samples: &mut [f32]) {
        self.timed(3, || CpuBackend.bernoulli(probabilities, stream, samples))
    }
    fn add_gaussian_noise(&self, values: &mut [f32], stream: RngStream) {
        self.timed(3, || CpuBackend.add_gaussian_noise(values, stream))
    }
}

/// Trains an `n_visible × n_hidden` RBM with plain CD-1 on `data` (`CdConfig::hinton()`:
/// fixed learning rate and momentum, weight decay, mean-field reconstructions, seed 1):
/// one warm-up epoch, then `repeats` timed epochs (at least 1), reporting their median.
///
/// Panics if `data` is empty or the settings are invalid (`n_hidden` or `batch_size` zero).
pub fn bench_cpu_epoch(data: &Dataset, n_hidden: usize, batch_size: usize, repeats: usize) -> BenchReport {
    let repeats = repeats.max(1);
    let backend = TimedBackend { seconds: Mutex::new([0.0; 4]) };
    let config = CdConfig { n_hidden, batch_size: Some(batch_size), epochs: repeats + 1, ..CdConfig::hinton() };
    let mut trainer = CdTrainer::new(config, &CpuBackend, data).expect("benchmark settings and data");
    let mut epoch = || {
        let started = now();
        trainer.train_epoch(&backend, data).expect("benchmark epoch");
        now() - started
    };
    epoch();
    *backend.seconds.lock().expect("timer") = [0.0; 4];
    let epoch_runs_s: Vec<f64> = (0..repeats).map(|_| epoch()).collect();
    let cpu_epoch_s = median(&epoch_runs_s);
    let per_epoch = backend.seconds.lock().expect("timer").map(|s| s / repeats as f64);
    let mean_epoch = epoch_runs_s.iter().sum::<f64>() / repeats as f64;
    let n_visible = data.n_inputs;
    BenchReport {
        cpu_epoch_s,
        epoch_runs_s,
        gflops: epoch_gemm_flops(data.n_cases, n_visible, n_hidden) / cpu_epoch_s / 1e9,
        gemm_gflops: bench_gemm(data, n_hidden, batch_size),
        epoch_split_s: EpochSplit {
            visible_to_hidden: per_epoch[0],
            hidden_to_visible: per_epoch[1],
            accumulate_outer: per_epoch[2],
            sampling: per_epoch[3],
            trainer: mean_epoch - per_epoch.iter().sum::<f64>(),
        },
        threads: rayon::current_num_threads(),
        cases: data.n_cases,
        n_visible,
        n_hidden,
        batch_size,
        repeats,
        backend: CpuBackend.describe(),
        target: if cfg!(target_arch = "wasm32") { "wasm32" } else { "native" }.to_string(),
    }
}

/// GFLOP/s of `visible_to_hidden` (linear) on the first `batch_size` cases of `data`, with
/// small fixed weights: the best of 5 runs, each repeating the product for at least 0.1 s.
pub fn bench_gemm(data: &Dataset, n_hidden: usize, batch_size: usize) -> f64 {
    let n_visible = data.n_inputs;
    let rows = batch_size.min(data.n_cases).max(1);
    let cases: Vec<usize> = (0..rows).collect();
    let mut visible = vec![0.0; rows * n_visible];
    data.gather_into(&cases, &mut visible);
    let weights: Vec<f32> = (0..n_visible * n_hidden).map(|k| ((k % 97) as f32 - 48.0) * 1e-3).collect();
    let w = Weights { values: &weights, n_visible, n_hidden };
    let bias = vec![0.0; n_hidden];
    let mut hidden = vec![0.0; rows * n_hidden];
    let mut product = || CpuBackend.visible_to_hidden(w, &visible, &bias, Activation::Linear, &mut hidden);
    product();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let (started, mut runs) = (now(), 0u32);
        while runs == 0 || now() - started < 0.1 {
            product();
            runs += 1;
        }
        best = best.min((now() - started) / f64::from(runs));
    }
    2.0 * (rows * n_visible * n_hidden) as f64 / best / 1e9
}

// ---------------------------------------------------------------------------------------------
// GPU: whole CD-1 epochs through `gpu::trainer::GpuCdTrainer`, Raina, Madhavan & Ng (2009)
// Table 2 shapes, and GEMM throughput per kernel shape.

use crate::data::CaseValues;
use crate::gpu::gemm::{gemm_gflops, GemmVariant};
use crate::gpu::trainer::GpuCdTrainer;
use crate::gpu::{AdapterSummary, GpuContext, GpuError};
use crate::model::{Rbm, VisibleUnits};

/// One GPU epoch benchmark.
#[derive(Clone, Debug, Serialize)]
pub struct GpuEpochBench {
    /// Median wall-clock seconds of one epoch over all cases (after one warm-up epoch),
    /// including the once-per-epoch read-back of the epoch figures.
    pub gpu_epoch_s: f64,
    pub epoch_runs_s: Vec<f64>,
    /// The five GEMMs' work of an epoch divided by `gpu_epoch_s`.
    pub gflops: f64,
    pub cases: usize,
    pub n_visible: usize,
    pub n_hidden: usize,
    pub batch_size: usize,
}

/// A Raina et al. (2009) Table 2 shape: CD-1, batches of 192.
#[derive(Clone, Debug, Serialize)]
pub struct RainaRow {
    pub n_visible: usize,
    pub n_hidden: usize,
    pub batch_size: usize,
    /// Batches timed (whole epochs over a random-binary data set of `cases` cases).
    pub batches_timed: usize,
    pub cases: usize,
    /// Seconds per 1,000,000 training examples, scaled from the timed batches.
    pub seconds_per_million: f64,
    /// The five GEMMs' work per second.
    pub gflops: f64,
}

/// GFLOP/s of one GEMM kernel shape: `m × k × n` in the given operand layout.
#[derive(Clone, Debug, Serialize)]
pub struct GemmRow {
    /// What the product is in a CD batch.
    pub role: String,
    pub variant: String,
    pub m: u32,
    pub k: u32,
    pub n: u32,
    pub gflops: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct GpuBenchReport {
    /// The MNIST-shaped epoch's median seconds (`mnist.gpu_epoch_s`), at the top level.
    pub gpu_epoch_s: f64,
    pub mnist: GpuEpochBench,
    /// How the MNIST-shaped cases were made.
    pub data: String,
    pub raina: Vec<RainaRow>,
    pub gemm: Vec<GemmRow>,
    /// Per-dispatch GPU times of one batch of each shape (with `profile`, where the adapter
    /// offers timestamp queries).
    pub profiles: Vec<ShapeProfile>,
    pub adapter: AdapterSummary,
    pub backend: String,
    pub target: String,
}

fn share(ctx: &GpuContext) -> GpuContext {
    ctx.clone()
}

/// Masters' initialisation for one trial (the trainer's first trial, without scoring trials).
fn initial_rbm(data: &Dataset, n_hidden: usize, seed: u64) -> Rbm {
    Rbm::initialise(VisibleUnits::Bernoulli, data.n_inputs, n_hidden, &data.input_means(), &mut crate::train::init::trial_rng(seed, 1))
}

/// `epochs` timed epochs (after one warm-up, and untimed ones of a scratch trainer for
/// [`gpu_warm_up_seconds`]) of CD-1 on `data`; seconds of each.
/// Times `epochs` epochs after the warm-up, and more (up to 8× as many) until they add up to
/// `min_seconds`: a few tens of milliseconds of timed work swing with the GPU's clocks and the
/// host's latency.
async fn time_epochs(ctx: &GpuContext, data: &Dataset, n_hidden: usize, batch_size: usize, learning_rate: f32, epochs: usize, min_seconds: f64) -> Result<Vec<f64>, GpuError> {
    let epochs = epochs.max(1);
    let most = 8 * epochs;
    let config = CdConfig { n_hidden, batch_size: Some(batch_size), epochs: most + 1, learning_rate, convergence_tolerance: 0.0, ..CdConfig::hinton() };
    let rbm = initial_rbm(data, n_hidden, config.seed);
    let mut trainer = GpuCdTrainer::new(share(ctx), config.clone(), &rbm, data)?;
    // Untimed epochs until the clock has risen (`gpu_warm_up_seconds`); they train a scratch
    // trainer, so the timed epochs start from the same model whatever the warm-up took.
    let warm_started = now();
    trainer.train_epoch().await.map_err(|e| GpuError(e.to_string()))?;
    if now() - warm_started < gpu_warm_up_seconds() {
        let mut scratch = GpuCdTrainer::new(share(ctx), CdConfig { epochs: 10_000, ..config.clone() }, &rbm, data)?;
        while now() - warm_started < gpu_warm_up_seconds() {
            scratch.train_epoch().await.map_err(|e| GpuError(e.to_string()))?;
        }
    }
    let mut runs: Vec<f64> = Vec::new();
    while runs.len() < epochs || (runs.iter().sum::<f64>() < min_seconds && runs.len() < most) {
        let started = now();
        trainer.train_epoch().await.map_err(|e| GpuError(e.to_string()))?;
        runs.push(now() - started);
    }
    Ok(runs)
}

/// Least timed work per Raina shape, in seconds.
const RAINA_MIN_SECONDS: f64 = 0.5;

/// `data` repeated to `cases` cases (the 10k MNIST file tiled 6× for 60,000).
pub fn tile_cases(data: &Dataset, cases: usize) -> Dataset {
    let order: Vec<usize> = (0..cases).map(|i| i % data.n_cases).collect();
    let mut tiled = data.subset(&order);
    tiled.name = format!("{} tiled to {cases} cases", data.name);
    tiled
}

/// `cases` random binary cases of `n_inputs` bytes (each 255 with probability 0.15, else 0).
pub fn random_binary_cases(n_inputs: usize, cases: usize, seed: u64) -> Dataset {
    let mut state = seed;
    let bytes: Vec<u8> = (0..n_inputs * cases)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            if ((z ^ (z >> 31)) >> 40) < (0.15 * (1u64 << 24) as f64) as u64 { 255 } else { 0 }
        })
        .collect();
    Dataset {
        name: format!("random binary {cases}×{n_inputs}"),
        n_cases: cases,
        n_inputs,
        image_shape: None,
        values: CaseValues::Bytes(bytes),
        labels: None,
        input_names: (0..n_inputs).map(|i| format!("x{i}")).collect(),
        targets: None,
    }
}

/// Raina et al. (2009) Table 2's RBM shapes (visible × hidden), CD-1 with batches of 192.
pub const RAINA_SHAPES: [(usize, usize); 4] = [(576, 1024), (1024, 4096), (2304, 16000), (4096, 11008)];
pub const RAINA_BATCH: usize = 192;

/// Times CD-1 on an `n_visible × n_hidden` RBM, batches of `batch_size`, over at least
/// `min_batches` batches of random binary data (at most ~96 MiB of it on the device), and more
/// epochs where those take under [`RAINA_MIN_SECONDS`] (576 × 1024 took 1.4–1.6 s per million
/// examples over 300 batches, 45 ms, against 0.8 over longer runs).
pub async fn bench_gpu_shape(ctx: &GpuContext, n_visible: usize, n_hidden: usize, batch_size: usize, min_batches: usize) -> Result<RainaRow, GpuError> {
    let batches_per_epoch = (96 << 20) / (n_visible * batch_size);
    let batches_per_epoch = batches_per_epoch.clamp(1, min_batches.max(1));
    let cases = batches_per_epoch * batch_size;
    let data = random_binary_cases(n_visible, cases, 42);
    let epochs = min_batches.div_ceil(batches_per_epoch).max(1);
    let runs = time_epochs(ctx, &data, n_hidden, batch_size, 0.01, epochs, RAINA_MIN_SECONDS).await?;
    let seconds: f64 = runs.iter().sum();
    let examples = (cases * runs.len()) as f64;
    Ok(RainaRow {
        n_visible,
        n_hidden,
        batch_size,
        batches_timed: batches_per_epoch * runs.len(),
        cases,
        seconds_per_million: seconds / examples * 1e6,
        gflops: epoch_gemm_flops(cases, n_visible, n_hidden) * runs.len() as f64 / seconds / 1e9,
    })
}

/// GFLOP/s of one product for every tiling and split-k factor (`--gemm-sweep`): the data
/// behind [`Tiling::auto`](crate::gpu::gemm::Tiling::auto) and `auto_splits` on a new GPU.
#[derive(Clone, Debug, Serialize)]
pub struct SweepRow {
    pub variant: String,
    pub m: u32,
    pub k: u32,
    pub n: u32,
    pub tiling: String,
    pub splits: u32,
    pub gflops: f64,
    /// The automatic choice's figure, for comparison.
    pub auto_gflops: f64,
}

pub async fn gemm_sweep(ctx: &GpuContext, shapes: &[(GemmVariant, u32, u32, u32)], splits: &[u32]) -> Result<Vec<SweepRow>, GpuError> {
    use crate::gpu::gemm::{gemm_gflops_with, Tiling};
    let mut rows = Vec::new();
    for &(variant, m, k, n) in shapes {
        let repeats = ((1e11 / (2.0 * m as f64 * k as f64 * n as f64)) as u32).clamp(10, 1000);
        let auto_gflops = gemm_gflops_with(ctx, m, k, n, variant, None, None, repeats).await?;
        for tiling in Tiling::ALL {
            for &split in splits {
                if split > 1 && k / split < 16 {
                    continue;
                }
                // Some splits need more scratch than one binding holds: those are not options.
                let Ok(gflops) = gemm_gflops_with(ctx, m, k, n, variant, Some(tiling), Some(split), repeats).await else { continue };
                rows.push(SweepRow { variant: format!("{variant:?}"), m, k, n, tiling: format!("{tiling:?}"), splits: split, gflops, auto_gflops });
            }
        }
    }
    Ok(rows)
}

#[derive(Clone, Debug, Serialize)]
pub struct ShapeProfile {
    pub n_visible: usize,
    pub n_hidden: usize,
    pub batch_size: usize,
    pub profile: crate::gpu::trainer::BatchProfile,
}

/// GPU timestamps around each dispatch of CD-1 batches on `data` (see `GpuCdTrainer::profile_batches`).
pub async fn profile_shape(ctx: &GpuContext, data: &Dataset, n_hidden: usize, batch_size: usize) -> Result<ShapeProfile, GpuError> {
    let config = CdConfig { n_hidden, batch_size: Some(batch_size), epochs: 2, learning_rate: 0.01, ..CdConfig::hinton() };
    let rbm = initial_rbm(data, n_hidden, config.seed);
    let mut trainer = GpuCdTrainer::new(share(ctx), config, &rbm, data)?;
    // Warm up (pipelines compiled, buffers resident), then profile.
    trainer.profile_batches(8).await?;
    let profile = trainer.profile_batches(64).await?;
    Ok(ShapeProfile { n_visible: data.n_inputs, n_hidden, batch_size, profile })
}

/// How long each GEMM shape is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmBudget {
    /// About 2e11 FLOP per shape (20 to 2,000 products): a fraction of a second on a GPU.
    Work,
    /// At least ~1 s of products (the web clock has millisecond steps), sized by a first short
    /// run. The fixed work takes 40+ minutes on SwiftShader, whose tiled kernels ran at
    /// 0.01-0.1 GFLOP/s on a 2-core machine; a budget of wall time fits both.
    WallTime,
}

/// GFLOP/s of the four kernel shapes of a CD batch `rows × n_visible × n_hidden`, and how many
/// products each timed.
pub async fn bench_gemm_shapes(ctx: &GpuContext, rows: u32, n_visible: u32, n_hidden: u32, budget: GemmBudget) -> Result<Vec<(GemmRow, u32)>, GpuError> {
    let mut rows_out = Vec::new();
    for (role, variant, (m, k, n)) in [
        ("data → hidden (u8 gather)", GemmVariant::U8GatherNn, (rows, n_visible, n_hidden)),
        ("visible → hidden", GemmVariant::Nn, (rows, n_visible, n_hidden)),
        ("hidden → visible", GemmVariant::Nt, (rows, n_hidden, n_visible)),
        ("gradient vᵀh", GemmVariant::Tn, (n_visible, rows, n_hidden)),
    ] {
        let (gflops, repeats) = timed_gemm(ctx, m, k, n, variant, budget).await?;
        rows_out.push((GemmRow { role: role.into(), variant: format!("{variant:?}"), m, k, n, gflops }, repeats));
    }
    Ok(rows_out)
}

async fn timed_gemm(ctx: &GpuContext, m: u32, k: u32, n: u32, variant: GemmVariant, budget: GemmBudget) -> Result<(f64, u32), GpuError> {
    let flops = 2.0 * m as f64 * k as f64 * n as f64;
    if budget == GemmBudget::Work {
        let repeats = ((2e11 / flops) as u32).clamp(20, 2000);
        return Ok((gemm_gflops(ctx, m, k, n, variant, repeats).await?, repeats));
    }
    const ENOUGH_S: f64 = 1.0;
    const MAX_REPEATS: u32 = 2000;
    let mut count = ((5e7 / flops) as u32).clamp(1, MAX_REPEATS);
    loop {
        let gflops = gemm_gflops(ctx, m, k, n, variant, count).await?;
        let seconds = flops * count as f64 / (gflops * 1e9);
        // A run that already lasts long enough is the answer, which on SwiftShader is usually the first.
        if seconds >= ENOUGH_S || count == MAX_REPEATS {
            return Ok((gflops, count));
        }
        let scale = (1.2 * ENOUGH_S / seconds.max(1e-3)).ceil();
        count = (count as f64 * scale).min(MAX_REPEATS as f64) as u32;
    }
}

/// The products `--gemm-sweep` times: a CD batch's (`batch × n_visible × n_hidden`) and the
/// largest Raina shape's.
pub fn sweep_shapes(batch: u32, n_visible: u32, n_hidden: u32) -> Vec<(GemmVariant, u32, u32, u32)> {
    use GemmVariant::{Nn, Nt, Tn};
    let (b, v, h) = (batch, n_visible, n_hidden);
    vec![(Nn, b, v, h), (Nt, b, h, v), (Tn, v, b, h), (Tn, v, 2 * b, h), (Nn, 192, 4096, 11008), (Nt, 192, 11008, 4096), (Tn, 4096, 192, 11008), (Tn, 4096, 384, 11008)]
}

/// The GPU benchmark: CD-1 epochs of an `n_visible × n_hidden` RBM over `data` (batches of
/// `batch_size`, `repeats` timed epochs after a warm-up), the GEMM kernels of that batch, and
/// (with `raina`) Raina et al.'s Table 2 shapes, each timed over `raina_batches` batches.
pub async fn bench_gpu(ctx: &GpuContext, data: &Dataset, n_hidden: usize, batch_size: usize, repeats: usize, raina: bool, raina_batches: usize) -> Result<GpuBenchReport, GpuError> {
    bench_gpu_profiled(ctx, data, n_hidden, batch_size, repeats, raina, raina_batches, false).await
}

/// The page's GPU benchmark (`www/bench.html`): [`bench_gpu`] without the Raina shapes (hours
/// on a software adapter) and with the GEMMs timed by wall time; also how many products each
/// GEMM row timed.
pub async fn bench_gpu_web(ctx: &GpuContext, data: &Dataset, n_hidden: usize, batch_size: usize, repeats: usize) -> Result<(GpuBenchReport, Vec<u32>), GpuError> {
    bench_gpu_with(ctx, data, n_hidden, batch_size, repeats, false, 0, false, GemmBudget::WallTime).await
}

/// [`bench_gpu`], plus per-dispatch profiles of each shape when `profile` is set.
#[allow(clippy::too_many_arguments)]
pub async fn bench_gpu_profiled(ctx: &GpuContext, data: &Dataset, n_hidden: usize, batch_size: usize, repeats: usize, raina: bool, raina_batches: usize, profile: bool) -> Result<GpuBenchReport, GpuError> {
    Ok(bench_gpu_with(ctx, data, n_hidden, batch_size, repeats, raina, raina_batches, profile, GemmBudget::Work).await?.0)
}

#[allow(clippy::too_many_arguments)]
async fn bench_gpu_with(ctx: &GpuContext, data: &Dataset, n_hidden: usize, batch_size: usize, repeats: usize, raina: bool, raina_batches: usize, profile: bool, budget: GemmBudget) -> Result<(GpuBenchReport, Vec<u32>), GpuError> {
    let runs = time_epochs(ctx, data, n_hidden, batch_size, 0.1, repeats, 0.0).await?;
    let gpu_epoch_s = median(&runs);
    let mnist = GpuEpochBench {
        gpu_epoch_s,
        gflops: epoch_gemm_flops(data.n_cases, data.n_inputs, n_hidden) / gpu_epoch_s / 1e9,
        epoch_runs_s: runs,
        cases: data.n_cases,
        n_visible: data.n_inputs,
        n_hidden,
        batch_size,
    };
    let (mut gemm, gemm_repeats): (Vec<GemmRow>, Vec<u32>) = bench_gemm_shapes(ctx, batch_size as u32, data.n_inputs as u32, n_hidden as u32, budget).await?.into_iter().unzip();
    let mut profiles = Vec::new();
    if profile {
        profiles.push(profile_shape(ctx, data, n_hidden, batch_size).await?);
    }
    let mut rows = Vec::new();
    if raina {
        for (nv, nh) in RAINA_SHAPES {
            rows.push(bench_gpu_shape(ctx, nv, nh, RAINA_BATCH, raina_batches).await?);
            gemm.extend(bench_gemm_shapes(ctx, RAINA_BATCH as u32, nv as u32, nh as u32, budget).await?.into_iter().map(|(row, _)| row));
            if profile {
                profiles.push(profile_shape(ctx, &random_binary_cases(nv, 100 * RAINA_BATCH, 43), nh, RAINA_BATCH).await?);
            }
        }
        // The large square product, against which cuBLAS's sgemm figure is quoted.
        let gflops = gemm_gflops(ctx, 8192, 8192, 8192, GemmVariant::Nn, 20).await?;
        gemm.push(GemmRow { role: "square reference 8192³".into(), variant: "Nn".into(), m: 8192, k: 8192, n: 8192, gflops });
    }
    let report = GpuBenchReport {
        gpu_epoch_s,
        mnist,
        data: data.name.clone(),
        raina: rows,
        gemm,
        profiles,
        adapter: ctx.summary(),
        backend: format!("GPU (wgpu: {})", ctx.adapter_info.name),
        target: if cfg!(target_arch = "wasm32") { "wasm32" } else { "native" }.to_string(),
    };
    Ok((report, gemm_repeats))
}
