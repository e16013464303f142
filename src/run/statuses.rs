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
    fn start(ctx: Arc<RunContext>, mode: cache::HashMode) -> std::io::Result<Decider> {
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
        let decider = Decider::start(ctx.clone(), mode).map_err(|e| {
            RunError::Planning(msg!("cannot start the thread that decides the cache: {e}"))
        })?;
        let mut statuses = Statuses {
            ctx,
            ledger,
            jobs: Box::new(opts.plan.jobs()),
            decided: Vec::new().into_iter(),
            decider,
            ahead: false,
            broken: false,
        };
        // Until a chunk is decided, every job that has no planning problem may run.
        ctx.progress.set_to_run(opts.plan.outline.may_run as u64);
        statuses
            .send_next()
            .and_then(|()| statuses.take_decided())
            .map_err(RunError::Planning)?;
        Ok(statuses)
    }

    /// The cache index, once every job has been yielded; `None` when the decider did not end
    /// well (the index file is then left as it is, and the next run reads this run's records on
    /// top of it).
    pub(super) fn finish(self) -> Option<CacheIndex> {
        let Decider { send, thread, .. } = self.decider;
        drop(send);
        thread.join().ok()
    }

    /// Read the next chunk of the plan and send it to be decided while the scheduler goes on.
    fn send_next(&mut self) -> Result<(), String> {
        let mut chunk = Vec::with_capacity(STATUS_CHUNK);
        for job in self.jobs.by_ref().take(STATUS_CHUNK) {
            match job {
                Ok(job) => chunk.push(job),
                // The jobs read before it are still recorded, as not run, after those decided.
                Err(e) => {
                    self.yield_undecided(chunk);
                    return Err(msg!(
                        "cannot read the plan back from its temporary file: {e}"
                    ));
                }
            }
        }
        if chunk.is_empty() {
            return Ok(());
        }
        match self.decider.send.send(chunk) {
            Ok(()) => {
                self.ahead = true;
                Ok(())
            }
            Err(mpsc::SendError(chunk)) => {
                self.yield_undecided(chunk);
                Err(msg!("a worker deciding the cache statuses panicked"))
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
            return Ok(());
        }
        let (chunk, decided) = match self.receive() {
            Some((chunk, Some(decided))) => (chunk, decided),
            // Its jobs are still yielded, undecided, to be recorded as not run.
            Some((chunk, None)) => {
                self.yield_undecided(chunk);
                return Err(msg!("a worker deciding the cache statuses panicked"));
            }
            None => return Err(msg!("a worker deciding the cache statuses panicked")),
        };
        // Cached jobs make no request: they are no work left.
        let cached = decided
            .iter()
            .zip(&chunk)
            .filter(|(c, j)| c.cached && j.problem.is_none())
            .count();
        self.ctx.progress.fewer_to_run(cached as u64);
        self.decided = chunk
            .into_iter()
            .zip(decided)
            .collect::<Vec<_>>()
            .into_iter();
        self.send_next()
    }

    /// Jobs to yield after those already decided, without a status.
    fn yield_undecided(&mut self, jobs: Vec<Job>) {
        let mut rest: Vec<(Job, JobCache)> = std::mem::take(&mut self.decided).collect();
        rest.extend(jobs.into_iter().map(|j| (j, JobCache::default())));
        self.decided = rest.into_iter();
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
                if let Some((chunk, decided)) = self.receive() {
                    let decided = decided.unwrap_or_default().into_iter();
                    self.decided = chunk
                        .into_iter()
                        .zip(decided.chain(std::iter::repeat_with(JobCache::default)))
                        .collect::<Vec<_>>()
                        .into_iter();
                    continue;
                }
                return Some((self.jobs.next()?.ok()?, JobCache::default()));
            }
            if !self.ahead {
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
