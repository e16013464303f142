//! The ladder (docs/escalation.md): one step asked of the job's model, its answer judged, and
//! on the judge's word kept, or asked again of the next rung, or failed. This is the one place
//! that reads a [`Verdict`]; it asks ([`super::ask`]) and judges ([`crate::judge`]) nothing
//! itself.

use super::ask::{JobCtx, Rungs, ask_on, job_sandbox, job_schema, part_of};
use super::context::Rung;
use crate::agent::runner::AgentStats;
use crate::error::{ErrorKind, JobError};
use crate::judge::accept::Acceptance;
use crate::judge::declared::Expected;
use crate::judge::{self, Asked, Judged, Verdict};
use crate::manifest::Doubt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a step left: its last answer as text and the files it wrote (relative to its
/// folder).
pub(super) type Done = (String, Vec<PathBuf>);

/// How a step ended without an answer to keep: typed, so that no caller steers by an error's
/// kind.
#[derive(Debug)]
pub(super) enum Stop {
    /// No answer to keep: the step, and its job, fail with this.
    Failed(JobError),
    /// Its request waits in a batch: the job is skipped this run and collected by a later one
    /// (docs/model-api.md#batch-mode).
    Waiting(JobError),
    /// The server said the request exceeds its context, and no rung left has a larger window:
    /// the document is to be split, or split smaller.
    TooLong(JobError),
}

impl Stop {
    /// The error a job that ends here records.
    pub(super) fn into_error(self) -> JobError {
        match self {
            Stop::Failed(e) | Stop::Waiting(e) | Stop::TooLong(e) => e,
        }
    }

    /// The step's failure as the ladder read it: a request queued in a batch waits, a context
    /// exceeded asks for a split, anything else fails.
    fn of(e: JobError) -> Stop {
        match e.kind {
            ErrorKind::BatchPending => Stop::Waiting(e),
            ErrorKind::ContextTooLong => Stop::TooLong(e),
            _ => Stop::Failed(e),
        }
    }
}

impl From<JobError> for Stop {
    fn from(e: JobError) -> Stop {
        Stop::Failed(e)
    }
}

/// What the ladder does after a verdict.
enum Next<'r> {
    /// The answer is the step's output (with its doubts, if any).
    Keep(Judged),
    /// The answer is doubted: kept aside while `to` is asked.
    ClimbDoubted(Judged, &'r Rung),
    /// The answer failed and `to` may do better.
    Climb(JobError, &'r Rung),
    /// The answer failed and no rung is left that may do better.
    Fail(JobError, Option<crate::judge::grounding::Extraction>),
}

/// Ask one step of the job's model, then of each rung of its ladder while the judge doubts
/// or fails the answer (and the failure is one a stronger model may mend). `part` names what
/// of the document this is (`piece-00003`, `reduce`, `step-x`; empty for the whole): with the
/// job's id it names the request in a batch. With `require`, the skill's declared outputs must
/// all be there. A skill that declares none and writes none has its answer saved as
/// `response.md`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn ask(
    ctx: &JobCtx<'_>,
    dir: &Path,
    part: &str,
    message: String,
    source: Option<Arc<str>>,
    require: bool,
    stats: &mut AgentStats,
) -> Result<Done, Stop> {
    let own = ctx.run.model(ctx.job);
    // The schema is read once for the step, not once a rung.
    let schema = job_schema(ctx)?;
    let ladder = ctx.run.ladder(ctx.job);
    let (mut rung, mut next): (Option<&Rung>, std::slice::Iter<'_, Rung>) = match ctx.rungs {
        Rungs::Ladder => (None, ladder.iter()),
        Rungs::Own => (None, [].iter()),
        Rungs::Top => (ladder.last(), [].iter()),
    };
    // Rungs climbed for this step: `esc1` names its first escalated request in a batch.
    let mut climbed = 0;
    // The last answer that was kept but doubted, set aside while a stronger model is asked:
    // it becomes the output again if that model fails.
    let mut doubted: Option<Doubted> = None;
    loop {
        let model = rung.map_or(own.as_str(), |r| r.model.as_str());
        let before = stats.tokens;
        let sandbox = job_sandbox(ctx, dir)?;
        let name = match rung {
            // Its own request in a batch: another model, another body.
            Some(_) => format!(
                "{part}{}esc{climbed}",
                if part.is_empty() { "" } else { "-" }
            ),
            None => part.to_string(),
        };
        let result = ask_on(
            ctx,
            &sandbox,
            &name,
            message.clone(),
            source.clone(),
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
        let (verdict, done) = match result {
            Ok(done) => (
                verdict(
                    ctx,
                    dir,
                    part,
                    source.as_deref(),
                    require,
                    schema.as_ref(),
                    &done,
                ),
                Some(done),
            ),
            Err(e) => (
                Verdict::Failed(judge::Failure::new(e.kind, e.message)),
                None,
            ),
        };
        match decide(ctx, verdict, model, &mut next) {
            Next::Keep(judged) => {
                let done = done.expect("a kept verdict judged an answer");
                return Ok(keep(ctx, &sandbox, done, judged, answered_by, stats)?);
            }
            Next::ClimbDoubted(judged, to) => {
                let done = done.expect("a doubted verdict judged an answer");
                ctx.transcript.note(&format!(
                    "{model}'s answer is doubted ({}); the step is asked of {to}",
                    crate::judge::doubts::one_line(&judged.doubts),
                    to = to.model
                ));
                doubted = Some(Doubted::set_aside(ctx, dir, done, judged, answered_by));
                rung = Some(to);
            }
            Next::Climb(e, to) => {
                for f in sandbox.written() {
                    let _ = ctx.run.layout.remove_file(&dir.join(&f));
                }
                ctx.transcript.note(&format!(
                    "{model} failed ({kind}: {message}); the step is asked of {to}",
                    kind = e.kind,
                    message = crate::sanitize::fit(&e.message, 200),
                    to = to.model
                ));
                rung = Some(to);
            }
            Next::Fail(e, extraction) => {
                return fail(ctx, dir, &sandbox, model, e, extraction, doubted, stats);
            }
        }
        // Climbed: the step is asked of the next rung.
        let to = rung.map_or_else(String::new, |r| r.model.clone());
        stats.decided.escalations.push((model.to_string(), to));
        climbed += 1;
    }
}

/// The step's answer kept: a reply written as its file, its doubts and grounding into the
/// job's decisions.
fn keep(
    ctx: &JobCtx<'_>,
    sandbox: &crate::agent::sandbox::Sandbox,
    done: Done,
    judged: Judged,
    answered_by: Option<(String, String)>,
    stats: &mut AgentStats,
) -> Result<Done, JobError> {
    let done = reply_as_file(ctx, sandbox, done)?;
    // A job whose any step was escalated names the stronger model (its tokens per model say
    // the rest).
    if answered_by.is_some() {
        stats.decided.answered_by = answered_by;
    }
    stats.decided.doubts.extend(judged.doubts);
    if let Some(found) = &judged.extraction
        && !found.ungrounded.is_empty()
    {
        let list = found.ungrounded.join(", ");
        ctx.transcript
            .note(&format!("values found nowhere in the document: {list}"));
    }
    if judged.extraction.is_some() {
        stats.decided.extraction = judged.extraction;
    }
    Ok(done)
}

/// The step failed on the last rung that may mend it: the doubted answer before it is kept if
/// there is one, else the step fails. A request queued in a batch waits for it, doubted answer
/// or not: the batch answers it, and a later run judges that answer.
#[allow(clippy::too_many_arguments)]
fn fail(
    ctx: &JobCtx<'_>,
    dir: &Path,
    sandbox: &crate::agent::sandbox::Sandbox,
    model: &str,
    e: JobError,
    extraction: Option<crate::judge::grounding::Extraction>,
    doubted: Option<Doubted>,
    stats: &mut AgentStats,
) -> Result<Done, Stop> {
    let stop = Stop::of(e);
    let (Some(kept), Stop::Failed(e) | Stop::TooLong(e)) = (doubted, &stop) else {
        if extraction.is_some() {
            stats.decided.extraction = extraction;
        }
        return Err(stop);
    };
    // The failed attempt's files make way for the doubted answer's.
    for f in sandbox.written() {
        let _ = ctx.run.layout.remove_file(&dir.join(&f));
    }
    ctx.transcript.note(&format!(
        "{model} failed ({kind}: {message}); the doubted answer before it is kept",
        kind = e.kind,
        message = crate::sanitize::fit(&e.message, 200),
    ));
    Ok(kept.restore(ctx, dir, stats)?)
}

/// The ladder's one reading of a verdict: keep, climb, or fail.
fn decide<'r>(
    ctx: &JobCtx<'_>,
    verdict: Verdict,
    model: &str,
    next: &mut std::slice::Iter<'r, Rung>,
) -> Next<'r> {
    match verdict {
        Verdict::Kept(judged) => Next::Keep(judged),
        Verdict::Doubted(judged) if escalates_doubts(ctx) => match next.next() {
            Some(to) => Next::ClimbDoubted(judged, to),
            None => Next::Keep(judged),
        },
        Verdict::Doubted(judged) => Next::Keep(judged),
        Verdict::Failed(f) => {
            let e = JobError::new(f.kind, f.problem);
            match next.next().filter(|to| escalates(ctx, &e, model, to)) {
                Some(to) => Next::Climb(e, to),
                None => Next::Fail(e, f.extraction),
            }
        }
    }
}

/// The judge's verdict on the answer file `file` already in `dir`, judged whole: a routed
/// job's answer, made of the ladder's fields and the top rung's
/// (docs/escalation.md#the-guarantee-of---target).
pub(super) fn judge_written(
    ctx: &JobCtx<'_>,
    dir: &Path,
    source: &str,
    file: &str,
) -> Result<Verdict, JobError> {
    let schema = job_schema(ctx)?;
    let done = (String::new(), vec![std::path::PathBuf::from(file)]);
    Ok(verdict(
        ctx,
        dir,
        "",
        Some(source),
        true,
        schema.as_ref(),
        &done,
    ))
}

/// The judge's verdict on one rung's answer: what the step was asked for, and what it left in
/// `dir`.
fn verdict(
    ctx: &JobCtx<'_>,
    dir: &Path,
    part: &str,
    source: Option<&str>,
    require: bool,
    schema: Option<&crate::agent::structured::Schema>,
    (text, written): &Done,
) -> Verdict {
    let (job, skill) = (ctx.job, ctx.skill);
    let file = schema.as_ref().map(|_| {
        skill
            .direct_output(&job.args)
            .unwrap_or_else(|| crate::skills::schema::EXTRACTED_FILE.to_string())
    });
    let mut expected = Expected::of(skill, &job.args, source.map(Arc::from));
    for a in &mut expected.declared {
        *a = a.clone().with_parts(&ctx.inputs);
    }
    let reply = expected
        .declared
        .is_empty()
        .then(|| Acceptance::new(skill, &job.args, REPLY_FILE, source.map(Arc::from)));
    let asked = Asked {
        input: &job.input,
        source,
        expected: &expected,
        require,
        reply: reply.as_ref(),
        schema: schema
            .zip(file.as_deref())
            .map(|(s, f)| (s.fields.as_slice(), f)),
        grounding: skill
            .output
            .as_ref()
            .map(|o| o.grounding)
            .unwrap_or_default(),
        part: part_of(part),
    };
    let read = |p: &Path| ctx.run.layout.read_to_string(p).ok();
    let answer = judge::Answer {
        text,
        dir,
        written,
        read: &read,
    };
    judge::judge(&asked, &answer, &|| ctx.run.cancel.is_cancelled())
}

/// The file a skill that declares none gets its answer saved as.
const REPLY_FILE: &str = "response.md";

/// A kept answer of a skill that declares no file and wrote none, written as `response.md`:
/// its answer is its result (docs/skills.md#declared-outputs).
fn reply_as_file(
    ctx: &JobCtx<'_>,
    sandbox: &crate::agent::sandbox::Sandbox,
    (answer, written): Done,
) -> Result<Done, JobError> {
    if !written.is_empty() || !ctx.skill.declared_files(&ctx.job.args).is_empty() {
        return Ok((answer, written));
    }
    let target = sandbox
        .check_write(REPLY_FILE)
        .map_err(|r| JobError::new(ErrorKind::Io, r.message().to_string()))?;
    sandbox
        .write_new(&target, answer.as_bytes())
        .map_err(|e| JobError::new(ErrorKind::Io, msg!("cannot write response.md: {e}")))?;
    Ok((answer, sandbox.written()))
}

/// An answer that was kept but doubted, its files read and removed while a stronger model is
/// asked.
struct Doubted {
    done: Done,
    files: Vec<(PathBuf, Vec<u8>)>,
    judged: Judged,
    answered_by: Option<(String, String)>,
}

impl Doubted {
    fn set_aside(
        ctx: &JobCtx<'_>,
        dir: &Path,
        done: Done,
        judged: Judged,
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
            judged,
            answered_by,
        }
    }

    /// Its files written back, its doubts into the job's: the step's answer after all.
    fn restore(
        self,
        ctx: &JobCtx<'_>,
        dir: &Path,
        stats: &mut AgentStats,
    ) -> Result<Done, JobError> {
        for (f, bytes) in &self.files {
            ctx.run
                .layout
                .write_file(&dir.join(f), bytes)
                .map_err(|e| {
                    JobError::new(ErrorKind::Io, msg!("cannot write {}: {e}", f.display()))
                })?;
        }
        if self.answered_by.is_some() {
            stats.decided.answered_by = self.answered_by;
        }
        let doubts: Vec<Doubt> = self.judged.doubts;
        stats.decided.doubts.extend(doubts);
        if self.judged.extraction.is_some() {
            stats.decided.extraction = self.judged.extraction;
        }
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

/// Whether a failure is about the answer (so a stronger model may do better): not the key,
/// the quota, rate limits or the network. `grounding: required` fails as `invalid_output`,
/// so it climbs too.
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
