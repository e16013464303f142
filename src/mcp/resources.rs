//! Manifests, reports and tables as MCP resources (`file://` URIs): what the output folders
//! inside the roots hold, listed for an agent that browses rather than calls `results`. Only
//! those files are served, whole, up to [`MAX_RESOURCE_BYTES`].

use super::Roots;
use crate::layout::OutputLayout;
use rmcp::model::{Resource, ResourceContents};
use std::path::{Path, PathBuf};

/// The largest resource served; a larger one is read with the `results` tool, a page at a time.
const MAX_RESOURCE_BYTES: u64 = 1 << 20;
/// The most runs of a folder listed (the latest).
const MAX_RUNS_LISTED: usize = 20;

/// The files of a run folder served as resources.
const RUN_FILES: [&str; 3] = ["manifest.json", "report.html", "results.csv"];

/// Why a resource cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResourceError {
    #[error("{uri} is not a manifest, report or table of an output folder inside the roots")]
    NotServed { uri: String },
    #[error("{uri} is {size} bytes, more than a resource may be; read it with the results tool")]
    TooLarge { uri: String, size: u64 },
    #[error("cannot read {path}: {e}")]
    Read { path: String, e: String },
}

fn mime(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => "application/json",
        Some("html") => "text/html",
        Some("csv") => "text/csv",
        Some("jsonl") => "application/jsonl",
        _ => "text/plain",
    }
}

fn resource(path: &Path, name: String) -> Resource {
    let mut r =
        Resource::new(format!("file://{}", path.display()), name).with_mime_type(mime(path));
    if let Ok(m) = std::fs::metadata(path) {
        r = r.with_size(m.len());
    }
    r
}

/// The resources of the output folders `outputs`: each run's manifest, report and records
/// (latest runs first), and the folder's tables.
pub(crate) fn list(outputs: &[PathBuf]) -> Vec<Resource> {
    let mut out = Vec::new();
    for dir in outputs {
        let runs = OutputLayout::new(dir).runs();
        let mut ids: Vec<String> = std::fs::read_dir(&runs)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        ids.sort();
        for id in ids.iter().rev().take(MAX_RUNS_LISTED) {
            for f in RUN_FILES {
                let p = runs.join(id).join(f);
                if p.is_file() {
                    out.push(resource(&p, format!("run {id}: {f}")));
                }
            }
        }
        let mut tables: Vec<PathBuf> = std::fs::read_dir(dir.join("tables"))
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        tables.sort();
        for t in tables.iter().filter(|t| served_table(t)) {
            let name = t.file_name().map(|n| n.to_string_lossy().into_owned());
            out.push(resource(t, format!("table {}", name.unwrap_or_default())));
        }
    }
    out
}

fn served_table(p: &Path) -> bool {
    p.is_file()
        && matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("csv" | "jsonl")
        )
}

/// Whether `path` (canonical) is a file [`list`] would list: a run folder's file or a table.
fn served(path: &Path) -> bool {
    let parent = path.parent();
    let in_tables = parent
        .and_then(Path::file_name)
        .is_some_and(|n| n == "tables");
    let in_run = parent
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .is_some_and(|n| n == "runs")
        && parent
            .and_then(Path::parent)
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .is_some_and(|n| n == ".zhi")
        && path
            .file_name()
            .is_some_and(|n| RUN_FILES.iter().any(|f| n == *f));
    (in_tables && served_table(path)) || in_run
}

/// A resource's text, by its `file://` URI.
pub(crate) fn read(roots: &Roots, uri: &str) -> Result<ResourceContents, ResourceError> {
    let not_served = || ResourceError::NotServed {
        uri: roots.redact(uri),
    };
    let raw = uri.strip_prefix("file://").ok_or_else(not_served)?;
    let path = Path::new(raw).canonicalize().map_err(|_| not_served())?;
    if !roots.contains(&path) || !served(&path) {
        return Err(not_served());
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    if size > MAX_RESOURCE_BYTES {
        return Err(ResourceError::TooLarge {
            uri: uri.to_string(),
            size,
        });
    }
    let text = std::fs::read(&path).map_err(|e| ResourceError::Read {
        path: roots.shown(&path),
        e: e.to_string(),
    })?;
    Ok(
        ResourceContents::text(String::from_utf8_lossy(&text), uri.to_string())
            .with_mime_type(mime(&path)),
    )
}
