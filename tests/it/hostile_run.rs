//! `zhi run` over a hostile corpus (docs/cli.md#inputs, docs/documents.md, docs/exit-codes.md): cut
//! and byte-flipped PDFs, a PDF whose form XObject draws itself, a small PDF that inflates to
//! gigabytes, an empty file, a folder named like a file, a broken link, a binary file named `.txt`,
//! and more, beside good documents. The run must finish with exit 1; every bad document is its own
//! failed record with a kind and a reason that names the problem; every good one succeeds; and the
//! model never sees a byte of a bad document.

use crate::support::corpus;
use crate::support::testenv::{TestEnv, assert_exit_for, stderr};
use crate::support::{FakeApi, Recorded, Reply};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use zhi::exit::Exit;

/// Planted in documents; the model must see each good one and none of the bad ones.
const GOOD_TEXT: &str = "GOOD-TEXT-7f3a: the minutes of the Tuesday meeting.";
const GOOD_DOCX: &str = "GOOD-DOCX-51c2: the quarterly report in Word.";
const GOOD_PDF: &str = "GOOD-PDF-9e04: a control page with plenty of ordinary text.";
const GOOD_INNER: &str = "GOOD-INNER-0b6d: a note inside a folder named like a PDF.";
const BAD_PDF: &str = "BAD-PDF-3d81 this text must never reach the model";
const BAD_BINARY: &str = "BAD-BINARY-c7e9";

/// What each bad document must end as: (input, kind, words its reason must contain).
type Expectation = (&'static str, &'static str, &'static [&'static str]);

#[test]
fn a_run_over_a_hostile_corpus_fails_each_bad_document_alone() {
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        "retry: {max_attempts: 2, base_delay_ms: 10, max_delay_ms: 20}\n",
    );
    let c = |rel: &str| env.path(&format!("corpus/{rel}"));

    // Good documents.
    env.write("corpus/notes.txt", format!("{GOOD_TEXT}\n"));
    corpus::write_docx(&c("report.docx"), &[GOOD_DOCX, "Revenue grew 12%."]);
    env.write("corpus/control.pdf", corpus::text_pdf(GOOD_PDF));
    env.write("corpus/x.pdf/inside.txt", format!("{GOOD_INNER}\n"));
    let good: BTreeMap<String, &str> = BTreeMap::from([
        ("corpus/notes.txt".to_string(), GOOD_TEXT),
        ("corpus/report.docx".to_string(), GOOD_DOCX),
        ("corpus/control.pdf".to_string(), GOOD_PDF),
        ("corpus/x.pdf/inside.txt".to_string(), GOOD_INNER),
    ]);
    // Real PDFs nobody here wrote (a good one, an encrypted one) are run over in `tests/ext`.

    // Bad documents.
    let bad_pdf = corpus::text_pdf(BAD_PDF);
    env.write("corpus/cut-early.pdf", corpus::truncated(&bad_pdf, 2, 5));
    env.write("corpus/cut-header.pdf", &bad_pdf[..9]);
    env.write("corpus/flipped.pdf", corpus::byte_flipped(&bad_pdf));
    env.write("corpus/selfref.pdf", corpus::self_referencing_xobject_pdf());
    // 256 MiB of zeros listed 9 times: 2.25 GiB to inflate from 230 KiB, against the worker's
    // 2 GiB address space. (Most of this test's time is poppler streaming through the bomb
    // after the worker died: pdftotext for a second opinion, pdftoppm for OCR.)
    let bomb = corpus::bomb_pdf(256 << 20, 9);
    assert!(
        bomb.len() < 1 << 20,
        "the bomb is small: {} bytes",
        bomb.len()
    );
    env.write("corpus/bomb.pdf", &bomb);
    env.write("corpus/empty.pdf", b"");
    env.write("corpus/empty.txt", b"");
    let mut binary = vec![0x7F, b'E', b'L', b'F', 2, 1, 1, 0];
    binary.extend([0u8; 24]);
    binary.extend(BAD_BINARY.as_bytes());
    binary.extend([0u8; 40]);
    env.write("corpus/program.txt", &binary);
    std::os::unix::fs::symlink("missing.pdf", c("gone.pdf")).unwrap();
    env.write(
        "corpus/not-a-zip.docx",
        b"PK\x03\x04 this is not really a zip archive",
    );
    env.write("corpus/setup.exe", b"MZ\x90\x00");
    env.write("corpus/photo.jpg", b"not a JPEG at all");
    // A named pipe is no document: skipped, and reading it must not hang the run.
    let fifo = c("pipe.txt");
    let fifo_made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());

    let mut expected: Vec<Expectation> = vec![
        (
            "corpus/cut-early.pdf",
            "extract_failed",
            &["cannot read the PDF"],
        ),
        (
            "corpus/cut-header.pdf",
            "extract_failed",
            &["cannot read the PDF"],
        ),
        (
            "corpus/flipped.pdf",
            "extract_failed",
            &["cannot parse the PDF"],
        ),
        (
            "corpus/selfref.pdf",
            "extract_failed",
            // With pdftotext leading, the worker's survey stops at its depth limit and finds
            // the page empty; alone, pdf-extract recurses until its stack overflows.
            if crate::support::reading::on_path("pdftotext") {
                &["no text found in 1 page"]
            } else {
                &["no text found in 1 page", "overflowed its stack"]
            },
        ),
        (
            "corpus/bomb.pdf",
            "extract_failed",
            &["no text found in 1 page", "ran out of memory"],
        ),
        ("corpus/empty.pdf", "extract_failed", &["empty file"]),
        ("corpus/empty.txt", "extract_failed", &["empty file"]),
        ("corpus/program.txt", "unsupported_type", &["binary file"]),
        (
            "corpus/gone.pdf",
            "input_error",
            &["broken symbolic link", "missing.pdf"],
        ),
        ("corpus/not-a-zip.docx", "extract_failed", &["docx"]),
        ("corpus/setup.exe", "unsupported_type", &[".exe"]),
        (
            "corpus/photo.jpg",
            "extract_failed",
            &["cannot decode the image"],
        ),
    ];
    // An unreadable file (chmod 000) means something only for users other than root.
    let locked = env.write("corpus/secret.txt", "BAD-LOCKED-5a5a");
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    if std::fs::read(&locked).is_ok() {
        eprintln!("notice: running as root, a chmod 000 file is readable; not part of the corpus");
        std::fs::remove_file(&locked).unwrap();
    } else {
        expected.push(("corpus/secret.txt", "input_error", &["permission denied"]));
    }

    let api = FakeApi::start(|_: &Recorded| Reply::text("Summarised."));
    let started = Instant::now();
    let out = env
        .zhi()
        .args([
            "--no-progress",
            "run",
            "summarize",
            "corpus",
            "-o",
            "out",
            "-j",
            "4",
            "--base-url",
            &api.base_url(),
        ])
        .timeout(Duration::from_secs(600))
        .output()
        .unwrap();
    let took = started.elapsed();
    eprintln!("the hostile run took {took:?}\n{}", stderr(&out));
    let _ = std::fs::remove_file(&fifo);
    assert_exit_for(&out, Exit::JobsFailed, "the run finishes with failures");

    let records = records(&env);
    let shown: Vec<String> = records
        .iter()
        .map(|(input, r)| {
            format!(
                "{input}: {} {} {}",
                r["status"], r["error"]["kind"], r["error"]["message"]
            )
        })
        .collect();
    let shown = shown.join("\n");
    eprintln!("{shown}");

    for (input, kind, words) in &expected {
        let r = records
            .get(*input)
            .unwrap_or_else(|| panic!("no record for {input}\n{shown}"));
        assert_eq!(r["status"], "failed", "{input}: {r}");
        assert_eq!(r["error"]["kind"], *kind, "{input}: {r}");
        let message = r["error"]["message"].as_str().unwrap_or_default();
        for word in *words {
            assert!(
                message.contains(word),
                "{input}: {message:?} lacks {word:?}"
            );
        }
        assert!(
            r["outputs"].as_array().is_none_or(Vec::is_empty),
            "{input}: {r}"
        );
        assert!(
            !env.path(&format!("out/summarize/{input}")).exists(),
            "{input} has an output folder"
        );
    }
    for input in good.keys() {
        let r = records
            .get(input)
            .unwrap_or_else(|| panic!("no record for {input}\n{shown}"));
        assert_eq!(r["status"], "succeeded", "{input}: {r}");
        let response = env.path(&format!("out/summarize/{input}/summary.md"));
        assert_eq!(
            std::fs::read_to_string(&response).unwrap_or_default(),
            "Summarised.\n",
            "{}",
            response.display()
        );
    }
    // Nothing else: the folder named like a file and the pipe are no jobs of their own.
    assert_eq!(
        records.len(),
        expected.len() + good.len(),
        "one record per document\n{shown}"
    );
    assert!(!records.contains_key("corpus/x.pdf"));
    if fifo_made {
        assert!(!records.contains_key("corpus/pipe.txt"));
    }
    let m: Value = serde_json::from_slice(
        &std::fs::read(env.path("out/manifest.json")).expect("the run's manifest"),
    )
    .unwrap();
    assert_eq!(m["status"], "completed_with_failures", "{m}");
    assert_eq!(m["counts"]["failed"], expected.len(), "{m}");
    assert_eq!(m["counts"]["succeeded"], good.len(), "{m}");

    // The model saw each good document (its marker in the text of a request of its own),
    // and nothing of a bad one.
    let chats = api.chat_requests();
    for (input, marker) in &good {
        assert_eq!(
            chats
                .iter()
                .filter(|r| r.document_text().contains(marker))
                .count(),
            1,
            "{input} reached the model once"
        );
    }
    for r in &chats {
        for (input, _, _) in &expected {
            assert!(
                !r.body_text.contains(input),
                "a request names {input}: {}",
                r.body_text
            );
        }
        for marker in [BAD_PDF, BAD_BINARY, "BAD-LOCKED"] {
            assert!(!r.body_text.contains(marker), "{marker} reached the model");
        }
    }
    // The summary on stderr lists the failures with their kinds.
    let err = stderr(&out);
    assert!(err.contains("failed jobs:"), "{err}");
    assert!(err.contains("corpus/bomb.pdf  extract_failed"), "{err}");
}

/// The run's `results.jsonl`, by input.
fn records(env: &TestEnv) -> BTreeMap<String, Value> {
    let runs = std::fs::read_dir(env.path("out/.zhi/runs"))
        .expect("a run folder")
        .count();
    assert_eq!(runs, 1, "one run folder");
    crate::support::testenv::records_by_input(&env.path("out"))
}
