//! The OpenAI-shaped chat wire format, as Zhipu and every OpenAI-compatible server speak it.
//!
//! Strict on output (we send exactly the documented shape) and lenient on input: servers omit
//! fields, send `content: null`, give tool-call arguments as a JSON object instead of a string,
//! or put a text-parts array where a string belongs. All of that is normalised here so the
//! agent loop sees one shape. This module knows nothing of HTTP, retries or skills.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One chat completion request (`POST <base>/chat/completions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    /// Tools offered to the model; omitted from the body when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDef>,
    /// `"auto"`, `"none"`, or `{"type":"function","function":{"name":…}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// llama.cpp's repetition penalty; sent only to a server known to take it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_penalty: Option<f32>,
    /// OpenAI's frequency penalty; zhi sends it only when asking again after a looping answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f32>,
    /// What shape the answer must have (`{"type": "json_schema", …}` or `{"type":
    /// "json_object"}`), for extraction skills; the server enforces it where it can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Value>,
    /// Always `false`: zhi reads whole completions, never streams.
    #[serde(default)]
    pub stream: bool,
}

impl ChatRequest {
    /// A request with no tools and the server's default sampling.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        ChatRequest {
            model: model.into(),
            messages,
            tools: Vec::new(),
            tool_choice: None,
            temperature: None,
            max_tokens: None,
            repeat_penalty: None,
            frequency_penalty: None,
            response_format: None,
            stream: false,
        }
    }
}

/// Who speaks a message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Role {
    System,
    User,
    /// The default when a response omits the role.
    #[default]
    Assistant,
    Tool,
}

/// One message of a conversation.
///
/// `content` is the text. A message may instead carry `parts` (text and images, for vision
/// models); when `parts` is not empty it is sent as the `content` array and `content` is
/// ignored on output. On input a parts array is kept in `parts` and its text parts are joined
/// into `content`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "MessageWire", into = "MessageWire")]
pub struct Message {
    pub(crate) role: Role,
    pub content: Option<String>,
    pub(crate) parts: Vec<ContentPart>,
    pub(crate) tool_calls: Option<Vec<ToolCall>>,
    /// For `role: tool`: the id of the call this message answers.
    pub tool_call_id: Option<String>,
    pub name: Option<String>,
}

impl Message {
    fn with(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: Some(content.into()),
            ..Message::default()
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Message::with(Role::System, content)
    }

    pub fn user(content: impl Into<String>) -> Self {
        Message::with(Role::User, content)
    }

    pub(crate) fn assistant(content: impl Into<String>) -> Self {
        Message::with(Role::Assistant, content)
    }

    /// The answer to one tool call, matched to it by `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(tool_call_id.into()),
            ..Message::with(Role::Tool, content)
        }
    }

    /// A user message made of parts (e.g. a prompt and an image data URL for a vision model).
    pub(crate) fn user_parts(parts: Vec<ContentPart>) -> Self {
        Message {
            role: Role::User,
            parts,
            ..Message::default()
        }
    }

    /// The tool calls of an assistant message; empty when there are none.
    pub fn calls(&self) -> &[ToolCall] {
        self.tool_calls.as_deref().unwrap_or(&[])
    }
}

/// One part of a multi-part message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentPart {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

impl ContentPart {
    pub(crate) fn text(text: impl Into<String>) -> Self {
        ContentPart::Text { text: text.into() }
    }

    /// An image given by URL, typically `data:image/png;base64,…`.
    pub(crate) fn image_url(url: impl Into<String>) -> Self {
        ContentPart::ImageUrl {
            image_url: ImageUrl { url: url.into() },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ImageUrl {
    pub url: String,
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// May be empty on input from careless servers; the client fills it in.
    #[serde(default)]
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

impl ToolCall {
    #[cfg(test)]
    pub(crate) fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            kind: function_type(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    #[serde(default)]
    pub name: String,
    /// The arguments as JSON text, exactly as the model wrote them (possibly invalid JSON:
    /// the agent decides what to do with that). A JSON object on input is re-serialised.
    #[serde(default = "empty_object", deserialize_with = "arguments_as_string")]
    pub arguments: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    /// Always `"function"`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub(crate) function: FunctionDef,
}

impl ToolDef {
    pub fn function(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
    ) -> Self {
        ToolDef {
            kind: function_type(),
            function: FunctionDef {
                name: name.into(),
                description: description.into(),
                parameters,
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FunctionDef {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// A JSON Schema object.
    #[serde(default = "empty_schema")]
    pub parameters: Value,
}

/// A chat completion response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChatResponse {
    #[serde(default)]
    pub id: Option<String>,
    /// The model the server says answered.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub choices: Vec<Choice>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Choice {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub message: Message,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// Token accounting of one completion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default, deserialize_with = "count_or_zero")]
    pub prompt_tokens: u64,
    #[serde(default, deserialize_with = "count_or_zero")]
    pub completion_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
}

impl Usage {
    /// Prompt plus completion (what a per-minute token budget is charged).
    pub(crate) fn total(&self) -> u64 {
        self.total_tokens
            .unwrap_or(self.prompt_tokens + self.completion_tokens)
    }
}

fn function_type() -> String {
    "function".to_owned()
}

fn empty_object() -> String {
    "{}".to_owned()
}

fn empty_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// Arguments as a string; an object (or any other JSON) is serialised back to text; null is
/// an empty object.
fn arguments_as_string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => s,
        Value::Null => empty_object(),
        other => other.to_string(),
    })
}

/// A token count; `null`, negative or fractional values are read leniently.
fn count_or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(0),
        Value::Number(n) => Ok(n
            .as_u64()
            .or_else(|| n.as_f64().map(|f| f.max(0.0) as u64))
            .unwrap_or(0)),
        Value::String(s) => s.trim().parse().map_err(de::Error::custom),
        other => Err(de::Error::custom(format!(
            "expected a token count, got {other}"
        ))),
    }
}

/// The message exactly as it appears on the wire.
#[derive(Serialize, Deserialize)]
struct MessageWire {
    #[serde(default)]
    role: Role,
    #[serde(default)]
    content: Option<ContentWire>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<ToolCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum ContentWire {
    Text(String),
    Parts(Vec<Value>),
}

impl From<MessageWire> for Message {
    fn from(w: MessageWire) -> Self {
        let (content, parts) = match w.content {
            None => (None, Vec::new()),
            Some(ContentWire::Text(t)) => (Some(t), Vec::new()),
            Some(ContentWire::Parts(values)) => {
                // Unknown part types are dropped rather than failing the whole response.
                let parts: Vec<ContentPart> = values
                    .into_iter()
                    .filter_map(|v| serde_json::from_value(v).ok())
                    .collect();
                let text: Vec<&str> = parts
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::Text { text } => Some(text.as_str()),
                        ContentPart::ImageUrl { .. } => None,
                    })
                    .collect();
                let text = (!text.is_empty()).then(|| text.concat());
                (text, parts)
            }
        };
        Message {
            role: w.role,
            content,
            parts,
            tool_calls: w.tool_calls.filter(|calls| !calls.is_empty()),
            tool_call_id: w.tool_call_id,
            name: w.name,
        }
    }
}

impl From<Message> for MessageWire {
    fn from(m: Message) -> Self {
        let content = if m.parts.is_empty() {
            m.content.map(ContentWire::Text)
        } else {
            Some(ContentWire::Parts(
                m.parts
                    .iter()
                    // Serialising these plain enums cannot fail.
                    .filter_map(|p| serde_json::to_value(p).ok())
                    .collect(),
            ))
        };
        MessageWire {
            role: m.role,
            content,
            tool_calls: m.tool_calls,
            tool_call_id: m.tool_call_id,
            name: m.name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_has_the_documented_shape() {
        let mut req = ChatRequest::new(
            "glm-4-flash",
            vec![Message::system("be brief"), Message::user("hi")],
        );
        let body = serde_json::to_value(&req).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "glm-4-flash",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"}
                ],
                "stream": false
            })
        );
        req.tools.push(ToolDef::function(
            "file_write",
            "write a file",
            json!({"type": "object"}),
        ));
        req.max_tokens = Some(100);
        req.messages.push(Message::tool_result("call_1", "ok"));
        let body = serde_json::to_value(&req).unwrap();
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["tools"][0]["function"]["name"], "file_write");
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(
            body["messages"][2],
            json!({"role": "tool", "content": "ok", "tool_call_id": "call_1"})
        );
        assert!(body.get("temperature").is_none());
    }

    #[test]
    fn assistant_tool_calls_round_trip() {
        let mut m = Message::assistant("");
        m.content = None;
        m.tool_calls = Some(vec![ToolCall::new(
            "call_1",
            "file_read",
            r#"{"path":"a.txt"}"#,
        )]);
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "file_read", "arguments": "{\"path\":\"a.txt\"}"}}
            ]})
        );
        let back: Message = serde_json::from_value(v).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn lenient_response_parsing() {
        let r: ChatResponse = serde_json::from_value(json!({
            "choices": [{
                "message": {
                    "content": null,
                    "tool_calls": [{"function": {"name": "file_write",
                        "arguments": {"path": "a.md", "content": "x"}}, "index": 0}],
                    "extra": 1
                },
                "finish_reason": "tool_calls"
            }],
            "usage": {"prompt_tokens": 7, "completion_tokens": null},
            "created": 1,
            "object": "chat.completion"
        }))
        .unwrap();
        let m = &r.choices[0].message;
        assert_eq!(m.role, Role::Assistant);
        assert_eq!(m.content, None);
        let call = &m.calls()[0];
        assert_eq!(call.kind, "function");
        assert_eq!(call.id, "");
        let args: Value = serde_json::from_str(&call.function.arguments).unwrap();
        assert_eq!(args, json!({"path": "a.md", "content": "x"}));
        let usage = r.usage.unwrap();
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (7, 0));
        assert_eq!(usage.total(), 7);
    }

    #[test]
    fn missing_arguments_and_empty_calls() {
        let m: Message = serde_json::from_value(json!({
            "role": "assistant", "content": "done", "tool_calls": []
        }))
        .unwrap();
        assert!(m.tool_calls.is_none());
        let c: ToolCall =
            serde_json::from_value(json!({"id": "x", "function": {"name": "f"}})).unwrap();
        assert_eq!(c.function.arguments, "{}");
        let c: ToolCall = serde_json::from_value(
            json!({"id": "x", "function": {"name": "f", "arguments": null}}),
        )
        .unwrap();
        assert_eq!(c.function.arguments, "{}");
    }

    #[test]
    fn parts_are_sent_as_content_array_and_read_back_as_text() {
        let m = Message::user_parts(vec![
            ContentPart::text("read this"),
            ContentPart::image_url("data:image/png;base64,AAAA"),
        ]);
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v["content"],
            json!([
                {"type": "text", "text": "read this"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
            ])
        );
        let back: Message = serde_json::from_value(json!({
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "weird"}, {"type": "text", "text": "b"}]
        }))
        .unwrap();
        assert_eq!(back.content.as_deref(), Some("ab"));
    }
}
