//! `zhi status [OUT]`: the output folder's state at a glance (docs/outputs.md#the-folders-state)
//! — every job's latest record, counted by status and skill, the failures with their reasons,
//! the inputs that are gone, and the cost to date — or, with `--json`/`--csv`, exported.

use super::{Ctx, print_json};
use crate::exit::{Exit, ExitError};
use crate::manifest::Status;
use crate::manifest::state::{self, FolderState, JobState};
use crate::sanitize::one_line;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How many failed jobs and gone inputs are listed on a terminal (all are in the exports).
const LISTED: usize = 20;

pub(super) fn run(ctx: &Ctx, out: Option<PathBuf>, csv: bool) -> Result<Exit, ExitError> {
    let out = super::output_folder_with_runs(ctx, out)?;
    let state = state::read(&out);
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

/// Jobs by status.
type Counts = BTreeMap<Status, u64>;

fn counts(jobs: &[JobState]) -> (Counts, BTreeMap<&str, Counts>) {
    let mut all: BTreeMap<Status, u64> = BTreeMap::new();
    let mut by_skill: BTreeMap<&str, BTreeMap<Status, u64>> = BTreeMap::new();
    for j in jobs {
        *all.entry(j.status).or_default() += 1;
        *by_skill
            .entry(j.skill.as_str())
            .or_default()
            .entry(j.status)
            .or_default() += 1;
    }
    (all, by_skill)
}

fn counts_text(c: &BTreeMap<Status, u64>) -> String {
    c.iter()
        .map(|(s, n)| format!("{n} {}", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_human(state: &FolderState, gone: &[&JobState], out: &Path, cwd: &Path) {
    let shown = out.strip_prefix(cwd).unwrap_or(out);
    let (all, by_skill) = counts(&state.jobs);
    println!(
        "{}",
        one_line(&msg!(
            "{}: {} job(s) in {} run(s): {}",
            shown.display(),
            state.jobs.len(),
            state.runs,
            counts_text(&all)
        ))
    );
    for (skill, c) in &by_skill {
        println!("  {}: {}", one_line(skill), counts_text(c));
    }
    let failed: Vec<&JobState> = state
        .jobs
        .iter()
        .filter(|j| j.status == Status::Failed)
        .collect();
    if !failed.is_empty() {
        println!("{}", msg!("failed ({}):", failed.len()));
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
                one_line(&why)
            );
        }
        if failed.len() > LISTED {
            println!(
                "{}",
                msg!(
                    "  … and {} more (`zhi status --csv` lists every job)",
                    failed.len() - LISTED
                )
            );
        }
    }
    if !gone.is_empty() {
        println!("{}", msg!("inputs gone ({}):", gone.len()));
        for j in gone.iter().take(LISTED) {
            println!("  {}", one_line(&j.input));
        }
        if gone.len() > LISTED {
            println!("{}", msg!("  … and {} more", gone.len() - LISTED));
        }
    }
    let spent: Vec<String> = state
        .tokens
        .iter()
        .map(|(model, t)| {
            let cost = state
                .costs
                .get(model)
                .map_or_else(|| msg!("cost unknown: no price"), |c| c.show());
            format!("{} {} tokens ({cost})", one_line(model), t.total())
        })
        .collect();
    if !spent.is_empty() {
        println!("{}", msg!("spent to date: {}", spent.join(", ")));
    }
    if state.pruned.runs > 0 {
        println!(
            "{}",
            msg!(
                "pruned: {} run(s), {} record(s) (their tokens are counted above)",
                state.pruned.runs,
                state.pruned.records
            )
        );
    }
    if state.unreadable > 0 {
        println!(
            "{}",
            msg!(
                "{} record line(s) could not be read (a run was killed mid-write)",
                state.unreadable
            )
        );
    }
}

fn json(state: &FolderState, gone: &[&JobState], out: &Path) -> serde_json::Value {
    let (all, by_skill) = counts(&state.jobs);
    let named = |c: &BTreeMap<Status, u64>| -> BTreeMap<&'static str, u64> {
        c.iter().map(|(s, n)| (s.as_str(), *n)).collect()
    };
    serde_json::json!({
        "output_dir": out.display().to_string(),
        "runs": state.runs,
        "jobs": state.jobs.len(),
        "counts": named(&all),
        "skills": by_skill.iter().map(|(k, c)| (k.to_string(), named(c))).collect::<BTreeMap<_, _>>(),
        "failed": state.jobs.iter().filter(|j| j.status == Status::Failed).collect::<Vec<_>>(),
        "inputs_gone": gone.iter().map(|j| &j.input).collect::<Vec<_>>(),
        "tokens": state.tokens,
        "costs": state.costs,
        "pruned": state.pruned,
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
            j.status.as_str().to_string(),
            kind,
            why,
            j.outputs.join(" "),
            j.doubts.to_string(),
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
