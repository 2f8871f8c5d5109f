//! For the tests that run the CLI: the built binary, fresh temporary folders, and a small IDX
//! file cut from the shared MNIST training set so each run takes a fraction of a second.

pub use super::mnist::shared_mnist;
use deepbelief::data::idx::{encode_idx_images, read_idx_images, IdxImages};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

pub const SMALL_CASES: usize = 500;

/// A new, empty folder under the system's temporary folder.
pub fn temp_dir(label: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!("deepbelief-{label}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}

/// The first `SMALL_CASES` training digits as a raw IDX file, written once per test binary.
pub fn small_images() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let all = read_idx_images(&shared_mnist("train-10k-images-idx3-ubyte.gz")).expect("the shared MNIST training images");
        let pixels = all.pixels[..SMALL_CASES * all.rows * all.cols].to_vec();
        let small = IdxImages { count: SMALL_CASES, rows: all.rows, cols: all.cols, pixels };
        let path = temp_dir("small-idx").join("train-500-images-idx3-ubyte");
        std::fs::write(&path, encode_idx_images(&small)).expect("write the small IDX file");
        path
    })
}

/// The binary under test: this build's, or `DEEPBELIEF_BIN` (to run the tests against
/// another build, e.g. to see a new test fail on the code before a fix).
pub fn binary() -> PathBuf {
    std::env::var_os("DEEPBELIEF_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_deepbelief")))
}

pub fn run(args: &[&str]) -> Output {
    Command::new(binary()).args(args).output().expect("the deepbelief binary runs")
}

/// Runs and expects success; returns standard output.
pub fn run_ok(args: &[&str]) -> String {
    let output = run(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "deepbelief {args:?} failed ({}):\n{stderr}", output.status);
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// Runs and expects failure; returns standard error.
pub fn run_fails(args: &[&str]) -> String {
    let output = run(args);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "deepbelief {args:?} should have failed; stdout:\n{}", String::from_utf8_lossy(&output.stdout));
    stderr
}

/// The JSON object on the last line of standard output.
pub fn last_json(stdout: &str) -> serde_json::Value {
    let line = stdout.lines().last().expect("some output");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("last line is not JSON ({e}): {line}"))
}

/// The small two-layer settings every CLI test trains with.
pub fn small_train_args<'a>(images: &'a str, out: &'a str) -> Vec<&'a str> {
    vec!["train", "--train-images", images, "--rbm-layers", "30,20", "--epochs", "2", "--init-trials", "2", "--out", out]
}

/// Trains the small model into a new folder, returning the folder and the final JSON.
pub fn train_small_model(label: &str) -> (PathBuf, serde_json::Value) {
    let out = temp_dir(label);
    let images = small_images().to_str().expect("UTF-8 path");
    let mut args = small_train_args(images, out.to_str().expect("UTF-8 path"));
    args.push("--json");
    let figures = last_json(&run_ok(&args));
    (out, figures)
}

/// Labels of the first `SMALL_CASES` training digits as a raw IDX file, written once per
/// test binary.
pub fn small_labels() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let labels = deepbelief::data::idx::read_idx_labels(&shared_mnist("train-10k-labels-idx1-ubyte.gz")).expect("the shared MNIST labels");
        let path = temp_dir("small-labels").join("train-500-labels-idx1-ubyte");
        std::fs::write(&path, deepbelief::data::idx::encode_idx_labels(&labels[..SMALL_CASES])).expect("write the small label file");
        path
    })
}

/// The names in `dir`, sorted.
pub fn folder_listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir).expect("a readable folder").map(|e| e.expect("an entry").file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}
