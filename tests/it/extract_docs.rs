//! Extraction on documents generated here in every format zhi reads, and on a hostile corpus
//! that must end in job errors with a kind and a reason, never in a crash of this process.
//! Nothing here needs a program or a document from outside the repository: the tests that do
//! (pdftotext, tesseract, fetched documents) are in `tests/ext`, where a missing one is
//! reported as ignored.

use crate::support::corpus::{
    BOX, HELLO, W, mostly_unreadable_page, one_page_pdf, pdf, stream, text_content,
    three_pages_with_a_loop_in_the_middle, zeros_zlib, zip_file,
};
use crate::support::reading::{
    assert_failed, assert_far_more_drawn_than_found, options, recall, worker_only, write,
};
use std::process::Command;
use std::time::Duration;
use zhi::error::ErrorKind;
use zhi::extract::{self, DocKind, ExtractOptions, Method, OcrChoice};

/// Recall: the share of a reference text's tokens (a multiset) that the extracted text also
/// has; CJK ideographs count one by one, everything else by alphanumeric words, lowercased;
/// punctuation and spacing are not counted.
#[test]
fn recall_counts_cjk_by_character_and_latin_by_word() {
    assert_eq!(recall("中文 text", "中文 text"), 1.0);
    assert_eq!(recall("中文 text text", "中 text"), 0.5);
    assert_eq!(recall("Hello, World", "hello world!"), 1.0);
    assert_eq!(recall("foo bar", "foobar"), 0.0);
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

#[test]
fn a_generated_pdf_reads_through_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "ok.pdf", &crate::support::corpus::hello_pdf());
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
fn a_page_that_draws_far_more_than_any_extractor_finds_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "lost.pdf", &mostly_unreadable_page());
    assert_far_more_drawn_than_found(&path, &worker_only(OcrChoice::Off));
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
fn a_page_that_kills_the_worker_costs_that_page_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "three.pdf",
        &three_pages_with_a_loop_in_the_middle(),
    );
    // The worker alone (pdftotext leading is checked in `tests/ext`).
    let got = extract::extract(&path, &worker_only(OcrChoice::Off)).unwrap();
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
    let path = write(dir.path(), "ok.pdf", &crate::support::corpus::hello_pdf());
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

#[test]
fn hostile_pdfs_fail_as_jobs_not_as_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let opts = ExtractOptions {
        pdf_memory_limit_bytes: 1 << 30,
        pdf_timeout: Duration::from_secs(60),
        ..options(OcrChoice::Off)
    };
    let good = crate::support::corpus::hello_pdf();

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
fn workers_run_side_by_side_and_stop_when_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "ok.pdf", &crate::support::corpus::hello_pdf());
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

/// A run over a PDF whose page lost most of its text still succeeds with what there is, and
/// its record says so.
#[test]
fn text_lost_in_extraction_is_a_warning_in_the_jobs_record() {
    use crate::support::testenv::{TestEnv, assert_exit, record, run_skill};
    use crate::support::{FakeApi, Recorded, Reply};
    use zhi::exit::Exit;
    let env = TestEnv::new();
    env.write("docs/lost.pdf", mostly_unreadable_page());
    env.write("docs/fine.pdf", crate::support::corpus::hello_pdf());
    let api = FakeApi::start(|_: &Recorded| {
        Reply::text("A summary of the control page and its ordinary text, in a few words.")
    });
    let out = run_skill(&env, &api, "summarize", &["docs"]);
    assert_exit(&out, Exit::Success);
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
    let err = crate::support::testenv::stderr(&out);
    assert!(
        err.contains("docs/lost.pdf") && err.contains("every extractor found less than half"),
        "{err}"
    );
}
