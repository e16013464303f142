//! The run's books: every job's record goes through [`Ledger::record`] exactly once, which
//! appends it to `results.jsonl`, counts it, and decides whether the run must stop (an abort,
//! `--max-failures`, `--budget-tokens`, a folder that can no longer be written).
//!
//! A record is never lost: a failed append stops the run with exit 75 and the record is still
//! counted in the manifest; a panic while writing it is caught and treated the same way.
//!
//! Once written, a record is folded into what the end of the run needs ([`RunFold`]: the
//! summary's sums, the costs, the rows of the folder's tables) and dropped: a rerun of a
//! million cached jobs holds none of their records.

use super::progress::Progress;
use super::slots::Slots;
use super::stop::Stop;
use crate::confine::Root;
use crate::error::ErrorKind;
use crate::layout::OutputLayout;
use crate::manifest::RecordLine;
use crate::manifest::summary::SummaryFold;
use crate::manifest::{Accounts, JobRecord, ManifestWriter, RunManifest, Status};
use std::collections::HashSet;
use std::io;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;

/// Where records go: `results.jsonl` in a run's folder.
pub(super) trait RecordSink: Send {
    fn append(&mut self, record: &JobRecord) -> io::Result<()>;
    /// The run's folder (`.zhi/runs/<run-id>`).
    fn dir(&self) -> &Path;
    /// After the last record: `results.csv` and `manifest.json`.
    fn finish(&mut self, manifest: &RunManifest, output_dir: &Path) -> io::Result<()>;
    /// Where each record line went and the file's length, for the cache index (`None`: not
    /// known). Handed over once, at the end of the run.
    fn take_lines(&mut self) -> Option<(Vec<RecordLine>, u64)> {
        None
    }
    /// The run's folder, held open (reached beneath the output folder's handle), when the
    /// sink holds one: the transcripts' notes and the write probe go through it.
    fn folder(&self) -> Option<Root> {
        None
    }
}

impl RecordSink for ManifestWriter {
    fn append(&mut self, record: &JobRecord) -> io::Result<()> {
        ManifestWriter::append(self, record)
    }
    fn dir(&self) -> &Path {
        ManifestWriter::dir(self)
    }
    fn finish(&mut self, manifest: &RunManifest, output_dir: &Path) -> io::Result<()> {
        ManifestWriter::finish(self, manifest, output_dir)
    }
    fn take_lines(&mut self) -> Option<(Vec<RecordLine>, u64)> {
        ManifestWriter::take_lines(self)
    }
    fn folder(&self) -> Option<Root> {
        ManifestWriter::folder(self).try_clone().ok()
    }
}

/// The limits a run stops at.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct StopRules {
    pub max_failures: Option<u64>,
    pub budget_tokens: Option<u64>,
    /// `--budget-cost`: the records' costs added up (docs/escalation.md#cost).
    pub budget_cost: Option<f64>,
}

/// What of its records a run keeps beyond their sums.
#[derive(Debug, Default)]
pub(super) struct Keep {
    /// Skills whose jobs feed a table of the output folder (docs/extract.md#the-folders-table):
    /// their records are kept whole, to build the tables from.
    pub table_skills: HashSet<String>,
    /// Whether the ids of the jobs that ended are kept, to settle the Batch API's collected
    /// batches with.
    pub settled_ids: bool,
}

/// What the end of the run needs of its records, added up as each is written.
#[derive(Debug, Default)]
pub(super) struct RunFold {
    pub summary: SummaryFold,
    pub accounts: Accounts,
    /// The records of the jobs that feed a table, in record order.
    pub for_tables: Vec<JobRecord>,
    /// The jobs that ended (succeeded, failed, cached), when [`Keep::settled_ids`].
    pub settled: HashSet<String>,
    keep: Keep,
}

impl RunFold {
    pub(super) fn new(keep: Keep) -> RunFold {
        RunFold {
            keep,
            ..RunFold::default()
        }
    }

    fn add(&mut self, record: JobRecord) {
        self.summary.add(&record);
        self.accounts.add(&record);
        if self.keep.settled_ids
            && matches!(
                record.status,
                Status::Succeeded | Status::Failed | Status::Cached
            )
        {
            self.settled.insert(record.job_id.clone());
        }
        if self.keep.table_skills.contains(&record.skill) {
            self.for_tables.push(record);
        }
    }
}

/// The records, the counters and the stop rules of one run.
pub(super) struct Ledger {
    sink: Mutex<Box<dyn RecordSink>>,
    run_dir: PathBuf,
    /// The run's folder held open, when the sink holds one.
    run_folder: Option<Root>,
    fold: Mutex<RunFold>,
    rules: StopRules,
    progress: Arc<Progress>,
    slots: Arc<Slots>,
    stop: Mutex<Option<Stop>>,
    /// Wakes the scheduler when scheduling should stop.
    soft: CancellationToken,
    /// Cancels in-flight requests (abort, grace period over, second signal).
    hard: CancellationToken,
    /// Tokens of the recorded jobs (the budget's measure).
    tokens: AtomicU64,
    /// The records' costs so far.
    cost: Mutex<f64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Ledger {
    pub(super) fn new(
        sink: Box<dyn RecordSink>,
        keep: Keep,
        rules: StopRules,
        progress: Arc<Progress>,
        slots: Arc<Slots>,
        hard: CancellationToken,
    ) -> Ledger {
        Ledger {
            run_dir: sink.dir().to_path_buf(),
            run_folder: sink.folder(),
            sink: Mutex::new(sink),
            fold: Mutex::new(RunFold::new(keep)),
            rules,
            progress,
            slots,
            stop: Mutex::new(None),
            soft: CancellationToken::new(),
            hard,
            tokens: AtomicU64::new(0),
            cost: Mutex::new(0.0),
        }
    }

    /// Account for one finished job: its transcript note, its line in `results.jsonl`, the
    /// counters. Returns the reason to stop this record gave, if it gave one.
    pub(super) fn record(&self, mut record: JobRecord) -> Option<Stop> {
        let before = self.stopped();
        let written = std::panic::catch_unwind(AssertUnwindSafe(|| {
            // A cached job keeps the transcript of the run that made its outputs.
            let earlier = record.status == Status::Cached && record.transcript.is_some();
            if !earlier {
                record.transcript = Some(ensure_transcript(
                    &self.run_dir,
                    self.run_folder.as_ref(),
                    &record,
                ));
            }
            lock(&self.sink).append(&record)
        }))
        .unwrap_or_else(|panic| {
            Err(io::Error::other(format!(
                "writing the record of {} failed: {}",
                record.input,
                panic_text(&panic)
            )))
        });
        if let Err(e) = written {
            // Said once: after the first failure every append fails alike.
            if !matches!(self.stopped(), Some(Stop::OutputUnwritable(_))) {
                self.progress
                    .println(&msg!("error: cannot append to results.jsonl: {e}"));
            }
            self.stop(Stop::OutputUnwritable(msg!(
                "the output folder cannot be written ({e})"
            )));
        }
        self.count(&record);
        lock(&self.fold).add(record);
        self.progress.tick();
        let after = self.stopped();
        (after != before).then_some(after).flatten()
    }

    fn count(&self, record: &JobRecord) {
        let c = &self.progress.counters;
        c.job_ended(&record.job_id, record.status);
        let spent = self
            .tokens
            .fetch_add(record.tokens.total(), Ordering::Relaxed)
            + record.tokens.total();
        // The agent counts tokens as each answer arrives; the records' sum is never more.
        c.tokens.fetch_max(spent, Ordering::Relaxed);
        match record.status {
            Status::Succeeded => self.slots.on_success(),
            Status::Failed => {
                let failed = c.failed.fetch_add(1, Ordering::Relaxed) + 1;
                self.on_failure(record);
                if self.rules.max_failures.is_some_and(|m| failed >= m) {
                    self.stop(Stop::MaxFailures(failed));
                }
            }
            _ => {}
        }
        if let Some(b) = self.rules.budget_tokens
            && spent >= b
        {
            self.stop(Stop::Budget(b));
        }
        if let Some(b) = self.rules.budget_cost {
            let mut cost = lock(&self.cost);
            *cost += record.cost.as_ref().map_or(0.0, |c| c.amount);
            if *cost >= b {
                self.stop(Stop::CostBudget(format!("{b}")));
            }
        }
    }

    fn on_failure(&self, record: &JobRecord) {
        let Some(e) = &record.error else { return };
        self.progress.println(&msg!(
            "failed: {} ({}): {}",
            crate::sanitize::one_line(&record.input),
            e.kind,
            crate::sanitize::one_line(e.reason())
        ));
        if e.kind.aborts_run() {
            self.stop(Stop::Abort(e.kind, e.message.clone()));
            self.hard.cancel();
        } else if !matches!(self.stopped(), Some(Stop::OutputUnwritable(_)))
            && let Some(why) = unwritable(&self.run_dir, self.run_folder.as_ref())
        {
            self.stop(Stop::OutputUnwritable(why));
        } else if e.kind == ErrorKind::RateLimited {
            self.stop(Stop::RateLimited(msg!(
                "rate limits outlasted every retry ({})",
                e.message
            )));
        }
    }

    /// Stop scheduling. The first reason wins: a signal does not hide an abort that already
    /// happened.
    pub(super) fn stop(&self, s: Stop) {
        let mut cur = lock(&self.stop);
        if cur.is_none() {
            *cur = Some(s);
        }
        drop(cur);
        self.soft.cancel();
    }

    pub(super) fn stopped(&self) -> Option<Stop> {
        lock(&self.stop).clone()
    }

    /// Fires when scheduling should stop.
    pub(super) fn stopping(&self) -> &CancellationToken {
        &self.soft
    }

    /// Cancels the jobs in flight.
    pub(super) fn cancel_in_flight(&self) {
        self.hard.cancel();
    }

    /// What the records so far add up to, taken out of the ledger (at the end of the run).
    pub(super) fn take_fold(&self) -> RunFold {
        std::mem::take(&mut *lock(&self.fold))
    }

    /// Where the run's record lines went, for the cache index.
    pub(super) fn take_record_lines(&self) -> Option<(Vec<RecordLine>, u64)> {
        lock(&self.sink).take_lines()
    }

    /// Writes the run's manifest (and `results.csv`) once every record is in.
    pub(super) fn finish(&self, m: &RunManifest, out: &Path) -> io::Result<()> {
        lock(&self.sink).finish(m, out)
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string())
}

/// Every job has a transcript, also one that sent no request (cached, failed while planning,
/// not run): then it holds one note saying why. Returns its path relative to the output
/// folder.
fn ensure_transcript(run_dir: &Path, run_folder: Option<&Root>, record: &JobRecord) -> String {
    let run_id = run_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let path = run_dir
        .join("transcripts")
        .join(format!("{}.jsonl", record.job_id));
    if !path.exists() {
        use crate::agent::transcript::Transcript;
        let secrets = crate::secret::Secrets::default();
        let t = match run_folder {
            // Beneath the run's folder, never through a link.
            Some(folder) => {
                let dir = run_dir.join("transcripts");
                let folder = folder
                    .create_dirs(Path::new("transcripts"))
                    .map_err(|e| crate::layout::confine_error(run_dir, &dir, e))
                    .and_then(|walk| walk.into_root());
                Transcript::create_in(folder, &path, secrets)
            }
            None => Transcript::create(&path, secrets),
        };
        let why = record
            .error
            .as_ref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        t.note(&format!("{}, no request sent{why}", record.status.as_str()));
    }
    OutputLayout::transcript_rel(&run_id, &record.job_id)
}

/// After a job failed (a write of its own, its transcript or its staging may have met a full
/// disk): whether the output folder itself can no longer be written (a full disk, a quota, a
/// read-only remount), by writing a small probe file next to the run's records. A job that
/// failed for its own reasons (a link in its way) leaves the folder writable, and the run
/// goes on.
fn unwritable(run_dir: &Path, run_folder: Option<&Root>) -> Option<String> {
    let name = format!(".write-probe-{}", std::process::id());
    let probe = run_dir.join(&name);
    let write = |mut f: std::fs::File| {
        use std::io::Write;
        f.write_all(&[0u8; 64 * 1024])?;
        f.sync_all()
    };
    let result = match run_folder {
        // Beneath the run's folder, never through a link.
        Some(folder) => {
            let walk = folder.top();
            let result = walk
                .create_file(std::ffi::OsStr::new(&name))
                .and_then(write);
            walk.remove_file(std::ffi::OsStr::new(&name));
            result
        }
        None => {
            let result = std::fs::File::create(&probe).and_then(write);
            let _ = std::fs::remove_file(&probe);
            result
        }
    };
    result
        .err()
        .map(|e| format!("the output folder cannot be written ({e}); run again when there is room"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::JobError;
    use crate::manifest::Tokens;

    /// Keeps lines in memory; panics or fails on the job named so.
    struct Memory {
        dir: PathBuf,
        lines: Arc<Mutex<Vec<JobRecord>>>,
        panic_on: Option<&'static str>,
        fail_on: Option<&'static str>,
    }

    impl RecordSink for Memory {
        fn append(&mut self, record: &JobRecord) -> io::Result<()> {
            if self.panic_on == Some(record.job_id.as_str()) {
                panic!("the writer broke");
            }
            if self.fail_on == Some(record.job_id.as_str()) {
                return Err(io::Error::other("No space left on device"));
            }
            lock(&self.lines).push(record.clone());
            Ok(())
        }
        fn dir(&self) -> &Path {
            &self.dir
        }
        fn finish(&mut self, _: &RunManifest, _: &Path) -> io::Result<()> {
            Ok(())
        }
    }

    fn ledger(
        dir: &Path,
        rules: StopRules,
        panic_on: Option<&'static str>,
        fail_on: Option<&'static str>,
    ) -> (Ledger, Arc<Mutex<Vec<JobRecord>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Memory {
            dir: dir.to_path_buf(),
            lines: lines.clone(),
            panic_on,
            fail_on,
        };
        let ledger = Ledger::new(
            Box::new(sink),
            Keep::default(),
            rules,
            Arc::new(Progress::new(10, false)),
            Arc::new(Slots::new(2, false)),
            CancellationToken::new(),
        );
        (ledger, lines)
    }

    fn rec(id: &str, status: Status, tokens: u64) -> JobRecord {
        JobRecord {
            tokens: Tokens {
                prompt: tokens,
                completion: 0,
            },
            error: (status == Status::Failed)
                .then(|| JobError::new(ErrorKind::MissingOutput, "no file written")),
            ..JobRecord::new(id, "summarize", &format!("{id}.txt"), status)
        }
    }

    #[test]
    fn a_panicking_writer_keeps_the_record_and_stops_the_run() {
        let tmp = tempfile::tempdir().unwrap();
        let (ledger, lines) = ledger(tmp.path(), StopRules::default(), Some("b"), None);
        assert_eq!(ledger.record(rec("a", Status::Succeeded, 1)), None);
        let stop = ledger.record(rec("b", Status::Succeeded, 1));
        match stop {
            Some(Stop::OutputUnwritable(why)) => {
                assert!(why.contains("the writer broke"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        // Both counted; only the first written.
        assert_eq!(ledger.take_fold().summary.counts().succeeded, 2);
        let written: Vec<String> = lock(&lines).iter().map(|r| r.job_id.clone()).collect();
        assert_eq!(written, ["a"]);
        assert!(ledger.stopping().is_cancelled());
    }

    #[test]
    fn a_failed_append_stops_once_and_keeps_counting() {
        let tmp = tempfile::tempdir().unwrap();
        let (ledger, _) = ledger(tmp.path(), StopRules::default(), None, Some("a"));
        assert!(matches!(
            ledger.record(rec("a", Status::Succeeded, 1)),
            Some(Stop::OutputUnwritable(_))
        ));
        // The stop was already there: this record gives no new one.
        assert_eq!(ledger.record(rec("b", Status::Succeeded, 1)), None);
        assert_eq!(ledger.take_fold().summary.counts().succeeded, 2);
    }

    #[test]
    fn max_failures_and_token_budget_stop_the_run() {
        let tmp = tempfile::tempdir().unwrap();
        let rules = StopRules {
            max_failures: Some(2),
            ..StopRules::default()
        };
        let (l, _) = ledger(tmp.path(), rules, None, None);
        assert_eq!(l.record(rec("a", Status::Failed, 0)), None);
        assert_eq!(
            l.record(rec("b", Status::Failed, 0)),
            Some(Stop::MaxFailures(2))
        );

        let rules = StopRules {
            budget_tokens: Some(100),
            ..StopRules::default()
        };
        let (l, _) = ledger(tmp.path(), rules, None, None);
        assert_eq!(l.record(rec("a", Status::Succeeded, 60)), None);
        assert_eq!(
            l.record(rec("b", Status::Succeeded, 60)),
            Some(Stop::Budget(100))
        );
        // The first reason wins.
        l.stop(Stop::Signal(libc::SIGINT));
        assert_eq!(l.stopped(), Some(Stop::Budget(100)));
    }

    #[test]
    fn every_record_gets_a_transcript() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("runs").join("R1");
        let (l, lines) = ledger(&dir, StopRules::default(), None, None);
        l.record(rec("a", Status::Cached, 0));
        let r = lock(&lines).remove(0);
        assert_eq!(
            r.transcript.as_deref(),
            Some(".zhi/runs/R1/transcripts/a.jsonl")
        );
        assert!(dir.join("transcripts/a.jsonl").is_file());
    }
}
