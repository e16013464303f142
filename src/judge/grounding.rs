//! Grounding an extracted object (docs/extract.md#grounding): every string and number is
//! looked for in the document's text — exactly, then normalised (Unicode NFKC, case,
//! whitespace, spaces between Chinese characters, number and date spellings), then, for long
//! strings, by a fuzzy match — and located by character offsets into that text.
//!
//! The text is normalised once, and its characters and pairs of characters indexed once, per
//! document: a value is looked for among the places of its rarest pair, never by a pass over
//! the whole text, so an answer of many values costs what its values' places cost. The work is
//! still bounded (values and places visited per document), and a stop asked between values is
//! heeded: what was not looked for is said, never taken as found.
//!
//! It catches a value the document does not hold in any spelling zhi knows (a made-up total, a
//! seller from nowhere). It lets through a value that stands in the document but under the
//! wrong label — that is for the doubts ([`super::doubts`]) — and a number or date written in
//! a spelling [`super::numbers`] does not read.

use serde_json::Value;
use std::cell::{Cell, OnceCell};
use std::collections::HashMap;
use unicode_normalization::UnicodeNormalization;

pub use crate::manifest::extraction::{Extraction, Located, Match};

/// Strings at least this long (normalised) may be found by the fuzzy match.
const FUZZY_MIN_CHARS: usize = 12;
/// The share of a value's character pairs a window of the text must hold to be its fuzzy match.
const FUZZY_MIN_SCORE: f64 = 0.8;
/// Values looked for in one document, at most (docs/extract.md#grounding).
pub const MAX_VALUES: usize = 10_000;
/// Places of the text visited for one document, at most: candidate places checked and pairs
/// counted by the fuzzy match. A value is not begun once this is spent.
pub const MAX_WORK: u64 = 50_000_000;

/// A document's text, ready to look values up in.
pub struct Haystack {
    /// The text's chars.
    chars: Vec<char>,
    /// The normalised text, one char per entry.
    norm: Vec<char>,
    /// For each normalised char, the index of the original char it came from.
    map: Vec<usize>,
    /// Where each char and pair of the normalised text stands; built on the first look-up.
    index: OnceCell<Index>,
    /// Places visited so far ([`MAX_WORK`]).
    work: Cell<u64>,
}

/// The places (normalised char offsets, ascending) of each char and each pair of adjacent
/// chars of the normalised text.
#[derive(Default)]
struct Index {
    chars: HashMap<char, Vec<u32>>,
    pairs: HashMap<(char, char), Vec<u32>>,
}

impl Index {
    fn of(norm: &[char]) -> Index {
        let mut index = Index::default();
        for (k, c) in norm.iter().enumerate() {
            // A document's text is far below 4 G chars (documents are capped), so `k` fits.
            let k = k as u32;
            index.chars.entry(*c).or_default().push(k);
        }
        for (k, w) in norm.windows(2).enumerate() {
            index.pairs.entry((w[0], w[1])).or_default().push(k as u32);
        }
        index
    }

    fn of_char(&self, c: char) -> &[u32] {
        self.chars.get(&c).map_or(&[], Vec::as_slice)
    }

    fn of_pair(&self, a: char, b: char) -> &[u32] {
        self.pairs.get(&(a, b)).map_or(&[], Vec::as_slice)
    }
}

impl Haystack {
    pub fn new(text: &str) -> Self {
        let chars: Vec<char> = text.chars().collect();
        let mut norm = Vec::with_capacity(chars.len());
        let mut map = Vec::with_capacity(chars.len());
        for (i, c) in chars.iter().enumerate() {
            push_normalized(*c, i, &mut norm, &mut map);
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
        Haystack {
            chars,
            norm,
            map,
            index: OnceCell::new(),
            work: Cell::new(0),
        }
    }

    /// The text's chars (offsets in records and doubts are into these).
    pub(crate) fn chars(&self) -> &[char] {
        &self.chars
    }

    /// Whether the work allowed for this text ([`MAX_WORK`]) is spent.
    pub(crate) fn spent(&self) -> bool {
        self.work.get() >= MAX_WORK
    }

    /// Counts `n` places visited against [`MAX_WORK`] (a check that scans the whole text).
    pub(crate) fn charge(&self, n: usize) {
        self.work.set(self.work.get().saturating_add(n as u64));
    }

    fn index(&self) -> &Index {
        self.index.get_or_init(|| {
            self.charge(self.norm.len());
            Index::of(&self.norm)
        })
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
        // nothing: never grounded. A currency's sign (`¥`, `€`) is a value.
        let value = normalize(s);
        if !s.chars().any(char::is_alphanumeric) {
            return (!value.is_empty() && value.chars().all(is_currency_sign))
                .then(|| self.find_norm(&value, false))
                .flatten()
                .map(|(start, end)| (start, end, Match::Exact));
        }
        if let Some(start) = self.find_exact(s, &value) {
            return Some((start, start + s.chars().count(), Match::Exact));
        }
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
        if let Some(signs) = super::numbers::currency_signs(&value) {
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

    /// The first char offset where `s` stands in the text as it is written. Such a place is
    /// a place of its normalised form `norm` (normalising is char by char), so only those
    /// are looked at.
    fn find_exact(&self, s: &str, norm: &str) -> Option<usize> {
        let want: Vec<char> = s.chars().collect();
        let needle: Vec<char> = norm.chars().collect();
        let n = needle.len();
        self.places(&needle)
            .filter(|&k| !self.inside_a_word(k, k + n))
            .map(|k| self.map[k])
            .find(|&o| self.chars[o..].starts_with(&want))
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

    /// Every place (normalised offset, ascending) where `needle` (normalised chars) stands in
    /// the normalised text: the places of its rarest char or pair, checked one by one.
    fn places<'s>(&'s self, needle: &'s [char]) -> impl Iterator<Item = usize> + 's {
        let n = needle.len();
        let (offset, from): (usize, &[u32]) = if n == 0 || n > self.norm.len() {
            (0, &[])
        } else if n == 1 {
            (0, self.index().of_char(needle[0]))
        } else {
            let index = self.index();
            (0..n - 1)
                .map(|i| (i, index.of_pair(needle[i], needle[i + 1])))
                .min_by_key(|(_, p)| p.len())
                .unwrap_or((0, &[]))
        };
        from.iter().filter_map(move |&p| {
            self.charge(n);
            let k = (p as usize).checked_sub(offset)?;
            (k + n <= self.norm.len() && self.norm[k..k + n] == *needle).then_some(k)
        })
    }

    /// Every place of `needle` (normalised) in the normalised text, at most `max`.
    fn find_norm_all(&self, needle: &str, number: bool, max: usize) -> Vec<(usize, usize)> {
        let needle: Vec<char> = needle.chars().collect();
        let n = needle.len();
        self.places(&needle)
            .filter(|&k| {
                if number {
                    self.stands_alone(k, k + n)
                } else {
                    !self.inside_a_word(k, k + n)
                }
            })
            .take(max)
            .map(|k| (self.map[k], self.map[k + n - 1] + 1))
            .collect()
    }

    /// `needle` (normalised) in the normalised text, as original char offsets. A number must
    /// stand alone: no digit (or digit-grouping mark before a digit) on either side.
    fn find_norm(&self, needle: &str, number: bool) -> Option<(usize, usize)> {
        self.find_norm_all(needle, number, 1).into_iter().next()
    }

    /// Whether the normalised text's `start..end` begins or ends inside a word of Latin
    /// letters and digits: `GPL-2.1` in `LGPL-2.1+`, `Tool` in `Tools`. Such a place is not
    /// the value's (a script without spaces between words has no such edge).
    fn inside_a_word(&self, start: usize, end: usize) -> bool {
        let word = |c: Option<&char>| c.is_some_and(char::is_ascii_alphanumeric);
        let before = start.checked_sub(1).and_then(|i| self.norm.get(i));
        let after = self.norm.get(end);
        (word(self.norm.get(start)) && word(before))
            || (end > start && word(self.norm.get(end - 1)) && word(after))
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
    /// pairs (the first such window), when that share is at least [`FUZZY_MIN_SCORE`].
    ///
    /// Only the places of the value's own pairs (from the index) are looked at. A window of
    /// that share misses at most `pairs - needed` of the value's pairs, so it holds a place of
    /// one of its rarest pairs whose counts add up to more than that: only the stretches of
    /// text within a window's length of those places are counted. There a window's share
    /// changes only where one of the value's pairs enters or leaves it, and the first window
    /// of the best share ends at one of them, so the windows ending at each are counted.
    fn fuzzy(&self, value: &[char]) -> Option<(usize, usize)> {
        let len = value.len();
        if len < 2 || self.norm.len() < len {
            return None;
        }
        let mut want: HashMap<(char, char), usize> = HashMap::new();
        for w in value.windows(2) {
            *want.entry((w[0], w[1])).or_default() += 1;
        }
        let pairs = len - 1;
        let needed = (FUZZY_MIN_SCORE * pairs as f64).ceil() as usize;
        let index = self.index();
        let mut rarest: Vec<((char, char), usize, &[u32])> = want
            .iter()
            .map(|(p, n)| (*p, *n, index.of_pair(p.0, p.1)))
            .collect();
        rarest.sort_by_key(|(p, _, at)| (at.len(), *p));
        let mut anchors: Vec<u32> = Vec::new();
        let mut counted = 0;
        for (_, n, at) in &rarest {
            if counted > pairs - needed {
                break;
            }
            anchors.extend_from_slice(at);
            counted += n;
        }
        self.charge(anchors.len());
        anchors.sort_unstable();
        let reach = len - 2;
        let mut stretches: Vec<(usize, usize)> = Vec::new();
        for a in anchors {
            let (lo, hi) = ((a as usize).saturating_sub(reach), a as usize + reach);
            match stretches.last_mut() {
                Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
                _ => stretches.push((lo, hi)),
            }
        }
        let mut best = (0usize, 0usize);
        for (lo, hi) in stretches {
            let mut hits: Vec<(u32, (char, char))> = Vec::new();
            for (p, _, at) in &rarest {
                let from = at.partition_point(|&k| (k as usize) < lo);
                let to = at.partition_point(|&k| (k as usize) <= hi);
                hits.extend(at[from..to].iter().map(|&k| (k, *p)));
            }
            self.charge(hits.len());
            hits.sort_unstable_by_key(|h| h.0);
            best_window(&hits, &want, len, &mut best);
        }
        (best.0 >= needed).then(|| (self.map[best.1], self.map[best.1 + len - 1] + 1))
    }
}

/// Over `hits` (places of a value's pairs, ascending), the windows of `len` chars that end at
/// each: the first holding more of the value's pairs (`want`) than `best` becomes `best`
/// (share, start).
fn best_window(
    hits: &[(u32, (char, char))],
    want: &HashMap<(char, char), usize>,
    len: usize,
    best: &mut (usize, usize),
) {
    let mut have: HashMap<(char, char), usize> = HashMap::new();
    let mut overlap = 0usize;
    let (mut lo, mut hi) = (0usize, 0usize);
    for hit in hits {
        // The window of pairs [start, start + len - 2] whose last pair is this hit's.
        let start = (hit.0 as usize).saturating_sub(len - 2);
        let end = start + len - 2;
        while hi < hits.len() && hits[hi].0 as usize <= end {
            let h = have.entry(hits[hi].1).or_default();
            if *h < want.get(&hits[hi].1).copied().unwrap_or(0) {
                overlap += 1;
            }
            *h += 1;
            hi += 1;
        }
        while (hits[lo].0 as usize) < start {
            let h = have.entry(hits[lo].1).or_default();
            *h -= 1;
            if *h < want.get(&hits[lo].1).copied().unwrap_or(0) {
                overlap -= 1;
            }
            lo += 1;
        }
        if overlap > best.0 {
            *best = (overlap, start);
        }
    }
}

/// Every string and number of `object`, with its path, located in `text`.
#[cfg(test)]
pub(crate) fn ground(text: &str, object: &Value) -> Extraction {
    ground_in(&Haystack::new(text), object, &|| false)
}

/// Every string and number of `object`, with its path, located in `hay`'s text; `stop` is
/// asked between values. The values not looked for — past [`MAX_VALUES`], once
/// [`MAX_WORK`] is spent, or once `stop` says so — are listed in `unchecked`, neither found
/// nor ungrounded.
pub(crate) fn ground_in(hay: &Haystack, object: &Value, stop: &dyn Fn() -> bool) -> Extraction {
    let mut out = Extraction {
        valid: true,
        ..Extraction::default()
    };
    let mut leaves = Vec::new();
    collect(object, String::new(), &mut leaves);
    let mut leaves = leaves.into_iter().enumerate();
    for (i, (path, value)) in leaves.by_ref() {
        if i >= MAX_VALUES || hay.spent() || stop() {
            out.unchecked.push(path);
            break;
        }
        let found = hay.locate(value);
        if found.how == Match::None {
            out.ungrounded.push(path.clone());
        }
        out.fields.insert(path, found);
    }
    out.unchecked.extend(leaves.map(|(_, (path, _))| path));
    out
}

/// The values of required fields (or their items) found nowhere: what `grounding: required`
/// fails an answer for.
pub(crate) fn required_ungrounded(
    found: &Extraction,
    fields: &[crate::skills::schema::Field],
) -> Vec<String> {
    let required: Vec<&str> = fields
        .iter()
        .filter(|f| f.required)
        .map(|f| f.path.as_str())
        .collect();
    found
        .ungrounded
        .iter()
        .filter(|p| {
            required.iter().any(|r| {
                p.as_str() == *r || p.strip_prefix(r).is_some_and(|rest| rest.starts_with('['))
            })
        })
        .cloned()
        .collect()
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

/// Whether `c` is a currency sign (`$`, `¥`, `€`, the Unicode block of currency symbols).
fn is_currency_sign(c: char) -> bool {
    matches!(c, '$' | '\u{a2}'..='\u{a5}' | '\u{20a0}'..='\u{20cf}')
}

fn starts_with_digit(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// A string that is a plain number (`1,130.00`, `¥1130`, `1130.5`): its value, read as
/// every part of zhi reads numbers ([`super::numbers`]).
fn number_in(s: &str) -> Option<f64> {
    super::numbers::number(s)
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
    let month = super::numbers::MONTHS[m as usize - 1];
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
    fn a_value_inside_a_longer_word_is_not_found_there() {
        let hay = Haystack::new("License: LGPL-2.1+\nACME Tools Ltd.\n上海明远科技有限公司");
        assert_eq!(hay.locate(&json!("GPL-2.1")).how, Match::None);
        assert_eq!(hay.locate(&json!("ACME Tool")).how, Match::None);
        assert_eq!(hay.locate(&json!("LGPL-2.1+")).how, Match::Exact);
        assert_eq!(hay.locate(&json!("lgpl-2.1")).how, Match::Normalized);
        assert_eq!(hay.locate(&json!("ACME Tools")).how, Match::Exact);
        // Chinese has no spaces between words: a part of a name is found.
        assert_eq!(hay.locate(&json!("明远科技")).how, Match::Exact);
    }

    #[test]
    fn a_currency_sign_is_grounded_where_the_text_has_it() {
        let hay = Haystack::new("合计 ￥1200.00\nTotal: $5");
        assert_eq!(hay.locate(&json!("¥")).how, Match::Exact);
        assert_eq!(hay.locate(&json!("$")).how, Match::Exact);
        assert_eq!(hay.locate(&json!("€")).how, Match::None);
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

    /// The fuzzy match as it was first written: every window of the text, slid one char at
    /// a time. The indexed one must find the same window.
    fn fuzzy_by_sliding(norm: &[char], value: &[char]) -> Option<usize> {
        let len = value.len();
        if norm.len() < len {
            return None;
        }
        let pairs = |w: &[char]| {
            let mut m: HashMap<(char, char), i32> = HashMap::new();
            for p in w.windows(2) {
                *m.entry((p[0], p[1])).or_default() += 1;
            }
            m
        };
        let want = pairs(value);
        let mut best = (-1i32, 0usize);
        for start in 0..=norm.len() - len {
            let have = pairs(&norm[start..start + len]);
            let overlap: i32 = want
                .iter()
                .map(|(p, n)| (*n).min(have.get(p).copied().unwrap_or(0)))
                .sum();
            if overlap > best.0 {
                best = (overlap, start);
            }
        }
        (f64::from(best.0) / (len - 1) as f64 >= FUZZY_MIN_SCORE).then_some(best.1)
    }

    #[test]
    fn the_indexed_fuzzy_match_finds_the_window_a_full_slide_finds() {
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        for round in 0..600 {
            // Few letters (every pair common), then many (pairs rare).
            let letters = if round < 300 {
                "abcde fgh"
            } else {
                "abcdefghijklmnopqrstuvwxyz0123456789 "
            };
            let alphabet: Vec<char> = letters.chars().collect();
            let text: String = (0..200 + next(200))
                .map(|_| alphabet[next(alphabet.len() as u64) as usize])
                .collect();
            let hay = Haystack::new(&text);
            let len = 12 + next(20) as usize;
            // A window of the text with a few chars changed, or chars of no window at all.
            let mut value: Vec<char> = if next(3) == 0 {
                (0..len)
                    .map(|_| alphabet[next(alphabet.len() as u64) as usize])
                    .collect()
            } else {
                let at = next((hay.norm.len() - len) as u64) as usize;
                hay.norm[at..at + len].to_vec()
            };
            for _ in 0..next(3) {
                let k = next(len as u64) as usize;
                value[k] = alphabet[next(alphabet.len() as u64) as usize];
            }
            let want =
                fuzzy_by_sliding(&hay.norm, &value).map(|s| (hay.map[s], hay.map[s + len - 1] + 1));
            assert_eq!(hay.fuzzy(&value), want, "{text:?} {value:?}");
        }
    }

    #[test]
    fn values_past_the_bound_or_after_a_stop_are_unchecked_never_found_nor_ungrounded() {
        let text = "Acme Ltd sold 3 chairs.";
        let object = json!({"seller": "Acme Ltd", "qty": 3, "buyer": "Globex", "note": "chairs"});
        let asked = Cell::new(0);
        let stop = || {
            asked.set(asked.get() + 1);
            asked.get() > 2
        };
        let got = ground_in(&Haystack::new(text), &object, &stop);
        assert_eq!(got.fields.len(), 2);
        assert_eq!(got.fields["qty"].how, Match::Exact);
        assert_eq!(got.unchecked, ["buyer", "note"]);
        assert!(got.ungrounded.is_empty());
        let many: Vec<Value> = (0..MAX_VALUES + 3)
            .map(|i| json!(format!("v{i}")))
            .collect();
        let got = ground(text, &json!({ "many": many }));
        assert_eq!(got.fields.len(), MAX_VALUES);
        assert_eq!(got.unchecked, ["many[10000]", "many[10001]", "many[10002]"]);
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
