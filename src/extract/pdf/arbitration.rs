//! Which reading of a page wins: pdftotext leads, the worker checks each page against what it
//! draws and reads again the pages pdftotext fell short on; another reading replaces
//! pdftotext's only when it holds pdftotext's text and clearly more.
//!
//! Kept apart from the worker's plumbing (`mod.rs`) so the rule that decides a page's text is
//! read in one place. It must never drop text pdftotext found for a reading that merely
//! differs.

use super::pdftotext::pdftotext;
use super::worker::{Mode, faithful};
use super::{
    LOST, Layer, Notes, Page, WorkerEnd, WorkerRun, found, pages_label, read_by_worker,
    read_text_layer, run_worker, unreadable,
};
use crate::error::{ErrorKind, JobError};
use crate::extract::{ExtractOptions, Method, usable_chars};
use crate::subprocess as process;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// pdftotext reads every page while the worker surveys what each page draws; the worker is
/// then handed pdftotext's count for each page and reads again, with pdf-extract and lopdf, the
/// pages where pdftotext found less than the page draws; the fullest text of each page wins.
/// Without a usable pdftotext answer, the worker reads everything.
pub(super) fn read_led_by_pdftotext(
    path: &Path,
    opts: &ExtractOptions,
    program: &Path,
    notes: &mut Notes,
) -> Result<(u32, BTreeMap<u32, Page>), JobError> {
    let reference = Arc::new(Reference::default());
    let reading = {
        let (reference, program, path, opts) = (
            Arc::clone(&reference),
            program.to_path_buf(),
            path.to_path_buf(),
            opts.clone(),
        );
        std::thread::spawn(move || reference.set(pdftotext(&program, &path, &opts)))
    };
    let feed: process::Feed = {
        let reference = Arc::clone(&reference);
        Box::new(move |stdin| {
            let _ = writeln!(stdin, "{}", reference.counts_line());
        })
    };
    let checked = run_worker(path, opts, Mode::Check, 1, None, None, Some(feed));
    let reference = reference.take();
    let _ = reading.join();
    let checked = checked?;

    let (survey, mut second, ended) = sort_checked(checked, notes);

    let reference = match reference {
        Ok(pages) => pages,
        Err(e) if e.kind == ErrorKind::Cancelled => return Err(e),
        Err(e) => {
            notes.doc(msg!("pdftotext: {}", e.message));
            if survey.unreadable.is_some() {
                return Err(unreadable(&survey, Some(&e.message)));
            }
            if !ended || survey.count.is_none() {
                return read_by_worker(path, opts, notes);
            }
            // The worker was told to read every page.
            let mut pages = survey.pages;
            pages.append(&mut second);
            return Ok((survey.count.unwrap_or(0), pages));
        }
    };
    if let Some(why) = &survey.unreadable {
        notes.doc(msg!(
            "pdf-extract and lopdf cannot read the document ({why}); its text is pdftotext's, unchecked"
        ));
    }
    let count = survey
        .count
        .unwrap_or(0)
        .max(u32::try_from(reference.len()).unwrap_or(u32::MAX));
    let mut pages = survey.pages;
    for (i, text) in reference.into_iter().enumerate() {
        let n = i as u32 + 1;
        let page = pages.entry(n).or_insert_with(Page::empty);
        page.why = found(Method::Pdftotext, &text, page.glyphs);
        page.method = Method::Pdftotext;
        page.text = text;
    }
    if !ended && survey.unreadable.is_none() {
        // The worker died before it had checked every page: read the rest the slow way.
        let short: Vec<u32> = (1..=count)
            .filter(|n| !second.contains_key(n))
            .filter(|n| {
                pages
                    .get(n)
                    .is_none_or(|p| !faithful(usable_chars(&p.text), p.glyphs, opts.min_page_chars))
            })
            .collect();
        if !short.is_empty() {
            let again = read_text_layer(path, opts, Mode::Full, Some(&short), notes)?;
            second.extend(again.pages);
        }
    }
    take_fuller(&mut pages, second, notes);
    Ok((count, pages))
}

/// The worker's check, sorted: the pages it surveyed (their glyph counts), the pages it read
/// again because pdftotext fell short on them, and whether it ended (had checked every page).
fn sort_checked(checked: WorkerRun, notes: &mut Notes) -> (Layer, BTreeMap<u32, Page>, bool) {
    let mut survey = Layer {
        count: checked.count,
        ..Layer::default()
    };
    let mut second: BTreeMap<u32, Page> = BTreeMap::new();
    let mut per_page = Vec::new();
    for page in checked.pages {
        per_page.extend(page.notes.iter().map(|n| (page.number, n.clone())));
        let (n, extracted) = (page.number, page.extracted);
        let page = Page::from_worker(page);
        if extracted {
            second.insert(n, page);
        } else {
            survey.pages.insert(n, page);
        }
    }
    per_page.dedup();
    notes.pages(per_page);
    let ended = match checked.end {
        WorkerEnd::Ended => true,
        WorkerEnd::Unreadable(reason) => {
            survey.unreadable = Some(reason);
            false
        }
        WorkerEnd::Died { reason, .. } => {
            notes.doc(msg!("the PDF worker {reason} checking the pages"));
            false
        }
    };
    (survey, second, ended)
}

/// Each page read again replaces pdftotext's text when it is more faithful; the pages where it
/// did are noted.
fn take_fuller(pages: &mut BTreeMap<u32, Page>, second: BTreeMap<u32, Page>, notes: &mut Notes) {
    let mut better = Vec::new();
    for (n, other) in second {
        let page = pages.entry(n).or_insert_with(Page::empty);
        if page.glyphs.is_none() {
            page.glyphs = other.glyphs;
        }
        if more_faithful(&other.text, &page.text, page.glyphs) {
            page.why = format!("{}; {}", page.why, other.why);
            page.text = other.text;
            page.method = other.method;
            better.push(n);
        } else if !other.why.is_empty() {
            page.why = format!("{}; {}", page.why, other.why);
        }
    }
    if !better.is_empty() {
        notes.doc(msg!(
            "{}: pdftotext found less than the page draws; pdf-extract or lopdf found more",
            pages_label(&better)
        ));
    }
}

/// Whether `other` (pdf-extract's or lopdf's page) is a more faithful text than pdftotext's
/// `leader`: it holds what pdftotext found and clearly more, or pdftotext lost most of the
/// page and `other` has at least twice as much. A few characters more is no reason to trade
/// pdftotext's reading for one that splits accents or runs words together.
fn more_faithful(other: &str, leader: &str, glyphs: Option<u32>) -> bool {
    let (have, offered) = (usable_chars(leader), usable_chars(other));
    let clearly_more = offered >= have + 16 && offered * 20 >= have * 21;
    if !clearly_more {
        return false;
    }
    let lost_most = glyphs.is_some_and(|g| (have as f64) < LOST * f64::from(g));
    (lost_most && offered >= 2 * have) || holds(other, leader) >= 0.97
}

/// The share of `inner`'s usable characters (as a multiset) that `outer` has too.
fn holds(outer: &str, inner: &str) -> f64 {
    let mut counts: HashMap<char, i64> = HashMap::new();
    let usable = |c: &char| usable_chars(c.encode_utf8(&mut [0; 4])) == 1;
    for c in outer.chars().filter(usable) {
        *counts.entry(c).or_default() += 1;
    }
    let (mut total, mut held) = (0usize, 0usize);
    for c in inner.chars().filter(usable) {
        total += 1;
        if let Some(n) = counts.get_mut(&c)
            && *n > 0
        {
            *n -= 1;
            held += 1;
        }
    }
    if total == 0 {
        1.0
    } else {
        held as f64 / total as f64
    }
}

/// pdftotext's pages, handed from the thread that runs it to whoever waits for them.
#[derive(Default)]
struct Reference {
    result: Mutex<Option<Result<Vec<String>, JobError>>>,
    ready: Condvar,
}

impl Reference {
    fn set(&self, result: Result<Vec<String>, JobError>) {
        *self.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
        self.ready.notify_all();
    }

    fn wait(&self) -> MutexGuard<'_, Option<Result<Vec<String>, JobError>>> {
        let mut guard = self.result.lock().unwrap_or_else(|p| p.into_inner());
        while guard.is_none() {
            guard = self.ready.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
        guard
    }

    /// What the checking worker is told: each page's usable characters, or `all` when
    /// pdftotext found nothing.
    fn counts_line(&self) -> String {
        match &*self.wait() {
            Some(Ok(pages)) => {
                let counts: Vec<String> =
                    pages.iter().map(|p| usable_chars(p).to_string()).collect();
                format!("counts {}", counts.join(","))
            }
            _ => "all".to_string(),
        }
    }

    fn take(&self) -> Result<Vec<String>, JobError> {
        self.wait().take().unwrap_or_else(|| {
            Err(JobError::new(
                ErrorKind::ExtractFailed,
                msg!("pdftotext gave no answer"),
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_reading_wins_only_when_it_holds_pdftotexts_and_clearly_more() {
        let leader = "The quick brown fox jumps over the lazy dog.";
        let superset = format!("{leader} And a table cell beyond the page's edge.");
        assert!(more_faithful(&superset, leader, Some(80)));
        // A few characters more: pdftotext stays.
        assert!(!more_faithful(&format!("{leader} Yes."), leader, Some(80)));
        // More, but not holding what pdftotext found (split accents, other letters).
        let other =
            "Tbe qoick brawn fax jomps aver tbe lazy dag. And a table cell beyond the page.";
        assert!(!more_faithful(other, leader, Some(80)));
        // pdftotext lost most of the page: twice as much wins even if it differs.
        let header = "Chapter 3, page 41";
        let body = "Every line of the page that pdftotext did not return at all, read by lopdf.";
        assert!(more_faithful(body, header, Some(200)));
        assert!((holds("aab", "ab") - 1.0).abs() < 1e-9);
        assert!((holds("a", "aa") - 0.5).abs() < 1e-9);
    }
}
