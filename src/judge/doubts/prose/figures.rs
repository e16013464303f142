//! Figures: numbers, amounts, dates, times and Chinese numerals, read as values so that a
//! translation's or a summary's can be held against its source's.

use super::*;
use crate::judge::numbers::Decimal;
use crate::judge::work::Work;

/// A figure of a text: a number, a time, a date's part.
#[derive(Debug, Clone)]
pub(super) struct Figure {
    /// As written: `下午三点`, `1,200`.
    pub(super) shown: String,
    /// As compared: `15:00`, `1200`.
    pub(super) canon: String,
    /// What it stands for (`n:1200`, `t:15:00`); one held by the other text matches it.
    pub(super) keys: Vec<String>,
    /// Plain numbers a time with no minutes may be written as (`h:3` for 下午三点, "at 3"),
    /// matched with tolerance.
    pub(super) loose: Vec<String>,
    /// More that this figure grounds in the other text: a time's hour and minute as numbers.
    pub(super) grounds: Vec<String>,
    /// Too common or too ambiguous to report (a single digit, `三点` alone): it only grounds.
    pub(super) weak: bool,
    /// A time whose hour is known (am/pm, 下午, 24-hour); always true of a number.
    pub(super) certain: bool,
}

impl Figure {
    fn show(&self) -> String {
        if self.shown == self.canon {
            self.canon.clone()
        } else {
            format!("{} ({})", self.canon, self.shown)
        }
    }
}

/// A figure that only grounds: a month's name, a number spelled out.
pub(super) fn grounding(shown: &str, keys: Vec<String>) -> Figure {
    Figure {
        shown: shown.to_string(),
        canon: shown.to_string(),
        keys,
        loose: Vec::new(),
        grounds: Vec::new(),
        weak: true,
        certain: true,
    }
}

pub(super) fn round6(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}

/// A number figure; `marked` when a unit or currency goes with it (`3月`, `5%`, `$4`), which
/// makes even a single digit a figure.
pub(super) fn number_figure(
    shown: String,
    value: f64,
    scaled: Option<f64>,
    marked: bool,
) -> Figure {
    let v = round6(value);
    let mut grounds = Vec::new();
    // `2 million` is 2000000, not 2; the 2 only grounds (`1.2万` may be written `1.2`).
    let canon = match scaled.map(round6) {
        Some(s) => {
            grounds.push(format!("n:{v}"));
            format!("{s}")
        }
        None => format!("{v}"),
    };
    let integral = v.fract() == 0.0 && scaled.is_none();
    if integral && !marked && v <= 24.0 {
        grounds.push(format!("h:{v}"));
    }
    Figure {
        shown,
        keys: vec![format!("n:{canon}")],
        canon,
        loose: Vec::new(),
        grounds,
        weak: integral && v < 10.0 && !marked,
        certain: true,
    }
}

pub(super) fn time_figure(
    shown: String,
    hours: &[u32],
    minute: u32,
    certain: bool,
    weak: bool,
) -> Figure {
    let keys = hours.iter().map(|h| format!("t:{h}:{minute:02}")).collect();
    let mut loose = Vec::new();
    let mut grounds = Vec::new();
    for &h in hours {
        let h12 = if h % 12 == 0 { 12 } else { h % 12 };
        loose.extend([format!("h:{h}"), format!("h:{h12}")]);
        grounds.extend([format!("n:{h}"), format!("n:{h12}")]);
    }
    if minute != 0 {
        loose.clear();
        grounds.push(format!("n:{minute}"));
    }
    Figure {
        shown,
        canon: format!("{}:{minute:02}", hours.first().copied().unwrap_or(0)),
        keys,
        loose,
        grounds,
        weak,
        certain,
    }
}

/// The part of the day a time is said in: 下午, pm.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum DayPart {
    None,
    Am,
    Pm,
    Noon,
    Night,
}

/// The hours (0–23) a written hour may be in `part`, and whether that is certain: `3` alone is
/// 3 or 15.
pub(super) fn hours(hour: u32, part: DayPart, certain: bool) -> Option<(Vec<u32>, bool)> {
    if hour > 24 {
        return None;
    }
    let h = hour % 24;
    Some(match part {
        DayPart::Am => (vec![if h == 12 { 0 } else { h }], true),
        DayPart::Pm => (vec![if h < 12 { h + 12 } else { h }], true),
        DayPart::Noon => (vec![if h <= 4 { h + 12 } else { h }], true),
        DayPart::Night => match h {
            12 => (vec![0], true),
            6..=11 => (vec![h + 12], true),
            _ if h > 12 => (vec![h], true),
            _ => (vec![h, h + 12], false),
        },
        DayPart::None if certain || h == 0 || h > 12 => (vec![h], true),
        DayPart::None => (vec![h, (h + 12) % 24], false),
    })
}

/// The part of the day said right before `start` (`下午三点`), and where it begins.
pub(super) fn day_part_before(chars: &[char], start: usize) -> (DayPart, usize) {
    const MARKS: [(&str, DayPart); 13] = [
        ("凌晨", DayPart::Am),
        ("早上", DayPart::Am),
        ("早晨", DayPart::Am),
        ("清晨", DayPart::Am),
        ("上午", DayPart::Am),
        ("中午", DayPart::Noon),
        ("下午", DayPart::Pm),
        ("傍晚", DayPart::Pm),
        ("晚上", DayPart::Night),
        ("夜里", DayPart::Night),
        ("夜间", DayPart::Night),
        ("今晚", DayPart::Night),
        ("明晚", DayPart::Night),
    ];
    let k = if start > 0 && chars[start - 1] == ' ' {
        start - 1
    } else {
        start
    };
    let before: String = chars[k.saturating_sub(2)..k].iter().collect();
    for (mark, part) in MARKS {
        if before.ends_with(mark) {
            return (part, k - 2);
        }
    }
    // 周五晚8点, 早8点; not 最晚 / 最早 (at the latest, at the earliest).
    let prev2 = k.checked_sub(2).map(|i| chars[i]);
    match k.checked_sub(1).map(|i| chars[i]) {
        Some('晚') if prev2 != Some('最') => (DayPart::Night, k - 1),
        Some('早') if prev2 != Some('最') => (DayPart::Am, k - 1),
        _ => (DayPart::None, start),
    }
}

/// `am`, `p.m.` at `k` (after one space at most), and where it ends.
pub(super) fn meridiem(chars: &[char], k: usize) -> Option<(DayPart, usize)> {
    let mut i = k + usize::from(chars.get(k) == Some(&' '));
    let part = match chars.get(i)?.to_ascii_lowercase() {
        'a' => DayPart::Am,
        'p' => DayPart::Pm,
        _ => return None,
    };
    i += 1;
    // `p.m.` ends with its second dot; the dot after `pm` ends the sentence.
    let dotted = chars.get(i) == Some(&'.');
    i += usize::from(dotted);
    if !chars.get(i).is_some_and(|c| c.eq_ignore_ascii_case(&'m')) {
        return None;
    }
    i += 1;
    i += usize::from(dotted && chars.get(i) == Some(&'.'));
    if chars.get(i).is_some_and(|c| c.is_alphanumeric()) {
        return None;
    }
    Some((part, i))
}

/// The part of the day that ends a range after an hour: `3-5 PM`, `3 to 5 pm`.
pub(super) fn range_meridiem(chars: &[char], end: usize) -> Option<DayPart> {
    let rest: String = chars.get(end..)?.iter().take(8).collect();
    let skip = ["-", "–", "—", "~", " - ", " – ", " to "]
        .iter()
        .find(|s| rest.starts_with(*s))
        .map(|s| s.chars().count())?;
    let k = end + skip;
    let n = chars
        .get(k..)?
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    if !(1..=2).contains(&n) {
        return None;
    }
    let mut m = k + n;
    if chars.get(m) == Some(&':') {
        m += 1 + chars
            .get(m + 1..)?
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
    }
    meridiem(chars, m).map(|(p, _)| p)
}

/// `o'clock` at `k` (after one space at most), and where it ends.
pub(super) fn oclock(chars: &[char], k: usize) -> Option<usize> {
    let i = k + usize::from(chars.get(k) == Some(&' '));
    let word: String = chars.get(i..i + 7)?.iter().collect();
    let word = word.to_lowercase().replace('’', "'");
    (word == "o'clock").then_some(i + 7)
}

/// The hour mark of a Chinese time (`点`, `时`) at `k`, and where it ends.
pub(super) fn hour_mark(chars: &[char], k: usize) -> Option<usize> {
    matches!(chars.get(k), Some('点' | '點' | '时' | '時')).then_some(k + 1)
}

/// The minutes after a Chinese hour mark (`半`, `一刻`, `15分`, `十五分`), and where they end.
pub(super) fn zh_minutes(chars: &[char], k: usize) -> (u32, usize) {
    match (chars.get(k), chars.get(k + 1)) {
        (Some('半'), _) => return (30, k + 1),
        (Some('整' | '钟' | '鐘'), _) => return (0, k + 1),
        (Some('一'), Some('刻')) => return (15, k + 2),
        (Some('三'), Some('刻')) => return (45, k + 2),
        _ => {}
    }
    let rest = chars.get(k..).unwrap_or(&[]);
    let n = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if (1..=2).contains(&n) {
        let fen = rest.get(n) == Some(&'分');
        let m: u32 = rest[..n].iter().collect::<String>().parse().unwrap_or(60);
        if m < 60 && (fen || n == 2) {
            return (m, k + n + usize::from(fen));
        }
        return (0, k);
    }
    let c = rest
        .iter()
        .take_while(|c| cn_digit(**c).is_some() || **c == '十')
        .count();
    if c > 0 && rest.get(c) == Some(&'分') {
        let m = cn_value(&rest[..c]).and_then(|v| u32::try_from(v).ok());
        if let Some(m) = m.filter(|m| *m < 60) {
            return (m, k + c + 1);
        }
    }
    (0, k)
}

pub(super) fn cn_digit(c: char) -> Option<u64> {
    Some(match c {
        '零' | '〇' => 0,
        '一' => 1,
        '二' | '两' | '兩' => 2,
        '三' => 3,
        '四' => 4,
        '五' => 5,
        '六' => 6,
        '七' => 7,
        '八' => 8,
        '九' => 9,
        _ => return None,
    })
}

pub(super) fn cn_unit(c: char) -> Option<u64> {
    Some(match c {
        '十' => 10,
        '百' => 100,
        '千' => 1_000,
        '万' | '萬' => 10_000,
        '亿' | '億' => 100_000_000,
        _ => return None,
    })
}

/// The value of a run of Chinese numerals: `二十五` 25, `一千二百` 1200, `三万五` 35000,
/// `二〇二六` 2026. Two digits with no unit (`四五个`, "four or five") are no number.
pub(super) fn cn_value(run: &[char]) -> Option<u64> {
    if !run.iter().any(|c| cn_unit(*c).is_some()) {
        if run.len() == 1 {
            return cn_digit(run[0]);
        }
        if run.len() >= 3 || run.iter().any(|c| matches!(c, '零' | '〇')) {
            return run.iter().try_fold(0u64, |v, c| {
                Some(v.saturating_mul(10).saturating_add(cn_digit(*c)?))
            });
        }
        return None;
    }
    let (mut total, mut section, mut num) = (0u64, 0u64, 0u64);
    for &c in run {
        if let Some(d) = cn_digit(c) {
            num = d;
        } else if let Some(u) = cn_unit(c) {
            if u >= 100_000_000 {
                total = total
                    .saturating_add(section.saturating_add(num))
                    .saturating_mul(u);
                section = 0;
            } else if u >= 10_000 {
                total = total.saturating_add(section.saturating_add(num).saturating_mul(u));
                section = 0;
            } else {
                let n = if num == 0 && u == 10 { 1 } else { num };
                section = section.saturating_add(n * u);
            }
            num = 0;
        }
    }
    // 一千二 is 1200 and 三万五 35000: a last digit after a unit counts a tenth of it.
    if let [.., unit, last] = run
        && let (Some(u), Some(_)) = (cn_unit(*unit), cn_digit(*last))
        && u >= 100
    {
        num = num.saturating_mul(u / 10);
    }
    Some(total.saturating_add(section).saturating_add(num))
}

/// Units that make a number a figure even when it is a single digit.
pub(super) const UNITS: &[char] = &['%', '年', '月', '日', '号', '號', '元', '円', '℃'];

/// A digit run at `start` with its separators: `1,200.50` and `1 200,5` → `1200.50`,
/// `1200.5`. A run with two dots or more (`2.6.1`, `12.03.2026`) is read as its parts, and a
/// comma before more digits than three or before another comma (`1,2,3`) ends the number.
pub(super) fn digit_run(chars: &[char], start: usize) -> (String, usize) {
    let in_dotted = start >= 2 && chars[start - 1] == '.' && chars[start - 2].is_ascii_digit();
    let mut dotted = in_dotted;
    let mut spaced = false;
    let mut s = String::new();
    let mut j = start;
    while j < chars.len() {
        let c = chars[j];
        if c.is_ascii_digit() {
            s.push(c);
            j += 1;
            continue;
        }
        let after = chars[j + 1..]
            .iter()
            .take_while(|d| d.is_ascii_digit())
            .count();
        let next = j + 1 + after;
        let again = |sep: char| {
            chars.get(next) == Some(&sep) && chars.get(next + 1).is_some_and(char::is_ascii_digit)
        };
        if !dotted
            && after == 3
            && ((c == ',' && !spaced) || (c == ' ' && (spaced || s.len() <= 3)))
        {
            spaced |= c == ' ';
            j += 1;
            continue;
        }
        let decimal = match c {
            '.' => !again('.'),
            ',' => after <= 2 && !again(','),
            _ => false,
        };
        if decimal && after > 0 && !dotted {
            dotted = true;
            s.push('.');
            j += 1;
            continue;
        }
        break;
    }
    (s, j)
}

/// A scale after a number: `1.2万` is 12000, `4.5 million` 4500000.
pub(super) fn scale_after(chars: &[char], end: usize) -> (Option<f64>, usize) {
    let mut k = end;
    let mut scale = 1.0;
    while let Some(m) = chars.get(k).and_then(|c| match c {
        '百' => Some(1e2),
        '千' => Some(1e3),
        '万' | '萬' => Some(1e4),
        '亿' | '億' => Some(1e8),
        _ => None,
    }) {
        scale *= m;
        k += 1;
    }
    if k > end {
        return (Some(scale), k);
    }
    let alpha = |i: usize| chars.get(i).is_some_and(char::is_ascii_alphabetic);
    let attached = match chars.get(end) {
        Some('k' | 'K') => Some(1e3),
        Some('M') => Some(1e6),
        Some('B') => Some(1e9),
        _ => None,
    };
    if let Some(scale) = attached.filter(|_| !alpha(end + 1)) {
        return (Some(scale), end + 1);
    }
    let from = end + usize::from(chars.get(end) == Some(&' '));
    let len = chars
        .get(from..)
        .unwrap_or(&[])
        .iter()
        .take_while(|c| c.is_ascii_alphabetic())
        .count();
    let word: String = chars[from..from + len]
        .iter()
        .collect::<String>()
        .to_lowercase();
    let scale = match word.as_str() {
        "thousand" => 1e3,
        "million" | "mn" => 1e6,
        "billion" | "bn" => 1e9,
        "trillion" => 1e12,
        _ => return (None, end),
    };
    (Some(scale), from + len)
}

/// A time that starts with the digits `written` at `start`: `09:12`, `3 pm`, `下午3点`,
/// `3 o'clock`.
pub(super) fn clock_time(
    chars: &[char],
    start: usize,
    written: &str,
    end: usize,
) -> Option<(Figure, usize)> {
    if written.len() > 2 || written.contains('.') {
        return None;
    }
    let hour: u32 = written.parse().ok()?;
    let two_digits = |k: usize| {
        chars.get(k).is_some_and(char::is_ascii_digit)
            && chars.get(k + 1).is_some_and(char::is_ascii_digit)
            && !chars.get(k + 2).is_some_and(char::is_ascii_digit)
    };
    let (minute, mut next, clock) = if chars.get(end) == Some(&':') && two_digits(end + 1) {
        let m: u32 = chars[end + 1..end + 3]
            .iter()
            .collect::<String>()
            .parse()
            .ok()?;
        let k = end + 3;
        let k = if chars.get(k) == Some(&':') && two_digits(k + 1) {
            k + 3
        } else {
            k
        };
        (m, k, true)
    } else if chars.get(end) == Some(&'h') && two_digits(end + 1) {
        // 14h30
        let m: u32 = chars[end + 1..end + 3]
            .iter()
            .collect::<String>()
            .parse()
            .ok()?;
        (m, end + 3, true)
    } else if let Some(k) = hour_mark(chars, end) {
        let (m, k) = zh_minutes(chars, k);
        (m, k, true)
    } else {
        (0, end, false)
    };
    if minute >= 60 {
        return None;
    }
    let (before, from) = day_part_before(chars, start);
    let part = if let Some((p, k)) = meridiem(chars, next) {
        next = k;
        p
    } else if let Some(k) = oclock(chars, next).filter(|_| !clock) {
        next = k;
        before
    } else if clock {
        before
    } else {
        range_meridiem(chars, end)?
    };
    let padded = written.len() == 2 && written.starts_with('0');
    let (hours, certain) = hours(hour, part, padded)?;
    let shown = chars[from..next]
        .iter()
        .collect::<String>()
        .trim()
        .to_string();
    Some((time_figure(shown, &hours, minute, certain, false), next))
}

/// The figure of the digit run at `start`. Where the run stands for one number its value is
/// read by the one reader of numbers ([`crate::judge::numbers`]), with the text's own decimal
/// mark: `1.500` is the `1,500` of a translation, and `1,50` is 1.5, as the audit and the
/// schema read them. A run of parts (`2.6.1`) is read as the scan wrote it.
pub(super) fn digit_figure(
    chars: &[char],
    start: usize,
    decimal: Decimal,
    out: &mut Vec<Figure>,
) -> usize {
    let (written, end) = digit_run(chars, start);
    if let Some((figure, next)) = clock_time(chars, start, &written, end) {
        out.push(figure);
        return next;
    }
    let raw: String = chars[start..end].iter().collect();
    let Some(value) =
        crate::judge::numbers::number_as(&raw, decimal).or_else(|| written.parse::<f64>().ok())
    else {
        return end.max(start + 1);
    };
    let (scale, next) = scale_after(chars, end);
    let unit = chars.get(next).copied().filter(|c| UNITS.contains(c));
    let currency = start
        .checked_sub(1)
        .is_some_and(|k| matches!(chars[k], '$' | '¥' | '€' | '£'));
    let stop = next + usize::from(unit.is_some());
    let shown: String = chars[start..stop].iter().collect();
    let marked = unit.is_some() || currency || scale.is_some();
    out.push(number_figure(
        shown,
        value,
        scale.map(|s| value * s),
        marked,
    ));
    stop
}

pub(super) fn cn_figure(chars: &[char], start: usize, out: &mut Vec<Figure>) -> usize {
    let end = start
        + chars[start..]
            .iter()
            .take_while(|c| cn_digit(**c).is_some() || cn_unit(**c).is_some())
            .count();
    let run = &chars[start..end];
    let Some(value) = cn_value(run) else {
        return end;
    };
    if let Some(k) = hour_mark(chars, end)
        && let Ok(hour) = u32::try_from(value)
    {
        let (minute, next) = zh_minutes(chars, k);
        let (part, from) = day_part_before(chars, start);
        if let Some((hours, certain)) = hours(hour, part, false) {
            // 三点 alone may be "three points": a time only with a part of day or minutes.
            let weak = part == DayPart::None && minute == 0;
            let shown: String = chars[from..next].iter().collect();
            out.push(time_figure(shown, &hours, minute, certain, weak));
            return next;
        }
    }
    let unit = chars.get(end).copied().filter(|c| UNITS.contains(c));
    let stop = end + usize::from(unit.is_some());
    let shown: String = chars[start..stop].iter().collect();
    let mut figure = number_figure(shown, value as f64, None, unit.is_some());
    if run.len() == 1 && unit.is_none() {
        // 一 in 一些, 十 in 十分: a word's part more often than a number.
        figure.weak = true;
        figure.grounds.clear();
    }
    out.push(figure);
    stop
}

/// Month names and numbers spelled out, which only ground: an answer may write 3月 as "March"
/// and 二十四 as "two dozen", but English number words are too loose to report.
pub(super) fn word_figure(chars: &[char], start: usize, out: &mut Vec<Figure>) -> usize {
    const SMALL: &str = "zero one two three four five six seven eight nine ten eleven twelve \
        thirteen fourteen fifteen sixteen seventeen eighteen nineteen";
    const TENS: &str = "twenty thirty forty fifty sixty seventy eighty ninety";
    let position = |list: &str, w: &str| list.split_whitespace().position(|x| x == w);
    let word_at = |i: usize| -> String {
        chars
            .get(i..)
            .unwrap_or(&[])
            .iter()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect()
    };
    let word = word_at(start);
    let mut end = start + word.len();
    // A month is a capitalised name, whole or cut to three letters (`Sept` too): `may` and
    // `march` in a sentence are words.
    let capital = word.starts_with(|c: char| c.is_ascii_uppercase());
    let month = crate::judge::numbers::month(&word).filter(|m| {
        let name = crate::judge::numbers::MONTHS[*m as usize - 1];
        capital && (word.len() == 3 || word.len() == name.len() || word == "Sept")
    });
    if let Some(m) = month {
        out.push(grounding(&word, vec![format!("n:{m}")]));
        return end;
    }
    let lower = word.to_ascii_lowercase();
    let mut value = position(SMALL, &lower).map(|v| v as u64);
    if let Some(t) = position(TENS, &lower) {
        // twenty-five
        let unit = (chars.get(end) == Some(&'-'))
            .then(|| word_at(end + 1).to_ascii_lowercase())
            .and_then(|u| position(SMALL, &u).filter(|u| (1..10).contains(u)));
        if let Some(u) = unit {
            end += 1 + SMALL.split_whitespace().nth(u).map_or(0, str::len);
        }
        value = Some((t as u64 + 2) * 10 + unit.map_or(0, |u| u as u64));
    }
    let scale = |w: &str| match w {
        "dozen" => Some(12),
        "hundred" => Some(100),
        "thousand" => Some(1_000),
        "million" => Some(1_000_000),
        _ => None,
    };
    let keys = match (value, scale(&lower)) {
        // two dozen, three hundred
        (Some(v), _) => {
            let next = word_at(end + 1).to_ascii_lowercase();
            let times = (chars.get(end) == Some(&' '))
                .then(|| scale(&next))
                .flatten();
            let mut keys = vec![format!("n:{v}")];
            keys.extend(times.map(|t| format!("n:{}", v * t)));
            keys
        }
        (None, Some(v)) => vec![format!("n:{v}")],
        _ => match lower.as_str() {
            "noon" | "midday" => vec!["t:12:00".to_string(), "n:12".to_string()],
            "midnight" => vec!["t:0:00".to_string(), "n:12".to_string(), "n:0".to_string()],
            _ => return end,
        },
    };
    out.push(grounding(&word, keys));
    end
}

/// A line without its list or heading marker: `1. `, `2) `, `(3)`, `一、`, `## 2.1 `. Such
/// numbers are the layout's, not figures.
pub(super) fn without_marker(line: &str) -> &str {
    let mut t = line.trim_start();
    let heading = t.starts_with('#');
    t = t.trim_start_matches('#').trim_start();
    if let Some(rest) = t.strip_prefix(['-', '*', '+', '>', '•'])
        && rest.starts_with(' ')
    {
        t = rest.trim_start();
    }
    if let Some(rest) = t.strip_prefix('(')
        && let Some(close) = rest.find(')')
        && (1..=9).contains(&close)
        && rest[..close]
            .chars()
            .all(|c| c.is_ascii_digit() || cn_digit(c).is_some() || c == '十')
    {
        return rest[close + 1..].trim_start();
    }
    let num_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, rest) = t.split_at(num_end);
    if num.starts_with(|c: char| c.is_ascii_digit()) {
        if num.ends_with('.') {
            return rest.trim_start();
        }
        if let Some(after) = rest.strip_prefix([')', '、']) {
            return after.trim_start();
        }
        if heading && rest.starts_with(' ') {
            return rest.trim_start();
        }
    }
    let cn_end = t
        .find(|c: char| !(cn_digit(c).is_some() || c == '十'))
        .unwrap_or(t.len());
    if cn_end > 0
        && let Some(after) = t[cn_end..].strip_prefix('、')
    {
        return after.trim_start();
    }
    t
}

/// `text` with its full-width commas made `、`, but for a thousands separator (`１，２００`):
/// NFKC makes `，` a comma, and in Chinese text it separates items (`3，5人`), not digits.
pub(super) fn ideographic_commas(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let digit = |k: usize| chars.get(k).is_some_and(|c| c.is_numeric());
    let mut out = String::with_capacity(text.len());
    for (k, &c) in chars.iter().enumerate() {
        let thousands = k > 0 && digit(k - 1) && (1..=3).all(|d| digit(k + d)) && !digit(k + 4);
        out.push(if c == '，' && !thousands { '、' } else { c });
    }
    out
}

/// The figures of a text, and all the values they stand for.
pub(super) struct Figures {
    pub(super) list: Vec<Figure>,
    pub(super) known: HashSet<String>,
}

/// The figures of `text`, read line by line; those of the lines before the work ran out, when
/// it did.
pub(super) fn read_figures(text: &str, work: &Work) -> Figures {
    read_lines(text, work, true)
}

/// What `text` holds, for matching figures against it: its figures read as [`read_figures`]
/// reads them, and as they stand with its lines' markers kept (`#### 14 October` holds 14
/// October, not a section 14).
fn held(text: &str, work: &Work) -> HashSet<String> {
    let mut known = read_figures(text, work).known;
    known.extend(read_lines(text, work, false).known);
    known
}

/// The figures of `text`, read line by line, each line's list or heading marker set aside
/// when `markers` says so.
fn read_lines(text: &str, work: &Work, markers: bool) -> Figures {
    let norm: String = ideographic_commas(text).nfkc().collect();
    let decimal = Decimal::of_text(&norm);
    let mut list = Vec::new();
    for line in norm.lines() {
        if work.over() {
            break;
        }
        let line = if markers { without_marker(line) } else { line };
        let chars: Vec<char> = line.chars().collect();
        work.charge(chars.len() + 1);
        let mut i = 0;
        while i < chars.len() && !work.over() {
            let c = chars[i];
            let prev = i.checked_sub(1).map(|k| chars[k]);
            i = if c.is_ascii_digit() && !prev.is_some_and(|p| p.is_ascii_digit()) {
                digit_figure(&chars, i, decimal, &mut list)
            } else if cn_digit(c).is_some() || c == '十' {
                cn_figure(&chars, i, &mut list)
            } else if c.is_ascii_alphabetic() && !prev.is_some_and(|p| p.is_ascii_alphabetic()) {
                word_figure(&chars, i, &mut list)
            } else {
                i + 1
            }
            .max(i + 1);
        }
    }
    let known = list
        .iter()
        .flat_map(|f| f.keys.iter().chain(&f.grounds))
        .cloned()
        .collect();
    Figures { list, known }
}

/// The figures of `figures` that nothing in `other` matches, each once. With `tolerant` (or for
/// a time whose hour is not certain) a time with no minutes matches its hour as a plain number.
pub(super) fn unmatched(
    figures: &[Figure],
    other: &HashSet<String>,
    tolerant: bool,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for f in figures.iter().filter(|f| !f.weak) {
        let loose = tolerant || !f.certain;
        let found = f.keys.iter().any(|k| other.contains(k))
            || (loose && f.loose.iter().any(|k| other.contains(k)));
        let shown = f.show();
        if !found && seen.insert(shown.clone()) {
            out.push(shown);
        }
    }
    out
}

/// Figures of `source` that `answer`, a rendering in the source's own language (a proofread or
/// reformatted text), lacks — a line left out, a figure changed — and figures it adds that the
/// source does not hold (`4:00 PM` under the notes), plain whole numbers aside: such a
/// rendering may number its changes in a table of its own.
pub(super) fn lost_figures(source: &str, answer: &str, work: &Work) -> Option<ProseDoubt> {
    let src = read_figures(source, work);
    let missing = unmatched(&src.list, &held(answer, work), true);
    let counted = |f: &Figure| !f.shown.chars().all(|c| c.is_ascii_digit());
    let added: Vec<Figure> = read_figures(answer, work)
        .list
        .into_iter()
        .filter(counted)
        .collect();
    let added = unmatched(&added, &src.known, false);
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!(
            "figures of the source missing: {}",
            listed(&missing, 6)
        ));
    }
    if !added.is_empty() {
        parts.push(format!("figures not in the source: {}", listed(&added, 6)));
    }
    (!parts.is_empty()).then(|| ProseDoubt::new("figures", parts.join("; ")))
}

/// Figures of the source the rendering lacks, and figures it has that the source does not.
pub(super) fn changed_figures(source: &str, answer: &str, work: &Work) -> Option<ProseDoubt> {
    let src = read_figures(source, work);
    let ans = read_figures(answer, work);
    let missing = unmatched(&src.list, &held(answer, work), true);
    let added = unmatched(&ans.list, &src.known, false);
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("{} missing", listed(&missing, 6)));
    }
    if !added.is_empty() {
        parts.push(format!("{} not in the source", listed(&added, 6)));
    }
    (!parts.is_empty())
        .then(|| ProseDoubt::new("figures", format!("figures changed: {}", parts.join("; "))))
}
