//! One request of a job to the model: the job's sandbox and agent environment, direct mode
//! or the agent loop, and what must exist afterwards. Used for a whole document
//! ([`super::job`]) and for each piece of a long one ([`super::chunked`]).

use super::context::{RunContext, Rung};
use crate::agent::accept::Acceptance;
use crate::agent::runner::{self, AgentEnv, AgentStats, DirectAsk, Expected};
use crate::agent::sandbox::Sandbox;
use crate::agent::structured::{self, Schema};
use crate::agent::tools::ToolEnv;
use crate::agent::transcript::Transcript;
use crate::error::{ErrorKind, JobError};
use crate::plan::Job;
use crate::skills::SchemaSpec;
use crate::skills::Skill;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The repetition penalty sent to llama.cpp servers (its own default is 1.0, off).
const LLAMA_CPP_REPEAT_PENALTY: f32 = 1.15;

/// The frequency penalty of the fresh request after an answer ran to the length limit.
const RETRY_FREQUENCY_PENALTY: f32 = 0.5;

/// One job's model work: what every request of it needs besides the run's shared parts.
pub(super) struct JobCtx<'a> {
    pub run: &'a RunContext,
    pub job: &'a Job,
    pub skill: &'a Skill,
    pub transcript: Arc<Transcript>,
    /// The separate texts a workflow's own request is given (the document, each step's
    /// output): its answer may not copy out any one of them (docs/skills.md#workflows).
    pub inputs: Vec<Arc<str>>,
    /// Which models the job's steps are asked of.
    pub rungs: Rungs,
}

/// Which models a job's steps are asked of (docs/escalation.md#audit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Rungs {
    /// The job's own model, then its ladder.
    Ladder,
    /// The job's own model alone (an audited job's first answer).
    Own,
    /// The top rung of its ladder alone (an audited job's second answer, a routed job).
    Top,
}

/// Run the job's skill once on `message` in a sandbox writing to `dir` (created), with the
/// job's inputs readable: one direct request when the skill is direct, else the agent loop.
/// With `require`, the skill's declared outputs must be there at the end (`missing_output`
/// otherwise); a skill that declares none and writes none has its answer saved as
/// `response.md`. Returns the answer and the files written (relative to `dir`).
///
/// `part` names what of the document this is (`piece-00003`, `reduce`; empty for the whole):
/// with the job's id it names the request in a batch.
///
/// An answer that fails zhi's checks (`missing_output`, `truncated`, `invalid_output`, and
/// `context_too_long` when the next model's window is larger) is asked once of each model of
/// the escalation ladder in turn, with the same prompt and the same checks
/// (docs/escalation.md); what the failed attempt wrote goes first.
#[allow(clippy::too_many_arguments)]
pub(super) async fn ask(
    ctx: &JobCtx<'_>,
    dir: &Path,
    part: &str,
    message: String,
    source: Option<Arc<str>>,
    require: bool,
    stats: &mut AgentStats,
) -> Result<(String, Vec<PathBuf>), JobError> {
    let own = ctx.run.model(ctx.job);
    let ladder = ctx.run.ladder(ctx.job);
    let (mut rung, mut next): (Option<&Rung>, std::slice::Iter<'_, Rung>) = match ctx.rungs {
        Rungs::Ladder => (None, ladder.iter()),
        Rungs::Own => (None, [].iter()),
        Rungs::Top => (ladder.last(), [].iter()),
    };
    // Rungs climbed for this step: `esc1` names its first escalated request in a batch.
    let mut rungs = 0;
    // The last answer that was accepted but doubted, kept aside while a stronger model is
    // asked: it becomes the output again if that model fails.
    let mut doubted: Option<Doubted> = None;
    loop {
        let model = rung.map_or(own.as_str(), |r| r.model.as_str());
        let before = stats.tokens;
        let sandbox = job_sandbox(ctx, dir)?;
        let part = match rung {
            // Its own request in a batch: another model, another body.
            Some(_) => format!("{part}{}esc{rungs}", if part.is_empty() { "" } else { "-" }),
            None => part.to_string(),
        };
        let result = ask_on(
            ctx,
            &sandbox,
            &part,
            message.clone(),
            source.clone(),
            require,
            stats,
            rung,
        )
        .await;
        let spent = stats.tokens.since(before);
        stats
            .by_model
            .entry(model.to_string())
            .or_default()
            .add(spent);
        let answered_by = rung.map(|r| (r.model.clone(), r.base_url.clone()));
        let e = match result {
            Ok(done) => {
                let doubts = step_doubts(ctx, dir, &part, source.as_deref(), &done.1);
                let to = match doubts.is_empty() || !escalates_doubts(ctx) {
                    true => None,
                    false => next.next(),
                };
                let Some(to) = to else {
                    // A job whose any step was escalated names the stronger model (its
                    // tokens per model say the rest).
                    if answered_by.is_some() {
                        stats.answered_by = answered_by;
                    }
                    stats.doubts.extend(doubts);
                    return Ok(done);
                };
                ctx.transcript.note(&format!(
                    "{model}'s answer is doubted ({}); the step is asked of {to}",
                    crate::agent::doubts::one_line(&doubts),
                    to = to.model
                ));
                doubted = Some(Doubted::set_aside(ctx, dir, done, doubts, answered_by));
                stats
                    .escalations
                    .push((model.to_string(), to.model.clone()));
                rungs += 1;
                rung = Some(to);
                continue;
            }
            Err(e) => e,
        };
        let Some(to) = next.next().filter(|to| escalates(ctx, &e, model, to)) else {
            return match doubted {
                Some(kept) => {
                    // The failed attempt's files make way for the doubted answer's.
                    for f in sandbox.written() {
                        let _ = ctx.run.layout.remove_file(&dir.join(&f));
                    }
                    ctx.transcript.note(&format!(
                        "{model} failed ({kind}: {message}); the doubted answer before it is kept",
                        kind = e.kind,
                        message = crate::sanitize::fit(&e.message, 200),
                    ));
                    kept.restore(ctx, dir, stats)
                }
                None => Err(e),
            };
        };
        for f in sandbox.written() {
            let _ = ctx.run.layout.remove_file(&dir.join(&f));
        }
        ctx.transcript.note(&format!(
            "{model} failed ({kind}: {message}); the step is asked of {to}",
            kind = e.kind,
            message = crate::sanitize::fit(&e.message, 200),
            to = to.model
        ));
        stats
            .escalations
            .push((model.to_string(), to.model.clone()));
        rungs += 1;
        rung = Some(to);
    }
}

/// An accepted answer that was doubted, its files read and removed while a stronger model is
/// asked.
struct Doubted {
    done: (String, Vec<PathBuf>),
    files: Vec<(PathBuf, Vec<u8>)>,
    doubts: Vec<crate::manifest::Doubt>,
    answered_by: Option<(String, String)>,
}

impl Doubted {
    fn set_aside(
        ctx: &JobCtx<'_>,
        dir: &Path,
        done: (String, Vec<PathBuf>),
        doubts: Vec<crate::manifest::Doubt>,
        answered_by: Option<(String, String)>,
    ) -> Doubted {
        let mut files = Vec::new();
        for f in &done.1 {
            let mut bytes = Vec::new();
            if let Ok(mut file) = ctx.run.layout.open_file(&dir.join(f))
                && std::io::Read::read_to_end(&mut file, &mut bytes).is_ok()
            {
                files.push((f.clone(), bytes));
            }
            let _ = ctx.run.layout.remove_file(&dir.join(f));
        }
        Doubted {
            done,
            files,
            doubts,
            answered_by,
        }
    }

    /// Its files written back, its doubts into the job's: the step's answer after all.
    fn restore(
        self,
        ctx: &JobCtx<'_>,
        dir: &Path,
        stats: &mut AgentStats,
    ) -> Result<(String, Vec<PathBuf>), JobError> {
        for (f, bytes) in &self.files {
            ctx.run
                .layout
                .write_file(&dir.join(f), bytes)
                .map_err(|e| {
                    JobError::new(ErrorKind::Io, msg!("cannot write {}: {e}", f.display()))
                })?;
        }
        if self.answered_by.is_some() {
            stats.answered_by = self.answered_by;
        }
        stats.doubts.extend(self.doubts);
        Ok(self.done)
    }
}

/// Whether a doubted answer is asked again of the next rung (`escalate_on` holds `doubt`,
/// as it does unless the settings give a list without it).
fn escalates_doubts(ctx: &JobCtx<'_>) -> bool {
    ctx.run
        .config
        .models
        .escalate_on
        .contains(&ErrorKind::Doubtful)
}

/// What zhi doubts in one step's accepted answer (docs/outputs.md#doubts): an extraction's
/// values against the step's text, or each declared prose file against its source. The
/// reduce step of a long document is judged by its pieces, not again.
fn step_doubts(
    ctx: &JobCtx<'_>,
    dir: &Path,
    part: &str,
    source: Option<&str>,
    written: &[PathBuf],
) -> Vec<crate::manifest::Doubt> {
    let (job, skill) = (ctx.job, ctx.skill);
    let Some(source) = source else {
        return Vec::new();
    };
    if let Ok(Some(schema)) = job_schema(ctx) {
        let file = skill
            .direct_output(&job.args)
            .unwrap_or_else(|| crate::skills::schema::EXTRACTED_FILE.to_string());
        let Some(object) = ctx
            .run
            .layout
            .read_to_string(&dir.join(&file))
            .ok()
            .and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok())
        else {
            return Vec::new();
        };
        let stop = || ctx.run.cancel.is_cancelled();
        return crate::agent::doubts::extraction(source, &object, &schema.fields, &stop);
    }
    if part.starts_with("reduce") {
        return Vec::new();
    }
    let expected = Expected::of(skill, &job.args, Some(Arc::from(source)));
    let mut out = Vec::new();
    for accept in &expected.declared {
        let Some(found) = crate::agent::outputs::find_written(&accept.file, written) else {
            continue;
        };
        if let Ok(text) = ctx.run.layout.read_to_string(&dir.join(found)) {
            out.extend(accept.doubts(&text));
        }
    }
    out
}

/// Whether a failure is about the answer (so a stronger model may do better): not the key,
/// the quota, rate limits or the network.
fn escalates(ctx: &JobCtx<'_>, e: &JobError, from: &str, to: &Rung) -> bool {
    match e.kind {
        ErrorKind::MissingOutput | ErrorKind::Truncated | ErrorKind::InvalidOutput => true,
        kind if ctx.run.config.models.escalate_on.contains(&kind) => true,
        ErrorKind::ContextTooLong => {
            let budget = |m: &str| ctx.run.config.models.budget(m).context_window;
            budget(&to.model) > budget(from)
        }
        _ => false,
    }
}

/// [`ask`] on one model: the job's own (`rung` none) or a rung of the ladder.
#[allow(clippy::too_many_arguments)]
async fn ask_on(
    ctx: &JobCtx<'_>,
    sandbox: &Arc<Sandbox>,
    part: &str,
    message: String,
    source: Option<Arc<str>>,
    require: bool,
    stats: &mut AgentStats,
    rung: Option<&Rung>,
) -> Result<(String, Vec<PathBuf>), JobError> {
    let (job, skill) = (ctx.job, ctx.skill);
    let sandbox = sandbox.clone();
    let mut expected = Expected::of(skill, &job.args, source.clone());
    for a in &mut expected.declared {
        *a = a.clone().with_parts(&ctx.inputs);
    }
    let env = agent_env(ctx, &sandbox, part, expected.declared.clone(), rung);
    if let Some(schema) = job_schema(ctx)? {
        let file = skill
            .direct_output(&job.args)
            .unwrap_or_else(|| crate::skills::schema::EXTRACTED_FILE.to_string());
        let system = structured::system_prompt(&skill.system_prompt);
        let server = rung.map_or(ctx.run.server.as_ref(), |r| r.server.as_ref());
        let kind = server.and_then(|s| s.kind.as_deref());
        let base = rung.map_or(ctx.run.config.api.base_url.as_str(), |r| {
            r.client.base_url()
        });
        let format = schema.response_format(kind, base);
        let message = format!("{message}{}", structured::task(&schema, &format));
        let ask = DirectAsk {
            name: skill.name.clone(),
            system,
            user: message,
        };
        structured::run(&env, ask, &schema, format, &file, stats).await?;
        return Ok((String::new(), sandbox.written()));
    }
    if let Some(file) = skill.direct_output(&job.args)
        && let Some(accept) = expected.declared.iter().find(|a| a.file == file)
    {
        runner::run_direct(&env, DirectAsk::of(skill, &file, message), accept, stats).await?;
        return Ok((String::new(), sandbox.written()));
    }
    let answer = runner::run_skill(&env, skill, message, Vec::new(), stats, &expected).await?;
    if expected.declared.is_empty() {
        if sandbox.written().is_empty() {
            // The answer of a skill that declares nothing is its result: judged like any
            // declared file (docs/skills.md#declared-outputs).
            let accept = Acceptance::new(skill, &job.args, "response.md", source);
            if let Some(problem) = accept.answer(&answer) {
                let reason = problem.describe("response.md");
                return Err(JobError::new(
                    ErrorKind::MissingOutput,
                    msg!("the model wrote no file, and {reason}"),
                ));
            }
            let target = sandbox
                .check_write("response.md")
                .map_err(|r| JobError::new(ErrorKind::Io, r.message().to_string()))?;
            sandbox
                .write_new(&target, answer.as_bytes())
                .map_err(|e| JobError::new(ErrorKind::Io, msg!("cannot write response.md: {e}")))?;
        }
    } else if require {
        let problems = expected.problems(&env, &sandbox.written());
        if !problems.is_empty() {
            let list: Vec<String> = problems.iter().map(|(f, p)| p.describe(f)).collect();
            return Err(JobError::new(ErrorKind::MissingOutput, list.join("; ")));
        }
    }
    Ok((answer, sandbox.written()))
}

/// The schema of an extraction job (docs/extract.md): the skill's own, or the file its
/// argument names.
pub(super) fn job_schema(ctx: &JobCtx<'_>) -> Result<Option<Schema>, JobError> {
    let Some(spec) = ctx.skill.schema() else {
        return Ok(None);
    };
    let bad = |why: String| JobError::new(ErrorKind::InputError, why);
    let value = match spec {
        SchemaSpec::Inline(v) => v.clone(),
        SchemaSpec::Arg(name) => {
            let path = ctx.job.arg_path(name).ok_or_else(|| {
                bad(msg!(
                    "skill `{skill}` takes its schema from the argument `{name}`: give it with -a {name}=FILE",
                    skill = ctx.skill.name
                ))
            })?;
            crate::skills::schema::read_schema_file(&path).map_err(bad)?
        }
    };
    Schema::new(value).map(Some).map_err(bad)
}

/// The sandbox of one request of the job: writes go to `dir` (created), the job's inputs and
/// the skill's resources are readable.
fn job_sandbox(ctx: &JobCtx<'_>, dir: &Path) -> Result<Arc<Sandbox>, JobError> {
    let (run, job, skill) = (ctx.run, ctx.job, ctx.skill);
    let opened = run
        .layout
        .folder(dir, true)
        .map_err(|e| JobError::new(ErrorKind::Io, msg!("cannot create {}: {e}", dir.display())))?;
    let mut builder = Sandbox::builder(dir)
        .opened(opened)
        .exclude(run.layout.output_dir());
    if job.is_dir {
        builder = builder.input_dir(job.input.clone(), job.path.clone());
    } else {
        builder = builder.input(job.input.clone(), job.path.clone());
    }
    for (_, display, path) in &job.extra_inputs {
        builder = builder.input(display.clone(), path.clone());
    }
    // An Agent Skill's references and assets are read like inputs (never written).
    if let Some(folder) = &skill.folder {
        for (display, path) in &folder.resources {
            // Pinned to the file the skill's walk saw; one without a stamp is never readable.
            if let Some(stamp) = folder.stamps.get(path) {
                builder = builder.pinned(display.clone(), path.clone(), *stamp);
            }
        }
    }
    builder
        .build()
        .map(Arc::new)
        .map_err(|e| JobError::new(ErrorKind::Io, e.to_string()))
}

/// What the agent needs for one request of the job.
fn agent_env(
    ctx: &JobCtx<'_>,
    sandbox: &Arc<Sandbox>,
    part: &str,
    declared: Vec<Acceptance>,
    rung: Option<&Rung>,
) -> AgentEnv {
    let (run, job, skill) = (ctx.run, ctx.job, ctx.skill);
    let model = rung.map_or_else(|| run.model(job), |r| r.model.clone());
    let budget = run.config.models.budget(&model);
    let server = rung.map_or(run.server.as_ref(), |r| r.server.as_ref());
    AgentEnv {
        client: Arc::new(rung.map_or_else(|| run.client.clone(), |r| r.client.clone())),
        skills: run.skills.clone(),
        toolbox: run.toolbox.clone(),
        tools: ToolEnv {
            sandbox: sandbox.clone(),
            reader: run.reader.clone(),
            flags: run.flags.clone(),
            declared: Arc::new(declared),
        },
        model,
        max_tokens: Some(budget.max_output),
        temperature: run.config.models.temperature,
        // A small local model at temperature 0 loops on one line until the length limit;
        // llama.cpp's repetition penalty stops that. Other servers get what they expect.
        repeat_penalty: server
            .filter(|s| s.kind.as_deref() == Some("llama.cpp"))
            .map(|_| LLAMA_CPP_REPEAT_PENALTY),
        // Servers that described themselves (llama.cpp, vLLM, Ollama) take OpenAI's
        // frequency penalty; known providers get requests as their documentation shows.
        retry_penalty: server.map(|_| RETRY_FREQUENCY_PENALTY),
        cancel: run.cancel.clone(),
        label: job.input.clone(),
        transcript: ctx.transcript.clone(),
        // Only a direct request can go in a batch: the agent loop needs its tools' results
        // between turns.
        // An escalated request goes in a batch too when its model is on the run's server.
        batch: run
            .batch
            .as_ref()
            .filter(|b| b.is_active() && skill.direct_output(&job.args).is_some())
            .filter(|_| rung.is_none_or(|r| r.same_server))
            .map(|b| crate::batch::Ticket::new(b.clone(), job.id.as_str(), part)),
        // Tokens show in the progress display as each request ends.
        spent: Some(run.progress.tokens.clone()),
    }
}
