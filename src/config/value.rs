//! The small typed values settings are made of: a redacted key, a retry policy, a concurrency,
//! a model's budget, and where a value came from (the language is `i18n::Lang`; the provider is
//! `providers::Provider`, re-exported here, an entry of the providers' one table).

use serde::Serialize;
use std::collections::BTreeMap;
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
    pub(crate) fn expose(&self) -> &str {
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

/// How requests are retried (docs/model-api.md#retries): exponential backoff with full jitter,
/// never sooner than a server's `Retry-After`.
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

/// Which provider the model server is; the providers and all that differs between them are
/// one table, [`crate::providers::PROVIDERS`].
pub(crate) use crate::providers::Provider;

/// How many documents are in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Concurrency {
    Fixed(usize),
    /// Adapt to rate limits within 1..=64 (docs/model-api.md#adaptive-concurrency).
    Auto,
}

impl fmt::Display for Concurrency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Concurrency::Fixed(n) => write!(f, "{n}"),
            Concurrency::Auto => f.write_str("auto"),
        }
    }
}

/// A model's token budget (docs/documents.md#token-budgets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ModelBudget {
    /// Tokens the model reads and writes in one request.
    pub context_window: u32,
    /// Tokens the model writes in one answer at most.
    pub max_output: u32,
}

/// Known models' budgets; a config file's `models:` adds to or replaces these.
pub(crate) fn default_model_budgets() -> BTreeMap<String, ModelBudget> {
    let b = |c, o| ModelBudget {
        context_window: c,
        max_output: o,
    };
    [
        ("glm-4-flash", b(128_000, 4_096)),
        ("glm-4-flashx", b(128_000, 4_096)),
        ("glm-4-air", b(128_000, 4_096)),
        ("glm-4-plus", b(128_000, 4_096)),
        ("glm-4-long", b(1_000_000, 4_096)),
        ("glm-4v-flash", b(8_000, 1_024)),
        ("gpt-4o-mini", b(128_000, 16_384)),
        ("deepseek-chat", b(64_000, 8_192)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The budget assumed for a model that no table names.
pub(crate) const UNKNOWN_MODEL_BUDGET: ModelBudget = ModelBudget {
    context_window: 8_192,
    max_output: 2_048,
};

/// Where a setting's value came from, for `zhi config show` and for messages that say which
/// value to change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "from", content = "name")]
pub(crate) enum Origin {
    Default,
    /// A settings file, by the path it was found at.
    File(String),
    /// An environment variable, by name.
    Env(String),
    /// A command-line flag, by name (`--rpm`).
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File(p) => write!(f, "file {p}"),
            Origin::Env(v) => write!(f, "env {v}"),
            Origin::Flag(v) => write!(f, "flag {v}"),
        }
    }
}
