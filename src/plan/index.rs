//! The cache index (docs/outputs.md#the-cache-index): `<OUT>/.zhi/cache-index` says where the
//! latest succeeded (or cached) record of every job of the output folder is — which run's
//! `results.jsonl`, at which byte, how long — so that deciding what is cached reads one small
//! file and, per job, one line, however many runs and jobs the folder holds.
//!
//! The records stay the truth. The index is derived from them: it names the runs it covers
//! and how far their `results.jsonl` went, and is rebuilt from the records when it is
//! missing, torn, of another version, or does not match the runs on disk (a run removed, an
//! older run added); runs newer than it are read on top of it. A line it points at that is
//! not the job's usable record makes the planner rebuild it and decide again.

pub(crate) use crate::manifest::RecordLine;
use crate::manifest::job_key as key;
use crate::manifest::{self, JobRecord, Status};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{self, BufRead, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The file's first bytes: its format and version. Another value is rebuilt over.
const MAGIC: &[u8; 8] = b"ZHICIX01";
/// The largest index read (40 million jobs).
const MAX_INDEX_BYTES: u64 = 1 << 30;
/// The longest record line the index points at.
const MAX_LINE: u64 = 64 << 20;

/// Where one job's record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    /// Position of the run in [`CacheIndex::runs`].
    run: u32,
    len: u32,
    offset: u64,
}

/// One run the index covers: its id and how many bytes of its `results.jsonl` were read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Covered {
    run_id: String,
    len: u64,
}

/// Where each job's latest usable record is in an output folder.
#[derive(Debug, Default)]
pub(crate) struct CacheIndex {
    output_dir: PathBuf,
    runs: Vec<Covered>,
    /// The index file's slots, looked up in the file as jobs need them.
    table: Option<Table>,
    /// Slots of the runs newer than the file (all of them, when rebuilt): these win.
    newer: HashMap<u64, Slot>,
    /// Each run's `results.jsonl`, opened when first needed (`None`: it cannot be).
    files: Vec<OnceLock<Option<std::fs::File>>>,
    /// A slot led to a line that is not the job's usable record.
    stale: AtomicBool,
    /// How the index was found: read as it was, read and brought up to date, or rebuilt.
    pub source: IndexSource,
}

/// Every how many slots of the file one key is held in memory: a lookup reads one block of
/// this many slots (1.5 KiB), and a million jobs hold 15,625 keys (125 KiB).
const FENCE: u64 = 64;
/// Bytes of one slot in the file: key, run, length, offset.
const SLOT_BYTES: u64 = 24;

/// The index file's slots, sorted by key, read where a lookup needs them (`pread`); held in
/// memory is every [`FENCE`]th key.
#[derive(Debug)]
struct Table {
    file: std::fs::File,
    /// Where the first slot starts.
    start: u64,
    /// How many slots.
    len: u64,
    /// The key of slots 0, FENCE, 2·FENCE, …
    fences: Vec<u64>,
}

/// How [`CacheIndex::load`] came by the index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum IndexSource {
    /// The file covered every run.
    #[default]
    File,
    /// The file, and newer runs read on top of it.
    Updated,
    /// Rebuilt from every run's records (no file, or one that could not be trusted).
    Rebuilt,
}

/// The fields of a record the index needs, read without the rest.
#[derive(Deserialize)]
struct Slim<'a> {
    #[serde(borrow)]
    job_id: std::borrow::Cow<'a, str>,
    status: Status,
}

fn usable(status: Status) -> bool {
    matches!(status, Status::Succeeded | Status::Cached)
}

impl CacheIndex {
    /// The index of an output folder: its file when it matches the runs on disk (with newer
    /// runs read on top), else rebuilt from every run's records. Never writes.
    pub(crate) fn load(output_dir: &Path) -> CacheIndex {
        let on_disk: Vec<Covered> = manifest::list_runs(output_dir)
            .into_iter()
            .map(|r| Covered {
                len: std::fs::metadata(r.path.join("results.jsonl")).map_or(0, |m| m.len()),
                run_id: r.run_id,
            })
            .collect();
        let path = crate::layout::OutputLayout::new(output_dir).cache_index();
        let mut index = CacheIndex {
            output_dir: output_dir.to_path_buf(),
            ..CacheIndex::default()
        };
        match Table::open(&path).and_then(|(runs, table)| fits(runs, table, &on_disk)) {
            Some((runs, table)) => {
                let covered = runs.len();
                index.runs = runs;
                index.table = Some(table);
                index.source = if covered == on_disk.len() {
                    IndexSource::File
                } else {
                    IndexSource::Updated
                };
                for run in &on_disk[covered..] {
                    index.read_run(run.clone());
                }
            }
            None => {
                if path.exists() {
                    tracing::info!(
                        "{}",
                        msg!(
                            "{} does not match the records; rebuilt from them",
                            path.display()
                        )
                    );
                }
                index.source = IndexSource::Rebuilt;
                for run in on_disk {
                    index.read_run(run);
                }
            }
        }
        index.files = (0..index.runs.len()).map(|_| OnceLock::new()).collect();
        index
    }

    /// The same folder's index rebuilt from the records, whatever its file says.
    pub(crate) fn rebuilt(&self) -> CacheIndex {
        let mut index = CacheIndex {
            output_dir: self.output_dir.clone(),
            source: IndexSource::Rebuilt,
            ..CacheIndex::default()
        };
        for r in manifest::list_runs(&self.output_dir) {
            let len = std::fs::metadata(r.path.join("results.jsonl")).map_or(0, |m| m.len());
            index.read_run(Covered {
                run_id: r.run_id,
                len,
            });
        }
        index.files = (0..index.runs.len()).map(|_| OnceLock::new()).collect();
        index
    }

    /// Whether a slot led to something other than the job's usable record.
    pub(crate) fn found_stale(&self) -> bool {
        self.stale.load(Ordering::Relaxed)
    }

    /// Read one run's records (up to the length seen) into the slots, the later line of a job
    /// winning.
    fn read_run(&mut self, run: Covered) {
        let n = self.runs.len() as u32;
        let path = self
            .output_dir
            .join(".zhi/runs")
            .join(&run.run_id)
            .join("results.jsonl");
        if let Ok(f) = crate::small_file::open_regular(&path) {
            let mut reader = io::BufReader::with_capacity(1 << 20, io::Read::take(f, run.len));
            let mut line = Vec::new();
            let mut offset = 0u64;
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(read) => {
                        // A torn last line (no newline) is no record.
                        if line.last() == Some(&b'\n')
                            && let Ok(slim) = serde_json::from_slice::<Slim>(&line)
                            && usable(slim.status)
                            && let Ok(len) = u32::try_from(read)
                        {
                            self.newer.insert(
                                key(&slim.job_id),
                                Slot {
                                    run: n,
                                    len,
                                    offset,
                                },
                            );
                        }
                        offset += read as u64;
                    }
                }
            }
        }
        self.runs.push(run);
    }

    /// The latest succeeded (or cached) record of a job, if the folder has one.
    pub(crate) fn get(&self, job_id: &str) -> Option<JobRecord> {
        let k = key(job_id);
        let slot = match self.newer.get(&k) {
            Some(slot) => *slot,
            None => self.table.as_ref()?.find(k)?,
        };
        let found = self.read_slot(slot);
        match found {
            Some(r) if r.job_id == job_id && usable(r.status) => Some(r),
            Some(r) if r.job_id != job_id && key(&r.job_id) != key(job_id) => {
                self.stale.store(true, Ordering::Relaxed);
                None
            }
            // Two ids of the same key: the other job's record; this one has none here.
            Some(r) if r.job_id != job_id => None,
            _ => {
                self.stale.store(true, Ordering::Relaxed);
                None
            }
        }
    }

    fn read_slot(&self, slot: Slot) -> Option<JobRecord> {
        let run = self.runs.get(slot.run as usize)?;
        let file = self.files.get(slot.run as usize)?.get_or_init(|| {
            let path = self
                .output_dir
                .join(".zhi/runs")
                .join(&run.run_id)
                .join("results.jsonl");
            crate::small_file::open_regular(&path).ok()
        });
        let file = file.as_ref()?;
        if u64::from(slot.len) > MAX_LINE {
            return None;
        }
        // One buffer per thread: a rerun reads a line per job.
        thread_local! {
            static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        LINE.with_borrow_mut(|buf| {
            buf.resize(slot.len as usize, 0);
            file.read_exact_at(buf, slot.offset).ok()?;
            serde_json::from_slice(buf).ok()
        })
    }

    /// Whether saving after a run that wrote `lines` would say nothing the file does not: the
    /// file was read and trusted, no newer run added a slot, and the run indexed no line. A
    /// rerun that changed nothing then leaves the file as it is (its empty `results.jsonl`
    /// is read on top of it next time, at no cost).
    pub(crate) fn unchanged_by(&self, lines: &[RecordLine]) -> bool {
        self.table.is_some() && self.newer.is_empty() && !lines.iter().any(|l| usable(l.status))
    }

    /// After a run (which holds the output folder's lock): the index with the run's records
    /// on top, written atomically. `lines` are the run's record lines as written: job id,
    /// status, offset and length in its `results.jsonl`, whose final length is `run_len`.
    pub(crate) fn save_after_run(
        self,
        run_id: &str,
        run_len: u64,
        lines: &[RecordLine],
    ) -> io::Result<()> {
        let CacheIndex {
            mut runs,
            newer,
            table,
            output_dir,
            ..
        } = self;
        let n = match runs.iter().position(|r| r.run_id == run_id) {
            Some(i) => {
                runs[i].len = run_len;
                i
            }
            None => {
                runs.push(Covered {
                    run_id: run_id.to_string(),
                    len: run_len,
                });
                runs.len() - 1
            }
        } as u32;
        // The newer runs' slots, then this run's, the later of a key winning: sorted by key
        // (stably, so the later stays later), each key's last kept.
        let mut slots: Vec<(u64, Slot)> = newer.into_iter().collect();
        slots.extend(lines.iter().filter(|l| usable(l.status)).filter_map(|l| {
            Some((
                l.key,
                Slot {
                    run: n,
                    len: u32::try_from(l.len).ok()?,
                    offset: l.offset,
                },
            ))
        }));
        slots.sort_by_key(|(k, _)| *k);
        // In place: the slots a first pass adds are a million.
        slots.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 = later.1;
            }
            same
        });
        let layout = crate::layout::OutputLayout::new(&output_dir);
        layout.write_atomic_with(&layout.cache_index(), |f| {
            write_index(f, &runs, table.as_ref(), &slots)
        })
    }
}

/// Whether the index's runs are the first runs on disk, each with the length it read: then
/// its slots stand, and the runs after them are newer (read on top). A run removed, grown,
/// shrunk or inserted before the newest covered one makes the file untrustworthy.
fn fits(runs: Vec<Covered>, table: Table, on_disk: &[Covered]) -> Option<(Vec<Covered>, Table)> {
    (runs.len() <= on_disk.len() && runs.iter().zip(on_disk).all(|(a, b)| a == b))
        .then_some((runs, table))
}

impl Table {
    /// The file's runs and slots, when it is whole (its checksum holds, its slots sorted and
    /// naming its runs) and of this version. Read through once, holding its fences.
    fn open(path: &Path) -> Option<(Vec<Covered>, Table)> {
        let file = crate::small_file::open_regular(path).ok()?;
        let size = file.metadata().ok()?.len();
        if size > MAX_INDEX_BYTES {
            return None;
        }
        let body_len = size.checked_sub(32)?;
        let mut r = Hashed {
            from: io::BufReader::with_capacity(1 << 16, super::store::At::new(&file, 0)),
            hash: Sha256::new(),
            left: body_len,
        };
        if &r.bytes::<8>()? != MAGIC {
            return None;
        }
        let n_runs = u32::from_le_bytes(r.bytes()?) as usize;
        let mut runs = Vec::with_capacity(n_runs.min(1 << 20));
        for _ in 0..n_runs {
            let len = u16::from_le_bytes(r.bytes()?) as usize;
            let mut id = vec![0u8; len];
            r.fill(&mut id)?;
            runs.push(Covered {
                run_id: String::from_utf8(id).ok()?,
                len: u64::from_le_bytes(r.bytes()?),
            });
        }
        let len = u64::from_le_bytes(r.bytes()?);
        if r.left != len.checked_mul(SLOT_BYTES)? {
            return None;
        }
        let start = body_len - r.left;
        let mut fences = Vec::with_capacity(usize::try_from(len.div_ceil(FENCE)).ok()?);
        let mut last = None;
        for i in 0..len {
            let slot: [u8; 24] = r.bytes()?;
            let (k, s) = decode_slot(&slot);
            if last.is_some_and(|l| l >= k) || s.run as usize >= runs.len() {
                return None;
            }
            last = Some(k);
            if i % FENCE == 0 {
                fences.push(k);
            }
        }
        let mut sum = [0u8; 32];
        r.from.read_exact(&mut sum).ok()?;
        if r.hash.finalize().as_slice() != sum {
            return None;
        }
        Some((
            runs,
            Table {
                file,
                start,
                len,
                fences,
            },
        ))
    }

    /// The slot of `k`, read from its block of the file.
    fn find(&self, k: u64) -> Option<Slot> {
        let block = self.fences.partition_point(|f| *f <= k).checked_sub(1)? as u64;
        let first = block * FENCE;
        let n = FENCE.min(self.len - first) as usize;
        thread_local! {
            static BLOCK: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        BLOCK.with_borrow_mut(|buf| {
            buf.resize(n * SLOT_BYTES as usize, 0);
            self.file
                .read_exact_at(buf, self.start + first * SLOT_BYTES)
                .ok()?;
            // A lookup a job: the block is searched where it lies, nothing allocated.
            let at = |i: usize| decode_slot(&buf[i * SLOT_BYTES as usize..]);
            let (mut lo, mut hi) = (0, n);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if at(mid).0 < k {
                    lo = mid + 1
                } else {
                    hi = mid
                }
            }
            (lo < n && at(lo).0 == k).then(|| at(lo).1)
        })
    }

    /// Every slot, in key order.
    fn slots(&self) -> impl Iterator<Item = io::Result<(u64, Slot)>> + '_ {
        let mut from =
            io::BufReader::with_capacity(1 << 16, super::store::At::new(&self.file, self.start));
        (0..self.len).map(move |_| {
            let mut b = [0u8; 24];
            io::Read::read_exact(&mut from, &mut b)?;
            Ok(decode_slot(&b))
        })
    }
}

fn decode_slot(b: &[u8]) -> (u64, Slot) {
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
    let half = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default());
    (
        word(0),
        Slot {
            run: half(8),
            len: half(12),
            offset: word(16),
        },
    )
}

/// The index file's body as it is read, hashed on the way.
struct Hashed<R> {
    from: R,
    hash: Sha256,
    /// Bytes of the body not yet read.
    left: u64,
}

impl<R: io::Read> Hashed<R> {
    fn fill(&mut self, buf: &mut [u8]) -> Option<()> {
        self.left = self.left.checked_sub(buf.len() as u64)?;
        self.from.read_exact(buf).ok()?;
        self.hash.update(&*buf);
        Some(())
    }

    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        let mut b = [0u8; N];
        self.fill(&mut b)?;
        Some(b)
    }
}

/// How many slots the file's and the newer ones make together: one read through the file's
/// keys, beside the newer ones.
fn merged_len(table: Option<&Table>, newer: &[(u64, Slot)]) -> io::Result<u64> {
    let Some(t) = table else {
        return Ok(newer.len() as u64);
    };
    let mut replaced = 0u64;
    let all = newer.len() as u64;
    let mut newer = newer.iter().map(|(k, _)| *k).peekable();
    for slot in t.slots() {
        let (k, _) = slot?;
        while newer.next_if(|nk| *nk < k).is_some() {}
        if newer.next_if_eq(&k).is_some() {
            replaced += 1;
        }
    }
    Ok(t.len + all - replaced)
}

/// Write the index: its runs, then the file's slots and the newer ones merged in key order
/// (a newer slot replaces the file's of the same key), then the checksum. Streamed: the file's
/// slots are never held.
fn write_index(
    f: &mut std::fs::File,
    runs: &[Covered],
    table: Option<&Table>,
    newer: &[(u64, Slot)],
) -> io::Result<()> {
    use io::Write;
    struct Out<'a> {
        to: io::BufWriter<&'a mut std::fs::File>,
        hash: Sha256,
    }
    impl Out<'_> {
        fn put(&mut self, b: &[u8]) -> io::Result<()> {
            self.hash.update(b);
            self.to.write_all(b)
        }
        fn slot(&mut self, k: u64, s: Slot) -> io::Result<()> {
            self.put(&k.to_le_bytes())?;
            self.put(&s.run.to_le_bytes())?;
            self.put(&s.len.to_le_bytes())?;
            self.put(&s.offset.to_le_bytes())
        }
    }
    let mut out = Out {
        to: io::BufWriter::with_capacity(1 << 16, f),
        hash: Sha256::new(),
    };
    out.put(MAGIC)?;
    out.put(&(runs.len() as u32).to_le_bytes())?;
    for r in runs {
        let id = r.run_id.as_bytes();
        out.put(&(id.len() as u16).to_le_bytes())?;
        out.put(id)?;
        out.put(&r.len.to_le_bytes())?;
    }
    let len = merged_len(table, newer)?;
    out.put(&len.to_le_bytes())?;
    let mut newer = newer.iter().peekable();
    if let Some(t) = table {
        for slot in t.slots() {
            let (k, s) = slot?;
            while let Some(&&(nk, ns)) = newer.peek()
                && nk < k
            {
                out.slot(nk, ns)?;
                newer.next();
            }
            match newer.peek() {
                Some(&&(nk, ns)) if nk == k => {
                    out.slot(nk, ns)?;
                    newer.next();
                }
                _ => out.slot(k, s)?,
            }
        }
    }
    for &(k, s) in newer {
        out.slot(k, s)?;
    }
    let sum = out.hash.finalize();
    out.to.write_all(&sum)?;
    out.to.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorKind, JobError};
    use crate::manifest::ManifestWriter;

    fn record(id: &str, status: Status, key: &str) -> JobRecord {
        JobRecord {
            cache_key: Some(key.into()),
            error: (status == Status::Failed).then(|| JobError::new(ErrorKind::ApiError, "x")),
            ..JobRecord::new(id, "s", &format!("{id}.txt"), status)
        }
    }

    fn run(out: &Path, id: &str, records: &[JobRecord]) {
        let layout = crate::layout::OutputLayout::new(out);
        let mut w = ManifestWriter::create(&layout, &layout.run(id)).unwrap();
        for r in records {
            w.append(r).unwrap();
        }
    }

    fn key_of(index: &CacheIndex, id: &str) -> Option<String> {
        index.get(id).and_then(|r| r.cache_key)
    }

    #[test]
    fn the_latest_success_wins_and_failures_do_not_hide_it() {
        let out = tempfile::tempdir().unwrap();
        let out = out.path();
        run(
            out,
            "20260101T000000.000Z",
            &[
                record("a", Status::Succeeded, "old"),
                record("b", Status::Succeeded, "b1"),
            ],
        );
        run(
            out,
            "20260102T000000.000Z",
            &[record("a", Status::Succeeded, "new")],
        );
        run(
            out,
            "20260103T000000.000Z",
            &[record("a", Status::Failed, "newer")],
        );
        let index = CacheIndex::load(out);
        assert_eq!(index.source, IndexSource::Rebuilt);
        assert_eq!(key_of(&index, "a").as_deref(), Some("new"));
        assert_eq!(key_of(&index, "b").as_deref(), Some("b1"));
        assert!(index.get("c").is_none());
        assert!(!index.found_stale());
    }

    /// The index a run would leave: every run so far covered.
    fn save(out: &Path) {
        let index = CacheIndex::load(out);
        let last = index.runs.last().unwrap().clone();
        // Saving as if the last run had just ended with what it wrote.
        let mut covered = CacheIndex {
            output_dir: out.to_path_buf(),
            ..CacheIndex::default()
        };
        for r in &index.runs[..index.runs.len() - 1] {
            covered.read_run(r.clone());
        }
        let mut lines = Vec::new();
        let text = std::fs::read(
            out.join(".zhi/runs")
                .join(&last.run_id)
                .join("results.jsonl"),
        )
        .unwrap();
        let mut offset = 0;
        for l in text.split_inclusive(|b| *b == b'\n') {
            let r: JobRecord = serde_json::from_slice(l).unwrap();
            lines.push(RecordLine::new(&r.job_id, r.status, offset, l.len() as u64));
            offset += l.len() as u64;
        }
        covered
            .save_after_run(&last.run_id, last.len, &lines)
            .unwrap();
    }

    #[test]
    fn the_index_is_used_brought_up_to_date_and_rebuilt_when_it_cannot_be_trusted() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path();
        run(
            out,
            "20260101T000000.000Z",
            &[
                record("a", Status::Succeeded, "a1"),
                record("b", Status::Succeeded, "b1"),
            ],
        );
        save(out);
        let index = CacheIndex::load(out);
        assert_eq!(index.source, IndexSource::File);
        assert_eq!(key_of(&index, "a").as_deref(), Some("a1"));

        // A newer run is read on top of the file.
        run(
            out,
            "20260102T000000.000Z",
            &[record("a", Status::Cached, "a2")],
        );
        let index = CacheIndex::load(out);
        assert_eq!(index.source, IndexSource::Updated);
        assert_eq!(key_of(&index, "a").as_deref(), Some("a2"));
        assert_eq!(key_of(&index, "b").as_deref(), Some("b1"));
        save(out);
        assert_eq!(CacheIndex::load(out).source, IndexSource::File);

        // A torn or foreign file is rebuilt over, and says the same.
        let path = out.join(".zhi/cache-index");
        let good = std::fs::read(&path).unwrap();
        for bad in [
            good[..good.len() - 5].to_vec(),
            b"not an index".to_vec(),
            [b"ZHICIX00", &good[8..]].concat(),
        ] {
            std::fs::write(&path, bad).unwrap();
            let index = CacheIndex::load(out);
            assert_eq!(index.source, IndexSource::Rebuilt);
            assert_eq!(key_of(&index, "a").as_deref(), Some("a2"));
            assert_eq!(key_of(&index, "b").as_deref(), Some("b1"));
        }

        // A run removed under the index: rebuilt from the runs that are left.
        std::fs::write(&path, &good).unwrap();
        std::fs::remove_dir_all(out.join(".zhi/runs/20260102T000000.000Z")).unwrap();
        let index = CacheIndex::load(out);
        assert_eq!(index.source, IndexSource::Rebuilt);
        assert_eq!(key_of(&index, "a").as_deref(), Some("a1"));
    }

    #[test]
    fn a_slot_that_points_elsewhere_is_found_stale() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path();
        run(
            out,
            "20260101T000000.000Z",
            &[
                record("a", Status::Succeeded, "a1"),
                record("b", Status::Succeeded, "b1"),
            ],
        );
        save(out);
        // The same length, other content: the slots now cut lines in the wrong places.
        let results = out.join(".zhi/runs/20260101T000000.000Z/results.jsonl");
        let text = std::fs::read_to_string(&results).unwrap();
        let swapped: String = text.lines().rev().map(|l| format!("{l}\n")).collect();
        std::fs::write(&results, swapped).unwrap();
        let index = CacheIndex::load(out);
        assert_eq!(index.source, IndexSource::File);
        let _ = index.get("a");
        let _ = index.get("b");
        assert!(index.found_stale());
        let rebuilt = index.rebuilt();
        assert_eq!(key_of(&rebuilt, "a").as_deref(), Some("a1"));
        assert_eq!(key_of(&rebuilt, "b").as_deref(), Some("b1"));
    }

    #[test]
    fn a_large_index_is_looked_up_in_its_file_and_merged_with_newer_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path();
        let id = |i: u64| format!("{:016x}", (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let first: Vec<JobRecord> = (0..700)
            .map(|i| record(&id(i), Status::Succeeded, &format!("k{i}")))
            .collect();
        run(out, "20260101T000000.000Z", &first);
        save(out);
        let index = CacheIndex::load(out);
        assert_eq!(index.source, IndexSource::File);
        assert!(index.newer.is_empty());
        assert_eq!(index.table.as_ref().unwrap().len, 700);
        for i in 0..700 {
            assert_eq!(key_of(&index, &id(i)), Some(format!("k{i}")));
        }
        // Keys below the first, between two and above the last are not there.
        for absent in ["0000000000000000", "ffffffffffffffff", &id(700), &id(5000)] {
            assert!(index.get(absent).is_none());
        }
        assert!(!index.found_stale());

        // A newer run: some jobs again (new keys), some new jobs, a failure that hides nothing.
        let mut second: Vec<JobRecord> = (650..760)
            .map(|i| record(&id(i), Status::Cached, &format!("n{i}")))
            .collect();
        second.push(record(&id(3), Status::Failed, "f"));
        run(out, "20260102T000000.000Z", &second);
        save(out);
        let index = CacheIndex::load(out);
        assert_eq!(index.source, IndexSource::File);
        assert_eq!(index.table.as_ref().unwrap().len, 760);
        for i in 0..760 {
            let want = if i < 650 {
                format!("k{i}")
            } else {
                format!("n{i}")
            };
            assert_eq!(key_of(&index, &id(i)), Some(want));
        }
    }
}
