//! Declared outputs decide success (SPEC §3): a job is done only when each file its skill
//! declares exists, is not empty and, for text, is not the input handed back.
//!
//! Small models claim work they did not do ("I wrote summary.md: …") and copy their input;
//! these checks are what keeps such a run from being recorded as a success.

use std::path::{Path, PathBuf};

/// Why a declared file does not count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    Missing,
    Empty,
    /// The text is the input document (or a piece of it) handed back.
    Copy,
    /// A claim to have written a file, not the file's content.
    Claim,
    /// The text goes round in circles: the same passages again and again, far more than in
    /// the input (a small model's loop).
    Loop,
    /// Not of the file's format (`.json` that does not parse).
    Invalid(String),
}

impl Problem {
    /// What a person (and the model, in its corrective turn) is told.
    pub fn describe(&self, file: &str) -> String {
        match self {
            Problem::Missing => format!("{file} was not written"),
            Problem::Empty => format!("{file} is empty"),
            Problem::Copy => format!(
                "{file} is a copy of the input, not the result asked for (if the document is already what was asked, e.g. in the target language, there is nothing to do)"
            ),
            Problem::Claim => {
                format!("{file} was not written: the model only said it had written it")
            }
            Problem::Invalid(why) => format!("{file} is not valid: {why}"),
            Problem::Loop => format!(
                "{file} repeats the same passages over and over (the model looped), not a usable result"
            ),
        }
    }
}

/// The file name of a declared output, or zhi's renamed variant of it (`name-2.ext`), among
/// the files written: the latest one wins.
pub fn find_written<'a>(declared: &str, written: &'a [PathBuf]) -> Option<&'a PathBuf> {
    written.iter().rev().find(|w| {
        let w = w.to_string_lossy();
        w == declared || is_numbered_variant(&w, declared)
    })
}

fn is_numbered_variant(candidate: &str, declared: &str) -> bool {
    let (stem, ext) = match declared.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() && !s.ends_with('/') => (s, Some(e)),
        _ => (declared, None),
    };
    let rest = match ext {
        Some(e) => candidate.strip_suffix(e).and_then(|c| c.strip_suffix('.')),
        None => Some(candidate),
    };
    rest.and_then(|r| r.strip_prefix(stem))
        .and_then(|r| r.strip_prefix('-'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The declared `files` that are not (properly) among `written` (paths relative to `root`),
/// each with why.
pub fn check_declared(
    root: &Path,
    files: &[String],
    written: &[PathBuf],
    source: Option<&str>,
) -> Vec<(String, Problem)> {
    files
        .iter()
        .filter_map(|f| {
            let problem = match find_written(f, written) {
                None => Some(Problem::Missing),
                Some(rel) => check_file(&root.join(rel), source),
            };
            problem.map(|p| (f.clone(), p))
        })
        .collect()
}

/// Check one written file. `source` is the text the job was given, for the copy check.
pub fn check_file(path: &Path, source: Option<&str>) -> Option<Problem> {
    let Ok(bytes) = std::fs::read(path) else {
        return Some(Problem::Missing);
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Some(Problem::Empty);
    }
    let text_like = matches!(
        crate::skills::extension(&path.to_string_lossy()).as_str(),
        "md" | "markdown" | "txt" | "text" | "csv" | "tsv" | "html" | "htm" | "rst" | "tex"
    );
    if text_like && let Ok(text) = std::str::from_utf8(&bytes) {
        if source.is_some_and(|src| is_copy(text, src)) {
            return Some(Problem::Copy);
        }
        let tabular = text.contains('\t') || path.extension().is_some_and(|e| e == "csv");
        if !tabular && is_loop(text, source) {
            return Some(Problem::Loop);
        }
    }
    None
}

/// Check a plain answer meant to become `file`'s content.
pub fn check_answer(answer: &str, file: &str, source: Option<&str>) -> Option<Problem> {
    if answer.trim().is_empty() {
        return Some(Problem::Empty);
    }
    if looks_like_claim(answer) {
        return Some(Problem::Claim);
    }
    match crate::skills::extension(file).as_str() {
        "json" => {
            if let Err(e) = serde_json::from_str::<serde_json::Value>(answer) {
                return Some(Problem::Invalid(format!("not JSON ({e})")));
            }
        }
        _ => {
            if source.is_some_and(|s| is_copy(answer, s)) {
                return Some(Problem::Copy);
            }
            if !file.ends_with(".csv") && is_loop(answer, source) {
                return Some(Problem::Loop);
            }
        }
    }
    None
}

/// The span (in characters, white space ignored) that a passage must share with an earlier
/// one to count as repeated.
const LOOP_SPAN: usize = 20;

/// Whether `output` goes round in circles: at least half of it repeats passages of itself,
/// and at least 30 points more than `source` repeats itself (a translation of a repetitive
/// document may repeat as much as the document does). Real prose, Chinese or English, stays
/// well under that: a few repeated names and figures, not whole paragraphs.
pub fn is_loop(output: &str, source: Option<&str>) -> bool {
    let share = repeated_share(output);
    share >= 0.5 && share >= source.map_or(0.0, repeated_share) + 0.3
}

/// The share of `text`'s characters (white space ignored) inside a [`LOOP_SPAN`]-character
/// passage that already occurred earlier in the text. Texts under 400 characters count as 0.
pub fn repeated_share(text: &str) -> f64 {
    let chars: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    if chars.len() < 400 {
        return 0.0;
    }
    let mut seen = std::collections::HashSet::with_capacity(chars.len());
    // Covered characters, as a difference array of +1 at a repeated window's start and -1
    // past its end.
    let mut marks = vec![0i32; chars.len() + 1];
    for (i, window) in chars.windows(LOOP_SPAN).enumerate() {
        if !seen.insert(window) {
            marks[i] += 1;
            marks[i + LOOP_SPAN] -= 1;
        }
    }
    let mut depth = 0;
    let mut covered = 0usize;
    for m in &marks[..chars.len()] {
        depth += m;
        if depth > 0 {
            covered += 1;
        }
    }
    covered as f64 / chars.len() as f64
}

/// Whether `output` is `source` handed back: the same words, or all of them with a little
/// added around (a title, a line of preface). White space is ignored.
pub fn is_copy(output: &str, source: &str) -> bool {
    let out = squash(output);
    let src = squash(source);
    if out.is_empty() || src.is_empty() {
        return false;
    }
    if out == src {
        return true;
    }
    src.chars().count() >= 100 && out.len() <= src.len() + src.len() / 5 && out.contains(&src)
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// A short answer that only reports having written a file ("I wrote summary.md: …",
/// "已写入 notes.md") is a claim, not content.
pub fn looks_like_claim(answer: &str) -> bool {
    let a = answer.trim();
    if a.chars().count() > 400 || a.lines().filter(|l| !l.trim().is_empty()).count() > 3 {
        return false;
    }
    let lower = a.to_lowercase();
    let names_file = lower
        .split(|c: char| c.is_whitespace() || "`'\"*:,()（）：，".contains(c))
        .any(|w| {
            let w = w.trim_end_matches(['.', '。', ';', '!']);
            w.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && matches!(
                        ext,
                        "md" | "txt" | "csv" | "json" | "xlsx" | "docx" | "html" | "markdown"
                    )
            })
        });
    let verbs = [
        "wrote",
        "written",
        "saved",
        "created",
        "file_write",
        "写入",
        "已写",
        "保存",
        "生成了",
    ];
    names_file && verbs.iter().any(|v| lower.contains(v)) || lower.contains("file_write")
}

/// A model's answer with one wrapping code fence removed (```markdown … ```), as the file's
/// content.
pub fn strip_fence(answer: &str) -> String {
    let t = answer.trim();
    if let Some(rest) = t.strip_prefix("```")
        && let Some(body) = rest.strip_suffix("```")
        && let Some((info, inner)) = body.split_once('\n')
        && !info.contains("```")
        && !inner.contains("\n```")
        && info
            .trim()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_+.".contains(c))
    {
        return format!("{}\n", inner.trim_end());
    }
    format!("{t}\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn prose_is_not_a_loop() {
        let prose = "The backup job runs every night at two and keeps seven days of copies. \
            Users sign in with a password and a one-time code from their phone. Logs are \
            rotated daily; an alert fires when a disk is eighty percent full. The release \
            moved to the first of December because the export feature was too slow for the \
            largest customers, and the team agreed on a plan to fix it within the week. \
            Li Na writes the release notes; Wang Qiang owns the export fix and reports on \
            Thursday at three in the afternoon, when the next meeting takes place.";
        assert!(
            super::repeated_share(prose) < 0.1,
            "{}",
            super::repeated_share(prose)
        );
        assert!(!super::is_loop(prose, None));
        let looping = format!("{prose}\n\n{prose}\n\n{prose}");
        assert!(super::is_loop(&looping, Some(prose)));
    }

    use super::*;

    #[test]
    fn copies_are_caught_and_summaries_are_not() {
        let doc = "Quarterly report. Revenue rose 12% to 4.2 million, driven by exports to Asia. \
                   Costs were flat. The board approved a dividend of 0.30 per share, payable in \
                   May, and a new plant in Suzhou opening next year with 200 jobs.";
        assert!(is_copy(doc, doc));
        assert!(is_copy(&format!("# Report\n\n{doc}"), doc));
        assert!(is_copy(&doc.replace(". ", ".\n\n"), doc));
        assert!(!is_copy(
            "Revenue rose 12% on exports; a dividend of 0.30 was approved.",
            doc
        ));
        assert!(!is_copy("", doc));
    }

    #[test]
    fn claims_are_not_content() {
        assert!(looks_like_claim(
            "I wrote summary-2.md: Q3 revenue rose 12%, driven by exports."
        ));
        assert!(looks_like_claim("Wrote `translation.md` (English)."));
        assert!(looks_like_claim("已写入 notes.md。"));
        assert!(!looks_like_claim(
            "# Q3\n\nRevenue rose 12%, driven by exports."
        ));
        assert!(!looks_like_claim(
            "The report was written in May about revenue."
        ));
    }

    #[test]
    fn fences_are_removed_once() {
        assert_eq!(strip_fence("```markdown\n# T\n\nx\n```"), "# T\n\nx\n");
        assert_eq!(strip_fence("```\na\n```\n"), "a\n");
        assert_eq!(strip_fence("plain"), "plain\n");
        let two = "```\na\n```\ntext\n```\nb\n```";
        assert_eq!(strip_fence(two), format!("{two}\n"));
    }

    #[test]
    fn renamed_variants_count_as_the_declared_file() {
        let written = vec![PathBuf::from("notes.md"), PathBuf::from("summary-2.md")];
        assert_eq!(find_written("summary.md", &written), Some(&written[1]));
        assert_eq!(find_written("notes.md", &written), Some(&written[0]));
        assert_eq!(find_written("summary-x.md", &written), None);
        assert_eq!(find_written("analysis.md", &written), None);
    }

    #[test]
    fn answers_are_checked_for_their_format() {
        assert_eq!(check_answer(" \n", "a.md", None), Some(Problem::Empty));
        assert!(matches!(
            check_answer("{x", "a.json", None),
            Some(Problem::Invalid(_))
        ));
        assert_eq!(check_answer("{\"a\": 1}", "a.json", None), None);
        let point =
            "- **新版本定于12月1日发布**：李娜负责发布说明，确保所有相关人员了解最新产品的功能。\n";
        let looping = format!("# 会议纪要\n\n{}", point.repeat(12));
        assert_eq!(check_answer(&looping, "a.md", None), Some(Problem::Loop));
        // As repetitive as its input: a faithful rendering, not a loop.
        let source = point.replace("李娜", "Li Na").repeat(12);
        assert_eq!(check_answer(&looping, "a.md", Some(&source)), None);
    }
}
