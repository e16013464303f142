//! `zhi report [RUN]`: write a run's HTML report and print its absolute `file://` link. The run is named as
//! for `zhi manifest show`, except that an output folder stands for its latest run that ran
//! jobs (a nightly rerun that found everything cached has nothing to chart), said on stderr;
//! the report is the only file written, atomically.

use super::manifest_cmd::Latest;
use super::{Ctx, print_json};
use crate::exit::{Exit, ExitError};
use crate::i18n;
use crate::manifest::merge::LoadedRun;
use crate::sanitize::one_line;
use std::path::PathBuf;

/// A report written where zhi keeps records or reads settings would break the next command
/// there (`--out zhi.yaml`, `--out out/.zhi/runs/…/results.jsonl`): refused, naming the place.
fn refuse_place(ctx: &Ctx, path: &std::path::Path) -> Result<(), ExitError> {
    let config = ctx.config(crate::config::Overrides::default()).ok();
    let why = match crate::plan::forbidden(path, &ctx.settings_files(config.as_ref())) {
        None => return Ok(()),
        Some(crate::plan::Forbidden::Records(r)) => msg!(
            "it lies inside {records}, where zhi keeps a folder's records",
            records = one_line(&r.display().to_string())
        ),
        Some(crate::plan::Forbidden::Settings(f)) => msg!(
            "it is, or lies inside, {file}, where zhi reads a settings file",
            file = one_line(&f.display().to_string())
        ),
    };
    Err(ExitError::usage(msg!(
        "--out {path} cannot be the report's file: {why}; name another file",
        path = one_line(&path.display().to_string())
    )))
}

/// The report's file name in the run's folder, unless `--out` names another place.
pub(super) const REPORT_FILE: &str = "report.html";

pub(super) fn run(
    ctx: &Ctx,
    run: Option<&str>,
    output: Option<PathBuf>,
    out: Option<PathBuf>,
) -> Result<Exit, ExitError> {
    // A run's records or manifest name the run's folder.
    let folder_of_file = run.and_then(|r| {
        let p = ctx.cwd.join(r);
        let name = p.file_name()?.to_str()?;
        if p.is_file() && matches!(name, "results.jsonl" | "manifest.json") {
            p.parent()?.to_str().map(str::to_string)
        } else {
            None
        }
    });
    let found = super::manifest_cmd::find_run(
        ctx,
        folder_of_file.as_deref().or(run),
        output,
        Latest::ThatRan,
    )?;
    let dir = found.dir;
    if found.passed_over > 0 {
        crate::i18n::notice(&msg!(
            "report of run {run}, the latest that ran jobs (the {n} run(s) after it only found them cached or skipped)",
            run = one_line(&dir.run_id),
            n = found.passed_over
        ));
    }
    let loaded = LoadedRun::load(&dir).map_err(|e| ExitError::usage(e.to_string()))?;

    let path = match out {
        Some(p) => {
            let path = ctx.cwd.join(p);
            refuse_place(ctx, &path)?;
            path
        }
        None => dir.path.join(REPORT_FILE),
    };
    if path.is_dir() {
        return Err(ExitError::usage(msg!(
            "{path} is a folder; --out takes the report's file name",
            path = one_line(&path.display().to_string()),
        )));
    }
    let folder = path
        .parent()
        .filter(|p| p.is_dir())
        .ok_or_else(|| {
            ExitError::usage(msg!(
                "no folder to write the report into: {path}",
                path = one_line(&path.display().to_string())
            ))
        })?
        .to_path_buf();

    let links = crate::report::Links::new(&loaded, &folder);
    let page = crate::report::render(&loaded, &links, i18n::lang());
    crate::manifest::write_atomic(&path, page.as_bytes()).map_err(|e| {
        ExitError::usage(msg!(
            "cannot write the report {path}: {e}",
            path = one_line(&path.display().to_string())
        ))
    })?;

    // An absolute link a terminal lets a person open, wherever they run it from.
    let url = reqwest::Url::from_file_path(&path)
        .map(String::from)
        .unwrap_or_else(|()| path.display().to_string());
    if ctx.global.json {
        print_json(&serde_json::json!({
            "run_id": loaded.run_id,
            "report": path.display().to_string(),
            "url": url,
            "jobs": loaded.records.len(),
        }));
    } else {
        println!("{}", one_line(&url));
    }
    Ok(Exit::Success)
}
