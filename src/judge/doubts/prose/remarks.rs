//! Remarks about the task and headings the source does not have.

use super::*;

/// A line about the task rather than the text: "This translation keeps…", "以下是翻译：",
/// "Note: I kept the names in pinyin.".
pub(super) fn is_remark(line: &str) -> bool {
    const STARTS: &str = "this |the |here is|here's|here are|below is|above is|note|i have|i've|\
        i |translated|translation|sure|certainly|in this|please note|as requested|my translation";
    const KEPT: &str = "i kept|i have kept|i've kept|i preserved|i have preserved|i maintained|\
        i have maintained|i retained|i have retained";
    const ZH_STARTS: &str = "以下|以上|译文|翻译|这是|这就是|注|说明|备注|本译|该译|此译|本翻译|\
        该翻译|此翻译|我已|我将|我保留|好的";
    let starts = |text: &str, list: &str| list.split('|').any(|p| text.starts_with(p));
    let t = line.trim().trim_start_matches(|c: char| {
        matches!(
            c,
            '#' | '*' | '_' | '>' | '-' | '(' | '（' | '[' | '【' | ' '
        )
    });
    let lower = t.to_lowercase();
    let has = |words: &str| words.split('|').any(|w| lower.contains(w));
    let english = (lower.contains("translat") && starts(&lower, STARTS))
        || (lower.starts_with("note") && has(" i | i've | i have |pinyin"))
        || (starts(&lower, KEPT) && has("original|name|format|structure|layout|pinyin|term"));
    let chinese = ((t.contains("翻译") || t.contains("译文")) && starts(t, ZH_STARTS))
        || (starts(t, "注|说明|备注") && (t.contains("原文") || t.contains("拼音")));
    english || chinese || t.contains("翻译如下") || t.contains("译文如下")
}

/// Remarks in the first two or last three lines of the answer, unless the source speaks of
/// translation itself.
pub(super) fn remark(source: &str, answer: &str) -> Option<ProseDoubt> {
    let lower = source.to_lowercase();
    if ["translat", "翻译", "译文", "翻譯", "譯文"]
        .iter()
        .any(|w| lower.contains(w))
        || source.lines().any(is_remark)
    {
        return None;
    }
    let lines: Vec<&str> = unfenced_lines(answer)
        .into_iter()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let n = lines.len();
    let quoted: Vec<String> = lines
        .iter()
        .enumerate()
        .filter(|(k, l)| (*k < 2 || k + 3 >= n) && is_remark(l))
        .map(|(_, l)| format!("'{}'", cut(l.trim(), 80)))
        .collect();
    if quoted.is_empty() {
        return None;
    }
    let detail = format!("a remark about the task: {}", quoted.join("; "));
    Some(ProseDoubt::new("remark", detail))
}

/// The Markdown headings of `text` (`# Title`, or a line underlined with `===` or `---`),
/// outside code blocks.
pub(super) fn headings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    let mut prev = "";
    for line in unfenced_lines(text) {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            prev = "";
            continue;
        }
        if fenced {
            continue;
        }
        let indented = line.len() - line.trim_start().len() >= 4;
        if !indented {
            if let Some(h) = atx_heading(t) {
                out.push(h);
                prev = "";
                continue;
            }
            if underline(t) && paragraph_line(prev) {
                out.push(prev.trim().to_string());
                prev = "";
                continue;
            }
        }
        prev = line;
    }
    out
}

pub(super) fn atx_heading(t: &str) -> Option<String> {
    let level = t.chars().take_while(|c| *c == '#').count();
    let rest = &t[level..];
    if !(1..=6).contains(&level) || !rest.starts_with([' ', '\t']) {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim();
    (!text.is_empty()).then(|| text.to_string())
}

pub(super) fn underline(t: &str) -> bool {
    (t.len() >= 2 && t.chars().all(|c| c == '=')) || (t.len() >= 3 && t.chars().all(|c| c == '-'))
}

/// A line of a paragraph, which an underline makes a heading (a list item's is a rule).
pub(super) fn paragraph_line(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !line.starts_with("    ") && without_marker(t).len() == t.len()
}

/// Headings the answer adds: any when the source has none, else more than the source's and one
/// for a title.
pub(super) fn added_headings(source: &str, answer: &str) -> Option<ProseDoubt> {
    let had = headings(source).len();
    let has = headings(answer);
    let quoted = has
        .iter()
        .take(5)
        .map(|h| format!("'{}'", cut(h, 60)))
        .collect::<Vec<_>>()
        .join(", ");
    let detail = if had == 0 && !has.is_empty() {
        format!("headings the source does not have: {quoted}")
    } else if had > 0 && has.len() > had + 1 {
        let n = has.len();
        format!("more headings than the source ({n} where it has {had}): {quoted}")
    } else {
        return None;
    };
    Some(ProseDoubt::new("headings", detail))
}
