//! Reading runs back: for the cache, `manifest show` and `manifest merge`. A torn last line (a
//! crash mid-write) is skipped, never an error.

use super::{JobRecord, RunManifest};
use std::io;
use std::path::{Path, PathBuf};

/// One run's folder under `<OUT>/.zhi/runs/`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RunDir {
    pub run_id: String,
    pub path: PathBuf,
}

/// The runs in an output folder, oldest first (run ids sort by time).
pub fn list_runs(output_dir: &Path) -> Vec<RunDir> {
    let mut runs: Vec<RunDir> = std::fs::read_dir(output_dir.join(".zhi").join("runs"))
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| RunDir {
            run_id: e.file_name().to_string_lossy().into_owned(),
            path: e.path(),
        })
        .collect();
    runs.sort();
    runs
}

/// The newest run of an output folder.
pub fn latest_run(output_dir: &Path) -> Option<RunDir> {
    list_runs(output_dir).pop()
}

/// The largest `results.jsonl` read back (a million records of about 1 KB).
const MAX_RESULTS_BYTES: u64 = 1 << 30;
/// The largest `manifest.json` read back (its planned job ids for a very large run).
const MAX_MANIFEST_BYTES: u64 = 256 << 20;

/// The records of `results.jsonl` in a run folder; lines that do not parse (a torn last line)
/// are skipped and counted.
pub fn read_records(run_dir: &Path) -> io::Result<(Vec<JobRecord>, usize)> {
    let text = match crate::small_file::read_io(&run_dir.join("results.jsonl"), MAX_RESULTS_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    };
    let mut records = Vec::new();
    let mut bad = 0;
    for line in text.split(|b| *b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<JobRecord>(line) {
            Ok(r) => records.push(r),
            Err(_) => bad += 1,
        }
    }
    Ok((records, bad))
}

/// A run's `manifest.json`, if it was written (a killed run has none).
pub(crate) fn read_manifest(run_dir: &Path) -> io::Result<Option<RunManifest>> {
    match crate::small_file::read_io(&run_dir.join("manifest.json"), MAX_MANIFEST_BYTES) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;

    fn record(id: &str) -> JobRecord {
        JobRecord::new(id, "s", "a.txt", Status::Succeeded)
    }

    #[test]
    fn torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let layout = crate::layout::OutputLayout::new(dir.path());
        let mut w = ManifestWriter::create(&layout, dir.path()).unwrap();
        w.append(&record("a")).unwrap();
        w.append(&record("b")).unwrap();
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("results.jsonl"))
            .unwrap();
        f.write_all(br#"{"job_id":"c","sk"#).unwrap();
        let (records, bad) = read_records(dir.path()).unwrap();
        assert_eq!(
            records
                .iter()
                .map(|r| r.job_id.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(bad, 1);
    }
}
