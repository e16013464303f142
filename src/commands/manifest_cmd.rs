//! `zhi manifest show` and `zhi manifest merge`: a run's account at a glance, and one account
//! of several runs or shards. Both only read runs; merge writes only into the folder it is
//! given with `-o`.

use super::{Ctx, print_json};
use crate::cli::ManifestCommand;
use crate::config::Overrides;
use crate::exit::{Exit, ExitError};
use crate::i18n::tr;
use crate::manifest::merge::{self, LoadedRun, MergeError, RunSource};
use crate::manifest::summary::counts_line;
use crate::manifest::summary::{self, RunSummary};
use crate::manifest::{RunDir, RunStatus, Tokens};
use crate::sanitize::one_line;
use std::path::{Path, PathBuf};

pub fn run(ctx: &Ctx, cmd: ManifestCommand) -> Result<Exit, ExitError> {
    match cmd {
        ManifestCommand::Show { run, output } => show(ctx, run.as_deref(), output),
        ManifestCommand::Merge { runs, output } => merge_runs(ctx, &runs, &output),
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

/// The run `zhi manifest show [RUN]` and `zhi report [RUN]` mean: a path (run folder, or
/// output folder → its latest run), else a run id or unique id prefix in the output folder,
/// else the output folder's latest run.
pub(super) fn find_run(
    ctx: &Ctx,
    run: Option<&str>,
    output: Option<PathBuf>,
) -> Result<RunDir, ExitError> {
    let out = || -> Result<PathBuf, ExitError> {
        let config = ctx.config(Overrides {
            output_dir: output.clone(),
            ..Overrides::default()
        })?;
        Ok(absolute(&ctx.cwd, &config.run.output_dir))
    };
    let latest = |out: &Path, runs: Vec<RunDir>| {
        runs.into_iter().next_back().ok_or_else(|| {
            if std::fs::symlink_metadata(out).is_err() {
                ExitError::usage(format!(
                    "{} does not exist (give the output folder of a run: -o, or the folder or id of a run)",
                    out.display()
                ))
            } else {
                ExitError::usage(format!(
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
            Ok(RunSource::Run(dir)) => return Ok(dir),
            Ok(RunSource::Output(runs)) => return latest(&as_path, runs),
            Err(MergeError::NoRuns(p)) => return latest(&p, Vec::new()),
            // A folder that is no run may still share its name with a run id; look there too.
            Err(_) => {}
        }
    }
    let out = out()?;
    let runs = crate::manifest::list_runs(&out);
    if let Some(exact) = runs.iter().find(|r| r.run_id == run) {
        return Ok(exact.clone());
    }
    let matches: Vec<&RunDir> = runs.iter().filter(|r| r.run_id.starts_with(run)).collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ExitError::usage(format!(
            "no run `{}` in {} (give a run id from .zhi/runs/, or the path of a run folder)",
            one_line(run),
            out.display()
        ))),
        many => Err(ExitError::usage(format!(
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
    let dir = find_run(ctx, run, output)?;
    let loaded = LoadedRun::load(&dir).map_err(usage)?;
    let s = summary::summarize(&loaded);
    if ctx.global.json {
        print_json(&serde_json::to_value(&s).unwrap_or_default());
    } else {
        for line in render(&s) {
            println!("{}", crate::sanitize::one_line(&line));
        }
    }
    Ok(Exit::Success)
}

fn status_name(s: RunStatus) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn seconds(ms: u64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

fn tokens_line(t: &Tokens) -> String {
    if crate::i18n::is_chinese() {
        format!("{}（输入 {}，输出 {}）", t.total(), t.prompt, t.completion)
    } else {
        format!(
            "{} (prompt {}, completion {})",
            t.total(),
            t.prompt,
            t.completion
        )
    }
}

/// The human summary, line by line; untrusted text (inputs, messages) is made one-line and
/// free of control characters.
fn render(s: &RunSummary) -> Vec<String> {
    let mut out = Vec::new();
    let status = match s.status {
        Some(st) => status_name(st),
        None => tr(
            "incomplete: no manifest.json (the run was killed or is still running); read from its records",
            "未完成：没有 manifest.json（运行被终止或仍在进行）；以下取自它的记录",
        )
        .into(),
    };
    let shard = s
        .shard
        .as_ref()
        .map(|sh| format!("  {}{sh}", tr("shard ", "分片 ")))
        .unwrap_or_default();
    out.push(format!(
        "{}{}  {status}{shard}",
        tr("run ", "运行 "),
        one_line(&s.run_id)
    ));
    if let Some(r) = &s.reason {
        out.push(format!(
            "  {}{}",
            tr("reason: ", "原因："),
            one_line(&crate::i18n::localize(r))
        ));
    }
    if let Some(c) = &s.command {
        out.push(format!("  {}{}", tr("command: ", "命令："), one_line(c)));
    }
    if let Some(m) = &s.model {
        out.push(format!(
            "  {}{}",
            tr("model: ", "模型："),
            m.describe(crate::i18n::is_chinese())
        ));
    }
    out.extend(summary::escalation_and_cost(
        &s.escalations,
        &s.costs,
        crate::i18n::is_chinese(),
    ));
    let shown = |t: Option<crate::manifest::Timestamp>| t.map_or("?".into(), |t| t.to_string());
    let (started, finished) = (shown(s.started_at), shown(s.finished_at));
    let took = match (s.started_at, s.finished_at) {
        (Some(a), Some(b)) => format!("  ({})", seconds(b.millis_since(a))),
        _ => String::new(),
    };
    out.push(format!(
        "  {}{started}  {}{finished}{took}",
        tr("started ", "开始 "),
        tr("finished ", "结束 ")
    ));
    out.push(format!(
        "  {}{}",
        tr("jobs: ", "任务："),
        counts_line(&s.counts, crate::i18n::is_chinese())
    ));
    out.push(format!(
        "  {}{}  {}{}",
        tr("tokens: ", "令牌："),
        tokens_line(&s.tokens),
        tr("requests: ", "请求："),
        s.requests
    ));
    if !s.failures_by_kind.is_empty() {
        out.push(tr("  failures by kind:", "  按类型统计的失败：").into());
        for (kind, n) in &s.failures_by_kind {
            out.push(format!("    {kind:<18} {n}"));
        }
        out.push(tr("  failed jobs:", "  失败的任务：").into());
        for f in s.failures.iter().take(20) {
            let message = crate::i18n::localize(f.error_message.as_deref().unwrap_or(""));
            out.push(format!(
                "    {}  {}  {}",
                one_line(&f.input),
                f.error_kind.as_deref().unwrap_or("?"),
                one_line(&truncate(&message, 120))
            ));
            if let Some(t) = &f.transcript {
                out.push(format!(
                    "      {}{}",
                    tr("transcript ", "记录全文 "),
                    one_line(&transcript_path(s, t))
                ));
            }
        }
        if s.failures.len() > 20 {
            out.push(if crate::i18n::is_chinese() {
                format!(
                    "    …… 另有 {} 个（见 results.jsonl）",
                    s.failures.len() - 20
                )
            } else {
                format!(
                    "    … and {} more (see results.jsonl)",
                    s.failures.len() - 20
                )
            });
        }
    }
    if !s.refused.is_empty() {
        out.push(
            tr(
                "  jobs with refused tool calls:",
                "  有被拒绝的工具调用的任务：",
            )
            .into(),
        );
        for j in s.refused.iter().take(20) {
            out.push(format!(
                "    {}  {}{}{}",
                one_line(&j.input),
                j.refused_tool_calls,
                tr(" refused  transcript ", " 次被拒绝  记录全文 "),
                one_line(&transcript_path(s, j.transcript.as_deref().unwrap_or("?")))
            ));
        }
    }
    if !s.slowest.is_empty() {
        out.push(tr("  slowest jobs:", "  最慢的任务：").into());
        for j in &s.slowest {
            out.push(format!(
                "    {:>8}  {:<9}  {}",
                seconds(j.duration_ms),
                j.status.as_str(),
                one_line(&j.input)
            ));
        }
    }
    if s.torn_lines > 0 {
        out.push(if crate::i18n::is_chinese() {
            format!(
                "  注意：已忽略 results.jsonl 中 {} 行残缺的记录（写入途中崩溃）",
                s.torn_lines
            )
        } else {
            format!(
                "  note: {} torn line(s) in results.jsonl ignored (a crash mid-write)",
                s.torn_lines
            )
        });
    }
    out.push(format!(
        "  {}{}",
        tr("records: ", "记录："),
        one_line(
            &Path::new(&s.path)
                .join("results.jsonl")
                .display()
                .to_string()
        )
    ));
    out
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

fn merge_runs(ctx: &Ctx, paths: &[PathBuf], output: &Path) -> Result<Exit, ExitError> {
    let dest = absolute(&ctx.cwd, output);
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
                return Err(ExitError::usage(format!(
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
            ctx.warn(&format!(
                "run {} has no manifest.json (it was killed); its records are merged, its plan is taken from them",
                run.run_id
            ));
        }
        if run.torn_lines > 0 {
            ctx.warn(&format!(
                "run {}: {} torn line(s) in results.jsonl ignored",
                run.run_id, run.torn_lines
            ));
        }
        runs.push(run);
    }
    let command = crate::secret::command_for_display(std::env::args());
    let merged = merge::merge(&runs, merge::merged_run_id(), command, &dest);
    merged.write(&dest).map_err(usage)?;

    let m = &merged.manifest;
    let zh = crate::i18n::is_chinese();
    let into = one_line(&output.display().to_string());
    let mut lines = vec![
        if zh {
            format!("已将 {} 次运行合并到 {into}", runs.len())
        } else {
            format!("merged {} run(s) into {into}", runs.len())
        },
        format!(
            "  {}{}",
            tr("jobs: ", "任务："),
            counts_line(&m.counts, crate::i18n::is_chinese())
        ),
        format!("  {}{}", tr("tokens: ", "令牌："), tokens_line(&m.tokens)),
    ];
    if merged.missing.is_empty() {
        lines.push(
            tr(
                "  every planned job was done by one of the runs",
                "  每个计划中的任务都由某次运行完成了",
            )
            .into(),
        );
    } else {
        lines.push(if zh {
            format!(
                "  缺少：{} 个计划中的任务没有任何运行完成：",
                merged.missing.len()
            )
        } else {
            format!(
                "  missing: {} planned job(s) were done by none of the runs:",
                merged.missing.len()
            )
        });
        for x in &merged.missing {
            let what = match (&x.input, x.status) {
                (Some(input), Some(st)) => format!("{}  ({})", one_line(input), st.as_str()),
                _ => tr("(no run has a record of it)", "（没有运行记录过它）").into(),
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

/// A transcript's path as a person can open it: under the output folder that holds the run
/// (`<OUT>/.zhi/runs/<run>`).
fn transcript_path(s: &crate::manifest::summary::RunSummary, rel: &str) -> String {
    let run = std::path::Path::new(&s.path);
    match run.ancestors().nth(3) {
        Some(out) if !out.as_os_str().is_empty() => out.join(rel).display().to_string(),
        _ => rel.to_string(),
    }
}
