//! Near copies: a condensing that is its source again, in any order, or nearly as long.

use super::*;
use crate::judge::work::Work;
use std::collections::HashMap;

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

/// The share of its pairs of pieces a sentence must have in the answer (and in one of its
/// lines) to count as found there.
const FOUND_SHARE: f64 = 0.8;

/// A condensing that is its source again: most of the source's sentences in it, in any order,
/// or most of its own sentences lifted from the source ([`lifted`]), or more than half as long
/// as a source of [`LENGTH_JUDGED_CHARS`] or more.
pub(super) fn near_copy(source: &str, answer: &str, work: &Work) -> Option<ProseDoubt> {
    let source: String = source.nfkc().collect();
    let answer: String = answer.nfkc().collect();
    let mut notes = Vec::new();
    let units = sentences(&source);
    let lines = line_pieces(&answer, work)?;
    let found = sentences_found(&units, &lines, work)?;
    if units.len() >= 3 && found * 5 >= units.len() * 3 {
        let n = units.len();
        notes.push(format!(
            "a near-copy: {found} of {n} of the source's lines are in it"
        ));
    } else if let Some(note) = lifted(&source, &answer, work)? {
        notes.push(note);
    }
    let size = |t: &str| t.chars().filter(|c| !c.is_whitespace()).count();
    let (had, has) = (size(&source), size(&answer));
    // A short note's fair summary may be half its length: only a source of some size is
    // judged by length.
    if had >= LENGTH_JUDGED_CHARS && has * 2 > had {
        notes.push(format!("as long as {}% of the source", has * 100 / had));
    }
    (!notes.is_empty() && !work.over()).then(|| ProseDoubt::new("near_copy", notes.join("; ")))
}

/// A condensing whose own sentences mostly stand in its source (three or more, at least
/// three in five of them, each verbatim or nearly): lines lifted from a long source, not a
/// summary of it. `Ok(None)` when it is not; `None` when the work ran out first.
fn lifted(source: &str, answer: &str, work: &Work) -> Option<Option<String>> {
    let said = sentences(answer);
    if said.len() < 3 {
        return Some(None);
    }
    let lines = line_pieces(source, work)?;
    let found = sentences_found(&said, &lines, work)?;
    let n = said.len();
    Some((found * 5 >= n * 3).then(|| {
        format!("a near-copy: {found} of its {n} sentences stand in the source as they are")
    }))
}

/// The pieces of each line of `text` that has any, list markers aside; `None` when the work
/// ran out first.
fn line_pieces(text: &str, work: &Work) -> Option<Vec<Vec<String>>> {
    let mut lines = Vec::new();
    for line in text.lines() {
        if work.over() {
            return None;
        }
        work.charge(line.len() + 1);
        let p = pieces(without_marker(line));
        if !p.is_empty() {
            lines.push(p);
        }
    }
    Some(lines)
}

/// How many of the source's sentences (`units`, as pieces) the answer's `lines` hold: verbatim
/// (read across lines), or nearly — [`FOUND_SHARE`] of its pairs of pieces in the answer and
/// in one line of it. `None` when the work ran out (or the run stopped) first.
pub(super) fn sentences_found(
    units: &[Vec<String>],
    lines: &[Vec<String>],
    work: &Work,
) -> Option<usize> {
    let index = AnswerPieces::of(lines, work);
    let mut found = 0;
    for u in units {
        if work.over() {
            return None;
        }
        found += usize::from(index.holds(u, work));
    }
    Some(found)
}

/// The answer's pieces, indexed once: each piece as a number, where each pair of neighbouring
/// pieces stands (across lines: the answer read whole), and which lines hold each pair (within
/// a line). A sentence of the source is looked up at the places of its rarest pair, never by a
/// pass over the answer.
struct AnswerPieces {
    ids: HashMap<String, u32>,
    /// Every piece of the answer, line after line, as numbers.
    whole: Vec<u32>,
    /// Where each pair of neighbouring pieces starts in `whole`, ascending.
    places: HashMap<(u32, u32), Vec<u32>>,
    /// The lines holding each pair within them, ascending, each once.
    lines: HashMap<(u32, u32), Vec<u32>>,
    /// (line, pair) for every pair within a line.
    in_line: HashSet<(u32, (u32, u32))>,
}

impl AnswerPieces {
    fn of(lines: &[Vec<String>], work: &Work) -> AnswerPieces {
        let mut ids: HashMap<String, u32> = HashMap::new();
        let mut whole = Vec::new();
        let mut in_line = HashSet::new();
        let mut by_line: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
        // An answer is far below 4 G pieces and lines, so each fits in a u32.
        for (n, line) in lines.iter().enumerate() {
            work.charge(line.len());
            if work.over() {
                break;
            }
            let from = whole.len();
            for p in line {
                let next = ids.len() as u32;
                whole.push(*ids.entry(p.clone()).or_insert(next));
            }
            for w in whole[from..].windows(2) {
                if in_line.insert((n as u32, (w[0], w[1]))) {
                    by_line.entry((w[0], w[1])).or_default().push(n as u32);
                }
            }
        }
        let mut places: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
        for (k, w) in whole.windows(2).enumerate() {
            places.entry((w[0], w[1])).or_default().push(k as u32);
        }
        AnswerPieces {
            ids,
            whole,
            places,
            lines: by_line,
            in_line,
        }
    }

    /// Whether the answer holds `unit` (a sentence of the source, as pieces) verbatim, or
    /// [`FOUND_SHARE`] of its pairs of pieces both in the whole answer and in one line.
    fn holds(&self, unit: &[String], work: &Work) -> bool {
        work.charge(unit.len());
        let ids: Vec<Option<u32>> = unit.iter().map(|p| self.ids.get(p).copied()).collect();
        if ids.len() <= 1 {
            return ids.first().is_none_or(Option::is_some);
        }
        if ids.iter().all(Option::is_some) && self.verbatim(&ids, work) {
            return true;
        }
        // The sentence's pairs, each once; those with a piece the answer lacks it does not
        // hold.
        let pairs = unit
            .windows(2)
            .map(|w| (&w[0], &w[1]))
            .collect::<HashSet<_>>()
            .len();
        let own: HashSet<(u32, u32)> = ids
            .windows(2)
            .filter_map(|w| Some((w[0]?, w[1]?)))
            .collect();
        let held = own.iter().filter(|p| self.places.contains_key(*p)).count();
        share(held, pairs) >= FOUND_SHARE && self.in_one_line(&own, pairs, work)
    }

    /// `ids` (every piece in the answer) as a run of the answer's pieces: looked for at the
    /// places of its rarest pair.
    fn verbatim(&self, ids: &[Option<u32>], work: &Work) -> bool {
        let unit: Vec<u32> = ids.iter().flatten().copied().collect();
        let n = unit.len();
        let Some((offset, places)) = (0..n.saturating_sub(1))
            .map(|i| (i, self.places.get(&(unit[i], unit[i + 1]))))
            .map(|(i, at)| (i, at.map_or(&[][..], Vec::as_slice)))
            .min_by_key(|(_, at)| at.len())
        else {
            return false;
        };
        for &p in places {
            if work.over() {
                return false;
            }
            work.charge(n);
            let start = (p as usize).checked_sub(offset);
            if start.is_some_and(|k| self.whole.get(k..k + n) == Some(&unit[..])) {
                return true;
            }
        }
        false
    }

    /// Whether one line holds [`FOUND_SHARE`] of the `pairs` pairs of a sentence (`own`: those
    /// the answer has). Such a line holds `needed` of `own` at least, so it holds one of any
    /// `own - needed + 1` of them: only the lines holding the rarest such are counted.
    fn in_one_line(&self, own: &HashSet<(u32, u32)>, pairs: usize, work: &Work) -> bool {
        let Some(needed) = (1..=pairs).find(|k| share(*k, pairs) >= FOUND_SHARE) else {
            return false;
        };
        if own.len() < needed {
            return false;
        }
        let mut rarest: Vec<(&(u32, u32), &[u32])> = own
            .iter()
            .map(|p| (p, self.lines.get(p).map_or(&[][..], Vec::as_slice)))
            .collect();
        rarest.sort_unstable_by_key(|(p, at)| (at.len(), **p));
        let mut candidates: Vec<u32> = rarest
            .iter()
            .take(own.len() - needed + 1)
            .flat_map(|(_, at)| at.iter().copied())
            .collect();
        work.charge(candidates.len());
        candidates.sort_unstable();
        candidates.dedup();
        for line in candidates {
            if work.over() {
                return false;
            }
            work.charge(own.len());
            let held = own
                .iter()
                .filter(|p| self.in_line.contains(&(line, **p)))
                .count();
            if share(held, pairs) >= FOUND_SHARE {
                return true;
            }
        }
        false
    }
}

/// `held` of `of` as a share, as the check compares it.
fn share(held: usize, of: usize) -> f64 {
    if of == 0 {
        return 0.0;
    }
    held as f64 / of as f64
}
