//! Untranslated text: runs of the source's language left in a translation beyond names.

use super::*;

/// An English word left in a line of a Chinese answer.
pub(super) struct LeftWord {
    pub(super) word: String,
    /// It stands next to another such word: a phrase of English, not a kept term.
    pub(super) in_phrase: bool,
}

/// A word that counts as English left: a function word, or a lowercase word of three letters
/// or more (capitalised words are names).
pub(super) fn countable(word: &str) -> bool {
    is_function_word(word)
        || (word.len() >= 3 && word.chars().all(|c| c.is_ascii_lowercase() || c == '\''))
}

/// Surely English, even alone: a function word or an inflected word.
pub(super) fn english_looking(word: &str) -> bool {
    const ENDINGS: [&str; 8] = ["ing", "ed", "ly", "tion", "tions", "ment", "ments", "ness"];
    is_function_word(word)
        || (word.len() >= 5
            && word.chars().all(|c| c.is_ascii_lowercase())
            && ENDINGS.iter().any(|e| word.ends_with(e)))
}

pub(super) fn line_words(line: &str) -> Vec<LeftWord> {
    let chars: Vec<char> = line.chars().collect();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !chars[i].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let s = i;
        while i < chars.len()
            && (chars[i].is_ascii_alphabetic()
                || (chars[i] == '\'' && chars.get(i + 1).is_some_and(char::is_ascii_alphabetic)))
        {
            i += 1;
        }
        spans.push((s, i));
    }
    let separator = |c: &char| {
        matches!(
            c,
            ' ' | '\t' | ',' | '.' | ';' | ':' | '!' | '?' | '-' | '\'' | '"'
        )
    };
    let mut out = Vec::new();
    let mut first = 0;
    for k in 1..=spans.len() {
        if k < spans.len() && chars[spans[k - 1].1..spans[k].0].iter().all(separator) {
            continue;
        }
        let run = &spans[first..k];
        first = k;
        // `软件包管理器（package manager）`: the original term given beside its translation.
        let before = chars[..run[0].0].iter().rev().find(|c| **c != ' ');
        let after = chars[run[run.len() - 1].1..].iter().find(|c| **c != ' ');
        let glossed = matches!(before, Some('(' | '（')) && matches!(after, Some(')' | '）'));
        if glossed && run.len() <= 6 {
            continue;
        }
        let words: Vec<String> = run
            .iter()
            .map(|&(a, b)| chars[a..b].iter().collect::<String>())
            .filter(|w| countable(w))
            .collect();
        let in_phrase = words.len() >= 2;
        out.extend(words.into_iter().map(|word| LeftWord { word, in_phrase }));
    }
    out
}

/// English left in a Chinese rendering of a Latin-script source. A single lowercase word
/// between Chinese text may be a kept package or command name (`aptitude`), so a line counts
/// when it holds a phrase of English or a function word beside another word, and the answer
/// when it holds three English-looking words.
pub(super) fn english_left(lines: &[String]) -> Option<ProseDoubt> {
    // Words of the lines that count, then English-looking words of the others.
    let mut flagged: Vec<(String, usize)> = Vec::new();
    let mut looking: Vec<(String, usize)> = Vec::new();
    let mut seen: HashSet<(String, usize)> = HashSet::new();
    let mut distinct: HashSet<String> = HashSet::new();
    for (n, line) in lines.iter().enumerate() {
        let words = line_words(line);
        let function = words.iter().any(|w| is_function_word(&w.word));
        let counts = words.iter().any(|w| w.in_phrase) || (words.len() >= 2 && function);
        for w in words {
            let looks = english_looking(&w.word);
            if looks {
                distinct.insert(w.word.clone());
            }
            let entry = (w.word, n + 1);
            if (counts || looks) && seen.insert(entry.clone()) {
                if counts {
                    flagged.push(entry);
                } else {
                    looking.push(entry);
                }
            }
        }
    }
    if distinct.len() < 3 && flagged.is_empty() {
        return None;
    }
    if distinct.len() >= 3 {
        flagged.extend(looking);
    }
    let shown: Vec<String> = flagged
        .iter()
        .take(5)
        .map(|(w, n)| format!("'{w}' (line {n})"))
        .collect();
    let more = flagged.len().saturating_sub(5);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    let detail = format!("English left untranslated: {}{tail}", shown.join(", "));
    Some(ProseDoubt::new("untranslated", detail))
}

/// Prose the answer shares word for word with its source, [`COPIED_DOUBT`] of the source's or
/// more: a passage kept in English (a banner, a quotation) or left untranslated. Set aside
/// from the language check when under [`HALF_COPY`], it is still said.
pub(super) fn copied_prose(aligned: &Aligned) -> Option<ProseDoubt> {
    let (copied, prose) = (aligned.copied, aligned.prose);
    if copied < COPIED_MIN_WORDS || (copied as f64) < COPIED_DOUBT * prose as f64 {
        return None;
    }
    let example = aligned
        .example
        .as_ref()
        .map(|(run, line)| format!(": '{run}' (line {line})"))
        .unwrap_or_default();
    let detail =
        format!("{copied} of the source's {prose} words of prose kept as they are{example}");
    Some(ProseDoubt::new("untranslated", detail))
}

/// Chinese characters left in a Latin-script rendering of a Han-script source (`Zhang伟`).
pub(super) fn chinese_left(lines: &[String]) -> Option<ProseDoubt> {
    let mut runs: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for line in lines {
        let mut run = String::new();
        for c in line.chars().chain(std::iter::once(' ')) {
            if is_han(c) {
                run.push(c);
            } else if !run.is_empty() {
                let run = std::mem::take(&mut run);
                if seen.insert(run.clone()) {
                    runs.push(run);
                }
            }
        }
    }
    if runs.is_empty() {
        return None;
    }
    let detail = format!("Chinese left untranslated: {}", listed(&runs, 5));
    Some(ProseDoubt::new("untranslated", detail))
}
