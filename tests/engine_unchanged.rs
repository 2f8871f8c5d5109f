#![cfg(not(target_arch = "wasm32"))]
//! Same seeds give the same weights as before the engine seam (issue 16): small fixed-seed
//! `deepbelief train` runs on the first 500 shared MNIST training digits, each digested
//! (per array: length, sum, sum of squares, 16 values at fixed indices) and compared with
//! `tests/fixtures/engine_unchanged.json`, which was written by the code before the refactor:
//!
//! ```text
//! DEEPBELIEF_BLESS=1 WGPU_BACKEND=vulkan VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json \
//!   cargo test --test engine_unchanged
//! ```
//!
//! The runs go through the CLI, the path users take, so the test reads the same before and
//! after the code behind it moves. `DEEPBELIEF_BIN` runs it against another build.
//!
//! CPU runs must match exactly: the CPU engine is deterministic and thread-count independent.
//! GPU runs (Mesa lavapipe) match within 1e-5 relative: the same shaders on the same driver
//! give the same bits, but the WGSL may be reorganised (shared functions in common.wgsl),
//! which lets the shader compiler contract or reorder a multiply-add differently; a change of
//! the training logic moves the weights by far more than that.

mod support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::cli::{binary, shared_mnist, small_images, small_labels, temp_dir};
const SAMPLES: usize = 16;
const GPU_TOLERANCE: f64 = 1e-5;
const LAVAPIPE: &str = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";

fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine_unchanged.json")
}

/// The first 500 images and labels as raw IDX files, or `None` when the shared data is absent.
fn small_data() -> Option<(PathBuf, PathBuf)> {
    let (images, labels) = (shared_mnist("train-10k-images-idx3-ubyte.gz"), shared_mnist("train-10k-labels-idx1-ubyte.gz"));
    (images.exists() && labels.exists()).then(|| (small_images().to_path_buf(), small_labels().to_path_buf()))
}

/// One run: its name, whether it runs on the GPU, and the flags after the common ones.
struct Run {
    name: &'static str,
    gpu: bool,
    supervised: bool,
}

const RUNS: [Run; 4] = [
    Run { name: "cpu_greedy", gpu: false, supervised: false },
    Run { name: "gpu_greedy", gpu: true, supervised: false },
    Run { name: "cpu_supervised", gpu: false, supervised: true },
    Run { name: "gpu_supervised", gpu: true, supervised: true },
];

/// Trains one run and returns the digest of its model.json.
fn train(run: &Run, images: &Path, labels: &Path) -> Value {
    let out = temp_dir(run.name);
    let mut command = Command::new(binary());
    command.args(["train", "--train-images", images.to_str().unwrap(), "--rbm-layers", "16,8", "--epochs", "2", "--seed", "7", "--json"]);
    command.args(["--backend", if run.gpu { "gpu" } else { "cpu" }, "--out", out.to_str().unwrap()]);
    if run.supervised {
        command.args(["--train-labels", labels.to_str().unwrap(), "--supervised-layers", "", "--supervised-max-iters", "5"]);
    }
    if run.gpu {
        if std::env::var_os("WGPU_BACKEND").is_none() {
            command.env("WGPU_BACKEND", "vulkan");
        }
        if std::env::var_os("VK_DRIVER_FILES").is_none() {
            command.env("VK_DRIVER_FILES", LAVAPIPE);
        }
    }
    let output = command.output().expect("the deepbelief binary runs");
    assert!(output.status.success(), "{}: deepbelief train failed ({}):\n{}", run.name, output.status, String::from_utf8_lossy(&output.stderr));
    let text = std::fs::read_to_string(out.join("model.json")).expect("train writes model.json");
    let _ = std::fs::remove_dir_all(&out);
    digest_model(&serde_json::from_str(&text).expect("model.json is JSON"))
}

/// Length, sum and sum of squares (in f64, in order) and `SAMPLES` values at fixed indices.
fn digest(values: &Value) -> Value {
    let values: Vec<f64> = values.as_array().expect("an array of numbers").iter().map(|v| v.as_f64().expect("a number")).collect();
    let n = values.len();
    let samples: Vec<f64> = (0..SAMPLES.min(n)).map(|k| values[k * n / SAMPLES.min(n)]).collect();
    json!({
        "len": n,
        "sum": values.iter().sum::<f64>(),
        "sum_squares": values.iter().map(|v| v * v).sum::<f64>(),
        "samples": samples,
    })
}

fn digest_model(model: &Value) -> Value {
    let layers: Vec<Value> = model["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .map(|layer| json!({"weights": digest(&layer["weights"]), "visible_bias": digest(&layer["visible_bias"]), "hidden_bias": digest(&layer["hidden_bias"])}))
        .collect();
    let supervised = match &model["supervised"] {
        Value::Null => Value::Null,
        s => json!({
            "layers": s["layers"].as_array().expect("supervised layers").iter().map(|l| json!({"weights": digest(&l["weights"]), "bias": digest(&l["bias"])})).collect::<Vec<_>>(),
            "train_criterion": s["train_criterion"],
            "train_error": s["train_error"],
        }),
    };
    json!({"layers": layers, "training": model["training"], "supervised": supervised})
}

/// Differences between `now` and `then` (the fixture), walking both; on the GPU numbers agree
/// within `GPU_TOLERANCE` of their size, and a digest's sum within that of √(n·Σx²), the
/// size of the rounding a reordered sum of n such terms can have.
fn compare(path: &str, now: &Value, then: &Value, gpu: bool, scale: f64, failures: &mut Vec<String>) {
    match (now, then) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            let sum_scale = match (a.get("len"), a.get("sum_squares")) {
                (Some(n), Some(s)) => (n.as_f64().unwrap_or(0.0) * s.as_f64().unwrap_or(0.0)).sqrt(),
                _ => 0.0,
            };
            for key in keys {
                let scale = if key == "sum" { sum_scale } else { 0.0 };
                compare(&format!("{path}.{key}"), a.get(key).unwrap_or(&Value::Null), b.get(key).unwrap_or(&Value::Null), gpu, scale, failures);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (k, (x, y)) in a.iter().zip(b).enumerate() {
                compare(&format!("{path}[{k}]"), x, y, gpu, scale, failures);
            }
        }
        (Value::Number(a), Value::Number(b)) if gpu => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            let allowed = GPU_TOLERANCE * a.abs().max(b.abs()).max(scale);
            if (a - b).abs() > allowed {
                failures.push(format!("{path}: now {a:e}, before {b:e} (|Δ| {:e} > {allowed:e})", (a - b).abs()));
            }
        }
        (a, b) if a != b => failures.push(format!("{path}: now {a}, before {b}")),
        _ => {}
    }
}

#[test]
fn same_seeds_give_the_same_weights_as_before_the_engine_seam() {
    let Some((images, labels)) = small_data() else {
        eprintln!("skipped: ../shared/data/mnist/train-10k-{{images-idx3,labels-idx1}}-ubyte.gz are missing");
        return;
    };
    let gpu_available = Path::new(LAVAPIPE).exists() || std::env::var_os("VK_DRIVER_FILES").is_some();
    let bless = std::env::var_os("DEEPBELIEF_BLESS").is_some();
    if bless {
        assert!(gpu_available, "blessing needs the GPU runs: install mesa-vulkan-drivers (lavapipe)");
        let digests: serde_json::Map<String, Value> = RUNS.iter().map(|run| (run.name.to_string(), train(run, &images, &labels))).collect();
        let path = fixture_path();
        let temporary = path.with_extension("json.tmp");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&temporary, serde_json::to_string_pretty(&Value::Object(digests)).unwrap() + "\n").expect("write the fixture");
        std::fs::rename(&temporary, &path).expect("put the fixture in place");
        eprintln!("wrote {}", path.display());
        return;
    }
    let text = std::fs::read_to_string(fixture_path()).expect("tests/fixtures/engine_unchanged.json (DEEPBELIEF_BLESS=1 writes it)");
    let fixture: Value = serde_json::from_str(&text).expect("the fixture is JSON");
    let mut failures = Vec::new();
    for run in &RUNS {
        if run.gpu && !gpu_available {
            eprintln!("skipped {}: no lavapipe ({LAVAPIPE}) and no VK_DRIVER_FILES", run.name);
            continue;
        }
        // Through the fixture's own text form: serde_json reads a float back within an ulp,
        // not always to the same bits, so both sides take the same trip.
        let now: Value = serde_json::from_str(&train(run, &images, &labels).to_string()).expect("a digest is JSON");
        compare(run.name, &now, &fixture[run.name], run.gpu, 0.0, &mut failures);
    }
    assert!(failures.is_empty(), "the weights moved since tests/fixtures/engine_unchanged.json was written:\n{}", failures.join("\n"));
}
