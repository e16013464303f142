//! The catalog cannot rot silently. Every template a person may read is known without reading
//! the sources: `msg!` and `t!` register theirs at compile time ([`MESSAGES`]), and the only
//! other texts, thiserror's `#[error("…")]` attributes (an attribute takes no macro), are
//! listed by [`error_attributes`]. Each must have a catalog line with a Chinese translation
//! whose holes agree, in Chinese words, with one Chinese word per glossary term.

use super::catalog::{ENTRIES, FIELDS, RECURSIVE, SHOWN, VERBATIM};
use super::glossary::TERMS;
use super::message::{MESSAGES, Registered, Use};
use super::template::{Piece, Template};
use std::collections::BTreeSet;
use std::path::Path;

/// A format string with every placeholder written `{}`: how a `msg!` template (whose holes
/// may be positional) and a catalog entry are compared. Placeholders side by side (`({}{})`,
/// a value and an optional suffix) count as one.
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

/// What is wrong with the registered templates: each names the template and where it is.
fn problems_of(registered: &[Registered]) -> Vec<String> {
    let shapes: BTreeSet<String> = ENTRIES.iter().map(|(en, _)| shape(en)).collect();
    let shown: BTreeSet<&str> = ENTRIES.iter().chain(SHOWN).map(|(en, _)| *en).collect();
    let mut problems = Vec::new();
    for r in registered {
        let at = format!("{}:{}: {:?}", r.file, r.line, r.template);
        match r.used {
            Use::Said if !has_words(r.template) => {
                problems.push(format!("{at}: says nothing in words; use format!"));
            }
            Use::Said if !shapes.contains(&shape(r.template)) => {
                problems.push(format!("{at}: no catalog entry (add it to ENTRIES)"));
            }
            Use::Said => {}
            Use::Shown => {
                if !shown.contains(r.template) {
                    problems.push(format!("{at}: no catalog entry (add it to SHOWN)"));
                }
                let holes = Template::parse(r.template)
                    .map(|t| t.holes().map(str::to_string).collect::<Vec<_>>());
                for h in holes.unwrap_or_default() {
                    if !r.args.contains(&h.as_str()) {
                        problems.push(format!("{at}: hole {{{h}}} is not given as `{h} = …`"));
                    }
                }
            }
        }
    }
    problems
}

#[test]
fn every_registered_template_has_a_catalog_entry() {
    assert!(
        MESSAGES.len() > 300,
        "only {} templates registered",
        MESSAGES.len()
    );
    let problems = problems_of(&MESSAGES);
    assert!(
        problems.is_empty(),
        "{} template(s) without a catalog entry:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn a_template_without_a_translation_is_named() {
    let untranslated = [
        Registered {
            template: "a message nobody translated: {reason}",
            args: &[],
            used: Use::Said,
            file: "src/x.rs",
            line: 7,
        },
        Registered {
            template: "{n} widgets shown",
            args: &[],
            used: Use::Shown,
            file: "src/y.rs",
            line: 9,
        },
    ];
    let problems = problems_of(&untranslated);
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(
        problems[0].contains("src/x.rs:7") && problems[0].contains("a message nobody translated")
    );
    assert!(problems[1].contains("{n} widgets shown") && problems[1].contains("SHOWN"));
    assert!(problems[2].contains("hole {n}"));
}

/// The texts of thiserror's `#[error("…")]` attributes in `src/`, with where they are: an
/// attribute takes a literal, not a macro, so these are read where they are written. A
/// `#[error(transparent)]` shows the wrapped error's text and has none of its own.
fn error_attributes() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let mut out = Vec::new();
    for f in files {
        let Ok(src) = std::fs::read_to_string(&f) else {
            continue;
        };
        let name = f.strip_prefix(root).unwrap_or(&f).display().to_string();
        for (at, _) in src.match_indices("#[error(") {
            let rest = src[at + 8..].trim_start();
            if rest.starts_with("transparent") {
                continue;
            }
            let line = src[..at].matches('\n').count() + 1;
            match first_literal(rest) {
                Some(text) => out.push((format!("{name}:{line}"), text)),
                None => out.push((format!("{name}:{line}"), String::new())),
            }
        }
    }
    out
}

/// The value of the `"…"` literal `text` begins with (`format!`'s escapes and line
/// continuations read as rustc reads them).
fn first_literal(text: &str) -> Option<String> {
    let mut chars = text.strip_prefix('"')?.chars().peekable();
    let mut out = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                '\n' => while chars.next_if(|c| c.is_whitespace()).is_some() {},
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") && !p.ends_with("i18n/coverage.rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_error_attribute_has_a_catalog_entry() {
    let shapes: BTreeSet<String> = ENTRIES.iter().map(|(en, _)| shape(en)).collect();
    let attributes = error_attributes();
    assert!(
        attributes.len() > 50,
        "only {} #[error]s found",
        attributes.len()
    );
    let missing: Vec<String> = attributes
        .iter()
        .filter(|(_, text)| has_words(text) && !shapes.contains(&shape(text)))
        .map(|(at, text)| format!("{at}: {text:?}"))
        .collect();
    assert!(
        missing.is_empty(),
        "{} #[error] text(s) without a catalog entry:\n{}",
        missing.len(),
        missing.join("\n")
    );
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
    "shell", "tpm", "rpm", "chunking",
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
    let mut seen_shown = BTreeSet::new();
    for (table, (en, zh)) in ENTRIES
        .iter()
        .map(|e| ("ENTRIES", e))
        .chain(SHOWN.iter().map(|e| ("SHOWN", e)))
    {
        let (Some(e), Some(z)) = (Template::parse(en), Template::parse(zh)) else {
            problems.push(format!("unparsable: {en:?} / {zh:?}"));
            continue;
        };
        if !seen_shown.insert(*en) || (table == "ENTRIES" && !seen.insert(shape(en))) {
            problems.push(format!("twice: {en:?}"));
        }
        // ENTRIES are matched against whole messages: a template must say something, and
        // the split between two holes side by side would be a guess.
        if table == "ENTRIES" {
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

/// Whether `text` has `term` as a whole word (any case), outside code spans.
fn has_term(text: &str, term: &str) -> bool {
    let text = Template::parse(text).map_or_else(|| text.to_string(), |t| t.render(|_| "_".into()));
    let plain: String = text
        .split('`')
        .step_by(2)
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    plain
        .split(|c: char| !c.is_ascii_alphanumeric() && !matches!(c, '_' | '-'))
        .any(|w| w == term)
}

#[test]
fn the_catalog_says_one_chinese_word_per_term() {
    let mut problems = Vec::new();
    for (en, zh) in ENTRIES.iter().chain(SHOWN) {
        for (term, word) in TERMS {
            if has_term(en, term) && !zh.contains(word) {
                problems.push(format!(
                    "{en:?}: {term} is {word} (glossary), not in {zh:?}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
