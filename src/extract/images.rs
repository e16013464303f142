//! Pictures of text: decoded with the `image` crate (format sniffed from the bytes, not the
//! name), turned upright by their EXIF orientation, made grey, shrunk to what the OCR engine
//! accepts, and written as a PNG into a private scratch folder for the engine to read.
//!
//! Decoding runs under the `image` crate's allocation limits, so a small file that claims to be
//! a gigapixel image fails instead of exhausting memory.

use super::{DocKind, ExtractOptions, Extracted, Method, assemble, usable_chars};
use crate::error::{ErrorKind, JobError};
use crate::ocr::ImageLimits;
use crate::scratch::ScratchDir;
use image::{DynamicImage, ImageDecoder, ImageReader, imageops::FilterType};
use std::path::{Path, PathBuf};

pub(super) fn extract(path: &Path, opts: &ExtractOptions) -> Result<Extracted, JobError> {
    let engine = opts.ocr_engine()?.ok_or_else(|| {
        JobError::new(
            ErrorKind::OcrFailed,
            msg!("this is an image and OCR is off (--ocr off); choose an engine with --ocr"),
        )
    })?;
    let prepared = prepare(path, engine.limits())?;
    let text = engine.image(&prepared.png)?;
    let text = super::tidy(&text);
    if usable_chars(&text) == 0 {
        return Err(JobError::new(
            ErrorKind::OcrFailed,
            msg!("{} found no text in the image", engine.name()),
        ));
    }
    let mut fallbacks = Vec::new();
    fallbacks.extend(engine.note());
    fallbacks.extend(prepared.note);
    let (text, pages) = assemble(vec![(1, Method::Ocr, text)]);
    Ok(Extracted {
        text,
        kind: DocKind::Image,
        pages,
        encoding: None,
        ocr_engine: Some(engine.name().to_string()),
        fallbacks,
        warnings: Vec::new(),
    })
}

/// An image ready for an OCR engine. The PNG lives as long as this value.
pub(crate) struct Prepared {
    pub png: PathBuf,
    /// What was done to the image that a person may want to know (rotation, downscaling).
    pub note: Option<String>,
    _dir: ScratchDir,
}

pub(crate) fn prepare(path: &Path, limits: ImageLimits) -> Result<Prepared, JobError> {
    let failed = |what: String| JobError::new(ErrorKind::ExtractFailed, what);
    let reader = ImageReader::open(path)
        .map_err(|e| JobError::new(ErrorKind::InputError, msg!("cannot open the image: {e}")))?
        .with_guessed_format()
        .map_err(|e| failed(msg!("cannot read the image: {e}")))?;
    if reader.format().is_none() {
        return Err(failed(msg!(
            "not an image zhi can decode (png, jpeg, gif, webp, tiff, bmp)"
        )));
    }
    let mut decoder = reader
        .into_decoder()
        .map_err(|e| failed(msg!("cannot decode the image: {e}")))?;
    let orientation = decoder
        .orientation()
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    let mut img = DynamicImage::from_decoder(decoder)
        .map_err(|e| failed(msg!("cannot decode the image: {e}")))?;
    let mut notes = Vec::new();
    if orientation != image::metadata::Orientation::NoTransforms {
        img.apply_orientation(orientation);
        notes.push(format!(
            "rotated upright by its EXIF orientation ({orientation:?})"
        ));
    }
    let img = DynamicImage::ImageLuma8(img.to_luma8());
    let (w, h) = (img.width(), img.height());
    if w == 0 || h == 0 {
        return Err(failed(msg!("the image is empty (0 pixels)")));
    }

    let dir = ScratchDir::new("ocr")
        .map_err(|e| JobError::new(ErrorKind::Io, msg!("cannot create a scratch folder: {e}")))?;
    let png = dir.path().join("page.png");
    let mut scale = f64::min(1.0, f64::from(limits.max_side) / f64::from(w.max(h)));
    for _ in 0..8 {
        let scaled = if scale < 1.0 {
            let nw = ((f64::from(w) * scale).round() as u32).max(1);
            let nh = ((f64::from(h) * scale).round() as u32).max(1);
            img.resize_exact(nw, nh, FilterType::Triangle)
        } else {
            img.clone()
        };
        scaled
            .save_with_format(&png, image::ImageFormat::Png)
            .map_err(|e| JobError::new(ErrorKind::Io, msg!("cannot write the PNG: {e}")))?;
        let bytes = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(u64::MAX);
        if bytes <= limits.max_bytes {
            if scale < 1.0 {
                notes.push(format!(
                    "downscaled from {w}×{h} to {}×{} for the OCR engine",
                    scaled.width(),
                    scaled.height()
                ));
            }
            let note = (!notes.is_empty()).then(|| msg!("image: {}", notes.join("; ")));
            return Ok(Prepared {
                png,
                note,
                _dir: dir,
            });
        }
        scale *= 0.7;
    }
    Err(failed(msg!(
        "the image cannot be made smaller than the engine's {} MiB limit",
        limits.max_bytes >> 20
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downscales_to_the_engine_limit_and_writes_grey_png() {
        let dir = ScratchDir::new("test").unwrap();
        let src = dir.path().join("wide.png");
        image::RgbImage::from_pixel(3000, 1000, image::Rgb([200, 10, 10]))
            .save(&src)
            .unwrap();
        let prepared = prepare(
            &src,
            ImageLimits {
                max_side: 1500,
                max_bytes: 10 << 20,
            },
        )
        .unwrap();
        let out = image::open(&prepared.png).unwrap();
        assert_eq!((out.width(), out.height()), (1500, 500));
        assert!(matches!(out, DynamicImage::ImageLuma8(_)));
        assert!(prepared.note.unwrap().contains("downscaled from 3000×1000"));
    }

    #[test]
    fn exif_orientation_turns_the_image_upright() {
        use image::ImageEncoder;
        // Upright: 40×20, dark left half. Stored turned a quarter to the left (20×40) with
        // EXIF orientation 6, which tells viewers to turn it a quarter to the right.
        let upright =
            image::GrayImage::from_fn(40, 20, |x, _| image::Luma([if x < 20 { 0 } else { 255 }]));
        let stored = image::imageops::rotate270(&upright);
        let dir = ScratchDir::new("test").unwrap();
        let src = dir.path().join("photo.png");
        let mut encoder = image::codecs::png::PngEncoder::new(std::fs::File::create(&src).unwrap());
        let exif = [
            b"MM\0*".as_slice(),
            &8u32.to_be_bytes(),
            &1u16.to_be_bytes(),
            &0x0112u16.to_be_bytes(),
            &3u16.to_be_bytes(),
            &1u32.to_be_bytes(),
            &6u16.to_be_bytes(),
            &[0, 0],
            &0u32.to_be_bytes(),
        ]
        .concat();
        encoder.set_exif_metadata(exif).unwrap();
        encoder
            .write_image(stored.as_raw(), 20, 40, image::ExtendedColorType::L8)
            .unwrap();

        let prepared = prepare(
            &src,
            ImageLimits {
                max_side: 1000,
                max_bytes: 1 << 20,
            },
        )
        .unwrap();
        let out = image::open(&prepared.png).unwrap().to_luma8();
        assert_eq!(out, upright);
        assert!(prepared.note.unwrap().contains("EXIF orientation"));
    }

    #[test]
    fn not_an_image_fails_with_a_reason() {
        let dir = ScratchDir::new("test").unwrap();
        let src = dir.path().join("fake.png");
        std::fs::write(&src, b"this is not a picture at all").unwrap();
        let err = prepare(
            &src,
            ImageLimits {
                max_side: 100,
                max_bytes: 1 << 20,
            },
        )
        .err()
        .unwrap();
        assert_eq!(err.kind, ErrorKind::ExtractFailed);
        assert!(
            err.message.starts_with("cannot decode the image"),
            "{}",
            err.message
        );
    }
}
