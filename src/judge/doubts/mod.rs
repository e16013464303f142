//! Doubts (docs/outputs.md#doubts): checks that say an accepted answer is probably *wrong*, where
//! the acceptance pipeline ([`super::accept`]) says whether it is *junk*. A doubt never fails a
//! job on its own: it is recorded per field or file, counted, marked in the tables, and sends
//! the step up the escalation ladder when there is one (`--strict` fails the job instead).
//!
//! Each check is a generic, documented rule over the answer and its source; nothing here knows
//! about invoices or any other kind of document. What a field is called in a document comes
//! from its schema (`x-labels`, or its name and the terms its description quotes).

mod extraction;
pub(crate) mod prose;

pub(crate) use extraction::extraction;

use crate::manifest::Doubt;

/// Doubts of a prose file that renders its source into `language` (a translation, a
/// proofread text in another language). `stop` is asked between items.
pub(crate) fn of_rendering(
    file: &str,
    source: &str,
    answer: &str,
    language: &str,
    stop: &dyn Fn() -> bool,
) -> Vec<Doubt> {
    prose::translation(source, answer, language, stop)
        .into_iter()
        .map(|d| on_file(file, d))
        .collect()
}

/// Doubts of a prose file that condenses its source (a summary, notes, an analysis). `stop`
/// is asked between items.
pub(crate) fn of_condensing(
    file: &str,
    source: &str,
    answer: &str,
    stop: &dyn Fn() -> bool,
) -> Vec<Doubt> {
    prose::condensed(source, answer, stop)
        .into_iter()
        .map(|d| on_file(file, d))
        .collect()
}

fn on_file(file: &str, d: prose::ProseDoubt) -> Doubt {
    Doubt {
        check: d.check.to_string(),
        field: None,
        file: Some(file.to_string()),
        detail: d.detail,
    }
}

/// `doubts` as one line for a transcript or a log: `seller (label: …); total (…)`.
pub(crate) fn one_line(doubts: &[Doubt]) -> String {
    doubts
        .iter()
        .map(|d| {
            let at = d.field.as_deref().or(d.file.as_deref()).unwrap_or("");
            format!(
                "{at} ({}: {})",
                d.check,
                crate::sanitize::fit(&d.detail, 160)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
