//! Manual pages for the extraction bench (`scripts/fetch-manpages.sh`): short English and
//! Simplified Chinese pages nobody here wrote, rendered as text, each with its own NAME line as
//! the truth (`command`, `section`, `summary`). Here: the pages as the script left them, a
//! second reading of each page's NAME from its rendered text (so a truth the script misread is
//! caught before it is scored), and the comparison of an answer's cell with the truth.

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use unicode_normalization::UnicodeNormalization;

/// One rendered page and the truth the script parsed from its roff source.
pub struct Page {
    /// `en-001.txt`, `zh-001.txt`: the file name says nothing of the page.
    pub file: String,
    pub text: String,
    /// `command`, `section`, `summary`: the fields scored.
    pub truth: Map<String, Value>,
    /// `en` or `zh`.
    pub lang: String,
}

/// The fields of the truth that are scored, in the schema's order.
pub const FIELDS: [&str; 3] = ["command", "section", "summary"];

/// The folder `scripts/fetch-manpages.sh` writes by default.
pub fn dir() -> PathBuf {
    super::docs_dir().join("manpages")
}

/// The first `n` pages of `truth.jsonl` (all when `None`), each checked against its rendered
/// NAME line; `None` with a note when the script has not been run.
pub fn pages(n: Option<usize>) -> Option<Vec<Page>> {
    let pages = read(&dir(), n, &FIELDS, "scripts/fetch-manpages.sh")?;
    for p in &pages {
        let (command, summary) = (
            p.truth["command"].as_str().unwrap_or(""),
            p.truth["summary"].as_str().unwrap_or(""),
        );
        match rendered_name(&p.text) {
            Some((c, s)) if same_text(&c, command) && same_text(&s, summary) => {}
            other => panic!(
                "{}: the truth says {command} - {summary}, the page {other:?}",
                p.file
            ),
        }
    }
    Some(pages)
}

/// The first `n` documents of `dir`'s `truth.jsonl` (all when `None`) with the truth of
/// `fields`; `None` with a note naming the `script` that fetches them when there are none.
pub fn read(dir: &Path, n: Option<usize>, fields: &[&str], script: &str) -> Option<Vec<Page>> {
    let Ok(truth) = std::fs::read_to_string(dir.join("truth.jsonl")) else {
        eprintln!(
            "note: no documents in {} ({script}); the set is skipped",
            dir.display()
        );
        return None;
    };
    let mut pages = Vec::new();
    for line in truth.lines().filter(|l| !l.trim().is_empty()) {
        if n.is_some_and(|n| pages.len() >= n) {
            break;
        }
        let row: Map<String, Value> = serde_json::from_str(line).expect("a truth line");
        let file = row["file"].as_str().expect("a truth line names its file");
        let text = std::fs::read_to_string(dir.join(file)).expect("a document of the truth");
        let truth: Map<String, Value> = fields
            .iter()
            .map(|f| (f.to_string(), row[*f].clone()))
            .collect();
        pages.push(Page {
            file: file.to_string(),
            text,
            lang: row["lang"].as_str().unwrap_or("en").to_string(),
            truth,
        });
    }
    Some(pages)
}

/// `(command, summary)` of a rendered page's NAME section: the lines under the heading `NAME`
/// (or `名称`, `名字`, `NAME(名称)`…) up to the next heading, joined, split at the first ` - `.
pub fn rendered_name(text: &str) -> Option<(String, String)> {
    let mut lines = text.lines();
    lines.find(|l| {
        let t = l.trim();
        !l.starts_with(' ')
            && (t.starts_with("NAME") || t.starts_with("名称") || t.starts_with("名字"))
    })?;
    let body: Vec<&str> = lines
        .take_while(|l| l.trim().is_empty() || l.starts_with(' '))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let joined = body.join(" ");
    let (command, summary) = joined.split_once(" - ")?;
    Some((command.trim().to_string(), summary.trim().to_string()))
}

/// Two texts alike but for white space (a rendering wraps long lines where it likes).
fn same_text(a: &str, b: &str) -> bool {
    let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    squeeze(a) == squeeze(b)
}

/// Whether an answer's value for `field` is the page's: both sides normalised (NFKC, so
/// full-width is half-width; lower case; white space runs as one space; a trailing period
/// dropped). A section is compared as text (`"1"` = `1`), and a section with a suffix
/// (`3const`, `3tk`) is also right as its number alone (`3`), which is what the schema asks
/// for. A summary is also right when both sides agree once their punctuation and spaces are
/// dropped; a source (the copyright set's URL) without its trailing slash. The copyright set
/// compares its cells the same way.
pub fn cell_right(field: &str, got: &Value, want: &Value) -> bool {
    let (got, want) = (cell_text(got), cell_text(want));
    if got.is_empty() {
        return want.is_empty();
    }
    if got == want {
        return true;
    }
    match field {
        "section" => {
            let number: String = want.chars().take_while(char::is_ascii_digit).collect();
            !number.is_empty() && got == number
        }
        "source" => got.trim_end_matches('/') == want.trim_end_matches('/'),
        "summary" => {
            let bare = |s: &str| {
                s.chars()
                    .filter(|c| c.is_alphanumeric())
                    .collect::<String>()
            };
            let b = bare(&got);
            !b.is_empty() && b == bare(&want)
        }
        _ => false,
    }
}

/// A cell as the comparison reads it: a string's text, a number as written, null as nothing.
fn cell_text(v: &Value) -> String {
    let raw = match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let s: String = raw.nfkc().collect::<String>().to_lowercase();
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    s.strip_suffix('.')
        .or_else(|| s.strip_suffix('。'))
        .unwrap_or(&s)
        .trim_end()
        .to_string()
}

/// The checks of the NAME reading and the comparison (`cargo test --bench ladder`).
pub fn check() {
    use serde_json::json;
    let en = "LS(1)        User Commands        LS(1)\n\nNAME\n       ls - list directory \
              contents\n\nSYNOPSIS\n       ls [OPTION]... [FILE]...\n";
    assert_eq!(
        rendered_name(en),
        Some(("ls".into(), "list directory contents".into()))
    );
    let zh =
        "LS(1)   用户命令   LS(1)\n\n名称\n       ls - 列出目录内容\n\n概述\n       ls [选项]...\n";
    assert_eq!(
        rendered_name(zh),
        Some(("ls".into(), "列出目录内容".into()))
    );
    let wrapped = "X(7)\n\nNAME(名称)\n       uri - uniform resource identifier (URI), including a URL\n       or URN\n\nSYNOPSIS\n";
    assert_eq!(
        rendered_name(wrapped),
        Some((
            "uri".into(),
            "uniform resource identifier (URI), including a URL or URN".into()
        ))
    );
    assert_eq!(rendered_name("NAME\n       nothing to split\n"), None);
    assert_eq!(rendered_name("SYNOPSIS\n       ls - list\n"), None);

    let r = |f: &str, got: Value, want: Value| cell_right(f, &got, &want);
    assert!(r("command", json!("LS"), json!("ls")));
    assert!(r("command", json!("ｌｓ"), json!("ls")));
    assert!(!r("command", json!("ls -l"), json!("ls")));
    assert!(!r("command", Value::Null, json!("ls")));
    assert!(r("section", json!(1), json!("1")));
    assert!(r("section", json!("1"), json!("1")));
    assert!(r("section", json!("3"), json!("3const")));
    assert!(r("section", json!("3const"), json!("3const")));
    assert!(!r("section", json!("3"), json!("1")));
    assert!(!r("section", json!("31"), json!("3tk")));
    assert!(r(
        "summary",
        json!("List  directory contents."),
        json!("list directory contents")
    ));
    assert!(r("summary", json!("列出目录内容。"), json!("列出目录内容")));
    assert!(r(
        "summary",
        json!("bind a name to a socket"),
        json!("bind a name to a socket.")
    ));
    assert!(r(
        "summary",
        json!("将一个名字和一个套接字绑定到一起（赋一个名字给一个套接字）"),
        json!("将一个名字和一个套接字绑定到一起(赋一个名字给一个套接字)")
    ));
    assert!(r("summary", json!("ComboBox组件"), json!("ComboBox 组件")));
    assert!(!r(
        "summary",
        json!("list directory"),
        json!("list directory contents")
    ));
    assert!(!r("summary", json!("."), json!("list directory contents")));
    assert!(!r("command", json!(""), json!("ls")));
    assert!(r(
        "source",
        json!("https://x.org/a/"),
        json!("https://x.org/a")
    ));
    assert!(!r(
        "source",
        json!("https://x.org"),
        json!("https://x.org/a")
    ));
    assert!(r("license", json!("BSD-3-Clause"), json!("BSD-3-clause")));
}
