//! `pdftotext` (poppler), run as a program: every page's text, a large document read by several
//! processes at once.
//!
//! Its own file because it is the one reader outside the worker: a separate program under the
//! same wall clock, output limit and cancellation as every subprocess (`crate::subprocess`).

use crate::error::{ErrorKind, JobError};
use crate::extract::{ExtractOptions, tidy};
use crate::subprocess::{self as process, End};
use std::path::Path;

/// Every page's text according to `pdftotext` (no `-layout`), split on its form feeds: of a
/// large document, read by as many processes as the document has cores (`ocr_parallelism`,
/// the run's cores shared among the documents in flight), a range of pages each.
pub(super) fn pdftotext(
    program: &Path,
    path: &Path,
    opts: &ExtractOptions,
) -> Result<Vec<String>, JobError> {
    let parts = opts.ocr_parallelism.clamp(1, 4);
    let large = std::fs::metadata(path).is_ok_and(|m| m.len() >= SPLIT_BYTES);
    if parts > 1
        && large
        && let Some(count) = page_count(path, opts)
        && count >= 2 * parts as u32
        && let Some(pages) = pdftotext_in_parts(program, path, opts, count, parts)?
    {
        return Ok(pages);
    }
    pdftotext_range(program, path, opts, None)
}

/// A PDF this large is read by several pdftotext processes at once, a range of pages each,
/// when the document has the cores to itself.
const SPLIT_BYTES: u64 = 256 << 10;

/// The page count `pdfinfo` reports.
fn page_count(path: &Path, opts: &ExtractOptions) -> Option<u32> {
    let pdfinfo = process::find_program("pdfinfo")?;
    let mut cmd = process::command(&pdfinfo, std::iter::empty::<&str>());
    cmd.arg(path);
    let done = process::run(cmd, opts.pdf_timeout, 1 << 20, opts.cancel.as_ref()).ok()?;
    let out = String::from_utf8_lossy(&done.stdout);
    out.lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .and_then(|n| n.trim().parse().ok())
}

/// `parts` pdftotext processes side by side, a range of pages each; `None` when a part did not
/// give the pages it was asked for (then one process reads the whole document).
fn pdftotext_in_parts(
    program: &Path,
    path: &Path,
    opts: &ExtractOptions,
    count: u32,
    parts: usize,
) -> Result<Option<Vec<String>>, JobError> {
    let per = count.div_ceil(parts as u32);
    let ranges: Vec<(u32, u32)> = (0..parts as u32)
        .map(|i| (i * per + 1, ((i + 1) * per).min(count)))
        .filter(|(first, last)| first <= last)
        .collect();
    let results: Vec<Result<Vec<String>, JobError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ranges
            .iter()
            .map(|&range| scope.spawn(move || pdftotext_range(program, path, opts, Some(range))))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(JobError::new(
                        ErrorKind::ExtractFailed,
                        msg!("pdftotext: a reader panicked"),
                    ))
                })
            })
            .collect()
    });
    let mut pages = Vec::with_capacity(count as usize);
    for ((first, last), result) in ranges.into_iter().zip(results) {
        match result {
            Ok(part) if part.len() == (last - first + 1) as usize => pages.extend(part),
            Err(e) if e.kind == ErrorKind::Cancelled => return Err(e),
            _ => return Ok(None),
        }
    }
    Ok(Some(pages))
}

/// pdftotext's pages, of the whole document or of `range` (first, last).
fn pdftotext_range(
    program: &Path,
    path: &Path,
    opts: &ExtractOptions,
    range: Option<(u32, u32)>,
) -> Result<Vec<String>, JobError> {
    let failed = |m: String| JobError::new(ErrorKind::ExtractFailed, m);
    let mut cmd = process::command(program, ["-enc", "UTF-8"]);
    if let Some((first, last)) = range {
        cmd.arg("-f")
            .arg(first.to_string())
            .arg("-l")
            .arg(last.to_string());
    }
    cmd.arg(path).arg("-");
    let done = process::run(
        cmd,
        opts.pdf_timeout,
        opts.max_output_bytes,
        opts.cancel.as_ref(),
    )
    .map_err(|e| failed(msg!("cannot run: {e}")))?;
    match done.end {
        End::Cancelled => return Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled"))),
        End::TimedOut => {
            return Err(failed(msg!("timed out after {:?}", opts.pdf_timeout)));
        }
        End::OutputTooLarge => {
            return Err(failed(msg!(
                "printed more than {} MiB",
                opts.max_output_bytes >> 20
            )));
        }
        End::Exited => {}
    }
    if !done.status.success() && done.stdout.is_empty() {
        let tail = done.stderr_tail();
        return Err(failed(match done.status.code() {
            Some(1) if tail.is_empty() => msg!("cannot open the document"),
            Some(3) => msg!("the document forbids copying its text"),
            _ if tail.is_empty() => msg!("failed ({})", done.status),
            _ => msg!("failed ({}): {tail}", done.status),
        }));
    }
    let text = String::from_utf8_lossy(&done.stdout);
    let mut pages: Vec<String> = text.split('\u{0C}').map(tidy).collect();
    // pdftotext ends every page with a form feed; the piece after the last one is empty.
    if text.ends_with('\u{0C}') {
        pages.pop();
    }
    Ok(pages)
}
