//! PDF text layer: pages per second and character recall of `zhi extract --ocr off` beside
//! `pdftotext`, on the Debian Reference (English, Simplified Chinese) and on every PDF of the
//! producers corpus. Two zhi paths: the default, where pdftotext leads and zhi's worker checks
//! each page against what it draws (reading again the pages pdftotext fell short on), and the
//! worker alone (pdf-extract, then lopdf), which is what runs where poppler is not installed.
//!
//! `cargo bench --bench pdf_text` (`ZHI_BENCH_RUNS` for other than best of 3). The PDFs come
//! from `scripts/fetch-test-docs.sh` and `scripts/fetch-pdf-corpus.sh`; each missing document
//! or program is skipped with a note.

#[path = "common/mod.rs"]
mod common;

use common::{best_of, docs_dir, fetched, pdf_pages, program, runs, table, zhi};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn main() {
    let runs = runs(3);
    let home = tempfile::tempdir().expect("temp dir");
    let Some(pdftotext) = program("pdftotext") else {
        eprintln!("note: pdftotext is not installed; nothing to compare with");
        return;
    };
    println!("pdf_text: text layer, pages/s (best of {runs}) and character recall vs pdftotext");
    let mut documents: Vec<(String, PathBuf)> = Vec::new();
    for (label, relative) in [
        (
            "debian-reference en",
            "debian-reference/debian-reference.en.pdf",
        ),
        (
            "debian-reference zh-cn",
            "debian-reference/debian-reference.zh-cn.pdf",
        ),
    ] {
        if let Some(pdf) = fetched(relative) {
            documents.push((label.to_string(), pdf));
        }
    }
    let corpus = docs_dir().join("corpus");
    match std::fs::read_to_string(corpus.join("corpus.tsv")) {
        Ok(list) => {
            for line in list.lines().skip(1) {
                let fields: Vec<&str> = line.split('\t').collect();
                if let [file, producer, language, ..] = fields.as_slice() {
                    let name = Path::new(file)
                        .file_stem()
                        .map_or(String::new(), |s| s.to_string_lossy().into_owned());
                    documents.push((format!("{producer} {language} {name}"), corpus.join(file)));
                }
            }
        }
        Err(_) => eprintln!("note: no producers corpus (run scripts/fetch-pdf-corpus.sh)"),
    }

    let mut rows = Vec::new();
    let (mut zhi_s, mut alone_s, mut reference_s, mut all_pages) = (0.0, 0.0, 0.0, 0u32);
    for (label, pdf) in &documents {
        let Some(pages) = pdf_pages(pdf) else {
            eprintln!("note: pdfinfo cannot count the pages of {label}; skipped");
            continue;
        };
        let reference = text_of(
            Command::new(&pdftotext)
                .args(["-enc", "UTF-8", "-q"])
                .arg(pdf)
                .arg("-"),
        );
        let extract = |alone: bool| {
            let mut c = zhi(home.path());
            c.args(["extract", "--ocr", "off"])
                .arg(pdf)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if alone {
                // No pdftotext on the PATH: the worker alone, as without poppler.
                c.env("PATH", home.path().join("no-programs"));
            }
            c
        };
        let led = text_of(&mut extract(false));
        let alone = text_of(&mut extract(true));
        let t_ref = best_of(runs, || {
            let mut c = Command::new(&pdftotext);
            c.args(["-enc", "UTF-8", "-q"])
                .arg(pdf)
                .arg("-")
                .stdout(Stdio::null());
            c
        })
        .wall;
        let t_led = best_of(runs, || extract(false)).wall;
        let t_alone = best_of(runs, || extract(true)).wall;
        let per_s = |t: Duration| f64::from(pages) / t.as_secs_f64();
        rows.push(vec![
            format!("{label} ({pages} p.)"),
            format!("{:.0}", per_s(t_ref)),
            format!("{:.0}", per_s(t_led)),
            format!("{:.2}", t_ref.as_secs_f64() / t_led.as_secs_f64()),
            format!("{:.4}", recall(&reference, &led)),
            format!("{:.0}", per_s(t_alone)),
            format!("{:.4}", recall(&reference, &alone)),
        ]);
        zhi_s += t_led.as_secs_f64();
        alone_s += t_alone.as_secs_f64();
        reference_s += t_ref.as_secs_f64();
        all_pages += pages;
    }
    if all_pages > 0 {
        rows.push(vec![
            format!("all ({all_pages} pages)"),
            format!("{:.0}", f64::from(all_pages) / reference_s),
            format!("{:.0}", f64::from(all_pages) / zhi_s),
            format!("{:.2}", reference_s / zhi_s),
            String::new(),
            format!("{:.0}", f64::from(all_pages) / alone_s),
            String::new(),
        ]);
    }
    table(
        &[
            "document",
            "pdftotext p/s",
            "zhi p/s",
            "zhi speed ×",
            "zhi recall",
            "worker alone p/s",
            "worker alone recall",
        ],
        &rows,
    );
}

/// What a command printed (stderr discarded).
fn text_of(cmd: &mut Command) -> String {
    let out = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .expect("the extractor runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The share of `reference`'s characters (a multiset, whitespace left out) `candidate` has.
fn recall(reference: &str, candidate: &str) -> f64 {
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
