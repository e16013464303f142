//! The PDF worker: the child side of PDF text extraction (`zhi __pdf-worker`).
//!
//! PDF parsers crash on real files: they panic, recurse until the stack overflows (an abort no
//! `catch_unwind` can stop) or allocate gigabytes. So the text layer is read here, in a process
//! of its own, with an address-space limit (RLIMIT_AS), no core dumps, a large stack on the
//! extraction thread, and every page under `catch_unwind`. The parent (`mod.rs`) enforces the
//! wall clock and reads whatever this process managed to say before it died.
//!
//! Protocol, one JSON object per line on stdout, flushed as each is done:
//! `{"doc":{…}}` once the document is loaded, `{"page":{…}}` per page, `{"end":{}}` at the end,
//! or `{"failed":{"reason":…}}` when the document cannot be read at all. Stdout is reserved for
//! this: whatever a library prints goes to stderr.
//!
//! This process must never write a file or read anything but the one PDF it is given.

use super::survey::{self, PageImage, inherited, resolve};
use crate::extract::office::panic_message;
use crate::extract::{tidy, usable_chars};
use lopdf::{Dictionary, Document, Object, ObjectId};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::ffi::OsString;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::ExitCode;

/// Identifies the protocol, so a wrong `worker_exe` is told apart from a broken PDF.
pub(super) const PROTOCOL: &str = "zhi-pdf-worker/2";

/// Stack of the extraction thread: deep but legitimate nesting fits; endless recursion still
/// ends, as an abort the parent reports as a stack overflow.
const STACK_BYTES: usize = 64 << 20;

/// Which extractors the worker tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// pdf-extract, then lopdf for pages where it failed or found less than the page shows.
    Full,
    /// lopdf only (after pdf-extract crashed the worker on a page).
    Lopdf,
    /// Check another extractor's reading: survey every page (glyphs, images, no text), then
    /// read one line from stdin, `counts N,N,…` (the usable characters the other extractor
    /// found on each page of the document) or `all` (it found nothing: read every page), and
    /// read with pdf-extract and lopdf the pages the counts fall short on.
    Check,
}

impl Mode {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Mode::Full => "full",
            Mode::Lopdf => "lopdf",
            Mode::Check => "check",
        }
    }
}

/// An extractor's page holding less than this share of the glyphs the page draws has lost
/// text: the next extractor is asked.
pub(super) const FAITHFUL: f64 = 0.9;

/// Whether `chars` usable characters are a faithful reading of a page that draws `glyphs`.
pub(super) fn faithful(chars: usize, glyphs: Option<u32>, min_chars: usize) -> bool {
    match glyphs {
        Some(g) => chars as f64 >= FAITHFUL * f64::from(g) || (g as usize) < min_chars,
        None => chars >= min_chars,
    }
}

/// One line of the worker's output.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Line {
    Doc { protocol: String, pages: u32 },
    Page(WorkerPage),
    End {},
    Failed { reason: String },
}

/// Which extractor produced a page's text in the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum PageMethod {
    PdfExtract,
    Lopdf,
    None,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct WorkerPage {
    pub number: u32,
    pub text: String,
    pub method: PageMethod,
    /// The page draws images (so an empty text layer may be a scan).
    pub has_images: bool,
    /// Width and height in points (MediaBox), when readable.
    pub size_pt: Option<(f64, f64)>,
    /// Errors and panics of the extractors on this page.
    pub notes: Vec<String>,
    /// Glyphs the page's text operators draw (spaces left out), when its content could be
    /// read: what a faithful extraction comes close to.
    #[serde(default)]
    pub glyphs: Option<u32>,
    /// The one image the page consists of, when it is a scan that OCR can take as it is.
    #[serde(default)]
    pub page_image: Option<PageImage>,
    /// False for a survey line of `--mode check` (no extractor was run on the page).
    #[serde(default)]
    pub extracted: bool,
}

#[derive(Debug)]
struct Args {
    path: PathBuf,
    memory_limit: u64,
    mode: Mode,
    first: u32,
    last: Option<u32>,
    /// Only these pages (`--pages 3,7,9`), in order.
    pages: Option<Vec<u32>>,
    min_chars: usize,
}

fn parse_args(args: &[OsString]) -> Result<Args, String> {
    let mut parsed = Args {
        path: PathBuf::new(),
        memory_limit: 0,
        mode: Mode::Full,
        first: 1,
        last: None,
        pages: None,
        min_chars: 16,
    };
    let mut path = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| -> Result<String, String> {
            it.next()
                .and_then(|v| v.to_str())
                .map(str::to_string)
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.to_str() {
            Some("--memory-limit") => {
                parsed.memory_limit = value("--memory-limit")?
                    .parse()
                    .map_err(|e| format!("--memory-limit: {e}"))?;
            }
            Some("--mode") => {
                parsed.mode = match value("--mode")?.as_str() {
                    "full" => Mode::Full,
                    "lopdf" => Mode::Lopdf,
                    "check" => Mode::Check,
                    other => return Err(msg!("unknown --mode {other}")),
                };
            }
            Some("--first") => {
                parsed.first = value("--first")?
                    .parse()
                    .map_err(|e| format!("--first: {e}"))?;
            }
            Some("--last") => {
                parsed.last = Some(
                    value("--last")?
                        .parse()
                        .map_err(|e| format!("--last: {e}"))?,
                );
            }
            Some("--pages") => {
                let list = value("--pages")?;
                let pages: Result<Vec<u32>, _> = list.split(',').map(str::parse).collect();
                parsed.pages = Some(pages.map_err(|e| format!("--pages: {e}"))?);
            }
            Some("--min-chars") => {
                parsed.min_chars = value("--min-chars")?
                    .parse()
                    .map_err(|e| format!("--min-chars: {e}"))?;
            }
            Some("--") if path.is_none() => path = it.next().map(PathBuf::from),
            _ if path.is_none() => path = Some(PathBuf::from(arg)),
            _ => return Err(msg!("unexpected argument {}", arg.to_string_lossy())),
        }
    }
    parsed.path = path.ok_or("missing the PDF path")?;
    Ok(parsed)
}

/// The entry point of `zhi __pdf-worker [--memory-limit BYTES] [--mode full|lopdf|survey]
/// [--first N] [--last N] [--pages N,N,…] [--min-chars N] PATH`.
pub fn pdf_worker_main(args: &[OsString]) -> ExitCode {
    let args = match parse_args(args) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("zhi __pdf-worker: {e}");
            return ExitCode::from(2);
        }
    };
    limit_resources(args.memory_limit);
    let Some(mut out) = private_stdout() else {
        eprintln!("zhi __pdf-worker: cannot set up stdout");
        return ExitCode::from(2);
    };
    // Panics are reported through the protocol; the hook only leaves a one-line trace on
    // stderr for the parent to quote if the process dies anyway.
    std::panic::set_hook(Box::new(|info| eprintln!("zhi pdf worker: {info}")));

    let worker = std::thread::Builder::new()
        .name("pdf-worker".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let mut emit = |line: &Line| -> bool {
                match serde_json::to_string(line) {
                    Ok(json) => writeln!(out, "{json}").and_then(|()| out.flush()).is_ok(),
                    Err(_) => false,
                }
            };
            work(&args, &mut emit)
        });
    match worker.map(|h| h.join()) {
        Ok(Ok(true)) => ExitCode::SUCCESS,
        Ok(Ok(false)) => ExitCode::from(3),
        Ok(Err(_)) | Err(_) => ExitCode::from(101),
    }
}

/// Address space and core dumps. Failure to set a limit is not fatal: the parent's wall clock
/// still holds.
fn limit_resources(memory_limit: u64) {
    // SAFETY: setrlimit only reads the struct passed by pointer, which lives on this stack.
    unsafe {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        if memory_limit > 0 {
            let limit = libc::rlimit {
                rlim_cur: memory_limit as libc::rlim_t,
                rlim_max: memory_limit as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                eprintln!(
                    "zhi pdf worker: cannot limit memory: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
    }
}

/// Keep the real stdout for the protocol and point fd 1 at stderr, so that anything a library
/// prints cannot corrupt the protocol.
fn private_stdout() -> Option<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: dup/dup2 on the process's own standard descriptors; the duplicated fd is owned
    // by the File returned and by nothing else.
    unsafe {
        let saved = libc::dup(1);
        if saved < 0 {
            return None;
        }
        if libc::dup2(2, 1) < 0 {
            libc::close(saved);
            return None;
        }
        Some(std::fs::File::from_raw_fd(saved))
    }
}

/// Returns false when the document could not be read (a `failed` line was emitted) or output
/// could not be written.
fn work(args: &Args, emit: &mut dyn FnMut(&Line) -> bool) -> bool {
    let loaded = catch_unwind(AssertUnwindSafe(|| Document::load(&args.path)));
    let mut doc = match loaded {
        Ok(Ok(doc)) => doc,
        Ok(Err(e)) => {
            emit(&Line::Failed {
                reason: format!("cannot parse the PDF: {e}"),
            });
            return false;
        }
        Err(panic) => {
            emit(&Line::Failed {
                reason: format!("the PDF parser panicked: {}", panic_message(panic.as_ref())),
            });
            return false;
        }
    };
    if doc.is_encrypted() {
        if !doc.was_encrypted() {
            emit(&Line::Failed {
                reason: "the PDF is encrypted and needs a password".to_string(),
            });
            return false;
        }
        // Decrypted at load with the empty password; the Encrypt entry would only confuse
        // the extractors.
        doc.trailer.remove(b"Encrypt");
    }
    let pages = doc.get_pages();
    let count = pages.len() as u32;
    if !emit(&Line::Doc {
        protocol: PROTOCOL.to_string(),
        pages: count,
    }) {
        return false;
    }
    let last = args.last.unwrap_or(count).min(count);
    let wanted: Vec<u32> = match &args.pages {
        Some(list) => list.clone(),
        None if args.first > last => Vec::new(),
        None => (args.first..=last).collect(),
    };
    if args.mode == Mode::Check {
        return check(&doc, &pages, &wanted, args, emit);
    }
    for number in wanted {
        let Some(&page_id) = pages.get(&number) else {
            continue;
        };
        let page = read_page(&doc, number, page_id, args.mode, args.min_chars);
        if !emit(&Line::Page(page)) {
            return false;
        }
    }
    emit(&Line::End {})
}

/// `--mode check`: survey, then read the pages the other extractor's counts fall short on.
fn check(
    doc: &Document,
    pages: &std::collections::BTreeMap<u32, ObjectId>,
    wanted: &[u32],
    args: &Args,
    emit: &mut dyn FnMut(&Line) -> bool,
) -> bool {
    let mut glyphs = std::collections::BTreeMap::new();
    for &number in wanted {
        let Some(&page_id) = pages.get(&number) else {
            continue;
        };
        let page = read_page(doc, number, page_id, Mode::Check, args.min_chars);
        glyphs.insert(number, page.glyphs);
        if !emit(&Line::Page(page)) {
            return false;
        }
    }
    let mut line = String::new();
    if std::io::stdin().read_line(&mut line).is_err() {
        return emit(&Line::End {});
    }
    let line = line.trim();
    let counts: Option<Vec<usize>> = match line.strip_prefix("counts ") {
        Some(list) => list.split(',').map(|n| n.parse().ok()).collect(),
        None if line == "all" => None,
        None => return emit(&Line::End {}),
    };
    for (&number, &shown) in &glyphs {
        let found = counts
            .as_ref()
            .map(|c| c.get(number as usize - 1).copied().unwrap_or(0));
        if found.is_some_and(|n| faithful(n, shown, args.min_chars)) {
            continue;
        }
        let page = read_page(doc, number, pages[&number], Mode::Full, args.min_chars);
        if !emit(&Line::Page(page)) {
            return false;
        }
    }
    emit(&Line::End {})
}

fn read_page(
    doc: &Document,
    number: u32,
    page_id: ObjectId,
    mode: Mode,
    min_chars: usize,
) -> WorkerPage {
    let mut notes = Vec::new();
    let mut text = String::new();
    let mut method = PageMethod::None;

    let shown = match catch_unwind(AssertUnwindSafe(|| survey::survey(doc, page_id))) {
        Ok(Ok(shown)) => Some(shown),
        Ok(Err(e)) => {
            notes.push(format!("the page's content cannot be surveyed: {e}"));
            None
        }
        Err(panic) => {
            notes.push(format!(
                "surveying the page panicked: {}",
                panic_message(panic.as_ref())
            ));
            None
        }
    };
    let glyphs = shown.as_ref().map(|s| s.glyphs);

    if mode == Mode::Full {
        match catch_unwind(AssertUnwindSafe(|| pdf_extract_page(doc, number))) {
            Ok(Ok(t)) => {
                text = tidy(&t);
                method = PageMethod::PdfExtract;
            }
            Ok(Err(e)) => notes.push(format!("pdf-extract failed: {e}")),
            Err(panic) => notes.push(format!(
                "pdf-extract panicked: {}",
                panic_message(panic.as_ref())
            )),
        }
    }
    let lopdf_wanted = match mode {
        Mode::Check => false,
        Mode::Lopdf => true,
        Mode::Full => !faithful(usable_chars(&text), glyphs, min_chars),
    };
    if lopdf_wanted {
        match catch_unwind(AssertUnwindSafe(|| doc.extract_text(&[number]))) {
            Ok(Ok(t)) => {
                let t = tidy(&t);
                if usable_chars(&t) > usable_chars(&text) {
                    text = t;
                    method = PageMethod::Lopdf;
                }
            }
            Ok(Err(e)) => notes.push(format!("lopdf failed: {e}")),
            Err(panic) => notes.push(format!("lopdf panicked: {}", panic_message(panic.as_ref()))),
        }
    }
    if usable_chars(&text) == 0 {
        text.clear();
        method = PageMethod::None;
    }
    let has_images = match &shown {
        Some(s) => s.images > 0,
        None => catch_unwind(AssertUnwindSafe(|| page_has_images(doc, page_id))).unwrap_or(true),
    };
    let size_pt = catch_unwind(AssertUnwindSafe(|| survey::media_box(doc, page_id)))
        .ok()
        .flatten()
        .map(|(x0, y0, x1, y1)| (x1 - x0, y1 - y0));
    WorkerPage {
        number,
        text,
        method,
        has_images,
        size_pt,
        notes,
        glyphs,
        page_image: shown.and_then(|s| s.page_image),
        extracted: mode != Mode::Check,
    }
}

fn pdf_extract_page(doc: &Document, number: u32) -> Result<String, String> {
    let mut text = String::new();
    {
        let mut output = pdf_extract::PlainTextOutput::new(&mut text);
        pdf_extract::output_doc_page(doc, &mut output, number).map_err(|e| e.to_string())?;
    }
    Ok(text)
}

/// Whether the page draws an image: an image XObject in its resources (or in those of a form
/// XObject it uses, a few levels deep), or an inline image in its content.
fn page_has_images(doc: &Document, page_id: ObjectId) -> bool {
    let mut seen = HashSet::new();
    if let Some(Object::Dictionary(resources)) = inherited(doc, page_id, b"Resources")
        && resources_have_images(doc, resources, 0, &mut seen)
    {
        return true;
    }
    doc.get_page_content(page_id)
        .map(|content| {
            content
                .windows(4)
                .any(|w| w == b"\nBI\n" || w == b" BI\n" || w == b"\nBI ")
        })
        .unwrap_or(false)
}

fn resources_have_images(
    doc: &Document,
    resources: &Dictionary,
    depth: usize,
    seen: &mut HashSet<ObjectId>,
) -> bool {
    if depth > 4 {
        return false;
    }
    let Some(Object::Dictionary(xobjects)) =
        resources.get(b"XObject").ok().and_then(|o| resolve(doc, o))
    else {
        return false;
    };
    for (_, entry) in xobjects.iter() {
        if let Object::Reference(id) = entry
            && !seen.insert(*id)
        {
            continue;
        }
        let Some(Object::Stream(stream)) = resolve(doc, entry) else {
            continue;
        };
        match stream.dict.get(b"Subtype").and_then(|s| s.as_name()) {
            Ok(b"Image") => return true,
            Ok(b"Form") => {
                if let Some(Object::Dictionary(inner)) = stream
                    .dict
                    .get(b"Resources")
                    .ok()
                    .and_then(|o| resolve(doc, o))
                    && resources_have_images(doc, inner, depth + 1, seen)
                {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let args: Vec<OsString> = [
            "--memory-limit",
            "1024",
            "--mode",
            "lopdf",
            "--first",
            "3",
            "--last",
            "3",
            "--",
            "a b.pdf",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let parsed = parse_args(&args).unwrap();
        assert_eq!(parsed.memory_limit, 1024);
        assert_eq!(parsed.mode, Mode::Lopdf);
        assert_eq!((parsed.first, parsed.last), (3, Some(3)));
        assert_eq!(parsed.path, PathBuf::from("a b.pdf"));
        assert!(parse_args(&[]).is_err());
        assert!(parse_args(&[OsString::from("--mode")]).is_err());
    }

    #[test]
    fn protocol_lines_round_trip() {
        let line = Line::Page(WorkerPage {
            number: 2,
            text: "中文\n".into(),
            method: PageMethod::PdfExtract,
            has_images: false,
            size_pt: Some((595.0, 842.0)),
            notes: vec![],
            glyphs: Some(2),
            page_image: None,
            extracted: true,
        });
        let json = serde_json::to_string(&line).unwrap();
        assert!(json.starts_with(r#"{"page":{"number":2"#), "{json}");
        assert!(
            matches!(serde_json::from_str::<Line>(&json).unwrap(), Line::Page(p) if p.number == 2)
        );
        let end = serde_json::to_string(&Line::End {}).unwrap();
        assert_eq!(end, r#"{"end":{}}"#);
    }
}
