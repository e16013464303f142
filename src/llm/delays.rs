//! What the requests in flight are held up by, for a person watching the run: a retry after
//! an attempt that failed, or a rate limit being waited out. Without it a slow model is a
//! silent stall — `1 running (7m02s)` for ten minutes while each attempt times out and is
//! tried again (docs/display.md#progress).
//!
//! The client writes it, the run's progress line reads it; nothing here decides anything.

use crate::error::ErrorKind;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tokio::sync::watch;

/// The latest retry decided: its attempt, of how many, after which kind of failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retry {
    pub kind: ErrorKind,
    /// The attempt about to be made (2 for the first retry).
    pub attempt: u32,
    pub of: u32,
}

/// The requests of a process held up now; shared by the clones of a client and by the
/// clients of an escalation ladder.
#[derive(Debug)]
pub struct Delays {
    /// Requests that failed an attempt and have not ended yet.
    retrying: AtomicU64,
    latest: Mutex<Option<Retry>>,
    /// Requests waiting for `--rpm`, `--tpm` or a server's pause to let them go.
    limited: AtomicU64,
    /// When the server's pause (after a 429) ends, while one runs.
    pause_until: Mutex<Option<Instant>>,
    /// Bumped when a retry is decided: a plain progress line says so at once.
    news: watch::Sender<u64>,
}

impl Default for Delays {
    fn default() -> Self {
        Delays {
            retrying: AtomicU64::new(0),
            latest: Mutex::new(None),
            limited: AtomicU64::new(0),
            pause_until: Mutex::new(None),
            news: watch::Sender::new(0),
        }
    }
}

/// What the requests are held up by, at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HeldUp {
    pub retrying: u64,
    /// The latest retry, while any request is retrying.
    pub latest: Option<Retry>,
    pub limited: u64,
    /// Whole seconds left of the server's pause, while requests wait it out.
    pub pause_left: Option<u64>,
}

/// Counts one request while it lasts; dropped when it ends.
pub(crate) struct Held<'a> {
    count: &'a AtomicU64,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Delays {
    /// A request failed an attempt and is tried again: counted until the guard is dropped
    /// (the request's end), the retry remembered as the latest.
    pub(crate) fn retrying(&self) -> Held<'_> {
        self.retrying.fetch_add(1, Ordering::Relaxed);
        Held {
            count: &self.retrying,
        }
    }

    /// The retry `r` is decided.
    pub(crate) fn retry(&self, r: Retry) {
        *self.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        self.news.send_modify(|n| *n += 1);
    }

    /// A request waits for a rate limit, until the guard is dropped.
    pub(crate) fn limited(&self) -> Held<'_> {
        self.limited.fetch_add(1, Ordering::Relaxed);
        Held {
            count: &self.limited,
        }
    }

    /// The server asked every request to wait until `until`.
    pub(crate) fn pause_until(&self, until: Instant) {
        let mut p = self.pause_until.lock().unwrap_or_else(|e| e.into_inner());
        if p.is_none_or(|cur| cur < until) {
            *p = Some(until);
        }
    }

    /// Fires when a retry is decided.
    pub(crate) fn news(&self) -> watch::Receiver<u64> {
        self.news.subscribe()
    }

    /// The requests held up now.
    pub(crate) fn now(&self) -> HeldUp {
        let retrying = self.retrying.load(Ordering::Relaxed);
        let limited = self.limited.load(Ordering::Relaxed);
        let latest = *self.latest.lock().unwrap_or_else(|e| e.into_inner());
        let pause = *self.pause_until.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        HeldUp {
            retrying,
            latest: latest.filter(|_| retrying > 0),
            limited,
            pause_left: pause
                .filter(|u| *u > now && limited > 0)
                .map(|u| u.duration_since(now).as_secs_f64().ceil() as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_counted_while_it_is_held_up() {
        let d = Delays::default();
        let mut news = d.news();
        assert_eq!(d.now(), HeldUp::default());
        let held = d.retrying();
        d.retry(Retry {
            kind: ErrorKind::Timeout,
            attempt: 2,
            of: 5,
        });
        assert!(news.has_changed().unwrap());
        news.mark_unchanged();
        let now = d.now();
        assert_eq!((now.retrying, now.latest.map(|r| r.attempt)), (1, Some(2)));
        drop(held);
        assert_eq!(d.now().latest, None);
        let waiting = d.limited();
        d.pause_until(Instant::now() + std::time::Duration::from_secs(12));
        let now = d.now();
        assert_eq!((now.limited, now.pause_left), (1, Some(12)));
        drop(waiting);
        assert_eq!(d.now(), HeldUp::default());
    }
}
