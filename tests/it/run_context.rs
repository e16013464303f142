//! One run, one client: chat and OCR API requests share the run's rate budget and its
//! rate-limit news; the run's records and manifest are written whatever happens to one of them;
//! and the pieces of a long document's outputs are joined for every text type `file_write`
//! writes.

use crate::ocr_api::{layout_answer, page_png};
use crate::support::fake_api::{FakeApi, Reply};
use crate::support::testenv::{TestEnv, assert_exit, show};
use serde_json::{Value, json};
use std::time::Duration;
use zhi::exit::Exit;

fn scans(env: &TestEnv, n: usize) {
    for i in 0..n {
        env.write(&format!("scans/page-{i}.png"), page_png());
    }
}

fn manifest(env: &TestEnv, out: &str) -> Value {
    serde_json::from_slice(&std::fs::read(env.path(out).join("manifest.json")).unwrap()).unwrap()
}

/// `--rpm 240` spaces every request of the run 250 ms apart, OCR and chat alike: one budget,
/// not one per client.
#[test]
fn rpm_holds_across_chat_and_ocr_requests_together() {
    let env = TestEnv::new();
    scans(&env, 4);
    let api = FakeApi::start(|req| {
        if req.path.ends_with("/layout_parsing") {
            layout_answer("# A scanned page\n\nSome words.")
        } else {
            Reply::text("A page with a few words on it, summarised.")
        }
    });
    let out = env
        .zhi()
        .args([
            "--no-progress",
            "run",
            "summarize",
            "scans",
            "--ocr",
            "glm-ocr",
        ])
        .args(["--rpm", "240", "-j", "4", "-o", "out", "--base-url"])
        .arg(api.base_url())
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let reqs = api.requests();
    let ocr = reqs
        .iter()
        .filter(|r| r.path.ends_with("/layout_parsing"))
        .count();
    let chat = reqs.iter().filter(|r| r.is_chat()).count();
    assert_eq!((ocr, chat), (4, 4), "one OCR and one chat request per page");
    let mut times: Vec<_> = reqs
        .iter()
        .filter(|r| r.is_chat() || r.path.ends_with("/layout_parsing"))
        .map(|r| r.at)
        .collect();
    times.sort();
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    // 250 ms apart, less what the network and the server's read of a request take.
    let shortest = gaps.iter().min().copied().unwrap_or_default();
    assert!(
        shortest >= Duration::from_millis(200),
        "two requests {shortest:?} apart under --rpm 240: {gaps:?}"
    );
}

/// A 429 on an OCR request slows the run's pool, as one on a chat request does.
#[test]
fn an_ocr_rate_limit_slows_the_pool() {
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        "retry: {max_attempts: 3, base_delay_ms: 10, max_delay_ms: 20}\n",
    );
    // Four pages: after the halving, too few successes follow to climb back to four.
    scans(&env, 4);
    let first = std::sync::atomic::AtomicBool::new(true);
    let api = FakeApi::start(move |req| {
        if req.path.ends_with("/layout_parsing") {
            if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
                return Reply::zhipu_error(429, "1302", "rate limit reached")
                    .with_header("Retry-After", "1");
            }
            layout_answer("# A scanned page\n\nSome words.")
        } else {
            Reply::text("A page with a few words on it, summarised.")
        }
    });
    let out = env
        .zhi()
        .args([
            "-v",
            "--no-progress",
            "run",
            "summarize",
            "scans",
            "--ocr",
            "glm-ocr",
        ])
        .args(["-j", "auto", "-o", "out", "--base-url"])
        .arg(api.base_url())
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let c = &manifest(&env, "out")["concurrency"];
    assert_eq!(c["mode"], "auto");
    let (initial, last) = (c["initial"].as_u64().unwrap(), c["final"].as_u64().unwrap());
    assert!(
        last < initial,
        "the OCR 429 did not slow the pool: initial {initial}, last {last}\n{}",
        show(&out)
    );
    assert!(
        crate::support::testenv::stderr(&out).contains("concurrency 4 -> 2 (rate limited)"),
        "{}",
        show(&out)
    );
}

/// Jobs ran and were recorded, but the manifest cannot be written (a folder is in its way):
/// exit 75, to be retried, never 2 ("nothing ran"); the records stay in results.jsonl.
#[test]
fn a_manifest_that_cannot_be_written_after_the_jobs_ran_is_exit_75() {
    let env = TestEnv::new();
    env.write(
        "notes.txt",
        "The meeting moved to Thursday at ten; bring the budget figures.",
    );
    std::fs::create_dir_all(env.path("out/manifest.json/in-the-way")).unwrap();
    let api = FakeApi::always(Reply::text("The meeting is now on Thursday at ten."));
    let out = env
        .zhi()
        .args([
            "--no-progress",
            "run",
            "summarize",
            "notes.txt",
            "-o",
            "out",
            "--base-url",
        ])
        .arg(api.base_url())
        .output()
        .unwrap();
    assert_exit(&out, Exit::TempFail);
    assert!(
        crate::support::testenv::stderr(&out).contains("cannot write the manifest"),
        "{}",
        show(&out)
    );
    let records = env.latest_records("out");
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["status"], "succeeded");
}

/// A map-mode skill whose pieces each write LaTeX: the job's `.tex` is every piece's part,
/// joined in order, as `.md` would be.
#[test]
fn map_mode_joins_tex_outputs_like_every_text_type() {
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        "models:\n  glm-4-flash: {context_window: 4000, max_output: 100}\n",
    );
    env.user_skill(
        "latex-notes.yaml",
        "name: latex-notes\ndescription: Notes on a document, in LaTeX\n\
         system_prompt: Write notes on the document as notes.tex.\n\
         tools: [file_read, file_write]\nmax_turns: 3\n\
         input:\n  args:\n    - {name: file, type: file, required: true}\n\
         output:\n  files: [notes.tex]\nchunking: map\n",
    );
    let text: String = (1..=6)
        .map(|i| format!("\u{c}MARK-{i:03} {}\n", "lorem ".repeat(44)))
        .collect();
    env.write("paper.txt", text);
    let api = FakeApi::start(|r| {
        if r.has_tool_result() {
            return Reply::text("done");
        }
        let doc = r.last_user_text().unwrap_or_default();
        let marks: Vec<&str> = doc
            .split_whitespace()
            .filter(|w| w.starts_with("MARK-"))
            .collect();
        Reply::tool_calls(vec![(
            "file_write",
            json!({"path": "notes.tex", "content": format!("\\section{{{}}}\n{}\n", marks.join(" "), crate::support::FILLER)}),
        )])
    });
    let out = env
        .zhi()
        .args([
            "--no-progress",
            "run",
            "latex-notes",
            "paper.txt",
            "-o",
            "out",
            "--base-url",
        ])
        .arg(api.base_url())
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let records = env.latest_records("out");
    assert!(
        records[0]["chunks"]["total"].as_u64().unwrap() > 1,
        "{records:?}"
    );
    let notes = std::fs::read_to_string(env.path("out/latex-notes/paper.txt/notes.tex")).unwrap();
    let marks: Vec<&str> = notes
        .split(|c: char| c.is_whitespace() || c == '{' || c == '}')
        .filter(|w| w.starts_with("MARK-"))
        .collect();
    let want: Vec<String> = (1..=6).map(|i| format!("MARK-{i:03}")).collect();
    assert_eq!(marks, want, "every piece's part, once, in order:\n{notes}");
}
