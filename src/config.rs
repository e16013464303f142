//! The resolved, validated settings of one invocation.
//!
//! Precedence, highest first: command-line flags > `ZHI_*` environment variables >
//! `./zhi.yaml` > `~/.config/zhi/config.yaml` > built-in defaults. Everything is resolved once,
//! here, into [`Config`]; the engine reads it and never looks at flags or the environment again.

use std::fmt;
use std::time::Duration;

/// An API key. Its `Debug` and `Display` never show it: the key must not reach a log, a
/// manifest or a terminal.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }
    /// The key itself, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// How requests are retried (SPEC §6): exponential backoff with full jitter, never sooner than
/// a server's `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per request, the first included.
    pub max_attempts: u32,
    /// The delay before the second attempt; doubled for each further one.
    pub base_delay: Duration,
    /// No computed delay exceeds this (a `Retry-After` may).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}
