//! The stat cache (docs/outputs.md#the-stat-cache): what a user sees of it. That a rerun
//! opens no unchanged document is counted with strace in `tests/ext` (`stat_cache`).

use crate::support::testenv::{TestEnv, assert_exit, show, stdout};
use crate::support::{FakeApi, Reply};
use serde_json::Value;
use std::collections::BTreeMap;
use zhi::exit::Exit;

/// Files changed less than two seconds before they were hashed are hashed again next time:
/// the documents are made older than that before the first run.
fn age_past_racy_margin() {
    std::thread::sleep(std::time::Duration::from_millis(2100));
}

fn run(env: &TestEnv, api: &FakeApi, extra: &[&str]) -> std::process::Output {
    let out = env
        .zhi()
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .args(["--base-url", &api.base_url()])
        .args(extra)
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    out
}

/// Each input's status in `zhi --json plan`, and what its estimate came from.
fn plan(env: &TestEnv, extra: &[&str]) -> BTreeMap<String, (String, String)> {
    let out = env
        .zhi()
        .args(["--json", "plan", "summarize", "docs", "-o", "out"])
        .args(extra)
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|j| {
            (
                j["inputs"][0].as_str().unwrap().to_string(),
                (
                    j["status"].as_str().unwrap().to_string(),
                    j["estimated_from"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

fn status(s: &str, from: &str) -> (String, String) {
    (s.to_string(), from.to_string())
}

/// Two documents, old enough to be trusted, summarised once (two requests).
fn two_documents_summarised(env: &TestEnv) -> FakeApi {
    env.write("docs/a.txt", "The board approved the budget.\n");
    env.write("docs/b.txt", "The board approved the bridge.\n");
    age_past_racy_margin();
    let api = FakeApi::always(Reply::text("# Summary\n\nApproved."));
    run(env, &api, &[]);
    assert_eq!(api.chat_requests().len(), 2);
    api
}

/// Write `text` over `path` and put its modification time back as it was.
fn rewrite_keeping_mtime(path: &std::path::Path, text: &str) {
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert_eq!(std::fs::metadata(path).unwrap().modified().unwrap(), mtime);
}

#[test]
fn checksum_catches_a_change_that_kept_size_and_modification_time() {
    let env = TestEnv::new();
    let api = two_documents_summarised(&env);

    // Unchanged documents are planned from their records: cached, estimated from what the
    // run counted, not read again.
    let planned = plan(&env, &[]);
    assert_eq!(planned["docs/a.txt"], status("cached", "record"));
    assert_eq!(planned["docs/b.txt"], status("cached", "record"));
    // `--checksum` reads them: still cached, estimated from their text.
    let planned = plan(&env, &["--checksum"]);
    assert_eq!(planned["docs/a.txt"], status("cached", "text"));

    // Same size, modification time put back as it was.
    rewrite_keeping_mtime(&env.path("docs/a.txt"), "The board rejected the budget.\n");

    let out = run(&env, &api, &["--checksum"]);
    assert_eq!(api.chat_requests().len(), 3, "{}", show(&out));
    let last = api.chat_requests().pop().unwrap();
    // The changed text of docs/a.txt was sent.
    assert_eq!(last.document_text(), "The board rejected the budget.");
    let records = crate::support::testenv::records_by_input(&env.path("out"));
    assert_eq!(records["docs/a.txt"]["status"], "succeeded");
    assert_eq!(records["docs/b.txt"]["status"], "cached");
}

#[test]
fn checksum_in_the_settings_file_reads_every_document_and_config_show_says_so() {
    let env = TestEnv::new();
    env.write("zhi.yaml", "checksum: true\n");
    env.write("docs/a.txt", "The board approved the budget.\n");
    age_past_racy_margin();
    let api = FakeApi::always(Reply::text("# Summary\n\nApproved."));
    run(&env, &api, &[]);
    assert_eq!(plan(&env, &[])["docs/a.txt"], status("cached", "text"));
    let out = env
        .zhi()
        .args(["--json", "config", "show"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    assert!(stdout(&out).contains("checksum"), "{}", show(&out));

    env.write("zhi.yaml", "checksum: yes please\n");
    let out = env
        .zhi()
        .args(["plan", "summarize", "docs"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Usage);
    assert!(
        crate::support::testenv::stderr(&out).contains("checksum"),
        "{}",
        show(&out)
    );
}

#[test]
fn a_changed_document_reruns_and_a_missing_or_torn_index_changes_nothing() {
    let env = TestEnv::new();
    for name in ["a", "b", "c"] {
        env.write(&format!("docs/{name}.txt"), format!("Report {name}.\n"));
    }
    age_past_racy_margin();
    let api = FakeApi::always(Reply::text("# Summary\n\nA report."));
    run(&env, &api, &[]);
    assert!(env.path("out/.zhi/cache-index").is_file());

    env.write("docs/b.txt", "Report b, revised and longer.\n");
    run(&env, &api, &[]);
    assert_eq!(
        api.chat_requests().len(),
        4,
        "only the changed document reran"
    );
    let records = crate::support::testenv::records_by_input(&env.path("out"));
    assert_eq!(records["docs/b.txt"]["status"], "succeeded");
    assert_eq!(records["docs/a.txt"]["status"], "cached");

    // The index is derived: removed or torn, the records say the same.
    for broken in [None, Some(&b"ZHICIX01 torn"[..])] {
        let index = env.path("out/.zhi/cache-index");
        match broken {
            None => std::fs::remove_file(&index).unwrap(),
            Some(bytes) => std::fs::write(&index, bytes).unwrap(),
        }
        let planned = plan(&env, &[]);
        assert!(planned.values().all(|(s, _)| s == "cached"), "{planned:?}");
        run(&env, &api, &[]);
        assert_eq!(api.chat_requests().len(), 4);
        assert!(index.is_file(), "the run wrote the index again");
    }
}

/// Outputs are trusted by their stat once a rerun has checked them by content: an output
/// edited afterwards (even to the same size, its modification time put back) and a file
/// added to a job's folder are still found, and the job is not taken as cached.
#[test]
fn an_output_edited_or_a_file_added_after_its_stat_was_recorded_is_found() {
    let env = TestEnv::new();
    let api = two_documents_summarised(&env);
    age_past_racy_margin();
    // This rerun checks the outputs by content and records their stats.
    run(&env, &api, &[]);
    let records = crate::support::testenv::records_by_input(&env.path("out"));
    assert_eq!(records["docs/a.txt"]["status"], "cached");
    assert!(records["docs/a.txt"]["outputs"][0]["stat"].is_object());
    assert!(records["docs/a.txt"]["output_dir_stat"].is_object());
    assert_eq!(plan(&env, &[])["docs/a.txt"], status("cached", "record"));

    // Same size, modification time put back: the change time still tells.
    let summary = env.path("out/summarize/docs/a.txt/summary.md");
    let text = std::fs::read_to_string(&summary).unwrap();
    rewrite_keeping_mtime(&summary, &text.replace("Approved", "Rejected"));
    assert_eq!(std::fs::read_to_string(&summary).unwrap().len(), text.len());
    // A file added beside an output the person did not touch.
    env.write("out/summarize/docs/b.txt/notes.md", "mine\n");

    let planned = plan(&env, &[]);
    assert_ne!(
        planned["docs/a.txt"].0, "cached",
        "an edited output was trusted"
    );
    assert_ne!(
        planned["docs/b.txt"].0, "cached",
        "an added file was not seen"
    );
    // The person's edits are kept: both jobs stop at the conflict.
    let out = env
        .zhi()
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .args(["--base-url", &api.base_url()])
        .output()
        .unwrap();
    assert_exit(&out, Exit::JobsFailed);
    let records = crate::support::testenv::records_by_input(&env.path("out"));
    assert_eq!(records["docs/a.txt"]["error"]["kind"], "output_conflict");
    assert_eq!(records["docs/b.txt"]["error"]["kind"], "output_conflict");
    assert!(
        std::fs::read_to_string(&summary)
            .unwrap()
            .contains("Rejected")
    );
}

/// A run decides its jobs' cache statuses a chunk of 1,024 at a time as it goes
/// (docs/outputs.md#what-a-run-holds-in-memory): a change on either side of a chunk's edge
/// is found, everything else is cached, and the run's results.csv and summary still count
/// every job.
#[test]
fn a_rerun_over_more_than_one_chunk_of_jobs_reruns_only_what_changed() {
    let env = TestEnv::new();
    let n = 1030;
    for i in 0..n {
        env.write(&format!("docs/d{i:04}.txt"), format!("Report {i}.\n"));
    }
    age_past_racy_margin();
    let api = FakeApi::always(Reply::text("# Summary\n\nA report."));
    run(&env, &api, &["-j", "16"]);
    assert_eq!(api.chat_requests().len(), n);

    for i in [3, 1027] {
        env.write(
            &format!("docs/d{i:04}.txt"),
            format!("Report {i}, revised.\n"),
        );
    }
    let out = run(&env, &api, &["--records", "all"]);
    assert_eq!(
        api.chat_requests().len(),
        n + 2,
        "only the two changed reran"
    );
    let records = crate::support::testenv::records_by_input(&env.path("out"));
    for (input, r) in &records {
        let expected = match input.as_str() {
            "docs/d0003.txt" | "docs/d1027.txt" => "succeeded",
            _ => "cached",
        };
        assert_eq!(r["status"], expected, "{input}");
    }
    assert_eq!(records.len(), n);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("out/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["counts"]["cached"], n as u64 - 2);
    assert_eq!(manifest["counts"]["succeeded"], 2);
    let csv = std::fs::read_to_string(manifest["results_csv"].as_str().unwrap()).unwrap();
    assert_eq!(csv.lines().count(), n + 1, "a header and a row per job");
    let said = show(&out);
    assert!(
        said.contains("succeeded 2  doubted 0  failed 0  cached 1028"),
        "{said}"
    );
}

/// A run that stops (here `--fail-fast`) while the next chunk's statuses are being decided
/// ahead of the scheduler records every job once, in plan order; a rerun finds cached only
/// what succeeded.
#[test]
fn a_run_stopped_with_a_chunk_decided_ahead_records_every_job_once() {
    let env = TestEnv::new();
    let n = 2200;
    for i in 0..n {
        env.write(&format!("docs/d{i:04}.txt"), format!("Report {i}.\n"));
    }
    age_past_racy_margin();
    let api = FakeApi::start(|req| {
        if req.document_text() == "Report 50." {
            Reply::zhipu_error(400, "1214", "bad parameter")
        } else {
            Reply::text("# Summary\n\nA report.")
        }
    });
    let out = env
        .zhi()
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .args(["--base-url", &api.base_url(), "--fail-fast", "-j", "1"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::JobsFailed);
    assert_eq!(api.chat_requests().len(), 51);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path("out/manifest.json")).unwrap())
            .unwrap();
    let results =
        std::fs::read_to_string(std::path::Path::new(manifest["results"].as_str().unwrap()))
            .unwrap();
    let records: Vec<Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let inputs: Vec<&str> = records
        .iter()
        .map(|r| r["input"].as_str().unwrap())
        .collect();
    let want: Vec<String> = (0..n).map(|i| format!("docs/d{i:04}.txt")).collect();
    assert_eq!(inputs, want, "a record per job, in plan order");
    for (i, r) in records.iter().enumerate() {
        let expected = match i {
            0..50 => "succeeded",
            50 => "failed",
            _ => "skipped",
        };
        assert_eq!(r["status"], expected, "{}", r["input"]);
    }
    assert_eq!(manifest["counts"]["skipped"], n as u64 - 51);

    let planned = plan(&env, &[]);
    let cached = planned.values().filter(|(s, _)| s == "cached").count();
    assert_eq!(cached, 50);
    assert_eq!(planned["docs/d0050.txt"].0, "pending");
    assert_eq!(planned["docs/d2199.txt"].0, "pending");
}

/// A rerun that changes nothing writes no record of its cached jobs; `zhi manifest show` of it
/// still counts every one of them, as the run said (its manifest's counts, not the records
/// it kept).
#[test]
fn manifest_show_of_a_rerun_that_wrote_no_record_counts_every_cached_job() {
    let env = TestEnv::new();
    let api = two_documents_summarised(&env);
    // The first rerun settles what the run wrote too recently to trust; the next writes none.
    age_past_racy_margin();
    run(&env, &api, &[]);
    let out = run(&env, &api, &[]);
    assert!(
        show(&out).contains("succeeded 0  doubted 0  failed 0  cached 2"),
        "{}",
        show(&out)
    );
    let runs = zhi::manifest::list_runs(&env.path("out"));
    let last = runs.last().unwrap();
    let written = std::fs::read_to_string(last.path.join("results.jsonl")).unwrap();
    assert_eq!(written, "", "a rerun that changed nothing writes no record");
    let shown = env
        .zhi()
        .args(["manifest", "show", "-o", "out"])
        .output()
        .unwrap();
    assert_exit(&shown, Exit::Success);
    assert!(
        stdout(&shown).contains("jobs: planned 2  succeeded 0  doubted 0  failed 0  cached 2"),
        "{}",
        show(&shown)
    );
}
