//! Reading documents in the tests: the extraction options (this checkout's `zhi` as the PDF
//! worker), and the measures a reading is judged by (recall against a reference text). Shared
//! by both test binaries (`tests/ext` includes this file), so each uses a subset.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use zhi::error::ErrorKind;
use zhi::extract::{ExtractOptions, Extracted, OcrChoice};

/// The zhi binary is the PDF worker. `ZHI_TEST_WORKER_EXE` overrides it, for a target dir
/// shared between checkouts where `target/debug/zhi` may be another checkout's build.
pub fn options(ocr: OcrChoice) -> ExtractOptions {
    let worker_exe = std::env::var_os("ZHI_TEST_WORKER_EXE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zhi")));
    ExtractOptions {
        ocr,
        worker_exe,
        ..ExtractOptions::default()
    }
}

/// The options of the path that needs nothing installed: the worker alone.
pub fn worker_only(ocr: OcrChoice) -> ExtractOptions {
    ExtractOptions {
        pdftotext: false,
        ..options(ocr)
    }
}

pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

pub fn assert_failed(
    result: Result<Extracted, zhi::error::JobError>,
    kind: ErrorKind,
    needle: &str,
) {
    match result {
        Ok(got) => panic!("expected {kind} ({needle}), got text {:?}", got.text),
        Err(e) => {
            assert_eq!(e.kind, kind, "{e}");
            assert!(
                e.message.contains(needle),
                "{kind}: {:?} lacks {needle:?}",
                e.message
            );
        }
    }
}

pub fn is_ideograph(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' | '\u{20000}'..='\u{2FA1F}')
}

pub fn tokens(text: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    let mut word = String::new();
    let flush = |word: &mut String, counts: &mut HashMap<String, usize>| {
        if !word.is_empty() {
            *counts.entry(std::mem::take(word)).or_insert(0) += 1;
        }
    };
    for c in text.chars() {
        if is_ideograph(c) {
            flush(&mut word, &mut counts);
            *counts.entry(c.to_string()).or_insert(0) += 1;
        } else if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else {
            flush(&mut word, &mut counts);
        }
    }
    flush(&mut word, &mut counts);
    counts
}

pub fn recall(reference: &str, candidate: &str) -> f64 {
    let want = tokens(reference);
    let have = tokens(candidate);
    let total: usize = want.values().sum();
    let found: usize = want
        .iter()
        .map(|(t, &n)| n.min(have.get(t).copied().unwrap_or(0)))
        .sum();
    found as f64 / total.max(1) as f64
}

/// The share of `reference`'s characters (a multiset, whitespace left out) that `candidate`
/// has too: how the issue measures a PDF reading against pdftotext.
pub fn char_recall(reference: &str, candidate: &str) -> f64 {
    let mut have: HashMap<char, usize> = HashMap::new();
    for c in candidate.chars().filter(|c| !c.is_whitespace()) {
        *have.entry(c).or_default() += 1;
    }
    let (mut total, mut held) = (0usize, 0usize);
    for c in reference.chars().filter(|c| !c.is_whitespace()) {
        total += 1;
        if let Some(n) = have.get_mut(&c).filter(|n| **n > 0) {
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

/// The warning for a page that draws far more than any extractor finds
/// (`corpus::mostly_unreadable_page`), on the path `opts` chooses.
pub fn assert_far_more_drawn_than_found(path: &Path, opts: &ExtractOptions) {
    let got = zhi::extract::extract(path, opts).unwrap();
    assert!(
        got.text.contains(crate::support::corpus::HELLO),
        "{:?}",
        got.text
    );
    assert_eq!(got.pages[0].glyphs, Some(57 + 1200));
    assert_eq!(
        got.warnings,
        [
            "page 1: every extractor found less than half of the text the page draws \
          (page 1: 57 characters of 1257 glyphs); the model is not given all of it"
        ]
    );
}

/// Whether `program` is an executable file in a folder of `PATH`.
pub fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}
