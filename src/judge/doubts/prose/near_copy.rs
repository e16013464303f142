//! Near copies: a condensing that is its source again, in any order, or nearly as long.

use super::*;

/// The pieces sentences are compared by: each Han character, and each run of other letters and
/// digits, lowercased (`支付服务 processed 12,000` → 支 付 服 务 processed 12 000).
pub(super) fn pieces(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut word = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() && !is_han(c) {
            word.extend(c.to_lowercase());
            continue;
        }
        if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if is_han(c) {
            out.push(c.to_string());
        }
    }
    out
}

/// Pieces joined so that a sequence of pieces is found as a substring.
pub(super) fn joined(pieces: &[String]) -> String {
    let mut s = String::from('\u{1}');
    for p in pieces {
        s.push_str(p);
        s.push('\u{1}');
    }
    s
}

pub(super) fn pairs(pieces: &[String]) -> HashSet<String> {
    pieces
        .windows(2)
        .map(|w| format!("{}\u{1}{}", w[0], w[1]))
        .collect()
}

/// The source's sentences as pieces (split at line ends, at 。！？!? and at a full stop before
/// a space), those of six characters or more.
pub(super) fn sentences(source: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in source.lines() {
        let chars: Vec<char> = without_marker(line).chars().collect();
        let mut start = 0;
        for k in 0..=chars.len() {
            let end = k == chars.len()
                || matches!(chars[k], '。' | '！' | '？' | '!' | '?')
                || (chars[k] == '.' && chars.get(k + 1).is_none_or(|c| c.is_whitespace()));
            if end {
                let p = pieces(&chars[start..k].iter().collect::<String>());
                if p.iter().map(|x| x.chars().count()).sum::<usize>() >= 6 {
                    out.push(p);
                }
                start = k + 1;
            }
        }
    }
    out
}

/// The share of `unit`'s neighbouring pairs of pieces that `set` holds.
pub(super) fn pair_share(unit: &[String], set: &HashSet<String>) -> f64 {
    let own = pairs(unit);
    if own.is_empty() {
        return 0.0;
    }
    let held = own.iter().filter(|p| set.contains(*p)).count();
    held as f64 / own.len() as f64
}

/// A condensing that is its source again: most of the source's sentences in it, in any order,
/// or more than half as long as a source of 200 characters or more.
/// Sources of at least this many characters (white space aside) have summaries judged by
/// their length.
pub(super) const LENGTH_JUDGED_CHARS: usize = 1000;

/// A condensing longer than what it condenses: a two-line note's "summary" that talks its way
/// past the note. Measured in tokens (a Han character one, other text one per four
/// characters), so an English summary of Chinese notes is not taken for longer by its letters;
/// the answer's headings do not count, and a tenth (and a token) of margin lets a summary of a
/// line that adds its articles pass.
pub(super) fn longer(source: &str, answer: &str) -> Option<ProseDoubt> {
    let body: String = answer
        .lines()
        .filter(|l| atx_heading(l.trim()).is_none())
        .collect::<Vec<_>>()
        .join("\n");
    let (had, has) = (
        crate::llm::text_tokens(source),
        crate::llm::text_tokens(&body),
    );
    (had > 0 && has > had + had / 10 + 1).then(|| {
        ProseDoubt::new(
            "longer",
            format!("longer than its source: about {has} tokens against {had}"),
        )
    })
}

pub(super) fn near_copy(source: &str, answer: &str) -> Option<ProseDoubt> {
    let source: String = source.nfkc().collect();
    let answer: String = answer.nfkc().collect();
    let mut notes = Vec::new();
    let units = sentences(&source);
    let lines: Vec<Vec<String>> = answer
        .lines()
        .map(|l| pieces(without_marker(l)))
        .filter(|l| !l.is_empty())
        .collect();
    let all: Vec<String> = lines.concat();
    let whole = joined(&all);
    let whole_pairs = pairs(&all);
    let line_pairs: Vec<HashSet<String>> = lines.iter().map(|l| pairs(l)).collect();
    // Found verbatim, or nearly: most of its pairs of pieces in one line of the answer.
    let found = units
        .iter()
        .filter(|u| {
            whole.contains(&joined(u))
                || (pair_share(u, &whole_pairs) >= 0.8
                    && line_pairs.iter().any(|p| pair_share(u, p) >= 0.8))
        })
        .count();
    if units.len() >= 3 && found * 5 >= units.len() * 3 {
        let n = units.len();
        notes.push(format!(
            "a near-copy: {found} of {n} of the source's lines are in it"
        ));
    }
    let size = |t: &str| t.chars().filter(|c| !c.is_whitespace()).count();
    let (had, has) = (size(&source), size(&answer));
    // A short note's fair summary may be half its length: only a source of some size is
    // judged by length.
    if had >= LENGTH_JUDGED_CHARS && has * 2 > had {
        notes.push(format!("as long as {}% of the source", has * 100 / had));
    }
    (!notes.is_empty()).then(|| ProseDoubt::new("near_copy", notes.join("; ")))
}
