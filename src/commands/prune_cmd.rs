//! `zhi prune [OUT]` (docs/outputs.md#pruning): old runs' records and transcripts that no
//! job's state needs are removed; outputs never are.
//!
//! A job's state needs its latest record (what `zhi status` shows) and its latest usable one
//! (what a rerun finds it cached by), and the transcripts those records name. A pruned run
//! keeps exactly those lines of its `results.jsonl`; a run left with none is removed whole.
//! What the removed records spent is added to `.zhi/pruned.json` first, so the cost to date
//! stays true; a ledger it cannot read stops it before anything is removed or written. Every file is replaced by a rename and every run folder is moved out of
//! `.zhi/runs/` before it is deleted: a kill at any point leaves each run whole, either as it
//! was or as pruned, and the cache index (removed first) is rebuilt from them by the next run.

use super::Ctx;
use crate::cli::PruneArgs;
use crate::exit::{Exit, ExitError};
use crate::layout::OutputLayout;
use crate::manifest::state::{Pruned, pruned_path};
use crate::manifest::{JobRecord, RunDir, Status};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, Write};
use std::path::Path;

/// What a run's records are weighed by, read without the rest.
#[derive(serde::Deserialize)]
struct Slim {
    job_id: String,
    status: Status,
    #[serde(default)]
    transcript: Option<String>,
}

/// A record line's place: (run, line), both counted from 0.
type Place = (u32, u32);

/// What each job's state needs: the places of its latest record and its latest usable one,
/// and the transcripts those name.
#[derive(Default)]
struct Needed {
    places: HashSet<Place>,
    per_run: HashMap<u32, u64>,
    transcripts: HashSet<String>,
}

/// What prune did, or would do.
#[derive(Default)]
struct Tally {
    freed: u64,
    lines: u64,
    runs: u64,
}

pub(super) fn run(ctx: &Ctx, a: PruneArgs) -> Result<Exit, ExitError> {
    let out = super::output_folder_with_runs(ctx, a.out.clone())?;
    let layout = OutputLayout::new(&out);
    // A run writing its records now would race the rewrite: prune takes the run's lock.
    let _lock = if a.dry_run {
        None
    } else {
        Some(crate::run::lock::RunLock::acquire(&layout, "prune")?)
    };
    let runs = crate::manifest::list_runs(&out);
    let pruned_runs = candidates(&runs, a.keep_last, a.older_than, chrono::Utc::now());
    let needed = weigh(&runs);
    // What earlier prunes counted is written over with the new totals: a ledger that cannot
    // be read would lose its count for good, so prune stops until a person deals with it.
    let mut totals = Pruned::read(&out).map_err(|e| {
        ExitError::usage(msg!(
            "{e}; prune would write over it, so it stops here: repair it, or move it aside to start the count again"
        ))
    })?;
    if !a.dry_run {
        // Offsets are about to change: the index goes first, and the next run rebuilds it.
        let _ = layout.remove_file(&layout.cache_index());
    }
    let mut tally = Tally::default();
    for (ri, run) in runs.iter().enumerate() {
        if !pruned_runs.contains(&run.run_id) {
            continue;
        }
        prune_run(
            &layout,
            &out,
            ri as u32,
            run,
            &needed,
            &mut totals,
            &mut tally,
            a.dry_run,
        )
        .map_err(|e| ExitError::usage(msg!("cannot prune run {}: {e}", run.run_id)))?;
    }
    // Left by a kill during an earlier prune, or emptied now.
    let trash = layout.zhi_dir().join("pruning");
    if !a.dry_run && trash.is_dir() {
        let _ = layout.remove_tree(&trash);
    }
    let size = format!("{:.1} MiB", tally.freed as f64 / (1 << 20) as f64);
    println!(
        "{}",
        if a.dry_run {
            msg!(
                "would free {}: {} record(s), {} run(s) whole; outputs and what each job's state needs are kept",
                size,
                tally.lines,
                tally.runs
            )
        } else {
            msg!(
                "freed {}: {} record(s), {} run(s) whole; outputs and what each job's state needs are kept",
                size,
                tally.lines,
                tally.runs
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
    now: chrono::DateTime<chrono::Utc>,
) -> HashSet<String> {
    let keep_from = keep_last.map_or(runs.len(), |n| runs.len().saturating_sub(n as usize));
    let cutoff = older_than.map(|d| started_before(now, d));
    let old_enough = |r: &RunDir| match cutoff {
        None => true,
        Some(None) => false,
        Some(Some(c)) => started(&r.run_id).is_some_and(|t| t < c),
    };
    runs.iter()
        .enumerate()
        .filter(|(i, _)| keep_last.is_none() || *i < keep_from)
        .filter(|(_, r)| old_enough(r))
        .map(|(_, r)| r.run_id.clone())
        .collect()
}

/// The moment `ago` before `now`; `None` when that lies before the calendar's start, so no
/// run started before it (`--older-than 106751991167d`, or any larger number).
fn started_before(
    now: chrono::DateTime<chrono::Utc>,
    ago: std::time::Duration,
) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::Duration::from_std(ago)
        .ok()
        .and_then(|d| now.checked_sub_signed(d))
}

/// When a run started, from its id (`20261128T080254.123Z…`).
fn started(run_id: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let stamp = run_id.get(..19)?;
    chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%S%.3f")
        .ok()
        .map(|t| t.and_utc())
}

/// Calls `each` with every whole line of a run's `results.jsonl` (a torn last line is no
/// record), read a line at a time.
fn each_line(
    run: &Path,
    mut each: impl FnMut(u32, &[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let file = match crate::small_file::open_regular(&run.join("results.jsonl")) {
        Ok(f) => f,
        Err(crate::small_file::ReadError::NotFound) => return Ok(()),
        Err(e) => return Err(std::io::Error::other(e.to_string())),
    };
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let (mut line, mut li) = (Vec::new(), 0u32);
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 || line.last() != Some(&b'\n') {
            return Ok(());
        }
        each(li, &line)?;
        li += 1;
    }
}

/// Reads every run once, a line at a time, for what each job's state needs.
fn weigh(runs: &[RunDir]) -> Needed {
    struct At {
        place: Place,
        status: Status,
        transcript: Option<String>,
    }
    let mut latest: HashMap<String, At> = HashMap::new();
    let mut usable: HashMap<String, (Place, Option<String>)> = HashMap::new();
    for (ri, run) in runs.iter().enumerate() {
        let _ = each_line(&run.path, |li, bytes| {
            let Ok(r) = serde_json::from_slice::<Slim>(bytes) else {
                return Ok(());
            };
            let place = (ri as u32, li);
            if matches!(r.status, Status::Succeeded | Status::Cached) {
                usable.insert(r.job_id.clone(), (place, r.transcript.clone()));
            }
            let replaces = latest
                .get(&r.job_id)
                .is_none_or(|was| crate::manifest::state::replaces(was.status, r.status));
            if replaces {
                let at = At {
                    place,
                    status: r.status,
                    transcript: r.transcript,
                };
                latest.insert(r.job_id, at);
            }
            Ok(())
        });
    }
    let mut needed = Needed::default();
    let all = latest
        .into_values()
        .map(|a| (a.place, a.transcript))
        .chain(usable.into_values());
    for (place, transcript) in all {
        if needed.places.insert(place) {
            *needed.per_run.entry(place.0).or_default() += 1;
        }
        needed.transcripts.extend(transcript);
    }
    needed
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

/// Prunes one run (or says what it would do): what its removed records spent is added to the
/// totals, written first; then the run is moved out of `.zhi/runs/` and deleted when nothing
/// of it is needed, else its `results.jsonl` is rewritten with the needed lines (beside itself,
/// then renamed over it), its unneeded transcripts and its `results.csv` removed.
#[allow(clippy::too_many_arguments)]
fn prune_run(
    layout: &OutputLayout,
    out: &Path,
    ri: u32,
    run: &RunDir,
    needed: &Needed,
    totals: &mut Pruned,
    tally: &mut Tally,
    dry_run: bool,
) -> std::io::Result<()> {
    let kept = needed.per_run.get(&ri).copied().unwrap_or(0);
    let (mut lines, mut gone_bytes) = (0u64, 0u64);
    let mut spent = Pruned::default();
    each_line(&run.path, |li, bytes| {
        lines += 1;
        if !needed.places.contains(&(ri, li)) {
            gone_bytes += bytes.len() as u64;
            if let Ok(r) = serde_json::from_slice::<JobRecord>(bytes) {
                spent.add(&r);
            }
        }
        Ok(())
    })?;
    let rel = format!(".zhi/runs/{}/transcripts", run.run_id);
    let drop_transcripts: Vec<std::path::PathBuf> = std::fs::read_dir(run.path.join("transcripts"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| {
            !needed
                .transcripts
                .contains(&format!("{rel}/{}", e.file_name().to_string_lossy()))
        })
        .map(|e| e.path())
        .collect();
    let whole = kept == 0;
    let gone = lines - kept;
    if !whole && gone == 0 && drop_transcripts.is_empty() {
        return Ok(());
    }
    tally.lines += gone;
    tally.runs += u64::from(whole);
    tally.freed += if whole {
        tree_bytes(&run.path)
    } else {
        gone_bytes
            + drop_transcripts
                .iter()
                .filter_map(|p| std::fs::metadata(p).ok())
                .map(|m| m.len())
                .sum::<u64>()
    };
    if dry_run {
        println!(
            "{}",
            if whole {
                msg!("would remove run {} ({} record(s))", run.run_id, gone)
            } else {
                msg!(
                    "would remove {} of run {}'s {} record(s) and {} transcript(s)",
                    gone,
                    run.run_id,
                    lines,
                    drop_transcripts.len()
                )
            }
        );
        return Ok(());
    }
    totals.runs += u64::from(whole);
    totals.absorb(spent);
    let body = serde_json::to_vec_pretty(totals).map_err(std::io::Error::other)?;
    layout.write_atomic(&pruned_path(out), &body)?;
    if whole {
        return remove_run(layout, run);
    }
    layout.write_atomic_with(&run.path.join("results.jsonl"), |f| {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        each_line(&run.path, |li, bytes| {
            if needed.places.contains(&(ri, li)) {
                w.write_all(bytes)?;
            }
            Ok(())
        })?;
        w.flush()
    })?;
    // The run's CSV would still hold the removed rows: `zhi status --csv` is the folder's table.
    let csv = run.path.join("results.csv");
    if csv.is_file() {
        layout.remove_file(&csv)?;
    }
    for t in &drop_transcripts {
        layout.remove_file(t)?;
    }
    Ok(())
}

/// A run of which nothing is needed: moved out of `.zhi/runs/`, then deleted, with its failed
/// jobs' staging.
fn remove_run(layout: &OutputLayout, run: &RunDir) -> std::io::Result<()> {
    let trash = layout.zhi_dir().join("pruning");
    layout.create_dir(&trash)?;
    let moved = trash.join(&run.run_id);
    layout.rename(&run.path, &moved)?;
    layout.remove_tree(&moved)?;
    let failed = layout.zhi_dir().join("failed").join(&run.run_id);
    if failed.is_dir() {
        layout.remove_tree(&failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(ids: &[&str]) -> Vec<RunDir> {
        ids.iter()
            .map(|id| RunDir {
                run_id: id.to_string(),
                path: std::path::PathBuf::from(id),
            })
            .collect()
    }

    #[test]
    fn a_duration_past_the_calendar_finds_no_run_old_enough() {
        let all = runs(&["20200101T000000.000Zaaaa", "20260101T000000.000Zbbbb"]);
        let now = chrono::DateTime::parse_from_rfc3339("2026-06-01T00:00:00Z")
            .unwrap()
            .to_utc();
        let days = |n: u64| Some(std::time::Duration::from_secs(n * 86_400));
        assert_eq!(candidates(&all, None, days(30), now).len(), 2);
        assert_eq!(candidates(&all, None, days(1000), now).len(), 1);
        for past in [
            days(106_751_991_167),
            days(99_999_999_999_999),
            Some(std::time::Duration::from_secs(u64::MAX)),
        ] {
            assert!(candidates(&all, None, past, now).is_empty(), "{past:?}");
            assert!(candidates(&all, Some(1), past, now).is_empty(), "{past:?}");
        }
        assert_eq!(candidates(&all, Some(1), None, now).len(), 1);
    }
}
