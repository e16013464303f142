//! A document's job once its text is read: one request (with its ladder) when it fits, else
//! its pieces; the text itself, read from the very file that was planned; and the checks of a
//! result composed of several steps. Shared by a plain job ([`super::job`]) and a workflow's
//! skill step ([`super::workflow`]).

use super::ask::JobCtx;
use super::context::RunContext;
use super::ladder::{Stop, ask};
use super::message::{document_message, extraction_message, task_line};
use crate::agent::runner::AgentStats;
use crate::error::{ErrorKind, JobError};
use crate::judge::declared::Expected;
use crate::judge::junk::Problem;
use crate::plan::Job;
use crate::plan::cache::{self, FileStamp, JobCache};
use std::path::Path;
use std::sync::Arc;

/// A document's job once its text is read: one request (or the agent loop) when it fits,
/// else its pieces; then its declared outputs are checked. A workflow's skill step runs here
/// too, on the text its arguments name.
pub(super) async fn run_text(
    ctx: &JobCtx<'_>,
    cache: &JobCache,
    text: &str,
    staging: &Path,
    stats: &mut AgentStats,
    chunks: &mut super::chunked::ChunkState,
) -> Result<(), Stop> {
    let (run, job, skill, transcript) = (ctx.run, ctx.job, ctx.skill, &ctx.transcript);
    let direct = skill.direct_output(&job.args).is_some();
    // The other inputs (a `file2` to compare with) are given with the document, and an answer
    // is judged against all of them: a figure of the second file is not invented.
    let extras = if skill.schema().is_some() {
        Vec::new()
    } else {
        extra_texts(run, job).await
    };
    let source: Arc<str> = if extras.is_empty() {
        Arc::from(text)
    } else {
        let mut all = text.to_string();
        for (_, extra) in &extras {
            all.push_str("\n\n");
            all.push_str(extra);
        }
        Arc::from(all)
    };
    let model = run.model(job);
    let mode = skill.chunking;
    let request = run.config.request_budget(&model);
    let budget = crate::chunk::piece_budget(request, skill.piece_sizing(), direct);
    let estimate = crate::chunk::tokens(text);
    if estimate > budget {
        if mode == crate::skills::Chunking::None {
            let limited =
                if request.context_window < run.config.models.budget(&model).context_window {
                    format!(" within {} a minute", run.config.tpm_label())
                } else {
                    String::new()
                };
            return Err(Stop::Failed(JobError::new(
                ErrorKind::TooLarge,
                msg!(
                    "{} is about {estimate} tokens; one request to {model} takes about {budget} tokens of document{limited}, and skill `{}` does not split documents (chunking: none)",
                    job.input,
                    skill.name
                ),
            )));
        }
        split(ctx, cache, text, budget, staging, stats, chunks).await?;
        composed(ctx, staging, Some(&source))?;
        return Ok(ground(ctx, text, staging, stats)?);
    }
    let message = first_message(job, skill, text, &extras, direct);
    match ask(ctx, staging, "", message, Some(source.clone()), true, stats).await {
        // Judged on each rung as it answered: what is kept is the job's result.
        Ok(_) => {
            drop_empty_files(run, staging);
            return Ok(());
        }
        // The model's real window was smaller than its budget says: split after all, at
        // half the document's size, when the skill allows it.
        Err(Stop::TooLong(_)) if mode != crate::skills::Chunking::None => {
            tracing::info!(job = %job.input, "{}", msg!("context too long for the model; splitting the document"));
            transcript.note("the server said the context was exceeded; splitting the document");
            let _ = ctx.run.layout.remove_tree(staging);
            let smaller = (estimate / 2).max(MIN_PIECE_TOKENS);
            split(ctx, cache, text, smaller, staging, stats, chunks).await?;
        }
        // A rendering whose answer ran past the length limit, its fresh try too (a proofread
        // text with its table of changes is longer than the text): in halves, as a piece that
        // does the same is (docs/documents.md#splitting).
        Err(Stop::Failed(e))
            if e.kind == ErrorKind::Truncated
                && super::chunked::halves_when_cut(skill, job)
                && crate::chunk::split(text, estimate.div_ceil(2), false).len() >= 2 =>
        {
            transcript.note(
                "the answer ran past the length limit; asking again with the document in halves",
            );
            let _ = ctx.run.layout.remove_tree(staging);
            split(
                ctx,
                cache,
                text,
                estimate.div_ceil(2),
                staging,
                stats,
                chunks,
            )
            .await?;
        }
        Err(stop) => return Err(stop),
    }
    composed(ctx, staging, Some(&source))?;
    Ok(ground(ctx, text, staging, stats)?)
}

/// The first message of a job whose document fits one request: the document (and its other
/// inputs), then the task for a direct request; for an extraction, the document and the task.
fn first_message(
    job: &Job,
    skill: &crate::skills::Skill,
    text: &str,
    extras: &[(String, String)],
    direct: bool,
) -> String {
    if skill.schema().is_some() {
        return extraction_message(&job.input, text);
    }
    if direct
        && extras.is_empty()
        && let Some(instruction) = skill.instruction_for(&job.args, text)
    {
        return super::message::plain_message(&instruction, text, None);
    }
    let mut m = document_message(job, text, extras, direct);
    if direct {
        m.push_str(&task_line(job, skill, "the document above"));
    }
    m
}

/// A long document's extraction, its pieces' objects merged into one, looked for value by
/// value in the whole text (docs/extract.md#grounding); with `grounding: required`, a
/// required field found nowhere fails the job. (A document that fits one request is grounded
/// by the judge on each rung instead.)
fn ground(
    ctx: &JobCtx<'_>,
    text: &str,
    staging: &Path,
    stats: &mut AgentStats,
) -> Result<(), JobError> {
    let Some(output) = ctx.skill.output.as_ref().filter(|o| o.schema.is_some()) else {
        return Ok(());
    };
    let Some(file) = ctx.skill.direct_output(&ctx.job.args) else {
        return Ok(());
    };
    let object: serde_json::Value = std::fs::read(staging.join(&file))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let hay = crate::judge::grounding::Haystack::new(text);
    let found =
        crate::judge::grounding::ground_in(&hay, &object, &|| ctx.run.cancel.is_cancelled());
    if !found.ungrounded.is_empty() {
        let list = found.ungrounded.join(", ");
        ctx.transcript
            .note(&format!("values found nowhere in the document: {list}"));
    }
    if let Some(first) = found.unchecked.first() {
        // Told to stop: the job is redone by the next run, never kept half looked at.
        if ctx.run.cancel.is_cancelled() {
            return Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled")));
        }
        ctx.transcript.note(&format!(
            "{} values from {first} on were not looked for in the document (grounding's bound for one document)",
            found.unchecked.len()
        ));
    }
    let Some(schema) = super::ask::job_schema(ctx)? else {
        return Ok(());
    };
    let missing = crate::judge::grounding::required_ungrounded(&found, &schema.fields);
    let fail = output.grounding == crate::skills::GroundingRule::Required && !missing.is_empty();
    stats.decided.extraction = Some(found);
    if fail {
        let (input, list) = (&ctx.job.input, missing.join(", "));
        return Err(JobError::new(
            ErrorKind::InvalidOutput,
            msg!("required values found nowhere in {input} (grounding: required): {list}"),
        ));
    }
    Ok(())
}

/// The document's text, extracted off the async threads, from the very file that was planned
/// and hashed.
pub(super) async fn document_text(
    run: &RunContext,
    job: &Job,
    cache: &JobCache,
    stats: &mut AgentStats,
) -> Result<String, JobError> {
    let before = unchanged_since_planning(job, cache)?;
    let (text, warnings) = read_document(run, &job.path).await?;
    stats.input_warnings.extend(warnings);
    stats.input_tokens = Some(crate::llm::text_tokens(&text));
    if before.is_some() && before != FileStamp::of(&job.path) {
        return Err(changed(job, msg!("it changed while it was being read")));
    }
    if text.trim().is_empty() {
        return Err(JobError::new(
            ErrorKind::ExtractFailed,
            msg!(
                "{} has no text to process (an empty file, or a scan with no OCR text)",
                job.input
            ),
        ));
    }
    Ok(text)
}

/// The smallest piece zhi halves down to when a server keeps saying its context is exceeded.
const MIN_PIECE_TOKENS: u32 = 128;

/// Splits the document into pieces of `size` tokens; while the server answers that a piece
/// exceeds its context, halves the size and starts over (down to [`MIN_PIECE_TOKENS`]).
async fn split(
    ctx: &JobCtx<'_>,
    cache: &JobCache,
    text: &str,
    mut size: u32,
    staging: &Path,
    stats: &mut AgentStats,
    chunks: &mut super::chunked::ChunkState,
) -> Result<(), Stop> {
    loop {
        match super::chunked::run(ctx, cache, text, size, staging, stats, chunks).await {
            Err(Stop::TooLong(_)) if size > MIN_PIECE_TOKENS => {
                size = (size / 2).max(MIN_PIECE_TOKENS);
                ctx.transcript.note(&format!(
                    "a piece still exceeded the server's context; splitting again at {size} tokens"
                ));
                let _ = ctx.run.layout.remove_tree(staging);
            }
            other => return other,
        }
    }
}

/// The input must still be the file that was planned and hashed (so the hash recorded for the
/// job is the hash of what is read): the same file, unchanged, by its stamp. A document swapped
/// mid-run for other content — or for a link to `/etc/passwd` — fails its job instead of being
/// sent. Returns the stamp, to tell after extraction that it was not swapped meanwhile.
fn unchanged_since_planning(job: &Job, cache: &JobCache) -> Result<Option<FileStamp>, JobError> {
    let Some(planned) = cache.input_stamp else {
        // Not hashed at planning (unreadable then): extraction says why.
        return Ok(None);
    };
    match FileStamp::of(&job.path) {
        Some(now) if now == planned => Ok(Some(now)),
        Some(_) => Err(changed(
            job,
            msg!("it is not the file that was planned, or it was modified"),
        )),
        None => Err(changed(job, msg!("it can no longer be read"))),
    }
}

fn changed(job: &Job, why: String) -> JobError {
    JobError::new(
        ErrorKind::InputError,
        msg!(
            "{} changed after the run was planned: {why}; it was not sent (run again to process it as it is now)",
            job.input
        ),
    )
}

/// A document's text and its reading's warnings, extracted off the async threads (a PDF
/// worker or OCR may run).
pub(super) async fn read_document(
    run: &RunContext,
    path: &Path,
) -> Result<(String, Vec<String>), JobError> {
    let reader = run.reader.clone();
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || reader.read_document(&path))
        .await
        .map_err(|e| JobError::new(ErrorKind::ExtractFailed, msg!("extraction crashed: {e}")))?
}

/// The texts of the job's other input files (a `file2` to compare with), given in the first
/// message so that a direct request needs no tool to read them.
async fn extra_texts(run: &RunContext, job: &Job) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (_, display, path) in &job.extra_inputs {
        let text = match read_document(run, path).await {
            Ok((t, _)) => t,
            Err(e) => format!("(this file could not be read: {})", e.message),
        };
        out.push((display.clone(), text));
    }
    out
}

/// Files of nothing in the folder that will be committed are removed: they are never a
/// result.
pub(super) fn drop_empty_files(run: &RunContext, staging: &Path) {
    for rel in cache::files_under(staging).unwrap_or_default() {
        let path = staging.join(&rel);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() == 0) {
            let _ = run.layout.remove_file(&path);
        }
    }
}

/// A result composed of several steps (a long document's pieces and reduce, a workflow's
/// steps): its declared outputs judged once more in the folder that will be committed.
pub(super) fn composed(
    ctx: &JobCtx<'_>,
    staging: &Path,
    source: Option<&Arc<str>>,
) -> Result<(), JobError> {
    drop_empty_files(ctx.run, staging);
    let expected = Expected::of(ctx.skill, &ctx.job.args, source.cloned());
    let written = cache::files_under(staging).unwrap_or_default();
    let problems = expected.problems(staging, &written, &|| ctx.run.cancel.is_cancelled());
    if problems.is_empty() {
        return Ok(());
    }
    if problems.iter().any(|(_, p)| *p == Problem::Stopped) {
        return Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled")));
    }
    let list: Vec<String> = problems.iter().map(|(f, p)| p.describe(f)).collect();
    Err(JobError::new(ErrorKind::MissingOutput, list.join("; ")))
}
