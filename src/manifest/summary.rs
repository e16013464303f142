//! A run at a glance, for `zhi manifest show`: counts, failures by kind, tokens, the slowest
//! jobs. Built from the records when the run never wrote its `manifest.json` (it was killed),
//! so a crashed run can still be inspected. And the summary a run prints as it ends: what it
//! did, where its outputs and records are, which jobs failed and why. Reading only; nothing
//! here writes.

use super::merge::LoadedRun;
use super::{Counts, JobRecord, RunManifest, RunStatus, Status, Timestamp, Tokens};
use crate::i18n::Lang;
use crate::sanitize::{columns, fit, one_line};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

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
    /// The model zhi asked for, and what the server said answered and runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelSeen>,
    /// Jobs escalated, by skill and answering model (docs/escalation.md).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub escalations: BTreeMap<String, BTreeMap<String, u64>>,
    /// The run's cost per model (docs/escalation.md#cost).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub costs: BTreeMap<String, super::Cost>,
}

/// The summary's lines on escalation and cost (the end-of-run summary and `manifest show`
/// say them alike): `escalated 3 job(s): summarize → glm-4-plus 3` and `cost ¥0.012
/// (glm-4-flash ¥0, glm-4-plus ¥0.012)`.
pub fn escalation_and_cost(
    escalations: &BTreeMap<String, BTreeMap<String, u64>>,
    costs: &BTreeMap<String, super::Cost>,
    lang: Lang,
) -> Vec<String> {
    let mut out = Vec::new();
    let total: u64 = escalations.values().flat_map(|m| m.values()).sum();
    if total > 0 {
        let parts: Vec<String> = escalations
            .iter()
            .flat_map(|(skill, to)| {
                to.iter()
                    .map(move |(model, n)| format!("{} → {} {n}", one_line(skill), one_line(model)))
            })
            .collect();
        let list = parts.join(&t!(in lang; ", "));
        out.push(t!(in lang; "  escalated {total} job(s): {list}", total = total, list = list));
    }
    if !costs.is_empty() {
        let mut totals: BTreeMap<&str, f64> = BTreeMap::new();
        for c in costs.values() {
            *totals.entry(c.currency.as_str()).or_default() += c.amount;
        }
        let total: Vec<String> = totals
            .iter()
            .map(|(currency, amount)| {
                super::Cost {
                    amount: *amount,
                    currency: (*currency).to_string(),
                }
                .show()
            })
            .collect();
        let each: Vec<String> = costs
            .iter()
            .map(|(m, c)| format!("{} {}", one_line(m), c.show()))
            .collect();
        let each = each.join(&t!(in lang; ", "));
        out.push(t!(in lang; "  cost {total} ({list})", total = total.join(" + "), list = each));
    }
    out
}

/// The model of a run: the name zhi asked for, beside what the server said — the model it
/// said answered, and what it runs under that name (a local server answers to any name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelSeen {
    /// The name zhi asked for (most jobs', when several).
    pub asked: String,
    /// The model the server said answered (most requests').
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served: Option<String>,
    /// What the server says it runs under that name (docs/model-api.md#knowing-the-server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<String>,
}

impl ModelSeen {
    /// The model of a run, from its manifest (when it wrote one) and its records.
    pub fn of(m: Option<&RunManifest>, records: &[JobRecord]) -> Option<ModelSeen> {
        // The model the run asked first: an escalated job's record names the model that
        // answered it, and the escalation line says so.
        let asked = most_common(
            records
                .iter()
                .map(|r| r.escalated_from.as_deref().unwrap_or(&r.model)),
        )?;
        let served = m
            .and_then(|m| m.served_model.clone())
            .or_else(|| most_common(records.iter().filter_map(|r| r.served_model.as_deref())));
        let runs = m
            .and_then(|m| m.server.as_ref())
            .and_then(|s| s.model_source.clone());
        Some(ModelSeen {
            asked,
            served,
            runs,
        })
    }

    /// Whether the server said more than the name zhi asked for.
    pub fn says_more(&self) -> bool {
        self.runs.is_some() || self.served.as_ref().is_some_and(|s| *s != self.asked)
    }

    /// `glm-4-flash, answered as glm-4-flash-250414 (the server runs qwen2.5.gguf)`.
    pub fn describe(&self, lang: Lang) -> String {
        let mut out = one_line(&self.asked);
        if let Some(served) = self.served.as_ref().filter(|s| **s != self.asked) {
            out += &t!(in lang; ", answered as {model}", model = one_line(served));
        }
        if let Some(runs) = &self.runs {
            out += &t!(in lang; " (the server runs {model})", model = one_line(runs));
        }
        out
    }
}

/// The most frequent non-empty name (the first of equals in name order).
fn most_common<'a>(names: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for n in names.filter(|n| !n.is_empty()) {
        *seen.entry(n).or_default() += 1;
    }
    let top = seen.values().copied().max()?;
    seen.into_iter()
        .find(|(_, n)| *n == top)
        .map(|(m, _)| m.to_string())
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
    let mut ran: Vec<&super::JobRecord> = run.records.iter().filter(|r| r.status.ran()).collect();
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
        requests: m.map_or_else(
            || run.records.iter().map(|r| u64::from(r.requests)).sum(),
            |m| m.requests,
        ),
        slowest: ran.into_iter().take(SLOWEST).map(line).collect(),
        torn_lines: run.torn_lines,
        model: ModelSeen::of(m, &run.records),
        escalations: m.map(|m| m.escalations.clone()).unwrap_or_default(),
        costs: m.map(|m| m.costs.clone()).unwrap_or_default(),
    }
}

/// How many failed jobs (and jobs with refused tool calls) the end-of-run summary names; the
/// rest are in the run's `results.jsonl`, which it points to.
pub const NAMED: usize = 20;

/// The width the end-of-run summary keeps to (paths excepted: they are never cut).
const COLUMNS: usize = 100;

/// The summary a run prints when it ends, line by line, in `lang` (statuses, error kinds,
/// numbers and paths stay as in the manifest: they are what scripts and people search for).
/// Paths under `cwd` are shown relative to it. Untrusted text (inputs, error messages) is
/// made one-line and free of control characters.
pub fn end_of_run(m: &RunManifest, records: &[JobRecord], cwd: &Path, lang: Lang) -> Vec<String> {
    let mut out = Vec::new();
    let status = serde_json::to_value(m.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let reason = m
        .reason
        .as_ref()
        .map(|r| {
            let r = crate::i18n::localize(r);
            t!(in lang; ": {reason}", reason = one_line(&r))
        })
        .unwrap_or_default();
    let run = t!(in lang; "run {run} {status}", run = one_line(&m.run_id), status = status);
    out.push(run + &reason);
    let c = &m.counts;
    out.push(format!("  {}", counts_line(c, lang)));
    let retries: u64 = records
        .iter()
        .map(|r| u64::from(r.requests.saturating_sub(r.turns)))
        .sum();
    let t = &m.tokens;
    out.push(t!(in lang;
        "  tokens {tokens} (prompt {prompt}, completion {completion})  requests {requests} (retries {retries})",
        tokens = t.total(),
        prompt = t.prompt,
        completion = t.completion,
        requests = m.requests,
        retries = retries
    ));
    // What answered, when the server said more than the name zhi asked for.
    if let Some(model) = ModelSeen::of(Some(m), records).filter(ModelSeen::says_more) {
        out.push(t!(in lang; "  model {model}", model = model.describe(lang)));
    }
    out.extend(escalation_and_cost(&m.escalations, &m.costs, lang));

    // Where everything is.
    let output_dir = Path::new(&m.output_dir);
    let results = Path::new(&m.results);
    let shown_out = shown(output_dir, cwd);
    let shown_results = shown(results, cwd);
    let manifest = results.with_file_name("manifest.json");
    let places = [
        (t!(in lang; "outputs"), format!("{shown_out}/")),
        (t!(in lang; "records"), shown_results.clone()),
        (t!(in lang; "manifest"), shown(&manifest, cwd)),
    ];
    let label_width = places.iter().map(|(l, _)| columns(l)).max().unwrap_or(0);
    for (label, path) in &places {
        let pad = " ".repeat(label_width - columns(label));
        out.push(format!("  {label}{pad}  {}", one_line(path)));
    }
    // A job's transcript, as a person can open it from here.
    let transcript = |r: &JobRecord| {
        r.transcript
            .as_deref()
            .map(|t| one_line(&shown(&output_dir.join(t), cwd)))
    };
    let more = |n: usize| t!(in lang; "    … and {n} more — see {path}", n = n, path = one_line(&shown_results));

    let failed: Vec<&JobRecord> = records
        .iter()
        .filter(|r| r.status == Status::Failed)
        .collect();
    if !failed.is_empty() {
        out.push(t!(in lang; "  failed jobs:"));
        for r in failed.iter().take(NAMED) {
            let head = format!("    {}  ", one_line(&r.input));
            match &r.error {
                Some(e) => {
                    let kind = t!(in lang; "{kind}: ", kind = e.kind);
                    // Messages from the API already start with their kind.
                    let message = crate::i18n::localize(&e.message);
                    let message = message.trim_start();
                    let message = message
                        .strip_prefix(&format!("{}: ", e.kind))
                        .unwrap_or(message);
                    let message = one_line(message);
                    let room = COLUMNS.saturating_sub(columns(&head) + columns(&kind));
                    // A long path leaves the reason too little room: it goes on a line of
                    // its own.
                    if room >= 30 {
                        out.push(format!("{head}{kind}{}", fit(&message, room)));
                    } else {
                        out.push(format!("{head}{}", e.kind));
                        out.push(format!("      {}", fit(&message, COLUMNS - 6)));
                    }
                }
                None => out.push(head.trim_end().to_string()),
            }
            if let Some(t) = transcript(r) {
                out.push(t!(in lang; "      transcript {path}", path = t));
            }
        }
        if failed.len() > NAMED {
            out.push(more(failed.len() - NAMED));
        }
    }
    let refused: Vec<&JobRecord> = records
        .iter()
        .filter(|r| r.refused_tool_calls > 0)
        .collect();
    if !refused.is_empty() {
        out.push(t!(in lang; "  jobs with refused tool calls:"));
        for r in refused.iter().take(NAMED) {
            let n = r.refused_tool_calls;
            let t = transcript(r).unwrap_or_else(|| "?".into());
            out.push(t!(in lang;
                "    {input}  {n} refused  transcript {path}",
                input = one_line(&r.input),
                n = n,
                path = t
            ));
        }
        if refused.len() > NAMED {
            out.push(more(refused.len() - NAMED));
        }
    }
    out
}

/// A path as a person can use it from `cwd`: relative when it is under it.
fn shown(path: &Path, cwd: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// `M/N` from a run id ending in `-shard-M-of-N` (a killed shard has no manifest to say so).
fn shard_from_run_id(run_id: &str) -> Option<String> {
    let (_, rest) = run_id.rsplit_once("-shard-")?;
    let (m, n) = rest.split_once("-of-")?;
    let (m, n): (u32, u32) = (m.parse().ok()?, n.parse().ok()?);
    Some(format!("{m}/{n}"))
}

/// The counts of a run on one line, in `lang`.
pub fn counts_line(c: &super::Counts, lang: Lang) -> String {
    t!(in lang;
        "planned {planned}  succeeded {succeeded}  failed {failed}  cached {cached}  skipped {skipped}  cancelled {cancelled}",
        planned = c.planned,
        succeeded = c.succeeded,
        failed = c.failed,
        cached = c.cached,
        skipped = c.skipped,
        cancelled = c.cancelled
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(failed: u64) -> RunManifest {
        serde_json::from_value(serde_json::json!({
            "run_id": "20240101T000000.000Z",
            "zhi_version": "0",
            "command": "zhi run summarize docs -o out",
            "started_at": "2024-01-01T00:00:00.000Z",
            "finished_at": "2024-01-01T00:01:00.000Z",
            "status": "completed_with_failures",
            "skills": {},
            "counts": {"planned": 30, "succeeded": 30 - failed, "failed": failed,
                       "cached": 0, "skipped": 0, "cancelled": 0},
            "tokens": {"prompt": 2000, "completion": 400},
            "output_dir": "/w/out",
            "results": "/w/out/.zhi/runs/20240101T000000.000Z/results.jsonl",
            "results_csv": "/w/out/.zhi/runs/20240101T000000.000Z/results.csv",
            "shard": null,
            "requests": 23
        }))
        .unwrap()
    }

    fn failed(i: usize, input: &str) -> JobRecord {
        let mut r = JobRecord::new(&format!("j{i:02}"), "summarize", input, Status::Failed);
        r.turns = 1;
        r.requests = 2;
        r.error = Some(crate::error::JobError::new(
            crate::error::ErrorKind::ContentFilter,
            "content_filter: the provider refused the document (1301: \x1b[31m unsafe content) and said so at great length, far more than a line can hold",
        ));
        r.transcript = Some(format!(
            ".zhi/runs/20240101T000000.000Z/transcripts/j{i:02}.jsonl"
        ));
        r
    }

    fn records() -> Vec<JobRecord> {
        let mut rs: Vec<JobRecord> = (0..NAMED + 2)
            .map(|i| failed(i, &format!("docs/d{i:02}.txt")))
            .collect();
        rs[1].input = format!("docs/{}/deep.txt", "a-very-long-folder-name".repeat(3));
        rs.push(JobRecord::new(
            "ok",
            "summarize",
            "docs/ok.txt",
            Status::Succeeded,
        ));
        rs
    }

    #[test]
    fn the_end_of_a_run_says_where_things_are_and_why_jobs_failed() {
        let lines = end_of_run(&manifest(22), &records(), Path::new("/w"), Lang::En);
        let text = lines.join("\n");
        assert_eq!(lines[0], "run 20240101T000000.000Z completed_with_failures");
        assert_eq!(
            lines[1],
            "  planned 30  succeeded 8  failed 22  cached 0  skipped 0  cancelled 0"
        );
        assert_eq!(
            lines[2],
            "  tokens 2400 (prompt 2000, completion 400)  requests 23 (retries 22)"
        );
        assert_eq!(lines[3], "  outputs   out/");
        assert_eq!(
            lines[4],
            "  records   out/.zhi/runs/20240101T000000.000Z/results.jsonl"
        );
        assert_eq!(
            lines[5],
            "  manifest  out/.zhi/runs/20240101T000000.000Z/manifest.json"
        );
        assert_eq!(lines[6], "  failed jobs:");
        assert!(
            lines[7].starts_with("    docs/d00.txt  content_filter: the provider refused"),
            "{text}"
        );
        assert!(lines[7].ends_with('…'), "{text}");
        assert_eq!(
            lines[8],
            "      transcript out/.zhi/runs/20240101T000000.000Z/transcripts/j00.jsonl"
        );
        // A long path: the reason on a line of its own.
        assert!(lines[9].ends_with("/deep.txt  content_filter"), "{text}");
        assert!(
            lines[10].starts_with("      the provider refused"),
            "{text}"
        );
        // Twenty jobs named, the rest pointed to.
        assert_eq!(text.matches("content_filter").count(), NAMED, "{text}");
        assert_eq!(
            lines.last().unwrap(),
            "    … and 2 more — see out/.zhi/runs/20240101T000000.000Z/results.jsonl"
        );
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text}");
        // Paths are never cut; every other line fits.
        for l in lines
            .iter()
            .filter(|l| !l.contains("/.zhi/") && !l.contains("/deep.txt"))
        {
            assert!(columns(l) <= 100, "{} columns: {l}", columns(l));
        }
    }

    #[test]
    fn the_end_of_a_run_in_chinese_fits_the_same_width() {
        let lines = end_of_run(&manifest(22), &records(), Path::new("/w"), Lang::Zh);
        let text = lines.join("\n");
        assert_eq!(
            lines[0],
            "运行 20240101T000000.000Z completed_with_failures"
        );
        assert_eq!(
            lines[1],
            "  计划 30  成功 8  失败 22  缓存 0  跳过 0  取消 0"
        );
        assert_eq!(lines[3], "  输出目录  out/");
        assert_eq!(
            lines[4],
            "  记录      out/.zhi/runs/20240101T000000.000Z/results.jsonl"
        );
        assert_eq!(lines[6], "  失败的任务：");
        assert!(lines[7].starts_with("    docs/d00.txt  content_filter：the provider"));
        assert_eq!(
            lines.last().unwrap(),
            "    … 另有 2 个，见 out/.zhi/runs/20240101T000000.000Z/results.jsonl"
        );
        // Paths are never cut; every other line fits.
        for l in lines
            .iter()
            .filter(|l| !l.contains("/.zhi/") && !l.contains("/deep.txt"))
        {
            assert!(columns(l) <= 100, "{} columns: {l}", columns(l));
        }
        assert!(text.contains("对话记录 out/.zhi/runs/"), "{text}");
    }

    #[test]
    fn outputs_in_the_working_folder_itself_are_shown_as_dot() {
        let mut m = manifest(0);
        m.output_dir = "/w".into();
        m.results = "/w/.zhi/runs/R/results.jsonl".into();
        let lines = end_of_run(&m, &[], Path::new("/w"), Lang::En);
        assert_eq!(lines[3], "  outputs   ./");
        assert_eq!(lines[4], "  records   .zhi/runs/R/results.jsonl");
        // Elsewhere: absolute.
        let lines = end_of_run(&m, &[], Path::new("/elsewhere"), Lang::En);
        assert_eq!(lines[3], "  outputs   /w/");
        assert!(!lines.iter().any(|l| l.contains("failed jobs")));
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
