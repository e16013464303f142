//! The nightly archive (docs/outputs.md#what-a-rerun-writes, #the-folders-state, #pruning): a
//! rerun writes only what changed, `zhi status` tells the folder's state, `zhi prune` frees
//! old runs and loses nothing.

use crate::support::testenv::{TestEnv, assert_exit, show, stdout};
use crate::support::{FakeApi, Reply};
use serde_json::Value;
use std::path::Path;
use zhi::exit::Exit;

/// Files changed less than two seconds before they were hashed are hashed again next time.
fn age_past_racy_margin() {
    std::thread::sleep(std::time::Duration::from_millis(2100));
}

fn run(env: &TestEnv, api: &FakeApi, extra: &[&str]) -> std::process::Output {
    env.zhi()
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .args(["--base-url", &api.base_url()])
        .args(extra)
        .output()
        .unwrap()
}

fn documents(env: &TestEnv, n: usize) {
    for i in 0..n {
        env.write(
            &format!("docs/d{i:03}.txt"),
            format!("Report {i}: the board approved the budget after a long debate.\n"),
        );
    }
}

/// Bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    crate::support::testenv::files_under(dir)
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

fn latest_manifest(env: &TestEnv) -> Value {
    serde_json::from_slice(&std::fs::read(env.path("out/manifest.json")).unwrap()).unwrap()
}

fn latest_results(env: &TestEnv) -> String {
    let m = latest_manifest(env);
    std::fs::read_to_string(m["results"].as_str().unwrap()).unwrap()
}

/// A first pass, and the rerun that records the outputs' stats once they can be trusted.
fn summarised_and_settled(env: &TestEnv, n: usize) -> FakeApi {
    documents(env, n);
    age_past_racy_margin();
    let api = FakeApi::always(Reply::text("# Summary\n\nThe budget was approved."));
    assert_exit(&run(env, &api, &[]), Exit::Success);
    age_past_racy_margin();
    assert_exit(&run(env, &api, &[]), Exit::Success);
    assert_eq!(api.chat_requests().len(), n);
    api
}

#[test]
fn a_rerun_over_unchanged_documents_writes_no_record_and_a_changed_one_is_written() {
    let env = TestEnv::new();
    // More than 100 jobs: the first pass waits out the racy margin and settles their stats,
    // so even the first rerun writes no record.
    let n = 150;
    documents(&env, n);
    age_past_racy_margin();
    let api = FakeApi::always(Reply::text("# Summary\n\nThe budget was approved."));
    assert_exit(&run(&env, &api, &["-j", "8"]), Exit::Success);
    let before = bytes_under(&env.path("out/.zhi"));
    let out = run(&env, &api, &[]);
    assert_exit(&out, Exit::Success);
    let written = bytes_under(&env.path("out/.zhi")) - before;
    // The run's manifest and the header of its CSV: nothing per job.
    assert!(
        written < 4096,
        "a rerun of {n} cached jobs wrote {written} bytes"
    );
    let m = latest_manifest(&env);
    assert_eq!(m["counts"]["cached"], n, "{m}");
    assert_eq!(latest_results(&env), "");
    assert_eq!(api.chat_requests().len(), n);
    // One document changes: its record alone is written.
    env.write(
        "docs/d007.txt",
        "Report 7, amended: the budget was cut by half.\n",
    );
    assert_exit(&run(&env, &api, &[]), Exit::Success);
    let lines: Vec<Value> = latest_results(&env)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["input"], "docs/d007.txt");
    assert_eq!(lines[0]["status"], "succeeded");
    assert_eq!(latest_manifest(&env)["counts"]["cached"], n - 1);
    // `--records all` keeps every job's record, as before.
    assert_exit(&run(&env, &api, &["--records", "all"]), Exit::Success);
    assert_eq!(latest_results(&env).lines().count(), n);
}

fn status_json(env: &TestEnv) -> Value {
    let out = env
        .zhi()
        .args(["--json", "status", "out"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", show(&out)))
}

#[test]
fn status_tells_the_state_of_a_folder_after_three_runs() {
    let env = TestEnv::new();
    documents(&env, 4);
    let api = FakeApi::always(Reply::text("# Summary\n\nThe budget was approved."));
    assert_exit(&run(&env, &api, &[]), Exit::Success);
    // A rerun with one change and one failure (a file zhi cannot read).
    env.write(
        "docs/d001.txt",
        "Report 1, amended: the budget was cut by half.\n",
    );
    env.write("docs/scan.bin", [0u8, 159, 146, 150, 1, 2, 3]);
    assert_exit(&run(&env, &api, &[]), Exit::JobsFailed);
    assert_exit(&run(&env, &api, &[]), Exit::JobsFailed);
    std::fs::remove_file(env.path("docs/d003.txt")).unwrap();
    let s = status_json(&env);
    assert_eq!(s["runs"], 3, "{s}");
    assert_eq!(s["jobs"], 5, "{s}");
    assert_eq!(s["counts"]["failed"], 1, "{s}");
    assert_eq!(s["failed"][0]["input"], "docs/scan.bin");
    assert_eq!(s["failed"][0]["error"]["kind"], "unsupported_type");
    assert_eq!(s["inputs_gone"], serde_json::json!(["docs/d003.txt"]));
    let human = env.zhi().args(["status", "out"]).output().unwrap();
    let text = stdout(&human);
    assert!(text.contains("5 job(s) in 3 run(s)"), "{text}");
    assert!(
        text.contains("docs/scan.bin (summarize): unsupported_type"),
        "{text}"
    );
    let csv = env.zhi().args(["status", "out", "--csv"]).output().unwrap();
    assert_exit(&csv, Exit::Success);
    let rows: Vec<String> = stdout(&csv).lines().map(str::to_string).collect();
    assert_eq!(rows.len(), 1 + 5, "{rows:?}");
    assert!(
        rows[0].starts_with("job_id,skill,input,status"),
        "{}",
        rows[0]
    );
}

/// `zhi prune out --keep-last 1`, and `extra`.
fn prune(env: &TestEnv, extra: &[&str]) -> std::process::Output {
    env.zhi()
        .args(["prune", "out", "--keep-last", "1"])
        .args(extra)
        .output()
        .unwrap()
}

/// Every output of the folder, with its content.
fn outputs(env: &TestEnv) -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<(String, Vec<u8>)> =
        crate::support::testenv::files_under(&env.path("out/summarize"))
            .into_iter()
            .map(|f| (f.display().to_string(), std::fs::read(&f).unwrap()))
            .collect();
    all.sort();
    all
}

/// Ten reruns, each changing one document: eleven runs with something in each.
fn ten_reruns(env: &TestEnv, api: &FakeApi) {
    for night in 0..10 {
        env.write(
            &format!("docs/d{:03}.txt", night % 5),
            format!("Night {night}: the budget was revised again.\n"),
        );
        assert_exit(&run(env, api, &[]), Exit::Success);
    }
}

#[test]
fn prune_keep_last_one_keeps_every_output_and_cache_and_frees_the_rest() {
    let env = TestEnv::new();
    let api = summarised_and_settled(&env, 8);
    ten_reruns(&env, &api);
    let requests = api.chat_requests().len();
    let kept = outputs(&env);
    let before = bytes_under(&env.path("out/.zhi"));
    let dry = prune(&env, &["--dry-run"]);
    assert_exit(&dry, Exit::Success);
    assert!(stdout(&dry).contains("would free"), "{}", show(&dry));
    assert_eq!(
        bytes_under(&env.path("out/.zhi")),
        before,
        "a dry run removed something"
    );
    let out = prune(&env, &[]);
    assert_exit(&out, Exit::Success);
    assert!(stdout(&out).contains("freed"), "{}", show(&out));
    let after = bytes_under(&env.path("out/.zhi"));
    assert!(
        after < before / 2,
        "prune freed too little: {before} → {after}"
    );
    assert_eq!(outputs(&env), kept);
    // The next run finds every job cached: no request.
    assert_exit(&run(&env, &api, &[]), Exit::Success);
    assert_eq!(api.chat_requests().len(), requests);
    assert_eq!(latest_manifest(&env)["counts"]["cached"], 8);
    let s = status_json(&env);
    assert_eq!(s["jobs"], 8, "{s}");
    // What the pruned runs spent is still counted.
    let spent = s["tokens"]
        .as_object()
        .unwrap()
        .values()
        .map(|t| t["prompt"].as_u64().unwrap() + t["completion"].as_u64().unwrap());
    assert!(spent.sum::<u64>() > 0, "{s}");
}

#[test]
fn a_prune_killed_at_any_moment_loses_nothing() {
    for delay_ms in [0u64, 2, 5, 10, 20, 40] {
        let env = TestEnv::new();
        let api = summarised_and_settled(&env, 6);
        ten_reruns(&env, &api);
        let requests = api.chat_requests().len();
        let kept = outputs(&env);
        let mut child = env
            .zhi_process()
            .args(["prune", "out", "--keep-last", "1"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        // The lock a killed prune leaves is taken over (its process is gone).
        assert_eq!(outputs(&env), kept, "killed after {delay_ms} ms");
        let out = run(&env, &api, &[]);
        assert_exit(&out, Exit::Success);
        assert_eq!(
            api.chat_requests().len(),
            requests,
            "killed after {delay_ms} ms, the next run asked again: {}",
            show(&out)
        );
        assert_eq!(latest_manifest(&env)["counts"]["cached"], 6);
        // And a prune afterwards finishes the work.
        let out = prune(&env, &[]);
        assert_exit(&out, Exit::Success);
        assert_exit(&run(&env, &api, &[]), Exit::Success);
        assert_eq!(api.chat_requests().len(), requests);
    }
}

/// `--older-than` past what the calendar holds (issue 47 saw `106751991167d` panic with exit
/// 101 and `99999999999999d` read as 0, so every run was old enough): no run is that old,
/// and nothing is pruned, whatever the number.
#[test]
fn older_than_past_the_calendar_prunes_nothing() {
    let env = TestEnv::new();
    documents(&env, 2);
    let api = FakeApi::always(Reply::text("# Summary\n\nThe budget was approved."));
    assert_exit(&run(&env, &api, &[]), Exit::Success);
    // A second run that supersedes one record of the first: something a prune could free.
    env.write("docs/d000.txt", "Report 0, amended: the budget was cut.\n");
    assert_exit(&run(&env, &api, &[]), Exit::Success);
    for days in [
        "106751991167d",
        "99999999999999d",
        "213503982334601d",
        "99999999999999999999999999d",
    ] {
        let out = env
            .zhi()
            .args(["prune", "out", "--older-than", days])
            .output()
            .unwrap();
        assert_exit(&out, Exit::Success);
        assert!(
            stdout(&out).contains("freed 0.0 MiB: 0 record(s), 0 run(s) whole"),
            "{days}: {}",
            show(&out)
        );
    }
    // An age the calendar holds still prunes what it should.
    let out = env
        .zhi()
        .args(["prune", "out", "--older-than", "0s"])
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let freed = stdout(&out);
    assert!(
        freed.starts_with("freed") && !freed.contains(" 0 record(s)"),
        "{}",
        show(&out)
    );
}

/// A ledger of what earlier prunes removed, as prune writes it: ¥12.5 spent on one model.
const LEDGER: &str = r#"{
  "runs": 2,
  "records": 7,
  "tokens": {"glm-4-plus": {"prompt": 90000, "completion": 10000}},
  "costs": {"glm-4-plus": {"amount": 12.5, "currency": "CNY"}}
}"#;

/// `.zhi/pruned.json` damaged (issue 47 saw it cut to 60 bytes dropped without a word, then
/// written over by the next prune, the ¥12.5 it held lost for good; `1e309` and negative
/// counts the same): `zhi status` warns and says it in its JSON, and `zhi prune` refuses
/// (exit 2) before it removes or writes anything, until the ledger is moved aside.
#[test]
fn a_damaged_prune_ledger_is_reported_and_never_written_over() {
    let env = TestEnv::new();
    documents(&env, 2);
    let api = FakeApi::always(Reply::text("# Summary\n\nThe budget was approved."));
    assert_exit(&run(&env, &api, &[]), Exit::Success);
    env.write("docs/d000.txt", "Report 0, amended: the budget was cut.\n");
    assert_exit(&run(&env, &api, &[]), Exit::Success);
    let ledger = env.path("out/.zhi/pruned.json");
    std::fs::write(&ledger, LEDGER).unwrap();
    let s = status_json(&env);
    assert_eq!(s["costs"]["glm-4-plus"]["amount"], 12.5, "{s}");
    assert_eq!(s["pruned_unreadable"], Value::Null, "{s}");

    let cut = &LEDGER.as_bytes()[..60];
    let negative = LEDGER.replace("\"records\": 7", "\"records\": -7");
    let huge = LEDGER.replace("12.5", "1e309");
    let below_zero = LEDGER.replace("12.5", "-12.5");
    for damaged in [
        cut,
        negative.as_bytes(),
        huge.as_bytes(),
        below_zero.as_bytes(),
    ] {
        let case = String::from_utf8_lossy(damaged).into_owned();
        std::fs::write(&ledger, damaged).unwrap();
        let runs_before = std::fs::read_dir(env.path("out/.zhi/runs"))
            .unwrap()
            .count();
        let out = env.zhi().args(["status", "out"]).output().unwrap();
        assert_exit(&out, Exit::Success);
        let err = crate::support::testenv::stderr(&out);
        assert!(
            err.contains("pruned.json cannot be read")
                && err.contains("not counted")
                && err.contains("zhi prune"),
            "{case}: {}",
            show(&out)
        );
        let s = status_json(&env);
        let why = s["pruned_unreadable"].as_str().unwrap_or_default();
        assert!(why.contains("pruned.json cannot be read"), "{case}: {s}");
        for extra in [&[][..], &["--dry-run"][..]] {
            let out = prune(&env, extra);
            assert_exit(&out, Exit::Usage);
            let err = crate::support::testenv::stderr(&out);
            assert!(
                err.contains("pruned.json cannot be read") && err.contains("move it aside"),
                "{case}: {}",
                show(&out)
            );
        }
        assert_eq!(
            std::fs::read(&ledger).unwrap(),
            damaged,
            "{case}: written over"
        );
        let runs_after = std::fs::read_dir(env.path("out/.zhi/runs"))
            .unwrap()
            .count();
        assert_eq!(runs_after, runs_before, "{case}: a run was removed");
    }
    // Moved aside, the count starts again.
    std::fs::rename(&ledger, env.path("out/.zhi/pruned.json.damaged")).unwrap();
    assert_exit(&prune(&env, &[]), Exit::Success);
    let s = status_json(&env);
    assert_eq!(s["pruned_unreadable"], Value::Null, "{s}");
    assert!(s["pruned"]["records"].as_u64().unwrap() > 0, "{s}");
}
