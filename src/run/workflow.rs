//! A workflow job (docs/skills.md#workflows): the skill's steps, each run when the steps it
//! needs have ended, their outputs placed in the job's folder.
//!
//! A fixed sequence is not the model's to choose: a step runs another skill in that skill's own
//! mode (a direct skill is one request on the text its arguments name) or is one direct request
//! of the workflow's own (`prompt:`), given the job's document and the outputs of the steps it
//! needs. Steps whose inputs are ready run at once, the first in the job's slot and the others
//! in slots that are free, never waiting for one. Each step works in its own folder under the
//! job's staging (`.steps/<id>`), so two steps never see each other's files; its declared
//! output is then moved to the name the workflow gives it.

use super::ask::JobCtx;
use super::chunked::ChunkState;
use super::ladder::ask;
use super::message::{language_line, push_args, task_line};
use super::text::run_text;
use crate::agent::runner::{AgentStats, document_block};
use crate::error::{ErrorKind, JobError};
use crate::judge::declared;
use crate::layout::OutputLayout;
use crate::manifest::StepRecord;
use crate::plan::cache::JobCache;
use crate::plan::{Job, JobId};
use crate::skills::{ArgType, OutputSpec, Skill, Step, StepRun};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the steps work, inside the job's staging; removed before the job is committed.
pub(super) const STEPS_DIR: &str = ".steps";

/// How a step ended, as the steps after it see it.
#[derive(Debug, Clone)]
struct Ended {
    succeeded: bool,
    /// The files it left in the job's folder (relative), the first being its output.
    outputs: Vec<String>,
    /// The text of its output (for a `for_each` step, every document's, each under its name).
    text: Option<String>,
    /// Its texts one by one (a `for_each` step's, one per document).
    pieces: Vec<String>,
}

/// What one step came to.
struct StepResult {
    record: StepRecord,
    ended: Ended,
    stats: AgentStats,
    /// A failure that fails the job (a step not marked optional, or one that aborts the run).
    fatal: Option<JobError>,
}

/// Run the steps of `ctx.skill` for the job whose document is `source` (none for a folder).
pub(super) async fn run(
    ctx: &JobCtx<'_>,
    cache: &JobCache,
    source: Option<Arc<str>>,
    staging: &Path,
    stats: &mut AgentStats,
    records: &mut Vec<StepRecord>,
) -> Result<(), JobError> {
    let (run, job, workflow) = (ctx.run, ctx.job, ctx.skill);
    let steps = &workflow.steps;
    run.layout.create_dir(staging).map_err(|e| {
        JobError::new(
            ErrorKind::Io,
            msg!("cannot create {}: {e}", staging.display()),
        )
    })?;
    run.progress.add_pieces(job.id.as_str(), steps.len() as u64);
    let mut ended: BTreeMap<String, Ended> = BTreeMap::new();
    while ended.len() < steps.len() {
        let ready: Vec<&Step> = steps
            .iter()
            .filter(|s| !ended.contains_key(&s.id))
            .filter(|s| s.dependencies().iter().all(|d| ended.contains_key(d)))
            .collect();
        if ready.is_empty() {
            // `skills validate` and every load refuse cycles; this is a guard, not a path.
            return Err(JobError::new(
                ErrorKind::Internal,
                msg!("the workflow's steps wait for each other"),
            ));
        }
        // The first ready step runs in the job's own slot; the others now only where a slot
        // is free, else in a later round.
        let mut now = vec![ready[0]];
        let mut extra = 0;
        for s in &ready[1..] {
            if run.slots.try_acquire() {
                extra += 1;
                now.push(s);
            }
        }
        let results = futures_util::future::join_all(
            now.iter()
                .map(|step| run_step(ctx, cache, source.clone(), staging, step, &ended)),
        )
        .await;
        for _ in 0..extra {
            run.slots.release();
        }
        let mut fatal = None;
        for (step, r) in now.iter().zip(results) {
            stats.add(&r.stats);
            ctx.transcript.note(&format!(
                "step `{}`: {}{}",
                step.id,
                r.record.status,
                r.record
                    .reason
                    .as_deref()
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default()
            ));
            run.progress.piece_done(job.id.as_str(), true);
            records.push(r.record);
            ended.insert(step.id.clone(), r.ended);
            if fatal.is_none() {
                fatal = r.fatal;
            }
        }
        if let Some(e) = fatal {
            return Err(e);
        }
    }
    let _ = run.layout.remove_tree(&staging.join(STEPS_DIR));
    Ok(())
}

/// One step, to its record. Never an `Err`: how it ended is in the result.
async fn run_step(
    ctx: &JobCtx<'_>,
    cache: &JobCache,
    source: Option<Arc<str>>,
    staging: &Path,
    step: &Step,
    ended: &BTreeMap<String, Ended>,
) -> StepResult {
    let mut stats = AgentStats::default();
    let mut record = StepRecord {
        id: step.id.clone(),
        skill: step.skill().unwrap_or_default().to_string(),
        status: "succeeded".into(),
        requests: 0,
        tokens: Default::default(),
        outputs: Vec::new(),
        reason: None,
    };
    let outcome = match skip_reason(ctx.job, step, ended) {
        Some(why) => Err(Skip(why)),
        None => step_work(ctx, cache, source, staging, step, ended, &mut stats)
            .await
            .map_err(Fail),
    };
    record.requests = stats.requests;
    record.tokens = stats.tokens;
    let (ended, fatal) = match outcome {
        Ok(done) => {
            record.outputs = done.outputs.clone();
            (done, None)
        }
        Err(stop) => {
            let (status, reason, fatal) = match stop {
                Skip(why) => ("skipped", why, None),
                Fail(e) => {
                    let fatal =
                        (!step.optional || e.kind.aborts_run() || e.kind == ErrorKind::Cancelled)
                            .then(|| {
                                JobError::new(
                                    e.kind,
                                    msg!(
                                        "step `{id}` failed: {reason}",
                                        id = step.id,
                                        reason = e.message
                                    ),
                                )
                            });
                    ("failed", e.message.clone(), fatal)
                }
            };
            record.status = status.into();
            record.reason = Some(reason);
            let ended = Ended {
                succeeded: false,
                outputs: Vec::new(),
                text: None,
                pieces: Vec::new(),
            };
            (ended, fatal)
        }
    };
    StepResult {
        record,
        ended,
        stats,
        fatal,
    }
}

/// Why a step did not end well.
enum Stop {
    /// It did not run.
    Skip(String),
    /// It ran and failed.
    Fail(JobError),
}
use Stop::{Fail, Skip};

/// A step is skipped when its condition does not hold, or when a step whose output its
/// arguments name did not succeed (a `needs` that did not run is left out of a prompt step's
/// inputs instead).
fn skip_reason(job: &Job, step: &Step, ended: &BTreeMap<String, Ended>) -> Option<String> {
    if let Some(c) = &step.when
        && !c.holds(&job.args)
    {
        return Some(format!("`when: {}` does not hold", c.text));
    }
    let named = step
        .args
        .values()
        .chain(step.output.iter())
        .flat_map(|t| crate::skills::steps::step_refs(t))
        .map(|(id, _)| id);
    for id in named {
        if ended.get(&id).is_some_and(|e| !e.succeeded) {
            return Some(format!("it needs step `{id}`, which did not succeed"));
        }
    }
    None
}

/// The values a step's templates may use: the job's arguments, `file` (the job's document) and
/// `steps.ID.output` / `steps.ID.text` of the steps that ended.
fn template_values(job: &Job, ended: &BTreeMap<String, Ended>) -> BTreeMap<String, String> {
    let mut v = job.args.clone();
    v.entry("file".into()).or_insert_with(|| job.input.clone());
    for (id, e) in ended {
        if let Some(o) = e.outputs.first() {
            v.insert(format!("steps.{id}.output"), o.clone());
        }
        if let Some(t) = &e.text {
            v.insert(format!("steps.{id}.text"), t.clone());
        }
    }
    v
}

/// `{name}` replaced by its value, the value kept as it is (a template of a skill's file names
/// is [`crate::skills::fill_template`]'s job: that one makes values safe as names).
fn fill(template: &str, values: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let key = &rest[open + 1..open + close];
        out.push_str(&rest[..open]);
        match values.get(key) {
            Some(v) => out.push_str(v),
            None => out.push_str(&rest[open..=open + close]),
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out
}

async fn step_work(
    ctx: &JobCtx<'_>,
    cache: &JobCache,
    source: Option<Arc<str>>,
    staging: &Path,
    step: &Step,
    ended: &BTreeMap<String, Ended>,
    stats: &mut AgentStats,
) -> Result<Ended, JobError> {
    let values = template_values(ctx.job, ended);
    let dir = staging.join(STEPS_DIR).join(&step.id);
    let layout = &ctx.run.layout;
    let _ = layout.remove_tree(&dir);
    // Output names are file names: values in them are made safe as the skill's own are.
    let output = step
        .output
        .as_deref()
        .map(|o| crate::skills::fill_template(o, &ctx.job.args));
    match &step.run {
        StepRun::Skill(name) => {
            let child = ctx.run.skills.get(name).ok_or_else(|| {
                JobError::new(ErrorKind::InputError, msg!("unknown skill `{name}`"))
            })?;
            if step.for_each_document {
                for_each(ctx, cache, staging, step, child, &values, stats).await
            } else {
                let input = step_input(ctx, source, staging, step, child, &values, ended).await?;
                let declared = child.declared_files(&input.args);
                let files = run_child(ctx, cache, &dir, step, child, input, stats).await?;
                place(layout, staging, &dir, output.as_deref(), &declared, &files)
            }
        }
        StepRun::Prompt { prompt, task } => {
            let file = output.unwrap_or_default();
            prompt_step(
                ctx,
                source,
                &dir,
                step,
                (prompt, task.as_deref(), &file),
                &values,
                ended,
                stats,
            )
            .await?;
            place_one(layout, staging, &dir, &file, &file)
        }
        StepRun::Join(ids) => {
            let file = output.unwrap_or_default();
            let mut text = String::new();
            for id in ids {
                if let Some(t) = ended.get(id).and_then(|e| e.text.as_deref()) {
                    if !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(t.trim());
                }
            }
            text.push('\n');
            layout
                .write_file(&dir.join(&file), text.as_bytes())
                .map_err(|e| JobError::new(ErrorKind::Io, msg!("cannot write {file}: {e}")))?;
            place_one(layout, staging, &dir, &file, &file)
        }
    }
}

/// What a skill step runs on: its arguments filled, and the file its primary argument names
/// (the job's document, a file argument of the job, or an earlier step's output) with its text.
struct StepInput {
    args: BTreeMap<String, String>,
    display: String,
    path: PathBuf,
    text: String,
    extra_inputs: Vec<(String, String, PathBuf)>,
}

async fn step_input(
    ctx: &JobCtx<'_>,
    source: Option<Arc<str>>,
    staging: &Path,
    step: &Step,
    child: &Skill,
    values: &BTreeMap<String, String>,
    ended: &BTreeMap<String, Ended>,
) -> Result<StepInput, JobError> {
    let job = ctx.job;
    let (args, primary) = step_args(step, child, values, &job.input, false);
    let mut extra_inputs = Vec::new();
    let mut main = None;
    for a in child.input.args.iter().filter(|a| a.kind == ArgType::File) {
        let Some(value) = args.get(&a.name).filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        let path = resolve_file(job, staging, value, ended).ok_or_else(|| {
            let (id, arg) = (&step.id, &a.name);
            JobError::new(
                ErrorKind::InputError,
                msg!("step `{id}`: `{arg}: {value}` names no file of this job"),
            )
        })?;
        if a.name == primary {
            main = Some((value.clone(), path));
        } else {
            extra_inputs.push((a.name.clone(), value.clone(), path));
        }
    }
    let (display, path) = main.ok_or_else(|| {
        let (id, arg) = (&step.id, &primary);
        JobError::new(
            ErrorKind::InputError,
            msg!("step `{id}` gives `{arg}` no file"),
        )
    })?;
    let text = match source {
        Some(src) if path == job.path => src.to_string(),
        _ => read_text(ctx, &path).await?,
    };
    Ok(StepInput {
        args,
        display,
        path,
        text,
        extra_inputs,
    })
}

/// A skill step's arguments: its templates filled, its skill's first file argument the job's
/// document unless the step names another (`document`; always it, for each document), and the
/// skill's defaults for the rest. Also the name of that first argument.
fn step_args(
    step: &Step,
    child: &Skill,
    values: &BTreeMap<String, String>,
    document: &str,
    always: bool,
) -> (BTreeMap<String, String>, String) {
    let mut args: BTreeMap<String, String> = step
        .args
        .iter()
        .map(|(k, v)| (k.clone(), fill(v, values)))
        .collect();
    let primary = child
        .primary_arg()
        .map(|a| a.name.clone())
        .unwrap_or_else(|| "file".into());
    if always || !args.contains_key(&primary) {
        args.insert(primary.clone(), document.to_string());
    }
    for a in &child.input.args {
        if let Some(d) = &a.default {
            args.entry(a.name.clone()).or_insert_with(|| d.clone());
        }
    }
    (args, primary)
}

/// The file a step's file argument names.
fn resolve_file(
    job: &Job,
    staging: &Path,
    value: &str,
    ended: &BTreeMap<String, Ended>,
) -> Option<PathBuf> {
    if value == job.input {
        return Some(job.path.clone());
    }
    if let Some((_, _, p)) = job.extra_inputs.iter().find(|(_, d, _)| d == value) {
        return Some(p.clone());
    }
    ended
        .values()
        .flat_map(|e| e.outputs.iter())
        .find(|o| o.as_str() == value)
        .map(|o| staging.join(o))
}

async fn read_text(ctx: &JobCtx<'_>, path: &Path) -> Result<String, JobError> {
    let reader = ctx.run.reader.clone();
    let p = path.to_path_buf();
    let (text, _) = tokio::task::spawn_blocking(move || reader.read_document(&p))
        .await
        .map_err(|e| JobError::new(ErrorKind::ExtractFailed, msg!("extraction crashed: {e}")))??;
    Ok(text)
}

/// The job a skill step is: the workflow's job seen from the step (its own id, arguments and
/// document), so that pieces, checkpoints and batch requests of two steps never meet.
fn step_job(job: &Job, step: &Step, child: &Skill, input: &StepInput) -> Job {
    let scope = format!("{}#{}", job.id, step.id);
    Job {
        id: JobId::new(&child.name, &scope, &input.args),
        skill: child.name.as_str().into(),
        input: input.display.clone(),
        path: input.path.clone(),
        is_dir: false,
        args: input.args.clone(),
        extra_inputs: input.extra_inputs.clone(),
        output_rel: job.output_rel.clone(),
        problem: None,
    }
}

/// The step's own cache: its pieces are checkpointed under a key of the job's and the step's.
fn step_cache(cache: &JobCache, scope: &str) -> JobCache {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    crate::plan::hash_pair(
        &mut h,
        b"step\0",
        cache.cache_key.as_deref().unwrap_or("nokey"),
        scope,
    );
    JobCache {
        cache_key: Some(hex::encode(h.finalize())),
        previous: None,
        cached: false,
        input_stamp: None,
        unchanged: false,
        outputs_seen: None,
        ..cache.clone()
    }
}

/// Run `child` on the step's input in `dir`; the files it wrote there.
async fn run_child(
    ctx: &JobCtx<'_>,
    cache: &JobCache,
    dir: &Path,
    step: &Step,
    child: &Skill,
    input: StepInput,
    stats: &mut AgentStats,
) -> Result<Vec<PathBuf>, JobError> {
    let sub_job = step_job(ctx.job, step, child, &input);
    let sub = JobCtx {
        run: ctx.run,
        job: &sub_job,
        skill: child,
        transcript: ctx.transcript.clone(),
        inputs: Vec::new(),
        rungs: ctx.rungs,
        only: ctx.only,
    };
    let sub_cache = step_cache(cache, sub_job.id.as_str());
    let mut chunks = ChunkState::default();
    if child.is_workflow() {
        let mut inner = Vec::new();
        Box::pin(run(
            &sub,
            &sub_cache,
            Some(Arc::from(input.text.as_str())),
            dir,
            stats,
            &mut inner,
        ))
        .await?;
    } else {
        run_text(&sub, &sub_cache, &input.text, dir, stats, &mut chunks)
            .await
            .map_err(super::ladder::Stop::into_error)?;
    }
    if let Some(c) = &chunks.checkpoint {
        let _ = ctx.run.layout.remove_tree(c);
    }
    Ok(crate::plan::cache::files_under(dir).unwrap_or_default())
}

/// Move a skill step's declared files from its folder into the job's folder: under the step's
/// `output` name when it has one (a skill declaring one file), else under their own names.
fn place(
    layout: &OutputLayout,
    staging: &Path,
    dir: &Path,
    output: Option<&str>,
    declared: &[String],
    written: &[PathBuf],
) -> Result<Ended, JobError> {
    let mut outputs = Vec::new();
    let mut text = String::new();
    for (i, name) in declared.iter().enumerate() {
        let Some(found) = declared::find_written(name, written) else {
            continue;
        };
        let target = match (output, i) {
            (Some(o), 0) => o.to_string(),
            _ => name.clone(),
        };
        let one = place_one(layout, staging, dir, &found.to_string_lossy(), &target)?;
        if let Some(t) = one.text {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&t);
        }
        outputs.extend(one.outputs);
    }
    Ok(Ended {
        succeeded: true,
        outputs,
        pieces: (!text.is_empty())
            .then(|| text.clone())
            .into_iter()
            .collect(),
        text: (!text.is_empty()).then_some(text),
    })
}

/// Move `dir/from` to `staging/to`: a name the job's folder already has is an error (two steps
/// may not write one file). The move, and the read of what was moved, are beneath the output
/// folder's handle: a link in the way is refused, never followed.
fn place_one(
    layout: &OutputLayout,
    staging: &Path,
    dir: &Path,
    from: &str,
    to: &str,
) -> Result<Ended, JobError> {
    let file = to;
    let io = |e: std::io::Error| JobError::new(ErrorKind::Io, msg!("cannot place {file}: {e}"));
    let target = staging.join(to);
    if target.exists() {
        return Err(JobError::new(
            ErrorKind::InputError,
            msg!("two steps write {file}"),
        ));
    }
    layout.rename(&dir.join(from), &target).map_err(io)?;
    let text = layout.read_to_string(&target).ok();
    Ok(Ended {
        succeeded: true,
        outputs: vec![to.to_string()],
        pieces: text.iter().cloned().collect(),
        text,
    })
}

/// A `for_each: document` step of a folder job: the skill once per document of the folder,
/// each output kept as `<step id>/<document>/<file>`.
async fn for_each(
    ctx: &JobCtx<'_>,
    cache: &JobCache,
    staging: &Path,
    step: &Step,
    child: &Skill,
    values: &BTreeMap<String, String>,
    stats: &mut AgentStats,
) -> Result<Ended, JobError> {
    let job = ctx.job;
    if !job.is_dir {
        return Err(JobError::new(
            ErrorKind::InputError,
            msg!(
                "step `{id}` runs for each document, but the job is not a folder",
                id = step.id
            ),
        ));
    }
    let docs = crate::plan::cache::folder_files(&job.path, ctx.run.layout.output_dir());
    let mut outputs = Vec::new();
    let mut text = String::new();
    let mut pieces = Vec::new();
    let mut failures = Vec::new();
    for rel in &docs {
        let display = format!(
            "{}/{}",
            job.input.trim_end_matches('/'),
            rel.to_string_lossy()
        );
        let path = job.path.join(rel);
        let doc_text = match read_text(ctx, &path).await {
            Ok(t) if !t.trim().is_empty() => t,
            Ok(_) => {
                failures.push(format!("{display}: no text"));
                continue;
            }
            Err(e) => {
                failures.push(format!("{display}: {}", e.message));
                continue;
            }
        };
        let (args, _) = step_args(step, child, values, &display, true);
        let input = StepInput {
            args,
            display: display.clone(),
            path,
            text: doc_text,
            extra_inputs: Vec::new(),
        };
        let dir = staging.join(STEPS_DIR).join(&step.id).join(rel);
        let each = Step {
            id: format!("{}/{}", step.id, rel.to_string_lossy()),
            ..step.clone()
        };
        let declared = child.declared_files(&input.args);
        match run_child(ctx, cache, &dir, &each, child, input, stats).await {
            Ok(written) => {
                for name in declared {
                    let Some(found) = declared::find_written(&name, &written) else {
                        continue;
                    };
                    let to = format!("{}/{}/{name}", step.id, rel.to_string_lossy());
                    let one = place_one(
                        &ctx.run.layout,
                        staging,
                        &dir,
                        &found.to_string_lossy(),
                        &to,
                    )?;
                    if let Some(t) = one.text {
                        text.push_str(&format!("## {display}\n\n{}\n\n", t.trim()));
                        pieces.push(t);
                    }
                    outputs.extend(one.outputs);
                }
            }
            Err(e) if e.kind.aborts_run() || e.kind == ErrorKind::Cancelled => return Err(e),
            Err(e) => failures.push(format!("{display}: {}", e.message)),
        }
    }
    if outputs.is_empty() {
        let reason = if failures.is_empty() {
            msg!("the folder has no documents")
        } else {
            failures.join("; ")
        };
        return Err(JobError::new(ErrorKind::MissingOutput, reason));
    }
    if !failures.is_empty() {
        text.push_str(&format!(
            "## Not included\n\n{}\n",
            failures
                .iter()
                .map(|f| format!("- {f}"))
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    Ok(Ended {
        succeeded: true,
        outputs,
        text: Some(text),
        pieces,
    })
}

/// The skill a prompt step runs as: the workflow with the step's prompt, one document for
/// input, no tools, and `file` as its one output.
fn step_skill(
    workflow: &Skill,
    (prompt, task, file): (&str, Option<&str>, &str),
    values: &BTreeMap<String, String>,
) -> Skill {
    Skill {
        system_prompt: fill(prompt, values),
        // One request on what it is given, whatever the job's input is (a folder too).
        input: crate::skills::InputSpec {
            description: None,
            args: vec![crate::skills::ArgSpec {
                name: "file".into(),
                kind: ArgType::File,
                required: true,
                default: None,
                description: None,
            }],
        },
        tools: Vec::new(),
        steps: Vec::new(),
        instruction: None,
        instruction_in: Default::default(),
        // One request; a workflow that renders its document whole (`chunking: map`) has its
        // answer judged as such a rendering, not as a condensing its inputs would be copied
        // into.
        chunking: match workflow.chunking {
            crate::skills::Chunking::Map => crate::skills::Chunking::Map,
            _ => crate::skills::Chunking::None,
        },
        output: Some(OutputSpec {
            description: Some(task.map_or_else(
                || format!("{file}, the text your instructions ask for"),
                |t| fill(t, values),
            )),
            files: vec![file.to_string()],
            language: workflow.output.as_ref().and_then(|o| o.language.clone()),
            ..OutputSpec::default()
        }),
        ..workflow.clone()
    }
}

/// The outputs of the steps a prompt step needs that succeeded, by name, in the order the
/// workflow lists them.
fn step_inputs(step: &Step, ended: &BTreeMap<String, Ended>) -> Vec<(String, String)> {
    step.dependencies()
        .iter()
        .filter_map(|id| ended.get(id).map(|e| (id, e)))
        .filter(|(_, e)| e.succeeded)
        .filter_map(|(id, e)| {
            // One file by its name; a step of many (one per document) by the step's.
            let name = match e.outputs.as_slice() {
                [one] => one.clone(),
                _ => id.to_string(),
            };
            e.text.clone().map(|t| (name, t))
        })
        .collect()
}

/// The workflow's own direct request: its instructions, the job's document (when there is one
/// and it fits beside the rest), the outputs of the steps it needs, and last what to answer
/// with. Its answer becomes `file` in `dir`.
#[allow(clippy::too_many_arguments)]
async fn prompt_step(
    ctx: &JobCtx<'_>,
    source: Option<Arc<str>>,
    dir: &Path,
    step: &Step,
    (prompt, task, file): (&str, Option<&str>, &str),
    values: &BTreeMap<String, String>,
    ended: &BTreeMap<String, Ended>,
    stats: &mut AgentStats,
) -> Result<(), JobError> {
    let (run, job, workflow) = (ctx.run, ctx.job, ctx.skill);
    let own = step_skill(workflow, (prompt, task, file), values);
    let inputs = step_inputs(step, ended);
    let budget = crate::chunk::piece_budget(
        run.config.request_budget(&run.model(job)),
        crate::skills::Chunking::None,
        true,
    );
    let given: u32 = inputs.iter().map(|(_, t)| crate::chunk::tokens(t)).sum();
    let doc_tokens = source.as_deref().map_or(0, crate::chunk::tokens);
    // The steps' outputs come first; the document goes with them while they fit together.
    let with_doc = source.is_some() && given + doc_tokens <= budget;
    if given > budget || (given == 0 && !with_doc && source.is_some()) {
        return Err(JobError::new(
            ErrorKind::TooLarge,
            msg!(
                "step `{id}`: its inputs are about {estimate} tokens; one request takes about {budget}",
                id = step.id,
                estimate = given + doc_tokens
            ),
        ));
    }
    let mut message = format!("Input document: {}\n", job.input);
    push_args(&mut message, job);
    message.push('\n');
    let mut all = String::new();
    if with_doc && let Some(src) = &source {
        message.push_str(&document_block(&job.input, src));
        message.push('\n');
        all.push_str(src);
    }
    for (name, text) in &inputs {
        message.push_str(&document_block(name, text));
        message.push('\n');
        all.push('\n');
        all.push_str(text);
    }
    message.push_str(&language_line(job, source.as_deref().unwrap_or(&all)));
    message.push_str(&task_line(job, &own, "the document above"));
    let mut parts: Vec<Arc<str>> = step
        .dependencies()
        .iter()
        .filter_map(|id| ended.get(id))
        .flat_map(|e| e.pieces.iter())
        .map(|t| Arc::from(t.as_str()))
        .collect();
    if with_doc && let Some(src) = &source {
        parts.push(src.clone());
    }
    let sub = JobCtx {
        run,
        job,
        skill: &own,
        transcript: ctx.transcript.clone(),
        inputs: parts,
        rungs: ctx.rungs,
        only: None,
    };
    // A rendering of the whole document is judged against the document; any other answer
    // against all it was given.
    let judged = match &source {
        Some(src) if with_doc && own.chunking == crate::skills::Chunking::Map => src.clone(),
        _ => Arc::from(all.as_str()),
    };
    let part = format!("step-{}", step.id);
    ask(&sub, dir, &part, message, Some(judged), true, stats)
        .await
        .map_err(super::ladder::Stop::into_error)?;
    Ok(())
}
