//! Writing records: each record is one line, written whole as its job ends (and synced when
//! the job did work now), so a crash loses at most the record being written — never an
//! earlier one that cost a request.

use super::{JobRecord, RunManifest, Status};
use crate::confine::Root;
use crate::layout::{OutputLayout, link_refused, write_atomic_in};
use sha2::{Digest, Sha256};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// One record line a run wrote, for the cache index (`plan::index`): its job (as the index
/// keys it), status, offset and length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordLine {
    pub key: u64,
    pub status: Status,
    pub offset: u64,
    pub len: u64,
}

impl RecordLine {
    pub(crate) fn new(job_id: &str, status: Status, offset: u64, len: u64) -> RecordLine {
        RecordLine {
            key: job_key(job_id),
            status,
            offset,
            len,
        }
    }
}

/// A job id as the index keys it: its 16 hex digits, else a hash of it (ids are checked
/// against the record read, so a clash costs a rebuild, never a wrong record).
pub(crate) fn job_key(job_id: &str) -> u64 {
    if job_id.len() == 16
        && let Ok(k) = u64::from_str_radix(job_id, 16)
    {
        return k;
    }
    let h = Sha256::digest(job_id.as_bytes());
    u64::from_le_bytes(h[..8].try_into().unwrap_or_default())
}

/// Appends job records to `results.jsonl` as jobs end.
pub(crate) struct ManifestWriter {
    dir: PathBuf,
    /// The run's folder, reached beneath the output folder's handle when the run began: every
    /// file of the run's records is written through it, never by path, so a folder on the way
    /// swapped for a link later cannot carry them outside the output folder.
    folder: Root,
    jsonl: File,
    /// Where each record line went, for the cache index; `None` once an append failed (the
    /// file's length is then unknown).
    lines: Option<Vec<RecordLine>>,
    /// The length of `results.jsonl` so far, lines still held in `held` included.
    len: u64,
    /// Lines of jobs that did nothing now (`cached`, `skipped`), written with the next line
    /// that is not, when this fills, or at the end: a rerun of 100,000 cached jobs makes a
    /// few hundred writes, not 100,000.
    held: Vec<u8>,
    /// `results.csv`, written a row per record under a temporary name and put in place by
    /// [`ManifestWriter::finish`]: the run keeps no record to write it from at the end.
    csv: Option<ResultsCsv>,
    /// Whether a record that restates the one the cache index points at is written
    /// (`--records all`); by default it is only counted (docs/outputs.md#what-a-rerun-writes).
    every_record: bool,
    /// Records written whose stats the end of the run may settle, and when the last of them
    /// was appended.
    unsettled: u64,
    last_unsettled: Option<std::time::Instant>,
    /// How the run settles a record (`plan::cache::settle`): whether it changed it.
    settler: Option<Settler>,
}

/// Settles one record's stats, given the output folder: whether it changed it.
pub(crate) type Settler = Box<dyn Fn(&Path, &mut JobRecord) -> bool + Send>;

/// Above this many records to settle, the end of a run waits out the racy margin (at most
/// 2 s) so that all of them can be; below it, those too fresh are left to the next run.
const SETTLE_WAIT_FROM: u64 = 100;

/// `results.csv` being written (in a folder held open: see [`ResultsCsv::finish`]).
struct ResultsCsv {
    /// `results.csv`, as errors name it.
    path: PathBuf,
    /// Its temporary name, in the same folder.
    tmp: OsString,
    rows: csv::Writer<io::BufWriter<File>>,
    /// The first failure to write a row: said by `finish`, which then writes no table.
    failed: Option<io::Error>,
}

/// Held lines are written once they reach this many bytes.
const HELD_MAX: usize = 64 * 1024;

impl ManifestWriter {
    /// Create the run's folder `dir` (inside `layout`'s output folder, reached one part at a
    /// time beneath its handle, never through a link) and its `results.jsonl`.
    pub(crate) fn create(layout: &OutputLayout, dir: &Path) -> io::Result<Self> {
        let folder = layout.folder(dir, true)?;
        let path = dir.join("results.jsonl");
        let jsonl = folder
            .top()
            .open_append(OsStr::new("results.jsonl"))
            .map_err(|e| link_refused(&path, e))?;
        let len = jsonl.metadata()?.len();
        let csv = ResultsCsv::create(&folder, &dir.join("results.csv"))?;
        Ok(ManifestWriter {
            dir: dir.to_path_buf(),
            folder,
            jsonl,
            lines: Some(Vec::new()),
            len,
            held: Vec::new(),
            csv: Some(csv),
            every_record: false,
            unsettled: 0,
            last_unsettled: None,
            settler: None,
        })
    }

    /// How the end of the run settles its records' stats (none: they stay as written).
    pub(crate) fn settle_with(mut self, settler: Settler) -> Self {
        self.settler = Some(settler);
        self
    }

    /// Write the records of cached jobs that restate their earlier record too.
    pub(crate) fn every_record(mut self, every_record: bool) -> Self {
        self.every_record = every_record;
        self
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The run's folder, held open since [`ManifestWriter::create`].
    pub(crate) fn folder(&self) -> &Root {
        &self.folder
    }

    /// Append one record as one line, then flush it to disk — except the record of a job
    /// that did nothing now (`cached`, `skipped`): losing one to a kill or a power cut costs
    /// nothing to redo (the record it repeats is still there), and writing and waiting for the
    /// disk 100,000 times would make a cached rerun slow. Those are held, and written and
    /// synced with the next record that is not, when 64 KiB are held, or at the end of the
    /// run.
    pub(crate) fn append(&mut self, record: &JobRecord) -> io::Result<()> {
        // A cached job exactly as its record says: counted in the manifest, not written again.
        if record.restates && !self.every_record {
            return Ok(());
        }
        let start = self.held.len();
        if let Err(e) = serde_json::to_writer(&mut self.held, record) {
            self.held.truncate(start);
            return Err(io::Error::other(e));
        }
        self.held.push(b'\n');
        if record.needs_settling() {
            self.unsettled += 1;
            self.last_unsettled = Some(std::time::Instant::now());
        }
        if let Some(csv) = &mut self.csv {
            csv.push(record);
        }
        let n = (self.held.len() - start) as u64;
        // A record that restates the one the index points at leaves the index as it is.
        if let Some(lines) = self.lines.as_mut().filter(|_| !record.restates) {
            lines.push(RecordLine::new(&record.job_id, record.status, self.len, n));
        }
        self.len += n;
        match record.status {
            Status::Cached | Status::Skipped if self.held.len() < HELD_MAX => Ok(()),
            Status::Cached | Status::Skipped => self.write_held(),
            _ => {
                self.write_held()?;
                self.jsonl.sync_data()
            }
        }
    }

    /// Write the held lines, in one call: with O_APPEND they land whole or, on a crash, torn
    /// at the end (the reader ignores a torn last line).
    fn write_held(&mut self) -> io::Result<()> {
        let written = self.jsonl.write_all(&self.held);
        self.held.clear();
        if written.is_err() {
            // The file's length is no longer known: the index is rebuilt next time.
            self.lines = None;
        }
        written
    }

    /// The end of the run settles its records' stats (docs/outputs.md#what-a-rerun-writes): the
    /// outputs just written cannot be trusted by their stat until the racy margin has passed,
    /// and a rerun would read them and write every record again to say so. Past the margin,
    /// each is checked as a rerun checks it, and `results.jsonl` is rewritten whole (beside
    /// itself, then renamed over it) with the stats a rerun trusts. A kill meanwhile leaves
    /// the file as it was.
    fn settle(&mut self, output_dir: &Path) -> io::Result<()> {
        let (Some(lines), Some(settler)) = (self.lines.as_ref(), self.settler.as_ref()) else {
            return Ok(());
        };
        if self.unsettled == 0 || crate::interrupt::interrupted() {
            return Ok(());
        }
        if self.unsettled > SETTLE_WAIT_FROM
            && let Some(last) = self.last_unsettled
        {
            let margin = std::time::Duration::from_nanos(
                crate::manifest::InputStat::RACY_MARGIN_NS as u64 + 50_000_000,
            );
            std::thread::sleep(margin.saturating_sub(last.elapsed()));
        }
        let mut old = io::BufReader::with_capacity(
            1 << 20,
            self.folder.top().open_file(OsStr::new("results.jsonl"))?,
        );
        let mut new_lines = Vec::with_capacity(lines.len());
        let mut indexed = lines.iter().peekable();
        let (mut changed, mut len) = (0u64, 0u64);
        let path = self.dir.join("results.jsonl");
        write_atomic_in(&self.folder, &path, |f| {
            let mut w = io::BufWriter::with_capacity(1 << 20, f);
            let (mut line, mut offset) = (Vec::new(), 0u64);
            loop {
                line.clear();
                if io::BufRead::read_until(&mut old, b'\n', &mut line)? == 0 {
                    break;
                }
                let settled = serde_json::from_slice::<JobRecord>(&line)
                    .ok()
                    .filter(|_| line.ends_with(b"\n"))
                    .and_then(|mut r| settler(output_dir, &mut r).then_some(r));
                let body = match settled {
                    Some(r) => {
                        changed += 1;
                        let mut b = serde_json::to_vec(&r).map_err(io::Error::other)?;
                        b.push(b'\n');
                        b
                    }
                    None => line.clone(),
                };
                if let Some(l) = indexed.next_if(|l| l.offset == offset) {
                    new_lines.push(RecordLine {
                        offset: len,
                        len: body.len() as u64,
                        ..*l
                    });
                }
                w.write_all(&body)?;
                offset += line.len() as u64;
                len += body.len() as u64;
                if changed == 0 && crate::interrupt::interrupted() {
                    return Err(io::Error::other(msg!(
                        "interrupted while settling the records"
                    )));
                }
            }
            if changed == 0 {
                // Nothing to say: the file stays as it is.
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, "unchanged"));
            }
            w.flush()
        })
        .or_else(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                Ok(())
            } else {
                Err(e)
            }
        })?;
        if changed > 0 {
            self.lines = Some(new_lines);
            self.len = len;
            self.jsonl = self.folder.top().open_append(OsStr::new("results.jsonl"))?;
        }
        Ok(())
    }

    /// Where every record line went and the final length of `results.jsonl`, when every
    /// append succeeded: handed over once, at the end of the run.
    pub(crate) fn take_lines(&mut self) -> Option<(Vec<RecordLine>, u64)> {
        self.lines.take().map(|l| (l, self.len))
    }

    /// Write `manifest.json` (atomically, via a temp file and rename) and copy it to
    /// `<output>/manifest.json`.
    pub(crate) fn finish(&mut self, manifest: &RunManifest, output_dir: &Path) -> io::Result<()> {
        self.write_held()?;
        self.jsonl.sync_data()?;
        if let Err(e) = self.settle(output_dir) {
            // The records stand as they were: the next run settles them.
            tracing::warn!("{}", msg!("cannot settle the run's records: {e}"));
        }
        if let Some(csv) = self.csv.take() {
            csv.finish(&self.folder)?;
        }
        // Written as it is serialised: a plan of a million jobs names a million ids, which are
        // never held as one body.
        let write = |f: &mut std::fs::File| {
            let mut w = io::BufWriter::with_capacity(1 << 16, f);
            serde_json::to_writer_pretty(&mut w, manifest).map_err(io::Error::other)?;
            w.flush()
        };
        write_atomic_in(&self.folder, &self.dir.join("manifest.json"), write)?;
        // The copy is the file just written, read back beneath the run's folder.
        let mut written = self.folder.top().open_file(OsStr::new("manifest.json"))?;
        let copy = output_dir.join("manifest.json");
        write_atomic_in(&Root::open(parent_of(&copy))?, &copy, |f| {
            io::copy(&mut written, f).map(|_| ())
        })
    }
}

impl Drop for ManifestWriter {
    /// A run that ends without its manifest (an error on the way) still leaves its held lines.
    fn drop(&mut self) {
        if !self.held.is_empty() {
            let _ = self.write_held();
        }
        // A run that wrote no manifest has no `results.csv` either.
        if let Some(csv) = self.csv.take() {
            drop(csv.rows);
            self.folder.top().remove_file(&csv.tmp);
        }
    }
}

impl ResultsCsv {
    /// Start `path` (a file of `folder`), under a temporary name beside it, with its header
    /// row.
    fn create(folder: &Root, path: &Path) -> io::Result<ResultsCsv> {
        let tmp = file_name(&path.with_extension(format!("csv.tmp-{}", std::process::id())))?;
        let file = folder
            .top()
            .create_file(&tmp)
            .map_err(|e| link_refused(path, e))?;
        let mut rows = csv::Writer::from_writer(io::BufWriter::new(file));
        if let Err(e) = rows.write_record(CSV_HEADERS) {
            folder.top().remove_file(&tmp);
            return Err(io::Error::other(e));
        }
        Ok(ResultsCsv {
            path: path.to_path_buf(),
            tmp,
            rows,
            failed: None,
        })
    }

    /// One record's row; the first failure is kept for [`ResultsCsv::finish`] to say.
    fn push(&mut self, record: &JobRecord) {
        if self.failed.is_none()
            && let Err(e) = csv_row(&mut self.rows, record)
        {
            self.failed = Some(e);
        }
    }

    /// Put the table in place, whole, or remove it and say why: renamed within `folder`, the
    /// folder it was started in.
    fn finish(self, folder: &Root) -> io::Result<()> {
        let ResultsCsv {
            path,
            tmp,
            rows,
            failed,
        } = self;
        let name = file_name(&path)?;
        let walk = folder.top();
        let written = match failed {
            Some(e) => Err(e),
            None => rows
                .into_inner()
                .map_err(|e| io::Error::other(e.to_string()))
                .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
                .and_then(|f| f.sync_all())
                .and_then(|()| walk.rename(&tmp, &walk, &name)),
        };
        if written.is_err() {
            walk.remove_file(&tmp);
        }
        written
    }
}

/// Write a file so that readers see the old or the new content, never a part.
pub(crate) fn write_atomic(path: &Path, body: &[u8]) -> io::Result<()> {
    write_atomic_in(&Root::open(parent_of(path))?, path, |f| f.write_all(body))
}

/// The folder `path` lies in (`.` for a bare name).
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The last part of `path`, the name of a file in its folder.
fn file_name(path: &Path) -> io::Result<OsString> {
    path.file_name()
        .map(OsStr::to_os_string)
        .ok_or_else(|| io::Error::other(format!("{} names no file", path.display())))
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

/// Whether a spreadsheet would take the text `s` for a formula: it begins with `=`, `+`,
/// `-`, `@`, a tab or a carriage return.
pub(crate) fn formula_like(s: &str) -> bool {
    s.starts_with(['=', '+', '-', '@', '\t', '\r'])
}

/// A text cell that a spreadsheet would take for a formula (`=`, `+`, `-`, `@`, or a tab or
/// carriage return before one) gets a leading `'`, so a file named `=HYPERLINK(…)` or a
/// server's message stays text when `results.csv` is opened.
pub(crate) fn formula_safe(s: &str) -> std::borrow::Cow<'_, str> {
    if formula_like(s) {
        format!("'{s}").into()
    } else {
        s.into()
    }
}

/// `results.csv`: the records, flat, for spreadsheets. Text cells are kept from being read
/// as formulas ([`formula_safe`]).
pub(crate) fn write_csv(path: &Path, records: &[JobRecord]) -> io::Result<()> {
    let folder = Root::open(parent_of(path))?;
    let mut csv = ResultsCsv::create(&folder, path)?;
    for r in records {
        csv.push(r);
    }
    csv.finish(&folder)
}

/// One record's row of `results.csv`.
fn csv_row(w: &mut csv::Writer<impl Write>, r: &JobRecord) -> io::Result<()> {
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
    .map_err(io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn manifest() -> RunManifest {
        serde_json::from_value(serde_json::json!({
            "run_id": "r1",
            "zhi_version": "0",
            "command": "zhi run summarize docs",
            "started_at": "2024-01-01T00:00:00.000Z",
            "finished_at": "2024-01-01T00:01:00.000Z",
            "status": "completed",
            "skills": {},
            "counts": {"planned": 1, "succeeded": 1, "failed": 0,
                       "cached": 0, "skipped": 0, "cancelled": 0},
            "tokens": {"prompt": 0, "completion": 0},
            "output_dir": "out",
            "results": "out/.zhi/runs/r1/results.jsonl",
            "results_csv": "out/.zhi/runs/r1/results.csv",
            "shard": null,
            "requests": 0
        }))
        .unwrap()
    }

    fn record(id: &str) -> JobRecord {
        JobRecord::new(id, "s", "a.txt", Status::Succeeded)
    }

    /// The run's folder is held from the start: `.zhi/runs` replaced by a link to outside
    /// mid-run (with a run folder of the same name waiting there) carries none of the run's
    /// records, table or manifest outside; they all land in the run's own folder.
    #[test]
    fn a_runs_folder_replaced_by_a_link_mid_run_carries_no_record_outside() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(outside.join("r1")).unwrap();
        let layout = OutputLayout::new(&out);
        layout.create().unwrap();
        let mut w = ManifestWriter::create(&layout, &layout.run("r1")).unwrap();
        w.append(&record("a")).unwrap();
        let moved = tmp.path().join("moved");
        std::fs::rename(layout.runs(), &moved).unwrap();
        symlink(&outside, layout.runs()).unwrap();
        w.append(&record("b")).unwrap();
        w.finish(&manifest(), &out).unwrap();
        drop(w);
        assert!(
            std::fs::read_dir(outside.join("r1"))
                .unwrap()
                .next()
                .is_none()
        );
        let mut names: Vec<_> = std::fs::read_dir(moved.join("r1"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["manifest.json", "results.csv", "results.jsonl"]);
        let jsonl = std::fs::read_to_string(moved.join("r1/results.jsonl")).unwrap();
        assert_eq!(jsonl.lines().count(), 2);
        // A run beginning now refuses the link, naming it.
        let e = ManifestWriter::create(&layout, &layout.run("r2"))
            .err()
            .unwrap();
        assert!(e.to_string().contains("is a link"), "{e}");
        assert!(e.to_string().contains("runs"), "{e}");
        assert!(!outside.join("r2").exists());
    }

    /// `.zhi/runs` swapped for a link to outside (atomically, again and again) while runs
    /// begin, write their records and end: each lands inside the output folder or is
    /// refused, never outside.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_runs_folder_swapped_for_a_link_while_runs_write_never_leads_outside() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let layout = OutputLayout::new(&out);
        layout.create().unwrap();
        symlink(&outside, out.join("swap")).unwrap();
        crate::confine::while_swapping(&layout.runs(), &out.join("swap"), |n| {
            if let Ok(mut w) = ManifestWriter::create(&layout, &layout.run(&n.to_string())) {
                let _ = w.append(&record("a"));
                let _ = w.finish(&manifest(), &out);
            }
        });
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
    }
}
