//! PDF text layer speed: pages per second of `zhi extract --ocr off` (the isolated PDF worker:
//! pdf-extract, with lopdf and pdftotext as fallbacks) beside `pdftotext` on the same files,
//! the Debian Reference in English (261 pages) and in Simplified Chinese.
//!
//! `cargo bench --bench pdf_text` (`ZHI_BENCH_RUNS` for other than best of 3). The PDFs come
//! from `scripts/fetch-test-docs.sh` (run here when they are missing); each missing document
//! or program is skipped with a note.

#[path = "common/mod.rs"]
mod common;

use common::{best_of, fetched, pdf_pages, program, runs, table, zhi};
use std::process::{Command, Stdio};

fn main() {
    let runs = runs(3);
    let home = tempfile::tempdir().expect("temp dir");
    let pdftotext = program("pdftotext");
    println!("pdf_text: text layer, pages/s, best of {runs}");
    let mut rows = Vec::new();
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
        let Some(pdf) = fetched(relative) else {
            continue;
        };
        let Some(pages) = pdf_pages(&pdf) else {
            eprintln!("note: pdfinfo cannot count the pages of {relative}; skipped");
            continue;
        };
        let mib = std::fs::metadata(&pdf).map_or(0.0, |m| m.len() as f64 / (1 << 20) as f64);

        // What zhi gives the model, once, to report its size and the fallbacks it took.
        let out = zhi(home.path())
            .args(["extract", "--ocr", "off", "--json"])
            .arg(&pdf)
            .stdout(Stdio::piped())
            .output()
            .expect("zhi extract");
        assert!(out.status.success(), "zhi extract {relative} failed");
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("zhi extract --json prints JSON");
        let chars = v["text"].as_str().map_or(0, |t| t.chars().count());
        let fallbacks = v["fallbacks"].as_array().map_or(0, Vec::len);

        let t = best_of(runs, || {
            let mut c = zhi(home.path());
            c.args(["extract", "--ocr", "off"]).arg(&pdf);
            c
        });
        rows.push(vec![
            format!("{label} ({pages} pages, {mib:.1} MiB)"),
            "zhi extract --ocr off".to_string(),
            format!("{:.2}", t.wall.as_secs_f64()),
            format!("{:.0}", f64::from(pages) / t.wall.as_secs_f64()),
            format!("{chars} chars, {fallbacks} fallback notes"),
        ]);
        if let Some(pdftotext) = &pdftotext {
            let chars = Command::new(pdftotext)
                .args(["-enc", "UTF-8", "-q"])
                .arg(&pdf)
                .arg("-")
                .output()
                .map_or(0, |o| String::from_utf8_lossy(&o.stdout).chars().count());
            let t = best_of(runs, || {
                let mut c = Command::new(pdftotext);
                c.args(["-enc", "UTF-8", "-q"])
                    .arg(&pdf)
                    .arg("-")
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                c
            });
            rows.push(vec![
                String::new(),
                "pdftotext -enc UTF-8".to_string(),
                format!("{:.2}", t.wall.as_secs_f64()),
                format!("{:.0}", f64::from(pages) / t.wall.as_secs_f64()),
                format!("{chars} chars"),
            ]);
        }
    }
    table(
        &["document", "extractor", "best s", "pages/s", "output"],
        &rows,
    );
}
