//! Writing records: each record is one line, written whole as its job ends (and synced when
//! the job did work now), so a crash loses at most the record being written — never an
//! earlier one that cost a request.

use super::{JobRecord, RunManifest, Status};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Appends job records to `results.jsonl` as jobs end.
pub struct ManifestWriter {
    dir: PathBuf,
    jsonl: File,
    /// Where each record line went, for the cache index; `None` once an append failed (the
    /// file's length is then unknown).
    lines: Option<Vec<crate::plan::index::RecordLine>>,
    /// The length of `results.jsonl` so far.
    len: u64,
}

impl ManifestWriter {
    /// Create the run's folder and its `results.jsonl`.
    pub fn create(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let jsonl = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("results.jsonl"))?;
        let len = jsonl.metadata()?.len();
        Ok(ManifestWriter {
            dir: dir.to_path_buf(),
            jsonl,
            lines: Some(Vec::new()),
            len,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Append one record as one line, then flush it to disk — except the record of a job
    /// that did nothing now (`cached`, `skipped`): losing one to a power cut costs nothing to
    /// redo, and waiting for the disk 10,000 times would make a cached rerun slow. Those are
    /// synced with the next record that is, or at the end of the run. (A killed process loses
    /// nothing either way: the line is in the kernel once `write` returns.)
    pub fn append(&mut self, record: &JobRecord) -> io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
        line.push(b'\n');
        // One write call: with O_APPEND the line lands whole or, on a crash, torn at the end
        // (the reader ignores a torn last line).
        if let Err(e) = self.jsonl.write_all(&line) {
            self.lines = None;
            return Err(e);
        }
        if let Some(lines) = &mut self.lines {
            let n = line.len() as u64;
            lines.push(crate::plan::index::RecordLine::new(
                &record.job_id,
                record.status,
                self.len,
                n,
            ));
            self.len += n;
        }
        match record.status {
            Status::Cached | Status::Skipped => Ok(()),
            _ => self.jsonl.sync_data(),
        }
    }

    /// Where every record line went and the final length of `results.jsonl`, when every
    /// append succeeded.
    pub fn lines(&self) -> Option<(&[crate::plan::index::RecordLine], u64)> {
        self.lines.as_deref().map(|l| (l, self.len))
    }

    /// Write `manifest.json` (atomically, via a temp file and rename) and copy it to
    /// `<output>/manifest.json`.
    pub fn finish(
        &self,
        manifest: &RunManifest,
        output_dir: &Path,
        records: &[JobRecord],
    ) -> io::Result<()> {
        self.jsonl.sync_data()?;
        write_csv(&self.dir.join("results.csv"), records)?;
        let body = serde_json::to_vec_pretty(manifest).map_err(io::Error::other)?;
        write_atomic(&self.dir.join("manifest.json"), &body)?;
        write_atomic(&output_dir.join("manifest.json"), &body)
    }
}

/// Write a file so that readers see the old or the new content, never a part.
pub fn write_atomic(path: &Path, body: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let written = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(body)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    // A full disk must not leave half-written temporary files behind.
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

const CSV_HEADERS: &[&str] = &[
    "job_id",
    "skill",
    "input",
    "input_sha256",
    "input_bytes",
    "status",
    "outputs",
    "model",
    "turns",
    "attempts",
    "requests",
    "refused_tool_calls",
    "prompt_tokens",
    "completion_tokens",
    "started_at",
    "finished_at",
    "duration_ms",
    "error_kind",
    "error_message",
    "transcript",
];

/// A text cell that a spreadsheet would take for a formula (`=`, `+`, `-`, `@`, or a tab or
/// carriage return before one) gets a leading `'`, so a file named `=HYPERLINK(…)` or a
/// server's message stays text when `results.csv` is opened.
pub fn formula_safe(s: &str) -> std::borrow::Cow<'_, str> {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}").into()
    } else {
        s.into()
    }
}

/// `results.csv`: the records, flat, for spreadsheets. Text cells are kept from being read
/// as formulas ([`formula_safe`]).
pub fn write_csv(path: &Path, records: &[JobRecord]) -> io::Result<()> {
    let mut body = Vec::new();
    {
        let mut w = csv::Writer::from_writer(&mut body);
        w.write_record(CSV_HEADERS).map_err(io::Error::other)?;
        for r in records {
            let outputs = r
                .outputs
                .iter()
                .map(|o| o.path.as_str())
                .collect::<Vec<_>>()
                .join(";");
            w.write_record([
                r.job_id.as_str(),
                &formula_safe(&r.skill),
                &formula_safe(&r.input),
                r.input_sha256.as_deref().unwrap_or(""),
                &r.input_bytes.map(|b| b.to_string()).unwrap_or_default(),
                r.status.as_str(),
                &formula_safe(&outputs),
                &formula_safe(&r.model),
                &r.turns.to_string(),
                &r.attempts.to_string(),
                &r.requests.to_string(),
                &r.refused_tool_calls.to_string(),
                &r.tokens.prompt.to_string(),
                &r.tokens.completion.to_string(),
                &r.started_at.map(|t| t.to_string()).unwrap_or_default(),
                &r.finished_at.map(|t| t.to_string()).unwrap_or_default(),
                &r.duration_ms.to_string(),
                r.error.as_ref().map(|e| e.kind.as_str()).unwrap_or(""),
                &formula_safe(r.error.as_ref().map(|e| e.message.as_str()).unwrap_or("")),
                &formula_safe(r.transcript.as_deref().unwrap_or("")),
            ])
            .map_err(io::Error::other)?;
        }
        w.flush()?;
    }
    write_atomic(path, &body)
}
