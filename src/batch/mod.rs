//! Batch mode (docs/model-api.md#batch-mode, `zhi run … --submit batch`): the requests of direct
//! jobs go through the provider's Batch API — half the price, outside the per-minute limits,
//! answered within a day — and a later run with the same arguments collects the answers.
//!
//! The pipeline is not forked. Every job runs as it would directly; only the one place where a
//! request meets the model asks this book first ([`Book::answer`]): an answer collected from a
//! batch for that very request (same `custom_id`, same body, by SHA-256) is replayed, and goes
//! through the same output checks, corrective rounds, commit and record as a direct answer; a
//! request with no answer yet is queued (batch mode) or sent now (a plain run). A run in batch
//! mode ends by writing the queued requests as JSONL, uploading them and creating the batches
//! ([`Book::submit`]). A long document's pieces go in one batch and its reduce step in the next;
//! a corrective round is the next batch's request. So "succeeded" means the same in both modes.
//!
//! The book lives in `<OUT>/.zhi/batches/<local-id>/` and is only touched under the run lock.
//! Each provider call is bracketed by an atomic rewrite of `batch.json`, so a kill at any point
//! leaves a state the next run can finish ([`Book::collect`]): a request file that may have been
//! uploaded is looked for by name and deleted, a batch that may have been created is looked for
//! by its input file and adopted (never created twice), results downloaded are kept until
//! every job they answer is settled, and every file zhi uploaded or was given is deleted from
//! the provider once the batch is collected.

mod answers;
pub(crate) mod record;

use crate::error::ErrorKind;
use crate::llm::batch::{
    BatchApi, BatchInfo, LineOutcome, parse_answer_line, plain_id, request_line,
};
use crate::llm::{ApiError, ChatClient, ChatReply, ChatRequest};
use crate::manifest::{BatchReport, Submitted, Waiting};
use answers::{Answers, Place};
use record::{BatchRecord, Request, Stage};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// What a run does with its requests.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Batch mode: queue requests for the Batch API instead of sending them.
    pub submit: bool,
    /// Submissions of one request at most (`retry.max_attempts`).
    pub max_attempts: u32,
    /// Requests per batch file at most.
    pub max_requests: usize,
    /// Bytes per batch file at most.
    pub max_bytes: u64,
    /// The API base without credentials, as recorded in each batch.
    pub base_url: String,
    /// The `url` of each request line (`/v4/chat/completions`).
    pub endpoint: String,
    /// The run's id: batches it submits are named after it.
    pub run_id: String,
    /// Runs in a row that may fail to bring a batch up to date before it is given up.
    pub max_stalled_runs: u32,
}

/// What the book says of one request.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A batch answered it: the reply as the chat call would have returned it.
    Reply(ChatReply),
    /// A batch answered with a failure that another submission cannot mend (or the request
    /// has had every submission it may have).
    Failed(ApiError),
    /// Batch mode: it waits for the Batch API (queued now, or in a batch still running).
    Waiting(String),
    /// Not batch mode and no answer: send it now.
    Send,
}

/// One request queued for the next batch.
#[derive(Debug, Clone)]
struct Queued {
    custom_id: String,
    job_id: String,
    model: String,
    body: Vec<u8>,
    sha256: String,
    attempt: u32,
}

/// The batches of one output folder, for one run.
pub(crate) struct Book {
    dir: PathBuf,
    out: PathBuf,
    settings: Settings,
    client: ChatClient,
    records: Mutex<Vec<BatchRecord>>,
    answers: Answers,
    /// Requests in batches still running: `custom_id` → (body SHA-256, batch, status).
    in_flight: HashMap<String, Vec<(String, String, String)>>,
    outbox: Mutex<Vec<Queued>>,
    used: AtomicU64,
    report: Mutex<BatchReport>,
}

/// The provider answered, and said no (a 4xx other than a rate limit): what was asked was
/// surely not done.
fn refused(e: &ApiError) -> bool {
    e.status.is_some_and(|s| (400..500).contains(&s)) && e.kind != ErrorKind::RateLimited
}

/// A failure no later run can mend for this batch: the batch or its file is not found (404),
/// an id is not a plain token, a result file over the cap. Not the key, a quota or the
/// network.
fn final_for_batch(e: &ApiError) -> bool {
    !e.retryable
        && !e.aborts_run()
        && !matches!(e.kind, ErrorKind::Cancelled | ErrorKind::Io)
        && (e.status.is_none_or(|s| s == 404 || s == 410))
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `custom_id` of a request: the job, the piece of its document, the round of its conversation.
pub(crate) fn custom_id(job_id: &str, part: &str, round: u32) -> String {
    let mut id = job_id.to_string();
    if !part.is_empty() {
        id.push('-');
        id.push_str(part);
    }
    if round > 1 {
        id.push_str(&format!("-t{round}"));
    }
    id
}

/// A job's (or a piece's) handle on the book: what the agent asks before a request.
#[derive(Clone)]
pub(crate) struct Ticket {
    book: Arc<Book>,
    job_id: String,
    part: String,
}

impl Ticket {
    /// `part` names the piece of the document (`piece-00003`, `reduce`); empty for the whole.
    pub(crate) fn new(book: Arc<Book>, job_id: &str, part: &str) -> Ticket {
        Ticket {
            book,
            job_id: job_id.to_string(),
            part: part.to_string(),
        }
    }

    /// The book's answer to round `round` of this conversation, `req`.
    pub(crate) fn answer(&self, round: u32, req: &ChatRequest) -> Answer {
        self.book.answer(
            &custom_id(&self.job_id, &self.part, round),
            &self.job_id,
            req,
        )
    }
}

impl Book {
    /// The book of the output folder `out` (no network): the batches recorded so far.
    pub(crate) fn open(
        layout: &crate::layout::OutputLayout,
        client: ChatClient,
        settings: Settings,
    ) -> Book {
        let (out, dir) = (layout.output_dir(), layout.batches());
        let mut report = BatchReport::default();
        let records = record::load_all(&dir, &mut |w| report.problems.push(w));
        Book {
            dir,
            out: out.to_path_buf(),
            settings,
            client,
            records: Mutex::new(records),
            answers: Answers::default(),
            in_flight: HashMap::new(),
            outbox: Mutex::new(Vec::new()),
            used: AtomicU64::new(0),
            report: Mutex::new(report),
        }
    }

    /// Whether any batch is recorded.
    pub(crate) fn has_batches(&self) -> bool {
        !self.lock_records().is_empty()
    }

    /// Whether jobs must ask the book before sending a request.
    pub(crate) fn is_active(&self) -> bool {
        self.settings.submit || !self.answers.is_empty() || !self.in_flight.is_empty()
    }

    fn lock_records(&self) -> std::sync::MutexGuard<'_, Vec<BatchRecord>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn problem(&self, text: String) {
        tracing::warn!("{text}");
        self.report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .problems
            .push(text);
    }

    fn save(&self, r: &BatchRecord) -> Result<(), ApiError> {
        record::save(&self.out, &self.dir, r).map_err(|e| {
            ApiError::new(
                ErrorKind::Io,
                false,
                msg!("cannot write the batch record of {}: {e}", r.local_id),
            )
        })
    }

    /// Bring every recorded batch up to date with the provider: finish what a killed run left
    /// half done, ask running batches how they are, download the answers of finished ones and
    /// delete their files from the provider. Then index the answers for the run's jobs.
    ///
    /// Only an authentication or quota failure is returned (the run cannot go on); anything
    /// else is reported and left for the next run.
    pub(crate) async fn collect(
        &mut self,
        api: &BatchApi,
        cancel: &CancellationToken,
    ) -> Result<(), ApiError> {
        let records = std::mem::take(&mut *self.lock_records());
        let mut kept = Vec::with_capacity(records.len());
        let mut rest = records.into_iter();
        while let Some(mut r) = rest.next() {
            if r.base_url != self.settings.base_url {
                if r.stage != Stage::Collected {
                    self.problem(msg!(
                        "batch {} belongs to {}; run with --base-url {} to collect it",
                        r.label(),
                        r.base_url,
                        r.base_url
                    ));
                }
                kept.push(r);
                continue;
            }
            match self.step(api, &mut r, cancel).await {
                Ok(true) => {
                    if r.stalled_runs > 0 && r.given_up.is_none() {
                        r.stalled_runs = 0;
                        let _ = self.save(&r);
                    }
                    kept.push(r);
                }
                Ok(false) => {}
                Err(e) if e.aborts_run() || e.kind == ErrorKind::Cancelled => {
                    kept.push(r);
                    kept.extend(rest);
                    *self.lock_records() = kept;
                    return Err(e);
                }
                Err(e) => {
                    self.stalled(api, &mut r, &e, cancel).await;
                    kept.push(r);
                }
            }
        }
        let ours: Vec<&BatchRecord> = kept
            .iter()
            .filter(|r| r.base_url == self.settings.base_url)
            .collect();
        self.answers = Answers::build(&self.dir, &ours).unwrap_or_else(|e| {
            self.problem(msg!("cannot read the collected batch answers: {e}"));
            Answers::default()
        });
        let mut waiting = Vec::new();
        // A batch whose creation could not be confirmed (the provider did not answer) may
        // exist: its requests count as running, so they are never submitted twice.
        for r in ours
            .iter()
            .filter(|r| matches!(r.stage, Stage::Submitted | Stage::Uploaded))
        {
            let status = match r.stage {
                Stage::Uploaded => "creation not confirmed".to_string(),
                _ => r.status.clone().unwrap_or_else(|| "submitted".into()),
            };
            for q in &r.requests {
                self.in_flight
                    .entry(q.custom_id.clone())
                    .or_default()
                    .push((q.sha256.clone(), r.label().to_string(), status.clone()));
            }
            let counts = r.request_counts.unwrap_or_default();
            waiting.push(Waiting {
                batch_id: r.label().to_string(),
                status,
                requests: r.requests.len() as u64,
                completed: counts.completed,
                failed: counts.failed,
            });
        }
        self.report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .waiting = waiting;
        *self.lock_records() = kept;
        Ok(())
    }

    /// One batch as far as it can go now. `Ok(false)`: nothing of it is left to keep.
    async fn step(
        &self,
        api: &BatchApi,
        r: &mut BatchRecord,
        cancel: &CancellationToken,
    ) -> Result<bool, ApiError> {
        let folder = record::folder(&self.dir, &r.local_id);
        if r.stage == Stage::Prepared {
            return self.forget_prepared(api, r, &folder, cancel).await;
        }
        if r.stage == Stage::Uploaded {
            let input = r.input_file_id.clone().unwrap_or_default();
            // A kill while the batch was created: adopt the batch if it exists, so its
            // requests are never submitted twice.
            match api.find_batch(&input, cancel).await {
                Ok(Some(info)) if plain_id(&info.id).is_ok() => {
                    r.batch_id = Some(info.id.clone());
                    r.stage = Stage::Submitted;
                    self.update(r, &info);
                    self.save(r)?;
                    let _ = std::fs::remove_file(folder.join("input.jsonl"));
                }
                Ok(Some(info)) => {
                    let e = plain_id(&info.id).err().unwrap_or_else(ApiError::cancelled);
                    self.give_up(api, r, e.message, false, cancel).await?;
                }
                Ok(None) => {
                    api.delete_file(&input, cancel).await?;
                    let _ = std::fs::remove_dir_all(&folder);
                    return Ok(false);
                }
                // The provider will not say whether the batch exists: another run cannot
                // learn more, and submitting again may answer (and bill) everything twice.
                Err(e) if refused(&e) => {
                    let reason = msg!("its creation cannot be confirmed: {e}");
                    self.give_up(api, r, reason, false, cancel).await?;
                }
                Err(e) => return Err(e),
            }
        }
        if r.stage == Stage::Submitted {
            let id = r.batch_id.clone().unwrap_or_default();
            let info = match api.get(&id, cancel).await {
                Ok(info) => info,
                // Gone at the provider (or an id no call can use): it will never answer.
                Err(e) if final_for_batch(&e) => {
                    let reason = msg!("the provider cannot give its status: {e}");
                    self.give_up(api, r, reason, true, cancel).await?;
                    return self.delete_files(api, r, cancel).await;
                }
                Err(e) => return Err(e),
            };
            self.update(r, &info);
            if !info.is_finished() {
                self.save(r)?;
                return Ok(true);
            }
            // The answers first: a result file that fails for good is given up (its requests
            // are submitted again); an error file that fails never holds them hostage.
            if let Some(file) = r.output_file_id.clone() {
                match api
                    .download(&file, &folder.join("output.jsonl"), cancel)
                    .await
                {
                    Ok(_) => {}
                    Err(e) if final_for_batch(&e) => {
                        let reason = msg!("its result file cannot be downloaded: {e}");
                        self.give_up(api, r, reason, true, cancel).await?;
                        return self.delete_files(api, r, cancel).await;
                    }
                    Err(e) => return Err(e),
                }
            }
            if let Some(file) = r.error_file_id.clone() {
                match api.download(&file, &folder.join("errors.jsonl"), cancel).await {
                    Ok(_) => {}
                    Err(e) if e.aborts_run() || e.kind == ErrorKind::Cancelled => return Err(e),
                    Err(e) => self.problem(msg!(
                        "the error file of batch {id} cannot be downloaded ({e}); the requests it lists are submitted again"
                    )),
                }
            }
            r.stage = Stage::Collected;
            r.collected_at = Some(crate::manifest::Timestamp::now());
            self.save(r)?;
            self.report
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .collected
                .push(id);
        }
        self.delete_files(api, r, cancel).await
    }

    /// A batch killed during its upload: the file the provider may hold is deleted, and the
    /// batch's folder. `Ok(false)`: nothing of it is left to keep.
    async fn forget_prepared(
        &self,
        api: &BatchApi,
        r: &BatchRecord,
        folder: &std::path::Path,
        cancel: &CancellationToken,
    ) -> Result<bool, ApiError> {
        // A kill during the upload: a file the provider may hold is found by its name and
        // deleted. The requests were never in a batch; this run queues them again.
        match api.find_file(&r.file_name, cancel).await {
            Ok(Some(id)) => api.delete_file(&id, cancel).await?,
            Ok(None) => {}
            // The provider cannot list its files: nothing to do but say so (no batch was
            // made from it, so nothing is submitted twice).
            Err(e) if refused(&e) => self.problem(msg!(
                "cannot look for the file {} that an interrupted run may have uploaded ({e}); delete it in the provider's console if it is there",
                r.file_name
            )),
            Err(e) => return Err(e),
        }
        let _ = std::fs::remove_dir_all(folder);
        Ok(false)
    }

    /// A collected batch's files go from the provider (a given-up batch's as far as they can:
    /// a failure there is not worth another run).
    async fn delete_files(
        &self,
        api: &BatchApi,
        r: &mut BatchRecord,
        cancel: &CancellationToken,
    ) -> Result<bool, ApiError> {
        if r.stage == Stage::Collected && !r.files_deleted {
            for file in r.provider_files() {
                match api.delete_file(&file, cancel).await {
                    Ok(()) => {}
                    Err(e) if r.given_up.is_some() && !e.aborts_run() => {}
                    Err(e) => return Err(e),
                }
            }
            r.files_deleted = true;
            self.save(r)?;
        }
        Ok(true)
    }

    /// The batch will never be collected: it is recorded as collected without answers, so
    /// its requests are submitted again (`resubmit`, within `retry.max_attempts`) or fail.
    /// A batch that may still run at the provider is asked to stop first.
    async fn give_up(
        &self,
        api: &BatchApi,
        r: &mut BatchRecord,
        reason: String,
        resubmit: bool,
        cancel: &CancellationToken,
    ) -> Result<(), ApiError> {
        if let Some(id) = r.batch_id.clone().filter(|id| plain_id(id).is_ok())
            && r.stage == Stage::Submitted
        {
            let _ = api.cancel(&id, cancel).await;
        }
        self.problem(if resubmit {
            msg!(
                "batch {label} is given up: {reason}; its unanswered requests are submitted again",
                label = r.label()
            )
        } else {
            format!(
                "batch {label} is given up: {reason}; its requests fail, since it may still run at the provider (see the provider's console)",
                label = r.label()
            )
        });
        r.given_up = Some(record::GivenUp { reason, resubmit });
        r.stage = Stage::Collected;
        r.collected_at = Some(crate::manifest::Timestamp::now());
        self.save(r)
    }

    /// This run could not bring the batch up to date: counted; at `batch.max_stalled_runs`
    /// runs in a row it is given up, before that the run ends with 75 (try again later).
    async fn stalled(
        &self,
        api: &BatchApi,
        r: &mut BatchRecord,
        e: &ApiError,
        cancel: &CancellationToken,
    ) {
        r.stalled_runs += 1;
        if r.stalled_runs >= self.settings.max_stalled_runs {
            let reason = msg!(
                "{n} runs in a row could not bring it up to date (last: {e})",
                n = r.stalled_runs
            );
            let resubmit = r.stage != Stage::Uploaded;
            if let Err(e) = self.give_up(api, r, reason, resubmit, cancel).await {
                self.problem(e.to_string());
            }
            return;
        }
        self.problem(msg!(
            "batch {label} could not be brought up to date (the next run tries again; {n} of {max} runs): {e}",
            label = r.label(),
            n = r.stalled_runs,
            max = self.settings.max_stalled_runs
        ));
        if let Err(e) = self.save(r) {
            self.problem(e.to_string());
        }
        self.report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stalled
            .push(r.label().to_string());
    }

    fn update(&self, r: &mut BatchRecord, info: &BatchInfo) {
        r.status = Some(info.status.clone());
        r.request_counts = info.request_counts;
        r.output_file_id = info.output_file_id.clone().or(r.output_file_id.take());
        r.error_file_id = info.error_file_id.clone().or(r.error_file_id.take());
        r.checked_at = Some(crate::manifest::Timestamp::now());
        if info.status == "failed"
            && let Some(errors) = &info.errors
        {
            self.problem(msg!(
                "batch {} failed at the provider: {}",
                info.id,
                crate::sanitize::one_line(&errors.to_string())
            ));
        }
    }

    /// The book's answer to a request about to be sent.
    pub(crate) fn answer(&self, custom_id: &str, job_id: &str, req: &ChatRequest) -> Answer {
        let body = match crate::llm::chat_body(req) {
            Ok(b) => b,
            Err(e) => return Answer::Failed(e),
        };
        let sha = sha256_hex(&body);
        let mut attempt = 1;
        if let Some(found) = self.answers.latest(custom_id, &sha) {
            match self.read(found) {
                Ok(mut reply) => {
                    reply.attempts = found.attempt;
                    self.used.fetch_add(1, Ordering::Relaxed);
                    return Answer::Reply(reply);
                }
                Err(mut e) => {
                    e.attempts = found.attempt;
                    e.message = format!("batch {}: {}", found.batch, e.message);
                    if e.retryable && found.attempt < self.settings.max_attempts {
                        attempt = found.attempt + 1;
                    } else if !e.retryable || self.settings.submit {
                        if e.retryable {
                            e.message
                                .push_str(&format!(" (after {} batch submissions)", found.attempt));
                        }
                        return Answer::Failed(e);
                    }
                }
            }
        }
        if !self.settings.submit {
            return Answer::Send;
        }
        if let Some((_, batch, status)) = self
            .in_flight
            .get(custom_id)
            .and_then(|v| v.iter().find(|(s, _, _)| *s == sha))
        {
            return Answer::Waiting(msg!(
                "waiting in batch {batch} ({status}); a later `zhi run` with the same arguments collects the answer"
            ));
        }
        let mut outbox = self.outbox.lock().unwrap_or_else(|e| e.into_inner());
        if !outbox.iter().any(|q| q.custom_id == custom_id) {
            outbox.push(Queued {
                custom_id: custom_id.to_string(),
                job_id: job_id.to_string(),
                model: req.model.clone(),
                body,
                sha256: sha,
                attempt,
            });
        }
        Answer::Waiting(msg!(
            "queued for the Batch API as request {custom_id}{}; a later `zhi run` with the same arguments collects the answer",
            if attempt > 1 {
                format!(" (submission {attempt})")
            } else {
                String::new()
            }
        ))
    }

    fn read(&self, found: &answers::Found) -> Result<ChatReply, ApiError> {
        let (file, offset, len) = match &found.place {
            Place::Line { file, offset, len } => (*file, *offset, *len),
            Place::Missing { status, resubmit } => {
                return Err(ApiError::new(
                    ErrorKind::ApiError,
                    *resubmit,
                    msg!("the batch ended ({status}) without answering this request"),
                ));
            }
            Place::Conflict => {
                return Err(ApiError::new(
                    ErrorKind::ApiError,
                    false,
                    msg!(
                        "the batch answered this request twice, differently; neither answer is used"
                    ),
                ));
            }
        };
        let line = self.answers.read(file, offset, len).map_err(|e| {
            ApiError::new(
                ErrorKind::Io,
                false,
                msg!("cannot read the batch answer: {e}"),
            )
        })?;
        match parse_answer_line(&line).map(|l| l.outcome) {
            Some(LineOutcome::Response { status, body }) => self
                .client
                .batch_answer(status, &body, found.attempt)
                .map_err(|mut e| {
                    // One answer in a finished batch says nothing of this run's key or quota:
                    // the job fails, the run goes on.
                    if e.aborts_run() {
                        e.kind = ErrorKind::ApiError;
                        e.retryable = false;
                    }
                    e
                }),
            Some(LineOutcome::Error(e)) => Err(e),
            None => Err(ApiError::new(
                ErrorKind::ApiError,
                true,
                msg!("the batch answer is not a JSON line"),
            )),
        }
    }

    /// Requests queued by this run so far.
    pub(crate) fn queued(&self) -> usize {
        self.outbox.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Write the queued requests as batch files (one model per batch, within the provider's
    /// limits), upload them and create the batches, recording each step. On a failure the
    /// rest stay unsubmitted (their jobs are recorded as waiting and are queued again by the
    /// next run) and the error is returned.
    pub(crate) async fn submit(
        &self,
        api: &BatchApi,
        cancel: &CancellationToken,
    ) -> Result<(), ApiError> {
        let queued = std::mem::take(&mut *self.outbox.lock().unwrap_or_else(|e| e.into_inner()));
        self.report.lock().unwrap_or_else(|e| e.into_inner()).queued = queued.len() as u64;
        let mut by_model: BTreeMap<String, Vec<Queued>> = BTreeMap::new();
        for q in queued {
            by_model.entry(q.model.clone()).or_default().push(q);
        }
        let mut n = 0;
        for (model, requests) in by_model {
            let mut files: Vec<(Vec<u8>, Vec<Request>)> = Vec::new();
            let mut current: (Vec<u8>, Vec<Request>) = (Vec::new(), Vec::new());
            for q in requests {
                let line = request_line(&q.custom_id, &self.settings.endpoint, &q.body);
                let full = current.1.len() >= self.settings.max_requests
                    || (current.0.len() + line.len()) as u64 > self.settings.max_bytes;
                if full && !current.1.is_empty() {
                    files.push(std::mem::take(&mut current));
                }
                current.0.extend_from_slice(&line);
                current.1.push(Request {
                    custom_id: q.custom_id,
                    job_id: q.job_id,
                    sha256: q.sha256,
                    attempt: q.attempt,
                });
            }
            if !current.1.is_empty() {
                files.push(current);
            }
            for (bytes, requests) in files {
                n += 1;
                self.submit_one(api, &model, n, bytes, requests, cancel)
                    .await?;
            }
        }
        Ok(())
    }

    async fn submit_one(
        &self,
        api: &BatchApi,
        model: &str,
        n: usize,
        bytes: Vec<u8>,
        requests: Vec<Request>,
        cancel: &CancellationToken,
    ) -> Result<(), ApiError> {
        let local_id = format!("{}-{n}", self.settings.run_id);
        let folder = record::folder(&self.dir, &local_id);
        let io = |what: &str, e: std::io::Error| {
            ApiError::new(
                ErrorKind::Io,
                false,
                msg!("cannot write {what} of batch {local_id}: {e}"),
            )
        };
        crate::layout::create_dir_within(&self.out, &folder)
            .map_err(|e| io(&msg!("the folder"), e))?;
        crate::layout::OutputLayout::new(&self.out)
            .write_atomic(&folder.join("input.jsonl"), &bytes)
            .map_err(|e| io(&msg!("the request file"), e))?;
        let count = requests.len() as u64;
        let mut r = BatchRecord::prepared(
            &local_id,
            crate::manifest::Timestamp::now(),
            (
                self.settings.base_url.clone(),
                self.settings.endpoint.clone(),
            ),
            model,
            requests,
        );
        self.save(&r)?;
        self.lock_records().push(r.clone());
        let file_id = match self.upload_confirmed(api, &r, &bytes, cancel).await {
            Ok(id) => id,
            Err(e) => {
                // Refused outright: no file was made, nothing is left to look for.
                if refused(&e) {
                    self.forget(&r.local_id);
                }
                return Err(e);
            }
        };
        drop(bytes);
        r.input_file_id = Some(file_id.clone());
        r.stage = Stage::Uploaded;
        self.save(&r)?;
        self.replace(&r);
        let info = match self
            .create_confirmed(api, &file_id, &local_id, cancel)
            .await
        {
            Ok(info) => info,
            Err(e) => {
                // Refused outright: no batch was made; the upload goes.
                if refused(&e) && api.delete_file(&file_id, cancel).await.is_ok() {
                    self.forget(&r.local_id);
                }
                return Err(e);
            }
        };
        r.batch_id = Some(info.id.clone());
        r.stage = Stage::Submitted;
        self.update(&mut r, &info);
        self.save(&r)?;
        self.replace(&r);
        let _ = std::fs::remove_file(folder.join("input.jsonl"));
        tracing::info!(batch = %info.id, requests = count, "{}", msg!("batch submitted"));
        self.report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .submitted
            .push(Submitted {
                batch_id: info.id,
                local_id,
                model: model.to_string(),
                requests: count,
            });
        Ok(())
    }

    /// The upload, never repeated blindly: after a failure that may have happened after the
    /// provider stored the file (a 5xx, a lost connection), the file is looked for by its name
    /// and adopted if there; only a file surely absent is uploaded again, within
    /// `retry.max_attempts`.
    async fn upload_confirmed(
        &self,
        api: &BatchApi,
        r: &BatchRecord,
        bytes: &[u8],
        cancel: &CancellationToken,
    ) -> Result<String, ApiError> {
        let policy = self.client.retry_policy();
        let mut attempt = 1;
        loop {
            let e = match api.upload(&r.file_name, bytes, cancel).await {
                Ok(id) => return Ok(id),
                Err(e) if refused(&e) || !e.retryable => return Err(e),
                Err(e) => e,
            };
            match api.find_file(&r.file_name, cancel).await {
                Ok(Some(id)) if plain_id(&id).is_ok() => {
                    tracing::info!(file = %id, "{}", msg!("an upload that seemed to fail was made; adopted"));
                    return Ok(id);
                }
                Ok(_) if attempt < policy.max_attempts => {}
                // Surely not there, and no attempt left: nothing to clean up.
                Ok(_) => {
                    self.forget(&r.local_id);
                    return Err(e);
                }
                // The provider will not say: the record stays `prepared`, and the next run
                // looks again.
                Err(_) => return Err(e),
            }
            self.pause(&policy, attempt, &e, cancel).await?;
            attempt += 1;
        }
    }

    /// The creation of a batch, never repeated blindly (a retried creation after a lost
    /// answer makes a second batch, billed twice): after a failure that may have come after
    /// the batch was made, it is looked for by its input file and adopted; only a batch
    /// surely absent is created again, within `retry.max_attempts`.
    async fn create_confirmed(
        &self,
        api: &BatchApi,
        file_id: &str,
        local_id: &str,
        cancel: &CancellationToken,
    ) -> Result<BatchInfo, ApiError> {
        let policy = self.client.retry_policy();
        let metadata = serde_json::json!({"zhi_batch": local_id});
        let mut attempt = 1;
        loop {
            let e = match api
                .create(file_id, &self.settings.endpoint, metadata.clone(), cancel)
                .await
            {
                Ok(info) => return Ok(info),
                Err(e) if refused(&e) || !e.retryable => return Err(e),
                Err(e) => e,
            };
            match api.find_batch(file_id, cancel).await {
                Ok(Some(info)) if plain_id(&info.id).is_ok() => {
                    tracing::info!(batch = %info.id, "{}", msg!("a creation that seemed to fail was made; adopted"));
                    return Ok(info);
                }
                Ok(_) if attempt < policy.max_attempts => {}
                // Surely not made, and no attempt left: the upload goes.
                Ok(_) => {
                    if api.delete_file(file_id, cancel).await.is_ok() {
                        self.forget(local_id);
                    }
                    return Err(e);
                }
                // The record stays `uploaded`: the next run looks again, and gives the batch
                // up if the provider never says.
                Err(_) => return Err(e),
            }
            self.pause(&policy, attempt, &e, cancel).await?;
            attempt += 1;
        }
    }

    async fn pause(
        &self,
        policy: &crate::config::RetryPolicy,
        attempt: u32,
        e: &ApiError,
        cancel: &CancellationToken,
    ) -> Result<(), ApiError> {
        let wait = crate::llm::backoff(policy, attempt - 1, e.retry_after);
        tokio::select! {
            _ = tokio::time::sleep(wait) => Ok(()),
            _ = cancel.cancelled() => Err(ApiError::cancelled()),
        }
    }

    /// A batch that surely never existed at the provider: its folder and record go.
    fn forget(&self, local_id: &str) {
        let _ = std::fs::remove_dir_all(record::folder(&self.dir, local_id));
        self.lock_records().retain(|r| r.local_id != local_id);
    }

    fn replace(&self, r: &BatchRecord) {
        let mut records = self.lock_records();
        if let Some(slot) = records.iter_mut().find(|x| x.local_id == r.local_id) {
            *slot = r.clone();
        }
    }

    /// The run is over: answers whose jobs ended (succeeded, failed, cached) are no longer
    /// needed, and a collected batch none of whose answers is needed goes.
    pub(crate) fn settle(&self, settled: &HashSet<String>) {
        let mut all = self.lock_records();
        all.retain_mut(|r| {
            if r.stage != Stage::Collected || r.base_url != self.settings.base_url {
                return true;
            }
            let before = r.settled_jobs.len();
            for q in &r.requests {
                if settled.contains(&q.job_id) {
                    r.settled_jobs.insert(q.job_id.clone());
                }
            }
            if r.all_settled() && r.files_deleted {
                let _ = std::fs::remove_dir_all(record::folder(&self.dir, &r.local_id));
                return false;
            }
            if r.settled_jobs.len() != before
                && let Err(e) = record::save(&self.out, &self.dir, r)
            {
                tracing::warn!(
                    "{}",
                    msg!("cannot write the batch record of {}: {e}", r.local_id)
                );
            }
            true
        });
        if all.is_empty() {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }

    /// What the run did with batches.
    pub(crate) fn report(&self) -> BatchReport {
        let mut r = self
            .report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        r.answers_used = self.used.load(Ordering::Relaxed);
        r
    }

    /// Note a failure to submit.
    pub(crate) fn submit_failed(&self, e: &ApiError) {
        self.problem(msg!(
            "the queued requests could not all be submitted (the next run queues them again): {e}"
        ));
    }
}
