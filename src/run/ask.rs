//! One request of a job to one model: the job's sandbox and agent environment, direct mode,
//! an extraction, or the agent loop. The ladder ([`super::ladder`]) asks through it once per
//! rung, for a whole document, a piece of a long one, or a workflow's step.

use super::context::{RunContext, Rung};
use crate::agent::runner::{self, AgentEnv, AgentStats, DirectAsk};
use crate::agent::sandbox::Sandbox;
use crate::agent::structured::{self, Schema};
use crate::agent::tools::ToolEnv;
use crate::agent::transcript::Transcript;
use crate::error::{ErrorKind, JobError};
use crate::judge::Part;
use crate::judge::accept::Acceptance;
use crate::judge::declared::Expected;
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
    /// An extraction asked for these top-level fields of its schema only (a routed job's
    /// fields the audit did not show; docs/escalation.md#the-guarantee-of---target).
    pub only: Option<&'a [String]>,
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

/// The job's skill asked once on `message`, of one model — the job's own (`rung` none) or a
/// rung of its ladder — in `sandbox`, with the job's inputs readable: one direct request when
/// the skill is direct, an extraction's structured request, else the agent loop. Returns the
/// last answer and the files written; whether they are kept is the judge's to say
/// ([`super::ladder`]).
pub(super) async fn ask_on(
    ctx: &JobCtx<'_>,
    sandbox: &Arc<Sandbox>,
    part: &str,
    message: String,
    source: Option<Arc<str>>,
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
        // A skill with an instruction is asked in the one user message that holds it
        // (docs/skills.md#direct-mode): no system prompt. The reduce request of its pieces'
        // results is framed, with the skill's instructions.
        let ask = match skill.direct_instruction(&job.args) {
            Some(_) if part_of(part) != Part::Reduce => DirectAsk {
                name: skill.name.clone(),
                system: String::new(),
                user: message,
            },
            _ => DirectAsk::of(skill, &file, message),
        };
        runner::run_direct(&env, ask, accept, stats).await?;
        return Ok((String::new(), sandbox.written()));
    }
    let answer = runner::run_skill(&env, skill, message, Vec::new(), stats, &expected).await?;
    Ok((answer, sandbox.written()))
}

/// What of the document a step's name says it is.
pub(super) fn part_of(name: &str) -> Part {
    if name.starts_with("reduce") {
        Part::Reduce
    } else if name.is_empty() || name.starts_with("step-") {
        Part::Whole
    } else {
        Part::Piece
    }
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
    let value = match ctx.only {
        Some(only) => narrowed(value, only),
        None => value,
    };
    Schema::new(value).map(Some).map_err(bad)
}

/// A schema's object with only the top-level properties `only` names (and required of them).
fn narrowed(mut value: serde_json::Value, only: &[String]) -> serde_json::Value {
    let keep = |k: &str| only.iter().any(|o| o == k);
    if let Some(props) = value
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        props.retain(|k, _| keep(k));
    }
    if let Some(required) = value
        .get_mut("required")
        .and_then(serde_json::Value::as_array_mut)
    {
        required.retain(|r| r.as_str().is_some_and(keep));
    }
    value
}

/// The sandbox of one request of the job: writes go to `dir` (created), the job's inputs and
/// the skill's resources are readable.
pub(super) fn job_sandbox(ctx: &JobCtx<'_>, dir: &Path) -> Result<Arc<Sandbox>, JobError> {
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
            allow_web: run.flags.allow_web,
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
