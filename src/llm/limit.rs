//! Per-process request and token budgets (`--rpm`, `--tpm`), shared by every worker.
//!
//! One [`Limits`] lives inside the shared client, so all workers draw from the same buckets.
//! Requests per minute are spaced evenly (a burst of one: `--rpm 600` means one request every
//! 100 ms), so a short run cannot spend a whole minute's budget in its first second. Tokens
//! per minute use a bucket that holds one minute's budget; each request takes an *estimate* of
//! its tokens before it is sent (see [`estimate_tokens`]), and what a completion really cost
//! beyond that estimate is charged to the next request. A request larger than the whole
//! budget takes the whole bucket instead of waiting forever.
//!
//! Waiting here must always be cancellable; this module never sleeps without the run's
//! cancellation token.

use crate::llm::wire::{ChatRequest, Message};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// The cancellation token fired while waiting for budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cancelled while waiting for rate-limit budget")]
pub(crate) struct Cancelled;

/// The request and token buckets of one process.
pub(crate) struct Limits {
    requests: Option<DefaultDirectRateLimiter>,
    tokens: Option<(DefaultDirectRateLimiter, NonZeroU32)>,
    /// Tokens spent beyond their estimates, not yet charged.
    debt: AtomicU64,
    /// Whether a request larger than the whole budget has been reported (once per run).
    told_oversized: AtomicBool,
}

impl Limits {
    pub(crate) fn new(rpm: Option<NonZeroU32>, tpm: Option<NonZeroU32>) -> Self {
        Limits {
            requests: rpm
                .map(|n| RateLimiter::direct(Quota::per_minute(n).allow_burst(NonZeroU32::MIN))),
            tokens: tpm.map(|n| (RateLimiter::direct(Quota::per_minute(n)), n)),
            debt: AtomicU64::new(0),
            told_oversized: AtomicBool::new(false),
        }
    }

    /// Waits for one request's slot.
    pub(crate) async fn request(&self, cancel: &CancellationToken) -> Result<(), Cancelled> {
        let Some(limiter) = &self.requests else {
            return Ok(());
        };
        tokio::select! {
            _ = limiter.until_ready() => Ok(()),
            _ = cancel.cancelled() => Err(Cancelled),
        }
    }

    /// Waits until `estimate` tokens (plus any unpaid overrun of earlier requests) fit the
    /// token budget. Returns the estimate actually charged, for [`Limits::settle`].
    pub(crate) async fn tokens(
        &self,
        estimate: u64,
        cancel: &CancellationToken,
    ) -> Result<u64, Cancelled> {
        let Some((limiter, burst)) = &self.tokens else {
            return Ok(estimate);
        };
        let debt = self.debt.swap(0, Ordering::Relaxed);
        let want = estimate.saturating_add(debt);
        // Clamp to the bucket's size: a request larger than a minute's budget waits for a
        // full bucket rather than forever.
        let n = u32::try_from(want)
            .unwrap_or(u32::MAX)
            .clamp(1, burst.get());
        let n = NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
        // Pieces are sized to fit the budget and a budget no request fits is refused at the
        // start, so this is a conversation that grew past it: slow, and never silent.
        if want > u64::from(burst.get()) && !self.told_oversized.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "{}",
                msg!(
                    "a request of about {want} tokens is larger than the token budget of {burst} a minute (--tpm); it waits for a full minute's budget and is sent alone"
                )
            );
        }
        tokio::select! {
            // `n` is at most the burst size, so capacity can never be insufficient.
            _ = limiter.until_n_ready(n) => Ok(estimate),
            _ = cancel.cancelled() => {
                // Nothing was spent; the overrun stays owed.
                self.debt.fetch_add(debt, Ordering::Relaxed);
                Err(Cancelled)
            }
        }
    }

    /// Records what a request really cost; an overrun is charged to the next request.
    pub(crate) fn settle(&self, estimate: u64, actual: u64) {
        if self.tokens.is_some() && actual > estimate {
            self.debt.fetch_add(actual - estimate, Ordering::Relaxed);
        }
    }
}

/// A conservative token estimate of a request, before it is sent.
///
/// Every CJK character (Han, kana, Hangul, fullwidth forms) counts as one token; other text
/// counts one token per four characters, rounded up. Counted are the messages' text and tool
/// calls, the tool definitions (their JSON), a small per-message overhead of 4 tokens, and
/// `max_tokens` when it is set (the completion may spend it all).
pub(crate) fn estimate_tokens(req: &ChatRequest) -> u64 {
    let mut total: u64 = req.messages.iter().map(message_tokens).sum();
    for tool in &req.tools {
        // Serialising a plain struct of strings and a JSON value cannot fail.
        let json = serde_json::to_string(tool).unwrap_or_default();
        total += text_tokens(&json);
    }
    total + u64::from(req.max_tokens.unwrap_or(0))
}

fn message_tokens(m: &Message) -> u64 {
    let mut n = 4 + m.content.as_deref().map_or(0, text_tokens);
    for part in &m.parts {
        n += match part {
            crate::llm::wire::ContentPart::Text { text } => text_tokens(text),
            // Vision models bill images by size; a flat, generous allowance.
            crate::llm::wire::ContentPart::ImageUrl { .. } => 1000,
        };
    }
    for call in m.calls() {
        n += text_tokens(&call.function.name) + text_tokens(&call.function.arguments);
    }
    n
}

/// Tokens of a piece of text: CJK characters one each, everything else four characters each.
pub(crate) fn text_tokens(s: &str) -> u64 {
    let (mut cjk, mut other) = (0u64, 0u64);
    for c in s.chars() {
        if is_cjk(c) {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    cjk + other.div_ceil(4)
}

pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF       // Hangul Jamo
        | 0x2E80..=0x2FDF     // CJK radicals, Kangxi
        | 0x3000..=0x303F     // CJK punctuation
        | 0x3040..=0x30FF     // Hiragana, Katakana
        | 0x3100..=0x31FF     // Bopomofo, Hangul compatibility, Katakana ext.
        | 0x3400..=0x4DBF     // CJK ext. A
        | 0x4E00..=0x9FFF     // CJK unified
        | 0xAC00..=0xD7AF     // Hangul syllables
        | 0xF900..=0xFAFF     // CJK compatibility
        | 0xFF00..=0xFFEF     // fullwidth forms
        | 0x20000..=0x3FFFF   // CJK ext. B and beyond
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::wire::{ToolCall, ToolDef};
    use std::time::{Duration, Instant};

    #[test]
    fn text_estimate() {
        assert_eq!(text_tokens(""), 0);
        assert_eq!(text_tokens("abcd"), 1);
        assert_eq!(text_tokens("abcde"), 2);
        assert_eq!(text_tokens("你好世界"), 4);
        assert_eq!(text_tokens("你好 hello"), 2 + 2);
        assert_eq!(text_tokens("こんにちは"), 5);
    }

    #[test]
    fn request_estimate_counts_everything() {
        let mut req = ChatRequest::new("m", vec![Message::system("abcd"), Message::user("你好")]);
        assert_eq!(estimate_tokens(&req), (4 + 1) + (4 + 2));
        req.max_tokens = Some(100);
        assert_eq!(estimate_tokens(&req), 11 + 100);
        let mut call = Message::assistant("");
        call.tool_calls = Some(vec![ToolCall::new("c", "abcd", "abcdabcd")]);
        req.messages.push(call);
        assert_eq!(estimate_tokens(&req), 111 + 4 + 1 + 2);
        req.tools
            .push(ToolDef::function("f", "d", serde_json::json!({})));
        assert!(estimate_tokens(&req) > 118);
    }

    #[tokio::test]
    async fn no_limits_never_wait() {
        let limits = Limits::new(None, None);
        let cancel = CancellationToken::new();
        for _ in 0..1000 {
            limits.request(&cancel).await.unwrap();
            limits.tokens(1_000_000, &cancel).await.unwrap();
        }
    }

    #[tokio::test]
    async fn oversized_request_takes_the_whole_bucket_instead_of_deadlocking() {
        let limits = Limits::new(None, NonZeroU32::new(600));
        let cancel = CancellationToken::new();
        // Far above the 600-token budget: must be admitted at once (the bucket starts full).
        let charged = tokio::time::timeout(Duration::from_secs(5), limits.tokens(50_000, &cancel))
            .await
            .expect("an oversized request must not wait forever")
            .unwrap();
        assert_eq!(charged, 50_000);
    }

    #[tokio::test]
    async fn token_budget_spaces_requests() {
        // 6000 tokens/min = 100 per second; a full bucket of 6000, then 200 more need ≥ 2 s.
        let limits = Limits::new(None, NonZeroU32::new(6000));
        let cancel = CancellationToken::new();
        limits.tokens(6000, &cancel).await.unwrap();
        let start = Instant::now();
        limits.tokens(200, &cancel).await.unwrap();
        assert!(
            start.elapsed() >= Duration::from_millis(1900),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn overrun_is_charged_to_the_next_request() {
        let limits = Limits::new(None, NonZeroU32::new(6000));
        let cancel = CancellationToken::new();
        // 100 tokens per second. Empty the bucket, then overrun the estimate by 100.
        limits.tokens(6000, &cancel).await.unwrap();
        limits.settle(6000, 6100);
        let start = Instant::now();
        limits.tokens(1, &cancel).await.unwrap();
        // 1 + 100 owed tokens take about a second to refill.
        assert!(
            start.elapsed() >= Duration::from_millis(900),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn waiting_is_cancellable() {
        let limits = Limits::new(NonZeroU32::new(1), None);
        let cancel = CancellationToken::new();
        limits.request(&cancel).await.unwrap();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            c.cancel();
        });
        // The next slot is a minute away; cancellation must end the wait.
        let r = tokio::time::timeout(Duration::from_secs(10), limits.request(&cancel)).await;
        assert_eq!(r.expect("cancellation must end the wait"), Err(Cancelled));
    }
}
