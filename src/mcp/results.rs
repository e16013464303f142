//! What a run left, read for an agent a page at a time: a job's record and the text of its
//! outputs, a folder's extraction table, or the list of both. Every answer is capped
//! ([`MAX_BYTES`]) and pages on with an offset; nothing outside the output folder is read, and
//! no transcript is returned (its bodies are the documents themselves).

use crate::layout::OutputLayout;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The most text one answer carries.
pub(crate) const MAX_BYTES: usize = 64 << 10;
/// The most rows or jobs one answer lists.
pub(crate) const MAX_ROWS: usize = 200;

/// Why a result could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResultError {
    #[error("output folder {path} has no runs yet")]
    NoRuns { path: String },
    #[error("no job `{job}` in run {run}")]
    NoJob { job: String, run: String },
    #[error("no table `{name}` in {path}")]
    NoTable { name: String, path: String },
    #[error("job `{job}` has no output `{file}`")]
    NoOutput { job: String, file: String },
    #[error("cannot read {path}: {e}")]
    Read { path: String, e: String },
    /// A page of nothing would answer the offset it was asked from: a client paging until
    /// `next_offset` is `null` would never end.
    #[error(
        "`limit` must be at least 1 (leave it out for a page of 50 rows or jobs, or 64 KB of text)"
    )]
    ZeroLimit,
}

/// The run to read: the one named, else the latest in the output folder.
pub(crate) fn run_dir(output_dir: &Path, run_id: Option<&str>) -> Result<PathBuf, ResultError> {
    let runs = OutputLayout::new(output_dir).runs();
    if let Some(id) = run_id {
        let id = Path::new(id)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        return Ok(runs.join(id));
    }
    let mut ids: Vec<String> = std::fs::read_dir(&runs)
        .map_err(|_| no_runs(output_dir))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids.pop()
        .map(|id| runs.join(id))
        .ok_or_else(|| no_runs(output_dir))
}

fn no_runs(output_dir: &Path) -> ResultError {
    ResultError::NoRuns {
        path: output_dir.display().to_string(),
    }
}

fn records(run: &Path) -> Vec<Value> {
    std::fs::read_to_string(run.join("results.jsonl"))
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Where to start and how much: an offset and a count (rows) or bytes (text). Every page
/// that is not the last holds something, so `next_offset` always moves on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Page {
    offset: u64,
    limit: Option<u64>,
}

impl Page {
    /// A page from `offset`; a `limit` of 0 is refused.
    pub(crate) fn new(offset: u64, limit: Option<u64>) -> Result<Page, ResultError> {
        if limit == Some(0) {
            return Err(ResultError::ZeroLimit);
        }
        Ok(Page { offset, limit })
    }
}

/// The run's jobs (a page of them) and the folder's tables.
pub(crate) fn overview(output_dir: &Path, run: &Path, page: Page) -> Value {
    let all = records(run);
    let limit = page.limit.map_or(50, |l| l as usize).min(MAX_ROWS);
    let start = (page.offset as usize).min(all.len());
    let jobs: Vec<Value> = all[start..]
        .iter()
        .take(limit)
        .map(|r| {
            let outputs: Vec<Value> = r["outputs"]
                .as_array()
                .map(|o| o.iter().map(|x| x["path"].clone()).collect())
                .unwrap_or_default();
            json!({
                "job_id": r["job_id"], "skill": r["skill"], "input": r["input"],
                "status": r["status"], "error": r["error"], "output_dir": r["output_dir"],
                "outputs": outputs,
            })
        })
        .collect();
    let end = start + jobs.len();
    json!({
        "run_id": run.file_name().map(|n| n.to_string_lossy().into_owned()),
        "jobs_total": all.len(),
        "offset": start,
        "jobs": jobs,
        "next_offset": (end < all.len()).then_some(end),
        "tables": tables(output_dir),
    })
}

/// The folder's tables: `tables/<name>.jsonl`, by name.
fn tables(output_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(output_dir.join("tables"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.strip_suffix(".jsonl").map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A page of rows of the folder's table `name` (its `.jsonl`).
pub(crate) fn table(output_dir: &Path, name: &str, page: Page) -> Result<Value, ResultError> {
    let name = name.trim_end_matches(".jsonl").trim_end_matches(".csv");
    let no_table = || ResultError::NoTable {
        name: name.to_string(),
        path: output_dir.join("tables").display().to_string(),
    };
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(no_table());
    }
    let path = output_dir.join("tables").join(format!("{name}.jsonl"));
    let text = read_inside(output_dir, &path).map_err(|_| no_table())?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let limit = page.limit.map_or(50, |l| l as usize).min(MAX_ROWS);
    let start = (page.offset as usize).min(lines.len());
    let mut rows = Vec::new();
    let mut bytes = 0;
    for line in lines[start..].iter().take(limit) {
        if bytes + line.len() > MAX_BYTES && !rows.is_empty() {
            break;
        }
        bytes += line.len();
        rows.push(serde_json::from_str::<Value>(line).unwrap_or(Value::Null));
    }
    let end = start + rows.len();
    let files: Vec<String> = ["csv", "jsonl", "xlsx"]
        .iter()
        .map(|e| format!("tables/{name}.{e}"))
        .filter(|p| output_dir.join(p).is_file())
        .collect();
    Ok(json!({
        "table": name,
        "files": files,
        "rows_total": lines.len(),
        "offset": start,
        "rows": rows,
        "next_offset": (end < lines.len()).then_some(end),
    }))
}

/// A job's record, and the text of its outputs (or of the one named, from `page.offset`).
pub(crate) fn job(
    output_dir: &Path,
    run: &Path,
    job: &str,
    file: Option<&str>,
    page: Page,
) -> Result<Value, ResultError> {
    let all = records(run);
    let rec = all
        .iter()
        .rev()
        .find(|r| r["job_id"] == job || r["input"] == job || r["output_dir"] == job)
        .ok_or_else(|| ResultError::NoJob {
            job: job.to_string(),
            run: run
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        })?;
    let outputs: Vec<String> = rec["outputs"]
        .as_array()
        .map(|o| {
            o.iter()
                .filter_map(|x| x["path"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let chosen: Vec<&String> = match file {
        Some(f) => {
            let found = outputs
                .iter()
                .find(|o| *o == f || o.rsplit('/').next() == Some(f));
            vec![found.ok_or_else(|| ResultError::NoOutput {
                job: job.to_string(),
                file: f.to_string(),
            })?]
        }
        None => outputs.iter().collect(),
    };
    let offset = if file.is_some() { page.offset } else { 0 };
    let mut room = page.limit.map_or(MAX_BYTES, |l| l as usize).min(MAX_BYTES);
    let mut texts = Vec::new();
    for path in chosen {
        let (text, next, size) = text_page(output_dir, path, offset, room)?;
        room = room.saturating_sub(text.as_ref().map_or(0, String::len));
        texts.push(json!({
            "path": path, "bytes": size, "offset": offset,
            "text": text, "binary": text.is_none(), "next_offset": next,
        }));
    }
    Ok(json!({
        "job_id": rec["job_id"], "skill": rec["skill"], "input": rec["input"],
        "status": rec["status"], "error": rec["error"], "args": rec["args"],
        "output_dir": rec["output_dir"], "outputs": texts,
    }))
}

/// `max` bytes of an output's text from `offset` (cut at a character's start), the offset to
/// go on from, and the file's size; `None` for the text of a file that is not UTF-8.
fn text_page(
    output_dir: &Path,
    rel: &str,
    offset: u64,
    max: usize,
) -> Result<(Option<String>, Option<u64>, u64), ResultError> {
    let text = read_inside(output_dir, &output_dir.join(rel));
    let text = match text {
        Ok(t) => t,
        Err(ReadInside::NotText(size)) => return Ok((None, None, size)),
        Err(ReadInside::Io(e)) => {
            return Err(ResultError::Read {
                path: rel.to_string(),
                e,
            });
        }
    };
    let size = text.len() as u64;
    let mut start = (offset as usize).min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + max).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    // A limit smaller than the character there still moves on by that character.
    if end == start && start < text.len() {
        end = start + text[start..].chars().next().map_or(0, char::len_utf8);
    }
    let next = (end < text.len()).then_some(end as u64);
    Ok((Some(text[start..end].to_string()), next, size))
}

enum ReadInside {
    NotText(u64),
    Io(String),
}

/// A file's text, when the file (links resolved) is inside the output folder.
fn read_inside(output_dir: &Path, path: &Path) -> Result<String, ReadInside> {
    let io = |e: std::io::Error| ReadInside::Io(e.to_string());
    let real = path.canonicalize().map_err(io)?;
    let base = output_dir.canonicalize().map_err(io)?;
    if !real.starts_with(&base) || !real.is_file() {
        return Err(ReadInside::Io(msg!("not a file in the output folder")));
    }
    let bytes = std::fs::read(&real).map_err(io)?;
    let size = bytes.len() as u64;
    String::from_utf8(bytes).map_err(|_| ReadInside::NotText(size))
}
