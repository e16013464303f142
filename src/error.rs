//! The kinds of failure a job can end with (docs/outputs.md#error-kinds): the vocabulary shared by
//! every stage, so the manifest, the exit code and the retry policy all speak of the same thing.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a job (or a request inside it) failed. Serialised as the snake_case `error.kind` of a
/// manifest record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum ErrorKind {
    /// Bad or missing credentials (Zhipu 1000–1004, HTTP 401/403). Aborts the run.
    Auth,
    /// Arrears, daily cap or quota (1113, 1304, 1308, 1310). Aborts the run.
    Quota,
    /// Rate limited (1302, 1303, 1305, other 429) beyond every retry.
    RateLimited,
    /// The API failed: 5xx, invalid JSON, other 4xx.
    ApiError,
    /// A request timed out.
    Timeout,
    /// The provider's content filter (1301, `finish_reason: sensitive`).
    ContentFilter,
    /// The prompt exceeded the model's context (1261).
    ContextTooLong,
    /// The agent reached its skill's `max_turns`.
    MaxTurns,
    /// The job ended without every file its skill declares (or left one empty, or a copy of
    /// the input), after one corrective turn.
    MissingOutput,
    /// An extraction skill's answer was not a JSON object valid against its schema after one
    /// corrective request, or (`grounding: required`) a required value was found nowhere in
    /// the document.
    InvalidOutput,
    /// `--strict`: the job's output was doubted (docs/outputs.md#doubts) — well formed, but
    /// probably wrong — after every rung of the ladder.
    Doubtful,
    /// The model's answer was cut at its length limit (`finish_reason: length`).
    Truncated,
    /// The input is of a kind zhi cannot read.
    UnsupportedType,
    /// Text extraction failed (a broken PDF, a crashed worker, an unreadable office file).
    ExtractFailed,
    /// OCR failed or no OCR engine is available.
    OcrFailed,
    /// The document is larger than the model's budget and the skill does not chunk.
    TooLarge,
    /// The job's output folder was edited by a person; it is left untouched.
    OutputConflict,
    /// The input could not be read (missing, broken link, permission, paired file missing).
    InputError,
    /// The job was cancelled (signal, abort of the run).
    Cancelled,
    /// The job was not run because a run-wide limit was reached (budget, max failures).
    Skipped,
    /// Batch mode: the job's request waits for the provider's Batch API (queued by this run
    /// or in a batch still running); a later run collects the answer. Recorded as `skipped`.
    BatchPending,
    /// Batch mode: the job runs the agent loop, which a batch of single requests cannot do,
    /// and `--agent-jobs refuse` (the default) said not to run it now.
    NotBatchable,
    /// Writing outputs or records failed.
    Io,
    /// A bug in zhi ended the job (it is recorded, and the run goes on).
    Internal,
}

impl ErrorKind {
    /// The snake_case name used in manifests and messages.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Errors that end the whole run at once (exit 3), not just the job.
    pub fn aborts_run(self) -> bool {
        matches!(self, ErrorKind::Auth | ErrorKind::Quota)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A job's failure as recorded in the manifest: `{kind, message}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct JobError {
    pub kind: ErrorKind,
    pub message: String,
}

impl JobError {
    /// A failure of `kind`; a message that starts with its kind (`timeout: no answer…`, as an
    /// API error says itself) keeps only what follows, so no one reads `timeout: timeout: …`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        let message: String = message.into();
        let message = match without_kind(kind, &message) {
            rest if rest.len() < message.len() => rest.to_string(),
            _ => message,
        };
        JobError { kind, message }
    }

    /// The message as a person reads it after the kind: without the kind a record written
    /// by an earlier zhi repeated at its start.
    pub fn reason(&self) -> &str {
        without_kind(self.kind, &self.message)
    }
}

/// `message` without a leading `kind: `.
fn without_kind(kind: ErrorKind, message: &str) -> &str {
    message
        .trim_start()
        .strip_prefix(kind.as_str())
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_says_its_kind_once() {
        let e = JobError::new(ErrorKind::Timeout, "timeout: no answer within 1 s");
        assert_eq!(e.message, "no answer within 1 s");
        assert_eq!(e.to_string(), "timeout: no answer within 1 s");
        // A record of an earlier zhi, read back.
        let old: JobError = serde_json::from_str(
            r#"{"kind": "cancelled", "message": "cancelled: request cancelled"}"#,
        )
        .unwrap();
        assert_eq!(old.reason(), "request cancelled");
        // A message that only begins with the same word keeps it.
        let e = JobError::new(ErrorKind::Io, "iodine: no such file");
        assert_eq!(e.reason(), "iodine: no such file");
    }
}
