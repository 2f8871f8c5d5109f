#![cfg(not(target_arch = "wasm32"))]
//! The local-patch RBM's passes against references: the dense RBM whose weights are the local
//! ones embedded with zeros (up, down and the CD-1 gradient, through the CPU backend), a 2-D
//! correlation written plainly for the tied stride-1 layer, and the scatter formulation of
//! the gathering reconstruction.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::backend::{Activation, Backend};
use deepbelief::local_rbm::passes::{gather_reconstruction, patch_products_down, scatter_reconstruction};
use deepbelief::local_rbm::{cd1_gradient, CoverLists, Geometry, LocalRbm, PassBuffers};
use deepbelief::model::VisibleUnits;
use deepbelief::rng::{Purpose, RngStream};

/// A layer with random weights and biases (not the small initial ones, so every term counts).
fn random_layer(g: Geometry, units: VisibleUnits, seed: u64) -> LocalRbm {
    let mut layer = LocalRbm::initialise(g, units, &vec![0.3; g.n_visible()], seed);
    let s = RngStream::new(seed, 9, Purpose::InitialWeights);
    let mut k = 0u64;
    let mut next = |scale: f32| {
        k += 1;
        scale * (s.uniform(k) - 0.5)
    };
    layer.weights.iter_mut().for_each(|w| *w = next(0.6));
    layer.hidden_bias.iter_mut().for_each(|b| *b = next(1.0));
    layer.visible_bias.iter_mut().for_each(|b| *b = next(1.0));
    layer
}

fn random_cases(n: usize, seed: u64) -> Vec<f32> {
    let s = RngStream::new(seed, 1, Purpose::DataSample);
    (0..n as u64).map(|i| s.uniform(i)).collect()
}

fn assert_close(ours: &[f32], reference: &[f32], tolerance: f32, what: &str) {
    assert_eq!(ours.len(), reference.len(), "{what}: lengths");
    for (i, (a, b)) in ours.iter().zip(reference).enumerate() {
        assert!((a - b).abs() <= tolerance * (1.0 + b.abs()), "{what}[{i}]: ours {a}, reference {b}");
    }
}

fn geometries() -> Vec<Geometry> {
    vec![
        Geometry::new(10, 10, 1, 4, 2, 5, false).unwrap(),
        Geometry::new(9, 7, 2, 3, 2, 4, false).unwrap(),
        Geometry::new(8, 8, 3, 4, 4, 3, false).unwrap(),
        Geometry::new(7, 9, 1, 3, 1, 6, true).unwrap(),
        Geometry::new(12, 12, 2, 6, 3, 7, true).unwrap(),
    ]
}

#[test]
fn up_and_down_match_the_dense_rbm_with_zeros_embedded() {
    let backend = CpuBackend;
    for (k, g) in geometries().into_iter().enumerate() {
        for units in [VisibleUnits::Gaussian, VisibleUnits::Bernoulli] {
            let layer = random_layer(g, units, 10 + k as u64);
            let dense = layer.to_dense();
            let rows = 5;
            let visible = random_cases(rows * g.n_visible(), 20 + k as u64);
            let mut ours = vec![0.0; rows * g.n_hidden()];
            let mut buffers = PassBuffers::default();
            layer.hidden_probabilities(&visible, &mut ours, &mut buffers);
            let mut reference = vec![0.0; rows * g.n_hidden()];
            backend.visible_to_hidden(dense.weights(), &visible, &dense.hidden_bias, Activation::Sigmoid, &mut reference);
            assert_close(&ours, &reference, 2e-6, &format!("up, {g:?}"));

            let cover = CoverLists::new(&g);
            let mut down = vec![0.0; rows * g.n_visible()];
            layer.visible_expectations(&cover, &ours, &mut down, &mut buffers);
            let mut down_reference = vec![0.0; rows * g.n_visible()];
            backend.hidden_to_visible(dense.weights(), &ours, &dense.visible_bias, dense.visible_activation(), &mut down_reference);
            assert_close(&down, &down_reference, 2e-6, &format!("down, {units:?}, {g:?}"));
        }
    }
}

#[test]
fn tied_stride_one_layer_is_a_plain_correlation() {
    // A convolutional RBM: hidden map j at (y, x) = σ(c_j + Σ_{dy,dx,ch} img[y+dy, x+dx, ch]·w_j[dy, dx, ch]),
    // and the down pass is the full convolution of each hidden map with its filter.
    let g = Geometry::new(9, 11, 2, 4, 1, 3, true).unwrap();
    let layer = random_layer(g, VisibleUnits::Gaussian, 3);
    let (rows, cols, chans, p, units) = (g.rows, g.cols, g.channels, g.patch, g.hidden_per_patch);
    let (out_r, out_c) = (rows - p + 1, cols - p + 1);
    let image = random_cases(g.n_visible(), 4);
    let w = |dy: usize, dx: usize, ch: usize, j: usize| layer.weights[((dy * p + dx) * chans + ch) * units + j];
    let mut hidden = vec![0.0; g.n_hidden()];
    layer.hidden_probabilities(&image, &mut hidden, &mut PassBuffers::default());
    for y in 0..out_r {
        for x in 0..out_c {
            for j in 0..units {
                let mut sum = layer.hidden_bias[j];
                for dy in 0..p {
                    for dx in 0..p {
                        for ch in 0..chans {
                            sum += image[((y + dy) * cols + x + dx) * chans + ch] * w(dy, dx, ch, j);
                        }
                    }
                }
                let expected = 1.0 / (1.0 + (-sum).exp());
                let ours = hidden[(y * out_c + x) * units + j];
                assert!((ours - expected).abs() < 2e-6, "h[{y},{x},{j}] ours {ours}, correlation {expected}");
            }
        }
    }
    let mut down = vec![0.0; g.n_visible()];
    layer.visible_expectations(&CoverLists::new(&g), &hidden, &mut down, &mut PassBuffers::default());
    for r in 0..rows {
        for c in 0..cols {
            for ch in 0..chans {
                let mut sum = layer.visible_bias[(r * cols + c) * chans + ch];
                for dy in 0..p.min(r + 1) {
                    for dx in 0..p.min(c + 1) {
                        let (y, x) = (r - dy, c - dx);
                        if y < out_r && x < out_c {
                            for j in 0..units {
                                sum += hidden[(y * out_c + x) * units + j] * w(dy, dx, ch, j);
                            }
                        }
                    }
                }
                let ours = down[(r * cols + c) * chans + ch];
                assert!((ours - sum).abs() < 2e-5 * (1.0 + sum.abs()), "v[{r},{c},{ch}] ours {ours}, convolution {sum}");
            }
        }
    }
}

#[test]
fn gathering_reconstruction_equals_the_scatter_bit_for_bit() {
    for (k, g) in geometries().into_iter().enumerate() {
        let layer = random_layer(g, VisibleUnits::Bernoulli, 30 + k as u64);
        let rows = 4;
        let hidden = random_cases(rows * g.n_hidden(), 40 + k as u64);
        let mut products = vec![0.0; rows * g.positions() * g.patch_inputs()];
        patch_products_down(&layer, &hidden, &mut products);
        let cover = CoverLists::new(&g);
        for activation in [Activation::Linear, Activation::Sigmoid] {
            let mut gathered = vec![0.0; rows * g.n_visible()];
            gather_reconstruction(&g, &cover, &products, &layer.visible_bias, activation, &mut gathered);
            let mut scattered = vec![1e9; rows * g.n_visible()];
            scatter_reconstruction(&g, &products, &layer.visible_bias, activation, &mut scattered);
            assert_eq!(gathered, scattered, "{g:?}, {activation:?}");
        }
        // Every pixel is covered, and the lists hold each (position, offset) once.
        let total: usize = (0..g.n_visible()).map(|i| cover.covering(i).len()).sum();
        assert_eq!(total, g.positions() * g.patch_inputs());
        assert!((0..g.n_visible()).all(|i| !cover.covering(i).is_empty()));
    }
}

/// The dense RBM's CD-1 gradient with the same uniforms, projected onto the local structure.
fn dense_cd1_projected(layer: &LocalRbm, batch: &[f32], seed: u64, step: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let backend = CpuBackend;
    let g = &layer.geometry;
    let dense = layer.to_dense();
    let (nv, nh) = (g.n_visible(), g.n_hidden());
    let rows = batch.len() / nv;
    let mut h0 = vec![0.0; rows * nh];
    backend.visible_to_hidden(dense.weights(), batch, &dense.hidden_bias, Activation::Sigmoid, &mut h0);
    let stream = RngStream::new(seed, step, Purpose::HiddenSample);
    let sample: Vec<f32> = h0.iter().enumerate().map(|(k, &p)| if stream.uniform(k as u64) < p { 1.0 } else { 0.0 }).collect();
    let mut v1 = vec![0.0; rows * nv];
    backend.hidden_to_visible(dense.weights(), &sample, &dense.visible_bias, dense.visible_activation(), &mut v1);
    let mut h1 = vec![0.0; rows * nh];
    backend.visible_to_hidden(dense.weights(), &v1, &dense.hidden_bias, Activation::Sigmoid, &mut h1);
    let mut dense_gradient = vec![0.0; nv * nh];
    backend.accumulate_outer((nv, nh), batch, &h0, 1.0 / rows as f32, &mut dense_gradient);
    backend.accumulate_outer((nv, nh), &v1, &h1, -1.0 / rows as f32, &mut dense_gradient);
    let (units, width) = (g.hidden_per_patch, g.patch_inputs());
    let mut weights = vec![0.0; g.weight_count()];
    let mut hidden_bias = vec![0.0; g.hidden_bias_count()];
    for p in 0..g.positions() {
        let bank = layer.bank_of(p);
        for offset in 0..width {
            let i = g.pixel_of(p, offset);
            for j in 0..units {
                weights[(bank * width + offset) * units + j] += dense_gradient[i * nh + p * units + j];
            }
        }
        for j in 0..units {
            for r in 0..rows {
                hidden_bias[bank * units + j] += (h0[r * nh + p * units + j] - h1[r * nh + p * units + j]) / rows as f32;
            }
        }
    }
    let visible_bias = (0..nv).map(|i| (0..rows).map(|r| batch[r * nv + i] - v1[r * nv + i]).sum::<f32>() / rows as f32).collect();
    (weights, visible_bias, hidden_bias)
}

#[test]
fn cd1_gradient_is_the_dense_gradient_projected_onto_the_patches() {
    for (k, g) in geometries().into_iter().enumerate() {
        for units in [VisibleUnits::Gaussian, VisibleUnits::Bernoulli] {
            let layer = random_layer(g, units, 50 + k as u64);
            let batch = random_cases(6 * g.n_visible(), 60 + k as u64);
            let (seed, step) = (77, 5);
            let ours = cd1_gradient(&layer, &CoverLists::new(&g), &batch, seed, step);
            let (weights, visible_bias, hidden_bias) = dense_cd1_projected(&layer, &batch, seed, step);
            assert_close(&ours.weights, &weights, 2e-5, &format!("∇W {units:?} {g:?}"));
            assert_close(&ours.visible_bias, &visible_bias, 2e-5, &format!("∇b {units:?} {g:?}"));
            assert_close(&ours.hidden_bias, &hidden_bias, 2e-5, &format!("∇c {units:?} {g:?}"));
            assert!(ours.weights.iter().any(|&x| x.abs() > 1e-3), "the gradient is not trivially zero");
        }
    }
}
