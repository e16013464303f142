//! The agent loop: model → tools → model, until a plain answer or the skill's `max_turns`.
//!
//! The loop owns the conversation and the accounting (turns, attempts, refused calls, tokens,
//! nested skills included); it never touches a path itself — every file goes through the
//! job's sandbox inside the tools. A nested skill is a tool that runs this same loop with its
//! own skill, in the same sandbox, guarded against cycles and depth at run time.

use super::tools::{ToolEnv, ToolKind, Toolbox};
use crate::error::{ErrorKind, JobError};
use crate::llm::ChatClient;
use crate::llm::{ChatRequest, Message, ToolDef};
use crate::manifest::Tokens;
use crate::sanitize::one_line;
use crate::skills::{self, MAX_NESTING, Skill, SkillSet};
use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Sent with the last turn, which offers no tools.
const FINAL_TURN_NOTE: &str = "This is your last turn and tools are no longer available. Reply now in plain text: say briefly what you did and which files you wrote.";

/// Prefix of the tool that runs a nested skill.
pub const SKILL_TOOL_PREFIX: &str = "skill_";

/// What one job's agent works with.
#[derive(Clone)]
pub struct AgentEnv {
    pub client: ChatClient,
    pub skills: Arc<SkillSet>,
    pub toolbox: Toolbox,
    pub tools: ToolEnv,
    /// The model every request of the job uses.
    pub model: String,
    /// Cap on each answer's length (the model's maximum output).
    pub max_tokens: Option<u32>,
    /// Sampling temperature, when configured.
    pub temperature: Option<f32>,
    /// Cancelled when the run aborts or is interrupted.
    pub cancel: CancellationToken,
    /// The job, for logs.
    pub label: String,
}

/// The accounting of a job, summed over every request, nested skills included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentStats {
    pub turns: u32,
    pub attempts: u32,
    pub refused_tool_calls: u32,
    pub tool_calls: u32,
    pub tokens: Tokens,
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Run `skill` with `user_message` to a final answer. `chain` holds the skills above this one
/// (empty for the job's own skill).
pub fn run_skill<'a>(
    env: &'a AgentEnv,
    skill: &'a Skill,
    user_message: String,
    chain: Vec<String>,
    stats: &'a mut AgentStats,
) -> BoxFuture<'a, Result<String, JobError>> {
    Box::pin(async move {
        let mut chain = chain;
        chain.push(skill.name.clone());
        let tools = tool_defs(env, skill);
        let mut messages = vec![
            Message::system(skills::system_prompt(skill)),
            Message::user(user_message),
        ];
        let depth = chain.len() - 1;
        for turn in 1..=skill.max_turns {
            if env.cancel.is_cancelled() {
                return Err(JobError::new(ErrorKind::Cancelled, "cancelled"));
            }
            let mut req = ChatRequest::new(env.model.clone(), messages.clone());
            // The last turn is for the answer: no tools are offered, so a model that would
            // otherwise keep calling them concludes (or the job ends with max_turns).
            let last = turn == skill.max_turns && turn > 1;
            if last {
                req.messages.push(Message::user(FINAL_TURN_NOTE));
            } else {
                req.tools = tools.clone();
            }
            req.max_tokens = env.max_tokens;
            req.temperature = env.temperature;
            let reply = match env.client.chat(&req, &env.cancel).await {
                Ok(r) => r,
                Err(e) => {
                    stats.attempts += e.attempts.max(1);
                    return Err(e.to_job_error());
                }
            };
            stats.turns += 1;
            stats.attempts += reply.attempts;
            stats.tokens.add(Tokens {
                prompt: reply.usage.prompt_tokens,
                completion: reply.usage.completion_tokens,
            });
            let calls = reply.message.calls().to_vec();
            if calls.is_empty() {
                let answer = reply.message.content.clone().unwrap_or_default();
                tracing::info!(
                    job = %env.label,
                    skill = %skill.name,
                    depth,
                    turn,
                    "final answer ({} chars)",
                    answer.chars().count()
                );
                return Ok(answer);
            }
            if last {
                break;
            }
            messages.push(echo_safe(&reply.message));
            for call in calls {
                let name = call.function.name.clone();
                let outcome =
                    call_tool(env, skill, &name, &call.function.arguments, &chain, stats).await?;
                stats.tool_calls += 1;
                if outcome.1 {
                    stats.refused_tool_calls += 1;
                }
                tracing::info!(
                    job = %env.label,
                    skill = %skill.name,
                    depth,
                    turn,
                    tool = %one_line(&name),
                    refused = outcome.1,
                    "tool call: {}",
                    one_line(&truncate(&outcome.0, 160))
                );
                messages.push(Message::tool_result(call.id.clone(), outcome.0));
            }
        }
        Err(JobError::new(
            ErrorKind::MaxTurns,
            format!(
                "skill `{}` reached max_turns {} without a final answer",
                skill.name, skill.max_turns
            ),
        ))
    })
}

/// The tools offered to the model: the skill's builtin tools (web_fetch only with
/// `--allow-web`) and one `skill_<name>` per nested skill.
pub fn tool_defs(env: &AgentEnv, skill: &Skill) -> Vec<ToolDef> {
    let mut defs = Vec::new();
    for name in skill.builtin_tools() {
        let Some(kind) = ToolKind::from_name(name) else {
            continue;
        };
        if kind == ToolKind::WebFetch && !env.tools.allow_web {
            continue;
        }
        defs.push(ToolDef::function(
            kind.name(),
            kind.description(),
            kind.parameters(),
        ));
    }
    for name in skill.nested_skill_names() {
        let Some(nested) = env.skills.get(name) else {
            continue;
        };
        defs.push(nested_def(nested));
    }
    defs
}

/// `skill_<name>`: the nested skill's arguments plus `input`, what the caller wants done.
fn nested_def(nested: &Skill) -> ToolDef {
    let mut props = serde_json::Map::new();
    let mut required = vec![json!("input")];
    props.insert(
        "input".into(),
        json!({"type": "string", "description": "What you want this skill to do."}),
    );
    for a in &nested.input.args {
        let ty = match a.kind {
            skills::ArgType::Number => "number",
            skills::ArgType::Boolean => "boolean",
            _ => "string",
        };
        let mut desc = a.description.clone().unwrap_or_else(|| match a.kind {
            skills::ArgType::File => {
                "Path of a file: one of the job's inputs or a file you wrote".into()
            }
            skills::ArgType::Directory => "Path of a folder of the job's inputs".into(),
            _ => a.name.clone(),
        });
        if let Some(d) = &a.default {
            desc.push_str(&format!(" (default: {d})"));
        }
        props.insert(a.name.clone(), json!({"type": ty, "description": desc}));
        if a.required {
            required.push(json!(a.name));
        }
    }
    ToolDef::function(
        format!("{SKILL_TOOL_PREFIX}{}", nested.name),
        format!(
            "Run the `{}` skill: {} It writes its files into this job's output folder and answers with what it did.",
            nested.name, nested.description
        ),
        json!({"type": "object", "properties": props, "required": required}),
    )
}

/// Run one tool call; returns (content for the model, refused). Errors that end the job
/// (cancellation, auth, quota in a nested skill) propagate.
async fn call_tool(
    env: &AgentEnv,
    skill: &Skill,
    name: &str,
    arguments: &str,
    chain: &[String],
    stats: &mut AgentStats,
) -> Result<(String, bool), JobError> {
    let offered = tool_defs(env, skill);
    if !offered.iter().any(|d| d.function.name == name) {
        let names: Vec<&str> = offered.iter().map(|d| d.function.name.as_str()).collect();
        return Ok((
            format!(
                "refused: there is no tool `{}` here; the tools are: {}",
                one_line(&truncate(name, 80)),
                names.join(", ")
            ),
            true,
        ));
    }
    if let Some(nested_name) = name.strip_prefix(SKILL_TOOL_PREFIX) {
        return call_nested(env, nested_name, arguments, chain, stats).await;
    }
    let Some(kind) = ToolKind::from_name(name) else {
        return Ok((format!("refused: unknown tool `{name}`"), true));
    };
    let outcome = env.toolbox.execute(kind, arguments, &env.tools).await;
    Ok((outcome.content, outcome.refused))
}

async fn call_nested(
    env: &AgentEnv,
    name: &str,
    arguments: &str,
    chain: &[String],
    stats: &mut AgentStats,
) -> Result<(String, bool), JobError> {
    let Some(nested) = env.skills.get(name) else {
        return Ok((format!("refused: unknown skill `{name}`"), true));
    };
    if chain.iter().any(|c| c == name) {
        return Ok((
            format!(
                "refused: skill `{name}` is already running in this call chain ({} -> {name}); a skill cannot call itself again",
                chain.join(" -> ")
            ),
            true,
        ));
    }
    if chain.len() > MAX_NESTING {
        return Ok((
            format!(
                "refused: skills may nest at most {MAX_NESTING} deep ({} -> {name}); do this step yourself",
                chain.join(" -> ")
            ),
            true,
        ));
    }
    let args: serde_json::Map<String, Value> = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(m)) => m,
        Ok(_) | Err(_) => {
            return Ok((
                format!(
                    "refused: arguments of {SKILL_TOOL_PREFIX}{name} must be a JSON object like {{\"input\": \"what to do\", \"file\": \"path\"}}"
                ),
                true,
            ));
        }
    };
    let mut missing = Vec::new();
    for a in nested
        .input
        .args
        .iter()
        .filter(|a| a.required && a.default.is_none())
    {
        if !args.contains_key(&a.name) {
            missing.push(a.name.clone());
        }
    }
    if !missing.is_empty() {
        return Ok((
            format!(
                "refused: {SKILL_TOOL_PREFIX}{name} needs the argument(s): {}",
                missing.join(", ")
            ),
            true,
        ));
    }
    let message = nested_message(env, nested, &args).await;
    match run_skill(env, nested, message, chain.to_vec(), stats).await {
        Ok(answer) => {
            let written: Vec<String> = env
                .tools
                .sandbox
                .written()
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            Ok((
                format!(
                    "skill `{name}` finished. Its answer: {}\nFiles in the output folder now: {}",
                    answer.trim(),
                    if written.is_empty() {
                        "none".into()
                    } else {
                        written.join(", ")
                    }
                ),
                false,
            ))
        }
        Err(e) if e.kind.aborts_run() || e.kind == ErrorKind::Cancelled => Err(e),
        Err(e) => Ok((format!("error: skill `{name}` failed: {e}"), false)),
    }
}

/// The first message of a nested skill: the caller's request, the arguments, and the text of
/// its file argument when it names something the job may read.
async fn nested_message(
    env: &AgentEnv,
    nested: &Skill,
    args: &serde_json::Map<String, Value>,
) -> String {
    let input = args
        .get("input")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut msg = format!("Request from the calling skill: {input}\n");
    let mut doc = None;
    let arg_text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut lines = Vec::new();
    for a in &nested.input.args {
        let value = args
            .get(&a.name)
            .map(arg_text)
            .or_else(|| a.default.clone());
        let Some(value) = value else { continue };
        lines.push(format!("- {}: {value}", a.name));
        if doc.is_none()
            && a.kind == skills::ArgType::File
            && nested.primary_arg().map(|p| &p.name) == Some(&a.name)
        {
            doc = Some(match env.tools.sandbox.check_read(&value) {
                Ok(target) if !target.is_dir() => {
                    // Extraction may run a PDF worker or OCR: off the async threads.
                    let reader = env.tools.reader.clone();
                    let path = target.path().to_path_buf();
                    let read = tokio::task::spawn_blocking(move || reader.read_text(&path)).await;
                    match read {
                        Ok(Ok(text)) => document_block(&value, &text),
                        Ok(Err(e)) => format!("(The file {value} could not be read: {e})\n"),
                        Err(e) => format!("(The file {value} could not be read: {e})\n"),
                    }
                }
                Ok(_) => format!("({value} is a folder; use file_list and file_read.)\n"),
                Err(r) => format!("(The file {value} cannot be read here: {})\n", r.message()),
            });
        }
    }
    if !lines.is_empty() {
        msg.push_str("Arguments:\n");
        msg.push_str(&lines.join("\n"));
        msg.push('\n');
    }
    if let Some(d) = doc {
        msg.push('\n');
        msg.push_str(&d);
    }
    msg
}

/// The assistant message as it goes back into the history: tool-call arguments that are not
/// valid JSON are replaced by `{}` (servers re-parse the history and reject them; the call's
/// refusal already told the model what was wrong).
fn echo_safe(message: &Message) -> Message {
    let mut m = message.clone();
    if let Some(calls) = m.tool_calls.as_mut() {
        for c in calls {
            if serde_json::from_str::<Value>(&c.function.arguments).is_err() {
                c.function.arguments = "{}".into();
            }
        }
    }
    m
}

/// A document's text as the model is given it, fenced with its path.
pub fn document_block(path: &str, text: &str) -> String {
    format!(
        "--- BEGIN DOCUMENT {path} ---\n{}\n--- END DOCUMENT {path} ---\n",
        text.trim_end()
    )
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}
