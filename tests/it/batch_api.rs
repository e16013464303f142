//! Batch mode (issue 15, docs/model-api.md#batch-mode): `zhi run … --submit batch` against a fake
//! Batch API — submit, collect, rerun; partial failures, expiry and junk answers resubmitted;
//! a long document's reduce step in a follow-up batch; kills while submitting and collecting;
//! two overlapping cron runs; `zhi batch status|cancel`. Every test drives the real binary.

use crate::support::testenv::{TestEnv, assert_exit, show, stderr};
use crate::support::{FakeApi, FakeBatch, Pace, Recorded, Reply};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use zhi::exit::Exit;
use zhi::manifest::{self, JobRecord, Status};

/// Fast retries and a short grace period.
const ZHI_YAML: &str =
    "retry: {max_attempts: 3, base_delay_ms: 10, max_delay_ms: 50}\ngrace_period: 2\n";

fn env_with_docs(n: usize) -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", ZHI_YAML);
    write_docs(&env, n);
    env
}

pub(crate) fn write_docs(env: &TestEnv, n: usize) {
    for i in 0..n {
        env.write(
            &format!("docs/d{i:05}.txt"),
            format!("document number {i} <<docs/d{i:05}.txt>>\n"),
        );
    }
}

/// The document a request is about: the `<<docs/dNNNNN.txt>>` tag of its text (a summarize
/// request is one message, which does not name its document).
pub(crate) fn doc_of(req: &Recorded) -> String {
    req.document_tag().unwrap_or_default()
}

/// A chat answer per document: its summary, usage 60 + 40.
pub(crate) fn summary(req: &Recorded) -> Reply {
    Reply::text(format!("summary of {}", doc_of(req))).with_usage(60, 40)
}

/// `zhi --no-progress run summarize docs -o out --base-url <fake> ARGS…`.
pub(crate) fn zhi_run(env: &TestEnv, api: &FakeApi, args: &[&str]) -> std::process::Output {
    env.zhi()
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .arg("--base-url")
        .arg(api.zhipu_base_url())
        .env("ZHI_API_KEY", "test-key")
        .args(args)
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap()
}

pub(crate) fn submit(env: &TestEnv, api: &FakeApi) -> std::process::Output {
    zhi_run(env, api, &["--submit", "batch"])
}

/// The same, as a child process we can kill.
fn spawn_submit(env: &TestEnv, api: &FakeApi) -> Child {
    env.zhi_process()
        .args(["--no-progress", "run", "summarize", "docs", "-o", "out"])
        .arg("--base-url")
        .arg(api.zhipu_base_url())
        .env("ZHI_API_KEY", "test-key")
        .args(["--submit", "batch"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait(child: &mut Child, limit: Duration) -> std::process::Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("zhi did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child_output(child)
}

fn child_output(child: &mut Child) -> std::process::Output {
    use std::io::Read;
    let mut out = std::process::Output {
        status: child.wait().unwrap(),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    if let Some(mut s) = child.stdout.take() {
        s.read_to_end(&mut out.stdout).unwrap();
    }
    if let Some(mut s) = child.stderr.take() {
        s.read_to_end(&mut out.stderr).unwrap();
    }
    out
}

fn until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn out_dir(env: &TestEnv) -> PathBuf {
    env.path("out")
}

/// Every run's records, oldest run first.
fn runs(env: &TestEnv) -> Vec<Vec<JobRecord>> {
    manifest::list_runs(&out_dir(env))
        .iter()
        .map(|r| manifest::read_records(&r.path).unwrap().0)
        .collect()
}

pub(crate) fn latest(env: &TestEnv) -> Vec<JobRecord> {
    runs(env).pop().unwrap_or_default()
}

pub(crate) fn count(records: &[JobRecord], s: Status) -> usize {
    records.iter().filter(|r| r.status == s).count()
}

fn kinds(records: &[JobRecord]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for r in records {
        let k = r
            .error
            .as_ref()
            .map_or("-".to_string(), |e| e.kind.to_string());
        *m.entry(format!("{}/{k}", r.status.as_str())).or_default() += 1;
    }
    m
}

/// Requests the fake saw outside the Batch API's endpoints.
fn outside_batch_api(api: &FakeApi) -> Vec<String> {
    api.requests()
        .iter()
        .filter(|r| !(r.path.contains("/files") || r.path.contains("/batches")))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

/// Every job succeeded exactly once over all runs; its summary is there and its own.
fn assert_each_succeeded_once(env: &TestEnv, n: usize) {
    let mut succeeded: BTreeMap<String, usize> = BTreeMap::new();
    for run in runs(env) {
        for r in run {
            if r.status == Status::Succeeded {
                *succeeded.entry(r.input.clone()).or_default() += 1;
            }
        }
    }
    assert_eq!(succeeded.len(), n, "every job succeeded");
    let twice: Vec<_> = succeeded.iter().filter(|(_, c)| **c != 1).collect();
    assert!(
        twice.is_empty(),
        "jobs that succeeded more than once: {twice:?}"
    );
    for i in 0..n {
        let doc = format!("docs/d{i:05}.txt");
        let text = std::fs::read_to_string(env.path(&format!("out/summarize/{doc}/summary.md")))
            .unwrap_or_else(|e| panic!("{doc}: {e}"));
        assert_eq!(text.trim_end(), format!("summary of {doc}"));
    }
}

fn batch_folders(env: &TestEnv) -> Vec<PathBuf> {
    std::fs::read_dir(env.path("out/.zhi/batches"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// What a user sees of a record, as a direct run would write it.
fn essence(r: &JobRecord) -> Value {
    serde_json::json!({
        "input": r.input, "status": r.status, "outputs": r.outputs, "model": r.model,
        "turns": r.turns, "attempts": r.attempts, "requests": r.requests, "tokens": r.tokens,
        "error": r.error, "output_dir": r.output_dir, "cache_key": r.cache_key,
        "input_sha256": r.input_sha256, "served_model": r.served_model,
    })
}

#[test]
fn submit_then_collect_commits_what_a_direct_run_would_and_a_rerun_costs_nothing() {
    let env = env_with_docs(6);
    let batch = FakeBatch::new(summary);
    let api = FakeApi::start(batch.handler());

    // Submit: every job waits for the batch; nothing is sent to the chat endpoint.
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    let err = stderr(&out);
    assert!(
        err.contains("submitted 6 request(s) in 1 batch(es)"),
        "{err}"
    );
    assert!(err.contains("run the same command again"), "{err}");
    let records = latest(&env);
    assert_eq!(
        kinds(&records),
        BTreeMap::from([("skipped/batch_pending".into(), 6)])
    );
    assert!(api.chat_requests().is_empty());
    let batches = batch.batches();
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].lines.len(), 6);
    assert_eq!(batches[0].endpoint, "/v4/chat/completions");
    assert_eq!(batches[0].lines[0]["url"], "/v4/chat/completions");
    let ids: BTreeSet<String> = batch.custom_ids().into_iter().collect();
    let job_ids: BTreeSet<String> = records.iter().map(|r| r.job_id.clone()).collect();
    assert_eq!(ids, job_ids, "custom_id is the job id");
    // The upload is deleted only once the batch is collected.
    assert_eq!(batch.files().len(), 1);
    assert_eq!(batch.files()[0].purpose, "batch");
    assert!(
        !env.path("out/summarize").exists(),
        "no output before the answers"
    );

    // A cron run before the batch ends: nothing more is submitted.
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert!(
        stderr(&out).contains("still running: 1 batch(es), 6 request(s)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(batch.batches().len(), 1, "no second submission");
    assert_eq!(
        kinds(&latest(&env)),
        BTreeMap::from([("skipped/batch_pending".into(), 6)])
    );

    // The batch ends; the next cron run collects and commits.
    batch.finish_all();
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert!(
        stderr(&out).contains("6 answer(s) used"),
        "{}",
        stderr(&out)
    );
    let collected = latest(&env);
    assert_eq!(
        kinds(&collected),
        BTreeMap::from([("succeeded/-".into(), 6)])
    );
    assert_each_succeeded_once(&env, 6);
    assert!(
        batch.files().is_empty(),
        "every file deleted: {:?}",
        batch.files()
    );
    assert_eq!(batch.deleted().len(), 2, "the upload and the results");
    assert!(batch_folders(&env).is_empty(), "{:?}", batch_folders(&env));
    assert!(
        outside_batch_api(&api).is_empty(),
        "{:?}",
        outside_batch_api(&api)
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(env.path("out/manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["batches"]["answers_used"], 6);

    // A rerun: all cached, no request at all.
    let before = api.count();
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert_eq!(
        api.count(),
        before,
        "a rerun after collection makes no request"
    );
    assert_eq!(
        kinds(&latest(&env)),
        BTreeMap::from([("cached/-".into(), 6)])
    );

    // The same documents run directly: the same outputs and records.
    let direct = env_with_docs(6);
    let chat = FakeApi::start(summary);
    let out = direct
        .zhi()
        .args([
            "--no-progress",
            "run",
            "summarize",
            "docs",
            "-o",
            "out",
            "--base-url",
        ])
        .arg(chat.zhipu_base_url())
        .env("ZHI_API_KEY", "test-key")
        .output()
        .unwrap();
    assert_exit(&out, Exit::Success);
    let by_input = |rs: Vec<JobRecord>| -> BTreeMap<String, Value> {
        rs.iter().map(|r| (r.input.clone(), essence(r))).collect()
    };
    assert_eq!(by_input(collected), by_input(latest(&direct)));
    // And the batch lines carried exactly the direct requests' bodies.
    let mut direct_bodies: Vec<Value> = chat
        .chat_requests()
        .iter()
        .map(|r| r.body.clone())
        .collect();
    let mut batch_bodies: Vec<Value> = batch.batches()[0]
        .lines
        .iter()
        .map(|l| l["body"].clone())
        .collect();
    let key = |v: &Value| v.to_string();
    direct_bodies.sort_by_key(key);
    batch_bodies.sort_by_key(key);
    assert_eq!(direct_bodies, batch_bodies);
}

/// 10,000 documents, at most 4,000 requests a batch: three batches, every job succeeded
/// exactly once, outputs and records as a direct run's, and no request outside the Batch
/// API's endpoints. A rerun makes no request.
#[test]
fn ten_thousand_documents_through_batches() {
    const N: usize = 10_000;
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        format!("{ZHI_YAML}batch: {{max_requests: 4000}}\n"),
    );
    write_docs(&env, N);
    let batch = FakeBatch::new(summary);
    let api = FakeApi::start(batch.handler());

    let started = Instant::now();
    let out = zhi_run(&env, &api, &["--submit", "batch", "-j", "16"]);
    assert_exit(&out, Exit::Success);
    let submitted = started.elapsed();
    let batches = batch.batches();
    assert_eq!(
        batches.iter().map(|b| b.lines.len()).collect::<Vec<_>>(),
        [4000, 4000, 2000]
    );
    assert_eq!(count(&latest(&env), Status::Skipped), N);

    batch.finish_all();
    let started = Instant::now();
    let out = zhi_run(&env, &api, &["--submit", "batch", "-j", "16"]);
    assert_exit(&out, Exit::Success);
    let collected = started.elapsed();
    let records = latest(&env);
    assert_eq!(
        count(&records, Status::Succeeded),
        N,
        "{:?}",
        kinds(&records)
    );
    assert_each_succeeded_once(&env, N);
    let r = records
        .iter()
        .find(|r| r.input == "docs/d00042.txt")
        .unwrap();
    assert_eq!((r.turns, r.attempts, r.requests), (1, 1, 1));
    assert_eq!((r.tokens.prompt, r.tokens.completion), (60, 40));
    assert_eq!(r.outputs.len(), 1);
    assert_eq!(r.outputs[0].path, "summarize/docs/d00042.txt/summary.md");
    assert!(
        outside_batch_api(&api).is_empty(),
        "{:?}",
        outside_batch_api(&api)
    );
    assert!(batch.files().is_empty(), "every file deleted");
    assert_eq!(batch.batches().len(), 3, "no batch submitted twice");

    let before = api.count();
    let out = zhi_run(
        &env,
        &api,
        &["--submit", "batch", "-j", "16", "--records", "all"],
    );
    assert_exit(&out, Exit::Success);
    assert_eq!(
        api.count(),
        before,
        "a rerun after collection makes no request"
    );
    assert_eq!(count(&latest(&env), Status::Cached), N);
    eprintln!("10,000 documents: submitted in {submitted:?}, collected in {collected:?}");
}

/// The latest record of each input.
fn by_input(records: &[JobRecord]) -> BTreeMap<String, JobRecord> {
    records
        .iter()
        .map(|r| (r.input.clone(), r.clone()))
        .collect()
}

fn state(r: &JobRecord) -> String {
    format!(
        "{}/{}",
        r.status.as_str(),
        r.error.as_ref().map_or("-".into(), |e| e.kind.to_string())
    )
}

/// A batch that expires half done, answers that fail (retryable or not) and a junk answer:
/// what can be mended goes in the next batch — an expired or failed request again, a junk
/// answer's fresh round as the direct path would ask it — within the retry budget; what
/// cannot is recorded as a direct run would record it.
#[test]
fn expiry_failures_and_junk_answers_are_resubmitted_or_recorded() {
    let env = env_with_docs(8);
    let calls: std::sync::Arc<std::sync::Mutex<BTreeMap<String, usize>>> = Default::default();
    let seen = calls.clone();
    let batch = FakeBatch::new(move |req| {
        let doc = doc_of(req);
        let n = {
            let mut m = seen.lock().unwrap();
            let n = m.entry(doc.clone()).or_default();
            *n += 1;
            *n
        };
        match doc.as_str() {
            "docs/d00001.txt" => Reply::zhipu_error(400, "1301", "unsafe content"),
            "docs/d00002.txt" if n == 1 => Reply::zhipu_error(500, "500", "internal error"),
            // The document handed back: a copy, asked afresh.
            "docs/d00003.txt" if n == 1 => Reply::text(req.document_text()),
            "docs/d00004.txt" => Reply::zhipu_error(503, "500", "overloaded"),
            _ => summary(req),
        }
    });
    let api = FakeApi::start(batch.handler());
    let ids = |b: usize| -> BTreeSet<String> {
        batch.batches()[b]
            .lines
            .iter()
            .map(|l| l["custom_id"].as_str().unwrap().to_string())
            .collect()
    };

    // One job at a time: the batch's lines are in the documents' order.
    let out = zhi_run(&env, &api, &["--submit", "batch", "-j", "1"]);
    assert_exit(&out, Exit::Success);
    let job_of: BTreeMap<String, String> = latest(&env)
        .iter()
        .map(|r| (r.input.clone(), r.job_id.clone()))
        .collect();
    let id = |i: usize| job_of[&format!("docs/d{i:05}.txt")].clone();
    // The batch expires with its first five requests answered.
    batch.expire_all(5);

    let out = submit(&env, &api);
    assert_exit(&out, Exit::JobsFailed);
    let r = by_input(&latest(&env));
    assert_eq!(state(&r["docs/d00000.txt"]), "succeeded/-");
    assert_eq!(state(&r["docs/d00001.txt"]), "failed/content_filter");
    for i in 2..8 {
        assert_eq!(
            state(&r[&format!("docs/d{i:05}.txt")]),
            "skipped/batch_pending",
            "{i}"
        );
    }
    let second: BTreeSet<String> =
        [id(2), format!("{}-t2", id(3)), id(4), id(5), id(6), id(7)].into();
    assert_eq!(
        ids(1),
        second,
        "retryable failures, expired requests and the junk answer's fresh round"
    );
    let fresh = batch.batches()[1]
        .lines
        .iter()
        .find(|l| l["custom_id"] == format!("{}-t2", id(3)).as_str())
        .unwrap()["body"]
        .clone();
    let last = fresh["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    // A one-message request is asked afresh as it was, naming nothing after its text.
    let first = batch.batches()[0]
        .lines
        .iter()
        .find(|l| l["custom_id"] == id(3).as_str())
        .unwrap()["body"]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(last, first);
    batch.finish_all();

    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    let r = by_input(&latest(&env));
    for i in [2, 3, 5, 6, 7] {
        assert_eq!(
            state(&r[&format!("docs/d{i:05}.txt")]),
            "succeeded/-",
            "{i}"
        );
    }
    assert_eq!(
        r["docs/d00002.txt"].attempts, 2,
        "answered by its second submission"
    );
    assert_eq!(
        r["docs/d00003.txt"].turns, 2,
        "the fresh round is the job's second turn"
    );
    // A failed job is tried again by the next run, as a direct run does.
    assert_eq!(state(&r["docs/d00001.txt"]), "skipped/batch_pending");
    assert_eq!(state(&r["docs/d00004.txt"]), "skipped/batch_pending");
    assert_eq!(ids(2), BTreeSet::from([id(1), id(4)]));
    batch.finish_all();

    // The third submission of d4 fails too: retry.max_attempts (3) is spent.
    let out = submit(&env, &api);
    assert_exit(&out, Exit::JobsFailed);
    let r = by_input(&latest(&env));
    assert_eq!(state(&r["docs/d00001.txt"]), "failed/content_filter");
    let d4 = &r["docs/d00004.txt"];
    assert_eq!(state(d4), "failed/api_error");
    assert!(
        d4.error
            .as_ref()
            .unwrap()
            .message
            .contains("after 3 batch submissions"),
        "{d4:?}"
    );
    assert_eq!(batch.batches().len(), 3, "nothing left to submit");
    assert!(batch.files().is_empty(), "{:?}", batch.files());
    assert!(batch_folders(&env).is_empty(), "{:?}", batch_folders(&env));
    assert!(outside_batch_api(&api).is_empty());
    let summaries: Vec<String> = [0, 2, 3, 5, 6, 7]
        .iter()
        .map(|i| {
            std::fs::read_to_string(env.path(&format!("out/summarize/docs/d{i:05}.txt/summary.md")))
                .unwrap()
        })
        .collect();
    assert!(
        summaries.iter().all(|s| s.starts_with("summary of docs/")),
        "{summaries:?}"
    );
}

/// A long document's pieces go in one batch and its reduce step in the next; the summary is
/// committed by the run that collects the reduce answer, with every piece's result in it.
#[test]
fn a_long_documents_reduce_step_is_a_follow_up_batch() {
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        format!("{ZHI_YAML}models:\n  glm-4-flash: {{context_window: 4000, max_output: 100}}\n"),
    );
    let pages: String = (1..=120)
        .map(|i| format!("\u{c}MARK-{i:03} {}\n", "lorem ".repeat(44)))
        .collect();
    env.write("docs/long.txt", pages);
    let marks = |text: &str| -> Vec<String> {
        text.split_whitespace()
            .filter(|w| w.starts_with("MARK-") || w.starts_with("RESULT-"))
            .map(str::to_string)
            .collect()
    };
    let batch = FakeBatch::new(move |req| {
        let user = req.last_user_text().unwrap_or_default();
        let found = marks(&user);
        if user.contains("results of") {
            Reply::text(format!(
                "FINAL {}. {}",
                found.join(" "),
                crate::support::FILLER
            ))
        } else {
            Reply::text(format!(
                "RESULT-{}. {}",
                found.first().cloned().unwrap_or_default(),
                crate::support::FILLER
            ))
        }
    });
    let api = FakeApi::start(batch.handler());

    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    let job = latest(&env).remove(0);
    let pieces = batch.custom_ids();
    assert!(pieces.len() >= 3, "{pieces:?}");
    assert!(
        pieces
            .iter()
            .enumerate()
            .all(|(i, id)| *id == format!("{}-piece-{i:05}", job.job_id)),
        "{pieces:?}"
    );
    batch.finish_all();

    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    let r = latest(&env).remove(0);
    assert_eq!(state(&r), "skipped/batch_pending");
    let chunks = r.chunks.unwrap();
    assert_eq!(
        (chunks.done, chunks.total),
        (pieces.len() as u32, pieces.len() as u32)
    );
    assert_eq!(batch.batches().len(), 2);
    assert_eq!(
        batch.batches()[1].lines[0]["custom_id"],
        format!("{}-reduce", job.job_id).as_str()
    );
    assert!(!env.path("out/summarize/docs/long.txt").exists());
    batch.finish_all();

    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    let r = latest(&env).remove(0);
    assert_eq!(state(&r), "succeeded/-");
    let summary =
        std::fs::read_to_string(env.path("out/summarize/docs/long.txt/summary.md")).unwrap();
    assert!(summary.starts_with("FINAL RESULT-MARK-001"), "{summary}");
    assert_eq!(
        marks(&summary).len(),
        pieces.len(),
        "every piece's result reached the reduce step: {summary}"
    );
    assert!(!env.path("out/.zhi/checkpoints").join(&job.job_id).exists());
    assert!(batch.files().is_empty());
    assert!(outside_batch_api(&api).is_empty());
}

/// Slows one kind of Batch API call down (its effect happens at once, its answer comes
/// later), so a test can kill zhi while it waits.
#[derive(Clone, Default)]
struct Slow(
    std::sync::Arc<std::sync::Mutex<Option<Slowed>>>,
    std::sync::Arc<std::sync::Mutex<Option<(&'static str, &'static str)>>>,
);

/// Method, end of the path, delay.
type Slowed = (&'static str, &'static str, Duration);

impl Slow {
    fn set(&self, method: &'static str, path_end: &'static str, by: Duration) {
        *self.0.lock().unwrap() = Some((method, path_end, by));
    }
    fn clear(&self) {
        *self.0.lock().unwrap() = None;
        *self.1.lock().unwrap() = None;
    }
    /// The provider is down for these calls: 503 without effect.
    fn fail(&self, method: &'static str, path_end: &'static str) {
        *self.1.lock().unwrap() = Some((method, path_end));
    }
    /// A fake API serving `batch`, slowed as set.
    fn api(&self, batch: &FakeBatch) -> FakeApi {
        let slow = self.clone();
        let handler = batch.handler();
        FakeApi::start(move |req| {
            if let Some((m, end)) = *slow.1.lock().unwrap()
                && req.method == m
                && req.path.ends_with(end)
            {
                return Reply::zhipu_error(503, "500", "service unavailable");
            }
            let reply = handler(req);
            match *slow.0.lock().unwrap() {
                Some((m, end, by)) if req.method == m && req.path.ends_with(end) => {
                    Reply::delay(by, reply)
                }
                _ => reply,
            }
        })
    }
}

fn seen(api: &FakeApi, method: &str, path_end: &str) -> usize {
    api.requests()
        .iter()
        .filter(|r| r.method == method && r.path.ends_with(path_end))
        .count()
}

fn kill(child: &mut Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Lines in the results of the latest run (a killed run's last line may be torn).
fn latest_lines(env: &TestEnv) -> usize {
    manifest::list_runs(&out_dir(env))
        .last()
        .and_then(|r| std::fs::read_to_string(r.path.join("results.jsonl")).ok())
        .map_or(0, |t| t.lines().count())
}

/// Killed while downloading the answers, between deleting the batch's files, and in the
/// middle of committing: the next run loses nothing, commits nothing twice, submits nothing
/// again, and leaves no file at the provider.
#[test]
fn a_kill_during_collection_loses_nothing() {
    const N: usize = 300;
    let env = env_with_docs(N);
    let batch = FakeBatch::new(summary);
    let slow = Slow::default();
    let api = slow.api(&batch);
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    batch.finish_all();

    // 1. While the answers download.
    slow.set("GET", "/content", Duration::from_secs(5));
    let mut child = spawn_submit(&env, &api);
    until("the download", Duration::from_secs(60), || {
        seen(&api, "GET", "/content") >= 1
    });
    std::thread::sleep(Duration::from_millis(100));
    kill(&mut child);
    slow.clear();

    // 2. Between the deletions of the batch's files at the provider.
    slow.set("DELETE", "", Duration::from_secs(5));
    let mut child = spawn_submit(&env, &api);
    until("a deletion", Duration::from_secs(60), || {
        seen(&api, "DELETE", "") >= 1
    });
    std::thread::sleep(Duration::from_millis(100));
    kill(&mut child);
    slow.clear();

    // 3. While the answers are committed.
    let runs_before = manifest::list_runs(&out_dir(&env)).len();
    let mut child = spawn_submit(&env, &api);
    until("commits", Duration::from_secs(120), || {
        manifest::list_runs(&out_dir(&env)).len() > runs_before && latest_lines(&env) >= N / 3
    });
    kill(&mut child);
    let committed_before = runs(&env)
        .iter()
        .flatten()
        .filter(|r| r.status == Status::Succeeded)
        .count();
    assert!(
        committed_before > 0 && committed_before < N,
        "{committed_before}"
    );

    // The next cron run finishes the work.
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert_each_succeeded_once(&env, N);
    let last = latest(&env);
    assert_eq!(
        count(&last, Status::Succeeded) + count(&last, Status::Cached),
        N,
        "{:?}",
        kinds(&last)
    );
    assert_eq!(batch.batches().len(), 1, "nothing submitted again");
    assert!(batch.files().is_empty(), "{:?}", batch.files());
    assert!(batch_folders(&env).is_empty(), "{:?}", batch_folders(&env));
    assert!(!env.path("out/.zhi/staging").exists());
    assert!(outside_batch_api(&api).is_empty());
    let before = api.count();
    // Every job's record, cached ones too, to count them.
    let out = zhi_run(&env, &api, &["--submit", "batch", "--records", "all"]);
    assert_exit(&out, Exit::Success);
    assert_eq!(api.count(), before);
    assert_eq!(count(&latest(&env), Status::Cached), N);
}

/// Killed while uploading, and while creating the batch (the provider did it, zhi never
/// heard): the next run deletes the orphaned upload, adopts the batch it created, and never
/// submits a request twice.
#[test]
fn a_kill_while_submitting_never_submits_twice() {
    let env = env_with_docs(20);
    let batch = FakeBatch::new(summary);
    let slow = Slow::default();
    let api = slow.api(&batch);

    // Killed after the upload reached the provider, before zhi heard its id.
    slow.set("POST", "/files", Duration::from_secs(5));
    let mut child = spawn_submit(&env, &api);
    until("the upload", Duration::from_secs(60), || {
        seen(&api, "POST", "/files") >= 1
    });
    std::thread::sleep(Duration::from_millis(100));
    kill(&mut child);
    slow.clear();
    assert_eq!(batch.files().len(), 1, "an upload zhi never heard of");
    let orphan = batch.files()[0].id.clone();

    // Killed after the provider created the batch, before zhi heard its id.
    slow.set("POST", "/batches", Duration::from_secs(5));
    let mut child = spawn_submit(&env, &api);
    until("the batch", Duration::from_secs(60), || {
        seen(&api, "POST", "/batches") >= 1
    });
    std::thread::sleep(Duration::from_millis(100));
    kill(&mut child);
    slow.clear();
    assert!(
        batch.deleted().contains(&orphan),
        "the orphaned upload is deleted"
    );
    assert_eq!(batch.batches().len(), 1);

    // The provider cannot list its batches: zhi cannot tell whether the batch exists, so it
    // submits nothing (its requests count as running), says so, and exits 75 (try later).
    slow.fail("GET", "/batches");
    let out = submit(&env, &api);
    assert_exit(&out, Exit::TempFail);
    assert!(
        stderr(&out).contains("could not be brought up to date"),
        "{}",
        show(&out)
    );
    assert!(
        stderr(&out).contains("creation not confirmed"),
        "{}",
        show(&out)
    );
    assert_eq!(seen(&api, "POST", "/files"), 2, "no upload");
    assert_eq!(batch.batches().len(), 1);
    slow.clear();

    // The next run adopts that batch: nothing is submitted again.
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert!(
        stderr(&out).contains("still running: 1 batch(es), 20 request(s)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(batch.batches().len(), 1, "{:?}", batch.batches());
    assert_eq!(
        kinds(&latest(&env)),
        BTreeMap::from([("skipped/batch_pending".into(), 20)])
    );

    batch.finish_all();
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert_each_succeeded_once(&env, 20);
    assert_eq!(batch.batches().len(), 1);
    assert!(batch.files().is_empty(), "{:?}", batch.files());
    assert_eq!(batch.custom_ids().len(), 20);
}

/// Two cron runs overlap: the second finds the output folder locked, says so and exits 75
/// without a request; the batch is submitted once.
#[test]
fn two_overlapping_cron_runs_submit_once() {
    let env = env_with_docs(10);
    let batch = FakeBatch::new(summary);
    let slow = Slow::default();
    let api = slow.api(&batch);
    slow.set("POST", "/batches", Duration::from_millis(1500));
    let mut first = spawn_submit(&env, &api);
    until("the upload", Duration::from_secs(60), || {
        seen(&api, "POST", "/files") >= 1
    });
    let before = api.count();
    let second = submit(&env, &api);
    assert_exit(&second, Exit::TempFail);
    assert!(
        stderr(&second).contains("is in use by another zhi run"),
        "{}",
        stderr(&second)
    );
    // Only the first run's creation of its batch came meanwhile.
    let meanwhile: Vec<String> = api.requests()[before..]
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(
        meanwhile.len() <= 1 && meanwhile.iter().all(|r| r.ends_with("/batches")),
        "the second run made no request: {meanwhile:?}"
    );
    let first = wait(&mut first, Duration::from_secs(60));
    assert_exit(&first, Exit::Success);
    assert_eq!(batch.batches().len(), 1);
    slow.clear();

    // The next night's two runs: one collects, the other waits its turn.
    batch.finish_all();
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert_each_succeeded_once(&env, 10);
    assert_eq!(batch.batches().len(), 1);
}

fn zhi_batch(env: &TestEnv, api: &FakeApi, args: &[&str]) -> std::process::Output {
    env.zhi()
        .arg("batch")
        .args(args)
        .args(["-o", "out", "--base-url"])
        .arg(api.zhipu_base_url())
        .env("ZHI_API_KEY", "test-key")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap()
}

/// `zhi batch status` shows each batch as the provider says it is now; `zhi batch cancel`
/// cancels it, and the next run collects it and submits what it left undone again.
#[test]
fn batch_status_and_cancel() {
    let env = env_with_docs(6);
    let batch = FakeBatch::new(summary);
    let api = FakeApi::start(batch.handler());
    let out = zhi_batch(&env, &api, &["status"]);
    assert_exit(&out, Exit::Success);
    assert!(stderr(&out).contains("has no batches"), "{}", show(&out));

    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    let out = zhi_batch(&env, &api, &["status"]);
    assert_exit(&out, Exit::Success);
    let table = crate::support::testenv::stdout(&out);
    assert!(table.starts_with("BATCH"), "{table}");
    let row = table.lines().nth(1).unwrap().to_string();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        &cells[..5],
        ["batch_2", "glm-4-flash", "submitted", "in_progress", "6"],
        "{row}"
    );
    let out = env
        .zhi()
        .args(["--json", "batch", "status", "-o", "out", "--base-url"])
        .arg(api.zhipu_base_url())
        .env("ZHI_API_KEY", "test-key")
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json[0]["batch_id"], "batch_2");
    assert_eq!(json[0]["requests"].as_array().unwrap().len(), 6);

    let out = zhi_batch(&env, &api, &["cancel", "batch_9"]);
    assert_exit(&out, Exit::Usage);
    let out = zhi_batch(&env, &api, &["cancel"]);
    assert_exit(&out, Exit::Success);
    assert!(
        stderr(&out).contains("batch batch_2: cancelling (6 request(s))"),
        "{}",
        show(&out)
    );
    assert_eq!(batch.batches()[0].status, "cancelling");

    // The next run finds it cancelled with nothing answered: collected, its files deleted,
    // its requests submitted again.
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    let all = batch.batches();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].status, "cancelled");
    assert_eq!(all[1].lines.len(), 6);
    assert_eq!(
        batch.files().len(),
        1,
        "only the new upload: {:?}",
        batch.files()
    );
    batch.finish_all();
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    assert_each_succeeded_once(&env, 6);
    assert!(batch.files().is_empty());
}

/// Jobs that run the agent loop cannot go in a batch: refused with a reason by default, run
/// now at the standard price with `--agent-jobs run`.
#[test]
fn agent_loop_jobs_are_refused_or_run_now() {
    let env = env_with_docs(2);
    env.write(
        ".zhi/skills/agent.yaml",
        "name: agent\ndescription: An agent-loop skill\nsystem_prompt: Do what the document needs.\ntools: [file_read, file_write, file_list]\nmax_turns: 3\n",
    );
    let batch = FakeBatch::new(summary);
    let handler = batch.handler();
    let api = FakeApi::start(move |req| {
        if req.is_chat() {
            Reply::text("done with the document")
        } else {
            handler(req)
        }
    });
    let run = |extra: &[&str]| {
        env.zhi()
            .args([
                "--no-progress",
                "run",
                "agent",
                "docs",
                "-o",
                "out",
                "--submit",
                "batch",
            ])
            .args(extra)
            .arg("--base-url")
            .arg(api.zhipu_base_url())
            .env("ZHI_API_KEY", "test-key")
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert_exit(&out, Exit::JobsFailed);
    assert_eq!(
        kinds(&latest(&env)),
        BTreeMap::from([("failed/not_batchable".into(), 2)])
    );
    assert!(stderr(&out).contains("--agent-jobs run"), "{}", show(&out));
    assert_eq!(api.count(), 0);

    let out = run(&["--agent-jobs", "run"]);
    assert_exit(&out, Exit::Success);
    assert_eq!(
        kinds(&latest(&env)),
        BTreeMap::from([("succeeded/-".into(), 2)])
    );
    assert_eq!(api.chat_requests().len(), 2);
    assert!(batch.batches().is_empty());
}

/// A plain run (no `--submit batch`) in a folder with batches collects what they answered and
/// uses it, and sends what no batch holds now.
#[test]
fn a_plain_run_uses_batch_answers_and_sends_the_rest_now() {
    let env = env_with_docs(4);
    let batch = FakeBatch::new(summary);
    let handler = batch.handler();
    let api = FakeApi::start(move |req| {
        if req.is_chat() {
            summary(req)
        } else {
            handler(req)
        }
    });
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    // The batch ends at the next look; two more documents arrive meanwhile.
    batch.set_pace(Pace::Immediate);
    write_docs(&env, 6);
    let out = zhi_run(&env, &api, &[]);
    assert_exit(&out, Exit::Success);
    assert_eq!(
        kinds(&latest(&env)),
        BTreeMap::from([("succeeded/-".into(), 6)])
    );
    let sent: BTreeSet<String> = api.chat_requests().iter().map(doc_of).collect();
    assert_eq!(
        sent,
        BTreeSet::from(["docs/d00004.txt".into(), "docs/d00005.txt".into()]),
        "only what no batch answered is sent now"
    );
    assert_each_succeeded_once(&env, 6);
    assert_eq!(batch.batches().len(), 1);
    assert!(batch.files().is_empty());
    assert!(batch_folders(&env).is_empty());
}

/// The book is zhi's own: a link planted as `.zhi/batches` stops the run before anything is
/// written through it; a FIFO planted as a batch's record is reported, never read.
#[test]
fn a_planted_link_or_fifo_in_the_book_cannot_hang_or_lead_out() {
    let env = env_with_docs(2);
    let batch = FakeBatch::new(summary);
    let api = FakeApi::start(batch.handler());
    let elsewhere = env.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir_all(env.path("out/.zhi")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, env.path("out/.zhi/batches")).unwrap();
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Usage);
    assert!(stderr(&out).contains("link"), "{}", show(&out));
    assert_eq!(api.count(), 0);
    assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none());

    std::fs::remove_file(env.path("out/.zhi/batches")).unwrap();
    std::fs::create_dir_all(env.path("out/.zhi/batches/x-1")).unwrap();
    let fifo = std::ffi::CString::new(
        env.path("out/.zhi/batches/x-1/batch.json")
            .to_str()
            .unwrap(),
    )
    .unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let out = zhi_run(&env, &api, &["--submit", "batch"]);
    assert_exit(&out, Exit::Success);
    assert!(stderr(&out).contains("FIFO"), "{}", show(&out));
    assert_eq!(batch.batches().len(), 1);
}

/// Batch files are split at `batch.max_bytes` (and `max_requests`); a limit above the
/// providers' is refused before anything runs.
#[test]
fn batch_files_are_split_at_the_configured_limits() {
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        format!("{ZHI_YAML}batch: {{max_bytes: 5000, max_requests: 3}}\n"),
    );
    write_docs(&env, 8);
    let batch = FakeBatch::new(summary);
    let api = FakeApi::start(batch.handler());
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Success);
    let uploads: Vec<usize> = api
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/files"))
        .map(|r| r.body_bytes.len())
        .collect();
    let sizes: Vec<usize> = batch.batches().iter().map(|b| b.lines.len()).collect();
    assert!(sizes.len() >= 3, "{sizes:?}");
    assert!(sizes.iter().all(|n| (1..=3).contains(n)), "{sizes:?}");
    assert_eq!(sizes.iter().sum::<usize>(), 8);
    assert_eq!(uploads.len(), sizes.len());
    let ids = batch.custom_ids();
    assert_eq!(
        ids.iter().collect::<BTreeSet<_>>().len(),
        8,
        "each request once"
    );
    for b in batch.batches() {
        let bytes: usize = b.lines.iter().map(|l| l.to_string().len() + 1).sum();
        assert!(bytes <= 5000, "{bytes}");
    }

    env.write("zhi.yaml", "batch: {max_requests: 60000}\n");
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Usage);
    assert!(
        stderr(&out).contains("batch.max_requests 60000"),
        "{}",
        show(&out)
    );
}

/// A server with no Batch API (a local llama.cpp) cannot take a batch: the run says so and
/// exits 3 (trying again cannot help); the jobs are queued again by a run that can.
#[test]
fn a_server_without_a_batch_api_is_said_plainly() {
    let env = env_with_docs(2);
    let api = FakeApi::start(|_| Reply::status(404, serde_json::json!({"error": "not found"})));
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Aborted);
    assert!(stderr(&out).contains("has no Batch API"), "{}", show(&out));
    assert!(api.chat_requests().is_empty());
    // The upload was refused: nothing is left to look for, the next run says the same.
    assert!(batch_folders(&env).is_empty(), "{:?}", batch_folders(&env));
    let out = submit(&env, &api);
    assert_exit(&out, Exit::Aborted);
    assert!(
        !stderr(&out).contains("could not be brought up to date"),
        "{}",
        show(&out)
    );
    assert!(batch_folders(&env).is_empty());
}
