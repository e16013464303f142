//! References to the contract in `docs/` must resolve for anyone who clones the repository.
//!
//! Comments in the code, the README and the docs pages themselves point at sections of the
//! contract as `docs/<page>.md#<anchor>`. This test finds every such reference (in Rust files,
//! only in comments: test fixtures in strings have such names too) and fails, naming each one, when
//! the page does not exist or has no heading with that anchor. Anchors are GitHub's: the
//! heading in lowercase, spaces as `-`, punctuation other than `-` and `_` dropped, a repeated
//! heading numbered `-1`, `-2`, …. Relative Markdown links in the docs pages and the READMEs
//! (`cli.md#inputs`, `../README.md`, `#retries`) are checked the same way.
//!
//! It also fails when a reference to the old, unpublished specification is left anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The folders scanned (recursively) and the files scanned on their own.
const FOLDERS: &[&str] = &[
    "src", "tests", "benches", "examples", "scripts", ".ci", "docs",
];
const FILES: &[&str] = &["README.md", "skills/README.md"];
/// Markdown pages whose relative links are checked besides the docs pages.
const MARKDOWN_LINKS_CHECKED: &[&str] = &["README.md", "skills/README.md"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every text file under the scanned places, as (path relative to the root, text).
fn scanned_files() -> Vec<(String, String)> {
    let root = root();
    let mut paths: Vec<PathBuf> = FILES.iter().map(|f| root.join(f)).collect();
    for folder in FOLDERS {
        walk(&root.join(folder), &mut paths);
    }
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            let rel = p
                .strip_prefix(&root)
                .ok()?
                .to_string_lossy()
                .replace('\\', "/");
            Some((rel, text))
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&path, out);
        } else if kind.is_file() {
            out.push(path);
        }
    }
}

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown page's headings (outside code blocks), repeats numbered.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut in_code = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let text = line[hashes..].trim().trim_end_matches('#').trim();
        let base = slug(text);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// A reference found in a file: where, and what it names.
struct Reference {
    at: String,
    /// The page, relative to the repository root (`docs/cli.md`).
    page: String,
    anchor: Option<String>,
    /// As written, for the message.
    written: String,
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '"' | '\'' | '\\')
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

fn is_anchor_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-')
}

/// `docs/<page>.md` and `docs/<page>.md#<anchor>` in `text`, not as the tail of a longer path
/// or the start of a quoted string.
fn docs_references(text: &str, at: &str, out: &mut Vec<Reference>) {
    let mut from = 0;
    while let Some(i) = text[from..].find("docs/") {
        let start = from + i;
        from = start + 5;
        if text[..start].chars().next_back().is_some_and(is_path_char) {
            continue;
        }
        let rest = &text[start + 5..];
        let name_len = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
        let name = rest[..name_len].trim_end_matches('.');
        if !name.ends_with(".md") || name.len() == 3 {
            continue;
        }
        let after = &rest[name.len()..];
        let anchor = after.strip_prefix('#').map(|a| {
            let len = a.find(|c: char| !is_anchor_char(c)).unwrap_or(a.len());
            a[..len].to_string()
        });
        let written = match &anchor {
            Some(a) => format!("docs/{name}#{a}"),
            None => format!("docs/{name}"),
        };
        out.push(Reference {
            at: at.to_string(),
            page: format!("docs/{name}"),
            anchor,
            written,
        });
    }
}

/// Markdown links of a docs page: `](target)` with a relative target, resolved against the
/// page's folder; `](#anchor)` is the page itself.
fn page_links(page: &str, text: &str, out: &mut Vec<Reference>) {
    let dir = Path::new(page).parent().unwrap_or(Path::new(""));
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            rest = &rest[end..];
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a.to_string())),
                None => (target, None),
            };
            let resolved = if file.is_empty() {
                page.to_string()
            } else {
                normalize(&dir.join(file))
            };
            out.push(Reference {
                at: format!("{page}:{}", n + 1),
                page: resolved,
                anchor,
                written: target.to_string(),
            });
        }
    }
}

/// `docs/../README.md` → `README.md`.
fn normalize(p: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::CurDir => {}
            other => parts.push(other.as_os_str().to_string_lossy().into_owned()),
        }
    }
    parts.join("/")
}

/// Every broken reference in `files`, as one line each.
fn broken(files: &[(String, String)]) -> Vec<String> {
    let mut refs = Vec::new();
    for (path, text) in files {
        for (n, line) in text.lines().enumerate() {
            let at = format!("{path}:{}", n + 1);
            // In Rust, only comments: strings name fixture files in a `docs` folder too.
            let scanned = if path.ends_with(".rs") {
                match line.find("//") {
                    Some(i) => &line[i..],
                    None => continue,
                }
            } else {
                line
            };
            docs_references(scanned, &at, &mut refs);
        }
        if MARKDOWN_LINKS_CHECKED.contains(&path.as_str())
            || (path.starts_with("docs/") && path.ends_with(".md"))
        {
            page_links(path, text, &mut refs);
        }
    }
    let root = root();
    let mut anchor_cache: BTreeMap<String, Option<BTreeSet<String>>> = BTreeMap::new();
    let mut problems = Vec::new();
    for r in refs {
        let target = root.join(&r.page);
        if !target.is_file() {
            problems.push(format!("{}: {}: no such file {}", r.at, r.written, r.page));
            continue;
        }
        let Some(anchor) = &r.anchor else { continue };
        if !r.page.ends_with(".md") {
            continue;
        }
        let known = anchor_cache
            .entry(r.page.clone())
            .or_insert_with(|| std::fs::read_to_string(&target).ok().map(|t| anchors(&t)));
        match known {
            Some(set) if set.contains(anchor.as_str()) => {}
            Some(set) => problems.push(format!(
                "{}: {}: {} has no heading #{anchor} (its anchors: {})",
                r.at,
                r.written,
                r.page,
                set.iter().cloned().collect::<Vec<_>>().join(", ")
            )),
            None => problems.push(format!("{}: {}: cannot read {}", r.at, r.written, r.page)),
        }
    }
    problems
}

#[test]
fn every_docs_reference_names_a_page_and_heading_that_exist() {
    let files = scanned_files();
    assert!(
        files.iter().any(|(p, _)| p == "docs/README.md"),
        "docs/README.md, the contract's index, is missing"
    );
    let mut count = 0;
    for (path, text) in &files {
        let mut refs = Vec::new();
        for line in text.lines() {
            docs_references(line, path, &mut refs);
        }
        count += refs.len();
    }
    assert!(
        count > 50,
        "only {count} references to docs/ found: is the scan broken?"
    );
    let problems = broken(&files);
    assert!(
        problems.is_empty(),
        "{} broken reference(s) to the docs:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn no_reference_to_the_old_specification_remains() {
    // Spelt in two parts so that this file does not find itself.
    let needles = [concat!("SPEC", " §"), concat!("SPEC", ".md")];
    let hits: Vec<String> = scanned_files()
        .iter()
        .flat_map(|(path, text)| {
            text.lines()
                .enumerate()
                .filter(move |(_, line)| needles.iter().any(|needle| line.contains(needle)))
                .map(move |(n, line)| format!("{path}:{}: {}", n + 1, line.trim()))
        })
        .collect();
    assert!(
        hits.is_empty(),
        "references to a specification the repository does not have; point them at docs/ \
         instead:\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_checker_knows_a_broken_reference_when_it_sees_one() {
    let files = vec![
        (
            "src/x.rs".to_string(),
            // Spelt in parts so that the scan of this very file does not find them.
            concat!(
                "// see docs",
                "/cli.md#no-such-heading and docs",
                "/no-such-page.md\n",
                "let fixture = \"docs",
                "/a.md\"; // docs",
                "/cli.md#inputs is fine",
            )
            .to_string(),
        ),
        (
            "docs/cli.md".to_string(),
            "[ok](#inputs) [bad](#nowhere) [bad page](nowhere.md)".to_string(),
        ),
    ];
    let problems = broken(&files);
    let text = problems.join("\n");
    assert_eq!(problems.len(), 4, "{text}");
    assert!(text.contains("docs/cli.md#no-such-heading"), "{text}");
    assert!(text.contains("no such file docs/no-such-page.md"), "{text}");
    assert!(text.contains("#nowhere"), "{text}");
    assert!(text.contains("no such file docs/nowhere.md"), "{text}");
}

#[test]
fn anchors_are_githubs() {
    let page = "# Title\n## Agent Skills (SKILL.md)\n## file_read and file_list\n```\n# not a heading\n```\n## Notes\n## Notes\n";
    let a = anchors(page);
    for want in [
        "title",
        "agent-skills-skillmd",
        "file_read-and-file_list",
        "notes",
        "notes-1",
    ] {
        assert!(a.contains(want), "{want} missing from {a:?}");
    }
    assert!(!a.contains("not-a-heading"));
}
