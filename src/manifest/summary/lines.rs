//! A [`RunSummary`] said to a person, line by line: the one wording of a run's sections, used
//! by the summary a run prints as it ends and by `zhi manifest show` (each picks its sections).
//! Statuses, error kinds, numbers and paths stay as in the manifest: they are what scripts and
//! people search for. Untrusted text (inputs, error messages, model names) is made one-line
//! and free of control characters; paths under the working folder are shown relative to it.

use super::RunSummary;
use crate::i18n::Lang;
use crate::manifest::{Cost, Counts, Tokens};
use crate::sanitize::{columns, fit, one_line};
use std::collections::BTreeMap;
use std::path::Path;

/// How many failed jobs (and jobs with refused tool calls) are named; the rest are in the
/// run's `results.jsonl`, which the summary points to.
pub(crate) const NAMED: usize = 20;

/// How many doubts of one doubted job are said; the rest are counted.
const DOUBTS_NAMED: usize = 3;

/// The width the lines keep to (paths excepted: they are never cut).
const COLUMNS: usize = 100;

/// One part of a summary, in the order a caller lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    /// `run <id>  <status>  shard <m/n>`, and why it stopped early.
    Head,
    /// The command that started the run.
    Command,
    /// The model asked for, and what the server said answered and runs.
    Model,
    /// The model, only when the server said more than the name zhi asked for.
    ModelWhenTelling,
    /// Jobs escalated, and the run's cost.
    EscalationAndCost,
    /// When the run started and finished, and how long it took.
    Times,
    /// Jobs planned, succeeded, failed, cached, skipped, cancelled.
    Counts,
    /// Tokens, requests and retries.
    Tokens,
    /// Where the outputs, records and manifest are.
    Places,
    /// Failed jobs per error kind.
    FailuresByKind,
    /// Each failed job: its input, kind, message and transcript.
    Failed,
    /// Each doubted job: its input and its doubts in words.
    Doubted,
    /// Jobs whose model made tool calls that were refused.
    Refused,
    /// The slowest jobs.
    Slowest,
    /// Lines of `results.jsonl` that did not parse.
    Torn,
}

/// What a run says as it ends: what it did, where its files are, which jobs failed and why.
pub(crate) const END_OF_RUN: &[Section] = &[
    Section::Head,
    Section::Counts,
    Section::Tokens,
    Section::ModelWhenTelling,
    Section::EscalationAndCost,
    Section::Places,
    Section::Failed,
    Section::Doubted,
    Section::Refused,
];

/// What `zhi manifest show` says of a run.
pub(crate) const MANIFEST_SHOW: &[Section] = &[
    Section::Head,
    Section::Command,
    Section::Model,
    Section::EscalationAndCost,
    Section::Times,
    Section::Counts,
    Section::Tokens,
    Section::FailuresByKind,
    Section::Failed,
    Section::Doubted,
    Section::Refused,
    Section::Slowest,
    Section::Torn,
    Section::Places,
];

/// `sections` of `s`, in that order, in `lang`; paths under `cwd` are shown relative to it.
pub(crate) fn lines(s: &RunSummary, sections: &[Section], cwd: &Path, lang: Lang) -> Vec<String> {
    let w = Writer { s, cwd, lang };
    let mut out = Vec::new();
    for section in sections {
        match section {
            Section::Head => w.head(&mut out),
            Section::Command => {
                if let Some(c) = &s.command {
                    out.push(t!(in lang; "  command: {command}", command = one_line(c)));
                }
            }
            Section::Model => w.model(&mut out, false),
            Section::ModelWhenTelling => w.model(&mut out, true),
            Section::EscalationAndCost => {
                out.extend(doubts_line(&s.doubts, lang));
                out.extend(
                    s.audit
                        .as_ref()
                        .map(|a| audit_lines(a, lang))
                        .unwrap_or_default(),
                );
                out.extend(escalation_and_cost(s, lang));
            }
            Section::Times => w.times(&mut out),
            Section::Counts => {
                out.push(t!(in lang; "  jobs: {counts}", counts = counts_line(&s.counts, lang)));
            }
            Section::Tokens => out.push(t!(in lang;
                "  tokens: {tokens}  requests: {requests} (retries {retries})",
                tokens = tokens_line(&s.tokens, lang),
                requests = s.requests,
                retries = s.retries
            )),
            Section::Places => w.places(&mut out),
            Section::FailuresByKind => w.failures_by_kind(&mut out),
            Section::Failed => w.failed(&mut out),
            Section::Doubted => w.doubted(&mut out),
            Section::Refused => w.refused(&mut out),
            Section::Slowest => w.slowest(&mut out),
            Section::Torn => {
                if s.torn_lines > 0 {
                    out.push(t!(in lang;
                        "  note: {n} torn line(s) in results.jsonl ignored (a crash mid-write)",
                        n = s.torn_lines
                    ));
                }
            }
        }
    }
    out
}

/// The counts of a run on one line, in `lang`.
pub(crate) fn counts_line(c: &Counts, lang: Lang) -> String {
    t!(in lang;
        "planned {planned}  succeeded {succeeded}  doubted {doubted}  failed {failed}  cached {cached}  skipped {skipped}  cancelled {cancelled}",
        planned = c.planned,
        succeeded = c.succeeded,
        doubted = c.doubted,
        failed = c.failed,
        cached = c.cached,
        skipped = c.skipped,
        cancelled = c.cancelled
    )
}

/// `2400 (prompt 2000, completion 400)`.
pub(crate) fn tokens_line(t: &Tokens, lang: Lang) -> String {
    t!(in lang;
        "{tokens} (prompt {prompt}, completion {completion})",
        tokens = t.total(),
        prompt = t.prompt,
        completion = t.completion
    )
}

/// The summary's line on doubted jobs: `doubted 3 job(s): extract 3 (seller 2, total 1)`.
pub(crate) fn doubts_line(
    doubts: &BTreeMap<String, super::super::DoubtCount>,
    lang: Lang,
) -> Option<String> {
    let total: u64 = doubts.values().map(|d| d.jobs).sum();
    if total == 0 {
        return None;
    }
    let sep = t!(in lang; ", ");
    let parts: Vec<String> = doubts
        .iter()
        .map(|(skill, d)| {
            let at: Vec<String> =
                d.at.iter()
                    .map(|(what, n)| format!("{} {n}", one_line(what)))
                    .collect();
            format!("{} {} ({})", one_line(skill), d.jobs, at.join(&sep))
        })
        .collect();
    let list = parts.join(&sep);
    Some(t!(in lang; "  doubted {total} job(s): {list}", total = total, list = list))
}

/// The summary's lines on an audit: what it sampled and cost, each field's agreement with
/// its interval, and the skills it routed.
pub(crate) fn audit_lines(a: &super::super::AuditReport, lang: Lang) -> Vec<String> {
    let cost = a
        .cost
        .as_ref()
        .map_or_else(String::new, |c| format!(", {}", c.show()));
    let mut out = vec![t!(in lang;
        "  audit: {n} job(s) also answered by {model} ({tokens} tokens{cost})",
        n = a.sampled,
        model = one_line(&a.model),
        tokens = a.tokens.total(),
        cost = cost
    )];
    let width = a
        .skills
        .values()
        .flat_map(|f| f.keys())
        .map(|k| k.chars().count())
        .max()
        .unwrap_or(0);
    for (skill, fields) in &a.skills {
        for (field, g) in fields {
            let pct = |v: f64| format!("{:.0}%", v * 100.0);
            out.push(t!(in lang;
                "    {skill}  {field}  {agree}/{n} agree ({rate}, {level} CI {low}–{high})",
                skill = one_line(skill),
                level = pct(a.confidence),
                field = format!("{:width$}", one_line(field)),
                agree = g.agree,
                n = g.n,
                rate = pct(g.rate),
                low = pct(g.low),
                high = pct(g.high)
            ));
        }
    }
    for (skill, fields) in &a.routed {
        out.push(t!(in lang;
            "  routed {skill} to {model}: {list} not shown to reach {target} ({level} confidence)",
            skill = one_line(skill),
            model = one_line(&a.model),
            list = fields.join(", "),
            target = a.target.map_or_else(String::new, |t| format!("{t}")),
            level = format!("{:.0}%", a.confidence * 100.0)
        ));
    }
    // What the guarantee costs: the sample it takes to keep any field at all.
    if let (Some(target), Some(needed)) = (a.target, a.needed)
        && !a.routed.is_empty()
        && needed > a.sampled
    {
        out.push(t!(in lang;
            "  a field is kept at {target} only on a sample of at least {needed} job(s), all agreeing",
            target = format!("{target}"),
            needed = needed
        ));
    }
    if !a.routed.is_empty() {
        let cost = a
            .routed_cost
            .as_ref()
            .map_or_else(String::new, |c| format!(" ({})", c.show()));
        out.push(t!(in lang;
            "  {n} later job(s) went to {model}{cost}",
            n = a.routed_jobs,
            model = one_line(&a.model),
            cost = cost
        ));
    }
    out
}

/// The summary's lines on escalation and cost (the end-of-run summary, `manifest show` and the
/// report say them alike): `escalated 3 job(s): summarize → glm-4-plus 3`, `cost ¥0.012
/// (glm-4-flash ¥0, glm-4-plus ¥0.012)`, each currency's total apart, and the models whose
/// cost is unknown (no price) named after it.
pub(crate) fn escalation_and_cost(s: &RunSummary, lang: Lang) -> Vec<String> {
    let (escalations, costs) = (&s.escalations, &s.costs);
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
                Cost {
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
        // A partial bill says what it leaves out: unknown is not zero.
        if !s.unpriced.is_empty() {
            let list: Vec<String> = s.unpriced.iter().map(|m| one_line(m)).collect();
            let list = list.join(&t!(in lang; ", "));
            out.push(t!(in lang;
                "  cost unknown for {list}: no price (set one under `prices:` in zhi.yaml)",
                list = list
            ));
        }
    }
    out
}

/// The sections of one summary, said for one reader.
struct Writer<'a> {
    s: &'a RunSummary,
    cwd: &'a Path,
    lang: Lang,
}

impl Writer<'_> {
    fn head(&self, out: &mut Vec<String>) {
        let (s, lang) = (self.s, self.lang);
        let status = match s.status {
            Some(st) => serde_json::to_value(st)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            None => t!(in lang;
                "incomplete: no manifest.json (the run was killed or is still running); read from its records"
            ),
        };
        let shard = s
            .shard
            .as_ref()
            .map(|sh| t!(in lang; "  shard {shard}", shard = one_line(sh)))
            .unwrap_or_default();
        let run = t!(in lang; "run {run}  {status}", run = one_line(&s.run_id), status = status);
        out.push(run + &shard);
        if let Some(r) = &s.reason {
            let r = crate::i18n::localize(r);
            out.push(t!(in lang; "  reason: {reason}", reason = one_line(&r)));
        }
    }

    fn model(&self, out: &mut Vec<String>, only_when_telling: bool) {
        let Some(m) = &self.s.model else { return };
        if !only_when_telling || m.says_more() {
            let model = m.describe(self.lang);
            out.push(t!(in self.lang; "  model: {model}", model = model));
        }
    }

    fn times(&self, out: &mut Vec<String>) {
        let s = self.s;
        let shown = |t: Option<crate::manifest::Timestamp>| t.map_or("?".into(), |t| t.to_string());
        let took = match (s.started_at, s.finished_at) {
            (Some(a), Some(b)) => format!("  ({:.1}s)", b.millis_since(a) as f64 / 1000.0),
            _ => String::new(),
        };
        let times = t!(in self.lang;
            "  started {started}  finished {finished}",
            started = shown(s.started_at),
            finished = shown(s.finished_at)
        );
        out.push(times + &took);
    }

    /// A path as a person can use it from here: relative when it is under the working folder.
    fn shown(&self, path: &Path) -> String {
        let shown = match path.strip_prefix(self.cwd) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        };
        one_line(&shown)
    }

    /// A job's transcript (relative to the output folder), as a person can open it from here.
    fn transcript(&self, rel: &str) -> String {
        match &self.s.output_dir {
            Some(out) => self.shown(&out.join(rel)),
            None => one_line(rel),
        }
    }

    fn places(&self, out: &mut Vec<String>) {
        let s = self.s;
        let lang = self.lang;
        let mut places = Vec::new();
        if let Some(dir) = &s.output_dir {
            places.push((t!(in lang; "outputs:"), format!("{}/", self.shown(dir))));
        }
        if let Some(dir) = &s.output_dir {
            // One line a table: its workbook, the other formats beside it.
            for t in s.tables.iter().filter(|t| t.ends_with(".xlsx")) {
                let also = t!(in lang; "(also .csv, .jsonl)");
                places.push((
                    t!(in lang; "table:"),
                    format!("{} {also}", self.shown(&dir.join(t))),
                ));
            }
        }
        places.push((t!(in lang; "records:"), self.shown(&s.results())));
        if s.complete {
            let manifest = Path::new(&s.path).join("manifest.json");
            places.push((t!(in lang; "manifest:"), self.shown(&manifest)));
        }
        let width = places.iter().map(|(l, _)| columns(l)).max().unwrap_or(0);
        for (label, path) in &places {
            let pad = " ".repeat(width - columns(label));
            out.push(format!("  {label}{pad}  {path}"));
        }
    }

    /// `    … and 2 more — see out/.zhi/runs/…/results.jsonl`
    fn more(&self, n: usize) -> String {
        let path = self.shown(&self.s.results());
        t!(in self.lang; "    … and {n} more — see {path}", n = n, path = path)
    }

    fn failures_by_kind(&self, out: &mut Vec<String>) {
        if self.s.failures_by_kind.is_empty() {
            return;
        }
        out.push(t!(in self.lang; "  failures by kind:"));
        for (kind, n) in &self.s.failures_by_kind {
            out.push(format!("    {:<18} {n}", one_line(kind)));
        }
    }

    fn failed(&self, out: &mut Vec<String>) {
        let (failed, lang) = (&self.s.failures, self.lang);
        if failed.is_empty() {
            return;
        }
        out.push(t!(in lang; "  failed jobs:"));
        for f in failed.iter().take(NAMED) {
            let head = format!("    {}  ", one_line(&f.input));
            match &f.error_kind {
                Some(kind) => {
                    let kind_said = t!(in lang; "{kind}: ", kind = one_line(kind));
                    let message = crate::i18n::localize(f.error_message.as_deref().unwrap_or(""));
                    let message = one_line(message.trim_start());
                    let room = COLUMNS.saturating_sub(columns(&head) + columns(&kind_said));
                    // A long path leaves the reason too little room: it goes on a line of its
                    // own.
                    if room >= 30 {
                        out.push(format!("{head}{kind_said}{}", fit(&message, room)));
                    } else {
                        out.push(format!("{head}{}", one_line(kind)));
                        out.push(format!("      {}", fit(&message, COLUMNS - 6)));
                    }
                }
                None => out.push(head.trim_end().to_string()),
            }
            if let Some(t) = &f.transcript {
                let path = self.transcript(t);
                out.push(t!(in lang; "      transcript {path}", path = path));
            }
        }
        if failed.len() > NAMED {
            out.push(self.more(failed.len() - NAMED));
        }
        let unsupported = self.unsupported_globs();
        if !unsupported.is_empty() {
            let flags: Vec<String> = unsupported
                .iter()
                .map(|g| format!("--exclude '{}'", one_line(g)))
                .collect();
            out.push(t!(in lang;
                "  files zhi cannot read (unsupported_type) are left out with {flags}",
                flags = flags.join(" ")
            ));
        }
    }

    /// The globs that would leave out the run's `unsupported_type` failures: `*.ext`, or the
    /// file's name when it has no extension.
    fn unsupported_globs(&self) -> std::collections::BTreeSet<String> {
        self.s
            .failures
            .iter()
            .filter(|f| f.error_kind.as_deref() == Some("unsupported_type"))
            .map(|f| {
                let p = Path::new(&f.input);
                match p.extension() {
                    Some(ext) => format!("*.{}", ext.to_string_lossy()),
                    None => p
                        .file_name()
                        .map_or_else(|| f.input.clone(), |n| n.to_string_lossy().into_owned()),
                }
            })
            .collect()
    }

    /// The doubted jobs, as failures are named: each input (marked when it was cached:
    /// nothing was sent for it), then its first doubts in words, one a line.
    fn doubted(&self, out: &mut Vec<String>) {
        let (s, lang) = (self.s, self.lang);
        if s.counts.doubted == 0 {
            return;
        }
        out.push(
            t!(in lang; "  doubted jobs (outputs kept, probably wrong; --strict fails them):"),
        );
        for j in &s.doubted {
            let cached = if j.status == crate::manifest::Status::Cached {
                t!(in lang; " (cached)")
            } else {
                String::new()
            };
            out.push(format!("    {}{cached}", one_line(&j.input)));
            let mut said: Vec<String> = Vec::new();
            for d in &j.doubts {
                let words = d.said(lang);
                if !said.contains(&words) {
                    said.push(words);
                }
            }
            for words in said.iter().take(DOUBTS_NAMED) {
                out.push(format!("      {}", fit(words, COLUMNS - 6)));
            }
            if said.len() > DOUBTS_NAMED {
                out.push(t!(in lang;
                    "      … and {n} more doubt(s)",
                    n = said.len() - DOUBTS_NAMED
                ));
            }
        }
        let more = s.counts.doubted.saturating_sub(s.doubted.len() as u64);
        if more > 0 {
            out.push(t!(in lang;
                "    … and {n} more — `zhi status --csv` lists every job",
                n = more
            ));
        }
    }

    fn refused(&self, out: &mut Vec<String>) {
        let (refused, lang) = (&self.s.refused, self.lang);
        if refused.is_empty() {
            return;
        }
        out.push(t!(in lang; "  jobs with refused tool calls:"));
        for j in refused.iter().take(NAMED) {
            let path = j
                .transcript
                .as_deref()
                .map_or_else(|| "?".into(), |t| self.transcript(t));
            out.push(t!(in lang;
                "    {input}  {n} refused  transcript {path}",
                input = one_line(&j.input),
                n = j.refused_tool_calls,
                path = path
            ));
        }
        if refused.len() > NAMED {
            out.push(self.more(refused.len() - NAMED));
        }
    }

    fn slowest(&self, out: &mut Vec<String>) {
        if self.s.slowest.is_empty() {
            return;
        }
        out.push(t!(in self.lang; "  slowest jobs:"));
        for j in &self.s.slowest {
            out.push(format!(
                "    {:>8}  {:<9}  {}",
                format!("{:.1}s", j.duration_ms as f64 / 1000.0),
                j.shown.as_str(),
                one_line(&j.input)
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::end_of_run;
    use super::*;
    use crate::manifest::{JobRecord, RunManifest, Status};

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
        // One request, refused on its second attempt: one retry.
        let mut r = JobRecord::new(&format!("j{i:02}"), "summarize", input, Status::Failed);
        r.turns = 0;
        r.requests = 2;
        r.tokens.prompt = if i == 0 { 2000 } else { 0 };
        r.tokens.completion = if i == 0 { 400 } else { 0 };
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
        for i in 0..8 {
            rs.push(JobRecord::new(
                &format!("ok{i}"),
                "summarize",
                &format!("docs/ok{i}.txt"),
                Status::Succeeded,
            ));
        }
        rs
    }

    /// The tables written, the models without a price, who answered, and the `--exclude` for
    /// files zhi cannot read.
    #[test]
    fn the_end_of_a_run_names_tables_unpriced_models_answerers_and_excludes() {
        let mut m = manifest(1);
        m.tables = ["csv", "jsonl", "xlsx"]
            .map(|e| format!("tables/extract-invoice.{e}"))
            .to_vec();
        m.costs.insert(
            "glm-4-flash".into(),
            Cost {
                amount: 0.0,
                currency: "CNY".into(),
            },
        );
        m.unpriced.push("big".into());
        let mut rs: Vec<JobRecord> = (0..7)
            .map(|i| {
                let mut r = JobRecord::new(
                    &format!("ok{i}"),
                    "s",
                    &format!("d/{i}.txt"),
                    Status::Succeeded,
                );
                r.model = "glm-4-flash".into();
                r.served_model = Some(if i < 2 { "big" } else { "glm-4-flash" }.into());
                r
            })
            .collect();
        let mut bin = JobRecord::new("b", "s", "d/blob.bin", Status::Failed);
        bin.error = Some(crate::error::JobError::new(
            crate::error::ErrorKind::UnsupportedType,
            "unsupported file type",
        ));
        rs.push(bin);
        let text = end_of_run(&m, &rs, Path::new("/w"), Lang::En).join("\n");
        assert!(
            text.contains("  table:     out/tables/extract-invoice.xlsx (also .csv, .jsonl)"),
            "{text}"
        );
        assert!(text.contains("  cost ¥0 (glm-4-flash ¥0)"), "{text}");
        assert!(
            text.contains("  cost unknown for big: no price (set one under `prices:` in zhi.yaml)"),
            "{text}"
        );
        assert!(
            text.contains("  model: glm-4-flash, answered by big (2), glm-4-flash (5)"),
            "{text}"
        );
        assert!(text.contains("--exclude '*.bin'"), "{text}");
    }

    #[test]
    fn the_end_of_a_run_says_where_things_are_and_why_jobs_failed() {
        let lines = end_of_run(&manifest(22), &records(), Path::new("/w"), Lang::En);
        let text = lines.join("\n");
        assert_eq!(
            lines[0],
            "run 20240101T000000.000Z  completed_with_failures"
        );
        assert_eq!(
            lines[1],
            "  jobs: planned 30  succeeded 8  doubted 0  failed 22  cached 0  skipped 0  cancelled 0"
        );
        assert_eq!(
            lines[2],
            "  tokens: 2400 (prompt 2000, completion 400)  requests: 23 (retries 22)"
        );
        assert_eq!(lines[3], "  outputs:   out/");
        assert_eq!(
            lines[4],
            "  records:   out/.zhi/runs/20240101T000000.000Z/results.jsonl"
        );
        assert_eq!(
            lines[5],
            "  manifest:  out/.zhi/runs/20240101T000000.000Z/manifest.json"
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
            "运行 20240101T000000.000Z  completed_with_failures"
        );
        assert_eq!(
            lines[1],
            "  任务：计划 30  成功 8  存疑 0  失败 22  缓存 0  跳过 0  取消 0"
        );
        assert_eq!(lines[3], "  输出目录：  out/");
        assert_eq!(
            lines[4],
            "  记录：      out/.zhi/runs/20240101T000000.000Z/results.jsonl"
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
        assert_eq!(lines[3], "  outputs:   ./");
        assert_eq!(lines[4], "  records:   .zhi/runs/R/results.jsonl");
        // Elsewhere: absolute.
        let lines = end_of_run(&m, &[], Path::new("/elsewhere"), Lang::En);
        assert_eq!(lines[3], "  outputs:   /w/");
        assert!(!lines.iter().any(|l| l.contains("failed jobs")));
    }

    #[test]
    fn manifest_show_says_the_same_sections_and_more() {
        let m = manifest(22);
        let s = RunSummary::of_finished(&m, &records());
        let lines = lines(&s, MANIFEST_SHOW, Path::new("/w"), Lang::En);
        let text = lines.join("\n");
        assert_eq!(
            lines[0],
            "run 20240101T000000.000Z  completed_with_failures"
        );
        assert_eq!(lines[1], "  command: zhi run summarize docs -o out");
        assert!(
            text.contains(
                "  started 2024-01-01T00:00:00.000Z  finished 2024-01-01T00:01:00.000Z  (60.0s)"
            ),
            "{text}"
        );
        assert!(
            text.contains("  failures by kind:\n    content_filter     22\n"),
            "{text}"
        );
        assert!(text.contains("  slowest jobs:\n"), "{text}");
        assert!(
            text.ends_with("  manifest:  out/.zhi/runs/20240101T000000.000Z/manifest.json"),
            "{text}"
        );
    }
}
