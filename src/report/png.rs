//! 8-bit greyscale PNG files of image grids.

use super::image_grid::GreyImage;
use std::path::Path;

/// The image as a PNG file's bytes.
pub fn encode_grey_png(image: &GreyImage) -> Result<Vec<u8>, String> {
    assert_eq!(image.pixels.len(), image.width * image.height, "one byte per pixel");
    let (width, height) = (u32::try_from(image.width), u32::try_from(image.height));
    let (Ok(width), Ok(height)) = (width, height) else {
        return Err(format!("an image of {}×{} pixels is too large for PNG", image.width, image.height));
    };
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Grayscale);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(&image.pixels).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// Writes the image to `path` (whole or not at all: see `atomic`); the error names the file.
pub fn write_grey_png(path: &Path, image: &GreyImage) -> Result<(), String> {
    let bytes = encode_grey_png(image).map_err(|e| format!("{}: cannot encode the PNG ({e})", path.display()))?;
    super::atomic::write_atomically(path, &bytes)
}
