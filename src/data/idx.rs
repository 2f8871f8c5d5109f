//! IDX files of the MNIST family (raw or gzip-compressed), and their conversion
//! to a [`Dataset`].
//!
//! Size rule: `DeclaredSizeTooLarge` when the header's declared payload exceeds
//! the most the whole input could ever hold (raw: its length; gzip: 1032 × its
//! length, deflate's maximum expansion); `Truncated` when the declaration is
//! within that bound but the data stop early; `TrailingData` when the data go on
//! past it (at most one byte beyond the declared size is ever decompressed, so a
//! small gzip file cannot expand into more than its header admits). Buffers are
//! sized only after the check, so a lying header cannot make the reader allocate.

use std::io::{self, Read};

use flate2::read::MultiGzDecoder;

use super::error::{DataError, DataErrorKind, MAX_IMAGE_PIXELS};
use super::{CaseValues, Dataset};

pub const IMAGES_MAGIC: u32 = 0x0000_0803;
pub const LABELS_MAGIC: u32 = 0x0000_0801;

pub const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const DEFLATE_MAX_EXPANSION: u64 = 1032;

/// Images as stored in an IDX file: `count` × `rows` × `cols` bytes, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct IdxImages {
    pub count: usize,
    pub rows: usize,
    pub cols: usize,
    pub pixels: Vec<u8>,
}

pub fn parse_idx_images(source_name: &str, bytes: &[u8]) -> Result<IdxImages, DataError> {
    let (dims, pixels) = read_idx(source_name, bytes, IMAGES_MAGIC, 3, |dims| {
        check_image_shape(dims[1], dims[2])
    })?;
    Ok(IdxImages {
        count: dims[0],
        rows: dims[1],
        cols: dims[2],
        pixels,
    })
}

pub fn parse_idx_labels(source_name: &str, bytes: &[u8]) -> Result<Vec<u8>, DataError> {
    let (_, labels) = read_idx(source_name, bytes, LABELS_MAGIC, 1, |_| Ok(()))?;
    Ok(labels)
}

/// Raw (uncompressed) IDX image file.
pub fn encode_idx_images(images: &IdxImages) -> Vec<u8> {
    assert_eq!(
        images.pixels.len(),
        images.count * images.rows * images.cols,
        "IdxImages pixel buffer does not match count × rows × cols"
    );
    let dims = [images.count, images.rows, images.cols];
    encode_idx(IMAGES_MAGIC, &dims, &images.pixels)
}

/// Raw (uncompressed) IDX label file.
pub fn encode_idx_labels(labels: &[u8]) -> Vec<u8> {
    encode_idx(LABELS_MAGIC, &[labels.len()], labels)
}

#[cfg(not(target_arch = "wasm32"))]
pub fn read_idx_images(path: &std::path::Path) -> Result<IdxImages, DataError> {
    let source_name = path.display().to_string();
    parse_idx_images(&source_name, &read_file(&source_name, path)?)
}

#[cfg(not(target_arch = "wasm32"))]
pub fn read_idx_labels(path: &std::path::Path) -> Result<Vec<u8>, DataError> {
    let source_name = path.display().to_string();
    parse_idx_labels(&source_name, &read_file(&source_name, path)?)
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn read_file(source_name: &str, path: &std::path::Path) -> Result<Vec<u8>, DataError> {
    std::fs::read(path).map_err(|e| {
        DataError::new(
            source_name,
            DataErrorKind::Io(format!("cannot read the file: {e}")),
        )
    })
}

/// `labels` is the label file's source name (named in a count mismatch) and its labels.
pub fn dataset_from_idx(
    images: IdxImages,
    labels: Option<(String, Vec<u8>)>,
    name: &str,
) -> Result<Dataset, DataError> {
    // Checked again because IdxImages can be built by hand, not only parsed.
    check_image_shape(images.rows, images.cols).map_err(|kind| DataError::new(name, kind))?;
    assert_eq!(
        images.pixels.len(),
        images.count * images.rows * images.cols,
        "IdxImages pixel buffer does not match count × rows × cols"
    );
    if images.count == 0 {
        return Err(DataError::new(name, DataErrorKind::Empty));
    }
    let labels = match labels {
        None => None,
        Some((labels_name, labels)) => {
            if labels.len() != images.count {
                let kind = DataErrorKind::CountMismatch {
                    images: images.count,
                    labels: labels.len(),
                };
                return Err(DataError::new(&labels_name, kind));
            }
            Some(labels.into_iter().map(u32::from).collect())
        }
    };
    let n_inputs = images.rows * images.cols;
    Ok(Dataset {
        name: name.to_string(),
        n_cases: images.count,
        n_inputs,
        image_shape: Some((images.rows, images.cols)),
        values: CaseValues::Bytes(images.pixels),
        labels,
        input_names: (0..n_inputs).map(|i| format!("px{i}")).collect(),
        targets: None,
    })
}

/// Checks that training labels can define a classifier's classes. A classifier has one
/// SoftMax output per class `0..K-1`, K = the largest label + 1, so a stray label of 200 among
/// digits would make 201 outputs, 191 of which never see a case. Every class up to the largest
/// label must therefore have cases, and there must be at least two classes. Only training labels
/// are held to this: a test set may lack some classes.
pub fn check_training_labels(labels_name: &str, labels: &[u32]) -> Result<(), DataError> {
    let fail = |message: String| Err(DataError::new(labels_name, DataErrorKind::Labels(message)));
    let Some((largest_at, &largest)) = labels.iter().enumerate().max_by_key(|&(at, &label)| (label, std::cmp::Reverse(at))) else {
        return Ok(());
    };
    let mut present: Vec<u32> = labels.to_vec();
    present.sort_unstable();
    present.dedup();
    if largest == 0 {
        return fail(format!(
            "all {} labels are 0 (expected at least two classes, numbered from 0, for a classifier)",
            labels.len()
        ));
    }
    if present.len() as u64 == u64::from(largest) + 1 {
        return Ok(());
    }
    // The classes missing below the largest label, as ranges: the gaps between present ones.
    let mut gaps = Vec::new();
    let mut next = 0u32;
    for &label in &present {
        if label > next {
            gaps.push(if label - 1 == next { next.to_string() } else { format!("{next} to {}", label - 1) });
        }
        next = label + 1;
    }
    const LISTED: usize = 5;
    let mut missing = gaps.iter().take(LISTED).cloned().collect::<Vec<_>>().join(", ");
    if gaps.len() > LISTED {
        missing.push_str(&format!(" and {} more ranges", gaps.len() - LISTED));
    }
    fail(format!(
        "case {} (counting from 1) has label {largest}, so the labels define the classes 0 to {largest}, \
         but classes {missing} have no cases (expected every class from 0 to the largest label to have cases); \
         the label file does not go with the images, or its labels need renumbering",
        largest_at + 1
    ))
}

/// The dataset is named after the image file's name.
#[cfg(not(target_arch = "wasm32"))]
pub fn load_idx_dataset(
    images: &std::path::Path,
    labels: Option<&std::path::Path>,
) -> Result<Dataset, DataError> {
    let name = images
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| images.display().to_string());
    let pixels = read_idx_images(images)?;
    let labels = match labels {
        Some(path) => Some((path.display().to_string(), read_idx_labels(path)?)),
        None => None,
    };
    dataset_from_idx(pixels, labels, &name)
}

fn check_image_shape(rows: usize, cols: usize) -> Result<(), DataErrorKind> {
    let pixels = rows.saturating_mul(cols);
    if pixels > MAX_IMAGE_PIXELS {
        Err(DataErrorKind::ImageTooLarge { rows, cols })
    } else if pixels == 0 {
        Err(DataErrorKind::EmptyImage { rows, cols })
    } else {
        Ok(())
    }
}

fn encode_idx(magic: u32, dims: &[usize], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + 4 * dims.len() + payload.len());
    out.extend_from_slice(&magic.to_be_bytes());
    for &dim in dims {
        let dim = u32::try_from(dim).expect("IDX dimensions must fit in 32 bits");
        out.extend_from_slice(&dim.to_be_bytes());
    }
    out.extend_from_slice(payload);
    out
}

/// Reads header and payload of an IDX file whose header holds `n_dims`
/// dimensions; `check_dims` vets them before any payload is read.
fn read_idx(
    source_name: &str,
    bytes: &[u8],
    magic: u32,
    n_dims: usize,
    check_dims: impl Fn(&[usize]) -> Result<(), DataErrorKind>,
) -> Result<(Vec<usize>, Vec<u8>), DataError> {
    let fail = |kind| DataError::new(source_name, kind);
    let is_gzip = bytes.starts_with(&GZIP_MAGIC);
    let mut stream: Box<dyn Read + '_> = if is_gzip {
        Box::new(MultiGzDecoder::new(bytes))
    } else {
        Box::new(bytes)
    };

    let header_len = 4 + 4 * n_dims;
    let (header, header_error) = read_up_to(&mut stream, header_len as u64, header_len);
    if let Some(e) = header_error.filter(|e| e.kind() != io::ErrorKind::UnexpectedEof) {
        return Err(fail(DataErrorKind::Gzip(e.to_string())));
    }
    let field =
        |i: usize| u32::from_be_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    // The magic is checked before the length so that a short file of the other
    // IDX kind is reported as the wrong kind.
    if header.len() >= 4 && field(0) != magic {
        return Err(fail(DataErrorKind::BadMagic {
            found: field(0),
            expected: magic,
        }));
    }
    if header.len() < header_len {
        return Err(fail(DataErrorKind::HeaderTooShort {
            expected_bytes: header_len as u64,
            found_bytes: header.len() as u64,
        }));
    }
    let dims: Vec<usize> = (0..n_dims).map(|d| field(4 + 4 * d) as usize).collect();
    check_dims(&dims).map_err(fail)?;

    let declared = dims
        .iter()
        .fold(1u64, |acc, &d| acc.saturating_mul(d as u64));
    let most_input_can_hold = if is_gzip {
        (bytes.len() as u64).saturating_mul(DEFLATE_MAX_EXPANSION)
    } else {
        bytes.len() as u64
    };
    if declared > most_input_can_hold {
        return Err(fail(DataErrorKind::DeclaredSizeTooLarge {
            declared_bytes: declared,
            available_bytes: most_input_can_hold,
        }));
    }

    // Reserve what the input is likely to expand to, not what the header says:
    // MNIST compresses about 5:1, and the vector grows if that is not enough.
    let likely_len = if is_gzip {
        bytes.len().saturating_mul(8)
    } else {
        bytes.len()
    };
    // One byte past the declared size tells a file that goes on from one that ends there,
    // without decompressing the rest of a stream that expands far beyond its header.
    let (payload, payload_error) = read_up_to(
        &mut stream,
        declared.saturating_add(1),
        likely_len.min(declared as usize),
    );
    if payload.len() as u64 > declared {
        return Err(fail(DataErrorKind::TrailingData {
            declared_bytes: declared,
        }));
    }
    match payload_error {
        Some(e) if e.kind() != io::ErrorKind::UnexpectedEof => {
            return Err(fail(DataErrorKind::Gzip(e.to_string())))
        }
        _ if (payload.len() as u64) < declared => {
            return Err(fail(DataErrorKind::Truncated {
                expected_bytes: declared,
                found_bytes: payload.len() as u64,
            }))
        }
        // The decoder checks the CRC only at the end of the stream, which it reached here;
        // a stream cut inside its trailer ends with UnexpectedEof after the whole payload.
        Some(_) => {
            return Err(fail(DataErrorKind::Gzip(
                "the stream ends before its checksum (expected a complete gzip file)".into(),
            )))
        }
        None => {}
    }
    Ok((dims, payload))
}

/// Reads at most `limit` bytes; on a read error returns what arrived before it
/// along with the error.
fn read_up_to(stream: &mut dyn Read, limit: u64, reserve: usize) -> (Vec<u8>, Option<io::Error>) {
    let mut buffer = Vec::with_capacity(reserve);
    // read_to_end keeps the bytes read before an error in the buffer.
    let error = stream.take(limit).read_to_end(&mut buffer).err();
    (buffer, error)
}
