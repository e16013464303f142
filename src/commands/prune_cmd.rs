//! `zhi prune [OUT]` (docs/outputs.md#pruning): old runs' records and transcripts that no
//! job's state needs are removed; outputs never are.
//!
//! A job's state needs its latest record (what `zhi status` shows) and its latest usable one
//! (what a rerun finds it cached by), and the transcripts those records name. A pruned run
//! keeps exactly those lines of its `results.jsonl`; a run left with none is removed whole.
//! What the removed records spent is added to `.zhi/pruned.json` first, so the cost to date
//! stays true. Every file is replaced by a rename and every run folder is moved out of
//! `.zhi/runs/` before it is deleted: a kill at any point leaves each run whole, either as it
//! was or as pruned, and the cache index (removed first) is rebuilt from them by the next run.

use super::Ctx;
use crate::cli::PruneArgs;
use crate::config::Overrides;
use crate::exit::{Exit, ExitError};
use crate::layout::OutputLayout;
use crate::manifest::state::{Pruned, pruned_path};
use crate::manifest::{JobRecord, RunDir, Status};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// One record line of a run, as prune weighs it.
struct Line {
    bytes: Vec<u8>,
    record: Option<JobRecord>,
}

/// What prune does to one run.
struct Plan {
    run: RunDir,
    /// The lines kept (all of them, for a run kept whole).
    keep: Vec<usize>,
    lines: Vec<Line>,
    /// Transcript files of this run that no kept record names.
    drop_transcripts: Vec<std::path::PathBuf>,
}

pub(super) fn run(ctx: &Ctx, a: PruneArgs) -> Result<Exit, ExitError> {
    let config = ctx.config(Overrides {
        output_dir: a.out.clone(),
        ..Overrides::default()
    })?;
    let out = ctx.cwd.join(&config.run.output_dir);
    if !out.join(".zhi").join("runs").is_dir() {
        return Err(ExitError::usage(msg!(
            "{} has no runs to prune (they are kept in .zhi/runs/)",
            out.display()
        )));
    }
    let layout = OutputLayout::new(&out);
    // A run writing its records now would race the rewrite: prune takes the run's lock.
    let _lock = if a.dry_run {
        None
    } else {
        Some(crate::run::lock::RunLock::acquire(&layout, "prune")?)
    };
    let runs = crate::manifest::list_runs(&out);
    let pruned_runs = candidates(&runs, a.keep_last, a.older_than);
    let plans = weigh(&runs, &pruned_runs);
    let mut freed = 0u64;
    let (mut removed_runs, mut removed_lines) = (0u64, 0u64);
    let mut totals = Pruned::read(&out);
    if !a.dry_run {
        // Offsets are about to change: the index goes first, and the next run rebuilds it.
        let _ = layout.remove_file(&layout.cache_index());
    }
    for plan in &plans {
        let gone = plan.lines.len() - plan.keep.len();
        let whole = plan.keep.is_empty();
        if gone == 0 && plan.drop_transcripts.is_empty() && !whole {
            continue;
        }
        freed += plan.freed();
        removed_lines += gone as u64;
        removed_runs += u64::from(whole);
        if a.dry_run {
            println!("{}", plan.would());
            continue;
        }
        // What the removed records spent, counted before they go.
        for (i, line) in plan.lines.iter().enumerate() {
            if plan.keep.binary_search(&i).is_err()
                && let Some(r) = &line.record
            {
                totals.add(r);
            }
        }
        totals.runs += u64::from(whole);
        apply(&layout, &out, plan, &totals)
            .map_err(|e| ExitError::usage(msg!("cannot prune run {}: {e}", plan.run.run_id)))?;
    }
    // Left by a kill during an earlier prune, or emptied now.
    let trash = layout.zhi_dir().join("pruning");
    if !a.dry_run && trash.is_dir() {
        let _ = layout.remove_tree(&trash);
    }
    let size = format!("{:.1} MiB", freed as f64 / (1 << 20) as f64);
    println!(
        "{}",
        if a.dry_run {
            msg!(
                "would free {}: {} record(s), {} run(s) whole; outputs and what each job's state needs are kept",
                size,
                removed_lines,
                removed_runs
            )
        } else {
            msg!(
                "freed {}: {} record(s), {} run(s) whole; outputs and what each job's state needs are kept",
                size,
                removed_lines,
                removed_runs
            )
        }
    );
    Ok(Exit::Success)
}

/// The runs to prune: beyond the last `keep_last` and started longer ago than `older_than`
/// (each rule alone when only it is given).
fn candidates(
    runs: &[RunDir],
    keep_last: Option<u64>,
    older_than: Option<std::time::Duration>,
) -> HashSet<String> {
    let keep_from = keep_last.map_or(runs.len(), |n| runs.len().saturating_sub(n as usize));
    let cutoff =
        older_than.map(|d| chrono::Utc::now() - chrono::Duration::from_std(d).unwrap_or_default());
    runs.iter()
        .enumerate()
        .filter(|(i, _)| keep_last.is_none() || *i < keep_from)
        .filter(|(_, r)| cutoff.is_none_or(|c| started(&r.run_id).is_some_and(|t| t < c)))
        .map(|(_, r)| r.run_id.clone())
        .collect()
}

/// When a run started, from its id (`20261128T080254.123Z…`).
fn started(run_id: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let stamp = run_id.get(..19)?;
    chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%S%.3f")
        .ok()
        .map(|t| t.and_utc())
}

impl Plan {
    /// Bytes its pruning frees.
    fn freed(&self) -> u64 {
        if self.keep.is_empty() {
            return tree_bytes(&self.run.path);
        }
        let transcripts: u64 = self
            .drop_transcripts
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum();
        let lines: u64 = (0..self.lines.len())
            .filter(|i| self.keep.binary_search(i).is_err())
            .map(|i| self.lines[i].bytes.len() as u64)
            .sum();
        transcripts + lines
    }

    /// What `--dry-run` says of it.
    fn would(&self) -> String {
        let gone = self.lines.len() - self.keep.len();
        if self.keep.is_empty() {
            msg!("would remove run {} ({} record(s))", self.run.run_id, gone)
        } else {
            msg!(
                "would remove {} of run {}'s {} record(s) and {} transcript(s)",
                gone,
                self.run.run_id,
                self.lines.len(),
                self.drop_transcripts.len()
            )
        }
    }
}

/// Whether a record is what a rerun finds its job cached by.
fn usable(s: Status) -> bool {
    matches!(s, Status::Succeeded | Status::Cached)
}

/// Reads every run, finds the lines each job's state needs, and plans the pruned runs.
fn weigh(runs: &[RunDir], pruned: &HashSet<String>) -> Vec<Plan> {
    // (run, line) of each job's latest record and latest usable one.
    let mut latest: HashMap<String, (usize, usize, Status)> = HashMap::new();
    let mut usable_at: HashMap<String, (usize, usize)> = HashMap::new();
    let mut all: Vec<Vec<Line>> = Vec::with_capacity(runs.len());
    for (ri, run) in runs.iter().enumerate() {
        let lines = read_lines(&run.path);
        for (li, line) in lines.iter().enumerate() {
            let Some(r) = &line.record else { continue };
            let replaces = latest
                .get(&r.job_id)
                .is_none_or(|(_, _, was)| crate::manifest::state::replaces(*was, r.status));
            if replaces {
                latest.insert(r.job_id.clone(), (ri, li, r.status));
            }
            if usable(r.status) {
                usable_at.insert(r.job_id.clone(), (ri, li));
            }
        }
        all.push(lines);
    }
    let needed: HashSet<(usize, usize)> = latest
        .values()
        .map(|(r, l, _)| (*r, *l))
        .chain(usable_at.values().copied())
        .collect();
    // Transcripts a needed record names, wherever they are.
    let transcripts: HashSet<String> = needed
        .iter()
        .filter_map(|(r, l)| all[*r][*l].record.as_ref()?.transcript.clone())
        .collect();
    runs.iter()
        .zip(all)
        .enumerate()
        .filter(|(_, (run, _))| pruned.contains(&run.run_id))
        .map(|(ri, (run, lines))| {
            let keep: Vec<usize> = (0..lines.len())
                .filter(|li| needed.contains(&(ri, *li)))
                .collect();
            let rel = format!(".zhi/runs/{}/transcripts", run.run_id);
            let drop_transcripts = std::fs::read_dir(run.path.join("transcripts"))
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .filter(|e| {
                    let name = format!("{rel}/{}", e.file_name().to_string_lossy());
                    !transcripts.contains(&name)
                })
                .map(|e| e.path())
                .collect();
            Plan {
                run: run.clone(),
                keep,
                lines,
                drop_transcripts,
            }
        })
        .collect()
}

/// A run's `results.jsonl`, line by line (a torn last line is no record, and goes).
fn read_lines(run: &Path) -> Vec<Line> {
    let Ok(bytes) = crate::small_file::read_io(&run.join("results.jsonl"), 1 << 34) else {
        return Vec::new();
    };
    bytes
        .split_inclusive(|b| *b == b'\n')
        .filter(|l| l.last() == Some(&b'\n'))
        .map(|l| Line {
            record: serde_json::from_slice(l).ok(),
            bytes: l.to_vec(),
        })
        .collect()
}

/// Bytes of the files under `dir`.
fn tree_bytes(dir: &Path) -> u64 {
    let mut sum = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => sum += tree_bytes(&e.path()),
            Ok(_) => sum += e.metadata().map_or(0, |m| m.len()),
            Err(_) => {}
        }
    }
    sum
}

/// Prunes one run: the totals first, then the run (moved out of `.zhi/runs/` and deleted when
/// nothing of it is needed; else its records rewritten, its unneeded transcripts removed).
fn apply(layout: &OutputLayout, out: &Path, plan: &Plan, totals: &Pruned) -> std::io::Result<()> {
    let body = serde_json::to_vec_pretty(totals).map_err(std::io::Error::other)?;
    layout.write_atomic(&pruned_path(out), &body)?;
    let run = &plan.run;
    if plan.keep.is_empty() {
        let trash = layout.zhi_dir().join("pruning");
        layout.create_dir(&trash)?;
        let moved = trash.join(&run.run_id);
        layout.rename(&run.path, &moved)?;
        layout.remove_tree(&moved)?;
        // A failed job's staging of that run goes with it.
        let failed = layout.zhi_dir().join("failed").join(&run.run_id);
        if failed.is_dir() {
            layout.remove_tree(&failed)?;
        }
        return Ok(());
    }
    let kept: Vec<u8> = plan
        .keep
        .iter()
        .flat_map(|i| plan.lines[*i].bytes.iter().copied())
        .collect();
    layout.write_atomic(&run.path.join("results.jsonl"), &kept)?;
    let records: Vec<JobRecord> = plan
        .keep
        .iter()
        .filter_map(|i| plan.lines[*i].record.clone())
        .collect();
    let csv = run.path.join("results.csv");
    if csv.is_file() {
        crate::manifest::write_csv(&csv, &records)?;
    }
    for t in &plan.drop_transcripts {
        layout.remove_file(t)?;
    }
    Ok(())
}
