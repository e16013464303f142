//! What an answer kept verbatim from its source (paths, commands, code, identifiers, names):
//! taken out before the answer's language is judged.

use super::*;
use crate::judge::source_index::SourceIndex;
use crate::judge::work::Work;
use std::cell::OnceCell;
use std::collections::HashMap;

/// Commands whose line, kept verbatim from the source, is not prose left untranslated.
pub(super) const COMMANDS: &str = "apt apt-get apt-cache aptitude dpkg sudo su systemctl service journalctl \
    git cargo make ls cd cat grep sed awk find cp mv rm mkdir chmod chown tar curl wget ssh scp \
    rsync pip npm python python3 docker kubectl mount umount echo export vi vim nano less man \
    ping ip kill ps df du reboot shutdown";

/// English words no package, command or name is made of: one left in a Chinese answer is
/// English prose.
pub(super) const FUNCTION_WORDS: &str = "an the and or but nor of to in on at by for with from into onto \
    about after before over under between through during without within is are was were be been \
    being has have had does did will would shall should can could might must not this that these \
    those it its they them their we our you your he she his her him which who whom whose what \
    when where why how there here then than as if so also all any some each every such only very \
    because while until since";

pub(super) fn is_function_word(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    FUNCTION_WORDS.split_whitespace().any(|w| w == lower)
}

pub(super) const OPENERS: &[char] = &['(', '[', '{', '<', '"', '\'', '*', '`'];
pub(super) const CLOSERS: &[char] = &[
    ')', ']', '}', '>', '"', '\'', '*', '`', ',', ';', ':', '!', '?', '.',
];

/// A token without the punctuation around it: `(bookworm)` → `bookworm`, `list.` → `list`.
pub(super) fn core(token: &str) -> &str {
    token.trim_start_matches(OPENERS).trim_end_matches(CLOSERS)
}

/// What a Latin-script token of an answer is, for telling a kept piece from prose.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
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

pub(super) fn kind_of(core: &str) -> Kind {
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

pub(super) fn code_like(core: &str) -> bool {
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
pub(super) struct Token {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) core_start: usize,
    pub(super) core_end: usize,
    pub(super) core: String,
    pub(super) kind: Kind,
}

pub(super) fn tokens(chars: &[char], gone: &[bool]) -> Vec<Token> {
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

/// The char ranges of a line's code spans, backticks included: a run of backticks opens a
/// span that the next run of as many closes; a run no later run matches opens nothing. The
/// runs are read once, and each run's next match is found in a table of the runs by length,
/// never by a pass over the rest of the line per run.
pub(super) fn code_spans(chars: &[char]) -> Vec<(usize, usize)> {
    // Every run of backticks: (start, length).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let n = chars[i..].iter().take_while(|c| **c == '`').count();
        runs.push((i, n));
        i += n;
    }
    // For each length, the runs of that length in order, and how many have been passed.
    let mut by_length: HashMap<usize, (Vec<usize>, usize)> = HashMap::new();
    for (k, &(_, n)) in runs.iter().enumerate() {
        by_length.entry(n).or_default().0.push(k);
    }
    let mut out = Vec::new();
    let mut k = 0;
    while k < runs.len() {
        let (start, n) = runs[k];
        let Some((same, passed)) = by_length.get_mut(&n) else {
            k += 1;
            continue;
        };
        // Runs of this length at or before `k` are behind us.
        while *passed < same.len() && same[*passed] <= k {
            *passed += 1;
        }
        match same.get(*passed) {
            Some(&close) => {
                let (at, m) = runs[close];
                out.push((start, at + m));
                k = close + 1;
            }
            None => k += 1,
        }
    }
    out
}

/// What the source offers to tell a kept piece of the answer from prose left untranslated.
pub(super) struct SourceTerms {
    /// The source is written in Han characters: any Latin word it holds is a kept name or term.
    pub(super) han: bool,
    /// The source with its white space made single spaces, to look kept phrases up in
    /// (indexed on the first look-up).
    flat: String,
    flat_index: OnceCell<SourceIndex>,
    /// The source's code: spans in backticks, fenced and indented blocks, `$ ` lines.
    code: String,
    code_index: OnceCell<SourceIndex>,
    pub(super) tokens: HashSet<String>,
    pub(super) code_tokens: HashSet<String>,
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
            flat_index: OnceCell::new(),
            tokens: split(source),
            code_tokens: split(&code),
            code,
            code_index: OnceCell::new(),
        }
    }

    /// Whether the source's code holds `phrase`; `None` when the work ran out first.
    fn in_code(&self, phrase: &str, work: &Work) -> Option<bool> {
        self.code_index
            .get_or_init(|| SourceIndex::new(&self.code, work))
            .contains(phrase, work)
    }

    /// Whether the source holds `phrase` (white space made single spaces); `None` when the
    /// work ran out first.
    fn in_text(&self, phrase: &str, work: &Work) -> Option<bool> {
        self.flat_index
            .get_or_init(|| SourceIndex::new(&self.flat, work))
            .contains(phrase, work)
    }
}

pub(super) fn source_code(source: &str) -> String {
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
/// Lines after the work ran out (or the run stopped) are left out.
pub(super) fn translated_lines(source: &str, answer: &str, work: &Work) -> Vec<String> {
    aligned(source, answer, work).lines
}

/// An answer aligned with its source: its lines with what it kept set aside, and how much of
/// the source's prose it shares word for word ([`super::shared`]).
pub(super) struct Aligned {
    pub(super) lines: Vec<String>,
    /// Words of prose in the runs the answer shares with its source.
    pub(super) copied: usize,
    /// Words of prose in the source.
    pub(super) prose: usize,
    /// The shared run of the line with the most prose in them, and its line (1-based).
    pub(super) example: Option<(String, usize)>,
}

/// The answer's lines with what it keeps verbatim set aside: code, names and commands the
/// source holds, and the runs it shares with a Latin-script source, unless those hold
/// [`HALF_COPY`] of the source's prose or more (then they are judged as written).
pub(super) fn aligned(source: &str, answer: &str, work: &Work) -> Aligned {
    let terms = SourceTerms::new(source);
    work.charge(source.len());
    // A source in Han characters shares only names with its translation.
    let runs = (!terms.han).then(|| SourceRuns::new(source, &terms.code_tokens, work));
    let first = lines_of(answer, &terms, runs.as_ref(), work);
    let prose = runs.as_ref().map_or(0, |r| r.prose);
    let half_copy = first.copied > 0 && first.copied as f64 >= HALF_COPY * prose as f64;
    let lines = if half_copy {
        lines_of(answer, &terms, None, work).lines
    } else {
        first.lines
    };
    Aligned {
        lines,
        copied: first.copied,
        prose,
        example: first.example,
    }
}

/// [`aligned`]'s pass over the answer's lines, with the source's runs to set aside or none.
fn lines_of(answer: &str, terms: &SourceTerms, runs: Option<&SourceRuns>, work: &Work) -> Aligned {
    let mut fenced = false;
    let mut out = Aligned {
        lines: Vec::new(),
        copied: 0,
        prose: 0,
        example: None,
    };
    let mut most = 0;
    for line in unfenced_lines(answer) {
        if work.over() {
            break;
        }
        work.charge(line.len() + 1);
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            out.lines.push(String::new());
        } else if fenced {
            out.lines.push(String::new());
        } else {
            let (kept, copied, example) = strip_kept(line, terms, runs, work);
            out.copied += copied;
            // The example is the line's run with the most prose.
            if copied > most {
                most = copied;
                out.example = example.map(|e| (e, out.lines.len() + 1));
            }
            out.lines.push(kept);
        }
    }
    out
}

/// One line with what it keeps verbatim replaced by [`GAP`]; with the source's `runs`, the
/// runs it shares with the source too. Returns the line, the words of prose in its shared
/// runs, and its first shared run with prose in it.
pub(super) fn strip_kept(
    line: &str,
    terms: &SourceTerms,
    runs: Option<&SourceRuns>,
    work: &Work,
) -> (String, usize, Option<String>) {
    let chars: Vec<char> = line.chars().collect();
    let mut gone = vec![false; chars.len()];
    for (a, b) in code_spans(&chars) {
        gone[a..b].fill(true);
    }
    let toks = tokens(&chars, &gone);
    // Whether token `k` follows token `k - 1` with only blanks between.
    let next_to = |k: usize| {
        k > 0
            && k < toks.len()
            && (toks[k - 1].end..toks[k].start).all(|i| chars[i] == ' ' || chars[i] == '\t')
    };
    for (k, t) in toks.iter().enumerate() {
        let alone = !next_to(k) && !next_to(k + 1);
        if matches!(t.kind, Kind::Code | Kind::Plain) {
            gone[t.start..t.end].fill(true);
        } else if kept_token(t, terms)
            || (alone
                && t.kind == Kind::Word
                && kept_term(&t.core)
                && terms.tokens.contains(&t.core))
        {
            gone[t.core_start..t.core_end].fill(true);
        }
    }
    let (mut copied, mut example) = (0, None);
    if let Some(runs) = runs {
        let (shared, prose) = shared_words(&chars, &toks, runs, &terms.code_tokens);
        copied = prose;
        let marked: Vec<usize> = (0..toks.len()).filter(|&i| shared[i]).collect();
        for &i in &marked {
            gone[toks[i].start..toks[i].end].fill(true);
        }
        if prose > 0
            && let (Some(&a), Some(&b)) = (marked.first(), marked.last())
        {
            example = Some(cut(
                &chars[toks[a].start..toks[b].end].iter().collect::<String>(),
                60,
            ));
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
        if run.len() >= 2 && kept_run(run, &chars, terms, work) {
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
    (out, copied, example)
}

pub(super) fn kept_token(t: &Token, terms: &SourceTerms) -> bool {
    match t.kind {
        Kind::Code | Kind::Plain => true,
        Kind::Mark => false,
        Kind::Hyphened | Kind::Name => terms.tokens.contains(&t.core),
        Kind::Word => {
            terms.code_tokens.contains(&t.core) || (terms.han && terms.tokens.contains(&t.core))
        }
    }
}

/// A word of the source a translator keeps as it is, alone between translated text (no other
/// word beside it but across a character of the translation): a short
/// term or identifier (`root`, `setuid`, `shell`, `tty1`), not a function word and not a word
/// that is surely English (`answering`, `precautions`).
fn kept_term(core: &str) -> bool {
    core.len() <= KEPT_TERM_LETTERS
        && !is_function_word(core)
        && !super::untranslated::english_looking(core)
}

/// The longest word [`kept_term`] keeps.
const KEPT_TERM_LETTERS: usize = 8;

/// A phrase of the source's code, or a command line or a short phrase with code in it that the
/// source holds verbatim (`apt-cache policy`): kept. A phrase with only a number in it (`At
/// 09:12`) or with more words than a command line has is prose.
/// A phrase not told before the work ran out is not kept.
pub(super) fn kept_run(run: &[Token], chars: &[char], terms: &SourceTerms, work: &Work) -> bool {
    let (from, to) = (run[0].core_start, run[run.len() - 1].core_end);
    if from >= to {
        return false;
    }
    let phrase = collapse(&chars[from..to].iter().collect::<String>());
    if terms.in_code(&phrase, work) == Some(true) {
        return true;
    }
    let codey = run
        .iter()
        .any(|t| matches!(t.kind, Kind::Code | Kind::Hyphened))
        || COMMANDS.split_whitespace().any(|c| c == run[0].core);
    let words = run.iter().filter(|t| t.kind == Kind::Word).count();
    codey && words <= 4 && terms.in_text(&phrase, work) == Some(true)
}
