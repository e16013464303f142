//! `zhi report` (docs/display.md#the-run-report): a real run against the fake API, with failures,
//! becomes one HTML file. The file is checked as text (escaping, no network, links that lead
//! somewhere), also in Chinese; how a browser renders it is checked in `tests/ext/browser.rs`.

use crate::support::report_fixture::{read, report, run_with_failures, section};
use crate::support::testenv::{TestEnv, assert_exit, assert_exit_for, show, stderr, stdout};
use std::path::{Path, PathBuf};
use zhi::exit::Exit;

/// The only run folder of `out/`.
fn run_dir(env: &TestEnv) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(env.path("out/.zhi/runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// Every `href="…"` of a page, decoded back into a path.
fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .map(|rest| percent_decode(&rest[..rest.find('"').unwrap()]))
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// The report of a run with failures, as a file: written into the run's folder, every record's
/// text escaped, nothing loaded from anywhere, and links that lead to the outputs and
/// transcripts.
#[test]
fn report_of_a_run_with_failures_is_one_safe_file() {
    let (env, _api) = run_with_failures();
    let path = report(&env, &["-o", "out"], "en");
    assert_eq!(path, run_dir(&env).join("report.html"));
    let html = read(&path);

    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    // Markup from file names and messages is text.
    assert!(
        !html.contains("<script>alert"),
        "a file name became a script"
    );
    assert!(!html.contains("<img"), "a server message became markup");
    assert!(html.contains("docs/&lt;script&gt;alert(1)&lt;/script&gt;.txt"));
    assert!(html.contains("&lt;img src=x onerror=alert(2)&gt; bad request"));
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the sorting script"
    );
    // Without the script, nothing promises sorting.
    assert!(html.contains("id=\"sort-hint\" hidden>"));
    // Nothing from the network: no resource is loaded at all, and the policy forbids it.
    for needle in [
        "src=\"", "src='", "<link", "url(", "@import", "<iframe", "<object",
    ] {
        assert!(!html.contains(needle), "the page loads something: {needle}");
    }
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none';"));

    // Failures first, named with their kinds.
    let failures = section(&html, "failures");
    assert!(failures.contains("2 jobs failed"), "{failures}");
    for text in [
        "docs/bad.txt",
        "content_filter",
        "api_error",
        "&lt;script&gt;alert(1)&lt;/script&gt;.txt",
    ] {
        assert!(failures.contains(text), "{text} not in the failures");
    }
    assert!(!failures.contains("docs/a.txt"));
    let counts = section(&html, "counts");
    assert!(
        counts.contains("<div class=\"tile bad\"><b>2</b><span>failed</span>"),
        "{counts}"
    );
    assert!(
        counts.contains("<b>3</b><span>succeeded</span>"),
        "{counts}"
    );
    // Tokens: 2 × (120 + 40) + (900 + 300).
    assert!(
        counts.contains("<b>1,520</b><span>tokens</span>"),
        "{counts}"
    );
    // One bar per job that ran, in each chart.
    assert_eq!(section(&html, "charts").matches("<rect").count(), 10);
    // The table holds every job, failures first.
    let rows: Vec<&str> = html.split("<tr data-i=").skip(1).collect();
    assert_eq!(rows.len(), 5);
    assert!(rows[0].contains("class=\"failed\"") && rows[1].contains("class=\"failed\""));

    // Links are relative and lead to the outputs and transcripts.
    let links = hrefs(&html);
    let dir = path.parent().unwrap();
    for l in &links {
        assert!(!l.starts_with('/') && !l.contains("://"), "{l}");
        assert!(dir.join(l).exists(), "a link to nowhere: {l}");
    }
    for doc in ["a", "b", "c"] {
        let summary = format!("summarize/docs/{doc}.txt/summary.md");
        assert!(
            links.iter().any(|l| l.ends_with(&summary)),
            "no link to {summary}: {links:?}"
        );
    }
    let transcripts = links.iter().filter(|l| l.ends_with(".jsonl")).count();
    assert!(transcripts >= 5, "each job's transcript: {links:?}");
}

/// Runs are named as for `zhi manifest show`; a name that finds nothing is a usage error that
/// says what was not found; `--out` writes elsewhere with links that still lead home.
#[test]
fn report_names_runs_like_manifest_show() {
    let (env, _api) = run_with_failures();
    let dir = run_dir(&env);
    let id = dir.file_name().unwrap().to_str().unwrap().to_owned();

    // By id prefix, by run folder, by results.jsonl.
    let by_prefix = report(&env, &["-o", "out", &id[..10]], "en");
    assert_eq!(by_prefix, dir.join("report.html"));
    let results = dir.join("results.jsonl");
    for arg in [dir.to_str().unwrap(), results.to_str().unwrap(), "out"] {
        assert_eq!(report(&env, &[arg], "en"), dir.join("report.html"), "{arg}");
    }

    // Elsewhere, with links relative to there.
    std::fs::create_dir(env.path("reports")).unwrap();
    let elsewhere = report(&env, &["-o", "out", "--out", "reports/run.html"], "en");
    assert_eq!(elsewhere, env.path("reports/run.html"));
    let html = read(&elsewhere);
    let links = hrefs(&html);
    assert!(!links.is_empty());
    for l in &links {
        assert!(l.starts_with("../out/"), "{l}");
        assert!(env.path("reports").join(l).exists(), "{l}");
    }

    // --json: the path and the run on stdout.
    let out = env
        .zhi()
        .args(["--json", "report", "-o", "out"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["run_id"], id.as_str());
    assert_eq!(v["jobs"], 5);
    assert!(v["report"].as_str().unwrap().ends_with("report.html"));
    assert!(
        Path::new(v["report"].as_str().unwrap()).is_absolute(),
        "{v}"
    );
    assert!(v["url"].as_str().unwrap().starts_with("file:///"), "{v}");

    // What is not there: a folder without runs, a folder that does not exist.
    std::fs::create_dir(env.path("empty")).unwrap();
    // Nor where zhi reads settings or keeps records: the next command there would break.
    env.write("zhi.yaml", "temperature: 0\n");
    let cases: [(&[&str], &str); 7] = [
        (&["-o", "out", "nope"], "no run `nope`"),
        (&["-o", "empty"], "has no runs yet"),
        (&["-o", "elsewhere"], "elsewhere does not exist"),
        (&["-o", "out", "--out", "missing/r.html"], "no folder"),
        (&["-o", "out", "--out", "reports"], "is a folder"),
        (
            &["-o", "out", "--out", "zhi.yaml"],
            "where zhi reads a settings file",
        ),
        (
            &["-o", "out", "--out", "out/.zhi/runs.html"],
            "where zhi keeps a folder's records",
        ),
    ];
    for (args, says) in cases {
        let out = env.zhi().arg("report").args(args).output().unwrap();
        assert_exit_for(&out, Exit::Usage, format!("{args:?}"));
        assert!(stderr(&out).contains(says), "{args:?}: {}", show(&out));
        assert!(stdout(&out).is_empty());
    }
    assert_eq!(read(&env.path("zhi.yaml")), "temperature: 0\n");
    assert!(!env.path("out/.zhi/runs.html").exists());
    // A merge is an output folder: not inside records either.
    let out = env
        .zhi()
        .args(["manifest", "merge", "out", "-o", "out/.zhi/merged"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).contains("cannot be the output folder"),
        "{}",
        show(&out)
    );
    assert!(!env.path("out/.zhi/merged").exists());
    // `manifest show` finds runs the same way, and says the same.
    let out = env
        .zhi()
        .args(["manifest", "show", "-o", "elsewhere"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).contains("elsewhere does not exist"),
        "{}",
        show(&out)
    );
}

/// `ZHI_LANGUAGE=zh`: the page is Chinese and says so; records stay as they were.
#[test]
fn report_in_chinese() {
    let (env, _api) = run_with_failures();
    let html = read(&report(&env, &["-o", "out"], "zh"));
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"zh\">"));
    let failures = section(&html, "failures");
    assert!(failures.contains("2 个任务失败"), "{failures}");
    assert!(failures.contains("content_filter") && failures.contains("docs/bad.txt"));
    assert!(html.contains("<span class=\"badge failed\">失败</span>"));
    assert!(html.contains("<span>成功</span>"));
    assert!(!html.contains("jobs failed"));
}

/// A run of 10,000 jobs gives a usable page quickly: every job in the table, charts of a
/// bounded size.
#[test]
fn report_of_ten_thousand_jobs() {
    let env = TestEnv::new();
    let dir = env.path("out/.zhi/runs/20250101T000000.000Z");
    std::fs::create_dir_all(&dir).unwrap();
    let mut lines = String::new();
    for i in 0..10_000u64 {
        let failed = i % 40 == 0;
        let record = serde_json::json!({
            "job_id": format!("{i:016x}"), "skill": "summarize",
            "input": format!("docs/{i:05}.txt"), "input_sha256": null, "input_bytes": 100,
            "status": if failed { "failed" } else { "succeeded" },
            "outputs": [], "model": "glm-4-flash", "turns": 1, "attempts": 1, "requests": 1,
            "refused_tool_calls": 0, "tokens": {"prompt": 100 + i % 977, "completion": i % 313},
            "started_at": "2025-01-01T00:00:00Z", "finished_at": "2025-01-01T00:00:01Z",
            "duration_ms": 200 + (i * 7919) % 30_000,
            "error": if failed { serde_json::json!({"kind": "timeout", "message": "slow"}) }
                     else { serde_json::Value::Null },
        });
        lines.push_str(&record.to_string());
        lines.push('\n');
    }
    std::fs::write(dir.join("results.jsonl"), lines).unwrap();

    let path = report(&env, &["-o", "out"], "en");
    let html = read(&path);
    assert!(html.len() < 12 << 20, "{} bytes", html.len());
    assert_eq!(html.matches("<tr data-i=").count(), 10_000);
    assert!(section(&html, "failures").contains("250 jobs failed"));
    // The first 200 failures are listed at the top, the rest pointed to; all are in the table.
    let failures = section(&html, "failures");
    assert_eq!(failures.matches("<tr><td").count(), 200);
    assert!(failures.contains("… and 50 more failed jobs"), "{failures}");
    let charts = section(&html, "charts");
    assert!(
        charts.matches("<rect").count() <= 2 * 2 * 21,
        "charts bucket jobs: {} bars",
        charts.matches("<rect").count()
    );
    assert!(html.contains("incomplete"), "no manifest.json: said so");
}

/// Markup in a file name and in an error message stays text wherever the page shows them —
/// the failures list, the table, the charts — and cannot close the cell it is in.
#[test]
fn markup_in_an_input_name_and_an_error_message_is_escaped() {
    const NAME: &str = "docs/<img src=x onerror=alert(1)>.txt";
    const MESSAGE: &str = "bad</td><td>injected</td> request";
    let env = TestEnv::new();
    env.write(NAME, "A document with a hostile name.\n");
    env.write("docs/ok.txt", "A plain document.\n");
    let api = crate::support::FakeApi::start(|req| match req.document_text().as_str() {
        "A document with a hostile name." => {
            crate::support::Reply::zhipu_error(400, "1214", MESSAGE)
        }
        _ => crate::support::Reply::text("# ok\n\nA summary.\n").with_usage(10, 5),
    });
    let out = crate::support::testenv::run_skill(&env, &api, "summarize", &["docs"]);
    assert_exit(&out, Exit::JobsFailed);
    let html = read(&report(&env, &["-o", "out"], "en"));
    assert!(!html.contains("<img"), "a file name became markup");
    assert!(!html.contains("injected</td>"), "a message closed its cell");
    assert!(html.contains("docs/&lt;img src=x onerror=alert(1)&gt;.txt"));
    assert!(html.contains("bad&lt;/td&gt;&lt;td&gt;injected&lt;/td&gt; request"));
    // Each row of the table still has its eight cells.
    for row in html.split("<tr data-i=").skip(1) {
        let row = &row[..row.find("</tr>").unwrap()];
        assert_eq!(row.matches("<td").count(), 8, "{row}");
    }
}

/// A rerun that found every job cached ran nothing: `zhi report` of the output folder opens the
/// latest run that ran jobs, and says which, in both languages; a run named opens that run.
#[test]
fn report_opens_the_latest_run_that_ran_jobs_and_says_which() {
    let env = TestEnv::new();
    env.write("docs/a.txt", "The board approved the budget.\n");
    let api = crate::support::FakeApi::always(crate::support::Reply::text("# a\n\nApproved.\n"));
    let run = || {
        let out = env
            .zhi()
            .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
            .args(["--base-url", &api.base_url()])
            .output()
            .unwrap();
        assert_exit(&out, Exit::Success);
    };
    run();
    run();
    let mut runs: Vec<String> = std::fs::read_dir(env.path("out/.zhi/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    runs.sort();
    let (worked, cached) = (&runs[0], &runs[1]);
    for (lang, says) in [
        (
            "en",
            format!(
                "report of run {worked}, the latest that ran jobs (the 1 run(s) after it only found them cached or skipped)"
            ),
        ),
        (
            "zh",
            format!("报告的是运行 {worked}，即最近一次运行了任务的运行"),
        ),
    ] {
        let out = env
            .zhi()
            .env("ZHI_LANGUAGE", lang)
            .args(["--json", "report", "-o", "out"])
            .output()
            .unwrap();
        assert_exit(&out, Exit::Success);
        let said: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(said["run_id"], worked.as_str(), "{}", show(&out));
        assert!(stderr(&out).contains(&says), "{}", show(&out));
    }
    // The rerun named is the rerun reported, and nothing is said.
    let out = env
        .zhi()
        .args(["--json", "report", cached.as_str(), "-o", "out"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let said: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(said["run_id"], cached.as_str());
    assert_eq!(stderr(&out), "", "{}", show(&out));
}
