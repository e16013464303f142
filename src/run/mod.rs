//! The executor: takes a plan's jobs through extraction, the agent and the commit, a bounded
//! number at a time, and writes one manifest record per job as it ends.
//!
//! It owns the run's lifecycle — lock, stale-staging cleanup, signals, abort on auth/quota,
//! failure and token budgets — so that whatever happens, every planned job ends with exactly
//! one record and the manifest is written.

mod chunked;
mod eta;
mod job;
pub mod lock;
pub mod outdir;
pub mod progress;
pub mod reader;
pub mod slots;

use crate::agent::tools::DocumentReader;
use crate::config::{Concurrency, Config};
use crate::error::ErrorKind;
use crate::exit::{Exit, ExitError};
use crate::llm::{ChatClient, ClientSettings};
use crate::manifest::{
    ConcurrencyMode, ConcurrencyStats, Counts, JobRecord, ManifestWriter, RunManifest, RunStatus,
    Status, Tokens,
};
use crate::plan::Job;
use crate::plan::Shard;
use crate::plan::cache::{self, CacheIndex, JobCache};
use crate::skills::SkillSet;
use progress::Progress;
use slots::Slots;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Everything a run needs.
pub struct RunOptions {
    pub jobs: Vec<Job>,
    pub skills: Arc<SkillSet>,
    pub config: Config,
    /// Absolute output folder.
    pub output_dir: PathBuf,
    pub shard: Option<Shard>,
    /// Every job id of the whole plan (all shards), written to the manifest so that merging
    /// shards can tell which planned jobs none of them did.
    pub plan_ids: Vec<String>,
    pub force: bool,
    pub max_failures: Option<u64>,
    pub budget_tokens: Option<u64>,
    pub allow_web: bool,
    /// The command line, for the manifest.
    pub command: String,
    /// Show progress (bar or lines).
    pub progress: bool,
    /// Print the summary table (not with `-q`).
    pub summary: bool,
    pub reader: Arc<dyn DocumentReader>,
    /// Cancelled to stop in-flight work at once (the reader's helper programs share it).
    pub cancel: CancellationToken,
    /// `--submit batch`: direct requests go to the provider's Batch API (SPEC §6).
    pub submit_batch: Option<BatchOptions>,
}

/// Batch mode's choices.
#[derive(Debug, Clone, Copy, Default)]
pub struct BatchOptions {
    /// `--agent-jobs run`: jobs that run the agent loop (which a batch cannot carry) run now,
    /// directly; otherwise they fail with `not_batchable`.
    pub run_agent_jobs: bool,
}

/// How a run ended.
pub struct RunResult {
    pub manifest: RunManifest,
    pub exit: Exit,
    pub records: Vec<JobRecord>,
}

/// Why scheduling stopped early.
#[derive(Debug, Clone)]
enum Stop {
    /// Auth or quota: exit 3, in-flight jobs cancelled.
    Abort(ErrorKind, String),
    /// Rate limits outlasted every retry: exit 75.
    RateLimited(String),
    /// `--budget-tokens` reached: exit 3, the rest skipped.
    Budget(u64),
    /// `--max-failures`/`--fail-fast`: exit 1, the rest skipped.
    MaxFailures(u64),
    /// SIGINT (130) or SIGTERM (143).
    Signal(i32),
    /// The output folder cannot be written (disk full, quota, read-only): exit 75, the rest
    /// cancelled — every further job would be work thrown away.
    OutputUnwritable(String),
}

/// Shared by the scheduler, the workers and the signal handler.
struct RunState {
    stop: Mutex<Option<Stop>>,
    /// Cancels in-flight requests (abort, grace period over, second signal).
    hard: CancellationToken,
    /// Wakes the scheduler when scheduling should stop.
    soft: CancellationToken,
    failures: AtomicU64,
    tokens: AtomicU64,
}

impl RunState {
    fn stop(&self, s: Stop) {
        let mut cur = self.stop.lock().unwrap_or_else(|e| e.into_inner());
        // The first reason wins; a signal does not hide an abort that already happened.
        if cur.is_none() {
            *cur = Some(s);
        }
        drop(cur);
        self.soft.cancel();
    }
    fn stopped(&self) -> Option<Stop> {
        self.stop.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A sortable run id: UTC time to the millisecond, plus the shard.
pub fn new_run_id(shard: Option<Shard>) -> String {
    let mut id = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
    if let Some(s) = shard {
        id.push_str(&format!("-shard-{}-of-{}", s.index, s.total));
    }
    id
}

pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Run the jobs.
pub async fn execute(opts: RunOptions) -> Result<RunResult, ExitError> {
    let out = opts.output_dir.clone();
    let zhi_dir = out.join(".zhi");
    // The output folder itself may be anything the user names (a link included); inside
    // it, zhi's own folders are never links.
    std::fs::create_dir_all(&out)
        .and_then(|()| {
            outdir::create_dir_within(&out, &zhi_dir.join("runs"))?;
            [
                "staging",
                "failed",
                "commits",
                "checkpoints",
                "trash",
                "batches",
            ]
            .iter()
            .map(|sub| zhi_dir.join(sub))
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .try_for_each(|p| outdir::create_dir_within(&out, &p))
        })
        .map_err(|e| {
            ExitError::usage(format!("cannot use output folder {}: {e}", out.display()))
        })?;
    let run_id = new_run_id(opts.shard);
    let _lock = lock::RunLock::acquire(&zhi_dir, &run_id)?;
    clean_stale(&zhi_dir);

    let started_at = now_rfc3339();

    let mut settings =
        ClientSettings::new(opts.config.base_url.clone(), opts.config.api_key.clone());
    settings.timeout = opts.config.timeout;
    settings.retry = opts.config.retry;
    settings.rpm = opts.config.rpm;
    settings.tpm = opts.config.tpm;
    let client = ChatClient::new(settings).map_err(|e| ExitError::usage(e.to_string()))?;

    // The output folder's batches: finished ones are collected before any job runs, so their
    // answers are there for the jobs (SPEC §6 "Batch mode").
    let batch_api = crate::llm::batch::BatchApi::new(client.clone());
    let mut book = crate::batch::Book::open(
        &out,
        client.clone(),
        crate::batch::Settings {
            submit: opts.submit_batch.is_some(),
            max_attempts: opts.config.retry.max_attempts,
            max_requests: opts.config.batch_max_requests,
            max_bytes: opts.config.batch_max_bytes,
            base_url: without_credentials(&opts.config.base_url),
            endpoint: crate::llm::batch::chat_endpoint(
                &opts.config.base_url,
                match opts.config.provider {
                    crate::config::Provider::Zhipu => "v4",
                    crate::config::Provider::Openai => "v1",
                },
            ),
            run_id: run_id.clone(),
        },
    );
    if book.has_batches() {
        book.collect(&batch_api, &opts.cancel).await.map_err(|e| {
            ExitError::new(
                Exit::Aborted,
                format!("the Batch API refused to say how the batches are: {e}"),
            )
        })?;
    }
    let book = Arc::new(book);

    // A server that is not a known provider is asked what it is: its context window drives
    // splitting, its slots the concurrency (unless -j says otherwise).
    let mut run_config = opts.config.clone();
    // A batch goes to a provider's Batch API: the chat server is not asked anything.
    let server = if crate::llm::is_known_provider(&run_config.base_url)
        || opts.jobs.is_empty()
        || opts.submit_batch.is_some()
    {
        None
    } else {
        let models: std::collections::BTreeSet<String> = opts
            .jobs
            .iter()
            .map(|j| {
                run_config.model_for(opts.skills.get(&j.skill).and_then(|s| s.model.as_deref()))
            })
            .collect();
        let first = models.iter().next().cloned().unwrap_or_default();
        let info = crate::llm::probe(&client, &first).await;
        if let Some(window) = info.context_window {
            for m in &models {
                run_config.apply_server_window(m, window);
            }
        }
        if let Some(slots) = info.slots.filter(|n| *n > 0) {
            let explicit = run_config
                .origins
                .get("concurrency")
                .is_some_and(|o| !matches!(o, crate::config::Origin::Default));
            match run_config.concurrency {
                // More documents in flight than the server has slots only queue there, and
                // queued requests run into timeouts and retries.
                Concurrency::Fixed(n) if !explicit => {
                    run_config.concurrency = Concurrency::Fixed(n.min(slots as usize).max(1));
                }
                Concurrency::Auto => run_config.concurrency = Concurrency::Fixed(slots as usize),
                Concurrency::Fixed(_) => {}
            }
        }
        tracing::info!(
            kind = info.kind.as_deref().unwrap_or("unknown"),
            context_window = info.context_window,
            slots = info.slots,
            "asked the server what it is"
        );
        Some(info)
    };

    // With the budgets the server gave, a token budget no request fits is refused before the
    // run has a folder or a manifest: nothing ran (exit 2).
    crate::plan::check_tpm(&run_config, &opts.jobs, &opts.skills)?;
    let run_dir = zhi_dir.join("runs").join(&run_id);
    let writer = ManifestWriter::create(&run_dir)
        .map_err(|e| ExitError::usage(format!("cannot create {}: {e}", run_dir.display())))?;

    // Cache status of every job, inputs hashed in parallel, before anything reaches the model.
    let config = run_config.clone();
    let skills = opts.skills.clone();
    let jobs = opts.jobs.clone();
    let out2 = out.clone();
    let force = opts.force;
    let (auto, initial) = match run_config.concurrency {
        Concurrency::Fixed(n) => (false, n),
        Concurrency::Auto => (true, slots::AUTO_START),
    };
    let slots = Arc::new(Slots::new(initial, auto));
    let state = Arc::new(RunState {
        stop: Mutex::new(None),
        hard: opts.cancel.clone(),
        soft: CancellationToken::new(),
        failures: AtomicU64::new(0),
        tokens: AtomicU64::new(0),
    });
    let progress = Arc::new(Progress::new(opts.jobs.len() as u64, opts.progress));
    let writer = Arc::new(Mutex::new(writer));
    let records: Arc<Mutex<Vec<JobRecord>>> = Arc::new(Mutex::new(Vec::new()));

    // Plain progress lines keep coming while long jobs run (CI and cron logs).
    let ticker = {
        let progress = progress.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
            loop {
                every.tick().await;
                progress.tick();
            }
        })
    };
    let signals = tokio::spawn(watch_signals(
        state.clone(),
        opts.config.grace_period,
        progress.clone(),
    ));
    // Inputs are hashed once the signal handlers are in place: a Ctrl-C while hashing a
    // large tree still ends with a manifest and 130.
    let caches: Vec<JobCache> = tokio::task::spawn_blocking(move || {
        let index = CacheIndex::load(&out2, jobs.iter().map(|j| j.id.as_str()));
        let model_of =
            |skill: &str| config.model_for(skills.get(skill).and_then(|s| s.model.as_deref()));
        cache::statuses(&jobs, &index, &skills, &model_of, &out2, force)
    })
    .await
    .map_err(|e| ExitError::usage(format!("planning failed: {e}")))?;
    progress.counters.set_to_run(
        caches
            .iter()
            .zip(&opts.jobs)
            .filter(|(c, j)| !c.cached && j.problem.is_none())
            .count() as u64,
    );

    let rate_watch = {
        let mut rx = client.rate_limit_events();
        let slots = slots.clone();
        tokio::spawn(async move {
            while rx.changed().await.is_ok() {
                slots.on_rate_limited();
            }
        })
    };

    let shared = Arc::new(job::Shared {
        client: client.clone(),
        skills: opts.skills.clone(),
        config: run_config.clone(),
        output_dir: out.clone(),
        run_id: run_id.clone(),
        allow_web: opts.allow_web,
        reader: opts.reader.clone(),
        toolbox: crate::agent::tools::Toolbox::new(),
        cancel: state.hard.clone(),
        slots: slots.clone(),
        progress: progress.counters.clone(),
        server: server.clone(),
        batch: book.is_active().then(|| book.clone()),
    });

    let mut tasks = tokio::task::JoinSet::new();
    let mut unscheduled: Vec<(Job, JobCache)> = Vec::new();
    let mut queue = opts.jobs.clone().into_iter().zip(caches);
    for (job, cache) in queue.by_ref() {
        if state.stopped().is_some() {
            unscheduled.push((job, cache));
            break;
        }
        // Batch mode carries direct requests only; an agent-loop job runs now only when
        // the user said so.
        if opts
            .submit_batch
            .is_some_and(|b| !b.run_agent_jobs && !cache.cached && job.problem.is_none())
            && !batchable(&job, &opts.skills)
        {
            let record = job::not_batchable(&job, &cache, &shared);
            finish_record(record, &writer, &records, &progress, &state, &opts, &slots);
            continue;
        }
        // Cached jobs and jobs that fail at planning take no slot and make no request.
        if cache.cached || job.problem.is_some() {
            let record = if cache.cached {
                job::cached_record(&job, &cache)
            } else {
                job::planned_failure(&job, &cache, &shared)
            };
            finish_record(record, &writer, &records, &progress, &state, &opts, &slots);
            // A kill between a job's record and the removal of its commit journal left the
            // journal behind; a cached job is recorded (again) now, so it goes.
            if cache.cached {
                job::forget_commit(&shared, &job);
            }
            continue;
        }
        tokio::select! {
            biased;
            _ = state.soft.cancelled() => {
                unscheduled.push((job, cache));
                break;
            }
            _ = slots.acquire() => {}
        }
        // The slot may have been freed by the very job that reached a limit.
        if state.stopped().is_some() {
            slots.release();
            unscheduled.push((job, cache));
            break;
        }
        progress.counters.job_started(job.id.as_str());
        progress.tick();
        let shared = shared.clone();
        let slots2 = slots.clone();
        let state2 = state.clone();
        let writer2 = writer.clone();
        let records2 = records.clone();
        let progress2 = progress.clone();
        let opts_small = SmallOpts {
            max_failures: opts.max_failures,
            budget_tokens: opts.budget_tokens,
        };
        tasks.spawn(async move {
            // The job runs as its own task so that a panic in it (a bug, a decoder gone wrong)
            // fails that job with a record, and its slot still frees.
            let inner = {
                let (shared, job, cache) = (shared.clone(), job.clone(), cache.clone());
                tokio::spawn(async move { job::process(&shared, &job, &cache).await })
            };
            let record = match inner.await {
                Ok(record) => record,
                Err(e) => job::crashed(&job, &cache, &shared, &e.to_string()),
            };
            progress2.counters.in_flight.fetch_sub(1, Ordering::Relaxed);
            // Account for the job (budget, failures) before its slot frees, so the scheduler
            // never starts another job past a limit this one reached.
            // The record's flush to disk runs off the async threads too.
            {
                let (shared, slots2) = (shared.clone(), slots2.clone());
                let _ = tokio::task::spawn_blocking(move || {
                    finish_record_small(
                        record,
                        &writer2,
                        &records2,
                        &progress2,
                        &state2,
                        &opts_small,
                        &slots2,
                    );
                    job::forget_commit(&shared, &job);
                })
                .await;
            }
            slots2.release();
        });
    }
    unscheduled.extend(queue);
    while tasks.join_next().await.is_some() {}
    // Batch mode: what the jobs queued goes to the Batch API now, unless the run was stopped
    // (a signal, an abort, a budget): then the next run queues it again. Signals are still
    // watched: an interrupted upload ends with the grace period, and the next run cleans up.
    let mut submit_error = None;
    if opts.submit_batch.is_some() && book.queued() > 0 {
        if state.stopped().is_none() {
            progress.println(&format!(
                "submitting {} request(s) to the Batch API…",
                book.queued()
            ));
            if let Err(e) = book.submit(&batch_api, &state.hard).await {
                book.submit_failed(&e);
                submit_error = Some(e);
            }
        } else {
            book.submit_failed(&crate::llm::ApiError::new(
                ErrorKind::Cancelled,
                false,
                "the run stopped before submitting",
            ));
        }
    }
    signals.abort();
    rate_watch.abort();
    ticker.abort();

    // Every job not run gets its record: skipped for limits, cancelled for aborts and signals.
    let stop = state.stopped();
    for (job, cache) in unscheduled {
        let (status, kind, message) = match &stop {
            Some(Stop::Budget(n)) => (
                Status::Skipped,
                ErrorKind::Skipped,
                format!("token budget of {n} reached"),
            ),
            Some(Stop::MaxFailures(n)) => (
                Status::Skipped,
                ErrorKind::Skipped,
                format!("{n} job(s) failed; --max-failures reached"),
            ),
            Some(Stop::Abort(k, m)) => (
                Status::Cancelled,
                ErrorKind::Cancelled,
                format!("run aborted ({k}): {m}"),
            ),
            Some(Stop::RateLimited(m)) => (
                Status::Cancelled,
                ErrorKind::Cancelled,
                format!("run aborted: {m}"),
            ),
            Some(Stop::Signal(sig)) => (
                Status::Cancelled,
                ErrorKind::Cancelled,
                format!("interrupted by {}", signal_name(*sig)),
            ),
            Some(Stop::OutputUnwritable(m)) => (
                Status::Cancelled,
                ErrorKind::Cancelled,
                format!("not run: {m}"),
            ),
            None => (
                Status::Skipped,
                ErrorKind::Skipped,
                "not scheduled".to_string(),
            ),
        };
        let record = job::not_run(&job, &cache, &shared, status, kind, message);
        finish_record(record, &writer, &records, &progress, &state, &opts, &slots);
    }
    progress.finish();
    let _ = std::fs::remove_dir(zhi_dir.join("staging").join(&run_id));
    let _ = std::fs::remove_dir(zhi_dir.join("staging"));
    let _ = std::fs::remove_dir(zhi_dir.join("trash").join(&run_id));
    let _ = std::fs::remove_dir(zhi_dir.join("trash"));

    let records = std::mem::take(&mut *records.lock().unwrap_or_else(|e| e.into_inner()));
    let mut counts = Counts {
        planned: opts.jobs.len() as u64,
        ..Counts::default()
    };
    let mut tokens = Tokens::default();
    for r in &records {
        counts.add(r.status);
        tokens.add(r.tokens);
    }
    // A budget reached by the very last job stopped nothing: the run completed.
    let stop = match stop {
        Some(Stop::Budget(_)) if counts.skipped == 0 && counts.cancelled == 0 => None,
        other => other,
    };
    let (status, exit, reason) = match &stop {
        Some(Stop::Abort(k, m)) => (RunStatus::Aborted, Exit::Aborted, Some(format!("{k}: {m}"))),
        Some(Stop::Budget(n)) => (
            RunStatus::Aborted,
            Exit::Aborted,
            Some(format!("token budget of {n} reached")),
        ),
        Some(Stop::RateLimited(m)) => (RunStatus::Aborted, Exit::TempFail, Some(m.clone())),
        Some(Stop::OutputUnwritable(m)) => (RunStatus::Aborted, Exit::TempFail, Some(m.clone())),
        Some(Stop::Signal(sig)) => (
            RunStatus::Interrupted,
            if *sig == libc::SIGTERM {
                Exit::Terminated
            } else {
                Exit::Interrupted
            },
            Some(format!("interrupted by {}", signal_name(*sig))),
        ),
        Some(Stop::MaxFailures(n)) => (
            RunStatus::CompletedWithFailures,
            Exit::JobsFailed,
            Some(format!("stopped after {n} failed job(s)")),
        ),
        None if counts.failed > 0 || counts.cancelled > 0 => {
            (RunStatus::CompletedWithFailures, Exit::JobsFailed, None)
        }
        None => (RunStatus::Completed, Exit::Success, None),
    };
    // Submitting failed: the run is to be retried later (75: the provider was out of reach
    // or busy), or trying again cannot help (3: the key, the quota, or a server without a
    // Batch API).
    let (status, exit, reason) = match (&submit_error, exit) {
        (Some(e), Exit::Success | Exit::JobsFailed) => (
            RunStatus::Aborted,
            if e.retryable || e.kind == ErrorKind::Cancelled {
                Exit::TempFail
            } else {
                Exit::Aborted
            },
            Some(if e.status == Some(404) {
                format!(
                    "submitting the batch failed: {e}; this server has no Batch API at {} (batch mode needs a provider's: Zhipu's, OpenAI's)",
                    without_credentials(&opts.config.base_url)
                )
            } else {
                format!("submitting the batch failed: {e}")
            }),
        ),
        _ => (status, exit, reason),
    };
    book.settle(&records);
    let batches = (book.has_batches() || opts.submit_batch.is_some()).then(|| book.report());
    let (last, peak) = slots.limits();
    let mut skills_used: BTreeMap<String, String> = BTreeMap::new();
    for j in &opts.jobs {
        for s in opts.skills.closure(&j.skill) {
            skills_used.insert(s.name.clone(), s.content_hash.clone());
        }
    }
    let manifest = RunManifest {
        run_id: run_id.clone(),
        zhi_version: env!("CARGO_PKG_VERSION").to_string(),
        command: opts.command.clone(),
        started_at,
        finished_at: Some(now_rfc3339()),
        status,
        skills: skills_used,
        counts,
        tokens,
        output_dir: out.display().to_string(),
        // Absolute, like output_dir: usable from wherever the manifest is read.
        results: run_dir.join("results.jsonl").display().to_string(),
        results_csv: run_dir.join("results.csv").display().to_string(),
        shard: opts.shard.map(|s| s.label()),
        reason,
        concurrency: ConcurrencyStats {
            mode: if auto {
                ConcurrencyMode::Auto
            } else {
                ConcurrencyMode::Fixed
            },
            initial: initial as u32,
            peak: peak as u32,
            last: last as u32,
        },
        planned_job_ids: opts.plan_ids.clone(),
        base_url: Some(without_credentials(&run_config.base_url)),
        served_model: served_model(&records),
        server: server.clone(),
        requests: records.iter().map(|r| u64::from(r.requests)).sum(),
        batches,
    };
    let w = writer.lock().unwrap_or_else(|e| e.into_inner());
    // Jobs ran: a manifest that cannot be written is a failure to retry later (exit 75),
    // never "nothing ran"; the records appended so far stay in results.jsonl.
    let exit = match w.finish(&manifest, &out, &records) {
        Ok(()) => exit,
        Err(e) => {
            progress.println(&format!(
                "error: cannot write the manifest in {}: {e}; the records written so far are in results.jsonl",
                run_dir.display()
            ));
            Exit::TempFail
        }
    };
    Ok(RunResult {
        manifest,
        exit,
        records,
    })
}

/// Whether a job's requests can go in a batch: one direct request per document or piece.
fn batchable(job: &Job, skills: &SkillSet) -> bool {
    !job.is_dir
        && skills
            .get(&job.skill)
            .is_some_and(|s| s.direct_output(&job.args).is_some())
}

/// Every job has a transcript, also one that sent no request (cached, failed while planning,
/// not run): then it holds one note saying why. Returns its path relative to the output
/// folder.
fn ensure_transcript(run_dir: &Path, record: &JobRecord) -> String {
    let path = run_dir
        .join("transcripts")
        .join(format!("{}.jsonl", record.job_id));
    if !path.exists() {
        let t = crate::agent::transcript::Transcript::create(&path, None);
        let why = record
            .error
            .as_ref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        t.note(&format!("{}, no request sent{why}", record.status.as_str()));
    }
    // `<OUT>/.zhi/runs/<run-id>` → `.zhi/runs/<run-id>/transcripts/<job-id>.jsonl`.
    let run = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".zhi/runs/{run}/transcripts/{}.jsonl", record.job_id)
}

/// The base URL as a manifest may show it: no user, password or query.
fn without_credentials(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.to_string().trim_end_matches('/').to_string()
        }
        Err(_) => url.split('?').next().unwrap_or("").to_string(),
    }
}

/// The model the server said answered most of the run's requests.
fn served_model(records: &[JobRecord]) -> Option<String> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for r in records {
        if let Some(m) = &r.served_model {
            *seen.entry(m.as_str()).or_default() += 1;
        }
    }
    seen.into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(m, _)| m.to_string())
}

#[derive(Clone, Copy)]
struct SmallOpts {
    max_failures: Option<u64>,
    budget_tokens: Option<u64>,
}

fn finish_record(
    record: JobRecord,
    writer: &Arc<Mutex<ManifestWriter>>,
    records: &Arc<Mutex<Vec<JobRecord>>>,
    progress: &Arc<Progress>,
    state: &Arc<RunState>,
    opts: &RunOptions,
    slots: &Arc<Slots>,
) {
    let small = SmallOpts {
        max_failures: opts.max_failures,
        budget_tokens: opts.budget_tokens,
    };
    finish_record_small(record, writer, records, progress, state, &small, slots);
}

/// Account for one finished job: append its record, update counters, and decide whether the
/// run should stop scheduling.
fn finish_record_small(
    record: JobRecord,
    writer: &Arc<Mutex<ManifestWriter>>,
    records: &Arc<Mutex<Vec<JobRecord>>>,
    progress: &Arc<Progress>,
    state: &Arc<RunState>,
    opts: &SmallOpts,
    slots: &Arc<Slots>,
) {
    let mut record = record;
    let run_dir = writer
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .dir()
        .to_path_buf();
    record.transcript = Some(ensure_transcript(&run_dir, &record));
    if let Err(e) = writer
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .append(&record)
    {
        // Said once: after the first failure every append fails alike.
        if !matches!(state.stopped(), Some(Stop::OutputUnwritable(_))) {
            progress.println(&format!("error: cannot append to results.jsonl: {e}"));
        }
        state.stop(Stop::OutputUnwritable(format!(
            "the output folder cannot be written ({e})"
        )));
    }
    let c = &progress.counters;
    c.job_ended(&record.job_id, record.status);
    let spent = state
        .tokens
        .fetch_add(record.tokens.total(), Ordering::Relaxed)
        + record.tokens.total();
    // The agent counts tokens as each answer arrives; the records' sum is never more.
    c.tokens.fetch_max(spent, Ordering::Relaxed);
    match record.status {
        Status::Succeeded => slots.on_success(),
        Status::Failed => {
            c.failed.fetch_add(1, Ordering::Relaxed);
            let failed = state.failures.fetch_add(1, Ordering::Relaxed) + 1;
            if let Some(e) = &record.error {
                progress.println(&format!(
                    "failed: {} ({}): {}",
                    crate::sanitize::one_line(&record.input),
                    e.kind,
                    crate::sanitize::one_line(&e.message)
                ));
                if e.kind.aborts_run() {
                    state.stop(Stop::Abort(e.kind, e.message.clone()));
                    state.hard.cancel();
                } else if !matches!(state.stopped(), Some(Stop::OutputUnwritable(_)))
                    && let Some(why) = unwritable(&run_dir)
                {
                    state.stop(Stop::OutputUnwritable(why));
                } else if e.kind == ErrorKind::RateLimited {
                    state.stop(Stop::RateLimited(format!(
                        "rate limits outlasted every retry ({})",
                        e.message
                    )));
                }
            }
            if opts.max_failures.is_some_and(|m| failed >= m) {
                state.stop(Stop::MaxFailures(failed));
            }
        }
        _ => {}
    }
    if let Some(b) = opts.budget_tokens
        && spent >= b
    {
        state.stop(Stop::Budget(b));
    }
    progress.tick();
    records
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(record);
}

/// After a job failed (a write of its own, its transcript or its staging may have met a full
/// disk): whether the output folder itself can no longer be written
/// (a full disk, a quota, a read-only remount), by writing a small probe file next to the
/// run's records. A job that failed for its own reasons (a link in its way) leaves the
/// folder writable, and the run goes on.
fn unwritable(run_dir: &Path) -> Option<String> {
    let probe = run_dir.join(format!(".write-probe-{}", std::process::id()));
    let result = std::fs::File::create(&probe).and_then(|mut f| {
        use std::io::Write;
        f.write_all(&[0u8; 64 * 1024])?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(&probe);
    result
        .err()
        .map(|e| format!("the output folder cannot be written ({e}); run again when there is room"))
}

/// First SIGINT/SIGTERM: stop scheduling, let in-flight jobs finish within the grace period,
/// then cancel them. A second signal cancels at once.
async fn watch_signals(state: Arc<RunState>, grace: std::time::Duration, progress: Arc<Progress>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    let first = tokio::select! {
        _ = int.recv() => libc::SIGINT,
        _ = term.recv() => libc::SIGTERM,
    };
    state.stop(Stop::Signal(first));
    crate::exit::interrupt();
    progress.println(&format!(
        "{} received: no new jobs; waiting up to {}s for jobs in flight (signal again to cancel them now)",
        signal_name(first),
        grace.as_secs()
    ));
    tokio::select! {
        _ = tokio::time::sleep(grace) => {}
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
    state.hard.cancel();
}

fn signal_name(sig: i32) -> &'static str {
    if sig == libc::SIGTERM {
        "SIGTERM"
    } else {
        "SIGINT"
    }
}

/// Staging and trash left by a crashed run are removed (we hold the lock, so no run is using
/// them).
fn clean_stale(zhi_dir: &Path) {
    for sub in ["staging", "trash"] {
        let p = zhi_dir.join(sub);
        if p.exists() {
            if let Err(e) = std::fs::remove_dir_all(&p) {
                tracing::warn!("cannot clean {}: {e}", p.display());
            } else {
                tracing::info!("cleaned stale {}", p.display());
            }
        }
    }
}
