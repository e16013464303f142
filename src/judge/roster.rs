//! Every check zhi makes of a prose answer against its source, by name, each run as the
//! pipeline runs it: what `benches/answer_checks.rs` feeds hostile answers (2 MB over a 100 KB
//! source) to show that each costs time linear in the answer. Nothing else reads this list;
//! it names the checks, it does not order or choose them (that is [`super::accept`]'s and
//! [`super::doubts`]'s).

use super::accept::Acceptance;
use super::doubts::prose::{self, ProseCheck};
use super::work::Work;
use super::{agreement, figures, junk};
use std::sync::Arc;

/// What the answer was told besides the document, for the checks that compare an answer to
/// its instructions (an echo) or ground its figures in them.
pub const INSTRUCTIONS: &str = "Summarise the document for a reader who has not seen it. Your \
    answer is saved as the result file as it is: nothing before or after it, no remarks about \
    what you did, no tool calls. Keep every figure as the document states it.";

/// One check of an answer.
pub struct Check {
    /// Its name, as docs/benchmarks.md writes it.
    pub name: &'static str,
    run: Run,
}

enum Run {
    /// Figures the answer states that its source does not hold.
    Figures,
    /// The whole acceptance of a summary, its checks in order (the first problem ends it).
    Acceptance,
    Copy,
    Loop,
    Echo,
    /// The language of a Chinese rendering of an English source, judged on what was
    /// translated.
    Language,
    Prose(ProseCheck),
    /// The audit's comparison of two prose answers.
    Chrf,
}

/// Every check, in the order the pipeline meets them.
pub fn all() -> Vec<Check> {
    let mut out = vec![
        Check {
            name: "acceptance",
            run: Run::Acceptance,
        },
        Check {
            name: "copy",
            run: Run::Copy,
        },
        Check {
            name: "loop",
            run: Run::Loop,
        },
        Check {
            name: "echo",
            run: Run::Echo,
        },
        Check {
            name: "language",
            run: Run::Language,
        },
        Check {
            name: "figures",
            run: Run::Figures,
        },
    ];
    out.extend(ProseCheck::ALL.into_iter().map(|c| Check {
        name: prose_name(c),
        run: Run::Prose(c),
    }));
    out.push(Check {
        name: "chrF",
        run: Run::Chrf,
    });
    out
}

fn prose_name(check: ProseCheck) -> &'static str {
    match check {
        ProseCheck::NearCopy => "near-copy",
        ProseCheck::AddedFigures => "doubt: figures",
        ProseCheck::ChangedFigures => "doubt: changed figures",
        ProseCheck::LostFigures => "doubt: lost figures",
        ProseCheck::EnglishLeft => "untranslated + kept",
        ProseCheck::ChineseLeft => "untranslated (Chinese left)",
        ProseCheck::Remark => "remarks",
        ProseCheck::Headings => "headings",
    }
}

impl Check {
    /// Runs the check of `answer` against `source`, asking `stop` as the pipeline would; how
    /// many things it found (figures, doubts, problems: 0 or more).
    pub fn run(&self, answer: &str, source: &str, stop: &dyn Fn() -> bool) -> usize {
        match &self.run {
            Run::Figures => figures::ungrounded(answer, source, INSTRUCTIONS, stop).count,
            Run::Acceptance => {
                let accept = Acceptance::composed("summary.md", Some(Arc::from(source)), None)
                    .with_instructions(INSTRUCTIONS);
                usize::from(accept.answer(answer, stop).is_some())
            }
            Run::Copy => usize::from(
                junk::is_copy(answer, source) || junk::copies_most(answer, source, stop),
            ),
            Run::Loop => usize::from(junk::is_loop(answer, Some(source), stop)),
            Run::Echo => usize::from(junk::is_echo(answer, INSTRUCTIONS, Some(source), stop)),
            Run::Language => {
                let part = prose::translated_part(source, answer, &Work::new(stop));
                usize::from(junk::is_wrong_language(&part, "chinese"))
            }
            Run::Prose(check) => usize::from(check.run(source, answer, stop).is_some()),
            Run::Chrf => agreement::chrf(answer, source, stop).map_or(0, |s| s as usize),
        }
    }
}
