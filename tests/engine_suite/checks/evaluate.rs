//! Evaluation parity: `Engine::stack_figures` (per-layer reconstruction errors on the data
//! propagated up, the first RBM's mean free energy on the data raw and binarised, the top
//! RBM's) against the same figures written out in f64 loops here, and against the CPU engine.
//! 1100 cases: on the device a full chunk of 1024 and a tail.
//!
//! Tolerance 1e-5 relative: the engines multiply in f32 (sums of 48 or 20 terms, rounding
//! ~1e-7 relative each) and accumulate the figures in f64; the loops are f64 throughout.

use super::close;
use crate::engine_suite::Harness;
use crate::support::gpu_eval::{random_dbn, stroke_bytes};
use deepbelief::data::Dataset;
use deepbelief::engine::evaluate::StackFigures;
use deepbelief::engine::Engine;
use deepbelief::model::{Dbn, Rbm, VisibleUnits};

const TOLERANCE: f64 = 1e-5;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn softplus(x: f64) -> f64 {
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

/// Each hidden unit's input `c_j + Σ_i v_i w_ij`.
fn hidden_inputs(rbm: &Rbm, v: &[f64]) -> Vec<f64> {
    (0..rbm.n_hidden).map(|j| rbm.hidden_bias[j] as f64 + v.iter().enumerate().map(|(i, &x)| x * rbm.weights[i * rbm.n_hidden + j] as f64).sum::<f64>()).collect()
}

/// Mean over cases and units of (v − σ(b + W σ(c + vW)))² (binary visible units).
fn reconstruction_error(rbm: &Rbm, cases: &[Vec<f64>]) -> f64 {
    let mut total = 0.0;
    for v in cases {
        let h: Vec<f64> = hidden_inputs(rbm, v).into_iter().map(sigmoid).collect();
        for (i, &x) in v.iter().enumerate() {
            let a = rbm.visible_bias[i] as f64 + h.iter().enumerate().map(|(j, &p)| p * rbm.weights[i * rbm.n_hidden + j] as f64).sum::<f64>();
            total += (x - sigmoid(a)).powi(2);
        }
    }
    total / (cases.len() * rbm.n_visible) as f64
}

/// Mean of F(v) = −b·v − Σ_j softplus(c_j + vW_j) (binary visible units).
fn mean_free_energy(rbm: &Rbm, cases: &[Vec<f64>]) -> f64 {
    let free_energy = |v: &Vec<f64>| -v.iter().zip(&rbm.visible_bias).map(|(&x, &b)| x * b as f64).sum::<f64>() - hidden_inputs(rbm, v).into_iter().map(softplus).sum::<f64>();
    cases.iter().map(free_energy).sum::<f64>() / cases.len() as f64
}

fn cases_of(data: &Dataset) -> Vec<Vec<f64>> {
    let mut row = vec![0.0f32; data.n_inputs];
    (0..data.n_cases)
        .map(|k| {
            data.case_into(k, &mut row);
            row.iter().map(|&x| x as f64).collect()
        })
        .collect()
}

/// The figures by the loops.
fn by_loops(dbn: &Dbn, data: &Dataset, binarize: bool) -> StackFigures {
    let mut input = cases_of(data);
    let first = input.clone();
    let mut layer_errors = Vec::new();
    for (k, rbm) in dbn.layers.iter().enumerate() {
        layer_errors.push(reconstruction_error(rbm, &input));
        if k + 1 < dbn.layers.len() {
            input = input.iter().map(|v| hidden_inputs(rbm, v).into_iter().map(sigmoid).collect()).collect();
        }
    }
    let top_free_energy = (dbn.layers.len() > 1).then(|| mean_free_energy(dbn.layers.last().expect("layers"), &input));
    let scored: Vec<Vec<f64>> = if binarize { first.iter().map(|v| v.iter().map(|&x| if x > 0.5 { 1.0 } else { 0.0 }).collect()).collect() } else { first };
    StackFigures { layer_errors, top_free_energy, free_energy: mean_free_energy(&dbn.layers[0], &scored) }
}

fn compare(what: &str, figures: &StackFigures, reference: &StackFigures) -> Result<f64, String> {
    let mut pairs: Vec<(String, f64, f64)> = figures.layer_errors.iter().zip(&reference.layer_errors).enumerate().map(|(k, (&a, &b))| (format!("layer {} error", k + 1), a, b)).collect();
    pairs.push(("free energy".into(), figures.free_energy, reference.free_energy));
    ensure!(figures.layer_errors.len() == reference.layer_errors.len(), "{what}: {} layer errors, expected {}", figures.layer_errors.len(), reference.layer_errors.len());
    match (figures.top_free_energy, reference.top_free_energy) {
        (Some(a), Some(b)) => pairs.push(("top free energy".into(), a, b)),
        (None, None) => {}
        (a, b) => return Err(format!("{what}: top free energy {a:?}, expected {b:?}")),
    }
    let mut worst = 0.0f64;
    for (name, a, b) in pairs {
        ensure!(close(a, b, TOLERANCE), "{what}: {name} {a} vs {b} (relative {:.2e})", (a - b).abs() / b.abs());
        worst = worst.max((a - b).abs() / b.abs().max(1e-30));
    }
    Ok(worst)
}

pub async fn stack_figures_match_loops_and_cpu<H: Harness>(h: &H) -> Result<String, String> {
    let data = stroke_bytes(1100, 48, 5);
    let dbn = random_dbn(48, &[20, 12], 0.3, VisibleUnits::Bernoulli);
    let mut report = Vec::new();
    for binarize in [false, true] {
        let figures = h.engine().stack_figures(&dbn, &data, binarize).await?;
        let loops = compare(&format!("binarize {binarize}, against the loops"), &figures, &by_loops(&dbn, &data, binarize))?;
        let cpu = compare(&format!("binarize {binarize}, against the CPU engine"), &figures, &Engine::Cpu.stack_figures(&dbn, &data, binarize).await?)?;
        report.push(format!("binarize {binarize}: errors {:.5?}, F {:.4}; relative gaps: loops {loops:.1e}, CPU {cpu:.1e}", figures.layer_errors, figures.free_energy));
    }
    Ok(report.join("; "))
}
