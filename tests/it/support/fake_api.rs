//! A scriptable OpenAI/Zhipu-compatible API server for integration tests.
//!
//! It listens on 127.0.0.1 (port 0) on its own thread with its own tokio runtime, so it works
//! the same from plain `#[test]` functions (driving the `zhi` binary with `assert_cmd`) and from
//! `#[tokio::test]` ones. Every request is recorded, then answered by the test's script:
//!
//! ```ignore
//! let api = FakeApi::start(|req: &Recorded| {
//!     if req.has_tool_result() { Reply::text("done") }
//!     else { Reply::tool_calls(vec![("file_write", json!({"path": "a.md", "content": "x"}))]) }
//! });
//! // … run zhi with --base-url api.base_url() …
//! assert_eq!(api.chat_requests().len(), 2);
//! ```
//!
//! The HTTP is hand-written and minimal on purpose (request line, headers, `Content-Length`
//! or chunked body; every response is `Connection: close`), so tests can send broken answers
//! no real server library would: bodies cut short, invalid JSON, connections that never answer.
//! Scripts run on the server's thread and must be quick; use [`Reply::delay`] for slowness.
//! A panic in a script (e.g. a failed assertion) answers 500 and is re-raised when the server is
//! dropped, so it fails the test instead of vanishing.

use serde_json::{Value, json};
use std::net::SocketAddr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

type Script = dyn Fn(&Recorded) -> Reply + Send + Sync + 'static;

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// 0-based, global to this server, in order of arrival.
    pub seq: usize,
    pub method: String,
    /// The path without the query, e.g. `/v1/chat/completions` or `/api/paas/v4/files`.
    pub path: String,
    /// The query string without `?`, if any.
    pub query: Option<String>,
    /// Header names lowercased, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body as JSON, `Value::Null` when it is not JSON (e.g. multipart).
    pub body: Value,
    /// The body as text (invalid UTF-8 replaced).
    pub body_text: String,
    pub body_bytes: Vec<u8>,
    /// When the request was fully received.
    pub at: Instant,
}

/// The answer to one `role: tool` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub tool_call_id: String,
    pub content: String,
}

impl Recorded {
    /// The document a job's request is about: the `Input document:` line zhi sends in a
    /// framed user message (empty when there is none, as in a one-message request: tell
    /// those apart by [`Recorded::document_text`] or [`Recorded::document_tag`]).
    pub fn input_document(&self) -> String {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(message_text)
            .find_map(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("Input document: ").map(str::to_string))
            })
            .unwrap_or_default()
    }

    /// The text of the first user message (empty when there is none).
    pub fn first_user_text(&self) -> String {
        self.messages()
            .iter()
            .find(|m| m["role"] == "user")
            .map(message_text)
            .unwrap_or_default()
    }

    /// Whether the request is a skill's one message (docs/skills.md, "One message: a skill's
    /// `instruction`"; summarize, translate): no system prompt, and a first user message that
    /// is the instruction and the text, not a framed `Input document:` / `Input folder:` one.
    pub fn is_one_message(&self) -> bool {
        let first = self.first_user_text();
        self.system_prompt().is_none()
            && !first.is_empty()
            && !first.starts_with("Input document: ")
            && !first.starts_with("Input folder: ")
    }

    /// The document text a job's request carries, in either framing of its first user message:
    ///
    /// - framed (most skills, the reduce of map-reduce, an extraction): the text between the
    ///   first `--- BEGIN DOCUMENT NAME ---` line and its `--- END DOCUMENT NAME ---`;
    /// - one message ([`Recorded::is_one_message`]): what follows the first blank line after
    ///   the instruction (after a piece's `For context only, …` paragraph), its trailing
    ///   newline dropped. A fresh retry's hint line stays at its end.
    ///
    /// Empty when the request has neither (a folder's request, a probe).
    pub fn document_text(&self) -> String {
        let first = self.first_user_text();
        if self.is_one_message() {
            // The text as it is, whatever it holds (a frame written in it too).
            let mut rest = first.as_str();
            if rest.starts_with("For context only, the text before it ends: ") {
                rest = rest.split_once("\n\n").map_or("", |(_, r)| r);
            }
            let text = rest.split_once("\n\n").map_or("", |(_, t)| t);
            return text.strip_suffix('\n').unwrap_or(text).to_owned();
        }
        let Some(start) = first.find("--- BEGIN DOCUMENT ") else {
            return String::new();
        };
        let block = &first[start + "--- BEGIN DOCUMENT ".len()..];
        let Some((name, body)) = block.split_once(" ---\n") else {
            return String::new();
        };
        let end = format!("\n--- END DOCUMENT {name} ---");
        body.find(&end).map_or(body, |e| &body[..e]).to_owned()
    }

    /// The tag of a test document: the text between `<<` and `>>` in the request's document
    /// text ([`Recorded::document_text`]), in either framing. Tests that tell documents apart
    /// write one into each (`<<docs/a.txt>>`, `<<M07-…>>`), since a one-message request does
    /// not name its document.
    pub fn document_tag(&self) -> Option<String> {
        let text = self.document_text();
        let start = text.find("<<")? + 2;
        let end = start + text[start..].find(">>")?;
        Some(text[start..end].to_owned())
    }

    /// `POST …/chat/completions`, under any prefix (`/v1`, `/api/paas/v4`).
    pub fn is_chat(&self) -> bool {
        self.method == "POST" && self.path.ends_with("/chat/completions")
    }

    /// A header's value, by case-insensitive name.
    /// One of zhi's server probes: `GET /props`, `GET …/models`, `POST /api/show`.
    pub fn is_probe(&self) -> bool {
        match self.method.as_str() {
            "GET" => self.path.ends_with("/props") || self.path.ends_with("/models"),
            "POST" => self.path.ends_with("/api/show"),
            _ => false,
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The bearer token of the `Authorization` header.
    pub fn bearer(&self) -> Option<&str> {
        self.header("authorization")?.strip_prefix("Bearer ")
    }

    /// The requested model.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model")?.as_str()
    }

    /// The chat messages, as sent.
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The text of the first system message.
    pub fn system_prompt(&self) -> Option<String> {
        self.messages()
            .iter()
            .find(|m| m["role"] == "system")
            .map(message_text)
    }

    /// The text of the last user message.
    pub fn last_user_text(&self) -> Option<String> {
        self.messages()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .map(message_text)
    }

    /// Every `role: tool` message, in order.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| ToolResult {
                tool_call_id: m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                content: message_text(m),
            })
            .collect()
    }

    pub fn has_tool_result(&self) -> bool {
        self.messages().iter().any(|m| m["role"] == "tool")
    }

    /// The names of the functions offered in `tools`.
    pub fn tools_offered(&self) -> Vec<String> {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A message's text: its string content, or its text parts joined.
pub fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .concat(),
        _ => String::new(),
    }
}

/// What the server answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A JSON body with a status.
    Json {
        status: u16,
        headers: Vec<(String, String)>,
        body: Value,
    },
    /// Any body text with a status (invalid JSON, HTML error pages…).
    Raw {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// The inner reply, after a pause.
    Delay(Duration, Box<Reply>),
    /// Status 200 with a `Content-Length` larger than the body; the connection then closes.
    CutOff { partial_body: String },
    /// Never answers; the connection stays open until the client gives up.
    Hang,
    /// Status 200, chunked, a completion's opening and then content without end, until the
    /// client closes the connection. The bytes sent are counted in [`FakeApi::bytes_streamed`].
    Endless,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

impl Reply {
    /// A chat completion with an assistant message and `finish_reason`, usage 10/5.
    pub fn completion(message: Value, finish_reason: &str) -> Reply {
        Reply::Json {
            status: 200,
            headers: Vec::new(),
            body: json!({
                "id": format!("chatcmpl-fake-{}", next_id()),
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": "glm-4-flash",
                "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            }),
        }
    }

    /// A final answer: `content`, `finish_reason: stop`.
    pub fn text(content: impl Into<String>) -> Reply {
        Reply::completion(
            json!({"role": "assistant", "content": content.into()}),
            "stop",
        )
    }

    /// Tool calls with JSON arguments (sent as a string, as OpenAI does), `finish_reason:
    /// tool_calls`. Call ids are unique across the test process.
    pub fn tool_calls<S: AsRef<str>>(calls: Vec<(S, Value)>) -> Reply {
        Reply::tool_calls_raw(
            calls
                .into_iter()
                .map(|(name, args)| (name.as_ref().to_owned(), args.to_string()))
                .collect(),
        )
    }

    /// Tool calls whose arguments are given verbatim (e.g. invalid JSON).
    pub fn tool_calls_raw<S: AsRef<str>, A: AsRef<str>>(calls: Vec<(S, A)>) -> Reply {
        let calls: Vec<Value> = calls
            .iter()
            .map(|(name, args)| {
                json!({
                    "id": format!("call_fake_{}", next_id()),
                    "type": "function",
                    "function": {"name": name.as_ref(), "arguments": args.as_ref()}
                })
            })
            .collect();
        Reply::completion(
            json!({"role": "assistant", "content": null, "tool_calls": calls}),
            "tool_calls",
        )
    }

    /// An empty completion ending with `reason` (`sensitive`, `network_error`, `length`…).
    pub fn finish(reason: &str) -> Reply {
        Reply::completion(json!({"role": "assistant", "content": ""}), reason)
    }

    /// A Zhipu error: `{"error":{"code":"1302","message":…}}`.
    pub fn zhipu_error(status: u16, code: &str, message: &str) -> Reply {
        Reply::status(status, json!({"error": {"code": code, "message": message}}))
    }

    /// An OpenAI error: `{"error":{"message","type","code"}}`.
    pub fn openai_error(status: u16, code: &str, kind: &str, message: &str) -> Reply {
        Reply::status(
            status,
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
        )
    }

    /// Any JSON body with any status.
    pub fn status(status: u16, body: Value) -> Reply {
        Reply::Json {
            status,
            headers: Vec::new(),
            body,
        }
    }

    /// Any text body with any status (sent as `application/json` unless a header says
    /// otherwise).
    pub fn raw(status: u16, body: impl Into<String>) -> Reply {
        Reply::Raw {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub fn delay(after: Duration, reply: Reply) -> Reply {
        Reply::Delay(after, Box::new(reply))
    }

    pub fn cut_off(partial_body: impl Into<String>) -> Reply {
        Reply::CutOff {
            partial_body: partial_body.into(),
        }
    }

    pub fn hang() -> Reply {
        Reply::Hang
    }

    /// Adds a response header (e.g. `Retry-After`). No effect on `cut_off` and `hang`.
    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        match &mut self {
            Reply::Json { headers, .. } | Reply::Raw { headers, .. } => {
                headers.push((name.to_owned(), value.to_owned()));
            }
            Reply::Delay(_, inner) => {
                let taken = std::mem::replace(inner.as_mut(), Reply::Hang);
                **inner = taken.with_header(name, value);
            }
            Reply::CutOff { .. } | Reply::Hang | Reply::Endless => {}
        }
        self
    }

    /// Sets a completion's usage (prompt, completion).
    pub fn with_usage(mut self, prompt: u64, completion: u64) -> Reply {
        match &mut self {
            Reply::Json { body, .. } => {
                body["usage"] = json!({
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion
                });
            }
            Reply::Delay(_, inner) => {
                let taken = std::mem::replace(inner.as_mut(), Reply::Hang);
                **inner = taken.with_usage(prompt, completion);
            }
            Reply::Raw { .. } | Reply::CutOff { .. } | Reply::Hang | Reply::Endless => {}
        }
        self
    }
}

struct State {
    script: Box<Script>,
    /// When false, zhi's server probes (`GET /props`, `GET …/models`, `POST /api/show`) get
    /// a 404 without reaching the script or the record, as from a plain OpenAI-style API.
    sees_probes: bool,
    recorded: Mutex<Vec<Recorded>>,
    panics: Mutex<Vec<String>>,
    /// Body bytes sent by [`Reply::Endless`] answers.
    streamed: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A script that panicked while we held no lock cannot poison these; be tolerant anyway.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The running fake server; stopped (and its thread joined) on drop.
pub struct FakeApi {
    addr: SocketAddr,
    state: Arc<State>,
    stop: CancellationToken,
    thread: Option<JoinHandle<()>>,
}

impl FakeApi {
    /// Starts a server that answers every request with `script(&recorded)`, except zhi's
    /// server probes, which get a 404 (see [`FakeApi::server`]).
    pub fn start<F>(script: F) -> FakeApi
    where
        F: Fn(&Recorded) -> Reply + Send + Sync + 'static,
    {
        FakeApi::launch(Box::new(script), false)
    }

    /// Like [`FakeApi::start`], but the script sees and answers the server probes too
    /// (`GET /props`, `GET /v1/models`, `POST /api/show`): a llama.cpp, vLLM or Ollama look-alike.
    pub fn server<F>(script: F) -> FakeApi
    where
        F: Fn(&Recorded) -> Reply + Send + Sync + 'static,
    {
        FakeApi::launch(Box::new(script), true)
    }

    fn launch(script: Box<Script>, sees_probes: bool) -> FakeApi {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").expect("bind the fake API to 127.0.0.1");
        listener
            .set_nonblocking(true)
            .expect("make the fake API listener non-blocking");
        let addr = listener.local_addr().expect("fake API address");
        let state = Arc::new(State {
            script,
            sees_probes,
            recorded: Mutex::new(Vec::new()),
            panics: Mutex::new(Vec::new()),
            streamed: AtomicU64::new(0),
        });
        let stop = CancellationToken::new();
        let thread = {
            let state = Arc::clone(&state);
            let stop = stop.clone();
            std::thread::Builder::new()
                .name(format!("fake-api-{}", addr.port()))
                .spawn(move || serve(listener, state, stop))
                .expect("spawn the fake API thread")
        };
        FakeApi {
            addr,
            state,
            stop,
            thread: Some(thread),
        }
    }

    /// Answers the n-th request (of any path) with `replies[n]`; the last reply repeats.
    pub fn sequence(replies: Vec<Reply>) -> FakeApi {
        assert!(!replies.is_empty(), "a sequence needs at least one reply");
        FakeApi::start(move |req| replies[req.seq.min(replies.len() - 1)].clone())
    }

    /// Answers every request with the same reply.
    pub fn always(reply: Reply) -> FakeApi {
        FakeApi::start(move |_| reply.clone())
    }

    /// `http://127.0.0.1:PORT/v1`, an OpenAI-style base.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.root_url())
    }

    /// `http://127.0.0.1:PORT/api/paas/v4`, a Zhipu-style base.
    pub fn zhipu_base_url(&self) -> String {
        format!("{}/api/paas/v4", self.root_url())
    }

    /// `http://127.0.0.1:PORT`.
    pub fn root_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far, in order of arrival.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.state.recorded).clone()
    }

    pub fn count(&self) -> usize {
        lock(&self.state.recorded).len()
    }

    /// Body bytes sent so far by [`Reply::Endless`] answers (what the client read, plus
    /// what sat in the socket buffers when it closed).
    pub fn bytes_streamed(&self) -> u64 {
        self.state.streamed.load(Ordering::Relaxed)
    }

    /// The chat completion requests so far.
    pub fn chat_requests(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(Recorded::is_chat)
            .collect()
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let panics = lock(&self.state.panics).clone();
        if !panics.is_empty() && !std::thread::panicking() {
            panic!("the fake API script panicked: {}", panics.join("; "));
        }
    }
}

fn serve(listener: std::net::TcpListener, state: Arc<State>, stop: CancellationToken) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build the fake API runtime");
    runtime.block_on(async move {
        let listener = TcpListener::from_std(listener).expect("register the fake API listener");
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let state = Arc::clone(&state);
                    let stop = stop.clone();
                    tokio::spawn(async move {
                        tokio::select! {
                            _ = connection(stream, &state) => {}
                            _ = stop.cancelled() => {}
                        }
                    });
                }
                _ = stop.cancelled() => break,
            }
        }
    });
    // Dropping the runtime drops every connection task, hanging ones included.
}

/// One connection, one request, one response (`Connection: close`).
async fn connection(stream: TcpStream, state: &State) {
    let mut reader = BufReader::new(stream);
    let Some(mut recorded) = read_request(&mut reader).await else {
        return;
    };
    if !state.sees_probes && recorded.is_probe() {
        respond(reader, Reply::raw(404, "not found"), state).await;
        return;
    }
    {
        let mut all = lock(&state.recorded);
        recorded.seq = all.len();
        all.push(recorded.clone());
    }
    let reply = match catch_unwind(AssertUnwindSafe(|| (state.script)(&recorded))) {
        Ok(reply) => reply,
        Err(panic) => {
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "non-text panic".to_owned());
            lock(&state.panics).push(format!("request {}: {text}", recorded.seq));
            Reply::raw(500, format!("fake API script panicked: {text}"))
        }
    };
    respond(reader, reply, state).await;
}

async fn respond(mut reader: BufReader<TcpStream>, mut reply: Reply, state: &State) {
    loop {
        match reply {
            Reply::Endless => {
                let stream = reader.get_mut();
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let opening = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":""#;
                let filler = "x".repeat(64 * 1024);
                let mut piece = opening.to_string();
                loop {
                    let chunk = format!("{:x}\r\n{piece}\r\n", piece.len());
                    if stream.write_all(chunk.as_bytes()).await.is_err() {
                        return;
                    }
                    state
                        .streamed
                        .fetch_add(piece.len() as u64, Ordering::Relaxed);
                    piece.clone_from(&filler);
                }
            }
            Reply::Delay(after, inner) => {
                tokio::time::sleep(after).await;
                reply = *inner;
            }
            Reply::Hang => {
                // Read until the client gives up and closes.
                let mut sink = [0u8; 1024];
                while matches!(reader.read(&mut sink).await, Ok(n) if n > 0) {}
                return;
            }
            Reply::CutOff { partial_body } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    partial_body.len() + 100
                );
                let stream = reader.get_mut();
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(partial_body.as_bytes()).await;
                let _ = stream.flush().await;
                let _ = stream.shutdown().await;
                return;
            }
            Reply::Json {
                status,
                headers,
                body,
            } => {
                return write_response(reader.get_mut(), status, &headers, body.to_string()).await;
            }
            Reply::Raw {
                status,
                headers,
                body,
            } => return write_response(reader.get_mut(), status, &headers, body).await,
        }
    }
}

async fn write_response(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: String,
) {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    if !headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// Reads one request; `None` if the client closed or sent garbage.
async fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Recorded> {
    let mut line = String::new();
    if reader.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
        None => (target, None),
    };
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (name, value) = l.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let chunked = header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line).await.ok()?;
            let size = line.trim().split(';').next()?;
            let size = usize::from_str_radix(size.trim(), 16).ok()?;
            if size == 0 {
                // Trailers, up to the empty line.
                loop {
                    line.clear();
                    if reader.read_line(&mut line).await.ok()? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..]).await.ok()?;
            line.clear();
            reader.read_line(&mut line).await.ok()?;
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body).await.ok()?;
    }
    Some(Recorded {
        seq: 0,
        method,
        path,
        query,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        body_text: String::from_utf8_lossy(&body).into_owned(),
        body_bytes: body,
        at: Instant::now(),
    })
}

#[cfg(test)]
mod tests {
    //! The fake itself, driven by raw sockets from plain synchronous tests.
    use super::*;
    use std::io::{Read, Write};

    fn raw_exchange(api: &FakeApi, request: &str) -> String {
        let mut s = std::net::TcpStream::connect(api.addr()).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn records_and_answers_from_a_sync_test() {
        let api = FakeApi::start(|req| {
            if req.is_chat() {
                Reply::text(format!("echo {}", req.last_user_text().unwrap_or_default()))
                    .with_header("X-Test", "1")
            } else {
                Reply::status(404, json!({"error": {"message": "no route"}}))
            }
        });
        let body = r#"{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"file_read"}}]}"#;
        let out = raw_exchange(
            &api,
            &format!(
                "POST /api/paas/v4/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k1\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
        );
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
        assert!(out.contains("X-Test: 1\r\n"));
        assert!(out.contains("\"content\":\"echo hi\""));
        let out = raw_exchange(&api, "GET /v1/files/abc?x=1 HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(out.starts_with("HTTP/1.1 404"));

        let reqs = api.requests();
        assert_eq!(api.count(), 2);
        assert_eq!(reqs[0].seq, 0);
        assert_eq!(reqs[0].bearer(), Some("k1"));
        assert_eq!(reqs[0].system_prompt().as_deref(), Some("sys"));
        assert_eq!(reqs[0].tools_offered(), vec!["file_read"]);
        assert_eq!(reqs[0].model(), Some("m"));
        assert!(!reqs[0].has_tool_result());
        assert_eq!((reqs[1].seq, reqs[1].path.as_str()), (1, "/v1/files/abc"));
        assert_eq!(reqs[1].query.as_deref(), Some("x=1"));
        assert_eq!(reqs[1].body, Value::Null);
        assert_eq!(api.chat_requests().len(), 1);
    }

    /// A chat request of these messages, as the server records it.
    fn chat(messages: Value) -> Recorded {
        let body = json!({"model": "m", "messages": messages});
        Recorded {
            seq: 0,
            method: "POST".into(),
            path: "/v1/chat/completions".into(),
            query: None,
            headers: Vec::new(),
            body_text: body.to_string(),
            body_bytes: body.to_string().into_bytes(),
            body,
            at: Instant::now(),
        }
    }

    #[test]
    fn the_document_text_is_read_in_either_framing() {
        // Summarize's one message, its retry's hint after the text, and a later piece's.
        let ask = "Summarize the following text in two sentences. Answer with the summary only.";
        let one = chat(
            json!([{"role": "user", "content": format!("{ask}\n\nFirst line.\n\nSecond <<tag-1>>.\n")}]),
        );
        assert!(one.is_one_message());
        assert_eq!(one.document_text(), "First line.\n\nSecond <<tag-1>>.");
        assert_eq!(one.document_tag().as_deref(), Some("tag-1"));
        let retried = chat(
            json!([{"role": "user", "content": format!("{ask}\n\nThe text.\n\nDo not copy.\n")}]),
        );
        assert_eq!(retried.document_text(), "The text.\n\nDo not copy.");
        let piece = chat(
            json!([{"role": "user", "content": format!("For context only, the text before it ends: \"…the end.\"\n\n{ask}\n\nThe piece.\n")}]),
        );
        assert_eq!(piece.document_text(), "The piece.");
        // A frame inside a one-message text is text.
        let framed_text = "--- BEGIN DOCUMENT x ---\ninner\n--- END DOCUMENT x ---";
        let hostile =
            chat(json!([{"role": "user", "content": format!("{ask}\n\n{framed_text}\n")}]));
        assert_eq!(hostile.document_text(), framed_text);
        // The framed message of other skills, after their system prompt.
        let framed = chat(json!([
            {"role": "system", "content": "You analyse."},
            {"role": "user", "content": "Input document: docs/a.txt\n\n--- BEGIN DOCUMENT docs/a.txt ---\nThe text <<a>>.\n--- END DOCUMENT docs/a.txt ---\n\nNow answer."}
        ]));
        assert!(!framed.is_one_message());
        assert_eq!(framed.input_document(), "docs/a.txt");
        assert_eq!(framed.document_text(), "The text <<a>>.");
        assert_eq!(framed.document_tag().as_deref(), Some("a"));
        // No document at all.
        let folder =
            chat(json!([{"role": "user", "content": "Input folder: docs/\nFiles in it:\n"}]));
        assert_eq!(
            (folder.document_text(), folder.document_tag()),
            (String::new(), None)
        );
    }

    #[test]
    fn chunked_bodies_and_tool_results() {
        let api = FakeApi::always(Reply::text("ok"));
        let body = r#"{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}"#;
        let (a, b) = body.split_at(10);
        raw_exchange(
            &api,
            &format!(
                "POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
                a.len(),
                b.len()
            ),
        );
        let req = &api.requests()[0];
        assert_eq!(req.last_user_text().as_deref(), Some("ab"));
        assert_eq!(
            req.tool_results(),
            vec![ToolResult {
                tool_call_id: "c1".into(),
                content: "r".into()
            }]
        );
    }

    #[test]
    fn cut_off_declares_more_than_it_sends() {
        let api = FakeApi::always(Reply::cut_off("{\"choi"));
        let out = raw_exchange(&api, "POST /v1/chat/completions HTTP/1.1\r\n\r\n");
        assert!(out.contains("Content-Length: 106\r\n"), "{out}");
        assert!(out.ends_with("\r\n\r\n{\"choi"));
    }

    #[test]
    fn drop_returns_even_with_a_hanging_connection() {
        let api = FakeApi::always(Reply::hang());
        let mut s = std::net::TcpStream::connect(api.addr()).unwrap();
        s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\n\r\n")
            .unwrap();
        while api.count() == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(api);
        // The server is gone, so the hanging connection is closed: EOF, not a hang.
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut out = Vec::new();
        assert!(s.read_to_end(&mut out).is_ok());
        assert!(out.is_empty());
    }

    #[test]
    #[should_panic(expected = "the fake API script panicked")]
    fn a_panicking_script_fails_the_test() {
        let api = FakeApi::start(|_| panic!("boom"));
        let out = raw_exchange(&api, "GET /v1/files/x HTTP/1.1\r\n\r\n");
        assert!(out.starts_with("HTTP/1.1 500"));
    }
}
