//! What went wrong with a model API request, and whether trying again can help.
//!
//! [`classify`] is the one place that implements the table of
//! docs/model-api.md#error-classification: provider error code first, HTTP status second.
//! Everything that turns a response, a transport failure or a completion's `finish_reason` into an
//! [`ApiError`] goes through it, so retries, aborts and the manifest always agree. Messages built
//! here must never contain the API key: the client redacts server-provided text before it reaches
//! an `ApiError`.

use crate::error::{ErrorKind, JobError};
use crate::sanitize::one_line;
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// A failed model API request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ApiError {
    pub kind: ErrorKind,
    /// What happened, for a person: status, provider code and the server's message.
    pub message: String,
    /// The HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// The provider's error code (`"1302"`, `"context_length_exceeded"`), when given.
    pub code: Option<String>,
    /// The server's `Retry-After`, when given.
    pub retry_after: Option<Duration>,
    /// Whether another attempt may succeed (docs/model-api.md#retries).
    pub retryable: bool,
    /// Attempts made before giving up; 0 when the error was not produced by a request.
    pub attempts: u32,
    /// What a person may do about it (`give it longer with --timeout SECS …`), said last.
    pub hint: Option<String>,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        if self.attempts > 1 {
            write!(f, " (after {} attempts)", self.attempts)?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "; {hint}")?;
        }
        Ok(())
    }
}

impl ApiError {
    /// An error with no response behind it.
    pub fn new(kind: ErrorKind, retryable: bool, message: impl Into<String>) -> Self {
        ApiError {
            kind,
            message: message.into(),
            status: None,
            code: None,
            retry_after: None,
            retryable,
            attempts: 0,
            hint: None,
        }
    }

    /// The request was cancelled (signal or run abort). Never retried.
    pub fn cancelled() -> Self {
        ApiError::new(ErrorKind::Cancelled, false, msg!("request cancelled"))
    }

    /// Whether this error should end the whole run (auth, quota).
    pub fn aborts_run(&self) -> bool {
        self.kind.aborts_run()
    }

    /// The error as a manifest record's `{kind, message}`.
    pub fn to_job_error(&self) -> JobError {
        JobError::new(self.kind, self.to_string())
    }
}

impl From<ApiError> for JobError {
    fn from(e: ApiError) -> Self {
        e.to_job_error()
    }
}

/// What the table decides: the kind of failure and whether to try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub kind: ErrorKind,
    pub retryable: bool,
}

impl Verdict {
    const fn retry(kind: ErrorKind) -> Self {
        Verdict {
            kind,
            retryable: true,
        }
    }
    const fn fail(kind: ErrorKind) -> Self {
        Verdict {
            kind,
            retryable: false,
        }
    }
}

/// An error object found in a response body: Zhipu's `{"error":{"code","message"}}` or
/// OpenAI's `{"error":{"message","type","code"}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProviderError {
    /// The code as text (a JSON number is accepted and written as text).
    pub code: Option<String>,
    /// OpenAI's `type` (`invalid_request_error`, `insufficient_quota`…).
    pub kind: Option<String>,
    pub message: String,
}

/// What a response body turned out to be, as far as classification cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Body<'a> {
    /// Not valid JSON (or empty where JSON was required).
    NotJson,
    /// An error object.
    Error(&'a ProviderError),
    /// A chat completion, with the first choice's `finish_reason`.
    Completion { finish_reason: Option<&'a str> },
    /// Some other valid JSON (an OCR result, an upload receipt…); also an acceptable empty
    /// body where none was required.
    Json,
    /// JSON that should have been a chat completion but is not (no choices).
    Malformed,
}

/// One attempt's outcome, as the classification table sees it
/// (docs/model-api.md#error-classification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Observed<'a> {
    /// No response in time.
    Timeout,
    /// Connection refused/reset, a body cut off, a TLS failure: no complete response.
    Connection,
    /// A complete HTTP response.
    Http { status: u16, body: Body<'a> },
}

/// The classification table (docs/model-api.md#error-classification). `None` means success.
///
/// Provider codes decide first; then the HTTP status; for 2xx responses the body and the
/// completion's `finish_reason` decide. 408 is treated as a timeout (it is one).
pub(crate) fn classify(observed: Observed<'_>) -> Option<Verdict> {
    use ErrorKind::*;
    let (status, body) = match observed {
        Observed::Timeout => return Some(Verdict::retry(Timeout)),
        Observed::Connection => return Some(Verdict::retry(ApiError)),
        Observed::Http { status, body } => (status, body),
    };
    if let Body::Error(err) = body
        && let Some(v) = by_code(err)
    {
        return Some(v);
    }
    match status {
        401 | 403 => Some(Verdict::fail(Auth)),
        429 => Some(Verdict::retry(RateLimited)),
        408 => Some(Verdict::retry(Timeout)),
        // Ollama reports an over-long prompt as a 500; retrying the same prompt cannot help.
        500..=599 => match body {
            Body::Error(err) if mentions_context_length(err) && says_exceeded(err) => {
                Some(Verdict::fail(ContextTooLong))
            }
            _ => Some(Verdict::retry(ApiError)),
        },
        400..=499 => match body {
            Body::Error(err) if mentions_context_length(err) => Some(Verdict::fail(ContextTooLong)),
            _ => Some(Verdict::fail(ApiError)),
        },
        200..=299 => match body {
            Body::NotJson | Body::Malformed => Some(Verdict::retry(ApiError)),
            // An error object we do not know, in a success status: do not hammer on it.
            Body::Error(_) => Some(Verdict::fail(ApiError)),
            Body::Completion {
                finish_reason: Some("sensitive"),
            } => Some(Verdict::fail(ContentFilter)),
            Body::Completion {
                finish_reason: Some("network_error"),
            } => Some(Verdict::retry(ApiError)),
            Body::Completion { .. } | Body::Json => None,
        },
        // 1xx/3xx reaching us (redirects are followed before this point) is a server fault.
        _ => Some(Verdict::fail(ApiError)),
    }
}

/// Provider codes: Zhipu's numbers, then OpenAI's symbolic codes and types.
///
/// A number that is not Zhipu's (llama.cpp and vLLM repeat the HTTP status as `code`) leaves
/// the decision to the type: llama.cpp's `exceed_context_size_error` comes with `code: 400`.
fn by_code(err: &ProviderError) -> Option<Verdict> {
    use ErrorKind::*;
    let code = err.code.as_deref().map(str::trim).unwrap_or("");
    if let Ok(n) = code.parse::<u32>() {
        let zhipu = match n {
            1000..=1004 => Some(Verdict::fail(Auth)),
            1113 | 1304 | 1308 | 1310 => Some(Verdict::fail(Quota)),
            1302 | 1303 | 1305 => Some(Verdict::retry(RateLimited)),
            1301 => Some(Verdict::fail(ContentFilter)),
            1261 => Some(Verdict::fail(ContextTooLong)),
            1210..=1215 => Some(Verdict::fail(ApiError)),
            _ => None,
        };
        if zhipu.is_some() {
            return zhipu;
        }
    }
    let symbolic = |s: &str| match s {
        "context_length_exceeded" | "exceed_context_size_error" => {
            Some(Verdict::fail(ContextTooLong))
        }
        "insufficient_quota" => Some(Verdict::fail(Quota)),
        "invalid_api_key" | "authentication_error" | "permission_denied" => {
            Some(Verdict::fail(Auth))
        }
        "rate_limit_exceeded" => Some(Verdict::retry(RateLimited)),
        _ => None,
    };
    symbolic(code).or_else(|| err.kind.as_deref().and_then(symbolic))
}

/// OpenAI-compatible servers that report an exceeded context without a code say so in the
/// message: vLLM ("maximum context length is 4096 tokens", "longer than the maximum model
/// length"), older llama.cpp ("exceeds the available context size"), Ollama ("exceeds the
/// context length").
fn mentions_context_length(err: &ProviderError) -> bool {
    let m = err.message.to_ascii_lowercase();
    m.contains("context length")
        || m.contains("context_length")
        || m.contains("context size")
        || m.contains("context window")
        || m.contains("maximum context")
        || m.contains("maximum model length")
}

/// Whether the message says something was too long, not merely names the context length: a
/// 5xx is only taken for an exceeded context (and not retried) when it says both.
fn says_exceeded(err: &ProviderError) -> bool {
    let m = err.message.to_ascii_lowercase();
    ["exceed", "too long", "too large", "longer than"]
        .iter()
        .any(|w| m.contains(w))
}

/// The error object of a body, if it has one: `{"error": {...}}`, `{"error": "text"}`, older
/// vLLM's `{"object": "error", ...}`, or the older Zhipu `{"code": 1302, "msg": "…",
/// "success": false}`.
pub(crate) fn provider_error(body: &Value) -> Option<ProviderError> {
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    match body.get("error") {
        Some(Value::Object(obj)) => Some(ProviderError {
            code: obj.get("code").and_then(text),
            kind: obj.get("type").and_then(text),
            message: obj
                .get("message")
                .or_else(|| obj.get("msg"))
                .and_then(text)
                .unwrap_or_default(),
        }),
        Some(Value::String(s)) => Some(ProviderError {
            message: s.clone(),
            ..ProviderError::default()
        }),
        // Older vLLM answers errors with a bare `{"object": "error", "message", "type", "code"}`.
        _ if body.get("object").and_then(Value::as_str) == Some("error") => Some(ProviderError {
            code: body.get("code").and_then(text),
            kind: body.get("type").and_then(text),
            message: body.get("message").and_then(text).unwrap_or_default(),
        }),
        _ if body.get("success") == Some(&Value::Bool(false)) => Some(ProviderError {
            code: body.get("code").and_then(text),
            kind: None,
            message: body
                .get("msg")
                .or_else(|| body.get("message"))
                .and_then(text)
                .unwrap_or_default(),
        }),
        _ => None,
    }
}

/// Builds the [`ApiError`] for an HTTP response the table rejected. `detail` is a short,
/// already-redacted description of the body.
pub(crate) fn http_error(
    verdict: Verdict,
    status: u16,
    provider: Option<&ProviderError>,
    detail: &str,
    retry_after: Option<Duration>,
) -> ApiError {
    let code = provider.and_then(|p| p.code.clone());
    let mut message = format!("HTTP {status}");
    if let Some(c) = &code {
        message.push_str(&format!(" (code {c})"));
    }
    let detail = excerpt(detail, 300);
    if !detail.is_empty() {
        message.push_str(": ");
        message.push_str(&detail);
    }
    ApiError {
        kind: verdict.kind,
        message,
        status: Some(status),
        code,
        retry_after,
        retryable: verdict.retryable,
        attempts: 0,
        hint: None,
    }
}

/// At most `max` characters of `s` on one line, with a marker when cut.
pub(crate) fn excerpt(s: &str, max: usize) -> String {
    let s = one_line(s.trim());
    if s.chars().count() <= max {
        return s;
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ErrorKind::*;
    use serde_json::json;

    fn zhipu(code: &str) -> ProviderError {
        ProviderError {
            code: Some(code.to_owned()),
            kind: None,
            message: "m".to_owned(),
        }
    }

    fn http(status: u16, body: Body<'_>) -> Option<(ErrorKind, bool)> {
        classify(Observed::Http { status, body }).map(|v| (v.kind, v.retryable))
    }

    fn code(status: u16, c: &str) -> Option<(ErrorKind, bool)> {
        http(status, Body::Error(&zhipu(c)))
    }

    #[test]
    fn zhipu_codes_decide_before_status() {
        for c in ["1000", "1001", "1002", "1003", "1004"] {
            assert_eq!(code(401, c), Some((Auth, false)), "{c}");
            assert_eq!(code(400, c), Some((Auth, false)), "{c}");
        }
        for c in ["1113", "1304", "1308", "1310"] {
            // They arrive as 429 and must not be mistaken for a retryable rate limit.
            assert_eq!(code(429, c), Some((Quota, false)), "{c}");
        }
        for c in ["1302", "1303", "1305"] {
            assert_eq!(code(429, c), Some((RateLimited, true)), "{c}");
            assert_eq!(code(400, c), Some((RateLimited, true)), "{c}");
        }
        assert_eq!(code(400, "1301"), Some((ContentFilter, false)));
        assert_eq!(code(200, "1301"), Some((ContentFilter, false)));
        assert_eq!(code(400, "1261"), Some((ContextTooLong, false)));
        for c in ["1210", "1211", "1212", "1213", "1214", "1215"] {
            assert_eq!(code(400, c), Some((ApiError, false)), "{c}");
            // The code decides even when the status would say "retry".
            assert_eq!(code(500, c), Some((ApiError, false)), "{c}");
        }
    }

    #[test]
    fn range_edges_fall_through_to_status() {
        assert_eq!(code(400, "1005"), Some((ApiError, false)));
        assert_eq!(code(429, "1209"), Some((RateLimited, true)));
        assert_eq!(code(400, "1216"), Some((ApiError, false)));
        assert_eq!(code(429, "1306"), Some((RateLimited, true)));
        assert_eq!(code(500, "1234"), Some((ApiError, true)));
        assert_eq!(code(401, "9999"), Some((Auth, false)));
    }

    #[test]
    fn statuses_without_a_known_code() {
        let none = Body::Json;
        assert_eq!(http(401, none), Some((Auth, false)));
        assert_eq!(http(403, Body::NotJson), Some((Auth, false)));
        assert_eq!(http(429, none), Some((RateLimited, true)));
        assert_eq!(http(429, Body::NotJson), Some((RateLimited, true)));
        for s in [500, 502, 503, 504, 599] {
            assert_eq!(http(s, Body::NotJson), Some((ApiError, true)), "{s}");
        }
        for s in [400, 404, 405, 413, 422, 499] {
            assert_eq!(http(s, none), Some((ApiError, false)), "{s}");
        }
        assert_eq!(http(408, none), Some((Timeout, true)));
        assert_eq!(http(304, none), Some((ApiError, false)));
    }

    #[test]
    fn transport_failures_are_retried() {
        assert_eq!(classify(Observed::Timeout), Some(Verdict::retry(Timeout)));
        assert_eq!(
            classify(Observed::Connection),
            Some(Verdict::retry(ApiError))
        );
    }

    #[test]
    fn success_bodies() {
        let done = |f: Option<&str>| http(200, Body::Completion { finish_reason: f });
        assert_eq!(done(Some("stop")), None);
        assert_eq!(done(Some("tool_calls")), None);
        assert_eq!(done(Some("length")), None);
        assert_eq!(done(None), None);
        assert_eq!(done(Some("sensitive")), Some((ContentFilter, false)));
        assert_eq!(done(Some("network_error")), Some((ApiError, true)));
        assert_eq!(http(200, Body::NotJson), Some((ApiError, true)));
        assert_eq!(http(200, Body::Malformed), Some((ApiError, true)));
        assert_eq!(http(200, Body::Json), None);
        assert_eq!(http(204, Body::Json), None);
        assert_eq!(code(200, "9999"), Some((ApiError, false)));
    }

    #[test]
    fn openai_style_errors() {
        let e = |code: Option<&str>, kind: Option<&str>, message: &str| ProviderError {
            code: code.map(str::to_owned),
            kind: kind.map(str::to_owned),
            message: message.to_owned(),
        };
        let ctx = e(
            Some("context_length_exceeded"),
            Some("invalid_request_error"),
            "too long",
        );
        assert_eq!(http(400, Body::Error(&ctx)), Some((ContextTooLong, false)));
        let vllm = e(
            None,
            Some("BadRequestError"),
            "This model's maximum context length is 4096 tokens",
        );
        assert_eq!(http(400, Body::Error(&vllm)), Some((ContextTooLong, false)));
        let quota = e(Some("insufficient_quota"), Some("insufficient_quota"), "q");
        assert_eq!(http(429, Body::Error(&quota)), Some((Quota, false)));
        let quota_by_type = e(None, Some("insufficient_quota"), "q");
        assert_eq!(http(429, Body::Error(&quota_by_type)), Some((Quota, false)));
        let rl = e(Some("rate_limit_exceeded"), Some("requests"), "slow down");
        assert_eq!(http(429, Body::Error(&rl)), Some((RateLimited, true)));
        let key = e(Some("invalid_api_key"), None, "bad key");
        assert_eq!(http(401, Body::Error(&key)), Some((Auth, false)));
        let other = e(Some("model_not_found"), None, "no such model");
        assert_eq!(http(404, Body::Error(&other)), Some((ApiError, false)));
    }

    #[test]
    fn local_servers_context_exceeded() {
        let e = |code: Option<&str>, kind: Option<&str>, message: &str| ProviderError {
            code: code.map(str::to_owned),
            kind: kind.map(str::to_owned),
            message: message.to_owned(),
        };
        let ctx = Some((ContextTooLong, false));
        // llama.cpp: the type decides, though the code is a number.
        let llama = provider_error(&json!({"error": {
            "code": 400,
            "message": "request (5030 tokens) exceeds the available context size (4096 tokens), try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 5030,
            "n_ctx": 4096,
        }}))
        .unwrap();
        assert_eq!(http(400, Body::Error(&llama)), ctx);
        let typed_only = e(Some("400"), Some("exceed_context_size_error"), "");
        assert_eq!(http(400, Body::Error(&typed_only)), ctx);
        let llama_old = e(
            Some("400"),
            Some("invalid_request_error"),
            "the request exceeds the available context size, try increasing the context size or enable context shift",
        );
        assert_eq!(http(400, Body::Error(&llama_old)), ctx);
        // vLLM, current and older body shapes, and its prompt check.
        let vllm = provider_error(&json!({"error": {
            "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": null,
            "code": 400,
        }}))
        .unwrap();
        assert_eq!(http(400, Body::Error(&vllm)), ctx);
        let vllm_old = provider_error(&json!({
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
            "type": "BadRequestError",
            "param": null,
            "code": 400,
        }))
        .unwrap();
        assert_eq!(vllm_old.kind.as_deref(), Some("BadRequestError"));
        assert_eq!(http(400, Body::Error(&vllm_old)), ctx);
        let vllm_prompt = e(
            Some("400"),
            Some("BadRequestError"),
            "The decoder prompt (length 5000) is longer than the maximum model length of 4096.",
        );
        assert_eq!(http(400, Body::Error(&vllm_prompt)), ctx);
        // Ollama, as 400 and as 500: an exceeded context is not a server fault to retry.
        for message in [
            "input length exceeds the context length",
            "prompt too long; exceeded max context length",
        ] {
            let ollama = provider_error(&json!({"error": {
                "message": message, "type": "api_error", "param": null, "code": null,
            }}))
            .unwrap();
            assert_eq!(http(400, Body::Error(&ollama)), ctx, "{message}");
            assert_eq!(http(500, Body::Error(&ollama)), ctx, "{message}");
            let native = provider_error(&json!({ "error": message })).unwrap();
            assert_eq!(http(500, Body::Error(&native)), ctx, "{message}");
        }
        // OpenAI keeps its code.
        let openai = e(
            Some("context_length_exceeded"),
            Some("invalid_request_error"),
            "This model's maximum context length is 128000 tokens.",
        );
        assert_eq!(http(400, Body::Error(&openai)), ctx);
        // A 5xx that only names the context length is still a retryable server fault, and a
        // Zhipu code still decides before the type.
        let vague = e(None, None, "failed to compute the context length");
        assert_eq!(http(500, Body::Error(&vague)), Some((ApiError, true)));
        let loading = e(Some("503"), Some("unavailable_error"), "Loading model");
        assert_eq!(http(503, Body::Error(&loading)), Some((ApiError, true)));
        let zhipu_rl = e(Some("1302"), Some("exceed_context_size_error"), "m");
        assert_eq!(http(400, Body::Error(&zhipu_rl)), Some((RateLimited, true)));
    }

    #[test]
    fn provider_error_shapes() {
        let z = provider_error(&json!({"error": {"code": "1302", "message": "slow"}})).unwrap();
        assert_eq!(z.code.as_deref(), Some("1302"));
        assert_eq!(z.message, "slow");
        let n = provider_error(&json!({"error": {"code": 1113, "message": "pay"}})).unwrap();
        assert_eq!(n.code.as_deref(), Some("1113"));
        let o =
            provider_error(&json!({"error": {"message": "m", "type": "t", "code": null}})).unwrap();
        assert_eq!((o.code, o.kind.as_deref()), (None, Some("t")));
        let s = provider_error(&json!({"error": "boom"})).unwrap();
        assert_eq!(s.message, "boom");
        let old =
            provider_error(&json!({"code": 1261, "msg": "too long", "success": false})).unwrap();
        assert_eq!(old.code.as_deref(), Some("1261"));
        assert!(provider_error(&json!({"choices": []})).is_none());
        assert!(provider_error(&json!({"code": 200, "data": {}})).is_none());
    }

    #[test]
    fn http_error_message_names_status_and_code() {
        let p = zhipu("1302");
        let e = http_error(
            Verdict::retry(RateLimited),
            429,
            Some(&p),
            "too\nmany\x1b[2J",
            Some(Duration::from_secs(2)),
        );
        assert_eq!(e.message, "HTTP 429 (code 1302): too many\u{FFFD}[2J");
        assert_eq!(e.code.as_deref(), Some("1302"));
        let long = "x".repeat(1000);
        let e = http_error(Verdict::fail(ApiError), 400, None, &long, None);
        assert!(e.message.len() < 400);
        assert!(e.message.ends_with('…'));
    }
}
