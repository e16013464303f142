//! The page's structure as maud markup: every value spliced into it — a file name, a server's
//! message, a model name, a number — is escaped by the template engine, so nothing a document
//! or a server chose can become markup. Text from records goes in as [`Text`], which also
//! replaces control characters and bidirectional overrides; the only raw splices are the
//! page's own style sheet and script (hashed into its Content-Security-Policy) and the charts,
//! which are maud markup themselves.

use super::html::Text;
use super::{
    COLUMNS, CSS, FAILURES_LISTED, Links, MESSAGE_IN_LIST, MESSAGE_IN_TABLE, SCRIPT, chart, clip,
    csp_hash, duration, number, run_status, status_label, status_rank, table_order, wall_ms,
};
use crate::i18n::Lang;
use crate::manifest::merge::LoadedRun;
use crate::manifest::summary::{self, JobLine, RunSummary};
use crate::manifest::{JobRecord, ShownStatus};
use chart::Sample;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use std::collections::BTreeSet;
use std::path::Path;

/// The page being written: one run, its summary, in one language.
pub(super) struct Page<'a> {
    pub run: &'a LoadedRun,
    pub s: &'a RunSummary,
    pub lang: Lang,
    pub links: &'a Links,
    /// Whether the run's jobs ran more than one skill (then each file is shown with its skill).
    pub several_skills: bool,
}

/// Catalog text with a piece of markup inside: the text around the hole `{model}`, each part
/// escaped, and the markup where the hole was.
fn around(said: &str, inner: Markup) -> Markup {
    let (before, after) = said.split_once(MARK).unwrap_or((said, ""));
    html! { (before) (inner) (after) }
}

/// Stands for a hole filled with markup in [`around`] (a private-use character no catalog
/// text holds).
const MARK: &str = "\u{E000}";

impl Page<'_> {
    pub(super) fn render(&self) -> String {
        html! {
            (DOCTYPE) "\n"
            html lang=(self.lang.as_str()) {
                "\n" (self.head()) "\n"
                body {
                    "\n" (self.header()) (self.tiles()) (self.failures()) (self.charts())
                    (self.table()) (self.footer()) "\n"
                }
                "\n"
            }
            "\n"
        }
        .into_string()
    }

    fn head(&self) -> Markup {
        let csp = format!(
            "default-src 'none'; style-src {}; script-src {}; img-src data:; base-uri 'none'; form-action 'none'",
            csp_hash(CSS),
            csp_hash(SCRIPT)
        );
        html! {
            head {
                "\n" meta charset="utf-8";
                "\n" meta http-equiv="Content-Security-Policy" content=(csp);
                "\n" meta name="viewport" content="width=device-width, initial-scale=1";
                "\n" meta name="generator" content={ "zhi " (env!("CARGO_PKG_VERSION")) };
                "\n" title { (t!(in self.lang; "zhi run")) " " (Text(&self.s.run_id)) }
                "\n" style { (PreEscaped(CSS)) }
                "\n"
            }
        }
    }

    fn header(&self) -> Markup {
        let (s, lang) = (self.s, self.lang);
        let (class, status) = match s.status {
            Some(st) => run_status(st, lang),
            None => ("incomplete", t!(in lang; "incomplete")),
        };
        let time =
            |t: Option<crate::manifest::Timestamp>| t.map_or("?".to_string(), |t| t.to_string());
        html! {
            header {
                "\n"
                h1 {
                    (t!(in lang; "Run")) " " code { (Text(&s.run_id)) } " "
                    span class={ "badge " (class) } id="run-status" { (status) }
                }
                "\n"
                @if s.status.is_none() {
                    p class="reason" { (t!(in lang; "This run has no manifest.json: it was killed or is still running. What follows is read from its records.")) }
                    "\n"
                }
                @if let Some(r) = &s.reason {
                    p class="reason" { (t!(in lang; "Stopped early")) ": " (Text(r)) }
                    "\n"
                }
                p class="meta" {
                    (t!(in lang; "started")) " " b { (Text(&time(s.started_at))) }
                    " · " (t!(in lang; "finished")) " " b { (Text(&time(s.finished_at))) }
                    @if let Some(sh) = &s.shard {
                        " · " (t!(in lang; "shard")) " " b { (Text(sh)) }
                    }
                }
                "\n"
                (self.what_ran())
                @if let Some(c) = &s.command {
                    p class="meta" { (t!(in lang; "command")) " " code { (Text(c)) } }
                    "\n"
                }
            }
            "\n"
        }
    }

    /// The skills, models and server of the run, when known.
    fn what_ran(&self) -> Markup {
        let (run, s, lang) = (self.run, self.s, self.lang);
        let m = run.manifest.as_ref();
        let skills: BTreeSet<&str> = run.records.iter().map(|r| r.skill.as_str()).collect();
        let mut models: BTreeSet<&str> = run
            .records
            .iter()
            .map(|r| r.served_model.as_deref().unwrap_or(r.model.as_str()))
            .filter(|m| !m.is_empty())
            .collect();
        if let Some(served) = m.and_then(|m| m.served_model.as_deref()) {
            models.insert(served);
        }
        if let Some(asked) = s.model.as_ref().map(|m| m.asked.as_str()) {
            models.insert(asked);
        }
        let runs = s.model.as_ref().and_then(|m| m.runs.as_deref());
        let url = m.and_then(|m| m.base_url.as_deref());
        if skills.is_empty() && models.is_empty() && runs.is_none() && url.is_none() {
            return html! {};
        }
        let list = |set: &BTreeSet<&str>| {
            html! {
                @for (i, x) in set.iter().enumerate() {
                    @if i > 0 { ", " }
                    b { (Text(x)) }
                }
            }
        };
        html! {
            p class="meta" {
                @if !skills.is_empty() { (t!(in lang; "skill")) " " (list(&skills)) }
                @if !models.is_empty() { " · " (t!(in lang; "model")) " " (list(&models)) }
                // A local server answers to the name zhi asks for, whatever it runs: say
                // what it runs.
                @if let Some(runs) = runs {
                    " " (around(&t!(in lang; "(the server runs {model})", model = MARK), html! { b { (Text(runs)) } }))
                }
                @if let Some(url) = url { " · API " code { (Text(url)) } }
            }
            "\n"
        }
    }

    fn tiles(&self) -> Markup {
        let (s, lang) = (self.s, self.lang);
        let c = &s.counts;
        let wall = wall_ms(s.started_at, s.finished_at);
        let bad = |n: u64| if n > 0 { "bad" } else { "" };
        let tiles: [(String, String, &str); 10] = [
            (number(c.planned), t!(in lang; "planned"), ""),
            (number(c.succeeded), t!(in lang; "succeeded"), ""),
            (
                number(c.doubted),
                t!(in lang; "doubted"),
                if c.doubted > 0 { "doubt" } else { "" },
            ),
            (number(c.failed), t!(in lang; "failed"), bad(c.failed)),
            (number(c.cached), t!(in lang; "cached"), ""),
            (number(c.skipped), t!(in lang; "skipped"), ""),
            (
                number(c.cancelled),
                t!(in lang; "cancelled"),
                bad(c.cancelled),
            ),
            (number(s.tokens.total()), t!(in lang; "tokens"), ""),
            (number(s.requests), t!(in lang; "requests"), ""),
            (
                wall.map_or_else(|| "?".into(), |ms| duration(ms, lang)),
                t!(in lang; "wall time"),
                "",
            ),
        ];
        // Escalations and cost, in the words of the summary and `manifest show`.
        let escalation: Vec<String> = summary::doubts_line(&s.doubts, lang)
            .into_iter()
            .chain(summary::escalation_and_cost(s, lang))
            .collect::<Vec<_>>()
            .iter()
            .map(|l| l.trim().to_string())
            .collect();
        html! {
            section class="tiles" id="counts" {
                "\n"
                @for (value, label, class) in &tiles {
                    div class={ "tile " (class) } { b { (value) } span { (label) } }
                    "\n"
                }
            }
            "\n"
            p class="meta" {
                (t!(in lang; "prompt tokens")) " " (number(s.tokens.prompt)) " · "
                (t!(in lang; "completion tokens")) " " (number(s.tokens.completion)) " · "
                (t!(in lang; "job time, summed")) " " (duration(s.job_time_ms, lang))
            }
            "\n"
            @if !escalation.is_empty() {
                p class="meta" id="escalation" { (Text(&escalation.join(" · "))) }
                "\n"
            }
        }
    }

    /// What failed, first and in red: kinds with their counts, then each failed job with its
    /// message and its transcript.
    fn failures(&self) -> Markup {
        let (s, lang) = (self.s, self.lang);
        if s.failures.is_empty() {
            return html! {
                p class="allok" id="failures" { "✓ " (t!(in lang; "No job failed.")) }
                "\n"
            };
        }
        let n = s.failures.len();
        let heading = if n == 1 {
            t!(in lang; "1 job failed")
        } else {
            t!(in lang; "{n} jobs failed", n = number(n as u64))
        };
        html! {
            section class="failures" id="failures" {
                "\n" h2 { (heading) } "\n"
                p {
                    @for (kind, count) in &s.failures_by_kind {
                        span class="kind" { (Text(kind)) } " × " (number(*count)) "\u{a0} "
                    }
                }
                "\n"
                div class="scroll" {
                    table {
                        "\n"
                        thead { tr {
                            th { (t!(in lang; "File")) } th { (t!(in lang; "Error")) }
                            th { (t!(in lang; "Message")) } th {}
                        } }
                        "\n"
                        tbody {
                            "\n"
                            @for f in s.failures.iter().take(FAILURES_LISTED) {
                                (self.failure(f)) "\n"
                            }
                        }
                        "\n"
                    }
                }
                "\n"
                @if n > FAILURES_LISTED {
                    p { (t!(in lang;
                        "… and {n} more failed jobs: they are first in the table of jobs below.",
                        n = number((n - FAILURES_LISTED) as u64)
                    )) }
                    "\n"
                }
            }
            "\n"
        }
    }

    fn failure(&self, f: &JobLine) -> Markup {
        let lang = self.lang;
        let transcript = f.transcript.as_deref().and_then(|t| self.links.href(t));
        let kept = self
            .links
            .href(&format!(".zhi/failed/{}/{}", self.s.run_id, f.job_id));
        html! {
            tr {
                td class="file" { (self.file_cell(&f.skill, &f.input)) }
                td { span class="kind" { (Text(f.error_kind.as_deref().unwrap_or("unknown"))) } }
                td class="msg" { (Text(&clip(f.error_message.as_deref().unwrap_or(""), MESSAGE_IN_LIST))) }
                td class="links" {
                    @if let Some(h) = transcript { a href=(h) { (t!(in lang; "transcript")) } }
                    @if let Some(h) = kept { " " a href={ (h) "/" } { (t!(in lang; "kept files")) } }
                }
            }
        }
    }

    /// The job's file, with its skill when the run had several.
    fn file_cell(&self, skill: &str, input: &str) -> Markup {
        html! {
            @if self.several_skills { span class="skill" { (Text(skill)) } }
            (Text(input))
        }
    }

    fn charts(&self) -> Markup {
        let (run, lang) = (self.run, self.lang);
        let ran: Vec<&JobRecord> = run.records.iter().filter(|r| r.status.ran()).collect();
        let title = html! { h2 { (t!(in lang; "Durations and tokens")) } "\n" };
        if ran.is_empty() {
            return html! {
                (title)
                p class="muted" { (t!(in lang; "No job ran now: every job was cached or skipped.")) }
                "\n"
            };
        }
        let per_job = ran.len() <= chart::PER_JOB;
        let samples = |value: fn(&JobRecord) -> u64| -> Vec<Sample> {
            ran.iter()
                .map(|r| Sample {
                    label: &r.input,
                    value: value(r),
                    status: r.shown(),
                })
                .collect()
        };
        let (d_title, t_title) = if per_job {
            (
                t!(in lang; "Duration of each job"),
                t!(in lang; "Tokens of each job"),
            )
        } else {
            (
                t!(in lang; "Jobs by duration"),
                t!(in lang; "Jobs by tokens spent"),
            )
        };
        let durations = samples(|r| r.duration_ms);
        let tokens = samples(|r| r.tokens.total());
        let d_svg = chart::chart(&durations, &|ms| duration(ms, lang), &d_title, lang);
        let t_svg = chart::chart(&tokens, &number, &t_title, lang);
        let note = self.chart_note(&ran, per_job);
        html! {
            (title)
            section class="charts" id="charts" {
                "\n"
                figure id="chart-durations" { figcaption { (d_title) } (d_svg) p { (note) } }
                "\n"
                figure id="chart-tokens" { figcaption { (t_title) } (t_svg) p { (note) } }
                "\n"
            }
            "\n"
        }
    }

    /// The legend under a chart, and what it leaves out.
    fn chart_note(&self, ran: &[&JobRecord], per_job: bool) -> Markup {
        let lang = self.lang;
        let skipped = self.run.records.len() - ran.len();
        html! {
            @for (class, st) in chart::CLASSES.into_iter().zip([
                ShownStatus::Succeeded,
                ShownStatus::Doubted,
                ShownStatus::Failed,
                ShownStatus::Cancelled,
            ]) {
                @if ran.iter().any(|r| r.shown() == st) {
                    span class={ "sw " (class) } {} (status_label(st, lang))
                }
            }
            @if !per_job { " · " (t!(in lang; "each column counts the jobs in one range")) }
            @if skipped > 0 {
                (t!(in lang; " · {n} cached or skipped jobs not charted", n = number(skipped as u64)))
            }
        }
    }

    fn table(&self) -> Markup {
        let (run, lang) = (self.run, self.lang);
        html! {
            h2 { (t!(in lang; "Jobs")) " (" (number(run.records.len() as u64)) ")" } "\n"
            p class="muted" id="sort-hint" hidden {
                (t!(in lang; "Click a column header to sort by it; click again for the other way."))
            }
            "\n"
            table id="jobs" data-sorted="status:asc" {
                "\n"
                thead { tr {
                    @for c in COLUMNS {
                        // Status sorts failures first; the page starts in that order.
                        @let first = if c.key == "status" { "asc" } else if c.numeric { "desc" } else { "asc" };
                        th class=[c.quantity.then_some("num")] data-key=(c.key)
                            data-type=(if c.numeric { "num" } else { "text" }) data-first=(first)
                            aria-sort=[(c.key == "status").then_some("ascending")] {
                            ((c.title)(lang))
                        }
                    }
                    th { (t!(in lang; "Transcript")) }
                } }
                "\n"
                tbody {
                    "\n"
                    @for i in table_order(&run.records) { (self.row(i, &run.records[i])) "\n" }
                }
                "\n"
            }
            "\n"
        }
    }

    fn row(&self, i: usize, r: &JobRecord) -> Markup {
        let (shown, lang) = (r.shown(), self.lang);
        let st = shown.as_str();
        let tokens_said = format!(
            "{} {} · {} {}",
            t!(in lang; "prompt"),
            number(r.tokens.prompt),
            t!(in lang; "completion"),
            number(r.tokens.completion)
        );
        html! {
            tr data-i=(i) class=(st) {
                td data-v=(status_rank(shown)) {
                    span class={ "badge " (st) } { (status_label(shown, lang)) }
                }
                td class="file" { (self.file_cell(&r.skill, &r.input)) }
                td class="num" data-v=(r.duration_ms) {
                    @if r.status.ran() { (duration(r.duration_ms, lang)) }
                }
                td class="num" { (r.requests) }
                td class="num" data-v=(r.tokens.total()) title=(tokens_said) { (number(r.tokens.total())) }
                td data-v=(r.outputs.len()) { (self.outputs(r)) }
                td class="err" {
                    @if let Some(e) = &r.error {
                        span class="kind" { (Text(e.kind.as_str())) } " "
                        span class="msg" { (Text(&clip(e.reason(), MESSAGE_IN_TABLE))) }
                    }
                    // How the job read its input, when a person should know (pages with too
                    // little text).
                    @for w in &r.warnings {
                        div class="warn" { "⚠ " (Text(&clip(w, MESSAGE_IN_TABLE))) }
                    }
                    // What zhi doubts of its outputs, in words.
                    @if !r.doubts.is_empty() {
                        div class="warn" { "? " (Text(&clip(&crate::manifest::doubts_in_words(&r.doubts, lang), MESSAGE_IN_TABLE))) }
                    }
                }
                td {
                    @if let Some(h) = r.transcript.as_deref().and_then(|t| self.links.href(t)) {
                        a href=(h) { "jsonl" }
                    }
                }
            }
        }
    }

    /// A job's outputs, each linked when it is still there.
    fn outputs(&self, r: &JobRecord) -> Markup {
        html! {
            @for (k, o) in r.outputs.iter().enumerate() {
                @if k > 0 { br; }
                // Within the job's folder, the file's own name says enough.
                @let name = Path::new(&o.path)
                    .strip_prefix(&r.output_dir)
                    .ok()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map_or_else(|| o.path.clone(), |p| p.to_string_lossy().into_owned());
                @match self.links.href(&o.path) {
                    Some(h) => {
                        a href=(h) title=(Text(&o.path)) { (Text(&name)) }
                    }
                    None => {
                        span class="missing" title=(t!(in self.lang; "not there now")) { (Text(&name)) }
                    }
                }
            }
        }
    }

    fn footer(&self) -> Markup {
        let (s, lang) = (self.s, self.lang);
        html! {
            footer {
                "\n"
                p {
                    (t!(in lang; "Written by")) " zhi " (env!("CARGO_PKG_VERSION")) " · "
                    (t!(in lang; "records")) " "
                    span class="mono" { (Text(&s.results().display().to_string())) }
                    @if s.torn_lines > 0 {
                        " · " (t!(in lang;
                            "{n} torn line(s) of results.jsonl ignored (a crash mid-write)",
                            n = s.torn_lines
                        ))
                    }
                }
                "\n"
            }
            "\n"
            script { (PreEscaped(SCRIPT)) }
        }
    }
}
