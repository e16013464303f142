//! Document → text: what the model is given for each input (docs/documents.md).
//!
//! Text files are decoded from whatever encoding they are in; PDFs are read through their text
//! layer in an isolated worker process (PDF parsers panic, overflow their stacks and allocate
//! gigabytes on real files), with lopdf and `pdftotext` as second opinions and OCR for pages
//! without text; office files are read as XML or through calamine; images go to OCR.
//!
//! This module must never crash the process that calls it, never write anywhere except its own
//! scratch folders under the system temp dir, and never talk to the network itself (the API OCR
//! engines are handed in by the caller through [`crate::ocr::ApiOcr`]). Every failure is a
//! [`JobError`] with a kind and a reason a person can act on.

mod images;
mod office;
mod pdf;
mod text;

use crate::error::{ErrorKind, JobError};
use crate::ocr::{self, ApiOcr, OcrEngine};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use crate::ocr::OcrChoice;
pub use pdf::pdf_worker_main;

/// The broad kind of a document, which decides how its text is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum DocKind {
    /// Plain text in some encoding: prose, markup, data, source code.
    Text,
    /// PDF: the text layer, OCR for pages without one.
    Pdf,
    /// Word, PowerPoint and spreadsheet files.
    Office,
    /// Pictures: OCR only.
    Image,
}

impl DocKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl fmt::Display for DocKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the text of one page (or slide, or sheet) was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Read and decoded as a text file.
    Text,
    /// The PDF text layer, read by pdf-extract.
    PdfExtract,
    /// The PDF text layer, read by lopdf (pdf-extract failed or found too little).
    Lopdf,
    /// The PDF text layer, read by the `pdftotext` program.
    Pdftotext,
    /// OCR; the engine is named in [`Extracted::ocr_engine`].
    Ocr,
    /// The XML of a Word or PowerPoint file, or the cells of a spreadsheet.
    Office,
    /// Nothing usable was found on this page.
    Empty,
}

/// One page of the result: a PDF page, a slide, a sheet, or the whole of a single-page input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageText {
    /// 1-based.
    pub number: u32,
    pub method: Method,
    /// Characters (Unicode scalar values) of this page's text.
    pub chars: usize,
    /// Byte offset of this page's text in [`Extracted::text`], so long documents can be cut on
    /// page boundaries.
    pub offset: usize,
    /// PDF: the glyphs the page's text operators draw (spaces left out), when its content
    /// could be read; a faithful extraction finds about as many characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub glyphs: Option<u32>,
    /// PDF: why this page's text is the one chosen, e.g. `"pdftotext found 1,530 characters
    /// of 1,534 glyphs"`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub why: String,
}

/// The text of a document and how it was obtained (`zhi extract --json`).
#[derive(Debug, Clone, Serialize)]
pub struct Extracted {
    /// Exactly what the model is given. Pages are separated by a blank line.
    pub text: String,
    pub kind: DocKind,
    pub pages: Vec<PageText>,
    /// The detected encoding of a text file (`UTF-8`, `UTF-16LE (BOM)`, `GBK`, `Big5`, …).
    pub encoding: Option<String>,
    /// The OCR engine used for pages whose method is [`Method::Ocr`].
    pub ocr_engine: Option<String>,
    /// Every detour taken on the way, in order, e.g.
    /// `"page 3: pdf-extract worker overflowed its stack (endless recursion in the document)"`,
    /// `"pages 4–9: OCR (tesseract)"`. Empty when the first extractor read everything.
    pub fallbacks: Vec<String>,
    /// What a person should know about the text: pages where every extractor found far less
    /// than the page draws. Written into the job's record.
    pub warnings: Vec<String>,
}

/// How [`extract`] works. Build it once per run; cloning is cheap.
#[derive(Clone)]
pub struct ExtractOptions {
    /// Which OCR engine reads images and scanned pages (`--ocr`).
    pub ocr: OcrChoice,
    /// The engines that go through the model API (`glm-ocr`, `file-extract`, `vision`), built
    /// by the caller that owns the API client; `None` when no API key is configured.
    pub api_ocr: Option<Arc<dyn ApiOcr>>,
    /// Wall-clock limit for one PDF worker process.
    pub pdf_timeout: Duration,
    /// Address-space limit (RLIMIT_AS) of a PDF worker process; 0 = none.
    pub pdf_memory_limit_bytes: u64,
    /// The `zhi` binary that is re-executed as `zhi __pdf-worker`.
    pub worker_exe: PathBuf,
    /// Largest text, office or image file read into memory; larger ones fail with `too_large`.
    pub max_input_bytes: u64,
    /// Largest amount of text taken from one helper process (PDF worker, `pdftotext`, OCR).
    pub max_output_bytes: usize,
    /// A PDF page with fewer usable characters than this is "implausibly little": the next
    /// extractor is tried, and if the page has images it goes to OCR.
    pub min_page_chars: usize,
    /// Pages OCR'd at the same time within one document.
    pub ocr_parallelism: usize,
    /// Wall-clock limit for OCR of one page or image.
    pub ocr_timeout: Duration,
    /// Cancels extraction: helper processes are killed and the result is `cancelled`.
    pub cancel: Option<CancellationToken>,
    /// Let `pdftotext` lead where it is installed (the worker checks each page it reads);
    /// false: the built-in worker alone (pdf-extract, lopdf), as where poppler is missing.
    pub pdftotext: bool,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        ExtractOptions {
            ocr: OcrChoice::Auto,
            api_ocr: None,
            pdf_timeout: Duration::from_secs(120),
            pdf_memory_limit_bytes: 2 << 30,
            worker_exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("zhi")),
            max_input_bytes: 512 << 20,
            max_output_bytes: 256 << 20,
            min_page_chars: 16,
            ocr_parallelism: std::thread::available_parallelism().map_or(1, |n| n.get()),
            ocr_timeout: Duration::from_secs(180),
            cancel: None,
            pdftotext: true,
        }
    }
}

impl fmt::Debug for ExtractOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtractOptions")
            .field("ocr", &self.ocr)
            .field("api_ocr", &self.api_ocr.is_some())
            .field("pdf_timeout", &self.pdf_timeout)
            .field("pdf_memory_limit_bytes", &self.pdf_memory_limit_bytes)
            .field("worker_exe", &self.worker_exe)
            .field("max_input_bytes", &self.max_input_bytes)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("min_page_chars", &self.min_page_chars)
            .field("ocr_parallelism", &self.ocr_parallelism)
            .field("ocr_timeout", &self.ocr_timeout)
            .field("cancel", &self.cancel.is_some())
            .field("pdftotext", &self.pdftotext)
            .finish()
    }
}

impl ExtractOptions {
    fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.is_cancelled())
    }

    fn ocr_engine(&self) -> Result<Option<Arc<dyn OcrEngine>>, JobError> {
        ocr::select(
            self.ocr,
            self.api_ocr.clone(),
            &ocr::EngineSettings {
                timeout: self.ocr_timeout,
                max_output_bytes: self.max_output_bytes,
                cancel: self.cancel.clone(),
            },
        )
    }
}

const TEXT_EXTENSIONS: &[&str] = &[
    "txt",
    "text",
    "md",
    "markdown",
    "mdx",
    "rst",
    "adoc",
    "asciidoc",
    "org",
    "tex",
    "bib",
    "csv",
    "tsv",
    "json",
    "jsonl",
    "ndjson",
    "ipynb",
    "yaml",
    "yml",
    "toml",
    "ini",
    "cfg",
    "conf",
    "properties",
    "env",
    "xml",
    "html",
    "htm",
    "xhtml",
    "svg",
    "log",
    "srt",
    "vtt",
    "sql",
    "rs",
    "py",
    "pyi",
    "js",
    "mjs",
    "cjs",
    "ts",
    "tsx",
    "jsx",
    "go",
    "java",
    "kt",
    "kts",
    "scala",
    "groovy",
    "gradle",
    "c",
    "h",
    "cc",
    "cpp",
    "cxx",
    "hpp",
    "hh",
    "hxx",
    "m",
    "mm",
    "cs",
    "fs",
    "vb",
    "swift",
    "rb",
    "php",
    "pl",
    "pm",
    "r",
    "lua",
    "dart",
    "ex",
    "exs",
    "erl",
    "hs",
    "ml",
    "mli",
    "clj",
    "cljs",
    "elm",
    "nim",
    "zig",
    "sol",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "bat",
    "cmd",
    "awk",
    "sed",
    "vim",
    "el",
    "lisp",
    "scm",
    "tf",
    "hcl",
    "nix",
    "proto",
    "graphql",
    "gql",
    "css",
    "scss",
    "sass",
    "less",
    "vue",
    "svelte",
    "astro",
    "patch",
    "diff",
    "cmake",
    "mk",
    "dockerfile",
];

/// Files without an extension that are text by convention.
const TEXT_NAMES: &[&str] = &[
    "readme",
    "license",
    "licence",
    "copying",
    "authors",
    "changelog",
    "news",
    "todo",
    "makefile",
    "dockerfile",
    "containerfile",
    "justfile",
    "gemfile",
    "rakefile",
    "procfile",
    "vagrantfile",
];

const OFFICE_EXTENSIONS: &[&str] = &["docx", "pptx", "xlsx", "xlsm", "xlsb", "xls", "ods"];
const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "gif", "webp", "tif", "tiff", "bmp"];

/// The kind of document `path` is, by its extension (case-insensitive); `None` when zhi cannot
/// read it (the job fails with `unsupported_type`). Never touches the file system.
pub(crate) fn doc_kind(path: &Path) -> Option<DocKind> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("pdf") => Some(DocKind::Pdf),
        Some(e) if OFFICE_EXTENSIONS.contains(&e) => Some(DocKind::Office),
        Some(e) if IMAGE_EXTENSIONS.contains(&e) => Some(DocKind::Image),
        Some(e) if TEXT_EXTENSIONS.contains(&e) => Some(DocKind::Text),
        Some(_) => None,
        None => {
            let name = path.file_name()?.to_str()?.to_ascii_lowercase();
            TEXT_NAMES.contains(&name.as_str()).then_some(DocKind::Text)
        }
    }
}

/// The text the model is given for `path`.
///
/// Errors: `unsupported_type` (unknown extension, binary file), `input_error` (missing, broken
/// link, a directory, a fifo, unreadable), `extract_failed` (empty file, no text found, a broken
/// or hostile document; the reason says which), `ocr_failed` (the document needs OCR and no
/// engine could do it), `too_large`, `cancelled`.
///
/// Blocking: call it from `spawn_blocking` or a thread pool. PDF text is read in a child
/// process (`opts.worker_exe __pdf-worker`); several may run at once.
pub fn extract(path: &Path, opts: &ExtractOptions) -> Result<Extracted, JobError> {
    let kind = doc_kind(path).ok_or_else(|| unsupported(path))?;
    let len = check_input(path)?;
    if kind != DocKind::Pdf && len > opts.max_input_bytes {
        return Err(too_large(len, opts.max_input_bytes));
    }
    let extracted = match kind {
        DocKind::Text => text::extract(path, opts)?,
        DocKind::Pdf => pdf::extract(path, opts, false)?,
        DocKind::Office => office::extract(path)?,
        DocKind::Image => images::extract(path, opts)?,
    };
    Ok(extracted)
}

/// What a document holds before any OCR: for an estimate of what a run will send
/// (`zhi plan`), without the cost of OCR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextLayer {
    /// The text extraction finds without OCR.
    pub text: String,
    /// Pages (PDF pages, slides, sheets; 1 for other files).
    pub pages: u32,
    /// Pages with too little text to use: a run reads them by OCR (an image is one).
    pub pages_without_text: u32,
}

/// The text layer of `path` and its pages without one ([`TextLayer`]): a PDF's text as
/// [`extract`] reads it with OCR off, an office file's text, an image as one page without
/// text. Errors as [`extract`]'s.
pub(crate) fn text_layer(path: &Path, opts: &ExtractOptions) -> Result<TextLayer, JobError> {
    let kind = doc_kind(path).ok_or_else(|| unsupported(path))?;
    let len = check_input(path)?;
    if kind != DocKind::Pdf && len > opts.max_input_bytes {
        return Err(too_large(len, opts.max_input_bytes));
    }
    let whole = |e: Extracted| TextLayer {
        pages: e.pages.len().max(1) as u32,
        pages_without_text: 0,
        text: e.text,
    };
    match kind {
        DocKind::Pdf => pdf::text_layer(path, opts),
        DocKind::Office => office::extract(path).map(whole),
        DocKind::Text => text::extract(path, opts).map(whole),
        DocKind::Image => Ok(TextLayer {
            text: String::new(),
            pages: 1,
            pages_without_text: 1,
        }),
    }
}

/// OCR `path` even where it has a text layer (the agent's `ocr` tool): every page of a PDF is
/// rasterised and read by the configured engine; an image is read as by [`extract`]. Other
/// kinds fail with `unsupported_type`.
pub fn ocr_file(path: &Path, opts: &ExtractOptions) -> Result<Extracted, JobError> {
    let kind = doc_kind(path).ok_or_else(|| unsupported(path))?;
    let len = check_input(path)?;
    match kind {
        DocKind::Pdf => pdf::extract(path, opts, true),
        DocKind::Image if len > opts.max_input_bytes => Err(too_large(len, opts.max_input_bytes)),
        DocKind::Image => images::extract(path, opts),
        DocKind::Text | DocKind::Office => Err(JobError::new(
            ErrorKind::UnsupportedType,
            msg!("OCR reads images and PDFs, not {} files", kind),
        )),
    }
}

fn unsupported(path: &Path) -> JobError {
    let what = match path.extension() {
        Some(ext) => msg!("unsupported file type .{}", ext.to_string_lossy()),
        None => msg!("unsupported file type (no extension)"),
    };
    JobError::new(
        ErrorKind::UnsupportedType,
        msg!(
            "{what}: zhi reads text files, PDF, docx, pptx, xlsx, xls, ods and images \
             (png, jpg, gif, webp, tiff, bmp)"
        ),
    )
}

fn too_large(len: u64, max: u64) -> JobError {
    JobError::new(
        ErrorKind::TooLarge,
        msg!(
            "file is {} MiB; zhi reads at most {} MiB of this kind into memory",
            len >> 20,
            max >> 20
        ),
    )
}

/// Everything about the input that can be known from its metadata: it exists, is a regular
/// file (a fifo would block a reader forever), and is not empty. Returns its length.
fn check_input(path: &Path) -> Result<u64, JobError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) => {
            let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            let msg = match e.kind() {
                std::io::ErrorKind::NotFound if link => {
                    msg!("broken symbolic link: its target does not exist")
                }
                std::io::ErrorKind::NotFound => msg!("no such file"),
                std::io::ErrorKind::PermissionDenied => msg!("permission denied"),
                _ => msg!("cannot read the file: {e}"),
            };
            return Err(JobError::new(ErrorKind::InputError, msg));
        }
    };
    if meta.is_dir() {
        return Err(JobError::new(
            ErrorKind::InputError,
            msg!("is a directory, not a file"),
        ));
    }
    if !meta.is_file() {
        return Err(JobError::new(
            ErrorKind::InputError,
            msg!("not a regular file (a device, fifo or socket)"),
        ));
    }
    if meta.len() == 0 {
        return Err(JobError::new(
            ErrorKind::ExtractFailed,
            msg!("empty file (0 bytes)"),
        ));
    }
    // Opening proves readability now rather than deep inside a worker.
    if let Err(e) = std::fs::File::open(path) {
        let msg = match e.kind() {
            std::io::ErrorKind::PermissionDenied => msg!("permission denied"),
            _ => msg!("cannot open the file: {e}"),
        };
        return Err(JobError::new(ErrorKind::InputError, msg));
    }
    Ok(meta.len())
}

/// Characters that carry text: not whitespace, not control characters, not the replacement
/// character, not private-use code points (glyph ids of fonts without a Unicode map).
pub(crate) fn usable_chars(s: &str) -> usize {
    // Byte by byte for ASCII (most of most documents), char by char for the rest.
    let bytes = s.as_bytes();
    let (mut i, mut n) = (0, 0);
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii() {
            n += usize::from(b > b' ' && b != 0x7F);
            i += 1;
            continue;
        }
        let Some(c) = s[i..].chars().next() else {
            break;
        };
        i += c.len_utf8();
        n += usize::from(
            !c.is_whitespace()
                && !c.is_control()
                && c != '\u{FFFD}'
                && !('\u{E000}'..='\u{F8FF}').contains(&c),
        );
    }
    n
}

/// Tidy text from any extractor: ligatures spelled out, control characters (other than
/// newline and tab) dropped, trailing spaces cut, runs of blank lines collapsed to one.
pub(crate) fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank_run = 0usize;
    for line in s.replace("\r\n", "\n").split(['\n', '\r']) {
        let mut clean = String::with_capacity(line.len());
        for c in line.chars() {
            match c {
                '\u{FB00}' => clean.push_str("ff"),
                '\u{FB01}' => clean.push_str("fi"),
                '\u{FB02}' => clean.push_str("fl"),
                '\u{FB03}' => clean.push_str("ffi"),
                '\u{FB04}' => clean.push_str("ffl"),
                '\u{FB05}' | '\u{FB06}' => clean.push_str("st"),
                '\t' => clean.push('\t'),
                c if c.is_control() => {}
                c => clean.push(c),
            }
        }
        let clean = clean.trim_end();
        if clean.is_empty() {
            blank_run += 1;
            if blank_run > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(clean);
        out.push('\n');
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out
}

/// Join page texts into one text, non-empty pages separated by a form feed on its own line
/// (as `pdftotext` does): the splitter for long documents cuts there first.
fn assemble(pages: Vec<(u32, Method, String)>) -> (String, Vec<PageText>) {
    let mut text = String::new();
    let mut out = Vec::with_capacity(pages.len());
    for (number, method, page) in pages {
        if !page.is_empty() && !text.is_empty() {
            text.push_str("\n\u{c}\n");
        }
        out.push(PageText {
            number,
            method,
            chars: page.chars().count(),
            offset: text.len(),
            glyphs: None,
            why: String::new(),
        });
        text.push_str(&page);
    }
    (text, out)
}

/// `1–3, 7, 9–10`: page lists for messages.
fn page_ranges(pages: &[u32]) -> String {
    let mut sorted = pages.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}–{end}")
        });
        i += 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_extension() {
        assert_eq!(doc_kind(Path::new("a/B.PDF")), Some(DocKind::Pdf));
        assert_eq!(doc_kind(Path::new("x.md")), Some(DocKind::Text));
        assert_eq!(doc_kind(Path::new("x.rs")), Some(DocKind::Text));
        assert_eq!(doc_kind(Path::new("x.docx")), Some(DocKind::Office));
        assert_eq!(doc_kind(Path::new("x.ods")), Some(DocKind::Office));
        assert_eq!(doc_kind(Path::new("x.JPEG")), Some(DocKind::Image));
        assert_eq!(doc_kind(Path::new("Makefile")), Some(DocKind::Text));
        assert_eq!(doc_kind(Path::new("x.exe")), None);
        assert_eq!(doc_kind(Path::new("x.doc")), None);
        assert_eq!(doc_kind(Path::new("noext")), None);
    }

    #[test]
    fn unsupported_and_missing_inputs_are_job_errors() {
        let opts = ExtractOptions::default();
        let err = extract(Path::new("/nonexistent/a.exe"), &opts).unwrap_err();
        assert_eq!(err.kind, ErrorKind::UnsupportedType);
        assert!(err.message.contains(".exe"), "{}", err.message);
        let err = extract(Path::new("/nonexistent/a.txt"), &opts).unwrap_err();
        assert_eq!(err.kind, ErrorKind::InputError);
        assert_eq!(err.message, "no such file");
    }

    #[test]
    fn tidy_spells_ligatures_and_collapses_blank_lines() {
        assert_eq!(
            tidy("\n\n  ﬁle  \r\n\n\n\nof\u{0}ﬁce\t\n\n"),
            "  file\n\noffice"
        );
    }

    #[test]
    fn usable_chars_ignore_noise() {
        assert_eq!(usable_chars(" a\u{FFFD}\u{E001}中\n"), 2);
        assert_eq!(usable_chars("ab c\t\u{7f}\u{1}d 中文 e"), 7);
    }

    #[test]
    fn assemble_records_offsets() {
        let (text, pages) = assemble(vec![
            (1, Method::Text, "ab".into()),
            (2, Method::Empty, String::new()),
            (3, Method::Text, "中".into()),
        ]);
        assert_eq!(text, "ab\n\u{c}\n中");
        assert_eq!(pages[1].offset, 2);
        assert_eq!(pages[2].offset, 5);
        assert_eq!(pages[2].chars, 1);
        assert_eq!(&text[pages[2].offset..], "中");
    }

    #[test]
    fn ranges() {
        assert_eq!(page_ranges(&[9, 1, 2, 3, 7, 10]), "1–3, 7, 9–10");
    }
}
