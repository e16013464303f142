//! A run at a glance, for `zhi manifest show`: counts, failures by kind, tokens, the slowest
//! jobs. Built from the records when the run never wrote its `manifest.json` (it was killed),
//! so a crashed run can still be inspected. Reading only; nothing here writes.

use super::merge::LoadedRun;
use super::{Counts, RunStatus, Status, Timestamp, Tokens};
use serde::Serialize;
use std::collections::BTreeMap;

/// How many of the slowest jobs a summary lists.
pub const SLOWEST: usize = 5;

/// One job in a summary's lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobLine {
    pub job_id: String,
    pub input: String,
    pub status: Status,
    pub duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    pub refused_tool_calls: u32,
    /// The job's transcript, relative to the output folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
}

/// The summary object `zhi manifest show --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
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
    /// Jobs whose model made tool calls that were refused, in record order.
    pub refused: Vec<JobLine>,
    /// HTTP requests sent, retries included.
    pub requests: u64,
    /// The slowest jobs that ran, slowest first (at most [`SLOWEST`]).
    pub slowest: Vec<JobLine>,
    /// Lines of `results.jsonl` that did not parse (a crash mid-write).
    pub torn_lines: usize,
}

fn line(r: &super::JobRecord) -> JobLine {
    JobLine {
        job_id: r.job_id.clone(),
        input: r.input.clone(),
        status: r.status,
        duration_ms: r.duration_ms,
        error_kind: r.error.as_ref().map(|e| e.kind.to_string()),
        error_message: r.error.as_ref().map(|e| e.message.clone()),
        refused_tool_calls: r.refused_tool_calls,
        transcript: r.transcript.clone(),
    }
}

/// Summarize one run.
pub fn summarize(run: &LoadedRun) -> RunSummary {
    let mut counts = Counts::default();
    let mut tokens = Tokens::default();
    let mut failures_by_kind: BTreeMap<String, u64> = BTreeMap::new();
    let mut failures = Vec::new();
    for r in &run.records {
        counts.add(r.status);
        tokens.add(r.tokens);
        if r.status == Status::Failed {
            let kind = r
                .error
                .as_ref()
                .map(|e| e.kind.to_string())
                .unwrap_or_else(|| "unknown".into());
            *failures_by_kind.entry(kind).or_default() += 1;
            failures.push(line(r));
        }
    }
    let m = run.manifest.as_ref();
    counts.planned = match m {
        Some(m) => m.counts.planned,
        None => run.records.len() as u64,
    };
    let mut ran: Vec<&super::JobRecord> = run
        .records
        .iter()
        .filter(|r| {
            matches!(
                r.status,
                Status::Succeeded | Status::Failed | Status::Cancelled
            )
        })
        .collect();
    // Slowest first; equal durations in record order.
    ran.sort_by_key(|r| std::cmp::Reverse(r.duration_ms));
    RunSummary {
        run_id: run.run_id.clone(),
        path: run.path.display().to_string(),
        status: m.map(|m| m.status),
        complete: m.is_some(),
        reason: m.and_then(|m| m.reason.clone()),
        command: m.map(|m| m.command.clone()),
        started_at: m
            .map(|m| m.started_at)
            .or_else(|| run.records.iter().filter_map(|r| r.started_at).min()),
        finished_at: m
            .and_then(|m| m.finished_at)
            .or_else(|| run.records.iter().filter_map(|r| r.finished_at).max()),
        shard: m
            .and_then(|m| m.shard.clone())
            .or_else(|| shard_from_run_id(&run.run_id)),
        counts,
        tokens,
        failures_by_kind,
        failures,
        refused: run
            .records
            .iter()
            .filter(|r| r.refused_tool_calls > 0)
            .map(line)
            .collect(),
        requests: run.records.iter().map(|r| u64::from(r.requests)).sum(),
        slowest: ran.into_iter().take(SLOWEST).map(line).collect(),
        torn_lines: run.torn_lines,
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
    fn shard_of_a_killed_run_comes_from_its_id() {
        assert_eq!(
            shard_from_run_id("20240101T000000.000Z-shard-2-of-3").as_deref(),
            Some("2/3")
        );
        assert_eq!(shard_from_run_id("20240101T000000.000Z"), None);
    }
}
