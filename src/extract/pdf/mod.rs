//! PDF text, the parent side: every page's text is checked against what the page draws.
//!
//! Where `pdftotext` is installed it leads: it reads the document (a large one in several
//! processes, a range of pages each) while the worker (`worker.rs`, in a process of its own
//! under a wall clock and a memory limit) surveys every page: the glyphs its text operators
//! draw, its images (`survey.rs`). The worker is then handed pdftotext's count for each
//! page and reads with pdf-extract and lopdf the pages pdftotext fell short on; another reading
//! wins a page only when it holds pdftotext's text and clearly more. Without pdftotext the
//! worker reads every page itself, lopdf after pdf-extract where pdf-extract falls short. Pages
//! still without usable text that draw images go to OCR; a page whose best text holds less
//! than half of what it draws is a warning. A worker that dies on page k is restarted after
//! page k, a bounded number of times, so one hostile page costs that page, not the document.
//! Every detour is written into [`Extracted::fallbacks`], every page's reason into its `why`.
//!
//! The folder: this file drives the worker and assembles the pages; `pdftotext.rs` runs
//! poppler's reader, `arbitration.rs` decides which reading of a page wins, `ocr.rs` reads the
//! pages left without text.

mod arbitration;
mod ocr;
mod pdftotext;
mod survey;
mod worker;

use super::{DocKind, ExtractOptions, Extracted, Method, assemble, page_ranges, usable_chars};
use crate::error::{ErrorKind, JobError};
use crate::subprocess::{self as process, End, Finished};
use arbitration::read_led_by_pdftotext;
use ocr::ocr;
use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use survey::PageImage;
pub use worker::pdf_worker_main;
use worker::{Line, Mode, PROTOCOL, PageMethod, WorkerPage};

/// Worker restarts after crashes, per document.
const MAX_RESTARTS: usize = 3;

/// A page as the parent knows it.
#[derive(Debug)]
struct Page {
    text: String,
    method: Method,
    /// `None` when the worker never saw the page.
    has_images: Option<bool>,
    size_pt: Option<(f64, f64)>,
    /// Glyphs the page draws, when the worker could survey it.
    glyphs: Option<u32>,
    /// The one image the page consists of, when it is a scan.
    page_image: Option<PageImage>,
    /// Why this text was chosen.
    why: String,
}

impl Page {
    fn empty() -> Page {
        Page {
            text: String::new(),
            method: Method::Empty,
            has_images: None,
            size_pt: None,
            glyphs: None,
            page_image: None,
            why: String::new(),
        }
    }

    fn from_worker(p: WorkerPage) -> Page {
        let method = match p.method {
            PageMethod::PdfExtract => Method::PdfExtract,
            PageMethod::Lopdf => Method::Lopdf,
            PageMethod::None => Method::Empty,
        };
        let why = match method {
            Method::Empty => String::new(),
            _ => found(method, &p.text, p.glyphs),
        };
        Page {
            method,
            text: p.text,
            has_images: Some(p.has_images),
            size_pt: p.size_pt,
            glyphs: p.glyphs,
            page_image: p.page_image,
            why,
        }
    }
}

/// `pdftotext found 1,530 characters of 1,534 glyphs`.
fn found(method: Method, text: &str, glyphs: Option<u32>) -> String {
    let chars = usable_chars(text);
    match glyphs {
        Some(g) => msg!(
            "{} found {chars} characters of {g} glyphs",
            method_name(method)
        ),
        None => msg!("{} found {chars} characters", method_name(method)),
    }
}

/// An extractor's name, or the words for the text layer and for no extractor (translated
/// where the message they are a part of is printed).
fn method_name(method: Method) -> String {
    match method {
        Method::PdfExtract => "pdf-extract".to_string(),
        Method::Lopdf => "lopdf".to_string(),
        Method::Pdftotext => "pdftotext".to_string(),
        Method::Ocr => "OCR".to_string(),
        Method::Text | Method::Office => msg!("the text layer"),
        Method::Empty => msg!("nothing"),
    }
}

/// What the worker runs established about the text layer.
#[derive(Debug, Default)]
struct Layer {
    count: Option<u32>,
    pages: BTreeMap<u32, Page>,
    /// Why the document could not be read by the worker at all.
    unreadable: Option<String>,
}

/// A page where the best extractor found less than this share of the glyphs it draws is
/// reported in the job's record as text lost.
const LOST: f64 = 0.5;

pub(super) fn extract(
    path: &Path,
    opts: &ExtractOptions,
    force_ocr: bool,
) -> Result<Extracted, JobError> {
    let mut notes = Notes::default();
    let poppler = opts
        .pdftotext
        .then(|| process::find_program("pdftotext"))
        .flatten();
    let (count, mut pages) = match poppler {
        Some(program) if !force_ocr => read_led_by_pdftotext(path, opts, &program, &mut notes)?,
        _ => read_by_worker(path, opts, &mut notes)?,
    };
    for n in 1..=count {
        pages.entry(n).or_insert_with(Page::empty);
    }

    let ocr_engine = ocr(path, opts, force_ocr, &mut pages, &mut notes)?;
    let warnings = lost_text(&pages);

    let total: usize = pages.values().map(|p| usable_chars(&p.text)).sum();
    if total == 0 {
        if let Some(err) = ocr_engine.unavailable {
            return Err(err);
        }
        if let Some(err) = ocr_engine.first_error {
            return Err(err);
        }
        let mut message = msg!(
            "no text found in {count} page{}",
            if count == 1 { "" } else { "s" }
        );
        if !notes.0.is_empty() {
            message.push_str(&format!(" ({})", notes.summary(600)));
        }
        return Err(JobError::new(ErrorKind::ExtractFailed, message));
    }
    let mut evidence = Vec::with_capacity(pages.len());
    let (text, mut page_texts) = assemble(
        pages
            .into_iter()
            .map(|(n, p)| {
                let method = if p.text.is_empty() {
                    Method::Empty
                } else {
                    p.method
                };
                evidence.push((p.glyphs, p.why));
                (n, method, p.text)
            })
            .collect(),
    );
    for (page, (glyphs, why)) in page_texts.iter_mut().zip(evidence) {
        page.glyphs = glyphs;
        page.why = why;
    }
    Ok(Extracted {
        text,
        kind: DocKind::Pdf,
        pages: page_texts,
        encoding: None,
        ocr_engine: ocr_engine.used,
        fallbacks: notes.0,
        warnings,
    })
}

/// The text layer alone, as [`extract`] reads it but with no OCR: the number of pages, their
/// text, and how many pages hold no usable text (what OCR would read in a run). For
/// `zhi plan`'s estimate: a page count and a text layer are a cheap read; OCR is not.
pub(super) fn text_layer(path: &Path, opts: &ExtractOptions) -> Result<super::TextLayer, JobError> {
    let mut notes = Notes::default();
    let poppler = opts
        .pdftotext
        .then(|| process::find_program("pdftotext"))
        .flatten();
    let (count, pages) = match poppler {
        Some(program) => read_led_by_pdftotext(path, opts, &program, &mut notes)?,
        None => read_by_worker(path, opts, &mut notes)?,
    };
    let with_text = pages
        .values()
        .filter(|p| usable_chars(&p.text) >= opts.min_page_chars)
        .count() as u32;
    let text = pages
        .into_values()
        .map(|p| p.text)
        .collect::<Vec<_>>()
        .join("\n\n");
    Ok(super::TextLayer {
        text,
        pages: count,
        pages_without_text: count.saturating_sub(with_text),
    })
}

/// The worker reads every page: pdf-extract, then lopdf where pdf-extract found less than the
/// page draws.
fn read_by_worker(
    path: &Path,
    opts: &ExtractOptions,
    notes: &mut Notes,
) -> Result<(u32, BTreeMap<u32, Page>), JobError> {
    let layer = read_text_layer(path, opts, Mode::Full, None, notes)?;
    match layer.count {
        Some(count) if layer.unreadable.is_none() => Ok((count, layer.pages)),
        _ => Err(unreadable(&layer, None)),
    }
}

fn unreadable(layer: &Layer, pdftotext_failure: Option<&str>) -> JobError {
    let mut reasons: Vec<String> = layer.unreadable.iter().cloned().collect();
    reasons.extend(pdftotext_failure.map(|f| msg!("pdftotext: {f}")));
    if reasons.is_empty() {
        reasons.push(msg!("the PDF worker read no page"));
    }
    JobError::new(
        ErrorKind::ExtractFailed,
        msg!("cannot read the PDF: {}", reasons.join("; ")),
    )
}

/// Pages whose best text holds less than half the glyphs they draw, as one warning.
fn lost_text(pages: &BTreeMap<u32, Page>) -> Vec<String> {
    let lost: Vec<(u32, usize, u32)> = pages
        .iter()
        .filter_map(|(&n, p)| {
            let glyphs = p.glyphs?;
            let chars = usable_chars(&p.text);
            (glyphs >= 50 && (chars as f64) < LOST * f64::from(glyphs))
                .then_some((n, chars, glyphs))
        })
        .collect();
    let Some(&(n, chars, glyphs)) = lost
        .iter()
        .max_by_key(|(_, chars, glyphs)| glyphs.saturating_sub(*chars as u32))
    else {
        return Vec::new();
    };
    let numbers: Vec<u32> = lost.iter().map(|l| l.0).collect();
    vec![msg!(
        "{}: every extractor found less than half of the text the page draws \
         (page {n}: {chars} characters of {glyphs} glyphs); the model is not given all of it",
        pages_label(&numbers)
    )]
}

/// Fallback notes in order, with repeated per-page notes merged into one line.
#[derive(Debug, Default)]
struct Notes(Vec<String>);

impl Notes {
    fn doc(&mut self, note: String) {
        self.0.push(note);
    }

    /// Per-page notes: the same note on several pages becomes one line listing them.
    fn pages(&mut self, per_page: Vec<(u32, String)>) {
        let mut grouped: Vec<(String, Vec<u32>)> = Vec::new();
        for (page, note) in per_page {
            match grouped.iter_mut().find(|(n, _)| *n == note) {
                Some((_, pages)) => pages.push(page),
                None => grouped.push((note, vec![page])),
            }
        }
        for (note, pages) in grouped {
            self.0.push(format!("{}: {note}", pages_label(&pages)));
        }
    }

    fn summary(&self, max_chars: usize) -> String {
        let all = self.0.join("; ");
        match all.char_indices().nth(max_chars) {
            Some((cut, _)) => format!("{}…", &all[..cut]),
            None => all,
        }
    }
}

fn pages_label(pages: &[u32]) -> String {
    if pages.len() == 1 {
        msg!("page {}", pages[0])
    } else {
        msg!("pages {}", page_ranges(pages))
    }
}

/// `page 3 has` / `pages 1–3 have`.
fn pages_have(pages: &[u32]) -> String {
    if pages.len() == 1 {
        msg!("page {} has", pages[0])
    } else {
        msg!("pages {} have", page_ranges(pages))
    }
}

/// Run the worker over the whole document (or over `only`), restarting it after pages that
/// kill it.
fn read_text_layer(
    path: &Path,
    opts: &ExtractOptions,
    mode: Mode,
    only: Option<&[u32]>,
    notes: &mut Notes,
) -> Result<Layer, JobError> {
    let mut layer = Layer::default();
    let mut per_page = Vec::new();
    let mut first = 1;
    let mut restarts = 0;
    loop {
        let pages: Option<Vec<u32>> =
            only.map(|o| o.iter().copied().filter(|&n| n >= first).collect());
        if pages.as_ref().is_some_and(Vec::is_empty) {
            break;
        }
        let run = run_worker(path, opts, mode, first, None, pages.as_deref(), None)?;
        if run.count.is_some() {
            layer.count = run.count;
        }
        let received = run.pages.last().map(|p| p.number);
        for page in run.pages {
            per_page.extend(page.notes.iter().map(|n| (page.number, n.clone())));
            layer.pages.insert(page.number, Page::from_worker(page));
        }
        let (reason, retry) = match run.end {
            WorkerEnd::Ended => break,
            WorkerEnd::Unreadable(reason) => {
                layer.unreadable = Some(reason);
                break;
            }
            WorkerEnd::Died { reason, retry } => (reason, retry),
        };
        let Some(count) = layer.count else {
            layer.unreadable = Some(msg!("the PDF worker {reason} while loading it"));
            break;
        };
        // The worker died on the page after the last one it finished.
        let bad = match only {
            Some(list) => match list
                .iter()
                .copied()
                .find(|&n| n >= first && received.is_none_or(|r| n > r))
            {
                Some(n) => n,
                None => break,
            },
            None => received.map_or(first, |r| r + 1),
        };
        if bad > count {
            break;
        }
        if !retry {
            notes.doc(msg!(
                "pdf-extract worker {reason} at page {bad}; pages {bad}–{count} left to the next extractor"
            ));
            break;
        }
        per_page.push((bad, msg!("pdf-extract worker {reason}")));
        let alone = run_worker(path, opts, Mode::Lopdf, bad, Some(bad), None, None)?;
        match (alone.pages.into_iter().next(), alone.end) {
            (Some(page), _) => {
                per_page.extend(page.notes.iter().map(|n| (bad, n.clone())));
                layer.pages.insert(bad, Page::from_worker(page));
            }
            (None, WorkerEnd::Died { reason, .. } | WorkerEnd::Unreadable(reason)) => {
                per_page.push((bad, msg!("lopdf worker {reason}")));
            }
            (None, WorkerEnd::Ended) => {}
        }
        first = bad + 1;
        restarts += 1;
        if first > count {
            break;
        }
        if restarts >= MAX_RESTARTS {
            notes.doc(msg!(
                "the PDF worker crashed {restarts} times; pages {first}–{count} left to the next extractor"
            ));
            break;
        }
    }
    notes.pages(per_page);
    let lopdf: Vec<u32> = layer
        .pages
        .iter()
        .filter(|(_, p)| p.method == Method::Lopdf)
        .map(|(&n, _)| n)
        .collect();
    if !lopdf.is_empty() {
        notes.doc(msg!(
            "{}: text from lopdf (pdf-extract failed or found too little)",
            pages_label(&lopdf)
        ));
    }
    Ok(layer)
}

#[derive(Debug)]
enum WorkerEnd {
    /// The worker read every page it was asked for.
    Ended,
    /// The worker reported that the document cannot be read (parse error, password).
    Unreadable(String),
    /// The worker died or misbehaved; `retry` is false when restarting is pointless (time).
    Died { reason: String, retry: bool },
}

#[derive(Debug)]
struct WorkerRun {
    count: Option<u32>,
    pages: Vec<WorkerPage>,
    end: WorkerEnd,
}

fn run_worker(
    path: &Path,
    opts: &ExtractOptions,
    mode: Mode,
    first: u32,
    last: Option<u32>,
    only: Option<&[u32]>,
    feed: Option<process::Feed>,
) -> Result<WorkerRun, JobError> {
    let mut cmd = process::command(&opts.worker_exe, ["__pdf-worker"]);
    // The allocator (mimalloc) reserves address space a gigabyte at a time by default, more
    // than the worker's address-space limit leaves room for: small reservations, so that the
    // limit bounds what the PDF costs, not how the allocator plans ahead.
    cmd.env("MIMALLOC_ARENA_RESERVE", "16MiB");
    cmd.arg("--memory-limit")
        .arg(opts.pdf_memory_limit_bytes.to_string())
        .arg("--mode")
        .arg(mode.as_str())
        .arg("--first")
        .arg(first.to_string())
        .arg("--min-chars")
        .arg(opts.min_page_chars.to_string());
    if let Some(last) = last {
        cmd.arg("--last").arg(last.to_string());
    }
    if let Some(only) = only {
        let list: Vec<String> = only.iter().map(u32::to_string).collect();
        cmd.arg("--pages").arg(list.join(","));
    }
    cmd.arg("--").arg(path);
    let done = match process::run_fed(
        cmd,
        feed,
        opts.pdf_timeout,
        opts.max_output_bytes,
        opts.cancel.as_ref(),
    ) {
        Ok(done) => done,
        Err(e) => {
            return Ok(WorkerRun {
                count: None,
                pages: Vec::new(),
                end: WorkerEnd::Died {
                    reason: msg!("could not be started ({}: {e})", opts.worker_exe.display()),
                    retry: false,
                },
            });
        }
    };
    if done.end == End::Cancelled {
        return Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled")));
    }
    Ok(parse_run(&done, opts))
}

fn parse_run(done: &Finished, opts: &ExtractOptions) -> WorkerRun {
    let mut run = WorkerRun {
        count: None,
        pages: Vec::new(),
        end: WorkerEnd::Died {
            reason: String::new(),
            retry: true,
        },
    };
    let mut ended = false;
    let mut garbage = None;
    let text = String::from_utf8_lossy(&done.stdout);
    // A line without its newline was cut off by the worker's death.
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i],
        None => "",
    };
    for line in complete.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Line>(line) {
            Ok(Line::Doc { protocol, pages }) if protocol == PROTOCOL => run.count = Some(pages),
            Ok(Line::Doc { protocol, .. }) => {
                garbage = Some(msg!("speaks {protocol:?}, not {PROTOCOL}"));
                break;
            }
            Ok(Line::Page(page)) => run.pages.push(page),
            Ok(Line::End {}) => ended = true,
            Ok(Line::Failed { reason }) => {
                run.end = WorkerEnd::Unreadable(reason);
                return run;
            }
            Err(_) => {
                garbage = Some(msg!(
                    "printed something that is not the worker protocol (is {} a zhi binary?)",
                    opts.worker_exe.display()
                ));
                break;
            }
        }
    }
    run.end = if let Some(reason) = garbage {
        run.pages.clear();
        run.count = None;
        WorkerEnd::Died {
            reason,
            retry: false,
        }
    } else if ended && done.end == End::Exited {
        WorkerEnd::Ended
    } else {
        WorkerEnd::Died {
            reason: death_reason(done, opts),
            retry: done.end != End::TimedOut,
        }
    };
    run
}

/// Why a worker died, in words a person can act on.
fn death_reason(done: &Finished, opts: &ExtractOptions) -> String {
    let stderr = String::from_utf8_lossy(&done.stderr);
    let limit = opts.pdf_memory_limit_bytes >> 20;
    match done.end {
        End::TimedOut => return msg!("timed out after {:?}", opts.pdf_timeout),
        End::OutputTooLarge => {
            return msg!("printed more than {} MiB", opts.max_output_bytes >> 20);
        }
        End::Cancelled => return msg!("was cancelled"),
        End::Exited => {}
    }
    if stderr.contains("has overflowed its stack") {
        return msg!("overflowed its stack (endless recursion in the document)");
    }
    if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        return msg!("ran out of memory (limit {limit} MiB)");
    }
    let tail = done.stderr_tail();
    if let Some(signal) = done.status.signal() {
        let name = match signal {
            libc::SIGSEGV => "SIGSEGV".to_string(),
            libc::SIGABRT => "SIGABRT".to_string(),
            libc::SIGBUS => "SIGBUS".to_string(),
            libc::SIGKILL => msg!("SIGKILL, perhaps the system ran out of memory"),
            libc::SIGILL => "SIGILL".to_string(),
            libc::SIGFPE => "SIGFPE".to_string(),
            _ => msg!("a signal"),
        };
        return if tail.is_empty() {
            msg!("crashed ({name}, signal {signal})")
        } else {
            msg!("crashed ({name}, signal {signal}): {tail}")
        };
    }
    match done.status.code() {
        Some(101) => msg!("panicked: {tail}"),
        Some(0) => msg!("ended without finishing its output"),
        Some(code) if tail.is_empty() => msg!("exited with code {code}"),
        Some(code) => msg!("exited with code {code}: {tail}"),
        None => msg!("ended abnormally: {tail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(script: &str) -> Finished {
        let cmd = process::command(Path::new("/bin/sh"), ["-c", script]);
        process::run(cmd, std::time::Duration::from_secs(10), 1 << 20, None).unwrap()
    }

    #[test]
    fn deaths_are_named() {
        let opts = ExtractOptions {
            pdf_memory_limit_bytes: 512 << 20,
            ..ExtractOptions::default()
        };
        let run = |script| death_reason(&finished(script), &opts);
        assert_eq!(
            run("echo \"thread 'x' has overflowed its stack\" >&2; kill -ABRT $$"),
            "overflowed its stack (endless recursion in the document)"
        );
        assert_eq!(
            run("echo 'memory allocation of 1073741824 bytes failed' >&2; kill -ABRT $$"),
            "ran out of memory (limit 512 MiB)"
        );
        assert_eq!(run("kill -SEGV $$"), "crashed (SIGSEGV, signal 11)");
        assert_eq!(
            run("echo 'zhi pdf worker: panicked at x.rs:1:1: boom' >&2; exit 101"),
            "panicked: zhi pdf worker: panicked at x.rs:1:1: boom"
        );
    }

    #[test]
    fn protocol_output_is_parsed_up_to_a_cut_line() {
        let opts = ExtractOptions::default();
        let done = finished(
            r#"printf '%s\n' '{"doc":{"protocol":"zhi-pdf-worker/2","pages":3}}' \
               '{"page":{"number":1,"text":"one","method":"pdf_extract","has_images":false,"size_pt":null,"notes":[]}}'
               printf '{"page":{"numb'; kill -SEGV $$"#,
        );
        let run = parse_run(&done, &opts);
        assert_eq!(run.count, Some(3));
        assert_eq!(run.pages.len(), 1);
        assert!(
            matches!(run.end, WorkerEnd::Died { ref reason, retry: true } if reason.contains("SIGSEGV"))
        );
    }

    #[test]
    fn a_wrong_worker_binary_is_named() {
        let opts = ExtractOptions::default();
        let done = finished("echo 'running 3 tests'");
        let run = parse_run(&done, &opts);
        assert!(
            matches!(run.end, WorkerEnd::Died { ref reason, retry: false } if reason.contains("not the worker protocol"))
        );
    }

    #[test]
    fn repeated_page_notes_are_merged() {
        let mut notes = Notes::default();
        notes.pages(vec![
            (1, "lopdf failed: x".into()),
            (2, "lopdf failed: x".into()),
            (3, "lopdf failed: x".into()),
            (5, "other".into()),
        ]);
        assert_eq!(notes.0, vec!["pages 1–3: lopdf failed: x", "page 5: other"]);
    }
}
