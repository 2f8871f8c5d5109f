#![cfg(not(target_arch = "wasm32"))]
//! The CPU backend gives bit-identical results whatever the number of rayon threads: its work
//! split depends only on the shapes, never on `current_num_threads()`.

mod support;

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::{Activation, Backend, Weights};
use deepbelief::rng::{Purpose, RngStream};
use deepbelief::train::{CdConfig, CdTrainer};
use support::check::wave;
use support::mnist::{mnist, shared_mnist};

fn in_pool<T: Send>(threads: usize, work: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("thread pool").install(work)
}

fn assert_bit_identical(what: &str, a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let differing = a.iter().zip(b).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
    assert_eq!(differing, 0, "{what}: {differing} of {} values differ between thread counts", a.len());
}

/// Every backend op on a (rows, n_visible, n_hidden) shape, in a pool of `threads` threads.
fn ops_on(threads: usize, (rows, nv, nh): (usize, usize, usize)) -> [Vec<f32>; 4] {
    in_pool(threads, || {
        let (w, v, h) = (wave(nv * nh, 0.31), wave(rows * nv, 0.17), wave(rows * nh, 0.41));
        let (b, c) = (wave(nv, 0.5), wave(nh, 0.9));
        let weights = Weights { values: &w, n_visible: nv, n_hidden: nh };
        let mut hidden = vec![0.0; rows * nh];
        CpuBackend.visible_to_hidden(weights, &v, &c, Activation::Sigmoid, &mut hidden);
        let mut visible = vec![0.0; rows * nv];
        CpuBackend.hidden_to_visible(weights, &h, &b, Activation::Linear, &mut visible);
        let mut gradient = wave(nv * nh, 0.7);
        CpuBackend.accumulate_outer((nv, nh), &v, &h, -0.25, &mut gradient);
        CpuBackend.accumulate_outer((nv, nh), &visible, &hidden, 0.5, &mut gradient);
        let mut samples = vec![0.0; rows * nh];
        CpuBackend.bernoulli(&hidden, RngStream::new(3, 7, Purpose::HiddenSample), &mut samples);
        [hidden, visible, gradient, samples]
    })
}

#[test]
fn backend_ops_do_not_depend_on_the_thread_count() {
    let shapes = [(100, 784, 500), (37, 53, 29), (100, 784, 100), (1000, 784, 100), (1, 784, 500), (1000, 784, 10), (700, 1000, 2000), (3, 5, 1)];
    for shape in shapes {
        let one = ops_on(1, shape);
        for threads in [2, 3, 4] {
            let many = ops_on(threads, shape);
            for (name, (a, b)) in ["visible_to_hidden", "hidden_to_visible", "accumulate_outer", "bernoulli"].iter().zip(one.iter().zip(&many)) {
                assert_bit_identical(&format!("{name} {shape:?}, 1 vs {threads} threads"), a, b);
            }
        }
    }
}

#[test]
fn training_gives_bit_identical_weights_on_1_and_4_threads() {
    let path = shared_mnist("train-10k-images-idx3-ubyte.gz");
    if !path.exists() {
        eprintln!("skipped: {} is missing", path.display());
        return;
    }
    let data = mnist(2000);
    // Hinton's plain CD-1, and the default recipe (adaptive rates, sparsity, random trials).
    let configs = [
        CdConfig { n_hidden: 100, epochs: 2, seed: 11, ..CdConfig::hinton() },
        CdConfig { n_hidden: 64, epochs: 2, init_trials: 3, init_cases: 500, seed: 12, ..CdConfig::default() },
    ];
    for config in configs {
        let train = |threads: usize| {
            in_pool(threads, || {
                let mut trainer = CdTrainer::new(config.clone(), &CpuBackend, &data).expect("trainer");
                for _ in 0..2 {
                    trainer.train_epoch(&CpuBackend, &data).expect("epoch");
                }
                trainer.rbm.weights
            })
        };
        let (one, four) = (train(1), train(4));
        assert!(one.iter().all(|w| w.is_finite()));
        assert_bit_identical(&format!("RBM weights after 2 epochs ({:?} schedule)", config.schedule), &one, &four);
        assert!(one == four);
    }
}
