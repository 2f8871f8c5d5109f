#![cfg(not(target_arch = "wasm32"))]
//! The real MNIST files in ../shared/data/mnist read as the published data.

mod support;

use deepbelief::data::idx::{load_idx_dataset, read_idx_images, read_idx_labels};
use deepbelief::data::CaseValues;
use support::mnist::shared_mnist;

#[test]
fn t10k_has_10000_digits_of_28x28_starting_with_a_7() {
    let dataset = load_idx_dataset(
        &shared_mnist("t10k-images-idx3-ubyte.gz"),
        Some(&shared_mnist("t10k-labels-idx1-ubyte.gz")),
    )
    .unwrap();
    assert_eq!(dataset.name, "t10k-images-idx3-ubyte.gz");
    assert_eq!((dataset.n_cases, dataset.n_inputs), (10_000, 784));
    assert_eq!(dataset.image_shape, Some((28, 28)));
    let labels = dataset.labels.as_ref().unwrap();
    assert_eq!(labels[..5], [7, 2, 1, 0, 4]);
    assert!(labels.iter().all(|&l| l <= 9));

    // Mean intensity of MNIST is 0.1325 (33.3 of 255); the t10k set's is 0.1326.
    let bytes = match &dataset.values {
        CaseValues::Bytes(bytes) => bytes,
        CaseValues::Floats(_) => panic!("IDX data should stay as bytes"),
    };
    let mean = bytes.iter().map(|&b| f64::from(b)).sum::<f64>() / bytes.len() as f64 / 255.0;
    assert!((mean - 0.1325).abs() < 0.002, "mean pixel value {mean}");
    let means = dataset.input_means();
    let mean_of_means = means.iter().map(|&m| f64::from(m)).sum::<f64>() / 784.0;
    assert!((mean_of_means - mean).abs() < 1e-5);
    // The border of every digit is blank.
    assert_eq!(means[0], 0.0);
}

#[test]
fn train_10k_has_10000_digits_starting_with_a_5() {
    let images = read_idx_images(&shared_mnist("train-10k-images-idx3-ubyte.gz")).unwrap();
    let labels = read_idx_labels(&shared_mnist("train-10k-labels-idx1-ubyte.gz")).unwrap();
    assert_eq!((images.count, images.rows, images.cols), (10_000, 28, 28));
    assert_eq!(images.pixels.len(), 10_000 * 784);
    assert_eq!(labels.len(), 10_000);
    assert_eq!(labels[..5], [5, 0, 4, 1, 9]);
}

#[test]
fn missing_file_is_an_io_error_naming_the_path() {
    let path = shared_mnist("no-such-file-idx3-ubyte.gz");
    let error = read_idx_images(&path).unwrap_err();
    assert!(matches!(error.kind, deepbelief::data::DataErrorKind::Io(_)));
    assert!(error.to_string().starts_with(&path.display().to_string()));
}
