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

mod stepwise {
    //! The stepwise L-BFGS ([`Lbfgs`], one iteration per call over an async objective) against
    //! the loop `minimise` ran before it was written on top of it (copied below as the reference):
    //! bit-identical iterates, values, counts and stops; and an evaluator lost mid-line-search
    //! leaves the state as it was, so the run resumes with another evaluator as if nothing happened.

    use super::Rosenbrock;
    use deepbelief::autoencoder::lbfgs::{minimise, IterationOutcome, Lbfgs, LbfgsOutcome, LbfgsSettings, LbfgsStop, Memory};
    use deepbelief::autoencoder::optimise::CostObjective;
    use deepbelief::autoencoder::stepwise::{block_on, AsyncObjective, Blocking};
    use deepbelief::autoencoder::wolfe::{dot, search, LineStart};
    use deepbelief::autoencoder::{Autoencoder, CostSettings};
    use deepbelief::backend::cpu::CpuBackend;
    use deepbelief::supervised::conjugate_gradient::Objective;

    fn l1_norm(v: &[f64]) -> f64 {
        v.iter().map(|x| x.abs()).sum()
    }

    /// `lbfgs::minimise` as it was written before `Lbfgs` (commit 455728c), verbatim but for
    /// the names it imports.
    fn reference_minimise(objective: &mut dyn Objective, x: &mut [f64], settings: &LbfgsSettings) -> LbfgsOutcome {
        let n = x.len();
        let mut gradient = vec![0.0; n];
        let mut value = objective.value_and_gradient(x, &mut gradient);
        let mut evaluations = 1;
        assert!(value.is_finite() && gradient.iter().all(|g| g.is_finite()), "a finite start");
        let mut memory = Memory::new(settings.memory);
        let outcome = |value, iterations, evaluations, stop, memory: &Memory| LbfgsOutcome { value, iterations, evaluations, stop, skipped_updates: memory.skipped };
        if l1_norm(&gradient) <= settings.optimality_tolerance {
            return outcome(value, 0, evaluations, LbfgsStop::Optimal, &memory);
        }
        let mut direction = Vec::with_capacity(n);
        let mut previous_gradient = vec![0.0; n];
        let mut new_gradient = Vec::with_capacity(n);
        let mut step_taken = vec![0.0; n];
        let mut gradient_change = vec![0.0; n];
        let mut point = Vec::with_capacity(n);
        for iteration in 1..=settings.max_iterations {
            if iteration == 1 {
                direction.clear();
                direction.extend(gradient.iter().map(|g| -g));
            } else {
                gradient_change.iter_mut().zip(gradient.iter().zip(&previous_gradient)).for_each(|(y, (g, p))| *y = g - p);
                memory.push(&step_taken, &gradient_change);
                memory.direction(&gradient, &mut direction);
            }
            if direction.iter().any(|d| !d.is_finite()) {
                return outcome(value, iteration - 1, evaluations, LbfgsStop::IllegalDirection, &memory);
            }
            let slope = dot(&gradient, &direction);
            if slope > -settings.progress_tolerance {
                return outcome(value, iteration - 1, evaluations, LbfgsStop::NotDescending, &memory);
            }
            let first_step = if iteration == 1 { (1.0 / l1_norm(&gradient)).min(1.0) } else { 1.0 };
            let start = LineStart { x, direction: &direction, value, gradient: &gradient, slope };
            let line = search(objective, &start, first_step, &settings.line_search, &mut point, &mut new_gradient);
            evaluations += line.evaluations;
            step_taken.iter_mut().zip(&direction).for_each(|(s, d)| *s = line.step * d);
            x.iter_mut().zip(&step_taken).for_each(|(x, s)| *x += s);
            let previous_value = value;
            value = line.value;
            std::mem::swap(&mut previous_gradient, &mut gradient);
            std::mem::swap(&mut gradient, &mut new_gradient);
            let stop = if l1_norm(&gradient) <= settings.optimality_tolerance {
                Some(LbfgsStop::Optimal)
            } else if l1_norm(&step_taken) <= settings.progress_tolerance {
                Some(LbfgsStop::StepTooSmall)
            } else if (value - previous_value).abs() < settings.progress_tolerance {
                Some(LbfgsStop::NoProgress)
            } else if evaluations >= settings.max_evaluations {
                Some(LbfgsStop::MaxEvaluations)
            } else {
                None
            };
            if let Some(stop) = stop {
                return outcome(value, iteration, evaluations, stop, &memory);
            }
        }
        outcome(value, settings.max_iterations, evaluations, LbfgsStop::MaxIterations, &memory)
    }

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// Steps `Lbfgs` to its end on `objective`; after each iteration `k` the iterate, value and
    /// counts must equal the reference run with `max_iterations = k`, bit for bit; the whole run
    /// must equal `minimise` and the reference run to the end.
    fn stepping_matches_the_reference(what: &str, make: &mut dyn FnMut() -> Box<dyn Objective>, x0: &[f64], settings: &LbfgsSettings) -> usize {
        let mut stepped_objective = make();
        let mut objective = Blocking(stepped_objective.as_mut());
        let mut state = block_on(Lbfgs::start(&mut objective, x0.to_vec(), settings)).expect("a finite start");
        let mut iterations = 0;
        loop {
            let outcome = block_on(state.iterate(&mut objective));
            let IterationOutcome::Iterated { iteration, value, stop } = outcome else {
                assert!(matches!(outcome, IterationOutcome::Stopped(_)), "{what}: {outcome:?}");
                break;
            };
            iterations = iteration;
            let mut x = x0.to_vec();
            let reference = reference_minimise(make().as_mut(), &mut x, &LbfgsSettings { max_iterations: iteration, ..*settings });
            assert_eq!(bits(state.x()), bits(&x), "{what}: iterate {iteration}");
            assert_eq!(value.to_bits(), reference.value.to_bits(), "{what}: f after iteration {iteration}");
            assert_eq!((state.iterations(), state.evaluations()), (reference.iterations, reference.evaluations), "{what}: counts after iteration {iteration}");
            if let Some(stop) = stop {
                assert_eq!(stop, reference.stop, "{what}: stop at iteration {iteration}");
                break;
            }
        }
        let mut x = x0.to_vec();
        let reference = reference_minimise(make().as_mut(), &mut x, settings);
        assert_eq!(state.outcome(), reference, "{what}: the stepped run's outcome");
        assert_eq!(bits(state.x()), bits(&x), "{what}: the stepped run's end");
        let mut y = x0.to_vec();
        let outcome = minimise(make().as_mut(), &mut y, settings, &mut |_, _| true).expect("a finite start");
        assert_eq!(outcome, reference, "{what}: minimise's outcome");
        assert_eq!(bits(&y), bits(&x), "{what}: minimise's end");
        iterations
    }

    #[test]
    fn stepping_gives_the_iterates_of_minimise_bit_for_bit_on_rosenbrock() {
        for n in [2, 10] {
            let x0: Vec<f64> = (0..n).map(|i| if i % 2 == 0 { -1.2 } else { 1.0 }).collect();
            let settings = LbfgsSettings { max_iterations: 1000, optimality_tolerance: 1e-8, progress_tolerance: 1e-20, ..LbfgsSettings::default() };
            let iterations = stepping_matches_the_reference(&format!("Rosenbrock {n}-D"), &mut || Box::new(Rosenbrock { evaluations: 0 }), &x0, &settings);
            assert!(iterations > 30, "Rosenbrock {n}-D: only {iterations} iterations compared");
            // A short memory fills and recycles its pairs.
            let settings = LbfgsSettings { memory: 3, max_iterations: 40, ..settings };
            stepping_matches_the_reference(&format!("Rosenbrock {n}-D, memory 3"), &mut || Box::new(Rosenbrock { evaluations: 0 }), &x0, &settings);
        }
    }

    /// A small autoencoder's CPU cost (a real problem: f32 products, J summed in f64).
    fn autoencoder_problem() -> (Autoencoder, Vec<f32>, CostSettings) {
        let (v, h, rows) = (12, 5, 40);
        let data: Vec<f32> = (0..rows * v).map(|k| 0.1 + 0.8 * (((k * 7919) % 101) as f32 / 100.0)).collect();
        (Autoencoder::initialise(v, h, 3), data, CostSettings { weight_decay: 1e-3, sparsity_target: 0.1, sparsity_weight: 3.0 })
    }

    #[test]
    fn stepping_gives_the_iterates_of_minimise_bit_for_bit_on_an_autoencoder() {
        let (model, data, cost) = autoencoder_problem();
        let x0 = model.to_params();
        let settings = LbfgsSettings { max_iterations: 25, ..LbfgsSettings::default() };
        let data: &'static [f32] = data.leak();
        let iterations = stepping_matches_the_reference("autoencoder 12-5-12", &mut || Box::new(CostObjective::new(&CpuBackend, Box::leak(Box::new(model.clone())), data, cost)), &x0, &settings);
        assert_eq!(iterations, 25);
    }

    /// Rosenbrock that waits once before answering each evaluation (as a device's read-back
    /// does), and loses its "device" at evaluation `lose_at`: from then on it answers NaN and
    /// says it was interrupted.
    struct Waiting {
        inner: Rosenbrock,
        lose_at: usize,
        calls: usize,
        waited: usize,
    }

    /// Pending once, then ready (wakes itself so an executor polls again).
    struct YieldOnce(bool);

    impl std::future::Future for YieldOnce {
        type Output = ();
        fn poll(mut self: std::pin::Pin<&mut Self>, context: &mut std::task::Context<'_>) -> std::task::Poll<()> {
            if self.0 {
                return std::task::Poll::Ready(());
            }
            self.0 = true;
            context.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    }

    impl AsyncObjective for Waiting {
        async fn value(&mut self, x: &[f64]) -> f64 {
            YieldOnce(false).await;
            self.waited += 1;
            self.inner.value(x)
        }

        async fn value_and_gradient(&mut self, x: &[f64], gradient: &mut [f64]) -> f64 {
            YieldOnce(false).await;
            self.waited += 1;
            self.calls += 1;
            if self.calls >= self.lose_at {
                gradient.fill(f64::NAN);
                return f64::NAN;
            }
            self.inner.value_and_gradient(x, gradient)
        }

        fn interrupted(&self) -> bool {
            self.calls >= self.lose_at
        }
    }

    /// A run whose evaluator waits, and whose evaluator is lost in the middle of a line search
    /// and replaced by a sync one: the same iterates as an undisturbed run, bit for bit.
    #[test]
    fn an_interrupted_iteration_resumes_with_another_evaluator_as_if_undisturbed() {
        let x0 = vec![-1.2, 1.0, -1.2, 1.0];
        let settings = LbfgsSettings { max_iterations: 30, ..LbfgsSettings::default() };
        let mut x = x0.clone();
        let reference = reference_minimise(&mut Rosenbrock { evaluations: 0 }, &mut x, &settings);
        for lose_at in [2, 3, 7, 20] {
            let mut device = Waiting { inner: Rosenbrock { evaluations: 0 }, lose_at, calls: 0, waited: 0 };
            let mut state = pollster::block_on(Lbfgs::start(&mut device, x0.clone(), &settings)).expect("a finite start");
            let mut interrupted_at = None;
            let mut cpu = Rosenbrock { evaluations: 0 };
            loop {
                let outcome = if interrupted_at.is_none() { pollster::block_on(state.iterate(&mut device)) } else { block_on(state.iterate(&mut Blocking(&mut cpu))) };
                match outcome {
                    IterationOutcome::Interrupted => {
                        assert!(interrupted_at.is_none(), "lost at {lose_at}: interrupted twice");
                        interrupted_at = Some(state.iterations());
                        assert_eq!(state.stop(), None, "lost at {lose_at}: an interruption is not a stop");
                    }
                    IterationOutcome::Iterated { stop: None, .. } => {}
                    _ => break,
                }
            }
            assert!(interrupted_at.is_some(), "lost at {lose_at}: never interrupted");
            assert!(device.waited >= lose_at, "lost at {lose_at}: the evaluations did not wait");
            assert_eq!(bits(state.x()), bits(&x), "lost at {lose_at} (iteration {interrupted_at:?}): the end differs from an undisturbed run");
            let outcome = state.outcome();
            assert_eq!((outcome.value.to_bits(), outcome.iterations, outcome.stop, outcome.skipped_updates), (reference.value.to_bits(), reference.iterations, reference.stop, reference.skipped_updates), "lost at {lose_at}");
            // The lost iteration's evaluations (the failed one included) are counted too.
            assert_eq!(outcome.evaluations, reference.evaluations + lose_at - state_evaluations_before_loss(lose_at, &x0, &settings), "lost at {lose_at}: evaluations");
        }
    }

    /// Evaluations an undisturbed run had made when it reached the iteration that evaluation
    /// `lose_at` falls in (counted by replaying it): the lost iteration's evaluations, done again
    /// on the CPU, are counted twice.
    fn state_evaluations_before_loss(lose_at: usize, x0: &[f64], settings: &LbfgsSettings) -> usize {
        let mut objective = Rosenbrock { evaluations: 0 };
        let mut objective = Blocking(&mut objective);
        let mut state = block_on(Lbfgs::start(&mut objective, x0.to_vec(), settings)).expect("a finite start");
        loop {
            let before = state.evaluations();
            block_on(state.iterate(&mut objective));
            if state.evaluations() >= lose_at {
                return before;
            }
        }
    }
}
