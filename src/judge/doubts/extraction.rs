//! Doubts of an extracted object (docs/extract.md#doubts): a value found nowhere in the
//! document, two fields the schema names apart holding one value, and a value whose label in
//! the text — the words just before it — belongs to another field.
//!
//! A small model swaps seller and buyer, or gives the pre-tax amount as the total, with every
//! token at high probability; the document itself says which is which, in the words before
//! each value. Labels come from the schema: a field's `x-labels`, else the terms its
//! description names in parentheses or quotes (`The total (价税合计, "Total due")`), its name in
//! words and the common labels of what it names ([`super::labels`]).
//!
//! It catches swapped parties and a value taken from under another field's label, when the
//! schema names the labels, and a field left empty whose own label stands in the document with
//! a value after it, or a text value away from its own label while that label holds another.
//! It lets through a wrong value under no known label, and any field with no label, written
//! or found (only grounding and sameness judge those).

use crate::judge::grounding::{self, Haystack};
use crate::manifest::Doubt;
use crate::skills::schema::Field;
use serde_json::Value;

/// How far before a value its label is looked for: characters, and lines.
const LABEL_WINDOW_CHARS: usize = 100;
const LABEL_WINDOW_LINES: usize = 3;
/// Places of one value judged, at most.
const MAX_PLACES: usize = 16;
/// Values judged for labels, at most (an object of thousands of values is judged on its first
/// ones; grounding still looks at all of them).
const MAX_LABELLED: usize = 200;
/// Values found nowhere given a doubt each, at most; the rest share one.
const MAX_UNGROUNDED: usize = 100;

/// A label and the fields that list it.
struct Label {
    /// Normalised as the document is for grounding (NFKC, lower case, one space).
    text: String,
    /// As the schema first writes it (`Bill to`), for a person.
    said: String,
    /// Whether it is written in letters that need a word boundary (`total` is not in
    /// `subtotal`).
    word: bool,
    owners: Vec<String>,
    /// A generic name (`date`) standing for its field: a value right after it is its owner's
    /// or nobody's, never doubted as under another field's label; it accuses nothing.
    weak: bool,
}

/// The doubts of `object`, extracted from the text of `hay` under a schema with these
/// `fields`, given where grounding `found` its values; `stop` is asked between values (a run
/// told to stop gets what was judged so far).
pub(crate) fn extraction(
    text: &str,
    hay: &Haystack,
    found: &grounding::Extraction,
    object: &Value,
    fields: &[Field],
    stop: &dyn Fn() -> bool,
) -> Vec<Doubt> {
    if stop() {
        return Vec::new();
    }
    let mut out = ungrounded(object, found);
    out.extend(same_values(object, fields));
    for field in fields.iter().filter(|f| f.items.is_empty()) {
        if let Some(Value::String(s)) = value_at(object, &field.path)
            && let Some(label) = leading_label(s)
        {
            out.push(Doubt {
                label: Some(label.to_string()),
                ..doubt(
                    "holds_label",
                    &field.path,
                    format!("begins with the label “{label}”: a line copied, not a value taken"),
                )
            });
        }
    }
    out.extend(figureless(object, fields));
    let labels = labels(fields);
    if labels.iter().all(|l| l.weak) {
        return out;
    }
    let mut swapped: Vec<(&str, &Value, &Label)> = Vec::new();
    let mut away: Vec<(&Field, &str)> = Vec::new();
    let lines: Vec<String> = text.lines().map(grounding::normalize).collect();
    out.extend(missing(object, fields, &lines, &labels, stop));
    let norm_text = grounding::normalize(text);
    let page = Page {
        chars: hay.chars(),
        text: &norm_text,
        lines: &lines,
    };
    for field in fields
        .iter()
        .filter(|f| f.items.is_empty())
        .take(MAX_LABELLED)
    {
        if hay.spent() || stop() {
            break;
        }
        let Some(value) = value_at(object, &field.path) else {
            continue;
        };
        match label_doubt(hay, &page, field, value, &labels) {
            Placing::Doubted(d, under) => {
                out.push(d);
                if let Some(l) = under {
                    swapped.push((field.path.as_str(), value, l));
                }
            }
            Placing::Away => {
                if let Value::String(s) = value {
                    away.push((field, s.as_str()));
                }
            }
            Placing::Fine => {}
        }
    }
    out.extend(partners(object, fields, &swapped, &out));
    // A text value under no label of its own, its field's label holding another: after the
    // swaps, which say more.
    let off: Vec<Doubt> = away
        .into_iter()
        .filter(|(f, _)| {
            !out.iter()
                .any(|d| d.field.as_deref() == Some(f.path.as_str()))
        })
        .filter_map(|(f, s)| text_off_label(hay, &page, f, s, &labels))
        .collect();
    out.extend(off);
    out
}

/// Text fields the schema calls a number (`section_number`, `invoice_no`, "the manual section
/// number", 编号) given a value with no figure in it: a page header or a heading taken for the
/// number (`General Commands Manual` as a man page's section). A number written in words or
/// Chinese numerals has its figure.
fn figureless(object: &Value, fields: &[Field]) -> Vec<Doubt> {
    fields
        .iter()
        .filter(|f| f.items.is_empty() && f.kind.split('|').any(|k| k == "string"))
        .filter(|f| super::labels::names_a_number(&f.path, f.description.as_deref()))
        .take(MAX_LABELLED)
        .filter_map(|f| {
            let Some(Value::String(s)) = value_at(object, &f.path) else {
                return None;
            };
            let figure = s.chars().any(|c| {
                c.is_numeric() || "零〇一二三四五六七八九十百千万两壹贰叁肆伍陆柒捌玖拾".contains(c)
            }) || crate::judge::numbers::number(s).is_some();
            (!s.trim().is_empty() && !figure && s.chars().count() <= 200).then(|| {
                doubt(
                    "no_figure",
                    &f.path,
                    format!(
                        "{} has no figure, but the schema calls it a number",
                        shown(&Value::String(s.clone()))
                    ),
                )
            })
        })
        .collect()
}

/// The fields whose label a doubted value stands under: a value under `Bill to` given as the
/// seller belongs to the buyer, so the buyer's other value is doubted too (a swap doubts both
/// sides). Only a label of one field, a text field holding another value, not yet doubted.
fn partners(
    object: &Value,
    fields: &[Field],
    swapped: &[(&str, &Value, &Label)],
    doubted: &[Doubt],
) -> Vec<Doubt> {
    let mut out: Vec<Doubt> = Vec::new();
    for (from, value, label) in swapped {
        let [owner] = label.owners.as_slice() else {
            continue;
        };
        let Some(field) = fields.iter().find(|f| &f.path == owner) else {
            continue;
        };
        let Some(held @ Value::String(_)) = value_at(object, &field.path) else {
            continue;
        };
        let seen = |d: &Doubt| d.field.as_deref() == Some(owner.as_str());
        let (Value::String(given), Value::String(kept)) = (value, held) else {
            continue;
        };
        // A value that holds the other (`facebookgo/inject` in the source's URL) is no swap:
        // the other field took part of it.
        let (given, kept) = (grounding::normalize(given), grounding::normalize(kept));
        if kept.contains(given.trim())
            || given.contains(kept.trim())
            || doubted.iter().any(seen)
            || out.iter().any(seen)
        {
            continue;
        }
        // Its own label holds another field's value: it is not under its own label.
        out.push(Doubt {
            label: Some(label.said.clone()),
            ..doubt(
                "label",
                owner,
                format!(
                    "{} stands under its label “{}” and was given as {from}; {} was given here",
                    shown(value),
                    label.text,
                    shown(held)
                ),
            )
        });
    }
    out
}

/// A value found nowhere, one doubt each (the first [`MAX_UNGROUNDED`], then one for the
/// rest); values not looked for, one doubt for all: never trusted unseen.
fn ungrounded(object: &Value, found: &grounding::Extraction) -> Vec<Doubt> {
    let mut out = Vec::new();
    let mut leaves = Vec::new();
    grounding::collect(object, String::new(), &mut leaves);
    let nowhere: Vec<(String, &Value)> = leaves
        .into_iter()
        .filter(|(path, _)| {
            found
                .fields
                .get(path)
                .is_some_and(|l| l.how == grounding::Match::None)
        })
        .collect();
    for (path, value) in nowhere.iter().take(MAX_UNGROUNDED) {
        out.push(doubt(
            "ungrounded",
            path,
            format!("{} is found nowhere in the document", shown(value)),
        ));
    }
    if let Some((path, _)) = nowhere.get(MAX_UNGROUNDED) {
        let more = nowhere.len() - MAX_UNGROUNDED;
        out.push(doubt(
            "ungrounded",
            path,
            format!("{more} values from {path} on are found nowhere in the document"),
        ));
    }
    if let Some(first) = found.unchecked.first() {
        out.push(doubt(
            "unchecked",
            first,
            format!(
                "{} values from {first} on were not looked for in the document: grounding looks for at most {} values a document, and stops once it has visited {} places of its text",
                found.unchecked.len(),
                grounding::MAX_VALUES,
                grounding::MAX_WORK
            ),
        ));
    }
    out
}

fn doubt(check: &str, field: &str, detail: String) -> Doubt {
    Doubt {
        check: check.to_string(),
        field: Some(field.to_string()),
        detail,
        ..Doubt::default()
    }
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("“{}”", crate::sanitize::fit(s.trim(), 60)),
        other => other.to_string(),
    }
}

/// The value at a dotted path of top-level objects (`seller.name`).
fn value_at<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    let mut v = object;
    for part in path.split('.') {
        v = v.get(part)?;
    }
    matches!(v, Value::String(s) if !s.trim().is_empty())
        .then_some(v)
        .or_else(|| v.is_number().then_some(v))
}

/// Two text fields holding the same name or words: the schema names them apart, so one of them
/// is probably the other's value (a buyer given as the seller). Numbers and dates may rightly
/// be equal (no tax: amount = total), so only text with letters counts.
fn same_values(object: &Value, fields: &[Field]) -> Vec<Doubt> {
    let mut seen: Vec<(&str, String)> = Vec::new();
    let mut out = Vec::new();
    for field in fields.iter().filter(|f| f.items.is_empty()) {
        let Some(Value::String(s)) = value_at(object, &field.path) else {
            continue;
        };
        let key = grounding::normalize(s);
        if key.chars().filter(|c| c.is_alphabetic()).count() < 3 || looks_like_date(&key) {
            continue;
        }
        if let Some((other, _)) = seen.iter().find(|(_, k)| *k == key) {
            let value = shown(&Value::String(s.clone()));
            out.push(Doubt {
                other: Some(field.path.clone()),
                ..doubt(
                    "same_value",
                    other,
                    format!("holds the same value as {}: {value}", field.path),
                )
            });
            out.push(Doubt {
                other: Some((*other).to_string()),
                ..doubt(
                    "same_value",
                    &field.path,
                    format!("holds the same value as {other}: {value}"),
                )
            });
        } else {
            seen.push((field.path.as_str(), key));
        }
    }
    out
}

/// A leaf field left empty (null, absent or blank) while one of its own labels stands in the
/// document with a value after it ([`value_after`]). Only a label of that field alone counts
/// (`纳税人识别号` names both parties' tax IDs). A model that gives up on a field it was shown
/// is not to be trusted with it.
fn missing(
    object: &Value,
    fields: &[Field],
    lines: &[String],
    labels: &[Label],
    stop: &dyn Fn() -> bool,
) -> Vec<Doubt> {
    let own = |f: &Field| -> Vec<&Label> {
        labels
            .iter()
            .filter(|l| !l.weak && l.owners.len() == 1 && l.owners[0] == f.path)
            .collect()
    };
    let empty: Vec<(&Field, Vec<&Label>)> = fields
        .iter()
        .filter(|f| f.items.is_empty() && is_empty_at(object, &f.path))
        .filter(|f| {
            f.kind
                .split('|')
                .any(|k| matches!(k, "string" | "number" | "integer"))
        })
        .map(|f| (f, own(f)))
        .filter(|(_, own)| !own.is_empty())
        .take(MAX_LABELLED)
        .collect();
    if empty.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (field, own) in empty {
        if stop() {
            break;
        }
        let numeric = field
            .kind
            .split('|')
            .any(|k| k == "number" || k == "integer");
        let shown_label = own
            .into_iter()
            .find(|l| !values_after(l, lines, labels, numeric).is_empty());
        if let Some(l) = shown_label {
            out.push(Doubt {
                label: Some(l.said.clone()),
                ..doubt(
                    "missing",
                    &field.path,
                    format!(
                        "is empty, but its label “{}” stands in the document with a value after it",
                        l.text
                    ),
                )
            });
        }
    }
    out
}

/// The lines (normalised) on which label `l` stands with a value after it ([`value_after`]),
/// each with the text after the label (the next line's, when the label ends its own).
fn values_after<'t>(
    l: &Label,
    lines: &'t [String],
    labels: &[Label],
    numeric: bool,
) -> Vec<&'t str> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        for end in places_of(line, l) {
            let next = lines.get(i + 1).map(String::as_str);
            let shown = value_after(
                &line[end..],
                next,
                numeric,
                || {
                    labels
                        .iter()
                        .any(|o| o.owners != l.owners && !places_of(line, o).is_empty())
                },
                |s| labels.iter().any(|o| !places_of(s, o).is_empty()),
            );
            if shown {
                let rest = skip_separators(&line[end..]);
                out.push(if rest.is_empty() {
                    next.unwrap_or("").trim()
                } else {
                    rest
                });
            }
        }
    }
    out
}

/// Whether the field at a dotted path is absent, null or a blank string (a key that holds a
/// dot itself is looked up whole first).
fn is_empty_at(object: &Value, path: &str) -> bool {
    let found = object.get(path).or_else(|| {
        let mut v = object;
        for part in path.split('.') {
            v = v.get(part)?;
        }
        Some(v)
    });
    match found {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.trim().is_empty(),
        Some(_) => false,
    }
}

/// Whether a value stands after a label, `rest` being the rest of the label's line:
/// - on that line, after a colon, spaces or a parenthesis (`Total due (GBP)  666.00`): for a
///   number, a figure (a sign, a currency sign or code may come first; `VAT No: GB…` and
///   `Tax ID: 123` are no tax); for text, after a colon;
/// - or, when nothing but separators follows the label, on the very next line (a blank line
///   ends the block), unless the label's line holds another label (a table's header) or the
///   next line begins with a label.
fn value_after(
    rest: &str,
    next: Option<&str>,
    numeric: bool,
    line_has_other_label: impl Fn() -> bool,
    has_label: impl Fn(&str) -> bool,
) -> bool {
    if rest.starts_with(|c: char| c.is_alphanumeric()) {
        return false; // the label is part of a longer word
    }
    let after = skip_separators(rest);
    if after.is_empty() {
        let Some(next) = next.map(str::trim).filter(|n| !n.is_empty()) else {
            return false;
        };
        if line_has_other_label() || has_label(next) {
            return false;
        }
        return if numeric {
            starts_with_figure(next)
        } else {
            next.starts_with(char::is_alphanumeric)
        };
    }
    if numeric {
        starts_with_figure(after)
    } else {
        let colon = rest.trim_start().starts_with([':', '：']);
        colon && after.starts_with(char::is_alphanumeric)
    }
}

/// `s` without its leading spaces, colons, dashes, `#`, and one parenthesised group.
fn skip_separators(s: &str) -> &str {
    let seps: &[char] = &[' ', ':', '：', '-', '–', '#', '\t'];
    let mut t = s.trim_start_matches(seps);
    if let Some(inner) = t.strip_prefix(['(', '（']) {
        if let Some(close) = inner.find([')', '）']) {
            t = inner[close..].trim_start_matches([')', '）']);
        }
        t = t.trim_start_matches(seps);
    }
    t
}

/// Whether `s` begins with a figure: a digit, after an optional sign, currency sign or
/// three-letter currency code.
fn starts_with_figure(s: &str) -> bool {
    let mut t = s.trim_start_matches(['+', '-', '¥', '$', '€', '£', ' ']);
    let code = t.len() > 4
        && t.is_char_boundary(3)
        && t[..3].chars().all(|c| c.is_ascii_alphabetic())
        && t[3..].starts_with(' ');
    if code {
        t = t[3..].trim_start();
    }
    t.starts_with(|c: char| c.is_ascii_digit())
}

/// The label a text value begins with (`Billed to: Pied Piper GmbH` → `Billed to`): one to
/// three words of letters, then a colon, then more.
fn leading_label(s: &str) -> Option<&str> {
    let (head, rest) = key_of(s.trim())?;
    let letters = head.chars().all(|c| c.is_alphabetic() || c.is_whitespace());
    // `HTTP::Link::Parser` is a name with its scopes, not a label.
    let scoped = rest.starts_with([':', '：']);
    (letters && !scoped && !rest.trim().is_empty()).then_some(head.trim())
}

fn looks_like_date(s: &str) -> bool {
    let digits = s.chars().filter(char::is_ascii_digit).count();
    digits >= 4 && digits * 2 >= s.chars().filter(|c| !c.is_whitespace()).count()
}

/// Every field's labels (items' fields as `items[].name`), each once with all its owners.
fn labels(fields: &[Field]) -> Vec<Label> {
    let mut out: Vec<Label> = Vec::new();
    let mut add = |owner: String, terms: Vec<String>| {
        for t in terms {
            let text = grounding::normalize(&t);
            if text.chars().count() < 2 {
                continue;
            }
            match out.iter_mut().find(|l| l.text == text) {
                Some(l) if !l.owners.contains(&owner) => l.owners.push(owner.clone()),
                Some(_) => {}
                None => out.push(Label {
                    word: text.chars().any(|c| c.is_ascii_alphabetic()),
                    text,
                    said: t.trim().to_string(),
                    owners: vec![owner.clone()],
                    weak: false,
                }),
            }
        }
    };
    for f in fields {
        add(f.path.clone(), field_labels(f));
        for item in &f.items {
            add(format!("{}[].{}", f.path, item.path), field_labels(item));
        }
    }
    // Then the generic names, where no field has them as a label.
    for f in fields.iter().filter(|f| f.labels.is_empty()) {
        let Some(name) = super::labels::generic(&f.path) else {
            continue;
        };
        let text = grounding::normalize(&name);
        match out.iter_mut().find(|l| l.text == text) {
            Some(l) if l.weak && !l.owners.contains(&f.path) => l.owners.push(f.path.clone()),
            Some(_) => {}
            None => out.push(Label {
                word: true,
                text,
                said: name,
                owners: vec![f.path.clone()],
                weak: true,
            }),
        }
    }
    out
}

/// A field's labels: its `x-labels`, else the terms its description names in parentheses or
/// quotes, then those found from its name and what it is ([`super::labels`]).
pub(crate) fn field_labels(field: &Field) -> Vec<String> {
    if !field.labels.is_empty() {
        return field.labels.clone();
    }
    let mut terms = described_labels(field);
    // Then the labels found from the field's name and what it is (docs/extract.md#labels).
    for t in super::labels::found(&field.path) {
        if !terms
            .iter()
            .any(|x| grounding::normalize(x) == grounding::normalize(&t))
        {
            terms.push(t);
        }
    }
    terms
}

/// The terms a field's description names in parentheses or quotes (a term of four words or
/// more is an explanation, not a label).
fn described_labels(field: &Field) -> Vec<String> {
    let Some(description) = &field.description else {
        return Vec::new();
    };
    let mut terms = Vec::new();
    // `(e.g. CNY, USD)` gives examples of the value, not its label.
    let examples = [
        "e.g.",
        "eg.",
        "such as",
        "like",
        "for example",
        "例如",
        "如",
        "比如",
    ];
    for group in bracketed(description) {
        let lower = group.trim().to_lowercase();
        if examples.iter().any(|e| lower.starts_with(e)) {
            continue;
        }
        for term in group.split([',', ';', '，', '；', '、', '/']) {
            let term = term
                .trim()
                .trim_matches(|c: char| "\"'“”‘’`".contains(c) || c.is_whitespace());
            if !is_label_like(term) {
                continue;
            }
            let mut add = |t: &str| {
                if !terms.iter().any(|x| x == t) {
                    terms.push(t.to_string());
                }
            };
            add(term);
            // `价税合计（小写）` is also written `价税合计`.
            if let Some(cut) = term.find(['(', '（']) {
                let head = term[..cut].trim();
                if !head.is_empty() {
                    add(head);
                }
            }
        }
    }
    terms
}

/// Whether a term a description names could be a label: a few words, with a letter, not a
/// code or a number the value itself might be (`CNY`, `2026`).
fn is_label_like(term: &str) -> bool {
    let words = term.split_whitespace().count();
    let letters = term.chars().filter(|c| c.is_alphabetic()).count();
    let code = term.len() <= 4 && term.chars().all(|c| c.is_ascii_uppercase());
    (1..=3).contains(&words) && term.chars().count() <= 30 && letters >= 2 && !code
}

/// The texts of `s` in top-level parentheses (ASCII or full-width) and in double quotes.
fn bracketed(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in s.chars() {
        match c {
            '(' | '（' => {
                if depth > 0 {
                    current.push(c);
                }
                depth += 1;
            }
            ')' | '）' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    out.push(std::mem::take(&mut current));
                } else {
                    current.push(c);
                }
            }
            _ if depth > 0 => current.push(c),
            _ => {}
        }
    }
    for (i, part) in s.split(['"', '“', '”']).enumerate() {
        if i % 2 == 1 && !part.trim().is_empty() {
            out.push(part.to_string());
        }
    }
    out
}

/// The document as the label checks read it: its characters, its normalised text and lines.
struct Page<'p> {
    chars: &'p [char],
    text: &'p str,
    lines: &'p [String],
}

/// What the places of a value say of it.
enum Placing<'l> {
    /// Doubted, with the other field's label it stands under, if it does.
    Doubted(Doubt, Option<&'l Label>),
    /// Found, under no label of its own, and not doubted for it: a text value may still be
    /// doubted when its own label holds another value ([`text_off_label`]).
    Away,
    /// Under its own label, found nowhere, or of a field with no label: nothing to say.
    Fine,
}

/// A doubt when no place of `value` stands under its own field's label and one stands under
/// another field's; or, for a number, when none stands under any label while its own label is
/// in the document (a total taken from elsewhere than the total's line).
fn label_doubt<'l>(
    hay: &Haystack,
    page: &Page,
    field: &Field,
    value: &Value,
    labels: &'l [Label],
) -> Placing<'l> {
    // A field with no label of its own cannot be told from the others by its place.
    if !labels
        .iter()
        .any(|l| !l.weak && l.owners.contains(&field.path))
    {
        return Placing::Fine;
    }
    let places = hay.occurrences(value, MAX_PLACES);
    if places.is_empty() {
        return Placing::Fine;
    }
    let mut other: Option<&Label> = None;
    let mut unlabelled = false;
    for (start, _) in &places {
        match label_before(page.chars, *start, labels) {
            Some(l) if l.owners.contains(&field.path) => return Placing::Fine,
            Some(l) if !l.weak => other = other.or(Some(l)),
            Some(_) | None => unlabelled = true,
        }
    }
    // A value that also stands where no label is (a seller's name atop the page) is not
    // judged by its other places.
    if let Some(l) = other.filter(|_| !unlabelled) {
        let d = Doubt {
            label: Some(l.said.clone()),
            other: Some(l.owners.join(", ")),
            ..doubt(
                "label",
                &field.path,
                format!(
                    "{} stands under “{}”, a label of {}",
                    shown(value),
                    l.text,
                    l.owners.join(", ")
                ),
            )
        };
        return Placing::Doubted(d, Some(l));
    }
    let own = labels
        .iter()
        .filter(|l| !l.weak && l.owners.contains(&field.path))
        .find(|l| find_label(page.text, l).is_some());
    match own {
        Some(own) if value.is_number() => Placing::Doubted(
            Doubt {
                label: Some(own.said.clone()),
                ..doubt(
                    "label",
                    &field.path,
                    format!(
                        "{} does not stand under its label “{}”, which is in the document",
                        shown(value),
                        own.text
                    ),
                )
            },
            None,
        ),
        _ => Placing::Away,
    }
}

/// A text value found in the document under no label of its own ([`Placing::Away`]), while a
/// label of its field alone stands in the document with another value after it: the document
/// says what the field holds, and the answer is something else.
fn text_off_label(
    hay: &Haystack,
    page: &Page,
    field: &Field,
    value: &str,
    labels: &[Label],
) -> Option<Doubt> {
    let want = grounding::normalize(value);
    let want = want.trim();
    if want.is_empty() || hay.spent() {
        return None;
    }
    labels
        .iter()
        .filter(|l| !l.weak && l.owners.len() == 1 && l.owners[0] == field.path)
        .find_map(|l| {
            hay.charge(page.text.len());
            let after = values_after(l, page.lines, labels, false);
            // A value the answer holds, or that holds the answer, is the same value.
            let other = after
                .iter()
                .find(|a| !a.contains(want) && !want.contains(a.trim()))?;
            Some(Doubt {
                label: Some(l.said.clone()),
                ..doubt(
                    "label",
                    &field.path,
                    format!(
                        "{} does not stand under its label “{}”, which the document prints \
                         before “{}”",
                        shown(&Value::String(value.to_string())),
                        l.text,
                        crate::sanitize::fit(other, 60)
                    ),
                )
            })
        })
}

/// The label nearest before char offset `start` of the text, within the window; of labels
/// that end at the same place, the longest.
fn label_before<'l>(chars: &[char], start: usize, labels: &'l [Label]) -> Option<&'l Label> {
    let from = start.saturating_sub(LABEL_WINDOW_CHARS);
    let window: String = chars[from..start.min(chars.len())].iter().collect();
    let lines: Vec<&str> = window.split('\n').collect();
    let mut keep = lines.len().saturating_sub(LABEL_WINDOW_LINES);
    // A blank line ends a block: a label above it is another block's.
    if let Some(blank) = lines[..lines.len() - 1]
        .iter()
        .rposition(|l| l.trim().is_empty())
    {
        keep = keep.max(blank + 1);
    }
    let window = grounding::normalize(&lines[keep..].join("\n"));
    let (_, _, label) = labels
        .iter()
        .filter_map(|l| last_label(&window, l).map(|end| (end, l.text.len(), l)))
        .max_by_key(|(end, len, _)| (*end, *len))?;
    // `Upstream-Name: highwayhash` then `Upstream-Contact: Minio Inc.`: a label, a colon and
    // its value on its own line is one key of a list, and a later line's key, known or not, is the one
    // the value stands under. A label alone on its line (`Bill to:`, `购买方信息`) heads a block
    // whose lines may have keys of their own (`名称：`).
    let kept = &lines[keep..];
    let at = kept
        .iter()
        .rposition(|l| !places_of(&grounding::normalize(l), label).is_empty());
    if let Some(at) = at {
        let line = grounding::normalize(kept[at]);
        let end = places_of(&line, label)
            .last()
            .copied()
            .unwrap_or(line.len());
        let rest = &line[end..];
        let holds_value =
            rest.trim_start().starts_with([':', '：']) && !skip_separators(rest).is_empty();
        if holds_value && kept[at + 1..].iter().any(|l| begins_with_key(l)) {
            return None;
        }
    }
    Some(label)
}

/// Whether a line begins with a key ([`key_of`]).
fn begins_with_key(line: &str) -> bool {
    key_of(line.trim_start()).is_some()
}

/// The key `s` begins with, and what follows its colon: one to three words of letters
/// (hyphens and dots inside), then a colon that does not begin a URL (`Upstream-Contact: …`,
/// `名称：…`; not `https://…`).
fn key_of(s: &str) -> Option<(&str, &str)> {
    let (head, rest) = s.split_once([':', '：'])?;
    let words: Vec<&str> = head.split_whitespace().collect();
    let key = (1..=3).contains(&words.len())
        && words.iter().all(|w| {
            w.chars().next().is_some_and(char::is_alphabetic)
                && w.chars().all(|c| c.is_alphabetic() || c == '-' || c == '.')
        })
        && !rest.starts_with("//");
    key.then_some((head, rest))
}

/// Where the first place of label `l` in `text` ends (bytes), standing as a word.
fn find_label(text: &str, l: &Label) -> Option<usize> {
    places_of(text, l).first().copied()
}

/// Where the last place of label `l` in `text` ends (bytes), standing as a word.
fn last_label(text: &str, l: &Label) -> Option<usize> {
    places_of(text, l).last().copied()
}

/// Where each place of label `l` in `text` ends (bytes). A label in letters stands as whole
/// words; one of several words may have up to two other words between its own on one line
/// (`Total due` in `Total amount due`).
fn places_of(text: &str, l: &Label) -> Vec<usize> {
    if !l.word {
        return text
            .match_indices(l.text.as_str())
            .map(|(at, m)| at + m.len())
            .collect();
    }
    let want: Vec<&str> = l.text.split(' ').collect();
    let words = words_of(text);
    let mut out = Vec::new();
    for (i, (w, _, _)) in words.iter().enumerate() {
        if *w != want[0] {
            continue;
        }
        let (mut at, mut end) = (i, words[i].2);
        let mut whole = true;
        for next in &want[1..] {
            let found = (at + 1..words.len())
                .take(3)
                .take_while(|&k| !words[k].1)
                .find(|&k| words[k].0 == *next);
            match found {
                Some(k) => {
                    at = k;
                    end = words[k].2;
                }
                None => {
                    whole = false;
                    break;
                }
            }
        }
        if whole {
            out.push(end);
        }
    }
    out
}

/// The words of `text`: each with whether a line break comes before it, and where it ends.
fn words_of(text: &str) -> Vec<(&str, bool, usize)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut broke = false;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        if c.is_alphanumeric() {
            start.get_or_insert(i);
            continue;
        }
        if let Some(s) = start.take() {
            out.push((&text[s..i], broke, i));
            broke = false;
        }
        if c == '\n' {
            broke = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Grounding, then the doubts drawn from it, as the judge runs them.
    fn extraction(
        text: &str,
        object: &Value,
        fields: &[Field],
        stop: &dyn Fn() -> bool,
    ) -> Vec<Doubt> {
        let hay = Haystack::new(text);
        let found = grounding::ground_in(&hay, object, stop);
        super::extraction(text, &hay, &found, object, fields, stop)
    }

    fn schema() -> Vec<Field> {
        crate::skills::schema::fields(&json!({
            "type": "object",
            "properties": {
                "seller": {"type": "string", "description": "Who issued the invoice (销售方, Seller)"},
                "buyer": {"type": "string", "description": "Who is billed (购买方, \"Bill to\")"},
                "currency": {"type": "string"},
                "amount": {"type": "number", "x-labels": ["金额", "合计金额", "Subtotal", "Net amount"]},
                "total": {"type": "number", "description": "The total, tax included (价税合计（小写）, Total due)"},
                "items": {"type": "array", "items": {"type": "object", "properties": {
                    "quantity": {"type": "number", "x-labels": ["数量", "Qty"]}}}}
            }
        }))
    }

    const FAPIAO: &str = "电子发票（增值税专用发票）\n发票号码：24312000000045678901\n开票日期：2026年03月14日\n\
        购买方信息\n名称：上海明远科技有限公司\n统一社会信用代码/纳税人识别号：91310000MA1FL0XX2K\n\
        销售方信息\n名称：杭州云杉办公用品有限公司\n统一社会信用代码/纳税人识别号：91330100MA2H0YY81Q\n\
        项目名称 数量 单价 金额 税率 税额\n*办公用品*打印纸 500 2.40 1200.00 13% 156.00\n\
        合计 ¥1200.00 ¥156.00\n价税合计（大写）壹仟叁佰伍拾陆圆整 （小写）¥1356.00\n";

    /// The doubts other than `missing` (the tests that judge a partial answer).
    fn checks(d: &[Doubt]) -> Vec<(String, String)> {
        d.iter()
            .filter(|d| d.check != "missing")
            .map(|d| (d.field.clone().unwrap_or_default(), d.check.clone()))
            .collect()
    }

    /// A schema a user writes: plain descriptions, no label named.
    fn plain_schema() -> Vec<Field> {
        crate::skills::schema::fields(&json!({
            "type": "object",
            "properties": {
                "invoice_number": {"type": "string", "description": "the invoice number"},
                "date": {"type": "string", "description": "the invoice date"},
                "seller": {"type": "string", "description": "the seller's name"},
                "buyer": {"type": "string", "description": "the buyer's name"}
            }
        }))
    }

    const GLOBEX: &str = "GLOBEX CORPORATION\n2200 Innovation Way, Austin\n\n\
        Invoice No.: GX-7781\nDate: November 3, 2026\n\nSold to: Initech LLC, Austin\n";

    #[test]
    fn a_value_right_after_its_generic_name_is_not_under_the_label_above() {
        let right = json!({"invoice_number": "GX-7781", "date": "November 3, 2026",
            "seller": "GLOBEX CORPORATION", "buyer": "Initech LLC"});
        assert_eq!(
            checks(&extraction(GLOBEX, &right, &plain_schema(), &|| false)),
            []
        );
        // The swap is still seen: the buyer's name, under `Sold to`, given as the seller.
        let swapped = json!({"invoice_number": "GX-7781", "date": "November 3, 2026",
            "seller": "Initech LLC", "buyer": "GLOBEX CORPORATION"});
        let doubted = checks(&extraction(GLOBEX, &swapped, &plain_schema(), &|| false));
        assert!(
            doubted.contains(&("seller".into(), "label".into())),
            "{doubted:?}"
        );
        // A date under the invoice number's own label, with no name of its own between.
        let text = "Invoice No.: November 3, 2026\n";
        let wrong = json!({"date": "November 3, 2026"});
        let doubted = checks(&extraction(text, &wrong, &plain_schema(), &|| false));
        assert!(
            doubted.contains(&("date".into(), "label".into())),
            "{doubted:?}"
        );
    }

    /// A Debian copyright file's header, as `scripts/fetch-copyright.sh` takes them.
    const COPYRIGHT: &str = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\
        Upstream-Contact: Will Thompson <will.thompson@collabora.co.uk>\n\
        Upstream-Name: bustle\nSource: http://www.willthompson.co.uk/bustle/releases/\n\n\
        Files: *\nCopyright: (C) 2008-2011 Collabora Ltd. <http://www.collabora.co.uk>\n\
        License: LGPL-2.1+\n\nFiles: bustle-dbus-monitor.c\nCopyright: 2003 Philip Blundell\n\
        License: GPL-2+\n";

    fn copyright_schema() -> Vec<Field> {
        crate::skills::schema::fields(&json!({
            "type": "object",
            "properties": {
                "upstream_name": {"type": "string", "description": "the name of the upstream project"},
                "license": {"type": "string", "description": "the short name of the licence"},
                "source": {"type": "string", "description": "where the upstream source can be found"}
            }
        }))
    }

    #[test]
    fn a_text_value_away_from_its_own_label_is_doubted_when_the_label_holds_another() {
        let right = json!({"upstream_name": "bustle", "license": "LGPL-2.1+",
            "source": "http://www.willthompson.co.uk/bustle/releases/"});
        assert_eq!(
            checks(&extraction(COPYRIGHT, &right, &copyright_schema(), &|| {
                false
            })),
            []
        );
        // Another paragraph's licence still stands under its own label: not doubted here.
        let other_licence = json!({"license": "GPL-2+"});
        assert_eq!(
            checks(&extraction(
                COPYRIGHT,
                &other_licence,
                &copyright_schema(),
                &|| false
            )),
            []
        );
        // The copyright holder for the project's name, its web site for the source.
        let wrong = json!({"upstream_name": "Collabora Ltd.", "license": "LGPL-2.1+",
            "source": "http://www.collabora.co.uk"});
        let doubts = extraction(COPYRIGHT, &wrong, &copyright_schema(), &|| false);
        let got = checks(&doubts);
        assert_eq!(
            got,
            [
                ("upstream_name".to_string(), "label".to_string()),
                ("source".to_string(), "label".to_string())
            ],
            "{doubts:?}"
        );
        assert!(
            doubts[0].detail.contains("upstream name") && doubts[0].detail.contains("bustle"),
            "{}",
            doubts[0].detail
        );
        // Part of the source's URL for the name: the name is doubted, the source, which holds
        // it, is no swap's other side.
        let text = "Upstream-Name: inject\nSource: https://github.com/facebookgo/inject\n";
        let part = json!({"upstream_name": "facebookgo/inject",
            "source": "https://github.com/facebookgo/inject"});
        let got = checks(&extraction(text, &part, &copyright_schema(), &|| false));
        assert_eq!(got, [("upstream_name".into(), "label".into())]);
        // A key of its own between the value and the field's label: `Upstream-Contact`.
        let text = "Upstream-Name: highwayhash\nUpstream-Contact: Minio Inc. (https://github.com/minio>\n\
            Source: https://github.com/minio/highwayhash\n\nFiles: *\nCopyright: 2017 Minio Inc.\n";
        let contact = json!({"upstream_name": "Minio Inc."});
        let got = checks(&extraction(text, &contact, &copyright_schema(), &|| false));
        assert_eq!(got, [("upstream_name".into(), "label".into())]);
        // With no label of the field in the document, a value is not judged by its place.
        let headless = COPYRIGHT.replace("Upstream-Name: bustle\n", "");
        let got = checks(&extraction(&headless, &wrong, &copyright_schema(), &|| {
            false
        }));
        assert!(
            !got.contains(&("upstream_name".into(), "label".into())),
            "{got:?}"
        );
    }

    #[test]
    fn a_number_with_no_figure_is_doubted() {
        let fields = crate::skills::schema::fields(&json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "the command the page documents"},
                "section": {"type": "string", "description": "the manual section number"},
                "pages": {"type": "string", "description": "the number of pages"},
                "ticket_no": {"type": "string"}
            }
        }));
        let text = "LS(1) General Commands Manual LS(1)\nNAME\n ls - list directory contents\n\
            Ticket 12; about nine pages\n";
        let header = json!({"command": "ls", "section": "General Commands Manual",
            "pages": "nine", "ticket_no": "Ticket"});
        let got = checks(&extraction(text, &header, &fields, &|| false));
        assert!(
            got.contains(&("section".into(), "no_figure".into())),
            "{got:?}"
        );
        assert!(
            got.contains(&("ticket_no".into(), "no_figure".into())),
            "{got:?}"
        );
        // A count is not a number's name; a number in words or Chinese numerals has its figure.
        assert!(
            !got.iter().any(|(f, _)| f == "pages" || f == "command"),
            "{got:?}"
        );
        let right = json!({"command": "ls", "section": "1", "pages": "nine", "ticket_no": "12"});
        assert_eq!(checks(&extraction(text, &right, &fields, &|| false)), []);
        let chinese = json!({"section": "第一节"});
        let got = checks(&extraction("第一节", &chinese, &fields, &|| false));
        assert!(!got.iter().any(|(_, c)| c == "no_figure"), "{got:?}");
    }

    #[test]
    fn a_right_answer_has_no_doubt() {
        let right = json!({"seller": "杭州云杉办公用品有限公司", "buyer": "上海明远科技有限公司",
            "currency": "CNY", "amount": 1200.0, "total": 1356.0, "items": [{"quantity": 500}]});
        assert_eq!(
            checks(&extraction(FAPIAO, &right, &schema(), &|| false)),
            []
        );
    }

    #[test]
    fn swapped_parties_a_pre_tax_total_and_an_invented_currency_are_doubted() {
        let wrong = json!({"seller": "上海明远科技有限公司", "buyer": "上海明远科技有限公司",
            "currency": "USD", "amount": 1200.0, "total": 1200.0});
        let got = checks(&extraction(FAPIAO, &wrong, &schema(), &|| false));
        for want in [
            ("currency", "ungrounded"),
            ("buyer", "same_value"),
            ("seller", "label"),
            ("total", "label"),
        ] {
            assert!(
                got.contains(&(want.0.to_string(), want.1.to_string())),
                "{want:?} not in {got:?}"
            );
        }
        // The quantity given as the total stands under the items' columns.
        let qty = json!({"total": 500});
        let got = extraction(FAPIAO, &qty, &schema(), &|| false);
        assert!(
            checks(&got).contains(&("total".into(), "label".into())),
            "{got:?}"
        );
    }

    #[test]
    fn an_english_net_amount_as_the_total_is_doubted_and_subtotal_is_not_total() {
        let text = "ACME Tools Ltd.\n1 Mill Road, Leeds\nBill to: Northwind Traders\nInvoice INV-2041\n\
                    Subtotal: 1,200.00\nVAT 20%: 240.00\nTotal due: 1,440.00\n";
        let s = schema();
        assert_eq!(
            checks(&extraction(
                text,
                &json!({"seller": "ACME Tools Ltd.", "buyer": "Northwind Traders", "total": 1440}),
                &s,
                &|| false
            )),
            []
        );
        let got = checks(&extraction(
            text,
            &json!({"seller": "Northwind Traders", "total": 1200}),
            &s,
            &|| false,
        ));
        assert_eq!(
            got,
            [
                ("seller".into(), "label".into()),
                ("total".into(), "label".into())
            ]
        );
    }

    #[test]
    fn a_value_after_its_own_generic_name_is_not_under_the_line_aboves_label() {
        // `Date` is no label (too generic), and `Invoice No.` stands on the line above.
        let fields = crate::skills::schema::fields(&json!({
            "type": "object",
            "properties": {
                "invoice_number": {"type": "string"},
                "date": {"type": "string"}
            }
        }));
        let text = "GLOBEX CORPORATION\n\nInvoice No.: GX-7781\nDate: November 3, 2026\n";
        let right = json!({"invoice_number": "GX-7781", "date": "November 3, 2026"});
        assert_eq!(checks(&extraction(text, &right, &fields, &|| false)), []);
        let swapped = json!({"invoice_number": "November 3, 2026", "date": "GX-7781"});
        let got = checks(&extraction(text, &swapped, &fields, &|| false));
        assert!(
            got.contains(&("invoice_number".into(), "label".into())),
            "{got:?}"
        );
    }

    #[test]
    fn a_swap_doubts_both_sides_even_where_one_stands_unlabelled() {
        // The seller's name atop the page has no label: given as the buyer, only the swap
        // tells it is wrong.
        let text = "ACME Tools Ltd.\n1 Mill Road, Leeds\n\nBill to:\nNorthwind Traders\nTotal due: 1,440.00\n";
        let swapped =
            json!({"seller": "Northwind Traders", "buyer": "ACME Tools Ltd.", "total": 1440});
        let got = extraction(text, &swapped, &schema(), &|| false);
        assert_eq!(
            checks(&got),
            [
                ("seller".into(), "label".into()),
                ("buyer".into(), "label".into())
            ],
            "{got:?}"
        );
        assert!(got[1].detail.contains("was given as seller"), "{got:?}");
        let right =
            json!({"seller": "ACME Tools Ltd.", "buyer": "Northwind Traders", "total": 1440});
        assert_eq!(checks(&extraction(text, &right, &schema(), &|| false)), []);
    }

    #[test]
    fn a_value_that_begins_with_a_label_is_a_line_copied() {
        let text = "HOOLI B.V.\nBilled to: Pied Piper GmbH, Berlin\n";
        let got = extraction(
            text,
            &json!({"buyer": "Billed to: Pied Piper GmbH, Berlin"}),
            &schema(),
            &|| false,
        );
        assert_eq!(checks(&got), [("buyer".into(), "holds_label".into())]);
        let scoped = json!({"buyer": "HTTP::Link::Parser"});
        let got = checks(&extraction(
            "HTTP::Link::Parser\n",
            &scoped,
            &schema(),
            &|| false,
        ));
        assert_eq!(got, []);
        let time = json!({"buyer": "Pied Piper GmbH"});
        assert_eq!(checks(&extraction(text, &time, &schema(), &|| false)), []);
    }

    #[test]
    fn an_empty_field_whose_label_has_a_value_is_missing() {
        let text = "ACME Tools Ltd.\nBill to: Northwind Traders\nSubtotal: 1,200.00\nVAT 20%: 240.00\n\
                    Total due:\n1,440.00\n";
        let answer = json!({"seller": "ACME Tools Ltd.", "buyer": null, "amount": null,
            "total": null, "currency": null});
        let mut got: Vec<String> = extraction(text, &answer, &schema(), &|| false)
            .into_iter()
            .filter(|d| d.check == "missing")
            .map(|d| d.field.unwrap_or_default())
            .collect();
        got.sort();
        // The total's value is on the line under its label; the currency has no label.
        assert_eq!(got, ["amount", "buyer", "total"]);
        // A label with no value after it (a table's header) is no sign of a value.
        let header = "Seller: ACME\nQty Unit price Subtotal\n";
        let got = extraction(header, &json!({"seller": "ACME"}), &schema(), &|| false);
        assert!(got.iter().all(|d| d.check != "missing"), "{got:?}");
        // Nor a label inside another term, a header over an item row, a label above a blank
        // line or above another label.
        for (text, want) in [
            ("ACME\nVAT No: GB 123 4567 89\nNet amount ID: 77\n", vec![]),
            ("Qty Subtotal\n4 555.00\n", vec![]),
            ("ACME\nBill to:\n\nInvoice No: 123\n", vec![]),
            ("ACME\nBill to:\nSubtotal: 5\n", vec!["amount"]),
        ] {
            let got = extraction(text, &json!({"seller": "ACME"}), &schema(), &|| false);
            let missing: Vec<&str> = got
                .iter()
                .filter(|d| d.check == "missing")
                .filter_map(|d| d.field.as_deref())
                .collect();
            assert_eq!(missing, want, "{text}");
        }
        // A key with a dot in it is looked up whole.
        assert!(!is_empty_at(&json!({"Invoice No.": "7"}), "Invoice No."));
        // A right answer to the 发票 leaves nothing missing.
        let right = json!({"seller": "杭州云杉办公用品有限公司", "buyer": "上海明远科技有限公司",
            "currency": "CNY", "amount": 1200.0, "total": 1356.0, "items": []});
        let got = extraction(FAPIAO, &right, &schema(), &|| false);
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn labels_come_from_x_labels_else_the_description_then_the_name() {
        let s = schema();
        // The description's terms first, then those found from the name; none twice.
        assert_eq!(
            field_labels(&s[4]),
            [
                "价税合计（小写）",
                "价税合计",
                "Total due",
                "total",
                "amount due",
                "grand total"
            ]
        );
        assert_eq!(field_labels(&s[1])[..2], ["购买方", "Bill to"]);
        assert!(field_labels(&s[1]).contains(&"buyer".to_string()));
        // `x-labels` replace every other label.
        assert_eq!(
            field_labels(&s[3]),
            ["金额", "合计金额", "Subtotal", "Net amount"]
        );
        assert!(field_labels(&s[2]).is_empty());
    }
}
