#![cfg(not(target_arch = "wasm32"))]
//! IDX reading: exact round trips, and one test per kind of malformed input.

use std::io::Write;

use deepbelief::data::idx::{
    dataset_from_idx, encode_idx_images, encode_idx_labels, parse_idx_images, parse_idx_labels,
    IdxImages,
};
use deepbelief::data::{CaseValues, DataError, DataErrorKind};
use flate2::write::GzEncoder;
use flate2::Compression;

const IMAGES_NAME: &str = "tiny-images-idx3-ubyte";
const LABELS_NAME: &str = "tiny-labels-idx1-ubyte";

/// 5 images of 3×4 with every pixel distinct enough to catch reordering.
fn tiny_images() -> IdxImages {
    let (count, rows, cols) = (5, 3, 4);
    let pixels = (0..count * rows * cols)
        .map(|i| (i * 37 % 256) as u8)
        .collect();
    IdxImages {
        count,
        rows,
        cols,
        pixels,
    }
}

fn tiny_labels() -> Vec<u8> {
    vec![7, 2, 1, 0, 4]
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn image_header(count: u32, rows: u32, cols: u32) -> Vec<u8> {
    [0x803u32, count, rows, cols]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect()
}

/// The error's kind, after checking that its message starts with the source name.
fn kind_of(error: DataError, source_name: &str) -> DataErrorKind {
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("{source_name}: ")),
        "message lacks the source name: {message}"
    );
    assert_eq!(error.source_name, source_name);
    error.kind
}

#[test]
fn raw_images_and_labels_round_trip_exactly() {
    let images = tiny_images();
    let encoded = encode_idx_images(&images);
    assert_eq!(encoded.len(), 16 + 60);
    assert_eq!(&encoded[..4], &[0, 0, 8, 3]);
    assert_eq!(parse_idx_images(IMAGES_NAME, &encoded).unwrap(), images);

    let labels = tiny_labels();
    let encoded = encode_idx_labels(&labels);
    assert_eq!(&encoded[..8], &[0, 0, 8, 1, 0, 0, 0, 5]);
    assert_eq!(parse_idx_labels(LABELS_NAME, &encoded).unwrap(), labels);
}

#[test]
fn gzip_images_and_labels_round_trip_exactly() {
    let images = tiny_images();
    let parsed = parse_idx_images(IMAGES_NAME, &gzip(&encode_idx_images(&images))).unwrap();
    assert_eq!(parsed, images);
    let labels = tiny_labels();
    assert_eq!(
        parse_idx_labels(LABELS_NAME, &gzip(&encode_idx_labels(&labels))).unwrap(),
        labels
    );
}

#[test]
fn dataset_from_idx_keeps_bytes_shape_and_labels() {
    let images = tiny_images();
    let pixels = images.pixels.clone();
    let labels = Some((LABELS_NAME.to_string(), tiny_labels()));
    let dataset = dataset_from_idx(images, labels, "tiny").unwrap();
    assert_eq!(
        (dataset.n_cases, dataset.n_inputs, dataset.image_shape),
        (5, 12, Some((3, 4)))
    );
    assert_eq!(dataset.values, CaseValues::Bytes(pixels.clone()));
    assert_eq!(dataset.labels, Some(vec![7, 2, 1, 0, 4]));
    assert_eq!(dataset.input_names[11], "px11");

    let mut case = vec![0f32; 12];
    dataset.case_into(2, &mut case);
    assert_eq!(case[3], pixels[2 * 12 + 3] as f32 / 255.0);

    let mut batch = vec![0f32; 24];
    dataset.gather_into(&[4, 0], &mut batch);
    assert_eq!(batch[0], pixels[48] as f32 / 255.0);
    assert_eq!(batch[12], pixels[0] as f32 / 255.0);

    let subset = dataset.subset(&[3, 1]);
    assert_eq!(subset.labels, Some(vec![0, 2]));
    assert_eq!(
        subset.values,
        CaseValues::Bytes([&pixels[36..48], &pixels[12..24]].concat())
    );
    assert_eq!(dataset.take_first(2).labels, Some(vec![7, 2]));
    assert_eq!(dataset.take_first(99).n_cases, 5);

    let means = dataset.input_means();
    let expected0: f32 = (0..5).map(|c| pixels[c * 12] as f32 / 255.0).sum::<f32>() / 5.0;
    assert!((means[0] - expected0).abs() < 1e-6);
}

#[test]
fn bad_magic_in_image_file() {
    let labels_file = encode_idx_labels(&tiny_labels());
    let error = parse_idx_images(IMAGES_NAME, &labels_file).unwrap_err();
    let message = error.to_string();
    assert_eq!(
        kind_of(error, IMAGES_NAME),
        DataErrorKind::BadMagic {
            found: 2049,
            expected: 2051
        }
    );
    assert!(
        message.contains("bad magic number 0x00000801 (expected 0x00000803 for an IDX image file)"),
        "{message}"
    );
}

#[test]
fn bad_magic_in_label_file() {
    let mut labels_file = encode_idx_labels(&tiny_labels());
    labels_file[3] = 0x02;
    let error = parse_idx_labels(LABELS_NAME, &labels_file).unwrap_err();
    assert_eq!(
        kind_of(error, LABELS_NAME),
        DataErrorKind::BadMagic {
            found: 0x802,
            expected: 2049
        }
    );
}

#[test]
fn truncated_raw_payload() {
    let mut file = encode_idx_images(&tiny_images());
    file.truncate(file.len() - 5);
    let error = parse_idx_images(IMAGES_NAME, &file).unwrap_err();
    assert_eq!(
        kind_of(error, IMAGES_NAME),
        DataErrorKind::Truncated {
            expected_bytes: 60,
            found_bytes: 55
        }
    );
}

#[test]
fn truncated_gzip_payload() {
    // Half a real image file, compressed completely: a valid stream that ends early.
    let file = encode_idx_images(&tiny_images());
    let error = parse_idx_images(IMAGES_NAME, &gzip(&file[..46])).unwrap_err();
    assert_eq!(
        kind_of(error, IMAGES_NAME),
        DataErrorKind::Truncated {
            expected_bytes: 60,
            found_bytes: 30
        }
    );

    // A compressed file cut short: the stream itself stops early.
    let big = IdxImages {
        count: 200,
        rows: 28,
        cols: 28,
        pixels: (0..200 * 784).map(|i| (i * 7919 % 251) as u8).collect(),
    };
    let compressed = gzip(&encode_idx_images(&big));
    let error = parse_idx_images(IMAGES_NAME, &compressed[..compressed.len() / 2]).unwrap_err();
    match kind_of(error, IMAGES_NAME) {
        DataErrorKind::Truncated {
            expected_bytes,
            found_bytes,
        } => {
            assert_eq!(expected_bytes, 200 * 784);
            assert!(found_bytes < expected_bytes);
        }
        other => panic!("expected Truncated, got {other:?}"),
    }
}

#[test]
fn label_count_must_match_image_count() {
    let labels = Some((LABELS_NAME.to_string(), vec![1, 2, 3]));
    let error = dataset_from_idx(tiny_images(), labels, IMAGES_NAME).unwrap_err();
    let message = error.to_string();
    assert_eq!(
        kind_of(error, LABELS_NAME),
        DataErrorKind::CountMismatch {
            images: 5,
            labels: 3
        }
    );
    assert!(message.contains("3 labels for 5 images"), "{message}");
}

#[test]
fn images_over_4086_pixels_are_rejected_before_reading_pixels() {
    let mut file = image_header(2, 64, 64);
    file.extend(std::iter::repeat_n(0u8, 2 * 64 * 64));
    let error = parse_idx_images(IMAGES_NAME, &file).unwrap_err();
    assert_eq!(
        kind_of(error, IMAGES_NAME),
        DataErrorKind::ImageTooLarge { rows: 64, cols: 64 }
    );

    let hand_built = IdxImages {
        count: 1,
        rows: 64,
        cols: 64,
        pixels: vec![0; 4096],
    };
    let error = dataset_from_idx(hand_built, None, "hand-built").unwrap_err();
    assert_eq!(
        kind_of(error, "hand-built"),
        DataErrorKind::ImageTooLarge { rows: 64, cols: 64 }
    );
}

#[test]
fn declared_size_larger_than_the_file() {
    let mut file = image_header(1_000_000, 28, 28);
    file.resize(100, 0);
    let error = parse_idx_images(IMAGES_NAME, &file).unwrap_err();
    assert_eq!(
        kind_of(error, IMAGES_NAME),
        DataErrorKind::DeclaredSizeTooLarge {
            declared_bytes: 784_000_000,
            available_bytes: 100
        }
    );

    // Compressed: 100 zero bytes of payload deflate to very little, but no gzip
    // file of that length can expand to 784 MB.
    let error = parse_idx_images(IMAGES_NAME, &gzip(&file)).unwrap_err();
    assert!(matches!(
        kind_of(error, IMAGES_NAME),
        DataErrorKind::DeclaredSizeTooLarge {
            declared_bytes: 784_000_000,
            ..
        }
    ));

    let mut labels = vec![0, 0, 8, 1, 0xff, 0xff, 0xff, 0xff];
    labels.resize(20, 0);
    let error = parse_idx_labels(LABELS_NAME, &labels).unwrap_err();
    assert!(matches!(
        kind_of(error, LABELS_NAME),
        DataErrorKind::DeclaredSizeTooLarge { .. }
    ));
}

#[test]
fn header_shorter_than_16_bytes() {
    let header = image_header(5, 3, 4);
    let error = parse_idx_images(IMAGES_NAME, &header[..10]).unwrap_err();
    let message = error.to_string();
    assert_eq!(
        kind_of(error, IMAGES_NAME),
        DataErrorKind::HeaderTooShort {
            expected_bytes: 16,
            found_bytes: 10
        }
    );
    assert!(message.contains("only 10 bytes long"), "{message}");

    let error = parse_idx_images(IMAGES_NAME, &gzip(&header[..3])).unwrap_err();
    assert_eq!(
        kind_of(error, IMAGES_NAME),
        DataErrorKind::HeaderTooShort {
            expected_bytes: 16,
            found_bytes: 3
        }
    );

    let error = parse_idx_labels(LABELS_NAME, &[]).unwrap_err();
    assert_eq!(
        kind_of(error, LABELS_NAME),
        DataErrorKind::HeaderTooShort {
            expected_bytes: 8,
            found_bytes: 0
        }
    );
}

#[test]
fn corrupt_gzip_stream() {
    let compressed = gzip(&encode_idx_images(&tiny_images()));

    // Wrong CRC in the trailer: all the data decompress, only the checksum fails.
    let mut bad_checksum = compressed.clone();
    let crc_at = bad_checksum.len() - 8;
    bad_checksum[crc_at] ^= 0xff;
    let error = parse_idx_images(IMAGES_NAME, &bad_checksum).unwrap_err();
    assert!(matches!(
        kind_of(error, IMAGES_NAME),
        DataErrorKind::Gzip(_)
    ));

    // Compression method 9 does not exist (8 is deflate).
    let mut bad_method = compressed.clone();
    bad_method[2] = 9;
    let error = parse_idx_images(IMAGES_NAME, &bad_method).unwrap_err();
    let message = error.to_string();
    assert!(matches!(
        kind_of(error, IMAGES_NAME),
        DataErrorKind::Gzip(_)
    ));
    assert!(message.contains("cannot decompress"), "{message}");
}

#[test]
fn zero_sized_images_are_rejected() {
    let error = parse_idx_images(IMAGES_NAME, &image_header(3, 0, 28)).unwrap_err();
    assert_eq!(
        kind_of(error, IMAGES_NAME),
        DataErrorKind::EmptyImage { rows: 0, cols: 28 }
    );
}

#[test]
fn data_past_the_declared_size_are_refused() {
    let mut raw = encode_idx_images(&tiny_images());
    raw.push(0);
    let error = parse_idx_images(IMAGES_NAME, &raw).unwrap_err();
    let message = error.to_string();
    assert_eq!(kind_of(error, IMAGES_NAME), DataErrorKind::TrailingData { declared_bytes: 60 });
    assert!(message.contains("more data than the header declares"), "{message}");

    // A second gzip member after a complete file is more data too.
    let labels = encode_idx_labels(&tiny_labels());
    let mut two_members = gzip(&labels);
    two_members.extend(gzip(&[9]));
    let error = parse_idx_labels(LABELS_NAME, &two_members).unwrap_err();
    assert_eq!(kind_of(error, LABELS_NAME), DataErrorKind::TrailingData { declared_bytes: 5 });
}

#[test]
fn a_gzip_file_expanding_far_beyond_its_header_is_refused() {
    // 5 labels declared, then 8 MB of zeros: a few KB compressed.
    let mut expanded = encode_idx_labels(&tiny_labels());
    expanded.resize(expanded.len() + (8 << 20), 0);
    let bomb = gzip(&expanded);
    assert!(bomb.len() < 64 << 10, "{} bytes", bomb.len());
    let error = parse_idx_labels(LABELS_NAME, &bomb).unwrap_err();
    assert_eq!(kind_of(error, LABELS_NAME), DataErrorKind::TrailingData { declared_bytes: 5 });
}

#[test]
fn a_gzip_stream_cut_inside_its_trailer_is_refused() {
    let compressed = gzip(&encode_idx_labels(&tiny_labels()));
    let error = parse_idx_labels(LABELS_NAME, &compressed[..compressed.len() - 3]).unwrap_err();
    let message = error.to_string();
    assert!(matches!(kind_of(error, LABELS_NAME), DataErrorKind::Gzip(_)), "{message}");
    assert!(message.contains("ends before its checksum"), "{message}");
}

#[test]
fn files_are_told_apart_by_their_first_bytes() {
    use deepbelief::data::{file_kind, FileKind};
    assert_eq!(file_kind(&[0, 0, 8, 3]), FileKind::Idx);
    // Another IDX element type (0x0d: float) is still IDX, reported there by its magic.
    assert_eq!(file_kind(&[0, 0, 0x0d, 3]), FileKind::Idx);
    assert_eq!(file_kind(&[0x1f, 0x8b, 8, 0]), FileKind::Idx);
    assert_eq!(file_kind(b"x1,x"), FileKind::Database);
    assert_eq!(file_kind(&[]), FileKind::Database);
}

#[test]
fn training_labels_must_give_every_class_up_to_the_largest_cases() {
    use deepbelief::data::idx::check_training_labels;
    let digits: Vec<u32> = (0..30).map(|k| k % 10).collect();
    assert_eq!(check_training_labels(LABELS_NAME, &digits), Ok(()));

    let mut stray = digits.clone();
    stray[17] = 200;
    let error = check_training_labels(LABELS_NAME, &stray).unwrap_err();
    let message = error.to_string();
    assert!(matches!(kind_of(error, LABELS_NAME), DataErrorKind::Labels(_)));
    assert!(
        message.contains("case 18 (counting from 1) has label 200, so the labels define the classes 0 to 200, but classes 10 to 199 have no cases"),
        "{message}"
    );

    let message = check_training_labels(LABELS_NAME, &[0, 1, 3, 1, 6, 8]).unwrap_err().to_string();
    assert!(message.contains("classes 2, 4 to 5, 7 have no cases"), "{message}");
    let message = check_training_labels(LABELS_NAME, &[0, 0, 0]).unwrap_err().to_string();
    assert!(message.contains("all 3 labels are 0 (expected at least two classes"), "{message}");
    let many_gaps: Vec<u32> = (0..20).map(|k| 2 * k).collect();
    let message = check_training_labels(LABELS_NAME, &many_gaps).unwrap_err().to_string();
    assert!(message.contains("classes 1, 3, 5, 7, 9 and 14 more ranges have no cases"), "{message}");
}
