//! The shared MNIST files (../shared/data/mnist: the first 10,000 training digits and the
//! 10,000 test digits, IDX gz; see its README).

use deepbelief::data::{load_idx_dataset, Dataset};
use std::path::{Path, PathBuf};

/// The path of a file of the shared MNIST folder, e.g. `t10k-images-idx3-ubyte.gz`.
pub fn shared_mnist(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mnist").join(name)
}

/// The 10,000 training digits, unlabelled.
pub fn train_10k() -> Dataset {
    load_idx_dataset(&shared_mnist("train-10k-images-idx3-ubyte.gz"), None).expect("the shared MNIST training images (../shared/data/mnist, see /work/shared/TOOLCHAIN.md)")
}

/// The first `n` training digits.
pub fn mnist(n: usize) -> Dataset {
    train_10k().take_first(n)
}
