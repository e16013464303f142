//! `zhi status [OUT]`: the output folder's state at a glance (docs/outputs.md#the-folders-state)
//! — every job's latest record, counted by status and skill, the failures with their reasons,
//! the inputs that are gone, and the cost to date — or, with `--json`/`--csv`, exported.

use super::{Ctx, print_json};
use crate::exit::{Exit, ExitError};
use crate::i18n::Lang;
use crate::manifest::state::{self, FolderState, JobState};
use crate::manifest::{ShownStatus, Status};
use crate::sanitize::one_line;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How many failed jobs and gone inputs are listed on a terminal (all are in the exports).
const LISTED: usize = 20;

pub(super) fn run(ctx: &Ctx, out: Option<PathBuf>, csv: bool) -> Result<Exit, ExitError> {
    let out = super::output_folder_with_runs(ctx, out)?;
    let state = state::read(&out);
    if let Some(e) = &state.unreadable_ledger {
        ctx.warn(&msg!(
            "{e}; `zhi prune` will not run until it is repaired or moved aside"
        ));
    }
    let gone: Vec<&JobState> = state
        .jobs
        .iter()
        .filter(|j| !input_exists(&ctx.cwd, &j.input))
        .collect();
    if csv {
        write_csv(&state, &ctx.cwd).map_err(|e| ExitError::usage(msg!("cannot write: {e}")))?;
    } else if ctx.global.json {
        print_json(&json(&state, &gone, &out));
    } else {
        print_human(&state, &gone, &out, &ctx.cwd);
    }
    Ok(Exit::Success)
}

/// Whether a job's input is still where its run named it, looked for from the current folder.
fn input_exists(cwd: &Path, input: &str) -> bool {
    std::fs::symlink_metadata(cwd.join(input)).is_ok()
}

/// Jobs by the status a person is shown (`doubted` apart from `succeeded` and `cached`).
type Counts = BTreeMap<ShownStatus, u64>;

fn counts(jobs: &[JobState]) -> (Counts, BTreeMap<&str, Counts>) {
    let mut all: Counts = BTreeMap::new();
    let mut by_skill: BTreeMap<&str, Counts> = BTreeMap::new();
    for j in jobs {
        *all.entry(j.shown()).or_default() += 1;
        *by_skill
            .entry(j.skill.as_str())
            .or_default()
            .entry(j.shown())
            .or_default() += 1;
    }
    (all, by_skill)
}

/// `1 succeeded, 9 doubted, 1 cached`, in `lang`.
fn counts_text(c: &Counts, lang: Lang) -> String {
    c.iter()
        .map(|(s, n)| match s {
            ShownStatus::Succeeded => t!(in lang; "{n} succeeded", n = n),
            ShownStatus::Doubted => t!(in lang; "{n} doubted", n = n),
            ShownStatus::Failed => t!(in lang; "{n} failed", n = n),
            ShownStatus::Cached => t!(in lang; "{n} cached", n = n),
            ShownStatus::Skipped => t!(in lang; "{n} skipped", n = n),
            ShownStatus::Cancelled => t!(in lang; "{n} cancelled", n = n),
        })
        .collect::<Vec<_>>()
        .join(&t!(in lang; ", "))
}

fn print_human(state: &FolderState, gone: &[&JobState], out: &Path, cwd: &Path) {
    let lang = crate::i18n::lang();
    let shown = out.strip_prefix(cwd).unwrap_or(out);
    let (all, by_skill) = counts(&state.jobs);
    println!(
        "{}",
        one_line(&t!(in lang;
            "{path}: {n} job(s) in {count} run(s): {counts}",
            path = shown.display(),
            n = state.jobs.len(),
            count = state.runs,
            counts = counts_text(&all, lang)
        ))
    );
    for (skill, c) in &by_skill {
        let (at, what) = (one_line(skill), counts_text(c, lang));
        println!("  {}", t!(in lang; "{at}: {what}", at = at, what = what));
    }
    print_failed(state, lang);
    print_doubted(state, lang);
    if !gone.is_empty() {
        println!("{}", t!(in lang; "inputs gone ({n}):", n = gone.len()));
        for j in gone.iter().take(LISTED) {
            println!("  {}", one_line(&j.input));
        }
        if gone.len() > LISTED {
            println!(
                "{}",
                t!(in lang; "  … and {n} more", n = gone.len() - LISTED)
            );
        }
    }
    print_spent(state, lang);
}

/// The failed jobs, with their kind and reason.
fn print_failed(state: &FolderState, lang: Lang) {
    let failed: Vec<&JobState> = state
        .jobs
        .iter()
        .filter(|j| j.status == Status::Failed)
        .collect();
    if failed.is_empty() {
        return;
    }
    println!("{}", t!(in lang; "failed ({n}):", n = failed.len()));
    for j in failed.iter().take(LISTED) {
        let (kind, why) = j
            .error
            .as_ref()
            .map(|e| (e.kind.to_string(), e.reason().to_string()))
            .unwrap_or_default();
        println!(
            "  {} ({}): {kind}: {}",
            one_line(&j.input),
            one_line(&j.skill),
            one_line(&crate::i18n::localize(&why))
        );
    }
    more(failed.len(), lang);
}

/// The doubted jobs, each with what zhi doubts of it, in words.
fn print_doubted(state: &FolderState, lang: Lang) {
    let doubted: Vec<&JobState> = state
        .jobs
        .iter()
        .filter(|j| j.shown() == ShownStatus::Doubted)
        .collect();
    if doubted.is_empty() {
        return;
    }
    println!(
        "{}",
        t!(in lang; "doubted ({n}; outputs kept, probably wrong):", n = doubted.len())
    );
    for j in doubted.iter().take(LISTED) {
        println!(
            "  {} ({}): {}",
            one_line(&j.input),
            one_line(&j.skill),
            crate::manifest::doubts_in_words(&j.doubts, lang)
        );
    }
    more(doubted.len(), lang);
}

/// `  … and 3 more (…)` after a list cut at [`LISTED`].
fn more(n: usize, lang: Lang) {
    if n > LISTED {
        println!(
            "{}",
            t!(in lang;
                "  … and {n} more (`zhi status --csv` lists every job)",
                n = n - LISTED
            )
        );
    }
}

/// The tokens and cost to date, what was pruned, what could not be read.
fn print_spent(state: &FolderState, lang: Lang) {
    let spent: Vec<String> = state
        .tokens
        .iter()
        .map(|(model, t)| {
            let cost = state
                .costs
                .get(model)
                .map_or_else(|| t!(in lang; "cost unknown: no price"), |c| c.show());
            t!(in lang;
                "{model} {tokens} tokens ({cost})",
                model = one_line(model),
                tokens = t.total(),
                cost = cost
            )
        })
        .collect();
    if !spent.is_empty() {
        println!(
            "{}",
            t!(in lang; "spent to date: {list}", list = spent.join(&t!(in lang; ", ")))
        );
    }
    if state.pruned.runs > 0 {
        println!(
            "{}",
            t!(in lang;
                "pruned: {n} run(s), {count} record(s) (their tokens are counted above)",
                n = state.pruned.runs,
                count = state.pruned.records
            )
        );
    }
    if state.unreadable > 0 {
        println!(
            "{}",
            t!(in lang;
                "{n} record line(s) could not be read (a run was killed mid-write)",
                n = state.unreadable
            )
        );
    }
}

fn json(state: &FolderState, gone: &[&JobState], out: &Path) -> serde_json::Value {
    let (all, by_skill) = counts(&state.jobs);
    let named = |c: &Counts| -> BTreeMap<&'static str, u64> {
        c.iter().map(|(s, n)| (s.as_str(), *n)).collect()
    };
    serde_json::json!({
        "output_dir": out.display().to_string(),
        "runs": state.runs,
        "jobs": state.jobs.len(),
        "counts": named(&all),
        "skills": by_skill.iter().map(|(k, c)| (k.to_string(), named(c))).collect::<BTreeMap<_, _>>(),
        "failed": state.jobs.iter().filter(|j| j.status == Status::Failed).collect::<Vec<_>>(),
        "doubted": state.jobs.iter().filter(|j| j.shown() == ShownStatus::Doubted).collect::<Vec<_>>(),
        "inputs_gone": gone.iter().map(|j| &j.input).collect::<Vec<_>>(),
        "tokens": state.tokens,
        "costs": state.costs,
        "pruned": state.pruned,
        "pruned_unreadable": state.unreadable_ledger.as_ref().map(ToString::to_string),
        "unreadable_lines": state.unreadable,
    })
}

/// One row per job: the table a person opens.
fn write_csv(state: &FolderState, cwd: &Path) -> std::io::Result<()> {
    let mut w = csv::Writer::from_writer(std::io::stdout().lock());
    w.write_record([
        "job_id",
        "skill",
        "input",
        "status",
        "error_kind",
        "error",
        "outputs",
        "doubts",
        "run_id",
        "finished_at",
        "input_exists",
    ])?;
    for j in &state.jobs {
        let (kind, why) = j
            .error
            .as_ref()
            .map(|e| (e.kind.to_string(), e.reason().to_string()))
            .unwrap_or_default();
        let row = [
            j.job_id.clone(),
            j.skill.clone(),
            j.input.clone(),
            j.shown().as_str().to_string(),
            kind,
            why,
            j.outputs.join(" "),
            crate::manifest::doubts_in_words(&j.doubts, crate::i18n::lang()),
            j.run_id.clone(),
            j.finished_at.map(|t| t.to_string()).unwrap_or_default(),
            input_exists(cwd, &j.input).to_string(),
        ];
        w.write_record(
            row.iter()
                .map(|c| crate::manifest::formula_safe(c).into_owned()),
        )?;
    }
    w.flush()
}
