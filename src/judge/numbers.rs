//! One reader of numbers, dates and currencies, for every part of zhi that compares values:
//! the schema's coercion of a quoted number, grounding, the figures of a summary, the doubts
//! and the audit. Two readers disagreeing is how a right cell gets called wrong (`1,50` read as
//! 1.5 by one and 150 by another), so there is one month table and one rule for marks here.
//!
//! The rule for `,` and `.`: when both stand in a number, the last one is the decimal mark
//! (`1.500,00`, `1,500.00`); a mark met twice or more groups thousands (`1.200.000`); a lone mark
//! followed by one, two or four or more digits is the decimal mark (`1,50`, `3.5`); a lone mark
//! followed by exactly three digits groups thousands (`1,130`, `1.130`), except after a lone
//! zero (`0.125`) — unless the document's own numbers say which mark it uses for decimals
//! ([`Decimal::of_text`]: in a text that writes `3.14`, `1.125` is one and a bit). What it lets
//! through: anything that is not one number (`2.6.1` as a version, a range, a phone number) is
//! `None`, never a guess.

/// Month names, January first; a word of three letters or more that begins one names it.
pub const MONTHS: [&str; 12] = [
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

/// The month (1–12) an English word names: `Oct`, `october`, `Sept`; `None` for other words.
pub fn month(word: &str) -> Option<u32> {
    let w = word.to_ascii_lowercase();
    if w.len() < 3 || !w.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    MONTHS
        .iter()
        .position(|m| m.starts_with(&w))
        .map(|i| i as u32 + 1)
}

/// Signs written before an amount.
pub const CURRENCY_SIGNS: [char; 5] = ['¥', '￥', '$', '€', '£'];

/// The signs and names that stand for a currency's ISO code in a text (lower case, NFKC, so
/// `￥` is `¥`).
pub fn currency_signs(code: &str) -> Option<&'static [&'static str]> {
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

/// Which mark a document writes decimals with, as far as its own numbers tell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Decimal {
    /// Not told (or told both ways): the rule in the module's docs.
    #[default]
    Either,
    /// `1,500.00`, `3.14`.
    Point,
    /// `1.500,00`, `3,14`.
    Comma,
}

impl Decimal {
    /// The decimal mark a text's unambiguous numbers use: `1,130.00` and `3.14` say point,
    /// `1.130,00` and `3,14` say comma; a number with a lone mark before three digits says
    /// nothing. The mark most numbers say wins; a tie is [`Decimal::Either`]. Linear in the text.
    pub fn of_text(text: &str) -> Decimal {
        let (mut point, mut comma) = (0usize, 0usize);
        for token in number_tokens(text) {
            match Decimal::said_by(token) {
                Decimal::Point => point += 1,
                Decimal::Comma => comma += 1,
                Decimal::Either => {}
            }
        }
        match point.cmp(&comma) {
            std::cmp::Ordering::Greater => Decimal::Point,
            std::cmp::Ordering::Less => Decimal::Comma,
            std::cmp::Ordering::Equal => Decimal::Either,
        }
    }

    /// What one written number says of the decimal mark.
    fn said_by(token: &str) -> Decimal {
        let (points, commas) = (token.matches('.').count(), token.matches(',').count());
        let tail = token.rfind([',', '.']).map_or(0, |i| token.len() - i - 1);
        match (points, commas) {
            (0, 0) => Decimal::Either,
            (p, c) if p > 0 && c > 0 => match token.rfind(',') > token.rfind('.') {
                true => Decimal::Comma,
                false => Decimal::Point,
            },
            (1, 0) if tail != 3 => Decimal::Point,
            (0, 1) if tail != 3 => Decimal::Comma,
            (p, 0) if p > 1 => Decimal::Comma,
            (0, c) if c > 1 => Decimal::Point,
            _ => Decimal::Either,
        }
    }
}

/// The digit runs of `text` with the `,` and `.` between their digits.
fn number_tokens(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && !bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i >= bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len()
            && (bytes[i].is_ascii_digit()
                || (matches!(bytes[i], b',' | b'.')
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)))
        {
            i += 1;
        }
        Some(&text[start..i])
    })
}

/// A number written as a person writes it — currency signs and codes, thousands separators
/// (`,`, `.`, a space or `'`), a decimal point or comma — read by the module's rule. `None`
/// for anything else.
pub fn number(s: &str) -> Option<f64> {
    number_as(s, Decimal::Either)
}

/// [`number`], with the decimal mark the document uses where it is known.
pub fn number_as(s: &str, decimal: Decimal) -> Option<f64> {
    let code = |w: &str| w.len() == 3 && w.chars().all(|c| c.is_ascii_uppercase());
    let mut t = s.trim();
    if let Some((head, rest)) = t.split_once(' ')
        && code(head)
    {
        t = rest.trim();
    }
    if let Some((rest, tail)) = t.rsplit_once(' ')
        && code(tail)
    {
        t = rest.trim();
    }
    let t = t
        .trim_start_matches(CURRENCY_SIGNS)
        .trim_end_matches('元')
        .trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let digits_at_ends =
        t.starts_with(|c: char| c.is_ascii_digit()) && t.ends_with(|c: char| c.is_ascii_digit());
    if !digits_at_ends || !t.chars().all(|c| c.is_ascii_digit() || ",. '".contains(c)) {
        return None;
    }
    let t: String = t.chars().filter(|c| *c != ' ' && *c != '\'').collect();
    let mark = decimal_mark(&t, decimal)?;
    let mut plain = String::with_capacity(t.len());
    for (i, c) in t.char_indices() {
        match c {
            '0'..='9' => plain.push(c),
            _ if Some(i) == mark => plain.push('.'),
            _ => {}
        }
    }
    let n: f64 = plain.parse().ok()?;
    Some(if neg { -n } else { n })
}

/// Where the decimal mark of `t` (digits, `,` and `.` only) stands: `Some(None)` for a whole
/// number, `None` when the marks make no one number (`1.2.3,4,5`).
fn decimal_mark(t: &str, decimal: Decimal) -> Option<Option<usize>> {
    let Some(last) = t.rfind([',', '.']) else {
        return Some(None);
    };
    let mark = t.as_bytes()[last];
    let same = t.bytes().filter(|b| *b == mark).count();
    let other = t
        .bytes()
        .filter(|b| matches!(b, b',' | b'.') && *b != mark)
        .count();
    let tail = t.len() - last - 1;
    // Groups of three between the marks, or it is no grouped number.
    let grouped = |sep: u8| {
        t.split(sep as char)
            .skip(1)
            .all(|g| g.split([',', '.']).next().is_some_and(|d| d.len() == 3))
    };
    if other > 0 {
        // `1.500,00`: the last mark is the decimal one, met once; the other groups.
        let sep = if mark == b',' { b'.' } else { b',' };
        return (same == 1 && grouped(sep)).then_some(Some(last));
    }
    if same > 1 {
        return grouped(mark).then_some(None);
    }
    let is_decimal = match (decimal, mark) {
        (Decimal::Point, b'.') | (Decimal::Comma, b',') => true,
        (Decimal::Point, _) | (Decimal::Comma, _) => false,
        (Decimal::Either, _) => tail != 3 || t[..last].bytes().all(|b| b == b'0'),
    };
    if !is_decimal && tail != 3 {
        // A grouping mark before other than three digits is no number.
        return None;
    }
    Some(is_decimal.then_some(last))
}

/// A date written any common way (`2026-03-14`, `2026年3月14日`, `2026/3/14`, `14 March 2026`,
/// `March 14, 2026`) as (year, month, day); `None` for text that is not one date. Day-first
/// and month-first numbers alone (`03/04/2026`) are not told apart, so they are `None`.
pub fn date(s: &str) -> Option<(u32, u32, u32)> {
    let numbers: Vec<u32> = s
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let words: Vec<&str> = s
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .collect();
    let month_word = words.iter().find_map(|w| month(w));
    let (y, m, d) = match (month_word, numbers.as_slice()) {
        (Some(m), [a, b]) if *a > 31 => (*a, m, *b),
        (Some(m), [a, b]) => (*b, m, *a),
        (None, [y, m, d]) if *y > 31 && words.is_empty() => (*y, *m, *d),
        _ => return None,
    };
    ((1..=12).contains(&m) && (1..=31).contains(&d) && (1000..=9999).contains(&y))
        .then_some((y, m, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_read_by_one_rule() {
        assert_eq!(number("1,50"), Some(1.5));
        assert_eq!(number("1.500,00"), Some(1500.0));
        assert_eq!(number("1,500.00"), Some(1500.0));
        assert_eq!(number("¥1,130.00"), Some(1130.0));
        assert_eq!(number("1,130"), Some(1130.0));
        assert_eq!(number("0.125"), Some(0.125));
        assert_eq!(number("0,125"), Some(0.125));
        assert_eq!(number("1.125"), Some(1125.0));
        assert_eq!(number("1.200.000,50"), Some(1_200_000.5));
        assert_eq!(number("1 200,5"), Some(1200.5));
        assert_eq!(number("CNY 96.00"), Some(96.0));
        assert_eq!(number("-3.5"), Some(-3.5));
        assert_eq!(number("1130元"), Some(1130.0));
        for not_one in ["2.6.1", "1,2,3", "1.2,3.4", "12-14", "", "abc", "1,", ".5"] {
            assert_eq!(number(not_one), None, "{not_one}");
        }
    }

    #[test]
    fn the_documents_own_numbers_decide_a_lone_mark() {
        let german = "Summe 1.500,00 EUR, MwSt 285,00";
        assert_eq!(Decimal::of_text(german), Decimal::Comma);
        assert_eq!(number_as("1.200", Decimal::Comma), Some(1200.0));
        assert_eq!(number_as("1,250", Decimal::Comma), Some(1.25));
        let english = "Total $1,130.00, tax 3.14%";
        assert_eq!(Decimal::of_text(english), Decimal::Point);
        assert_eq!(number_as("1,250", Decimal::Point), Some(1250.0));
        assert_eq!(number_as("1.125", Decimal::Point), Some(1.125));
        assert_eq!(Decimal::of_text("pages 100 to 200"), Decimal::Either);
    }

    #[test]
    fn dates_and_months_have_one_table() {
        assert_eq!(month("Sept"), Some(9));
        assert_eq!(month("OCT"), Some(10));
        assert_eq!(month("mayor"), None);
        assert_eq!(month("ma"), None);
        assert_eq!(date("2026-03-14"), Some((2026, 3, 14)));
        assert_eq!(date("2026年3月14日"), Some((2026, 3, 14)));
        assert_eq!(date("14 March 2026"), Some((2026, 3, 14)));
        assert_eq!(date("March 14, 2026"), Some((2026, 3, 14)));
        assert_eq!(date("03/04/2026"), None);
        assert_eq!(date("the 3rd of May"), None);
    }
}
