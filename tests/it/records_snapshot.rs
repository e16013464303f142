//! What a run leaves for people and scripts: `results.jsonl`, one record per job,
//! and `manifest.json`, the run. Both are snapshotted whole, so that a change to any field a
//! user relies on (a status, an error kind, the outputs, tokens, requests, counts) shows up as
//! a reviewed change to a `.snap` file. What differs from one run to the next (run ids, times,
//! durations, hashes, the fake server's port, temporary folders, zhi's version) is replaced by
//! a placeholder.

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::testenv::{TestEnv, assert_exit, run_skill};
use serde_json::Value;
use zhi::exit::Exit;

/// Fast retries, so that a failure costs milliseconds.
const FAST: &str = "retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n";

/// Two documents, `docs/a.txt` and `docs/b.txt`.
fn env_with_two_docs() -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", FAST);
    env.write(
        "docs/a.txt",
        "The board approved the budget for the new plant.\n",
    );
    env.write(
        "docs/b.txt",
        "Sensitive words the provider refuses to read.\n",
    );
    env
}

/// Whether a chat request's user message, which holds the document, mentions `word`.
fn asks_about(req: &crate::support::fake_api::Recorded, word: &str) -> bool {
    req.last_user_text().unwrap_or_default().contains(word)
}

/// A summary of `docs/a.txt`; `docs/b.txt` refused by the provider's content filter (1301)
/// unless `refuse` is false.
fn server(refuse: bool) -> FakeApi {
    FakeApi::start(move |req| {
        if refuse && asks_about(req, "Sensitive") {
            Reply::zhipu_error(400, "1301", "unsafe or sensitive content")
        } else if asks_about(req, "Sensitive") {
            Reply::text("# Summary\n\nThe provider read it after all.").with_usage(90, 12)
        } else {
            Reply::text("# Summary\n\nA budget was approved for a new plant.").with_usage(120, 30)
        }
    })
}

/// `results.jsonl` of the latest run in `out/`, each record as pretty JSON, sorted by input.
fn results(env: &TestEnv) -> String {
    let mut records = env.latest_records("out");
    records.sort_by(|a, b| a["input"].as_str().cmp(&b["input"].as_str()));
    records
        .iter()
        .map(|r| serde_json::to_string_pretty(r).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `manifest.json` of `out/` (the copy of its latest run's), as pretty JSON.
fn manifest(env: &TestEnv) -> String {
    let text = std::fs::read_to_string(env.path("out/manifest.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    serde_json::to_string_pretty(&v).unwrap()
}

/// `text` with what this test's world alone has replaced by exact value: the temporary
/// folders, the path of the zhi binary (in the manifest's `command`), and the ids of the runs
/// in `out/` as `[run 1]`, `[run 2]`… oldest first, so that a record pointing into an earlier
/// run (a cached job) is told from one of the latest run.
fn stable(env: &TestEnv, text: &str) -> String {
    let mut runs: Vec<String> = std::fs::read_dir(env.path("out/.zhi/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    runs.sort();
    let mut text = env.filter(text).replace(env!("CARGO_BIN_EXE_zhi"), "[zhi]");
    for (i, run) in runs.iter().enumerate() {
        text = text.replace(run.as_str(), &format!("[run {}]", i + 1));
    }
    text
}

/// Snapshot `results.jsonl` and `manifest.json` of the latest run in `out/` as
/// `{name}_results` and `{name}_manifest`, with what changes from run to run replaced.
fn assert_run_snapshots(env: &TestEnv, name: &str) {
    let results = stable(env, &results(env));
    let manifest = stable(env, &manifest(env));
    insta::with_settings!({
        filters => vec![
            // 2025-01-31T12:34:56.789Z
            (r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", "[timestamp]"),
            (r#""duration_ms": \d+"#, r#""duration_ms": "[ms]""#),
            // the input file's stat (docs/outputs.md#the-stat-cache)
            (r#""(dev|ino|mtime_ns|ctime_ns|hashed_at_ns)": \d+"#, r#""$1": "[stat]""#),
            // a folder's size is the file system's (docs/outputs.md#the-stat-cache)
            (r#"("output_dir_stat": \{\s*"dev": "\[stat\]",\s*"ino": "\[stat\]",\s*"size": )\d+"#, r#"$1"[size]""#),
            // sha256 of inputs, cache keys, job ids
            (r"\b[0-9a-f]{16,64}\b", "[hash]"),
            // the fake server's port
            (r"\b127\.0\.0\.1:\d+\b", "127.0.0.1:[port]"),
            (r#""zhi_version": "[^"]*""#, r#""zhi_version": "[version]""#),
        ],
    }, {
        insta::assert_snapshot!(format!("{name}_results"), results);
        insta::assert_snapshot!(format!("{name}_manifest"), manifest);
    });
}

/// One document summarised, the other refused by the content filter: a record with its
/// outputs and tokens, a record with the error's kind and the provider's code, exit 1.
#[test]
fn one_succeeded_one_refused_by_the_content_filter() {
    let env = env_with_two_docs();
    let api = server(true);
    let out = run_skill(&env, &api, "summarize", &["docs"]);
    assert_exit(&out, Exit::JobsFailed);
    assert_run_snapshots(&env, "one_failed");
}

/// The same folder run again once the provider reads both: the summary made before is
/// cached (no request), the failed job runs again and succeeds, exit 0.
#[test]
fn a_rerun_keeps_what_succeeded_and_redoes_what_failed() {
    let env = env_with_two_docs();
    let first = server(true);
    let out = run_skill(&env, &first, "summarize", &["docs"]);
    assert_exit(&out, Exit::JobsFailed);
    let second = server(false);
    let out = run_skill(&env, &second, "summarize", &["docs"]);
    assert_exit(&out, Exit::Success);
    assert_eq!(
        second.chat_requests().len(),
        1,
        "only the failed job asks again"
    );
    assert_run_snapshots(&env, "rerun");
}

/// A document over the model's budget: summarised in pieces, then the pieces' summaries
/// reduced into one; one record that counts the pieces and every request's tokens.
#[test]
fn a_long_document_summarised_in_pieces() {
    let env = TestEnv::new();
    // A small model budget, so that a short document needs two pieces.
    env.write(
        "zhi.yaml",
        "models:\n  glm-4-flash: {context_window: 4000, max_output: 100}\n\
         retry: {max_attempts: 2, base_delay_ms: 5, max_delay_ms: 10}\n",
    );
    // Just over what one request of that model can hold: two pieces.
    let budget = zhi::chunk::piece_budget(
        zhi::config::ModelBudget {
            context_window: 4000,
            max_output: 100,
        },
        zhi::skills::Chunking::MapReduce,
        true,
    );
    let mut doc = String::new();
    while zhi::chunk::tokens(&doc) < budget + 200 {
        doc.push_str("word ");
    }
    env.write("long.txt", doc);
    let api = FakeApi::always(Reply::text(crate::support::FILLER).with_usage(200, 20));
    let out = run_skill(&env, &api, "summarize", &["long.txt"]);
    assert_exit(&out, Exit::Success);
    assert_eq!(api.chat_requests().len(), 3, "two pieces and a reduce pass");
    assert_run_snapshots(&env, "chunked");
}
