//! Doubts of prose answers (docs/outputs.md#doubts): a translation or a summary can pass every
//! check on its form and still be wrong in ways a reader misses. A small model renders 下午三点
//! as "1:00 PM", leaves "Zhang伟" or "answering" untranslated, adds headings and a remark about
//! its own work, or hands the notes back reordered as their "summary". These checks read such
//! signs from the source and the answer alone. A doubt does not fail the step, it is recorded
//! and may send the step to a stronger model, so each check would rather miss a doubt than
//! raise a false one: a faithful technical translation keeps paths, commands, identifiers, URLs
//! and names in Latin letters, and [`translated_part`] takes those out before the language of an
//! answer is judged.

use std::collections::HashSet;
use unicode_normalization::UnicodeNormalization;

/// One doubt found: a short check name and a detail a person reads (English).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProseDoubt {
    pub check: &'static str,
    pub detail: String,
}

impl ProseDoubt {
    fn new(check: &'static str, detail: String) -> Self {
        Self { check, detail }
    }
}

/// Doubts of `answer`, a rendering of `source` into `language` ("chinese", "english", "zh",
/// "en", "japanese", "french"…). Which text should be in which script is known for Chinese
/// and English only; other languages get the checks that do not need it.
pub(crate) fn translation(source: &str, answer: &str, language: &str) -> Vec<ProseDoubt> {
    let mut out = Vec::new();
    out.extend(changed_figures(source, answer));
    let source_han = mostly_han(source);
    match script_of_language(language) {
        Script::Han if !source_han => out.extend(english_left(&translated_lines(source, answer))),
        Script::Latin if source_han => out.extend(chinese_left(&translated_lines(source, answer))),
        _ => {}
    }
    out.extend(remark(source, answer));
    out.extend(added_headings(source, answer));
    out
}

/// Doubts of `answer`, a condensing of `source` (a summary, notes, an analysis).
pub(crate) fn condensed(source: &str, answer: &str) -> Vec<ProseDoubt> {
    let mut out = Vec::new();
    out.extend(near_copy(source, answer));
    let added = unmatched(
        &read_figures(answer).list,
        &read_figures(source).known,
        false,
    );
    if !added.is_empty() {
        let detail = format!("figures not in the source: {}", listed(&added, 6));
        out.push(ProseDoubt::new("figures", detail));
    }
    out
}

/// `answer` as the language check should judge it: one fence wrapping the whole answer removed,
/// and what the answer keeps verbatim that is not prose in the source's language removed —
/// code spans and blocks, paths, commands, identifiers, URLs, e-mail addresses, numbers, file
/// names, acronyms, and Latin-script names and words a source in another script holds. What is
/// left is what was translated.
pub(crate) fn translated_part(source: &str, answer: &str) -> String {
    let lines: Vec<String> = translated_lines(source, answer)
        .iter()
        .map(|line| {
            let text = line.replace(GAP, " ");
            text.split([' ', '\t'])
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    lines.join("\n").trim_matches('\n').to_string()
}

// ---------------------------------------------------------------------------------------------
// Scripts and languages.

/// Stands for a removed piece of a line: the words on either side of it are no neighbours.
const GAP: char = '\u{FFFC}';

/// The script a language is written in, as far as these checks need to know it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Script {
    Han,
    Latin,
    Other,
}

fn script_of_language(language: &str) -> Script {
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

fn is_han(c: char) -> bool {
    matches!(c,
        '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{2EBEF}' | '〇')
}

/// East Asian characters and punctuation, full-width forms and typographic punctuation: they
/// end a Latin-script token (`Zhang伟` is `Zhang` then `伟`).
fn breaks_token(c: char) -> bool {
    c.is_whitespace()
        || is_han(c)
        || matches!(c,
            '\u{2000}'..='\u{206F}' | '\u{2E80}'..='\u{2FDF}' | '\u{3000}'..='\u{30FF}'
            | '\u{AC00}'..='\u{D7AF}' | '\u{FF00}'..='\u{FFEF}' | GAP)
}

/// Whether `text` is written in Han characters; a Han character weighs about three letters.
fn mostly_han(text: &str) -> bool {
    let han = text.chars().filter(|c| is_han(*c)).count();
    let latin = text.chars().filter(char::is_ascii_alphabetic).count();
    han > 0 && han * 3 >= latin
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to `max` characters, an ellipsis marking the cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max).collect();
    s.push('…');
    s
}

/// The first `max` items, and how many more there are.
fn listed(items: &[String], max: usize) -> String {
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
fn unfenced_lines(answer: &str) -> Vec<&str> {
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

// ---------------------------------------------------------------------------------------------
// What an answer kept verbatim.

/// Commands whose line, kept verbatim from the source, is not prose left untranslated.
const COMMANDS: &str = "apt apt-get apt-cache aptitude dpkg sudo su systemctl service journalctl \
    git cargo make ls cd cat grep sed awk find cp mv rm mkdir chmod chown tar curl wget ssh scp \
    rsync pip npm python python3 docker kubectl mount umount echo export vi vim nano less man \
    ping ip kill ps df du reboot shutdown";

/// English words no package, command or name is made of: one left in a Chinese answer is
/// English prose.
const FUNCTION_WORDS: &str = "an the and or but nor of to in on at by for with from into onto \
    about after before over under between through during without within is are was were be been \
    being has have had does did will would shall should can could might must not this that these \
    those it its they them their we our you your he she his her him which who whom whose what \
    when where why how there here then than as if so also all any some each every such only very \
    because while until since";

fn is_function_word(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    FUNCTION_WORDS.split_whitespace().any(|w| w == lower)
}

const OPENERS: &[char] = &['(', '[', '{', '<', '"', '\'', '*', '`'];
const CLOSERS: &[char] = &[
    ')', ']', '}', '>', '"', '\'', '*', '`', ',', ';', ':', '!', '?', '.',
];

/// A token without the punctuation around it: `(bookworm)` → `bookworm`, `list.` → `list`.
fn core(token: &str) -> &str {
    token.trim_start_matches(OPENERS).trim_end_matches(CLOSERS)
}

/// What a Latin-script token of an answer is, for telling a kept piece from prose.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// A path, URL, e-mail address, identifier, flag: never prose.
    Code,
    /// Digits and times, all-caps acronyms: never prose, but no sign of a command either.
    Plain,
    /// A hyphenated word (`apt-get`, `well-known`): kept when the source has it.
    Hyphened,
    /// A capitalised word: a name when the source has it.
    Name,
    Word,
    /// Punctuation only.
    Mark,
}

fn kind_of(core: &str) -> Kind {
    if !core.chars().any(char::is_alphanumeric) {
        return Kind::Mark;
    }
    if !core.chars().any(char::is_alphabetic) {
        return Kind::Plain;
    }
    if code_like(core) {
        return Kind::Code;
    }
    let upper = core.chars().filter(char::is_ascii_uppercase).count();
    if upper >= 2 && !core.chars().any(char::is_lowercase) {
        return Kind::Plain;
    }
    if core.contains('-') {
        return Kind::Hyphened;
    }
    if core.starts_with(char::is_uppercase) && !is_function_word(core) {
        Kind::Name
    } else {
        Kind::Word
    }
}

fn code_like(core: &str) -> bool {
    let chars: Vec<char> = core.chars().collect();
    let between = |p: char| {
        chars
            .windows(3)
            .any(|w| w[1] == p && w[0].is_alphanumeric() && w[2].is_alphanumeric())
    };
    let camel = chars
        .windows(2)
        .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
    let digits = chars.iter().any(char::is_ascii_digit);
    core.contains("://")
        || core.contains("::")
        || core.contains([
            '/', '\\', '_', '=', '$', '@', '(', ')', '<', '>', '{', '}', '[', ']', '+', '#', '%',
            '&', '|', '*', '~', '`',
        ])
        || core.starts_with(['-', '.'])
        || between('.')
        || between(':')
        || camel
        || digits
}

/// A Latin-script token of a line, by char index: all of it, and its core.
struct Token {
    start: usize,
    end: usize,
    core_start: usize,
    core_end: usize,
    core: String,
    kind: Kind,
}

fn tokens(chars: &[char], gone: &[bool]) -> Vec<Token> {
    let breaks = |k: usize| gone[k] || breaks_token(chars[k]);
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if breaks(i) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && !breaks(i) {
            i += 1;
        }
        let text: String = chars[start..i].iter().collect();
        let lead = text.chars().take_while(|c| OPENERS.contains(c)).count();
        let core = core(&text);
        let core_start = (start + lead).min(i);
        out.push(Token {
            start,
            end: i,
            core_start,
            core_end: core_start + core.chars().count(),
            core: core.to_string(),
            kind: kind_of(core),
        });
    }
    out
}

/// The char ranges of a line's code spans, backticks included.
fn code_spans(chars: &[char]) -> Vec<(usize, usize)> {
    let run_at = |k: usize| chars[k..].iter().take_while(|c| **c == '`').count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let start = i;
        let n = run_at(i);
        i += n;
        let mut j = i;
        while j < chars.len() {
            if chars[j] != '`' {
                j += 1;
                continue;
            }
            let m = run_at(j);
            j += m;
            if m == n {
                out.push((start, j));
                i = j;
                break;
            }
        }
    }
    out
}

/// What the source offers to tell a kept piece of the answer from prose left untranslated.
struct SourceTerms {
    /// The source is written in Han characters: any Latin word it holds is a kept name or term.
    han: bool,
    /// The source with its white space made single spaces, to look kept phrases up in.
    flat: String,
    /// The source's code: spans in backticks, fenced and indented blocks, `$ ` lines.
    code: String,
    tokens: HashSet<String>,
    code_tokens: HashSet<String>,
}

impl SourceTerms {
    fn new(source: &str) -> Self {
        let code = source_code(source);
        let split = |text: &str| -> HashSet<String> {
            text.split(breaks_token)
                .map(core)
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect()
        };
        Self {
            han: mostly_han(source),
            flat: collapse(source),
            tokens: split(source),
            code_tokens: split(&code),
            code,
        }
    }
}

fn source_code(source: &str) -> String {
    let mut code: Vec<String> = Vec::new();
    let mut fenced = false;
    let mut block = false;
    let mut blank = true;
    for line in source.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            blank = false;
            continue;
        }
        // An indented line is code after a blank line or more code, not under a list item.
        let indented = line.starts_with("    ") || line.starts_with('\t');
        block = indented && !t.is_empty() && (blank || block);
        if fenced || block || t.starts_with("$ ") {
            code.push(collapse(t));
        } else {
            let chars: Vec<char> = line.chars().collect();
            for (a, b) in code_spans(&chars) {
                let span: String = chars[a..b].iter().filter(|c| **c != '`').collect();
                code.push(collapse(&span));
            }
        }
        blank = t.is_empty();
    }
    code.join("\n")
}

/// The answer's lines (numbered as the answer's, code blocks and a wrapping fence blanked) with
/// each piece kept verbatim replaced by [`GAP`].
fn translated_lines(source: &str, answer: &str) -> Vec<String> {
    let terms = SourceTerms::new(source);
    let mut fenced = false;
    let mut out = Vec::new();
    for line in unfenced_lines(answer) {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            out.push(String::new());
        } else if fenced {
            out.push(String::new());
        } else {
            out.push(strip_kept(line, &terms));
        }
    }
    out
}

fn strip_kept(line: &str, terms: &SourceTerms) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut gone = vec![false; chars.len()];
    for (a, b) in code_spans(&chars) {
        gone[a..b].fill(true);
    }
    let toks = tokens(&chars, &gone);
    for t in &toks {
        if matches!(t.kind, Kind::Code | Kind::Plain) {
            gone[t.start..t.end].fill(true);
        } else if kept_token(t, terms) {
            gone[t.core_start..t.core_end].fill(true);
        }
    }
    // Tokens with only spaces between them are one phrase (`apt-get update`, `At 09:12`), up
    // to a comma or a stop: `/etc/app.conf; the service restarts` is two.
    let mut first = 0;
    for k in 1..=toks.len() {
        let joined = k < toks.len()
            && !matches!(
                chars[toks[k - 1].end - 1],
                ',' | ';' | '.' | ':' | '!' | '?'
            )
            && (toks[k - 1].end..toks[k].start).all(|i| chars[i] == ' ' || chars[i] == '\t');
        if joined {
            continue;
        }
        let run = &toks[first..k];
        if run.len() >= 2 && kept_run(run, &chars, terms) {
            gone[run[0].core_start..run[run.len() - 1].core_end].fill(true);
        }
        first = k;
    }
    let mut out = String::new();
    for (c, g) in chars.iter().zip(&gone) {
        if !g {
            out.push(*c);
        } else if !out.ends_with(GAP) {
            out.push(GAP);
        }
    }
    out
}

fn kept_token(t: &Token, terms: &SourceTerms) -> bool {
    match t.kind {
        Kind::Code | Kind::Plain => true,
        Kind::Mark => false,
        Kind::Hyphened | Kind::Name => terms.tokens.contains(&t.core),
        Kind::Word => {
            terms.code_tokens.contains(&t.core) || (terms.han && terms.tokens.contains(&t.core))
        }
    }
}

/// A phrase of the source's code, or a command line or a short phrase with code in it that the
/// source holds verbatim (`apt-cache policy`): kept. A phrase with only a number in it (`At
/// 09:12`) or with more words than a command line has is prose.
fn kept_run(run: &[Token], chars: &[char], terms: &SourceTerms) -> bool {
    let (from, to) = (run[0].core_start, run[run.len() - 1].core_end);
    if from >= to {
        return false;
    }
    let phrase = collapse(&chars[from..to].iter().collect::<String>());
    if terms.code.contains(&phrase) {
        return true;
    }
    let codey = run
        .iter()
        .any(|t| matches!(t.kind, Kind::Code | Kind::Hyphened))
        || COMMANDS.split_whitespace().any(|c| c == run[0].core);
    let words = run.iter().filter(|t| t.kind == Kind::Word).count();
    codey && words <= 4 && terms.flat.contains(&phrase)
}

// ---------------------------------------------------------------------------------------------
// Untranslated text.

/// An English word left in a line of a Chinese answer.
struct LeftWord {
    word: String,
    /// It stands next to another such word: a phrase of English, not a kept term.
    in_phrase: bool,
}

/// A word that counts as English left: a function word, or a lowercase word of three letters
/// or more (capitalised words are names).
fn countable(word: &str) -> bool {
    is_function_word(word)
        || (word.len() >= 3 && word.chars().all(|c| c.is_ascii_lowercase() || c == '\''))
}

/// Surely English, even alone: a function word or an inflected word.
fn english_looking(word: &str) -> bool {
    const ENDINGS: [&str; 8] = ["ing", "ed", "ly", "tion", "tions", "ment", "ments", "ness"];
    is_function_word(word)
        || (word.len() >= 5
            && word.chars().all(|c| c.is_ascii_lowercase())
            && ENDINGS.iter().any(|e| word.ends_with(e)))
}

fn line_words(line: &str) -> Vec<LeftWord> {
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
fn english_left(lines: &[String]) -> Option<ProseDoubt> {
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

/// Chinese characters left in a Latin-script rendering of a Han-script source (`Zhang伟`).
fn chinese_left(lines: &[String]) -> Option<ProseDoubt> {
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

// ---------------------------------------------------------------------------------------------
// Remarks and headings.

/// A line about the task rather than the text: "This translation keeps…", "以下是翻译：",
/// "Note: I kept the names in pinyin.".
fn is_remark(line: &str) -> bool {
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
fn remark(source: &str, answer: &str) -> Option<ProseDoubt> {
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
fn headings(text: &str) -> Vec<String> {
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

fn atx_heading(t: &str) -> Option<String> {
    let level = t.chars().take_while(|c| *c == '#').count();
    let rest = &t[level..];
    if !(1..=6).contains(&level) || !rest.starts_with([' ', '\t']) {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn underline(t: &str) -> bool {
    (t.len() >= 2 && t.chars().all(|c| c == '=')) || (t.len() >= 3 && t.chars().all(|c| c == '-'))
}

/// A line of a paragraph, which an underline makes a heading (a list item's is a rule).
fn paragraph_line(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !line.starts_with("    ") && without_marker(t).len() == t.len()
}

/// Headings the answer adds: any when the source has none, else more than the source's and one
/// for a title.
fn added_headings(source: &str, answer: &str) -> Option<ProseDoubt> {
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

// ---------------------------------------------------------------------------------------------
// Near copies.

/// The pieces sentences are compared by: each Han character, and each run of other letters and
/// digits, lowercased (`支付服务 processed 12,000` → 支 付 服 务 processed 12 000).
fn pieces(text: &str) -> Vec<String> {
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
fn joined(pieces: &[String]) -> String {
    let mut s = String::from('\u{1}');
    for p in pieces {
        s.push_str(p);
        s.push('\u{1}');
    }
    s
}

fn pairs(pieces: &[String]) -> HashSet<String> {
    pieces
        .windows(2)
        .map(|w| format!("{}\u{1}{}", w[0], w[1]))
        .collect()
}

/// The source's sentences as pieces (split at line ends, at 。！？!? and at a full stop before
/// a space), those of six characters or more.
fn sentences(source: &str) -> Vec<Vec<String>> {
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
fn pair_share(unit: &[String], set: &HashSet<String>) -> f64 {
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
const LENGTH_JUDGED_CHARS: usize = 1000;

fn near_copy(source: &str, answer: &str) -> Option<ProseDoubt> {
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

// ---------------------------------------------------------------------------------------------
// Figures.

/// A figure of a text: a number, a time, a date's part.
#[derive(Debug, Clone)]
struct Figure {
    /// As written: `下午三点`, `1,200`.
    shown: String,
    /// As compared: `15:00`, `1200`.
    canon: String,
    /// What it stands for (`n:1200`, `t:15:00`); one held by the other text matches it.
    keys: Vec<String>,
    /// Plain numbers a time with no minutes may be written as (`h:3` for 下午三点, "at 3"),
    /// matched with tolerance.
    loose: Vec<String>,
    /// More that this figure grounds in the other text: a time's hour and minute as numbers.
    grounds: Vec<String>,
    /// Too common or too ambiguous to report (a single digit, `三点` alone): it only grounds.
    weak: bool,
    /// A time whose hour is known (am/pm, 下午, 24-hour); always true of a number.
    certain: bool,
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
fn grounding(shown: &str, keys: Vec<String>) -> Figure {
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

fn round6(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}

/// A number figure; `marked` when a unit or currency goes with it (`3月`, `5%`, `$4`), which
/// makes even a single digit a figure.
fn number_figure(shown: String, value: f64, scaled: Option<f64>, marked: bool) -> Figure {
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

fn time_figure(shown: String, hours: &[u32], minute: u32, certain: bool, weak: bool) -> Figure {
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
enum DayPart {
    None,
    Am,
    Pm,
    Noon,
    Night,
}

/// The hours (0–23) a written hour may be in `part`, and whether that is certain: `3` alone is
/// 3 or 15.
fn hours(hour: u32, part: DayPart, certain: bool) -> Option<(Vec<u32>, bool)> {
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
fn day_part_before(chars: &[char], start: usize) -> (DayPart, usize) {
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
fn meridiem(chars: &[char], k: usize) -> Option<(DayPart, usize)> {
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
fn range_meridiem(chars: &[char], end: usize) -> Option<DayPart> {
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
fn oclock(chars: &[char], k: usize) -> Option<usize> {
    let i = k + usize::from(chars.get(k) == Some(&' '));
    let word: String = chars.get(i..i + 7)?.iter().collect();
    let word = word.to_lowercase().replace('’', "'");
    (word == "o'clock").then_some(i + 7)
}

/// The hour mark of a Chinese time (`点`, `时`) at `k`, and where it ends.
fn hour_mark(chars: &[char], k: usize) -> Option<usize> {
    matches!(chars.get(k), Some('点' | '點' | '时' | '時')).then_some(k + 1)
}

/// The minutes after a Chinese hour mark (`半`, `一刻`, `15分`, `十五分`), and where they end.
fn zh_minutes(chars: &[char], k: usize) -> (u32, usize) {
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

fn cn_digit(c: char) -> Option<u64> {
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

fn cn_unit(c: char) -> Option<u64> {
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
fn cn_value(run: &[char]) -> Option<u64> {
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
const UNITS: &[char] = &['%', '年', '月', '日', '号', '號', '元', '円', '℃'];

/// A digit run at `start` with its separators: `1,200.50` and `1 200,5` → `1200.50`,
/// `1200.5`. A run with two dots or more (`2.6.1`, `12.03.2026`) is read as its parts, and a
/// comma before more digits than three or before another comma (`1,2,3`) ends the number.
fn digit_run(chars: &[char], start: usize) -> (String, usize) {
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
fn scale_after(chars: &[char], end: usize) -> (Option<f64>, usize) {
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
fn clock_time(chars: &[char], start: usize, written: &str, end: usize) -> Option<(Figure, usize)> {
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

fn digit_figure(chars: &[char], start: usize, out: &mut Vec<Figure>) -> usize {
    let (written, end) = digit_run(chars, start);
    if let Some((figure, next)) = clock_time(chars, start, &written, end) {
        out.push(figure);
        return next;
    }
    let Ok(value) = written.parse::<f64>() else {
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

fn cn_figure(chars: &[char], start: usize, out: &mut Vec<Figure>) -> usize {
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
fn word_figure(chars: &[char], start: usize, out: &mut Vec<Figure>) -> usize {
    const MONTHS: &str = "January February March April May June July August September October \
        November December";
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
    let month = MONTHS.split_whitespace().position(|m| {
        word == m || (word.len() == 3 && m.starts_with(&word)) || word == "Sept" && m == "September"
    });
    if let Some(m) = month {
        out.push(grounding(&word, vec![format!("n:{}", m + 1)]));
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
fn without_marker(line: &str) -> &str {
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
fn ideographic_commas(text: &str) -> String {
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
struct Figures {
    list: Vec<Figure>,
    known: HashSet<String>,
}

fn read_figures(text: &str) -> Figures {
    let norm: String = ideographic_commas(text).nfkc().collect();
    let mut list = Vec::new();
    for line in norm.lines() {
        let chars: Vec<char> = without_marker(line).chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let prev = i.checked_sub(1).map(|k| chars[k]);
            i = if c.is_ascii_digit() && !prev.is_some_and(|p| p.is_ascii_digit()) {
                digit_figure(&chars, i, &mut list)
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
fn unmatched(figures: &[Figure], other: &HashSet<String>, tolerant: bool) -> Vec<String> {
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

/// Figures of the source the rendering lacks, and figures it has that the source does not.
fn changed_figures(source: &str, answer: &str) -> Option<ProseDoubt> {
    let src = read_figures(source);
    let ans = read_figures(answer);
    let missing = unmatched(&src.list, &ans.known, true);
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

#[cfg(test)]
mod tests {
    use super::*;

    const MEETING_ZH: &str = "项目周会纪要
时间：2026年3月12日 下午三点
参会人：张伟、李娜、王强
1. 支付服务上周共处理12,000笔订单，失败率0.8%。
2. 李娜负责在3月20日前完成对账脚本。
3. 王强报告服务器费用为一千二百元，预算1.2万元。
4. 张伟建议下次会议改到上午九点半。
下次会议：3月19日 下午三点";

    const MEETING_EN: &str = "Weekly project meeting notes
Time: March 12, 2026, 3:00 PM
Attendees: Zhang Wei, Li Na, Wang Qiang
1. Last week the payment service processed 12,000 orders, with a failure rate of 0.8%.
2. Li Na will finish the reconciliation script by March 20.
3. Wang Qiang reported server costs of 1,200 yuan against a budget of 12,000 yuan.
4. Zhang Wei suggested moving the next meeting to 9:30 AM.
Next meeting: March 19, 3:00 PM";

    const INCIDENT_EN: &str = "At 09:12 the payment service stopped answering requests.
The on-call engineer restarted the gateway at 09:40.
About 1,200 orders failed during the outage.
Customers were refunded a total of $3,450.75.
A review meeting is scheduled for 3 pm on Friday.";

    const INCIDENT_ZH: &str = "09:12，支付服务停止响应请求。
值班工程师于09:40重启了网关。
停机期间约有1,200笔订单失败。
共向客户退款3,450.75美元。
复盘会议定于周五下午3点举行。";

    const DEBIAN_EN: &str = "## 2.1. Package sources

APT reads the list of package sources from `/etc/apt/sources.list` and from files in \
/etc/apt/sources.list.d/. After you edit these files, run `apt-get update` to download the new \
package lists.

A typical line looks like this:

    deb http://deb.debian.org/debian bookworm main contrib

You can also use aptitude or synaptic to install packages. See \
https://www.debian.org/doc/manuals/debian-reference/ for details, or write to \
debian-doc@lists.debian.org.

Use apt-cache policy to see which version of a package will be installed. The file_name option \
and the Dir::Etc::SourceList setting change where APT looks.";

    const DEBIAN_ZH: &str = "## 2.1. 软件包源

APT 从 `/etc/apt/sources.list` 以及 /etc/apt/sources.list.d/ 目录中的文件读取软件包源列表。\
编辑这些文件后，请运行 `apt-get update` 下载新的软件包列表。

典型的一行如下：

    deb http://deb.debian.org/debian bookworm main contrib

你也可以使用 aptitude 或 synaptic 来安装软件包。详情参见 \
https://www.debian.org/doc/manuals/debian-reference/，或写信至 debian-doc@lists.debian.org。

使用 apt-cache policy 查看将会安装的软件包版本。file_name 选项和 Dir::Etc::SourceList \
设置会改变 APT 查找的位置。";

    fn checks(doubts: &[ProseDoubt]) -> Vec<&'static str> {
        doubts.iter().map(|d| d.check).collect()
    }

    fn detail<'a>(doubts: &'a [ProseDoubt], check: &str) -> &'a str {
        doubts
            .iter()
            .find(|d| d.check == check)
            .map_or("", |d| d.detail.as_str())
    }

    #[test]
    fn a_faithful_translation_has_no_doubts() {
        assert_eq!(translation(MEETING_ZH, MEETING_EN, "english"), []);
        assert_eq!(translation(INCIDENT_EN, INCIDENT_ZH, "Chinese"), []);
    }

    #[test]
    fn a_name_half_in_characters_is_untranslated() {
        let answer = MEETING_EN.replace(
            "Attendees: Zhang Wei, Li Na, Wang Qiang",
            "Attendees: Zhang伟,李娜, Wang强",
        );
        let doubts = translation(MEETING_ZH, &answer, "en");
        assert_eq!(checks(&doubts), ["untranslated"]);
        assert_eq!(
            detail(&doubts, "untranslated"),
            "Chinese left untranslated: 伟, 李娜, 强"
        );
    }

    #[test]
    fn english_left_in_a_chinese_line_is_untranslated() {
        let answer = INCIDENT_ZH.replace(
            "09:12，支付服务停止响应请求。",
            "At 09:12，支付服务停止了 answering",
        );
        let doubts = translation(INCIDENT_EN, &answer, "zh");
        assert_eq!(checks(&doubts), ["untranslated"]);
        assert_eq!(
            detail(&doubts, "untranslated"),
            "English left untranslated: 'At' (line 1), 'answering' (line 1)"
        );
        let lazy = "At 09:12 the payment service stopped answering requests.\n值班工程师于09:40重启了网关。";
        assert!(checks(&translation(INCIDENT_EN, lazy, "中文")).contains(&"untranslated"));
    }

    #[test]
    fn afternoon_three_is_not_one_pm() {
        let doubts = translation(
            "会议定于下午三点开始。",
            "The meeting starts at 1:00 PM.",
            "en",
        );
        assert_eq!(
            detail(&doubts, "figures"),
            "figures changed: 15:00 (下午三点) missing; 13:00 (1:00 PM) not in the source"
        );
        let answer = MEETING_EN.replace(
            "Time: March 12, 2026, 3:00 PM",
            "Time: March 12, 2026, 1:00 PM",
        );
        let doubts = translation(MEETING_ZH, &answer, "english");
        assert_eq!(
            detail(&doubts, "figures"),
            "figures changed: 13:00 (1:00 PM) not in the source"
        );
    }

    #[test]
    fn afternoon_three_is_any_three_pm() {
        for answer in [
            "3:00 PM",
            "3 pm",
            "15:00",
            "3 PM",
            "3 p.m.",
            "three o'clock, 3 in the afternoon",
        ] {
            let doubts = translation(
                "会议定于下午三点开始。",
                &format!("The meeting starts at {answer}."),
                "en",
            );
            assert_eq!(doubts, [], "{answer}");
        }
        let doubts = translation(
            "会议三点半开始，上午九点结束。",
            "It starts at 3:30 and ends at 9 AM.",
            "en",
        );
        assert_eq!(doubts, []);
        // A range takes its part of day from its end; scales are compared by value.
        let doubts = translation(
            "The review runs from 3-5 PM; the budget is $1.2M.",
            "评审会在下午3点到5点进行；预算为120万美元。",
            "zh",
        );
        assert_eq!(doubts, []);
    }

    #[test]
    fn chinese_numerals_are_read_as_numbers() {
        let keys = |text: &str| read_figures(text).known;
        for (text, key) in [
            ("十二人", "n:12"),
            ("二十五个", "n:25"),
            ("一百二十元", "n:120"),
            ("一千二百元", "n:1200"),
            ("两千台", "n:2000"),
            ("预算1.2万元", "n:12000"),
            ("一万二千", "n:12000"),
            ("二〇二六年", "n:2026"),
            ("１，２００.５０", "n:1200.5"),
            ("晚上八点", "t:20:00"),
            ("三点半", "t:15:30"),
        ] {
            assert!(keys(text).contains(key), "{text}: {:?}", keys(text));
        }
        assert!(
            read_figures("一些人，十分重要，三点建议")
                .list
                .iter()
                .all(|f| f.weak)
        );
    }

    #[test]
    fn a_remark_about_the_translation() {
        let answer = format!(
            "{MEETING_EN}\n\nThis translation maintains the original structure and meaning of the notes."
        );
        let doubts = translation(MEETING_ZH, &answer, "en");
        assert_eq!(checks(&doubts), ["remark"]);
        assert!(detail(&doubts, "remark").contains("'This translation maintains the original"));
        let answer = format!("以下是翻译：\n{INCIDENT_ZH}");
        assert_eq!(checks(&translation(INCIDENT_EN, &answer, "zh")), ["remark"]);
        let answer = format!("{MEETING_EN}\n\nNote: I kept the names in pinyin.");
        assert_eq!(checks(&translation(MEETING_ZH, &answer, "en")), ["remark"]);
        // A text about translation may say so itself.
        let source = "The translation team meets on Friday.";
        assert_eq!(translation(source, "翻译团队周五开会。", "zh"), []);
    }

    #[test]
    fn headings_the_source_does_not_have() {
        let answer = "# Meeting notes\n## Attendees\nZhang Wei, Li Na, Wang Qiang\n\nAction items\n---\nLi Na: the reconciliation script by March 20.";
        let doubts = translation(
            "参会人：张伟、李娜、王强\n李娜：3月20日前完成对账脚本。",
            answer,
            "en",
        );
        assert_eq!(checks(&doubts), ["headings"]);
        assert_eq!(
            detail(&doubts, "headings"),
            "headings the source does not have: 'Meeting notes', 'Attendees', 'Action items'"
        );
        // One more than the source's, a title, is fine; code comments are no headings.
        let source = "# A\ntext\n# B\ntext";
        let answer = "# 标题\n# 甲\n文本\n```sh\n# 注释\n```\n# 乙\n文本";
        assert_eq!(translation(source, answer, "zh"), []);
    }

    #[test]
    fn a_faithful_technical_translation_keeps_its_terms() {
        assert_eq!(translation(DEBIAN_EN, DEBIAN_ZH, "zh-CN"), []);
        let part = translated_part(DEBIAN_EN, DEBIAN_ZH);
        let han = part.chars().filter(|c| is_han(*c)).count();
        let latin = part.chars().filter(char::is_ascii_alphabetic).count();
        assert!(han >= 80 && latin * 5 < han, "{part}");
        for kept in [
            "sources.list",
            "apt-get",
            "http",
            "Dir::Etc",
            "file_name",
            "debian-doc",
            "bookworm",
        ] {
            assert!(!part.contains(kept), "{kept} in {part}");
        }
    }

    #[test]
    fn translated_part_drops_the_fence_and_keeps_prose() {
        let answer = "```markdown\n支付服务停止了 answering。\n运行 `apt-get update`。\n```";
        assert_eq!(
            translated_part(INCIDENT_EN, answer),
            "支付服务停止了 answering。\n运行 。"
        );
        assert_eq!(
            translated_part("张伟使用 Docker。", "Zhang Wei uses Docker."),
            "Zhang Wei uses ."
        );
    }

    #[test]
    fn a_reordered_note_is_a_near_copy() {
        let lines: Vec<&str> = MEETING_ZH.lines().collect();
        let answer = [
            lines[2], lines[0], lines[5], lines[3], lines[7], lines[6], lines[1],
        ]
        .join("\n")
        .replace("3. ", "- ")
        .replace("1. ", "- ");
        let doubts = condensed(MEETING_ZH, &answer);
        assert_eq!(checks(&doubts), ["near_copy"]);
        assert_eq!(
            detail(&doubts, "near_copy"),
            "a near-copy: 7 of 8 of the source's lines are in it"
        );
    }

    #[test]
    fn a_long_answer_is_a_near_copy() {
        let source: String = (1..=30)
            .map(|i| format!("Item {i} was shipped to warehouse {i} on day {i} of the month.\n"))
            .collect();
        let answer: String = (1..=25)
            .map(|i| format!("Warehouse number {i} received its item {i} that day. "))
            .collect();
        let doubts = condensed(&source, &answer);
        assert_eq!(checks(&doubts), ["near_copy"]);
        assert!(detail(&doubts, "near_copy").starts_with("as long as "));
        // A short note's summary may be half its length.
        let answer = "The payment service failed at 09:12 and was restarted at 09:40; about 1,200 \
orders failed and customers got $3,450.75 back. The gateway restart fixed it, and the review \
meeting is on Friday at 3 pm with the on-call engineer and the payment team.";
        assert_eq!(condensed(INCIDENT_EN, answer), []);
    }

    #[test]
    fn a_real_summary_has_no_doubts() {
        let summary = "3月12日周会：上周支付订单12,000笔，失败率0.8%；李娜须于3月20日前完成对账脚本；\
下次会议3月19日下午三点。";
        assert_eq!(condensed(MEETING_ZH, summary), []);
        let summary = "The payment service was down from 09:12 to 09:40; 1,200 orders failed and \
$3,450.75 was refunded. Review on Friday at 3 PM.";
        assert_eq!(condensed(INCIDENT_EN, summary), []);
    }

    #[test]
    fn an_invented_year_is_a_figure() {
        let summary = "2025年3月12日周会：失败率0.8%，下次会议3月19日下午四点。";
        let doubts = condensed(MEETING_ZH, summary);
        assert_eq!(checks(&doubts), ["figures"]);
        assert_eq!(
            detail(&doubts, "figures"),
            "figures not in the source: 2025 (2025年), 16:00 (下午四点)"
        );
    }

    #[test]
    fn list_numbers_are_not_figures() {
        let doubts = translation(
            "1. 检查日志\n2. 重启服务",
            "- Check the logs\n- Restart the service",
            "en",
        );
        assert_eq!(doubts, []);
        assert_eq!(without_marker("## 2.1 Setup"), "Setup");
        assert_eq!(without_marker("一、背景"), "背景");
        assert_eq!(without_marker("3.5 million"), "3.5 million");
    }
}
