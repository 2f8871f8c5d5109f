//! What `deepbelief autoencoder` trains on: grey PNG images cut into patches (`--images`,
//! normalised as UFLDL's `normalizeData`, optionally ZCA-whitened first), or IDX images
//! (MNIST) as inputs in [0, 1], with their labels and the classes kept (`--classes 0-4`), and
//! the same for the test files and for `test`/`eval` on a saved model.

use deepbelief::backend::cpu::CpuBackend;
use deepbelief::data::idx::{read_idx_images, read_idx_labels};
use deepbelief::data::patches::{self, unit_inputs, GreyImage, Zca};
use deepbelief::format::autoencoder::{DataRecord, InputPreprocessing};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// ZCA's ε, UFLDL's `epsilon = 0.1` for 8×8 patches.
const ZCA_EPSILON: f64 = 0.1;
/// The largest image side read from a PNG file, so a header cannot ask for an absurd buffer.
const MAX_IMAGE_SIDE: u32 = 16_384;
/// The largest label a class list may name (IDX labels are bytes).
const MAX_CLASS: u32 = 255;

/// A set of label classes from the command line: `0-4`, `5,7,9`, `0-2,8`; sorted, no repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassList(pub Vec<u32>);

impl FromStr for ClassList {
    type Err = String;

    fn from_str(text: &str) -> Result<ClassList, String> {
        let label = |s: &str| s.trim().parse::<u32>().ok().filter(|&c| c <= MAX_CLASS).ok_or_else(|| format!("{s:?} is not a label from 0 to {MAX_CLASS}"));
        let mut classes = Vec::new();
        for part in text.split(',') {
            match part.split_once('-') {
                Some((low, high)) => {
                    let (low, high) = (label(low)?, label(high)?);
                    if low > high {
                        return Err(format!("{part:?} runs backwards, expected LOW-HIGH"));
                    }
                    classes.extend(low..=high);
                }
                None => classes.push(label(part)?),
            }
        }
        classes.sort_unstable();
        classes.dedup();
        Ok(ClassList(classes))
    }
}

/// Images as inputs, `rows × width`, with the labels of the cases kept.
pub struct Images {
    pub values: Vec<f32>,
    pub width: usize,
    pub labels: Option<Vec<u32>>,
    pub record: DataRecord,
    pub preprocessing: InputPreprocessing,
}

impl Images {
    pub fn cases(&self) -> usize {
        self.values.len() / self.width.max(1)
    }
}

/// An IDX image file (and its labels): the first `limit` images as inputs in [0, 1], then only
/// those whose label is in `classes` (which needs the labels). `images_flag`, `labels_flag` and
/// `classes_flag` name the options in errors.
pub fn read_idx(images: &Path, labels: Option<&Path>, limit: usize, classes: Option<&ClassList>, flags: [&str; 3]) -> Result<Images, String> {
    let [images_flag, labels_flag, classes_flag] = flags;
    let idx = read_idx_images(images).map_err(|e| format!("{images_flag} {}: {e}", images.display()))?;
    let count = idx.count.min(limit);
    let width = idx.rows * idx.cols;
    let mut values = unit_inputs(&idx, Some(count));
    let mut files = vec![images.display().to_string()];
    let mut kept_labels = None;
    if let Some(path) = labels {
        let all = read_idx_labels(path).map_err(|e| format!("{labels_flag} {}: {e}", path.display()))?;
        if all.len() != idx.count {
            return Err(format!("{labels_flag} {}: {} labels, but {images_flag} {} has {} images", path.display(), all.len(), images.display(), idx.count));
        }
        let mut labels: Vec<u32> = all[..count].iter().map(|&l| u32::from(l)).collect();
        if let Some(ClassList(wanted)) = classes {
            let keep: Vec<usize> = (0..count).filter(|&k| wanted.binary_search(&labels[k]).is_ok()).collect();
            if keep.is_empty() {
                return Err(format!("{classes_flag} {wanted:?}: none of the {count} images of {images_flag} {} has one of these labels", images.display()));
            }
            values = keep.iter().flat_map(|&k| values[k * width..(k + 1) * width].iter().copied()).collect();
            labels = keep.iter().map(|&k| labels[k]).collect();
        }
        files.push(path.display().to_string());
        kept_labels = Some(labels);
    }
    let cases = values.len() / width;
    let record = DataRecord { files, cases, classes: classes.map(|c| c.0.clone()) };
    Ok(Images { values, width, labels: kept_labels, record, preprocessing: InputPreprocessing::UnitPixels { image_shape: Some((idx.rows, idx.cols)) } })
}

/// The PNG files named: each file as given, each folder's `*.png` in name order.
fn png_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|e| format!("--images {}: {e}", path.display()))?;
            let mut pngs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("png"))).collect();
            if pngs.is_empty() {
                return Err(format!("--images {}: the folder has no .png files", path.display()));
            }
            pngs.sort();
            files.extend(pngs);
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            return Err(format!("--images {}: no such file or folder", path.display()));
        }
    }
    Ok(files)
}

/// One PNG file as grey levels in [0, 1]: colour channels averaged, alpha ignored.
fn read_grey_png(path: &Path) -> Result<GreyImage, String> {
    let fail = |what: String| format!("--images {}: {what}", path.display());
    let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| fail(format!("not a readable PNG file ({e})")))?;
    let (width, height) = (reader.info().width, reader.info().height);
    if width > MAX_IMAGE_SIDE || height > MAX_IMAGE_SIDE {
        return Err(fail(format!("{width} × {height} pixels, expected at most {MAX_IMAGE_SIDE} on a side")));
    }
    let size = reader.output_buffer_size().ok_or_else(|| fail("the image is too large to decode".into()))?;
    let mut buffer = vec![0u8; size];
    let frame = reader.next_frame(&mut buffer).map_err(|e| fail(format!("not a readable PNG file ({e})")))?;
    let channels = frame.color_type.samples();
    let colour = match frame.color_type {
        png::ColorType::Grayscale | png::ColorType::GrayscaleAlpha => 1,
        png::ColorType::Rgb | png::ColorType::Rgba => 3,
        other => return Err(fail(format!("colour type {other:?} after expansion, expected grey or RGB"))),
    };
    let (rows, cols) = (frame.height as usize, frame.width as usize);
    let mut pixels = Vec::with_capacity(rows * cols);
    for row in buffer[..frame.buffer_size()].chunks_exact(frame.line_size) {
        for px in row[..cols * channels].chunks_exact(channels) {
            let sum: u32 = px[..colour].iter().map(|&b| u32::from(b)).sum();
            pixels.push(sum as f32 / (255.0 * colour as f32));
        }
    }
    Ok(GreyImage { rows, cols, pixels })
}

/// `count` random `side × side` patches of the PNG images named, normalised (after ZCA
/// whitening with `zca`).
pub fn read_patches(paths: &[PathBuf], side: usize, count: usize, zca: bool, seed: u64) -> Result<Images, String> {
    let files = png_files(paths)?;
    let images = files.iter().map(|f| read_grey_png(f)).collect::<Result<Vec<_>, _>>()?;
    let mut sampled = patches::sample_patches(&images, side, count, seed).map_err(|e| format!("--images: {e}"))?;
    let width = sampled.width();
    // Whitening comes first, as UFLDL's images were whitened before normalizeData: the mapping
    // to [0.1, 0.9] must be the last step, so the targets stay within a sigmoid's reach.
    if zca {
        let fitted = Zca::fit(&CpuBackend, &sampled.values, width, ZCA_EPSILON).map_err(|e| format!("--zca: {e}"))?;
        sampled.values = fitted.apply(&CpuBackend, &sampled.values);
    }
    let clip = patches::normalise_patches(&mut sampled).map_err(|e| format!("--images: {e}"))?;
    let values = sampled.values;
    let range = values.iter().fold([f64::INFINITY, f64::NEG_INFINITY], |[low, high], &v| [low.min(f64::from(v)), high.max(f64::from(v))]);
    let record = DataRecord { files: files.iter().map(|f| f.display().to_string()).collect(), cases: count, classes: None };
    Ok(Images { values, width, labels: None, record, preprocessing: InputPreprocessing::Patches { side, clip, zca, range: Some(range) } })
}

/// Labels as SoftMax targets over `classes` (output k is class `classes[k]`): the one-hot
/// targets of the cases whose label is one of them, their indices, and how many were left
/// out for a label the model does not know.
pub fn targets_over(labels: &[u32], classes: &[u32]) -> (Vec<f32>, Vec<usize>, usize) {
    let mut targets = Vec::new();
    let mut kept = Vec::new();
    for (case, label) in labels.iter().enumerate() {
        if let Some(k) = classes.iter().position(|c| c == label) {
            targets.extend((0..classes.len()).map(|j| if j == k { 1.0 } else { 0.0 }));
            kept.push(case);
        }
    }
    let left_out = labels.len() - kept.len();
    (targets, kept, left_out)
}

/// The rows `kept` of `values` (`width` to a row).
pub fn rows(values: &[f32], width: usize, kept: &[usize]) -> Vec<f32> {
    kept.iter().flat_map(|&k| values[k * width..(k + 1) * width].iter().copied()).collect()
}
