//! The judge: whether a step's answer is kept, kept with doubts, or failed — one room for every
//! check zhi makes of what a model gave back.
//!
//! Nothing here asks a model or writes a file: a check reads the answer, its source and what was
//! expected, and says what it found. The conversation (`agent`) consults the acceptance of each
//! answer to tell the model what was wrong; the ladder (`run::ladder`) reads one [`Verdict`] per
//! rung and keeps, climbs or fails on it.

pub(crate) mod accept;
pub(crate) mod agreement;
pub(crate) mod declared;
pub(crate) mod doubts;
pub(crate) mod figures;
pub mod grounding;
pub mod junk;
pub mod numbers;
pub mod roster;
pub(crate) mod source_index;
pub(crate) mod work;

use crate::error::ErrorKind;
use crate::manifest::Doubt;
use crate::skills::GroundingRule;
use crate::skills::schema::Field;
use accept::Acceptance;
use declared::Expected;
use grounding::{Extraction, Haystack};
use junk::Problem;
use std::path::{Path, PathBuf};

/// What the judge says of one step's answer.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// The output is what was asked for, and nothing in it is doubted.
    Kept(Judged),
    /// The output is there and not junk, but something in it is doubted, per field or file:
    /// the next rung may do better.
    Doubted(Judged),
    /// No result: the kind the step fails with, and the problem the model (and a person) is
    /// told.
    Failed(Failure),
}

/// A kept answer: its doubts, and where an extraction's values stand in the document.
#[derive(Debug, Default)]
pub(crate) struct Judged {
    pub doubts: Vec<Doubt>,
    pub extraction: Option<Extraction>,
}

/// A failed answer.
#[derive(Debug)]
pub(crate) struct Failure {
    pub kind: ErrorKind,
    pub problem: String,
    /// An extraction's grounding, when that is why it failed (`grounding: required`).
    pub extraction: Option<Extraction>,
}

impl Failure {
    pub(crate) fn new(kind: ErrorKind, problem: String) -> Failure {
        Failure {
            kind,
            problem,
            extraction: None,
        }
    }
}

/// What was decided of a job's steps, gathered for its record: the doubts of the answers
/// that became its outputs, where an extraction's values stand, and the ladder's climbs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Decided {
    pub doubts: Vec<Doubt>,
    /// The whole document's extraction, grounded (the last one judged).
    pub extraction: Option<Extraction>,
    /// Steps asked again of a stronger model: (from, to), in order.
    pub escalations: Vec<(String, String)>,
    /// The model (and its server) whose answer became the last step's output, when it was
    /// not the job's own.
    pub answered_by: Option<(String, String)>,
}

impl Decided {
    /// Another step's decisions added (a piece of a long document, a nested step).
    pub(crate) fn add(&mut self, other: &Decided) {
        for d in &other.doubts {
            if !self.doubts.contains(d) {
                self.doubts.push(d.clone());
            }
        }
        if other.extraction.is_some() {
            self.extraction.clone_from(&other.extraction);
        }
        self.escalations.extend(other.escalations.iter().cloned());
        if other.answered_by.is_some() {
            self.answered_by.clone_from(&other.answered_by);
        }
    }
}

/// Which part of a document a step answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The whole document (or a folder, or a workflow's step).
    Whole,
    /// One piece of a long document: judged against the piece; `grounding: required` waits
    /// for the whole.
    Piece,
    /// The reduce step joining a long document's pieces: judged by its pieces, not again.
    Reduce,
}

/// What a step was asked for.
pub(crate) struct Asked<'a> {
    /// The document as the job names it, for what a person is told.
    pub input: &'a str,
    /// The text the step was given (`None` for a folder).
    pub source: Option<&'a str>,
    /// The files the skill declares, each with its acceptance.
    pub expected: &'a Expected,
    /// Whether the declared files must all be there.
    pub require: bool,
    /// The answer itself is the result, as this file, when the skill declares none and the
    /// model wrote none.
    pub reply: Option<&'a Acceptance>,
    /// An extraction: its schema's fields, and the file its object is in.
    pub schema: Option<(&'a [Field], &'a str)>,
    pub grounding: GroundingRule,
    pub part: Part,
}

/// What a step gave back.
pub(crate) struct Answer<'a> {
    /// The model's last answer as text (empty for a direct request that wrote its file).
    pub text: &'a str,
    /// The folder the step wrote in, and what it wrote there (relative to it).
    pub dir: &'a Path,
    pub written: &'a [PathBuf],
    /// Reads a written file beneath the output folder.
    pub read: &'a dyn Fn(&Path) -> Option<String>,
}

/// The one entry of judgement: the verdict on one step's answer, given what was asked. Every
/// check runs here, each once: declared outputs (junk), the extraction's grounding and its
/// doubts, `grounding: required`, the prose doubts. `stop` is asked between values.
pub(crate) fn judge(asked: &Asked<'_>, answer: &Answer<'_>, stop: &dyn Fn() -> bool) -> Verdict {
    if let Some(reply) = asked.reply.filter(|_| answer.written.is_empty()) {
        return match reply.answer(answer.text, stop) {
            Some(Problem::Stopped) => Verdict::Failed(stopped()),
            Some(problem) => Verdict::Failed(Failure::new(
                ErrorKind::MissingOutput,
                msg!(
                    "the model wrote no file, and {reason}",
                    reason = problem.describe(&reply.file)
                ),
            )),
            None => Verdict::Kept(Judged::default()),
        };
    }
    if asked.require && !asked.expected.declared.is_empty() {
        let problems = asked.expected.problems(answer.dir, answer.written, stop);
        if problems.iter().any(|(_, p)| *p == Problem::Stopped) {
            return Verdict::Failed(stopped());
        }
        if !problems.is_empty() {
            let list: Vec<String> = problems.iter().map(|(f, p)| p.describe(f)).collect();
            return Verdict::Failed(Failure::new(ErrorKind::MissingOutput, list.join("; ")));
        }
    }
    let Some(source) = asked.source else {
        return Verdict::Kept(Judged::default());
    };
    let judged = match asked.schema {
        Some((fields, file)) => match extraction(asked, answer, source, fields, file, stop) {
            Ok(judged) => judged,
            Err(failure) => return Verdict::Failed(*failure),
        },
        None if asked.part == Part::Reduce => Judged::default(),
        None => {
            let doubts = prose(asked, answer, stop);
            // A doubt the stop cut short was never raised: no verdict stands on that.
            if stop() {
                return Verdict::Failed(stopped());
            }
            Judged {
                doubts,
                extraction: None,
            }
        }
    };
    match judged.doubts.is_empty() {
        true => Verdict::Kept(judged),
        false => Verdict::Doubted(judged),
    }
}

/// The failure of an answer the run's stop kept from being judged whole.
fn stopped() -> Failure {
    Failure::new(ErrorKind::Cancelled, msg!("cancelled"))
}

/// An extraction's object grounded in its source once, its doubts drawn from that grounding;
/// a required value found nowhere fails it (`grounding: required`, the whole document only).
fn extraction(
    asked: &Asked<'_>,
    answer: &Answer<'_>,
    source: &str,
    fields: &[Field],
    file: &str,
    stop: &dyn Fn() -> bool,
) -> Result<Judged, Box<Failure>> {
    let Some(object) = (answer.read)(&answer.dir.join(file))
        .and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok())
    else {
        return Ok(Judged::default());
    };
    let hay = Haystack::new(source);
    let found = grounding::ground_in(&hay, &object, stop);
    if !found.unchecked.is_empty() && stop() {
        // Told to stop while looking: the job is redone by the next run, never kept half
        // looked at.
        return Err(Box::new(Failure::new(
            ErrorKind::Cancelled,
            msg!("cancelled"),
        )));
    }
    let doubts = doubts::extraction(source, &hay, &found, &object, fields, stop);
    if asked.part != Part::Whole {
        return Ok(Judged {
            doubts,
            extraction: None,
        });
    }
    if asked.grounding == GroundingRule::Required {
        let missing = grounding::required_ungrounded(&found, fields);
        if !missing.is_empty() {
            return Err(Box::new(Failure {
                kind: ErrorKind::InvalidOutput,
                problem: msg!(
                    "required values found nowhere in {input} (grounding: required): {list}",
                    input = asked.input,
                    list = missing.join(", ")
                ),
                extraction: Some(found),
            }));
        }
    }
    Ok(Judged {
        doubts,
        extraction: Some(found),
    })
}

/// The doubts of each declared prose file against its source; `stop` is asked between items.
fn prose(asked: &Asked<'_>, answer: &Answer<'_>, stop: &dyn Fn() -> bool) -> Vec<Doubt> {
    let mut out = Vec::new();
    for accept in &asked.expected.declared {
        let Some(found) = declared::find_written(&accept.file, answer.written) else {
            continue;
        };
        if let Some(text) = (answer.read)(&answer.dir.join(found)) {
            out.extend(accept.doubts(&text, stop));
        }
    }
    out
}
