//! Grounding an extracted object (docs/extract.md#grounding): every string and number is
//! looked for in the document's text — exactly, then normalised (Unicode NFKC, case,
//! whitespace, spaces between Chinese characters, number and date spellings), then, for long
//! strings, by a linear fuzzy match — and located by character offsets into that text.

use serde_json::Value;
use std::collections::HashMap;
use unicode_normalization::UnicodeNormalization;

pub use crate::manifest::extraction::{Extraction, Located, Match};

/// Strings at least this long (normalised) may be found by the fuzzy match.
const FUZZY_MIN_CHARS: usize = 12;
/// The share of a value's character pairs a window of the text must hold to be its fuzzy match.
const FUZZY_MIN_SCORE: f64 = 0.8;

/// A document's text, ready to look values up in.
pub struct Haystack<'a> {
    text: &'a str,
    /// The normalised text, one char per entry.
    norm: Vec<char>,
    /// For each normalised char, the index of the original char it came from.
    map: Vec<usize>,
}

impl<'a> Haystack<'a> {
    pub fn new(text: &'a str) -> Self {
        let mut norm = Vec::with_capacity(text.len());
        let mut map = Vec::with_capacity(text.len());
        for (i, c) in text.chars().enumerate() {
            push_normalized(c, i, &mut norm, &mut map);
        }
        // A space between two Chinese or Japanese characters is OCR's or layout's, not the
        // text's: dropped.
        let mut keep = vec![true; norm.len()];
        for k in 1..norm.len().saturating_sub(1) {
            if norm[k] == ' ' && is_cjk(norm[k - 1]) && is_cjk(norm[k + 1]) {
                keep[k] = false;
            }
        }
        let (norm, map) = norm
            .into_iter()
            .zip(map)
            .zip(keep)
            .filter_map(|(p, k)| k.then_some(p))
            .unzip();
        Haystack { text, norm, map }
    }

    /// Where `value` (a string or a number) is in the text, and how it was found.
    pub fn locate(&self, value: &Value) -> Located {
        let found = match value {
            Value::String(s) => self.locate_str(s.trim()),
            Value::Number(n) => self.locate_number(n),
            _ => None,
        };
        match found {
            Some((start, end, how)) => Located {
                start: Some(start),
                end: Some(end),
                how,
            },
            None => Located {
                start: None,
                end: None,
                how: Match::None,
            },
        }
    }

    fn locate_str(&self, s: &str) -> Option<(usize, usize, Match)> {
        // Punctuation alone (`,`, `".`: a grammar's leftovers) is found anywhere and says
        // nothing: never grounded.
        if !s.chars().any(char::is_alphanumeric) {
            return None;
        }
        if let Some(byte) = self.text.find(s) {
            let start = self.text[..byte].chars().count();
            return Some((start, start + s.chars().count(), Match::Exact));
        }
        let value = normalize(s);
        let mut candidates = vec![value.clone()];
        candidates.extend(date_spellings(s));
        if let Some(n) = number_in(s) {
            candidates.extend(number_spellings(n));
        }
        for c in &candidates {
            if let Some(found) = self.find_norm(c, starts_with_digit(c)) {
                return Some((found.0, found.1, Match::Normalized));
            }
        }
        // A currency's code stands for its signs and names (`CNY` where the text has `¥`).
        if let Some(signs) = currency_signs(&value) {
            for sign in signs {
                if let Some(found) = self.find_norm(sign, false) {
                    return Some((found.0, found.1, Match::Normalized));
                }
            }
        }
        let chars: Vec<char> = value.chars().collect();
        if chars.len() >= FUZZY_MIN_CHARS {
            return self
                .fuzzy(&chars)
                .map(|(start, end)| (start, end, Match::Fuzzy));
        }
        None
    }

    fn locate_number(&self, n: &serde_json::Number) -> Option<(usize, usize, Match)> {
        let written = n.to_string();
        if let Some(found) = self.find_norm(&written, true) {
            return Some((found.0, found.1, Match::Exact));
        }
        let v = n.as_f64()?;
        number_spellings(v)
            .iter()
            .find_map(|c| self.find_norm(c, true))
            .map(|(s, e)| (s, e, Match::Normalized))
    }

    /// Every place `value` stands in the text (at most `max`), as original char offsets:
    /// its exact and normalised spellings; a value found only by the fuzzy match has that one
    /// place. Doubts judge a value by the words before each of its places.
    pub(crate) fn occurrences(&self, value: &Value, max: usize) -> Vec<(usize, usize)> {
        let candidates: Vec<(String, bool)> = match value {
            Value::String(s) => {
                let s = s.trim();
                if !s.chars().any(char::is_alphanumeric) {
                    return Vec::new();
                }
                let mut c = vec![(normalize(s), starts_with_digit(s))];
                c.extend(date_spellings(s).into_iter().map(|d| (d, true)));
                if let Some(n) = number_in(s) {
                    c.extend(number_spellings(n).into_iter().map(|d| (d, true)));
                }
                c
            }
            Value::Number(n) => {
                let mut c = vec![(n.to_string(), true)];
                if let Some(v) = n.as_f64() {
                    c.extend(number_spellings(v).into_iter().map(|d| (d, true)));
                }
                c
            }
            _ => return Vec::new(),
        };
        let mut out: Vec<(usize, usize)> = Vec::new();
        for (c, number) in &candidates {
            for found in self.find_norm_all(c, *number, max) {
                if out.len() < max && !out.iter().any(|o| o.0 < found.1 && found.0 < o.1) {
                    out.push(found);
                }
            }
        }
        if out.is_empty()
            && let Located {
                start: Some(s),
                end: Some(e),
                ..
            } = self.locate(value)
        {
            out.push((s, e));
        }
        out.sort_unstable();
        out
    }

    /// Every place of `needle` (normalised) in the normalised text, at most `max`.
    fn find_norm_all(&self, needle: &str, number: bool, max: usize) -> Vec<(usize, usize)> {
        let needle: Vec<char> = needle.chars().collect();
        if needle.is_empty() || needle.len() > self.norm.len() {
            return Vec::new();
        }
        let last = self.norm.len() - needle.len();
        (0..=last)
            .filter(|&k| self.norm[k] == needle[0] && self.norm[k..k + needle.len()] == needle[..])
            .filter(|&k| !number || self.stands_alone(k, k + needle.len()))
            .take(max)
            .map(|k| (self.map[k], self.map[k + needle.len() - 1] + 1))
            .collect()
    }

    /// `needle` (normalised) in the normalised text, as original char offsets. A number must
    /// stand alone: no digit (or digit-grouping mark before a digit) on either side.
    fn find_norm(&self, needle: &str, number: bool) -> Option<(usize, usize)> {
        let needle: Vec<char> = needle.chars().collect();
        if needle.is_empty() || needle.len() > self.norm.len() {
            return None;
        }
        let first = needle[0];
        let last = self.norm.len() - needle.len();
        (0..=last)
            .filter(|&k| self.norm[k] == first && self.norm[k..k + needle.len()] == needle[..])
            .find(|&k| !number || self.stands_alone(k, k + needle.len()))
            .map(|k| (self.map[k], self.map[k + needle.len() - 1] + 1))
    }

    fn stands_alone(&self, start: usize, end: usize) -> bool {
        let at = |i: isize| -> Option<char> {
            (i >= 0 && (i as usize) < self.norm.len()).then(|| self.norm[i as usize])
        };
        let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
        let mark = |c: Option<char>| matches!(c, Some('.' | ','));
        let (s, e) = (start as isize, end as isize);
        !(digit(at(s - 1))
            || (mark(at(s - 1)) && digit(at(s - 2)))
            || digit(at(e))
            || (mark(at(e)) && digit(at(e + 1))))
    }

    /// The window of the text, as long as `value`, holding the largest share of its character
    /// pairs, when that share is at least [`FUZZY_MIN_SCORE`]: one pass, the window's pair
    /// counts updated as it slides.
    fn fuzzy(&self, value: &[char]) -> Option<(usize, usize)> {
        let len = value.len();
        if len < 2 || self.norm.len() < len {
            return None;
        }
        let mut want: HashMap<(char, char), i32> = HashMap::new();
        for w in value.windows(2) {
            *want.entry((w[0], w[1])).or_default() += 1;
        }
        let pairs = (len - 1) as f64;
        let mut have: HashMap<(char, char), i32> = HashMap::new();
        let mut overlap = 0i32;
        let add = |have: &mut HashMap<(char, char), i32>, p: (char, char), overlap: &mut i32| {
            let h = have.entry(p).or_default();
            if *h < want.get(&p).copied().unwrap_or(0) {
                *overlap += 1;
            }
            *h += 1;
        };
        let remove = |have: &mut HashMap<(char, char), i32>, p: (char, char), overlap: &mut i32| {
            let h = have.entry(p).or_default();
            *h -= 1;
            if *h < want.get(&p).copied().unwrap_or(0) {
                *overlap -= 1;
            }
        };
        for k in 0..len - 1 {
            add(&mut have, (self.norm[k], self.norm[k + 1]), &mut overlap);
        }
        let mut best = (overlap, 0usize);
        for start in 1..=self.norm.len() - len {
            remove(
                &mut have,
                (self.norm[start - 1], self.norm[start]),
                &mut overlap,
            );
            let e = start + len - 1;
            add(&mut have, (self.norm[e - 1], self.norm[e]), &mut overlap);
            if overlap > best.0 {
                best = (overlap, start);
            }
        }
        (f64::from(best.0) / pairs >= FUZZY_MIN_SCORE)
            .then(|| (self.map[best.1], self.map[best.1 + len - 1] + 1))
    }
}

/// Every string and number of `object`, with its path, located in `text`.
pub(crate) fn ground(text: &str, object: &Value) -> Extraction {
    let hay = Haystack::new(text);
    let mut out = Extraction {
        valid: true,
        ..Extraction::default()
    };
    let mut leaves = Vec::new();
    collect(object, String::new(), &mut leaves);
    for (path, value) in leaves {
        let found = hay.locate(value);
        if found.how == Match::None {
            out.ungrounded.push(path.clone());
        }
        out.fields.insert(path, found);
    }
    out
}

/// The strings (not empty) and numbers of `v` with their paths (`a.b`, `items[0].c`).
pub(crate) fn collect<'v>(v: &'v Value, path: String, out: &mut Vec<(String, &'v Value)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                collect(x, p, out);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                collect(x, format!("{path}[{i}]"), out);
            }
        }
        Value::String(s) if !s.trim().is_empty() => out.push((path, v)),
        Value::Number(_) => out.push((path, v)),
        _ => {}
    }
}

/// The normalised form of a whole string, as the text is normalised, without spaces at its
/// ends.
pub(crate) fn normalize(s: &str) -> String {
    let norm: String = Haystack::new(s).norm.iter().collect();
    norm.trim().to_string()
}

/// `c` (the `i`th char of the original) as normalised chars: NFKC, lower case, whitespace
/// runs as one space, format characters (zero-width spaces, marks) dropped.
fn push_normalized(c: char, i: usize, norm: &mut Vec<char>, map: &mut Vec<usize>) {
    let mut buf = [0u8; 4];
    for n in c.encode_utf8(&mut buf).nfkc() {
        if matches!(
            n,
            '\u{200b}'..='\u{200f}' | '\u{feff}' | '\u{00ad}' | '\u{2060}'
        ) {
            continue;
        }
        if n.is_whitespace() {
            if norm.last() != Some(&' ') {
                norm.push(' ');
                map.push(i);
            }
            continue;
        }
        for l in n.to_lowercase() {
            norm.push(l);
            map.push(i);
        }
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30ff | 0x3400..=0x4dbf | 0x4e00..=0x9fff | 0xf900..=0xfaff | 0x3000..=0x303f | 0xff00..=0xffef)
}

/// The signs and names that stand for a currency's ISO code in a text (normalised: lower
/// case, NFKC, so `￥` is `¥`).
fn currency_signs(code: &str) -> Option<&'static [&'static str]> {
    Some(match code {
        "cny" | "rmb" => &["¥", "元", "圆", "人民币", "rmb", "cny"],
        "usd" => &["$", "美元", "usd"],
        "eur" => &["€", "欧元", "eur"],
        "gbp" => &["£", "英镑", "gbp"],
        "jpy" => &["¥", "円", "日元", "jpy"],
        "hkd" => &["hk$", "港元", "港币", "hkd"],
        _ => return None,
    })
}

fn starts_with_digit(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// A string that is a plain number (`1,130.00`, `¥1130`, `1130.5`): its value.
fn number_in(s: &str) -> Option<f64> {
    let t: String = s
        .trim()
        .trim_start_matches(['¥', '￥', '$', '€', '£'])
        .chars()
        .filter(|c| *c != ',' && *c != ' ')
        .collect();
    (!t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == '-'))
    .then(|| t.parse().ok())
    .flatten()
}

/// The ways a document may write the number `v`: plain, with two decimals, with thousands
/// separators, with a decimal comma.
fn number_spellings(v: f64) -> Vec<String> {
    let neg = if v < 0.0 { "-" } else { "" };
    let v = v.abs();
    let whole = v.trunc() as u64;
    let cents = ((v - v.trunc()) * 100.0).round() as u64;
    let short = {
        let s = format!("{v}");
        s.split_once('.').map(|(_, f)| f.to_string())
    };
    let mut fractions: Vec<String> = Vec::new();
    if let Some(f) = &short {
        fractions.push(f.clone());
    }
    if cents < 100 {
        let two = format!("{cents:02}");
        if !fractions.contains(&two) && (short.is_some() || cents == 0) {
            fractions.push(two);
        }
    }
    let mut out = Vec::new();
    for (group, point) in [
        ("", "."),
        (",", "."),
        (" ", "."),
        (".", ","),
        (" ", ","),
        ("", ","),
    ] {
        let w = grouped(whole, group);
        if short.is_none() {
            out.push(format!("{neg}{w}"));
        }
        for f in &fractions {
            out.push(format!("{neg}{w}{point}{f}"));
        }
    }
    out.dedup();
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.clone()));
    out
}

fn grouped(n: u64, sep: &str) -> String {
    let digits = n.to_string();
    if sep.is_empty() {
        return digits;
    }
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push_str(sep);
        }
        out.push(c);
    }
    out
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The ways a document may write the date `YYYY-MM-DD` (normalised: lower case).
fn date_spellings(s: &str) -> Vec<String> {
    let parts: Vec<&str> = s.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return Vec::new();
    };
    let (Ok(y), Ok(m), Ok(d)) = (y.parse::<u32>(), m.parse::<u32>(), d.parse::<u32>()) else {
        return Vec::new();
    };
    if !(1000..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Vec::new();
    }
    let month = MONTHS[m as usize - 1];
    let mon = &month[..3];
    let mut out = vec![
        format!("{y}年{m}月{d}日"),
        format!("{y}年{m:02}月{d:02}日"),
        format!("{y}-{m:02}-{d:02}"),
        format!("{y}-{m}-{d}"),
        format!("{y}/{m:02}/{d:02}"),
        format!("{y}/{m}/{d}"),
        format!("{y}.{m:02}.{d:02}"),
        format!("{d:02}.{m:02}.{y}"),
        format!("{d}.{m}.{y}"),
        format!("{d:02}/{m:02}/{y}"),
        format!("{m:02}/{d:02}/{y}"),
        format!("{d}/{m}/{y}"),
        format!("{m}/{d}/{y}"),
    ];
    for name in [month, mon] {
        out.push(format!("{d} {name} {y}"));
        out.push(format!("{d:02} {name} {y}"));
        out.push(format!("{d}. {name} {y}"));
        out.push(format!("{name} {d}, {y}"));
        out.push(format!("{name} {d} {y}"));
        out.push(format!("{d}-{name}-{y}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn span(text: &str, l: &Located) -> String {
        text.chars()
            .skip(l.start.unwrap())
            .take(l.end.unwrap() - l.start.unwrap())
            .collect()
    }

    #[test]
    fn values_are_found_exactly_then_normalised_and_offsets_point_at_them() {
        let text = "Invoice ＩＮＶ-0042\nDate: 12 October 2026\nTotal:  EUR 1.130,00\n开票日期：2026年10月2日\n";
        let hay = Haystack::new(text);
        let l = hay.locate(&json!("INV-0042"));
        assert_eq!(l.how, Match::Normalized);
        assert_eq!(span(text, &l), "ＩＮＶ-0042");
        let l = hay.locate(&json!("2026-10-12"));
        assert_eq!(
            (l.how, span(text, &l).as_str()),
            (Match::Normalized, "12 October 2026")
        );
        let l = hay.locate(&json!(1130));
        assert_eq!(span(text, &l), "1.130,00");
        let l = hay.locate(&json!(1130.0));
        assert_eq!(span(text, &l), "1.130,00");
        let l = hay.locate(&json!("2026-10-02"));
        assert_eq!(span(text, &l), "2026年10月2日");
        let l = hay.locate(&json!("Date"));
        assert_eq!((l.how, l.start, l.end), (Match::Exact, Some(17), Some(21)));
        assert_eq!(
            hay.locate(&json!(130)).how,
            Match::None,
            "part of a larger number"
        );
        assert_eq!(hay.locate(&json!("INV-0043")).how, Match::None);
        assert_eq!(
            hay.locate(&json!(",")).how,
            Match::None,
            "punctuation alone"
        );
        assert_eq!(hay.locate(&json!("\".")).how, Match::None);
    }

    #[test]
    fn chinese_spaced_by_ocr_and_long_strings_with_small_differences_are_found() {
        let text = "甲 方 ： 北 京 星 河 科 技 有 限 公 司\nThe supplier shall deliver the goods within thirty days of the order.";
        let hay = Haystack::new(text);
        let l = hay.locate(&json!("北京星河科技有限公司"));
        assert_eq!(l.how, Match::Normalized);
        assert_eq!(span(text, &l), "北 京 星 河 科 技 有 限 公 司");
        let l = hay.locate(&json!(
            "the supplier shall deliver goods within thirty days of the order"
        ));
        assert_eq!(l.how, Match::Fuzzy);
        assert!(span(text, &l).contains("deliver the goods"));
        assert_eq!(
            hay.locate(&json!(
                "the buyer may return anything at any time for a refund"
            ))
            .how,
            Match::None
        );
    }

    #[test]
    fn grounding_lists_every_value_found_nowhere_by_path() {
        let text = "Acme Ltd sold 3 chairs for 120.50 in total.";
        let got = ground(
            text,
            &json!({"seller": "Acme Ltd", "total": 120.5, "buyer": "Globex",
                    "items": [{"name": "chairs", "qty": 3}, {"name": "desk", "qty": 1}], "paid": null}),
        );
        assert_eq!(got.ungrounded, ["buyer", "items[1].name", "items[1].qty"]);
        assert_eq!(got.fields["total"].how, Match::Normalized);
        assert_eq!(got.fields["items[0].qty"].how, Match::Exact);
        assert!(!got.fields.contains_key("paid"));
    }
}
