#![cfg(target_arch = "wasm32")]
//! The page's files through the wasm API (`wasm-pack test`): model save/load round trips,
//! command-line models, bad files, DEEP.LOG with and without supervised layers, and the
//! activation file against the CPU reference.

mod support;

use deepbelief::web::Playground;
use deepbelief::backend::cpu::CpuBackend;
use deepbelief::format::from_json;
use wasm_bindgen_test::*;
use support::web_playground::strokes::*;
use support::web_playground::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn saved_models_load_back_identically() {
    let pg = trained(SIDE, "[8, 4]");
    let text = pg.save_model().unwrap();
    let filters = image(pg.filters_image(8, 4, "grey").unwrap()).data;
    let parsed = from_json("saved", &text).expect("the CLI's reader accepts the page's file");
    assert_eq!(parsed.dbn.sizes(), vec![SIDE * SIDE, 8, 4]);
    assert_eq!(parsed.training.len(), 2);
    assert_eq!(parsed.image_shape, Some((SIDE, SIDE)));

    let mut other = loaded(SIDE);
    let summary = other.load_model("model.json", &text).unwrap_or_else(|e| panic!("{}", error_message(e)));
    assert_eq!(field(&summary, "parameters").as_f64(), Some((36 * 8 + 36 + 8 + 8 * 4 + 8 + 4) as f64));
    assert!(other.training_finished());
    assert_eq!(image(other.filters_image(8, 4, "grey").unwrap()).data, filters);
    assert_eq!(other.save_model().unwrap(), text);
}

#[wasm_bindgen_test]
fn bad_model_files_are_refused_and_the_model_survives() {
    let mut pg = trained(SIDE, "[8, 4]");
    let filters = image(pg.filters_image(8, 4, "grey").unwrap()).data;
    let saved = pg.save_model().unwrap();

    let error = error_message(pg.load_model("broken.json", "{ \"format\": ").unwrap_err());
    assert!(error.starts_with("broken.json:") && error.contains("line 1"), "{error}");

    let smaller = trained(SIDE - 1, "[8]").save_model().unwrap();
    let error = error_message(pg.load_model("small.json", &smaller).unwrap_err());
    assert!(error.starts_with("small.json:") && error.contains("n_visible") && error.contains("25") && error.contains("36"), "{error}");

    assert_eq!(image(pg.filters_image(8, 4, "grey").unwrap()).data, filters);
    assert_eq!(pg.save_model().unwrap(), saved);
}

/// The figure after `name ....` in a DEEP.LOG entry line.
fn entry_value<'a>(section: &'a str, name: &str) -> &'a str {
    let line = section.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| panic!("no {name} entry"));
    line.split(" .").last().unwrap().trim_start_matches('.').trim()
}

#[wasm_bindgen_test]
fn deep_log_reports_every_layer_and_its_epochs() {
    let pg = trained(SIDE, "[8, 4]");
    let log = pg.deep_log().unwrap();
    assert!(log.starts_with("DEEP.LOG"), "{log}");
    let second = log.find("LAYER 2 of 2").expect("a section for layer 2");
    let first = log.find("LAYER 1 of 2").expect("a section for layer 1");
    for section in [&log[first..second], &log[second..]] {
        let epochs: usize = entry_value(section, "Epochs").split(' ').next().unwrap().parse().unwrap();
        assert!(epochs >= 1, "every layer trained at least one epoch:\n{section}");
        for epoch in 1..=epochs {
            let row = section.lines().any(|l| l.split_whitespace().next() == Some(&epoch.to_string()) && l.split_whitespace().count() == 7);
            assert!(row, "no row for epoch {epoch}:\n{section}");
        }
    }
}

#[wasm_bindgen_test]
fn activation_file_holds_each_cases_probabilities() {
    let pg = trained(SIDE, "[8, 4]");
    let text = pg.activations("unsupervised:2").unwrap();
    let model = from_json("saved", &pg.save_model().unwrap()).unwrap();
    let (data, _) = pixels(SIDE, CASES);
    let inputs: Vec<f32> = data.iter().map(|&b| b as f32 / 255.0).collect();
    let expected = model.dbn.propagate_up(&CpuBackend, &inputs, 2);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("# unsupervised:2"));
    let rows: Vec<Vec<f32>> = lines.map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect()).collect();
    assert_eq!(rows.len(), CASES);
    for (k, row) in rows.iter().enumerate() {
        assert_eq!(row[..], expected[k * 4..(k + 1) * 4], "case {k}");
    }
    let error = error_message(pg.activations("output:1").unwrap_err());
    assert!(error.contains("no supervised layers"), "{error}");
    let error = error_message(pg.activations("hidden").unwrap_err());
    assert!(error.starts_with("selection:") && error.contains("unknown section 'hidden'"), "{error}");
}

#[wasm_bindgen_test]
fn supervised_layers_reach_the_log_the_file_and_the_activations() {
    let mut pg = loaded(SIDE);
    let split = pg.set_held_out(0.2, None).unwrap_or_else(|e| panic!("{}", error_message(e)));
    let train = field(&split, "n_train").as_f64().unwrap() as usize;
    assert!(train < CASES);
    let config = r#"{"stack": {"layers": [8], "monitor_cases": 0, "rbm": {"epochs": 2, "batch_size": 10, "init_trials": 2, "seed": 5}},
                     "supervised": {"hidden": [], "max_iterations": 5, "anneal_iterations": 2}}"#;
    pg.start_training(js_sys::JSON::parse(config).unwrap()).unwrap_or_else(|e| panic!("{}", error_message(e)));
    while !pg.training_finished() {
        pg.step().unwrap_or_else(|e| panic!("{}", error_message(e)));
    }
    assert!(pg.supervised_pending());
    pg.train_supervised(&js_sys::Function::new_no_args(""), None).unwrap_or_else(|e| panic!("{}", error_message(e)));

    let log = pg.deep_log().unwrap();
    assert!(log.lines().next().unwrap().contains("supervised softmax output"), "{}", &log[..200]);
    assert!(log.contains("Complete model: 36 -> 8 -> 4"), "the supervised architecture section");
    assert!(log.contains(&format!("CLASSIFICATION: training data ({train} cases)")), "the training confusion matrix:\n{log}");
    assert!(log.contains(&format!("CONFUSION MATRIX ({train} cases;")), "{log}");
    assert!(log.contains(&format!("CLASSIFICATION: held-out data ({} cases)", CASES - train)), "{log}");
    assert!(log.contains(&format!("CONFUSION MATRIX ({} cases;", CASES - train)), "{log}");

    let text = pg.save_model().unwrap();
    let saved = from_json("saved", &text).unwrap();
    assert_eq!(saved.supervised.as_ref().map(|s| s.network.n_outputs()), Some(4));
    let mut other = loaded(SIDE);
    let summary = other.load_model("model.json", &text).unwrap();
    let supervised = field(&summary, "supervised");
    assert_eq!(field(&supervised, "n_outputs").as_f64(), Some(4.0));
    assert_eq!(other.save_model().unwrap(), text);

    // SoftMax outputs: each case's four probabilities sum to 1.
    let outputs = other.activations("output:1").unwrap();
    let rows: Vec<f32> = outputs.lines().skip(1).map(|l| l.split_whitespace().map(|v| v.parse::<f32>().unwrap()).sum()).collect();
    assert_eq!(rows.len(), CASES);
    assert!(rows.iter().all(|s| (s - 1.0).abs() < 1e-5), "{rows:?}");
}

#[wasm_bindgen_test]
fn a_command_line_model_with_settings_for_more_data_loads_and_saves_unchanged() {
    // As `deepbelief train` writes it after training on 60,000 cases: batches of 600 and 100
    // batches, more than this page's 60 cases allow for training.
    let mut model = from_json("saved", &trained(SIDE, "[8]").save_model().unwrap()).unwrap();
    model.config.rbm.batch_size = Some(600);
    model.config.rbm.n_batches = 100;
    model.visible_means = Some(vec![0.25; SIDE * SIDE]);
    let text = deepbelief::format::to_json(&model);
    let mut pg = loaded(SIDE);
    pg.load_model("cli/model.json", &text).unwrap_or_else(|e| panic!("{}", error_message(e)));
    assert!(pg.training_finished());
    assert_eq!(pg.save_model().unwrap(), text, "the file's settings, means and records are kept");
}

#[wasm_bindgen_test]
fn a_database_models_file_and_log_carry_its_scaling() {
    // 40 cases of inputs a, b (c is constant, so dropped) and a target y.
    let mut csv = String::from("a, b, c, y\n");
    for k in 0..40 {
        csv += &format!("{}, {}, 5, {}\n", k % 7, (k * 3) % 11, k % 2);
    }
    let mut pg = Playground::new();
    pg.load_database("table.csv", &csv, vec![], vec!["y".into()]).unwrap_or_else(|e| panic!("{}", error_message(e)));
    let config = r#"{"stack": {"layers": [3], "monitor_cases": 0, "rbm": {"epochs": 2, "batch_size": 10, "init_trials": 2}}, "supervised": null}"#;
    pg.start_training(js_sys::JSON::parse(config).unwrap()).unwrap_or_else(|e| panic!("{}", error_message(e)));
    while !pg.training_finished() {
        pg.step().unwrap_or_else(|e| panic!("{}", error_message(e)));
    }
    let log = pg.deep_log().unwrap();
    assert!(log.contains("of 2 input columns") && log.contains("dropped as constant: c"), "{log}");
    let text = pg.save_model().unwrap();
    let saved = from_json("saved", &text).unwrap();
    assert_eq!(saved.preprocessing.as_ref().map(|p| p.kept_names.clone()), Some(vec!["a".to_string(), "b".to_string()]));
    assert_eq!(saved.image_shape, None);
    let mut other = Playground::new();
    other.load_database("table.csv", &csv, vec![], vec!["y".into()]).unwrap();
    other.load_model("model.json", &text).unwrap_or_else(|e| panic!("{}", error_message(e)));
    assert_eq!(other.save_model().unwrap(), text);

    // Two inputs again, but other columns: the model's scaling does not describe them.
    let mut renamed = Playground::new();
    renamed.load_database("other.csv", &csv.replacen("a, b", "a, q", 1), vec![], vec!["y".into()]).unwrap();
    let error = error_message(renamed.load_model("model.json", &text).unwrap_err());
    assert!(error.starts_with("model.json:") && error.contains("preprocessing.kept_names") && error.contains("\"q\""), "{error}");
    assert!(renamed.save_model().is_err(), "no model was installed");
}
