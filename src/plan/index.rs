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
use std::io::{self, BufRead};
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
    slots: HashMap<u64, Slot>,
    /// Each run's `results.jsonl`, opened when first needed (`None`: it cannot be).
    files: Vec<OnceLock<Option<std::fs::File>>>,
    /// A slot led to a line that is not the job's usable record.
    stale: AtomicBool,
    /// How the index was found: read as it was, read and brought up to date, or rebuilt.
    pub source: IndexSource,
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
        match read_file(&path).and_then(|(runs, slots)| fits(runs, slots, &on_disk)) {
            Some((runs, slots)) => {
                let covered = runs.len();
                index.runs = runs;
                index.slots = slots;
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
                            self.slots.insert(
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
        let slot = *self.slots.get(&key(job_id))?;
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
            mut slots,
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
        for l in lines.iter().filter(|l| usable(l.status)) {
            let Ok(len) = u32::try_from(l.len) else {
                continue;
            };
            slots.insert(
                l.key,
                Slot {
                    run: n,
                    len,
                    offset: l.offset,
                },
            );
        }
        let layout = crate::layout::OutputLayout::new(&output_dir);
        layout.write_atomic(&layout.cache_index(), &encode(&runs, &slots))
    }
}

/// The index file's runs and slots, when it is whole and of this version.
fn read_file(path: &Path) -> Option<(Vec<Covered>, HashMap<u64, Slot>)> {
    let bytes = crate::small_file::read_io(path, MAX_INDEX_BYTES).ok()?;
    decode(&bytes)
}

/// Whether the index's runs are the first runs on disk, each with the length it read: then
/// its slots stand, and the runs after them are newer (read on top). A run removed, grown,
/// shrunk or inserted before the newest covered one makes the file untrustworthy.
fn fits(
    runs: Vec<Covered>,
    slots: HashMap<u64, Slot>,
    on_disk: &[Covered],
) -> Option<(Vec<Covered>, HashMap<u64, Slot>)> {
    (runs.len() <= on_disk.len() && runs.iter().zip(on_disk).all(|(a, b)| a == b))
        .then_some((runs, slots))
}

fn encode(runs: &[Covered], slots: &HashMap<u64, Slot>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + runs.len() * 48 + slots.len() * 24);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(runs.len() as u32).to_le_bytes());
    for r in runs {
        let id = r.run_id.as_bytes();
        out.extend_from_slice(&(id.len() as u16).to_le_bytes());
        out.extend_from_slice(id);
        out.extend_from_slice(&r.len.to_le_bytes());
    }
    let mut sorted: Vec<(&u64, &Slot)> = slots.iter().collect();
    sorted.sort_unstable_by_key(|(k, _)| **k);
    out.extend_from_slice(&(sorted.len() as u64).to_le_bytes());
    for (k, s) in sorted {
        out.extend_from_slice(&k.to_le_bytes());
        out.extend_from_slice(&s.run.to_le_bytes());
        out.extend_from_slice(&s.len.to_le_bytes());
        out.extend_from_slice(&s.offset.to_le_bytes());
    }
    let sum = Sha256::digest(&out);
    out.extend_from_slice(&sum);
    out
}

fn decode(bytes: &[u8]) -> Option<(Vec<Covered>, HashMap<u64, Slot>)> {
    let body_len = bytes.len().checked_sub(32)?;
    let (body, sum) = bytes.split_at(body_len);
    if Sha256::digest(body).as_slice() != sum || !body.starts_with(MAGIC) {
        return None;
    }
    let mut r = Reader(&body[MAGIC.len()..]);
    let n_runs = r.u32()? as usize;
    let mut runs = Vec::with_capacity(n_runs.min(1 << 20));
    for _ in 0..n_runs {
        let len = r.u16()? as usize;
        let run_id = String::from_utf8(r.take(len)?.to_vec()).ok()?;
        runs.push(Covered {
            run_id,
            len: r.u64()?,
        });
    }
    let n = usize::try_from(r.u64()?).ok()?;
    if r.0.len() != n.checked_mul(24)? {
        return None;
    }
    let mut slots = HashMap::with_capacity(n);
    for _ in 0..n {
        let k = r.u64()?;
        let slot = Slot {
            run: r.u32()?,
            len: r.u32()?,
            offset: r.u64()?,
        };
        if slot.run as usize >= runs.len() {
            return None;
        }
        slots.insert(k, slot);
    }
    Some((runs, slots))
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
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
}
