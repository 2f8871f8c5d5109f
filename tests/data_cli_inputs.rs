#![cfg(not(target_arch = "wasm32"))]
//! Bad data files given to the CLI: each is refused with a message that names the file and
//! says what was found and what was expected.

mod support;

use std::path::{Path, PathBuf};
use support::cli::*;

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// `train` on `images` (and `extra` flags), which must fail; its standard error.
fn train_fails(dir: &Path, images: &Path, extra: &[&str]) -> String {
    let out = dir.join("out");
    let mut args = vec!["train", "--train-images", images.to_str().unwrap(), "--rbm-layers", "4", "--epochs", "1", "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    run_fails(&args)
}

#[test]
fn a_file_with_an_unknown_magic_is_reported_as_not_idx_with_its_first_bytes() {
    let dir = temp_dir("bad-magic");
    let mut bytes = vec![0x12, 0x34, 0x56, 0x78];
    bytes.extend([0xff; 40]);
    let path = write_file(&dir, "images.idx", &bytes);
    let stderr = train_fails(&dir, &path, &[]);
    assert!(stderr.contains("images.idx: neither an IDX file nor a text database: it starts with the bytes 0x12345678"), "{stderr}");
    assert!(stderr.contains("0x00000803 for images"), "{stderr}");
}

#[test]
fn an_idx_file_of_another_element_type_is_reported_by_its_magic() {
    // IDX of floats (type 0x0d), one 1×1 image.
    let bytes = [0, 0, 0x0d, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
    let path = write_file(&temp_dir("float-idx"), "floats-idx3", &bytes);
    let stderr = train_fails(path.parent().unwrap(), &path, &[]);
    assert!(stderr.contains("floats-idx3: not an IDX file of this kind: bad magic number 0x00000d03 (expected 0x00000803 for an IDX image file)"), "{stderr}");
}

#[test]
fn a_stray_training_label_is_refused_before_training() {
    use deepbelief::data::idx::{encode_idx_labels, read_idx_labels};
    let dir = temp_dir("stray-label");
    let mut labels = read_idx_labels(&shared_mnist("train-10k-labels-idx1-ubyte.gz")).unwrap();
    labels.truncate(SMALL_CASES);
    labels[17] = 200;
    let labels_path = write_file(&dir, "labels-idx1", &encode_idx_labels(&labels));
    let stderr = train_fails(&dir, small_images(), &["--train-labels", labels_path.to_str().unwrap()]);
    assert!(
        stderr.contains("labels-idx1: case 18 (counting from 1) has label 200, so the labels define the classes 0 to 200, but classes 10 to 199 have no cases"),
        "{stderr}"
    );
    assert!(!dir.join("out").join("model.json").exists());
}

#[test]
fn an_input_named_twice_is_refused_naming_it() {
    let dir = temp_dir("inputs-twice");
    let mut text = String::from("X1 X2 Y\n");
    for k in 0..40 {
        text += &format!("{} {} {}\n", k % 5, k % 3, k % 2);
    }
    let path = write_file(&dir, "data.txt", text.as_bytes());
    let stderr = train_fails(&dir, &path, &["--inputs", "X1,x1,X2"]);
    assert!(stderr.contains("data.txt: variable X1 is selected twice as an input, at places 1 and 2 of the list"), "{stderr}");
}
