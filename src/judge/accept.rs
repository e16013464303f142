//! One acceptance pipeline (docs/skills.md#declared-outputs): whether a declared file is the
//! result a person asked for, whoever produced it — a direct answer, a plain answer in the agent
//! loop, a `file_write`, a nested skill, a workflow step. Built once per declared file from the
//! skill's `output` and the job, it is an ordered list of [`Check`]s; the first that fails names
//! the [`Problem`], and the problem says whether a fresh try may help ([`Problem::retry`]).
//!
//! Figures are judged apart ([`Acceptance::ungrounded`]): a figure the source does not hold
//! earns one fresh try, then is kept and reported, never silently trusted.
//!
//! It catches junk: an empty file, a claim, JSON where prose is asked, a copy, a loop, an echo
//! of the prompt, the wrong language, a rendering with parts left out, a stub. It lets through
//! an answer that is wrong but well formed — that is for the doubts ([`super::doubts`]) — and
//! any file a skill does not declare.

use super::figures::Ungrounded;
use super::junk::{self, Problem};
use super::work::Work;
use crate::skills::{self, Chunking, Skill};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// What kind of file a declared name is, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// Markdown, plain text and other prose a person reads.
    Prose,
    /// CSV or TSV.
    Table,
    Json,
    /// Spreadsheets, Word files, images: judged only for being there and not empty.
    Binary,
}

impl FileKind {
    pub(crate) fn of(file: &str) -> FileKind {
        match skills::extension(file).as_str() {
            "md" | "markdown" | "txt" | "text" | "rst" | "tex" | "html" | "htm" | "" => {
                FileKind::Prose
            }
            "csv" | "tsv" => FileKind::Table,
            "json" => FileKind::Json,
            _ => FileKind::Binary,
        }
    }
}

/// One check of the pipeline, in the order they run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Check {
    /// Nothing but white space (or zero bytes).
    Empty,
    /// "I wrote summary.md" instead of the content.
    Claim,
    /// Talk about the task instead of its result ("This task involves summarizing…").
    TaskTalk,
    /// A tool call, or other JSON, written out where prose or a table is declared.
    NotProse,
    /// Not valid JSON where `.json` is declared.
    Json,
    /// The input handed back (for skills that condense it, or render it in another language:
    /// most of it, word for word).
    Copy { most: bool },
    /// The same passages over and over.
    Loop,
    /// The instructions handed back.
    Echo(String),
    /// Not in the declared language.
    Language(String),
    /// A rendering of the whole input that leaves much of it out (map skills).
    Incomplete,
    /// Headings with no sentence under them, or a few words where a text is asked.
    Stub,
}

/// The checks for one declared file of a job.
#[derive(Debug, Clone)]
pub(crate) struct Acceptance {
    /// The declared name, placeholders filled.
    pub file: String,
    pub kind: FileKind,
    checks: Vec<Check>,
    /// The text the job was given: copies, loops and figures are judged against it.
    source: Option<Arc<str>>,
    /// Whether figures are checked against the source (skills that condense it).
    condenses: bool,
    /// Whether it renders the whole source (a translation, a proofread text).
    whole: bool,
    /// What the model was told besides the document (numbers in it are not invented).
    given: String,
    /// Texts the answer was drawn from, each of which it may not copy out on its own.
    parts: Vec<Arc<str>>,
    /// The language it renders its source into, when it is a rendering (doubts judge what
    /// was translated).
    language: Option<String>,
}

impl Acceptance {
    /// The checks for `file` of a job of `skill` with these arguments, given `source`.
    pub(crate) fn new(
        skill: &Skill,
        args: &BTreeMap<String, String>,
        file: &str,
        source: Option<Arc<str>>,
    ) -> Acceptance {
        let language = skill.output_language(args);
        let condenses = skill.chunking != Chunking::Map && language.is_none();
        // A translation into another script shares no long passage with its source.
        let translates = language.as_deref().is_some_and(|target| {
            let from = source.as_deref().and_then(skills::language_of);
            from.and_then(junk::script_of) != junk::script_of(target)
        });
        Acceptance::build(
            file,
            source,
            Shape {
                condenses,
                translates,
                whole: skill.chunking == Chunking::Map,
                language,
            },
        )
    }

    /// The checks for the answer of a workflow's own `prompt` step: a text drawn from the
    /// document and the steps before it.
    pub(crate) fn composed(
        file: &str,
        source: Option<Arc<str>>,
        language: Option<String>,
    ) -> Acceptance {
        Acceptance::build(
            file,
            source,
            Shape {
                condenses: true,
                translates: false,
                whole: false,
                language,
            },
        )
    }

    fn build(file: &str, source: Option<Arc<str>>, shape: Shape) -> Acceptance {
        let kind = FileKind::of(file);
        let language = shape.language.clone();
        let mut checks = vec![Check::Empty];
        match kind {
            FileKind::Prose | FileKind::Table => {
                checks.extend([Check::Claim, Check::NotProse]);
                if kind == FileKind::Prose {
                    checks.push(Check::TaskTalk);
                }
                // A text in the wrong language is named so before anything else it is.
                if let Some(lang) = shape.language {
                    checks.push(Check::Language(lang));
                }
                checks.push(Check::Copy {
                    most: shape.condenses || shape.translates,
                });
                if kind == FileKind::Prose {
                    checks.push(Check::Loop);
                }
                if shape.whole {
                    checks.push(Check::Incomplete);
                }
                if kind == FileKind::Prose {
                    checks.push(Check::Stub);
                }
            }
            FileKind::Json => checks.extend([Check::Claim, Check::Json]),
            FileKind::Binary => {}
        }
        Acceptance {
            file: file.to_string(),
            kind,
            checks,
            source,
            condenses: shape.condenses,
            whole: shape.whole,
            given: String::new(),
            parts: Vec::new(),
            language,
        }
    }

    /// Also refuse an answer that hands back these instructions (what the model was told
    /// besides the document).
    pub(crate) fn with_instructions(mut self, instructions: &str) -> Acceptance {
        // Before the copy, loop, completeness and stub checks: an echo is the first thing to
        // name once the language is right.
        let at = self
            .checks
            .iter()
            .position(|c| {
                matches!(
                    c,
                    Check::Copy { .. } | Check::Incomplete | Check::Stub | Check::Loop
                )
            })
            .unwrap_or(self.checks.len());
        if self.kind != FileKind::Binary && self.kind != FileKind::Json {
            self.checks
                .insert(at, Check::Echo(instructions.to_string()));
        }
        self.given = instructions.to_string();
        self
    }

    /// Figures in `text` (everything the model was given: the other documents of a
    /// comparison, the outputs of earlier steps) count as grounded too.
    pub(crate) fn grounded_in(mut self, text: &str) -> Acceptance {
        self.given.push('\n');
        self.given.push_str(text);
        self
    }

    /// An answer drawn from several texts may not copy out any one of them (a digest's
    /// overview that is one document's summary).
    pub(crate) fn with_parts(mut self, parts: &[Arc<str>]) -> Acceptance {
        self.parts = parts.to_vec();
        self
    }

    /// The first problem of an answer meant to become the file's content. `stop` is asked
    /// between checks and within the long ones; an answer whose checks the run's stop cut
    /// short is [`Problem::Stopped`], never taken as judged.
    pub(crate) fn answer(&self, text: &str, stop: &dyn Fn() -> bool) -> Option<Problem> {
        let source = self.source.as_deref();
        let found = self.checks.iter().find_map(|c| {
            if stop() {
                return Some(Problem::Stopped);
            }
            match c {
                Check::Copy { most: true }
                    if self
                        .parts
                        .iter()
                        .any(|p| junk::is_copy(text, p) || junk::copies_most(text, p, stop)) =>
                {
                    Some(Problem::Copy)
                }
                _ => judge(c, text, source, stop),
            }
        });
        // A check the stop cut short found nothing, whatever the answer holds.
        match found {
            None if stop() => Some(Problem::Stopped),
            found => found,
        }
    }

    /// The first problem of a file on disk (a `file_write`, a nested skill's output, a
    /// step's), read as the file's kind. `stop` as for [`Acceptance::answer`].
    pub(crate) fn file(&self, path: &Path, stop: &dyn Fn() -> bool) -> Option<Problem> {
        let Ok(bytes) = std::fs::read(path) else {
            return Some(Problem::Missing);
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Some(Problem::Empty);
        }
        match self.kind {
            FileKind::Binary => None,
            _ => match std::str::from_utf8(&bytes) {
                Ok(text) => self.answer(text, stop),
                Err(_) => Some(Problem::Invalid("not UTF-8 text".into())),
            },
        }
    }

    /// The figures of an accepted answer that its source does not hold (condensing skills
    /// only; none when there is no source). `stop` is asked between figures.
    pub(crate) fn ungrounded(&self, text: &str, stop: &dyn Fn() -> bool) -> Ungrounded {
        match &self.source {
            Some(src) if self.condenses && self.kind == FileKind::Prose => {
                super::figures::ungrounded(text, src, &self.given, stop)
            }
            _ => Ungrounded::default(),
        }
    }
}

impl Acceptance {
    /// Whether the file condenses its source (a summary, notes, an analysis): holding most of
    /// it is a copy, and an answer cut at the length limit was most likely one.
    pub(crate) fn condenses(&self) -> bool {
        self.condenses && self.language.is_none() && self.kind == FileKind::Prose
    }

    /// Whether an accepted condensing is mostly its source again: the `near_copy` doubt
    /// (docs/outputs.md#doubts), which a direct request asks about once more.
    pub(crate) fn near_copy(&self, text: &str, stop: &dyn Fn() -> bool) -> bool {
        match self.source.as_deref() {
            Some(source) if self.condenses() => {
                let text = junk::strip_fence(text);
                super::doubts::prose::ProseCheck::NearCopy
                    .run(source, &text, stop)
                    .is_some_and(|d| d.check == "near_copy")
            }
            _ => false,
        }
    }

    /// What zhi doubts in an accepted answer (docs/outputs.md#doubts): a rendering's changed
    /// figures, untranslated runs, remarks and added headings; a rewriting's lost figures; a
    /// condensing's near-copy and invented figures. Prose files with a source only. `stop` is
    /// asked between items.
    pub(crate) fn doubts(
        &self,
        text: &str,
        stop: &dyn Fn() -> bool,
    ) -> Vec<crate::manifest::Doubt> {
        let Some(source) = self.source.as_deref() else {
            return Vec::new();
        };
        if self.kind != FileKind::Prose {
            return Vec::new();
        }
        let text = junk::strip_fence(text);
        match &self.language {
            Some(lang) => super::doubts::of_rendering(&self.file, source, &text, lang, stop),
            None if self.condenses => super::doubts::of_condensing(&self.file, source, &text, stop),
            None if self.whole => super::doubts::of_rewriting(&self.file, source, &text, stop),
            None => Vec::new(),
        }
    }
}

/// How a skill's answer relates to its input.
struct Shape {
    /// It condenses the input (a summary, notes, an analysis): holding most of it word for word
    /// is a copy, and figures are checked against it.
    condenses: bool,
    /// It renders the input in a language of another script: holding most of it word for word
    /// is a copy.
    translates: bool,
    /// It renders the input whole (a translation, a proofread text).
    whole: bool,
    language: Option<String>,
}

fn judge(
    check: &Check,
    text: &str,
    source: Option<&str>,
    stop: &dyn Fn() -> bool,
) -> Option<Problem> {
    let hit = match check {
        Check::Empty => text.trim().is_empty(),
        Check::Claim => junk::looks_like_claim(text),
        Check::TaskTalk => junk::talks_about_task(text, source),
        Check::NotProse => junk::looks_like_tool_call(text) || is_json_text(text),
        Check::Json => {
            return serde_json::from_str::<serde_json::Value>(text)
                .err()
                .map(|e| Problem::Invalid(format!("not JSON ({e})")));
        }
        Check::Copy { most } => source
            .is_some_and(|s| junk::is_copy(text, s) || (*most && junk::copies_most(text, s, stop))),
        Check::Loop => junk::is_loop(text, source, stop),
        Check::Echo(instructions) => junk::is_echo(text, instructions, source, stop),
        // Judged on what was translated: what the answer keeps verbatim from its source
        // (paths, commands, names) and a fence around it are in no language.
        Check::Language(lang) => match source {
            Some(s) => {
                let part = super::doubts::prose::translated_part(s, text, &Work::new(stop));
                junk::is_wrong_language(&part, lang)
            }
            None => junk::is_wrong_language(text, lang),
        },
        Check::Incomplete => source.is_some_and(|s| junk::is_incomplete(text, "a.md", s)),
        Check::Stub => is_stub(text, source.map_or(0, words)),
    };
    hit.then(|| match check {
        Check::Empty => Problem::Empty,
        Check::Claim => Problem::Claim,
        Check::TaskTalk => Problem::TaskTalk,
        Check::NotProse => Problem::NotProse,
        Check::Json => unreachable!("returned above"),
        Check::Copy { .. } => Problem::Copy,
        Check::Loop => Problem::Loop,
        Check::Echo(_) => Problem::Echo,
        Check::Language(lang) => Problem::WrongLanguage(lang.clone()),
        Check::Incomplete => Problem::Incomplete,
        Check::Stub => Problem::Stub,
    })
}

/// A JSON object or array (or a cut one) where prose was asked: `{"name": "end"}`, a tool call
/// spelled out, `[{"clause": …}]`.
fn is_json_text(text: &str) -> bool {
    let t = junk::strip_fence(text);
    let t = t.trim();
    let opens = t.starts_with("{\"") || t.starts_with("[{") || t.starts_with("{ \"");
    opens
        && (serde_json::from_str::<serde_json::Value>(t).is_ok()
            || t.ends_with('}')
            || t.ends_with(']')
            || !t.contains('\n'))
}

/// Words of running text: white-space separated words holding a letter, and CJK characters
/// two to a word.
fn words(text: &str) -> usize {
    let latin = text
        .split_whitespace()
        .filter(|w| {
            w.chars()
                .any(|c| c.is_alphabetic() && !crate::llm::limit::is_cjk(c))
        })
        .count();
    let cjk = text
        .chars()
        .filter(|c| crate::llm::limit::is_cjk(*c))
        .count();
    latin + cjk / 2
}

/// Headings with nothing under them, or a few words where a text is asked: a file path, a
/// title, `## Part 1 of 4` four times, one closing line of a review. A real answer has a line
/// of running text (three words or more that is not a heading, a rule or a table's frame) and,
/// in all, at least a fortieth of its source's words (`source_words`), between 6 and 12: a
/// summary of a long document in one sentence passes, a disclaimer does not.
pub(crate) fn is_stub(text: &str, source_words: usize) -> bool {
    let mut body_words = 0;
    let mut longest = 0;
    let mut body_lines = 0;
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') || l.chars().all(|c| "-=*_|: ".contains(c)) {
            continue;
        }
        body_lines += 1;
        let w = words(l);
        body_words += w;
        longest = longest.max(w);
    }
    if body_lines == 0 {
        return true;
    }
    // A document of a few words may have an answer of a few words.
    if source_words < 40 {
        return false;
    }
    longest < 3 || body_words < (source_words / 40).clamp(6, 12)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prose() -> Acceptance {
        Acceptance::composed(
            "review.md",
            Some(Arc::from(
                "The supplier delivers 200 units by 1 March 2026 for 4,000 EUR.",
            )),
            None,
        )
    }

    #[test]
    fn json_and_tool_calls_are_not_prose() {
        let a = prose();
        assert_eq!(
            a.answer("{\"name\": \"end\"}", &|| false),
            Some(Problem::NotProse)
        );
        assert_eq!(
            a.answer(
                "{\"name\": \"skill_analyze\", \"arguments\": {\"file\": \"c.txt\"}}",
                &|| false
            ),
            Some(Problem::NotProse)
        );
        assert_eq!(
            a.answer("[{\"clause\": 1, \"risk\": \"high\"}]", &|| false),
            Some(Problem::NotProse)
        );
        // JSON in a .json file is the point.
        let j = Acceptance::composed("a.json", None, None);
        assert_eq!(j.answer("{\"name\": \"end\"}", &|| false), None);
        assert!(matches!(
            j.answer("{\"a\": ", &|| false),
            Some(Problem::Invalid(_))
        ));
    }

    #[test]
    fn stubs_are_refused_and_short_real_answers_are_not() {
        assert!(is_stub(
            "## Part 1 of 4\n# Long Document\n## Part 2 of 4\n# Long Document\n",
            900
        ));
        assert!(is_stub("contracts/service-agreement.txt", 200));
        assert!(is_stub("# Review\n\n| Item | Detail |\n|---|---|\n", 200));
        assert!(!is_stub(
            "The release adds offline mode and fixes two crashes in sync.",
            200
        ));
        assert!(!is_stub(
            "# 周报\n\n本周完成了登录模块的重构，修复了三个缺陷。",
            200
        ));
        assert!(is_stub("# 周报\n\n登录", 200));
        assert!(is_stub("# Title only\n\n---\n", 5));
        assert!(!is_stub("Summary.", 5));
        // A few words are enough for a document of a few words, not for a long one.
        assert!(!is_stub("North up, south down.", 9));
        assert!(is_stub("North up, south down.", 400));
        let disclaimer = "This is an automated review. Not legal advice.";
        assert!(is_stub(disclaimer, 900));
        assert!(!is_stub(
            "The agreement runs 24 months at EUR 4,800 a month; the liability cap of three months of fees is low.",
            900
        ));
    }

    #[test]
    fn the_order_names_the_first_problem() {
        let a = prose().with_instructions(
            "Write a review of the contract for the person who signs it, with risks.",
        );
        assert_eq!(a.answer("   ", &|| false), Some(Problem::Empty));
        assert_eq!(
            a.answer("I wrote review.md.", &|| false),
            Some(Problem::Claim)
        );
        assert_eq!(
            a.answer(
                "Write a review of the contract for the person who signs it, with risks.",
                &|| false
            ),
            Some(Problem::Echo)
        );
        assert_eq!(a.answer("# Review", &|| false), Some(Problem::Stub));
        assert_eq!(
            a.answer(
                "The supplier must deliver 200 units by 1 March 2026; the price is fixed.",
                &|| false
            ),
            None
        );
    }

    #[test]
    fn figures_not_in_the_source_are_named() {
        let a = prose();
        assert_eq!(
            a.ungrounded(
                "200 units by 1 March 2026 for 4,000 EUR, due in Q3 2027.",
                &|| false
            )
            .named,
            ["Q3", "2027"]
        );
        assert!(
            a.ungrounded("200 units, 4000 EUR, March 2026", &|| false)
                .named
                .is_empty()
        );
    }

    #[test]
    fn a_translation_that_hands_the_source_back_is_refused() {
        let skill = crate::skills::load_str(
            b"name: t\ndescription: d\nsystem_prompt: p\ntools: []\noutput:\n  files: [t.md]\n  language: '{to}'\nchunking: map\n",
            crate::skills::SkillSource::File("t.yaml".into()),
        )
        .unwrap()
        .skill;
        let src = "Notice to all tenants: the water supply in Building B will be shut off on Tuesday, \
                   18 November, from 09:00 to 13:00 for pipe repairs. Please store enough water.";
        let args = [("to".to_string(), "chinese".to_string())].into();
        let a = Acceptance::new(&skill, &args, "t.md", Some(Arc::from(src)));
        let handed_back = format!(
            "### 要翻译的文档\n\n{src}\n\n### 解释\n这个文档是关于关闭水供应的通知，请大家提前储存足够的水。"
        );
        assert!(matches!(
            a.answer(&handed_back, &|| false),
            Some(Problem::Copy | Problem::WrongLanguage(_))
        ));
        let translated = "致全体住户：B 栋将于 11 月 18 日星期二 09:00 至 13:00 停水，以便维修管道。请储存足够的水。";
        assert_eq!(a.answer(translated, &|| false), None);
    }

    #[test]
    fn an_answer_the_stop_cut_short_is_not_judged() {
        let a = prose().with_instructions("Write a review of the contract with its risks.");
        let looping = "The board met again and the costs rose in the north. ".repeat(40_000);
        assert_eq!(a.answer(&looping, &|| false), Some(Problem::Loop));
        assert_eq!(a.answer(&looping, &|| true), Some(Problem::Stopped));
        for after in 1..12 {
            let asked = std::cell::Cell::new(0);
            let stop = || {
                asked.set(asked.get() + 1);
                asked.get() > after
            };
            assert_eq!(a.answer(&looping, &stop), Some(Problem::Stopped), "{after}");
        }
    }

    #[test]
    fn binary_files_are_only_checked_for_being_there() {
        let dir = tempfile::tempdir().unwrap();
        let a = Acceptance::composed("t.xlsx", None, None);
        let p = dir.path().join("t.xlsx");
        std::fs::write(&p, b"").unwrap();
        assert_eq!(a.file(&p, &|| false), Some(Problem::Empty));
        std::fs::write(&p, b"PK\x03\x04rest").unwrap();
        assert_eq!(a.file(&p, &|| false), None);
        assert_eq!(
            a.file(&dir.path().join("none.xlsx"), &|| false),
            Some(Problem::Missing)
        );
    }
}
