//! Documents in flight: a fixed number (`-j N`), or adaptive (`-j auto`,
//! docs/model-api.md#adaptive-concurrency): halve on a rate-limit signal, grow by one after a run
//! of successes, within 1..=64.

use std::sync::Mutex;
use tokio::sync::Notify;

pub(crate) const AUTO_MIN: usize = 1;
pub(crate) const AUTO_MAX: usize = 64;
pub(crate) const AUTO_START: usize = 4;

#[derive(Debug)]
struct State {
    limit: usize,
    in_use: usize,
    peak: usize,
    streak: usize,
}

/// A counting limiter whose limit can move while permits are out.
#[derive(Debug)]
pub(crate) struct Slots {
    auto: bool,
    state: Mutex<State>,
    notify: Notify,
}

impl Slots {
    pub(crate) fn new(limit: usize, auto: bool) -> Slots {
        let limit = limit.max(1);
        Slots {
            auto,
            state: Mutex::new(State {
                limit,
                in_use: 0,
                peak: limit,
                streak: 0,
            }),
            notify: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for a free slot.
    pub(crate) async fn acquire(&self) {
        loop {
            let notified = self.notify.notified();
            {
                let mut s = self.lock();
                if s.in_use < s.limit {
                    s.in_use += 1;
                    return;
                }
            }
            notified.await;
        }
    }

    /// A free slot now, or none (never waits: a job that holds a slot and waited for another
    /// could wait for ever).
    pub(crate) fn try_acquire(&self) -> bool {
        let mut s = self.lock();
        let free = s.in_use < s.limit;
        if free {
            s.in_use += 1;
        }
        free
    }

    pub(crate) fn release(&self) {
        let mut s = self.lock();
        s.in_use = s.in_use.saturating_sub(1);
        drop(s);
        self.notify.notify_waiters();
    }

    /// A rate-limit signal: halve (auto only).
    pub(crate) fn on_rate_limited(&self) {
        if !self.auto {
            return;
        }
        let mut s = self.lock();
        let new = (s.limit / 2).max(AUTO_MIN);
        if new != s.limit {
            tracing::info!(
                "{}",
                msg!("concurrency {} -> {new} (rate limited)", s.limit)
            );
            s.limit = new;
        }
        s.streak = 0;
    }

    /// A job finished well: after as many successes in a row as there are slots, add one.
    pub(crate) fn on_success(&self) {
        if !self.auto {
            return;
        }
        let mut s = self.lock();
        s.streak += 1;
        if s.streak >= s.limit && s.limit < AUTO_MAX {
            s.limit += 1;
            s.peak = s.peak.max(s.limit);
            s.streak = 0;
            tracing::info!(
                "{}",
                msg!("concurrency {} -> {} (successes)", s.limit - 1, s.limit)
            );
            drop(s);
            self.notify.notify_waiters();
        }
    }

    /// (current limit, peak limit)
    pub(crate) fn limits(&self) -> (usize, usize) {
        let s = self.lock();
        (s.limit, s.peak)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_halves_and_grows() {
        let s = Slots::new(8, true);
        s.on_rate_limited();
        assert_eq!(s.limits().0, 4);
        s.on_rate_limited();
        s.on_rate_limited();
        s.on_rate_limited();
        assert_eq!(s.limits().0, 1);
        s.on_success();
        assert_eq!(s.limits().0, 2);
        s.on_success();
        s.on_success();
        assert_eq!(s.limits(), (3, 8));
        let fixed = Slots::new(3, false);
        fixed.on_rate_limited();
        assert_eq!(fixed.limits().0, 3);
    }
}
