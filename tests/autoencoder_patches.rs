#![cfg(not(target_arch = "wasm32"))]
//! Patch sampling, UFLDL's normalisation, ZCA whitening and MNIST inputs for autoencoders.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::patches::{normalise_patches, sample_patches, unit_inputs, GreyImage, PatchError, Patches, Zca};
use deepbelief::data::IdxImages;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Pixel (r, c) of image i holds i·10⁶ + r·cols + c, so a patch tells where it came from.
fn coded_images(sizes: &[(usize, usize)]) -> Vec<GreyImage> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &(rows, cols))| GreyImage { rows, cols, pixels: (0..rows * cols).map(|k| (i * 1_000_000 + k) as f32).collect() })
        .collect()
}

#[test]
fn patches_are_whole_windows_drawn_from_every_image_and_position() {
    let sizes = [(20, 20), (12, 30), (8, 8)];
    let images = coded_images(&sizes);
    let side = 8;
    let patches = sample_patches(&images, side, 10_000, 7).unwrap();
    assert_eq!((patches.count, patches.side, patches.values.len()), (10_000, 8, 10_000 * 64));
    let mut seen: Vec<Vec<u32>> = sizes.iter().map(|&(r, c)| vec![0; (r - side + 1) * (c - side + 1)]).collect();
    for patch in patches.values.chunks_exact(64) {
        let first = patch[0] as usize;
        let (image, offset) = (first / 1_000_000, first % 1_000_000);
        let (rows, cols) = sizes[image];
        let (row, col) = (offset / cols, offset % cols);
        assert!(row + side <= rows && col + side <= cols, "patch at ({row}, {col}) of image {image} leaves it");
        for r in 0..side {
            for c in 0..side {
                assert_eq!(patch[r * side + c] as usize, first + r * cols + c, "patch of image {image} at ({row}, {col}) is not a window");
            }
        }
        seen[image][row * (cols - side + 1) + col] += 1;
    }
    // Images are chosen uniformly (≈3,333 each), then positions uniformly within them.
    for (image, counts) in seen.iter().enumerate() {
        let total: u32 = counts.iter().sum();
        assert!((3_000..3_700).contains(&total), "image {image}: {total} patches");
        assert!(counts.iter().all(|&n| n > 0), "image {image}: a position never drawn: {counts:?}");
    }
    assert_eq!(patches, sample_patches(&images, side, 10_000, 7).unwrap(), "same seed, same patches");
    assert_ne!(patches, sample_patches(&images, side, 10_000, 8).unwrap(), "another seed, other patches");
}

#[test]
fn sampling_refuses_what_it_cannot_cut() {
    let images = coded_images(&[(20, 20), (7, 30)]);
    assert_eq!(sample_patches(&[], 8, 10, 1), Err(PatchError::NoImages));
    let error = sample_patches(&images, 8, 10, 1).unwrap_err();
    assert_eq!(error, PatchError::TooSmall { image: 1, rows: 7, cols: 30, side: 8 });
    assert!(error.to_string().contains("image 1 is 7 × 30 pixels"), "{error}");
    let mut images = coded_images(&[(20, 20)]);
    images[0].pixels[45] = f32::NAN;
    assert_eq!(sample_patches(&images, 8, 10, 1), Err(PatchError::NonFinite { image: 0, pixel: 45 }));
    images[0].pixels.pop();
    assert!(matches!(sample_patches(&images, 8, 10, 1), Err(PatchError::PixelCount { image: 0, pixels: 399, .. })));
    assert_eq!(sample_patches(&coded_images(&[(20, 20)]), 0, 10, 1), Err(PatchError::Empty { field: "side" }));
}

#[test]
fn normalisation_matches_the_exercise_on_a_hand_case() {
    // Four 2×2 patches; the first has an outlier. After removing each patch's mean the
    // values are (−4, −4, −4, 12) and zeros: σ (N − 1) = √(192/15), 3σ = 10.733126292, so 12
    // is clipped to 3σ → 0.9, −4 → (1 − 4/3σ)·0.4 + 0.1 = 0.350928798, and 0 → 0.5
    // (numbers from NumPy's std(ddof=1)).
    let mut patches = Patches { side: 2, count: 4, values: vec![0.0, 0.0, 0.0, 16.0, 5.0, 5.0, 5.0, 5.0, -2.0, -2.0, -2.0, -2.0, 0.0, 0.0, 0.0, 0.0] };
    let clip = normalise_patches(&mut patches).unwrap();
    assert!((clip - 10.73312629199899).abs() < 1e-12, "3σ = {clip}");
    let expected = [0.3509288, 0.3509288, 0.3509288, 0.9, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5];
    for (k, (got, want)) in patches.values.iter().zip(expected).enumerate() {
        assert!((got - want).abs() < 1e-6, "value {k}: {got} vs {want}");
    }
    let mut flat = Patches { side: 2, count: 2, values: vec![3.0; 8] };
    assert_eq!(normalise_patches(&mut flat), Err(PatchError::Flat));
}

#[test]
fn normalised_patches_lie_in_the_sigmoid_range_centred_on_one_half() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    // Heavy-tailed pixels (a cube of uniform noise), so that clipping happens.
    let images: Vec<GreyImage> = (0..3)
        .map(|_| GreyImage { rows: 40, cols: 40, pixels: (0..1600).map(|_| (rng.random::<f32>() * 2.0 - 1.0).powi(3) * 50.0 + 7.0).collect() })
        .collect();
    let mut patches = sample_patches(&images, 8, 2_000, 1).unwrap();
    normalise_patches(&mut patches).unwrap();
    let (min, max) = patches.values.iter().fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    assert!(min >= 0.1 && max <= 0.9, "range [{min}, {max}]");
    assert!(min < 0.1 + 1e-6 && max > 0.9 - 1e-6, "nothing was clipped: [{min}, {max}]");
    // Each patch's mean was removed, and clipping is symmetric: the values centre on 0.5.
    let mean = patches.values.iter().map(|&v| f64::from(v)).sum::<f64>() / patches.values.len() as f64;
    assert!((mean - 0.5).abs() < 0.005, "mean {mean}");
    for (k, patch) in patches.values.chunks_exact(64).enumerate().take(200) {
        let patch_mean = patch.iter().map(|&v| f64::from(v)).sum::<f64>() / 64.0;
        assert!((patch_mean - 0.5).abs() < 0.15, "patch {k}: mean {patch_mean}");
    }
}

#[test]
fn zca_whitens_correlated_data_to_unit_covariance() {
    let (dim, rows) = (5, 20_000);
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    // x = M z + offset with z uniform (unit variance) and M mixing the inputs.
    let mix = [[1.0, 0.5, 0.0, 0.0, 0.2], [0.0, 2.0, 0.3, 0.0, 0.0], [0.4, 0.0, 0.7, 0.1, 0.0], [0.0, 0.0, 0.0, 1.5, -0.6], [0.3, 0.3, 0.3, 0.3, 0.3]];
    let mut values = Vec::with_capacity(rows * dim);
    for _ in 0..rows {
        let z: Vec<f32> = (0..dim).map(|_| (rng.random::<f32>() - 0.5) * 12f32.sqrt()).collect();
        values.extend(mix.iter().enumerate().map(|(i, row)| row.iter().zip(&z).map(|(m, z)| m * z).sum::<f32>() + i as f32));
    }
    let zca = Zca::fit(&CpuBackend, &values, dim, 1e-6).unwrap();
    for i in 0..dim {
        for j in 0..dim {
            assert!((zca.matrix[i * dim + j] - zca.matrix[j * dim + i]).abs() < 1e-5, "ZCA matrix not symmetric at ({i}, {j})");
        }
    }
    let white = zca.apply(&CpuBackend, &values);
    for i in 0..dim {
        let mean = white.iter().skip(i).step_by(dim).map(|&v| f64::from(v)).sum::<f64>() / rows as f64;
        assert!(mean.abs() < 1e-3, "input {i}: mean {mean}");
        for j in 0..dim {
            let c = white.chunks_exact(dim).map(|x| f64::from(x[i]) * f64::from(x[j])).sum::<f64>() / rows as f64;
            let expected = if i == j { 1.0 } else { 0.0 };
            assert!((c - expected).abs() < 2e-3, "covariance ({i}, {j}) = {c}");
        }
    }
    assert!(matches!(Zca::fit(&CpuBackend, &values, dim, 0.0), Err(PatchError::Whitening(_))));
    assert!(matches!(Zca::fit(&CpuBackend, &values[..7], dim, 0.1), Err(PatchError::Whitening(_))));
}

#[test]
fn mnist_images_become_unit_inputs() {
    let images = IdxImages { count: 3, rows: 2, cols: 2, pixels: vec![0, 255, 51, 102, 1, 2, 3, 4, 9, 9, 9, 9] };
    assert_eq!(unit_inputs(&images, Some(2)), vec![0.0, 1.0, 0.2, 0.4, 1.0 / 255.0, 2.0 / 255.0, 3.0 / 255.0, 4.0 / 255.0]);
    assert_eq!(unit_inputs(&images, None).len(), 12);
    assert_eq!(unit_inputs(&images, Some(10)).len(), 12);
}

#[test]
fn real_mnist_reads_as_inputs_in_the_unit_interval() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mnist/t10k-images-idx3-ubyte.gz");
    if !path.exists() {
        eprintln!("skipped: {} is not there", path.display());
        return;
    }
    let (inputs, width) = deepbelief::data::patches::read_unit_inputs(&path, Some(100)).unwrap();
    assert_eq!((width, inputs.len()), (784, 100 * 784));
    assert!(inputs.iter().all(|&v| (0.0..=1.0).contains(&v)));
    assert!(inputs.contains(&1.0) && inputs.contains(&0.0));
}
