#![cfg(not(target_arch = "wasm32"))]
//! DEEP databases: parsing, exact error positions, column lookup, preprocessing.

use deepbelief::data::database::{parse_database, Database};
use deepbelief::data::preprocess::{dataset_from_database, Preprocessing, Scaling};
use deepbelief::data::{CaseValues, DataErrorKind, Targets};

const SOURCE: &str = "prices.csv";

fn parse(text: &str) -> Database {
    parse_database(SOURCE, text).unwrap_or_else(|e| panic!("{e}"))
}

/// The error kind of a text that must fail, after checking the message names the file.
fn error_of(text: &str) -> DataErrorKind {
    let error = parse_database(SOURCE, text).unwrap_err();
    assert!(error.to_string().starts_with("prices.csv: "), "{error}");
    error.kind
}

fn parse_error(line: usize, column: usize, message: &str) -> DataErrorKind {
    DataErrorKind::Parse {
        line,
        column,
        message: message.to_string(),
    }
}

fn header_error_at(text: &str) -> (usize, usize, String) {
    match error_of(text) {
        DataErrorKind::BadHeader {
            line,
            column,
            message,
        } => (line, column, message),
        other => panic!("expected BadHeader, got {other:?}"),
    }
}

fn floats(dataset: &deepbelief::data::Dataset) -> &[f32] {
    match &dataset.values {
        CaseValues::Floats(values) => values,
        CaseValues::Bytes(_) => panic!("database values should be floats"),
    }
}

#[test]
fn csv_and_whitespace_files_with_the_same_values_are_equal() {
    let csv = parse("x1,x2,y\n1,2.5,0\n-3,1e-3,1\n.5,4,0\n");
    let text = parse("x1 x2\ty\n1   2.5 0\n\n-3\t1e-3 1\n  .5 4 0");
    assert_eq!(csv, text);
    assert_eq!(csv.names, ["x1", "x2", "y"]);
    assert_eq!(csv.n_cases, 3);
    assert_eq!(csv.values, [1.0, 2.5, 0.0, -3.0, 0.001, 1.0, 0.5, 4.0, 0.0]);
}

#[test]
fn commas_mixed_with_spaces_and_crlf_line_ends() {
    let mixed = parse("a , b,c\n1 ,2,  3\n4, 5 ,6\r\n");
    assert_eq!(mixed.names, ["a", "b", "c"]);
    assert_eq!(mixed.values, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);

    let crlf = parse("\u{feff}a,b\r\n1,2\r\n\r\n3,4\r\n");
    assert_eq!(crlf.names, ["a", "b"]);
    assert_eq!(crlf.values, [1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn names_must_start_with_a_letter() {
    let (line, column, message) = header_error_at("ok,1st,z\n1,2,3\n");
    assert_eq!((line, column), (1, 4));
    assert!(
        message.contains("starting with a letter, found \"1st\""),
        "{message}"
    );
    // Blank lines before the header count in the line number.
    let (line, column, _) = header_error_at("\n\n  _x y\n1 2\n");
    assert_eq!((line, column), (3, 3));
}

#[test]
fn names_are_at_most_15_characters() {
    assert_eq!(parse("abcdefghijklmno\n1\n").names, ["abcdefghijklmno"]);
    let (line, column, message) = header_error_at("a abcdefghijklmnop\n1 2\n");
    assert_eq!((line, column), (1, 3));
    assert!(
        message.contains("16 characters long (expected at most 15)"),
        "{message}"
    );
}

#[test]
fn names_hold_only_letters_digits_and_underscores() {
    let (line, column, message) = header_error_at("a,b-c\n1,2\n");
    assert_eq!((line, column), (1, 3));
    assert!(message.contains("contains '-'"), "{message}");
    assert_eq!(parse("Var_1 z9\n1 2\n").names, ["Var_1", "z9"]);
}

#[test]
fn duplicate_names_differing_only_in_case_are_rejected() {
    let (line, column, message) = header_error_at("a b A\n1 2 3\n");
    assert_eq!((line, column), (1, 5));
    assert!(
        message.contains("appears twice (first at column 1"),
        "{message}"
    );
}

#[test]
fn a_field_that_is_not_a_number() {
    let kind = error_of("a,b,c\n1,2,3\n4,x5,6\n");
    assert_eq!(kind, parse_error(3, 3, "expected a number, found \"x5\""));
    let message = parse_database(SOURCE, "a,b,c\n1,2,3\n4,x5,6\n")
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        "prices.csv: line 3, column 3: expected a number, found \"x5\""
    );
}

#[test]
fn too_few_values_point_past_the_end_of_the_line() {
    assert_eq!(
        error_of("a b c\n1 2\n"),
        parse_error(2, 4, "expected 3 values (one per variable), found 2")
    );
}

#[test]
fn too_many_values_point_at_the_first_surplus_value() {
    assert_eq!(
        error_of("a b c\n1 2 3\n1 2 3 44\n"),
        parse_error(3, 7, "expected 3 values (one per variable), found 4")
    );
}

#[test]
fn empty_fields_between_commas_are_missing_values() {
    let missing = "expected a value, found an empty field (missing values are not allowed)";
    assert_eq!(error_of("a,b,c\n1,,3\n"), parse_error(2, 3, missing));
    assert_eq!(error_of("a,b,c\n1, ,3\n"), parse_error(2, 4, missing));
    assert_eq!(error_of("a,b\n1,2,\n"), parse_error(2, 5, missing));
    assert_eq!(error_of("a,b\n,1,2\n"), parse_error(2, 1, missing));
    assert!(matches!(
        error_of("a,,b\n1,2\n"),
        DataErrorKind::BadHeader {
            line: 1,
            column: 3,
            ..
        }
    ));
}

#[test]
fn nan_and_infinity_are_rejected() {
    assert_eq!(
        error_of("a,b\n1,NaN\n"),
        parse_error(2, 3, "expected a finite number, found \"NaN\"")
    );
    assert_eq!(
        error_of("a b\n-inf 2\n"),
        parse_error(2, 1, "expected a finite number, found \"-inf\"")
    );
    assert_eq!(
        error_of("a b\n1 1e999\n"),
        parse_error(2, 3, "expected a finite number, found \"1e999\"")
    );
}

#[test]
fn a_database_without_cases_is_empty() {
    assert_eq!(error_of(""), DataErrorKind::Empty);
    assert_eq!(error_of("a,b\n\n\r\n"), DataErrorKind::Empty);
}

#[test]
fn columns_are_selected_by_name_regardless_of_case() {
    let db = parse("x1,x2,y\n1,2,3\n");
    assert_eq!(db.column_indices(&["y", "X1"]).unwrap(), [2, 0]);

    let error = db.column_indices(&["x1", "z"]).unwrap_err();
    let message = error.to_string();
    assert_eq!(
        error.kind,
        DataErrorKind::UnknownVariable {
            name: "z".into(),
            available: vec!["x1".into(), "x2".into(), "y".into()]
        }
    );
    assert_eq!(
        message,
        "prices.csv: no variable named \"z\" (expected one of: x1, x2, y)"
    );
}

// a: 0 2 4 1 (min 0, max 4, mean 1.75); b: 10 30 20 40 (min 10, max 40, mean 25);
// k is constant; t is the target.
const TRAINING: &str = "a b k t\n0 10 5 1\n2 30 5 0\n4 20 5 1\n1 40 5 0\n";

#[test]
fn rescaling_maps_the_training_range_onto_0_to_1() {
    let db = parse(TRAINING);
    let (dataset, preprocessing) =
        dataset_from_database(&db, &["a", "b", "k"], &["t"], Scaling::Rescale).unwrap();
    let third = (1.0f64 / 3.0) as f32;
    let two_thirds = (2.0f64 / 3.0) as f32;
    assert_eq!(
        floats(&dataset),
        [0.0, 0.0, 0.5, two_thirds, 1.0, third, 0.25, 1.0]
    );
    assert_eq!((dataset.n_cases, dataset.n_inputs), (4, 2));
    assert_eq!(dataset.input_names, ["a", "b"]);
    assert_eq!(
        dataset.targets,
        Some(Targets {
            names: vec!["t".into()],
            values: vec![1.0, 0.0, 1.0, 0.0]
        })
    );
    assert_eq!(preprocessing.kept, [0, 1]);
    assert_eq!(preprocessing.min, [0.0, 10.0]);
    assert_eq!(preprocessing.max, [4.0, 40.0]);
}

#[test]
fn binary_split_is_one_above_the_mean() {
    let db = parse(TRAINING);
    let (dataset, preprocessing) =
        dataset_from_database(&db, &["a", "b"], &[], Scaling::BinarySplit).unwrap();
    assert_eq!(preprocessing.mean, [1.75, 25.0]);
    assert_eq!(floats(&dataset), [0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0]);
    assert_eq!(dataset.targets, None);
}

#[test]
fn constant_columns_are_dropped_and_named() {
    let db = parse(TRAINING);
    let (_, preprocessing) =
        dataset_from_database(&db, &["k", "b"], &[], Scaling::Rescale).unwrap();
    assert_eq!(preprocessing.kept_names, ["b"]);
    assert_eq!(preprocessing.dropped_names, ["k"]);

    let error = dataset_from_database(&db, &["k"], &[], Scaling::Rescale).unwrap_err();
    assert!(
        matches!(&error.kind, DataErrorKind::Preprocess(m) if m.contains("constant (k)")),
        "{error}"
    );
}

#[test]
fn a_test_database_with_reordered_columns_is_transformed_identically() {
    let training = parse(TRAINING);
    let (expected, preprocessing) =
        dataset_from_database(&training, &["a", "b", "k"], &["t"], Scaling::Rescale).unwrap();

    // The same rows with the columns in another order, plus one beyond the training range.
    let test = parse("t k b a\n1 5 10 0\n0 5 30 2\n1 5 20 4\n0 5 40 1\n1 7 70 -3\n");
    let inputs = test.column_indices(&["a", "b", "k"]).unwrap();
    let targets = test.column_indices(&["t"]).unwrap();
    let transformed = preprocessing.apply(&test, &inputs, &targets).unwrap();
    assert_eq!(floats(&transformed)[..8], floats(&expected)[..]);
    // Values outside the training range are clamped.
    assert_eq!(floats(&transformed)[8..], [0.0, 1.0]);
    assert_eq!(
        transformed.targets.as_ref().unwrap().values[..4],
        expected.targets.as_ref().unwrap().values[..]
    );

    // Saved with a model and reloaded, it transforms the same way.
    let json = serde_json::to_string(&preprocessing).unwrap();
    let reloaded: Preprocessing = serde_json::from_str(&json).unwrap();
    assert_eq!(
        reloaded.apply(&test, &inputs, &targets).unwrap(),
        transformed
    );

    let without_b = parse("a k t\n1 5 0\n");
    let inputs = without_b.column_indices(&["a", "k"]).unwrap();
    let error = preprocessing.apply(&without_b, &inputs, &[]).unwrap_err();
    assert!(
        matches!(error.kind, DataErrorKind::UnknownVariable { ref name, .. } if name == "b"),
        "{error}"
    );
}

#[test]
fn classes_are_the_largest_target_of_each_case() {
    let db = parse("x c0 c1 c2\n1 0 1 0\n2 1 0 0\n3 0 0 1\n4 0.2 0.9 0.5\n");
    let (dataset, _) =
        dataset_from_database(&db, &["x"], &["c0", "c1", "c2"], Scaling::Rescale).unwrap();
    assert_eq!(dataset.targets.unwrap().classes(), [1, 0, 2, 1]);
}

#[test]
fn statistics_of_columns_whose_sum_overflows_are_finite() {
    // The sum of a's values passes f64::MAX; their mean (0.5e308) and range do not fit a
    // naive formula either, but each statistic is an ordinary number.
    let db = parse("a b\n1.5e308 0\n1.5e308 1\n-1.5e308 2\n");
    let (_, split) = dataset_from_database(&db, &["a", "b"], &[], Scaling::BinarySplit).unwrap();
    assert!((split.mean[0] / 0.5e308 - 1.0).abs() < 1e-12, "{:?}", split.mean);
    assert_eq!(split.mean[1], 1.0);
    assert_eq!((split.min[0], split.max[0]), (-1.5e308, 1.5e308));

    let (rescaled, _) = dataset_from_database(&db, &["a", "b"], &[], Scaling::Rescale).unwrap();
    assert_eq!(floats(&rescaled), [1.0, 0.0, 1.0, 0.5, 0.0, 1.0]);
}

#[test]
fn targets_beyond_single_precision_are_refused_naming_the_variable_and_case() {
    let db = parse("a t\n1 0\n2 1e39\n");
    let error = dataset_from_database(&db, &["a"], &["t"], Scaling::Rescale).unwrap_err();
    let message = error.to_string();
    assert!(message.starts_with("prices.csv: target variable t: case 2 holds 1e39"), "{message}");
}

#[test]
fn quoted_input_is_cut_and_escaped() {
    use deepbelief::data::{quote, sanitise};
    assert_eq!(quote("x5"), "\"x5\"");
    assert_eq!(quote("a\u{1b}[2Jb\n\u{202e}c"), "\"a\\u{1b}[2Jb\\u{a}\\u{202e}c\"");
    let long = "é".repeat(61);
    assert_eq!(quote(&long), format!("\"{}…\" (61 characters)", "é".repeat(60)));
    assert_eq!(quote(&"é".repeat(60)), format!("\"{}\"", "é".repeat(60)));
    assert_eq!(sanitise("ab\u{7}cd", 3), "ab\\u{7}…");
}

#[test]
fn a_huge_token_is_quoted_in_part() {
    let token = "7x".repeat(1_000_000);
    let message = parse_database(SOURCE, &format!("a,b\n1,{token}\n")).unwrap_err().to_string();
    assert!(message.len() < 200, "{} bytes", message.len());
    assert!(message.ends_with(&format!("expected a number, found \"{}…\" (2000000 characters)", &token[..60])), "{message}");
}

#[test]
fn terminal_escapes_in_a_file_are_escaped_in_errors() {
    let escape = "\u{1b}]0;owned\u{7}";
    let messages = [
        parse_database(SOURCE, &format!("a,b\n1,{escape}\n")).unwrap_err().to_string(),
        parse_database(SOURCE, &format!("a,b{escape}\n1,2\n")).unwrap_err().to_string(),
        parse_database(SOURCE, &format!("a,{escape}\n1,2\n")).unwrap_err().to_string(),
        parse("a,b\n1,2\n").column_indices(&[escape]).unwrap_err().to_string(),
        parse_database(&format!("file{escape}.csv"), "a\nx\n").unwrap_err().to_string(),
    ];
    for message in messages {
        assert!(!message.chars().any(|c| c.is_control()), "{message:?}");
        assert!(message.contains("\\u{1b}]0;owned\\u{7}"), "{message:?}");
    }
}

/// `n` distinct names `v0 v1 …`, comma-separated, and the character column of name `k`.
fn wide_header(n: usize) -> (String, impl Fn(usize) -> usize) {
    let names: Vec<String> = (0..n).map(|k| format!("v{k}")).collect();
    let mut starts = Vec::with_capacity(n);
    let mut at = 1;
    for name in &names {
        starts.push(at);
        at += name.len() + 1;
    }
    (names.join(","), move |k| starts[k])
}

#[test]
fn a_duplicate_far_into_a_wide_header_is_reported_with_both_positions() {
    let n = 60_000;
    let (header, column_of) = wide_header(n);
    // The last name repeats name 12,345 in another case.
    let text = format!("{header},V12345\n{}\n", vec!["1"; n + 1].join(","));
    let (line, column, message) = header_error_at(&text);
    assert_eq!((line, column), (1, column_of(n - 1) + format!("v{}", n - 1).len() + 1));
    assert!(
        message.contains(&format!("\"V12345\" appears twice (first at column {}", column_of(12_345))),
        "{message}"
    );
}

#[test]
fn every_column_of_a_wide_database_is_found_by_name() {
    let n = 60_000;
    let (header, _) = wide_header(n);
    let values: Vec<String> = (0..n).map(|k| (k % 7).to_string()).collect();
    // Every column varies but v5, which holds 5 in both cases.
    let second: Vec<&str> = (0..n).map(|k| if k == 5 { "5" } else { "9" }).collect();
    let db = parse(&format!("{header}\n{}\n{}\n", values.join(","), second.join(",")));
    let names: Vec<String> = (0..n).rev().map(|k| format!("V{k}")).collect();
    let wanted: Vec<&str> = names.iter().map(String::as_str).collect();
    let expected: Vec<usize> = (0..n).rev().collect();
    assert_eq!(db.column_indices(&wanted).unwrap(), expected);

    // Fitted and applied: the non-constant columns in order, each rescaled from its own range.
    let (dataset, preprocessing) = dataset_from_database(&db, &wanted, &[], Scaling::Rescale).unwrap();
    assert_eq!(preprocessing.dropped_names, ["v5"]);
    assert_eq!(dataset.n_inputs, n - 1);
    assert_eq!(dataset.input_names[0], format!("v{}", n - 1));
    // v59999 holds 59999 mod 7 = 4, then 9.
    assert_eq!(floats(&dataset)[0], 0.0);
    assert_eq!(floats(&dataset)[n - 1], 1.0);
}

#[test]
fn a_variable_selected_twice_is_refused_naming_it() {
    let db = parse(TRAINING);
    let error = dataset_from_database(&db, &["a", "b", "A"], &["t"], Scaling::Rescale).unwrap_err();
    assert_eq!(
        error.to_string(),
        "prices.csv: variable a is selected twice as an input, at places 1 and 3 of the list (expected each variable at most once)"
    );
    let error = dataset_from_database(&db, &["a"], &["t", "b", "T"], Scaling::Rescale).unwrap_err();
    assert!(error.to_string().contains("variable t is selected twice as a target, at places 1 and 3"), "{error}");
    let error = Preprocessing::fit(&db, &[1, 1], Scaling::Rescale).unwrap_err();
    assert!(error.to_string().contains("variable b is selected twice as an input"), "{error}");
}
