//! Long documents (docs/documents.md#long-documents): a document larger than one request's budget
//! is split into pieces that run as their own agent runs, then joined (`map`) or combined by one
//! more run over the piece results (`map-reduce`).
//!
//! Each finished piece is checkpointed under `<OUT>/.zhi/checkpoints/<job-id>/<key>/`, keyed by
//! the job's cache key and the split, so a rerun after a failure redoes only missing pieces.
//! Checkpoints go when the job's result is committed. Pieces run concurrently in the run's free
//! document slots (the job's own slot always makes progress, so pieces cannot starve).

use super::ask::JobCtx;
use super::ladder::{Stop, ask};
use super::message::{language_line, push_args, task_line};
use crate::agent::runner::AgentStats;
use crate::chunk::{self, Piece};
use crate::error::{ErrorKind, JobError};
use crate::layout::OutputLayout;
use crate::manifest::Chunks;
use crate::plan::Job;
use crate::plan::cache::JobCache;
use crate::skills::{Chunking, Skill};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// What a chunked job reports back to its record.
#[derive(Debug, Default)]
pub(super) struct ChunkState {
    pub counts: Option<Chunks>,
    /// Removed once the job's result is committed.
    pub checkpoint: Option<PathBuf>,
    /// A workflow's steps, as they ended.
    pub steps: Vec<crate::manifest::StepRecord>,
}

/// A finished piece, as checkpointed in `done.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PieceDone {
    answer: String,
    files: Vec<String>,
    turns: u32,
    attempts: u32,
    refused_tool_calls: u32,
    tool_calls: u32,
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// A finished piece: its folder and what it produced.
type PieceResult = Result<(PathBuf, PieceDone), Stop>;

/// File extensions whose piece outputs are joined as text: the ones `file_write` writes as
/// text.
use crate::agent::tools::write::TEXT_EXTENSIONS as TEXT_EXTS;

pub(super) async fn run(
    ctx: &JobCtx<'_>,
    cache: &JobCache,
    text: &str,
    budget: u32,
    staging: &Path,
    stats: &mut AgentStats,
    state: &mut ChunkState,
) -> Result<(), Stop> {
    let (run, job, skill) = (ctx.run, ctx.job, ctx.skill);
    let pieces = chunk::split(text, budget, skill.chunking == Chunking::MapReduce);
    let total = pieces.len();
    let key = {
        let mut h = Sha256::new();
        h.update(cache.cache_key.as_deref().unwrap_or("nokey").as_bytes());
        h.update(format!("\0{budget}\0{total}\0{}", skill.chunking.as_str()).as_bytes());
        hex::encode(&h.finalize()[..8])
    };
    let ckpt = run.layout.checkpoints(job.id.as_str()).join(&key);
    state.checkpoint = Some(ckpt.parent().map(Path::to_path_buf).unwrap_or(ckpt.clone()));
    tracing::info!(job = %job.input, pieces = total, budget, "{}", msg!("document split into pieces"));
    ctx.transcript.note(&format!(
        "the document is split into {total} pieces of at most about {budget} tokens"
    ));
    // A split anew (smaller pieces, after the server said a piece was too long) counts its
    // pieces from nothing.
    run.progress.forget_pieces(job.id.as_str());

    let direct = skill.direct_output(&job.args).is_some();
    let results = run_pieces(ctx, &pieces, &ckpt, "piece", stats, |p| {
        let before = p.index.checked_sub(1).map(|i| pieces[i].text.as_str());
        piece_message(job, skill, p, before, total, direct)
    })
    .await;
    let done = results.iter().filter(|r| r.is_ok()).count();
    state.counts = Some(Chunks {
        total: total as u32,
        done: done as u32,
    });
    let mut finished = Vec::with_capacity(total);
    // A piece that failed outweighs pieces waiting for a batch: the job fails now.
    let (mut failure, mut waiting) = (None, None);
    for r in results {
        match r {
            Ok(done) => finished.push(done),
            Err(stop @ Stop::Waiting(_)) => {
                waiting.get_or_insert(stop);
            }
            Err(stop) => {
                failure.get_or_insert(stop);
            }
        }
    }
    if let Some(stop) = failure.or(waiting) {
        return Err(stop);
    }

    if skill.schema().is_some() {
        return Ok(merge_extracted(
            &run.layout,
            skill,
            job,
            &pieces,
            &finished,
            staging,
        )?);
    }
    match skill.chunking {
        Chunking::Map => Ok(join_pieces(&run.layout, &finished, staging)?),
        _ => {
            let parts: Vec<String> = finished
                .iter()
                .enumerate()
                .map(|(i, (dir, d))| piece_result(dir, d, i, total))
                .collect();
            reduce(ctx, parts, budget, &ckpt, staging, stats, 0).await
        }
    }
}

/// Run every piece (skipping checkpointed ones), in the job's slot plus any free slots.
/// Returns each piece's folder and result, in order.
async fn run_pieces(
    ctx: &JobCtx<'_>,
    pieces: &[Piece],
    ckpt: &Path,
    prefix: &str,
    stats: &mut AgentStats,
    message: impl Fn(&Piece) -> String + Sync,
) -> Vec<PieceResult> {
    // A piece of a direct skill must give its output; an agent skill's piece may have
    // nothing to write (no table in this part), and the whole job is checked at the end.
    let require = ctx.skill.direct_output(&ctx.job.args).is_some();
    let spec = PieceSpec {
        list: pieces,
        ckpt,
        prefix,
        require,
        message,
    };
    let work = PieceWork::new(ctx, spec);
    let pending = work.queue.lock().unwrap_or_else(|e| e.into_inner()).len();
    let extras = pending.saturating_sub(1).min(63);
    let mut futs = vec![Box::pin(work.worker(false))];
    for _ in 0..extras {
        futs.push(Box::pin(work.worker(true)));
    }
    futures_join_all(futs).await;
    work.finish(stats)
}

/// What to do with the pieces of one document (or one reduce level).
struct PieceSpec<'a, M> {
    list: &'a [Piece],
    /// The checkpoint folder: piece `i` is kept in `<ckpt>/<prefix>-<i>`.
    ckpt: &'a Path,
    prefix: &'a str,
    /// Each piece must give the skill's declared output.
    require: bool,
    /// A piece's user message.
    message: M,
}

/// The pieces of one document (or one reduce level) being worked through by the job's own
/// worker and any extra workers that got a free slot.
struct PieceWork<'a, 'c, M> {
    ctx: &'a JobCtx<'c>,
    pieces: PieceSpec<'a, M>,
    queue: Mutex<VecDeque<usize>>,
    results: Mutex<Vec<Option<PieceResult>>>,
    /// Every piece is taken: workers waiting for a slot give up.
    drained: CancellationToken,
    /// A piece failed: no further piece starts.
    failed: CancellationToken,
    all_stats: Mutex<AgentStats>,
}

impl<'a, 'c, M: Fn(&Piece) -> String + Sync> PieceWork<'a, 'c, M> {
    /// Pieces checkpointed by an earlier run are done already; the rest are queued.
    fn new(ctx: &'a JobCtx<'c>, spec: PieceSpec<'a, M>) -> Self {
        let (pieces, ckpt, prefix) = (spec.list, spec.ckpt, spec.prefix);
        let mut results: Vec<Option<PieceResult>> = (0..pieces.len()).map(|_| None).collect();
        let mut queue = VecDeque::new();
        let id = ctx.job.id.as_str();
        ctx.run.progress.add_pieces(id, pieces.len() as u64);
        for (i, slot) in results.iter_mut().enumerate() {
            let dir = ckpt.join(format!("{prefix}-{i:05}"));
            match load_done(&dir) {
                Some(d) => {
                    ctx.run.progress.piece_done(id, false);
                    *slot = Some(Ok((dir, d)));
                }
                None => queue.push_back(i),
            }
        }
        PieceWork {
            ctx,
            pieces: spec,
            queue: Mutex::new(queue),
            results: Mutex::new(results),
            drained: CancellationToken::new(),
            failed: CancellationToken::new(),
            all_stats: Mutex::new(AgentStats::default()),
        }
    }

    /// Takes pieces until none is left or one failed. An extra worker first waits for a free
    /// slot of the run.
    async fn worker(&self, extra: bool) {
        let run = self.ctx.run;
        if extra {
            tokio::select! {
                _ = run.slots.acquire() => {}
                _ = self.drained.cancelled() => return,
            }
        }
        while !self.failed.is_cancelled() && !run.cancel.is_cancelled() {
            let next = self
                .queue
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop_front();
            let Some(i) = next else {
                self.drained.cancel();
                break;
            };
            let r = self.one(i).await;
            self.results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
        }
        if extra {
            run.slots.release();
        } else {
            // The job's own worker is done: nobody waits for a slot any longer.
            self.drained.cancel();
        }
    }

    /// One piece: asked, checkpointed, counted. A piece of a `map` skill whose answer ran past
    /// the length limit (its fresh try too) is asked again in halves, their outputs joined in
    /// order: a proofread piece's text and its table of changes may not fit one answer.
    async fn one(&self, i: usize) -> PieceResult {
        let (job, n) = (self.ctx.job, self.pieces.list.len());
        let part = format!("{}-{i:05}", self.pieces.prefix);
        let dir = self.pieces.ckpt.join(&part);
        let piece = &self.pieces.list[i];
        let r = match self.asked(piece, &dir, &part).await {
            Err(Stop::Failed(e)) if e.kind == ErrorKind::Truncated && self.halves() => {
                self.in_halves(piece, &dir, &part, e).await
            }
            r => r,
        };
        let r = r.and_then(|d| {
            save_done(&self.ctx.run.layout, &dir, &d)?;
            Ok((dir.clone(), d))
        });
        match &r {
            Ok(_) => {
                self.ctx.run.progress.piece_done(job.id.as_str(), true);
                tracing::info!(job = %job.input, piece = i + 1, of = n, "{}", msg!("piece done"));
            }
            // A piece waiting for a batch stops no other: every piece still to do is queued
            // in this run.
            Err(Stop::Waiting(_)) => {}
            Err(Stop::Failed(e) | Stop::TooLong(e)) => {
                tracing::info!(job = %job.input, piece = i + 1, of = n, "{}", msg!("piece failed: {e}"));
                self.failed.cancel();
            }
        }
        r
    }

    /// `piece` asked, its answer and files in `<dir>/out`.
    async fn asked(&self, piece: &Piece, dir: &Path, part: &str) -> Result<PieceDone, Stop> {
        let out = dir.join("out");
        let _ = self.ctx.run.layout.remove_tree(&out);
        let mut s = AgentStats::default();
        let source: Arc<str> = Arc::from(piece.text.as_str());
        let message = (self.pieces.message)(piece);
        let r = ask(
            self.ctx,
            &out,
            part,
            message,
            Some(source),
            self.pieces.require,
            &mut s,
        )
        .await;
        self.all_stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(&s);
        let (answer, files) = r?;
        Ok(PieceDone {
            answer,
            files: files
                .iter()
                .map(|f| f.to_string_lossy().into_owned())
                .collect(),
            turns: s.turns,
            attempts: s.attempts,
            refused_tool_calls: s.refused_tool_calls,
            tool_calls: s.tool_calls,
            prompt_tokens: s.tokens.prompt,
            completion_tokens: s.tokens.completion,
        })
    }

    /// Whether a truncated piece may be asked again in halves: a piece of the document (not a
    /// reduce group) of a skill that [`halves_when_cut`].
    fn halves(&self) -> bool {
        self.pieces.prefix == "piece" && halves_when_cut(self.ctx.skill, self.ctx.job)
    }

    /// `piece` asked again in pieces of half its size (split at its paragraphs or sentences:
    /// two, or a few when they fall unevenly), each in `<dir>/half-N`, their files joined into
    /// `<dir>/out`. A piece that does not split, or a half that fails, fails the piece.
    async fn in_halves(
        &self,
        piece: &Piece,
        dir: &Path,
        part: &str,
        cut: JobError,
    ) -> Result<PieceDone, Stop> {
        let halves = chunk::split(&piece.text, chunk::tokens(&piece.text).div_ceil(2), false);
        if halves.len() < 2 {
            return Err(Stop::Failed(cut));
        }
        self.ctx.transcript.note(&format!(
            "{part}: the answer ran past the length limit; asking it again in {} smaller pieces",
            halves.len()
        ));
        let mut done = Vec::with_capacity(halves.len());
        for (k, half) in halves.into_iter().enumerate() {
            let at = dir.join(format!("half-{k}"));
            let half = Piece {
                index: piece.index,
                ..half
            };
            let d = self.asked(&half, &at, &format!("{part}-{k}")).await?;
            done.push((at, d));
        }
        let out = dir.join("out");
        let _ = self.ctx.run.layout.remove_tree(&out);
        join_pieces(&self.ctx.run.layout, &done, &out)?;
        let mut whole = done.remove(0).1;
        for (_, d) in done {
            whole.answer.push_str(&d.answer);
            for f in d.files {
                if !whole.files.contains(&f) {
                    whole.files.push(f);
                }
            }
            whole.turns += d.turns;
            whole.attempts += d.attempts;
            whole.refused_tool_calls += d.refused_tool_calls;
            whole.tool_calls += d.tool_calls;
            whole.prompt_tokens += d.prompt_tokens;
            whole.completion_tokens += d.completion_tokens;
        }
        Ok(whole)
    }

    /// Every piece's result; a piece never started says why.
    fn finish(self, stats: &mut AgentStats) -> Vec<PieceResult> {
        let n = self.pieces.list.len();
        let cancelled = self.ctx.run.cancel.is_cancelled();
        stats.add(
            &self
                .all_stats
                .into_inner()
                .unwrap_or_else(|e| e.into_inner()),
        );
        self.results
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.unwrap_or_else(|| {
                    Err(Stop::Failed(if cancelled {
                        JobError::new(ErrorKind::Cancelled, msg!("cancelled"))
                    } else {
                        JobError::new(
                            ErrorKind::Cancelled,
                            msg!("piece {} of {n} not run: another piece failed", i + 1),
                        )
                    }))
                })
            })
            .collect()
    }
}

/// Whether a job's text whose answer ran past the length limit is asked again in halves: a
/// `map` skill that writes its one text (an extraction's pieces are merged as objects)
/// (docs/documents.md#splitting).
pub(super) fn halves_when_cut(skill: &Skill, job: &Job) -> bool {
    skill.chunking == Chunking::Map
        && skill.schema().is_none()
        && skill.direct_output(&job.args).is_some()
}

/// Await every future (they borrow from this frame, so no spawning).
async fn futures_join_all<F: std::future::Future<Output = ()>>(
    mut futs: Vec<std::pin::Pin<Box<F>>>,
) {
    use std::future::poll_fn;
    use std::task::Poll;
    poll_fn(|cx| {
        futs.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if futs.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

fn load_done(dir: &Path) -> Option<PieceDone> {
    let bytes = crate::small_file::read_io(&dir.join("done.json"), 16 << 20).ok()?;
    let d: PieceDone = serde_json::from_slice(&bytes).ok()?;
    // A checkpoint whose files went missing is redone.
    d.files
        .iter()
        .all(|f| dir.join("out").join(f).is_file())
        .then_some(d)
}

fn save_done(layout: &OutputLayout, dir: &Path, d: &PieceDone) -> Result<(), JobError> {
    let body = serde_json::to_vec(d).map_err(|e| JobError::new(ErrorKind::Io, e.to_string()))?;
    layout
        .write_atomic(&dir.join("done.json"), &body)
        .map_err(|e| {
            JobError::new(
                ErrorKind::Io,
                msg!("cannot checkpoint {}: {e}", dir.display()),
            )
        })
}

/// A piece's user message. A direct skill with an instruction asks for it in the instruction's
/// one message, the end of the piece `before` it given as context.
fn piece_message(
    job: &Job,
    skill: &Skill,
    p: &Piece,
    before: Option<&str>,
    total: usize,
    direct: bool,
) -> String {
    let n = p.index + 1;
    if skill.schema().is_some() {
        let label = format!("{} (part {n}/{total})", job.input);
        return super::message::extraction_message(&label, &p.text);
    }
    if direct && let Some(instruction) = skill.instruction_for(&job.args, &p.text) {
        return super::message::plain_message(&instruction, &p.text, before);
    }
    let mut m = format!("Input document: {} — part {n} of {total}\n", job.input);
    // A small model in direct mode takes explanations of the process for content to write
    // about; a map piece still needs to know it must do all of its part.
    match skill.chunking {
        Chunking::Map => m.push_str("The document is long, so it is processed in parts. Work on this part only and do all of it: the results of all parts are joined in order to make the whole.\n"),
        _ if !direct => m.push_str("The document is long, so it is processed in parts and the results are combined afterwards. Work on this part only.\n"),
        _ => {}
    }
    push_args(&mut m, job);
    if !direct {
        m.push_str("Write your files with file_write using relative names (they go to this job's output folder).\n");
    }
    m.push('\n');
    // A small model in direct mode takes the previous part's end for part of its task and
    // summarises or echoes it: the overlap is for the agent loop only.
    if !direct && !p.overlap.is_empty() {
        m.push_str(
            "Context: the end of the previous part (already processed; do not repeat it):\n",
        );
        m.push_str(p.overlap.trim());
        m.push_str("\n\n");
    }
    let label = format!("{} (part {n}/{total})", job.input);
    m.push_str(&crate::agent::runner::document_block(&label, &p.text));
    m.push_str(&language_line(job, &p.text));
    if direct {
        m.push_str(&task_line(job, skill, "this part"));
    }
    m
}

/// An extraction job's pieces: their objects merged into one (docs/extract.md#long-documents).
fn merge_extracted(
    layout: &OutputLayout,
    skill: &Skill,
    job: &Job,
    pieces: &[Piece],
    finished: &[(PathBuf, PieceDone)],
    staging: &Path,
) -> Result<(), JobError> {
    let io = |e: std::io::Error| JobError::new(ErrorKind::Io, msg!("cannot merge the pieces: {e}"));
    let file = skill
        .direct_output(&job.args)
        .unwrap_or_else(|| crate::skills::schema::EXTRACTED_FILE.to_string());
    let mut parts = Vec::new();
    for ((dir, _), piece) in finished.iter().zip(pieces) {
        let mut bytes = Vec::new();
        layout
            .open_file(&dir.join("out").join(&file))
            .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut bytes))
            .map_err(io)?;
        let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            JobError::new(ErrorKind::Io, msg!("a piece's {file} cannot be read: {e}"))
        })?;
        parts.push((value, piece.text.as_str()));
    }
    let merged = crate::agent::structured::merge(&parts);
    let mut bytes = serde_json::to_vec_pretty(&merged).unwrap_or_default();
    bytes.push(b'\n');
    layout.write_file(&staging.join(&file), &bytes).map_err(io)
}

/// `map`: text files of the same name are joined in piece order; other files are kept per
/// piece as `name.partNNNNN.ext`. Written beneath the output folder's handle.
fn join_pieces(
    layout: &OutputLayout,
    finished: &[(PathBuf, PieceDone)],
    staging: &Path,
) -> Result<(), JobError> {
    let io = |e: std::io::Error| JobError::new(ErrorKind::Io, msg!("cannot join the pieces: {e}"));
    layout.folder(staging, true).map_err(io)?;
    let mut names: Vec<String> = Vec::new();
    for (_, d) in finished {
        for f in &d.files {
            if !names.contains(f) {
                names.push(f.clone());
            }
        }
    }
    for name in &names {
        let ext = Path::new(name)
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let target = staging.join(name);
        if let Some(p) = target.parent() {
            layout.folder(p, true).map_err(io)?;
        }
        if TEXT_EXTS.contains(&ext.as_str()) {
            let mut joined = String::new();
            for (dir, d) in finished {
                if d.files.contains(name) {
                    let part = layout
                        .read_to_string(&dir.join("out").join(name))
                        .map_err(io)?;
                    if !joined.is_empty() && !joined.ends_with("\n\n") {
                        joined.push_str(if joined.ends_with('\n') { "\n" } else { "\n\n" });
                    }
                    joined.push_str(part.trim_end_matches('\n'));
                    joined.push('\n');
                }
            }
            layout.write_file(&target, joined.as_bytes()).map_err(io)?;
        } else {
            for (i, (dir, d)) in finished.iter().enumerate() {
                if d.files.contains(name) {
                    let stem = Path::new(name)
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let parent = Path::new(name).parent().unwrap_or(Path::new(""));
                    let dest = staging
                        .join(parent)
                        .join(format!("{stem}.part{:05}.{ext}", i + 1));
                    layout
                        .copy_file(&dir.join("out").join(name), &dest)
                        .map_err(io)?;
                }
            }
        }
    }
    Ok(())
}

/// What a piece produced, as the reduce pass reads it: its text files and its answer.
fn piece_result(dir: &Path, d: &PieceDone, i: usize, total: usize) -> String {
    let mut s = format!("## Part {} of {total}\n", i + 1);
    for f in &d.files {
        let ext = Path::new(f)
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if f == "response.md" || !TEXT_EXTS.contains(&ext.as_str()) {
            continue;
        }
        if let Ok(t) = std::fs::read_to_string(dir.join("out").join(f)) {
            s.push_str(t.trim());
            s.push('\n');
        }
    }
    if !d.answer.trim().is_empty() {
        s.push_str(d.answer.trim());
        s.push('\n');
    }
    s
}

/// `map-reduce`: one more run over all piece results; when they do not fit one request, they
/// are grouped and reduced level by level first.
fn reduce<'a>(
    ctx: &'a JobCtx<'a>,
    parts: Vec<String>,
    budget: u32,
    ckpt: &'a Path,
    staging: &'a Path,
    stats: &'a mut AgentStats,
    level: u32,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), Stop>> + Send + 'a>> {
    Box::pin(async move {
        let job = ctx.job;
        let direct = ctx.skill.direct_output(&job.args).is_some();
        let all: String = parts.join("\n");
        let total = parts.len();
        if chunk::tokens(&all) <= budget || total <= 1 || level >= 8 {
            let message = reduce_message(job, ctx.skill, &all, total, direct);
            return ask(ctx, staging, "reduce", message, None, true, stats)
                .await
                .map(|_| ());
        }
        // Group consecutive results into pieces that fit, and reduce each group first.
        let groups = group(&parts, budget);
        let pieces: Vec<Piece> = groups
            .into_iter()
            .enumerate()
            .map(|(i, text)| Piece {
                index: i,
                text,
                overlap: String::new(),
            })
            .collect();
        let n = pieces.len();
        let prefix = format!("reduce{level}");
        let results = run_pieces(ctx, &pieces, ckpt, &prefix, stats, |p| {
            let mut m = reduce_message(job, ctx.skill, &p.text, total, direct);
            m.push_str(&format!("\n(This is group {} of {n} of the part results; the group results are combined afterwards.)\n", p.index + 1));
            m
        })
        .await;
        let mut next = Vec::with_capacity(n);
        for (i, r) in results.into_iter().enumerate() {
            let (dir, d) = r?;
            next.push(piece_result(&dir, &d, i, n));
        }
        reduce(ctx, next, budget, ckpt, staging, stats, level + 1).await
    })
}

fn group(parts: &[String], budget: u32) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for p in parts {
        if !cur.is_empty() && chunk::tokens(&cur) + chunk::tokens(p) > budget {
            out.push(std::mem::take(&mut cur));
        }
        cur.push_str(p);
        cur.push('\n');
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn reduce_message(job: &Job, skill: &Skill, results: &str, total: usize, direct: bool) -> String {
    let mut m = format!("Input document: {}\n", job.input);
    push_args(&mut m, job);
    m.push_str(&format!(
        "The document was too long to read at once, so it was processed in {total} parts. \
         Below are the results for the parts, in order. Combine them into one result for the whole document, \
         exactly as your instructions say: one text, no longer than they allow, each point once, \
         without going through the parts one by one.{}\n\n",
        if direct { "" } else { " Write your files with file_write using relative names." }
    ));
    m.push_str(&crate::agent::runner::document_block(
        &format!("{} (results of {total} parts)", job.input),
        results,
    ));
    m.push_str(&language_line(job, results));
    if direct {
        m.push_str(&task_line(
            job,
            skill,
            "the whole document, from the part results above",
        ));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn nothing_in(dir: &Path) -> bool {
        std::fs::read_dir(dir).unwrap().next().is_none()
    }

    /// A long document's pieces are joined into the job's staging folder. With the run's
    /// staging folder `.zhi/staging/<run>` swapped for a link to outside, or the job's own
    /// `.zhi/staging/<run>/<job>`, the join is refused, naming the link, and nothing is
    /// written outside (it was written through the link when the staging was written by path).
    #[test]
    fn a_staging_folder_swapped_for_a_link_takes_no_piece_outside() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let layout = OutputLayout::new(&out);
        let piece = layout.checkpoints("job").join("key/piece-00000");
        std::fs::create_dir_all(piece.join("out")).unwrap();
        std::fs::create_dir_all(layout.staging()).unwrap();
        std::fs::write(piece.join("out/summary.md"), "part\n").unwrap();
        std::fs::write(piece.join("out/figure.png"), "png").unwrap();
        let done = PieceDone {
            answer: String::new(),
            files: vec!["summary.md".into(), "figure.png".into()],
            turns: 1,
            attempts: 1,
            refused_tool_calls: 0,
            tool_calls: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
        };
        let finished = vec![(piece, done)];
        let (run_dir, staging) = (
            layout.staging().join("run"),
            layout.job_staging("run", "job"),
        );

        symlink(&outside, &run_dir).unwrap();
        let e = join_pieces(&layout, &finished, &staging).unwrap_err();
        let said = format!("{} is a link", run_dir.display());
        assert!(e.message.contains(&said), "{}", e.message);
        assert!(nothing_in(&outside), "a piece was written outside");

        std::fs::remove_file(&run_dir).unwrap();
        std::fs::create_dir(&run_dir).unwrap();
        symlink(&outside, &staging).unwrap();
        let e = join_pieces(&layout, &finished, &staging).unwrap_err();
        let said = format!("{} is a link", staging.display());
        assert!(e.message.contains(&said), "{}", e.message);
        assert!(nothing_in(&outside), "a piece was written outside");

        // A real staging folder: the pieces are joined in it as before.
        std::fs::remove_file(&staging).unwrap();
        join_pieces(&layout, &finished, &staging).unwrap();
        let joined = std::fs::read_to_string(staging.join("summary.md")).unwrap();
        assert_eq!(joined, "part\n");
        assert!(staging.join("figure.part00001.png").is_file());
    }
}
