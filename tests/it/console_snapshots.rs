//! What a person reads, pinned: the summary at the end of a run, `zhi manifest show`, `zhi
//! config show`, `zhi skills show`, `zhi plan` and the text of `zhi report`, each in English
//! and in Chinese, as insta snapshots of the whole stdout and stderr. A change in wording or
//! layout shows up as a reviewed change to a `.snap` file. What differs from one machine or
//! run to the next (temporary folders, run ids, times, durations, hashes, the fake server's
//! port, zhi's version) is replaced by a placeholder.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::testenv::{TestEnv, assert_exit, stderr, stdout};
use std::process::Output;
use std::time::Duration;
use zhi::exit::Exit;

/// The two languages every view is pinned in.
const LANGS: [&str; 2] = ["en", "zh"];

/// What varies between machines and runs, replaced; `durations` too for what a run took
/// (not for settings, whose values are what they are).
fn filters(durations: bool) -> Vec<(&'static str, &'static str)> {
    let mut filters = vec![
        // 2025-01-31T12:34:56.789Z
        (
            r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
            "[timestamp]",
        ),
        // sha256 of inputs, cache keys, job ids
        (r"\b[0-9a-f]{16,64}\b", "[hash]"),
        (r"\b127\.0\.0\.1:\d+\b", "127.0.0.1:[port]"),
        (r"\bzhi \d+\.\d+\.\d+\S*", "zhi [version]"),
        (r"/tmp/[^\s]+", "[TMP]"),
    ];
    if durations {
        // `(0.4s)`, `0.3s`, `850 ms`, `1.2 s`, `4 min 05 s`, and in Chinese.
        filters.extend([
            (r"\d+ min \d+ s\b", "[duration]"),
            (r"\d+ 分 \d+ 秒", "[duration]"),
            (r"\b\d+(\.\d+)? ?(ms|s)\b", "[duration]"),
            (r"\d+(\.\d+)? ?(毫秒|秒)", "[duration]"),
        ]);
    }
    filters
}

/// `text` with this test's own temporary folders, binary and run ids replaced (the runs in
/// `out/` as `[run 1]`, `[run 2]`… oldest first).
fn stable(env: &TestEnv, text: &str) -> String {
    let mut runs: Vec<String> = std::fs::read_dir(env.path("out/.zhi/runs"))
        .map(|dir| {
            dir.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    runs.sort();
    let mut text = env.filter(text).replace(env!("CARGO_BIN_EXE_zhi"), "[zhi]");
    for (i, run) in runs.iter().enumerate() {
        text = text.replace(run.as_str(), &format!("[run {}]", i + 1));
    }
    text
}

/// The whole of what a command printed, as a person sees it.
fn shown(env: &TestEnv, out: &Output) -> String {
    format!(
        "--- stdout\n{}--- stderr\n{}",
        stable(env, &stdout(out)),
        stable(env, &stderr(out))
    )
}

fn snapshot(name: &str, text: &str) {
    let durations = ["run_summary", "manifest_show", "report_text"]
        .iter()
        .any(|n| name.starts_with(n));
    insta::with_settings!({filters => filters(durations)}, {
        insta::assert_snapshot!(name.to_string(), text);
    });
}

/// A summary for most documents; `docs/c.txt` refused by the content filter; `docs/d.txt`
/// answered slowly (so it is the slowest job).
fn server() -> FakeApi {
    FakeApi::start(|req: &Recorded| match req.input_document().as_str() {
        "docs/c.txt" => Reply::zhipu_error(400, "1301", "unsafe or sensitive content"),
        "docs/d.txt" => Reply::delay(
            Duration::from_millis(300),
            Reply::text("# d\n\nA slow summary.\n").with_usage(300, 60),
        ),
        doc => Reply::text(format!("# {doc}\n\nA summary.\n")).with_usage(120, 30),
    })
}

/// `zhi run summarize docs` in `lang`, one job at a time (so records keep the plan's order).
fn run(env: &TestEnv, api: &FakeApi, lang: &str) -> Output {
    env.zhi()
        .env("ZHI_LANGUAGE", lang)
        .args(["--no-progress", "run", "summarize", "docs", "-j", "1"])
        .args(["--base-url", &api.base_url(), "-o", "out"])
        .output()
        .unwrap()
}

/// A folder run twice: first `docs/a.txt` and `docs/b.txt`, then with `docs/c.txt` (fails)
/// and `docs/d.txt` (succeeds) added — the second run has succeeded, failed and cached jobs.
/// Returns what the second run printed.
fn two_runs(env: &TestEnv, lang: &str) -> Output {
    env.write(
        "zhi.yaml",
        "retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n",
    );
    env.write("docs/a.txt", "The board approved the budget.\n");
    env.write("docs/b.txt", "The plant opens in May.\n");
    let api = server();
    assert_exit(&run(env, &api, lang), Exit::Success);
    env.write(
        "docs/c.txt",
        "Sensitive words the provider refuses to read.\n",
    );
    env.write("docs/d.txt", "A long report, read slowly.\n");
    let out = run(env, &api, lang);
    assert_exit(&out, Exit::JobsFailed);
    out
}

/// `zhi ARGS…` in `lang`, expected to succeed.
fn zhi(env: &TestEnv, lang: &str, args: &[&str]) -> Output {
    let out = env
        .zhi()
        .env("ZHI_LANGUAGE", lang)
        .args(args)
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    out
}

/// The end of a run with succeeded, failed and cached jobs; then the same run through
/// `zhi manifest show` and `zhi report`.
#[test]
fn a_run_its_manifest_and_its_report() {
    for lang in LANGS {
        let env = TestEnv::new();
        let out = two_runs(&env, lang);
        snapshot(&format!("run_summary_{lang}"), &shown(&env, &out));
        let show = zhi(&env, lang, &["manifest", "show", "-o", "out"]);
        snapshot(&format!("manifest_show_{lang}"), &shown(&env, &show));
        zhi(&env, lang, &["report", "-o", "out", "--out", "report.html"]);
        let page = std::fs::read_to_string(env.path("report.html")).unwrap();
        snapshot(
            &format!("report_text_{lang}"),
            &stable(&env, &visible_text(&page)),
        );
    }
}

#[test]
fn config_show() {
    for lang in LANGS {
        let env = TestEnv::new();
        let out = zhi(&env, lang, &["config", "show"]);
        snapshot(&format!("config_show_{lang}"), &shown(&env, &out));
    }
}

#[test]
fn skills_show() {
    for lang in LANGS {
        let env = TestEnv::new();
        let out = zhi(&env, lang, &["skills", "show", "summarize"]);
        snapshot(&format!("skills_show_{lang}"), &shown(&env, &out));
    }
}

#[test]
fn plan() {
    for lang in LANGS {
        let env = TestEnv::new();
        env.write("docs/a.txt", "The board approved the budget.\n");
        env.write("docs/年报.md", "# 年度报告\n\n收入增长百分之十二。\n");
        env.write("docs/notes/b.txt", "The plant opens in May.\n");
        let out = zhi(&env, lang, &["plan", "summarize", "docs"]);
        snapshot(&format!("plan_{lang}"), &shown(&env, &out));
    }
}

/// The text a browser shows of a page: no style sheet or script, tags dropped, one line per
/// block (a heading, a paragraph, a table row with its cells split by ` | `, a chart's bar).
fn visible_text(page: &str) -> String {
    let mut text = String::new();
    let mut rest = page;
    while let Some(open) = rest.find('<') {
        text.push_str(&rest[..open]);
        let tag_end = rest[open..].find('>').map_or(rest.len(), |e| open + e + 1);
        let tag = &rest[open..tag_end];
        let name: String = tag[1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '/')
            .collect();
        rest = &rest[tag_end..];
        match name.as_str() {
            // Not shown: skip to the end of the element.
            "style" | "script" | "title" => {
                let close = format!("</{name}>");
                rest = rest.find(&close).map_or("", |e| &rest[e + close.len()..]);
            }
            "/td" | "/th" => text.push_str(" | "),
            // A tile's number above its label, a bar's label beside its value, a legend's
            // swatches between their words.
            "/b" | "/span" | "/text" => text.push(' '),
            "br" | "/p" | "/h1" | "/h2" | "/div" | "/tr" | "/figcaption" | "/g" | "/header"
            | "/section" | "/footer" | "/li" => text.push('\n'),
            _ => {}
        }
    }
    text.push_str(rest);
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace('\u{a0}', " ")
        .replace("&amp;", "&");
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .map(|l| l.trim_end_matches(" |").to_string())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}
