//! Shared by the sparse coding tests: random problems, exact f64 reference solvers of the code
//! step, and the optimality (KKT) conditions.
#![allow(dead_code)]

use deepbelief::sparse_coding::Basis;
use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

pub fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(1e-12);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// `rows` cases of `k` standard normal values.
pub fn gaussian_data(rng: &mut ChaCha8Rng, rows: usize, k: usize) -> Vec<f32> {
    (0..rows * k).map(|_| normal(rng) as f32).collect()
}

/// A known dictionary (unit columns) and `rows` cases, each `per_case` of its vectors with
/// weights ±(0.5 … 1.5), plus Gaussian noise of standard deviation `noise`.
pub fn sparse_dataset(rng: &mut ChaCha8Rng, k: usize, n: usize, rows: usize, per_case: usize, noise: f64) -> (Basis, Vec<f32>) {
    let mut values: Vec<f32> = (0..k * n).map(|_| normal(rng) as f32).collect();
    let norms = deepbelief::sparse_coding::basis::column_norms(&values, n);
    for row in values.chunks_exact_mut(n) {
        row.iter_mut().zip(&norms).for_each(|(v, &norm)| *v = (f64::from(*v) / norm) as f32);
    }
    let truth = Basis::from_values(k, n, values).unwrap();
    let mut data = vec![0.0f32; rows * k];
    for case in data.chunks_exact_mut(k) {
        let mut chosen: Vec<usize> = Vec::new();
        while chosen.len() < per_case {
            let j = rng.random_range(0..n);
            if !chosen.contains(&j) {
                chosen.push(j);
            }
        }
        let mut x = vec![0.0f64; k];
        for &j in &chosen {
            let weight = (0.5 + rng.random::<f64>()) * if rng.random::<bool>() { 1.0 } else { -1.0 };
            for (i, x) in x.iter_mut().enumerate() {
                *x += weight * f64::from(truth.values[i * n + j]);
            }
        }
        case.iter_mut().zip(x).for_each(|(c, x)| *c = (x + noise * normal(rng)) as f32);
    }
    (truth, data)
}

/// `B` as an f64 matrix `k × n`.
pub fn matrix(basis: &Basis) -> DMatrix<f64> {
    DMatrix::from_fn(basis.n_inputs, basis.n_bases, |i, j| f64::from(basis.values[i * basis.n_bases + j]))
}

/// `½‖x − Ba‖² + β‖a‖₁` in f64.
pub fn case_objective(b: &DMatrix<f64>, x: &[f32], a: &[f64], beta: f64) -> f64 {
    let x = DVector::from_iterator(x.len(), x.iter().map(|&v| f64::from(v)));
    let a_vector = DVector::from_column_slice(a);
    let r = x - b * a_vector;
    0.5 * r.norm_squared() + beta * a.iter().map(|v| v.abs()).sum::<f64>()
}

/// The exact minimiser by enumerating sign patterns (`3ⁿ`, for small `n`): for each pattern
/// `s`, the stationarity condition on its support `Q_SS a_S = c_S − β s_S` solved exactly,
/// kept if the signs agree and every coordinate off the support has `|c_j − (Qa)_j| ≤ β`. The
/// problem is convex, so a point meeting the conditions is a minimiser; the lowest is returned.
pub fn enumerate_optimum(b: &DMatrix<f64>, x: &[f32], beta: f64) -> Vec<f64> {
    let n = b.ncols();
    assert!(n <= 10, "3^n patterns");
    let q = b.transpose() * b;
    let xv = DVector::from_iterator(x.len(), x.iter().map(|&v| f64::from(v)));
    let c = b.transpose() * xv;
    let mut best: Option<(f64, Vec<f64>)> = None;
    for pattern in 0..3usize.pow(n as u32) {
        let signs: Vec<i32> = (0..n).map(|j| (pattern / 3usize.pow(j as u32) % 3) as i32 - 1).collect();
        let support: Vec<usize> = (0..n).filter(|&j| signs[j] != 0).collect();
        let mut a = vec![0.0f64; n];
        if !support.is_empty() {
            let q_s = DMatrix::from_fn(support.len(), support.len(), |r, s| q[(support[r], support[s])]);
            let rhs = DVector::from_iterator(support.len(), support.iter().map(|&j| c[j] - beta * f64::from(signs[j])));
            let Some(solution) = q_s.lu().solve(&rhs) else { continue };
            if support.iter().enumerate().any(|(r, &j)| solution[r] * f64::from(signs[j]) <= 0.0) {
                continue;
            }
            support.iter().enumerate().for_each(|(r, &j)| a[j] = solution[r]);
        }
        let qa = &q * DVector::from_column_slice(&a);
        if (0..n).any(|j| signs[j] == 0 && (c[j] - qa[j]).abs() > beta * (1.0 + 1e-12)) {
            continue;
        }
        let value = case_objective(b, x, &a, beta);
        if best.as_ref().is_none_or(|(v, _)| value < *v) {
            best = Some((value, a));
        }
    }
    best.expect("a convex problem has a minimiser meeting its conditions").1
}

/// The exact minimiser for larger `n`: FISTA in f64 (step 1/L, L = ‖B‖₂²) finds the support
/// and signs, then the stationarity condition on that support is solved exactly and the result
/// kept once it meets every optimality condition (signs agree, `|c_j − (Qa)_j| ≤ β` off the
/// support); until then FISTA runs another 500 iterations.
pub fn fista_optimum(b: &DMatrix<f64>, x: &[f32], beta: f64, max_iterations: usize) -> Vec<f64> {
    let n = b.ncols();
    let q = b.transpose() * b;
    let xv = DVector::from_iterator(x.len(), x.iter().map(|&v| f64::from(v)));
    let c = b.transpose() * xv;
    let lipschitz = q.clone().symmetric_eigenvalues().max();
    let step = 1.0 / lipschitz;
    let (mut a, mut y, mut t) = (DVector::zeros(n), DVector::zeros(n), 1.0f64);
    for iteration in 1..=max_iterations {
        let g = &q * &y - &c;
        let next = (&y - step * g).map(|v: f64| v.signum() * (v.abs() - step * beta).max(0.0));
        let t_next = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
        y = &next + ((t - 1.0) / t_next) * (&next - &a);
        a = next;
        t = t_next;
        if iteration % 500 == 0 {
            if let Some(exact) = polish(&q, &c, &a, beta) {
                return exact;
            }
        }
    }
    panic!("FISTA found no support meeting the optimality conditions in {max_iterations} iterations");
}

/// The solution of the stationarity condition on `a`'s support and signs, if it meets every
/// optimality condition.
fn polish(q: &DMatrix<f64>, c: &DVector<f64>, a: &DVector<f64>, beta: f64) -> Option<Vec<f64>> {
    let n = a.len();
    let support: Vec<usize> = (0..n).filter(|&j| a[j] != 0.0).collect();
    let mut exact = vec![0.0f64; n];
    if !support.is_empty() {
        let q_s = DMatrix::from_fn(support.len(), support.len(), |r, s| q[(support[r], support[s])]);
        let rhs = DVector::from_iterator(support.len(), support.iter().map(|&j| c[j] - beta * a[j].signum()));
        let solution = q_s.lu().solve(&rhs)?;
        for (r, &j) in support.iter().enumerate() {
            if solution[r] * a[j].signum() <= 0.0 {
                return None;
            }
            exact[j] = solution[r];
        }
    }
    let qa = q * DVector::from_column_slice(&exact);
    let inactive_ok = (0..n).all(|j| exact[j] != 0.0 || (c[j] - qa[j]).abs() <= beta * (1.0 + 1e-12));
    inactive_ok.then_some(exact)
}

/// The largest violation of the optimality conditions of `a` for `x`, relative to β:
/// `|B_jᵀ(x − Ba)| ≤ β` where `a_j = 0`, `= β·sign(a_j)` where `a_j ≠ 0`.
pub fn kkt_violation(b: &DMatrix<f64>, x: &[f32], a: &[f32], beta: f64) -> f64 {
    let xv = DVector::from_iterator(x.len(), x.iter().map(|&v| f64::from(v)));
    let av = DVector::from_iterator(a.len(), a.iter().map(|&v| f64::from(v)));
    let correlation = b.transpose() * (xv - b * av);
    (0..a.len())
        .map(|j| if a[j] == 0.0 { (correlation[j].abs() - beta).max(0.0) } else { (correlation[j] - beta * f64::from(a[j].signum())).abs() })
        .fold(0.0, f64::max)
        / beta
}

/// The mean over the true basis vectors of the largest |cos| with a learnt one.
pub fn recovery(truth: &Basis, learnt: &Basis) -> f64 {
    let (t, l) = (matrix(truth), matrix(learnt));
    let mut total = 0.0;
    for j in 0..t.ncols() {
        let tj = t.column(j);
        let best = (0..l.ncols()).map(|i| (tj.dot(&l.column(i)) / (tj.norm() * l.column(i).norm()).max(1e-300)).abs()).fold(0.0, f64::max);
        total += best;
    }
    total / t.ncols() as f64
}
