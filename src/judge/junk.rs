//! Junk (docs/skills.md#declared-outputs): what makes a declared file no result at all — empty,
//! the input handed back, a claim, a loop, an echo of the prompt, the wrong language, parts left
//! out. Each test here is one text heuristic; [`super::accept`] orders them per file.
//!
//! Small models claim work they did not do ("I wrote summary.md: …") and copy their input;
//! these checks are what keeps such a run from being recorded as a success.

use super::work::Work;
use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};

/// Why a declared file does not count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    Missing,
    Empty,
    /// The text is the input document (or a piece of it) handed back.
    Copy,
    /// A claim to have written a file, not the file's content.
    Claim,
    /// Talk about the task, not its result ("This task involves summarizing the given
    /// text…"): the prompt talked back.
    TaskTalk,
    /// The text goes round in circles: the same passages again and again, far more than in
    /// the input (a small model's loop).
    Loop,
    /// Not of the file's format (`.json` that does not parse).
    Invalid(String),
    /// The model's own instructions handed back (a small model echoing its prompt).
    Echo,
    /// Far shorter than the input it should render whole (a translation of a fifth of it).
    Incomplete,
    /// Not in the language the skill declares (`output.language`), judged by its script.
    WrongLanguage(String),
    /// A tool call or other JSON written out where prose or a table is declared.
    NotProse,
    /// Headings with no sentence under them, or a few words where a text is asked.
    Stub,
    /// Not judged whole: the run stopped while its checks ran.
    Stopped,
}

/// What may mend a problem: the same conversation told what was wrong (a claim, an empty or
/// malformed answer), or a fresh request naming it (a copy, a loop, an echo: shown its own
/// answer, a small model repeats it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    Correct,
    Fresh,
}

impl Problem {
    /// How a try may mend it.
    pub(crate) fn retry(&self) -> Retry {
        match self {
            Problem::Missing
            | Problem::Empty
            | Problem::Claim
            | Problem::Invalid(_)
            | Problem::Stopped => Retry::Correct,
            Problem::Copy
            | Problem::TaskTalk
            | Problem::Loop
            | Problem::Echo
            | Problem::Incomplete
            | Problem::WrongLanguage(_)
            | Problem::NotProse
            | Problem::Stub => Retry::Fresh,
        }
    }

    /// The line added to a fresh request after this problem.
    pub(crate) fn fresh_hint(&self) -> String {
        match self {
            Problem::Loop => "Be brief and say each point only once.".into(),
            Problem::WrongLanguage(lang) => format!("Write your whole answer in {lang}."),
            Problem::Incomplete => {
                "Give the result for the whole text above, every part of it, nothing left out."
                    .into()
            }
            Problem::Echo => {
                "Do not repeat your instructions: answer with the result they ask for.".into()
            }
            Problem::TaskTalk => "Do not describe the task: begin with the result itself.".into(),
            Problem::NotProse => {
                "Answer in plain prose (Markdown), not JSON and not a tool call.".into()
            }
            Problem::Stub => {
                "Write full sentences with the content itself, not only headings or a title.".into()
            }
            _ => "Do not copy the document out: answer with the result your instructions ask for."
                .into(),
        }
    }

    /// What a person (and the model, in its corrective turn) is told.
    pub(crate) fn describe(&self, file: &str) -> String {
        match self {
            Problem::Missing => format!("{file} was not written"),
            Problem::Empty => format!("{file} is empty"),
            Problem::Copy => format!("{file} is a copy of the input, not the result asked for"),
            Problem::NotProse => format!(
                "{file} holds JSON or a tool call written out as text, not the text asked for"
            ),
            Problem::Stub => {
                format!("{file} is a stub: headings or a few words, not the text asked for")
            }
            Problem::Claim => {
                format!("{file} was not written: the model only said it had written it")
            }
            Problem::TaskTalk => {
                format!("{file} talks about the task instead of giving the result")
            }
            Problem::Invalid(why) => format!("{file} is not valid: {why}"),
            Problem::Loop => format!(
                "{file} repeats the same passages over and over (the model looped), not a usable result"
            ),
            Problem::Echo => {
                format!("{file} repeats the model's instructions instead of giving the result")
            }
            Problem::WrongLanguage(lang) => format!("{file} is not written in {lang}"),
            Problem::Incomplete => format!(
                "{file} is far shorter than the input it should render in full (parts were left out)"
            ),
            Problem::Stopped => format!("{file} was not judged: the run is stopping"),
        }
    }
}

/// The span (in characters, white space ignored) an answer must share with its instructions,
/// and not with its input, to count as an echo of them: longer than a phrase a result may
/// take from them as a heading (`changes (number, original, correction, reason)`, 42), short
/// enough to catch zhi's own language line handed back (`The document is in English: write
/// the result in English.`, 48).
const ECHO_SPAN: usize = 45;

/// Whether `answer` hands back a passage of `instructions` ([`ECHO_SPAN`] characters or more,
/// white space ignored) that the input `source` does not hold: a small model that repeats its
/// prompt. Quoting the document is fine; quoting the prompt is not a result.
///
/// Linear in the answer: the instructions' passages are a set, and so are the input's, built
/// on the first passage the answer shares with the instructions (never a search of the input
/// per passage). `stop` is asked between passages; a stopped check finds nothing.
pub(crate) fn is_echo(
    answer: &str,
    instructions: &str,
    source: Option<&str>,
    stop: &dyn Fn() -> bool,
) -> bool {
    let work = Work::new(stop);
    let prompt: Vec<char> = squash(instructions).chars().collect();
    let out: Vec<char> = squash(answer).chars().collect();
    let src: Vec<char> = source.map(squash).unwrap_or_default().chars().collect();
    // A short answer that is nothing but a piece of the instructions ("response.md (exactly
    // this name)").
    if (8..ECHO_SPAN).contains(&out.len()) {
        let whole: String = out.iter().collect();
        let src: String = src.iter().collect();
        return squash(instructions).contains(&whole) && !src.contains(&whole);
    }
    if prompt.len() < ECHO_SPAN || out.len() < ECHO_SPAN {
        return false;
    }
    let windows: HashSet<&[char]> = prompt.windows(ECHO_SPAN).collect();
    // A passage is in the input when it is one of the input's passages of its length.
    let quoted: OnceCell<HashSet<&[char]>> = OnceCell::new();
    out.windows(ECHO_SPAN).any(|w| {
        work.charge(1);
        !work.over()
            && windows.contains(w)
            && !quoted
                .get_or_init(|| src.windows(ECHO_SPAN).collect())
                .contains(w)
    })
}

/// The script a language is written in, for the languages zhi can tell by script alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Script {
    /// Chinese (and Japanese, whose texts are full of Han characters).
    Han,
    /// English and the other Latin-script languages.
    Latin,
}

/// The script of a language named as a user would (`chinese`, `中文`, `zh-TW`, `en`,
/// `français`); `None` for a language zhi does not judge (Korean, Russian, Arabic …).
pub(crate) fn script_of(language: &str) -> Option<Script> {
    let l = language.trim().to_lowercase();
    let base = l.split(['-', '_', ' ']).next().unwrap_or("");
    // Chinese as `names_chinese` reads it, and the other languages written in Han.
    const HAN: &[&str] = &["cantonese", "traditional", "ja", "jp", "japanese"];
    const LATIN: &[&str] = &[
        "en",
        "eng",
        "english",
        "fr",
        "french",
        "français",
        "francais",
        "de",
        "german",
        "deutsch",
        "es",
        "spanish",
        "español",
        "espanol",
        "it",
        "italian",
        "italiano",
        "pt",
        "portuguese",
        "português",
        "nl",
        "dutch",
        "nederlands",
        "id",
        "indonesian",
        "ms",
        "malay",
        "vi",
        "vietnamese",
        "pl",
        "polish",
        "sv",
        "swedish",
        "da",
        "danish",
        "no",
        "norwegian",
        "fi",
        "finnish",
        "tr",
        "turkish",
        "cs",
        "czech",
        "ro",
        "romanian",
    ];
    if crate::skills::names_chinese(&l)
        || HAN.contains(&base)
        || l.contains("繁體")
        || l.contains("繁体")
        || l.contains("日本語")
        || l.contains("日语")
    {
        Some(Script::Han)
    } else if LATIN.contains(&base)
        || ["英文", "英语", "英語", "法语", "德语", "西班牙语"]
            .iter()
            .any(|n| l.contains(n))
    {
        Some(Script::Latin)
    } else {
        None
    }
}

/// The share of `text`'s estimated tokens that are CJK characters.
pub fn cjk_share(text: &str) -> f64 {
    let (mut cjk, mut other) = (0u64, 0u64);
    for c in text.chars().filter(|c| c.is_alphanumeric()) {
        if crate::llm::limit::is_cjk(c) {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    let total = cjk as f64 + other as f64 / 4.0;
    if total == 0.0 {
        0.0
    } else {
        cjk as f64 / total
    }
}

/// Whether `answer` is plainly not in `language`: Han-script output with under 65% of its
/// estimated tokens CJK or with English sentences in it, or
/// Latin-script output with over 10%. Short answers (under 20
/// estimated tokens) and languages zhi cannot tell by script are not judged.
pub(crate) fn is_wrong_language(answer: &str, language: &str) -> bool {
    if crate::chunk::tokens(answer) < 20 {
        return false;
    }
    match script_of(language) {
        Some(Script::Han) => cjk_share(answer) < 0.65 || holds_english(answer),
        Some(Script::Latin) => cjk_share(answer) > 0.1,
        None => false,
    }
}

/// Whether a text meant to be Chinese or Japanese has English sentences in it: names, terms
/// and headers stay in Latin letters in such a text, but lowercase English words ("wanted",
/// "meeting", "soon") do not, beyond one for every twenty CJK characters (a small model's
/// half-translated sentences).
fn holds_english(text: &str) -> bool {
    let english = text
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| w.len() >= 3 && w.chars().all(|c| c.is_ascii_lowercase()))
        .count();
    let cjk = text
        .chars()
        .filter(|c| crate::llm::limit::is_cjk(*c))
        .count();
    english >= 6 && english * 20 >= cjk
}

/// Inputs under this many estimated tokens are not judged for completeness.
const WHOLE_MIN_TOKENS: u32 = 60;

/// An answer that renders its input whole (map skills: a translation, a proofread or
/// reformatted text) must keep at least this share of the input's estimated tokens. Estimated
/// tokens count a CJK character as one and four other characters as one, so a faithful
/// English↔Chinese translation keeps 0.7–1.4 of them; under half means parts were left out.
const WHOLE_MIN_SHARE: f64 = 0.5;

/// Whether `answer`, meant to render `source` whole as `file`, leaves much of it out. Only
/// prose files are judged (a table or JSON drawn from prose may rightly be short).
pub(crate) fn is_incomplete(answer: &str, file: &str, source: &str) -> bool {
    if !matches!(
        crate::skills::extension(file).as_str(),
        "md" | "markdown" | "txt" | "text"
    ) {
        return false;
    }
    let src = crate::chunk::tokens(source);
    src >= WHOLE_MIN_TOKENS
        && f64::from(crate::chunk::tokens(answer)) < WHOLE_MIN_SHARE * f64::from(src)
}

/// The span (in characters, white space ignored) that a passage must share with an earlier
/// one to count as repeated.
const LOOP_SPAN: usize = 20;

/// Whether `output` goes round in circles: at least half of it repeats passages of itself,
/// and at least 30 points more than `source` repeats itself (a translation of a repetitive
/// document may repeat as much as the document does). Real prose, Chinese or English, stays
/// well under that: a few repeated names and figures, not whole paragraphs. `stop` is asked
/// between passages; a stopped check finds nothing.
pub(crate) fn is_loop(output: &str, source: Option<&str>, stop: &dyn Fn() -> bool) -> bool {
    let work = Work::new(stop);
    let share = repeated_share(output, &work);
    let looped = share >= 0.5 && share >= source.map_or(0.0, |s| repeated_share(s, &work)) + 0.3;
    looped && !work.over()
}

/// The share of `text`'s characters (white space ignored) inside a [`LOOP_SPAN`]-character
/// passage that already occurred earlier in the text. Texts under 400 characters count as 0;
/// what is read after the work ran out counts as not repeated.
pub(crate) fn repeated_share(text: &str, work: &Work) -> f64 {
    let chars: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    if chars.len() < 400 {
        return 0.0;
    }
    let mut seen = HashSet::with_capacity(chars.len());
    // Covered characters, as a difference array of +1 at a repeated window's start and -1
    // past its end.
    let mut marks = vec![0i32; chars.len() + 1];
    for (i, window) in chars.windows(LOOP_SPAN).enumerate() {
        work.charge(1);
        if work.over() {
            break;
        }
        if !seen.insert(window) {
            marks[i] += 1;
            marks[i + LOOP_SPAN] -= 1;
        }
    }
    let mut depth = 0;
    let mut covered = 0usize;
    for m in &marks[..chars.len()] {
        depth += m;
        if depth > 0 {
            covered += 1;
        }
    }
    covered as f64 / chars.len() as f64
}

/// Whether `output` is `source` handed back: the same words, or all of them with a little
/// added around (a title, a line of preface). White space is ignored.
pub(crate) fn is_copy(output: &str, source: &str) -> bool {
    let out = squash(output);
    let src = squash(source);
    if out.is_empty() || src.is_empty() {
        return false;
    }
    if out == src {
        return true;
    }
    out.len() <= src.len() + src.len() / 5 && holds_whole(&out, &src)
}

/// Whether `output` holds most of `source` word for word: at least 60% of the source's
/// [`LOOP_SPAN`]-character passages ([`CJK_SPAN`] for a mostly CJK source; white space
/// ignored; sources of 40 characters or more).
/// For a skill that condenses (a summary, notes, an analysis) that is the input copied out with
/// headings and points added around it — a copy, however much is added. A real summary of a
/// document shares a few names and figures with it, not most of its passages. `stop` is asked
/// between passages; a stopped check finds nothing.
pub fn copies_most(output: &str, source: &str, stop: &dyn Fn() -> bool) -> bool {
    let work = Work::new(stop);
    let src: Vec<char> = squash(source).chars().collect();
    // Forty characters: a three-line Chinese note is that short, and handed back with its
    // numbers dropped it is still the note.
    if src.len() < 40 {
        return false;
    }
    // A CJK character carries about what three Latin letters do: passages of Chinese are
    // compared at 8 characters, as much as 20 of English.
    let span = if cjk_share(source) > 0.5 {
        CJK_SPAN
    } else {
        LOOP_SPAN
    };
    if src.len() < span {
        return false;
    }
    // The source's passages with how often each stands in it, taken out as the answer is
    // read: what is held in memory is the source's, however long the answer.
    let mut passages: HashMap<&[char], usize> = HashMap::new();
    for w in src.windows(span) {
        *passages.entry(w).or_default() += 1;
    }
    let out: Vec<char> = squash(output).chars().collect();
    let windows = src.len() - span + 1;
    let mut found = 0;
    for w in out.windows(span) {
        work.charge(1);
        if passages.is_empty() || work.over() {
            break;
        }
        if let Some(n) = passages.remove(w) {
            found += n;
        }
    }
    !work.over() && found * 5 >= windows * 3
}

/// The passage length [`copies_most`] compares in a mostly Chinese or Japanese source.
const CJK_SPAN: usize = 8;

fn holds_whole(out: &str, src: &str) -> bool {
    src.chars().count() >= 100 && out.contains(src)
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// An answer that is a tool call written out as text (`{"name": "file_read", "arguments":
/// …}`), which a small model sends as content when the server did not parse it as a call.
pub(crate) fn looks_like_tool_call(answer: &str) -> bool {
    let squashed = squash(answer);
    squashed.contains("\"arguments\":")
        && crate::skills::BUILTIN_TOOLS
            .iter()
            .chain(["file_read", "file_write"].iter())
            .any(|t| squashed.contains(&format!("\"name\":\"{t}\"")))
        && squashed.chars().count() < 2000
}

/// Phrases of a model saying it did the work ("I have written the notes.", "The summary has
/// been saved."): in a one- or two-line answer they are the whole answer, a claim.
const DONE_PHRASES: &[&str] = &[
    "i have written",
    "i've written",
    "i wrote",
    "i have saved",
    "i've saved",
    "i saved",
    "i have created",
    "i've created",
    "i have completed",
    "i've completed",
    "has been written",
    "has been saved",
    "has been created",
    "have been written",
    "have been saved",
    "have been created",
    "task is complete",
    "task completed",
    "已完成",
    "已经完成",
    "已保存",
    "已写好",
];

/// A short answer that only reports having written a file ("I wrote summary.md: …",
/// "已写入 notes.md", "I have written the notes.", "Done.") is a claim, not content.
pub(crate) fn looks_like_claim(answer: &str) -> bool {
    let a = answer.trim();
    let (chars, lines) = (
        a.chars().count(),
        a.lines().filter(|l| !l.trim().is_empty()).count(),
    );
    if chars > 400 || lines > 3 {
        return false;
    }
    let lower = a.to_lowercase();
    let short = chars <= 160 && lines <= 2;
    let bare = lower.trim_end_matches(['.', '!', '。', '！']);
    if short
        && (matches!(bare, "done" | "ok" | "完成" | "好了")
            || DONE_PHRASES.iter().any(|p| lower.contains(p)))
    {
        return true;
    }
    let names_file = lower
        .split(|c: char| c.is_whitespace() || "`'\"*:,()（）：，".contains(c))
        .any(|w| {
            let w = w.trim_end_matches(['.', '。', ';', '!']);
            w.rsplit_once('.').is_some_and(|(stem, ext)| {
                !stem.is_empty()
                    && matches!(
                        ext,
                        "md" | "txt" | "csv" | "json" | "xlsx" | "docx" | "html" | "markdown"
                    )
            })
        });
    let verbs = [
        "wrote",
        "written",
        "saved",
        "created",
        "file_write",
        "写入",
        "已写",
        "保存",
        "生成了",
    ];
    names_file && verbs.iter().any(|v| lower.contains(v)) || lower.contains("file_write")
}

/// How prompt-talk opens in English: who or what the task is, then what it does
/// (`this task` + `involves`), or an opener that is about the asking (`you asked me`).
const TASK_SUBJECTS: &[&str] = &[
    "this task",
    "the task",
    "your task",
    "my task",
    "the request",
    "this request",
    "your request",
    "the instruction",
    "the instructions",
    "the assignment",
    "this assignment",
];
const TASK_VERBS: &[&str] = &[
    "is", "was", "involves", "involved", "requires", "asks", "calls", "consists", "here", "at",
    "given", "requests", "wants",
];
const TASK_OPENERS: &[&str] = &[
    "in this task",
    "for this task",
    "you asked me",
    "you have asked me",
    "you've asked me",
    "you want me",
    "i was asked",
    "i have been asked",
    "i've been asked",
    "i am asked",
    "i'm asked",
    "as an ai",
    "i will summarize",
    "i will summarise",
    "i'll summarize",
    "i'll summarise",
    "let me summarize",
    "let me summarise",
    "i will translate",
    "i'll translate",
    "let me translate",
    "summarizing the given",
    "summarising the given",
    "to summarize the given",
    "to summarise the given",
];
/// The given text, named as a thing to work on, and what is done to it.
const GIVEN_TEXT: &[&str] = &[
    "the given text",
    "the provided text",
    "the text provided",
    "the text given",
    "the input text",
    "the given document",
    "the provided document",
];
const ZH_OPENERS: &[&str] = &[
    "这个任务",
    "这项任务",
    "本任务",
    "该任务",
    "此任务",
    "任务是",
    "任务要求",
    "你要求我",
    "您要求我",
    "你让我",
    "您让我",
    "根据您的要求",
    "根据你的要求",
    "根据要求",
    "按照您的要求",
    "按照你的要求",
    "我将为您",
    "我将为你",
    "我会为您",
    "我来为您",
    "我来为你",
];

/// The words the opening of `text` talks about its task with, if it does: its first two lines
/// that are not headings, each read to its first full stop, colon or question mark.
fn task_talk(text: &str) -> Option<String> {
    let text = strip_fence(text);
    let lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.trim_start_matches(['*', '_', '>', '-', ' ']))
        .take(2);
    for line in lines {
        let lower = line.to_lowercase();
        let first = lower
            .split(['.', '。', ':', '：', '?', '？', '!', '！'])
            .next()
            .unwrap_or("");
        if let Some(talk) = talks(first) {
            return Some(talk);
        }
    }
    None
}

/// The prompt-talk `sentence` (lower case) opens with.
fn talks(sentence: &str) -> Option<String> {
    let s = sentence.trim_start_matches([' ', ',', '，']);
    for opener in TASK_OPENERS.iter().chain(ZH_OPENERS) {
        if s.starts_with(opener) {
            return Some((*opener).to_string());
        }
    }
    for subject in TASK_SUBJECTS {
        let Some(rest) = s.strip_prefix(subject) else {
            continue;
        };
        let next = rest
            .trim_start_matches([' ', ','])
            .split(' ')
            .next()
            .unwrap_or("");
        if rest.starts_with([' ', ',']) && TASK_VERBS.contains(&next) {
            return Some(format!("{subject} {next}"));
        }
    }
    let about_work = [
        "summar",
        "translat",
        "task",
        "instruction",
        "asked",
        "request",
    ];
    let given = GIVEN_TEXT.iter().find(|g| s.starts_with(**g))?;
    about_work
        .iter()
        .any(|w| s.contains(w))
        .then(|| (*given).to_string())
}

/// An answer that opens with talk about its task instead of its result: "This task involves
/// summarizing the given text from an English perspective… Summary in English: …", "The
/// task is to…", "You asked me to…", "根据您的要求…". A small model talks its prompt back
/// and the result, if any, follows; such an answer is no result. A source that opens with the
/// same words (a document about a task) may be condensed so, and is not judged.
pub(crate) fn talks_about_task(answer: &str, source: Option<&str>) -> bool {
    let Some(talk) = task_talk(answer) else {
        return false;
    };
    source.is_none_or(|s| !s.to_lowercase().contains(&talk))
}

/// A model's answer with one wrapping code fence removed (```markdown … ```), as the file's
/// content.
pub(crate) fn strip_fence(answer: &str) -> String {
    let t = answer.trim();
    if let Some(rest) = t.strip_prefix("```")
        && let Some(body) = rest.strip_suffix("```")
        && let Some((info, inner)) = body.split_once('\n')
        && !info.contains("```")
        && !inner.contains("\n```")
        && info
            .trim()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_+.".contains(c))
    {
        return format!("{}\n", inner.trim_end());
    }
    format!("{t}\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn prose_is_not_a_loop() {
        let prose = "The backup job runs every night at two and keeps seven days of copies. \
            Users sign in with a password and a one-time code from their phone. Logs are \
            rotated daily; an alert fires when a disk is eighty percent full. The release \
            moved to the first of December because the export feature was too slow for the \
            largest customers, and the team agreed on a plan to fix it within the week. \
            Li Na writes the release notes; Wang Qiang owns the export fix and reports on \
            Thursday at three in the afternoon, when the next meeting takes place.";
        assert!(
            super::repeated_share(prose, &Work::new(&|| false)) < 0.1,
            "{}",
            super::repeated_share(prose, &Work::new(&|| false))
        );
        assert!(!super::is_loop(prose, None, &|| false));
        let looping = format!("{prose}\n\n{prose}\n\n{prose}");
        assert!(super::is_loop(&looping, Some(prose), &|| false));
    }

    use super::*;

    #[test]
    fn copies_are_caught_and_summaries_are_not() {
        let doc = "Quarterly report. Revenue rose 12% to 4.2 million, driven by exports to Asia. \
                   Costs were flat. The board approved a dividend of 0.30 per share, payable in \
                   May, and a new plant in Suzhou opening next year with 200 jobs.";
        assert!(is_copy(doc, doc));
        assert!(is_copy(&format!("# Report\n\n{doc}"), doc));
        assert!(is_copy(&doc.replace(". ", ".\n\n"), doc));
        assert!(!is_copy(
            "Revenue rose 12% on exports; a dividend of 0.30 was approved.",
            doc
        ));
        assert!(!is_copy("", doc));
    }

    #[test]
    fn claims_are_not_content() {
        assert!(looks_like_claim(
            "I wrote summary-2.md: Q3 revenue rose 12%, driven by exports."
        ));
        assert!(looks_like_claim("Wrote `translation.md` (English)."));
        assert!(looks_like_claim("已写入 notes.md。"));
        assert!(!looks_like_claim(
            "# Q3\n\nRevenue rose 12%, driven by exports."
        ));
        assert!(!looks_like_claim(
            "The report was written in May about revenue."
        ));
        // No file named, but nothing else said either.
        assert!(looks_like_claim("I have written the notes."));
        assert!(looks_like_claim("The summary has been saved."));
        assert!(looks_like_claim("Done."));
        assert!(looks_like_claim("已完成。"));
        // Content that happens to use such words is content.
        assert!(!looks_like_claim(
            "# Notes\n\nThe board said the audit has been completed; budgets have been saved for Q4.\n\n- Sales up in the north\n- Sales down in the south\n- I wrote this from the minutes of 3 May"
        ));
        assert!(!looks_like_claim(
            "Sales rose in the north and fell in the south."
        ));
    }

    /// Prompt-talk is no result, in either language; a summary that only begins like one, or
    /// that says what its source says of a task, is.
    #[test]
    fn talk_about_the_task_is_not_a_result() {
        for talk in [
            "This task involves summarizing the given text from an English perspective. Summary in English: the plant opens in May.",
            "# Summary\n\nThe task is to summarise the note. The plant opens in May.",
            "You asked me to summarize this note: the plant opens in May.",
            "The given text is to be summarized in English: the plant opens in May.",
            "根据您的要求，以下是摘要：工厂五月开业。",
            "这个任务是总结给定的文本。工厂五月开业。",
        ] {
            assert!(
                talks_about_task(talk, Some("The plant opens in May.")),
                "{talk}"
            );
        }
        for summary in [
            "The plant opens in May.",
            "The task force approved the budget on Monday.",
            "The given text describes the opening of a plant in May.",
            "任务组周一批准了预算。",
        ] {
            assert!(!talks_about_task(summary, Some("x")), "{summary}");
        }
        // The source speaks of its task: its summary may too.
        assert!(!talks_about_task(
            "The task is to migrate the database by Friday.",
            Some("Plan. The task is to migrate the database by Friday; Ana leads it.")
        ));
    }

    #[test]
    fn fences_are_removed_once() {
        assert_eq!(strip_fence("```markdown\n# T\n\nx\n```"), "# T\n\nx\n");
        assert_eq!(strip_fence("```\na\n```\n"), "a\n");
        assert_eq!(strip_fence("plain"), "plain\n");
        let two = "```\na\n```\ntext\n```\nb\n```";
        assert_eq!(strip_fence(two), format!("{two}\n"));
    }

    #[test]
    fn answers_are_checked_for_their_format() {
        use super::super::accept::Acceptance;
        let check_answer = |text: &str, file: &str, source: Option<&str>| {
            Acceptance::composed(file, source.map(std::sync::Arc::from), None)
                .answer(text, &|| false)
        };
        assert_eq!(check_answer(" \n", "a.md", None), Some(Problem::Empty));
        assert!(matches!(
            check_answer("{x", "a.json", None),
            Some(Problem::Invalid(_))
        ));
        assert_eq!(check_answer("{\"a\": 1}", "a.json", None), None);
        let point =
            "- **新版本定于12月1日发布**：李娜负责发布说明，确保所有相关人员了解最新产品的功能。\n";
        let looping = format!("# 会议纪要\n\n{}", point.repeat(12));
        assert_eq!(check_answer(&looping, "a.md", None), Some(Problem::Loop));
        // As repetitive as its input: a faithful rendering, not a loop.
        let source = point.replace("李娜", "Li Na").repeat(12);
        assert!(!is_loop(&looping, Some(&source), &|| false));
    }

    #[test]
    fn languages_are_told_by_their_script() {
        use super::{Script, is_wrong_language, script_of};
        for zh in [
            "chinese",
            "中文",
            "zh",
            "zh-TW",
            "简体中文",
            "繁體中文",
            "ja",
        ] {
            assert_eq!(script_of(zh), Some(Script::Han), "{zh}");
        }
        for en in ["english", "en", "EN-us", "英文", "français", "de"] {
            assert_eq!(script_of(en), Some(Script::Latin), "{en}");
        }
        assert_eq!(script_of("ko"), None);
        assert_eq!(script_of("russian"), None);
        let english = "The backup job runs every night at two and keeps seven days of copies \
                       on the second disk, and users sign in with a one-time code.";
        let chinese = "备份任务每晚两点运行，在第二块磁盘上保留七天的副本；用户使用 Authenticator 应用的一次性代码登录。";
        assert!(is_wrong_language(english, "chinese"));
        assert!(!is_wrong_language(chinese, "chinese"));
        assert!(is_wrong_language(chinese, "english"));
        // Chinese and English mixed in one text is not a Chinese translation.
        let mixed = "尊敬的Tom Becker，我希望这消息找到你 well。我 wanted to bring一些更新 on我们的产品 \
                     sync meeting today。感谢您对这 matter的 attention。我期待听到从你 soon。";
        assert!(is_wrong_language(mixed, "chinese"));
        assert!(!is_wrong_language(english, "english"));
        // Languages zhi cannot tell, and answers too short to judge, pass.
        assert!(!is_wrong_language(english, "ko"));
        assert!(!is_wrong_language("OK", "chinese"));
    }

    #[test]
    fn a_rendering_must_keep_most_of_its_input() {
        use super::is_incomplete;
        let source = "The backup job runs every night at two and keeps seven days of copies. \
            Users sign in with a password and a one-time code from their phone. Logs are \
            rotated daily; an alert fires when a disk is eighty percent full. Security \
            updates are installed on Tuesdays; other updates wait for a person to approve them.";
        let whole = "备份任务每晚两点运行，保留七天的副本。用户使用密码和手机上的一次性代码登录。\
            日志每天轮换；磁盘使用达到百分之八十时发出警报。安全更新在每周二安装；其他更新等待人工批准。";
        let part = "备份任务每晚两点运行，保留七天的副本。";
        assert!(!is_incomplete(whole, "translation.md", source));
        assert!(is_incomplete(part, "translation.md", source));
        // A table or JSON drawn from prose may rightly be short; short inputs are not judged.
        assert!(!is_incomplete(part, "table.csv", source));
        assert!(!is_incomplete("", "a.md", "A short note."));
    }

    #[test]
    fn an_echo_of_the_instructions_is_told_from_a_quote_of_the_document() {
        use super::is_echo;
        let prompt = "Summarise the document. Your answer is saved as the result file as it is: \
                      nothing before or after it, no remarks about what you did, no tool calls.";
        let echo = "nothing before or after it, no remarks about what you did, no tool calls.";
        assert!(is_echo(echo, prompt, Some("Q3 revenue rose 12%."), &|| {
            false
        }));
        // The same words are fine when the document holds them (a document about prompts).
        let doc = format!("Our prompt ends: {echo}");
        assert!(!is_echo(echo, prompt, Some(&doc), &|| false));
        assert!(!is_echo(
            "# Summary\n\nRevenue rose 12% in Q3.",
            prompt,
            None,
            &|| false
        ));
        // A proofread text whose table is headed with the columns its instructions name.
        let asked = "Give a table of the changes (number, original, correction, reason), one row per change.";
        let proofread = "# 周会纪要\n\n新版本定于12月1日发布，由李娜负责发布说明。\n\n## 表格： changes (number, original, correction, reason)\n\n| 1 | 李娜负责 | 由李娜负责 | 语序 |";
        assert!(!is_echo(
            proofread,
            asked,
            Some("新版本定于12月1日发布，李娜负责发布说明。"),
            &|| false
        ));
        // zhi's language line handed back after a comparison is an echo.
        let told = "Compare the files.\n\nThe document is in English: write the result in English.";
        let compared = "- **file2**: Documents are in English.\n\nThe document is in English: write the result in English.";
        assert!(is_echo(compared, told, Some("Release 2.4"), &|| false));
    }

    #[test]
    fn a_summary_that_copies_most_of_its_input_is_a_copy() {
        use super::copies_most;
        let doc = "Release 2.4 adds offline mode and fixes two crashes. Offline mode keeps the \
                   last 30 days of documents on the device. Sync is 40 percent faster on slow \
                   networks. Support for version 1.x ends on 31 March.";
        let padded = format!(
            "# Release 2.4\n\n{}\n\n## Key points\n\n- Offline mode.\n- Faster sync.\n",
            doc.replace("31 March", "March 31, 2023")
        );
        assert!(copies_most(&padded, doc, &|| false));
        let summary = "# Release 2.4\n\nOffline mode for 30 days of documents, two crash fixes, \
                       sync 40% faster; 1.x support ends in March.";
        assert!(!copies_most(summary, doc, &|| false));
        // A three-line Chinese note handed back without its numbering is the note.
        let note = "产品周会纪要（11月18日）\n参会：张伟、李娜、王强\n1. 新版本定于12月1日发布，李娜负责发布说明。\n\
                    2. 客户反馈导出功能太慢，王强本周内给出优化方案。\n3. 下次会议改到周四下午三点。";
        let handed_back = "产品周会纪要（11月18日）\n\n参会：张伟、李娜、王强\n\n\
                           新版本定于12月1日发布，李娜负责发布说明。\n\n客户反馈导出功能太慢，王强本周内给出优化方案。\n\n\
                           下次会议改到周四下午三点。";
        assert!(copies_most(handed_back, note, &|| false));
        assert!(!copies_most(
            "新版本12月1日发布；导出太慢，王强本周给出方案；下次会议周四。",
            note,
            &|| false
        ));
    }
}
