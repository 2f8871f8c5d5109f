//! The GPU evaluation and sampling checks against the CPU reference, shared by the native
//! suite (tests/gpu_eval.rs, lavapipe) and the browser suite (tests/web_gpu_eval.rs, WebGPU in
//! headless Chromium). Each returns a one-line report of the measured differences, or why it
//! failed.

use super::check::{gpu, hash, relative, values, Outcome};
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::{CaseValues, Dataset};
use deepbelief::eval::{self, UnitStats};
use deepbelief::gpu::evaluate::{EvalKernels, GpuDataset, GpuRbm};
use deepbelief::gpu::GpuContext;
use deepbelief::model::{Rbm, VisibleUnits};
use deepbelief::train::greedy::propagate_dataset;

/// An RBM with uniform weights in ±`scale` and biases in ±1.
pub fn random_rbm(nv: usize, nh: usize, seed: u32, scale: f32, units: VisibleUnits) -> Rbm {
    Rbm {
        visible_units: units,
        n_visible: nv,
        n_hidden: nh,
        weights: values(nv * nh, seed, -scale, scale),
        visible_bias: values(nv, seed + 1, -1.0, 1.0),
        hidden_bias: values(nh, seed + 2, -1.0, 1.0),
    }
}

/// Digit-like u8 cases: mostly 0, a band of 255 and grey edges, varying by case.
pub fn stroke_bytes(n_cases: usize, n_inputs: usize, seed: u32) -> Dataset {
    let bytes: Vec<u8> = (0..n_cases * n_inputs)
        .map(|k| {
            let (case, i) = (k / n_inputs, k % n_inputs);
            let centre = (hash(seed ^ case as u32) as usize) % n_inputs;
            let distance = i.abs_diff(centre);
            match distance {
                0..=3 => 255,
                4..=6 => (hash(seed.wrapping_add(k as u32)) & 0xFF) as u8,
                _ => 0,
            }
        })
        .collect();
    Dataset { values: CaseValues::Bytes(bytes), ..Dataset::from_floats("strokes", n_inputs, vec![0.0; n_cases * n_inputs]) }
}

/// Reconstruction errors, mean free energy (raw and binarised), pseudo-log-likelihood and hidden
/// unit statistics of `rbm` on `data` (at most `max_cases` cases), GPU against CPU.
/// `tolerance` bounds the relative differences of the scalar measures.
pub async fn evaluation_matches_cpu(ctx: &GpuContext, rbm: &Rbm, data: &Dataset, max_cases: usize, tolerance: f64) -> Outcome {
    let kernels = EvalKernels::new(ctx);
    let g_rbm = GpuRbm::upload(ctx, rbm);
    let g_data = gpu(GpuDataset::upload(ctx, data))?;
    let cpu = &CpuBackend;
    let mut report = Vec::new();

    let g = gpu(kernels.reconstruction_errors(ctx, &g_rbm, &g_data, max_cases).await)?;
    let c = eval::reconstruction_errors(cpu, rbm, data, max_cases);
    let mse = relative(g.mean_squared_error, c.mean_squared_error);
    ensure!(mse <= tolerance, "reconstruction MSE: gpu {} cpu {} (relative {mse:e})", g.mean_squared_error, c.mean_squared_error);
    ensure!(g.cross_entropy.is_some() == c.cross_entropy.is_some(), "cross-entropy presence differs");
    let ce = relative(g.cross_entropy.unwrap_or(0.0), c.cross_entropy.unwrap_or(0.0));
    ensure!(ce <= tolerance, "cross-entropy: gpu {:?} cpu {:?} (relative {ce:e})", g.cross_entropy, c.cross_entropy);
    report.push(format!("MSE {:.6} rel {mse:.1e}, CE {:.4} rel {ce:.1e}", c.mean_squared_error, c.cross_entropy.unwrap_or(f64::NAN)));

    let g = gpu(kernels.mean_free_energy(ctx, &g_rbm, &g_data, max_cases, false).await)?;
    let c = eval::mean_free_energy(cpu, rbm, data, max_cases);
    let fe = relative(g, c);
    ensure!(fe <= tolerance, "mean free energy: gpu {g} cpu {c} (relative {fe:e})");
    report.push(format!("F {c:.4} rel {fe:.1e}"));

    if rbm.visible_units == VisibleUnits::Bernoulli {
        let binary = binarised(data);
        let g = gpu(kernels.mean_free_energy(ctx, &g_rbm, &g_data, max_cases, true).await)?;
        let c = eval::mean_free_energy(cpu, rbm, &binary, max_cases);
        let fe = relative(g, c);
        ensure!(fe <= tolerance, "binarised mean free energy: gpu {g} cpu {c} (relative {fe:e})");
        report.push(format!("F(binary) rel {fe:.1e}"));

        for seed in [1u64, 77] {
            let g = gpu(kernels.pseudo_log_likelihood(ctx, &g_rbm, &g_data, max_cases, seed).await)?;
            let c = eval::pseudo_log_likelihood(cpu, rbm, data, max_cases, seed).map_err(|e| e.to_string())?;
            let pll = relative(g, c);
            ensure!(pll <= tolerance, "pseudo-log-likelihood (seed {seed}): gpu {g} cpu {c} (relative {pll:e})");
            report.push(format!("PLL[{seed}] {c:.4} rel {pll:.1e}"));
        }
        ensure!(gpu(kernels.pseudo_log_likelihood(ctx, &g_rbm, &g_data, max_cases, 1).await)? != gpu(kernels.pseudo_log_likelihood(ctx, &g_rbm, &g_data, max_cases, 2).await)?, "the PLL does not depend on its seed");
    } else {
        ensure!(kernels.pseudo_log_likelihood(ctx, &g_rbm, &g_data, max_cases, 1).await.is_err(), "PLL of Gaussian units must be refused");
    }

    let g = gpu(kernels.hidden_unit_statistics(ctx, &g_rbm, &g_data, max_cases).await)?;
    let c = eval::hidden_unit_statistics(cpu, rbm, data, max_cases);
    ensure!(g.len() == c.len(), "{} unit statistics, expected {}", g.len(), c.len());
    let (mean, sd, skew) = unit_stat_gaps(&g, &c);
    ensure!(mean <= 1e-5 && sd <= 1e-5 && skew <= 1e-3, "unit statistics: max |Δmean| {mean:e}, |Δsd| {sd:e}, relative Δskew {skew:e}");
    report.push(format!("units Δmean {mean:.1e} Δsd {sd:.1e} Δskew {skew:.1e}"));
    Ok(report.join("; "))
}

/// The largest differences of hidden unit statistics, GPU against CPU: |Δmean|, |Δsd|, and
/// |Δskewness| relative to max(|skewness|, 1). Skewness divides by σ³: it is compared only
/// where σ is well above rounding (> 1e-3).
pub fn unit_stat_gaps(gpu: &[UnitStats], cpu: &[UnitStats]) -> (f64, f64, f64) {
    let (mut mean, mut sd, mut skew) = (0.0f64, 0.0f64, 0.0f64);
    for (g, c) in gpu.iter().zip(cpu) {
        mean = mean.max((g.mean_activation - c.mean_activation).abs());
        sd = sd.max((g.standard_deviation - c.standard_deviation).abs());
        if c.standard_deviation > 1e-3 {
            skew = skew.max((g.skewness - c.skewness).abs() / c.skewness.abs().max(1.0));
        }
    }
    (mean, sd, skew)
}

/// `propagate` on the device against `propagate_dataset`, twice up a stack (u8 then f32 data).
pub async fn propagation_matches_cpu(ctx: &GpuContext, data: &Dataset, sizes: &[usize]) -> Outcome {
    let kernels = EvalKernels::new(ctx);
    let mut cpu_data = data.clone();
    let mut gpu_data = gpu(GpuDataset::upload(ctx, data))?;
    let mut report = Vec::new();
    for (layer, &nh) in sizes.iter().enumerate() {
        let rbm = random_rbm(cpu_data.n_inputs, nh, 40 + layer as u32, 0.1, VisibleUnits::Bernoulli);
        let next_gpu = gpu(kernels.propagate(ctx, &GpuRbm::upload(ctx, &rbm), &gpu_data))?;
        let next_cpu = propagate_dataset(&CpuBackend, &rbm, &cpu_data);
        let downloaded = gpu(next_gpu.to_propagated_dataset(ctx, &cpu_data).await)?;
        ensure!(downloaded.n_cases == next_cpu.n_cases && downloaded.n_inputs == next_cpu.n_inputs, "propagated shape differs");
        ensure!(downloaded.labels == next_cpu.labels && downloaded.name == next_cpu.name, "propagated metadata differs");
        let (CaseValues::Floats(g), CaseValues::Floats(c)) = (&downloaded.values, &next_cpu.values) else {
            return Err("propagated data must be f32".into());
        };
        let err = g.iter().zip(c).fold(0.0f64, |m, (g, c)| m.max((*g as f64 - *c as f64).abs()));
        ensure!(err <= 1e-5, "layer {}: propagated probabilities differ by {err:e}", layer + 1);
        ensure!(c.iter().any(|&p| p > 0.6) && c.iter().any(|&p| p < 0.4), "layer {}: probabilities are all alike", layer + 1);
        report.push(format!("layer {} ({}→{nh}) max |Δp| {err:.1e}", layer + 1, cpu_data.n_inputs));
        cpu_data = next_cpu;
        gpu_data = next_gpu;
    }
    Ok(format!("propagation of {} cases: {}", data.n_cases, report.join(", ")))
}

/// Each value set to 1 above 0.5 and to 0 otherwise.
pub fn binarised(data: &Dataset) -> Dataset {
    let mut values = vec![0.0f32; data.n_cases * data.n_inputs];
    for (k, row) in values.chunks_exact_mut(data.n_inputs).enumerate() {
        data.case_into(k, row);
        row.iter_mut().for_each(|x| *x = if *x > 0.5 { 1.0 } else { 0.0 });
    }
    Dataset { values: CaseValues::Floats(values), ..data.clone() }
}

/// A DBN of random layers over `n_inputs` with the given hidden sizes.
pub fn random_dbn(n_inputs: usize, sizes: &[usize], scale: f32, first_units: VisibleUnits) -> deepbelief::model::Dbn {
    let mut layers = Vec::new();
    let mut nv = n_inputs;
    for (k, &nh) in sizes.iter().enumerate() {
        let units = if k == 0 { first_units } else { VisibleUnits::Bernoulli };
        layers.push(random_rbm(nv, nh, 100 + 10 * k as u32, scale, units));
        nv = nh;
    }
    deepbelief::model::Dbn { layers }
}

/// Generative chains on the GPU against `GenerativeChains` with the same seed: the starting
/// states, then `steps` (advanced in two calls) Gibbs steps. Both draw the same uniforms, so
/// chains stay identical until a near-tie flips one sample; at least `min_identical` of the
/// chains must end with the same state (to `state_tolerance`: 0 for binary states), and those
/// chains' images must agree to 1e-5.
pub async fn chains_match_cpu(ctx: &GpuContext, dbn: &deepbelief::model::Dbn, start: Option<(&Dataset, &[usize])>, n_chains: usize, steps: usize, state_tolerance: f32, min_identical: f64) -> Outcome {
    use deepbelief::gpu::chains::GpuChains;
    use deepbelief::sample::GenerativeChains;
    let cpu = &CpuBackend;
    let seed = 1234;
    let (mut c, mut g) = match start {
        Some((data, cases)) => (GenerativeChains::from_data(dbn, cpu, data, cases, seed), gpu(GpuChains::from_data(ctx, dbn, data, cases, seed))?),
        None => (GenerativeChains::from_random(dbn, cpu, n_chains, seed), gpu(GpuChains::from_random(ctx, dbn, n_chains, seed))?),
    };
    let n = c.n_chains;
    ensure!(g.n_chains == n, "{} GPU chains, {n} CPU chains", g.n_chains);
    let max_diff = |a: &[f32], b: &[f32]| a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((*x as f64 - *y as f64).abs()));
    let start_state = gpu(g.state(ctx).await)?;
    let start_err = max_diff(&start_state, c.state());
    ensure!(start_err <= 1e-5, "starting states differ by {start_err:e}");
    let start_images = gpu(g.images(ctx).await)?;
    let start_image_err = max_diff(&start_images, &c.images(dbn, cpu));
    ensure!(start_image_err <= 1e-5, "starting images differ by {start_image_err:e}");

    let first = steps / 3;
    c.advance(dbn, cpu, first);
    c.advance(dbn, cpu, steps - first);
    g.advance(ctx, first);
    g.advance(ctx, steps - first);
    ensure!(g.steps_done == steps as u64, "steps_done {}", g.steps_done);
    let (gs, cs) = (gpu(g.state(ctx).await)?, c.state().to_vec());
    let width = cs.len() / n;
    let same: Vec<bool> = (0..n).map(|r| max_diff(&gs[r * width..][..width], &cs[r * width..][..width]) <= state_tolerance as f64).collect();
    let identical = same.iter().filter(|&&s| s).count();
    ensure!(identical as f64 >= min_identical * n as f64, "only {identical} of {n} chains agree after {steps} steps");
    let moved = max_diff(&gs, &start_state);
    ensure!(moved > 0.5, "the chains did not move ({moved})");
    let (gi, ci) = (gpu(g.images(ctx).await)?, c.images(dbn, cpu));
    let pixels = ci.len() / n;
    let image_err = (0..n).filter(|&r| same[r]).map(|r| max_diff(&gi[r * pixels..][..pixels], &ci[r * pixels..][..pixels])).fold(0.0, f64::max);
    ensure!(image_err <= 1e-4, "images of agreeing chains differ by {image_err:e}");
    let bytes = gpu(g.image_bytes(ctx).await)?;
    ensure!(bytes.len() == ci.len(), "image bytes: {} values", bytes.len());
    Ok(format!(
        "{n} chains, {steps} steps: start error {start_err:.1e} (images {start_image_err:.1e}); {identical}/{n} chains identical at the end, their images within {image_err:.1e}"
    ))
}
