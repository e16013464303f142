//! Scheduling: jobs start as slots free, in plan order, until the ledger says stop; each runs
//! as its own task, and its record goes to the ledger before its slot frees, so no job starts
//! past a limit the one before reached.

use super::BatchOptions;
use super::context::RunContext;
use super::job;
use super::ledger::Ledger;
use super::stop::Stop;
use crate::plan::Job;
use crate::plan::cache::JobCache;
use crate::skills::SkillSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::task::JoinSet;

/// Runs the jobs until the run stops, then stops the MCP servers they used; returns the job
/// it stopped at, never started (the jobs after it are left in `jobs`).
pub(super) async fn run_jobs(
    ctx: &Arc<RunContext>,
    ledger: &Arc<Ledger>,
    jobs: &mut impl Iterator<Item = (Job, JobCache)>,
    batch: Option<BatchOptions>,
) -> Option<(Job, JobCache)> {
    let mut tasks = JoinSet::new();
    let mut stopped_at = None;
    let mut left = LeftBehind::find(ctx);
    for (index, (job, cache)) in jobs.by_ref().enumerate() {
        if ledger.stopped().is_some() {
            stopped_at = Some((job, cache));
            break;
        }
        // The audit's sample is drawn in plan order from every planned job
        // (docs/escalation.md#audit).
        let runs = !cache.cached && job.problem.is_none();
        let sampled = ctx
            .audit
            .as_ref()
            .is_some_and(|a| a.choose(job.id.as_str(), runs));
        // Batch mode carries direct requests only; an agent-loop job runs now only when the
        // user said so.
        if batch.is_some_and(|b| !b.run_agent_jobs && !cache.cached && job.problem.is_none())
            && !batchable(&job, &ctx.skills)
        {
            ledger.record(job::not_batchable(&job, &cache, ctx));
            continue;
        }
        // Cached jobs and jobs that fail at planning take no slot and make no request.
        if cache.cached || job.problem.is_some() {
            record_at_once(ctx, ledger, &job, &cache, &mut left);
            continue;
        }
        // With `--target`, the jobs past the sample wait for it: its agreement decides where
        // they go.
        if let Some(audit) = ctx.audit.as_ref().filter(|a| a.gates(index as u64)) {
            tokio::select! {
                biased;
                _ = ledger.stopping().cancelled() => {
                    stopped_at = Some((job, cache));
                    break;
                }
                _ = audit.settled() => {}
            }
        }
        tokio::select! {
            biased;
            _ = ledger.stopping().cancelled() => {
                stopped_at = Some((job, cache));
                break;
            }
            _ = ctx.slots.acquire() => {}
        }
        // The slot may have been freed by the very job that reached a limit.
        if ledger.stopped().is_some() {
            ctx.slots.release();
            stopped_at = Some((job, cache));
            break;
        }
        spawn(&mut tasks, ctx.clone(), ledger.clone(), job, cache, sampled);
        // An ended task is held by the set until it is joined: joined as the run goes, the set
        // holds the jobs in flight, not every job that ran.
        while let Some(joined) = tasks.try_join_next() {
            task_ended(joined);
        }
    }
    while let Some(joined) = tasks.join_next().await {
        task_ended(joined);
    }
    // Every job has ended: the MCP servers they shared go
    // (docs/mcp.md#skills-that-call-mcp-tools).
    ctx.toolbox.mcp.shutdown().await;
    stopped_at
}

fn task_ended(joined: Result<(), tokio::task::JoinError>) {
    if let Err(e) = joined {
        // A job's own panic is caught inside its task; this one is the scheduler's.
        tracing::error!("{}", msg!("a job's task ended without its record: {e}"));
    }
}

/// What earlier runs left in the output folder that a job recorded at once may need, looked
/// up once a run rather than once a job.
struct LeftBehind {
    /// Jobs whose commit journal is there (`.zhi/commits/<job-id>.json`).
    journals: std::collections::HashSet<String>,
    transcripts: job::TranscriptFolders,
}

impl LeftBehind {
    fn find(ctx: &RunContext) -> LeftBehind {
        let journal = ctx.layout.commit_journal("x");
        let journals = journal
            .parent()
            .and_then(|dir| std::fs::read_dir(dir).ok())
            .into_iter()
            .flatten()
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.strip_suffix(".json").map(str::to_string)
            })
            .collect();
        LeftBehind {
            journals,
            transcripts: job::TranscriptFolders::default(),
        }
    }
}

fn record_at_once(
    ctx: &Arc<RunContext>,
    ledger: &Ledger,
    job: &Job,
    cache: &JobCache,
    left: &mut LeftBehind,
) {
    let record = if cache.cached {
        let record = job::cached_record(job, cache, &ctx.layout, &mut left.transcripts);
        job::strict_when_cached(ctx, record)
    } else {
        job::planned_failure(job, cache, ctx)
    };
    ledger.record(record);
    // A kill between a job's record and the removal of its commit journal left the journal
    // behind; a cached job is recorded (again) now, so it goes.
    if cache.cached && left.journals.contains(job.id.as_str()) {
        job::forget_commit(ctx, job);
    }
}

fn spawn(
    tasks: &mut JoinSet<()>,
    ctx: Arc<RunContext>,
    ledger: Arc<Ledger>,
    job: Job,
    cache: JobCache,
    sampled: bool,
) {
    ctx.progress.job_started(job.id.as_str());
    tasks.spawn(async move {
        // The job runs as its own task so that a panic in it (a bug, a decoder gone wrong)
        // fails that job with a record, and its slot still frees.
        let inner = {
            let (ctx, job, cache) = (ctx.clone(), job.clone(), cache.clone());
            tokio::spawn(async move { job::process(&ctx, &job, &cache).await })
        };
        let record = match inner.await {
            Ok(record) => record,
            Err(e) => job::crashed(&job, &cache, &ctx, &e.to_string()),
        };
        ctx.progress.in_flight.fetch_sub(1, Ordering::Relaxed);
        // Account for the job (budget, failures) before its slot frees, so the scheduler never
        // starts another job past a limit this one reached. The record's flush to disk runs
        // off the async threads; the ledger catches a panic in it and keeps the record.
        let slots = ctx.slots.clone();
        let audit_of = ctx.clone();
        let recorded = tokio::task::spawn_blocking(move || {
            ledger.record(record);
            job::forget_commit(&ctx, &job);
        })
        .await;
        if let Err(e) = recorded {
            tracing::error!("{}", msg!("recording a job failed: {e}"));
        }
        if sampled && let Some(audit) = &audit_of.audit {
            audit.ended();
        }
        slots.release();
    });
}

/// Every job not run gets its record: skipped for limits, cancelled for aborts and signals.
pub(super) fn record_not_run(
    ctx: &RunContext,
    ledger: &Ledger,
    unscheduled: impl Iterator<Item = (Job, JobCache)>,
) {
    let stop = ledger.stopped();
    for (job, cache) in unscheduled {
        let (status, kind, message) = Stop::not_run(stop.as_ref());
        ledger.record(job::not_run(&job, &cache, ctx, status, kind, message));
    }
}

/// Whether a job's requests can go in a batch: one direct request per document or piece.
fn batchable(job: &Job, skills: &SkillSet) -> bool {
    !job.is_dir
        && skills
            .get(&job.skill)
            .is_some_and(|s| s.direct_output(&job.args).is_some())
}
