//! Batch operations (issue 5; docs/outputs.md, docs/exit-codes.md, docs/shards.md): reruns that
//! cost nothing, kills that lose nothing, one run per output folder, signals, budgets, failure
//! policy, adaptive concurrency, shards and `zhi manifest merge`/`show`. Every test drives the real
//! binary against the fake API.

use crate::support::testenv::{TestEnv, assert_exit, stderr, stdout};
use crate::support::{FakeApi, Recorded, Reply};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use zhi::exit::Exit;
use zhi::manifest::{self, JobRecord, Status};

/// Fast retries and a short grace period, so failure paths take milliseconds.
const ZHI_YAML: &str =
    "retry: {max_attempts: 3, base_delay_ms: 10, max_delay_ms: 50}\ngrace_period: 2\n";

fn env_with_docs(n: usize) -> TestEnv {
    let env = TestEnv::new();
    env.write("zhi.yaml", ZHI_YAML);
    for i in 0..n {
        env.write(
            &format!("docs/d{i:02}.txt"),
            format!("document number {i} <<docs/d{i:02}.txt>>\n"),
        );
    }
    env
}

/// The document a request is about: the `<<docs/dNN.txt>>` tag of its text (a summarize
/// request is one message, which does not name its document).
fn doc_of(req: &Recorded) -> String {
    req.document_tag().unwrap_or_default()
}

/// Every chat request gets a plain answer (summarize is direct: each job makes one request
/// and its answer is `summary.md`), with usage 60 + 40 = 100 tokens.
fn answering() -> FakeApi {
    FakeApi::start(|req| {
        if req.is_chat() {
            Reply::text(format!("summary of {}", doc_of(req))).with_usage(60, 40)
        } else {
            Reply::status(404, serde_json::json!({"error": {"message": "no route"}}))
        }
    })
}

/// `zhi run summarize docs -o out --base-url <fake> --no-progress ARGS…`.
fn run(env: &TestEnv, api: &FakeApi, args: &[&str]) -> std::process::Output {
    env.zhi()
        .args([
            "run",
            "summarize",
            "docs",
            "-o",
            "out",
            "--no-progress",
            "--base-url",
        ])
        .arg(api.base_url())
        .args(args)
        .output()
        .unwrap()
}

/// The same, as a child process we can signal.
fn spawn(env: &TestEnv, api: &FakeApi, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_zhi"))
        .current_dir(&env.work)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .env("LANG", "C.UTF-8")
        .args([
            "run",
            "summarize",
            "docs",
            "-o",
            "out",
            "--no-progress",
            "--base-url",
        ])
        .arg(api.base_url())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait for a child, failing the test (and killing it) if it takes more than `limit`.
fn wait(child: &mut Child, limit: Duration) -> std::process::Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("zhi did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut out = std::process::Output {
        status: child.wait().unwrap(),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    use std::io::Read;
    if let Some(mut s) = child.stdout.take() {
        s.read_to_end(&mut out.stdout).unwrap();
    }
    if let Some(mut s) = child.stderr.take() {
        s.read_to_end(&mut out.stderr).unwrap();
    }
    out
}

/// Poll until `cond` holds (at most 20 s).
fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: sending a signal to our own child process, which has not been reaped yet.
    let r = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(r, 0, "kill({}, {sig})", child.id());
}

fn out_dir(env: &TestEnv) -> PathBuf {
    env.path("out")
}

/// The runs of the output folder, oldest first, with their records.
fn runs(env: &TestEnv) -> Vec<(manifest::RunDir, Vec<JobRecord>)> {
    manifest::list_runs(&out_dir(env))
        .into_iter()
        .map(|r| {
            let (records, _) = manifest::read_records(&r.path).unwrap();
            (r, records)
        })
        .collect()
}

fn latest(env: &TestEnv) -> (manifest::RunDir, Vec<JobRecord>) {
    runs(env).pop().expect("a run")
}

fn latest_manifest(env: &TestEnv) -> Value {
    let (dir, _) = latest(env);
    serde_json::from_slice(&std::fs::read(dir.path.join("manifest.json")).expect("manifest.json"))
        .unwrap()
}

fn statuses(records: &[JobRecord]) -> BTreeMap<String, Status> {
    records
        .iter()
        .map(|r| (r.input.clone(), r.status))
        .collect()
}

fn count(records: &[JobRecord], s: Status) -> usize {
    records.iter().filter(|r| r.status == s).count()
}

fn response(env: &TestEnv, doc: &str) -> PathBuf {
    out_dir(env).join("summarize").join(doc).join("summary.md")
}

#[test]
fn rerun_costs_nothing_and_a_changed_file_reruns_only_its_job() {
    let env = env_with_docs(5);
    let api = answering();
    let o = run(&env, &api, &[]);
    assert_exit(&o, Exit::Success);
    assert_eq!(api.chat_requests().len(), 5);

    let o = run(&env, &api, &[]);
    assert_exit(&o, Exit::Success);
    assert_eq!(
        api.chat_requests().len(),
        5,
        "an unchanged rerun makes no request"
    );
    let (_, records) = latest(&env);
    assert_eq!(records.len(), 5);
    assert!(
        records.iter().all(|r| r.status == Status::Cached),
        "{:?}",
        statuses(&records)
    );
    assert!(records.iter().all(|r| r.tokens.total() == 0));

    // A new modification time with the same content is still the same input.
    let same = std::fs::read(env.path("docs/d01.txt")).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(env.path("docs/d01.txt"), &same).unwrap();
    // A new content is a new input: exactly that job reruns.
    env.write(
        "docs/d03.txt",
        "document number 3, revised <<docs/d03.txt>>\n",
    );
    let o = run(&env, &api, &[]);
    assert_exit(&o, Exit::Success);
    let chat = api.chat_requests();
    assert_eq!(chat.len(), 6, "one job, one request");
    assert_eq!(doc_of(&chat[5]), "docs/d03.txt");
    let (_, records) = latest(&env);
    let st = statuses(&records);
    assert_eq!(st["docs/d03.txt"], Status::Succeeded);
    assert_eq!(count(&records, Status::Cached), 4, "{st:?}");
    assert_eq!(
        std::fs::read_to_string(response(&env, "docs/d03.txt")).unwrap(),
        "summary of docs/d03.txt\n"
    );
}

#[test]
fn an_edited_output_is_kept_and_forcing_ends_in_output_conflict() {
    let env = env_with_docs(2);
    let api = answering();
    let o = run(&env, &api, &[]);
    assert_exit(&o, Exit::Success);
    let edited = response(&env, "docs/d00.txt");
    std::fs::write(&edited, "my own notes, do not lose them\n").unwrap();

    let o = run(&env, &api, &["--force"]);
    assert_exit(&o, Exit::JobsFailed);
    let (_, records) = latest(&env);
    let a = records.iter().find(|r| r.input == "docs/d00.txt").unwrap();
    assert_eq!(a.status, Status::Failed);
    assert_eq!(a.error.as_ref().unwrap().kind.as_str(), "output_conflict");
    assert_eq!(
        std::fs::read_to_string(&edited).unwrap(),
        "my own notes, do not lose them\n"
    );
    // The untouched job folder was zhi's own, so forcing replaced it.
    let b = records.iter().find(|r| r.input == "docs/d01.txt").unwrap();
    assert_eq!(b.status, Status::Succeeded);
    // The conflict is found before the model is asked: no tokens spent on it.
    assert_eq!(api.chat_requests().len(), 3);
    assert!(stderr(&o).contains("output_conflict"), "{}", stderr(&o));
}

/// Each job folder holds exactly `summary.md`, and no staging is left.
fn assert_outputs_whole(env: &TestEnv, docs: &[String]) {
    for d in docs {
        let dir = out_dir(env).join("summarize").join(d);
        let files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(files, ["summary.md"], "{d}");
        assert_eq!(
            std::fs::read_to_string(dir.join("summary.md")).unwrap(),
            format!("summary of {d}\n")
        );
    }
    let staging = out_dir(env).join(".zhi/staging");
    let left: Vec<_> = std::fs::read_dir(&staging).into_iter().flatten().collect();
    assert!(left.is_empty(), "staging left behind: {left:?}");
}

#[test]
fn sigkill_at_any_point_loses_nothing() {
    let env = env_with_docs(6);
    let docs: Vec<String> = (0..6).map(|i| format!("docs/d{i:02}.txt")).collect();
    let api = FakeApi::start(|req| {
        Reply::delay(
            Duration::from_millis(150),
            Reply::text(format!("summary of {}", doc_of(req))),
        )
    });
    let committed = |env: &TestEnv| docs.iter().filter(|d| response(env, d).exists()).count();

    // Before any commit: requests in flight, nothing in place yet.
    let mut child = spawn(&env, &api, &["-j", "2"]);
    until("a request", || api.count() >= 1);
    signal(&child, libc::SIGKILL);
    wait(&mut child, Duration::from_secs(10));
    assert_eq!(committed(&env), 0);

    // Right after a commit: the next kill lands between commits and their records.
    let mut child = spawn(&env, &api, &["-j", "2"]);
    until("a commit", || committed(&env) >= 1);
    signal(&child, libc::SIGKILL);
    wait(&mut child, Duration::from_secs(10));

    // During later commits.
    let before = committed(&env);
    let mut child = spawn(&env, &api, &["-j", "2"]);
    until("another commit", || committed(&env) > before);
    std::thread::sleep(Duration::from_millis(5));
    signal(&child, libc::SIGKILL);
    wait(&mut child, Duration::from_secs(10));

    // After every commit, possibly before the manifest.
    let mut child = spawn(&env, &api, &["-j", "3"]);
    until("all commits", || committed(&env) == docs.len());
    signal(&child, libc::SIGKILL);
    wait(&mut child, Duration::from_secs(10));

    // The rerun finishes the work.
    let o = run(&env, &api, &[]);
    assert_exit(&o, Exit::Success);
    let all = runs(&env);
    let (_, last) = all.last().unwrap();
    assert_eq!(last.len(), docs.len());
    for r in last {
        assert!(
            matches!(r.status, Status::Succeeded | Status::Cached),
            "{}: {:?} {:?}",
            r.input,
            r.status,
            r.error
        );
    }
    // Across all runs, each job succeeded exactly once: a job with a succeeded record is
    // never redone.
    for d in &docs {
        let n = all
            .iter()
            .flat_map(|(_, recs)| recs)
            .filter(|r| &r.input == d && r.status == Status::Succeeded)
            .count();
        assert_eq!(n, 1, "{d} succeeded {n} times across the runs");
    }
    assert_outputs_whole(&env, &docs);
    assert!(!out_dir(&env).join(".zhi/lock").exists());
}

#[test]
fn a_kill_between_commit_and_record_is_not_taken_for_an_edit() {
    // The state a SIGKILL leaves when it lands after a job folder was renamed into place but
    // before its record reached results.jsonl: the folder, the commit journal, no record.
    let env = env_with_docs(2);
    let api = answering();
    let o = run(&env, &api, &[]);
    assert_exit(&o, Exit::Success);
    let (dir, records) = latest(&env);
    let lost = records.iter().find(|r| r.input == "docs/d01.txt").unwrap();
    let kept: Vec<&JobRecord> = records
        .iter()
        .filter(|r| r.input != "docs/d01.txt")
        .collect();
    let mut jsonl = String::new();
    for r in &kept {
        jsonl.push_str(&serde_json::to_string(r).unwrap());
        jsonl.push('\n');
    }
    std::fs::write(dir.path.join("results.jsonl"), jsonl).unwrap();
    std::fs::remove_file(dir.path.join("manifest.json")).unwrap();
    let journal = out_dir(&env).join(format!(".zhi/commits/{}.json", lost.job_id));
    std::fs::create_dir_all(journal.parent().unwrap()).unwrap();
    std::fs::write(&journal, serde_json::to_vec(lost).unwrap()).unwrap();

    let o = run(&env, &api, &[]);
    assert_exit(&o, Exit::Success);
    let st = statuses(&latest(&env).1);
    assert_eq!(
        st["docs/d01.txt"],
        Status::Succeeded,
        "redone, not an output_conflict"
    );
    assert_eq!(st["docs/d00.txt"], Status::Cached);
    assert!(
        !journal.exists(),
        "the journal goes once the record is written"
    );
    assert_outputs_whole(&env, &["docs/d00.txt".into(), "docs/d01.txt".into()]);

    // Without a journal the same folder is a person's: the edit is kept.
    let (dir, records) = latest(&env);
    let lost = records
        .iter()
        .find(|r| r.input == "docs/d01.txt")
        .unwrap()
        .clone();
    for run in runs(&env) {
        let (recs, _) = manifest::read_records(&run.0.path).unwrap();
        let keep: String = recs
            .iter()
            .filter(|r| r.job_id != lost.job_id)
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        std::fs::write(run.0.path.join("results.jsonl"), keep).unwrap();
    }
    drop(dir);
    let o = run(&env, &api, &[]);
    assert_exit(&o, Exit::JobsFailed);
    let rec = latest(&env)
        .1
        .into_iter()
        .find(|r| r.input == "docs/d01.txt")
        .unwrap();
    assert_eq!(rec.error.unwrap().kind.as_str(), "output_conflict");
}

fn interrupted_by(sig: i32, exit: Exit) {
    let env = env_with_docs(4);
    let api = FakeApi::start(|req| {
        Reply::delay(
            Duration::from_millis(400),
            Reply::text(format!("summary of {}", doc_of(req))),
        )
    });
    let mut child = spawn(&env, &api, &["-j", "2"]);
    until("a request", || api.count() >= 1);
    signal(&child, sig);
    let o = wait(&mut child, Duration::from_secs(15));
    assert_exit(&o, exit);
    let m = latest_manifest(&env);
    assert_eq!(m["status"], "interrupted");
    assert_eq!(m["counts"]["planned"], 4);
    let (_, records) = latest(&env);
    assert_eq!(records.len(), 4, "every planned job has its record");
    // The jobs in flight finished within the grace period; the rest never started.
    assert!(
        count(&records, Status::Succeeded) >= 1,
        "{:?}",
        statuses(&records)
    );
    assert!(
        count(&records, Status::Cancelled) >= 1,
        "{:?}",
        statuses(&records)
    );
    // The jobs in flight asked (one succeeded), and no job after them was started.
    let asked = api.chat_requests().len();
    assert!((1..=2).contains(&asked), "{asked} requests");
    assert_eq!(
        std::fs::read(out_dir(&env).join("manifest.json"))
            .ok()
            .map(|b| serde_json::from_slice::<Value>(&b).unwrap()["status"].clone()),
        Some(Value::from("interrupted"))
    );
}

#[test]
fn sigint_ends_with_130_and_a_manifest() {
    interrupted_by(libc::SIGINT, Exit::Interrupted);
}

#[test]
fn sigterm_ends_with_143_and_a_manifest() {
    interrupted_by(libc::SIGTERM, Exit::Terminated);
}

#[test]
fn a_second_sigint_cancels_jobs_in_flight_at_once() {
    let env = env_with_docs(3);
    // A grace period no test would wait out: only the second signal can end this run.
    env.write("zhi.yaml", "retry: {max_attempts: 1}\ngrace_period: 600\n");
    let api = FakeApi::always(Reply::hang());
    let mut child = spawn(&env, &api, &["-j", "2"]);
    until("two requests", || api.count() >= 2);
    signal(&child, libc::SIGINT);
    // Two signals close together may arrive as one; leave the first time to be taken.
    std::thread::sleep(Duration::from_millis(200));
    signal(&child, libc::SIGINT);
    let o = wait(&mut child, Duration::from_secs(15));
    assert_exit(&o, Exit::Interrupted);
    let (_, records) = latest(&env);
    assert_eq!(
        count(&records, Status::Cancelled),
        3,
        "{:?}",
        statuses(&records)
    );
    assert_eq!(latest_manifest(&env)["status"], "interrupted");
}

#[test]
fn a_second_run_on_the_same_folder_gets_75_and_a_stale_lock_is_taken_over() {
    let env = env_with_docs(2);
    let api = FakeApi::start(|req| {
        Reply::delay(
            Duration::from_millis(1200),
            Reply::text(format!("summary of {}", doc_of(req))),
        )
    });
    let mut first = spawn(&env, &api, &[]);
    until("the first run's request", || api.count() >= 1);
    let o = run(&env, &api, &[]);
    assert_exit(&o, Exit::TempFail);
    let err = stderr(&o);
    assert!(err.contains(&format!("pid {}", first.id())), "{err}");
    assert!(err.contains("started"), "{err}");
    let o = wait(&mut first, Duration::from_secs(15));
    assert_exit(&o, Exit::Success);
    assert_eq!(
        api.chat_requests().len(),
        2,
        "the locked-out run made no request"
    );

    // A lock whose process is gone is stale.
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let lock = out_dir(&env).join(".zhi/lock");
    std::fs::write(
        &lock,
        serde_json::json!({"pid": dead_pid, "started_at": "2020-01-01T00:00:00Z", "run_id": "20200101T000000.000Z"}).to_string(),
    )
    .unwrap();
    env.write("docs/d00.txt", "changed <<docs/d00.txt>>\n");
    let o = run(&env, &api, &[]);
    assert_exit(&o, Exit::Success);
    assert!(
        stderr(&o).contains(&format!("stale lock of pid {dead_pid}")),
        "{}",
        stderr(&o)
    );
    assert_eq!(statuses(&latest(&env).1)["docs/d00.txt"], Status::Succeeded);
    assert!(!lock.exists(), "the lock is released at the end");
}

fn plan_ids(env: &TestEnv, shard: Option<&str>) -> Vec<(String, String)> {
    let mut cmd = env.zhi();
    cmd.args(["plan", "summarize", "docs", "-o", "out", "--json"]);
    if let Some(s) = shard {
        cmd.args(["--shard", s]);
    }
    let o = cmd.output().unwrap();
    assert_exit(&o, Exit::Success);
    stdout(&o)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["job_id"].as_str().unwrap().to_string(),
                v["inputs"][0].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn merge(env: &TestEnv, runs: &[&Path]) -> (std::process::Output, Value) {
    let o = env
        .zhi()
        .args(["manifest", "merge"])
        .args(runs)
        .args(["-o", "merged", "--json"])
        .output()
        .unwrap();
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    (o, v)
}

#[test]
fn shards_split_the_plan_and_merge_finds_what_no_shard_did() {
    let env = env_with_docs(9);
    let api = answering();
    let full: BTreeSet<String> = plan_ids(&env, None).into_iter().map(|(id, _)| id).collect();
    assert_eq!(full.len(), 9);
    let mut union = BTreeSet::new();
    let mut per_shard = Vec::new();
    for m in 1..=3 {
        let ids: BTreeSet<String> = plan_ids(&env, Some(&format!("{m}/3")))
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert!(ids.is_disjoint(&union), "shard {m} overlaps an earlier one");
        union.extend(ids.iter().cloned());
        per_shard.push(ids);
    }
    assert_eq!(union, full, "the shards together are the plan");

    // Each shard runs on its own machine, into its own output folder.
    for m in 1..=3 {
        let o = env
            .zhi()
            .args([
                "run",
                "summarize",
                "docs",
                "--no-progress",
                "--shard",
                &format!("{m}/3"),
                "-o",
                &format!("shard-{m}"),
                "--base-url",
            ])
            .arg(api.base_url())
            .output()
            .unwrap();
        assert_exit(&o, Exit::Success);
        let run = manifest::latest_run(&env.path(&format!("shard-{m}"))).unwrap();
        assert!(
            run.run_id.ends_with(&format!("-shard-{m}-of-3")),
            "{}",
            run.run_id
        );
        let (records, _) = manifest::read_records(&run.path).unwrap();
        let ran: BTreeSet<String> = records.iter().map(|r| r.job_id.clone()).collect();
        assert_eq!(ran, per_shard[m - 1], "shard {m} ran exactly its plan");
        let written: Value =
            serde_json::from_slice(&std::fs::read(run.path.join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(written["shard"], format!("{m}/3"));
        assert_eq!(written["shard_source"], "--shard");
    }
    assert_eq!(
        api.chat_requests().len(),
        9,
        "every job ran once, on one shard"
    );

    let (shard1, shard2, shard3) = (
        env.path("shard-1"),
        env.path("shard-2"),
        env.path("shard-3"),
    );
    let (o, v) = merge(&env, &[&shard1, &shard2, &shard3]);
    assert_exit(&o, Exit::Success);
    assert_eq!(v["missing"], serde_json::json!([]));
    assert_eq!(v["counts"]["planned"], 9);
    assert_eq!(v["counts"]["succeeded"], 9);
    assert_eq!(v["shard"], Value::Null);
    assert!(v["run_id"].as_str().unwrap().starts_with("merged-"));
    let merged: BTreeSet<String> = v["planned_job_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    assert_eq!(merged, full);
    let (records, torn) = manifest::read_records(&env.path("merged")).unwrap();
    assert_eq!((records.len(), torn), (9, 0));
    assert!(env.path("merged/results.csv").is_file());
    let written: Value =
        serde_json::from_slice(&std::fs::read(env.path("merged/manifest.json")).unwrap()).unwrap();
    assert_eq!(written["counts"], v["counts"]);

    // Shard 3's machine never reported: its jobs are missing.
    let run1 = manifest::latest_run(&shard1).unwrap().path;
    let (o, v) = merge(&env, &[&run1, &shard2]);
    assert_exit(&o, Exit::JobsFailed);
    let err = stderr(&o);
    let missing: BTreeSet<String> = v["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    assert_eq!(missing, per_shard[2]);
    for id in &per_shard[2] {
        assert!(
            err.contains(id.as_str()),
            "the missing id {id} is printed: {err}"
        );
    }

    // `manifest show` of a shard names it.
    let o = env
        .zhi()
        .args(["manifest", "show", "-o", "shard-2", "--json"])
        .output()
        .unwrap();
    assert_exit(&o, Exit::Success);
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["shard"], "2/3");
    assert_eq!(
        s["counts"]["succeeded"].as_u64().unwrap() as usize,
        per_shard[1].len()
    );
}

/// Slurm's variables as `sbatch --array` sets them in each task (`--array=1-4`: task 2).
const SLURM_TASK_2_OF_4: [(&str, &str); 6] = [
    ("SLURM_JOB_ID", "102"),
    ("SLURM_ARRAY_JOB_ID", "100"),
    ("SLURM_ARRAY_TASK_ID", "2"),
    ("SLURM_ARRAY_TASK_MIN", "1"),
    ("SLURM_ARRAY_TASK_MAX", "4"),
    ("SLURM_ARRAY_TASK_COUNT", "4"),
];

#[test]
fn a_slurm_array_task_is_a_shard_and_the_manifest_says_which_variable_chose_it() {
    let env = env_with_docs(8);
    let api = answering();
    // Task 2 of `--array=1-4` is shard 2/4, before any GitLab variable it inherited.
    let mut cmd = env.zhi();
    for (k, v) in SLURM_TASK_2_OF_4 {
        cmd.env(k, v);
    }
    let o = cmd
        .env("SLURM_ARRAY_TASK_STEP", "1")
        .env("CI_NODE_INDEX", "1")
        .env("CI_NODE_TOTAL", "2")
        .args(["run", "summarize", "docs", "-o", "out", "--no-progress"])
        .args(["--base-url", &api.base_url()])
        .output()
        .unwrap();
    assert_exit(&o, Exit::Success);
    let m = latest_manifest(&env);
    assert_eq!(m["shard"], "2/4");
    assert_eq!(m["shard_source"], "SLURM_ARRAY_TASK_ID");
    let want: BTreeSet<String> = plan_ids(&env, Some("2/4"))
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let (_, records) = latest(&env);
    let ran: BTreeSet<String> = records.iter().map(|r| r.job_id.clone()).collect();
    assert_eq!(ran, want, "the same jobs as --shard 2/4");

    // Kubernetes: the manifest names JOB_COMPLETION_INDEX.
    let o = env
        .zhi()
        .env("JOB_COMPLETION_INDEX", "0")
        .env("ZHI_SHARD_TOTAL", "2")
        .args(["run", "summarize", "docs", "-o", "k8s", "--no-progress"])
        .args(["--base-url", &api.base_url()])
        .output()
        .unwrap();
    assert_exit(&o, Exit::Success);
    let run = manifest::latest_run(&env.path("k8s")).unwrap();
    let m: Value =
        serde_json::from_slice(&std::fs::read(run.path.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        (m["shard"].as_str(), m["shard_source"].as_str()),
        (Some("1/2"), Some("JOB_COMPLETION_INDEX"))
    );

    // Unsharded (a Slurm job that is not an array): no shard, and no `shard_source` at all.
    let o = env
        .zhi()
        .env("SLURM_JOB_ID", "7")
        .args(["run", "summarize", "docs", "-o", "whole", "--no-progress"])
        .args(["--base-url", &api.base_url()])
        .output()
        .unwrap();
    assert_exit(&o, Exit::Success);
    let run = manifest::latest_run(&env.path("whole")).unwrap();
    let m: Value =
        serde_json::from_slice(&std::fs::read(run.path.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["shard"], Value::Null);
    assert!(m.get("shard_source").is_none(), "{m}");
    let requests = api.chat_requests().len();

    // An array with a step (`--array=0-30:10`) is refused before anything runs, by `run` and
    // by `plan`, naming the variables and what to do instead.
    for command in ["run", "plan"] {
        let o = env
            .zhi()
            .env("SLURM_ARRAY_TASK_ID", "10")
            .env("SLURM_ARRAY_TASK_MIN", "0")
            .env("SLURM_ARRAY_TASK_MAX", "30")
            .env("SLURM_ARRAY_TASK_COUNT", "4")
            .env("SLURM_ARRAY_TASK_STEP", "10")
            .args([
                command,
                "summarize",
                "docs",
                "-o",
                "stepped",
                "--no-progress",
            ])
            .args(["--base-url", &api.base_url()])
            .output()
            .unwrap();
        assert_exit(&o, Exit::Usage);
        let err = stderr(&o);
        for want in [
            "SLURM_ARRAY_TASK_STEP=10",
            "SLURM_ARRAY_TASK_MAX=30",
            "--array=1-4",
            "--shard M/N",
        ] {
            assert!(err.contains(want), "{command}: {want} in {err}");
        }
        // `--shard` wins over the variables.
        let o = env
            .zhi()
            .env("SLURM_ARRAY_TASK_ID", "10")
            .env("SLURM_ARRAY_TASK_STEP", "10")
            .args([
                command,
                "summarize",
                "docs",
                "-o",
                "stepped",
                "--no-progress",
            ])
            .args(["--shard", "1/2", "--base-url", &api.base_url()])
            .output()
            .unwrap();
        assert_exit(&o, Exit::Success);
    }
    let run = manifest::latest_run(&env.path("stepped")).unwrap();
    let m: Value =
        serde_json::from_slice(&std::fs::read(run.path.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["shard_source"], "--shard");
    assert!(api.chat_requests().len() > requests, "--shard 1/2 ran");
}

#[test]
fn merge_prefers_a_success_over_a_failure_and_show_reads_a_killed_run() {
    let env = env_with_docs(3);
    // The first run fails d01 (a request error that is not retried).
    let fail_d01 = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = fail_d01.clone();
    let api = FakeApi::start(move |req| {
        if doc_of(req) == "docs/d01.txt" && flag.load(std::sync::atomic::Ordering::SeqCst) {
            Reply::zhipu_error(400, "1214", "bad parameter")
        } else {
            Reply::text(format!("summary of {}", doc_of(req))).with_usage(60, 40)
        }
    });
    let o = run(&env, &api, &[]);
    assert_exit(&o, Exit::JobsFailed);
    fail_d01.store(false, std::sync::atomic::Ordering::SeqCst);
    let o = run(&env, &api, &[]);
    assert_exit(&o, Exit::Success);

    let out = out_dir(&env);
    let (o, v) = merge(&env, &[&out]);
    assert_exit(&o, Exit::Success);
    assert_eq!(v["counts"]["planned"], 3);
    assert_eq!(
        (
            v["counts"]["succeeded"].as_u64(),
            v["counts"]["cached"].as_u64(),
            v["counts"]["failed"].as_u64()
        ),
        (Some(1), Some(2), Some(0))
    );
    assert_eq!(
        v["tokens"]["prompt"].as_u64().unwrap() + v["tokens"]["completion"].as_u64().unwrap(),
        300,
        "what the runs spent"
    );

    // `show` of the first run: counts, failures by kind, tokens, slowest jobs.
    let first = manifest::list_runs(&out)[0].clone();
    let o = env
        .zhi()
        .args(["manifest", "show", "-o", "out", &first.run_id, "--json"])
        .output()
        .unwrap();
    assert_exit(&o, Exit::Success);
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["run_id"], first.run_id.as_str());
    assert_eq!(s["status"], "completed_with_failures");
    assert_eq!(s["failures_by_kind"], serde_json::json!({"api_error": 1}));
    assert_eq!(s["counts"]["failed"], 1);
    assert_eq!(s["tokens"]["prompt"], 120);
    assert_eq!(s["slowest"].as_array().unwrap().len(), 3);
    assert_eq!(s["failures"][0]["input"], "docs/d01.txt");
    // Without RUN: the latest run, for a person.
    let o = env
        .zhi()
        .args(["manifest", "show", "-o", "out"])
        .output()
        .unwrap();
    assert_exit(&o, Exit::Success);
    let text = stdout(&o);
    assert!(
        text.starts_with(&format!(
            "run {}  completed\n",
            manifest::latest_run(&out).unwrap().run_id
        )),
        "{text}"
    );
    assert!(
        text.contains("planned 3  succeeded 1  doubted 0  failed 0  cached 2"),
        "{text}"
    );
    assert!(text.contains("slowest jobs:\n"), "{text}");

    // A killed run has no manifest.json: show reads its records.
    let last = manifest::latest_run(&out).unwrap();
    std::fs::remove_file(last.path.join("manifest.json")).unwrap();
    let o = env
        .zhi()
        .args(["manifest", "show"])
        .arg(&last.path)
        .output()
        .unwrap();
    assert_exit(&o, Exit::Success);
    assert!(stdout(&o).contains("incomplete"), "{}", stdout(&o));
    assert!(stdout(&o).contains("planned 3"), "{}", stdout(&o));
}

#[test]
fn the_token_budget_stops_scheduling_in_time() {
    let env = env_with_docs(10);
    let api = answering();
    let o = run(&env, &api, &["--budget-tokens", "250", "-j", "1"]);
    assert_exit(&o, Exit::Aborted);
    let m = latest_manifest(&env);
    assert_eq!(m["status"], "aborted");
    let (_, records) = latest(&env);
    assert_eq!(records.len(), 10);
    let done = count(&records, Status::Succeeded);
    assert!(done <= 3, "{done} jobs ran past a budget of 2.5 jobs");
    assert_eq!(done, api.chat_requests().len());
    assert_eq!(
        count(&records, Status::Skipped),
        10 - done,
        "{:?}",
        statuses(&records)
    );
    for r in records.iter().filter(|r| r.status == Status::Skipped) {
        let e = r.error.as_ref().unwrap();
        assert_eq!(e.kind.as_str(), "skipped");
        assert!(e.message.contains("budget"), "{}", e.message);
    }
}

#[test]
fn fail_fast_stops_after_the_first_failure() {
    let env = env_with_docs(5);
    let api = FakeApi::start(|req| {
        if doc_of(req) == "docs/d01.txt" {
            Reply::zhipu_error(400, "1214", "bad parameter")
        } else {
            Reply::text(format!("summary of {}", doc_of(req)))
        }
    });
    let o = run(&env, &api, &["--fail-fast", "-j", "1"]);
    assert_exit(&o, Exit::JobsFailed);
    let (_, records) = latest(&env);
    let st = statuses(&records);
    assert_eq!(st["docs/d00.txt"], Status::Succeeded);
    assert_eq!(st["docs/d01.txt"], Status::Failed);
    for d in ["docs/d02.txt", "docs/d03.txt", "docs/d04.txt"] {
        assert_eq!(st[d], Status::Skipped, "{st:?}");
    }
    assert_eq!(api.chat_requests().len(), 2);
}

#[test]
fn auto_concurrency_halves_on_rate_limits() {
    let env = env_with_docs(8);
    // Every document's first request is rate limited; its retry succeeds.
    let seen = Mutex::new(HashSet::new());
    let api = FakeApi::start(move |req| {
        let doc = doc_of(req);
        if seen.lock().unwrap().insert(doc.clone()) {
            Reply::zhipu_error(429, "1302", "too many requests")
        } else {
            Reply::text(format!("summary of {doc}"))
        }
    });
    let o = run(&env, &api, &["-j", "auto", "-v"]);
    assert_exit(&o, Exit::Success);
    let m = latest_manifest(&env);
    let c = &m["concurrency"];
    assert_eq!(c["mode"], "auto");
    assert_eq!(c["initial"], 4);
    assert_eq!(c["peak"], 4);
    assert!(c["final"].as_u64().unwrap() < 4, "{c}");
    assert!(
        stderr(&o).contains("concurrency 4 -> 2 (rate limited)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(count(&latest(&env).1, Status::Succeeded), 8);
}

/// FNV-1a, 64-bit, written out again here so the test pins the function, not the code.
fn fnv1a64(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[test]
fn the_shard_hash_is_pinned() {
    // Job ids and shards are part of the contract: changing either moves work between the
    // machines of a fleet mid-batch. A job's shard (1-based) is FNV-1a 64 of its job_id string
    // modulo N, plus 1.
    let env = TestEnv::new();
    for name in ["a.txt", "b.md", "sub/c.txt", "报告.txt"] {
        env.write(&format!("docs/{name}"), "x");
    }
    let pinned: [(&str, &str, u64, u64, u64); 4] = [
        // input, job_id, FNV-1a 64 of the job_id, shard of 3, shard of 4
        (
            "docs/a.txt",
            "8b41d2aa26c6f2fa",
            0xc7f3_507d_c89a_c654,
            3,
            1,
        ),
        ("docs/b.md", "00fc89c1eceb6289", 0x99f1_adf8_509c_0215, 1, 2),
        (
            "docs/sub/c.txt",
            "35dd3473a510e1c7",
            0xc64c_42d8_48da_10ef,
            1,
            4,
        ),
        (
            "docs/报告.txt",
            "4c6138d39b158354",
            0x4852_1106_5ddb_d0d2,
            2,
            3,
        ),
    ];
    let plan: Vec<(String, String)> = plan_ids(&env, None)
        .into_iter()
        .map(|(id, input)| (input, id))
        .collect();
    let expect: Vec<(String, String)> = pinned
        .iter()
        .map(|p| (p.0.to_string(), p.1.to_string()))
        .collect();
    assert_eq!(plan, expect, "job ids (and the plan's order) are stable");
    for (_, id, hash, of3, of4) in pinned {
        assert_eq!(fnv1a64(id), hash, "{id}");
        assert_eq!(hash % 3 + 1, of3);
        assert_eq!(hash % 4 + 1, of4);
    }
    for n in [3u64, 4] {
        for m in 1..=n {
            let got: BTreeSet<String> = plan_ids(&env, Some(&format!("{m}/{n}")))
                .into_iter()
                .map(|(id, _)| id)
                .collect();
            let want: BTreeSet<String> = pinned
                .iter()
                .filter(|p| (if n == 3 { p.3 } else { p.4 }) == m)
                .map(|p| p.1.to_string())
                .collect();
            assert_eq!(got, want, "shard {m}/{n}");
        }
    }
    // Kubernetes Indexed Jobs: JOB_COMPLETION_INDEX is 0-based.
    let o = env
        .zhi()
        .args(["plan", "summarize", "docs", "--json"])
        .env("JOB_COMPLETION_INDEX", "2")
        .env("ZHI_SHARD_TOTAL", "3")
        .output()
        .unwrap();
    assert_exit(&o, Exit::Success);
    let ids: Vec<String> = stdout(&o)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["job_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids, ["8b41d2aa26c6f2fa"], "index 2 of 3 is shard 3/3");
}
