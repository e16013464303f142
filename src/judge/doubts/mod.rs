//! Doubts (docs/outputs.md#doubts): checks that say an accepted answer is probably *wrong*, where
//! the acceptance pipeline ([`super::accept`]) says whether it is *junk*. A doubt never fails a
//! job on its own: it is recorded per field or file, counted, marked in the tables, and sends
//! the step up the escalation ladder when there is one (`--strict` fails the job instead).
//!
//! Each check is a generic, documented rule over the answer and its source. What a field is
//! called in a document comes from its schema (`x-labels`, or the terms its description
//! quotes) and from its name and the common labels of what it is ([`labels`]).

mod extraction;
pub(crate) mod labels;
pub(crate) mod prose;

pub(crate) use extraction::extraction;

/// Each field of a schema (an array's item fields as `items[].amount`) with the labels the
/// doubts look for it under, for `zhi skills show` and `zhi plan -v`; fields with none left
/// out.
pub(crate) fn labels_of(fields: &[crate::skills::schema::Field]) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for f in fields {
        out.push((f.path.clone(), extraction::field_labels(f)));
        for item in &f.items {
            out.push((
                format!("{}[].{}", f.path, item.path),
                extraction::field_labels(item),
            ));
        }
    }
    out.retain(|(_, labels)| !labels.is_empty());
    out
}

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
    on_file(file, prose::translation(source, answer, language, stop))
}

/// Doubts of a prose file that renders the whole of its source in its own language (a
/// proofread, reformatted or polished text). `stop` is asked between items.
pub(crate) fn of_rewriting(
    file: &str,
    source: &str,
    answer: &str,
    stop: &dyn Fn() -> bool,
) -> Vec<Doubt> {
    on_file(file, prose::rewritten(source, answer, stop))
}

/// Doubts of a prose file that condenses its source (a summary, notes, an analysis). `stop`
/// is asked between items.
pub(crate) fn of_condensing(
    file: &str,
    source: &str,
    answer: &str,
    stop: &dyn Fn() -> bool,
) -> Vec<Doubt> {
    on_file(file, prose::condensed(source, answer, stop))
}

/// Prose doubts as doubts of `file`.
fn on_file(file: &str, doubts: Vec<prose::ProseDoubt>) -> Vec<Doubt> {
    doubts
        .into_iter()
        .map(|d| Doubt {
            check: d.check.to_string(),
            file: Some(file.to_string()),
            detail: d.detail,
            ..Doubt::default()
        })
        .collect()
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
