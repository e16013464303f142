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
mod shared;
#[cfg(test)]
mod tests;
mod untranslated;

use crate::judge::work::Work;
use figures::*;
use kept::*;
use near_copy::*;
use remarks::*;
use script::*;
use shared::*;
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
/// and English only; other languages get the checks that do not need it. `stop` is asked
/// between items.
pub(crate) fn translation(
    source: &str,
    answer: &str,
    language: &str,
    stop: &dyn Fn() -> bool,
) -> Vec<ProseDoubt> {
    let mut checks = vec![ProseCheck::ChangedFigures];
    match (script_of_language(language), mostly_han(source)) {
        (Script::Han, false) => checks.push(ProseCheck::EnglishLeft),
        (Script::Latin, true) => checks.push(ProseCheck::ChineseLeft),
        _ => {}
    }
    checks.extend([ProseCheck::Remark, ProseCheck::Headings]);
    checks
        .into_iter()
        .filter_map(|c| c.run(source, answer, stop))
        .collect()
}

/// Doubts of `answer`, a condensing of `source` (a summary, notes, an analysis). `stop` is
/// asked between items.
pub(crate) fn condensed(source: &str, answer: &str, stop: &dyn Fn() -> bool) -> Vec<ProseDoubt> {
    [ProseCheck::NearCopy, ProseCheck::AddedFigures]
        .into_iter()
        .filter_map(|c| c.run(source, answer, stop))
        .collect()
}

/// Doubts of `answer`, a rendering of the whole of `source` in its own language (a proofread,
/// reformatted or polished text). `stop` is asked between items.
pub(crate) fn rewritten(source: &str, answer: &str, stop: &dyn Fn() -> bool) -> Vec<ProseDoubt> {
    ProseCheck::LostFigures
        .run(source, answer, stop)
        .into_iter()
        .collect()
}

/// One check of a prose answer against its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProseCheck {
    /// A condensing that is its source again.
    NearCopy,
    /// Figures a condensing states that its source does not.
    AddedFigures,
    /// Figures a rendering lacks or adds.
    ChangedFigures,
    /// Figures a rendering in the source's own language lacks.
    LostFigures,
    /// English left in a Chinese rendering (what the answer kept verbatim taken out first).
    EnglishLeft,
    /// Chinese left in an English rendering.
    ChineseLeft,
    /// A remark about the task.
    Remark,
    /// Headings the source does not have.
    Headings,
}

impl ProseCheck {
    pub(crate) const ALL: [ProseCheck; 8] = [
        ProseCheck::NearCopy,
        ProseCheck::AddedFigures,
        ProseCheck::ChangedFigures,
        ProseCheck::LostFigures,
        ProseCheck::EnglishLeft,
        ProseCheck::ChineseLeft,
        ProseCheck::Remark,
        ProseCheck::Headings,
    ];

    /// The doubt this check raises of `answer`, given its own bound of work and the run's
    /// `stop`. A check the stop cut short raises none (the run is ending); one that spent its
    /// bound says the answer was not checked whole, since what it did not read may be what
    /// clears the answer or what is wrong with it.
    pub(crate) fn run(
        self,
        source: &str,
        answer: &str,
        stop: &dyn Fn() -> bool,
    ) -> Option<ProseDoubt> {
        let work = Work::new(stop);
        let doubt = match self {
            // A summary that is not a copy may still be longer than what it condenses.
            ProseCheck::NearCopy => {
                near_copy(source, answer, &work).or_else(|| longer(source, answer))
            }
            ProseCheck::AddedFigures => {
                let added = unmatched(
                    &read_figures(answer, &work).list,
                    &read_figures(source, &work).known,
                    false,
                );
                (!added.is_empty()).then(|| {
                    let detail = format!("figures not in the source: {}", listed(&added, 6));
                    ProseDoubt::new("figures", detail)
                })
            }
            ProseCheck::ChangedFigures => changed_figures(source, answer, &work),
            ProseCheck::LostFigures => lost_figures(source, answer, &work),
            ProseCheck::EnglishLeft => {
                let aligned = aligned(source, answer, &work);
                english_left(&aligned.lines).or_else(|| copied_prose(&aligned))
            }
            ProseCheck::ChineseLeft => chinese_left(&translated_lines(source, answer, &work)),
            ProseCheck::Remark => remark(source, answer),
            ProseCheck::Headings => added_headings(source, answer),
        };
        match (work.over(), work.stopped()) {
            (false, _) => doubt,
            (true, true) => None,
            (true, false) => Some(ProseDoubt::new(
                "unchecked",
                format!("too long to check whole for {}", self.name()),
            )),
        }
    }

    /// What the check looks for, as a doubt's detail names it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ProseCheck::NearCopy => "a near-copy",
            ProseCheck::AddedFigures => "added figures",
            ProseCheck::ChangedFigures => "changed figures",
            ProseCheck::LostFigures => "lost figures",
            ProseCheck::EnglishLeft => "English left untranslated",
            ProseCheck::ChineseLeft => "Chinese left untranslated",
            ProseCheck::Remark => "remarks",
            ProseCheck::Headings => "headings",
        }
    }
}

/// `answer` as the language check should judge it: one fence wrapping the whole answer removed,
/// and what the answer keeps verbatim that is not prose in the source's language removed —
/// code spans and blocks, paths, commands, identifiers, URLs, e-mail addresses, numbers, file
/// names, acronyms, and Latin-script names and words a source in another script holds. What is
/// left is what was translated.
///
/// Read as far as `work` allows: the lines after it ran out are left out.
pub(crate) fn translated_part(source: &str, answer: &str, work: &Work) -> String {
    let lines: Vec<String> = translated_lines(source, answer, work)
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
