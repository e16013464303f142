//! One job, start to end: read the document, stage, run the agent, commit or keep the staging
//! for inspection, and say so in one record.

use super::ask::{JobCtx, Rungs};
use super::audit::Role;
use super::context::RunContext;
use super::ladder::{Stop, ask};
use super::message::folder_message;
use super::text::{composed, document_text, drop_empty_files, run_text};
use crate::agent::runner::AgentStats;
use crate::agent::transcript::Transcript;
use crate::error::{ErrorKind, JobError};
use crate::judge::declared;
use crate::layout::OutputLayout;
use crate::manifest::{JobRecord, OutputFile, Status, Timestamp};
use crate::plan::Job;
use crate::plan::cache::{self, JobCache};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

fn base_record(job: &Job, cache: &JobCache, model: String) -> JobRecord {
    JobRecord {
        input_sha256: cache.input_sha256.clone(),
        input_bytes: cache.input_bytes,
        input_stat: cache.input_stat,
        model,
        output_dir: job.output_rel.to_string_lossy().into_owned(),
        cache_key: cache.cache_key.clone(),
        args: job.args.clone(),
        ..JobRecord::new(job.id.as_str(), &job.skill, &job.input, Status::Failed)
    }
}

/// Which runs' transcript folders are still there, asked once per folder: a cached job's
/// record points at the transcript of the run that made its outputs, while that run's
/// transcripts are kept.
#[derive(Debug, Default)]
pub(super) struct TranscriptFolders(std::collections::HashMap<PathBuf, bool>);

impl TranscriptFolders {
    fn hold(&mut self, output_dir: &Path, transcript: &str) -> bool {
        let path = output_dir.join(transcript);
        let Some(dir) = path.parent() else {
            return false;
        };
        *self
            .0
            .entry(dir.to_path_buf())
            .or_insert_with(|| dir.is_dir())
    }
}

/// A cached job: the earlier record's outputs (with the stats they were found with), no
/// tokens spent now.
pub(super) fn cached_record(
    job: &Job,
    cache: &JobCache,
    layout: &OutputLayout,
    transcripts: &mut TranscriptFolders,
) -> JobRecord {
    let prev = cache.previous.as_ref();
    let now = Timestamp::now();
    let mut outputs = prev.map(|p| p.outputs.clone()).unwrap_or_default();
    if let Some(seen) = &cache.outputs_seen {
        seen.apply(&mut outputs);
    }
    let record = JobRecord {
        status: Status::Cached,
        outputs,
        output_dir_stat: cache.outputs_seen.as_ref().and_then(|s| s.folder),
        // What was found where in the document is as true of the same outputs now.
        extraction: prev.and_then(|p| p.extraction.clone()),
        // What was doubted of the same outputs still is (a rerun asks no model again).
        doubts: prev.map(|p| p.doubts.clone()).unwrap_or_default(),
        // Which model made the outputs, escalated or not: changing the ladder reruns nothing.
        escalated: prev.is_some_and(|p| p.escalated),
        escalated_from: prev.and_then(|p| p.escalated_from.clone()),
        base_url: prev.and_then(|p| p.base_url.clone()),
        // The same content (the key holds its hash): the same count.
        input_tokens: prev.and_then(|p| p.input_tokens),
        // The conversation that made the outputs, in the run that made them: a rerun writes
        // no file per cached job (10,000 of them would cost seconds on a busy disk).
        transcript: prev
            .and_then(|p| p.transcript.clone())
            .filter(|t| transcripts.hold(layout.output_dir(), t)),
        started_at: Some(now),
        finished_at: Some(now),
        ..base_record(
            job,
            cache,
            prev.map(|p| p.model.clone()).unwrap_or_default(),
        )
    };
    JobRecord {
        restates: prev.is_some_and(|p| restates(&record, p)),
        ..record
    }
}

/// Whether a cached job's record says, for deciding its cache, only what `prev` (the record it
/// was found cached with) said: then the cache index keeps pointing at `prev`.
fn restates(record: &JobRecord, prev: &JobRecord) -> bool {
    record.cache_key == prev.cache_key
        && record.input_sha256 == prev.input_sha256
        && record.input_bytes == prev.input_bytes
        && record.input_stat == prev.input_stat
        && record.outputs == prev.outputs
        && record.output_dir_stat == prev.output_dir_stat
        && record.transcript == prev.transcript
        && record.input_tokens == prev.input_tokens
}

/// A job that failed while planning (broken link, missing paired file).
pub(super) fn planned_failure(job: &Job, cache: &JobCache, run: &RunContext) -> JobRecord {
    let now = Timestamp::now();
    JobRecord {
        started_at: Some(now),
        finished_at: Some(now),
        error: job.problem.as_deref().cloned(),
        ..base_record(job, cache, run.model(job))
    }
}

/// A job whose task panicked: a bug in zhi, recorded as the job's failure.
pub(super) fn crashed(job: &Job, cache: &JobCache, run: &RunContext, reason: &str) -> JobRecord {
    let now = Timestamp::now();
    JobRecord {
        started_at: Some(now),
        finished_at: Some(now),
        error: Some(JobError::new(
            ErrorKind::Internal,
            msg!("internal error while processing {}: {reason}", job.input),
        )),
        ..base_record(job, cache, run.model(job))
    }
}

/// Batch mode, and a job that runs the agent loop: refused (`--agent-jobs refuse`).
pub(super) fn not_batchable(job: &Job, cache: &JobCache, run: &RunContext) -> JobRecord {
    let now = Timestamp::now();
    let skill = &job.skill;
    let workflow = run
        .skills
        .get(skill)
        .is_some_and(crate::skills::Skill::is_workflow);
    let message = if workflow {
        msg!(
            "skill `{skill}` runs a workflow (each step waits for the ones before it), which the Batch API cannot carry; add --agent-jobs run to run such jobs now at the standard price, or run them without --submit batch"
        )
    } else {
        msg!(
            "skill `{skill}` runs the agent loop (tools between turns), which the Batch API cannot carry; add --agent-jobs run to run such jobs now at the standard price, or run them without --submit batch"
        )
    };
    JobRecord {
        started_at: Some(now),
        finished_at: Some(now),
        error: Some(JobError::new(ErrorKind::NotBatchable, message)),
        ..base_record(job, cache, run.model(job))
    }
}

/// A job the run did not get to.
pub(super) fn not_run(
    job: &Job,
    cache: &JobCache,
    run: &RunContext,
    status: Status,
    kind: ErrorKind,
    message: String,
) -> JobRecord {
    // Never started: both times are when the run gave up on it.
    let now = Timestamp::now();
    JobRecord {
        status,
        error: Some(JobError::new(kind, message)),
        started_at: Some(now),
        finished_at: Some(now),
        ..base_record(job, cache, run.model(job))
    }
}

/// Run one job to its record.
pub(super) async fn process(run: &Arc<RunContext>, job: &Job, cache: &JobCache) -> JobRecord {
    let started = Instant::now();
    let mut record = base_record(job, cache, run.model(job));
    record.started_at = Some(Timestamp::now());
    let staging = run.layout.job_staging(&run.run_id, job.id.as_str());
    // A folder a person edited fails the job before any token is spent on it, as the plan
    // said it would.
    if let Some(conflict) = crate::plan::preflight(&run.layout, job, cache) {
        record.error = Some(conflict);
        record.finished_at = Some(Timestamp::now());
        record.duration_ms = started.elapsed().as_millis() as u64;
        return record;
    }
    let mut stats = AgentStats::default();
    let mut chunks = super::chunked::ChunkState::default();
    let transcript = open_transcript(run, job);
    let role = run
        .audit
        .as_ref()
        .map_or(Role::Plain, |a| a.role(job.id.as_str(), &job.skill));
    let mut work = Work {
        cache,
        staging: &staging,
        stats: &mut stats,
        chunks: &mut chunks,
        transcript: &transcript,
    };
    let result = match role {
        Role::Plain => run_in_staging(run, job, &mut work, Rungs::Ladder).await,
        Role::Routed => route(run, job, &mut work).await,
        Role::Sampled => answer_twice(run, job, &mut work).await,
    };
    record.audited = role == Role::Sampled;
    record.routed = role == Role::Routed;
    if let Err(Stop::Failed(e) | Stop::TooLong(e)) = &result {
        transcript.note(&format!("the job failed: {e}"));
    }
    let result = result.and_then(|()| Ok(strict(run, &stats)?));
    if role == Role::Routed
        && let Some(audit) = &run.audit
    {
        audit.routed_spent(&stats.by_model);
    }
    let failed = match &result {
        Err(Stop::Failed(e) | Stop::TooLong(e)) => Some(e),
        _ => None,
    };
    what_the_work_made(&mut record, &mut chunks, &mut stats, failed);
    take_stats(&mut record, &mut stats, job);
    account(&mut record, &mut stats, run);
    let result = match result {
        // Hashing, fsync and renames are file work: off the async threads.
        Ok(()) => {
            let (s, j, c, st) = (run.clone(), job.clone(), cache.clone(), staging.clone());
            tokio::task::spawn_blocking(move || commit(&s, &j, &c, &st))
                .await
                .unwrap_or_else(|e| {
                    Err(JobError::new(
                        ErrorKind::Internal,
                        msg!("commit crashed: {e}"),
                    ))
                })
                .map_err(Stop::Failed)
        }
        Err(stop) => Err(stop),
    };
    settle(&mut record, result, run, job, &staging, &chunks);
    record.finished_at = Some(Timestamp::now());
    record.duration_ms = started.elapsed().as_millis() as u64;
    tracing::info!(
        job = %crate::sanitize::one_line(&job.input),
        status = record.status.as_str(),
        turns = record.turns,
        "{}",
        msg!("job ended")
    );
    record
}

/// The job's status from how it ended: its outputs committed, its request waiting on a
/// batch, or failed (its staging kept for inspection).
fn settle(
    record: &mut JobRecord,
    result: Result<Vec<OutputFile>, Stop>,
    run: &RunContext,
    job: &Job,
    staging: &Path,
    chunks: &super::chunked::ChunkState,
) {
    match result {
        Ok(outputs) => {
            record.status = Status::Succeeded;
            record.extra_files = extra_files(run, job, &outputs, &record.steps);
            record.outputs = outputs;
            // The pieces of a long document are kept until its result is committed.
            if let Some(dir) = &chunks.checkpoint {
                let _ = run.layout.remove_tree(dir);
            }
        }
        // Batch mode: the job waits for a batch's answer; nothing failed, nothing is kept.
        Err(Stop::Waiting(e)) => {
            record.status = Status::Skipped;
            let _ = run.layout.remove_tree(staging);
            record.error = Some(e);
        }
        Err(Stop::Failed(e) | Stop::TooLong(e)) => {
            record.status = if e.kind == ErrorKind::Cancelled {
                Status::Cancelled
            } else {
                Status::Failed
            };
            keep_failed(run, job, staging);
            record.error = Some(e);
        }
    }
}

/// The job's transcript, created beneath the output folder.
fn open_transcript(run: &RunContext, job: &Job) -> Arc<Transcript> {
    let path = run.transcript_path(job.id.as_str());
    let folder = run
        .layout
        .folder(path.parent().unwrap_or(Path::new("")), true);
    Arc::new(Transcript::create_in(
        folder,
        &path,
        run.client.secrets().clone(),
    ))
}

/// The pieces, extraction and steps of the job's work, into its record; an answer refused
/// as invalid output is an extraction that is not valid, with the reason.
fn what_the_work_made(
    record: &mut JobRecord,
    chunks: &mut super::chunked::ChunkState,
    stats: &mut AgentStats,
    failed: Option<&JobError>,
) {
    record.chunks = chunks.counts;
    record.extraction = stats.decided.extraction.take();
    if let Some(e) = failed
        && e.kind == ErrorKind::InvalidOutput
        && record.extraction.is_none()
    {
        record.extraction = Some(crate::judge::grounding::Extraction {
            valid: false,
            errors: vec![e.message.clone()],
            ..Default::default()
        });
    }
    record.steps = std::mem::take(&mut chunks.steps);
}

/// Who answered and what it cost (docs/escalation.md): the model whose answer became the
/// output, whether (and from which model) the job was escalated, tokens per model when more
/// than one was asked, and the cost at the run's prices.
fn account(record: &mut JobRecord, stats: &mut AgentStats, run: &RunContext) {
    if let Some((model, base)) = stats.decided.answered_by.clone() {
        if let Some((from, _)) = stats.decided.escalations.first().cloned() {
            record.escalated = true;
            record.escalated_from = Some(from);
        }
        if base != crate::secret::url_for_display(&run.config.api.base_url) {
            record.base_url = Some(base);
        }
        record.model = model;
    }
    let by_model = std::mem::take(&mut stats.by_model);
    if by_model.len() > 1 {
        record.tokens_by_model = by_model;
    }
    // The priced part is counted and the unpriced models named: never a cost of zero for a
    // model without a price (docs/escalation.md#cost).
    crate::manifest::Priced::of(&record.tokens_per_model(), &run.config.models.prices)
        .into_record(record);
}

/// `--strict`: a job whose outputs are doubted after the ladder fails (docs/outputs.md#doubts).
fn strict(run: &RunContext, stats: &AgentStats) -> Result<(), JobError> {
    if !run.flags.strict || stats.decided.doubts.is_empty() {
        return Ok(());
    }
    Err(doubtful(&stats.decided.doubts))
}

/// `--strict` over a cached job whose outputs stand doubted: it fails as the same job run now
/// would (docs/exit-codes.md#doubted-jobs). Its outputs stay where they are, and a rerun
/// without `--strict` finds it cached, doubted, as before.
pub(super) fn strict_when_cached(run: &RunContext, record: JobRecord) -> JobRecord {
    if !run.flags.strict || record.doubts.is_empty() {
        return record;
    }
    JobRecord {
        status: Status::Failed,
        error: Some(doubtful(&record.doubts)),
        outputs: Vec::new(),
        restates: false,
        ..record
    }
}

/// The failure `--strict` makes of doubted outputs.
fn doubtful(doubts: &[crate::manifest::Doubt]) -> JobError {
    let list = crate::judge::doubts::one_line(doubts);
    JobError::new(
        ErrorKind::Doubtful,
        msg!("the output is doubted (--strict): {list}"),
    )
}

/// What the job's requests came to, into its record; input warnings said on stderr too.
fn take_stats(record: &mut JobRecord, stats: &mut AgentStats, job: &Job) {
    record.turns = stats.turns;
    record.attempts = stats.max_attempts;
    record.requests = stats.requests;
    record.refused_tool_calls = stats.refused_tool_calls;
    record.tool_calls = stats.tool_calls;
    record.tokens = stats.tokens;
    record.served_model = stats.served_model.clone();
    record.input_tokens = stats.input_tokens;
    record.warnings = std::mem::take(&mut stats.input_warnings);
    record.ungrounded_figures = std::mem::take(&mut stats.ungrounded_figures);
    record.doubts = std::mem::take(&mut stats.decided.doubts);
    if !record.doubts.is_empty() {
        let list = crate::judge::doubts::one_line(&record.doubts);
        tracing::info!(job = %crate::sanitize::one_line(&job.input), "{}", msg!("doubted: {list}"));
    }
    if !record.ungrounded_figures.is_empty() {
        let list = record.ungrounded_figures.join(", ");
        record.warnings.push(msg!(
            "the output states figures the document does not hold: {list}"
        ));
    }
    for warning in &record.warnings {
        tracing::warn!(
            job = %crate::sanitize::one_line(&job.input),
            "{}",
            crate::sanitize::one_line(warning)
        );
    }
}

/// Where a job's work goes and what it reports back.
struct Work<'a> {
    cache: &'a JobCache,
    staging: &'a Path,
    stats: &'a mut AgentStats,
    chunks: &'a mut super::chunked::ChunkState,
    transcript: &'a Arc<Transcript>,
}

/// A job of a routed skill (docs/escalation.md#the-guarantee-of---target): an extraction
/// whose other fields the sample showed keeps the ladder's answer for those and asks the top
/// rung, with the document, for the fields not shown only; any other job goes to the top rung
/// whole.
async fn route(run: &RunContext, job: &Job, w: &mut Work<'_>) -> Result<(), Stop> {
    let fields = run
        .audit
        .as_ref()
        .map(|a| a.routed_fields(&job.skill))
        .unwrap_or_default();
    let Some(skill) = run.skills.get(&job.skill).filter(|s| !s.is_workflow()) else {
        w.transcript
            .note("the audit routed this skill to the top rung of its ladder");
        return run_in_staging(run, job, w, Rungs::Top).await;
    };
    let partial = !job.is_dir && per_field(run, job, skill, &fields);
    if !partial {
        w.transcript
            .note("the audit routed this skill to the top rung of its ladder");
        return run_in_staging(run, job, w, Rungs::Top).await;
    }
    w.transcript.note(&format!(
        "the audit routed {} to the top rung of its ladder; the other fields are the ladder's",
        fields.join(", ")
    ));
    let ctx = |rungs, only| JobCtx {
        run,
        job,
        skill,
        transcript: w.transcript.clone(),
        inputs: Vec::new(),
        rungs,
        only,
    };
    let text = document_text(run, job, w.cache, w.stats).await?;
    let ladder = ctx(Rungs::Ladder, None);
    run_text(&ladder, w.cache, &text, w.staging, w.stats, w.chunks).await?;
    let top = run.ladder(job).last().map(|r| r.model.clone());
    if top.is_some() && w.stats.decided.answered_by.as_ref().map(|(m, _)| m) == top.as_ref() {
        // The ladder climbed to the top already: every field is the top rung's.
        return Ok(());
    }
    let side = w.staging.with_extension("routed");
    let _ = run.layout.remove_tree(&side);
    let kept = std::mem::take(&mut w.stats.decided);
    let mut side_chunks = super::chunked::ChunkState::default();
    let asked = run_text(
        &ctx(Rungs::Top, Some(&fields)),
        w.cache,
        &text,
        &side,
        w.stats,
        &mut side_chunks,
    )
    .await;
    let strong_decided = std::mem::replace(&mut w.stats.decided, kept);
    let file = skill
        .direct_output(&job.args)
        .unwrap_or_else(|| crate::skills::schema::EXTRACTED_FILE.to_string());
    let read = |dir: &Path| {
        run.layout
            .read_to_string(&dir.join(&file))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    };
    let merged = match (asked, read(w.staging), read(&side)) {
        (Ok(()), Some(serde_json::Value::Object(mut own)), Some(strong)) => {
            for f in &fields {
                match strong.get(f) {
                    Some(v) => own.insert(f.clone(), v.clone()),
                    None => own.remove(f),
                };
            }
            Some(serde_json::Value::Object(own))
        }
        _ => None,
    };
    let _ = run.layout.remove_tree(&side);
    let Some(merged) = merged else {
        // The top rung failed its fields: the ladder's answer stands, with its doubts.
        w.transcript
            .note("the top rung gave no answer for the routed fields; the ladder's answer is kept");
        return Ok(());
    };
    let body = serde_json::to_vec_pretty(&merged).unwrap_or_default();
    run.layout
        .write_atomic(&w.staging.join(&file), &body)
        .map_err(|e| JobError::new(ErrorKind::Io, msg!("cannot write {file}: {e}")))?;
    let judged = match super::ladder::judge_written(&ladder, w.staging, &text, &file)? {
        crate::judge::Verdict::Kept(j) | crate::judge::Verdict::Doubted(j) => j,
        crate::judge::Verdict::Failed(f) => {
            return Err(Stop::Failed(JobError::new(f.kind, f.problem)));
        }
    };
    let decided = &mut w.stats.decided;
    decided.doubts = judged.doubts;
    decided.extraction = judged.extraction.or(decided.extraction.take());
    decided.escalations.extend(strong_decided.escalations);
    decided.answered_by = strong_decided.answered_by.or(decided.answered_by.take());
    Ok(())
}

/// Whether a routed job of `skill` may ask the top rung for `fields` only: its schema's
/// fields are all top-level, and some of them are not routed.
fn per_field(run: &RunContext, job: &Job, skill: &crate::skills::Skill, fields: &[String]) -> bool {
    let Some(schema) = audit_schema(run, job, skill) else {
        return false;
    };
    if schema.fields.iter().any(|f| f.path.contains(['.', '['])) {
        return false;
    }
    let names: Vec<&str> = schema.fields.iter().map(|f| f.path.as_str()).collect();
    fields.iter().all(|f| names.contains(&f.as_str()))
        && names.iter().any(|n| !fields.iter().any(|f| f == n))
}

/// An audited job (docs/escalation.md#audit): answered by its own model alone, then by the
/// top rung of its ladder, the two compared; the strong answer is kept, the cheap one when the
/// strong one fails.
async fn answer_twice(run: &RunContext, job: &Job, w: &mut Work<'_>) -> Result<(), Stop> {
    let cheap = run_in_staging(run, job, w, Rungs::Own).await;
    let cheap_decided = std::mem::take(&mut w.stats.decided);
    let cheap_chunks = std::mem::take(w.chunks);
    let aside = w.staging.with_extension("cheap");
    let _ = run.layout.remove_tree(&aside);
    let kept = cheap.is_ok() && run.layout.rename(w.staging, &aside).is_ok();
    if !kept {
        let _ = run.layout.remove_tree(w.staging);
    }
    let before = w.stats.tokens;
    let strong = run_in_staging(run, job, w, Rungs::Top).await;
    let spent = w.stats.tokens.since(before);
    let top = run
        .ladder(job)
        .last()
        .map(|r| r.model.clone())
        .unwrap_or_default();
    if strong.is_ok() {
        if let Some(audit) = &run.audit {
            let agreement = agreement(run, job, kept.then_some(aside.as_path()), w.staging);
            w.transcript.note(&format!(
                "audit: {top}'s answer kept; {}",
                agreement
                    .iter()
                    .map(|(f, a)| format!("{f} {}", if *a { "agrees" } else { "differs" }))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            audit.compared(&job.skill, agreement, &top, spent);
        }
        let _ = run.layout.remove_tree(&aside);
        return Ok(());
    }
    w.transcript.note(&format!(
        "audit: {top} failed; the job's own answer is kept"
    ));
    if !kept {
        return cheap;
    }
    let _ = run.layout.remove_tree(w.staging);
    run.layout.rename(&aside, w.staging).map_err(|e| {
        JobError::new(
            ErrorKind::Io,
            msg!("cannot write {}: {e}", w.staging.display()),
        )
    })?;
    w.stats.decided = cheap_decided;
    *w.chunks = cheap_chunks;
    cheap
}

/// How an audited job's two answers agree: an extraction field by field, a prose file by
/// its chrF against the strong answer (docs/escalation.md#audit). A cheap answer that failed
/// agrees with nothing.
fn agreement(
    run: &RunContext,
    job: &Job,
    cheap: Option<&Path>,
    strong: &Path,
) -> Vec<(String, bool)> {
    let Some(skill) = run.skills.get(&job.skill) else {
        return Vec::new();
    };
    let read = |dir: &Path, file: &str| run.layout.read_to_string(&dir.join(file)).ok();
    if let Some(schema) = audit_schema(run, job, skill) {
        let file = skill
            .direct_output(&job.args)
            .unwrap_or_else(|| crate::skills::schema::EXTRACTED_FILE.to_string());
        let object = |dir: &Path| {
            read(dir, &file).and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        };
        let strong = object(strong).unwrap_or_default();
        let cheap = cheap.and_then(object);
        return crate::judge::agreement::compare_objects(cheap.as_ref(), &strong, &schema.fields);
    }
    skill
        .declared_files(&job.args)
        .into_iter()
        .filter(|f| crate::judge::accept::FileKind::of(f) != crate::judge::accept::FileKind::Binary)
        .map(|f| {
            let agrees = match (cheap.and_then(|d| read(d, &f)), read(strong, &f)) {
                // A comparison the run's stop cut short agrees with nothing.
                (Some(a), Some(b)) => {
                    crate::judge::agreement::chrf(&a, &b, &|| run.cancel.is_cancelled())
                        .is_some_and(|score| score >= crate::judge::agreement::PROSE_AGREE_CHRF)
                }
                _ => false,
            };
            (f, agrees)
        })
        .collect()
}

/// An extraction job's schema, for comparing its answers.
fn audit_schema(
    run: &RunContext,
    job: &Job,
    skill: &crate::skills::Skill,
) -> Option<crate::agent::structured::Schema> {
    let ctx = JobCtx {
        run,
        job,
        skill,
        transcript: Arc::new(Transcript::none()),
        inputs: Vec::new(),
        rungs: Rungs::Own,
        only: None,
    };
    super::ask::job_schema(&ctx).ok().flatten()
}

async fn run_in_staging(
    run: &RunContext,
    job: &Job,
    w: &mut Work<'_>,
    rungs: Rungs,
) -> Result<(), Stop> {
    let (cache, staging, transcript) = (w.cache, w.staging, w.transcript);
    let (stats, chunks) = (&mut *w.stats, &mut *w.chunks);
    let skill = run.skills.get(&job.skill).ok_or_else(|| {
        JobError::new(ErrorKind::InputError, msg!("unknown skill `{}`", job.skill))
    })?;
    let ctx = JobCtx {
        run,
        job,
        skill,
        transcript: transcript.clone(),
        inputs: Vec::new(),
        rungs,
        only: None,
    };
    if skill.is_workflow() {
        let text = match job.is_dir {
            true => None,
            false => Some(document_text(run, job, cache, stats).await?),
        };
        let source: Option<Arc<str>> = text.as_deref().map(Arc::from);
        super::workflow::run(
            &ctx,
            cache,
            source.clone(),
            staging,
            stats,
            &mut chunks.steps,
        )
        .await?;
        return Ok(composed(&ctx, staging, source.as_ref())?);
    }
    if job.is_dir {
        let message = folder_message(job, run.layout.output_dir());
        ask(&ctx, staging, "", message, None, true, stats).await?;
        drop_empty_files(run, staging);
        return Ok(());
    }
    let text = document_text(run, job, cache, stats).await?;
    run_text(&ctx, cache, &text, staging, stats, chunks).await
}

/// The files of a job's folder that its skill does not declare and no step of it wrote
/// (docs/outputs.md#job-records).
fn extra_files(
    run: &RunContext,
    job: &Job,
    outputs: &[OutputFile],
    steps: &[crate::manifest::StepRecord],
) -> Vec<String> {
    let Some(skill) = run.skills.get(&job.skill) else {
        return Vec::new();
    };
    let declared = skill.declared_files(&job.args);
    outputs
        .iter()
        .filter_map(|o| {
            let rel = Path::new(&o.path).strip_prefix(&job.output_rel).ok()?;
            let name = rel.to_string_lossy().into_owned();
            let ours = declared
                .iter()
                .any(|d| declared::find_written(d, &[rel.to_path_buf()]).is_some())
                || steps.iter().any(|s| s.outputs.contains(&name));
            (!ours).then_some(name)
        })
        .collect()
}

/// Move the staging folder into place in one rename. An existing job folder is replaced only
/// when every file in it is what zhi wrote last time; otherwise the job fails with
/// `output_conflict` and the person's edit stays.
fn commit(
    run: &RunContext,
    job: &Job,
    cache: &JobCache,
    staging: &Path,
) -> Result<Vec<OutputFile>, JobError> {
    let io = |what: String, e: std::io::Error| JobError::new(ErrorKind::Io, format!("{what}: {e}"));
    let out = run.layout.output_dir();
    let target = out.join(&job.output_rel);
    // The outputs, hashed before they move, are journaled first: a kill between the rename
    // and the record must not make zhi's own folder look like a person's edit next time.
    let mut outputs = Vec::new();
    for rel in
        cache::files_under(staging).map_err(|e| io(msg!("cannot list {}", staging.display()), e))?
    {
        let (sha, bytes) = cache::hash_file(&staging.join(&rel));
        outputs.push(OutputFile {
            path: job.output_rel.join(&rel).to_string_lossy().into_owned(),
            sha256: sha.unwrap_or_default(),
            bytes: bytes.unwrap_or(0),
            // Written just now: a stat taken now could not be trusted (the racy rule); the
            // next run's check records one.
            stat: None,
        });
    }
    if std::fs::symlink_metadata(&target).is_ok() {
        if let Some(conflict) = cache::conflict(&run.layout, job, cache) {
            return Err(conflict);
        }
        write_journal(run, job, cache, &outputs)?;
        let trash = run.layout.job_trash(&run.run_id, job.id.as_str());
        move_into_place(&run.layout, staging, &target, Some(&trash))?;
        let _ = run.layout.remove_tree(&trash);
    } else {
        write_journal(run, job, cache, &outputs)?;
        move_into_place(&run.layout, staging, &target, None)?;
    }
    Ok(outputs)
}

/// The commit's moves: the old job folder (if any) to `trash`, then the staging folder to
/// `target`, each a rename beneath the output folder's handle ([`OutputLayout::rename`]), so
/// a folder on the way swapped for a link cannot carry the outputs outside the output folder.
fn move_into_place(
    layout: &OutputLayout,
    staging: &Path,
    target: &Path,
    trash: Option<&Path>,
) -> Result<(), JobError> {
    let io = |what: String, e: std::io::Error| JobError::new(ErrorKind::Io, format!("{what}: {e}"));
    if let Some(parent) = target.parent() {
        layout
            .create_dir(parent)
            .map_err(|e| io(msg!("cannot create {}", parent.display()), e))?;
    }
    if let Some(trash) = trash {
        if let Some(p) = trash.parent() {
            layout
                .create_dir(p)
                .map_err(|e| io(msg!("cannot create {}", p.display()), e))?;
        }
        layout
            .rename(target, trash)
            .map_err(|e| io(msg!("cannot move the old {} aside", target.display()), e))?;
    }
    layout
        .rename(staging, target)
        .map_err(|e| io(msg!("cannot commit {}", target.display()), e))
}

/// `<OUT>/.zhi/commits/<job-id>.json`: what a commit is about to put in place, written before
/// the rename and removed once the job's record is on disk. A kill in between leaves it, and
/// the next run knows the folder as zhi's own.
fn journal_path(run: &RunContext, job: &Job) -> PathBuf {
    run.layout.commit_journal(job.id.as_str())
}

fn write_journal(
    run: &RunContext,
    job: &Job,
    cache: &JobCache,
    outputs: &[OutputFile],
) -> Result<(), JobError> {
    let pending = JobRecord {
        status: Status::Succeeded,
        outputs: outputs.to_vec(),
        ..base_record(job, cache, run.model(job))
    };
    let path = journal_path(run, job);
    let write = || -> std::io::Result<()> {
        if let Some(p) = path.parent() {
            run.layout.create_dir(p)?;
        }
        let body = serde_json::to_vec(&pending).map_err(std::io::Error::other)?;
        run.layout.write_atomic(&path, &body)
    };
    write().map_err(|e| JobError::new(ErrorKind::Io, msg!("cannot write {}: {e}", path.display())))
}

/// The job's record is on disk: its commit journal is no longer needed.
pub(super) fn forget_commit(run: &RunContext, job: &Job) {
    let _ = run.layout.remove_file(&journal_path(run, job));
}

/// A failed job's staging is kept under `.zhi/failed/<run-id>/` for inspection.
fn keep_failed(run: &RunContext, job: &Job, staging: &Path) {
    // Kept even when empty: the folder says the job ran and wrote nothing
    // (docs/outputs.md#staging-and-commit).
    if !staging.exists() && run.layout.create_dir(staging).is_err() {
        return;
    }
    let dest = run.layout.failed_staging(&run.run_id, job.id.as_str());
    if let Some(p) = dest.parent() {
        let _ = run.layout.create_dir(p);
    }
    if let Err(e) = run.layout.rename(staging, &dest) {
        tracing::warn!(
            "{}",
            msg!("cannot keep the failed staging of {}: {e}", job.input)
        );
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The race the commit's renames by path had: the job folder's parent checked (created)
    /// as a folder, then swapped for a link to outside before the rename, which followed it.
    /// A thread swaps `summarize` (a folder) and a link to outside again and again while jobs
    /// commit into `summarize/<n>`: each lands inside the output folder or fails, never
    /// outside.
    #[test]
    fn a_parent_swapped_for_a_link_mid_commit_never_leads_outside() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(out.join("summarize")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, out.join("swap")).unwrap();
        let layout = OutputLayout::new(&out);
        let mut committed = 0;
        crate::confine::while_swapping(&out.join("summarize"), &out.join("swap"), |n| {
            let staging = layout.job_staging("run", &n.to_string());
            layout.create_dir(&staging).unwrap();
            std::fs::write(staging.join("summary.md"), "s").unwrap();
            let target = out.join(format!("summarize/{n}"));
            if move_into_place(&layout, &staging, &target, None).is_ok() {
                committed += 1;
            }
        });
        assert!(
            std::fs::read_dir(&outside).unwrap().next().is_none(),
            "a commit went outside the output folder"
        );
        assert!(committed > 0, "no commit got through at all");
    }
}
