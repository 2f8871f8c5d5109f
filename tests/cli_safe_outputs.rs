#![cfg(not(target_arch = "wasm32"))]
//! Output files appear whole or not at all: a run that fails leaves the folder's previous
//! outputs byte for byte, a successful one leaves no temporary files, and a second run into
//! a folder in use is refused while a lock left by a killed run is taken over.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::cli::*;

const LOCK_FILE: &str = ".deepbelief.lock";
const TRAIN_OUTPUTS: [&str; 3] = ["DEEP.LOG", "filters.png", "model.json"];

fn contents(dir: &Path, names: &[&str]) -> Vec<Vec<u8>> {
    names.iter().map(|name| std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))).collect()
}

#[test]
fn a_successful_run_leaves_exactly_its_outputs() {
    let (out, _) = train_small_model("safe-success");
    assert_eq!(folder_listing(&out), TRAIN_OUTPUTS, "no temporary file or lock remains");
    // A second run into the same folder replaces the outputs, again leaving nothing else.
    let images = small_images().to_str().unwrap();
    let mut args = small_train_args(images, out.to_str().unwrap());
    args.extend(["--seed", "9"]);
    run_ok(&args);
    assert_eq!(folder_listing(&out), TRAIN_OUTPUTS);
}

#[test]
fn a_run_whose_last_output_cannot_be_written_leaves_the_previous_outputs_untouched() {
    let (out, _) = train_small_model("safe-unwritable");
    // filters.png becomes a folder: the old binary wrote model.json and DEEP.LOG, then
    // failed on it, leaving a new model beside an old picture.
    std::fs::remove_file(out.join("filters.png")).unwrap();
    std::fs::create_dir(out.join("filters.png")).unwrap();
    let kept = ["DEEP.LOG", "model.json"];
    let before = contents(&out, &kept);
    let images = small_images().to_str().unwrap();
    let mut args = small_train_args(images, out.to_str().unwrap());
    args.extend(["--seed", "9"]);
    let error = run_fails(&args);
    assert!(error.contains("filters.png") && error.contains("folder"), "{error}");
    assert_eq!(contents(&out, &kept), before, "model.json and DEEP.LOG are byte-identical");
    assert_eq!(folder_listing(&out), TRAIN_OUTPUTS, "no temporary file or lock remains");
}

#[test]
fn a_run_that_fails_after_training_leaves_the_previous_outputs_untouched() {
    let out = temp_dir("safe-late");
    let (images, labels) = (small_images().to_str().unwrap(), small_labels().to_str().unwrap());
    let supervised = |seed: &'static str, test_images: &'static str| {
        let mut args = small_train_args(images, out.to_str().unwrap());
        args.extend(["--train-labels", labels, "--supervised-layers", "", "--supervised-max-iters", "5", "--seed", seed]);
        args.extend(["--test-images", test_images, "--test-labels", labels]);
        args
    };
    run_ok(&supervised("1", images));
    let before = contents(&out, &TRAIN_OUTPUTS);
    // The label file is no image file: the test data fail to load after the training.
    let error = run_fails(&supervised("2", labels));
    assert!(error.contains(labels), "{error}");
    assert_eq!(contents(&out, &TRAIN_OUTPUTS), before);
    assert_eq!(folder_listing(&out), TRAIN_OUTPUTS);
}

/// A process that lives until killed: its id stands for another run.
fn live_process() -> std::process::Child {
    Command::new("sleep").arg("600").stdout(Stdio::null()).spawn().expect("sleep runs")
}

#[test]
fn a_folder_locked_by_a_running_process_is_refused_naming_the_folder_and_the_process() {
    let out = temp_dir("safe-locked");
    let mut other = live_process();
    std::fs::write(out.join(LOCK_FILE), format!("{}\n", other.id())).unwrap();
    let images = small_images().to_str().unwrap();
    let started = Instant::now();
    let error = run_fails(&small_train_args(images, out.to_str().unwrap()));
    let pid = other.id().to_string();
    assert!(error.contains(out.to_str().unwrap()) && error.contains(&pid) && error.contains("another deepbelief run"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(30), "refused before training");
    assert_eq!(folder_listing(&out), [LOCK_FILE], "nothing written");
    assert_eq!(std::fs::read_to_string(out.join(LOCK_FILE)).unwrap().trim(), pid, "the other run's lock stays");
    other.kill().unwrap();
    other.wait().unwrap();
}

#[test]
fn a_second_run_while_the_first_trains_is_refused_and_a_killed_runs_lock_is_taken_over() {
    let out = temp_dir("safe-concurrent");
    let images = small_images().to_str().unwrap();
    let mut args = small_train_args(images, out.to_str().unwrap());
    let epochs = args.iter().position(|a| *a == "--epochs").unwrap() + 1;
    args[epochs] = "100000";
    // Nothing stops it early: it trains until killed.
    args.extend(["--convergence-tolerance", "0", "--max-no-improvement", "100000"]);
    let mut first = Command::new(binary()).args(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !out.join(LOCK_FILE).exists() {
        assert!(Instant::now() < deadline && first.try_wait().unwrap().is_none(), "the first run takes the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    let error = run_fails(&small_train_args(images, out.to_str().unwrap()));
    assert!(error.contains(&format!("process {}", first.id())), "{error}");

    // Killed, the first run cannot remove its lock or its temporary files.
    let dead = first.id();
    first.kill().unwrap();
    first.wait().unwrap();
    let leftover = format!(".model.json.{dead}.0.tmp");
    std::fs::write(out.join(&leftover), b"half a model").unwrap();
    run_ok(&small_train_args(images, out.to_str().unwrap()));
    assert_eq!(folder_listing(&out), TRAIN_OUTPUTS, "the stale lock and {leftover} are gone");
}

#[test]
fn sample_export_and_test_replace_their_files_without_leaving_temporary_ones() {
    let out = temp_dir("safe-commands");
    let (images, labels) = (small_images().to_str().unwrap(), small_labels().to_str().unwrap());
    let mut args = small_train_args(images, out.to_str().unwrap());
    args.extend(["--train-labels", labels, "--supervised-layers", "", "--supervised-max-iters", "5"]);
    run_ok(&args);
    let files = temp_dir("safe-files");
    let (png, npz, predictions) = (files.join("samples.png"), files.join("model.npz"), files.join("predictions.txt"));
    for path in [&png, &npz, &predictions] {
        std::fs::write(path, b"old").unwrap();
    }
    let model = out.to_str().unwrap();
    run_ok(&["sample", "--model", model, "--count", "4", "--steps", "2", "--backend", "cpu", "--out", png.to_str().unwrap()]);
    run_ok(&["export", "--model", model, "--npz", npz.to_str().unwrap()]);
    run_ok(&["test", "--model", model, "--test-images", images, "--test-labels", labels, "--predictions", predictions.to_str().unwrap()]);
    assert_eq!(folder_listing(&files), ["model.npz", "predictions.txt", "samples.png"]);
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    assert!(std::fs::read(&npz).unwrap().starts_with(b"PK"));
    assert_eq!(std::fs::read_to_string(&predictions).unwrap().lines().count(), 1 + SMALL_CASES);
}
