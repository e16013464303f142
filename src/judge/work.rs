//! The work one check may do over one answer, and the run's stop asked between its items.
//!
//! An answer is as long as the model made it: a looping small model counts out loud for 2 MB
//! within its `max_output`, and a response body may reach 16 MB. Every check over an answer is
//! linear in it (a set or an index built once, never a search of the source per item), and
//! still bounded here, as grounding is: each check charges what it visits, and ends once
//! [`MAX_WORK`] is spent or the run's stop says so (asked every [`POLL`] units of work, so a
//! SIGTERM is heeded within milliseconds). A check that did not finish says so
//! ([`Work::over`]); what it did not look at is never taken as judged.

use std::cell::Cell;

/// Units of work one check may spend on one answer. A unit is a char read or an item visited
/// (a passage hashed, a figure, a place of an index tried); a linear check spends a few per
/// char of the answer, so 16 MB (the largest body a response may have) stays well within
/// this, and what reaches it is an index's look-ups made to cost more than reading does.
pub(crate) const MAX_WORK: u64 = 200_000_000;

/// The stop is asked once per this many units of work (a cancellation token's look is a
/// lock, too dear to take per char).
pub(crate) const POLL: u64 = 1 << 14;

/// The work done by one check, its bound, and the stop it asks.
pub(crate) struct Work<'s> {
    done: Cell<u64>,
    limit: u64,
    /// The work at which the stop is asked next.
    poll_at: Cell<u64>,
    stopped: Cell<bool>,
    stop: &'s dyn Fn() -> bool,
}

impl<'s> Work<'s> {
    /// A meter of [`MAX_WORK`] that asks `stop`.
    pub(crate) fn new(stop: &'s dyn Fn() -> bool) -> Work<'s> {
        Work::bounded(MAX_WORK, stop)
    }

    /// A meter of `limit` units that asks `stop`.
    pub(crate) fn bounded(limit: u64, stop: &'s dyn Fn() -> bool) -> Work<'s> {
        Work {
            done: Cell::new(0),
            limit,
            poll_at: Cell::new(0),
            stopped: Cell::new(false),
            stop,
        }
    }

    /// `n` more units done.
    pub(crate) fn charge(&self, n: usize) {
        self.done.set(self.done.get().saturating_add(n as u64));
    }

    /// Whether the check must end here: its work is spent, or the run is stopping.
    pub(crate) fn over(&self) -> bool {
        if self.stopped.get() {
            return true;
        }
        let done = self.done.get();
        if done >= self.limit {
            return true;
        }
        if done >= self.poll_at.get() {
            self.poll_at.set(done.saturating_add(POLL));
            if (self.stop)() {
                self.stopped.set(true);
                return true;
            }
        }
        false
    }

    /// Whether the run's stop ended the check (not its bound).
    pub(crate) fn stopped(&self) -> bool {
        self.stopped.get()
    }

    /// The units done so far.
    #[cfg(test)]
    pub(crate) fn done(&self) -> u64 {
        self.done.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_is_asked_once_per_poll_and_heeded_for_good() {
        let asked = Cell::new(0);
        let stop = || {
            asked.set(asked.get() + 1);
            asked.get() > 2
        };
        let work = Work::new(&stop);
        assert!(!work.over());
        work.charge(10);
        assert!(!work.over(), "asked again only after POLL units");
        assert_eq!(asked.get(), 1);
        work.charge(POLL as usize);
        assert!(!work.over());
        work.charge(POLL as usize);
        assert!(work.over());
        assert!(work.over());
        assert_eq!(asked.get(), 3);
        assert!(work.stopped());
    }

    #[test]
    fn the_bound_ends_the_check() {
        let work = Work::bounded(100, &|| false);
        work.charge(99);
        assert!(!work.over());
        work.charge(1);
        assert!(work.over());
        assert!(!work.stopped());
        assert_eq!(work.done(), 100);
    }
}
