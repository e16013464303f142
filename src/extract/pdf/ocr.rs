//! OCR of a PDF's pages: the pages still without usable text that draw images (or every page,
//! when OCR is forced), read by the configured engine a few at a time.
//!
//! A page's OCR text replaces its text layer only when it holds more; a failed page is a note,
//! never the document's failure unless no page has text at all.

use super::{Notes, Page, pages_have, pages_label};
use crate::error::{ErrorKind, JobError};
use crate::extract::{ExtractOptions, Method, tidy, usable_chars};
use crate::ocr::{EngineSettings, OcrEngine, PageShape};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What the OCR stage did.
#[derive(Default)]
pub(super) struct OcrOutcome {
    pub(super) used: Option<String>,
    /// No engine could run although pages needed one.
    pub(super) unavailable: Option<JobError>,
    pub(super) first_error: Option<JobError>,
}

pub(super) fn ocr(
    path: &Path,
    opts: &ExtractOptions,
    force: bool,
    pages: &mut BTreeMap<u32, Page>,
    notes: &mut Notes,
) -> Result<OcrOutcome, JobError> {
    let mut outcome = OcrOutcome::default();
    let wanted: Vec<(u32, PageShape)> = pages
        .iter()
        .filter(|(_, p)| {
            force || (usable_chars(&p.text) < opts.min_page_chars && p.has_images != Some(false))
        })
        .map(|(&n, p)| {
            let shape = PageShape {
                size_pt: p.size_pt,
                image: p.page_image.map(|i| (i.width, i.height)),
            };
            (n, shape)
        })
        .collect();
    if wanted.is_empty() {
        return Ok(outcome);
    }
    let numbers: Vec<u32> = wanted.iter().map(|w| w.0).collect();
    let engine = match opts.ocr_engine() {
        Ok(Some(engine)) => engine,
        Ok(None) if force => {
            return Err(JobError::new(
                ErrorKind::OcrFailed,
                msg!("OCR is off (--ocr off)"),
            ));
        }
        Ok(None) => {
            notes.doc(msg!("{} no usable text; OCR is off", pages_have(&numbers)));
            return Ok(outcome);
        }
        Err(e) if force => return Err(e),
        Err(e) => {
            notes.doc(msg!(
                "{} no usable text and cannot be OCR'd: {}",
                pages_have(&numbers),
                e.message
            ));
            outcome.unavailable = Some(e);
            return Ok(outcome);
        }
    };
    notes.0.extend(engine.note());
    let results = ocr_pages(engine.as_ref(), path, &wanted, opts);
    let mut read = Vec::new();
    let mut failures = Vec::new();
    for (n, result) in results {
        match result {
            Ok((text, made)) => {
                let Some(page) = pages.get_mut(&n) else {
                    continue;
                };
                let ocr = format!(
                    "OCR ({}) of {made} found {} characters",
                    engine.name(),
                    usable_chars(&text)
                );
                page.why = if page.why.is_empty() {
                    ocr
                } else {
                    format!("{}; {ocr}", page.why)
                };
                if force || usable_chars(&text) > usable_chars(&page.text) {
                    page.text = text;
                    page.method = Method::Ocr;
                    read.push(n);
                }
            }
            Err(e) if e.kind == ErrorKind::Cancelled => return Err(e),
            Err(e) => {
                failures.push((n, format!("OCR failed: {}", e.message)));
                outcome.first_error.get_or_insert(e);
            }
        }
    }
    if !read.is_empty() {
        notes.doc(format!("{}: OCR ({})", pages_label(&read), engine.name()));
        outcome.used = Some(engine.name().to_string());
    }
    notes.pages(failures);
    Ok(outcome)
}

/// A page's OCR text and how its picture was made.
type PageOcr = (String, String);

/// OCR `wanted` pages, `opts.ocr_parallelism` at a time, in page order.
fn ocr_pages(
    engine: &dyn OcrEngine,
    path: &Path,
    wanted: &[(u32, PageShape)],
    opts: &ExtractOptions,
) -> Vec<(u32, Result<PageOcr, JobError>)> {
    let settings = EngineSettings {
        timeout: opts.ocr_timeout,
        max_output_bytes: opts.max_output_bytes,
        cancel: opts.cancel.clone(),
    };
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(wanted.len()));
    let threads = opts.ocr_parallelism.min(wanted.len()).max(1);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while let Some(&(page, shape)) = wanted.get(next.fetch_add(1, Ordering::SeqCst)) {
                    let result = if opts.cancelled() {
                        Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled")))
                    } else {
                        engine
                            .pdf_page(path, page, shape, &settings)
                            .map(|(t, made)| (tidy(&t), made))
                    };
                    // A poisoned lock only means another OCR thread panicked; its data is fine.
                    results
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((page, result));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|(page, _)| *page);
    results
}
