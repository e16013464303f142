//! A job's transcript: every request and answer of its conversation, one JSON line each, so a
//! person can see why a job ended as it did (`<run>/transcripts/<job-id>.jsonl`).
//!
//! It must never hold the API key: zhi never puts it in a message, and every line is also
//! scrubbed of it before it is written, in case a server or a document echoed it back.
//! Texts are cut at [`CUT_BYTES`] each so a long document does not fill the disk once per turn.

use crate::llm::{ApiError, ChatReply, ChatRequest, Message};
use crate::secret::Secrets;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// The most bytes of one message, tool argument or tool result a transcript keeps.
pub(crate) const CUT_BYTES: usize = 4 * 1024;

/// Where a job's lines go. Writing is best effort: a transcript that cannot be written is
/// logged once and never fails the job.
#[derive(Debug)]
pub(crate) struct Transcript {
    file: Mutex<Option<std::fs::File>>,
    secrets: Secrets,
}

impl Transcript {
    /// A transcript appended to `path` (created with its folder). `secrets` are scrubbed
    /// (what came from the server already was; tool results and notes had not).
    pub(crate) fn create(path: &Path, secrets: Secrets) -> Self {
        let file = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
            });
        Self::opened(path, file, secrets)
    }

    /// A transcript appended to `path` through `folder`, its folder held open (reached
    /// beneath the output folder's handle, or why it could not be): never through a link.
    pub(crate) fn create_in(
        folder: std::io::Result<crate::confine::Root>,
        path: &Path,
        secrets: Secrets,
    ) -> Self {
        let file = folder.and_then(|folder| {
            let name = path.file_name().unwrap_or_default();
            folder
                .top()
                .open_append(name)
                .map_err(|e| crate::layout::link_refused(path, e))
        });
        Self::opened(path, file, secrets)
    }

    fn opened(path: &Path, file: std::io::Result<std::fs::File>, secrets: Secrets) -> Self {
        let file = match file {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::warn!(
                    "{}",
                    msg!("cannot write the transcript {}: {e}", path.display())
                );
                None
            }
        };
        Transcript {
            file: Mutex::new(file),
            secrets,
        }
    }

    /// A transcript that writes nothing (tests, tools outside a run).
    pub(crate) fn none() -> Self {
        Transcript {
            file: Mutex::new(None),
            secrets: Secrets::default(),
        }
    }

    /// One request and its outcome.
    pub(crate) fn request(
        &self,
        skill: &str,
        turn: u32,
        req: &ChatRequest,
        outcome: Result<&ChatReply, &ApiError>,
        took: Duration,
    ) {
        let tools: Vec<&str> = req.tools.iter().map(|t| t.function.name.as_str()).collect();
        let mut line = json!({
            "type": "request",
            "at": crate::manifest::Timestamp::now(),
            "skill": skill,
            "turn": turn,
            "model": req.model,
            "messages": req.messages.iter().map(message_json).collect::<Vec<_>>(),
            "tools": tools,
            "duration_ms": u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        });
        match outcome {
            Ok(reply) => {
                line["status"] = json!(200);
                line["attempts"] = json!(reply.attempts);
                line["answer"] = message_json(&reply.message);
                line["finish_reason"] = json!(reply.finish_reason);
                line["usage"] = json!({
                    "prompt_tokens": reply.usage.prompt_tokens,
                    "completion_tokens": reply.usage.completion_tokens,
                });
                line["served_model"] = json!(reply.model);
            }
            Err(e) => {
                line["status"] = json!(e.status);
                line["attempts"] = json!(e.attempts);
                line["error"] = json!({"kind": e.kind.as_str(), "message": e.message});
            }
        }
        self.write(&line);
    }

    /// One tool call and what it returned to the model.
    pub(crate) fn tool(
        &self,
        skill: &str,
        turn: u32,
        call: &crate::llm::ToolCall,
        result: &str,
        refused: bool,
    ) {
        self.write(&json!({
            "type": "tool",
            "at": crate::manifest::Timestamp::now(),
            "skill": skill,
            "turn": turn,
            "tool_call_id": call.id,
            "name": call.function.name,
            "arguments": cut(&call.function.arguments),
            "result": cut(result),
            "refused": refused,
        }));
    }

    /// A decision zhi took about the job (an output written from the answer, a corrective
    /// turn, a missing file).
    pub(crate) fn note(&self, text: &str) {
        self.write(&json!({
            "type": "note",
            "at": crate::manifest::Timestamp::now(),
            "text": cut(text),
        }));
    }

    fn write(&self, line: &Value) {
        let mut guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let Some(file) = guard.as_mut() else {
            return;
        };
        let mut text = self.secrets.redact_body(line.to_string().into_bytes());
        text.push(b'\n');
        if let Err(e) = file.write_all(&text) {
            tracing::warn!("{}", msg!("cannot write the transcript: {e}"));
            *guard = None;
        }
    }
}

fn message_json(m: &Message) -> Value {
    let mut v = json!({"role": m.role});
    if let Some(c) = &m.content {
        v["content"] = json!(cut(c));
    }
    if !m.parts.is_empty() {
        v["parts"] = json!(m.parts.len());
    }
    if let Some(calls) = &m.tool_calls {
        v["tool_calls"] = calls
            .iter()
            .map(|c| {
                json!({
                    "id": c.id,
                    "name": c.function.name,
                    "arguments": cut(&c.function.arguments),
                })
            })
            .collect();
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    v
}

/// `s` cut at [`CUT_BYTES`] on a character boundary, with a marker saying how much was cut.
pub(crate) fn cut(s: &str) -> String {
    if s.len() <= CUT_BYTES {
        return s.to_string();
    }
    let mut end = CUT_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [cut: {} more bytes]", &s[..end], s.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_and_the_secret_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t").join("job.jsonl");
        let t = Transcript::create(
            &path,
            Secrets::new(Some("sk-secret-123-long-enough"), "http://h/v1"),
        );
        let long = "字".repeat(3000);
        let call = crate::llm::ToolCall::new(
            "c1",
            "file_read",
            "{\"path\":\"sk-secret-123-long-enough\"}",
        );
        t.tool("s", 1, &call, &long, false);
        t.note("echo sk-secret-123-long-enough");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("sk-secret-123"), "{text}");
        assert_eq!(text.lines().count(), 2);
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let result = first["result"].as_str().unwrap();
        assert!(
            result.len() < CUT_BYTES + 64 && result.contains("[cut:"),
            "{result}"
        );
    }
}
