//! What a person sees while a run goes (docs/display.md#progress) when stderr is not a terminal:
//! plain lines with the time left and the tokens, and the summary at the end. The bar on a real
//! terminal (tmux) is checked in `tests/ext/terminal.rs`.

use crate::support::progress_parse::{Seen, parse};
use crate::support::testenv::{TestEnv, assert_exit, stderr};
use crate::support::{FakeApi, Reply};
use std::time::Duration;
use zhi::exit::Exit;

/// Not on a terminal: plain lines every few seconds with the same numbers — the time left
/// and tokens that count each answer as it arrives — and no control characters.
#[test]
fn plain_lines_say_the_time_left_and_tokens_without_control_characters() {
    let env = TestEnv::new();
    env.write(
        ".zhi/skills/agent.yaml",
        "name: agent\ndescription: An agent-loop skill for tests\nsystem_prompt: Do what the document needs.\ntools: [file_read, file_write, file_list]\nmax_turns: 5\n",
    );
    for i in 0..3 {
        env.write(&format!("docs/d{i}.txt"), format!("Report number {i}.\n"));
    }
    // Two requests a job (15 tokens each): a file written at once, then the answer after
    // 3 s. A line that shows an odd multiple of 15 counted a request of a running job.
    let api = FakeApi::start(|req| {
        if req.has_tool_result() {
            Reply::delay(Duration::from_secs(3), Reply::text("Wrote notes.md."))
        } else {
            Reply::tool_calls(vec![(
                "file_write",
                serde_json::json!({"path": "notes.md", "content": "Notes on the report."}),
            )])
        }
    });
    let out = env
        .zhi()
        .args(["run", "agent", "docs", "-j", "1", "--base-url"])
        .arg(api.base_url())
        .args(["-o", "out"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let err = stderr(&out);
    assert!(
        !err.chars().any(|c| c.is_control() && c != '\n'),
        "control characters in: {err:?}"
    );
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("zhi: ")).collect();
    let seen: Vec<Seen> = lines.iter().filter_map(|l| parse(l, 0.0)).collect();
    assert!(!seen.is_empty(), "no progress line in:\n{err}");
    assert_eq!(seen.len(), lines.len(), "{lines:?}");
    assert!(
        seen.iter().any(|s| s.done > 0 && s.eta.is_some()),
        "no line with a time left: {lines:?}"
    );
    assert!(
        seen.iter()
            .any(|s| s.tokens as u64 % 30 == 15 && s.done < s.total),
        "no line counted a request of a running job: {lines:?}"
    );
}

/// The summary at the end names the failed jobs with their kind and reason (twenty of them, and
/// where the rest are), and says where the outputs, the records and the manifest are — in
/// English and in Chinese.
#[test]
fn the_summary_says_where_things_went_and_why_jobs_failed() {
    let env = TestEnv::new();
    for i in 0..23 {
        env.write(
            &format!("docs/d{i:02}.txt"),
            format!("Report number {i}.\n"),
        );
    }
    let api = FakeApi::start(|req| {
        if req.document_text() == "Report number 22." {
            Reply::text("Report twelve, in short.")
        } else {
            Reply::zhipu_error(400, "1301", "unsafe or sensitive content")
        }
    });
    for (lang, failed, more, outputs, records, manifest) in [
        (
            "en",
            "  failed jobs:",
            "    … and 2 more — see out/.zhi/runs/",
            "  outputs:   out/",
            "  records:   out/.zhi/runs/",
            "  manifest:  out/.zhi/runs/",
        ),
        (
            "zh",
            "  失败的任务：",
            "    … 另有 2 个，见 out/.zhi/runs/",
            "  输出目录：  out/",
            "  记录：      out/.zhi/runs/",
            "  清单：      out/.zhi/runs/",
        ),
    ] {
        let out = env
            .zhi()
            .env("ZHI_LANGUAGE", lang)
            .args(["run", "summarize", "docs", "--force", "--base-url"])
            .arg(api.base_url())
            .args(["-o", "out"])
            .output()
            .unwrap();
        assert_exit(&out, Exit::JobsFailed);
        let err = stderr(&out);
        assert!(!err.chars().any(|c| c.is_control() && c != '\n'), "{err:?}");
        let lines: Vec<&str> = err.lines().collect();
        let at = |prefix: &str| {
            lines
                .iter()
                .position(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{err}"))
        };
        assert_eq!(lines[at(outputs)], outputs, "{err}");
        assert!(lines[at(records)].ends_with("/results.jsonl"), "{err}");
        let manifest = lines[at(manifest)].split_whitespace().last().unwrap();
        assert!(manifest.ends_with("/manifest.json"), "{err}");
        assert!(env.path(manifest).is_file(), "{manifest} is not there");
        let failed_at = at(failed);
        let named: Vec<&&str> = lines[failed_at..]
            .iter()
            .filter(|l| l.contains("content_filter"))
            .collect();
        assert_eq!(named.len(), 20, "{err}");
        for l in &named {
            assert!(l.contains("unsafe or sensitive content"), "{l}");
        }
        let rest = lines[at(more)];
        assert!(rest.ends_with("/results.jsonl"), "{rest}");
        let results = rest.split_whitespace().last().unwrap();
        assert!(env.path(results).is_file(), "{results} is not there");
    }
}
