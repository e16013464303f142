//! What a person reads, pinned: the summary at the end of a run, `zhi manifest show`, `zhi
//! config show`, `zhi skills show`, `zhi plan` and the text of `zhi report`, each in English
//! and in Chinese, as insta snapshots of the whole stdout and stderr. A change in wording or
//! layout shows up as a reviewed change to a `.snap` file. What differs from one machine or
//! run to the next (temporary folders, run ids, times, durations, hashes, the fake server's
//! port, zhi's version) is replaced by a placeholder.

use crate::support::fake_api::{FakeApi, Recorded, Reply};
use crate::support::snapshot::{filters, stable};
use crate::support::testenv::{TestEnv, assert_exit};
use crate::zhi_snapshot;
use std::process::Output;
use std::time::Duration;
use zhi::exit::Exit;

/// The two languages every view is pinned in.
const LANGS: [&str; 2] = ["en", "zh"];

/// A text that is not a command's output (the report's page, as a browser shows it), filtered
/// as [`zhi_snapshot!`](crate::zhi_snapshot) filters one.
fn snapshot_text(name: &str, text: &str) {
    insta::with_settings!({filters => filters(false)}, {
        insta::assert_snapshot!(name.to_string(), text);
    });
}

/// A summary for most documents; `docs/c.txt` refused by the content filter; `docs/d.txt`
/// answered slowly (so it is the slowest job). Each is told by its text (a summarize request
/// does not name its document).
fn server() -> FakeApi {
    FakeApi::start(|req: &Recorded| match req.document_text().as_str() {
        "Sensitive words the provider refuses to read." => {
            Reply::zhipu_error(400, "1301", "unsafe or sensitive content")
        }
        "A long report, read slowly." => Reply::delay(
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
        zhi_snapshot!(format!("run_summary_{lang}"), &env, &out);
        let show = zhi(&env, lang, &["manifest", "show", "-o", "out"]);
        zhi_snapshot!(format!("manifest_show_{lang}"), &env, &show);
        let status = zhi(&env, lang, &["status", "out"]);
        zhi_snapshot!(format!("status_{lang}"), &env, &status);
        zhi(&env, lang, &["report", "-o", "out", "--out", "report.html"]);
        let page = std::fs::read_to_string(env.path("report.html")).unwrap();
        snapshot_text(
            &format!("report_text_{lang}"),
            &stable(&env, &visible_text(&page)),
        );
    }
}

/// A slow model is visible: a request that ran out of its time limit says so on the progress
/// line at once (`try 2/2 after timeout`), and is answered on its second attempt.
#[test]
fn a_slow_model_says_on_the_progress_line_that_it_is_retried() {
    for lang in LANGS {
        let env = TestEnv::new();
        env.write(
            "zhi.yaml",
            "retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n",
        );
        env.write("docs/a.txt", "The board approved the budget.\n");
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let api = FakeApi::start(move |_| {
            let slow = asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
            // The second answer takes long enough for the line to be said under any load,
            // and the whole run stays under the plain lines' five seconds.
            let after = Duration::from_millis(if slow { 4000 } else { 1200 });
            Reply::delay(
                after,
                Reply::text("# a\n\nA summary.\n").with_usage(120, 30),
            )
        });
        let out = env
            .zhi()
            .env("ZHI_LANGUAGE", lang)
            .args(["run", "summarize", "docs", "--timeout", "2"])
            .args(["--base-url", &api.base_url(), "-o", "out"])
            .output()
            .unwrap();
        assert_exit(&out, Exit::Success);
        zhi_snapshot!(format!("slow_model_{lang}"), &env, &out);
    }
}

/// A request that runs out of its time limit on every attempt fails, naming `--timeout` and
/// its setting.
#[test]
fn a_request_out_of_time_names_the_timeout_setting() {
    for lang in LANGS {
        let env = TestEnv::new();
        env.write("zhi.yaml", "retry: {max_attempts: 1}\n");
        env.write("docs/a.txt", "The board approved the budget.\n");
        let api = FakeApi::always(Reply::delay(
            Duration::from_secs(3),
            Reply::text("# a\n\nToo late.\n"),
        ));
        let out = env
            .zhi()
            .env("ZHI_LANGUAGE", lang)
            .args([
                "--no-progress",
                "run",
                "summarize",
                "docs",
                "--timeout",
                "1",
            ])
            .args(["--base-url", &api.base_url(), "-o", "out"])
            .output()
            .unwrap();
        assert_exit(&out, Exit::JobsFailed);
        zhi_snapshot!(format!("out_of_time_{lang}"), &env, &out);
    }
}

/// The schema of the doubted run: each party's labels named in its description.
const INVOICE_SCHEMA: &str = r#"{"type": "object", "properties": {
  "seller": {"type": "string", "description": "Who issued the invoice (Seller)"},
  "buyer": {"type": "string", "description": "Who is billed (Bill to)"},
  "total": {"type": "number", "description": "The total (Total due)"}},
  "required": ["seller", "buyer", "total"]}"#;

/// `zhi run extract invoices` in `lang`, one job at a time.
fn extract(env: &TestEnv, api: &FakeApi, lang: &str) -> Output {
    env.zhi()
        .env("ZHI_LANGUAGE", lang)
        .args(["--no-progress", "run", "extract", "invoices", "-j", "1"])
        .args(["-a", "schema=invoice.schema.json"])
        .args(["--base-url", &api.base_url(), "-o", "out"])
        .output()
        .unwrap()
}

/// Two invoices: `inv1.txt` read right, `inv2.txt` with seller and buyer swapped — doubted, not
/// a success, and not a failure (exit 0). The end of the run names the doubted file with its
/// doubts in words; `zhi manifest show` and `zhi status` say the same; a rerun sends nothing,
/// and `zhi manifest show` of it counts every job, the cached ones it did not write again too.
#[test]
fn a_run_with_doubted_jobs() {
    for lang in LANGS {
        let env = TestEnv::new();
        env.write("invoice.schema.json", INVOICE_SCHEMA);
        env.write(
            "invoices/inv1.txt",
            "INVOICE\nSeller: Acme Ltd\nBill to: Globex GmbH\nTotal due: 113.00\n",
        );
        env.write(
            "invoices/inv2.txt",
            "INVOICE\nSeller: Initech Inc\nBill to: Umbrella Corp\nTotal due: 213.00\n",
        );
        // The swapped answer comes slowly: the slowest job, listed first.
        let api = FakeApi::start(|req: &Recorded| {
            if req.input_document().ends_with("inv2.txt") {
                let swapped =
                    r#"{"seller": "Umbrella Corp", "buyer": "Initech Inc", "total": 213}"#;
                Reply::delay(
                    Duration::from_millis(300),
                    Reply::text(swapped).with_usage(100, 20),
                )
            } else {
                let right = r#"{"seller": "Acme Ltd", "buyer": "Globex GmbH", "total": 113}"#;
                Reply::text(right).with_usage(100, 20)
            }
        });
        let out = extract(&env, &api, lang);
        assert_exit(&out, Exit::Success);
        zhi_snapshot!(format!("doubted_run_{lang}"), &env, &out);
        let show = zhi(&env, lang, &["manifest", "show", "-o", "out"]);
        zhi_snapshot!(format!("doubted_manifest_show_{lang}"), &env, &show);
        let status = zhi(&env, lang, &["status", "out"]);
        zhi_snapshot!(format!("doubted_status_{lang}"), &env, &status);
        zhi(&env, lang, &["report", "-o", "out", "--out", "report.html"]);
        let page = std::fs::read_to_string(env.path("report.html")).unwrap();
        snapshot_text(
            &format!("doubted_report_text_{lang}"),
            &stable(&env, &visible_text(&page)),
        );
        let asked = api.chat_requests().len();
        let rerun = extract(&env, &api, lang);
        assert_exit(&rerun, Exit::Success);
        assert_eq!(api.chat_requests().len(), asked, "a rerun sends nothing");
        let show = zhi(&env, lang, &["manifest", "show", "-o", "out"]);
        zhi_snapshot!(format!("doubted_rerun_show_{lang}"), &env, &show);
    }
}

#[test]
fn config_show() {
    for lang in LANGS {
        let env = TestEnv::new();
        let out = zhi(&env, lang, &["config", "show"]);
        zhi_snapshot!(format!("config_show_{lang}"), &env, &out, true);
    }
}

#[test]
fn skills_show() {
    for lang in LANGS {
        let env = TestEnv::new();
        let out = zhi(&env, lang, &["skills", "show", "summarize"]);
        zhi_snapshot!(format!("skills_show_{lang}"), &env, &out, true);
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
        zhi_snapshot!(format!("plan_{lang}"), &env, &out, true);
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
