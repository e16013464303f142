//! The output folder's state (docs/outputs.md#the-folders-state): the latest record of every
//! job, over all the runs the folder keeps, and what the runs cost to date.
//!
//! A rerun writes only the records that say something new (docs/outputs.md#what-a-rerun-writes),
//! so the runs together hold a job's first record and each change since: reading them oldest
//! first, the later record of a job wins — unless it only says the job was skipped or
//! cancelled, which does not undo what an earlier run did. What `zhi prune` removed is
//! counted in `.zhi/pruned.json` and added to the totals.

use super::{Cost, Doubt, JobRecord, ShownStatus, Status, Timestamp, Tokens};
use crate::error::JobError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// What the folder says of one job: its latest record, slimmed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct JobState {
    pub job_id: String,
    pub skill: String,
    pub input: String,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<JobError>,
    /// The run whose record this is.
    pub run_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
    /// Its outputs, relative to the output folder.
    pub outputs: Vec<String>,
    /// What zhi doubts of its outputs (docs/outputs.md#doubts).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub doubts: Vec<Doubt>,
}

impl JobState {
    /// The status a person is shown: `doubted` for outputs that stand and are doubted.
    pub(crate) fn shown(&self) -> ShownStatus {
        ShownStatus::of(self.status, !self.doubts.is_empty())
    }

    fn of(r: JobRecord, run_id: &str) -> JobState {
        JobState {
            doubts: r.doubts,
            outputs: r.outputs.into_iter().map(|o| o.path).collect(),
            job_id: r.job_id,
            skill: r.skill,
            input: r.input,
            status: r.status,
            error: r.error,
            run_id: run_id.to_string(),
            finished_at: r.finished_at,
        }
    }
}

/// What the runs `zhi prune` removed had spent: kept so the folder's cost to date stays true.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pruned {
    pub runs: u64,
    pub records: u64,
    #[serde(default)]
    pub tokens: BTreeMap<String, Tokens>,
    #[serde(default)]
    pub costs: BTreeMap<String, Cost>,
}

/// `.zhi/pruned.json` is there, but is not a ledger zhi can read (cut short, a number out of
/// range or below zero, not a file): what it counted is unknown, so `zhi status` says so and
/// `zhi prune` never writes over it (docs/outputs.md#pruning).
#[derive(Debug, thiserror::Error)]
#[error("{} cannot be read ({reason}): what the pruned runs spent is not counted", path.display())]
pub(crate) struct UnreadableLedger {
    pub path: PathBuf,
    pub reason: String,
}

impl Pruned {
    /// `.zhi/pruned.json` of an output folder (nothing pruned yet: empty).
    pub(crate) fn read(out: &Path) -> Result<Pruned, UnreadableLedger> {
        let path = pruned_path(out);
        let unreadable = |reason: String| UnreadableLedger {
            path: path.clone(),
            reason,
        };
        let bytes = match crate::small_file::read(&path, 1 << 20) {
            Ok(b) => b,
            Err(crate::small_file::ReadError::NotFound) => return Ok(Pruned::default()),
            Err(e) => return Err(unreadable(e.to_string())),
        };
        let ledger: Pruned =
            serde_json::from_slice(&bytes).map_err(|e| unreadable(e.to_string()))?;
        let spent = |c: &Cost| c.amount.is_finite() && c.amount >= 0.0;
        if let Some((model, c)) = ledger.costs.iter().find(|(_, c)| !spent(c)) {
            return Err(unreadable(msg!(
                "the cost of {model} is {}, not an amount spent",
                c.amount
            )));
        }
        Ok(ledger)
    }

    /// Adds what other removed records spent (their runs are counted apart).
    pub(crate) fn absorb(&mut self, other: Pruned) {
        self.records = self.records.saturating_add(other.records);
        for (model, t) in other.tokens {
            self.tokens.entry(model).or_default().add(t);
        }
        for (model, c) in other.costs {
            self.costs
                .entry(model)
                .and_modify(|sum| sum.amount += c.amount)
                .or_insert(c);
        }
    }

    /// Adds what a removed record spent.
    pub(crate) fn add(&mut self, r: &JobRecord) {
        self.records = self.records.saturating_add(1);
        add_spent(&mut self.tokens, &mut self.costs, r);
    }
}

/// `<OUT>/.zhi/pruned.json`.
pub(crate) fn pruned_path(out: &Path) -> std::path::PathBuf {
    out.join(".zhi").join("pruned.json")
}

/// Tokens and cost per model of one record, as its run priced them (cached ones spent
/// nothing now).
fn add_spent(
    tokens: &mut BTreeMap<String, Tokens>,
    costs: &mut BTreeMap<String, Cost>,
    r: &JobRecord,
) {
    if r.status == Status::Cached {
        return;
    }
    for (model, t) in r.tokens_per_model() {
        if t.total() > 0 {
            tokens.entry(model).or_default().add(t);
        }
    }
    for (model, c) in r.costs_per_model() {
        costs
            .entry(model)
            .and_modify(|sum| sum.amount += c.amount)
            .or_insert(c);
    }
}

/// The folder's state.
#[derive(Debug, Default)]
pub(crate) struct FolderState {
    /// Runs read.
    pub runs: usize,
    /// Every job's latest record, by input.
    pub jobs: Vec<JobState>,
    /// Tokens per model to date (pruned runs included).
    pub tokens: BTreeMap<String, Tokens>,
    /// Their cost per model, as each run priced them (a model without a price has none).
    pub costs: BTreeMap<String, Cost>,
    /// Record lines that could not be read (a torn last line of a killed run).
    pub unreadable: usize,
    /// What was pruned.
    pub pruned: Pruned,
    /// Why `.zhi/pruned.json` could not be read, when it could not: what was pruned is then
    /// not counted above.
    pub unreadable_ledger: Option<UnreadableLedger>,
}

/// Whether a record says what became of a job (it ran, or its outputs stand).
fn settles(s: Status) -> bool {
    matches!(s, Status::Succeeded | Status::Cached | Status::Failed)
}

/// Whether `later`, a record of a job, takes the place of `was`, its earlier one.
pub(crate) fn replaces(was: Status, later: Status) -> bool {
    settles(later) || !settles(was)
}

/// Every job's latest record, whole, by the rule of [`read`], with `current` (the records of
/// the run now ending, which it counted without writing them all) read last. What the
/// extraction tables are built from.
pub(crate) fn latest_records(out: &Path, current: &[JobRecord]) -> Vec<JobRecord> {
    let mut latest: HashMap<String, JobRecord> = HashMap::new();
    let mut put = |r: JobRecord| match latest.get(&r.job_id) {
        Some(was) if !replaces(was.status, r.status) => {}
        _ => {
            latest.insert(r.job_id.clone(), r);
        }
    };
    for run in super::list_runs(out) {
        if let Ok((records, _)) = super::read_records(&run.path) {
            records.into_iter().for_each(&mut put);
        }
    }
    current.iter().cloned().for_each(put);
    latest.into_values().collect()
}

/// Reads every run of `out`, oldest first.
pub(crate) fn read(out: &Path) -> FolderState {
    let mut state = FolderState::default();
    match Pruned::read(out) {
        Ok(p) => state.pruned = p,
        Err(e) => state.unreadable_ledger = Some(e),
    }
    state.tokens = state.pruned.tokens.clone();
    state.costs = state.pruned.costs.clone();
    let mut latest: HashMap<String, JobState> = HashMap::new();
    for run in super::list_runs(out) {
        state.runs += 1;
        let Ok((records, bad)) = super::read_records(&run.path) else {
            continue;
        };
        state.unreadable += bad;
        for r in records {
            add_spent(&mut state.tokens, &mut state.costs, &r);
            if latest
                .get(&r.job_id)
                .is_none_or(|was| replaces(was.status, r.status))
            {
                latest.insert(r.job_id.clone(), JobState::of(r, &run.run_id));
            }
        }
    }
    state.jobs = latest.into_values().collect();
    state
        .jobs
        .sort_by(|a, b| (&a.input, &a.skill).cmp(&(&b.input, &b.skill)));
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, status: Status) -> JobRecord {
        JobRecord::new(id, "summarize", &format!("docs/{id}.txt"), status)
    }

    #[test]
    fn a_later_failure_wins_but_a_later_skip_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        for (run, records) in [
            (
                "20260101T000000.000Z",
                vec![rec("a", Status::Succeeded), rec("b", Status::Succeeded)],
            ),
            (
                "20260102T000000.000Z",
                vec![rec("a", Status::Failed), rec("b", Status::Skipped)],
            ),
        ] {
            let d = out.join(".zhi/runs").join(run);
            std::fs::create_dir_all(&d).unwrap();
            let lines: String = records
                .iter()
                .map(|r| serde_json::to_string(r).unwrap() + "\n")
                .collect();
            std::fs::write(d.join("results.jsonl"), lines).unwrap();
        }
        let s = read(out);
        assert_eq!(s.runs, 2);
        let by: BTreeMap<&str, Status> = s
            .jobs
            .iter()
            .map(|j| (j.job_id.as_str(), j.status))
            .collect();
        assert_eq!(by["a"], Status::Failed);
        assert_eq!(by["b"], Status::Succeeded);
    }
}
