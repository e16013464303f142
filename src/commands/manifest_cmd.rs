//! `zhi manifest show` and `zhi manifest merge`: a run's account at a glance, and one account
//! of several runs or shards. Both only read runs; merge writes only into the folder it is
//! given with `-o`.

use super::{Ctx, print_json};
use crate::cli::ManifestCommand;
use crate::config::Overrides;
use crate::exit::{Exit, ExitError};
use crate::manifest::merge::{self, LoadedRun, MergeError, RunSource};
use crate::manifest::summary::{self, counts_line};
use crate::manifest::{RunDir, Tokens};
use crate::sanitize::one_line;
use std::path::{Path, PathBuf};

pub(super) fn run(ctx: &Ctx, cmd: ManifestCommand) -> Result<Exit, ExitError> {
    match cmd {
        ManifestCommand::Show { run, output } => show(ctx, run.as_deref(), output),
        ManifestCommand::Merge { runs, output } => merge_runs(ctx, &runs, &output),
    }
}

/// Whether a run ran jobs: sent requests, or ended jobs other than cached or skipped ones
/// (its manifest says; a run killed before it wrote one, its records).
fn ran_jobs(run: &RunDir) -> bool {
    match crate::manifest::read_manifest(&run.path) {
        Ok(Some(m)) => {
            m.requests > 0 || m.counts.succeeded + m.counts.failed + m.counts.cancelled > 0
        }
        _ => crate::manifest::read_records(&run.path)
            .is_ok_and(|(records, _)| records.iter().any(|r| r.status.ran())),
    }
}

fn usage(e: MergeError) -> ExitError {
    ExitError::usage(e.to_string())
}

fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// Which run of an output folder stands for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Latest {
    /// Its latest run (`zhi manifest show`: a rerun that found everything cached says so).
    Run,
    /// Its latest run that ran jobs (`zhi report`: a page of a rerun that only found its jobs
    /// cached shows nothing that happened), else its latest.
    ThatRan,
}

/// A run found, and the later runs of its folder passed over (for [`Latest::ThatRan`]).
pub(super) struct Found {
    pub dir: RunDir,
    pub passed_over: usize,
}

/// The run `zhi manifest show [RUN]` and `zhi report [RUN]` mean: a path (run folder, or
/// output folder → its latest run, as `latest` says), else a run id or unique id prefix in the
/// output folder, else the output folder's latest run.
pub(super) fn find_run(
    ctx: &Ctx,
    run: Option<&str>,
    output: Option<PathBuf>,
    pick: Latest,
) -> Result<Found, ExitError> {
    let found = |dir: RunDir| Found {
        dir,
        passed_over: 0,
    };
    let out = || -> Result<PathBuf, ExitError> {
        let config = ctx.config(Overrides {
            output_dir: output.clone(),
            ..Overrides::default()
        })?;
        Ok(absolute(&ctx.cwd, &config.run.output_dir))
    };
    let latest = |out: &Path, runs: Vec<RunDir>| {
        let ran = match pick {
            Latest::ThatRan => runs.iter().rposition(ran_jobs),
            Latest::Run => None,
        };
        let passed_over = ran.map_or(0, |at| runs.len() - 1 - at);
        let chosen = match ran {
            Some(at) => runs.into_iter().nth(at),
            None => runs.into_iter().next_back(),
        };
        chosen.map(|dir| Found { dir, passed_over }).ok_or_else(|| {
            if std::fs::symlink_metadata(out).is_err() {
                ExitError::usage(msg!(
                    "{} does not exist (give the output folder of a run: -o, or the folder or id of a run)",
                    out.display()
                ))
            } else {
                ExitError::usage(msg!(
                    "{} has no runs yet (they are kept in .zhi/runs/)",
                    out.display()
                ))
            }
        })
    };
    let Some(run) = run else {
        let out = out()?;
        return latest(&out, crate::manifest::list_runs(&out));
    };
    let as_path = absolute(&ctx.cwd, Path::new(run));
    if as_path.is_dir() {
        match merge::resolve(&as_path) {
            Ok(RunSource::Run(dir)) => return Ok(found(dir)),
            Ok(RunSource::Output(runs)) => return latest(&as_path, runs),
            Err(MergeError::NoRuns(p)) => return latest(&p, Vec::new()),
            // A folder that is no run may still share its name with a run id; look there too.
            Err(_) => {}
        }
    }
    let out = out()?;
    let runs = crate::manifest::list_runs(&out);
    if let Some(exact) = runs.iter().find(|r| r.run_id == run) {
        return Ok(found(exact.clone()));
    }
    let matches: Vec<&RunDir> = runs.iter().filter(|r| r.run_id.starts_with(run)).collect();
    match matches.as_slice() {
        [one] => Ok(found((*one).clone())),
        [] => Err(ExitError::usage(msg!(
            "no run `{}` in {} (give a run id from .zhi/runs/, or the path of a run folder)",
            one_line(run),
            out.display()
        ))),
        many => Err(ExitError::usage(msg!(
            "`{}` matches {} runs in {}: {}",
            one_line(run),
            many.len(),
            out.display(),
            many.iter()
                .map(|r| r.run_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

fn show(ctx: &Ctx, run: Option<&str>, output: Option<PathBuf>) -> Result<Exit, ExitError> {
    let dir = find_run(ctx, run, output, Latest::Run)?.dir;
    let loaded = LoadedRun::load(&dir).map_err(usage)?;
    let s = summary::summarize(&loaded);
    if ctx.global.json {
        print_json(&serde_json::to_value(&s).unwrap_or_default());
    } else {
        for line in summary::lines(&s, summary::MANIFEST_SHOW, &ctx.cwd, crate::i18n::lang()) {
            println!("{}", crate::sanitize::one_line(&line));
        }
    }
    Ok(Exit::Success)
}

fn tokens_line(t: &Tokens) -> String {
    summary::tokens_line(t, crate::i18n::lang())
}

fn merge_runs(ctx: &Ctx, paths: &[PathBuf], output: &Path) -> Result<Exit, ExitError> {
    let dest = absolute(&ctx.cwd, output);
    // A merge is an output folder like any: never inside records, never a settings file.
    let config = ctx.config(Overrides::default()).ok();
    crate::plan::check_output_folder(&dest, &ctx.settings_files(config.as_ref()))
        .map_err(|e| ExitError::usage(e.to_string()))?;
    let dest_real = std::fs::canonicalize(&dest).ok();
    let mut dirs: Vec<RunDir> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for p in paths {
        let p = absolute(&ctx.cwd, p);
        let found = match merge::resolve(&p).map_err(usage)? {
            RunSource::Run(d) => vec![d],
            RunSource::Output(runs) => runs,
        };
        for d in found {
            let real = std::fs::canonicalize(&d.path).unwrap_or_else(|_| d.path.clone());
            if dest_real.as_ref() == Some(&real) {
                return Err(ExitError::usage(msg!(
                    "-o {} is one of the runs being merged; write the merge to another folder",
                    output.display()
                )));
            }
            if seen.insert(real) {
                dirs.push(d);
            }
        }
    }
    let mut runs = Vec::with_capacity(dirs.len());
    for d in &dirs {
        let run = LoadedRun::load(d).map_err(usage)?;
        if run.manifest.is_none() {
            ctx.warn(&msg!(
                "run {} has no manifest.json (it was killed); its records are merged, its plan is taken from them",
                run.run_id
            ));
        }
        if run.torn_lines > 0 {
            ctx.warn(&msg!(
                "run {}: {} torn line(s) in results.jsonl ignored",
                run.run_id,
                run.torn_lines
            ));
        }
        runs.push(run);
    }
    let command = crate::secret::command_for_display(std::env::args());
    let merged = merge::merge(&runs, merge::merged_run_id(), command, &dest);
    merged.write(&dest).map_err(usage)?;

    let m = &merged.manifest;
    let into = one_line(&output.display().to_string());
    let mut lines = vec![
        t!("merged {n} run(s) into {path}", n = runs.len(), path = into),
        t!(
            "  jobs: {counts}",
            counts = counts_line(&m.counts, crate::i18n::lang())
        ),
        t!("  tokens: {tokens}", tokens = tokens_line(&m.tokens)),
    ];
    if merged.missing.is_empty() {
        lines.push(t!("  every planned job was done by one of the runs"));
    } else {
        lines.push(t!(
            "  missing: {n} planned job(s) were done by none of the runs:",
            n = merged.missing.len()
        ));
        for x in &merged.missing {
            let what = match (&x.input, x.status) {
                (Some(input), Some(st)) => format!("{}  ({})", one_line(input), st.as_str()),
                _ => t!("(no run has a record of it)"),
            };
            lines.push(format!("    {}  {what}", x.job_id));
        }
    }
    if ctx.global.json {
        let mut v = serde_json::to_value(m).unwrap_or_default();
        if let Some(obj) = v.as_object_mut() {
            let ids: Vec<&str> = merged.missing.iter().map(|x| x.job_id.as_str()).collect();
            obj.insert("missing".into(), serde_json::json!(ids));
        }
        print_json(&v);
        if !ctx.global.quiet {
            for l in &lines {
                crate::i18n::notice(l);
            }
        }
    } else if !ctx.global.quiet || !merged.missing.is_empty() {
        for l in &lines {
            println!("{}", crate::sanitize::one_line(l));
        }
    }
    Ok(if merged.missing.is_empty() {
        Exit::Success
    } else {
        Exit::JobsFailed
    })
}
