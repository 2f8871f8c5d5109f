//! The held-out share that picks the epoch of SGD training, and random image shifts.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::supervised::evaluation::one_hot;
use deepbelief::supervised::held_out::{held_out_score, split_held_out, HeldOut, Shift};
use deepbelief::supervised::optimise::{optimise, Method, StopKind};
use deepbelief::supervised::{Cases, Network, OutputKind, SupervisedConfig};
use deepbelief::supervised::dropout::DropoutRates;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Labels laid out as the built-in data are: classes repeating every 10 cases, unequal counts.
fn interleaved_labels() -> Vec<u32> {
    let mut labels: Vec<u32> = (0..1000).map(|i| i % 10).collect();
    labels.extend(std::iter::repeat_n(3, 137));
    labels
}

#[test]
fn the_held_out_share_of_every_class_is_within_one_case_of_the_fraction() {
    let labels = interleaved_labels();
    let targets = one_hot(&labels, 10);
    for fraction in [0.1, 0.15, 0.2, 0.25] {
        let (train, held) = split_held_out(&targets, 10, true, fraction, 7);
        assert_eq!(train.len() + held.len(), labels.len());
        assert!(train.windows(2).all(|w| w[0] < w[1]) && held.windows(2).all(|w| w[0] < w[1]), "ascending");
        for class in 0..10u32 {
            let total = labels.iter().filter(|&&l| l == class).count() as f64;
            let taken = held.iter().filter(|&&c| labels[c] == class).count() as f64;
            assert!((taken - fraction * total).abs() <= 1.0, "fraction {fraction}, class {class}: {taken} of {total}");
        }
    }
}

#[test]
fn without_classes_the_split_is_a_seeded_random_choice() {
    let targets: Vec<f32> = (0..500).map(|i| i as f32).collect();
    let (_, held) = split_held_out(&targets, 1, false, 0.2, 3);
    assert_eq!(held.len(), 100);
    assert_eq!(held, split_held_out(&targets, 1, false, 0.2, 3).1, "the same seed gives the same split");
    assert_ne!(held, split_held_out(&targets, 1, false, 0.2, 4).1, "another seed gives another split");
    // Not every k-th case: a random choice has gaps of many sizes.
    let gaps: std::collections::BTreeSet<usize> = held.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.len() > 5, "{gaps:?}");
}

#[test]
fn shifts_move_each_image_by_at_most_the_limit_and_keep_its_pixels() {
    // A 5×5 image with one bright pixel in the middle: after a shift of at most one pixel it is
    // still one bright pixel, at most one row and one column away.
    let mut images = vec![0.0f32; 25 * 200];
    for image in images.chunks_mut(25) {
        image[12] = 1.0;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    Shift { shape: (5, 5), max_pixels: 1 }.apply(&mut images, &mut rng, &mut Vec::new());
    let mut moved = 0;
    for image in images.chunks(25) {
        let bright: Vec<usize> = (0..25).filter(|&i| image[i] == 1.0).collect();
        assert_eq!(bright.len(), 1, "{image:?}");
        let (r, c) = (bright[0] / 5, bright[0] % 5);
        assert!(r.abs_diff(2) <= 1 && c.abs_diff(2) <= 1);
        moved += usize::from(bright[0] != 12);
    }
    // 8 of the 9 offsets move the pixel.
    assert!((150..=195).contains(&moved), "{moved} of 200 moved");
}

#[test]
fn early_stopping_keeps_the_weights_that_scored_best_on_the_held_out_cases() {
    // Two noisy classes in 20 dimensions with only 40 training cases: a long run at a high rate
    // overfits, and the held-out error of the weights kept must be the best seen.
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    use rand::Rng;
    let mut make = |n: usize| {
        let labels: Vec<u32> = (0..n).map(|i| (i % 2) as u32).collect();
        let inputs: Vec<f32> = labels.iter().flat_map(|&l| (0..20).map(|d| if d == 0 { l as f32 * 0.6 + 0.2 } else { 0.0 } + rng.random_range(-0.5..0.5)).collect::<Vec<_>>()).collect();
        (inputs, one_hot(&labels, 2))
    };
    let (train_inputs, train_targets) = make(40);
    let (held_inputs, held_targets) = make(400);
    let train = Cases { inputs: &train_inputs, targets: &train_targets, n_inputs: 20, n_outputs: 2 };
    let held = Cases { inputs: &held_inputs, targets: &held_targets, n_inputs: 20, n_outputs: 2 };
    let method = Method::Sgd { epochs: 300, tolerance: 0.0, batch_size: 4, learning_rate: 0.5, final_rate_fraction: 1.0, momentum: 0.9, seed: 2, dropout: DropoutRates { input: 0.0, hidden: 0.0 }, shift: None };

    let mut scores = Vec::new();
    let mut net = Network::zeros(&[20, 2], OutputKind::SoftMax);
    let report = optimise(&CpuBackend, &mut net, train, 0.0, method, Some(HeldOut { cases: held, patience: 1000 }), "test", &mut |_, _| true).unwrap();
    let kept = held_out_score(&net, &CpuBackend, held);
    assert_eq!(report.held_out_score, Some(kept), "the report's score is the kept weights' score");
    // Replaying the run without a held-out share, epoch by epoch, gives the scores it saw.
    let mut replay = Network::zeros(&[20, 2], OutputKind::SoftMax);
    let mut scorer = |_: usize, _: f64| true;
    for epochs in [1usize, 10, 50, 300] {
        let mut fresh = Network::zeros(&[20, 2], OutputKind::SoftMax);
        let Method::Sgd { tolerance, batch_size, learning_rate, final_rate_fraction, momentum, seed, dropout, shift, .. } = method else { unreachable!() };
        optimise(&CpuBackend, &mut fresh, train, 0.0, Method::Sgd { epochs, tolerance, batch_size, learning_rate, final_rate_fraction, momentum, seed, dropout, shift }, None, "test", &mut scorer).unwrap();
        scores.push(held_out_score(&fresh, &CpuBackend, held));
        replay = fresh;
    }
    assert!(scores.iter().all(|&s| kept <= s + 1e-12), "kept {kept}, seen {scores:?}");
    assert!(held_out_score(&replay, &CpuBackend, held) > kept, "300 epochs overfit past the best epoch: {scores:?} vs {kept}");
    assert!(report.best_epoch.unwrap() < 300);

    // With patience the run stops early and still keeps the best weights.
    let mut net = Network::zeros(&[20, 2], OutputKind::SoftMax);
    let report = optimise(&CpuBackend, &mut net, train, 0.0, method, Some(HeldOut { cases: held, patience: 5 }), "test", &mut |_, _| true).unwrap();
    assert_eq!(report.stop, StopKind::EarlyStopped);
    assert_eq!(report.iterations, report.best_epoch.unwrap() + 5);
    assert_eq!(Some(held_out_score(&net, &CpuBackend, held)), report.held_out_score);
}

#[test]
fn the_deep_preset_is_masters_settings_and_the_default_differs_only_where_measured() {
    let deep = SupervisedConfig::deep();
    assert_eq!(deep.weight_penalty, 0.0);
    assert_eq!(deep.validation_fraction, 0.0);
    assert_eq!((deep.tolerance, deep.fine_tune_tolerance), (0.00005, 0.00001));
    let rbm = deepbelief::train::CdConfig::deep();
    assert_eq!((rbm.n_batches, rbm.batch_size, rbm.cd_k_end, rbm.init_trials), (24, None, 4, 50));
    assert_eq!(rbm.schedule, deepbelief::train::Schedule::Adaptive);
    let default = deepbelief::train::CdConfig::default();
    assert_eq!((default.batch_size, default.cd_k_end), (Some(100), 10));
    assert_eq!(deepbelief::train::StackConfig::deep().top_cd_k_end, 0);
}

/// The one even spread of measured cases (evaluation, monitors, reports, the annealing
/// sample): every part of class-ordered data, all cases when fewer, nothing from nothing.
#[test]
fn spread_cases_pick_evenly_and_nothing_from_nothing() {
    use deepbelief::data::split::spread_cases;
    assert_eq!(spread_cases(10, 4), vec![0, 2, 5, 7]);
    assert_eq!(spread_cases(3, 10), vec![0, 1, 2]);
    assert_eq!(spread_cases(1000, 1), vec![0]);
    assert_eq!(spread_cases(0, 5), Vec::<usize>::new());
    assert_eq!(spread_cases(5, 0), Vec::<usize>::new());
}
