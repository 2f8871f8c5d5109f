//! Chains parity: generative Gibbs chains started and advanced through `engine::chains`.
//!
//! - Draw for draw: the engine's chains and the CPU's, same seed, read the same Philox
//!   uniforms, so they stay identical until a probability lies within rounding of its uniform
//!   and one sample flips. Starting images must agree to 1e-5 (f32 products); after the steps
//!   at least 90% of the chains must still agree, their images to 1e-4 (rounding through a
//!   two-layer propagation down).
//! - Against the model: on a 6 × 4 RBM the chains' mean images estimate E[v_i], and their
//!   products E[v_i v_j] (visible units are independent given the hidden state), which exact
//!   enumeration of the 64 visible states gives. 2048 chains, 8 readings 5 steps apart after 20
//!   steps of burn-in: the standard error is below 0.5/√2048 ≈ 0.011 even if the readings were
//!   fully correlated, so 0.04 is over 3.5 standard errors.

use super::max_gap;
use crate::engine_suite::Harness;
use crate::support::gpu_eval::{random_dbn, random_rbm, stroke_bytes};
use deepbelief::engine::chains::{ChainStart, Chains};
use deepbelief::engine::Engine;
use deepbelief::model::{Dbn, Rbm, VisibleUnits};

const SEED: u64 = 1234;

/// Starts chains on the engine and on the CPU, compares their images, advances both `steps`
/// (in two calls, across a device submission when `steps` > 32) and compares again.
async fn follow(engine: &Engine, dbn: &Dbn, start: ChainStart<'_>, steps: usize) -> Result<String, String> {
    let mut on_engine = Chains::start(engine, dbn, start, SEED)?;
    let mut on_cpu = Chains::start(&Engine::Cpu, dbn, start, SEED)?;
    ensure!(on_engine.on_gpu() == engine.is_gpu(), "chains on the GPU: {}, engine on the GPU: {}", on_engine.on_gpu(), engine.is_gpu());
    let n = on_cpu.n_chains();
    ensure!(on_engine.n_chains() == n, "{} chains, the CPU has {n}", on_engine.n_chains());
    let start_images = on_engine.images(dbn).await?;
    let start_gap = max_gap(&start_images, &on_cpu.images(dbn).await?);
    ensure!(start_gap <= 1e-5, "starting images differ by {start_gap:e}");
    let first = steps / 3;
    for part in [first, steps - first] {
        on_engine.advance(dbn, part);
        on_cpu.advance(dbn, part);
    }
    ensure!(on_engine.steps_done() == steps as u64, "{} steps done, expected {steps}", on_engine.steps_done());
    let (images, cpu_images) = (on_engine.images(dbn).await?, on_cpu.images(dbn).await?);
    let pixels = cpu_images.len() / n;
    let gaps: Vec<f64> = (0..n).map(|r| max_gap(&images[r * pixels..][..pixels], &cpu_images[r * pixels..][..pixels])).collect();
    let agreeing = gaps.iter().filter(|&&g| g <= 1e-4).count();
    ensure!(agreeing as f64 >= 0.9 * n as f64, "only {agreeing} of {n} chains agree with the CPU's after {steps} steps");
    let moved = max_gap(&images, &start_images);
    ensure!(moved > 0.1, "the chains did not move ({moved})");
    Ok(format!("{n} chains × {steps} steps: start {start_gap:.1e}, {agreeing}/{n} agree at the end"))
}

/// A two-layer model over 300 inputs (more than a workgroup's 256 lanes) from data cases, and a one-layer model from random states across a
/// submission boundary (40 steps > 32 per submission).
pub async fn chains_follow_cpu_draw_for_draw<H: Harness>(h: &H) -> Result<String, String> {
    let data = stroke_bytes(100, 300, 8);
    let cases: Vec<usize> = (0..24).map(|k| k * 4).collect();
    let two = random_dbn(300, &[60, 30], 0.3, VisibleUnits::Bernoulli);
    let from_data = follow(h.engine(), &two, ChainStart::Data { data: &data, cases: &cases }, 6).await?;
    let one = random_dbn(64, &[24], 0.2, VisibleUnits::Bernoulli);
    let from_random = follow(h.engine(), &one, ChainStart::Random { count: 16 }, 40).await?;
    Ok(format!("from data: {from_data}; from random states: {from_random}"))
}

/// E[v_i] and E[v_i v_j] of `rbm` by enumerating its visible states.
fn exact_moments(rbm: &Rbm) -> (Vec<f64>, Vec<f64>) {
    let (nv, nh) = (rbm.n_visible, rbm.n_hidden);
    let softplus = |x: f64| x.max(0.0) + (-x.abs()).exp().ln_1p();
    let states: Vec<Vec<f64>> = (0..1usize << nv).map(|s| (0..nv).map(|i| ((s >> i) & 1) as f64).collect()).collect();
    let negative_free_energy = |v: &Vec<f64>| {
        let visible: f64 = v.iter().zip(&rbm.visible_bias).map(|(&x, &b)| x * b as f64).sum();
        visible + (0..nh).map(|j| softplus(rbm.hidden_bias[j] as f64 + (0..nv).map(|i| v[i] * rbm.weights[i * nh + j] as f64).sum::<f64>())).sum::<f64>()
    };
    let logits: Vec<f64> = states.iter().map(negative_free_energy).collect();
    let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = logits.iter().map(|l| (l - max).exp()).collect();
    let total: f64 = weights.iter().sum();
    let mut means = vec![0.0; nv];
    let mut products = vec![0.0; nv * nv];
    for (v, w) in states.iter().zip(&weights) {
        for i in 0..nv {
            means[i] += w * v[i] / total;
            for j in 0..nv {
                products[i * nv + j] += w * v[i] * v[j] / total;
            }
        }
    }
    (means, products)
}

pub async fn chains_sample_the_exact_marginals<H: Harness>(h: &H) -> Result<String, String> {
    let rbm = random_rbm(6, 4, 61, 1.5, VisibleUnits::Bernoulli);
    let (nv, n) = (rbm.n_visible, 2048);
    let dbn = Dbn { layers: vec![rbm.clone()] };
    let (exact_means, exact_products) = exact_moments(&rbm);
    let mut chains = Chains::start(h.engine(), &dbn, ChainStart::Random { count: n }, 77)?;
    chains.advance(&dbn, 20);
    let (mut means, mut products) = (vec![0.0f64; nv], vec![0.0f64; nv * nv]);
    let readings = 8;
    for _ in 0..readings {
        chains.advance(&dbn, 5);
        let images = chains.images(&dbn).await?;
        for p in images.chunks_exact(nv) {
            for i in 0..nv {
                means[i] += p[i] as f64;
                for j in 0..nv {
                    products[i * nv + j] += if i == j { p[i] as f64 } else { p[i] as f64 * p[j] as f64 };
                }
            }
        }
    }
    let count = (n * readings) as f64;
    means.iter_mut().chain(products.iter_mut()).for_each(|m| *m /= count);
    let mean_gap = means.iter().zip(&exact_means).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    let product_gap = products.iter().zip(&exact_products).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    ensure!(mean_gap <= 0.04 && product_gap <= 0.04, "E[v]: max gap {mean_gap:.4} ({means:.3?} vs exact {exact_means:.3?}); E[v_i v_j]: max gap {product_gap:.4}");
    let spread = exact_means.iter().fold(0.0f64, |m, &p| m.max((p - 0.5).abs()));
    ensure!(spread > 0.1, "the model's marginals are all near 1/2 ({exact_means:.3?}): a weak test");
    Ok(format!("{n} chains × {readings} readings: E[v] within {mean_gap:.4} of exact, E[v_i v_j] within {product_gap:.4}"))
}
