//! Extraction on real documents nobody here wrote (fetched by `scripts/fetch-test-docs.sh` and
//! `scripts/fetch-pdf-corpus.sh`) and with the programs zhi uses when they are installed
//! (pdftotext, pdftoppm, pdfimages, tesseract, and pango-view to render a page).

use crate::need::{Need, doc};
use crate::support::corpus::{
    HELLO, mostly_unreadable_page, three_pages_with_a_loop_in_the_middle,
};
use crate::support::reading::{
    assert_failed, assert_far_more_drawn_than_found, char_recall, options, recall, worker_only,
    write,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use zhi::error::ErrorKind;
use zhi::extract::{self, DocKind, ExtractOptions, Method, OcrChoice};

const DEBIAN_REFERENCE_EN: &str = "debian-reference/debian-reference.en.pdf";
const DEBIAN_REFERENCE_ZH: &str = "debian-reference/debian-reference.zh-cn.pdf";
const LINN_PDF: &str = "ocrmypdf/resources/linn.pdf";
const LINN_PNG: &str = "ocrmypdf/resources/linn.png";
const LINN_TXT: &str = "ocrmypdf/resources/linn.txt";
const MULTIPAGE_PDF: &str = "ocrmypdf/resources/multipage.pdf";
const CORPUS_LIST: &str = "corpus/corpus.tsv";
const CRAZYONES_PDF: &str = "pypdf/resources/crazyones.pdf";
/// Encrypted with an empty user password: readable.
const ENCRYPTED_READABLE: [&str; 3] = [
    "pypdf/resources/encryption/r2-empty-password.pdf",
    "pypdf/resources/encryption/r4-owner-password.pdf",
    "pypdf/resources/encryption/r6-empty-password.pdf",
];
/// Encrypted with a user password: a job that needs it fails and says so.
const ENCRYPTED_LOCKED: [&str; 3] = [
    "pypdf/resources/encryption/r2-user-password.pdf",
    "pypdf/resources/encryption/r4-aes-user-password.pdf",
    "pypdf/resources/encryption/r6-both-passwords.pdf",
];
/// Simplified Chinese prose with English terms, installed by the debian-reference-zh-cn package.
const DEBIAN_REFERENCE_ZH_TXT: &str = "/usr/share/debian-reference/debian-reference.zh-cn.txt.gz";

/// What OCR with tesseract needs: the program, both languages, and pdftoppm for PDF pages.
const TESSERACT: [Need; 4] = [
    Need::Program("tesseract"),
    Need::TesseractLanguage("eng"),
    Need::TesseractLanguage("chi_sim"),
    Need::Program("pdftoppm"),
];

/// The tests of this module and what each needs.
pub fn tests() -> Vec<crate::Test> {
    use crate::Test;
    let tesseract_and = |more: &[Need]| [&TESSERACT[..], more].concat();
    vec![
        Test::new(
            "extraction::debian_reference_en_text_layer_matches_pdftotext",
            &[Need::Program("pdftotext"), Need::Doc(DEBIAN_REFERENCE_EN)],
            debian_reference_en_text_layer_matches_pdftotext,
        ),
        Test::new(
            "extraction::debian_reference_zh_cn_text_layer_matches_pdftotext",
            &[Need::Program("pdftotext"), Need::Doc(DEBIAN_REFERENCE_ZH)],
            debian_reference_zh_cn_text_layer_matches_pdftotext,
        ),
        Test::new(
            "extraction::scanned_pdf_is_ocred_with_tesseract",
            &tesseract_and(&[Need::Doc(LINN_PDF), Need::Doc(LINN_TXT)]),
            scanned_pdf_is_ocred_with_tesseract,
        ),
        Test::new(
            "extraction::an_image_only_pdf_reads_as_well_as_its_image",
            &tesseract_and(&[
                Need::Program("pdfimages"),
                Need::Doc(LINN_PDF),
                Need::Doc(LINN_PNG),
                Need::Doc(LINN_TXT),
            ]),
            an_image_only_pdf_reads_as_well_as_its_image,
        ),
        Test::new(
            "extraction::scanned_pdf_without_ocr_is_an_error_that_says_so",
            &[Need::Doc(LINN_PDF)],
            scanned_pdf_without_ocr_is_an_error_that_says_so,
        ),
        Test::new(
            "extraction::rendered_chinese_english_page_is_ocred",
            &tesseract_and(&[
                Need::Program("pango-view"),
                Need::Program("zcat"),
                Need::Font("WenQuanYi Micro Hei"),
                Need::SystemFile(DEBIAN_REFERENCE_ZH_TXT, "debian-reference-zh-cn"),
            ]),
            rendered_chinese_english_page_is_ocred,
        ),
        Test::new(
            "extraction::scanned_pages_are_ocred_in_parallel_and_kept_in_order",
            &tesseract_and(&[Need::Doc(MULTIPAGE_PDF)]),
            scanned_pages_are_ocred_in_parallel_and_kept_in_order,
        ),
        Test::new(
            "extraction::pdftotext_leads_and_the_worker_checks_its_pages",
            &[Need::Program("pdftotext")],
            pdftotext_leads_and_the_worker_checks_its_pages,
        ),
        Test::new(
            "extraction::without_a_working_worker_pdftotext_still_reads",
            &[Need::Program("pdftotext")],
            without_a_working_worker_pdftotext_still_reads,
        ),
        Test::new(
            "extraction::pdftotext_leading_warns_of_a_page_that_draws_far_more_than_it_finds",
            &[Need::Program("pdftotext")],
            pdftotext_leading_warns_of_a_page_that_draws_far_more_than_it_finds,
        ),
        Test::new(
            "extraction::pdftotext_leading_skips_a_page_that_would_kill_the_worker",
            &[Need::Program("pdftotext")],
            pdftotext_leading_skips_a_page_that_would_kill_the_worker,
        ),
        Test::new(
            "extraction::encrypted_pdfs_read_with_an_empty_password_and_fail_with_a_real_one",
            &ENCRYPTED_READABLE
                .iter()
                .chain(&ENCRYPTED_LOCKED)
                .map(|d| Need::Doc(d))
                .collect::<Vec<_>>(),
            encrypted_pdfs_read_with_an_empty_password_and_fail_with_a_real_one,
        ),
        Test::new(
            "extraction::a_run_over_real_pdfs_reads_one_and_fails_the_encrypted_one",
            &[Need::Doc(CRAZYONES_PDF), Need::Doc(ENCRYPTED_LOCKED[0])],
            a_run_over_real_pdfs_reads_one_and_fails_the_encrypted_one,
        ),
        Test::new(
            "extraction::a_pdf_of_more_than_100_pages_is_refused_for_glm_ocr_before_upload",
            &[Need::Program("pdfinfo")],
            a_pdf_of_more_than_100_pages_is_refused_for_glm_ocr_before_upload,
        ),
        Test::new(
            "extraction::every_pdf_of_the_producers_corpus_reads_whole",
            &[Need::Program("pdftotext"), Need::Doc(CORPUS_LIST)],
            every_pdf_of_the_producers_corpus_reads_whole,
        ),
    ]
}

fn pdftotext(path: &Path) -> String {
    let out = Command::new("pdftotext")
        .args(["-enc", "UTF-8", "-q"])
        .arg(path)
        .arg("-")
        .output()
        .expect("pdftotext runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Both paths read the whole text layer: pdftotext leading (checked by the worker) and the
/// worker alone (pdf-extract, lopdf where pdf-extract falls short of what a page draws).
fn assert_text_layer_recall(relative: &str) {
    let pdf = doc(relative);
    let reference = pdftotext(&pdf);
    let reference_pages = reference.matches('\u{0C}').count();
    for (label, opts, leader) in [
        (
            "pdftotext leading",
            options(OcrChoice::Off),
            Method::Pdftotext,
        ),
        (
            "worker alone",
            worker_only(OcrChoice::Off),
            Method::PdfExtract,
        ),
    ] {
        let got = extract::extract(&pdf, &opts).expect("extracts");
        let r = recall(&reference, &got.text);
        note!(
            "{relative}, {label}: {} pages, recall vs pdftotext {r:.4}, fallbacks {:?}",
            got.pages.len(),
            got.fallbacks
        );
        assert_eq!(got.kind, DocKind::Pdf);
        assert_eq!(got.pages.len(), reference_pages, "one PageText per page");
        assert!(
            got.pages.iter().filter(|p| p.method == leader).count() * 10 >= reference_pages * 9,
            "{label}: most pages come from {leader:?}: {:?}",
            got.pages.iter().map(|p| p.method).collect::<Vec<_>>()
        );
        // Every page with text says what it draws and why its text was chosen.
        for page in got.pages.iter().filter(|p| p.chars > 0) {
            assert!(
                page.glyphs.is_some(),
                "{label}: page {} unsurveyed",
                page.number
            );
            assert!(page.why.contains(" found "), "{label}: {page:?}");
        }
        assert!(got.warnings.is_empty(), "{label}: {:?}", got.warnings);
        assert!(r >= 0.98, "{relative}, {label}: recall {r:.4} < 0.98");
    }
}

fn debian_reference_en_text_layer_matches_pdftotext() {
    assert_text_layer_recall(DEBIAN_REFERENCE_EN);
}

fn debian_reference_zh_cn_text_layer_matches_pdftotext() {
    assert_text_layer_recall(DEBIAN_REFERENCE_ZH);
}

fn scanned_pdf_is_ocred_with_tesseract() {
    let (pdf, truth) = (doc(LINN_PDF), doc(LINN_TXT));
    let truth = std::fs::read_to_string(truth).unwrap();
    let got = extract::extract(&pdf, &options(OcrChoice::Auto)).expect("OCR reads the scan");
    let r = recall(&truth, &got.text);
    note!(
        "linn.pdf: OCR recall vs linn.txt {r:.4}; {:?}",
        got.fallbacks
    );
    assert_eq!(got.pages.len(), 1);
    assert_eq!(got.pages[0].method, Method::Ocr);
    assert_eq!(got.ocr_engine.as_deref(), Some("tesseract"));
    assert!(
        got.fallbacks.iter().any(|f| f == "page 1: OCR (tesseract)"),
        "{:?}",
        got.fallbacks
    );
    assert!(r >= 0.95, "linn.pdf OCR recall {r:.4} < 0.95");
}

/// A page that is one stored image is read from that image at its own resolution, so the PDF
/// reads exactly as the picture does (re-rendering it at 300 dpi lost some of it).
fn an_image_only_pdf_reads_as_well_as_its_image() {
    let (pdf, png, truth) = (doc(LINN_PDF), doc(LINN_PNG), doc(LINN_TXT));
    let truth = std::fs::read_to_string(truth).unwrap();
    let from_pdf = extract::extract(&pdf, &options(OcrChoice::Tesseract)).expect("reads the scan");
    let from_png = extract::extract(&png, &options(OcrChoice::Tesseract)).expect("reads the image");
    let (r_pdf, r_png) = (
        recall(&truth, &from_pdf.text),
        recall(&truth, &from_png.text),
    );
    note!("linn: OCR recall {r_pdf:.4} from the PDF, {r_png:.4} from the image");
    assert!(
        from_pdf.pages[0].why.contains("its stored 2550×3300 image"),
        "{:?}",
        from_pdf.pages[0]
    );
    assert!(r_pdf >= r_png - 0.002, "PDF {r_pdf:.4} < image {r_png:.4}");
}

fn scanned_pdf_without_ocr_is_an_error_that_says_so() {
    let pdf = doc(LINN_PDF);
    let err = extract::extract(&pdf, &options(OcrChoice::Off)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ExtractFailed);
    assert!(
        err.message.contains("no text found in 1 page"),
        "{}",
        err.message
    );
    assert!(err.message.contains("OCR is off"), "{}", err.message);

    let err = extract::extract(&pdf, &options(OcrChoice::GlmOcr)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::OcrFailed);
    assert!(err.message.contains("ZHI_API_KEY"), "{}", err.message);
}

/// A Chinese and English page, rendered here: text from the installed debian-reference
/// (Simplified Chinese with English terms), typeset by pango-view into a PDF, rasterised by
/// pdftoppm at 300 dpi, and read back from the PNG by OCR.
fn rendered_chinese_english_page_is_ocred() {
    let source = chinese_english_paragraphs();
    let dir = tempfile::tempdir().unwrap();
    let txt = dir.path().join("page.txt");
    std::fs::write(&txt, &source).unwrap();
    let pdf = dir.path().join("page.pdf");
    let rendered = Command::new("pango-view")
        .args([
            "-q",
            // 10.5 pt (五号) is the body size of Chinese office documents.
            "--font=WenQuanYi Micro Hei 10.5",
            "--margin=50",
            "--width=500",
        ])
        .arg(format!("--output={}", pdf.display()))
        .arg(&txt)
        .status()
        .unwrap();
    assert!(rendered.success(), "pango-view renders the page");
    let png_prefix = dir.path().join("page");
    let rasterised = Command::new("pdftoppm")
        .args(["-r", "300", "-gray", "-png", "-singlefile"])
        .arg(&pdf)
        .arg(&png_prefix)
        .status()
        .unwrap();
    assert!(rasterised.success());
    let png = png_prefix.with_extension("png");

    let got = extract::extract(&png, &options(OcrChoice::Tesseract)).expect("OCR reads the page");
    let r = recall(&source, &got.text);
    note!("rendered zh/en page: OCR recall {r:.4}");
    assert_eq!(got.kind, DocKind::Image);
    assert_eq!(got.pages[0].method, Method::Ocr);
    assert!(
        !got.text.contains("文 件"),
        "spaces between Chinese characters are removed"
    );
    assert!(r >= 0.95, "rendered page OCR recall {r:.4} < 0.95");

    // The PDF itself: its text layer, and OCR on demand (the agent's `ocr` tool).
    let layer = extract::extract(&pdf, &options(OcrChoice::Off)).expect("text layer");
    assert!(matches!(
        layer.pages[0].method,
        Method::Pdftotext | Method::PdfExtract
    ));
    let r = recall(&source, &layer.text);
    note!("rendered zh/en PDF: text layer recall {r:.4}");
    assert!(r >= 0.99, "text layer recall {r:.4}");
    let forced = extract::ocr_file(&pdf, &options(OcrChoice::Tesseract)).expect("OCR of the PDF");
    assert_eq!(forced.pages[0].method, Method::Ocr);
    let r = recall(&source, &forced.text);
    note!("rendered zh/en PDF: OCR recall {r:.4}");
    assert!(r >= 0.95, "rasterised PDF OCR recall {r:.4} < 0.95");
}

/// A page of prose with English terms in it: the 60 lines that start at section 1.2.2 of the
/// Chinese debian-reference (its last mention; the first is in the table of contents).
fn chinese_english_paragraphs() -> String {
    let out = Command::new("zcat")
        .arg(DEBIAN_REFERENCE_ZH_TXT)
        .output()
        .expect("zcat runs");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let title = text.rfind("文件系统深入解析").expect("section 1.2.2");
    let start = text[..title].rfind('\n').map_or(0, |i| i + 1);
    let lines: Vec<&str> = text[start..].lines().map(str::trim).take(60).collect();
    lines.join("\n").trim().to_string()
}

fn pdftotext_leads_and_the_worker_checks_its_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "ok.pdf", &crate::support::corpus::hello_pdf());
    let got = extract::extract(&path, &options(OcrChoice::Off)).unwrap();
    assert_eq!(got.text, HELLO);
    assert_eq!(got.pages[0].method, Method::Pdftotext);
    assert_eq!(
        got.pages[0].why,
        "pdftotext found 57 characters of 57 glyphs"
    );
    assert!(got.fallbacks.is_empty(), "{:?}", got.fallbacks);
}

fn without_a_working_worker_pdftotext_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "ok.pdf", &crate::support::corpus::hello_pdf());
    let opts = ExtractOptions {
        worker_exe: PathBuf::from("/nonexistent/zhi"),
        ..options(OcrChoice::Off)
    };
    let got = extract::extract(&path, &opts).unwrap();
    assert_eq!(got.text, HELLO);
    assert_eq!(got.pages[0].method, Method::Pdftotext);
    assert!(
        got.fallbacks
            .iter()
            .any(|f| f.contains("could not be started")),
        "{:?}",
        got.fallbacks
    );
}

fn scanned_pages_are_ocred_in_parallel_and_kept_in_order() {
    let pdf = doc(MULTIPAGE_PDF);
    let opts = ExtractOptions {
        ocr_parallelism: 3,
        ..options(OcrChoice::Tesseract)
    };
    let got = extract::extract(&pdf, &opts).expect("OCR three pages at a time");
    note!("multipage.pdf: {:?}", got.fallbacks);
    let numbers: Vec<u32> = got.pages.iter().map(|p| p.number).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6]);
    let page = |n: usize| {
        let start = got.pages[n - 1].offset;
        let end = got.pages.get(n).map_or(got.text.len(), |p| p.offset);
        &got.text[start..end]
    };
    // Scans of different books on different pages: each text is on its own page.
    assert_eq!(got.pages[0].method, Method::Ocr);
    assert!(page(1).contains("Miss Watson"), "{:?}", page(1));
    assert!(page(3).contains("note 1"), "{:?}", page(3));
    assert_eq!(got.pages[4].method, Method::Ocr);
    assert!(page(5).contains("throne of England"), "{:?}", page(5));
    assert!(!page(1).contains("throne of England"));
}

/// The producers corpus (`scripts/fetch-pdf-corpus.sh`): real text PDFs from TeX engines,
/// Ghostscript, LibreOffice, Skia, cairo, ReportLab and more, English and Chinese. Every one
/// reads at character recall ≥ 0.98 against pdftotext, and no page is lost without a warning.
fn every_pdf_of_the_producers_corpus_reads_whole() {
    let list = doc(CORPUS_LIST);
    let dir = list.parent().unwrap().to_path_buf();
    let rows: Vec<Vec<String>> = std::fs::read_to_string(&list)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect();
    let mut producers = std::collections::BTreeMap::<String, Vec<f64>>::new();
    let mut languages = std::collections::BTreeSet::new();
    let mut low = Vec::new();
    for row in &rows {
        let (file, producer, language) = (&row[0], &row[1], &row[2]);
        let pdf = dir.join(file);
        let reference = pdftotext(&pdf);
        let got = extract::extract(&pdf, &options(OcrChoice::Off))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let r = char_recall(&reference, &got.text);
        note!("{producer:12} {language} {r:.4} {file} {:?}", got.warnings);
        producers.entry(producer.clone()).or_default().push(r);
        languages.insert(language.clone());
        if r < 0.98 {
            low.push(format!("{file}: {r:.4}"));
        }
        // A page far short of what it draws is said, never silent.
        for page in &got.pages {
            if let Some(glyphs) = page.glyphs
                && glyphs >= 50
                && (page.chars as f64) < 0.5 * f64::from(glyphs)
            {
                assert!(
                    !got.warnings.is_empty(),
                    "{file}: page {} lost silently",
                    page.number
                );
            }
        }
    }
    for (producer, recalls) in &producers {
        let min = recalls.iter().copied().fold(1.0, f64::min);
        note!(
            "{producer:12} {} PDFs, lowest recall {min:.4}",
            recalls.len()
        );
    }
    assert!(
        producers.len() >= 6,
        "six producers at least: {producers:?}"
    );
    assert!(
        languages.contains("zh") && languages.contains("en"),
        "{languages:?}"
    );
    assert!(low.is_empty(), "recall below 0.98: {low:?}");
}

fn pdftotext_leading_warns_of_a_page_that_draws_far_more_than_it_finds() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "lost.pdf", &mostly_unreadable_page());
    assert_far_more_drawn_than_found(&path, &options(OcrChoice::Off));
}

/// pdftotext leading: the worker's survey stops at its depth limit, finds nothing drawn on
/// page 2, and never asks pdf-extract to read it (the worker alone is checked in `tests/it`).
fn pdftotext_leading_skips_a_page_that_would_kill_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "three.pdf",
        &three_pages_with_a_loop_in_the_middle(),
    );
    let got = extract::extract(&path, &options(OcrChoice::Off)).unwrap();
    assert_eq!(
        got.text,
        "First page: the worker reads this one before it dies.\n\u{c}\n\
         Third page: read by the restarted worker after the crash."
    );
    let methods: Vec<Method> = got.pages.iter().map(|p| p.method).collect();
    assert_eq!(
        methods,
        [Method::Pdftotext, Method::Empty, Method::Pdftotext]
    );
    assert_eq!(got.pages[1].glyphs, Some(0));
}

fn encrypted_pdfs_read_with_an_empty_password_and_fail_with_a_real_one() {
    let opts = ExtractOptions {
        pdf_memory_limit_bytes: 1 << 30,
        pdf_timeout: Duration::from_secs(60),
        ..options(OcrChoice::Off)
    };
    // Encrypted (pypdf's test resources): with an empty user password the text is read; with a
    // real one the job fails and says a password is needed.
    for name in ENCRYPTED_READABLE {
        let pdf = doc(name);
        let got = extract::extract(&pdf, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            got.text.contains("pdf encryption test"),
            "{name}: {:?}",
            got.text
        );
    }
    for name in ENCRYPTED_LOCKED {
        let pdf = doc(name);
        assert_failed(
            extract::extract(&pdf, &opts),
            ErrorKind::ExtractFailed,
            "needs a password",
        );
    }
}

/// `zhi run` over real PDFs beside a made one: the real one (pypdf's crazyones.pdf) is
/// summarised, the encrypted one fails with a reason, and the model never sees it.
fn a_run_over_real_pdfs_reads_one_and_fails_the_encrypted_one() {
    use crate::support::testenv::{TestEnv, assert_exit, record, run_skill, show};
    use crate::support::{FakeApi, Recorded, Reply};
    use zhi::exit::Exit;
    let env = TestEnv::new();
    env.write("docs/control.pdf", crate::support::corpus::hello_pdf());
    std::fs::copy(doc(CRAZYONES_PDF), env.path("docs/crazyones.pdf")).unwrap();
    std::fs::copy(doc(ENCRYPTED_LOCKED[0]), env.path("docs/encrypted.pdf")).unwrap();
    let api = FakeApi::start(|_: &Recorded| Reply::text(crate::support::FILLER));
    let out = run_skill(&env, &api, "summarize", &["docs"]);
    assert_exit(&out, Exit::JobsFailed);
    for good in ["docs/control.pdf", "docs/crazyones.pdf"] {
        assert_eq!(record(&env, good)["status"], "succeeded", "{}", show(&out));
    }
    let locked = record(&env, "docs/encrypted.pdf");
    assert_eq!(locked["error"]["kind"], "extract_failed", "{locked}");
    let message = locked["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("needs a password"), "{locked}");
    let chats = api.chat_requests();
    assert!(
        chats.iter().any(|r| r.body_text.contains("The Crazy Ones")),
        "the real PDF's text reached the model"
    );
    assert!(
        chats
            .iter()
            .all(|r| !r.body_text.contains("docs/encrypted.pdf")),
        "the encrypted PDF never reached the model"
    );
}

/// `pdfinfo` counts a PDF's pages before glm-ocr is sent one: past its 100 pages, the file
/// is refused and nothing is uploaded.
fn a_pdf_of_more_than_100_pages_is_refused_for_glm_ocr_before_upload() {
    use crate::support::{FakeApi, Reply};
    use zhi::ocr::ApiOcr;
    let pdf = |pages: usize| {
        let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", i + 3)).collect();
        let mut objects = vec![
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            format!(
                "<< /Type /Pages /Kids [{}] /Count {pages} >>",
                kids.join(" ")
            )
            .into_bytes(),
        ];
        objects.extend(
            (0..pages).map(|_| b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>".to_vec()),
        );
        crate::support::corpus::pdf(&objects)
    };
    let api = FakeApi::always(Reply::status(
        200,
        serde_json::json!({"md_results": "page text", "data_info": {"num_pages": 100}}),
    ));
    let client =
        zhi::llm::ChatClient::new(zhi::llm::ClientSettings::new(api.base_url(), None)).unwrap();
    let ocr = zhi::ocr::api::ZhipuOcr::new(client, None);
    let dir = tempfile::tempdir().unwrap();
    let long = write(dir.path(), "long.pdf", &pdf(101));
    let err = ocr
        .recognise(zhi::ocr::ApiEngine::GlmOcr, &long)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::OcrFailed, "{err}");
    assert!(err.message.contains("101 pages"), "{err}");
    assert_eq!(api.count(), 0, "nothing was uploaded");
    let short = write(dir.path(), "short.pdf", &pdf(100));
    ocr.recognise(zhi::ocr::ApiEngine::GlmOcr, &short)
        .expect("100 pages are taken");
    assert_eq!(api.count(), 1);
}
