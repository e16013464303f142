//! Scripts and languages: which script a language name means, and what counts as a word of it.

/// Stands for a removed piece of a line: the words on either side of it are no neighbours.
pub(super) const GAP: char = '\u{FFFC}';

/// The script a language is written in, as far as these checks need to know it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Script {
    Han,
    Latin,
    Other,
}

pub(super) fn script_of_language(language: &str) -> Script {
    let l = language.trim().to_lowercase().replace('_', "-");
    let any = |words: &[&str]| words.iter().any(|w| l.contains(w));
    // zh, zh-CN, zh-Hans, Chinese, Simplified Chinese, 中文, 简体中文, 汉语
    if l == "zh"
        || l.starts_with("zh-")
        || l == "mandarin"
        || any(&["chinese", "中文", "汉语", "漢語"])
    {
        Script::Han
    } else if l == "en" || l.starts_with("en-") || any(&["english", "英文", "英语", "英語"]) {
        Script::Latin
    } else {
        Script::Other
    }
}

pub(super) fn is_han(c: char) -> bool {
    matches!(c,
        '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{2EBEF}' | '〇')
}

/// East Asian characters and punctuation, full-width forms and typographic punctuation: they
/// end a Latin-script token (`Zhang伟` is `Zhang` then `伟`).
pub(super) fn breaks_token(c: char) -> bool {
    c.is_whitespace()
        || is_han(c)
        || matches!(c,
            '\u{2000}'..='\u{206F}' | '\u{2E80}'..='\u{2FDF}' | '\u{3000}'..='\u{30FF}'
            | '\u{AC00}'..='\u{D7AF}' | '\u{FF00}'..='\u{FFEF}' | GAP)
}

/// Whether `text` is written in Han characters; a Han character weighs about three letters.
pub(super) fn mostly_han(text: &str) -> bool {
    let han = text.chars().filter(|c| is_han(*c)).count();
    let latin = text.chars().filter(char::is_ascii_alphabetic).count();
    han > 0 && han * 3 >= latin
}

pub(super) fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to `max` characters, an ellipsis marking the cut.
pub(super) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max).collect();
    s.push('…');
    s
}

/// The first `max` items, and how many more there are.
pub(super) fn listed(items: &[String], max: usize) -> String {
    let mut s = items
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > max {
        s.push_str(&format!(" and {} more", items.len() - max));
    }
    s
}

/// The answer's lines, numbered as in the answer, with one fence wrapping all of it blanked
/// (```` ```markdown ```` … ```` ``` ````): a model wraps its whole answer so, and the fence is
/// not content.
pub(super) fn unfenced_lines(answer: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = answer.lines().collect();
    let filled: Vec<usize> = (0..lines.len())
        .filter(|&i| !lines[i].trim().is_empty())
        .collect();
    let (Some(&first), Some(&last)) = (filled.first(), filled.last()) else {
        return lines;
    };
    let fence = |l: &str| l.trim().starts_with("```");
    let opening = lines[first].trim().trim_start_matches('`').trim();
    if first == last
        || !fence(lines[first])
        || lines[last].trim() != "```"
        || !opening
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return lines;
    }
    // Inner blocks come in pairs, and the first inner fence opens one: a closing fence has no
    // info string, so a bare one there closes the first block and nothing wraps the answer.
    let inner: Vec<&str> = lines[first + 1..last]
        .iter()
        .copied()
        .filter(|l| fence(l))
        .collect();
    if inner.len() % 2 == 1 || inner.first().is_some_and(|l| l.trim() == "```") {
        return lines;
    }
    lines[first] = "";
    lines[last] = "";
    lines
}
