//! OCR speed: seconds per page of tesseract (`chi_sim+eng`, 300 dpi, pages rasterised with
//! `pdftoppm -r 300 -gray`, `OMP_THREAD_LIMIT=1` per process) on scanned pages, with 1 and 2
//! pages in flight (`ExtractOptions::ocr_parallelism`). Driven through the library as the
//! `ocr` tool does it (`zhi::extract::ocr_file`: every page OCR'd).
//!
//! `cargo bench --bench ocr_pages` (`ZHI_BENCH_RUNS` for other than best of 1). The scans are
//! ocrmypdf's test resources, from `scripts/fetch-test-docs.sh` (run it first);
//! skipped with a note when tesseract, pdftoppm or the scans cannot be had.

#[path = "common/mod.rs"]
mod common;

use common::{fetched, pdf_pages, program, runs, table, zhi_exe};
use std::time::{Duration, Instant};
use zhi::extract::{self, ExtractOptions, OcrChoice};

fn main() {
    let runs = runs(1);
    if program("tesseract").is_none() || program("pdftoppm").is_none() {
        return;
    }
    let scans: Vec<_> = [
        "ocrmypdf/resources/multipage.pdf",
        "ocrmypdf/resources/linn.pdf",
    ]
    .into_iter()
    .filter_map(|r| fetched(r).map(|p| (r, p)))
    .collect();
    if scans.is_empty() {
        return;
    }
    let pages: u32 = scans.iter().filter_map(|(_, p)| pdf_pages(p)).sum();
    let names: Vec<&str> = scans
        .iter()
        .map(|(r, _)| r.rsplit('/').next().unwrap_or(r))
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "ocr_pages: tesseract on {pages} scanned pages ({}), {cores} cores, best of {runs}",
        names.join(" + ")
    );

    let mut rows = Vec::new();
    let mut single = None;
    for workers in [1usize, 2] {
        let opts = ExtractOptions {
            ocr: OcrChoice::Tesseract,
            ocr_parallelism: workers,
            worker_exe: zhi_exe(),
            ..ExtractOptions::default()
        };
        let mut best = Duration::MAX;
        let mut chars = 0;
        for _ in 0..runs {
            let t = Instant::now();
            chars = 0;
            for (relative, pdf) in &scans {
                let got = extract::ocr_file(pdf, &opts)
                    .unwrap_or_else(|e| panic!("OCR of {relative} failed: {e}"));
                chars += got.text.chars().count();
            }
            best = best.min(t.elapsed());
        }
        let per_page = best.as_secs_f64() / f64::from(pages);
        let speedup = match single {
            None => {
                single = Some(per_page);
                "1.00×".to_string()
            }
            Some(one) => format!("{:.2}×", one / per_page),
        };
        rows.push(vec![
            workers.to_string(),
            format!("{:.1}", best.as_secs_f64()),
            format!("{per_page:.2}"),
            speedup,
            format!("{chars}"),
        ]);
    }
    table(
        &[
            "pages in flight",
            "total s",
            "s/page",
            "speed-up",
            "chars read",
        ],
        &rows,
    );
}
