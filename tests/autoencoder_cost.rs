#![cfg(not(target_arch = "wasm32"))]
//! The sparse autoencoder's cost against a hand computation, its gradient against central
//! differences for every parameter block, its NaN/Inf reports, and its independence of the
//! thread count.

use deepbelief::autoencoder::{cost, cost_and_gradient, Autoencoder, CostError, CostSettings, Workspace};
use deepbelief::backend::cpu::CpuBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random_data(rows: usize, width: usize, seed: u64) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..rows * width).map(|_| rng.random::<f32>()).collect()
}

/// UFLDL's initial weights plus random biases, so that the bias gradients are checked at a
/// generic point too.
fn random_model(v: usize, h: usize, seed: u64) -> Autoencoder {
    let mut model = Autoencoder::initialise(v, h, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed + 100);
    model.b1.iter_mut().chain(model.b2.iter_mut()).for_each(|b| *b = rng.random::<f32>() - 0.5);
    model
}

#[test]
fn cost_matches_a_hand_computation() {
    // 2 → 1 → 2, two cases. By hand (double precision, see the comments):
    // a₂ = σ(0.5·1 − 0.25·0 + 0.1) = σ(0.6) = 0.6456563062, and σ(0.5·0.2 − 0.25·0.8 + 0.1) = σ(0) = 0.5;
    // x̂ = σ(W₂a₂ + b₂) per case; ½Σ(x̂ − x)²/2 = 0.15915623534;
    // (λ/2)(0.5² + 0.25² + 0.3² + 0.2²) = 0.05·0.4425 = 0.022125;
    // ρ̂ = 0.5728281531, β·KL(0.2‖ρ̂) = 2·(0.2 ln(0.2/ρ̂) + 0.8 ln(0.8/(1 − ρ̂))) = 0.58297319073.
    let model = Autoencoder { n_visible: 2, n_hidden: 1, w1: vec![0.5, -0.25], b1: vec![0.1], w2: vec![0.3, -0.2], b2: vec![0.05, -0.05] };
    let data = [1.0, 0.0, 0.2, 0.8];
    let settings = CostSettings { weight_decay: 0.1, sparsity_target: 0.2, sparsity_weight: 2.0 };
    let got = cost(&CpuBackend, &model, &data, &settings, &mut Workspace::new()).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs();
    assert!(close(got.reconstruction, 0.15915623533818968), "reconstruction {}", got.reconstruction);
    assert!(close(got.weight_decay, 0.022125), "weight decay {}", got.weight_decay);
    assert!(close(got.sparsity, 0.5829731907287963), "sparsity {}", got.sparsity);
    assert!(close(got.total, 0.7642544260669859), "J {}", got.total);
    assert!((got.mean_activation[0] as f64 - 0.5728281531128977).abs() < 1e-6);
}

/// Central differences of `J` in each parameter, against the backprop gradient.
///
/// ε = 10⁻²: the cost is computed in f32 (summed in f64), so `J(θ ± ε)` carry rounding of
/// ~10⁻⁷ and the quotient ~10⁻⁷/2ε; the truncation error grows as ε². Measured worst errors
/// over these nets: ε = 5·10⁻⁴: 3.5·10⁻⁴; 2·10⁻³: 8.5·10⁻⁵; 8·10⁻³: 2.2·10⁻⁵; 1.6·10⁻²:
/// 1.3·10⁻⁵; 3.2·10⁻²: 4.1·10⁻⁵ (truncation now dominates). The quotient divides by the f32
/// perturbation actually applied. Tolerances: 10⁻⁴ + 10⁻³·|g| per parameter and 2·10⁻⁴ for
/// UFLDL's per-block `‖num − grad‖/‖num + grad‖` (worst seen 2.4·10⁻⁵), far below what a
/// missing or wrong term makes: at λ = 0.05 λW is ~10⁻², and the sparsity term in δ₂ is
/// β(−ρ/ρ̂ + (1−ρ)/(1−ρ̂)) ≈ 3 per hidden unit.
fn check_gradient(v: usize, h: usize, rows: usize, settings: CostSettings, seed: u64) {
    let backend = CpuBackend;
    let mut model = random_model(v, h, seed);
    let data = random_data(rows, v, seed + 1);
    let mut work = Workspace::new();
    let mut gradient = Autoencoder::zeros(v, h);
    let at_start = cost_and_gradient(&backend, &model, &data, &settings, &mut work, &mut gradient).unwrap();
    let forward_only = cost(&backend, &model, &data, &settings, &mut work).unwrap();
    assert_eq!(at_start.total, forward_only.total, "cost() and cost_and_gradient() disagree");
    assert!(at_start.weight_decay > 0.0 && at_start.sparsity > 0.0 && at_start.reconstruction > 0.0);

    let params = model.to_params();
    let analytic: Vec<f64> = {
        let mut flat = vec![0.0; model.n_params()];
        gradient.write_params(&mut flat);
        flat
    };
    let epsilon = 1e-2;
    let mut offset = 0;
    for (name, block) in Autoencoder::zeros(v, h).blocks() {
        let (mut worst, mut diff_sq, mut sum_sq) = (0.0f64, 0.0f64, 0.0f64);
        for k in offset..offset + block.len() {
            let mut p = params.clone();
            let up = (params[k] + epsilon) as f32;
            let down = (params[k] - epsilon) as f32;
            p[k] = f64::from(up);
            model.set_params(&p);
            let j_up = cost(&backend, &model, &data, &settings, &mut work).unwrap().total;
            p[k] = f64::from(down);
            model.set_params(&p);
            let j_down = cost(&backend, &model, &data, &settings, &mut work).unwrap().total;
            let numeric = (j_up - j_down) / (f64::from(up) - f64::from(down));
            let error = (numeric - analytic[k]).abs();
            worst = worst.max(error);
            diff_sq += error * error;
            sum_sq += (numeric + analytic[k]).powi(2);
            assert!(
                error <= 1e-4 + 1e-3 * analytic[k].abs(),
                "{v}→{h}→{v}, {name} entry {}: backprop {}, central difference {numeric}",
                k - offset,
                analytic[k]
            );
        }
        // UFLDL's summary measure, per block: ‖num − grad‖ / ‖num + grad‖.
        let relative = (diff_sq / sum_sq).sqrt();
        assert!(relative < 2e-4, "{name}: relative difference {relative} (worst entry {worst})");
        offset += block.len();
    }
    model.set_params(&params);
}

#[test]
fn gradient_matches_central_differences_for_every_block() {
    let settings = CostSettings { weight_decay: 0.05, sparsity_target: 0.1, sparsity_weight: 3.0 };
    check_gradient(8, 3, 10, settings, 1);
}

#[test]
fn gradient_matches_central_differences_with_the_exercise_settings() {
    check_gradient(8, 3, 10, CostSettings::ufldl(), 2);
    // More hidden than visible units, and more cases than one row tile of the element-wise passes.
    check_gradient(5, 7, 300, CostSettings { weight_decay: 0.02, sparsity_target: 0.3, sparsity_weight: 0.5 }, 3);
}

#[test]
fn non_finite_values_are_reported_by_name() {
    let backend = CpuBackend;
    let data = random_data(6, 4, 5);
    let settings = CostSettings::ufldl();
    let mut work = Workspace::new();
    let mut model = random_model(4, 3, 4);
    model.w2[4 * 3 - 1] = f32::NAN;
    let error = cost(&backend, &model, &data, &settings, &mut work).unwrap_err();
    assert!(error.to_string().contains("W2[visible 3, hidden 2] is NaN"), "{error}");

    let mut model = random_model(4, 3, 4);
    model.b1[1] = f32::INFINITY;
    let error = cost_and_gradient(&backend, &model, &data, &settings, &mut work, &mut Autoencoder::zeros(4, 3)).unwrap_err();
    assert!(error.to_string().contains("b1[1] is inf"), "{error}");

    let model = random_model(4, 3, 4);
    let mut bad_data = data.clone();
    bad_data[2 * 4 + 1] = f32::NAN;
    let error = cost(&backend, &model, &bad_data, &settings, &mut work).unwrap_err();
    assert!(error.to_string().contains("input value 1 of case 2 is NaN"), "{error}");

    // A hidden unit on for every case: ρ̂ = 1 and KL(ρ‖ρ̂) is infinite.
    let mut model = random_model(4, 3, 4);
    model.b1[2] = 100.0;
    let error = cost(&backend, &model, &data, &settings, &mut work).unwrap_err();
    assert!(matches!(error, CostError::NonFinite { .. }));
    assert!(error.to_string().contains("hidden unit 2's mean activation ρ̂ is 1"), "{error}");
}

#[test]
fn settings_and_shapes_are_checked() {
    let model = random_model(4, 3, 4);
    let mut work = Workspace::new();
    let bad = CostSettings { sparsity_target: 1.0, ..CostSettings::ufldl() };
    let error = cost(&CpuBackend, &model, &random_data(2, 4, 1), &bad, &mut work).unwrap_err();
    assert!(error.to_string().contains("sparsity_target is 1"), "{error}");
    let error = cost(&CpuBackend, &model, &random_data(1, 5, 1), &CostSettings::ufldl(), &mut work).unwrap_err();
    assert!(matches!(error, CostError::Shape(_)), "{error}");
}

#[test]
fn cost_and_gradient_do_not_depend_on_the_thread_count() {
    let model = random_model(64, 25, 9);
    let data = random_data(1000, 64, 10);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut gradient = Autoencoder::zeros(64, 25);
            let cost = cost_and_gradient(&CpuBackend, &model, &data, &CostSettings::ufldl(), &mut Workspace::new(), &mut gradient).unwrap();
            (cost.total.to_bits(), gradient.to_params().iter().map(|g| g.to_bits()).collect::<Vec<_>>())
        })
    };
    assert_eq!(run(1), run(2));
}
