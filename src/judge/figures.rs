//! Figures a condensed answer states that its source does not (docs/skills.md#figures): a
//! small model writing a summary invents dates, amounts and quarters ("10月28日" where the
//! document says 10月15日), and a reader trusts figures most. Numbers are compared by value,
//! not by how they are written: full-width digits, thousands separators and decimal commas are
//! normalised, and a date is its parts (`2026年10月12日`, `2026-10-12` and `12 Oct 2026` all give
//! 2026, 10 or Oct, 12), so a figure is grounded when each of its numbers occurs in the source.

use super::numbers::Decimal;
use std::collections::HashSet;
use unicode_normalization::UnicodeNormalization;

/// One number of a text: its value, how it was written (with a unit or a letter it is
/// attached to: "28日", "12%", "Q3"), and whether it had such a mark.
struct Figure {
    value: String,
    /// The value times its scale word, when it has one ("120万" is also 1200000).
    scaled: Option<String>,
    shown: String,
    marked: bool,
}

/// The value of `number` times `scale`, as [`value`] writes numbers.
fn times(number: &str, scale: f64) -> Option<String> {
    let n: f64 = number.parse().ok()?;
    let v = n * scale;
    (v.is_finite() && v < 1e18).then(|| value(&format!("{v:.6}"), Decimal::Either))
}

/// The numbers of `text` (`1,200.50` → `1200.5`, `０７` → `7`), and the month numbers its month
/// names stand for.
fn numbers(text: &str, decimal: Decimal) -> Vec<Figure> {
    let norm: String = text.nfkc().collect();
    let chars: Vec<char> = norm.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        // A digit run with separators inside it: 1,200.50 / 3.5 (1 200 is two numbers).
        let start = i;
        let mut j = i;
        while j < chars.len()
            && (chars[j].is_ascii_digit()
                || (matches!(chars[j], ',' | '.')
                    && j + 1 < chars.len()
                    && chars[j + 1].is_ascii_digit()))
        {
            j += 1;
        }
        let written: String = chars[start..j].iter().collect();
        let unit = chars
            .get(j)
            .filter(|c| matches!(c, '%' | '年' | '月' | '日' | '号' | '元' | '万' | '亿'));
        let letter = start
            .checked_sub(1)
            .map(|k| chars[k])
            .filter(|c| c.is_ascii_alphabetic());
        let mut shown = String::new();
        shown.extend(letter);
        shown.push_str(&written);
        shown.extend(unit);
        let next_word: String = chars[j..]
            .iter()
            .skip_while(|c| **c == ' ')
            .take_while(|c| c.is_ascii_alphabetic())
            .collect::<String>()
            .to_lowercase();
        let scale = match (unit, next_word.as_str()) {
            (Some('万'), _) => Some(1e4),
            (Some('亿'), _) => Some(1e8),
            (_, "thousand") => Some(1e3),
            (_, "million" | "m") => Some(1e6),
            (_, "billion" | "bn") => Some(1e9),
            _ => None,
        };
        let v = value(&written, decimal);
        out.push(Figure {
            scaled: scale.and_then(|sc| times(&v, sc)),
            value: v,
            shown,
            marked: unit.is_some() || letter.is_some(),
        });
        i = j;
    }
    out.extend(month_numbers(&norm));
    out
}

/// "12 Oct 2026" holds the month 10: month names as numbers, so a date written either way is
/// the same date.
fn month_numbers(text: &str) -> Vec<Figure> {
    text.split(|c: char| !c.is_ascii_alphabetic())
        .filter_map(super::numbers::month)
        .map(|m| Figure {
            value: m.to_string(),
            scaled: None,
            shown: String::new(),
            marked: false,
        })
        .collect()
}

/// A number's value as text, read as every part of zhi reads numbers ([`super::numbers`]):
/// `1,200.50` is `1200.5`, `3,5` is `3.5`; what reads as no one number stays as written.
fn value(written: &str, decimal: Decimal) -> String {
    super::numbers::number_as(written, decimal)
        .map_or_else(|| written.to_string(), |n| format!("{n}"))
}

/// The figures of `answer` whose numbers occur nowhere in `source` (as they were written in
/// the answer, in order, each once). Single digits are left out unless they carry a unit (a
/// list's "1." or "three points" is no figure to check); so are numbers in `also` (the
/// instructions and arguments the answer was given).
pub(crate) fn ungrounded(answer: &str, source: &str, also: &str) -> Vec<String> {
    // The source says which mark its decimals take; its figures and the answer's are read so.
    let decimal = Decimal::of_text(source);
    // A figure tied to a letter ("Q3", "v2") is grounded only as written: Q3 is no month 3.
    let written: String = format!("{source}\n{also}")
        .nfkc()
        .collect::<String>()
        .to_lowercase();
    let known: HashSet<String> = numbers(source, decimal)
        .into_iter()
        .chain(numbers(also, decimal))
        .flat_map(|f| [Some(f.value), f.scaled])
        .flatten()
        .collect();
    let mut out: Vec<String> = Vec::new();
    for f in numbers(answer, decimal)
        .into_iter()
        .filter(|f| !f.shown.is_empty())
    {
        if f.value.len() == 1 && !f.marked {
            continue;
        }
        let lettered = f.shown.starts_with(|c: char| c.is_ascii_alphabetic());
        let grounded = if lettered {
            written.contains(&f.shown.to_lowercase())
        } else {
            known.contains(&f.value) || f.scaled.as_ref().is_some_and(|v| known.contains(v))
        };
        if grounded || out.contains(&f.shown) {
            continue;
        }
        out.push(f.shown);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_compared_by_value() {
        let src = "会议于2026年10月15日举行，预算1,200,000元，增长12%。Revenue was 4.50 million.";
        assert_eq!(
            ungrounded("10月28日前完成；预算120万？增长12%，收入4.5百万", src, ""),
            ["28日"]
        );
        assert!(ungrounded("Budget: 1200000; date 2026-10-15; growth 12 %", src, "").is_empty());
        assert!(ungrounded("on 2026-10-12", "on 12 Oct 2026", "").is_empty());
        assert_eq!(ungrounded("预算130万", src, ""), ["130万"]);
        assert!(ungrounded("4,500,000 in revenue", "revenue of 4.5 million", "").is_empty());
        assert_eq!(
            ungrounded("In Q3 2023 revenue rose", src, ""),
            ["Q3", "2023"]
        );
    }

    #[test]
    fn list_numbers_and_given_numbers_are_not_figures() {
        assert!(ungrounded("1. first\n2. second\n3 points", "no numbers here", "").is_empty());
        assert!(ungrounded("in 300 words", "text", "at most 300 words").is_empty());
        assert_eq!(
            ungrounded("20 GB", "２０ GB were freed", ""),
            Vec::<String>::new()
        );
    }

    #[test]
    fn separators_and_decimal_commas() {
        assert_eq!(value("1,200", Decimal::Either), "1200");
        assert_eq!(value("3,5", Decimal::Either), "3.5");
        assert_eq!(value("1.200.000,50", Decimal::Either), "1200000.5");
        assert_eq!(value("007", Decimal::Either), "7");
        assert_eq!(value("0.50", Decimal::Either), "0.5");
    }
}
