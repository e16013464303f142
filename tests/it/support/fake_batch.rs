//! A fake Batch API (Zhipu's `/files` + `/batches`, which OpenAI's shares) on top of
//! [`FakeApi`]: uploaded files, batches that move through `validating → in_progress →
//! finalizing → completed` as they are polled (or stay running until the test says),
//! partial failures, expiry and cancellation. Each request line of a finished batch is
//! answered by the same kind of chat script a direct test uses, so a test can compare a
//! batch run with a direct one.
//!
//! ```ignore
//! let batch = FakeBatch::new(|req| Reply::text("summary"));
//! let api = FakeApi::start(batch.handler());
//! // … zhi run … --submit batch …
//! batch.finish_all();
//! ```

use super::fake_api::{Recorded, Reply};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

type ChatScript = dyn Fn(&Recorded) -> Reply + Send + Sync + 'static;

/// A file the fake holds.
#[derive(Debug, Clone)]
pub struct FakeFile {
    pub id: String,
    pub filename: String,
    pub purpose: String,
    pub bytes: Vec<u8>,
}

/// A batch the fake holds.
#[derive(Debug, Clone)]
pub struct FakeBatchJob {
    pub id: String,
    pub input_file_id: String,
    pub endpoint: String,
    pub status: String,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    pub metadata: Value,
    /// The request lines, as uploaded.
    pub lines: Vec<Value>,
    pub completed: u64,
    pub failed: u64,
    pub errors: Option<Value>,
}

/// How batches move on when polled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// `in_progress` until [`FakeBatch::finish_all`] (or expire/cancel).
    Manual,
    /// Completed at the first poll.
    Immediate,
}

struct State {
    files: BTreeMap<String, FakeFile>,
    batches: BTreeMap<String, FakeBatchJob>,
    next: u64,
    pace: Pace,
    deleted: Vec<String>,
    /// Answer only the first N lines of the batches being finished (the rest expire).
    answer_first: Option<usize>,
}

/// The fake Batch API's state and its chat script. Clones share the state.
#[derive(Clone)]
pub struct FakeBatch {
    state: Arc<Mutex<State>>,
    chat: Arc<ChatScript>,
}

impl FakeBatch {
    /// Request lines are answered by `chat`, as the chat endpoint would answer them.
    pub fn new<F>(chat: F) -> FakeBatch
    where
        F: Fn(&Recorded) -> Reply + Send + Sync + 'static,
    {
        FakeBatch {
            state: Arc::new(Mutex::new(State {
                files: BTreeMap::new(),
                batches: BTreeMap::new(),
                next: 1,
                pace: Pace::Manual,
                deleted: Vec::new(),
                answer_first: None,
            })),
            chat: Arc::new(chat),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_pace(&self, pace: Pace) {
        self.lock().pace = pace;
    }

    /// A script for [`super::FakeApi::start`]: the Batch API, 404 for anything else.
    pub fn handler(&self) -> impl Fn(&Recorded) -> Reply + Send + Sync + 'static {
        let me = self.clone();
        move |req| {
            me.handle(req).unwrap_or_else(|| {
                Reply::status(
                    404,
                    json!({"error": {"code": "404", "message": format!("no route {}", req.path)}}),
                )
            })
        }
    }

    /// Every batch that is not finished is answered and completed now.
    pub fn finish_all(&self) {
        let mut s = self.lock();
        let ids: Vec<String> = s
            .batches
            .values()
            .filter(|b| !is_finished(&b.status))
            .map(|b| b.id.clone())
            .collect();
        for id in ids {
            self.finish(&mut s, &id, "completed");
        }
    }

    /// Every batch that is not finished expires, with only its first `answered` lines
    /// answered.
    pub fn expire_all(&self, answered: usize) {
        let mut s = self.lock();
        s.answer_first = Some(answered);
        let ids: Vec<String> = s
            .batches
            .values()
            .filter(|b| !is_finished(&b.status))
            .map(|b| b.id.clone())
            .collect();
        for id in ids {
            self.finish(&mut s, &id, "expired");
        }
        s.answer_first = None;
    }

    /// The files the fake holds now.
    pub fn files(&self) -> Vec<FakeFile> {
        self.lock().files.values().cloned().collect()
    }

    /// Every batch ever created, oldest first.
    pub fn batches(&self) -> Vec<FakeBatchJob> {
        let s = self.lock();
        let mut all: Vec<FakeBatchJob> = s.batches.values().cloned().collect();
        all.sort_by_key(|b| b.id[6..].parse::<u64>().unwrap_or(0));
        all
    }

    /// Ids of files deleted so far.
    pub fn deleted(&self) -> Vec<String> {
        self.lock().deleted.clone()
    }

    /// The `custom_id`s of every request line of every batch, in order.
    pub fn custom_ids(&self) -> Vec<String> {
        self.batches()
            .iter()
            .flat_map(|b| b.lines.iter())
            .map(|l| l["custom_id"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    fn id(s: &mut State, prefix: &str) -> String {
        let n = s.next;
        s.next += 1;
        format!("{prefix}_{n}")
    }

    /// Answers one Batch API request; `None` for paths it does not serve.
    pub fn handle(&self, req: &Recorded) -> Option<Reply> {
        let parts: Vec<&str> = req.path.split('/').filter(|p| !p.is_empty()).collect();
        let at = parts
            .iter()
            .rposition(|p| *p == "files" || *p == "batches")?;
        let (kind, rest) = (parts[at], &parts[at + 1..]);
        let mut s = self.lock();
        Some(match (req.method.as_str(), kind, rest) {
            ("POST", "files", []) => {
                let Some((fields, file)) = multipart(req) else {
                    return Some(error(400, "1214", "not a multipart upload"));
                };
                let Some((filename, bytes)) = file else {
                    return Some(error(400, "1214", "no file"));
                };
                let id = Self::id(&mut s, "file");
                let purpose = fields.get("purpose").cloned().unwrap_or_default();
                let size = bytes.len();
                s.files.insert(
                    id.clone(),
                    FakeFile {
                        id: id.clone(),
                        filename: filename.clone(),
                        purpose: purpose.clone(),
                        bytes,
                    },
                );
                Reply::status(
                    200,
                    json!({"id": id, "object": "file", "bytes": size, "filename": filename, "purpose": purpose, "created_at": 1_700_000_000}),
                )
            }
            ("GET", "files", []) => {
                let data: Vec<Value> = s
                    .files
                    .values()
                    .filter(|f| query_has(req, "purpose", &f.purpose))
                    .map(|f| json!({"id": f.id, "object": "file", "filename": f.filename, "purpose": f.purpose}))
                    .collect();
                Reply::status(
                    200,
                    json!({"object": "list", "data": data, "has_more": false}),
                )
            }
            ("GET", "files", [id, "content"]) => match s.files.get(*id) {
                Some(f) => Reply::raw(200, String::from_utf8_lossy(&f.bytes).into_owned())
                    .with_header("Content-Type", "application/octet-stream"),
                None => error(404, "1214", "no such file"),
            },
            ("DELETE", "files", [id]) => match s.files.remove(*id) {
                Some(_) => {
                    s.deleted.push((*id).to_string());
                    Reply::status(200, json!({"id": id, "object": "file", "deleted": true}))
                }
                None => error(404, "1214", "no such file"),
            },
            ("POST", "batches", []) => {
                let input = req.body["input_file_id"].as_str().unwrap_or_default();
                let endpoint = req.body["endpoint"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let Some(file) = s.files.get(input).cloned() else {
                    return Some(error(400, "1214", "input_file_id not found"));
                };
                if req.body["completion_window"] != "24h" {
                    return Some(error(400, "1214", "completion_window must be 24h"));
                }
                let mut lines = Vec::new();
                let mut problems = Vec::new();
                let mut seen = std::collections::HashSet::new();
                for (i, line) in String::from_utf8_lossy(&file.bytes).lines().enumerate() {
                    match serde_json::from_str::<Value>(line) {
                        Ok(v) => {
                            let id = v["custom_id"].as_str().unwrap_or_default().to_string();
                            if id.is_empty() || !seen.insert(id.clone()) {
                                problems
                                    .push(format!("line {}: custom_id missing or repeated", i + 1));
                            }
                            if v["method"] != "POST" || v["url"] != endpoint.as_str() {
                                problems.push(format!("line {}: method/url", i + 1));
                            }
                            if !v["body"]["messages"].is_array() || !v["body"]["model"].is_string()
                            {
                                problems.push(format!("line {}: body", i + 1));
                            }
                            lines.push(v);
                        }
                        Err(e) => problems.push(format!("line {}: {e}", i + 1)),
                    }
                }
                if file.purpose != "batch" {
                    problems.push(format!("the input file's purpose is {}", file.purpose));
                }
                let id = Self::id(&mut s, "batch");
                let status = if problems.is_empty() {
                    "validating"
                } else {
                    "failed"
                };
                s.batches.insert(
                    id.clone(),
                    FakeBatchJob {
                        id: id.clone(),
                        input_file_id: input.to_string(),
                        endpoint,
                        status: status.to_string(),
                        output_file_id: None,
                        error_file_id: None,
                        metadata: req.body["metadata"].clone(),
                        lines,
                        completed: 0,
                        failed: 0,
                        errors: (!problems.is_empty()).then(|| json!({"data": problems})),
                    },
                );
                Reply::status(200, batch_json(&s.batches[&id]))
            }
            ("GET", "batches", []) => {
                let mut all: Vec<&FakeBatchJob> = s.batches.values().collect();
                all.sort_by_key(|b| std::cmp::Reverse(b.id[6..].parse::<u64>().unwrap_or(0)));
                let data: Vec<Value> = all.into_iter().map(batch_json).collect();
                Reply::status(
                    200,
                    json!({"object": "list", "data": data, "has_more": false}),
                )
            }
            ("GET", "batches", [id]) => {
                let id = (*id).to_string();
                let Some(b) = s.batches.get(&id).cloned() else {
                    return Some(error(404, "1214", "no such batch"));
                };
                let pace = s.pace;
                match b.status.as_str() {
                    "validating" => s.batches.get_mut(&id).unwrap().status = "in_progress".into(),
                    "cancelling" => self.finish(&mut s, &id, "cancelled"),
                    _ => {}
                }
                if pace == Pace::Immediate && s.batches[&id].status == "in_progress" {
                    self.finish(&mut s, &id, "completed");
                }
                Reply::status(200, batch_json(&s.batches[&id]))
            }
            ("POST", "batches", [id, "cancel"]) => {
                let id = (*id).to_string();
                let Some(b) = s.batches.get_mut(&id) else {
                    return Some(error(404, "1214", "no such batch"));
                };
                if !is_finished(&b.status) {
                    b.status = "cancelling".into();
                }
                Reply::status(200, batch_json(&s.batches[&id]))
            }
            _ => return None,
        })
    }

    /// Answer a batch's lines (the first `answer_first` only, when set) and end it.
    fn finish(&self, s: &mut State, id: &str, status: &str) {
        let Some(b) = s.batches.get(id).cloned() else {
            return;
        };
        if b.status == "failed" {
            return;
        }
        let answered = match status {
            "completed" => b.lines.len(),
            "cancelled" => 0,
            _ => s.answer_first.unwrap_or(0).min(b.lines.len()),
        };
        let mut output = String::new();
        let mut errors = String::new();
        let (mut completed, mut failed) = (0, 0);
        for (i, line) in b.lines.iter().enumerate() {
            let custom_id = line["custom_id"].clone();
            if i >= answered {
                // OpenAI lists what expired in the error file; Zhipu leaves it out. Half and
                // half, so zhi copes with both.
                if i % 2 == 0 {
                    errors.push_str(
                        &json!({"id": format!("req_{i}"), "custom_id": custom_id, "response": null,
                            "error": {"code": format!("batch_{status}"), "message": format!("This request could not be executed before the batch was {status}.")}})
                        .to_string(),
                    );
                    errors.push('\n');
                }
                continue;
            }
            let recorded = Recorded {
                seq: 0,
                method: "POST".into(),
                path: b.endpoint.clone(),
                query: None,
                headers: Vec::new(),
                body: line["body"].clone(),
                body_text: line["body"].to_string(),
                body_bytes: line["body"].to_string().into_bytes(),
                at: Instant::now(),
            };
            let mut reply = (self.chat)(&recorded);
            let (code, body) = loop {
                match reply {
                    Reply::Delay(_, inner) => reply = *inner,
                    Reply::Json { status, body, .. } => break (status, body),
                    Reply::Raw { status, body, .. } => break (status, Value::String(body)),
                    _ => {
                        break (
                            500,
                            json!({"error": {"code": "500", "message": "server error"}}),
                        );
                    }
                }
            };
            let out = json!({"id": format!("req_{i}"), "custom_id": custom_id,
                "response": {"status_code": code, "request_id": format!("req_{i}"), "body": body}, "error": null});
            if code == 200 {
                completed += 1;
                output.push_str(&out.to_string());
                output.push('\n');
            } else {
                failed += 1;
                errors.push_str(&out.to_string());
                errors.push('\n');
            }
        }
        let output_file_id = (!output.is_empty()).then(|| {
            let fid = Self::id(s, "file");
            s.files.insert(
                fid.clone(),
                FakeFile {
                    id: fid.clone(),
                    filename: format!("{id}_output.jsonl"),
                    purpose: "batch_output".into(),
                    bytes: output.into_bytes(),
                },
            );
            fid
        });
        let error_file_id = (!errors.is_empty()).then(|| {
            let fid = Self::id(s, "file");
            s.files.insert(
                fid.clone(),
                FakeFile {
                    id: fid.clone(),
                    filename: format!("{id}_error.jsonl"),
                    purpose: "batch_output".into(),
                    bytes: errors.into_bytes(),
                },
            );
            fid
        });
        let b = s.batches.get_mut(id).unwrap();
        b.status = status.to_string();
        b.output_file_id = output_file_id;
        b.error_file_id = error_file_id;
        b.completed = completed;
        b.failed = failed;
    }
}

fn is_finished(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "expired" | "cancelled")
}

fn batch_json(b: &FakeBatchJob) -> Value {
    json!({
        "id": b.id,
        "object": "batch",
        "endpoint": b.endpoint,
        "input_file_id": b.input_file_id,
        "completion_window": "24h",
        "status": b.status,
        "output_file_id": b.output_file_id,
        "error_file_id": b.error_file_id,
        "errors": b.errors,
        "metadata": b.metadata,
        "request_counts": {"total": b.lines.len(), "completed": b.completed, "failed": b.failed},
    })
}

fn error(status: u16, code: &str, message: &str) -> Reply {
    Reply::zhipu_error(status, code, message)
}

fn query_has(req: &Recorded, key: &str, value: &str) -> bool {
    match &req.query {
        None => true,
        Some(q) => q
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .filter(|(k, _)| *k == key)
            .all(|(_, v)| v == value),
    }
}

/// The text fields and the file (name, bytes) of a multipart/form-data body.
type Multipart = (BTreeMap<String, String>, Option<(String, Vec<u8>)>);

fn multipart(req: &Recorded) -> Option<Multipart> {
    let ct = req.header("content-type")?;
    let boundary = ct.split("boundary=").nth(1)?.trim_matches('"');
    let delim = format!("--{boundary}").into_bytes();
    let body = &req.body_bytes;
    let mut fields = BTreeMap::new();
    let mut file = None;
    let mut starts = Vec::new();
    let mut i = 0;
    while i + delim.len() <= body.len() {
        if body[i..].starts_with(&delim) {
            starts.push(i);
            i += delim.len();
        } else {
            i += 1;
        }
    }
    for w in starts.windows(2) {
        let part = &body[w[0] + delim.len()..w[1]];
        let part = part.strip_prefix(b"\r\n").unwrap_or(part);
        let part = part.strip_suffix(b"\r\n").unwrap_or(part);
        let split = part.windows(4).position(|x| x == b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&part[..split]).to_string();
        let content = &part[split + 4..];
        let name = head.split("name=\"").nth(1)?.split('"').next()?.to_string();
        match head.split("filename=\"").nth(1) {
            Some(rest) => {
                let filename = rest.split('"').next().unwrap_or_default().to_string();
                file = Some((filename, content.to_vec()));
            }
            None => {
                fields.insert(name, String::from_utf8_lossy(content).into_owned());
            }
        }
    }
    Some((fields, file))
}
