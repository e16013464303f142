//! How long one chat request may take. A hosted provider answers within the `timeout`
//! setting; a self-hosted server on a small machine may write a third of a token a second,
//! and a fixed 120 s limit then cuts every long answer, retries it and cuts it again, while
//! the run looks stalled (docs/model-api.md#request-time-limits).
//!
//! So, against a server zhi asked what it is (not a known provider) and with no `timeout`
//! set, the limit of a chat request is sized from the speed the server has shown: the
//! request's answer budget (`max_tokens`) at the measured tokens a second, with half again
//! for margin, never under the `timeout` setting's default nor over [`CEILING`]. Before any
//! speed is known, a request that ran out of time is tried again with twice the limit.
//! Arithmetic and two counters; nothing here sleeps or sends.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The longest a sized limit grows.
pub(crate) const CEILING: Duration = Duration::from_secs(30 * 60);

/// The budget at the measured speed, times this: an answer is written at a speed that
/// varies with the other requests the server works on.
const MARGIN: f64 = 1.5;

/// Answers shorter than this say little of a speed (the prompt's reading dominates them).
const MIN_MEASURED_TOKENS: u64 = 8;

/// The request time limit of one client.
#[derive(Debug)]
pub(crate) struct Pace {
    /// The `timeout` setting: the limit of every request unless sized, and the least a
    /// sized one is.
    floor: Duration,
    /// Whether no `timeout` was set, so that a self-hosted server's may be sized.
    may_size: bool,
    /// Set once the server turned out to be self-hosted ([`Pace::size_to_server`]).
    sized: AtomicBool,
    /// Completion tokens and seconds of the answers measured so far.
    seen: Mutex<(u64, f64)>,
}

impl Pace {
    pub(crate) fn new(floor: Duration, may_size: bool) -> Pace {
        Pace {
            floor,
            may_size,
            sized: AtomicBool::new(false),
            seen: Mutex::new((0, 0.0)),
        }
    }

    /// The server is self-hosted: from now on, when no `timeout` was set, its requests'
    /// limits are sized from its speed.
    pub(crate) fn size_to_server(&self) {
        if self.may_size {
            self.sized.store(true, Ordering::Relaxed);
        }
    }

    /// The `timeout` setting.
    pub(crate) fn floor(&self) -> Duration {
        self.floor
    }

    /// Whether limits are sized (for the words of a timeout).
    pub(crate) fn is_sized(&self) -> bool {
        self.sized.load(Ordering::Relaxed)
    }

    /// The limit of the next attempt of a request whose answer may hold `budget` tokens,
    /// after `timed_out` of its attempts ran out of time; `None`: the client's own
    /// (the `timeout` setting).
    pub(crate) fn limit(&self, budget: Option<u32>, timed_out: u32) -> Option<Duration> {
        if !self.is_sized() {
            return None;
        }
        let from_speed = match (budget, self.speed()) {
            (Some(b), Some(speed)) => {
                Duration::from_secs_f64((f64::from(b) / speed * MARGIN).min(CEILING.as_secs_f64()))
            }
            _ => self.floor,
        };
        let grown = from_speed
            .max(self.floor)
            .saturating_mul(1u32.checked_shl(timed_out.min(16)).unwrap_or(u32::MAX));
        Some(grown.min(CEILING.max(self.floor)))
    }

    /// An answer of `tokens` completion tokens took `took`, from sending to its last byte.
    pub(crate) fn measured(&self, tokens: u64, took: Duration) {
        if tokens < MIN_MEASURED_TOKENS || took.is_zero() {
            return;
        }
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.0 += tokens;
        seen.1 += took.as_secs_f64();
    }

    /// Tokens a second over the answers measured, once there are any.
    pub(crate) fn speed(&self) -> Option<f64> {
        let (tokens, secs) = *self.seen.lock().unwrap_or_else(|e| e.into_inner());
        (tokens > 0 && secs > 0.0).then(|| tokens as f64 / secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLOOR: Duration = Duration::from_secs(120);

    #[test]
    fn a_set_timeout_or_a_known_provider_keeps_the_setting() {
        let set = Pace::new(FLOOR, false);
        set.size_to_server();
        set.measured(100, Duration::from_secs(300));
        assert_eq!(set.limit(Some(1024), 0), None);
        let provider = Pace::new(FLOOR, true);
        assert_eq!(provider.limit(Some(1024), 3), None);
    }

    #[test]
    fn a_slow_server_gets_its_budget_at_its_speed_within_floor_and_ceiling() {
        let p = Pace::new(FLOOR, true);
        p.size_to_server();
        // Nothing measured: the setting; each timeout doubles it.
        assert_eq!(p.limit(Some(512), 0), Some(FLOOR));
        assert_eq!(p.limit(Some(512), 1), Some(2 * FLOOR));
        assert_eq!(p.limit(Some(512), 2), Some(4 * FLOOR));
        assert_eq!(p.limit(Some(512), 9), Some(CEILING));
        // A third of a token a second: 90 tokens took 270 s.
        p.measured(90, Duration::from_secs(270));
        assert_eq!(p.speed(), Some(1.0 / 3.0));
        // 100 tokens at 3 s each, and half again: 450 s.
        assert_eq!(p.limit(Some(100), 0), Some(Duration::from_secs(450)));
        assert_eq!(p.limit(Some(100), 1), Some(Duration::from_secs(900)));
        assert_eq!(p.limit(Some(4096), 0), Some(CEILING));
        // No budget: the setting.
        assert_eq!(p.limit(None, 0), Some(FLOOR));
        // A fast server never gets less than the setting.
        let fast = Pace::new(FLOOR, true);
        fast.size_to_server();
        fast.measured(1000, Duration::from_secs(10));
        assert_eq!(fast.limit(Some(1024), 0), Some(FLOOR));
        // A short answer says little of a speed.
        let short = Pace::new(FLOOR, true);
        short.measured(3, Duration::from_secs(60));
        assert_eq!(short.speed(), None);
    }
}
