#![cfg(not(target_arch = "wasm32"))]
//! `deepbelief local-rbm` end to end on a small stack, and the `deepbelief-local-rbm/1` file:
//! read back it holds the geometry the flags asked for, writes back byte for byte, and
//! damaged files are refused naming what is wrong.

use deepbelief::format::local_rbm::{read, write};
use deepbelief::local_rbm::stack::propagate;
use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_deepbelief")).arg("local-rbm").args(args).output().expect("the CLI runs")
}

#[test]
fn trains_a_stack_and_writes_a_readable_model_and_filters() {
    let out = std::env::temp_dir().join(format!("local_rbm_cli_{}", std::process::id()));
    let result = run(&["--image-size", "24", "--layers", "local:8:4:12,tied:2:1:6,dense:10", "--epochs", "2", "--cases", "384", "--json", "--out", out.to_str().unwrap()]);
    assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
    let figures: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&result.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(figures["layers"], 3);

    let bytes = std::fs::read(out.join("local_rbm.bin")).unwrap();
    let saved = read(&bytes).unwrap();
    let g: Vec<_> = saved.layers.iter().map(|l| l.geometry).collect();
    assert_eq!((g[0].rows, g[0].patch, g[0].stride, g[0].hidden_per_patch, g[0].tied, g[0].positions()), (24, 8, 4, 12, false, 25));
    assert_eq!((g[1].rows, g[1].channels, g[1].tied, g[1].positions(), g[1].weight_count()), (5, 12, true, 16, 2 * 2 * 12 * 6));
    assert_eq!((g[2].rows, g[2].channels, g[2].positions(), g[2].n_hidden()), (4, 6, 1, 10));
    let parameters: usize = saved.layers.iter().map(|l| l.parameter_count()).sum();
    assert_eq!(figures["parameters"], parameters);
    assert_eq!(saved.history.iter().map(|h| h.len()).collect::<Vec<_>>(), vec![2, 2, 2]);
    // The stack propagates: 10 probabilities per case at the top.
    let top = propagate(&saved.layers, &vec![0.0; 2 * 24 * 24]);
    assert_eq!(top.len(), 20);
    assert!(top.iter().all(|p| (0.0..=1.0).contains(p)));

    let mut again = Vec::new();
    write(&saved, &mut again).unwrap();
    // The parameters come back bit for bit (the header's decimals may differ in the last
    // place: serde_json's default float parsing is not a strict round trip).
    let values = saved.layers.iter().map(|l| l.parameter_count()).sum::<usize>() * 4;
    assert_eq!(again[again.len() - values..], bytes[bytes.len() - values..], "parameters written back bit for bit");
    let reread = read(&again).unwrap();
    assert_eq!(reread.layers, saved.layers);

    let png = std::fs::read(out.join("filters.png")).unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let info = decoder.read_info().unwrap();
    // 5 × 5 cells, each 12 filters of 8 × 8 in 4 columns and 3 rows with 1-pixel gaps (37 × 28 px), 3 px apart.
    assert_eq!((info.info().width, info.info().height), (5 * (37 + 3) + 3, 5 * (28 + 3) + 3));
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn damaged_files_are_refused_by_field() {
    let out = std::env::temp_dir().join(format!("local_rbm_cli_bad_{}", std::process::id()));
    let result = run(&["--image-size", "16", "--patch", "8", "--stride", "8", "--hidden-per-patch", "4", "--epochs", "1", "--cases", "64", "--out", out.to_str().unwrap()]);
    assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
    let bytes = std::fs::read(out.join("local_rbm.bin")).unwrap();
    assert!(read(&bytes[..bytes.len() - 4]).unwrap_err().contains("layers[0].visible_bias: the file ends"));
    let mut extra = bytes.clone();
    extra.extend([0u8; 4]);
    assert!(read(&extra).unwrap_err().contains("after the last layer"));
    let mut nan = bytes.clone();
    let at = nan.len() - 4;
    nan[at..].copy_from_slice(&f32::NAN.to_le_bytes());
    assert!(read(&nan).unwrap_err().contains("layers[0].visible_bias[255]: not a finite number"));
    let mut magic = bytes.clone();
    magic[0] = b'X';
    assert!(read(&magic).unwrap_err().contains("magic"));
    let key = b"\"stride\":8";
    let stride_at = bytes.windows(key.len()).position(|w| w == key).unwrap();
    let mut stride = bytes.clone();
    stride[stride_at + 9] = b'9';
    let error = read(&stride).unwrap_err();
    assert!(error.starts_with("layers[0].geometry: --stride"), "{error}");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn bad_geometry_flags_are_named() {
    let out = std::env::temp_dir().join("local_rbm_cli_never_written");
    let result = run(&["--image-size", "40", "--patch", "24", "--stride", "0", "--out", out.to_str().unwrap()]);
    assert!(!result.status.success());
    assert!(String::from_utf8_lossy(&result.stderr).contains("--stride: 0"));
    let result = run(&["--image-size", "20", "--out", out.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&result.stderr).contains("--patch: a 24 × 24 patch does not fit"));
    assert!(!out.exists(), "nothing written on a refused geometry");
}
