//! After the last job: the batch requests submitted, the run's manifest built from its records
//! and written, and the exit code decided.

use super::ledger::Ledger;
use super::stop::Stop;
use super::{RunOptions, RunResult};
use crate::error::ErrorKind;
use crate::exit::Exit;
use crate::llm::ApiError;
use crate::manifest::summary::SummaryFold;
use crate::manifest::{
    ConcurrencyMode, ConcurrencyStats, Counts, RunManifest, RunStatus, Timestamp, Tokens,
};
use std::collections::BTreeMap;

/// What the run knows at its end besides its records.
pub(super) struct Ending<'a> {
    pub opts: &'a RunOptions,
    pub ctx: &'a super::context::RunContext,
    pub started_at: Timestamp,
    pub auto: bool,
    pub initial: usize,
    pub submit_error: Option<ApiError>,
    pub book: &'a crate::batch::Book,
    pub progress: &'a super::progress::Progress,
}

/// Batch mode: what the jobs queued goes to the Batch API now, unless the run was stopped (a
/// signal, an abort, a budget): then the next run queues it again.
pub(super) async fn submit_batches(
    book: &crate::batch::Book,
    ledger: &Ledger,
    progress: &super::progress::Progress,
    cancel: &tokio_util::sync::CancellationToken,
    client: &crate::llm::ChatClient,
) -> Option<ApiError> {
    if book.queued() == 0 {
        return None;
    }
    if ledger.stopped().is_some() {
        book.submit_failed(&ApiError::new(
            ErrorKind::Cancelled,
            false,
            msg!("the run stopped before submitting"),
        ));
        return None;
    }
    progress.println(&msg!(
        "submitting {} request(s) to the Batch API…",
        book.queued()
    ));
    let batch_api = crate::llm::batch::BatchApi::new(client.clone());
    let e = book.submit(&batch_api, cancel).await.err()?;
    book.submit_failed(&e);
    Some(e)
}

/// The manifest, written; the exit code.
pub(super) fn conclude(end: Ending<'_>, ledger: &Ledger) -> RunResult {
    let fold = ledger.take_fold();
    let counts = Counts {
        planned: end.opts.plan.len() as u64,
        ..fold.summary.counts()
    };
    let tokens = fold.summary.tokens();
    let (status, exit, reason) = Stop::outcome(ledger.stopped().as_ref(), &counts);
    let (status, exit, reason) = match &end.submit_error {
        Some(e) if matches!(exit, Exit::Success | Exit::JobsFailed) => submit_failure(e, end.opts),
        _ => (status, exit, reason),
    };
    // A batch that could not be brought up to date: its jobs wait on nothing that moves, so
    // the run is to be tried again later, not reported as done.
    let stalled = end.book.report().stalled;
    let (exit, reason) = match (exit, stalled.first()) {
        (Exit::Success, Some(first)) => (
            Exit::TempFail,
            reason.or_else(|| Some(stalled_reason(first, stalled.len()))),
        ),
        _ => (exit, reason),
    };
    end.book.settle(&fold.settled);
    let batches = (end.book.has_batches() || end.opts.flags.submit_batch.is_some())
        .then(|| end.book.report());
    let mut manifest = manifest(&end, &fold.summary, counts, tokens, status, reason, batches);
    // Extraction skills: the folder's tables, rebuilt from every record (this run's first).
    let (tables, problems) = super::tables::write(
        end.ctx.layout.output_dir(),
        &end.opts.plan.outline.samples,
        &end.opts.skills,
        &fold.for_tables,
        end.opts.flags.table_rows.as_deref(),
    );
    for p in problems {
        end.progress.println(&msg!("warning: {reason}", reason = p));
    }
    manifest.tables = tables;
    manifest.escalations = fold.accounts.escalations;
    manifest.costs = fold.accounts.costs;
    manifest.unpriced = fold.accounts.unpriced;
    manifest.doubts = fold.accounts.doubts;
    manifest.audit = end.ctx.audit.as_ref().map(|a| {
        let top = end
            .ctx
            .escalation
            .last()
            .or_else(|| end.ctx.skill_ladders.values().find_map(|l| l.last()));
        let prices = &end.ctx.config.models.prices;
        a.report(top.map_or("", |r| r.model.as_str()), |t| {
            super::job::cost_of(t, prices)
        })
    });
    // Jobs ran: a manifest that cannot be written is a failure to retry later (exit 75),
    // never "nothing ran"; the records appended so far stay in results.jsonl.
    let exit = match ledger.finish(&manifest, end.ctx.layout.output_dir()) {
        Ok(()) => exit,
        Err(e) => {
            end.progress.println(&msg!(
                "error: cannot write the manifest in {}: {e}; the records written so far are in results.jsonl",
                end.ctx.layout.run(&end.ctx.run_id).display()
            ));
            Exit::TempFail
        }
    };
    RunResult {
        summary: fold.summary.finished(&manifest),
        manifest,
        exit,
    }
}

fn stalled_reason(first: &str, n: usize) -> String {
    format!("{n} batch(es) could not be brought up to date (first: {first}); try again later")
}

/// Submitting failed: the run is to be retried later (75: the provider was out of reach or
/// busy), or trying again cannot help (3: the key, the quota, or a server without a Batch
/// API).
fn submit_failure(e: &ApiError, opts: &RunOptions) -> (RunStatus, Exit, Option<String>) {
    let exit = if e.retryable || e.kind == ErrorKind::Cancelled {
        Exit::TempFail
    } else {
        Exit::Aborted
    };
    let reason = if e.status == Some(404) {
        msg!(
            "submitting the batch failed: {e}; this server has no Batch API at {} (batch mode needs a provider's: Zhipu's, OpenAI's)",
            crate::secret::url_for_display(&opts.config.api.base_url)
        )
    } else {
        msg!("submitting the batch failed: {e}")
    };
    (RunStatus::Aborted, exit, Some(reason))
}

fn manifest(
    end: &Ending<'_>,
    records: &SummaryFold,
    counts: Counts,
    tokens: Tokens,
    status: RunStatus,
    reason: Option<String>,
    batches: Option<crate::manifest::BatchReport>,
) -> RunManifest {
    let (opts, ctx) = (end.opts, end.ctx);
    let (last, peak) = ctx.slots.limits();
    let mut skills_used: BTreeMap<String, String> = BTreeMap::new();
    for j in &opts.plan.outline.samples {
        for s in opts.skills.closure(&j.skill) {
            skills_used.insert(s.name.clone(), s.content_hash());
        }
    }
    let run_dir = ctx.layout.run(&ctx.run_id);
    RunManifest {
        run_id: ctx.run_id.clone(),
        zhi_version: env!("CARGO_PKG_VERSION").to_string(),
        command: opts.command.clone(),
        started_at: end.started_at,
        finished_at: Some(Timestamp::now()),
        status,
        skills: skills_used,
        counts,
        tokens,
        output_dir: ctx.layout.output_dir().display().to_string(),
        // Absolute, like output_dir: usable from wherever the manifest is read.
        results: run_dir.join("results.jsonl").display().to_string(),
        results_csv: run_dir.join("results.csv").display().to_string(),
        shard: opts.plan.shard.map(|s| s.label()),
        shard_source: opts.plan.shard.map(|s| s.source.to_string()),
        reason,
        concurrency: ConcurrencyStats {
            mode: if end.auto {
                ConcurrencyMode::Auto
            } else {
                ConcurrencyMode::Fixed
            },
            initial: end.initial as u32,
            peak: peak as u32,
            last: last as u32,
        },
        planned_job_ids: crate::manifest::PlannedIds::Plan(opts.plan.plan.clone()),
        base_url: Some(crate::secret::url_for_display(&ctx.config.api.base_url)),
        served_model: served_model(records),
        server: ctx.server.clone(),
        // Every HTTP request of the run, the Batch API's calls (status checks, downloads,
        // uploads, creations, deletions) and the OCR engines' included.
        requests: ctx.client.requests_sent().max(records.requests()),
        batches,
        tables: Vec::new(),
        escalations: BTreeMap::new(),
        costs: BTreeMap::new(),
        unpriced: Default::default(),
        doubts: BTreeMap::new(),
        audit: None,
    }
}

/// The model the server said answered most of the run's requests.
fn served_model(records: &SummaryFold) -> Option<String> {
    records
        .served()
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(m, _)| m.clone())
}
