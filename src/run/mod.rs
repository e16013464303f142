//! The executor: takes a plan's jobs through extraction, the agent and the commit, a bounded
//! number at a time, and writes one manifest record per job as it ends.
//!
//! It owns the run's lifecycle — lock, stale-staging cleanup, signals, abort on auth/quota,
//! failure and token budgets — so that whatever happens, every planned job ends with exactly
//! one record and the manifest is written.

mod ask;
pub(crate) mod audit;
mod chunked;
pub(crate) mod context;
mod cost_budget;
mod error;
mod eta;
mod finish;
mod job;
mod ladder;
mod ledger;
pub(crate) mod lock;
mod message;
pub(crate) mod progress;
pub(crate) mod reader;
mod schedule;
mod setup;
pub(crate) mod slots;
mod statuses;
mod stop;
mod tables;
mod text;
mod watch;
mod workflow;

pub(crate) use crate::flags::BatchOptions;
pub(crate) use error::RunError;
pub(crate) use message::first_request_text;
pub(crate) use setup::preflight;

use crate::config::{Concurrency, Config};
use crate::exit::Exit;
use crate::flags::RunFlags;
use crate::layout::OutputLayout;
use crate::manifest::{ManifestWriter, RunManifest};
use crate::plan::cache::CacheIndex;
use crate::plan::{Selection, Shard};
use crate::skills::SkillSet;
use context::RunContext;
use ledger::{Ledger, StopRules};
use progress::Progress;
use slots::Slots;
use statuses::Statuses;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Everything a run needs.
pub(crate) struct RunOptions {
    /// The plan (all shards: the manifest names every planned job, so that merging shards can
    /// tell which none of them did) and the jobs of it this run does.
    pub plan: Selection,
    pub skills: Arc<SkillSet>,
    pub config: Config,
    /// Absolute output folder.
    pub output_dir: PathBuf,
    /// The command line, for the manifest.
    pub command: String,
    /// Cancelled to stop in-flight work at once (the reader's helper programs share it).
    pub cancel: CancellationToken,
    /// What `zhi run` was asked beyond its settings: kept whole in the run's context.
    pub flags: Arc<RunFlags>,
}

/// How a run ended.
pub(crate) struct RunResult {
    pub manifest: RunManifest,
    pub exit: Exit,
    /// The run at a glance, as its end prints it.
    pub summary: crate::manifest::summary::RunSummary,
}

/// A sortable run id: UTC time to the millisecond, plus the shard.
pub(crate) fn new_run_id(shard: Option<Shard>) -> String {
    let mut id = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
    if let Some(s) = shard {
        id.push_str(&format!("-shard-{}-of-{}", s.index, s.total));
    }
    id
}

/// Run the jobs: set up, schedule, drain, record what never ran, write the manifest.
pub(crate) async fn execute(opts: RunOptions) -> Result<RunResult, RunError> {
    // A cost budget that could not be kept is refused before the output folder is touched or
    // anything is sent.
    cost_budget::check(
        opts.flags.budget_cost,
        &opts.config,
        &opts.plan.outline.samples,
        &opts.skills,
    )?;
    let layout = OutputLayout::new(&opts.output_dir);
    let (run_id, _lock) = setup::open_output(&layout, opts.plan.shard)?;
    let started_at = crate::manifest::Timestamp::now();
    let client = context::client(&opts.config).map_err(RunError::Client)?;
    let book = setup::open_batches(
        &layout,
        &client,
        &opts.config,
        opts.flags.submit_batch,
        &run_id,
        &opts.cancel,
    )
    .await?;
    let book = Arc::new(book);
    let mut config = opts.config.clone();
    let server = setup::ask_server(
        &client,
        &mut config,
        &opts.plan.outline.samples,
        &opts.skills,
        opts.flags.submit_batch.is_some(),
    )
    .await?;
    let (escalation, skill_ladders) = setup::ladders(
        &client,
        server.as_ref(),
        &mut config,
        &opts.plan.outline.samples,
        &opts.skills,
    )
    .await?;
    let audit = audit::Audit::of(&opts, escalation.is_empty() && skill_ladders.is_empty())?;
    // With the budgets the server gave, a token budget no request fits is refused before the
    // run has a folder or a manifest: nothing ran (exit 2).
    crate::plan::check_tpm(&config, &opts.plan.outline.samples, &opts.skills)?;
    let (auto, initial) = match config.run.concurrency {
        Concurrency::Fixed(n) => (false, n),
        Concurrency::Auto => (true, slots::AUTO_START),
    };
    let slots = Arc::new(Slots::new(initial, auto));
    let progress = Arc::new(Progress::new(opts.plan.len() as u64, opts.flags.progress));
    let keep = keep(&opts, &book);
    let ledger = open_ledger(&layout, &run_id, &opts, keep, &progress, &slots)?;
    let ctx = Arc::new(RunContext {
        // The OCR engines take a clone of the run's client: one rate budget for every request.
        reader: Arc::new(reader::PipelineReader::new(
            &config,
            Some(client.clone()),
            initial,
            Some(opts.cancel.clone()),
        )),
        toolbox: crate::agent::tools::Toolbox::with_mcp(config.run.mcp_servers.clone()),
        client,
        skills: opts.skills.clone(),
        config,
        layout,
        run_id,
        flags: opts.flags.clone(),
        cancel: opts.cancel.clone(),
        slots: slots.clone(),
        progress: progress.counters.clone(),
        server,
        batch: book.is_active().then(|| book.clone()),
        audit,
        escalation,
        skill_ladders,
    });

    let watchers = watch::Watchers::start(&ctx, &ledger, &progress);
    // Inputs are hashed once the signal handlers are in place: a Ctrl-C while hashing a large
    // tree still ends with a manifest and 130.
    let mut statuses = Statuses::start(&ctx, &opts, &ledger)?;
    let stopped_at =
        schedule::run_jobs(&ctx, &ledger, &mut statuses, opts.flags.submit_batch).await;
    // The jobs never started, read from the plan one by one as they are recorded, while
    // signals are still watched.
    schedule::record_not_run(&ctx, &ledger, stopped_at.into_iter().chain(&mut statuses));
    // Signals are still watched while submitting: an interrupted upload ends with the grace
    // period, and the next run cleans up.
    let submit_error = match opts.flags.submit_batch {
        Some(_) => {
            finish::submit_batches(&book, &ledger, &progress, &ctx.cancel, &ctx.client).await
        }
        None => None,
    };
    watchers.stop();
    let index = statuses.finish();
    progress.finish();
    remove_scratch(&ctx);
    let end = finish::Ending {
        opts: &opts,
        ctx: &ctx,
        started_at,
        auto,
        initial,
        submit_error,
        book: &book,
        progress: &progress,
    };
    let result = finish::conclude(end, &ledger);
    save_index(&ctx, &ledger, index);
    Ok(result)
}

/// The cache index with this run's records on top (docs/outputs.md#the-cache-index). A
/// failure costs the next run a read of this run's records, nothing more.
fn save_index(ctx: &RunContext, ledger: &Ledger, index: Option<CacheIndex>) {
    // The index did not come back (its thread ended badly): the file stays as it is, and the
    // next run reads this run's records on top of it.
    let Some(index) = index else {
        return;
    };
    let saved = match ledger.take_record_lines() {
        Some((lines, _)) if index.unchanged_by(&lines) => Ok(()),
        Some((lines, len)) => index.save_after_run(&ctx.run_id, len, &lines),
        // An append failed: the file's offsets are unknown; the next run rebuilds the index.
        None => ctx
            .layout
            .remove_file(&ctx.layout.cache_index())
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(e)
                }
            }),
    };
    if let Err(e) = saved {
        tracing::warn!(
            "{}",
            msg!("cannot write {}: {e}", ctx.layout.cache_index().display())
        );
    }
}

/// What the end of the run needs of its records beyond their sums.
fn keep(opts: &RunOptions, book: &crate::batch::Book) -> ledger::Keep {
    ledger::Keep {
        table_skills: tables::table_skills(&opts.plan.outline.samples, &opts.skills),
        settled_ids: book.has_batches(),
    }
}

/// The run's records start here: `results.jsonl` in the run's own folder.
fn open_ledger(
    layout: &OutputLayout,
    run_id: &str,
    opts: &RunOptions,
    keep: ledger::Keep,
    progress: &Arc<Progress>,
    slots: &Arc<Slots>,
) -> Result<Arc<Ledger>, RunError> {
    let run_dir = layout.run(run_id);
    let writer = ManifestWriter::create(layout, &run_dir)
        .map_err(|source| RunError::Create {
            path: run_dir.to_path_buf(),
            source,
        })?
        .every_record(opts.flags.every_record)
        .settle_with(Box::new(
            |out: &std::path::Path, r: &mut crate::manifest::JobRecord| {
                std::env::current_dir().is_ok_and(|cwd| crate::plan::cache::settle(out, &cwd, r))
            },
        ));
    let rules = StopRules {
        max_failures: opts.flags.max_failures,
        budget_tokens: opts.flags.budget_tokens,
        budget_cost: opts.flags.budget_cost,
    };
    Ok(Arc::new(Ledger::new(
        Box::new(writer),
        keep,
        rules,
        progress.clone(),
        slots.clone(),
        opts.cancel.clone(),
    )))
}

/// The run's empty staging and trash folders go; a failed job's staging was moved away.
fn remove_scratch(ctx: &RunContext) {
    for dir in [
        ctx.layout.staging().join(&ctx.run_id),
        ctx.layout.staging(),
        ctx.layout.trash().join(&ctx.run_id),
        ctx.layout.trash(),
    ] {
        let _ = ctx.layout.remove_dir(&dir);
    }
}
