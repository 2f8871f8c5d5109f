//! Levenberg–Marquardt for small nets with sum-of-squares outputs (Toman §3.3.4; Bishop
//! §7.11), on the flat parameter vector of a `Network` with linear or logistic outputs.
//!
//! One epoch: the residuals r = o − t of every case and output and their Jacobian J (one
//! row per residual, ∂o/∂θ by back-propagation), then trials of
//! `θ' = θ − (JᵀJ + λI)⁻¹ Jᵀr` (Cholesky): the first whose criterion is lower is kept and λ is
//! divided by `lm_factor`; each failure multiplies λ by it and tries again, at most
//! `MAX_TRIALS` times. J has cases · outputs · parameters entries, so the rule is for small
//! nets: above `MAX_JACOBIAN_ENTRIES` it refuses.
//!
//! Each Jacobian row comes from the criterion's own gradient on one case with its targets
//! moved so that only output k has a residual, of 1: the gradient is then ∂o_k/∂θ times the
//! criterion's constant (1 for logistic outputs' `Σ/2`, 2/K for linear outputs' `Σ/K`).

use super::criterion::{criterion, criterion_and_gradient_timed, error_denominator, Cases, StageSeconds};
use super::network::{Network, OutputKind};
use super::SupervisedError;
use crate::backend::Backend;

/// The most Jacobian entries (f64) the rule builds: 160 MB.
pub const MAX_JACOBIAN_ENTRIES: usize = 20_000_000;
/// Trials of λ per epoch before the rule gives up (λ grows by 10¹² at the default factor).
pub const MAX_TRIALS: usize = 12;

/// What one epoch did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LmStep {
    /// A trial lowered the criterion; the net holds it.
    Accepted { trials: usize },
    /// No trial lowered it; the net is unchanged.
    NoProgress,
}

/// Refuses what the rule cannot do, naming why.
pub fn check(net: &Network, cases: Cases, penalty: f64) -> Result<(), SupervisedError> {
    if net.output == OutputKind::SoftMax {
        return Err(SupervisedError::Data("Levenberg–Marquardt needs a sum-of-squares criterion: linear or logistic outputs, not SoftMax".into()));
    }
    if penalty != 0.0 {
        return Err(SupervisedError::Data(format!("Levenberg–Marquardt minimises the squared error alone: the weight penalty must be 0, not {penalty}")));
    }
    let entries = cases.n_cases().saturating_mul(cases.n_outputs).saturating_mul(net.n_params());
    if entries > MAX_JACOBIAN_ENTRIES {
        return Err(SupervisedError::Data(format!(
            "Levenberg–Marquardt is for small nets: {} cases × {} outputs × {} parameters = {entries} Jacobian entries, more than {MAX_JACOBIAN_ENTRIES}",
            cases.n_cases(),
            cases.n_outputs,
            net.n_params()
        )));
    }
    Ok(())
}

/// The residuals (cases × outputs) and the Jacobian (row-major, residuals × parameters).
pub fn residuals_and_jacobian(net: &Network, backend: &dyn Backend, cases: Cases, times: &mut StageSeconds) -> (Vec<f64>, Vec<f64>) {
    let (n_out, n_params) = (cases.n_outputs, net.n_params());
    let scale = error_denominator(net.output, 1, n_out) / 2.0;
    let mut residuals = Vec::with_capacity(cases.n_cases() * n_out);
    let mut jacobian = Vec::with_capacity(cases.n_cases() * n_out * n_params);
    let mut gradient = vec![0.0f32; n_params];
    for c in 0..cases.n_cases() {
        let input = &cases.inputs[c * cases.n_inputs..(c + 1) * cases.n_inputs];
        let outputs = net.predict(backend, input);
        for k in 0..n_out {
            residuals.push((outputs[k] - cases.targets[c * n_out + k]) as f64);
            let mut moved = outputs.clone();
            moved[k] -= 1.0;
            let one = Cases { inputs: input, targets: &moved, ..cases };
            criterion_and_gradient_timed(net, backend, one, 0.0, &mut gradient, times, false);
            jacobian.extend(gradient.iter().map(|&g| g as f64 * scale));
        }
    }
    (residuals, jacobian)
}

/// Solves `(A + λI) x = b` for symmetric positive semi-definite `A` (n × n, row-major) by
/// Cholesky; `None` if the shifted matrix is not positive definite in floating point.
pub fn solve_shifted(a: &[f64], lambda: f64, b: &[f64]) -> Option<Vec<f64>> {
    let n = b.len();
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut sum = a[i * n + j] + if i == j { lambda } else { 0.0 };
            for k in 0..j {
                sum -= l[i * n + k] * l[j * n + k];
            }
            if i == j {
                if sum <= 0.0 || !sum.is_finite() {
                    return None;
                }
                l[i * n + i] = sum.sqrt();
            } else {
                l[i * n + j] = sum / l[j * n + j];
            }
        }
    }
    let mut y = vec![0.0; n];
    for i in 0..n {
        y[i] = (b[i] - (0..i).map(|k| l[i * n + k] * y[k]).sum::<f64>()) / l[i * n + i];
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        x[i] = (y[i] - (i + 1..n).map(|k| l[k * n + i] * x[k]).sum::<f64>()) / l[i * n + i];
    }
    Some(x)
}

/// One epoch at the net's current weights, whose criterion is `value`; `lambda` carries over
/// between epochs.
pub fn lm_epoch(backend: &dyn Backend, net: &mut Network, cases: Cases, value: f64, lambda: &mut f64, factor: f64, times: &mut StageSeconds) -> LmStep {
    let (residuals, jacobian) = residuals_and_jacobian(net, backend, cases, times);
    let t = crate::clock::now_seconds();
    let n = net.n_params();
    let mut normal = vec![0.0; n * n];
    let mut rhs = vec![0.0; n];
    for (row, &r) in jacobian.chunks_exact(n).zip(&residuals) {
        for i in 0..n {
            rhs[i] += row[i] * r;
            for j in 0..=i {
                normal[i * n + j] += row[i] * row[j];
            }
        }
    }
    for i in 0..n {
        for j in 0..i {
            normal[j * n + i] = normal[i * n + j];
        }
    }
    let start = net.to_params();
    for trial in 1..=MAX_TRIALS {
        if let Some(step) = solve_shifted(&normal, *lambda, &rhs) {
            let trial_params: Vec<f32> = start.iter().zip(&step).map(|(&w, &d)| (w as f64 - d) as f32).collect();
            net.set_params(&trial_params);
            let trial_value = criterion(net, backend, cases, 0.0);
            if trial_value < value {
                *lambda /= factor;
                times.update += crate::clock::now_seconds() - t;
                return LmStep::Accepted { trials: trial };
            }
        }
        *lambda *= factor;
    }
    net.set_params(&start);
    times.update += crate::clock::now_seconds() - t;
    LmStep::NoProgress
}
