//! `zhi report`: one run as a page a person opens in a browser — counts, what failed and why,
//! charts of durations and tokens, a sortable table of every job, links to outputs and
//! transcripts (docs/display.md#the-run-report).
//!
//! The page is one file that works offline and keeps working when copied next to the run: CSS,
//! script and charts are inline (the charts are SVG drawn here, so they show with scripts off;
//! the script only sorts), and its Content-Security-Policy lets it load nothing at all. Text
//! from records (file names, a server's messages, model names) is data, never markup: the
//! page's structure is maud markup ([`page`]), which escapes every value spliced into it, and
//! record text goes in as [`html::Text`]. Rendering only reads; the command writes the file.

mod chart;
mod html;
mod page;

use crate::i18n::Lang;
use crate::manifest::Timestamp;
use crate::manifest::merge::LoadedRun;
use crate::manifest::summary;
use crate::manifest::{JobRecord, RunStatus, ShownStatus};
use std::path::{Path, PathBuf};

/// The most failed jobs listed at the top; every one of them is in the table as well.
const FAILURES_LISTED: usize = 200;
/// Characters of an error message shown in the table (the failures list shows more).
const MESSAGE_IN_TABLE: usize = 240;
const MESSAGE_IN_LIST: usize = 2_000;

/// Where a run's files are, seen from the folder the report is written into, so its links
/// are relative and survive moving the output folder with the report in it.
pub(crate) struct Links {
    /// The output folder and the path to it from the report's folder.
    output: Option<(PathBuf, PathBuf)>,
}

impl Links {
    /// Links for `run`'s page written into `report_dir` (an existing folder). The output
    /// folder is the one holding the run (`<OUT>/.zhi/runs/<id>`), else the one its manifest
    /// names; without either, the page names files without linking them.
    pub(crate) fn new(run: &LoadedRun, report_dir: &Path) -> Links {
        let holding = match run.path.parent() {
            Some(runs) if runs.ends_with(Path::new(".zhi").join("runs")) => {
                run.path.ancestors().nth(3).map(Path::to_path_buf)
            }
            _ => None,
        };
        let named = run.manifest.as_ref().map(|m| PathBuf::from(&m.output_dir));
        let output = holding
            .into_iter()
            .chain(named)
            .find_map(|p| std::fs::canonicalize(p).ok().filter(|p| p.is_dir()));
        let from = std::fs::canonicalize(report_dir).ok();
        Links {
            output: match (output, from) {
                (Some(out), Some(from)) => {
                    let rel = html::relative(&from, &out);
                    Some((out, rel))
                }
                _ => None,
            },
        }
    }

    /// The link to `rel` (a path relative to the output folder, as records hold them), when
    /// that file or folder is there.
    fn href(&self, rel: &str) -> Option<String> {
        let (out, to_out) = self.output.as_ref()?;
        let rel = Path::new(rel);
        if !html::is_plain_relative(rel) || !out.join(rel).exists() {
            return None;
        }
        Some(html::href(&to_out.join(rel)))
    }
}

/// The page for one run, in `lang`.
pub(crate) fn render(run: &LoadedRun, links: &Links, lang: Lang) -> String {
    let s = summary::summarize(run);
    page::Page {
        run,
        s: &s,
        lang,
        links,
        several_skills: run.records.iter().any(|r| r.skill != run.records[0].skill),
    }
    .render()
}

/// Where a job stands in the table's first order: failures first, then what did not finish,
/// then what is doubted, then the rest.
fn status_rank(s: ShownStatus) -> u8 {
    match s {
        ShownStatus::Failed => 0,
        ShownStatus::Cancelled => 1,
        ShownStatus::Doubted => 2,
        ShownStatus::Succeeded => 3,
        ShownStatus::Cached => 4,
        ShownStatus::Skipped => 5,
    }
}

/// Record indexes in the table's first order: by [`status_rank`], then as recorded. The
/// script's sort by status gives the same order, so the page reads the same with it or
/// without it.
fn table_order(records: &[JobRecord]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by_key(|&i| status_rank(records[i].shown()));
    order
}

/// `12,345`.
fn number(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration for people: `850 ms`, `12.3 s`, `4 min 05 s`, `2 h 03 min`.
fn duration(ms: u64, lang: Lang) -> String {
    let secs = ms / 1000;
    if ms < 1000 {
        t!(in lang; "{ms} ms", ms = ms)
    } else if ms < 60_000 {
        t!(in lang; "{s} s", s = format!("{:.1}", ms as f64 / 1000.0))
    } else if secs < 3600 {
        let (m, s) = (secs / 60, format!("{:02}", secs % 60));
        t!(in lang; "{m} min {s} s", m = m, s = s)
    } else {
        let (h, m) = (secs / 3600, format!("{:02}", secs % 3600 / 60));
        t!(in lang; "{h} h {m} min", h = h, m = m)
    }
}

fn status_label(s: ShownStatus, lang: Lang) -> String {
    match s {
        ShownStatus::Succeeded => t!(in lang; "succeeded"),
        ShownStatus::Doubted => t!(in lang; "doubted"),
        ShownStatus::Failed => t!(in lang; "failed"),
        ShownStatus::Cached => t!(in lang; "cached"),
        ShownStatus::Skipped => t!(in lang; "skipped"),
        ShownStatus::Cancelled => t!(in lang; "cancelled"),
    }
}

/// A run's status: its class in the page, and its words.
fn run_status(s: RunStatus, lang: Lang) -> (&'static str, String) {
    match s {
        RunStatus::Completed => ("completed", t!(in lang; "completed")),
        RunStatus::CompletedWithFailures => (
            "completed_with_failures",
            t!(in lang; "completed with failures"),
        ),
        RunStatus::Aborted => ("aborted", t!(in lang; "aborted")),
        RunStatus::Interrupted => ("interrupted", t!(in lang; "interrupted")),
    }
}

/// Wall time between two RFC 3339 times.
fn wall_ms(start: Option<Timestamp>, end: Option<Timestamp>) -> Option<u64> {
    Some(end?.millis_since(start?))
}

/// The style sheet: plain, legible, no web fonts (the CJK fonts people have installed).
const CSS: &str = r#"
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--head:#f6f8fa;--ok:#1a7f37;--fail:#cf222e;--failbg:#fff1f0;--cache:#0969da;--skip:#6e7781;--cancel:#9a6700;--doubt:#bc4c00}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC","Source Han Sans SC","WenQuanYi Micro Hei","PingFang SC","Microsoft YaHei",sans-serif;color:var(--fg);margin:0 auto;max-width:1240px;padding:20px 24px 40px}
h1{font-size:21px;margin:0 0 6px}
h2{font-size:16px;margin:26px 0 10px}
code,.mono{font-family:ui-monospace,SFMono-Regular,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px}
.meta{color:var(--muted);margin:2px 0}
.meta b{color:var(--fg);font-weight:600}
.reason{color:var(--fail);font-weight:600}
.tiles{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0 4px}
.tile{border:1px solid var(--line);border-radius:6px;padding:6px 14px;min-width:96px}
.tile b{display:block;font-size:21px;font-variant-numeric:tabular-nums}
.tile span{color:var(--muted);font-size:12px}
.tile.bad{border-color:var(--fail);background:var(--failbg)}
.tile.bad b{color:var(--fail)}
.badge{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;background:var(--skip);white-space:nowrap}
.badge.succeeded,.badge.completed{background:var(--ok)}
.badge.failed,.badge.completed_with_failures,.badge.aborted,.badge.incomplete{background:var(--fail)}
.badge.cached{background:var(--cache)}
.badge.doubted{background:var(--doubt)}
.tile.doubt{border-color:var(--doubt)}
.tile.doubt b{color:var(--doubt)}
.badge.cancelled,.badge.interrupted{background:var(--cancel)}
.failures{border:2px solid var(--fail);border-radius:8px;padding:2px 16px 12px;background:var(--failbg);margin-top:18px}
.failures h2{color:var(--fail);margin-top:12px}
.kind{font-family:ui-monospace,SFMono-Regular,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12px;background:#ffd8d3;color:#82071e;padding:1px 6px;border-radius:4px;white-space:nowrap}
.msg{white-space:pre-wrap;overflow-wrap:anywhere}
td.err{min-width:16em}
.allok{color:var(--ok);font-weight:600;margin-top:18px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--head);position:sticky;top:0;white-space:nowrap}
.failures th{background:#ffe4e1}
.scroll{max-height:26em;overflow:auto}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.file{min-width:13em;overflow-wrap:anywhere}
td.links{white-space:nowrap}
#jobs tr.failed td{background:var(--failbg)}
.skill{color:var(--muted);font-size:12px;margin-right:6px}
.missing{color:var(--muted)}
.warn{color:var(--cancel);font-size:12px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:16px}
figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:10px 12px}
figcaption{font-weight:600;margin-bottom:6px}
figure p{color:var(--muted);margin:4px 0 0;font-size:12px}
svg text{font-size:11px;fill:var(--muted)}
.b-succeeded{fill:var(--ok)}
.b-doubted{fill:var(--doubt)}
.b-failed{fill:var(--fail)}
.b-cancelled{fill:var(--cancel)}
.grid{stroke:var(--line)}
.axis{stroke:var(--muted)}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 4px 0 10px;vertical-align:-1px}
.sw.b-succeeded{background:var(--ok)}
.sw.b-doubted{background:var(--doubt)}
.sw.b-failed{background:var(--fail)}
.sw.b-cancelled{background:var(--cancel)}
th button{all:unset;cursor:pointer;font-weight:600}
th button:focus-visible{outline:2px solid var(--cache)}
th[aria-sort=ascending] button::after{content:" \25B2";font-size:10px}
th[aria-sort=descending] button::after{content:" \25BC";font-size:10px}
a{color:var(--cache)}
.muted{color:var(--muted)}
footer{margin-top:26px;color:var(--muted);font-size:12px}
"#;

/// The table's sorting; nothing else on the page needs a script. Clicking a column header
/// sorts by it (again: the other way); the order is kept in the address (`#sort=tokens:desc`),
/// so a link can open the page sorted. Ties keep the records' order. The hint that headers
/// sort is shown by the script, so a page without scripts does not promise it.
const SCRIPT: &str = r##"
(function () {
  "use strict";
  var table = document.getElementById("jobs");
  if (!table) return;
  var body = table.tBodies[0];
  var heads = table.tHead.rows[0].cells;
  var collator = new Intl.Collator(document.documentElement.lang, { numeric: true });
  function keyOf(row, i, numeric) {
    var cell = row.cells[i];
    var v = cell.getAttribute("data-v");
    if (v === null) v = cell.textContent;
    return numeric ? Number(v) : v;
  }
  function sortBy(i, dir) {
    var th = heads[i];
    var numeric = th.getAttribute("data-type") === "num";
    var keyed = Array.prototype.map.call(body.rows, function (row) {
      return { k: keyOf(row, i, numeric), n: Number(row.getAttribute("data-i")), row: row };
    });
    var sign = dir === "desc" ? -1 : 1;
    keyed.sort(function (a, b) {
      var c = numeric ? a.k - b.k : collator.compare(a.k, b.k);
      return c !== 0 ? sign * c : a.n - b.n;
    });
    var rows = document.createDocumentFragment();
    keyed.forEach(function (x) { rows.appendChild(x.row); });
    body.appendChild(rows);
    for (var j = 0; j < heads.length; j++) heads[j].removeAttribute("aria-sort");
    th.setAttribute("aria-sort", dir === "desc" ? "descending" : "ascending");
    table.setAttribute("data-sorted", th.getAttribute("data-key") + ":" + dir);
  }
  Array.prototype.forEach.call(heads, function (th, i) {
    if (!th.hasAttribute("data-key")) return;
    var button = document.createElement("button");
    button.type = "button";
    while (th.firstChild) button.appendChild(th.firstChild);
    th.appendChild(button);
    button.addEventListener("click", function () {
      var now = th.getAttribute("aria-sort");
      var dir = now === "ascending" ? "desc" : now === "descending" ? "asc" : th.getAttribute("data-first");
      sortBy(i, dir);
      try { history.replaceState(null, "", "#sort=" + th.getAttribute("data-key") + ":" + dir); } catch (e) {}
    });
  });
  var asked = /^#sort=([a-z]+)(?::(asc|desc))?$/.exec(location.hash);
  if (asked) {
    for (var i = 0; i < heads.length; i++) {
      if (heads[i].getAttribute("data-key") === asked[1]) {
        sortBy(i, asked[2] || heads[i].getAttribute("data-first"));
        break;
      }
    }
  }
  var hint = document.getElementById("sort-hint");
  if (hint) hint.hidden = false;
  table.setAttribute("data-sortable", "ready");
})();
"##;

/// `'sha256-…'` of an inline block, for the Content-Security-Policy.
fn csp_hash(body: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    let digest = sha2::Sha256::digest(body.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// A column of the jobs table: its key in `#sort=`, its header, and how it sorts.
struct Column {
    key: &'static str,
    /// Its header, in the page's language.
    title: fn(Lang) -> String,
    /// Sorted as numbers (from the cells' `data-v`), largest first on the first click.
    numeric: bool,
    /// A quantity, right-aligned.
    quantity: bool,
}

const COLUMNS: &[Column] = &[
    Column {
        key: "status",
        title: |lang| t!(in lang; "Status"),
        numeric: true,
        quantity: false,
    },
    Column {
        key: "file",
        title: |lang| t!(in lang; "File"),
        numeric: false,
        quantity: false,
    },
    Column {
        key: "duration",
        title: |lang| t!(in lang; "Duration"),
        numeric: true,
        quantity: true,
    },
    Column {
        key: "requests",
        title: |lang| t!(in lang; "Requests"),
        numeric: true,
        quantity: true,
    },
    Column {
        key: "tokens",
        title: |lang| t!(in lang; "Tokens"),
        numeric: true,
        quantity: true,
    },
    Column {
        key: "outputs",
        title: |lang| t!(in lang; "Outputs"),
        numeric: true,
        quantity: false,
    },
    Column {
        key: "error",
        title: |lang| t!(in lang; "Error"),
        numeric: false,
        quantity: false,
    },
];

/// At most `n` characters of `s`, with an ellipsis when cut.
fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorKind, JobError};
    use crate::manifest::Status;

    fn record(input: &str, status: Status, ms: u64) -> JobRecord {
        let mut r = JobRecord::new(&format!("id-{input}"), "summarize", input, status);
        r.duration_ms = ms;
        if status == Status::Failed {
            r.error = Some(JobError::new(ErrorKind::ApiError, "<b>bad</b> & \"worse\""));
        }
        r
    }

    fn run_of(records: Vec<JobRecord>) -> LoadedRun {
        LoadedRun {
            run_id: "20250101T000000.000Z".into(),
            path: PathBuf::from("/nonexistent/.zhi/runs/20250101T000000.000Z"),
            manifest: None,
            records,
            torn_lines: 0,
        }
    }

    fn no_links() -> Links {
        Links { output: None }
    }

    #[test]
    fn failures_come_first_then_the_records_order() {
        let records = vec![
            record("a", Status::Succeeded, 1),
            record("b", Status::Failed, 1),
            record("c", Status::Cached, 1),
            record("d", Status::Cancelled, 1),
            record("e", Status::Failed, 1),
            record("f", Status::Skipped, 1),
            record("g", Status::Succeeded, 1),
        ];
        let order: Vec<&str> = table_order(&records)
            .into_iter()
            .map(|i| records[i].input.as_str())
            .collect();
        assert_eq!(order, ["b", "e", "d", "a", "g", "c", "f"]);
    }

    #[test]
    fn the_page_is_escaped_and_in_the_language_asked() {
        let mut ok = record("ok.txt", Status::Succeeded, 800);
        ok.warnings = vec!["page 3: <i>little</i> text".into()];
        let run = run_of(vec![
            record("<script>alert(1)</script>.txt", Status::Failed, 1500),
            ok,
        ]);
        let en = render(&run, &no_links(), Lang::En);
        assert!(en.contains("<div class=\"warn\">⚠ page 3: &lt;i&gt;little&lt;/i&gt; text</div>"));
        assert!(en.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
        assert!(!en.contains("<script>alert"));
        assert!(en.contains("&lt;script&gt;alert(1)&lt;/script&gt;.txt"));
        assert!(en.contains("&lt;b&gt;bad&lt;/b&gt; &amp; &quot;worse&quot;"));
        assert!(en.contains("1 job failed"));
        assert!(en.contains(r#"<td data-v="0"><span class="badge failed">failed</span>"#));
        // The first row is the failure; the script would sort the same way.
        let first = en.split("<tr data-i=").nth(1).unwrap();
        assert!(first.starts_with("\"0\" class=\"failed\""), "{first}");
        // Without an output folder there is nothing to link to.
        assert!(!en.contains("href="));

        let zh = render(&run, &no_links(), Lang::Zh);
        assert!(zh.starts_with("<!DOCTYPE html>\n<html lang=\"zh\">"));
        assert!(zh.contains("1 个任务失败"));
        assert!(zh.contains("<th class=\"num\" data-key=\"duration\""));
        assert!(zh.contains(">耗时</th>"));
    }

    #[test]
    fn the_policy_allows_exactly_the_inline_style_and_script() {
        let page = render(&run_of(vec![]), &no_links(), Lang::En);
        assert!(page.contains(&format!("style-src {};", csp_hash(CSS))));
        assert!(page.contains(&format!("script-src {};", csp_hash(SCRIPT))));
        assert!(page.contains(&format!("<style>{CSS}</style>")));
        assert!(page.contains(&format!("<script>{SCRIPT}</script>")));
        assert!(page.contains("No job ran now"));
    }

    #[test]
    fn numbers_and_durations_read_well() {
        assert_eq!(number(0), "0");
        assert_eq!(number(999), "999");
        assert_eq!(number(1_000), "1,000");
        assert_eq!(number(12_345_678), "12,345,678");
        assert_eq!(duration(850, Lang::En), "850 ms");
        assert_eq!(duration(12_345, Lang::En), "12.3 s");
        assert_eq!(duration(245_000, Lang::En), "4 min 05 s");
        assert_eq!(duration(7_380_000, Lang::Zh), "2 小时 03 分");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("报告", 3), "报告");
    }
}
