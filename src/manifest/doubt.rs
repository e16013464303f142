//! What zhi doubts in a job's outputs (docs/outputs.md#doubts), and how a person is told: a
//! record keeps each doubt as data (the check, the field or file, what was found), and
//! [`Doubt::said`] puts it in words in the reader's language — `seller: found under the
//! buyer's label ("Bill to")` — for the tables, the summaries, `zhi status` and the report.
//! The words come from the check and the names it keeps, never from parsing its `detail`, so a
//! record of an earlier zhi (which kept no names) still reads, a little less precisely.

use crate::i18n::Lang;
use crate::sanitize::one_line;
use serde::{Deserialize, Serialize};

/// What zhi doubts in a job's output: the answer was kept, well formed, but is probably wrong
/// here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Doubt {
    /// Which check doubted it (`label`, `same_value`, `ungrounded`, `figures`, …).
    pub check: String,
    /// The extracted field it is about (`seller`, `items[0].amount`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The output file it is about, relative to the job's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// What was found, for a person (English, with the values).
    pub detail: String,
    /// The label the check is about, as the schema writes it (`Bill to`): the one the value
    /// stands under (`label`), begins with (`holds_label`), or that stands in the document
    /// with no value taken (`missing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The other field the check names: the one whose label the value stands under
    /// (`label`; several, comma-separated, when the label is theirs alike), or the one holding
    /// the same value (`same_value`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other: Option<String>,
}

impl Doubt {
    /// The doubt in words, in `lang`: `seller: found under the buyer's label ("Bill to")`,
    /// `summary.md: longer than its source`.
    pub(crate) fn said(&self, lang: Lang) -> String {
        let at = one_line(self.field.as_deref().or(self.file.as_deref()).unwrap_or(""));
        let what = self.what(lang);
        if at.is_empty() {
            what
        } else {
            t!(in lang; "{at}: {what}", at = at, what = what)
        }
    }

    /// What was found, in words.
    fn what(&self, lang: Lang) -> String {
        let label = self.label.as_deref().map(one_line);
        let other = self.other.as_deref().map(one_line);
        match (self.check.as_str(), label, other) {
            ("label", Some(label), Some(other)) if other.contains(", ") => {
                t!(in lang; "found under a label of {other} (\"{label}\")", other = other, label = label)
            }
            ("label", Some(label), Some(other)) => {
                t!(in lang; "found under the {other}'s label (\"{label}\")", other = other, label = label)
            }
            ("label", Some(label), None) => {
                t!(in lang; "not under its own label (\"{label}\"), which is in the document", label = label)
            }
            ("label", ..) => t!(in lang; "found under another field's label"),
            ("ungrounded", ..) => t!(in lang; "found nowhere in the document"),
            ("unchecked", ..) => t!(in lang; "not looked for in the document (too many values)"),
            ("same_value", _, Some(other)) => {
                t!(in lang; "the same value as {other}", other = other)
            }
            ("same_value", ..) => t!(in lang; "the same value as another field"),
            ("no_figure", ..) => t!(in lang; "no figure in it, though it is a number"),
            ("holds_label", Some(label), _) => {
                t!(in lang; "begins with a label (\"{label}\"): a line copied, not a value", label = label)
            }
            ("holds_label", ..) => t!(in lang; "begins with a label: a line copied, not a value"),
            ("missing", Some(label), _) => {
                t!(in lang; "empty, though its label (\"{label}\") stands in the document with a value", label = label)
            }
            ("missing", ..) => {
                t!(in lang; "empty, though its label stands in the document with a value")
            }
            ("figures", ..) => t!(in lang; "figures not as in the source"),
            ("untranslated", ..) => t!(in lang; "parts left untranslated"),
            ("remark", ..) => t!(in lang; "a remark about the task"),
            ("headings", ..) => t!(in lang; "headings the source does not have"),
            ("near_copy", ..) => t!(in lang; "mostly the source again"),
            ("longer", ..) => t!(in lang; "longer than its source"),
            (check, ..) => one_line(check),
        }
    }
}

/// `doubts` in words, each once, joined: the cell of a table, a line of a summary.
pub(crate) fn in_words(doubts: &[Doubt], lang: Lang) -> String {
    let mut parts: Vec<String> = Vec::new();
    for d in doubts {
        let part = d.said(lang);
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    parts.join(&t!(in lang; "; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(field: &str, check: &str, label: Option<&str>, other: Option<&str>) -> Doubt {
        Doubt {
            check: check.into(),
            field: Some(field.into()),
            label: label.map(str::to_string),
            other: other.map(str::to_string),
            ..Doubt::default()
        }
    }

    #[test]
    fn doubts_are_said_in_words_in_both_languages() {
        let swapped = [
            on("seller", "label", Some("Bill to"), Some("buyer")),
            on("buyer", "label", Some("From"), Some("seller")),
        ];
        assert_eq!(
            in_words(&swapped, Lang::En),
            "seller: found under the buyer's label (\"Bill to\"); buyer: found under the seller's label (\"From\")"
        );
        assert_eq!(
            in_words(&swapped, Lang::Zh),
            "seller：出现在 buyer 的标签（“Bill to”）下；buyer：出现在 seller 的标签（“From”）下"
        );
        let total = on("total", "label", Some("Total due"), None);
        assert_eq!(
            total.said(Lang::En),
            "total: not under its own label (\"Total due\"), which is in the document"
        );
        let summary = Doubt {
            check: "longer".into(),
            file: Some("summary.md".into()),
            ..Doubt::default()
        };
        assert_eq!(summary.said(Lang::En), "summary.md: longer than its source");
        assert_eq!(summary.said(Lang::Zh), "summary.md：比原文还长");
        // A record of an earlier zhi kept no label and no other field.
        let old = on("seller", "label", None, None);
        assert_eq!(
            old.said(Lang::En),
            "seller: found under another field's label"
        );
        // The same words once.
        assert_eq!(
            in_words(&[old.clone(), old], Lang::En),
            "seller: found under another field's label"
        );
        // A check zhi does not know yet is named.
        assert_eq!(
            on("x", "newer_check", None, None).said(Lang::En),
            "x: newer_check"
        );
    }
}
