//! The agent loop: model → tools → model, until a plain answer or the skill's `max_turns`.
//!
//! The loop owns the conversation and the accounting (turns, attempts, refused calls, tokens,
//! nested skills included); it never touches a path itself — every file goes through the
//! job's sandbox inside the tools. A nested skill is a tool that runs this same loop with its
//! own skill, in the same sandbox, guarded against cycles and depth at run time.

use super::chat::{BoxFuture, Chat};
use super::tools::{ToolEnv, ToolKind, ToolOutcome, Toolbox};
use super::transcript::Transcript;
use crate::error::{ErrorKind, JobError};
use crate::judge::accept::Acceptance;
use crate::judge::declared::Expected;
use crate::judge::figures::Ungrounded;
use crate::judge::junk::{self, Problem, Retry};
use crate::llm::{ChatRequest, Message, ToolDef};
use crate::manifest::Tokens;
use crate::sanitize::one_line;
use crate::skills::{self, MAX_NESTING, Skill, SkillSet};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// Sent with the last turn, which offers no tools.
const FINAL_TURN_NOTE: &str =
    "This is your last turn and tools are no longer available. Reply now in plain text.";

/// Prefix of the tool that runs a nested skill.
pub(crate) const SKILL_TOOL_PREFIX: &str = "skill_";

/// What one job's agent works with.
#[derive(Clone)]
pub(crate) struct AgentEnv {
    /// The model: the run's one client (its retries and budget), or a scripted one in tests.
    pub client: Arc<dyn Chat>,
    pub skills: Arc<SkillSet>,
    pub toolbox: Toolbox,
    pub tools: ToolEnv,
    /// The model every request of the job uses.
    pub model: String,
    /// Cap on each answer's length (the model's maximum output).
    pub max_tokens: Option<u32>,
    /// Sampling temperature, when configured.
    pub temperature: Option<f32>,
    /// A repetition penalty for servers that take one (llama.cpp).
    pub repeat_penalty: Option<f32>,
    /// The frequency penalty of the one request that asks again after an answer ran to the
    /// length limit (servers known to take it).
    pub retry_penalty: Option<f32>,
    /// Cancelled when the run aborts or is interrupted.
    pub cancel: CancellationToken,
    /// The job, for logs.
    pub label: String,
    /// Every request and answer of the job.
    pub transcript: Arc<Transcript>,
    /// Batch mode, or a run with collected batch answers: the book asked before a direct
    /// request is sent (its answer is replayed, or the request waits for a batch).
    pub batch: Option<crate::batch::Ticket>,
    /// Each answer's tokens are added here as it arrives (the run's progress display).
    pub spent: Option<Arc<AtomicU64>>,
}

impl AgentEnv {
    /// A request of this job: its model, answer cap, temperature and repetition penalty.
    pub(super) fn chat_request(&self, messages: Vec<Message>) -> ChatRequest {
        let mut req = ChatRequest::new(self.model.clone(), messages);
        req.max_tokens = self.max_tokens;
        req.temperature = self.temperature;
        req.repeat_penalty = self.repeat_penalty;
        req
    }
}

/// The accounting of a job, summed over every request, nested skills included.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct AgentStats {
    pub turns: u32,
    pub attempts: u32,
    pub refused_tool_calls: u32,
    pub tool_calls: u32,
    pub tokens: Tokens,
    /// HTTP requests sent, retries included.
    pub requests: u32,
    /// The most attempts one request needed (1: nothing was retried).
    pub max_attempts: u32,
    /// The model the server last said answered.
    pub served_model: Option<String>,
    /// What reading the job's documents should make a person doubt (text lost in
    /// extraction), for the job's record.
    pub input_warnings: Vec<String>,
    /// Figures the job's answers state that their sources do not hold.
    pub ungrounded_figures: Vec<String>,
    /// Tokens spent per model (docs/escalation.md).
    pub by_model: std::collections::BTreeMap<String, Tokens>,
    /// The job's document's text in tokens, once read (for its record).
    pub input_tokens: Option<u64>,
    /// What the judge and the ladder decided of the job's steps (never touched by the
    /// conversation itself).
    pub decided: crate::judge::Decided,
}

impl AgentStats {
    /// Add another run's accounting (a nested skill, a piece of a long document).
    pub(crate) fn add(&mut self, s: &AgentStats) {
        self.turns += s.turns;
        self.attempts += s.attempts;
        self.refused_tool_calls += s.refused_tool_calls;
        self.tool_calls += s.tool_calls;
        self.tokens.add(s.tokens);
        self.requests += s.requests;
        self.max_attempts = self.max_attempts.max(s.max_attempts);
        for w in &s.input_warnings {
            if !self.input_warnings.contains(w) {
                self.input_warnings.push(w.clone());
            }
        }
        add_unique(
            &mut self.ungrounded_figures,
            s.ungrounded_figures.iter().cloned(),
        );
        if s.served_model.is_some() {
            self.served_model.clone_from(&s.served_model);
        }
        for (model, tokens) in &s.by_model {
            self.by_model.entry(model.clone()).or_default().add(*tokens);
        }
        self.decided.add(&s.decided);
    }

    fn count_reply(&mut self, reply: &crate::llm::ChatReply) {
        self.turns += 1;
        self.attempts += reply.attempts;
        self.requests += reply.attempts;
        self.max_attempts = self.max_attempts.max(reply.attempts);
        self.tokens.add(Tokens {
            prompt: reply.usage.prompt_tokens,
            completion: reply.usage.completion_tokens,
        });
        if reply.model.is_some() {
            self.served_model.clone_from(&reply.model);
        }
    }

    fn count_error(&mut self, e: &crate::llm::ApiError) {
        self.attempts += e.attempts.max(1);
        self.requests += e.attempts;
        self.max_attempts = self.max_attempts.max(e.attempts);
    }
}

/// The system prompt of a skill run as an agent: its own, then how to deliver the files.
pub(crate) fn agent_system_prompt(skill: &Skill, files: &[String]) -> String {
    let mut p = skills::system_prompt(skill);
    if !files.is_empty() {
        let names: Vec<String> = files.iter().map(|f| format!("`{f}`")).collect();
        let names = names.join(" and ");
        p.push_str(&if skill.nested_skill_names().next().is_some() {
            format!("\n\nThe job is done as soon as {names} exist in the output folder.")
        } else {
            format!(
                "\n\nDeliver the result with the file_write tool: write {names} (exactly {}). Once {} written, the job is done.",
                if files.len() == 1 { "this name" } else { "these names" },
                if files.len() == 1 { "it is" } else { "they are" },
            )
        });
    }
    p
}

/// The system prompt of a direct request: the skill's own, then "answer with the content".
pub(crate) fn direct_system_prompt(skill: &Skill, file: &str) -> String {
    let what = match skills::extension(file).as_str() {
        "json" => "the JSON itself (no code fence, no text around it)",
        "csv" => "the CSV itself (a header row, then the rows; no code fence, no text around it)",
        "txt" => "the plain text itself",
        _ => "the Markdown itself",
    };
    format!(
        "{}\n\nYour answer is saved as the result file as it is: answer with {what}, no remarks, no tool calls.",
        skills::system_prompt(skill)
    )
}

/// Turn a plain answer into `file` through the sandbox (`.json` pretty-printed).
fn write_answer(env: &AgentEnv, file: &str, content: &str) -> Result<std::path::PathBuf, JobError> {
    let bytes = if skills::extension(file) == "json" {
        serde_json::from_str::<Value>(content)
            .ok()
            .and_then(|v| serde_json::to_vec_pretty(&v).ok())
            .map(|mut b| {
                b.push(b'\n');
                b
            })
            .unwrap_or_else(|| content.as_bytes().to_vec())
    } else {
        content.as_bytes().to_vec()
    };
    let sandbox = &env.tools.sandbox;
    let target = sandbox
        .check_write(file)
        .map_err(|r| JobError::new(ErrorKind::Io, r.message().to_string()))?;
    sandbox
        .write_new(&target, &bytes)
        .map_err(|e| JobError::new(ErrorKind::Io, msg!("cannot write {file}: {e}")))
}

/// Requests a direct job may take: the first, one corrective or fresh try, and one more fresh
/// try when the model looped or stated figures its document does not hold.
const DIRECT_ROUNDS: u32 = 3;

/// One direct request: who asks (for the transcript), the system prompt and the first message.
pub(crate) struct DirectAsk {
    /// The skill (or workflow step) the request is for.
    pub name: String,
    pub system: String,
    pub user: String,
}

impl DirectAsk {
    /// The direct request of `skill` for its file `file`.
    pub(crate) fn of(skill: &Skill, file: &str, user: String) -> DirectAsk {
        DirectAsk {
            name: skill.name.clone(),
            system: direct_system_prompt(skill, file),
            user,
        }
    }
}

/// Direct mode (docs/skills.md#direct-mode): one request without tools whose answer is the
/// declared file's content, judged by its [`Acceptance`]. A problem that the conversation can
/// mend (empty, a claim, invalid) gets one corrective request; one that a fresh request may mend
/// (a copy, a loop, an echo, JSON where prose is asked, a stub, the wrong language, parts left
/// out, an answer cut short) is asked afresh, naming it, with a frequency penalty. A second bad
/// answer fails the job with `missing_output` (or `truncated`), except that a loop gets one more
/// fresh try ([`DIRECT_ROUNDS`] in all). An accepted answer stating figures its source does not
/// hold is asked once more; the answer with fewer such figures is kept and they are reported.
pub(crate) async fn run_direct(
    env: &AgentEnv,
    ask: DirectAsk,
    accept: &Acceptance,
    stats: &mut AgentStats,
) -> Result<std::path::PathBuf, JobError> {
    let file = accept.file.as_str();
    // A request asked in one user message (a skill's instruction) has no system prompt.
    let mut fresh = Vec::with_capacity(2);
    let plain = ask.system.is_empty();
    if !plain {
        fresh.push(Message::system(ask.system.clone()));
    }
    let user = ask.user.clone();
    fresh.push(Message::user(ask.user));
    let instructions = format!(
        "{}\n{}",
        without_documents(&ask.system),
        without_documents(&user)
    );
    let accept = accept
        .clone()
        .with_instructions(&instructions)
        .grounded_in(&user);
    let mut messages = fresh.clone();
    let mut round = 0;
    let mut penalised = false;
    // An accepted answer that was asked about again (its figures, or a near copy).
    let mut kept: Option<Kept> = None;
    let stop = || env.cancel.is_cancelled();
    loop {
        round += 1;
        if env.cancel.is_cancelled() {
            return Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled")));
        }
        let mut req = env.chat_request(messages.clone());
        if penalised {
            req.frequency_penalty = env.retry_penalty;
        } else if plain {
            // One message is sent as a plain request is: the repetition penalty that keeps a
            // small model from looping also keeps it from ending a summary (it wrote the paper
            // out) and costs a translation its repeated words; a loop's fresh try has it.
            req.repeat_penalty = None;
        }
        let reply = request(env, &ask.name, round, &req, stats).await?;
        let answer = direct_answer(&reply.message);
        let truncated = reply.finish_reason.as_deref() == Some("length");
        let content = junk::strip_fence(&answer);
        let problem = if truncated {
            None
        } else {
            accept.answer(&content, &|| env.cancel.is_cancelled())
        };
        if problem == Some(Problem::Stopped) {
            return Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled")));
        }
        if !truncated && problem.is_none() {
            // A check the run's stop cut short judged nothing: the job ends here.
            let Some(best) = weigh(&accept, &content, &mut kept, &stop) else {
                return Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled")));
            };
            if (best.figures.count == 0 && !best.copied) || round >= 2 {
                return keep(env, stats, file, kept.take().expect("kept above"));
            }
            messages = if best.copied {
                penalised = true;
                ask_in_own_words(env, &fresh, file)
            } else {
                ask_for_figures(env, &fresh, file, &best.figures)
            };
            continue;
        }
        if let Some(k) = kept.take() {
            // The fresh try for figures went wrong: the earlier answer stands.
            return keep(env, stats, file, k);
        }
        let why = match &problem {
            Some(p) => p.describe(file),
            None => msg!(
                "the answer was cut at the length limit ({} tokens)",
                env.max_tokens.unwrap_or(0)
            ),
        };
        env.transcript.note(&why);
        // A loop (or an answer cut at the limit) gets one more fresh try, since sampling, not
        // instructions, decides it.
        let looped = truncated || problem == Some(Problem::Loop);
        if round == DIRECT_ROUNDS || (round == 2 && !looped) {
            let kind = if truncated {
                ErrorKind::Truncated
            } else {
                ErrorKind::MissingOutput
            };
            // What the model answered is what a person wants to read next to the reason.
            keep_rejected(env, file, &content);
            return Err(JobError::new(kind, why));
        }
        // A condensing cut at the length limit was, most likely, the document copied out.
        let problem = match problem {
            None if accept.condenses() => Some(Problem::Copy),
            p => p,
        };
        retry(
            &fresh,
            &mut messages,
            problem,
            &content,
            &mut penalised,
            plain,
        );
    }
}

/// An accepted answer weighed — its figures the document lacks, whether it is a near copy —
/// and kept when it is better than the one `kept` before it; the better of the two. `None`
/// when the run's stop cut the figures' check short.
fn weigh<'a>(
    accept: &Acceptance,
    content: &str,
    kept: &'a mut Option<Kept>,
    stop: &dyn Fn() -> bool,
) -> Option<&'a Kept> {
    let answer = Kept {
        content: content.to_string(),
        figures: accept.ungrounded(content, stop),
        copied: accept.near_copy(content, stop),
    };
    if answer.figures.cut && stop() {
        return None;
    }
    if kept
        .as_ref()
        .is_none_or(|before| answer.better_than(before))
    {
        *kept = Some(answer);
    }
    kept.as_ref()
}

/// An accepted direct answer, and what was asked about it again.
struct Kept {
    content: String,
    /// Figures it states that the document does not hold.
    figures: Ungrounded,
    /// A condensing that is mostly its source again (`near_copy`).
    copied: bool,
}

impl Kept {
    /// Not a near copy before a near copy; then fewer figures the document lacks.
    fn better_than(&self, other: &Kept) -> bool {
        (self.copied, self.figures.count) < (other.copied, other.figures.count)
    }
}

/// The fresh request that asks once more, in the document's own framing, for a condensing
/// that is not the document's sentences again.
fn ask_in_own_words(env: &AgentEnv, fresh: &[Message], file: &str) -> Vec<Message> {
    env.transcript.note(&msg!(
        "{file} is mostly the document's own sentences; asking once more"
    ));
    let mut messages = fresh.to_vec();
    push_hint(
        &mut messages,
        "Do not copy sentences out of the text: write the result in your own words, far shorter than the text.",
    );
    messages
}

/// The text a direct request answered; a model that calls file_write anyway has still given
/// the content.
fn direct_answer(message: &Message) -> String {
    message
        .content
        .clone()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| written_content(message))
        .unwrap_or_default()
}

/// The fresh request that asks once more for an answer stating only the document's figures,
/// after one that states `figures` it does not hold.
fn ask_for_figures(
    env: &AgentEnv,
    fresh: &[Message],
    file: &str,
    figures: &Ungrounded,
) -> Vec<Message> {
    let list = figures.list();
    let why = msg!("{file} states figures the document does not hold: {list}");
    env.transcript.note(&format!("{why}; asking once more"));
    let mut messages = fresh.to_vec();
    push_hint(
        &mut messages,
        &format!(
            "Use only figures (numbers, amounts, dates) that the document states. These are not in it: {list}."
        ),
    );
    messages
}

/// The next direct request after a bad answer: asked afresh, naming the problem, or the
/// conversation corrected, as the problem's [`Retry`] says. A request in `one_message` (a
/// skill's instruction) is asked afresh as it was, with the penalties, naming nothing: a line
/// after its text made the 0.5B stop at the text's heading.
fn retry(
    fresh: &[Message],
    messages: &mut Vec<Message>,
    problem: Option<Problem>,
    content: &str,
    penalised: &mut bool,
    one_message: bool,
) {
    match problem.as_ref().map(Problem::retry) {
        None | Some(Retry::Fresh) => {
            // Shown its own loop or its copy of the input, a small model repeats it: ask
            // afresh, naming what went wrong, with a frequency penalty where the server
            // takes one.
            *penalised = true;
            *messages = fresh.to_vec();
            if one_message {
                return;
            }
            let hint = match &problem {
                None => Problem::Loop.fresh_hint(),
                Some(p) => p.fresh_hint(),
            };
            push_hint(messages, &hint);
        }
        Some(Retry::Correct) => {
            messages.push(Message::assistant(content.trim_end()));
            messages.push(Message::user(match problem {
                Some(Problem::Claim) => "You only said you wrote something. Nothing was saved. Answer with the content itself.".to_string(),
                Some(Problem::Invalid(why)) => format!("Your answer is not valid: {why}. Answer again with only the content."),
                _ => "Your answer was empty. Answer with the content itself.".to_string(),
            }));
        }
    }
}

/// The last user message of a fresh request, with a line naming what went wrong before.
fn push_hint(messages: &mut [Message], hint: &str) {
    if let Some(Message { content, .. }) = messages.last_mut() {
        let text = content.get_or_insert_with(String::new);
        text.push('\n');
        text.push_str(hint);
        text.push('\n');
    }
}

/// Write an accepted answer as `file`; figures it states that the document does not are
/// reported with the job.
fn keep(
    env: &AgentEnv,
    stats: &mut AgentStats,
    file: &str,
    Kept {
        content,
        figures,
        copied,
    }: Kept,
) -> Result<std::path::PathBuf, JobError> {
    let rel = write_answer(env, file, &content)?;
    env.transcript
        .note(&format!("the answer was saved as {}", rel.display()));
    if figures.count > 0 {
        let list = figures.list();
        env.transcript.note(&msg!(
            "{file} states figures the document does not hold: {list}"
        ));
        add_unique(&mut stats.ungrounded_figures, figures.named);
    }
    if figures.cut {
        env.transcript.note(&format!(
            "the figures of {file} were checked only in part: the answer is too long to check whole"
        ));
    }
    if copied {
        env.transcript
            .note(&msg!("{file} is mostly the document's own sentences"));
    }
    Ok(rel)
}

/// `more` added to `list`, each once: a set of what is there, not a search of the list per item.
fn add_unique(list: &mut Vec<String>, more: impl IntoIterator<Item = String>) {
    let mut there: std::collections::HashSet<String> = list.iter().cloned().collect();
    for item in more {
        if there.insert(item.clone()) {
            list.push(item);
        }
    }
}

/// A rejected answer, kept beside the job's outputs as `<file>.rejected` (never committed:
/// the job failed) for the person reading why.
pub(super) fn keep_rejected(env: &AgentEnv, file: &str, content: &str) {
    if content.trim().is_empty() {
        return;
    }
    let name = format!("{file}.rejected");
    if let Ok(target) = env.tools.sandbox.check_write(&name) {
        let _ = env.tools.sandbox.write_new(&target, content.as_bytes());
    }
}

/// The `content` of a file_write call in a message, when a model sent one where none was
/// offered.
fn written_content(m: &Message) -> Option<String> {
    m.calls().iter().find_map(|c| {
        let v: Value = serde_json::from_str(&c.function.arguments).ok()?;
        match v.get("content")? {
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            _ => None,
        }
    })
}

/// One request, counted and written to the transcript.
pub(super) async fn request(
    env: &AgentEnv,
    name: &str,
    turn: u32,
    req: &ChatRequest,
    stats: &mut AgentStats,
) -> Result<crate::llm::ChatReply, JobError> {
    let started = std::time::Instant::now();
    let result = match env.batch.as_ref().map(|b| b.answer(turn, req)) {
        Some(crate::batch::Answer::Reply(reply)) => {
            env.transcript
                .note("the answer below comes from a batch (the provider's Batch API)");
            Ok(reply)
        }
        Some(crate::batch::Answer::Failed(e)) => {
            env.transcript
                .note("the failure below comes from a batch (the provider's Batch API)");
            Err(e)
        }
        Some(crate::batch::Answer::Waiting(why)) => {
            env.transcript.note(&why);
            return Err(JobError::new(ErrorKind::BatchPending, why));
        }
        Some(crate::batch::Answer::Send) | None => env.client.chat(req, &env.cancel).await,
    };
    env.transcript
        .request(name, turn, req, result.as_ref(), started.elapsed());
    match result {
        Ok(reply) => {
            stats.count_reply(&reply);
            if let Some(spent) = &env.spent {
                // As the job's record counts them, so the display and the summary agree.
                let usage = &reply.usage;
                spent.fetch_add(
                    usage.prompt_tokens + usage.completion_tokens,
                    Ordering::Relaxed,
                );
            }
            Ok(reply)
        }
        Err(e) => {
            stats.count_error(&e);
            Err(e.to_job_error())
        }
    }
}

/// Run `skill` with `user_message` to a final answer, as an agent. `chain` holds the skills
/// above this one (empty for the job's own skill).
///
/// With declared outputs the loop ends as soon as they are all written (no confirmation
/// turn). A model that answers without them first has its answer taken as the file when one
/// text file is missing and the answer is content, not a claim; otherwise it gets one
/// corrective turn naming what is missing. The caller checks the files once more.
pub(crate) fn run_skill<'a>(
    env: &'a AgentEnv,
    skill: &'a Skill,
    user_message: String,
    chain: Vec<String>,
    stats: &'a mut AgentStats,
    expected: &'a Expected,
) -> BoxFuture<'a, Result<String, JobError>> {
    Box::pin(async move {
        let mut chain = chain;
        chain.push(skill.name.clone());
        // Its MCP servers are started (once per run) before the model is offered their tools.
        env.toolbox.mcp.prepare(skill).await;
        let tools = tool_defs(env, skill);
        let mut messages = vec![
            Message::system(agent_system_prompt(skill, &expected.files())),
            Message::user(user_message),
        ];
        // What the model was told, for the echo check of a plain-text answer.
        let instructions = messages
            .iter()
            .filter_map(|m| m.content.as_deref().map(without_documents))
            .collect::<Vec<_>>()
            .join("\n");
        let depth = chain.len() - 1;
        let before = env.tools.sandbox.written().len();
        let problems = |env: &AgentEnv| {
            let written = env.tools.sandbox.written();
            expected.problems(
                env.tools.sandbox.output_dir(),
                &written[before.min(written.len())..],
                &|| env.cancel.is_cancelled(),
            )
        };
        let mut correcting = false;
        let mut turn = 0;
        loop {
            turn += 1;
            if env.cancel.is_cancelled() {
                return Err(JobError::new(ErrorKind::Cancelled, msg!("cancelled")));
            }
            let mut req = env.chat_request(messages.clone());
            // The last turn is for the answer: no tools are offered, so a model that would
            // otherwise keep calling them concludes (or the job ends with max_turns).
            let last = turn >= skill.max_turns && turn > 1 && !correcting;
            if last {
                req.messages.push(Message::user(FINAL_TURN_NOTE));
            } else {
                req.tools = tools.clone();
            }
            let reply = request(env, &skill.name, turn, &req, stats).await?;
            let calls = reply.message.calls().to_vec();
            if calls.is_empty() {
                let answer = reply.message.content.clone().unwrap_or_default();
                tracing::info!(
                    job = %env.label,
                    skill = %skill.name,
                    depth,
                    turn,
                    "{}",
                    msg!("final answer ({n} chars)", n = answer.chars().count())
                );
                // An answer cut at the length limit is never a result: not as response.md,
                // not as a declared file.
                let cut = reply.finish_reason.as_deref() == Some("length");
                let plain = PlainAnswer {
                    answer,
                    cut,
                    missing: problems(env),
                    instructions: &instructions,
                };
                match take_answer(env, expected, plain, &mut correcting, &mut messages) {
                    Some(result) => return result,
                    None => continue,
                }
            }
            if last {
                break;
            }
            messages.push(echo_safe(&reply.message));
            run_calls(env, skill, &chain, &calls, turn, stats, &mut messages).await?;
            if let Some((kind, why)) = env.tools.sandbox.fatal() {
                return Err(JobError::new(kind, why));
            }
            if !expected.declared.is_empty() && problems(env).is_empty() {
                return Ok(String::new());
            }
            if correcting {
                // The corrective turn was spent on other calls.
                return Ok(String::new());
            }
        }
        Err(JobError::new(
            ErrorKind::MaxTurns,
            msg!(
                "skill `{}` reached max_turns {} without a final answer",
                skill.name,
                skill.max_turns
            ),
        ))
    })
}

/// A plain answer (a turn without tool calls) and what it leaves undone.
struct PlainAnswer<'i> {
    answer: String,
    /// The answer ran to the length limit.
    cut: bool,
    /// Declared files still missing or wrong.
    missing: Vec<(String, Problem)>,
    /// What the model was told, for the echo check.
    instructions: &'i str,
}

/// A plain answer ends the skill unless declared files are missing and no corrective turn was
/// spent yet: then one is pushed onto `messages`, and `None` says to go on.
fn take_answer(
    env: &AgentEnv,
    expected: &Expected,
    plain: PlainAnswer,
    correcting: &mut bool,
    messages: &mut Vec<Message>,
) -> Option<Result<String, JobError>> {
    let PlainAnswer {
        answer,
        cut,
        missing,
        instructions,
    } = plain;
    if missing.is_empty() {
        if cut && expected.declared.is_empty() {
            return Some(Err(JobError::new(
                ErrorKind::Truncated,
                msg!(
                    "the model's answer was cut at the length limit ({} tokens)",
                    env.max_tokens.unwrap_or(0)
                ),
            )));
        }
        return Some(Ok(answer));
    }
    match answer_as_file(env, expected, &missing, &answer, cut, instructions) {
        Ok(true) => return Some(Ok(answer)),
        Ok(false) => {}
        Err(e) => return Some(Err(e)),
    }
    if *correcting {
        return Some(Ok(answer));
    }
    *correcting = true;
    let list: Vec<String> = missing.iter().map(|(f, p)| p.describe(f)).collect();
    env.transcript
        .note(&format!("corrective turn: {}", list.join("; ")));
    messages.push(Message::assistant(answer));
    messages.push(Message::user(format!(
        "Not done yet: {}. Call file_write now for {}, with the full content your instructions ask for.",
        list.join("; "),
        missing
            .iter()
            .map(|(f, _)| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(" and ")
    )));
    None
}

/// A plain answer that is the content of the one missing text file (not a claim, not cut) is
/// saved as that file; whether it was.
fn answer_as_file(
    env: &AgentEnv,
    expected: &Expected,
    missing: &[(String, Problem)],
    answer: &str,
    cut: bool,
    instructions: &str,
) -> Result<bool, JobError> {
    if let [(file, Problem::Missing)] = missing
        && !cut
        && skills::DIRECT_EXTS.contains(&skills::extension(file).as_str())
    {
        let content = junk::strip_fence(answer);
        let accept = expected
            .declared
            .iter()
            .find(|a| &a.file == file)
            .map(|a| a.clone().with_instructions(instructions));
        if accept.is_some_and(|a| a.answer(&content, &|| env.cancel.is_cancelled()).is_none()) {
            let rel = write_answer(env, file, &content)?;
            env.transcript.note(&format!(
                "the model answered in plain text; its answer was saved as {}",
                rel.display()
            ));
            return Ok(true);
        }
    }
    Ok(false)
}

/// The calls of one turn run concurrently; their results are counted, logged and go back to
/// the model in call order.
async fn run_calls(
    env: &AgentEnv,
    skill: &Skill,
    chain: &[String],
    calls: &[crate::llm::ToolCall],
    turn: u32,
    stats: &mut AgentStats,
    messages: &mut Vec<Message>,
) -> Result<(), JobError> {
    let depth = chain.len() - 1;
    let results = futures_util::future::join_all(calls.iter().map(|call| async move {
        let mut own = AgentStats::default();
        let name = call.function.name.clone();
        let outcome = call_tool(env, skill, &name, &call.function.arguments, chain, &mut own).await;
        (own, outcome)
    }))
    .await;
    for (call, (own, outcome)) in calls.iter().zip(results) {
        stats.add(&own);
        let ToolOutcome {
            content, refused, ..
        } = outcome?;
        let name = &call.function.name;
        stats.tool_calls += 1;
        if refused {
            stats.refused_tool_calls += 1;
        }
        tracing::info!(
            job = %env.label,
            skill = %skill.name,
            depth,
            turn,
            tool = %one_line(name),
            refused,
            "{}",
            msg!("tool call: {call}", call = one_line(&truncate(&content, 160)))
        );
        env.transcript
            .tool(&skill.name, turn, call, &content, refused);
        messages.push(Message::tool_result(call.id.clone(), content));
    }
    Ok(())
}

/// The tools offered to the model: the skill's builtin tools (web_fetch only with
/// `--allow-web`), one `skill_<name>` per nested skill and one `mcp__SERVER__TOOL` per MCP tool.
pub(crate) fn tool_defs(env: &AgentEnv, skill: &Skill) -> Vec<ToolDef> {
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
    defs.extend(env.toolbox.mcp.defs(skill));
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

/// Run one tool call: what goes back to the model, and whether it was refused. Errors that end
/// the job (cancellation, auth, quota in a nested skill) propagate.
async fn call_tool(
    env: &AgentEnv,
    skill: &Skill,
    name: &str,
    arguments: &str,
    chain: &[String],
    stats: &mut AgentStats,
) -> Result<ToolOutcome, JobError> {
    let offered = tool_defs(env, skill);
    if !offered.iter().any(|d| d.function.name == name) {
        let names: Vec<&str> = offered.iter().map(|d| d.function.name.as_str()).collect();
        return Ok(ToolOutcome::refused(format!(
            "there is no tool `{}` here; the tools are: {}",
            one_line(&truncate(name, 80)),
            names.join(", ")
        )));
    }
    if let Some(nested_name) = name.strip_prefix(SKILL_TOOL_PREFIX) {
        return call_nested(env, nested_name, arguments, chain, stats).await;
    }
    if let Some(outcome) = env.toolbox.mcp.call(skill, name, arguments).await {
        return Ok(outcome);
    }
    let Some(kind) = ToolKind::from_name(name) else {
        return Ok(ToolOutcome::refused(format!("unknown tool `{name}`")));
    };
    Ok(env.toolbox.execute(kind, arguments, &env.tools).await)
}

async fn call_nested(
    env: &AgentEnv,
    name: &str,
    arguments: &str,
    chain: &[String],
    stats: &mut AgentStats,
) -> Result<ToolOutcome, JobError> {
    let Some(nested) = env.skills.get(name) else {
        return Ok(ToolOutcome::refused(format!("unknown skill `{name}`")));
    };
    let args = match nested_args(nested, name, arguments, chain) {
        Ok(args) => args,
        Err(refusal) => return Ok(refusal),
    };
    let (message, document) = nested_message(env, nested, &args).await;
    let with_defaults = with_defaults(nested, &args);
    let expected = Expected::of(nested, &with_defaults, document.map(Arc::from));
    // A direct skill is one request on the document the call names, never a loop that
    // reads it again (docs/skills.md#nested-skills).
    if nested.direct_output(&with_defaults).is_some()
        && let [accept] = expected.declared.as_slice()
    {
        let user = format!(
            "{message}\nNow answer with {}, for the document above, and nothing else.\n",
            nested
                .output_gist()
                .unwrap_or_else(|| "the result your instructions ask for".into())
        );
        let ask = DirectAsk::of(nested, &accept.file, user);
        return match run_direct(env, ask, accept, stats).await {
            Ok(rel) => Ok(ToolOutcome::ok(format!(
                "skill `{name}` wrote `{}`.",
                rel.display()
            ))),
            Err(e) if e.kind.aborts_run() || e.kind == ErrorKind::Cancelled => Err(e),
            Err(e) => Ok(ToolOutcome::failed(format!("skill `{name}` failed: {e}"))),
        };
    }
    let before = env.tools.sandbox.written().len();
    match run_skill(env, nested, message, chain.to_vec(), stats, &expected).await {
        Ok(answer) => {
            let written = env.tools.sandbox.written();
            let new_files = &written[before.min(written.len())..];
            let missing = expected.problems(env.tools.sandbox.output_dir(), new_files, &|| {
                env.cancel.is_cancelled()
            });
            // The caller may have asked for another name ("write summary-q3.md"): any file
            // the nested skill wrote is its result then.
            if !missing.is_empty() && new_files.is_empty() {
                let list: Vec<String> = missing.iter().map(|(f, p)| p.describe(f)).collect();
                return Ok(ToolOutcome::failed(format!(
                    "skill `{name}` ended without its result: {}",
                    list.join("; ")
                )));
            }
            let written: Vec<String> = env
                .tools
                .sandbox
                .written()
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            Ok(ToolOutcome::ok(format!(
                "skill `{name}` finished. Its answer: {}\nFiles in the output folder now: {}",
                answer.trim(),
                if written.is_empty() {
                    "none".into()
                } else {
                    written.join(", ")
                }
            )))
        }
        Err(e) if e.kind.aborts_run() || e.kind == ErrorKind::Cancelled => Err(e),
        Err(e) => Ok(ToolOutcome::failed(format!("skill `{name}` failed: {e}"))),
    }
}

/// The arguments of a nested skill's call, or the refusal that goes back to the model: a skill
/// already in the chain, nesting too deep, arguments not a JSON object, required ones missing.
fn nested_args(
    nested: &Skill,
    name: &str,
    arguments: &str,
    chain: &[String],
) -> Result<serde_json::Map<String, Value>, ToolOutcome> {
    if chain.iter().any(|c| c == name) {
        return Err(ToolOutcome::refused(format!(
            "skill `{name}` is already running in this call chain ({} -> {name}); a skill cannot call itself again",
            chain.join(" -> ")
        )));
    }
    if chain.len() > MAX_NESTING {
        return Err(ToolOutcome::refused(format!(
            "skills may nest at most {MAX_NESTING} deep ({} -> {name}); do this step yourself",
            chain.join(" -> ")
        )));
    }
    let args: serde_json::Map<String, Value> = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(m)) => m,
        Ok(_) | Err(_) => {
            return Err(ToolOutcome::refused(format!(
                "arguments of {SKILL_TOOL_PREFIX}{name} must be a JSON object like {{\"input\": \"what to do\", \"file\": \"path\"}}"
            )));
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
        return Err(ToolOutcome::refused(format!(
            "{SKILL_TOOL_PREFIX}{name} needs the argument(s): {}",
            missing.join(", ")
        )));
    }
    Ok(args)
}

/// A nested call's arguments as text, with the skill's defaults for those not given: what its
/// declared outputs are named from.
fn with_defaults(
    nested: &Skill,
    args: &serde_json::Map<String, Value>,
) -> std::collections::BTreeMap<String, String> {
    let mut with_defaults: std::collections::BTreeMap<String, String> = args
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), v)
        })
        .collect();
    for a in &nested.input.args {
        if let Some(d) = &a.default {
            with_defaults
                .entry(a.name.clone())
                .or_insert_with(|| d.clone());
        }
    }
    with_defaults
}

/// The first message of a nested skill: the caller's request, the arguments, and the text of
/// its file argument when it names something the job may read.
async fn nested_message(
    env: &AgentEnv,
    nested: &Skill,
    args: &serde_json::Map<String, Value>,
) -> (String, Option<String>) {
    let input = args
        .get("input")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut msg = format!("Request from the calling skill: {input}\n");
    let mut doc = None;
    let mut text_read = None;
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
                        Ok(Ok(text)) => {
                            let block = document_block(&value, &text);
                            text_read = Some(text);
                            block
                        }
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
    (msg, text_read)
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
/// A message without its document blocks and an Agent Skill's inlined resources: what the
/// model was told, not what it was given to work with (an answer may quote the document, the
/// part results it combines, or a reference).
pub(crate) fn without_documents(message: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in message.lines() {
        let opens = line.starts_with("--- BEGIN DOCUMENT ")
            || ((line.starts_with("--- references/") || line.starts_with("--- assets/"))
                && line.ends_with(" ---"));
        let closes = line.starts_with("--- END DOCUMENT ") || line.starts_with("--- end of ");
        if !inside && opens {
            inside = true;
        } else if inside && closes {
            inside = false;
        } else if !inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

pub(crate) fn document_block(path: &str, text: &str) -> String {
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

#[cfg(test)]
#[path = "runner_tests.rs"]
mod tests;
