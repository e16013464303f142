//! The tools a skill's model may call (docs/sandbox.md): their definitions for the `tools` array
//! and their execution.
//!
//! Arguments come straight from the model and are untrusted twice over: they may be malformed,
//! and they may carry instructions smuggled in from a document. So every path goes through the
//! [`Sandbox`], every network address through the web guard, and every failure comes back as
//! text the model can act on, never as a panic or an error that ends the job.
//!
//! There is no shell tool and there must never be one in batch runs.

mod docx;
mod list;
pub(crate) mod mcp;
mod read;
mod reader;
mod table;
mod web;
pub(crate) mod write;
pub(crate) mod xlsx;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::sandbox::Sandbox;

pub(crate) use reader::DocumentReader;
#[cfg(test)]
pub(crate) use reader::PlainTextReader;

/// The most text one `file_read`, `ocr` or `web_fetch` call returns to the model.
pub(crate) const READ_CAP_BYTES: usize = 50 * 1024;
/// The most entries one `file_list` call shows.
pub(crate) const LIST_CAP_ENTRIES: usize = 500;

/// A tool zhi itself provides (nested skills are offered by the agent loop, not here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ToolKind {
    FileRead,
    FileWrite,
    FileList,
    Ocr,
    WebFetch,
}

impl ToolKind {
    pub(crate) const ALL: [ToolKind; 5] = [
        ToolKind::FileRead,
        ToolKind::FileWrite,
        ToolKind::FileList,
        ToolKind::Ocr,
        ToolKind::WebFetch,
    ];

    /// The name in skill files and in the `tools` array.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ToolKind::FileRead => "file_read",
            ToolKind::FileWrite => "file_write",
            ToolKind::FileList => "file_list",
            ToolKind::Ocr => "ocr",
            ToolKind::WebFetch => "web_fetch",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<ToolKind> {
        ToolKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// What the tool does, written for a small model.
    pub(crate) fn description(self) -> &'static str {
        match self {
            ToolKind::FileRead => {
                "Read a file and get its text. Works on the job's input documents (PDF, Office \
                 files and images come back as extracted text) and on files you wrote in the \
                 output folder. A long text is cut at 50 KB; the note at the cut gives the \
                 offset to continue from."
            }
            ToolKind::FileWrite => {
                "Create a NEW file in the output folder. The extension decides the format and \
                 the shape of `content`: .md or .txt: the text itself. .json: any JSON value. \
                 .csv: {\"headers\": [\"A\", \"B\"], \"rows\": [[\"x\", 1], [\"y\", 2]]}. \
                 .xlsx: {\"sheets\": [{\"name\": \"Sheet1\", \"headers\": [\"A\", \"B\"], \
                 \"rows\": [[\"x\", 1]]}]}. .docx: {\"content\": \"# Title\\n\\nMarkdown text\"}. \
                 An existing file is never overwritten: zhi then picks a new name and says which."
            }
            ToolKind::FileList => {
                "List files. Without a path (or with \".\") it shows the job's input \
                 documents, its input folders and the files in the output folder. With a \
                 folder path it lists that folder: name, kind and size."
            }
            ToolKind::Ocr => {
                "Recognise the text in an image or a scanned document (OCR). Only for the \
                 job's input documents. Use it when file_read gives little or no text for a \
                 scan or a photo."
            }
            ToolKind::WebFetch => {
                "Fetch a public web page (http or https) and return its readable text. Local, \
                 private and internal addresses are refused."
            }
        }
    }

    /// The JSON Schema of the arguments.
    pub(crate) fn parameters(self) -> Value {
        match self {
            ToolKind::FileRead => json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The file to read: an input document exactly as the \
                                        task names it, or a file you wrote."
                    },
                    "offset": {
                        "type": "integer",
                        "description": "Optional. Where to continue a long text, in bytes; \
                                        use the number given in the cut note."
                    }
                },
                "required": ["path"]
            }),
            ToolKind::FileWrite => json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The new file's path relative to the output folder: \
                                        the name your instructions give. No absolute paths, \
                                        no \"..\"."
                    },
                    "content": {
                        "description": "The file's content. Text for .md/.txt; JSON for \
                                        .json; {\"headers\": [...], \"rows\": [[...]]} for \
                                        .csv; {\"sheets\": [{\"name\", \"headers\", \"rows\"}]} \
                                        for .xlsx; {\"content\": \"markdown\"} for .docx."
                    }
                },
                "required": ["path", "content"]
            }),
            ToolKind::FileList => json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "Optional. A folder to list, e.g. an input folder. \
                                        Leave it out to see the job's inputs and the output \
                                        folder."
                    }
                },
                "required": []
            }),
            ToolKind::Ocr => json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The input document to recognise, exactly as the \
                                        task names it."
                    }
                },
                "required": ["path"]
            }),
            ToolKind::WebFetch => json!({
                "type": "object",
                "properties": {
                    "url": {
                        "type": "string",
                        "description": "The page's full address, starting with http:// or \
                                        https://."
                    }
                },
                "required": ["url"]
            }),
        }
    }

    /// The entry for the OpenAI-shaped `tools` array of a chat request.
    #[cfg(test)]
    pub(crate) fn definition(self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name(),
                "description": self.description(),
                "parameters": self.parameters(),
            }
        })
    }

    /// Arguments that show the expected shape, quoted back when a call's arguments are wrong.
    fn example(self) -> &'static str {
        match self {
            ToolKind::FileRead => r#"{"path": "<an input as the task names it>"}"#,
            ToolKind::FileWrite => {
                r#"{"path": "<the name your instructions give>", "content": "<the text>"}"#
            }
            ToolKind::FileList => r#"{"path": "."}"#,
            ToolKind::Ocr => r#"{"path": "<an input as the task names it>"}"#,
            ToolKind::WebFetch => r#"{"url": "https://example.com/page"}"#,
        }
    }
}

/// What a tool call works with: the job's sandbox, the document reader and the run's policy.
#[derive(Clone)]
pub(crate) struct ToolEnv {
    pub sandbox: Arc<Sandbox>,
    pub reader: Arc<dyn DocumentReader>,
    /// `--allow-web`: whether `web_fetch` may run at all. The only switch of the run a tool
    /// reads, so the only one it is given.
    pub allow_web: bool,
    /// The job's declared files and their checks: a `file_write` of one is judged before it
    /// is saved (docs/skills.md#declared-outputs).
    pub declared: Arc<Vec<crate::judge::accept::Acceptance>>,
}

#[cfg(test)]
impl ToolEnv {
    /// The tools of a test on `sandbox`: documents read as plain text, no web.
    pub(crate) fn plain(sandbox: Sandbox) -> ToolEnv {
        ToolEnv {
            sandbox: Arc::new(sandbox),
            reader: Arc::new(PlainTextReader),
            allow_web: false,
            declared: Arc::default(),
        }
    }
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolOutcome {
    /// What goes back to the model as the `role: tool` message.
    pub content: String,
    /// The call was refused: bad arguments, or a path or address outside what the job may
    /// touch. Counted in the job record's `refused_tool_calls`. A call that was allowed but
    /// failed (an unreadable document, a network error) is not refused; its content says what
    /// went wrong.
    pub refused: bool,
    /// The file written, relative to the output folder.
    pub wrote: Option<PathBuf>,
}

impl ToolOutcome {
    pub(crate) fn ok(content: impl Into<String>) -> Self {
        ToolOutcome {
            content: content.into(),
            refused: false,
            wrote: None,
        }
    }

    pub(crate) fn refused(message: impl AsRef<str>) -> Self {
        ToolOutcome {
            content: format!("refused: {}", message.as_ref()),
            refused: true,
            wrote: None,
        }
    }

    pub(crate) fn failed(message: impl AsRef<str>) -> Self {
        ToolOutcome {
            content: format!("error: {}", message.as_ref()),
            refused: false,
            wrote: None,
        }
    }
}

/// Runs tool calls. One per run is enough; it holds no per-job state, only the run's MCP
/// servers, which its jobs share.
#[derive(Debug, Clone, Default)]
pub(crate) struct Toolbox {
    web: web::WebFetcher,
    /// The MCP servers the settings name, started when a job first needs one.
    pub mcp: Arc<mcp::McpServers>,
}

impl Toolbox {
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Toolbox::default()
    }

    /// The tools of a run whose skills may call tools of `servers` (`mcp:` in the settings).
    pub(crate) fn with_mcp(
        servers: std::collections::BTreeMap<String, crate::config::McpServer>,
    ) -> Self {
        Toolbox {
            web: web::WebFetcher::default(),
            mcp: Arc::new(mcp::McpServers::new(servers)),
        }
    }

    /// Run one tool call. `arguments` is the raw JSON string the model sent.
    pub(crate) async fn execute(
        &self,
        kind: ToolKind,
        arguments: &str,
        env: &ToolEnv,
    ) -> ToolOutcome {
        let args = match Args::parse(kind, arguments) {
            Ok(args) => args,
            Err(outcome) => return outcome,
        };
        match kind {
            ToolKind::FileRead => read::file_read(args, env).await,
            ToolKind::Ocr => read::ocr(args, env).await,
            ToolKind::FileList => list::file_list(args, env).await,
            ToolKind::FileWrite => write::file_write(args, env).await,
            ToolKind::WebFetch => {
                if !env.allow_web {
                    return ToolOutcome::refused(
                        "web_fetch is not available in this run (web access is off); work \
                         with the job's documents only",
                    );
                }
                self.web.fetch_tool(args).await
            }
        }
    }
}

/// A call's arguments: a JSON object, looked up leniently (models use synonyms).
pub(crate) struct Args {
    kind: ToolKind,
    map: Map<String, Value>,
}

impl Args {
    fn parse(kind: ToolKind, raw: &str) -> Result<Args, ToolOutcome> {
        let raw = raw.trim();
        let value = if raw.is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str::<Value>(raw).map_err(|e| {
                ToolOutcome::refused(format!(
                    "the arguments for {} are not valid JSON ({e}). Send a JSON object like {}",
                    kind.name(),
                    kind.example()
                ))
            })?
        };
        // Some models encode the arguments object twice, as a JSON string.
        let value = match value {
            Value::String(inner) => serde_json::from_str::<Value>(&inner).unwrap_or(Value::Null),
            other => other,
        };
        match value {
            Value::Object(map) => Ok(Args { kind, map }),
            _ => Err(ToolOutcome::refused(format!(
                "the arguments for {} must be a JSON object like {}",
                kind.name(),
                kind.example()
            ))),
        }
    }

    fn invalid(&self, what: &str) -> ToolOutcome {
        ToolOutcome::refused(format!(
            "invalid arguments for {}: {what}. Send a JSON object like {}",
            self.kind.name(),
            self.kind.example()
        ))
    }

    fn take(&mut self, names: &[&str]) -> Option<Value> {
        names
            .iter()
            .find_map(|name| self.map.remove(*name).filter(|v| !v.is_null()))
    }

    /// A required string argument.
    fn string(&mut self, names: &[&str]) -> Result<String, ToolOutcome> {
        match self.take(names) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(self.invalid(&format!("`{}` must be a string", names[0]))),
            None => Err(self.invalid(&format!("`{}` is missing", names[0]))),
        }
    }

    /// An optional string argument.
    fn opt_string(&mut self, names: &[&str]) -> Result<Option<String>, ToolOutcome> {
        match self.take(names) {
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.invalid(&format!("`{}` must be a string", names[0]))),
            None => Ok(None),
        }
    }

    /// An optional non-negative integer (also accepted as a string of digits).
    fn opt_usize(&mut self, names: &[&str]) -> Result<Option<usize>, ToolOutcome> {
        let parsed = match self.take(names) {
            None => return Ok(None),
            Some(Value::Number(n)) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
            Some(Value::String(s)) => s.trim().parse::<usize>().ok(),
            Some(_) => None,
        };
        parsed.map(Some).ok_or_else(|| {
            self.invalid(&format!(
                "`{}` must be a whole number of at least 0",
                names[0]
            ))
        })
    }
}

const PATH_NAMES: &[&str] = &["path", "file_path", "filepath", "filename", "file", "name"];

/// Cut `text` to at most `cap` bytes starting at `offset`, on UTF-8 boundaries, with a note
/// saying what was left out. `reread` names the file when the model can continue with an
/// offset.
fn cap_text(text: &str, offset: usize, cap: usize, reread: Option<&str>) -> String {
    let len = text.len();
    if offset > 0 && offset >= len {
        return format!(
            "[nothing left: the text is {len} bytes long and offset {offset} is past its end]"
        );
    }
    let start = floor_boundary(text, offset);
    let end = floor_boundary(text, start.saturating_add(cap).min(len));
    let mut out = String::with_capacity(end - start + 160);
    if start > 0 {
        out.push_str(&format!("[continuing at byte {start} of {len}]\n"));
    }
    out.push_str(&text[start..end]);
    if end < len {
        let left = len - end;
        out.push_str(&format!(
            "\n\n[cut here: {left} more bytes were left out (text is {len} bytes)."
        ));
        match reread {
            Some(path) => out.push_str(&format!(
                " To read on, call file_read with {{\"path\": {}, \"offset\": {end}}}.]",
                Value::String(path.to_string())
            )),
            None => out.push(']'),
        }
    }
    out
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_definitions_are_well_formed() {
        for kind in ToolKind::ALL {
            assert_eq!(ToolKind::from_name(kind.name()), Some(kind));
            let def = kind.definition();
            assert_eq!(def["type"], "function");
            assert_eq!(def["function"]["name"], kind.name());
            assert_eq!(def["function"]["parameters"]["type"], "object");
            assert!(!kind.description().is_empty());
            for req in def["function"]["parameters"]["required"]
                .as_array()
                .unwrap()
            {
                let req = req.as_str().unwrap();
                assert!(
                    def["function"]["parameters"]["properties"][req].is_object(),
                    "{req}"
                );
            }
        }
        assert_eq!(ToolKind::from_name("shell"), None);
    }

    #[test]
    fn args_are_lenient_but_reject_garbage() {
        let mut a = Args::parse(
            ToolKind::FileRead,
            r#"{"file_path": "a.md", "offset": "12"}"#,
        )
        .unwrap();
        assert_eq!(a.string(PATH_NAMES).unwrap(), "a.md");
        assert_eq!(a.opt_usize(&["offset"]).unwrap(), Some(12));
        let mut twice = Args::parse(ToolKind::FileRead, r#""{\"path\": \"b.md\"}""#).unwrap();
        assert_eq!(twice.string(PATH_NAMES).unwrap(), "b.md");

        let bad = Args::parse(ToolKind::FileRead, "{path: a.md")
            .err()
            .unwrap();
        assert!(bad.refused);
        assert!(bad.content.contains("not valid JSON"), "{}", bad.content);
        assert!(
            bad.content
                .contains(r#"{"path": "<an input as the task names it>"}"#)
        );
        let not_object = Args::parse(ToolKind::FileRead, "[1]").err().unwrap();
        assert!(not_object.refused);
        let mut missing = Args::parse(ToolKind::FileRead, "{}").unwrap();
        let err = missing.string(PATH_NAMES).unwrap_err();
        assert!(err.refused && err.content.contains("`path` is missing"));
        let mut wrong = Args::parse(ToolKind::FileRead, r#"{"path": 3}"#).unwrap();
        assert!(wrong.string(PATH_NAMES).unwrap_err().refused);
        let mut neg = Args::parse(ToolKind::FileRead, r#"{"offset": -1}"#).unwrap();
        assert!(neg.opt_usize(&["offset"]).unwrap_err().refused);
    }

    #[test]
    fn cap_text_cuts_on_char_boundaries_with_a_note() {
        let text = "é".repeat(100); // 200 bytes
        let out = cap_text(&text, 0, 51, Some("a.md"));
        assert!(out.starts_with(&"é".repeat(25)));
        assert!(out.contains("150 more bytes were left out"), "{out}");
        assert!(out.contains(r#"{"path": "a.md", "offset": 50}"#), "{out}");
        let rest = cap_text(&text, 50, 1000, Some("a.md"));
        assert!(rest.contains("[continuing at byte 50 of 200]"));
        assert!(rest.ends_with(&"é".repeat(75)));
        assert!(!rest.contains("cut here"));
        assert!(cap_text(&text, 500, 10, None).contains("past its end"));
        assert_eq!(cap_text("short", 0, 100, None), "short");
    }
}
