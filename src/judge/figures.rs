//! Figures a condensed answer states that its source does not (docs/skills.md#figures): a
//! small model writing a summary invents dates, amounts and quarters ("10月28日" where the
//! document says 10月15日), and a reader trusts figures most. Numbers are compared by value,
//! not by how they are written: full-width digits, thousands separators and decimal commas are
//! normalised, and a date is its parts (`2026年10月12日`, `2026-10-12` and `12 Oct 2026` all give
//! 2026, 10 or Oct, 12), so a figure is grounded when each of its numbers occurs in the source.

use super::numbers::Decimal;
use super::source_index::SourceIndex;
use super::work::Work;
use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
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
/// names stand for; those before the work ran out, when it did.
fn numbers(text: &str, decimal: Decimal, work: &Work) -> Vec<Figure> {
    let norm: String = text.nfkc().collect();
    let chars: Vec<char> = norm.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        work.charge(1);
        if work.over() {
            return out;
        }
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
        // Nine letters at most: no scale word is longer than eight.
        let next_word: String = chars[j..]
            .iter()
            .skip_while(|c| **c == ' ')
            .take_while(|c| c.is_ascii_alphabetic())
            .take(9)
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
        work.charge(j - start);
        let v = value(&written, decimal);
        out.push(Figure {
            scaled: scale.and_then(|sc| times(&v, sc)),
            value: v,
            shown,
            marked: unit.is_some() || letter.is_some(),
        });
        i = j;
    }
    work.charge(chars.len());
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

/// Ungrounded figures named at most (in the record, the transcript and the hint to the
/// model); more are counted, not named.
pub(crate) const MAX_NAMED: usize = 50;

/// What the figures check found in one answer.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Ungrounded {
    /// The figures found nowhere, as written in the answer, in order, each once: the first
    /// [`MAX_NAMED`] of them.
    pub named: Vec<String>,
    /// How many such figures in all, named or not.
    pub count: usize,
    /// The check ended before the answer's last figure (its work spent, or the run stopping):
    /// the figures after it were not looked at, neither grounded nor not.
    pub cut: bool,
}

impl Ungrounded {
    /// The named figures as one list, the count of the others after them.
    pub(crate) fn list(&self) -> String {
        let mut list = self.named.join(", ");
        if self.count > self.named.len() {
            list.push_str(&format!(" … +{}", self.count - self.named.len()));
        }
        list
    }
}

/// The figures of `answer` whose numbers occur nowhere in `source` (as they were written in
/// the answer, in order, each once). Single digits are left out unless they carry a unit (a
/// list's "1." or "three points" is no figure to check); so are numbers in `also` (the
/// instructions and arguments the answer was given).
///
/// Linear in the answer: the source's values are a set, and a figure tied to a letter is
/// looked up in an index of the source's places built once, never by a pass over the source
/// per figure. `stop` is asked between figures ([`Work`]); the figures after a stop, or after
/// the work is spent, are not looked at, and the answer says so ([`Ungrounded::cut`]).
pub(crate) fn ungrounded(
    answer: &str,
    source: &str,
    also: &str,
    stop: &dyn Fn() -> bool,
) -> Ungrounded {
    ungrounded_within(answer, source, also, &Work::new(stop))
}

/// [`ungrounded`], its work charged to `work`.
fn ungrounded_within(answer: &str, source: &str, also: &str, work: &Work) -> Ungrounded {
    // The source says which mark its decimals take; its figures and the answer's are read so.
    let decimal = Decimal::of_text(source);
    // A figure tied to a letter ("Q3", "v2") is grounded only as written: Q3 is no month 3.
    // Built on the first such figure.
    let written: OnceCell<SourceIndex> = OnceCell::new();
    let known: HashSet<String> = numbers(source, decimal, work)
        .into_iter()
        .chain(numbers(also, decimal, work))
        .flat_map(|f| [Some(f.value), f.scaled])
        .flatten()
        .collect();
    let mut out = Ungrounded::default();
    let mut seen: HashSet<String> = HashSet::new();
    // Whether each lettered figure met so far is written in the source.
    let mut lettered_found: HashMap<String, bool> = HashMap::new();
    let figures = numbers(answer, decimal, work);
    out.cut = work.over();
    for f in figures.into_iter().filter(|f| !f.shown.is_empty()) {
        if out.cut || work.over() {
            out.cut = true;
            break;
        }
        work.charge(f.shown.len());
        if f.value.len() == 1 && !f.marked {
            continue;
        }
        let lettered = f.shown.starts_with(|c: char| c.is_ascii_alphabetic());
        let grounded = if lettered {
            let needle = f.shown.to_lowercase();
            match lettered_found.get(&needle) {
                Some(found) => *found,
                None => {
                    let index = written
                        .get_or_init(|| SourceIndex::new(&source_and_also(source, also), work));
                    let Some(found) = index.contains(&needle, work) else {
                        out.cut = true;
                        break;
                    };
                    lettered_found.insert(needle, found);
                    found
                }
            }
        } else {
            known.contains(&f.value) || f.scaled.as_ref().is_some_and(|v| known.contains(v))
        };
        if grounded || !seen.insert(f.shown.clone()) {
            continue;
        }
        out.count += 1;
        if out.named.len() < MAX_NAMED {
            out.named.push(f.shown);
        }
    }
    out
}

/// The text a lettered figure is looked for in: the source and what the answer was given,
/// NFKC and lower case, as the figure is.
fn source_and_also(source: &str, also: &str) -> String {
    format!("{source}\n{also}")
        .nfkc()
        .collect::<String>()
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures named, the check never stopped.
    fn ungrounded(answer: &str, source: &str, also: &str) -> Vec<String> {
        super::ungrounded(answer, source, also, &|| false).named
    }

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

    /// `1, 2, 3, …` up to `n`: what a looping small model writes.
    fn counting(n: u32) -> String {
        (1..=n).map(|i| format!("{i}, ")).collect()
    }

    #[test]
    fn a_counting_answer_is_read_once() {
        // 1.3 MB: before the check was linear it took minutes (a list of every figure found
        // so far searched per figure).
        let answer = counting(200_000);
        let work = Work::new(&|| false);
        let found = ungrounded_within(&answer, "The meeting is on 12 March.", "", &work);
        // 1 to 9 are single digits, 12 is in the source.
        assert_eq!(found.count, 200_000 - 10);
        assert_eq!(found.named.len(), MAX_NAMED);
        assert_eq!(found.named[..3], ["10", "11", "13"]);
        assert!(
            found
                .list()
                .ends_with(&format!(" … +{}", 200_000 - 10 - MAX_NAMED))
        );
        assert!(!found.cut);
        assert!(
            work.done() <= 3 * answer.len() as u64,
            "{} units for {} bytes",
            work.done(),
            answer.len()
        );
    }

    #[test]
    fn lettered_figures_are_looked_up_in_an_index_not_the_source() {
        // Every figure tied to a letter, none in the source but one at its very end: a search
        // of the source per figure read all of it 100,000 times.
        let source = format!(
            "{}Q7 closes it.",
            "The quarter went as planned. ".repeat(4_000)
        );
        let answer: String = (1..=100_000).map(|i| format!("Q{i} ")).collect();
        let work = Work::new(&|| false);
        let found = ungrounded_within(&answer, &source, "", &work);
        assert_eq!(found.count, 100_000 - 1);
        assert_eq!(found.named[..3], ["Q1", "Q2", "Q3"]);
        let read = (answer.len() + source.len()) as u64;
        assert!(
            work.done() <= 4 * read,
            "{} units for {read} bytes",
            work.done()
        );
    }

    #[test]
    fn a_stop_ends_the_check_between_figures_and_says_so() {
        let answer = counting(200_000);
        let asked = std::cell::Cell::new(0u32);
        let stop = || {
            asked.set(asked.get() + 1);
            asked.get() >= 3
        };
        let found = super::ungrounded(&answer, "The meeting is on 12 March.", "", &stop);
        assert!(found.cut);
        assert_eq!(asked.get(), 3, "asked between figures until it said stop");
        assert!(
            found.count < 10_000,
            "{} figures judged after the stop",
            found.count
        );
        // A bound reached is the same: what was not looked at is not named.
        let bounded = ungrounded_within(&answer, "", "", &Work::bounded(2_000_000, &|| false));
        assert!(bounded.cut);
        assert!(bounded.count < 200_000 - 9);
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
