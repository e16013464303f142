//! How long to wait before the next attempt: exponential backoff with full jitter, never
//! sooner than the server's `Retry-After`.
//!
//! Pure functions, so the policy can be tested without a clock. This module never sleeps.

use crate::config::RetryPolicy;
use reqwest::header::HeaderMap;
use std::time::Duration;

/// The wait before retry number `retry + 1` (`retry` is 0 before the second attempt):
/// a uniformly random duration in `[0, min(max_delay, base_delay · 2^retry)]`, raised to the
/// server's `Retry-After` when that is longer.
pub(crate) fn backoff(policy: &RetryPolicy, retry: u32, retry_after: Option<Duration>) -> Duration {
    let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
    let ceiling = policy
        .base_delay
        .checked_mul(factor)
        .unwrap_or(policy.max_delay)
        .min(policy.max_delay);
    let ceiling_ns = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
    let jittered = Duration::from_nanos(fastrand::u64(0..=ceiling_ns));
    jittered.max(retry_after.unwrap_or(Duration::ZERO))
}

/// The server's requested wait: the longer of `Retry-After` (seconds, fractions accepted, or
/// an HTTP date) and OpenAI's `retry-after-ms`. Dates in the past mean no wait.
pub(super) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let ms = get("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map(|ms| Duration::from_secs_f64(ms.min(86_400_000.0) / 1000.0));
    let header = get("retry-after").and_then(|v| parse_retry_after(v, chrono::Utc::now()));
    ms.max(header)
}

/// `Retry-After` is either delay-seconds or an HTTP date (RFC 9110 §10.2.3).
pub(super) fn parse_retry_after(
    value: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        // An absurd value is capped at a day rather than overflowing.
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(86_400.0)));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - now;
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn policy(base_ms: u64, max_ms: u64) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(base_ms),
            max_delay: Duration::from_millis(max_ms),
        }
    }

    #[test]
    fn full_jitter_stays_within_the_exponential_ceiling() {
        let p = policy(100, 1000);
        for retry in 0..40 {
            let ceiling = Duration::from_millis((100u64 << retry.min(20)).min(1000));
            for _ in 0..200 {
                assert!(backoff(&p, retry, None) <= ceiling, "retry {retry}");
            }
        }
        // Full jitter really spreads: both low and high halves are hit.
        let waits: Vec<Duration> = (0..500).map(|_| backoff(&p, 3, None)).collect();
        assert!(waits.iter().any(|w| *w < Duration::from_millis(400)));
        assert!(waits.iter().any(|w| *w > Duration::from_millis(600)));
    }

    #[test]
    fn never_sooner_than_retry_after() {
        let p = policy(10, 50);
        for retry in 0..5 {
            let w = backoff(&p, retry, Some(Duration::from_secs(2)));
            assert!(w >= Duration::from_secs(2));
        }
        // A Retry-After above the cap is still honoured.
        assert!(backoff(&p, 0, Some(Duration::from_secs(120))) >= Duration::from_secs(120));
    }

    #[test]
    fn retry_after_forms() {
        let now = chrono::DateTime::parse_from_rfc2822("Wed, 21 Oct 2015 07:28:00 GMT")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after(" 1.5 ", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn retry_after_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        // Both given: the longer wins, so neither is undercut.
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", HeaderValue::from_static("3500"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(3500)));
        h.remove("retry-after");
        assert_eq!(retry_after(&h), Some(Duration::from_millis(3500)));
    }
}
