#![cfg(not(target_arch = "wasm32"))]
//! L-BFGS and its strong-Wolfe line search on functions with known minima.

use deepbelief::autoencoder::lbfgs::{minimise, LbfgsSettings, LbfgsStop, Memory};
use deepbelief::autoencoder::wolfe::{search, LineStart, WolfeSettings};
use deepbelief::supervised::conjugate_gradient::Objective;

/// Σᵢ 100(xᵢ₊₁ − xᵢ²)² + (1 − xᵢ)², minimum 0 at (1, …, 1).
struct Rosenbrock {
    evaluations: usize,
}

impl Objective for Rosenbrock {
    fn value(&mut self, x: &[f64]) -> f64 {
        self.evaluations += 1;
        x.windows(2).map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2)).sum()
    }

    fn value_and_gradient(&mut self, x: &[f64], gradient: &mut [f64]) -> f64 {
        gradient.fill(0.0);
        for i in 0..x.len() - 1 {
            let t = x[i + 1] - x[i] * x[i];
            gradient[i] += -400.0 * x[i] * t - 2.0 * (1.0 - x[i]);
            gradient[i + 1] += 200.0 * t;
        }
        self.value(x)
    }
}

fn rosenbrock(n: usize) -> (Vec<f64>, deepbelief::autoencoder::lbfgs::LbfgsOutcome, usize) {
    let mut x: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { -1.2 } else { 1.0 }).collect();
    let settings = LbfgsSettings { max_iterations: 1000, optimality_tolerance: 1e-8, progress_tolerance: 1e-20, ..LbfgsSettings::default() };
    let mut objective = Rosenbrock { evaluations: 0 };
    let mut values = Vec::new();
    let outcome = minimise(&mut objective, &mut x, &settings, &mut |_, f| {
        values.push(f);
        true
    })
    .unwrap();
    // Every iteration's line search lowers f (the Armijo condition).
    assert!(values.windows(2).all(|w| w[1] < w[0]), "f rose: {values:?}");
    assert_eq!(outcome.evaluations, objective.evaluations, "evaluations counted");
    (x, outcome, objective.evaluations)
}

/// From the classic start (−1.2, 1, −1.2, 1, …). argmin 0.11's L-BFGS (More–Thuente, memory
/// 100) takes 38 iterations in 2-D and 65 in 10-D from the same start (this one 38 and 79);
/// plain steepest descent with the same line search takes thousands, so the iteration bound
/// catches a broken two-loop recursion.
#[test]
fn minimises_rosenbrock_in_2_and_10_dimensions() {
    for (n, max_iterations) in [(2, 60), (10, 100)] {
        let (x, outcome, _) = rosenbrock(n);
        assert_eq!(outcome.stop, LbfgsStop::Optimal, "{n}-D: {outcome:?}");
        assert!(outcome.value < 1e-12, "{n}-D: f = {}", outcome.value);
        for (i, xi) in x.iter().enumerate() {
            assert!((xi - 1.0).abs() < 1e-6, "{n}-D: x[{i}] = {xi}");
        }
        assert!(outcome.iterations <= max_iterations, "{n}-D: {} iterations", outcome.iterations);
    }
}

#[test]
fn stops_at_the_iteration_limit_and_on_cancellation() {
    let mut x = vec![-1.2, 1.0];
    let settings = LbfgsSettings { max_iterations: 5, ..LbfgsSettings::default() };
    let outcome = minimise(&mut Rosenbrock { evaluations: 0 }, &mut x, &settings, &mut |_, _| true).unwrap();
    assert_eq!((outcome.stop, outcome.iterations), (LbfgsStop::MaxIterations, 5));
    let outcome = minimise(&mut Rosenbrock { evaluations: 0 }, &mut x, &LbfgsSettings::default(), &mut |i, _| i < 3).unwrap();
    assert_eq!((outcome.stop, outcome.iterations), (LbfgsStop::Cancelled, 3));
}

/// ½xᵀAx with A = diag(1, …, n): after each update the two-loop recursion meets the secant
/// equation H·y = s for the newest pair, and with n A-conjugate pairs (BFGS's hereditary
/// property) H is A⁻¹ on every vector.
#[test]
fn two_loop_recursion_satisfies_the_secant_equation_and_inverts_a_quadratic() {
    let n = 6;
    let a = |v: &[f64]| -> Vec<f64> { v.iter().enumerate().map(|(i, x)| (i + 1) as f64 * x).collect() };
    let mut memory = Memory::new(n);
    let mut direction = Vec::new();
    for k in 0..n {
        // A-conjugate steps (unit vectors, as A is diagonal), as exact line searches on a
        // quadratic take; y = A s.
        let s: Vec<f64> = (0..n).map(|i| if i == k { 0.5 + k as f64 } else { 0.0 }).collect();
        let y = a(&s);
        assert!(memory.push(&s, &y));
        // d = −H(−y) = H y must equal s.
        let minus_y: Vec<f64> = y.iter().map(|v| -v).collect();
        memory.direction(&minus_y, &mut direction);
        for (d, s) in direction.iter().zip(&s) {
            assert!((d - s).abs() < 1e-12, "pair {k}: H·y = {direction:?}, s = {s:?}");
        }
    }
    let g = [0.3, -1.0, 2.0, 0.5, -0.7, 1.1];
    memory.direction(&g, &mut direction);
    for (i, (d, g)) in direction.iter().zip(g).enumerate() {
        let expected = -g / (i + 1) as f64;
        assert!((d - expected).abs() < 1e-10, "component {i}: {d} vs {expected}");
    }
    // A pair without positive curvature is skipped, as minFunc does.
    assert!(!memory.push(&[1.0; 6], &[-1.0; 6]));
    assert_eq!(memory.skipped, 1);
}

/// φ(t) = f(x + t·d) along a line of a 1-D function with a known shape.
struct OneDimensional<F: Fn(f64) -> (f64, f64)>(F);

impl<F: Fn(f64) -> (f64, f64)> Objective for OneDimensional<F> {
    fn value(&mut self, x: &[f64]) -> f64 {
        (self.0)(x[0]).0
    }

    fn value_and_gradient(&mut self, x: &[f64], gradient: &mut [f64]) -> f64 {
        let (f, g) = (self.0)(x[0]);
        gradient[0] = g;
        f
    }
}

fn line_search(f: impl Fn(f64) -> (f64, f64), first_step: f64) -> (f64, f64, bool) {
    let (value, slope) = f(0.0);
    let mut objective = OneDimensional(f);
    let start = LineStart { x: &[0.0], direction: &[1.0], value, gradient: &[slope], slope };
    let (mut point, mut gradient) = (Vec::new(), Vec::new());
    let result = search(&mut objective, &start, first_step, &WolfeSettings::default(), &mut point, &mut gradient);
    (result.step, gradient[0], result.wolfe)
}

#[test]
fn line_search_ends_on_a_strong_wolfe_point_from_short_and_long_first_steps() {
    // (t − 3)², slope −6 at 0: strong Wolfe points have |2(t − 3)| ≤ 0.9·6 and (Armijo)
    // (t − 3)² ≤ 9 − 10⁻⁴·6t.
    for first in [1e-3, 0.5, 3.0, 40.0, 1e4] {
        let (t, g, wolfe) = line_search(|t| ((t - 3.0).powi(2), 2.0 * (t - 3.0)), first);
        assert!(wolfe, "first step {first}: no Wolfe point");
        assert!(9.0 - (t - 3.0).powi(2) >= 1e-4 * 6.0 * t, "first step {first}: Armijo fails at {t}");
        assert!(g.abs() <= 0.9 * 6.0, "first step {first}: |φ'({t})| = {}", g.abs());
    }
}

#[test]
fn line_search_backs_away_from_non_finite_values() {
    // NaN beyond t = 1, a minimum at t = 2 that cannot be reached: the search backtracks to
    // a finite point that satisfies the Armijo condition.
    let (t, g, _) = line_search(|t| if t > 1.0 { (f64::NAN, f64::NAN) } else { ((t - 2.0).powi(2), 2.0 * (t - 2.0)) }, 8.0);
    assert!(t > 0.0 && t <= 1.0, "step {t}");
    assert!(g.is_finite());
}
