//! CD-1 for a local-patch RBM (Raina et al. 2009, §5): Gaussian (or binary) visible units,
//! binary hidden units, mini-batches of 192, a sparsity penalty on the hidden units (Lee,
//! Ekanadham & Ng 2007), L2 weight decay and momentum.
//!
//! One batch: `h0 = σ(c + up(v0))`, `s ~ Bernoulli(h0)` (Philox stream `(seed, step,
//! HiddenSample)`, element `r·n_hidden + k` for case `r` of the batch), `v1 = E[v | s]` (mean
//! field, as the dense trainer's default), `h1 = σ(c + up(v1))`. The gradient is
//! `⟨x hᵀ⟩_data − ⟨x hᵀ⟩_recon` per bank, read from the gathered patches:
//! `∇W_p = (X0_pᵀ H0_p − X1_pᵀ H1_p) / rows`; a tied bank sums the positions. Sparsity as in
//! Lee et al. (2007) §3: after the CD step, each hidden bias also moves by
//! `sparsity_penalty · (target − q̄_j)`, `q̄_j` the batch mean of `h0_j`. Weight decay and
//! momentum as `train::weights_update` (`v = m·v + ε·(∇ − λ·w)`, `w += v`; biases without
//! decay), Hinton's fixed schedule (momentum `initial` before `momentum_switch_epoch`).
//! A tied bank's gradient and bias step are divided by the number of positions, so the
//! learning rate means the same per filter whatever the image size.
//!
//! Batches larger than the patch buffer allows are run in chunks of cases; the chunk size
//! depends only on the geometry, so results do not depend on the thread count.

use super::geometry::{CoverLists, Geometry};
use super::model::LocalRbm;
use super::passes::PassBuffers;
use crate::model::rbm::squared_difference;
use crate::model::VisibleUnits;
use crate::rng::{philox4x32_10, Purpose, RngStream};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Floats a chunk's patch buffer may hold (64 MiB; three such buffers are live).
const PATCH_BUFFER_FLOATS: usize = 16 << 20;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocalCdSettings {
    pub visible_units: VisibleUnits,
    pub epochs: usize,
    /// Raina et al.: 192.
    pub batch_size: usize,
    pub learning_rate: f32,
    pub initial_momentum: f32,
    pub final_momentum: f32,
    pub momentum_switch_epoch: usize,
    /// L2 penalty on weights only.
    pub weight_penalty: f32,
    /// Lee et al. (2007): hidden biases step by `penalty · (target − batch mean of h0)`.
    pub sparsity_penalty: f32,
    pub sparsity_target: f32,
    pub seed: u64,
}

impl Default for LocalCdSettings {
    fn default() -> Self {
        LocalCdSettings {
            visible_units: VisibleUnits::Gaussian,
            epochs: 10,
            batch_size: 192,
            // Measured on grating crops at 16² (tests/local_rbm_train.rs): 0.005 learns slowly.
            learning_rate: 0.02,
            initial_momentum: 0.5,
            final_momentum: 0.9,
            momentum_switch_epoch: 5,
            weight_penalty: 0.0002,
            sparsity_penalty: 0.1,
            sparsity_target: 0.05,
            seed: 1,
        }
    }
}

impl LocalCdSettings {
    /// The defaults for a layer of `geometry` with `visible_units`, the learning rate scaled to
    /// the layer's overlap ([`default_learning_rate`]): what the CLI trains with unless
    /// `--learning-rate` is given.
    pub fn for_layer(geometry: &Geometry, visible_units: VisibleUnits) -> LocalCdSettings {
        LocalCdSettings { visible_units, learning_rate: default_learning_rate(geometry, visible_units), ..Default::default() }
    }

    /// Errors name the CLI flag.
    pub fn validate(&self) -> Result<(), String> {
        if self.batch_size == 0 {
            return Err("--batch: 0 cases per batch; expected at least 1".into());
        }
        if self.epochs == 0 {
            return Err("--epochs: 0; expected at least 1".into());
        }
        for (flag, value) in [("--learning-rate", self.learning_rate), ("--weight-penalty", self.weight_penalty), ("--sparsity-penalty", self.sparsity_penalty)] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(format!("{flag}: {value}; expected a finite number ≥ 0"));
            }
        }
        if !(0.0..=1.0).contains(&self.sparsity_target) {
            return Err(format!("--sparsity-target: {}; expected a value in [0, 1]", self.sparsity_target));
        }
        Ok(())
    }
}

/// The CD-1 gradient estimate of one batch (before decay, sparsity and momentum), in the
/// model's layouts; tied banks summed over positions (not yet divided).
#[derive(Clone, Debug)]
pub struct Cd1Gradient {
    pub weights: Vec<f32>,
    pub visible_bias: Vec<f32>,
    pub hidden_bias: Vec<f32>,
    /// Batch mean of `h0` per hidden bias (per bank and unit; tied: also over positions).
    pub mean_hidden: Vec<f32>,
    /// `Σ (v0 − v1)²` over the batch.
    pub squared_error: f64,
}

/// Hidden units connected to the most-covered visible unit: patches over it (`⌈patch/stride⌉`
/// per axis, at most the positions along it) times the units per patch.
pub fn visible_fan_in(g: &Geometry) -> usize {
    let per_axis = |positions: usize| g.patch.div_ceil(g.stride).min(positions);
    per_axis(g.positions_rows()) * per_axis(g.positions_cols()) * g.hidden_per_patch
}

/// Gaussian visible units: `min(0.02, 8 / fan-in)`; binary: `min(0.5, 32 / fan-in)`, fan-in
/// from [`visible_fan_in`]. Why: in CD-1 a weight step `ε·(v0 − v1)·h` moves a pixel's
/// reconstruction by `ε·(v0 − v1)·Σ h²` over every hidden unit connected to it, so the step is
/// stable only while `ε · fan-in · E[h²]` stays below about 3 (momentum 0.5); an untrained
/// layer has `h ≈ 0.5`, `E[h²] ≈ 0.25`, hence `ε < 12 / fan-in` (measured at 48², 24×24
/// patches 8 apart, 192 units, fan-in 1,728: 0.006 learns, 0.01 diverges; the old fixed 0.02
/// went 1.2 → 5,000 → 1.8e8). Binary visible units add the sigmoid's slope (≤ 0.25) and so
/// take about 4× more. The caps are the rates measured on 16² crops (fan-in 96), where the
/// overlap is small.
pub fn default_learning_rate(g: &Geometry, visible_units: VisibleUnits) -> f32 {
    let fan_in = visible_fan_in(g).max(1) as f32;
    match visible_units {
        VisibleUnits::Gaussian => (8.0 / fan_in).min(0.02),
        VisibleUnits::Bernoulli => (32.0 / fan_in).min(0.5),
    }
}

/// Cases per chunk for this geometry (at least 1).
pub fn chunk_rows(g: &Geometry, batch: usize) -> usize {
    (PATCH_BUFFER_FLOATS / (g.positions() * g.patch_inputs()).max(1)).clamp(1, batch.max(1))
}

/// `samples[k] = 1` if `stream.uniform(first + k) < p[k]`: the Philox stream's uniforms, four
/// from each block (as `backend::cpu`), indexed from `first` so chunks draw the batch's numbers.
pub fn sample_bernoulli(probabilities: &[f32], stream: RngStream, first: u64, samples: &mut [f32]) {
    const BLOCK: usize = 4096;
    samples.par_chunks_mut(BLOCK).zip(probabilities.par_chunks(BLOCK)).enumerate().for_each(|(b, (out, p))| {
        let mut cached = (u64::MAX, [0u32; 4]);
        for (k, (s, &prob)) in out.iter_mut().zip(p).enumerate() {
            let index = first + (b * BLOCK + k) as u64;
            let group = index >> 2;
            if cached.0 != group {
                let counter = [group as u32, stream.step as u32, (stream.step >> 32) as u32, stream.purpose as u32 | ((group >> 32) as u32) << 8];
                cached = (group, philox4x32_10(counter, stream.key));
            }
            let u = (cached.1[(index & 3) as usize] >> 8) as f32 * (1.0 / 16_777_216.0);
            *s = if u < prob { 1.0 } else { 0.0 };
        }
    });
}

/// `gradient_bank(p) += scale · X_pᵀ H_p` over the rows (`[X0; X1]` and `[H0; −H1]` stacked:
/// the data and reconstruction terms in one product).
fn accumulate_patch_outer(model: &LocalRbm, patches: &[f32], hidden: &[f32], scale: f32, gradient: &mut [f32]) {
    use crate::backend::strided::{sgemm, OutPtr, Strided};
    let g = &model.geometry;
    let (width, units, positions) = (g.patch_inputs(), g.hidden_per_patch, g.positions());
    let rows = patches.len() / (positions * width);
    assert!(hidden.len() == rows * positions * units && gradient.len() == g.weight_count());
    let out = OutPtr(gradient.as_mut_ptr());
    if g.tied {
        // One product over all (case, position) rows, split along the gradient's rows.
        const GRADIENT_ROWS_PER_TASK: usize = 64;
        let total = rows * positions;
        (0..width.div_ceil(GRADIENT_ROWS_PER_TASK)).into_par_iter().for_each(|block| {
            let i0 = block * GRADIENT_ROWS_PER_TASK;
            let m = GRADIENT_ROWS_PER_TASK.min(width - i0);
            let xt = Strided::transposed(patches, i0, width);
            // SAFETY: rows i0..i0+m of the gradient, this task only.
            unsafe { sgemm(m, total, units, scale, xt, Strided::rows(hidden, 0, units), 1.0, out.at(i0 * units), units) };
        });
    } else {
        (0..positions).into_par_iter().for_each(|p| {
            let xt = Strided::transposed(patches, p * width, positions * width);
            let h = Strided::rows(hidden, p * units, positions * units);
            // SAFETY: bank p of the gradient, this task only.
            unsafe { sgemm(width, rows, units, scale, xt, h, 1.0, out.at(p * width * units), units) };
        });
    }
}

/// Sums each hidden bias's values over the rows (and, tied, over positions).
fn add_hidden_sums(model: &LocalRbm, hidden: &[f32], scale: f32, sums: &mut [f32]) {
    let g = &model.geometry;
    let (units, nh) = (g.hidden_per_patch, g.n_hidden());
    if !g.tied {
        // One task per bank, cases in order: the same sums as the loop below.
        sums.par_chunks_mut(units).enumerate().for_each(|(p, bank)| {
            for case in hidden.chunks_exact(nh) {
                for (s, h) in bank.iter_mut().zip(&case[p * units..(p + 1) * units]) {
                    *s += scale * h;
                }
            }
        });
        return;
    }
    for case in hidden.chunks_exact(nh) {
        for (p, group) in case.chunks_exact(units).enumerate() {
            let bank = model.bank_of(p);
            for (s, h) in sums[bank * units..(bank + 1) * units].iter_mut().zip(group) {
                *s += scale * h;
            }
        }
    }
}

/// The CD-1 gradient of `batch` (`rows × n_visible`) at sampling step `step`.
pub fn cd1_gradient(model: &LocalRbm, cover: &CoverLists, batch: &[f32], seed: u64, step: u64) -> Cd1Gradient {
    let g = &model.geometry;
    let (nv, nh) = (g.n_visible(), g.n_hidden());
    let rows = batch.len() / nv;
    assert!(rows > 0 && batch.len() == rows * nv);
    let mut gradient = Cd1Gradient {
        weights: vec![0.0; g.weight_count()],
        visible_bias: vec![0.0; nv],
        hidden_bias: vec![0.0; g.hidden_bias_count()],
        mean_hidden: vec![0.0; g.hidden_bias_count()],
        squared_error: 0.0,
    };
    let per_bias = if g.tied { (rows * g.positions()) as f32 } else { rows as f32 };
    let stream = RngStream::new(seed, step, Purpose::HiddenSample);
    let chunk = chunk_rows(g, rows);
    let per_case = g.positions() * g.patch_inputs();
    let mut model_buffers = PassBuffers::default();
    // The data's and the reconstruction's patches and hidden probabilities stacked (data rows
    // first), so the gradient is one product per bank over 2·n rows: [X0; X1]ᵀ [H0; −H1].
    let mut patches = Vec::new();
    let mut hidden = Vec::new();
    for (c, v0) in batch.chunks(chunk * nv).enumerate() {
        let n = v0.len() / nv;
        patches.resize(2 * n * per_case, 0.0);
        hidden.resize(2 * n * nh, 0.0);
        let (patches0, patches1) = patches.split_at_mut(n * per_case);
        let (h0, h1) = hidden.split_at_mut(n * nh);
        model.hidden_probabilities_with(v0, h0, patches0);
        let mut sample = vec![0.0; n * nh];
        sample_bernoulli(h0, stream, (c * chunk * nh) as u64, &mut sample);
        let mut v1 = vec![0.0; n * nv];
        model.visible_expectations(cover, &sample, &mut v1, &mut model_buffers);
        model.hidden_probabilities_with(&v1, h1, patches1);
        let scale = 1.0 / rows as f32;
        add_hidden_sums(model, h0, scale, &mut gradient.hidden_bias);
        add_hidden_sums(model, h1, -scale, &mut gradient.hidden_bias);
        add_hidden_sums(model, h0, 1.0 / per_bias, &mut gradient.mean_hidden);
        h1.par_iter_mut().for_each(|h| *h = -*h);
        accumulate_patch_outer(model, &patches, &hidden, scale, &mut gradient.weights);
        for (case0, case1) in v0.chunks_exact(nv).zip(v1.chunks_exact(nv)) {
            for ((gv, a), b) in gradient.visible_bias.iter_mut().zip(case0).zip(case1) {
                *gv += (a - b) * scale;
            }
        }
        gradient.squared_error += squared_difference(v0, &v1);
    }
    gradient
}

#[derive(Clone, Debug, Serialize)]
pub struct LocalEpochReport {
    /// 1-based.
    pub epoch: usize,
    /// Mean `(v0 − v1)²` over the epoch's batches (weights as they moved).
    pub reconstruction_error: f64,
    pub momentum: f32,
    pub seconds: f64,
}

/// The momentum terms of a layer's parameters, in the model's layouts.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalVelocities {
    pub weights: Vec<f32>,
    pub hidden_bias: Vec<f32>,
    pub visible_bias: Vec<f32>,
}

impl LocalVelocities {
    /// At rest.
    pub fn zeros(g: &Geometry) -> LocalVelocities {
        LocalVelocities { weights: vec![0.0; g.weight_count()], hidden_bias: vec![0.0; g.hidden_bias_count()], visible_bias: vec![0.0; g.n_visible()] }
    }
}

/// A local-patch RBM and its training state.
pub struct LocalCdTrainer {
    pub settings: LocalCdSettings,
    pub model: LocalRbm,
    pub cover: CoverLists,
    velocity: LocalVelocities,
    /// Batches trained: the sampling stream's step.
    pub step: u64,
    pub epoch: usize,
}

impl LocalCdTrainer {
    /// A fresh model on `cases` (`n × n_visible`): visible biases from the data's means.
    pub fn new(settings: LocalCdSettings, geometry: Geometry, cases: &[f32]) -> Result<LocalCdTrainer, String> {
        settings.validate()?;
        let nv = geometry.n_visible();
        if cases.is_empty() || !cases.len().is_multiple_of(nv) {
            return Err(format!("--images: {} values do not make whole cases of {nv} visible units", cases.len()));
        }
        let n = cases.len() / nv;
        let mut means = vec![0.0f64; nv];
        for case in cases.chunks_exact(nv) {
            for (m, x) in means.iter_mut().zip(case) {
                *m += *x as f64;
            }
        }
        let means: Vec<f32> = means.iter().map(|m| (m / n as f64) as f32).collect();
        let model = LocalRbm::initialise(geometry, settings.visible_units, &means, settings.seed);
        Ok(Self::resume(settings, model))
    }

    /// Training state for an existing model (momentum starts at rest).
    pub fn resume(settings: LocalCdSettings, model: LocalRbm) -> LocalCdTrainer {
        let velocity = LocalVelocities::zeros(&model.geometry);
        Self::resume_at(settings, model, velocity, 0, 0)
    }

    /// Training state as another trainer left it (a device's last download): the model, its
    /// velocities, the batches trained (the sampling step) and the epochs done.
    pub fn resume_at(settings: LocalCdSettings, model: LocalRbm, velocity: LocalVelocities, step: u64, epoch: usize) -> LocalCdTrainer {
        let g = model.geometry;
        assert!(velocity.weights.len() == g.weight_count() && velocity.hidden_bias.len() == g.hidden_bias_count() && velocity.visible_bias.len() == g.n_visible());
        LocalCdTrainer { cover: CoverLists::new(&g), velocity, step, epoch, settings, model }
    }

    pub fn velocities(&self) -> &LocalVelocities {
        &self.velocity
    }

    fn momentum(&self) -> f32 {
        if self.epoch < self.settings.momentum_switch_epoch {
            self.settings.initial_momentum
        } else {
            self.settings.final_momentum
        }
    }

    /// One CD-1 step on `batch`; returns `Σ (v0 − v1)²`.
    pub fn train_batch(&mut self, batch: &[f32]) -> f64 {
        let gradient = cd1_gradient(&self.model, &self.cover, batch, self.settings.seed, self.step);
        let s = &self.settings;
        let (rate, momentum) = (s.learning_rate, self.momentum());
        let tied_scale = if self.model.geometry.tied { 1.0 / self.model.geometry.positions() as f32 } else { 1.0 };
        let decay = s.weight_penalty;
        self.model.weights.par_chunks_mut(4096).zip(self.velocity.weights.par_chunks_mut(4096)).zip(gradient.weights.par_chunks(4096)).for_each(|((w, v), g)| {
            for ((w, v), g) in w.iter_mut().zip(v.iter_mut()).zip(g) {
                *v = momentum * *v + rate * (g * tied_scale - decay * *w);
                *w += *v;
            }
        });
        for ((b, v), g) in self.model.visible_bias.iter_mut().zip(&mut self.velocity.visible_bias).zip(&gradient.visible_bias) {
            *v = momentum * *v + rate * g;
            *b += *v;
        }
        for (((b, v), g), q) in self.model.hidden_bias.iter_mut().zip(&mut self.velocity.hidden_bias).zip(&gradient.hidden_bias).zip(&gradient.mean_hidden) {
            *v = momentum * *v + rate * g * tied_scale;
            *b += *v + s.sparsity_penalty * (s.sparsity_target - q);
        }
        self.step += 1;
        gradient.squared_error
    }

    /// One pass over `cases` in order, in batches of `batch_size` (the caller shuffles or
    /// draws fresh crops per epoch).
    pub fn train_epoch(&mut self, cases: &[f32]) -> Result<LocalEpochReport, String> {
        let nv = self.model.geometry.n_visible();
        let started = crate::clock::now_seconds();
        let momentum = self.momentum();
        let mut total = 0.0;
        for batch in cases.chunks(self.settings.batch_size * nv) {
            total += self.train_batch(batch);
        }
        self.epoch += 1;
        if !self.model.is_finite() {
            return Err(format!("training diverged in epoch {} (NaN or infinite weights); lower --learning-rate", self.epoch));
        }
        Ok(LocalEpochReport { epoch: self.epoch, reconstruction_error: total / cases.len().max(1) as f64, momentum, seconds: crate::clock::now_seconds() - started })
    }
}
