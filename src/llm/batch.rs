//! The provider's Batch API (Zhipu's `/files` + `/batches`; OpenAI's has the same shape): a
//! JSONL file of chat requests is uploaded with `purpose=batch`, a batch is created over it,
//! and within the completion window its answers come back as a file of JSONL lines.
//!
//! This is the wire only: request lines, answer lines, and one call per endpoint, each through
//! the shared [`ChatClient`] (one connection pool, one retry policy, one classification of
//! failures). What to batch, and the book kept of batches on disk, live in `crate::batch`.
//!
//! Shapes (both providers):
//! - `POST <base>/files` multipart: `purpose=batch`, `file` → `{"id": …}`
//! - `POST <base>/batches` `{input_file_id, endpoint, completion_window: "24h", metadata}`
//! - `GET <base>/batches/<id>` → `{id, status, input_file_id, output_file_id, error_file_id,
//!   request_counts: {total, completed, failed}}`; `status` is one of `validating`, `failed`,
//!   `in_progress`, `finalizing`, `completed`, `expired`, `cancelling`, `cancelled`
//! - `POST <base>/batches/<id>/cancel`; `GET <base>/batches?limit=&after=`
//! - `GET <base>/files?purpose=batch`, `GET <base>/files/<id>/content`, `DELETE <base>/files/<id>`
//! - a request line `{"custom_id", "method": "POST", "url": "/v4/chat/completions", "body"}`;
//!   an answer line `{"custom_id", "response": {"status_code", "body"}, "error"}`.

use super::client::ChatClient;
use super::error::{ApiError, Body, Observed, ProviderError, classify, provider_error};
use super::provider::Endpoint;
use crate::error::ErrorKind;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// How long a batch may take: the providers' one window.
pub(crate) const COMPLETION_WINDOW: &str = "24h";

/// The most bytes of a result file kept (it is streamed to disk, never held in memory); a
/// larger one is never downloaded again: its batch is given up.
pub(crate) const MAX_RESULT_BYTES: usize = 1 << 30;

/// A batch as the provider describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BatchInfo {
    #[serde(deserialize_with = "id_text")]
    pub id: String,
    /// As the provider said it, made one printable line (it reaches terminals and records).
    #[serde(default, deserialize_with = "one_line_text")]
    pub status: String,
    #[serde(default, deserialize_with = "opt_id_text")]
    pub input_file_id: Option<String>,
    #[serde(default, deserialize_with = "opt_id_text")]
    pub output_file_id: Option<String>,
    #[serde(default, deserialize_with = "opt_id_text")]
    pub error_file_id: Option<String>,
    #[serde(default)]
    pub request_counts: Option<RequestCounts>,
    /// Why a batch failed validation, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<Value>,
}

impl BatchInfo {
    /// The batch will change no more: its answers (if any) can be downloaded.
    pub(crate) fn is_finished(&self) -> bool {
        matches!(
            self.status.as_str(),
            "completed" | "failed" | "expired" | "cancelled"
        )
    }
}

/// `request_counts` of a batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RequestCounts {
    #[serde(default)]
    pub total: u64,
    #[serde(default)]
    pub completed: u64,
    #[serde(default)]
    pub failed: u64,
}

/// One line of a result or error file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AnswerLine {
    pub custom_id: String,
    pub outcome: LineOutcome,
}

/// What a result line says of its request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LineOutcome {
    /// The HTTP answer the request got: a chat completion, or an error body.
    Response { status: u16, body: Vec<u8> },
    /// No answer: the batch system's error (expired, cancelled, failed validation…).
    Error(ApiError),
}

/// The `url` of a batch request line: the chat endpoint's path as the provider names it
/// (`/v4/chat/completions` for Zhipu, `/v1/chat/completions` for OpenAI). Taken from the base
/// URL's version segment (`…/api/paas/v4` → `/v4`), else the provider's.
pub(crate) fn chat_endpoint(base_url: &str, provider_version: &str) -> String {
    let last = base_url
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or("");
    let version = if last.len() >= 2
        && last.starts_with('v')
        && last[1..].bytes().all(|b| b.is_ascii_digit())
    {
        last
    } else {
        provider_version
    };
    format!("/{version}/chat/completions")
}

/// One request line: the body is embedded byte for byte as the direct path sends it.
pub(crate) fn request_line(custom_id: &str, url: &str, body: &[u8]) -> Vec<u8> {
    let mut line = Vec::with_capacity(body.len() + custom_id.len() + url.len() + 64);
    line.extend_from_slice(b"{\"custom_id\":");
    line.extend_from_slice(json!(custom_id).to_string().as_bytes());
    line.extend_from_slice(b",\"method\":\"POST\",\"url\":");
    line.extend_from_slice(json!(url).to_string().as_bytes());
    line.extend_from_slice(b",\"body\":");
    line.extend_from_slice(body);
    line.extend_from_slice(b"}\n");
    line
}

/// The `custom_id` of a result line, without reading the rest (for indexing large files).
pub(crate) fn line_custom_id(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Id {
        custom_id: Option<Value>,
    }
    let id: Id = serde_json::from_slice(line).ok()?;
    match id.custom_id? {
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A result or error line. A line with a response (any status) is that response; one with only an
/// error is classified by its code: `batch_expired`, `batch_cancelled` and codes the classification
/// table (docs/model-api.md#error-classification) does not know are worth another batch, the
/// table's codes decide as they do for a request sent now.
pub(crate) fn parse_answer_line(line: &[u8]) -> Option<AnswerLine> {
    let value: Value = serde_json::from_slice(line).ok()?;
    let custom_id = match value.get("custom_id")? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let response = value.get("response").filter(|r| r.is_object());
    if let Some(r) = response
        && let Some(status) = r.get("status_code").and_then(Value::as_u64)
        && let Some(body) = r.get("body").filter(|b| !b.is_null())
    {
        // Some servers send the body as a JSON string.
        let bytes = match body {
            Value::String(s) => s.as_bytes().to_vec(),
            other => serde_json::to_vec(other).unwrap_or_default(),
        };
        return Some(AnswerLine {
            custom_id,
            outcome: LineOutcome::Response {
                status: u16::try_from(status).unwrap_or(500),
                body: bytes,
            },
        });
    }
    let error = value
        .get("error")
        .filter(|e| !e.is_null())
        .and_then(|e| provider_error(&json!({ "error": e })))
        .unwrap_or(ProviderError {
            message: "the batch gave no answer for this request".into(),
            ..ProviderError::default()
        });
    Some(AnswerLine {
        custom_id,
        outcome: LineOutcome::Error(line_error(&error)),
    })
}

fn line_error(error: &ProviderError) -> ApiError {
    let code = error.code.as_deref().unwrap_or("");
    let known = classify(Observed::Http {
        status: 400,
        body: Body::Error(error),
    })
    .filter(|_| !code.is_empty() && !code.starts_with("batch_"));
    let (kind, retryable) = match known {
        // A request's answer in a finished batch says nothing of this run's key or quota:
        // the job fails, the run goes on.
        Some(v) if v.kind.aborts_run() => (ErrorKind::ApiError, false),
        Some(v) if v.kind != ErrorKind::ApiError => (v.kind, v.retryable),
        _ => (ErrorKind::ApiError, true),
    };
    let mut message = msg!("in the batch");
    if !code.is_empty() {
        message.push_str(&format!(" (code {code})"));
    }
    if !error.message.is_empty() {
        message.push_str(": ");
        message.push_str(&crate::sanitize::one_line(&error.message));
    }
    let mut e = ApiError::new(kind, retryable, message);
    e.code = error.code.clone();
    e
}

/// The Batch API of the run's server, over the shared client.
#[derive(Clone)]
pub(crate) struct BatchApi {
    client: ChatClient,
}

#[derive(Deserialize)]
struct Listing<T> {
    #[serde(default = "Vec::new")]
    data: Vec<T>,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    last_id: Option<String>,
}

#[derive(Deserialize)]
struct FileInfo {
    #[serde(deserialize_with = "id_text")]
    id: String,
    #[serde(default)]
    filename: Option<String>,
}

/// Pages of a listing read at most, when looking for what a killed run created.
const MAX_PAGES: usize = 20;

impl BatchApi {
    pub(crate) fn new(client: ChatClient) -> Self {
        BatchApi { client }
    }

    /// Upload a request file (`purpose=batch`); returns its id.
    pub(crate) async fn upload(
        &self,
        file_name: &str,
        bytes: &[u8],
        cancel: &CancellationToken,
    ) -> Result<String, ApiError> {
        let url = self.client.endpoint(Endpoint::Files, &[])?;
        let response = self
            .client
            .send_once(
                |http| {
                    let part = reqwest::multipart::Part::bytes(bytes.to_vec())
                        .file_name(file_name.to_string());
                    let part = part.mime_str("application/jsonl").unwrap_or_else(|_| {
                        reqwest::multipart::Part::bytes(bytes.to_vec())
                            .file_name(file_name.to_string())
                    });
                    let form = reqwest::multipart::Form::new()
                        .text("purpose", "batch")
                        .part("file", part);
                    http.post(url.clone()).multipart(form)
                },
                cancel,
            )
            .await?;
        let value: Value = response.json()?;
        let id = text_id(value.get("id"))
            .ok_or_else(|| shape_error("the upload response has no file id", &value))?;
        plain_id(&id)?;
        Ok(id)
    }

    /// The id of an uploaded batch file named `file_name`, if the provider holds one (a run
    /// killed during its upload).
    pub(crate) async fn find_file(
        &self,
        file_name: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, ApiError> {
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut url = self.client.endpoint(Endpoint::Files, &[])?;
            url.query_pairs_mut()
                .append_pair("purpose", "batch")
                .append_pair("limit", "100");
            if let Some(a) = &after {
                url.query_pairs_mut().append_pair("after", a);
            }
            let page: Listing<FileInfo> = self
                .client
                .send(|http| http.get(url.clone()), cancel)
                .await?
                .json()?;
            if let Some(f) = page
                .data
                .iter()
                .find(|f| f.filename.as_deref() == Some(file_name))
            {
                return Ok(Some(f.id.clone()));
            }
            after = page
                .last_id
                .or_else(|| page.data.last().map(|f| f.id.clone()));
            if !page.has_more || after.is_none() {
                break;
            }
        }
        Ok(None)
    }

    /// Create a batch over an uploaded file.
    pub(crate) async fn create(
        &self,
        input_file_id: &str,
        endpoint: &str,
        metadata: Value,
        cancel: &CancellationToken,
    ) -> Result<BatchInfo, ApiError> {
        let url = self.client.endpoint(Endpoint::Batches, &[])?;
        let body = json!({
            "input_file_id": input_file_id,
            "endpoint": endpoint,
            "completion_window": COMPLETION_WINDOW,
            "metadata": metadata,
        });
        let info: BatchInfo = self
            .client
            .send_once(|http| http.post(url.clone()).json(&body), cancel)
            .await?
            .json()?;
        plain_id(&info.id)?;
        Ok(info)
    }

    /// The batch created over `input_file_id`, if there is one (a run killed while it created
    /// the batch).
    pub(crate) async fn find_batch(
        &self,
        input_file_id: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<BatchInfo>, ApiError> {
        let mut after: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut url = self.client.endpoint(Endpoint::Batches, &[])?;
            url.query_pairs_mut().append_pair("limit", "100");
            if let Some(a) = &after {
                url.query_pairs_mut().append_pair("after", a);
            }
            let page: Listing<BatchInfo> = self
                .client
                .send(|http| http.get(url.clone()), cancel)
                .await?
                .json()?;
            if let Some(b) = page
                .data
                .iter()
                .find(|b| b.input_file_id.as_deref() == Some(input_file_id))
            {
                return Ok(Some(b.clone()));
            }
            after = page
                .last_id
                .or_else(|| page.data.last().map(|b| b.id.clone()));
            if !page.has_more || after.is_none() {
                break;
            }
        }
        Ok(None)
    }

    /// The batch's status now.
    pub(crate) async fn get(
        &self,
        id: &str,
        cancel: &CancellationToken,
    ) -> Result<BatchInfo, ApiError> {
        plain_id(id)?;
        let url = self.client.endpoint(Endpoint::Batches, &[id])?;
        self.client
            .send(|http| http.get(url.clone()), cancel)
            .await?
            .json()
    }

    /// Ask the provider to cancel the batch (answers given so far stay collectable).
    pub(crate) async fn cancel(
        &self,
        id: &str,
        cancel: &CancellationToken,
    ) -> Result<BatchInfo, ApiError> {
        plain_id(id)?;
        let url = self.client.endpoint(Endpoint::Batches, &[id, "cancel"])?;
        self.client
            .send(|http| http.post(url.clone()), cancel)
            .await?
            .json()
    }

    /// A result file (JSON lines) streamed into `dest`, never whole in memory; its size.
    pub(crate) async fn download(
        &self,
        file_id: &str,
        dest: &std::path::Path,
        cancel: &CancellationToken,
    ) -> Result<u64, ApiError> {
        plain_id(file_id)?;
        let url = self
            .client
            .endpoint(Endpoint::Files, &[file_id, "content"])?;
        self.client
            .download(MAX_RESULT_BYTES, |http| http.get(url.clone()), dest, cancel)
            .await
    }

    /// Delete a file from the provider (the account holds a limited number); a file already
    /// gone is fine.
    pub(crate) async fn delete_file(
        &self,
        file_id: &str,
        cancel: &CancellationToken,
    ) -> Result<(), ApiError> {
        plain_id(file_id)?;
        let url = self.client.endpoint(Endpoint::Files, &[file_id])?;
        match self
            .client
            .send(|http| http.delete(url.clone()), cancel)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.status == Some(404) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Ids from the provider go into URLs: only a plain token is accepted (letters, digits,
/// `-`, `_`, `.`, `:`; not `.` or `..`; at most 200 characters), so an id cannot turn
/// `GET /batches/<id>` into another call.
pub(crate) fn plain_id(id: &str) -> Result<(), ApiError> {
    let plain = !id.is_empty()
        && id.len() <= 200
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c))
        && !id.chars().all(|c| c == '.');
    if plain {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorKind::ApiError,
            false,
            msg!(
                "the provider gave an id that is not a plain token: {id:?}",
                id = crate::sanitize::one_line(&crate::sanitize::fit(id, 80))
            ),
        ))
    }
}

fn one_line_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s: String = serde::Deserialize::deserialize(d)?;
    Ok(crate::sanitize::one_line(&crate::sanitize::fit(&s, 80)))
}

fn text_id(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn id_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    text_id(Some(&Value::deserialize(d)?)).ok_or_else(|| serde::de::Error::custom("no id"))
}

fn opt_id_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(text_id(Some(&Value::deserialize(d)?)))
}

fn shape_error(what: &str, value: &Value) -> ApiError {
    let text = value.to_string();
    let excerpt: String = text.chars().take(200).collect();
    ApiError::new(
        ErrorKind::ApiError,
        false,
        format!("{what}: {}", crate::sanitize::one_line(&excerpt)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_follows_the_base_url_version() {
        assert_eq!(
            chat_endpoint("https://open.bigmodel.cn/api/paas/v4", "v4"),
            "/v4/chat/completions"
        );
        assert_eq!(
            chat_endpoint("https://api.openai.com/v1/", "v1"),
            "/v1/chat/completions"
        );
        assert_eq!(
            chat_endpoint("https://example.com/openai", "v1"),
            "/v1/chat/completions"
        );
    }

    #[test]
    fn a_request_line_embeds_the_body_verbatim() {
        let body = br#"{"model":"m","messages":[],"stream":false}"#;
        let line = request_line("abc-piece-00001", "/v4/chat/completions", body);
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["custom_id"], "abc-piece-00001");
        assert_eq!(v["method"], "POST");
        assert_eq!(v["url"], "/v4/chat/completions");
        assert_eq!(v["body"]["model"], "m");
        assert!(
            line.windows(body.len()).any(|w| w == body),
            "the very bytes"
        );
        assert!(line.ends_with(b"}\n"));
    }

    #[test]
    fn answer_lines() {
        let ok = br#"{"custom_id":"a","response":{"status_code":200,"body":{"choices":[]}},"error":null}"#;
        let a = parse_answer_line(ok).unwrap();
        assert_eq!(a.custom_id, "a");
        assert!(matches!(
            a.outcome,
            LineOutcome::Response { status: 200, .. }
        ));
        assert_eq!(line_custom_id(ok).as_deref(), Some("a"));

        let expired = br#"{"custom_id":"b","response":null,"error":{"code":"batch_expired","message":"not done in time"}}"#;
        let LineOutcome::Error(e) = parse_answer_line(expired).unwrap().outcome else {
            panic!("an error line");
        };
        assert!(e.retryable);
        assert!(e.message.contains("not done in time"), "{}", e.message);

        let filtered = br#"{"custom_id":"c","error":{"code":"1301","message":"unsafe"}}"#;
        let LineOutcome::Error(e) = parse_answer_line(filtered).unwrap().outcome else {
            panic!("an error line");
        };
        assert_eq!((e.kind, e.retryable), (ErrorKind::ContentFilter, false));

        let quota = br#"{"custom_id":"d","error":{"code":"1113","message":"arrears"}}"#;
        let LineOutcome::Error(e) = parse_answer_line(quota).unwrap().outcome else {
            panic!("an error line");
        };
        assert_eq!(
            e.kind,
            ErrorKind::ApiError,
            "a batch line never aborts a run"
        );
        assert!(parse_answer_line(b"not json").is_none());
    }
}
