//! The one HTTP client of a run, and the one retry loop every API call goes through.
//!
//! [`ChatClient`] is cheap to clone (an `Arc` inside) and meant to be shared by every worker,
//! so rate limits, counters and the connection pool are per process. Chat completions go
//! through [`ChatClient::chat`]; other endpoints (OCR, file upload) build their own request
//! and hand it to [`ChatClient::send`], which applies the same budget, classification,
//! backoff and cancellation.
//!
//! This module must never put the API key anywhere but the `Authorization` header: not in a
//! log line, not in an error message (server text that echoes it is redacted).

use crate::config::{ApiKey, RetryPolicy};
use crate::error::ErrorKind;
use crate::llm::delays::{Delays, Retry};
use crate::llm::error::{
    ApiError, Body, Observed, ProviderError, classify, excerpt, http_error, provider_error,
};
use crate::llm::limit::{Limits, estimate_tokens};
use crate::llm::pace::Pace;
use crate::llm::provider::{Dialect, Endpoint};
use crate::llm::retry::{backoff, retry_after};
use crate::llm::wire::{ChatRequest, ChatResponse, Message, Usage};
use reqwest::header::HeaderMap;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The largest body any response may have when the answer's length is not bounded by the
/// request (other API calls, a chat without `max_tokens`).
pub(super) const MAX_BODY_BYTES: usize = 16 << 20;

/// The smallest cap on a chat response's body.
const MIN_CHAT_BODY_BYTES: usize = 1 << 20;

/// Bytes of body allowed per token of the answer's length limit: a token is a few bytes of
/// text, escaped in JSON (`\uXXXX`, 6 bytes a character) and escaped again inside tool-call
/// arguments; 64 leaves room for all of that and for the body's fields.
const BODY_BYTES_PER_TOKEN: usize = 64;

/// The cap on a chat response's body for an answer of at most `max_tokens` tokens: a
/// multiple of the answer's length limit, never under 1 MiB. A body beyond it is not an
/// answer but a fault (or an attack) that would otherwise fill the memory and be sent back
/// to the server in the next request.
pub(super) fn chat_body_limit(max_tokens: Option<u32>) -> usize {
    max_tokens.map_or(MAX_BODY_BYTES, |t| {
        (t as usize)
            .saturating_mul(BODY_BYTES_PER_TOKEN)
            .max(MIN_CHAT_BODY_BYTES)
    })
}

/// Everything the client needs, resolved from the run's configuration.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// The API base; chat goes to `<base_url>/chat/completions`. A trailing `/` is ignored.
    pub base_url: String,
    /// Sent as the provider takes it (`Authorization: Bearer <key>`) when set (local servers
    /// need none).
    pub api_key: Option<ApiKey>,
    /// The provider's ways: its auth header and endpoint paths.
    pub(crate) dialect: Dialect,
    /// The limit for one request, connection to last body byte (`--timeout`).
    pub timeout: Duration,
    pub retry: RetryPolicy,
    /// Requests per minute for this process (`--rpm`).
    pub rpm: Option<NonZeroU32>,
    /// Tokens per minute for this process (`--tpm`).
    pub tpm: Option<NonZeroU32>,
    /// Whether no `timeout` was set, so that a self-hosted server's chat requests get limits
    /// sized from its speed (docs/model-api.md#request-time-limits).
    pub size_timeout: bool,
    /// What the requests are held up by, for the progress line; shared with the clients of
    /// other servers made from these settings.
    pub delays: Arc<Delays>,
}

impl ClientSettings {
    /// Settings with the defaults of docs/cli.md#run-and-plan-flags and docs/model-api.md#retries:
    /// 120 s timeout, 5 attempts, no rate limits.
    pub fn new(base_url: impl Into<String>, api_key: Option<ApiKey>) -> Self {
        ClientSettings {
            base_url: base_url.into(),
            api_key,
            dialect: Dialect::default(),
            timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            rpm: None,
            tpm: None,
            size_timeout: false,
            delays: Arc::default(),
        }
    }

    /// These settings for another server (an escalation rung's): its own URL, key and
    /// per-minute limits; the timeout, the retries and the provider's ways stay.
    pub(crate) fn elsewhere(
        self,
        base_url: String,
        api_key: Option<ApiKey>,
        rpm: Option<NonZeroU32>,
        tpm: Option<NonZeroU32>,
    ) -> Self {
        ClientSettings {
            base_url,
            api_key,
            rpm,
            tpm,
            ..self
        }
    }
}

/// The settings' server, key, timeout, retries and per-process rate limits: one place turns a
/// configuration into a client's settings (the run's, `zhi batch`'s, an escalation rung's,
/// which then names its own server and key).
impl From<&crate::config::Config> for ClientSettings {
    fn from(config: &crate::config::Config) -> Self {
        ClientSettings {
            base_url: config.api.base_url.clone(),
            api_key: config.api.key.clone(),
            dialect: config.api.provider.dialect(),
            timeout: config.api.timeout,
            retry: config.api.retry,
            rpm: config.run.rpm,
            tpm: config.run.tpm,
            size_timeout: config
                .origins
                .get("timeout")
                .is_none_or(|o| matches!(o, crate::config::Origin::Default)),
            delays: Arc::default(),
        }
    }
}

/// The client could not be set up (a malformed base URL, no TLS backend).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot set up the API client: {0}")]
pub struct BuildError(String);

/// A successful chat completion.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    /// The assistant's message (text and/or tool calls; every tool call has an id).
    pub message: Message,
    /// `stop`, `tool_calls`, `length`…, as the server said.
    pub finish_reason: Option<String>,
    /// Zeros when the server reported none.
    pub usage: Usage,
    /// Attempts it took, the successful one included.
    pub attempts: u32,
    /// The model the server says answered, when it said.
    pub model: Option<String>,
}

/// A successful response of any endpoint, after classification and retries.
#[derive(Debug, Clone)]
pub struct ApiResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    /// Bytes written to the file a download went to (the body is then empty).
    pub spooled: u64,
    /// Attempts it took, the successful one included.
    pub attempts: u32,
}

impl ApiResponse {
    /// The body as JSON of type `T`; a mismatch is a non-retryable `api_error`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            let mut err = ApiError::new(
                ErrorKind::ApiError,
                false,
                msg!("unexpected response shape: {e}"),
            );
            err.status = Some(self.status);
            err.attempts = self.attempts;
            err
        })
    }
}

/// The exact body [`ChatClient::chat`] sends for `req` (never streamed). A batch line carries
/// these very bytes, so a request is the same whether it is sent now or in a batch.
pub(crate) fn chat_body(req: &ChatRequest) -> Result<Vec<u8>, ApiError> {
    let mut req = req.clone();
    req.stream = false;
    serde_json::to_vec(&req).map_err(|e| {
        ApiError::new(
            ErrorKind::ApiError,
            false,
            msg!("cannot encode request: {e}"),
        )
    })
}

/// The shared model API client. Clone it freely: clones share one connection pool, one set of
/// rate limits and one set of counters.
#[derive(Clone)]
pub struct ChatClient {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    base_url: String,
    key: Option<ApiKey>,
    dialect: Dialect,
    /// The key and the base URL's credentials, as every form a server may echo them in.
    secrets: crate::secret::Secrets,
    retry: RetryPolicy,
    limits: Limits,
    /// Bumped on every rate-limited response; see [`ChatClient::rate_limit_events`].
    rate_limited: watch::Sender<u64>,
    /// After a rate-limit signal, no request of any worker starts before this instant: the whole
    /// pool slows down, not just the request that was told to wait (docs/model-api.md#rate-limits).
    pause_until: std::sync::Mutex<Option<tokio::time::Instant>>,
    attempts: AtomicU64,
    /// Ids for tool calls a server sent without one.
    call_ids: AtomicU64,
    /// Set when the server said how many requests it works on at once (llama.cpp's slots):
    /// more wait here, where the request timeout does not run, instead of in the server's
    /// queue, where it does (and a queued request times out, is retried, and queues again).
    server_slots: std::sync::OnceLock<Arc<tokio::sync::Semaphore>>,
    /// The time limit of a chat request.
    pace: Pace,
    delays: Arc<Delays>,
}

impl std::fmt::Debug for ChatClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatClient")
            .field("base_url", &self.inner.base_url)
            .field("api_key", &self.inner.key)
            .field("retry", &self.inner.retry)
            .finish_non_exhaustive()
    }
}

/// One complete HTTP response.
struct Received {
    status: u16,
    headers: HeaderMap,
    body: Vec<u8>,
    /// Bytes streamed to a file instead of `body`.
    spooled: u64,
}

/// How one call's response is taken.
struct Transfer<'a> {
    /// Bytes of the body at most.
    limit: usize,
    /// Attempts at most, when not the policy's.
    max_attempts: Option<u32>,
    /// A 2xx body goes here, line by line, instead of into memory.
    spool: Option<&'a std::path::Path>,
    /// How long an attempt may take.
    time: TimeLimit,
}

/// How long one attempt may take.
#[derive(Debug, Clone, Copy)]
enum TimeLimit {
    /// The `timeout` setting.
    Setting,
    /// A chat answer of at most this many tokens: sized from the server's speed when that
    /// is on ([`Pace`]).
    Answer(Option<u32>),
}

impl Transfer<'_> {
    fn memory(limit: usize) -> Transfer<'static> {
        Transfer {
            limit,
            max_attempts: None,
            spool: None,
            time: TimeLimit::Setting,
        }
    }
}

/// A request answered: what was taken of it, the attempts it took, and how long the last one
/// took.
struct Answered<T> {
    value: T,
    attempts: u32,
    took: Duration,
}

impl ChatClient {
    pub fn new(settings: ClientSettings) -> Result<Self, BuildError> {
        let base_url = settings.base_url.trim_end_matches('/').to_owned();
        let parsed = reqwest::Url::parse(&base_url)
            .map_err(|e| BuildError(format!("invalid base URL {base_url:?}: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(BuildError(format!(
                "invalid base URL {base_url:?}: only http and https are supported"
            )));
        }
        let http = reqwest::Client::builder()
            .use_rustls_tls()
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout.min(Duration::from_secs(30)))
            .user_agent(concat!("zhi/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| BuildError(e.to_string()))?;
        let mut retry = settings.retry;
        retry.max_attempts = retry.max_attempts.max(1);
        let secrets =
            crate::secret::Secrets::new(settings.api_key.as_ref().map(|k| k.expose()), &base_url);
        Ok(ChatClient {
            inner: Arc::new(Inner {
                http,
                base_url,
                key: settings.api_key,
                dialect: settings.dialect,
                secrets,
                retry,
                limits: Limits::new(settings.rpm, settings.tpm),
                rate_limited: watch::Sender::new(0),
                pause_until: std::sync::Mutex::new(None),
                attempts: AtomicU64::new(0),
                call_ids: AtomicU64::new(0),
                server_slots: std::sync::OnceLock::new(),
                pace: Pace::new(settings.timeout, settings.size_timeout),
                delays: settings.delays,
            }),
        })
    }

    /// The API base, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.inner.base_url
    }

    /// `<base>/<segments…>`, each segment (an id from the server, say) encoded as one path
    /// segment, so an id cannot add `..`, `?` or `/` to the URL.
    pub(crate) fn url(&self, segments: &[&str]) -> Result<reqwest::Url, ApiError> {
        let mut url = reqwest::Url::parse(self.base_url()).map_err(|e| {
            ApiError::new(ErrorKind::ApiError, false, msg!("invalid base URL: {e}"))
        })?;
        url.path_segments_mut()
            .map_err(|()| ApiError::new(ErrorKind::ApiError, false, msg!("invalid base URL")))?
            .pop_if_empty()
            .extend(segments);
        Ok(url)
    }

    /// `<base>/<the endpoint's path>/<tail…>` as the provider lays its API out, the tail's
    /// segments encoded as [`ChatClient::url`] does.
    pub(crate) fn endpoint(
        &self,
        endpoint: Endpoint,
        tail: &[&str],
    ) -> Result<reqwest::Url, ApiError> {
        let mut segments = self.inner.dialect.path(endpoint).to_vec();
        segments.extend_from_slice(tail);
        self.url(&segments)
    }

    /// The provider's ways this client was made with.
    pub(crate) fn dialect(&self) -> Dialect {
        self.inner.dialect
    }

    /// The shared HTTP client, for building requests handed to [`ChatClient::send`].
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.inner.http
    }

    /// The retry policy of every call (batch creation uses it to pace its confirmed retries).
    pub(crate) fn retry_policy(&self) -> crate::config::RetryPolicy {
        self.inner.retry
    }

    /// The API key, for requests that bypass [`ChatClient::send`] (the server probe, which must
    /// not retry). Only ever for the `Authorization` header.
    pub(crate) fn api_key(&self) -> Option<&ApiKey> {
        self.inner.key.as_ref()
    }

    /// At most `slots` requests at the server at once, from every clone of this client; the
    /// others wait for one to end before they are sent. Set once (by [`crate::llm::probe`]);
    /// a later call changes nothing.
    pub(crate) fn hold_to_server_slots(&self, slots: u32) {
        let permits = usize::try_from(slots.max(1)).unwrap_or(usize::MAX);
        let _ = self
            .inner
            .server_slots
            .set(Arc::new(tokio::sync::Semaphore::new(permits)));
    }

    /// The server is self-hosted: its chat requests' time limits are sized from its speed,
    /// unless a `timeout` was set (docs/model-api.md#request-time-limits). Set by
    /// [`crate::llm::probe`].
    pub fn size_to_server(&self) {
        self.inner.pace.size_to_server();
    }

    /// What this client's requests are held up by now.
    pub(crate) fn delays(&self) -> &Arc<Delays> {
        &self.inner.delays
    }

    /// Attempts sent so far by this process (every retry counts).
    pub fn requests_sent(&self) -> u64 {
        self.inner.attempts.load(Ordering::Relaxed)
    }

    /// The adaptive-concurrency signal: a counter bumped once for every rate-limited
    /// response (1302/1303/1305 or other 429, quota codes excluded), retried or not.
    /// A watcher halves concurrency when it sees the value change (`changed().await`); many
    /// bumps between two looks coalesce into one change, which is what "slow down" needs.
    pub fn rate_limit_events(&self) -> watch::Receiver<u64> {
        self.inner.rate_limited.subscribe()
    }

    /// One chat completion, with rate limiting, retries and cancellation.
    ///
    /// Retried per docs/model-api.md#retries up to the policy's `max_attempts`; the token budget is
    /// charged once per call (not per attempt), the request budget once per attempt. On
    /// cancellation the in-flight request or wait is dropped at once and an error of kind
    /// `cancelled` returned.
    pub async fn chat(
        &self,
        req: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatReply, ApiError> {
        let body = chat_body(req)?;
        let estimate = estimate_tokens(req);
        let estimate = self
            .held_if_waiting(self.inner.limits.tokens(estimate, cancel))
            .await
            .map_err(|_| ApiError::cancelled())?;
        let url = self.endpoint(Endpoint::Chat, &[])?;
        let transfer = Transfer {
            time: TimeLimit::Answer(req.max_tokens),
            ..Transfer::memory(chat_body_limit(req.max_tokens))
        };
        let Answered {
            value: response,
            attempts,
            took,
        } = self
            .with_retries(
                transfer,
                |http| {
                    http.post(url.clone())
                        .header(reqwest::header::CONTENT_TYPE, "application/json")
                        .body(body.clone())
                },
                |received| self.inspect(&received, true),
                cancel,
            )
            .await?;
        // `inspect(.., true)` only accepts a completion with at least one choice.
        let Some(response) = response else {
            return Err(ApiError::new(
                ErrorKind::ApiError,
                true,
                msg!("no completion"),
            ));
        };
        let usage = response.usage.unwrap_or_default();
        self.inner.limits.settle(estimate, usage.total());
        self.inner.pace.measured(usage.completion_tokens, took);
        self.reply(response, attempts)
    }

    /// The answer to one request of a batch (docs/model-api.md#batch-mode), as [`ChatClient::chat`]
    /// would have returned it had the request been sent now: the same classification of the
    /// status and body, the same completion checks, the same tool-call ids. `attempts` is the
    /// batch attempt that answered.
    pub(crate) fn batch_answer(
        &self,
        status: u16,
        body: &[u8],
        attempts: u32,
    ) -> Result<ChatReply, ApiError> {
        let received = Received {
            status,
            headers: HeaderMap::new(),
            body: self.redact_bytes(body.to_vec()),
            spooled: 0,
        };
        let response = self.inspect(&received, true).map_err(|mut e| {
            e.attempts = attempts;
            e
        })?;
        let Some(response) = response else {
            return Err(ApiError::new(
                ErrorKind::ApiError,
                true,
                msg!("no completion"),
            ));
        };
        self.reply(response, attempts)
    }

    /// A completion turned into the reply the agent sees.
    fn reply(&self, response: ChatResponse, attempts: u32) -> Result<ChatReply, ApiError> {
        let usage = response.usage.unwrap_or_default();
        let served = response.model.filter(|m| !m.trim().is_empty());
        let Some(choice) = response.choices.into_iter().next() else {
            return Err(ApiError::new(ErrorKind::ApiError, true, msg!("no choices")));
        };
        let mut message = choice.message;
        if let Some(calls) = &mut message.tool_calls {
            for call in calls.iter_mut().filter(|c| c.id.is_empty()) {
                let n = self.inner.call_ids.fetch_add(1, Ordering::Relaxed);
                call.id = format!("call_zhi_{n}");
            }
        }
        Ok(ChatReply {
            message,
            finish_reason: choice.finish_reason,
            usage,
            attempts,
            model: served,
        })
    }

    /// Any other API call, through the same budget, classification, retries and cancellation
    /// as chat. `make` builds the request from the shared client (it may be called once per
    /// attempt); the `Authorization` header is added here, so `make` must not add it.
    ///
    /// A 2xx body must be JSON (or empty); a 2xx body that is not is retried like a 5xx.
    pub async fn send<F>(
        &self,
        make: F,
        cancel: &CancellationToken,
    ) -> Result<ApiResponse, ApiError>
    where
        F: Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    {
        self.send_checked(Transfer::memory(MAX_BODY_BYTES), true, make, cancel)
            .await
    }

    /// Like [`ChatClient::send`], with one attempt only: for calls that create something at
    /// the provider (an upload, a batch), where a retry after a lost answer would create it
    /// twice. After a failure the caller looks up what may have been made.
    pub(crate) async fn send_once<F>(
        &self,
        make: F,
        cancel: &CancellationToken,
    ) -> Result<ApiResponse, ApiError>
    where
        F: Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    {
        let transfer = Transfer {
            max_attempts: Some(1),
            ..Transfer::memory(MAX_BODY_BYTES)
        };
        self.send_checked(transfer, true, make, cancel).await
    }

    /// A large non-JSON body (a batch's result file, JSON lines) streamed into `dest` (written
    /// whole or not at all): never held in memory, each line cleaned of secrets as it
    /// arrives. At most `limit` bytes, and `MAX_BODY_BYTES` a line; more is `api_error`, not
    /// retried. Returns the bytes written.
    pub(crate) async fn download<F>(
        &self,
        limit: usize,
        make: F,
        dest: &std::path::Path,
        cancel: &CancellationToken,
    ) -> Result<u64, ApiError>
    where
        F: Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    {
        let transfer = Transfer {
            spool: Some(dest),
            ..Transfer::memory(limit)
        };
        let response = self.send_checked(transfer, false, make, cancel).await?;
        Ok(response.spooled)
    }

    /// [`ChatClient::send`], [`ChatClient::send_once`] and [`ChatClient::download`]: a body of
    /// at most `transfer.limit` bytes; with `json`, a 2xx body is inspected too (it must be
    /// JSON), else only errors are.
    async fn send_checked<F>(
        &self,
        transfer: Transfer<'_>,
        json: bool,
        make: F,
        cancel: &CancellationToken,
    ) -> Result<ApiResponse, ApiError>
    where
        F: Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    {
        let Answered {
            value: received,
            attempts,
            ..
        } = self
            .with_retries(
                transfer,
                make,
                |received| {
                    if json || !(200..300).contains(&received.status) {
                        self.inspect(&received, false)?;
                    }
                    Ok(received)
                },
                cancel,
            )
            .await?;
        Ok(ApiResponse {
            status: received.status,
            headers: received.headers,
            body: received.body,
            spooled: received.spooled,
            attempts,
        })
    }

    /// The retry loop: budget, attempt, classify, back off, until success, a final error,
    /// the attempt limit, or cancellation. A request tried again is counted as retrying, and
    /// one waiting for a rate limit as limited, for the progress line ([`Delays`]).
    async fn with_retries<T, M, A>(
        &self,
        transfer: Transfer<'_>,
        make: M,
        accept: A,
        cancel: &CancellationToken,
    ) -> Result<Answered<T>, ApiError>
    where
        M: Fn(&reqwest::Client) -> reqwest::RequestBuilder,
        A: Fn(Received) -> Result<T, ApiError>,
    {
        let mut policy = self.inner.retry;
        if let Some(n) = transfer.max_attempts {
            policy.max_attempts = n.max(1);
        }
        let (mut attempt, mut timed_out): (u32, u32) = (0, 0);
        let mut retrying = None;
        loop {
            let cancelled = |attempts: u32| ApiError {
                attempts,
                ..ApiError::cancelled()
            };
            if cancel.is_cancelled() {
                return Err(cancelled(attempt));
            }
            self.wait_for_limits(cancel)
                .await
                .map_err(|()| cancelled(attempt))?;
            // A free slot at the server first: the attempt's timeout starts when it is sent.
            let slot = match self.inner.server_slots.get() {
                Some(slots) => tokio::select! {
                    permit = slots.clone().acquire_owned() => permit.ok(),
                    _ = cancel.cancelled() => return Err(cancelled(attempt)),
                },
                None => None,
            };
            attempt += 1;
            self.inner.attempts.fetch_add(1, Ordering::Relaxed);
            let limit = match transfer.time {
                TimeLimit::Answer(budget) => self.inner.pace.limit(budget, timed_out),
                TimeLimit::Setting => None,
            };
            let sent = tokio::time::Instant::now();
            let outcome = self
                .attempt(&transfer, limit, &make, cancel)
                .await
                .and_then(&accept);
            // Free for others while this one backs off.
            drop(slot);
            let mut err = match outcome {
                Ok(value) => {
                    tracing::debug!(attempt, "model API request succeeded");
                    return Ok(Answered {
                        value,
                        attempts: attempt,
                        took: sent.elapsed(),
                    });
                }
                Err(err) => err,
            };
            err.attempts = attempt;
            if err.kind == ErrorKind::Cancelled {
                return Err(err);
            }
            if err.kind == ErrorKind::RateLimited {
                self.inner.rate_limited.send_modify(|n| *n += 1);
            }
            timed_out += u32::from(err.kind == ErrorKind::Timeout);
            if !err.retryable || attempt >= policy.max_attempts {
                tracing::debug!(
                    attempt,
                    status = err.status,
                    kind = %err.kind,
                    retryable = err.retryable,
                    "model API request failed"
                );
                return Err(err);
            }
            let wait = backoff(&policy, attempt - 1, err.retry_after);
            if err.kind == ErrorKind::RateLimited {
                self.pause(wait);
            }
            retrying.get_or_insert_with(|| self.inner.delays.retrying());
            self.inner.delays.retry(Retry {
                kind: err.kind,
                attempt: attempt + 1,
                of: policy.max_attempts,
            });
            tracing::debug!(
                attempt,
                status = err.status,
                kind = %err.kind,
                wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "model API request failed; retrying"
            );
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = cancel.cancelled() => return Err(cancelled(attempt)),
            }
        }
    }

    /// After a rate-limit signal, no request of any worker starts for `wait`.
    fn pause(&self, wait: Duration) {
        let until = tokio::time::Instant::now() + wait;
        let mut p = self
            .inner
            .pause_until
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if p.is_none_or(|cur| cur < until) {
            *p = Some(until);
        }
        self.inner.delays.pause_until(until.into_std());
    }

    /// Waits for `--rpm` and for the server's pause, if one runs; `Err` when cancelled.
    async fn wait_for_limits(&self, cancel: &CancellationToken) -> Result<(), ()> {
        self.held_if_waiting(self.inner.limits.request(cancel))
            .await
            .map_err(|_| ())?;
        let paused = *self
            .inner
            .pause_until
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(until) = paused.filter(|u| *u > tokio::time::Instant::now()) {
            let _held = self.inner.delays.limited();
            tokio::select! {
                _ = tokio::time::sleep_until(until) => {}
                _ = cancel.cancelled() => return Err(()),
            }
        }
        Ok(())
    }

    /// `wait`, counted as a request held up by a rate limit unless it is over at once.
    async fn held_if_waiting<F: std::future::Future>(&self, wait: F) -> F::Output {
        let mut wait = std::pin::pin!(wait);
        if let Some(done) = futures_util::FutureExt::now_or_never(wait.as_mut()) {
            return done;
        }
        let _held = self.inner.delays.limited();
        wait.await
    }

    /// One attempt: send, read the whole body up to `limit` bytes. Transport failures are
    /// classified here; a body over the limit (announced or streamed) fails the request as
    /// `api_error`, not retried: the same request would get the same flood.
    async fn attempt<M>(
        &self,
        transfer: &Transfer<'_>,
        time: Option<Duration>,
        make: &M,
        cancel: &CancellationToken,
    ) -> Result<Received, ApiError>
    where
        M: Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    {
        let limit = transfer.limit;
        let mut request = make(&self.inner.http);
        if let Some(key) = &self.inner.key {
            request = self.inner.dialect.authorize(request, key);
        }
        if let Some(time) = time {
            request = request.timeout(time);
        }
        let too_large = || {
            ApiError::new(
                ErrorKind::ApiError,
                false,
                msg!(
                    "the response body is larger than {limit} bytes, far more than an answer of the requested length; it was not read"
                ),
            )
        };
        let exchange = async {
            let mut response = request.send().await.map_err(|e| self.transport_error(e))?;
            if response.content_length().is_some_and(|n| n > limit as u64) {
                return Err(too_large());
            }
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            if let Some(dest) = transfer.spool.filter(|_| (200..300).contains(&status)) {
                let written = self.spool(&mut response, dest, limit).await?;
                // The body is on disk; its length stands for it.
                return Ok(Received {
                    status,
                    headers,
                    body: Vec::new(),
                    spooled: written,
                });
            }
            let mut body = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| self.transport_error(e))?
            {
                if body.len() + chunk.len() > limit {
                    return Err(too_large());
                }
                body.extend_from_slice(&chunk);
            }
            // A server that echoes the key (in an answer, in tool arguments, in an error)
            // must not get it into outputs, logs, transcripts or records: it is removed here,
            // before anything reads the body.
            Ok(Received {
                status,
                headers,
                body: self.redact_bytes(body),
                spooled: 0,
            })
        };
        let outcome = tokio::select! {
            r = exchange => r,
            _ = cancel.cancelled() => Err(ApiError::cancelled()),
        };
        outcome.map_err(|e| self.ran_out_of_time(e, time))
    }

    /// An attempt that got no answer within its limit says what the limit was and where it
    /// is set (a server's own 408 is left as it said it).
    fn ran_out_of_time(&self, e: ApiError, time: Option<Duration>) -> ApiError {
        if e.kind != ErrorKind::Timeout || e.status.is_some() {
            return e;
        }
        let secs = time.map_or(self.inner.pace.floor(), |t| t).as_secs();
        let message = if self.inner.pace.is_sized() {
            msg!("no answer within {secs} s (a limit sized to the server's speed)")
        } else {
            msg!("no answer within {secs} s")
        };
        ApiError {
            message,
            hint: Some(msg!("raise --timeout or `timeout:` in zhi.yaml")),
            ..e
        }
    }

    /// A 2xx body into `dest` (through a temporary file beside it, renamed at the end), each
    /// line cleaned of secrets; at most `limit` bytes and `MAX_BODY_BYTES` a line.
    async fn spool(
        &self,
        response: &mut reqwest::Response,
        dest: &std::path::Path,
        limit: usize,
    ) -> Result<u64, ApiError> {
        use std::io::Write as _;
        let io = |e: std::io::Error| {
            ApiError::new(
                ErrorKind::Io,
                false,
                msg!("cannot write {}: {e}", dest.display()),
            )
        };
        let too_large = |message: String| ApiError::new(ErrorKind::ApiError, false, message);
        let tmp = TempFile(dest.with_extension(format!("tmp-{}", std::process::id())));
        let mut file = std::io::BufWriter::new(std::fs::File::create(&tmp.0).map_err(io)?);
        let result = async {
            let (mut carry, mut received, mut written) = (Vec::new(), 0usize, 0u64);
            let mut put = |line: &[u8], file: &mut std::io::BufWriter<std::fs::File>| {
                let clean = self.inner.secrets.redact_body(line.to_vec());
                written += clean.len() as u64;
                file.write_all(&clean).map_err(io)
            };
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| self.transport_error(e))?
            {
                received += chunk.len();
                if received > limit {
                    return Err(too_large(format!(
                        "the result file is larger than {limit} bytes; it was not kept"
                    )));
                }
                carry.extend_from_slice(&chunk);
                while let Some(end) = memchr::memchr(b'\n', &carry) {
                    let line: Vec<u8> = carry.drain(..=end).collect();
                    put(&line[..end], &mut file)?;
                    put(b"\n", &mut file)?;
                }
                if carry.len() > MAX_BODY_BYTES {
                    return Err(too_large(format!(
                        "a line of the result file is larger than {MAX_BODY_BYTES} bytes; it was not kept"
                    )));
                }
            }
            if !carry.is_empty() {
                put(&carry, &mut file)?;
            }
            file.flush().map_err(io)?;
            file.get_ref().sync_all().map_err(io)?;
            Ok(written)
        }
        .await;
        let written = result?;
        std::fs::rename(&tmp.0, dest).map_err(io)?;
        Ok(written)
    }

    fn transport_error(&self, e: reqwest::Error) -> ApiError {
        let e = e.without_url();
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        let text = self.redact(&text);
        if e.is_builder() {
            return ApiError::new(ErrorKind::ApiError, false, msg!("invalid request: {text}"));
        }
        let observed = if e.is_timeout() {
            Observed::Timeout
        } else {
            Observed::Connection
        };
        // Transport failures always classify as a failure.
        let verdict = classify(observed).unwrap_or(crate::llm::error::Verdict {
            kind: ErrorKind::ApiError,
            retryable: true,
        });
        let message = match observed {
            Observed::Timeout => msg!("request timed out: {text}"),
            _ => msg!("connection failed: {text}"),
        };
        ApiError::new(verdict.kind, verdict.retryable, excerpt(&message, 500))
    }

    /// Classifies a complete response (docs/model-api.md#error-classification, via [`classify`]);
    /// for chat, also parses the completion, which is then always `Some`.
    fn inspect(&self, received: &Received, chat: bool) -> Result<Option<ChatResponse>, ApiError> {
        let status = received.status;
        let success = (200..300).contains(&status);
        let json: Option<Value> = serde_json::from_slice(&received.body).ok();
        let provider: Option<ProviderError> = json.as_ref().and_then(provider_error);
        let mut completion = None;
        let body = match (&json, &provider) {
            (_, Some(p)) => Body::Error(p),
            (Some(value), None) if chat && success => {
                match serde_json::from_value::<ChatResponse>(value.clone()) {
                    Ok(r) if !r.choices.is_empty() => {
                        completion = Some(r);
                        Body::Completion {
                            finish_reason: None,
                        }
                    }
                    _ => Body::Malformed,
                }
            }
            (Some(_), None) => Body::Json,
            (None, None) if !chat && success && received.body.is_empty() => Body::Json,
            (None, None) => Body::NotJson,
        };
        let finish_reason = completion
            .as_ref()
            .and_then(|r| r.choices[0].finish_reason.clone());
        let body = match body {
            Body::Completion { .. } => Body::Completion {
                finish_reason: finish_reason.as_deref(),
            },
            other => other,
        };
        let Some(verdict) = classify(Observed::Http { status, body }) else {
            return Ok(completion);
        };
        let detail = match (&provider, body) {
            (Some(p), _) => p.message.clone(),
            (None, Body::Completion { finish_reason }) => {
                format!("finish_reason: {}", finish_reason.unwrap_or("none"))
            }
            (None, Body::Malformed) => msg!("the response is not a chat completion"),
            (None, Body::NotJson) if success => format!(
                "invalid JSON body: {}",
                String::from_utf8_lossy(&received.body)
            ),
            (None, _) => String::from_utf8_lossy(&received.body).into_owned(),
        };
        Err(http_error(
            verdict,
            status,
            provider.as_ref(),
            &self.redact(&detail),
            retry_after(&received.headers),
        ))
    }

    /// Server text may echo the key (e.g. "invalid key sk-…", or JSON-escaped in an answer):
    /// it never reaches a message, an output or a record.
    fn redact_bytes(&self, body: Vec<u8>) -> Vec<u8> {
        self.inner.secrets.redact_body(body)
    }

    fn redact(&self, text: &str) -> String {
        self.inner.secrets.redact(text).into_owned()
    }

    /// The secrets this client redacts, for text that reaches zhi another way (the server
    /// probe, transcripts).
    pub(crate) fn secrets(&self) -> &crate::secret::Secrets {
        &self.inner.secrets
    }
}

/// A temporary file removed when dropped: a download that fails, or is cancelled mid-way,
/// leaves nothing behind (after a rename, the removal finds nothing).
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
