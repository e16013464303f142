//! Each job's cache status, decided a chunk at a time, one chunk ahead of the scheduler: while
//! the scheduler records (or runs) a chunk's jobs, a thread of its own reads the cache index and
//! decides the next chunk, hashing inputs in parallel (those whose stat is unchanged are not
//! opened). A rerun over an unchanged archive then keeps both cores busy instead of taking
//! turns. It holds two chunks of jobs, not the plan, and it must never decide a job twice or
//! yield the plan out of order.

use super::context::RunContext;
use super::ledger::Ledger;
use super::{RunError, RunOptions, stop};
use crate::plan::Job;
use crate::plan::cache::{self, CacheIndex, JobCache};
use std::sync::{Arc, mpsc};

/// How many jobs' cache statuses are decided at a time: enough to keep every core hashing,
/// few enough that what is held of earlier records grows with them, not with the plan.
const STATUS_CHUNK: usize = 1024;

/// A chunk back from the decider: its jobs, and their statuses unless deciding them panicked.
type Decided = (Vec<Job>, Option<Vec<JobCache>>);

/// Yields the jobs in plan order with their statuses; the index they were decided with, which
/// the run's records then go on top of, comes back at the end ([`Statuses::finish`]).
pub(super) struct Statuses<'a> {
    ctx: &'a RunContext,
    ledger: &'a Ledger,
    /// The jobs not yet read from the plan.
    jobs: Box<dyn Iterator<Item = std::io::Result<Job>> + Send + 'a>,
    /// The chunk decided, not yet yielded.
    decided: std::vec::IntoIter<(Job, JobCache)>,
    decider: Decider,
    /// A chunk is with the decider.
    ahead: bool,
    /// The plan could not be read on: raised once the jobs read before it are yielded.
    unreadable: Option<String>,
    /// The plan could not be read on, or deciding a chunk panicked: the run has stopped, and
    /// the jobs left are yielded undecided, to be recorded as not run.
    broken: bool,
}

/// The thread that holds the cache index and decides chunks, in the order they are sent.
struct Decider {
    send: mpsc::Sender<Vec<Job>>,
    recv: mpsc::Receiver<Decided>,
    thread: std::thread::JoinHandle<CacheIndex>,
}

impl Decider {
    /// `stopping` fires when the run stops: a chunk not yet begun then comes back undecided.
    fn start(
        ctx: Arc<RunContext>,
        mode: cache::HashMode,
        stopping: tokio_util::sync::CancellationToken,
    ) -> std::io::Result<Decider> {
        let (send, chunks) = mpsc::channel::<Vec<Job>>();
        let (done, recv) = mpsc::channel::<Decided>();
        let thread = std::thread::Builder::new()
            .name("zhi-cache".into())
            .spawn(move || {
                let mut index = CacheIndex::load(ctx.layout.output_dir());
                let model_of = |skill: &str| {
                    ctx.config
                        .models
                        .model_for(ctx.skills.get(skill).and_then(|s| s.model.as_deref()))
                };
                for chunk in chunks {
                    if stopping.is_cancelled() {
                        if done.send((chunk, Some(Vec::new()))).is_err() {
                            break;
                        }
                        continue;
                    }
                    let decided = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let out = ctx.layout.output_dir();
                        cache::statuses(&chunk, &mut index, &ctx.skills, &model_of, out, mode)
                    }))
                    .ok();
                    let panicked = decided.is_none();
                    if done.send((chunk, decided)).is_err() || panicked {
                        break;
                    }
                }
                index
            })?;
        Ok(Decider { send, recv, thread })
    }
}

impl<'a> Statuses<'a> {
    /// The index loaded and the first chunk decided (the second sent): a panic here is the
    /// run's error, before any job ran.
    pub(super) fn start(
        ctx: &'a Arc<RunContext>,
        opts: &'a RunOptions,
        ledger: &'a Ledger,
    ) -> Result<Statuses<'a>, RunError> {
        let mode = cache::HashMode {
            force: opts.flags.force,
            // `--checksum`, `checksum: true`.
            checksum: opts.config.run.checksum,
        };
        let decider =
            Decider::start(ctx.clone(), mode, ledger.stopping().clone()).map_err(|e| {
                RunError::Planning(msg!("cannot start the thread that decides the cache: {e}"))
            })?;
        let mut statuses = Statuses {
            ctx,
            ledger,
            jobs: Box::new(opts.plan.jobs()),
            decided: Vec::new().into_iter(),
            decider,
            ahead: false,
            unreadable: None,
            broken: false,
        };
        // Until a chunk is decided, every job that has no planning problem may run.
        ctx.progress.set_to_run(opts.plan.outline.may_run as u64);
        statuses.send_next();
        statuses.take_decided().map_err(RunError::Planning)?;
        Ok(statuses)
    }

    /// The cache index, once every job has been yielded; `None` when the decider's thread did
    /// not end well (the index file is then left as it is, and the next run reads this run's
    /// records on top of it). A chunk whose deciding panicked leaves the index as it was.
    pub(super) fn finish(self) -> Option<CacheIndex> {
        let Decider { send, thread, .. } = self.decider;
        drop(send);
        thread.join().ok()
    }

    /// Read the next chunk of the plan and send it to be decided while the scheduler goes on.
    /// A plan that cannot be read on is said once the jobs read before it are yielded.
    fn send_next(&mut self) {
        let mut chunk = Vec::with_capacity(STATUS_CHUNK);
        for job in self.jobs.by_ref().take(STATUS_CHUNK) {
            match job {
                Ok(job) => chunk.push(job),
                Err(e) => {
                    self.unreadable = Some(msg!(
                        "cannot read the plan back from its temporary file: {e}"
                    ));
                    break;
                }
            }
        }
        if chunk.is_empty() {
            return;
        }
        if self.unreadable.is_some() {
            // Recorded as not run, after those decided.
            self.yield_undecided(chunk);
            return;
        }
        match self.decider.send.send(chunk) {
            Ok(()) => self.ahead = true,
            Err(mpsc::SendError(chunk)) => {
                self.yield_undecided(chunk);
                self.unreadable = Some(panicked());
            }
        }
    }

    /// The chunk with the decider, back: waits for it, on this thread, which the runtime
    /// replaces meanwhile.
    fn receive(&mut self) -> Option<Decided> {
        if !std::mem::take(&mut self.ahead) {
            return None;
        }
        let recv = &self.decider.recv;
        tokio::task::block_in_place(|| recv.recv().ok())
    }

    /// The chunk with the decider becomes the one yielded, and the next one is sent.
    fn take_decided(&mut self) -> Result<(), String> {
        if !self.ahead {
            return self.unreadable.take().map_or(Ok(()), Err);
        }
        let (chunk, decided) = match self.receive() {
            Some((chunk, Some(decided))) => (chunk, decided),
            // Its jobs are still yielded, undecided, to be recorded as not run.
            Some((chunk, None)) => {
                self.yield_undecided(chunk);
                return Err(panicked());
            }
            None => return Err(panicked()),
        };
        // Cached jobs make no request: they are no work left.
        let cached = decided
            .iter()
            .zip(&chunk)
            .filter(|(c, j)| c.cached && j.problem.is_none())
            .count();
        self.ctx.progress.fewer_to_run(cached as u64);
        // A chunk the decider did not begin because the run stopped comes back undecided:
        // the scheduler, which sees the stop first, records its jobs as not run.
        self.decided = paired(chunk, decided);
        // Once the run has stopped, nothing more is hashed for it.
        if self.ledger.stopped().is_none() {
            self.send_next();
        }
        Ok(())
    }

    /// Jobs to yield after those already decided, without a status.
    fn yield_undecided(&mut self, jobs: Vec<Job>) {
        let rest = std::mem::take(&mut self.decided).chain(paired(jobs, Vec::new()));
        self.decided = rest.collect::<Vec<_>>().into_iter();
    }
}

impl Iterator for Statuses<'_> {
    type Item = (Job, JobCache);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(next) = self.decided.next() {
                return Some(next);
            }
            // Once the run has stopped, the jobs left are recorded as not run: the chunk with
            // the decider as it was decided, the rest undecided, their inputs never hashed for
            // it. A plan that cannot be read on ends here.
            if self.broken || self.ledger.stopped().is_some() {
                // (A decider gone without an answer took its chunk's jobs: they get no
                // record, as when the plan cannot be read on.)
                if let Some((chunk, decided)) = self.receive() {
                    self.decided = paired(chunk, decided.unwrap_or_default());
                    continue;
                }
                return Some((self.jobs.next()?.ok()?, JobCache::default()));
            }
            if !self.ahead && self.unreadable.is_none() {
                // The plan is read to its end.
                return None;
            }
            // A bug, or the plan's file gone bad: the run stops, and the jobs left are
            // recorded as not run.
            if let Err(why) = self.take_decided() {
                self.ledger
                    .stop(stop::Stop::Abort(crate::error::ErrorKind::Internal, why));
                self.broken = true;
            }
        }
    }
}

/// A chunk's jobs with their statuses, in order; those without one undecided.
fn paired(chunk: Vec<Job>, decided: Vec<JobCache>) -> std::vec::IntoIter<(Job, JobCache)> {
    let statuses = decided
        .into_iter()
        .chain(std::iter::repeat_with(JobCache::default));
    chunk
        .into_iter()
        .zip(statuses)
        .collect::<Vec<_>>()
        .into_iter()
}

fn panicked() -> String {
    msg!("a worker deciding the cache statuses panicked")
}
