//! Extraction on real documents nobody here wrote (fetched by `scripts/fetch-test-docs.sh`),
//! on documents generated here in every format zhi reads, and on a hostile corpus that must
//! end in job errors with a kind and a reason, never in a crash of this process.
//!
//! Tests that need fetched documents or programs (tesseract, pdftoppm, pango-view) print a
//! notice and return when those cannot be had.
//!
//! Recall: the share of a reference text's tokens (a multiset) that the extracted text also
//! has; CJK ideographs count one by one, everything else by alphanumeric words, lowercased;
//! punctuation and spacing are not counted.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use zhi::error::ErrorKind;
use zhi::extract::{self, DocKind, ExtractOptions, Extracted, Method, OcrChoice};

/// The zhi binary is the PDF worker. `ZHI_TEST_WORKER_EXE` overrides it, for a target dir
/// shared between checkouts where `target/debug/zhi` may be another checkout's build.
fn options(ocr: OcrChoice) -> ExtractOptions {
    let worker_exe = std::env::var_os("ZHI_TEST_WORKER_EXE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_zhi")));
    ExtractOptions {
        ocr,
        worker_exe,
        ..ExtractOptions::default()
    }
}

fn docs_dir() -> PathBuf {
    std::env::var_os("ZHI_TEST_DOCS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-docs"))
}

/// A fetched document, or `None` (with a notice) when `scripts/fetch-test-docs.sh` has not
/// fetched it. The tests never fetch: downloads belong to the script (`.ci/run` runs it).
pub(crate) fn fetched(relative: &str) -> Option<PathBuf> {
    let path = docs_dir().join(relative);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "notice: skipping, {relative} is not available (run scripts/fetch-test-docs.sh first)"
        );
        None
    }
}

pub(crate) fn have_program(program: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("notice: skipping, {program} is not installed");
    }
    found
}

fn tesseract_ready() -> bool {
    if !have_program("tesseract") || !have_program("pdftoppm") {
        return false;
    }
    let langs = Command::new("tesseract").arg("--list-langs").output();
    let ok = langs.is_ok_and(|o| {
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        all.lines().any(|l| l == "chi_sim") && all.lines().any(|l| l == "eng")
    });
    if !ok {
        eprintln!("notice: skipping, tesseract lacks chi_sim or eng");
    }
    ok
}

fn is_ideograph(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' | '\u{20000}'..='\u{2FA1F}')
}

fn tokens(text: &str) -> HashMap<String, usize> {
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

fn recall(reference: &str, candidate: &str) -> f64 {
    let want = tokens(reference);
    let have = tokens(candidate);
    let total: usize = want.values().sum();
    let found: usize = want
        .iter()
        .map(|(t, &n)| n.min(have.get(t).copied().unwrap_or(0)))
        .sum();
    found as f64 / total.max(1) as f64
}

#[test]
fn recall_counts_cjk_by_character_and_latin_by_word() {
    assert_eq!(recall("中文 text", "中文 text"), 1.0);
    assert_eq!(recall("中文 text text", "中 text"), 0.5);
    assert_eq!(recall("Hello, World", "hello world!"), 1.0);
    assert_eq!(recall("foo bar", "foobar"), 0.0);
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

/// The options of the path that needs nothing installed: the worker alone.
fn worker_only(ocr: OcrChoice) -> ExtractOptions {
    ExtractOptions {
        pdftotext: false,
        ..options(ocr)
    }
}

/// Both paths read the whole text layer: pdftotext leading (checked by the worker) and the
/// worker alone (pdf-extract, lopdf where pdf-extract falls short of what a page draws).
fn assert_text_layer_recall(relative: &str) {
    let Some(pdf) = fetched(relative) else { return };
    if !have_program("pdftotext") {
        return;
    }
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
        eprintln!(
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

#[test]
fn debian_reference_en_text_layer_matches_pdftotext() {
    assert_text_layer_recall("debian-reference/debian-reference.en.pdf");
}

#[test]
fn debian_reference_zh_cn_text_layer_matches_pdftotext() {
    assert_text_layer_recall("debian-reference/debian-reference.zh-cn.pdf");
}

#[test]
fn scanned_pdf_is_ocred_with_tesseract() {
    let (Some(pdf), Some(truth)) = (
        fetched("ocrmypdf/resources/linn.pdf"),
        fetched("ocrmypdf/resources/linn.txt"),
    ) else {
        return;
    };
    if !tesseract_ready() {
        return;
    }
    let truth = std::fs::read_to_string(truth).unwrap();
    let got = extract::extract(&pdf, &options(OcrChoice::Auto)).expect("OCR reads the scan");
    let r = recall(&truth, &got.text);
    eprintln!(
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
#[test]
fn an_image_only_pdf_reads_as_well_as_its_image() {
    let (Some(pdf), Some(png), Some(truth)) = (
        fetched("ocrmypdf/resources/linn.pdf"),
        fetched("ocrmypdf/resources/linn.png"),
        fetched("ocrmypdf/resources/linn.txt"),
    ) else {
        return;
    };
    if !tesseract_ready() || !have_program("pdfimages") {
        return;
    }
    let truth = std::fs::read_to_string(truth).unwrap();
    let from_pdf = extract::extract(&pdf, &options(OcrChoice::Tesseract)).expect("reads the scan");
    let from_png = extract::extract(&png, &options(OcrChoice::Tesseract)).expect("reads the image");
    let (r_pdf, r_png) = (
        recall(&truth, &from_pdf.text),
        recall(&truth, &from_png.text),
    );
    eprintln!("linn: OCR recall {r_pdf:.4} from the PDF, {r_png:.4} from the image");
    assert!(
        from_pdf.pages[0].why.contains("its stored 2550×3300 image"),
        "{:?}",
        from_pdf.pages[0]
    );
    assert!(r_pdf >= r_png - 0.002, "PDF {r_pdf:.4} < image {r_png:.4}");
}

#[test]
fn scanned_pdf_without_ocr_is_an_error_that_says_so() {
    let Some(pdf) = fetched("ocrmypdf/resources/linn.pdf") else {
        return;
    };
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
#[test]
fn rendered_chinese_english_page_is_ocred() {
    if !tesseract_ready() || !have_program("pango-view") {
        return;
    }
    let Some(source) = chinese_english_paragraphs() else {
        eprintln!("notice: skipping, debian-reference-zh-cn text is not installed");
        return;
    };
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
    eprintln!("rendered zh/en page: OCR recall {r:.4}");
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
    eprintln!("rendered zh/en PDF: text layer recall {r:.4}");
    assert!(r >= 0.99, "text layer recall {r:.4}");
    let forced = extract::ocr_file(&pdf, &options(OcrChoice::Tesseract)).expect("OCR of the PDF");
    assert_eq!(forced.pages[0].method, Method::Ocr);
    let r = recall(&source, &forced.text);
    eprintln!("rendered zh/en PDF: OCR recall {r:.4}");
    assert!(r >= 0.95, "rasterised PDF OCR recall {r:.4} < 0.95");
}

/// A page of prose with English terms in it: the 60 lines that start at section 1.2.2 of the
/// Chinese debian-reference (its last mention; the first is in the table of contents).
fn chinese_english_paragraphs() -> Option<String> {
    let out = Command::new("zcat")
        .arg("/usr/share/debian-reference/debian-reference.zh-cn.txt.gz")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let title = text.rfind("文件系统深入解析")?;
    let start = text[..title].rfind('\n').map_or(0, |i| i + 1);
    let lines: Vec<&str> = text[start..].lines().map(str::trim).take(60).collect();
    Some(lines.join("\n").trim().to_string())
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Tang poems from the installed fortunes-zh, else a paragraph of our own.
fn simplified_chinese() -> String {
    let poems = std::fs::read_to_string("/usr/share/games/fortunes/tang300").unwrap_or_default();
    let mut clean = String::new();
    let mut chars = poems.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1B}' {
            // ANSI colour codes: ESC [ … m
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            clean.push(c);
        }
    }
    // The few characters GBK lacks (such as the katakana middle dot in titles) are dropped.
    let clean: String = clean
        .chars()
        .filter(|c| !encoding_rs::GBK.encode(&c.to_string()).2)
        .take(4000)
        .collect();
    if clean.trim().is_empty() {
        "中华人民共和国的首都是北京。我们在这里学习中文，阅读文件，并且写总结报告。".repeat(20)
    } else {
        clean
    }
}

fn encoded(encoding: &'static encoding_rs::Encoding, text: &str) -> Vec<u8> {
    let (bytes, _, unmappable) = encoding.encode(text);
    assert!(!unmappable, "the text fits {}", encoding.name());
    bytes.into_owned()
}

#[test]
fn gbk_and_big5_text_files_are_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let zh = simplified_chinese();
    let gbk = write(dir.path(), "poems.txt", &encoded(encoding_rs::GBK, &zh));
    let got = extract::extract(&gbk, &options(OcrChoice::Off)).unwrap();
    assert_eq!(got.encoding.as_deref(), Some("GBK"));
    assert_eq!(got.text, zh.trim_end().replace("\r\n", "\n"));
    assert_eq!(got.pages[0].method, Method::Text);

    let zh_tw = "晉太元中，武陵人捕魚為業。緣溪行，忘路之遠近。忽逢桃花林，夾岸數百步，中無雜樹，\
                 芳草鮮美，落英繽紛。漁人甚異之，復前行，欲窮其林。林盡水源，便得一山，山有小口，\
                 彷彿若有光。便捨船，從口入。初極狹，纔通人。復行數十步，豁然開朗。";
    let big5 = write(dir.path(), "story.md", &encoded(encoding_rs::BIG5, zh_tw));
    let got = extract::extract(&big5, &options(OcrChoice::Off)).unwrap();
    assert_eq!(got.encoding.as_deref(), Some("Big5"));
    assert_eq!(got.text, zh_tw);
}

pub(crate) fn zip_file(path: &Path, parts: &[(&str, &str)]) {
    let file = std::fs::File::create(path).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, content) in parts {
        zip.start_file(*name, options).unwrap();
        zip.write_all(content.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
}

pub(crate) const W: &str =
    r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main""#;

#[test]
fn docx_paragraphs_and_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.docx");
    let body = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document {W}><w:body>
<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>季度报告 Q3</w:t></w:r></w:p>
<w:p><w:r><w:t xml:space="preserve">Revenue grew </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>12%</w:t></w:r><w:r><w:t xml:space="preserve"> &amp; costs fell.</w:t></w:r></w:p>
<w:tbl>
<w:tr><w:tc><w:p><w:r><w:t>地区</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Sales</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:p><w:r><w:t>华东</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>1,200</w:t></w:r></w:p></w:tc></w:tr>
</w:tbl>
<w:p><w:r><w:t>结束。</w:t></w:r></w:p>
<w:sectPr/></w:body></w:document>"#
    );
    zip_file(
        &path,
        &[
            (
                "[Content_Types].xml",
                r#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#,
            ),
            ("word/document.xml", &body),
        ],
    );
    let got = extract::extract(&path, &options(OcrChoice::Off)).unwrap();
    assert_eq!(got.kind, DocKind::Office);
    assert_eq!(
        got.text,
        "# 季度报告 Q3\nRevenue grew 12% & costs fell.\n\n地区 | Sales\n华东 | 1,200\n\n结束。"
    );
}

#[test]
fn pptx_slides_in_presentation_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deck.pptx");
    let slide = |title: &str, body: &str| {
        format!(
            r#"<?xml version="1.0"?><p:sld xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:cSld><p:spTree>
<p:sp><p:txBody><a:p><a:r><a:t>{title}</a:t></a:r></a:p></p:txBody></p:sp>
<p:sp><p:txBody><a:p><a:r><a:t>{body}</a:t></a:r><a:br/><a:r><a:t>second line</a:t></a:r></a:p></p:txBody></p:sp>
</p:spTree></p:cSld></p:sld>"#
        )
    };
    let first = slide("开场 Opening", "欢迎");
    let second = slide("Results", "增长 12%");
    // slide2.xml is shown first: the order comes from presentation.xml, not the file names.
    zip_file(
        &path,
        &[
            (
                "ppt/presentation.xml",
                r#"<?xml version="1.0"?><p:presentation xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><p:sldIdLst><p:sldId id="256" r:id="rId7"/><p:sldId id="257" r:id="rId3"/></p:sldIdLst></p:presentation>"#,
            ),
            (
                "ppt/_rels/presentation.xml.rels",
                r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide1.xml"/><Relationship Id="rId7" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide" Target="slides/slide2.xml"/></Relationships>"#,
            ),
            ("ppt/slides/slide1.xml", &second),
            ("ppt/slides/slide2.xml", &first),
        ],
    );
    let got = extract::extract(&path, &options(OcrChoice::Off)).unwrap();
    assert_eq!(
        got.text,
        "--- slide 1 ---\n开场 Opening\n欢迎\nsecond line\n\u{c}\n--- slide 2 ---\nResults\n增长 12%\nsecond line"
    );
    assert_eq!(got.pages.len(), 2);
    assert_eq!(&got.text[got.pages[1].offset..][..15], "--- slide 2 ---");
}

#[test]
fn xlsx_sheets_as_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sales.xlsx");
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet().set_name("销售").unwrap();
    sheet.write_string(0, 0, "地区").unwrap();
    sheet.write_string(0, 1, "Amount, CNY").unwrap();
    sheet.write_string(1, 0, "华东").unwrap();
    sheet.write_number(1, 1, 1200.5).unwrap();
    sheet.write_string(2, 0, "华北").unwrap();
    sheet.write_number(2, 1, 800).unwrap();
    let notes = book.add_worksheet().set_name("Notes").unwrap();
    notes.write_string(0, 0, "checked").unwrap();
    notes.write_boolean(0, 1, true).unwrap();
    book.save(&path).unwrap();

    let got = extract::extract(&path, &options(OcrChoice::Off)).unwrap();
    assert_eq!(
        got.text,
        "## Sheet: 销售\n地区,\"Amount, CNY\"\n华东,1200.5\n华北,800\n\u{c}\n## Sheet: Notes\nchecked,true"
    );
    assert_eq!(got.pages.len(), 2);
}

#[test]
fn corrupt_office_files_fail_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.docx", "a.pptx", "a.xlsx", "a.xls", "a.ods"] {
        let path = write(
            dir.path(),
            name,
            b"PK\x03\x04 this is not really a zip archive",
        );
        let err = extract::extract(&path, &options(OcrChoice::Off)).unwrap_err();
        assert_eq!(err.kind, ErrorKind::ExtractFailed, "{name}: {err}");
        assert!(!err.message.is_empty());
    }
    let path = dir.path().join("nobody.docx");
    zip_file(&path, &[("hello.txt", "not a word document")]);
    let err = extract::extract(&path, &options(OcrChoice::Off)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ExtractFailed);
    assert!(
        err.message.contains("word/document.xml is missing"),
        "{}",
        err.message
    );
}

/// A PDF from numbered object bodies (object i+1 is `objects[i]`), with a correct xref table.
pub(crate) fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend(body);
        out.extend(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

pub(crate) fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut body = format!("<< {dict} /Length {} >>\nstream\n", data.len()).into_bytes();
    body.extend(data);
    body.extend(b"\nendstream");
    body
}

pub(crate) const BOX: &str = "/MediaBox [0 0 612 792]";
pub(crate) const HELLO: &str =
    "Hostile corpus control page: this line has plenty of ordinary text.";

/// A one-page PDF: `page_extra` goes into the page dictionary, `resources` into its resources,
/// `content` is its content stream (object 5), `more` are objects 6, 7, …
pub(crate) fn one_page_pdf(
    page_extra: &str,
    resources: &str,
    content: &[u8],
    more: &[Vec<u8>],
) -> Vec<u8> {
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!(
            "<< /Type /Page /Parent 2 0 R {page_extra} /Resources << /Font << /F1 4 0 R >> {resources} >> /Contents 5 0 R >>"
        )
        .into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
        stream("", content),
    ];
    objects.extend(more.iter().cloned());
    pdf(&objects)
}

pub(crate) fn text_content(text: &str) -> Vec<u8> {
    format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET").into_bytes()
}

#[test]
fn a_generated_pdf_reads_through_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "ok.pdf", &crate::corpus::hello_pdf());
    let got = extract::extract(&path, &worker_only(OcrChoice::Off)).unwrap();
    assert_eq!(got.text, HELLO);
    assert_eq!(got.pages[0].method, Method::PdfExtract);
    assert_eq!(got.pages[0].glyphs, Some(57), "HELLO without its spaces");
    assert_eq!(
        got.pages[0].why,
        "pdf-extract found 57 characters of 57 glyphs"
    );
    assert!(got.fallbacks.is_empty(), "{:?}", got.fallbacks);
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
}

#[test]
fn pdftotext_leads_and_the_worker_checks_its_pages() {
    if !have_program("pdftotext") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "ok.pdf", &crate::corpus::hello_pdf());
    let got = extract::extract(&path, &options(OcrChoice::Off)).unwrap();
    assert_eq!(got.text, HELLO);
    assert_eq!(got.pages[0].method, Method::Pdftotext);
    assert_eq!(
        got.pages[0].why,
        "pdftotext found 57 characters of 57 glyphs"
    );
    assert!(got.fallbacks.is_empty(), "{:?}", got.fallbacks);
}

/// One readable line, then 1,200 glyphs drawn with codes no extractor can turn into text.
fn mostly_unreadable_page() -> Vec<u8> {
    let mut content = text_content(HELLO);
    for i in 0..20 {
        let codes: String = (0..60).map(|j| format!("\\{:03o}", 1 + j % 30)).collect();
        content.extend(format!("\nBT /F1 10 Tf 72 {} Td ({codes}) Tj ET", 680 - 14 * i).bytes());
    }
    one_page_pdf(BOX, "", &content, &[])
}

#[test]
fn a_page_that_draws_far_more_than_any_extractor_finds_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "lost.pdf", &mostly_unreadable_page());
    let mut paths = vec![("worker alone", worker_only(OcrChoice::Off))];
    if have_program("pdftotext") {
        paths.push(("pdftotext leading", options(OcrChoice::Off)));
    }
    for (label, opts) in paths {
        let got = extract::extract(&path, &opts).unwrap();
        assert!(got.text.contains(HELLO), "{label}: {:?}", got.text);
        assert_eq!(got.pages[0].glyphs, Some(57 + 1200), "{label}");
        assert_eq!(
            got.warnings,
            [
                "page 1: every extractor found less than half of the text the page draws \
              (page 1: 57 characters of 1257 glyphs); the model is not given all of it"
            ],
            "{label}"
        );
    }
}

#[test]
fn a_page_that_makes_pdf_extract_panic_is_read_by_lopdf() {
    // No MediaBox anywhere: pdf-extract panics on it; lopdf does not need it.
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "nobox.pdf",
        &one_page_pdf("", "", &text_content(HELLO), &[]),
    );
    let got = extract::extract(&path, &worker_only(OcrChoice::Off)).unwrap();
    assert!(
        got.text.contains("Hostile corpus control page"),
        "{:?}",
        got.text
    );
    assert_eq!(got.pages[0].method, Method::Lopdf);
    assert!(
        got.fallbacks
            .iter()
            .any(|f| f.starts_with("page 1: pdf-extract panicked")),
        "{:?}",
        got.fallbacks
    );
}

#[test]
fn without_a_working_worker_pdftotext_still_reads() {
    if !have_program("pdftotext") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "ok.pdf", &crate::corpus::hello_pdf());
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

/// Three pages; the second draws a form XObject that draws itself.
fn three_pages_with_a_loop_in_the_middle() -> Vec<u8> {
    let page = |content: u32, resources: &str| {
        format!(
            "<< /Type /Page /Parent 2 0 R {BOX} /Resources << /Font << /F1 3 0 R >> {resources} >> /Contents {content} 0 R >>"
        )
        .into_bytes()
    };
    pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [4 0 R 6 0 R 8 0 R] /Count 3 >>".to_vec(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
        page(5, ""),
        stream(
            "",
            &text_content("First page: the worker reads this one before it dies."),
        ),
        page(7, "/XObject << /X0 10 0 R >>"),
        stream("", b"/X0 Do"),
        page(9, ""),
        stream(
            "",
            &text_content("Third page: read by the restarted worker after the crash."),
        ),
        stream(
            "/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /X0 10 0 R >> >>",
            b"/X0 Do",
        ),
    ])
}

#[test]
fn a_page_that_kills_the_worker_costs_that_page_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "three.pdf",
        &three_pages_with_a_loop_in_the_middle(),
    );
    if have_program("pdftotext") {
        // pdftotext leading: the worker's survey stops at its depth limit, finds nothing
        // drawn on page 2, and never asks pdf-extract to read it.
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
    let got = extract::extract(&path, &worker_only(OcrChoice::Off)).unwrap();
    eprintln!("{:?}", got.fallbacks);
    assert_eq!(
        got.text,
        "First page: the worker reads this one before it dies.\n\u{c}\n\
         Third page: read by the restarted worker after the crash."
    );
    let methods: Vec<Method> = got.pages.iter().map(|p| p.method).collect();
    assert_eq!(
        methods,
        [Method::PdfExtract, Method::Empty, Method::PdfExtract]
    );
    assert!(
        got.fallbacks
            .iter()
            .any(|f| f == "page 2: pdf-extract worker overflowed its stack (endless recursion in the document)"),
        "{:?}",
        got.fallbacks
    );
}

#[test]
fn a_worker_past_its_time_limit_is_killed_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "ok.pdf", &crate::corpus::hello_pdf());
    // A stand-in worker that never answers.
    let hanging = write(dir.path(), "hanging-worker", b"#!/bin/sh\nexec sleep 60\n");
    std::fs::set_permissions(
        &hanging,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let opts = ExtractOptions {
        worker_exe: hanging,
        pdf_timeout: Duration::from_secs(2),
        ..options(OcrChoice::Off)
    };
    match extract::extract(&path, &opts) {
        Ok(got) => {
            assert_eq!(got.pages[0].method, Method::Pdftotext);
            assert!(
                got.fallbacks
                    .iter()
                    .any(|f| f.contains("the PDF worker timed out after 2s checking the pages")),
                "{:?}",
                got.fallbacks
            );
        }
        Err(e) => {
            assert_eq!(e.kind, ErrorKind::ExtractFailed);
            assert!(e.message.contains("timed out after 2s"), "{e}");
        }
    }
}

/// A zlib stream of `len` zeros, compressed as it is written (never held in memory whole).
pub(crate) fn zeros_zlib(len: u64) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    zip.start_file("zeros", options).unwrap();
    let chunk = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        zip.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    let archive = zip.finish().unwrap().into_inner();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(archive)).unwrap();
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut archive.by_index_raw(0).unwrap(), &mut raw).unwrap();
    // zlib = header + raw deflate + Adler-32 (of zeros: a = 1, b = len mod 65521).
    let adler = (((len % 65521) as u32) << 16) | 1;
    let mut out = vec![0x78, 0x9C];
    out.extend(raw);
    out.extend(adler.to_be_bytes());
    out
}

fn assert_failed(result: Result<Extracted, zhi::error::JobError>, kind: ErrorKind, needle: &str) {
    match result {
        Ok(got) => panic!("expected {kind} ({needle}), got text {:?}", got.text),
        Err(e) => {
            eprintln!("as expected: {e}");
            assert_eq!(e.kind, kind, "{e}");
            assert!(
                e.message.contains(needle),
                "{kind}: {:?} lacks {needle:?}",
                e.message
            );
        }
    }
}

#[test]
fn hostile_pdfs_fail_as_jobs_not_as_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let opts = ExtractOptions {
        pdf_memory_limit_bytes: 1 << 30,
        pdf_timeout: Duration::from_secs(60),
        ..options(OcrChoice::Off)
    };
    let good = crate::corpus::hello_pdf();

    // Cut before the page's content: nothing can be salvaged.
    let truncated = write(dir.path(), "truncated.pdf", &good[..good.len() * 2 / 5]);
    let err = extract::extract(&truncated, &opts).unwrap_err();
    eprintln!("truncated: {err}");
    assert!(
        matches!(err.kind, ErrorKind::ExtractFailed),
        "truncated: {err}"
    );
    assert!(!err.message.is_empty());

    // Bytes flipped all through the file.
    let mut flipped = good.clone();
    for i in (7..flipped.len()).step_by(5) {
        flipped[i] ^= 0xA5;
    }
    let flipped = write(dir.path(), "flipped.pdf", &flipped);
    let err = extract::extract(&flipped, &opts).unwrap_err();
    eprintln!("flipped: {err}");
    assert_eq!(err.kind, ErrorKind::ExtractFailed, "flipped: {err}");

    // A form XObject that draws itself: endless recursion in pdf-extract.
    let looping = one_page_pdf(
        BOX,
        "/XObject << /X0 6 0 R >>",
        b"/X0 Do",
        &[stream(
            "/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /X0 6 0 R >> >>",
            b"/X0 Do",
        )],
    );
    let path = write(dir.path(), "selfref.pdf", &looping);
    // pdftotext leading: the survey stops at its depth limit and the page is simply empty.
    let err = extract::extract(&path, &opts).unwrap_err();
    assert_eq!(err.kind, ErrorKind::ExtractFailed, "{err}");
    assert!(err.message.contains("no text found in 1 page"), "{err}");
    // The worker alone: pdf-extract recurses until the stack overflows.
    let alone = ExtractOptions {
        pdftotext: false,
        ..opts.clone()
    };
    let err = extract::extract(&path, &alone).unwrap_err();
    eprintln!("self-referencing XObject: {err}");
    assert_eq!(
        err.kind,
        ErrorKind::ExtractFailed,
        "self-referencing XObject: {err}"
    );
    assert!(
        err.message.contains("no text found in 1 page"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("overflowed its stack"),
        "the reason names the crash: {}",
        err.message
    );

    // 1 GiB of zeros in a ~1 MiB content stream, against a 512 MiB memory limit.
    let zeros = zeros_zlib(1 << 30);
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        format!("<< /Type /Page /Parent 2 0 R {BOX} /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>").into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ];
    objects.push(stream("/Filter /FlateDecode", &zeros));
    let bomb = pdf(&objects);
    assert!(
        bomb.len() < 4 << 20,
        "the bomb is small: {} bytes",
        bomb.len()
    );
    let path = write(dir.path(), "bomb.pdf", &bomb);
    let small = ExtractOptions {
        pdf_memory_limit_bytes: 512 << 20,
        ..opts.clone()
    };
    let err = extract::extract(&path, &small).unwrap_err();
    eprintln!("bomb: {err}");
    assert_eq!(err.kind, ErrorKind::ExtractFailed, "bomb: {err}");
    assert!(
        err.message.contains("ran out of memory (limit 512 MiB)"),
        "{}",
        err.message
    );

    // Encrypted (pypdf's test resources): with an empty user password the text is read; with a
    // real one the job fails and says a password is needed.
    for name in [
        "r2-empty-password.pdf",
        "r4-owner-password.pdf",
        "r6-empty-password.pdf",
    ] {
        let Some(pdf) = fetched(&format!("pypdf/resources/encryption/{name}")) else {
            continue;
        };
        let got = extract::extract(&pdf, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            got.text.contains("pdf encryption test"),
            "{name}: {:?}",
            got.text
        );
    }
    for name in [
        "r2-user-password.pdf",
        "r4-aes-user-password.pdf",
        "r6-both-passwords.pdf",
    ] {
        let Some(pdf) = fetched(&format!("pypdf/resources/encryption/{name}")) else {
            continue;
        };
        assert_failed(
            extract::extract(&pdf, &opts),
            ErrorKind::ExtractFailed,
            "needs a password",
        );
    }
}

#[test]
fn hostile_files_of_any_kind_fail_with_kind_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(OcrChoice::Off);

    let empty = write(dir.path(), "empty.pdf", b"");
    assert_failed(
        extract::extract(&empty, &opts),
        ErrorKind::ExtractFailed,
        "empty file",
    );
    let empty = write(dir.path(), "empty.txt", b"");
    assert_failed(
        extract::extract(&empty, &opts),
        ErrorKind::ExtractFailed,
        "empty file",
    );

    let folder = dir.path().join("x.pdf");
    std::fs::create_dir(&folder).unwrap();
    assert_failed(
        extract::extract(&folder, &opts),
        ErrorKind::InputError,
        "is a directory",
    );

    let link = dir.path().join("gone.pdf");
    std::os::unix::fs::symlink(dir.path().join("missing.pdf"), &link).unwrap();
    assert_failed(
        extract::extract(&link, &opts),
        ErrorKind::InputError,
        "broken symbolic link",
    );

    let binary = write(
        dir.path(),
        "program.txt",
        &[
            0x7F, b'E', b'L', b'F', 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ],
    );
    assert_failed(
        extract::extract(&binary, &opts),
        ErrorKind::UnsupportedType,
        "binary file",
    );

    let unknown = write(dir.path(), "setup.exe", b"MZ");
    assert_failed(
        extract::extract(&unknown, &opts),
        ErrorKind::UnsupportedType,
        ".exe",
    );

    let fake_image = write(dir.path(), "photo.jpg", b"not a jpeg at all");
    match extract::extract(&fake_image, &options(OcrChoice::Auto)) {
        Err(e) => assert!(
            matches!(e.kind, ErrorKind::ExtractFailed | ErrorKind::OcrFailed),
            "{e}"
        ),
        Ok(got) => panic!("a fake image gave text {:?}", got.text),
    }

    let fifo = dir.path().join("pipe.txt");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        assert_failed(
            extract::extract(&fifo, &opts),
            ErrorKind::InputError,
            "not a regular file",
        );
    }

    // chmod 000: root reads it anyway, so the check only means something for other users.
    let locked = write(dir.path(), "secret.txt", b"top secret");
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let running_as_root = std::fs::read(&locked).is_ok();
    let result = extract::extract(&locked, &opts);
    if running_as_root {
        eprintln!(
            "notice: running as root, so a chmod 000 file is readable; checked only that it does not crash"
        );
        assert!(result.is_ok());
    } else {
        assert_failed(result, ErrorKind::InputError, "permission denied");
    }
}

#[test]
fn scanned_pages_are_ocred_in_parallel_and_kept_in_order() {
    let Some(pdf) = fetched("ocrmypdf/resources/multipage.pdf") else {
        return;
    };
    if !tesseract_ready() {
        return;
    }
    let opts = ExtractOptions {
        ocr_parallelism: 3,
        ..options(OcrChoice::Tesseract)
    };
    let got = extract::extract(&pdf, &opts).expect("OCR three pages at a time");
    eprintln!("multipage.pdf: {:?}", got.fallbacks);
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

#[test]
fn workers_run_side_by_side_and_stop_when_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "ok.pdf", &crate::corpus::hello_pdf());
    let opts = options(OcrChoice::Off);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| extract::extract(&path, &opts)))
            .collect();
        for handle in handles {
            assert_eq!(handle.join().unwrap().unwrap().text, HELLO);
        }
    });

    let token = tokio_util::sync::CancellationToken::new();
    token.cancel();
    let cancelled = ExtractOptions {
        cancel: Some(token),
        ..opts
    };
    assert_failed(
        extract::extract(&path, &cancelled),
        ErrorKind::Cancelled,
        "cancelled",
    );
}

/// The share of `reference`'s characters (a multiset, whitespace left out) that `candidate`
/// has too: how the issue measures a PDF reading against pdftotext.
fn char_recall(reference: &str, candidate: &str) -> f64 {
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

/// The producers corpus (`scripts/fetch-pdf-corpus.sh`): real text PDFs from TeX engines,
/// Ghostscript, LibreOffice, Skia, cairo, ReportLab and more, English and Chinese. Every one
/// reads at character recall ≥ 0.98 against pdftotext, and no page is lost without a warning.
#[test]
fn every_pdf_of_the_producers_corpus_reads_whole() {
    let Some(list) = fetched("corpus/corpus.tsv") else {
        return;
    };
    if !have_program("pdftotext") {
        return;
    }
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
        eprintln!("{producer:12} {language} {r:.4} {file} {:?}", got.warnings);
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
        eprintln!(
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

/// A run over a PDF whose page lost most of its text still succeeds with what there is, and
/// its record says so.
#[test]
fn text_lost_in_extraction_is_a_warning_in_the_jobs_record() {
    use crate::support::{FakeApi, Recorded, Reply};
    use crate::testenv::{TestEnv, record, run_skill, show};
    let env = TestEnv::new();
    env.write("docs/lost.pdf", mostly_unreadable_page());
    env.write("docs/fine.pdf", crate::corpus::hello_pdf());
    let api = FakeApi::start(|_: &Recorded| {
        Reply::text("A summary of the control page and its ordinary text, in a few words.")
    });
    let out = run_skill(&env, &api, "summarize", &["docs"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let lost = record(&env, "docs/lost.pdf");
    assert_eq!(lost["status"], "succeeded", "{lost}");
    let warnings = lost["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{lost}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("page 1: every extractor found less than half of the text the page draws"),
        "{lost}"
    );
    let fine = record(&env, "docs/fine.pdf");
    assert!(fine.get("warnings").is_none(), "{fine}");
    // And the person watching the run is told.
    let err = crate::testenv::stderr(&out);
    assert!(
        err.contains("docs/lost.pdf") && err.contains("every extractor found less than half"),
        "{err}"
    );
}
