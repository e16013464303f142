//! The user messages of a job's requests: the document (or folder) with its arguments, the
//! language line and the closing task line of a direct request.

use crate::agent::runner;
use crate::plan::Job;
use crate::plan::cache;
use crate::skills::Skill;
use std::path::Path;

/// The first user message: where the document is, the arguments, and its text (and the
/// texts of the job's other input files).
pub(super) fn document_message(
    job: &Job,
    text: &str,
    extras: &[(String, String)],
    direct: bool,
) -> String {
    let mut m = format!("Input document: {}\n", job.input);
    push_args(&mut m, job);
    if !direct {
        m.push_str("Write your files with file_write using relative names (they go to this job's output folder).\n");
    }
    m.push('\n');
    m.push_str(&runner::document_block(&job.input, text));
    for (display, extra) in extras {
        m.push('\n');
        m.push_str(&runner::document_block(display, extra));
    }
    m.push_str(&language_line(job, text));
    m
}

/// The one user message of a direct request whose skill has an `instruction`
/// (docs/skills.md#direct-mode): the instruction, then the text as it is — no frame, no
/// arguments, no closing line. A small model reads a short task followed by the text as one
/// request and does it; rules, a frame and a task line after the text it takes for more text.
/// A piece of a long document is preceded by the end of the piece before it, named as
/// context, so the model knows where the text stands ([`PIECE_CONTEXT_CHARS`] at most).
pub(super) fn plain_message(instruction: &str, text: &str, before: Option<&str>) -> String {
    let context = before
        .map(|b| b.trim())
        .filter(|b| !b.is_empty())
        .map(|b| {
            format!(
                "For context only, the text before it ends: \"{}\"\n\n",
                tail(b)
            )
        })
        .unwrap_or_default();
    format!("{context}{instruction}\n\n{}\n", text.trim_end())
}

/// How much of the piece before a piece is shown as its context.
pub(super) const PIECE_CONTEXT_CHARS: usize = 240;

/// The last paragraph of `text`, cut at a word to [`PIECE_CONTEXT_CHARS`] from its end.
fn tail(text: &str) -> String {
    let last = text
        .rsplit("\n\n")
        .map(str::trim)
        .find(|p| !p.is_empty())
        .unwrap_or("");
    let flat = last.split_whitespace().collect::<Vec<_>>().join(" ");
    let n = flat.chars().count();
    if n <= PIECE_CONTEXT_CHARS {
        return flat;
    }
    let rest: String = flat.chars().skip(n - PIECE_CONTEXT_CHARS).collect();
    match rest.split_once(' ') {
        Some((_, words)) if !words.is_empty() => format!("…{words}"),
        _ => format!("…{rest}"),
    }
}

/// The message of an extraction request: the document (or one part of it); the task and the
/// fields follow once the schema is known ([`crate::agent::structured::task`]).
pub(super) fn extraction_message(label: &str, text: &str) -> String {
    format!(
        "Input document: {label}\n\n{}",
        runner::document_block(label, text)
    )
}

/// The last line of a direct request, after the text: what to answer with. A small model
/// given the text last takes the prompt's tail for its task and echoes it; asked again
/// after the text, it does the task.
pub(super) fn task_line(job: &Job, skill: &Skill, what: &str) -> String {
    let gist = skill
        .output_gist()
        .unwrap_or_else(|| "the result your instructions ask for".to_string());
    let lang = skill
        .output_language(&job.args)
        .map(|l| format!(", in {l}"))
        .unwrap_or_default();
    format!("\nNow answer with {gist}{lang}, for {what}, and nothing else.\n")
}

/// "Write in Chinese." after the document, when its language is plain and no argument names
/// a target language.
pub(super) fn language_line(job: &Job, text: &str) -> String {
    let targeted = ["to", "translate_to", "target", "language"]
        .iter()
        .any(|k| job.args.get(*k).is_some_and(|v| !v.trim().is_empty()));
    match crate::skills::language_of(text) {
        Some(lang) if !targeted => {
            format!("\nThe document is in {lang}: write the result in {lang}.\n")
        }
        _ => String::new(),
    }
}

pub(super) fn folder_message(job: &Job, output_dir: &Path) -> String {
    let mut m = format!("Input folder: {}\n", job.input);
    push_args(&mut m, job);
    m.push_str("Files in it (read them with file_read, list sub-folders with file_list):\n");
    let files = cache::folder_files(&job.path, output_dir);
    for f in files.iter().take(500) {
        let size = std::fs::metadata(job.path.join(f))
            .map(|m| m.len())
            .unwrap_or(0);
        m.push_str(&format!(
            "- {}/{} ({size} bytes)\n",
            job.input.trim_end_matches('/'),
            f.to_string_lossy()
        ));
    }
    if files.len() > 500 {
        m.push_str(&format!("… and {} more\n", files.len() - 500));
    }
    if files.is_empty() {
        m.push_str("(the folder is empty)\n");
    }
    m
}

pub(super) fn push_args(m: &mut String, job: &Job) {
    if !job.args.is_empty() {
        m.push_str("Arguments:\n");
        for (k, v) in &job.args {
            m.push_str(&format!("- {k}: {v}\n"));
        }
    }
}

/// The text of a job's first request as the run builds it — the system prompt, then the user
/// message around `text` (the task line, an extraction's fields) — for `zhi plan`'s estimate
/// (docs/cli.md#zhi-plan). Another input file of the job is left out (its text is not read
/// here), and so are an agent's tool definitions. A workflow's first step is not built: its
/// skill's prompt and the document stand for it.
pub(crate) fn first_request_text(job: &Job, skill: &Skill, text: &str) -> String {
    use crate::agent::structured;
    if let Some(spec) = skill.schema() {
        let schema = match spec {
            crate::skills::SchemaSpec::Inline(v) => Some(v.clone()),
            crate::skills::SchemaSpec::Arg(name) => job
                .arg_path(name)
                .and_then(|p| crate::skills::schema::read_schema_file(&p).ok()),
        }
        .and_then(|v| structured::Schema::new(v).ok());
        // The estimate's task is the one a server without a grammar is sent.
        let task = schema
            .map(|s| structured::task(&s, &serde_json::Value::Null))
            .unwrap_or_default();
        return format!(
            "{}\n{}{task}",
            structured::system_prompt(&skill.system_prompt),
            extraction_message(&job.input, text)
        );
    }
    if skill.direct_output(&job.args).is_some()
        && let Some(instruction) = skill.instruction_for(&job.args, text)
    {
        return plain_message(&instruction, text, None);
    }
    if let Some(file) = skill.direct_output(&job.args) {
        let mut m = document_message(job, text, &[], true);
        m.push_str(&task_line(job, skill, "the document above"));
        return format!("{}\n{m}", runner::direct_system_prompt(skill, &file));
    }
    let files = skill.declared_files(&job.args);
    format!(
        "{}\n{}",
        runner::agent_system_prompt(skill, &files),
        document_message(job, text, &[], false)
    )
}
