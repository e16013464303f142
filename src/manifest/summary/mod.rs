//! A run at a glance, as one value: counts, failures by kind, tokens, cost, escalations, the
//! slowest jobs, where its files are. Built once from a manifest and records — by the end of a
//! run, by `zhi manifest show` and by `zhi report` alike — so the three never count apart.
//! Built from the records alone when the run never wrote its `manifest.json` (it was killed),
//! so a crashed run can still be inspected. [`lines`] says it to a person. Reading only;
//! nothing here writes.

mod lines;

pub(crate) use lines::{
    END_OF_RUN, MANIFEST_SHOW, counts_line, doubts_line, escalation_and_cost, lines, tokens_line,
};

use super::merge::LoadedRun;
use super::{
    Counts, Doubt, JobRecord, RunManifest, RunStatus, ShownStatus, Status, Timestamp, Tokens,
};
use crate::i18n::Lang;
use crate::sanitize::one_line;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How many of the slowest jobs a summary lists.
pub(crate) const SLOWEST: usize = 5;

/// One job in a summary's lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct JobLine {
    pub job_id: String,
    /// The skill that ran it (not in `manifest show --json`, a contract that predates it).
    #[serde(skip)]
    pub skill: String,
    pub input: String,
    pub status: Status,
    /// The status a person is shown (`doubted`); not in `manifest show --json`, whose
    /// `status` is the record's.
    #[serde(skip)]
    pub shown: ShownStatus,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    pub refused_tool_calls: u32,
    /// The job's transcript, relative to the output folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// What zhi doubts of its outputs (the doubted jobs' lines).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub doubts: Vec<Doubt>,
}

/// The summary object `zhi manifest show --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RunSummary {
    pub run_id: String,
    pub path: String,
    /// The run's status; `None` when it wrote no `manifest.json` (killed, or still running).
    pub status: Option<RunStatus>,
    /// Whether `manifest.json` was written.
    pub complete: bool,
    pub reason: Option<String>,
    pub command: Option<String>,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    pub shard: Option<String>,
    pub counts: Counts,
    pub tokens: Tokens,
    /// Failed jobs per error kind.
    pub failures_by_kind: BTreeMap<String, u64>,
    /// The failed jobs, in record order.
    pub failures: Vec<JobLine>,
    /// The first doubted jobs (of `counts.doubted`), in record order, with their doubts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub doubted: Vec<JobLine>,
    /// Jobs whose model made tool calls that were refused, in record order.
    pub refused: Vec<JobLine>,
    /// HTTP requests sent, retries included.
    pub requests: u64,
    /// The slowest jobs that ran, slowest first (at most [`SLOWEST`]).
    pub slowest: Vec<JobLine>,
    /// Lines of `results.jsonl` that did not parse (a crash mid-write).
    pub torn_lines: usize,
    /// The model zhi asked for, and what the server said answered and runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelSeen>,
    /// Jobs escalated, by skill and answering model (docs/escalation.md).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub escalations: BTreeMap<String, BTreeMap<String, u64>>,
    /// The run's cost per model (docs/escalation.md#cost).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub costs: BTreeMap<String, super::Cost>,
    /// Models that spent tokens and have no price: their cost is unknown.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
    /// The folder's tables the run wrote, relative to the output folder.
    #[serde(skip)]
    pub tables: Vec<String>,
    /// Doubted jobs, by skill (docs/outputs.md#doubts).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub doubts: BTreeMap<String, super::DoubtCount>,
    /// `--audit`'s agreement (docs/escalation.md#audit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<super::AuditReport>,
    // What follows is for people, not in `manifest show --json` (a contract).
    /// Requests that were retries: sent beyond one per turn.
    #[serde(skip)]
    pub retries: u64,
    /// Every job's duration, summed.
    #[serde(skip)]
    pub job_time_ms: u64,
    /// The output folder holding the run (`<OUT>/.zhi/runs/<run>`), else the one its manifest
    /// names; transcripts and outputs in records are relative to it.
    #[serde(skip)]
    pub output_dir: Option<PathBuf>,
}

/// The model of a run: the name zhi asked for, beside what the server said — the model it
/// said answered, and what it runs under that name (a local server answers to any name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ModelSeen {
    /// The name zhi asked for (most jobs', when several).
    pub asked: String,
    /// The model the server said answered (most requests').
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served: Option<String>,
    /// What the server says it runs under that name (docs/model-api.md#knowing-the-server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<String>,
    /// How many jobs each model the server named answered (for people; not in `--json`).
    #[serde(skip)]
    pub answered: BTreeMap<String, u64>,
}

impl ModelSeen {
    /// The model of a run, from its manifest (when it wrote one) and what its records named.
    fn of(m: Option<&RunManifest>, fold: &SummaryFold) -> Option<ModelSeen> {
        // The model the run asked first: an escalated job's record names the model that
        // answered it, and the escalation line says so.
        let asked = most_common(&fold.asked).or_else(|| most_common(&fold.top))?;
        let served = m
            .and_then(|m| m.served_model.clone())
            .or_else(|| most_common(fold.served()));
        let runs = m
            .and_then(|m| m.server.as_ref())
            .and_then(|s| s.model_source.clone());
        Some(ModelSeen {
            asked,
            served,
            runs,
            // Every model that answered a job, the audit's and the routes' too.
            answered: fold
                .served_top
                .iter()
                .fold(fold.served.clone(), |mut all, (m, n)| {
                    *all.entry(m.clone()).or_default() += n;
                    all
                }),
        })
    }

    /// Whether the server said more than the name zhi asked for.
    pub(crate) fn says_more(&self) -> bool {
        self.runs.is_some()
            || self.answered.len() > 1
            || self.served.as_ref().is_some_and(|s| *s != self.asked)
    }

    /// `glm-4-flash, answered as glm-4-flash-250414 (the server runs qwen2.5.gguf)`; when
    /// several models answered, each with its jobs: `glm-4-flash, answered by glm-4-flash (5),
    /// big (2)`.
    pub(crate) fn describe(&self, lang: Lang) -> String {
        let mut out = one_line(&self.asked);
        if self.answered.len() > 1 {
            let each: Vec<String> = self
                .answered
                .iter()
                .map(|(m, n)| format!("{} ({n})", one_line(m)))
                .collect();
            let list = each.join(&t!(in lang; ", "));
            out += &t!(in lang; ", answered by {list}", list = list);
        } else if let Some(served) = self.served.as_ref().filter(|s| **s != self.asked) {
            out += &t!(in lang; ", answered as {model}", model = one_line(served));
        }
        if let Some(runs) = &self.runs {
            out += &t!(in lang; " (the server runs {model})", model = one_line(runs));
        }
        out
    }
}

/// The most frequent non-empty name (the first of equals in name order).
fn most_common(seen: &BTreeMap<String, u64>) -> Option<String> {
    let top = seen
        .iter()
        .filter(|(n, _)| !n.is_empty())
        .map(|(_, c)| *c)
        .max()?;
    seen.iter()
        .find(|(n, c)| !n.is_empty() && **c == top)
        .map(|(m, _)| m.clone())
}

fn line(r: &super::JobRecord) -> JobLine {
    JobLine {
        job_id: r.job_id.clone(),
        skill: r.skill.clone(),
        input: r.input.clone(),
        status: r.status,
        shown: r.shown(),
        duration_ms: r.duration_ms,
        error_kind: r.error.as_ref().map(|e| e.kind.to_string()),
        error_message: r.error.as_ref().map(|e| e.reason().to_string()),
        refused_tool_calls: r.refused_tool_calls,
        transcript: r.transcript.clone(),
        doubts: Vec::new(),
    }
}

/// The summary a run prints when it ends, line by line, in `lang`; paths under `cwd` are
/// shown relative to it.
#[cfg(test)]
pub(crate) fn end_of_run(
    m: &RunManifest,
    records: &[JobRecord],
    cwd: &Path,
    lang: Lang,
) -> Vec<String> {
    lines(&RunSummary::of_finished(m, records), END_OF_RUN, cwd, lang)
}

/// [`end_of_run`] of a summary already made (the run's, folded as its records were written).
pub(crate) fn end_of_run_lines(s: &RunSummary, cwd: &Path, lang: Lang) -> Vec<String> {
    lines(s, END_OF_RUN, cwd, lang)
}

/// Summarize one run as read from its folder.
pub(crate) fn summarize(run: &LoadedRun) -> RunSummary {
    RunSummary::of(
        &run.run_id,
        &run.path,
        run.manifest.as_ref(),
        &run.records,
        run.torn_lines,
    )
}

impl RunSummary {
    /// The summary of a run that has just ended: its manifest and records, as written.
    #[cfg(test)]
    pub(crate) fn of_finished(m: &RunManifest, records: &[JobRecord]) -> RunSummary {
        SummaryFold::of(records).finished(m)
    }

    /// The summary of the run `run_id` kept in folder `path`, from its manifest when it wrote
    /// one and its records.
    pub(crate) fn of(
        run_id: &str,
        path: &Path,
        m: Option<&RunManifest>,
        records: &[JobRecord],
        torn_lines: usize,
    ) -> RunSummary {
        SummaryFold::of(records).summary(run_id, path, m, torn_lines)
    }

    /// The run's `results.jsonl`.
    pub(crate) fn results(&self) -> PathBuf {
        Path::new(&self.path).join("results.jsonl")
    }
}

/// The output folder of the run kept in `path`: the one holding it, else the one its manifest
/// names.
fn output_dir_of(path: &Path, m: Option<&RunManifest>) -> Option<PathBuf> {
    let holding = match path.parent() {
        Some(runs) if runs.ends_with(Path::new(".zhi").join("runs")) => {
            path.ancestors().nth(3).map(Path::to_path_buf)
        }
        _ => None,
    };
    holding.or_else(|| m.map(|m| PathBuf::from(&m.output_dir)))
}

/// What a run's records add up to, taken one record at a time: a run folds each record as it
/// is written and keeps no record (a rerun of a million cached jobs holds none of them), and
/// `manifest show` folds the records it reads. What it keeps grows with the failures, never
/// with the jobs.
#[derive(Debug, Default)]
pub(crate) struct SummaryFold {
    records: u64,
    counts: Counts,
    tokens: Tokens,
    failures_by_kind: BTreeMap<String, u64>,
    failures: Vec<JobLine>,
    /// The first [`lines::NAMED`] doubted jobs; the rest are counted.
    doubted: Vec<JobLine>,
    /// Doubted jobs that were cached (for a manifest of an earlier zhi, which counted them
    /// as cached).
    doubted_cached: u64,
    refused: Vec<JobLine>,
    /// The slowest jobs that ran so far, slowest first, equals in record order.
    slowest: Vec<JobLine>,
    requests: u64,
    retries: u64,
    job_time_ms: u64,
    started_at: Option<Timestamp>,
    finished_at: Option<Timestamp>,
    /// How many records asked each model first, and how many each served model answered.
    asked: BTreeMap<String, u64>,
    /// The models of audited and routed jobs, and what their server said answered: the run's
    /// only when no other job ran.
    top: BTreeMap<String, u64>,
    served_top: BTreeMap<String, u64>,
    served: BTreeMap<String, u64>,
}

impl SummaryFold {
    pub(crate) fn of<'a>(records: impl IntoIterator<Item = &'a JobRecord>) -> SummaryFold {
        let mut fold = SummaryFold::default();
        for r in records {
            fold.add(r);
        }
        fold
    }

    /// Take one record into account.
    pub(crate) fn add(&mut self, r: &JobRecord) {
        self.records += 1;
        let shown = r.shown();
        self.counts.add(shown);
        self.tokens.add(r.tokens);
        if shown == ShownStatus::Doubted {
            self.doubted_cached += u64::from(r.status == Status::Cached);
            if self.doubted.len() < lines::NAMED {
                self.doubted.push(JobLine {
                    doubts: r.doubts.clone(),
                    ..line(r)
                });
            }
        }
        if r.status == Status::Failed {
            let kind = r
                .error
                .as_ref()
                .map(|e| e.kind.to_string())
                .unwrap_or_else(|| "unknown".into());
            *self.failures_by_kind.entry(kind).or_default() += 1;
            self.failures.push(line(r));
        }
        if r.refused_tool_calls > 0 {
            self.refused.push(line(r));
        }
        if r.status.ran() {
            let at = self
                .slowest
                .iter()
                .position(|s| s.duration_ms < r.duration_ms)
                .unwrap_or(self.slowest.len());
            if at < SLOWEST {
                self.slowest.insert(at, line(r));
                self.slowest.truncate(SLOWEST);
            }
        }
        self.requests += u64::from(r.requests);
        // A request that got no answer in the end was sent once as itself, not as a retry.
        let unanswered = u32::from(r.status != Status::Succeeded && r.requests > r.turns);
        self.retries += u64::from(r.requests.saturating_sub(r.turns + unanswered));
        self.job_time_ms += r.duration_ms;
        self.started_at = match (self.started_at, r.started_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.finished_at = self.finished_at.max(r.finished_at);
        let asked = r.escalated_from.as_deref().unwrap_or(&r.model);
        // An audited or routed job was answered by the top rung by design: the run's model is
        // the one its other jobs asked (the audit's lines name the top rung).
        let by_audit = r.audited || r.routed;
        let seen = if by_audit {
            &mut self.top
        } else {
            &mut self.asked
        };
        *seen.entry(asked.to_string()).or_default() += 1;
        if let Some(m) = &r.served_model {
            let said = if by_audit {
                &mut self.served_top
            } else {
                &mut self.served
            };
            *said.entry(m.clone()).or_default() += 1;
        }
    }

    /// How many records answered each served model: those of the run's own jobs, or of its
    /// audited and routed ones when it had no other.
    pub(crate) fn served(&self) -> &BTreeMap<String, u64> {
        if self.served.is_empty() {
            &self.served_top
        } else {
            &self.served
        }
    }

    /// The requests the records say they sent.
    pub(crate) fn requests(&self) -> u64 {
        self.requests
    }

    pub(crate) fn counts(&self) -> Counts {
        self.counts
    }

    pub(crate) fn tokens(&self) -> Tokens {
        self.tokens
    }

    /// The summary of a run that has just ended with manifest `m`.
    pub(crate) fn finished(self, m: &RunManifest) -> RunSummary {
        let path = Path::new(&m.results)
            .parent()
            .map_or_else(PathBuf::new, Path::to_path_buf);
        self.summary(&m.run_id, &path, Some(m), 0)
    }

    /// The summary of the run `run_id` kept in folder `path`, with its manifest when it wrote
    /// one.
    pub(crate) fn summary(
        self,
        run_id: &str,
        path: &Path,
        m: Option<&RunManifest>,
        torn_lines: usize,
    ) -> RunSummary {
        let counts = match m {
            Some(m) => self.counts_beside(&m.counts),
            None => Counts {
                planned: self.records,
                ..self.counts
            },
        };
        RunSummary {
            run_id: run_id.to_string(),
            path: path.display().to_string(),
            status: m.map(|m| m.status),
            complete: m.is_some(),
            reason: m.and_then(|m| m.reason.clone()),
            command: m.map(|m| m.command.clone()),
            started_at: m.map(|m| m.started_at).or(self.started_at),
            finished_at: m.and_then(|m| m.finished_at).or(self.finished_at),
            shard: m
                .and_then(|m| m.shard.clone())
                .or_else(|| shard_from_run_id(run_id)),
            counts,
            tokens: self.tokens,
            model: ModelSeen::of(m, &self),
            failures_by_kind: self.failures_by_kind,
            failures: self.failures,
            doubted: self.doubted,
            refused: self.refused,
            requests: m.map_or(self.requests, |m| m.requests),
            slowest: self.slowest,
            torn_lines,
            escalations: m.map(|m| m.escalations.clone()).unwrap_or_default(),
            costs: m.map(|m| m.costs.clone()).unwrap_or_default(),
            unpriced: m.map(|m| m.unpriced.clone()).unwrap_or_default(),
            tables: m.map(|m| m.tables.clone()).unwrap_or_default(),
            doubts: m.map(|m| m.doubts.clone()).unwrap_or_default(),
            audit: m.and_then(|m| m.audit.clone()),
            retries: self.retries,
            job_time_ms: self.job_time_ms,
            output_dir: output_dir_of(path, m),
        }
    }
}

impl SummaryFold {
    /// The counts of a run that wrote its manifest: the manifest's, which count every job,
    /// also the cached ones a rerun does not write again (docs/outputs.md#what-a-rerun-writes).
    /// A manifest of an earlier zhi counted doubted jobs as succeeded or cached: those its
    /// records show doubted are moved.
    fn counts_beside(&self, m: &Counts) -> Counts {
        if m.doubted > 0 || self.counts.doubted == 0 {
            return *m;
        }
        let cached = self.doubted_cached.min(m.cached);
        let succeeded = (self.counts.doubted - self.doubted_cached).min(m.succeeded);
        Counts {
            succeeded: m.succeeded - succeeded,
            cached: m.cached - cached,
            doubted: succeeded + cached,
            ..*m
        }
    }
}

/// `M/N` from a run id ending in `-shard-M-of-N` (a killed shard has no manifest to say so).
fn shard_from_run_id(run_id: &str) -> Option<String> {
    let (_, rest) = run_id.rsplit_once("-shard-")?;
    let (m, n) = rest.split_once("-of-")?;
    let (m, n): (u32, u32) = (m.parse().ok()?, n.parse().ok()?);
    Some(format!("{m}/{n}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_are_kept_as_records_arrive_equals_in_record_order() {
        let mut fold = SummaryFold::default();
        for (i, ms) in [5, 9, 5, 1, 9, 7, 3, 9].into_iter().enumerate() {
            let mut r = JobRecord::new(
                &format!("j{i}"),
                "s",
                &format!("{i}.txt"),
                Status::Succeeded,
            );
            r.duration_ms = ms;
            r.started_at = (i == 3).then(Timestamp::now);
            fold.add(&r);
        }
        let s = fold.summary("R", Path::new("runs/R"), None, 0);
        let ids: Vec<&str> = s.slowest.iter().map(|l| l.job_id.as_str()).collect();
        assert_eq!(ids, ["j1", "j4", "j7", "j5", "j0"]);
        assert_eq!(s.counts.planned, 8);
        // A record without a start does not hide one that has it.
        assert!(s.started_at.is_some());
    }

    /// The manifest counts every job, the cached ones a rerun did not write again too; one of
    /// an earlier zhi counted doubted jobs as succeeded, and its records say which.
    #[test]
    fn counts_come_from_the_manifest_and_an_older_one_has_its_doubted_moved() {
        let doubted = |id: &str, status: Status| JobRecord {
            doubts: vec![Doubt {
                check: "near_copy".into(),
                file: Some("summary.md".into()),
                ..Doubt::default()
            }],
            ..JobRecord::new(id, "summarize", &format!("{id}.txt"), status)
        };
        let records = [
            doubted("a", Status::Succeeded),
            doubted("b", Status::Succeeded),
            JobRecord::new("c", "summarize", "c.txt", Status::Succeeded),
        ];
        let manifest = |counts: serde_json::Value| -> RunManifest {
            serde_json::from_value(serde_json::json!({
                "run_id": "R", "zhi_version": "0", "command": "zhi run",
                "started_at": "2024-01-01T00:00:00.000Z", "status": "completed",
                "skills": {}, "counts": counts, "tokens": {"prompt": 0, "completion": 0},
                "output_dir": "/w/out", "results": "/w/out/.zhi/runs/R/results.jsonl",
                "results_csv": "/w/out/.zhi/runs/R/results.csv", "shard": null
            }))
            .unwrap()
        };
        let older = manifest(
            serde_json::json!({"planned": 8, "succeeded": 3, "failed": 0,
            "cached": 5, "skipped": 0, "cancelled": 0}),
        );
        let s = RunSummary::of("R", Path::new("runs/R"), Some(&older), &records, 0);
        assert_eq!(
            (s.counts.succeeded, s.counts.doubted, s.counts.cached),
            (1, 2, 5)
        );
        assert_eq!(s.doubted.len(), 2);
        // A rerun's manifest counts the cached jobs it did not write again.
        let rerun = manifest(
            serde_json::json!({"planned": 8, "succeeded": 0, "doubted": 2,
            "failed": 0, "cached": 6, "skipped": 0, "cancelled": 0}),
        );
        let s = RunSummary::of("R", Path::new("runs/R"), Some(&rerun), &[], 0);
        assert_eq!((s.counts.doubted, s.counts.cached), (2, 6));
    }

    #[test]
    fn shard_of_a_killed_run_comes_from_its_id() {
        assert_eq!(
            shard_from_run_id("20240101T000000.000Z-shard-2-of-3").as_deref(),
            Some("2/3")
        );
        assert_eq!(shard_from_run_id("20240101T000000.000Z"), None);
    }
}
