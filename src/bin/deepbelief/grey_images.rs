//! Grey PNG images named on the command line (files, or folders whose `*.png` files are all
//! read), for `sparse-coding --images` and `bench --sparse-coding --patch-images`. The same
//! reading as `autoencoder_inputs.rs`'s private `png_files`/`read_grey_png`, with the flag
//! named by the caller; the autoencoder's command could call these instead.

use deepbelief::data::patches::GreyImage;
use std::path::{Path, PathBuf};

/// The largest image side read from a PNG file, so a header cannot ask for an absurd buffer.
const MAX_IMAGE_SIDE: u32 = 16_384;

/// The files named (each folder's `*.png` in name order) and their images as grey levels in
/// [0, 1]; errors name `flag` and the file.
pub fn read_grey_images(paths: &[PathBuf], flag: &str) -> Result<(Vec<PathBuf>, Vec<GreyImage>), String> {
    let files = png_files(paths, flag)?;
    let images = files.iter().map(|f| read_grey_png(f, flag)).collect::<Result<Vec<_>, _>>()?;
    Ok((files, images))
}

/// The PNG files named: each file as given, each folder's `*.png` in name order.
fn png_files(paths: &[PathBuf], flag: &str) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
            let mut pngs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x.eq_ignore_ascii_case("png"))).collect();
            if pngs.is_empty() {
                return Err(format!("{flag} {}: the folder has no .png files", path.display()));
            }
            pngs.sort();
            files.extend(pngs);
        } else if path.is_file() {
            files.push(path.clone());
        } else {
            return Err(format!("{flag} {}: no such file or folder", path.display()));
        }
    }
    Ok(files)
}

/// One PNG file as grey levels in [0, 1]: colour channels averaged, alpha ignored.
fn read_grey_png(path: &Path, flag: &str) -> Result<GreyImage, String> {
    let fail = |what: String| format!("{flag} {}: {what}", path.display());
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
