//! Combining runs: the manifests of several shards (or several runs of one folder) become one
//! account of the whole plan (docs/outputs.md#merging-runs, docs/shards.md). `zhi manifest merge`
//! and `zhi manifest show` read runs through here.
//!
//! Merging only reads the runs it is given and writes into the folder it is told to; it never
//! touches a job's outputs and never rewrites an input run.

use super::{
    Accounts, Counts, JobRecord, RunDir, RunManifest, RunStatus, Status, Timestamp, Tokens,
    read_manifest, read_records,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

/// Why runs could not be read or the merge could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MergeError {
    #[error("{} is neither a run folder (results.jsonl, manifest.json) nor an output folder with runs in .zhi/runs/", .0.display())]
    NotARun(PathBuf),
    #[error("{} has no runs in .zhi/runs/", .0.display())]
    NoRuns(PathBuf),
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
}

/// What a path given on the command line names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RunSource {
    /// One run's folder (`<OUT>/.zhi/runs/<id>/`, or a merged folder).
    Run(RunDir),
    /// An output folder and its runs, oldest first.
    Output(Vec<RunDir>),
}

/// Decide whether `path` is an output folder (it has `.zhi/runs/`) or one run's folder (it has
/// `results.jsonl` or `manifest.json`). An output folder is checked first: it also holds a
/// `manifest.json` (the copy of its latest run's).
pub(crate) fn resolve(path: &Path) -> Result<RunSource, MergeError> {
    if path.join(".zhi").join("runs").is_dir() {
        let runs = super::list_runs(path);
        if runs.is_empty() {
            return Err(MergeError::NoRuns(path.to_path_buf()));
        }
        return Ok(RunSource::Output(runs));
    }
    if path.join("results.jsonl").is_file() || path.join("manifest.json").is_file() {
        let run_id = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string());
        return Ok(RunSource::Run(RunDir {
            run_id,
            path: path.to_path_buf(),
        }));
    }
    Err(MergeError::NotARun(path.to_path_buf()))
}

/// A run as read back: its manifest when it was written (a killed run has none) and its
/// records (a torn last line skipped and counted).
#[derive(Debug, Clone)]
pub(crate) struct LoadedRun {
    pub run_id: String,
    pub path: PathBuf,
    pub manifest: Option<RunManifest>,
    pub records: Vec<JobRecord>,
    /// Lines of `results.jsonl` that did not parse (a crash mid-write).
    pub torn_lines: usize,
}

impl LoadedRun {
    pub(crate) fn load(dir: &RunDir) -> Result<LoadedRun, MergeError> {
        let read_err = |file: &str, source| MergeError::Read {
            path: dir.path.join(file),
            source,
        };
        let manifest = read_manifest(&dir.path).map_err(|e| read_err("manifest.json", e))?;
        let (records, torn_lines) =
            read_records(&dir.path).map_err(|e| read_err("results.jsonl", e))?;
        Ok(LoadedRun {
            // A merged folder's name says nothing; its manifest knows its id.
            run_id: manifest
                .as_ref()
                .map(|m| m.run_id.clone())
                .unwrap_or_else(|| dir.run_id.clone()),
            path: dir.path.clone(),
            manifest,
            records,
            torn_lines,
        })
    }

    /// The job ids this run planned: the manifest's list (the whole plan, every shard), or for
    /// a run killed before writing it, the ids of its records.
    pub(crate) fn planned_ids(&self) -> Vec<String> {
        let listed = self.manifest.as_ref().map(|m| m.planned_job_ids.to_vec());
        match listed {
            Some(ids) if !ids.is_empty() => ids,
            _ => self.records.iter().map(|r| r.job_id.clone()).collect(),
        }
    }
}

/// A job the plan holds that no run did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Missing {
    pub job_id: String,
    /// The input, when a run recorded the job as skipped or cancelled.
    pub input: Option<String>,
    /// `skipped`/`cancelled` when a run got to the job without doing it; none when no run
    /// has a record of it.
    pub status: Option<Status>,
}

/// The result of a merge.
#[derive(Debug, Clone)]
pub(crate) struct Merged {
    pub manifest: RunManifest,
    /// One record per job id.
    pub records: Vec<JobRecord>,
    /// Planned jobs that no run did (no succeeded, cached or failed record).
    pub missing: Vec<Missing>,
}

/// How much a record says a job was done: a success beats a failure, and a failure (the job
/// ran) beats a job that was skipped or cancelled.
fn rank(s: Status) -> u8 {
    match s {
        Status::Succeeded | Status::Cached => 2,
        Status::Failed => 1,
        Status::Skipped | Status::Cancelled => 0,
    }
}

/// Whether a record shows the job was done (even if it failed).
fn ran(s: Status) -> bool {
    rank(s) > 0
}

/// Merge runs: one record per job id (the higher rank wins, and among equals the one that
/// finished later, then the later run); planned ids are the union of the runs' plans, and
/// those without a record that ran are reported missing.
///
/// `tokens`, the costs, the escalations and the tokens per model are everything the runs spent,
/// records that lost the dedupe included: the bill of a sharded run adds up.
pub(crate) fn merge(
    runs: &[LoadedRun],
    run_id: String,
    command: String,
    output_dir: &Path,
) -> Merged {
    // Oldest run first, so "later" is well defined when records carry no finish time.
    let mut order: Vec<&LoadedRun> = runs.iter().collect();
    order.sort_by(|a, b| a.run_id.cmp(&b.run_id));

    let mut planned: Vec<String> = Vec::new();
    let mut seen_planned: HashSet<String> = HashSet::new();
    let mut best: HashMap<String, JobRecord> = HashMap::new();
    let mut tokens = Tokens::default();
    let mut accounts = Accounts::default();
    let mut skills: BTreeMap<String, String> = BTreeMap::new();
    let mut started: Option<Timestamp> = None;
    let mut finished: Option<Timestamp> = None;

    for run in &order {
        for id in run.planned_ids() {
            if seen_planned.insert(id.clone()) {
                planned.push(id);
            }
        }
        if let Some(m) = &run.manifest {
            skills.extend(m.skills.iter().map(|(k, v)| (k.clone(), v.clone())));
            if started.is_none_or(|s| m.started_at < s) {
                started = Some(m.started_at);
            }
            if m.finished_at > finished {
                finished = m.finished_at;
            }
        }
        for r in &run.records {
            tokens.add(r.tokens);
            accounts.add(r);
            if seen_planned.insert(r.job_id.clone()) {
                planned.push(r.job_id.clone());
            }
            let replace = match best.get(&r.job_id) {
                None => true,
                Some(cur) => {
                    let (a, b) = (rank(r.status), rank(cur.status));
                    a > b || (a == b && r.finished_at >= cur.finished_at)
                }
            };
            if replace {
                best.insert(r.job_id.clone(), r.clone());
            }
        }
    }

    let mut records: Vec<JobRecord> = best.into_values().collect();
    records.sort_by(|a, b| (&a.skill, &a.input, &a.job_id).cmp(&(&b.skill, &b.input, &b.job_id)));
    let missing = missing_jobs(&planned, &records);

    let mut counts = Counts {
        planned: planned.len() as u64,
        ..Counts::default()
    };
    for r in &records {
        counts.add(r.shown());
    }
    let (status, reason) = merged_status(missing.len(), &counts);
    // The jobs doubted are those whose kept record is: a doubt of a record that lost the
    // dedupe (a retry in another shard) is not the merged run's.
    let mut kept = Accounts::default();
    for r in &records {
        kept.add(r);
    }
    let now = Timestamp::now();
    let manifest = RunManifest {
        run_id,
        zhi_version: env!("CARGO_PKG_VERSION").to_string(),
        command,
        started_at: started.unwrap_or(now),
        finished_at: Some(finished.unwrap_or(now)),
        status,
        skills,
        counts,
        tokens,
        output_dir: output_dir.display().to_string(),
        results: output_dir.join("results.jsonl").display().to_string(),
        results_csv: output_dir.join("results.csv").display().to_string(),
        shard: None,
        shard_source: None,
        reason,
        concurrency: Default::default(),
        planned_job_ids: planned.into(),
        base_url: None,
        served_model: None,
        server: None,
        requests: records.iter().map(|r| u64::from(r.requests)).sum(),
        batches: None,
        tables: Vec::new(),
        escalations: accounts.escalations,
        costs: accounts.costs,
        unpriced: accounts.unpriced.into_iter().collect(),
        tokens_by_model: accounts.tokens_by_model,
        doubts: kept.doubts,
        audit: None,
    };
    Merged {
        manifest,
        records,
        missing,
    }
}

/// The planned jobs that no merged run did: without a record, or whose best record did not run.
fn missing_jobs(planned: &[String], records: &[JobRecord]) -> Vec<Missing> {
    let by_id: HashMap<&str, &JobRecord> = records.iter().map(|r| (r.job_id.as_str(), r)).collect();
    planned
        .iter()
        .filter_map(|id| match by_id.get(id.as_str()) {
            Some(r) if ran(r.status) => None,
            Some(r) => Some(Missing {
                job_id: id.clone(),
                input: Some(r.input.clone()),
                status: Some(r.status),
            }),
            None => Some(Missing {
                job_id: id.clone(),
                input: None,
                status: None,
            }),
        })
        .collect()
}

/// The merged run's status: failures when planned jobs are `missing` (said why) or jobs failed
/// or were cancelled.
fn merged_status(missing: usize, counts: &Counts) -> (RunStatus, Option<String>) {
    if missing > 0 {
        (
            RunStatus::CompletedWithFailures,
            Some(format!(
                "{} planned job(s) were done by none of the merged runs",
                missing
            )),
        )
    } else if counts.failed > 0 || counts.cancelled > 0 {
        (RunStatus::CompletedWithFailures, None)
    } else {
        (RunStatus::Completed, None)
    }
}

/// A merged run id: `merged-` and the time, sortable like run ids.
pub(crate) fn merged_run_id() -> String {
    format!("merged-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"))
}

impl Merged {
    /// Write `results.jsonl`, `results.csv` and `manifest.json` into `dir` (created if
    /// needed). Each file is replaced whole, so a reader never sees half a merge.
    pub(crate) fn write(&self, dir: &Path) -> Result<(), MergeError> {
        let werr = |file: &str, source| MergeError::Write {
            path: dir.join(file),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|e| werr("", e))?;
        let mut jsonl = Vec::new();
        for r in &self.records {
            let line =
                serde_json::to_vec(r).map_err(|e| werr("results.jsonl", io::Error::other(e)))?;
            jsonl.extend_from_slice(&line);
            jsonl.push(b'\n');
        }
        super::write_atomic(&dir.join("results.jsonl"), &jsonl)
            .map_err(|e| werr("results.jsonl", e))?;
        super::write_csv(&dir.join("results.csv"), &self.records)
            .map_err(|e| werr("results.csv", e))?;
        let body = serde_json::to_vec_pretty(&self.manifest)
            .map_err(|e| werr("manifest.json", io::Error::other(e)))?;
        super::write_atomic(&dir.join("manifest.json"), &body).map_err(|e| werr("manifest.json", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorKind, JobError};

    fn record(id: &str, status: Status, finished: &str) -> JobRecord {
        JobRecord {
            input_bytes: Some(1),
            model: "m".into(),
            turns: 1,
            attempts: 1,
            tokens: Tokens {
                prompt: 10,
                completion: 5,
            },
            finished_at: Some(finished.parse().unwrap()),
            error: (status == Status::Failed).then(|| JobError::new(ErrorKind::ApiError, "boom")),
            ..JobRecord::new(id, "s", &format!("{id}.txt"), status)
        }
    }

    fn run(id: &str, planned: &[&str], records: Vec<JobRecord>) -> LoadedRun {
        let manifest = RunManifest {
            run_id: id.into(),
            zhi_version: "0".into(),
            command: "zhi".into(),
            started_at: "2024-01-01T00:00:00.000Z".parse().unwrap(),
            finished_at: None,
            status: RunStatus::Completed,
            skills: Default::default(),
            counts: Counts::default(),
            tokens: Tokens::default(),
            output_dir: String::new(),
            results: String::new(),
            results_csv: String::new(),
            shard: None,
            shard_source: None,
            reason: None,
            concurrency: Default::default(),
            planned_job_ids: planned
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .into(),
            base_url: None,
            served_model: None,
            server: None,
            requests: 0,
            batches: None,
            tables: Vec::new(),
            escalations: BTreeMap::new(),
            costs: BTreeMap::new(),
            unpriced: Vec::new(),
            tokens_by_model: BTreeMap::new(),
            doubts: BTreeMap::new(),
            audit: None,
        };
        LoadedRun {
            run_id: id.into(),
            path: PathBuf::new(),
            manifest: Some(manifest),
            records,
            torn_lines: 0,
        }
    }

    #[test]
    fn success_beats_failure_and_later_beats_earlier() {
        let t1 = "2024-01-01T00:00:01.000Z";
        let t2 = "2024-01-01T00:00:02.000Z";
        // Jobs a, b, c ended thus in each run; d never ran.
        let ended = |id: &str, at: &str, statuses: [Status; 3]| {
            let records = ["a", "b", "c"]
                .iter()
                .zip(statuses)
                .map(|(job, status)| record(job, status, at))
                .collect();
            run(id, &["a", "b", "c", "d"], records)
        };
        use Status::{Cached, Failed, Succeeded};
        let a = ended("r1", t1, [Succeeded, Failed, Failed]);
        let b = ended("r2", t2, [Failed, Cached, Failed]);
        let m = merge(
            &[b, a],
            "merged-x".into(),
            "zhi manifest merge".into(),
            Path::new("out"),
        );
        let by: HashMap<_, _> = m.records.iter().map(|r| (r.job_id.as_str(), r)).collect();
        assert_eq!(
            by["a"].status,
            Status::Succeeded,
            "a success beats a later failure"
        );
        assert_eq!(
            by["b"].status,
            Status::Cached,
            "a later success beats a failure"
        );
        assert_eq!(
            by["c"].finished_at,
            Some(t2.parse().unwrap()),
            "the later failure wins among failures"
        );
        assert_eq!(m.records.len(), 3);
        assert_eq!(
            m.missing
                .iter()
                .map(|x| x.job_id.as_str())
                .collect::<Vec<_>>(),
            ["d"]
        );
        assert_eq!(m.manifest.counts.planned, 4);
        assert_eq!(
            (
                m.manifest.counts.succeeded,
                m.manifest.counts.cached,
                m.manifest.counts.failed
            ),
            (1, 1, 1)
        );
        assert_eq!(
            m.manifest.tokens.total(),
            6 * 15,
            "every record's tokens were spent"
        );
        assert_eq!(m.manifest.status, RunStatus::CompletedWithFailures);
    }

    #[test]
    fn the_doubts_are_those_of_the_kept_records() {
        let t1 = "2024-01-01T00:00:01.000Z";
        let t2 = "2024-01-01T00:00:02.000Z";
        let doubted = |id: &str, at: &str, field: &str| JobRecord {
            doubts: vec![crate::manifest::Doubt {
                check: "label".into(),
                field: Some(field.into()),
                ..crate::manifest::Doubt::default()
            }],
            ..record(id, Status::Succeeded, at)
        };
        // Job a doubted in the first shard, done again cleanly in the second; b doubted once.
        let first = run("r1", &["a", "b"], vec![doubted("a", t1, "seller")]);
        let second = run(
            "r2",
            &["a", "b"],
            vec![
                record("a", Status::Succeeded, t2),
                doubted("b", t2, "total"),
            ],
        );
        let m = merge(&[first, second], "m".into(), "zhi".into(), Path::new("out"));
        let d = &m.manifest.doubts["s"];
        assert_eq!(d.jobs, 1);
        assert_eq!(d.at.keys().collect::<Vec<_>>(), ["total"]);
    }

    #[test]
    fn a_skipped_job_is_missing_and_a_killed_run_plans_its_records() {
        let t = "2024-01-01T00:00:01.000Z";
        let a = run(
            "r1",
            &["a", "b"],
            vec![
                record("a", Status::Succeeded, t),
                record("b", Status::Skipped, t),
            ],
        );
        let mut killed = run("r2", &[], vec![record("c", Status::Succeeded, t)]);
        killed.manifest = None;
        let m = merge(
            &[a, killed],
            "merged-x".into(),
            "zhi".into(),
            Path::new("out"),
        );
        assert_eq!(m.manifest.planned_job_ids, ["a", "b", "c"]);
        assert_eq!(
            m.missing,
            vec![Missing {
                job_id: "b".into(),
                input: Some("b.txt".into()),
                status: Some(Status::Skipped)
            }]
        );
    }

    #[test]
    fn resolve_tells_output_folders_from_run_folders() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let run_dir = out.join(".zhi/runs/20240101T000000.000Z");
        std::fs::create_dir_all(&run_dir).unwrap();
        std::fs::write(run_dir.join("results.jsonl"), "").unwrap();
        std::fs::write(out.join("manifest.json"), "{}").unwrap();
        assert!(matches!(resolve(&out).unwrap(), RunSource::Output(runs) if runs.len() == 1));
        assert!(
            matches!(resolve(&run_dir).unwrap(), RunSource::Run(r) if r.run_id == "20240101T000000.000Z")
        );
        assert!(matches!(resolve(dir.path()), Err(MergeError::NotARun(_))));
    }
}
