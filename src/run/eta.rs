//! The time a run has left, from what it has done so far: how long the jobs that ended took,
//! how far the running ones are (a long document by its pieces), and how many jobs ran side by
//! side. A pure function, so it can be checked against made-up runs.
//!
//! Why not divide the elapsed time by the jobs done: cached jobs end in no time, every job
//! starts at once with `-j N`, and the first job to end says nothing of the ones still
//! running. An estimate is given only once there is something to estimate from — a job that
//! ran and ended, or a piece of each long document running — and never before.
//!
//! A job still running past the average is evidence as well: the estimate must grow while it
//! overruns, never stand still at "a little more" (docs/display.md#progress).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// How many recent job durations the estimate averages: a server that slows down (or warms
/// up) shows in the estimate within this many jobs.
pub(super) const RECENT: usize = 64;

/// Beyond this many waiting jobs, the rest are spread evenly over the slots instead of one
/// by one (the difference is less than one job's time).
const SIMULATED: u64 = 4096;

/// A running job that has run longer than the average is still expected to need this
/// share of the average: it is not done until it is.
const OVERRUN_SHARE: f64 = 0.1;

/// ... and this share of the time it has run past the average: a job that overruns the
/// estimate pushes the estimate out as it goes, instead of leaving it frozen at the share
/// above (a job twice as long as the average is expected to need half the average more).
const OVERRUN_GROWTH: f64 = 0.5;

/// A job that is running.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Running {
    /// Seconds since it started.
    pub elapsed: f64,
    /// A long document's pieces; `None` for a document in one piece.
    pub pieces: Option<Pieces>,
}

/// The pieces of one long document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pieces {
    /// Pieces answered by this run (a piece checkpointed by an earlier run took no time).
    pub done_here: u64,
    /// Pieces still to answer.
    pub left: u64,
}

/// What the run has done so far.
#[derive(Debug, Clone, Copy)]
pub(super) struct Work<'a> {
    /// Seconds since the first job started.
    pub wall: f64,
    /// Seconds the ended jobs ran, summed (how long they kept their slots).
    pub busy: f64,
    /// How long the latest jobs that ran to an end took, oldest first: cached, skipped and
    /// cancelled jobs are not among them.
    pub recent: &'a [f64],
    pub running: &'a [Running],
    /// Jobs still to start that will run (cached ones are not counted).
    pub waiting: u64,
}

/// Seconds left, or `None` while that cannot be estimated (no job has ended, or a long
/// document has not finished a piece yet).
pub(super) fn seconds_left(w: &Work) -> Option<f64> {
    if w.running.is_empty() && w.waiting == 0 {
        return Some(0.0);
    }
    let per_job = pace(w.recent, w.running);
    let loads = w
        .running
        .iter()
        .map(|r| remaining(r, per_job))
        .collect::<Option<Vec<f64>>>()?;
    let per_job = match (w.waiting, per_job) {
        (0, _) => 0.0,
        (_, Some(d)) => d,
        (_, None) => return None,
    };
    // The slots the run keeps busy: what it did so far (busy time over wall time), and never
    // fewer than the jobs running now.
    let running_time: f64 = w.running.iter().map(|r| r.elapsed).sum();
    let observed = if w.wall > 0.0 {
        (w.busy + running_time) / w.wall
    } else {
        0.0
    };
    let slots = w.running.len().max(observed.round() as usize).max(1);
    Some(makespan(loads, slots, w.waiting, per_job))
}

fn mean(xs: &[f64]) -> Option<f64> {
    let xs = &xs[xs.len().saturating_sub(RECENT)..];
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The seconds a job takes: the mean of the latest jobs that ended, where each running job
/// (in one piece) that has already run longer than that mean counts too, at the time it has
/// run so far — the least it will take. One slow job is evidence that jobs are slower than
/// the ones that ended said, and the estimate grows with it every second it overruns.
fn pace(recent: &[f64], running: &[Running]) -> Option<f64> {
    let ended = mean(recent)?;
    let recent = &recent[recent.len().saturating_sub(RECENT)..];
    let overrunning: Vec<f64> = running
        .iter()
        .filter(|r| r.pieces.is_none() && r.elapsed > ended)
        .map(|r| r.elapsed)
        .collect();
    if overrunning.is_empty() {
        return Some(ended);
    }
    let n = recent.len() + overrunning.len();
    Some((recent.iter().sum::<f64>() + overrunning.iter().sum::<f64>()) / n as f64)
}

/// What one running job still needs.
fn remaining(r: &Running, per_job: Option<f64>) -> Option<f64> {
    match r.pieces {
        // Its own pace: pieces answered so far over the time they took.
        Some(p) if p.done_here > 0 => {
            let per_piece = r.elapsed / p.done_here as f64;
            // After the last piece: the combining request and the commit.
            Some(per_piece * (p.left as f64).max(0.5))
        }
        // Split, and no piece answered yet: nothing says how long its pieces take.
        Some(p) if p.left > 0 => None,
        _ => per_job.map(|d| {
            let overrun = (r.elapsed - d).max(0.0);
            (d - r.elapsed).max(d * OVERRUN_SHARE + overrun * OVERRUN_GROWTH)
        }),
    }
}

/// When the last job ends if each waiting job (of `per_job` seconds) takes the slot that
/// frees first — how the scheduler hands them out.
fn makespan(loads: Vec<f64>, slots: usize, waiting: u64, per_job: f64) -> f64 {
    // Microseconds, so the heap can order them.
    let us = |s: f64| (s.max(0.0) * 1e6) as u64;
    let mut heap: BinaryHeap<Reverse<u64>> = loads.iter().map(|&l| Reverse(us(l))).collect();
    while heap.len() < slots {
        heap.push(Reverse(0));
    }
    let one = us(per_job);
    let simulated = waiting.min(SIMULATED);
    for _ in 0..simulated {
        if let Some(Reverse(first)) = heap.pop() {
            heap.push(Reverse(first + one));
        }
    }
    let last = heap.iter().map(|Reverse(t)| *t).max().unwrap_or(0) as f64 / 1e6;
    last + (waiting - simulated) as f64 * per_job / heap.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(elapsed: f64) -> Running {
        Running {
            elapsed,
            pieces: None,
        }
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-6)
    }

    #[test]
    fn no_estimate_before_a_job_has_ended() {
        let running = [plain(0.5), plain(0.5)];
        let w = Work {
            wall: 0.5,
            busy: 0.0,
            recent: &[],
            running: &running,
            waiting: 18,
        };
        assert_eq!(seconds_left(&w), None);
    }

    #[test]
    fn two_at_a_time_counts_rounds_of_two() {
        // 20 jobs of 1 s, -j 2: two ended at 1 s, two started then.
        let running = [plain(0.0), plain(0.0)];
        let w = Work {
            wall: 1.0,
            busy: 2.0,
            recent: &[1.0, 1.0],
            running: &running,
            waiting: 16,
        };
        assert!(close(seconds_left(&w), 9.0), "{:?}", seconds_left(&w));
        // Half a second later: half a second less.
        let running = [plain(0.5), plain(0.5)];
        let w = Work { wall: 1.5, ..w };
        let w = Work {
            running: &running,
            ..w
        };
        assert!(close(seconds_left(&w), 8.5), "{:?}", seconds_left(&w));
    }

    #[test]
    fn parallelism_comes_from_what_the_run_did() {
        // -j 4, 2 s per job; just between two jobs only three are running, yet the run kept
        // four slots busy: the 40 waiting jobs take 10 rounds, not 14.
        let running = [plain(1.0), plain(1.0), plain(1.0)];
        let w = Work {
            wall: 5.0,
            busy: 16.0 + 1.0,
            recent: &[2.0; 8],
            running: &running,
            waiting: 40,
        };
        let left = seconds_left(&w).unwrap();
        assert!((20.0..=21.0).contains(&left), "{left}");
    }

    #[test]
    fn the_tail_waits_for_the_slowest_slot() {
        // Eight slots each 0.5 s from free, one job of 1 s waiting: 1.5 s, not 5/8 s.
        let running = [plain(0.5); 8];
        let w = Work {
            wall: 10.0,
            busy: 80.0,
            recent: &[1.0; 8],
            running: &running,
            waiting: 1,
        };
        assert!(close(seconds_left(&w), 1.5));
        // Nothing waiting: the running jobs' time left.
        let w = Work { waiting: 0, ..w };
        assert!(close(seconds_left(&w), 0.5));
    }

    #[test]
    fn a_job_past_the_average_still_needs_some_time() {
        // The pace becomes (2 + 3) / 2 = 2.5 s; the job is 0.5 s past it: 0.25 + 0.25.
        let running = [plain(3.0)];
        let w = Work {
            wall: 5.0,
            busy: 2.0,
            recent: &[2.0],
            running: &running,
            waiting: 0,
        };
        assert!(close(seconds_left(&w), 0.5), "{:?}", seconds_left(&w));
    }

    #[test]
    fn a_job_that_overruns_the_estimate_pushes_it_out() {
        // One slot, three documents: the first took 6 s; the second has been running much
        // longer. The estimate must grow with every second it runs, never stay frozen.
        let at = |elapsed: f64| {
            let running = [plain(elapsed)];
            let w = Work {
                wall: 6.0 + elapsed,
                busy: 6.0,
                recent: &[6.0],
                running: &running,
                waiting: 1,
            };
            seconds_left(&w).unwrap()
        };
        // Within the average: the usual countdown, 6 - 2 + 6.
        assert!((at(2.0) - 10.0).abs() < 1e-6, "{}", at(2.0));
        let mut last = at(6.0);
        for second in 7..=240 {
            let now = at(f64::from(second));
            assert!(
                now >= last + 0.5,
                "{second} s in: {now} s left, {last} s a second before"
            );
            last = now;
        }
        // Four minutes in, the estimate speaks of minutes, not of seconds.
        assert!(last > 180.0, "{last}");
    }

    #[test]
    fn a_long_document_goes_by_its_pieces() {
        // 2 pieces of 8 answered in 4 s: 6 more take 12 s.
        let running = [Running {
            elapsed: 4.0,
            pieces: Some(Pieces {
                done_here: 2,
                left: 6,
            }),
        }];
        let w = Work {
            wall: 4.0,
            busy: 0.0,
            recent: &[],
            running: &running,
            waiting: 0,
        };
        assert!(close(seconds_left(&w), 12.0));
        // No piece answered yet: no estimate, even with jobs that ended.
        let running = [Running {
            elapsed: 4.0,
            pieces: Some(Pieces {
                done_here: 0,
                left: 8,
            }),
        }];
        let w = Work {
            running: &running,
            recent: &[1.0],
            ..w
        };
        assert_eq!(seconds_left(&w), None);
    }

    #[test]
    fn only_recent_jobs_set_the_pace() {
        // The server slowed from 1 s to 3 s a job; the last RECENT jobs took 3 s.
        let mut recent = vec![1.0; 500];
        recent.extend(std::iter::repeat_n(3.0, RECENT));
        let w = Work {
            wall: 700.0,
            busy: 700.0,
            recent: &recent,
            running: &[],
            waiting: 10,
        };
        assert!(close(seconds_left(&w), 30.0));
    }

    #[test]
    fn a_million_waiting_jobs_are_estimated_at_once() {
        let running = [plain(0.0); 4];
        let w = Work {
            wall: 1.0,
            busy: 4.0,
            recent: &[1.0; 4],
            running: &running,
            waiting: 1_000_000,
        };
        let started = std::time::Instant::now();
        let left = seconds_left(&w).unwrap();
        assert!(started.elapsed() < std::time::Duration::from_millis(200));
        assert!((left - 250_001.0).abs() <= 1.0, "{left}");
    }

    #[test]
    fn a_finished_run_has_nothing_left() {
        let w = Work {
            wall: 3.0,
            busy: 3.0,
            recent: &[],
            running: &[],
            waiting: 0,
        };
        assert_eq!(seconds_left(&w), Some(0.0));
    }
}
