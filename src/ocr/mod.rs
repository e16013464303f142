//! OCR engines behind one trait (docs/documents.md#ocr-engines, `--ocr`).
//!
//! `tesseract` is local and offline: the `tesseract` program, one process per page, pages of a
//! PDF rasterised by `pdftoppm`. `glm-ocr`, `file-extract` and `vision` go through the model
//! API; this module does not talk to the network itself: the caller that owns the API client
//! hands in an [`ApiOcr`], and without one those engines fail with a message that says so.
//! `auto` picks tesseract if installed, else glm-ocr if an API client is configured.
//!
//! An engine that is missing is never a crash or a silent empty page: it is `ocr_failed` with
//! what to install or set.

pub mod api;
mod tesseract;

use crate::error::{ErrorKind, JobError};
use crate::scratch::ScratchDir;
use crate::subprocess as process;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use crate::config::OcrChoice;
pub(crate) use tesseract::Tesseract;

/// The engines that go through the model API (docs/documents.md#ocr-engines).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum ApiEngine {
    /// `POST <base>/layout_parsing`, model `glm-ocr`; returns markdown.
    GlmOcr,
    /// The files API with `purpose=file-extract`; the upload is always deleted afterwards.
    FileExtract,
    /// A vision chat model (`glm-4v-flash`) with the image as a base64 data URL.
    Vision,
}

impl ApiEngine {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// What the API accepts for one image.
    pub fn limits(self) -> ImageLimits {
        match self {
            ApiEngine::GlmOcr => ImageLimits {
                max_side: 8000,
                max_bytes: 10 << 20,
            },
            ApiEngine::FileExtract => ImageLimits {
                max_side: 8000,
                max_bytes: 5 << 20,
            },
            ApiEngine::Vision => ImageLimits {
                max_side: 4096,
                max_bytes: 5 << 20,
            },
        }
    }
}

/// The model-API side of OCR, implemented by the owner of the API client.
///
/// `file` is a PNG that already fits [`ApiEngine::limits`]. Called from blocking threads,
/// possibly several at once.
pub trait ApiOcr: Send + Sync {
    fn recognise(&self, engine: ApiEngine, file: &Path) -> Result<String, JobError>;
}

/// The largest image an engine takes: the longest side in pixels and the encoded size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    pub max_side: u32,
    pub max_bytes: u64,
}

/// Settings shared by the engines.
#[derive(Debug, Clone)]
pub(crate) struct EngineSettings {
    /// Wall-clock limit for one page or image.
    pub timeout: Duration,
    /// Most text taken from one engine process.
    pub max_output_bytes: usize,
    pub cancel: Option<CancellationToken>,
}

/// The DPI scanned PDF pages are rasterised at (docs/documents.md#ocr-engines).
pub(crate) const PDF_DPI: u32 = 300;

/// One OCR engine. Blocking; called from several threads at once.
pub(crate) trait OcrEngine: Send + Sync {
    /// The engine's `--ocr` name.
    fn name(&self) -> &'static str;

    /// The largest image the engine takes.
    fn limits(&self) -> ImageLimits;

    /// The text of one PNG image.
    fn image(&self, png: &Path) -> Result<String, JobError>;

    /// Something a person should know about how this engine will read (e.g. a missing
    /// language), reported once per document.
    fn note(&self) -> Option<String> {
        None
    }

    /// The text of page `page` (1-based) of a PDF. A scanned page that is one stored image
    /// is read from that image at its own resolution (`pdfimages`), unless it is larger than
    /// [`Self::limits`]; other pages are rasterised with `pdftoppm -r 300 -gray` (less where
    /// 300 dpi would exceed the limits). Then [`Self::image`]. Returns the text and how the
    /// page's picture was made.
    fn pdf_page(
        &self,
        pdf: &Path,
        page: u32,
        shape: PageShape,
        settings: &EngineSettings,
    ) -> Result<(String, String), JobError> {
        let limits = self.limits();
        let stored = match shape.image {
            Some(image) if image.0.max(image.1) <= limits.max_side => {
                stored_image(pdf, page, image, limits, settings)?
            }
            _ => None,
        };
        let png = match stored {
            Some(stored) => stored,
            None => rasterise(pdf, page, shape.size_pt, limits, settings)?,
        };
        Ok((self.image(&png.path)?, png.made))
    }
}

/// What OCR knows of a PDF page before reading it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct PageShape {
    /// Width and height in points, when known.
    pub size_pt: Option<(f64, f64)>,
    /// Width and height in pixels of the one image the page consists of, when it is a scan.
    pub image: Option<(u32, u32)>,
}

/// The stored image of a scanned page, as `pdfimages -png` writes it: `None` (render the page
/// instead) when pdfimages is missing or the image it wrote is not the expected one or is too
/// large for the engine.
fn stored_image(
    pdf: &Path,
    page: u32,
    (width, height): (u32, u32),
    limits: ImageLimits,
    settings: &EngineSettings,
) -> Result<Option<Raster>, JobError> {
    let Some(pdfimages) = process::find_program("pdfimages") else {
        return Ok(None);
    };
    let dir = ScratchDir::new("page-image")
        .map_err(|e| JobError::new(ErrorKind::Io, msg!("cannot create a scratch folder: {e}")))?;
    let prefix = dir.path().join("img");
    let n = page.to_string();
    let mut cmd = process::command(&pdfimages, ["-png", "-f", n.as_str(), "-l", n.as_str()]);
    cmd.arg(pdf).arg(&prefix);
    let done = process::run(cmd, settings.timeout, 1 << 20, settings.cancel.as_ref())
        .map_err(|e| JobError::new(ErrorKind::OcrFailed, msg!("cannot run pdfimages: {e}")))?;
    match done.end {
        process::End::Cancelled => {
            return Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled")));
        }
        process::End::Exited if done.status.success() => {}
        _ => return Ok(None),
    }
    // The page's image comes first; a soft mask of the same size may follow it.
    let mut written: Vec<std::path::PathBuf> = std::fs::read_dir(dir.path())
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    written.sort();
    let found = written.into_iter().find(|path| {
        path.extension().is_some_and(|e| e == "png")
            && image::image_dimensions(path).ok() == Some((width, height))
            && std::fs::metadata(path).is_ok_and(|m| m.len() <= limits.max_bytes)
    });
    Ok(found.map(|path| Raster {
        path,
        made: format!("its stored {width}×{height} image"),
        _dir: dir,
    }))
}

/// A rasterised PDF page; the file lives as long as this value.
pub(crate) struct Raster {
    pub path: std::path::PathBuf,
    /// How the picture was made: `rendered at 300 dpi`, `its stored 2550×3300 image`.
    pub made: String,
    _dir: ScratchDir,
}

/// Rasterise one PDF page to a grey PNG with `pdftoppm`.
pub(crate) fn rasterise(
    pdf: &Path,
    page: u32,
    size_pt: Option<(f64, f64)>,
    limits: ImageLimits,
    settings: &EngineSettings,
) -> Result<Raster, JobError> {
    let pdftoppm = process::find_program("pdftoppm").ok_or_else(|| {
        JobError::new(
            ErrorKind::OcrFailed,
            msg!(
                "scanned PDF pages need the pdftoppm program: apt-get install poppler-utils \
             (macOS: brew install poppler)"
            ),
        )
    })?;
    let size_pt = size_pt.or_else(|| page_size(pdf, page, settings));
    let dpi = match size_pt {
        Some((w, h)) if w > 0.0 && h > 0.0 => {
            let longest_in = w.max(h) / 72.0;
            let fit = (f64::from(limits.max_side) / longest_in).floor();
            fit.clamp(36.0, f64::from(PDF_DPI)) as u32
        }
        _ => PDF_DPI,
    };
    let dir = ScratchDir::new("raster")
        .map_err(|e| JobError::new(ErrorKind::Io, msg!("cannot create a scratch folder: {e}")))?;
    let prefix = dir.path().join("page");
    let page_arg = page.to_string();
    let mut args: Vec<std::ffi::OsString> = vec![
        "-r".into(),
        dpi.to_string().into(),
        "-gray".into(),
        "-png".into(),
        "-singlefile".into(),
        "-f".into(),
        page_arg.clone().into(),
        "-l".into(),
        page_arg.into(),
    ];
    args.push(pdf.as_os_str().to_owned());
    args.push(prefix.as_os_str().to_owned());
    let done = process::run(
        process::command(&pdftoppm, args),
        settings.timeout,
        1 << 20,
        settings.cancel.as_ref(),
    )
    .map_err(|e| JobError::new(ErrorKind::OcrFailed, msg!("cannot run pdftoppm: {e}")))?;
    let why = match done.end {
        process::End::Cancelled => {
            return Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled")));
        }
        process::End::TimedOut => Some(msg!("timed out after {:?}", settings.timeout)),
        _ if !done.status.success() => {
            Some(msg!("failed ({}): {}", done.status, done.stderr_tail()))
        }
        _ => None,
    };
    let path = prefix.with_extension("png");
    if let Some(why) = why.or_else(|| (!path.is_file()).then(|| "wrote no image".to_string())) {
        return Err(JobError::new(
            ErrorKind::OcrFailed,
            msg!("pdftoppm could not rasterise page {page}: {why}"),
        ));
    }
    Ok(Raster {
        path,
        made: format!("rendered at {dpi} dpi"),
        _dir: dir,
    })
}

/// A page's size in points according to `pdfinfo`, for pages the PDF worker could not measure.
fn page_size(pdf: &Path, page: u32, settings: &EngineSettings) -> Option<(f64, f64)> {
    let pdfinfo = process::find_program("pdfinfo")?;
    let n = page.to_string();
    let mut cmd = process::command(&pdfinfo, ["-f", n.as_str(), "-l", n.as_str()]);
    cmd.arg(pdf);
    let done = process::run(cmd, settings.timeout, 1 << 20, settings.cancel.as_ref()).ok()?;
    size_from_pdfinfo(&String::from_utf8_lossy(&done.stdout), page)
}

/// A page's size in `pdfinfo -f N -l N`'s output ("Page    3 size: 612 x 792 pts (letter)").
fn size_from_pdfinfo(out: &str, page: u32) -> Option<(f64, f64)> {
    let n = page.to_string();
    let line = out.lines().find(|l| {
        let mut words = l.split_whitespace();
        words.next() == Some("Page")
            && words.next() == Some(n.as_str())
            && words.next() == Some("size:")
    })?;
    let mut dims = line.split(" size: ").nth(1)?.split_whitespace();
    let w = dims.next()?.parse().ok()?;
    let _x = dims.next()?;
    let h = dims.next()?.parse().ok()?;
    Some((w, h))
}

/// The engine for `choice`: `Ok(None)` when OCR is off, `Err(ocr_failed)` with what to install
/// or set when the engine cannot work here.
pub(crate) fn select(
    choice: OcrChoice,
    api: Option<Arc<dyn ApiOcr>>,
    settings: &EngineSettings,
) -> Result<Option<Arc<dyn OcrEngine>>, JobError> {
    let api_engine = |engine: ApiEngine| -> Result<Option<Arc<dyn OcrEngine>>, JobError> {
        match &api {
            Some(api) => Ok(Some(Arc::new(ApiBacked {
                engine,
                api: Arc::clone(api),
            }))),
            None => Err(JobError::new(
                ErrorKind::OcrFailed,
                msg!(
                    "the {} OCR engine needs the model API client: set ZHI_API_KEY (this \
                     engine sends the image to the API)",
                    engine.as_str()
                ),
            )),
        }
    };
    match choice {
        OcrChoice::Off => Ok(None),
        OcrChoice::Tesseract => Tesseract::find(settings).map(|t| Some(Arc::new(t) as _)),
        OcrChoice::GlmOcr => api_engine(ApiEngine::GlmOcr),
        OcrChoice::FileExtract => api_engine(ApiEngine::FileExtract),
        OcrChoice::Vision => api_engine(ApiEngine::Vision),
        OcrChoice::Auto => match Tesseract::find(settings) {
            Ok(t) => Ok(Some(Arc::new(t))),
            Err(_) if api.is_some() => api_engine(ApiEngine::GlmOcr),
            Err(_) => Err(JobError::new(
                ErrorKind::OcrFailed,
                msg!(
                    "this document needs OCR and no engine is available: install tesseract \
                 (apt-get install tesseract-ocr tesseract-ocr-chi-sim; macOS: brew install \
                 tesseract tesseract-lang) or set ZHI_API_KEY to use glm-ocr"
                ),
            )),
        },
    }
}

/// An API engine: the image goes to the caller's [`ApiOcr`].
struct ApiBacked {
    engine: ApiEngine,
    api: Arc<dyn ApiOcr>,
}

impl OcrEngine for ApiBacked {
    fn name(&self) -> &'static str {
        self.engine.as_str()
    }
    fn limits(&self) -> ImageLimits {
        self.engine.limits()
    }
    fn image(&self, png: &Path) -> Result<String, JobError> {
        self.api.recognise(self.engine, png)
    }
}

/// Tesseract's Chinese model separates every character by a space; a space between two CJK
/// characters is never meant, so it goes. Latin words keep theirs.
pub(crate) fn join_cjk(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == ' ' || c == '\u{3000}' {
            let mut j = i;
            while j < chars.len() && (chars[j] == ' ' || chars[j] == '\u{3000}') {
                j += 1;
            }
            let before = out.chars().next_back();
            let after = chars.get(j).copied();
            if before.is_some_and(is_cjk) && after.is_some_and(is_cjk) {
                i = j;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// CJK ideographs, kana, hangul, and CJK/full-width punctuation.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3000}'..='\u{303F}'   // CJK symbols and punctuation
        | '\u{3040}'..='\u{30FF}' // kana
        | '\u{3400}'..='\u{4DBF}' // extension A
        | '\u{4E00}'..='\u{9FFF}' // unified ideographs
        | '\u{AC00}'..='\u{D7AF}' // hangul
        | '\u{F900}'..='\u{FAFF}' // compatibility ideographs
        | '\u{FF00}'..='\u{FFEF}' // full-width forms
        | '\u{20000}'..='\u{2FA1F}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> EngineSettings {
        EngineSettings {
            timeout: Duration::from_secs(30),
            max_output_bytes: 1 << 20,
            cancel: None,
        }
    }

    #[test]
    fn choices_parse_by_their_cli_names() {
        for c in OcrChoice::ALL {
            assert_eq!(c.as_str().parse::<OcrChoice>().unwrap(), c);
        }
        let err = "easyocr".parse::<OcrChoice>().unwrap_err();
        assert!(err.contains("auto, tesseract, glm-ocr, file-extract, vision, off"));
    }

    #[test]
    fn api_engines_without_a_client_say_what_to_set() {
        for choice in [OcrChoice::GlmOcr, OcrChoice::FileExtract, OcrChoice::Vision] {
            let err = select(choice, None, &settings()).err().unwrap();
            assert_eq!(err.kind, ErrorKind::OcrFailed);
            assert!(err.message.contains(choice.as_str()), "{}", err.message);
            assert!(err.message.contains("ZHI_API_KEY"), "{}", err.message);
        }
        assert!(select(OcrChoice::Off, None, &settings()).unwrap().is_none());
    }

    struct Echo;
    impl ApiOcr for Echo {
        fn recognise(&self, engine: ApiEngine, _file: &Path) -> Result<String, JobError> {
            Ok(format!("read by {}", engine.as_str()))
        }
    }

    #[test]
    fn api_engines_go_through_the_callers_client() {
        let engine = select(OcrChoice::Vision, Some(Arc::new(Echo)), &settings())
            .unwrap()
            .unwrap();
        assert_eq!(engine.name(), "vision");
        assert_eq!(engine.image(Path::new("x.png")).unwrap(), "read by vision");
        assert_eq!(engine.limits().max_bytes, 5 << 20);
    }

    /// `pdfinfo -f 2 -l 2` (22.12) on a PDF whose second page is 2160 × 300 points.
    const PDFINFO_PAGE_2: &str = "Custom Metadata: no\nMetadata Stream: no\nTagged:          no\n\
        UserProperties:  no\nSuspects:        no\nForm:            none\nJavaScript:      no\n\
        Pages:           2\nEncrypted:       no\nPage    2 size:  2160 x 300 pts\n\
        Page    2 rot:   0\nFile size:       296 bytes\nOptimized:       no\nPDF version:     1.4\n";

    #[test]
    fn page_sizes_are_read_from_pdfinfo() {
        assert_eq!(size_from_pdfinfo(PDFINFO_PAGE_2, 2), Some((2160.0, 300.0)));
        assert_eq!(size_from_pdfinfo(PDFINFO_PAGE_2, 1), None);
        let one_page = "Pages:           1\nPage    1 size:  612 x 792 pts (letter)\n";
        assert_eq!(size_from_pdfinfo(one_page, 1), Some((612.0, 792.0)));
        assert_eq!(size_from_pdfinfo("", 9), None);
    }

    #[test]
    fn cjk_spaces_are_joined_latin_spaces_kept() {
        assert_eq!(
            join_cjk("每 个 文件 、 目录 or Debian GNU/Linux 系 统"),
            "每个文件、目录 or Debian GNU/Linux 系统"
        );
        assert_eq!(join_cjk("a  b\n中 \n文"), "a  b\n中 \n文");
    }
}
