//! The catalog cannot rot silently: these tests read zhi's own sources, find every message
//! written at a place whose text reaches a person (the constructors of `ExitError`, `JobError`
//! and `ApiError`, `#[error]` attributes, `tracing` events, the warning and notice helpers, the
//! closures that build settings and skill errors), and require a catalog entry for each. A
//! message built elsewhere and passed on (`ExitError::usage(e.to_string())`) must be listed in
//! [`PASSED_ON`] with where its text comes from.

use super::catalog::{ENTRIES, FIELDS, RECURSIVE, VERBATIM};
use super::template::{Piece, Template};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Calls whose arguments hold a message. Each is a token sequence ending in `(`; `!` marks
/// a macro.
const SINKS: &[&[&str]] = &[
    &["ExitError", "::", "usage", "("],
    &["ExitError", "::", "new", "("],
    &["JobError", "::", "new", "("],
    &["ApiError", "::", "new", "("],
    &["#", "[", "error", "("],
    &["warn", "!", "("],
    &["error", "!", "("],
    &["info", "!", "("],
    &["i18n", "::", "error", "("],
    &["i18n", "::", "warning", "("],
    &["i18n", "::", "notice", "("],
    &["notice", "("],
    &["warning", "("],
    &["ctx", ".", "warn", "("],
    &["warnings", ".", "push", "("],
    &["progress", ".", "println", "("],
    &["notes", ".", "doc", "("],
    // The local closures and helpers that wrap a settings, jobs-file, shard, skill-file,
    // document or input error.
    &["bad", "("],
    &["fail", "("],
    &["failed", "("],
    &["binary", "("],
    &["changed", "("],
    &["self", ".", "problem", "("],
    &["io", "("],
    &["Answer", "::", "Waiting", "("],
    &["Stop", "::", "RateLimited", "("],
    &["Stop", "::", "OutputUnwritable", "("],
];

/// Text for the model, not for a person, built with the same `let msg = format!(…)` as
/// messages are: the beginnings of those literals.
const MODEL_TEXT: &[&str] = &[
    "Request from the calling skill",
    "Input document",
    "Input folder",
    "(this file could not be read",
    "the JSON itself",
    "the CSV itself",
    "the plain text itself",
    "the Markdown itself",
];

/// Local variables that hold a message on its way to a sink (`let msg = format!(…)`).
const LOCALS: &[&str] = &[
    "msg", "message", "reason", "why", "text", "what", "m", "w", "warning", "note",
];

/// Files whose messages go to the model, not to a person (tool results, refusals): not
/// scanned.
const MODEL_FACING: &[&str] = &["src/agent/tools/", "src/agent/sandbox.rs"];

/// Sink calls without a literal message, by their arguments (spaces removed): where the text
/// comes from. Each source is scanned where it is written (an `#[error]`, a `JobError::new`…)
/// or is not zhi's text at all.
const PASSED_ON: &[(&str, &str)] = &[
    (
        "short_key_warning(crate::secret::MIN_SECRET_CHARS)",
        "config::short_key_warning's format!, whose message is in the catalog",
    ),
    (
        "set.unknown(name)",
        "skills::unknown_skill's format!, whose messages are in the catalog",
    ),
    ("JobsFileProblem::NoJobs", "JobsFileProblem's #[error]"),
    (
        "JobsFileProblem::NoInputs{entry:i+,skill:e.skill.clone(),}",
        "JobsFileProblem's #[error]",
    ),
    (
        "e.to_string()",
        "an error type's #[error] or a library's message",
    ),
    ("bad(e.to_string())", "a library's or small_file's message"),
    (
        "bad(e)",
        "a String error built by format! in the same module",
    ),
    (
        "",
        "a closure that holds its message, scanned where it is defined",
    ),
    (
        "_",
        "a pattern (`Stop::OutputUnwritable(_)`), not a message",
    ),
    ("m", "a String error built by format! in the same module"),
    ("w", "a warning built by format! where it was pushed"),
    ("&w", "a warning built by format! where it was pushed"),
    (
        "msg",
        "a message built by `let msg = …` (scanned) or of the caller",
    ),
    ("msg.clone()", "a message built by `let msg = …` (scanned)"),
    ("message", "a message built by `let message = …` (scanned)"),
    ("reason", "a reason built by `let reason = …` (scanned)"),
    (
        "why",
        "a reason built by `let why = …` (scanned) or a Problem's text",
    ),
    ("what", "a message built by `let what = …` (scanned)"),
    ("text", "a text built by `let text = …` (scanned)"),
    ("&text", "a text built by `let text = …` (scanned)"),
    ("&e.message", "a JobError or ExitError message"),
    (
        "l",
        "a line built in zhi's language where it is made (`tr`)",
    ),
    (
        "&one_line(e)",
        "a skill's load or graph error, scanned at its #[error] and `fail(`",
    ),
    ("e.message", "a JobError or ExitError message"),
    (
        "self.to_string()",
        "an ApiError's message, scanned at ApiError::new",
    ),
    ("transparent", "the wrapped error's own text"),
    ("excerpt(&message,)", "a server's text, kept as it is"),
    (
        "r.message().to_string()",
        "a sandbox refusal: text for the model, shown as it is",
    ),
    (
        "list.join(\"; \")",
        "the texts of agent::outputs::Problem::describe (catalog entries by hand)",
    ),
    (
        "msg.strip_prefix().map(str::to_string).unwrap_or(msg)",
        "the YAML library's message about a jobs file",
    ),
    (
        "yaml_error(&e)",
        "`YAML syntax error …` (catalog entries by hand) around the YAML library's message",
    ),
];

#[derive(Debug)]
struct Site {
    file: String,
    line: usize,
    /// The message's format string, or `None` when the call passes on a message.
    message: Option<String>,
    /// Further literals in the arguments (branches, suffixes).
    parts: Vec<String>,
    /// The arguments, spaces removed.
    args: String,
    /// The last argument (the message of `JobError::new(kind, message)`), for [`PASSED_ON`].
    last: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Punct(char),
    Str(String),
}

/// Rust source as tokens with their line numbers: identifiers, punctuation and string
/// literals; comments, characters, lifetimes, numbers and byte strings are dropped.
fn lex(src: &str) -> Vec<(Tok, usize)> {
    let b: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| b.get(i).copied().unwrap_or('\0');
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            i += 2;
            while i < b.len() && !(b[i] == '*' && at(i + 1) == '/') {
                line += usize::from(b[i] == '\n');
                i += 1;
            }
            i += 2;
        } else if c == 'b' && (at(i + 1) == '"' || (at(i + 1) == 'r' && "#\"".contains(at(i + 2))))
        {
            // A byte string is never a message.
            let start_line = line;
            let (_, next, lines) = if at(i + 1) == '"' {
                string(&b, i + 1)
            } else {
                raw(&b, i + 2)
            };
            let _ = start_line;
            line += lines;
            i = next;
        } else if c == 'b' && at(i + 1) == '\'' {
            i = char_end(&b, i + 1);
        } else if c == 'r' && (at(i + 1) == '"' || (at(i + 1) == '#' && "#\"".contains(at(i + 2))))
        {
            let (text, next, lines) = raw(&b, i + 1);
            out.push((Tok::Str(text), line));
            line += lines;
            i = next;
        } else if c == '"' {
            let (text, next, lines) = string(&b, i);
            out.push((Tok::Str(text), line));
            line += lines;
            i = next;
        } else if c == '\'' {
            // A character literal, or a lifetime (`'a`, `'static`).
            if at(i + 1) == '\\' || at(i + 2) == '\'' {
                i = char_end(&b, i);
            } else {
                i += 1;
                while at(i).is_alphanumeric() || at(i) == '_' {
                    i += 1;
                }
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while at(i).is_alphanumeric() || at(i) == '_' {
                i += 1;
            }
            out.push((Tok::Ident(b[start..i].iter().collect()), line));
        } else if c.is_ascii_digit() {
            while at(i).is_alphanumeric()
                || at(i) == '_'
                || (at(i) == '.' && at(i + 1).is_ascii_digit())
            {
                i += 1;
            }
        } else {
            out.push((Tok::Punct(c), line));
            i += 1;
        }
    }
    // `::` as one token, so sinks read as written.
    let mut merged: Vec<(Tok, usize)> = Vec::with_capacity(out.len());
    for (t, l) in out {
        if t == Tok::Punct(':')
            && let Some((Tok::Punct(':'), _)) = merged.last()
        {
            merged.pop();
            merged.push((Tok::Ident("::".into()), l));
        } else {
            merged.push((t, l));
        }
    }
    merged
}

/// A `"…"` literal from `i` (its opening quote): its value, the index after it, and the
/// newlines it spans.
fn string(b: &[char], mut i: usize) -> (String, usize, usize) {
    let mut out = String::new();
    let mut lines = 0;
    i += 1;
    while i < b.len() {
        match b[i] {
            '"' => return (out, i + 1, lines),
            '\\' => {
                let n = b.get(i + 1).copied().unwrap_or('\0');
                i += 2;
                match n {
                    '\n' => {
                        lines += 1;
                        while i < b.len() && b[i].is_whitespace() {
                            lines += usize::from(b[i] == '\n');
                            i += 1;
                        }
                    }
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    'u' => {
                        let end = b[i..].iter().position(|&c| c == '}').map_or(i, |p| i + p);
                        let hex: String = b[i + 1..end].iter().collect();
                        out.extend(u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32));
                        i = end + 1;
                    }
                    'x' => {
                        let hex: String = b[i..i + 2].iter().collect();
                        out.extend(u8::from_str_radix(&hex, 16).ok().map(char::from));
                        i += 2;
                    }
                    other => out.push(other),
                }
            }
            c => {
                lines += usize::from(c == '\n');
                out.push(c);
                i += 1;
            }
        }
    }
    (out, i, lines)
}

/// A raw literal from `i` (the first `#` or the quote after `r`).
fn raw(b: &[char], mut i: usize) -> (String, usize, usize) {
    let mut hashes = 0;
    while b.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    i += 1;
    let start = i;
    while i < b.len() {
        if b[i] == '"' && (1..=hashes).all(|k| b.get(i + k) == Some(&'#')) {
            let text: String = b[start..i].iter().collect();
            let lines = text.matches('\n').count();
            return (text, i + 1 + hashes, lines);
        }
        i += 1;
    }
    (String::new(), i, 0)
}

/// The index after a character literal whose quote is at `i`.
fn char_end(b: &[char], mut i: usize) -> usize {
    i += 1;
    if b.get(i) == Some(&'\\') {
        i += 2;
    } else {
        i += 1;
    }
    while i < b.len() && b[i] != '\'' {
        i += 1;
    }
    i + 1
}

/// The tokens without `#[cfg(test)]` items (test modules and helpers).
fn without_tests(toks: Vec<(Tok, usize)>) -> Vec<(Tok, usize)> {
    let cfg_test: Vec<Tok> = ["#", "[", "cfg", "(", "test", ")", "]"]
        .iter()
        .map(|s| tok(s))
        .collect();
    let mut out = Vec::with_capacity(toks.len());
    let mut i = 0;
    while i < toks.len() {
        if toks[i..].iter().take(7).map(|t| &t.0).eq(cfg_test.iter()) {
            i += 7;
            while i < toks.len() && toks[i].0 != Tok::Punct('{') && toks[i].0 != Tok::Punct(';') {
                i += 1;
            }
            if i < toks.len() && toks[i].0 == Tok::Punct('{') {
                i = close(&toks, i);
            }
            i += 1;
            continue;
        }
        out.push(toks[i].clone());
        i += 1;
    }
    out
}

fn tok(s: &str) -> Tok {
    match s {
        "::" => Tok::Ident("::".into()),
        s if s.chars().count() == 1 && !s.chars().all(|c| c.is_alphanumeric() || c == '_') => {
            Tok::Punct(s.chars().next().unwrap_or(' '))
        }
        s => Tok::Ident(s.into()),
    }
}

/// The index of the bracket that closes the one at `open`.
fn close(toks: &[(Tok, usize)], open: usize) -> usize {
    let mut depth = 0i32;
    for (i, (t, _)) in toks.iter().enumerate().skip(open) {
        match t {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    toks.len().saturating_sub(1)
}

fn sites_in(file: &str, src: &str) -> Vec<Site> {
    let toks = without_tests(lex(src));
    if MODEL_FACING.iter().any(|m| file.starts_with(m)) {
        return Vec::new();
    }
    let sinks: Vec<Vec<Tok>> = SINKS
        .iter()
        .map(|s| s.iter().map(|t| tok(t)).collect())
        .collect();
    let err_format: Vec<Tok> = ["Err", "(", "format", "!", "("]
        .iter()
        .map(|s| tok(s))
        .collect();
    let mut sites = Vec::new();
    for i in 0..toks.len() {
        let matches = |pat: &[Tok]| {
            toks.len() >= i + pat.len()
                && toks[i..i + pat.len()].iter().map(|t| &t.0).eq(pat.iter())
        };
        let mut open = None;
        for pat in &sinks {
            if matches(pat) {
                // `bad(`/`fail(` are closures; `Verdict::fail(`, `fn fail(` and `.fail(` are not.
                let before = i.checked_sub(1).map(|p| &toks[p].0);
                let not_the_closure = pat.len() == 2
                    && matches!(before, Some(Tok::Ident(s)) if s == "::" || s == "fn")
                    || pat.len() == 2 && before == Some(&Tok::Punct('.'));
                if !not_the_closure {
                    open = Some(i + pat.len() - 1);
                }
                break;
            }
        }
        if open.is_none() && matches(&err_format) {
            open = Some(i + 1);
        }
        // `let msg = …;`: a message built to be passed on below; each literal of it is one.
        if open.is_none() && toks[i].0 == Tok::Ident("let".into()) {
            let mut k = i + 1;
            if toks.get(k).map(|t| &t.0) == Some(&Tok::Ident("mut".into())) {
                k += 1;
            }
            let named = matches!(toks.get(k).map(|t| &t.0), Some(Tok::Ident(n)) if LOCALS.contains(&n.as_str()));
            if named && toks.get(k + 1).map(|t| &t.0) == Some(&Tok::Punct('=')) {
                let mut depth = 0i32;
                let mut j = k + 2;
                while j < toks.len() {
                    match &toks[j].0 {
                        Tok::Punct('(' | '[' | '{') => depth += 1,
                        Tok::Punct(')' | ']' | '}') => depth -= 1,
                        Tok::Punct(';') if depth <= 0 => break,
                        Tok::Str(text)
                            if has_words(text)
                                && text.split_whitespace().count() >= 2
                                && !is_translated_here(&toks, j)
                                && !MODEL_TEXT.iter().any(|m| text.starts_with(m)) =>
                        {
                            sites.push(Site {
                                file: file.to_string(),
                                line: toks[j].1,
                                message: Some(text.clone()),
                                parts: Vec::new(),
                                args: String::new(),
                                last: String::new(),
                            });
                        }
                        _ => {}
                    }
                    if depth < 0 {
                        break;
                    }
                    j += 1;
                }
            }
            continue;
        }
        let Some(open) = open else { continue };
        let end = close(&toks, open);
        let body = &toks[open + 1..end];
        // The message is the first literal given as an argument or as a `format!` string;
        // every other literal of some words is a part of it (a branch, a suffix).
        let mut message = None;
        let mut parts = Vec::new();
        let mut depth = 0i32;
        for (k, (t, _)) in body.iter().enumerate() {
            match t {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => depth -= 1,
                Tok::Str(_) if is_translated_here(body, k) => {}
                Tok::Str(s) => {
                    let after_format = k >= 3
                        && body[k - 1].0 == Tok::Punct('(')
                        && body[k - 2].0 == Tok::Punct('!')
                        && body[k - 3].0 == Tok::Ident("format".into());
                    if is_identifier(s) {
                        // `bad("ZHI_PROVIDER", …)`: a name, not a message.
                    } else if message.is_none() && (depth == 0 || after_format) {
                        message = Some(s.clone());
                    } else if has_words(s) && s.split_whitespace().count() >= 2 {
                        parts.push(s.clone());
                    }
                }
                _ => {}
            }
        }
        let mut depth = 0i32;
        let mut last_start = 0;
        for (k, (t, _)) in body.iter().enumerate() {
            match t {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => depth -= 1,
                Tok::Punct(',') if depth == 0 && k + 1 < body.len() => last_start = k + 1,
                _ => {}
            }
        }
        let text = |toks: &[(Tok, usize)]| -> String {
            toks.iter()
                .map(|(t, _)| match t {
                    Tok::Ident(s) => s.clone(),
                    Tok::Punct(c) => c.to_string(),
                    Tok::Str(s) => format!("{s:?}"),
                })
                .collect()
        };
        let last = text(&body[last_start..]).trim_end_matches(',').to_string();
        sites.push(Site {
            file: file.to_string(),
            line: toks[i].1,
            message,
            parts,
            args: text(body),
            last,
        });
    }
    sites
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs")
            // A test module in a file of its own (`tests.rs`, `runner_tests.rs`) is test code.
            && !p.file_stem().is_some_and(|s| s == "tests" || s.to_string_lossy().ends_with("_tests"))
        {
            out.push(p);
        }
    }
}

fn all_sites() -> Vec<Site> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut sites = Vec::new();
    for f in files {
        let rel = f
            .strip_prefix(root)
            .unwrap_or(&f)
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("src/i18n/") {
            continue;
        }
        let src = std::fs::read_to_string(&f).unwrap();
        sites.extend(sites_in(&rel, &src));
    }
    sites
}

/// A format string with every placeholder written `{}`: how a site and a catalog entry are
/// compared. Placeholders side by side (`({}{})`, a value and an optional suffix) count as
/// one; the suffix is a part of the message, checked on its own.
fn shape(format: &str) -> String {
    match Template::parse(format) {
        Some(t) => {
            let mut out = String::new();
            for p in &t.pieces {
                match p {
                    Piece::Text(s) => out.push_str(&s.replace('{', "{{").replace('}', "}}")),
                    Piece::Hole(_) if out.ends_with("{}") && !out.ends_with("{{}}") => {}
                    Piece::Hole(_) => out.push_str("{}"),
                }
            }
            out
        }
        None => format.to_string(),
    }
}

/// Whether the literal at `k` is one side of a `tr("…", "…")` pair (translated where it is).
fn is_translated_here(toks: &[(Tok, usize)], k: usize) -> bool {
    let is = |i: Option<usize>, t: &Tok| i.and_then(|i| toks.get(i)).is_some_and(|(x, _)| x == t);
    let tr = Tok::Ident("tr".into());
    (is(k.checked_sub(1), &Tok::Punct('(')) && is(k.checked_sub(2), &tr))
        || (is(k.checked_sub(1), &Tok::Punct(','))
            && is(k.checked_sub(3), &Tok::Punct('('))
            && is(k.checked_sub(4), &tr))
}

/// `ZHI_PROVIDER`, `max_turns`, `--rpm`: one name, no words.
fn is_identifier(s: &str) -> bool {
    !s.contains(char::is_whitespace)
        && !s.contains('{')
        && (s.contains('_') || s.starts_with('-') || s.chars().all(|c| !c.is_ascii_lowercase()))
}

/// Whether a format string says anything in words (not `{}: {m}`, `; ` or `max_turns {}`).
fn has_words(format: &str) -> bool {
    let Some(t) = Template::parse(format) else {
        return true;
    };
    t.pieces.iter().any(|p| match p {
        Piece::Text(s) => s.split_whitespace().any(|w| {
            let w = w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_');
            w.chars().filter(char::is_ascii_alphabetic).count() >= 2
                && !w.contains(['_', '.', '/', '='])
                && w.chars().any(|c| c.is_ascii_lowercase())
        }),
        Piece::Hole(_) => false,
    })
}

#[test]
fn every_message_at_a_sink_has_a_catalog_entry() {
    let shapes: BTreeSet<String> = ENTRIES.iter().map(|(en, _)| shape(en)).collect();
    let sites = all_sites();
    assert!(
        sites.len() > 200,
        "the scan found only {} sites",
        sites.len()
    );
    let mut missing = Vec::new();
    for s in &sites {
        match &s.message {
            Some(m) if has_words(m) => {
                if !shapes.contains(&shape(m)) {
                    missing.push(format!("{}:{}: {m:?}", s.file, s.line));
                }
            }
            Some(_) => {}
            None => {
                if !PASSED_ON.iter().any(|(last, _)| s.last == *last) {
                    missing.push(format!(
                        "{}:{}: a message passed on ({}): list it in PASSED_ON",
                        s.file, s.line, s.args
                    ));
                }
            }
        }
        for p in &s.parts {
            // A part may be a format string or plain text given to one (`{dir}` as it is).
            let plain = shape(&p.replace('{', "{{").replace('}', "}}"));
            if !shapes
                .iter()
                .any(|sh| sh.contains(&shape(p)) || sh.contains(&plain))
            {
                missing.push(format!("{}:{}: part {p:?}", s.file, s.line));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} message(s) without a catalog entry:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

#[test]
fn the_scan_reads_what_it_should() {
    let src = r#"
        fn f() -> Result<(), ExitError> {
            let bad = |m: String| ExitError::usage(format!("config file {}: {m}", p));
            tracing::warn!(job = %x, "glob `{input}` matched nothing");
            Err(bad(format!("`{key}` must be a {kind} ({})", if a { "an bc" } else { 'c' })))?;
            ExitError::usage(e.to_string())
        }
        #[cfg(test)]
        mod tests { fn t() { ExitError::usage("in a test"); } }
    "#;
    let sites = sites_in("src/x.rs", src);
    let found: Vec<(Option<&str>, usize)> = sites
        .iter()
        .map(|s| (s.message.as_deref(), s.parts.len()))
        .collect();
    assert_eq!(
        found,
        vec![
            (Some("config file {}: {m}"), 0),
            (Some("glob `{input}` matched nothing"), 0),
            (Some("`{key}` must be a {kind} ({})"), 1),
            (None, 0),
        ]
    );
    assert_eq!(sites[3].args, "e.to_string()");
}

/// Words a Chinese template may keep in Latin letters: names of programs, formats, units.
#[rustfmt::skip]
const LATIN_ALLOWED: &[&str] = &[
    "zhi", "PDF", "PDFs", "API", "JSON", "URL", "HTTP", "HTTPS", "OCR", "YAML", "UTF", "CJK", "MiB",
    "KiB", "GiB", "MB", "KB", "GB", "pid", "pdftotext", "pdftoppm", "pdfimages", "pdfinfo",
    "tesseract", "poppler", "utils", "lopdf", "pdf-extract", "glm-ocr", "apt-get", "brew", "macOS",
    "chmod", "Batch", "docx", "pptx", "xlsx", "xls", "ods", "png", "jpg", "gif", "webp", "tiff",
    "bmp", "PNG", "Excel", "Markdown", "SKILL", "md", "Unicode", "CMap", "ToUnicode", "ASCII85",
    "ID", "xref", "XRefStm", "Prev", "os", "chi_sim", "eng", "GLM", "lang", "http", "https", "TLS",
    "DNS", "ms", "h", "s", "x", "cron", "Job", "jpeg", "dpi", "OpenAI", "Zhipu", "zip", "Word",
    "shell", "tpm", "rpm",
];

/// The Latin words of a Chinese template that are neither in a hole, a code span, a flag, a
/// file or setting name, an environment variable nor [`LATIN_ALLOWED`].
fn english_words(zh: &str) -> Vec<String> {
    let Some(t) = Template::parse(zh) else {
        return vec![format!("unparsable: {zh}")];
    };
    let text = t.render(|_| "_".to_string());
    // Code spans are commands and identifiers.
    let mut plain = String::new();
    for (i, chunk) in text.split('`').enumerate() {
        if i % 2 == 0 {
            plain.push_str(chunk);
            plain.push(' ');
        }
    }
    let mut words = Vec::new();
    for w in plain.split(|c: char| !(c.is_ascii_alphanumeric() || "-_./~:{}=[]".contains(c))) {
        // `retry.max_attempts`, `{dir}/{stem}`, `chunking:`: names, not words.
        let is_name = w
            .trim_end_matches('.')
            .contains(['.', '/', '_', ':', '{', '='])
            || w.chars().all(|c| !c.is_ascii_lowercase());
        let w = w.trim_matches(|c: char| matches!(c, '.' | ':' | '-' | '/'));
        let letters = w.chars().filter(char::is_ascii_alphabetic).count();
        let is_name = is_name || LATIN_ALLOWED.contains(&w);
        if letters >= 2 && !is_name && !plain.contains(&format!("--{w}")) {
            words.push(w.to_string());
        }
    }
    words
}

#[test]
fn catalog_entries_are_well_formed_and_chinese() {
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (en, zh) in ENTRIES {
        let (Some(e), Some(z)) = (Template::parse(en), Template::parse(zh)) else {
            problems.push(format!("unparsable: {en:?} / {zh:?}"));
            continue;
        };
        if !seen.insert(shape(en)) {
            problems.push(format!("twice: {en:?}"));
        }
        if e.has_adjacent_holes() {
            problems.push(format!("two holes side by side: {en:?}"));
        }
        let letters = e
            .pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.chars().filter(char::is_ascii_alphabetic).count(),
                Piece::Hole(_) => 0,
            })
            .sum::<usize>();
        if letters < 2 {
            problems.push(format!("no words to match: {en:?}"));
        }
        // `{_s}`: English grammar, absent from the Chinese.
        let mut eh: Vec<&str> = e.holes().filter(|h| !h.starts_with('_')).collect();
        let mut zh_holes: Vec<&str> = z.holes().collect();
        eh.sort_unstable();
        zh_holes.sort_unstable();
        if eh != zh_holes {
            problems.push(format!("holes differ: {en:?} / {zh:?}"));
        }
        for h in &eh {
            if !RECURSIVE.contains(h) && !VERBATIM.contains(h) {
                problems.push(format!(
                    "hole {{{h}}} in {en:?} is in neither RECURSIVE nor VERBATIM"
                ));
            }
        }
        let english = english_words(zh);
        if !english.is_empty() {
            problems.push(format!("English in {zh:?}: {english:?}"));
        }
    }
    for (en, zh) in FIELDS {
        if !english_words(zh).is_empty() {
            problems.push(format!("field {en}: {zh:?}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_language_check_catches_english() {
    assert_eq!(
        english_words("无法读取 {path}：not found"),
        vec!["not", "found"]
    );
    assert!(
        english_words("用 `zhi skills list` 查看；--rpm 至少为 1；见 zhi.yaml 与 ZHI_API_KEY")
            .is_empty()
    );
}

/// `tr("…", "…")` pairs in the commands: the Chinese side is Chinese.
#[test]
fn tr_pairs_are_chinese() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut problems = Vec::new();
    for f in files {
        let toks = lex(&std::fs::read_to_string(&f).unwrap());
        for w in toks.windows(6) {
            if let [
                (Tok::Ident(name), line),
                (Tok::Punct('('), _),
                (Tok::Str(_), _),
                (Tok::Punct(','), _),
                (Tok::Str(zh), _),
                (Tok::Punct(')'), _),
            ] = w
                && name == "tr"
            {
                let english = english_words(&zh.replace('{', "{{").replace('}', "}}"));
                if !english.is_empty() {
                    problems.push(format!("{}:{line}: {zh:?}: {english:?}", f.display()));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
