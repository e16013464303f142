//! A real Slurm cluster (`scripts/start-slurm.sh`, which `.ci/run` runs): the job array and
//! the merge job of `examples/slurm/`, submitted with `sbatch` as a user would, against the
//! fake API in this process (the tasks run on this machine and reach 127.0.0.1).
//!
//! Four tasks over one folder of twelve documents: each task is one shard, read from
//! `SLURM_ARRAY_TASK_ID`; the shards are disjoint and together run every job once; one task's
//! run is rate limited until it exits 75, is requeued by the script and finishes on its second
//! start; the merge job, which waits for every task (`--dependency=afterany`), finds every job.
//! The test changes nothing outside its temporary folder (the job logs are written there) and
//! leaves no job behind: the jobs end, and a test that fails cancels them.

use crate::need::Need;
use crate::support::testenv::{TestEnv, assert_exit, stderr, stdout};
use crate::support::{FakeApi, Recorded, Reply};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use zhi::exit::Exit;
use zhi::manifest::{self, Status};

/// The tests of this module and what each needs.
pub fn tests() -> Vec<crate::Test> {
    vec![crate::Test::new(
        "slurm::a_job_array_of_four_tasks_is_four_shards_and_the_merge_job_finds_every_job",
        &[
            Need::Program("sbatch"),
            Need::Program("squeue"),
            Need::Program("scontrol"),
            Need::Program("scancel"),
            Need::SlurmCluster,
        ],
        a_job_array_of_four_tasks_is_four_shards_and_the_merge_job_finds_every_job,
    )]
}

const DOCS: usize = 12;
/// The document whose requests are rate limited until its task has exited 75 once.
const LIMITED: &str = "docs/d05.txt";
/// Attempts per request (zhi.yaml below): a 429 on each of them ends the run with 75.
const ATTEMPTS: usize = 3;
/// How long the jobs may take, requeue included (a few seconds on an idle node).
const LIMIT: Duration = Duration::from_secs(300);

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/slurm")
}

/// Jobs submitted by this test: cancelled when it ends early, so that none outlives it.
struct Jobs {
    ids: Vec<String>,
    done: bool,
}

impl Drop for Jobs {
    fn drop(&mut self) {
        if !self.done && !self.ids.is_empty() {
            let _ = Command::new("scancel")
                .args(&self.ids)
                .stdin(Stdio::null())
                .output();
        }
    }
}

/// `sbatch --parsable ARGS…` in the working folder, with the test's environment only (the
/// jobs inherit it: `--export=ALL`). Returns the job id.
fn sbatch(env: &TestEnv, args: &[&str]) -> String {
    let mut c = Command::new("sbatch");
    c.current_dir(&env.work)
        .env_clear()
        .env("HOME", &env.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .env("LANG", "C.UTF-8")
        .env("ZHI", env!("CARGO_BIN_EXE_zhi"))
        .env("ZHI_OUT", "out")
        .env("ZHI_MAX_REQUEUES", "2")
        .stdin(Stdio::null());
    // A cluster whose configuration is not in /etc/slurm.
    if let Some(conf) = std::env::var_os("SLURM_CONF") {
        c.env("SLURM_CONF", conf);
    }
    let o = c.arg("--parsable").args(args).output().expect("sbatch");
    assert!(
        o.status.success(),
        "sbatch {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let id = String::from_utf8_lossy(&o.stdout).trim().to_string();
    id.split(';').next().unwrap().to_string()
}

/// What `squeue` still lists of these jobs (empty once every one has ended).
fn queued(ids: &[String]) -> String {
    let o = Command::new("squeue")
        .args(["-h", "-o", "%i %T %r", "-j", &ids.join(",")])
        .stdin(Stdio::null())
        .output()
        .expect("squeue");
    // A job that has left the controller's memory is an error to squeue: it has ended.
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// `scontrol show job ID` as `Key=Value` pairs (the first record: a job array's tasks are one
/// record each).
fn job_fields(id: &str) -> BTreeMap<String, String> {
    let o = Command::new("scontrol")
        .args(["-o", "show", "job", id])
        .stdin(Stdio::null())
        .output()
        .expect("scontrol");
    let text = String::from_utf8_lossy(&o.stdout);
    text.lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The job logs in the working folder, for a failure's message.
fn logs(env: &TestEnv) -> String {
    let mut all = String::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&env.work)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "out"))
        .collect();
    names.sort();
    for p in names {
        all.push_str(&format!(
            "--- {}\n{}\n",
            p.file_name().unwrap().to_string_lossy(),
            std::fs::read_to_string(&p).unwrap_or_default()
        ));
    }
    all
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

/// The job ids of `zhi plan` (the whole plan, or one shard of it).
fn plan_ids(env: &TestEnv, shard: Option<&str>) -> BTreeSet<String> {
    let mut c = env.zhi();
    c.args(["--json", "plan", "summarize", "docs"]);
    if let Some(s) = shard {
        c.args(["--shard", s]);
    }
    let o = c.output().unwrap();
    assert_exit(&o, Exit::Success);
    stdout(&o)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["job_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

pub fn a_job_array_of_four_tasks_is_four_shards_and_the_merge_job_finds_every_job() {
    let started = Instant::now();
    let env = TestEnv::new();
    env.write(
        "zhi.yaml",
        format!("retry: {{max_attempts: {ATTEMPTS}, base_delay_ms: 10, max_delay_ms: 50}}\n"),
    );
    for i in 0..DOCS {
        env.write(
            &format!("docs/d{i:02}.txt"),
            format!("Minutes {i}: the committee approved item {i} of the agenda.\n"),
        );
    }
    // The limited document's first ATTEMPTS requests are refused with 429: its task's run
    // ends with 75, the script requeues the task, and the second start gets an answer.
    let refused = Mutex::new(0usize);
    let api = FakeApi::start(move |req| {
        let doc = doc_of(req);
        if doc == LIMITED {
            let mut n = refused.lock().unwrap();
            if *n < ATTEMPTS {
                *n += 1;
                return Reply::zhipu_error(429, "1302", "too many requests");
            }
        }
        Reply::text("The committee approved an item of its agenda.").with_usage(60, 40)
    });
    let all = plan_ids(&env, None);
    assert_eq!(all.len(), DOCS);
    let base = api.base_url();
    let array_script = examples().join("zhi-array.sbatch");
    let merge_script = examples().join("zhi-merge.sbatch");

    // As examples/slurm/submit.sh does: the array, then the merge after every task of it.
    let mut jobs = Jobs {
        ids: Vec::new(),
        done: false,
    };
    let array = sbatch(
        &env,
        &[
            "--job-name=zhi-test-shards",
            array_script.to_str().unwrap(),
            "summarize",
            "docs",
            "-j",
            "1",
            "--base-url",
            &base,
        ],
    );
    jobs.ids.push(array.clone());
    let merge = sbatch(
        &env,
        &[
            "--job-name=zhi-test-merge",
            &format!("--dependency=afterany:{array}"),
            merge_script.to_str().unwrap(),
        ],
    );
    jobs.ids.push(merge.clone());

    let deadline = Instant::now() + LIMIT;
    loop {
        let left = queued(&jobs.ids);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the jobs did not end within {LIMIT:?}:\n{left}\n{}",
            logs(&env)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    jobs.done = true;
    let took = started.elapsed();
    let logs = logs(&env);

    // The merge job ran, after every task, and found every job.
    let m = job_fields(&merge);
    assert_eq!(
        (
            m.get("JobState").map(String::as_str),
            m.get("ExitCode").map(String::as_str)
        ),
        (Some("COMPLETED"), Some("0:0")),
        "merge job {merge}: {m:?}\n{logs}"
    );
    let merged = read_json(&env.path("out/merged/manifest.json"));
    let c = &merged["counts"];
    assert_eq!(c["planned"], DOCS, "{merged}");
    assert_eq!(
        c["succeeded"].as_u64().unwrap() + c["cached"].as_u64().unwrap(),
        DOCS as u64,
        "{merged}"
    );
    assert_eq!(c["failed"], 0, "{merged}");

    // Each task was one shard, chosen by SLURM_ARRAY_TASK_ID, and did exactly its share.
    let mut union = BTreeSet::new();
    let mut requeued = Vec::new();
    for task in 1..=4 {
        let out = env.path(&format!("out/shard-{task}"));
        let runs = manifest::list_runs(&out);
        assert!(!runs.is_empty(), "task {task} left no run\n{logs}");
        let mut done = BTreeSet::new();
        for run in &runs {
            let mf = read_json(&run.path.join("manifest.json"));
            assert_eq!(mf["shard"], format!("{task}/4"), "{}", run.run_id);
            assert_eq!(mf["shard_source"], "SLURM_ARRAY_TASK_ID", "{}", run.run_id);
            assert!(run.run_id.ends_with(&format!("-shard-{task}-of-4")));
            let (records, torn) = manifest::read_records(&run.path).unwrap();
            assert_eq!(torn, 0);
            done.extend(
                records
                    .iter()
                    .filter(|r| r.status == Status::Succeeded)
                    .map(|r| r.job_id.clone()),
            );
        }
        let last = read_json(&runs.last().unwrap().path.join("manifest.json"));
        assert_eq!(last["status"], "completed", "task {task}\n{logs}");
        if runs.len() > 1 {
            requeued.push(task);
            let first = read_json(&runs[0].path.join("manifest.json"));
            assert_eq!(first["status"], "aborted", "{first}");
            assert!(
                first["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("rate limits"),
                "{first}"
            );
        }
        let want = plan_ids(&env, Some(&format!("{task}/4")));
        assert_eq!(done, want, "task {task} ran exactly shard {task}/4");
        assert!(union.is_disjoint(&done), "task {task} overlaps another");
        union.extend(done);
    }
    assert_eq!(union, all, "the four tasks together ran the whole plan");

    // One task was rate limited, exited 75, and was requeued once by the script.
    assert_eq!(requeued.len(), 1, "{requeued:?}\n{logs}");
    let task = requeued[0];
    assert!(
        logs.contains(&format!("zhi exited 75: requeueing task {task}")),
        "{logs}"
    );
    let t = job_fields(&format!("{array}_{task}"));
    assert_eq!(t.get("Restarts").map(String::as_str), Some("1"), "{t:?}");

    // Every document was answered once; the limited one was refused ATTEMPTS times first.
    let mut per_doc: BTreeMap<String, usize> = BTreeMap::new();
    for r in api.chat_requests() {
        *per_doc.entry(doc_of(&r)).or_default() += 1;
    }
    assert_eq!(per_doc.len(), DOCS, "{per_doc:?}");
    for (doc, n) in &per_doc {
        let want = if doc == LIMITED { ATTEMPTS + 1 } else { 1 };
        assert_eq!(*n, want, "{doc}: {per_doc:?}");
    }

    // `zhi manifest merge` of the four agrees with the merge job.
    let o = env
        .zhi()
        .args(["--json", "manifest", "merge"])
        .args((1..=4).map(|t| format!("out/shard-{t}")))
        .args(["-o", "merged-here"])
        .output()
        .unwrap();
    assert_exit(&o, Exit::Success);
    let v: Value =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}", stderr(&o)));
    assert_eq!(v["missing"], serde_json::json!([]));
    assert_eq!(v["counts"], merged["counts"]);
    let ids: BTreeSet<String> = v["planned_job_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, all);
    note!("slurm: four tasks, a requeue and the merge in {took:.1?}");
}

/// The document a request is for, by its text: "Minutes 5: …" is `docs/d05.txt`.
fn doc_of(req: &Recorded) -> String {
    let text = req.document_text();
    let n = text
        .strip_prefix("Minutes ")
        .and_then(|t| t.split(':').next())
        .and_then(|n| n.parse::<usize>().ok());
    n.map_or_else(|| text.clone(), |n| format!("docs/d{n:02}.txt"))
}
