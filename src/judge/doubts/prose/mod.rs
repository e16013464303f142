//! Doubts of prose answers (docs/outputs.md#doubts): a translation or a summary can pass every
//! check on its form and still be wrong in ways a reader misses. A small model renders 下午三点
//! as "1:00 PM", leaves "Zhang伟" or "answering" untranslated, adds headings and a remark about
//! its own work, or hands the notes back reordered as their "summary". These checks read such
//! signs from the source and the answer alone. A doubt does not fail the step, it is recorded
//! and may send the step to a stronger model, so each check would rather miss a doubt than
//! raise a false one: a faithful technical translation keeps paths, commands, identifiers, URLs
//! and names in Latin letters, and [`translated_part`] takes those out before the language of an
//! answer is judged.

mod figures;
mod kept;
mod near_copy;
mod remarks;
mod script;
#[cfg(test)]
mod tests;
mod untranslated;

use figures::*;
use kept::*;
use near_copy::*;
use remarks::*;
use script::*;
use std::collections::HashSet;
use unicode_normalization::UnicodeNormalization;
use untranslated::*;

/// One doubt found: a short check name and a detail a person reads (English).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProseDoubt {
    pub check: &'static str,
    pub detail: String,
}

impl ProseDoubt {
    fn new(check: &'static str, detail: String) -> Self {
        Self { check, detail }
    }
}

/// Doubts of `answer`, a rendering of `source` into `language` ("chinese", "english", "zh",
/// "en", "japanese", "french"…). Which text should be in which script is known for Chinese
/// and English only; other languages get the checks that do not need it.
pub(crate) fn translation(source: &str, answer: &str, language: &str) -> Vec<ProseDoubt> {
    let mut out = Vec::new();
    out.extend(changed_figures(source, answer));
    let source_han = mostly_han(source);
    match script_of_language(language) {
        Script::Han if !source_han => out.extend(english_left(&translated_lines(source, answer))),
        Script::Latin if source_han => out.extend(chinese_left(&translated_lines(source, answer))),
        _ => {}
    }
    out.extend(remark(source, answer));
    out.extend(added_headings(source, answer));
    out
}

/// Doubts of `answer`, a condensing of `source` (a summary, notes, an analysis).
pub(crate) fn condensed(source: &str, answer: &str) -> Vec<ProseDoubt> {
    let mut out = Vec::new();
    match near_copy(source, answer) {
        Some(d) => out.push(d),
        None => out.extend(longer(source, answer)),
    }
    let added = unmatched(
        &read_figures(answer).list,
        &read_figures(source).known,
        false,
    );
    if !added.is_empty() {
        let detail = format!("figures not in the source: {}", listed(&added, 6));
        out.push(ProseDoubt::new("figures", detail));
    }
    out
}

/// `answer` as the language check should judge it: one fence wrapping the whole answer removed,
/// and what the answer keeps verbatim that is not prose in the source's language removed —
/// code spans and blocks, paths, commands, identifiers, URLs, e-mail addresses, numbers, file
/// names, acronyms, and Latin-script names and words a source in another script holds. What is
/// left is what was translated.
pub(crate) fn translated_part(source: &str, answer: &str) -> String {
    let lines: Vec<String> = translated_lines(source, answer)
        .iter()
        .map(|line| {
            let text = line.replace(GAP, " ");
            text.split([' ', '\t'])
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    lines.join("\n").trim_matches('\n').to_string()
}
