//! Cache status (docs/outputs.md#the-cache): a job whose key matches the latest succeeded record
//! for its id, and whose outputs are still there unchanged, is `cached` and costs no request.
//!
//! The key is a hash of the zhi prompt version, the skill and its nested skills (their file
//! hashes), the model, the arguments and the content of every input.

pub(crate) use super::index::CacheIndex;
use crate::error::{ErrorKind, JobError};
use crate::layout::OutputLayout;
use crate::manifest::{InputStat, JobRecord};
use crate::plan::Job;
use crate::skills::SkillSet;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// Bumped whenever the way zhi talks to the model changes (preamble, message layout, tools):
/// outputs made under another version are redone.
pub(crate) const PROMPT_VERSION: &str = "zhi-prompt-2";

/// What the planner knows of a job before running it.
#[derive(Debug, Clone, Default)]
pub struct JobCache {
    pub input_sha256: Option<String>,
    pub input_bytes: Option<u64>,
    pub cache_key: Option<String>,
    /// The latest succeeded record of this job, whatever its key (boxed: a plan of 100,000
    /// jobs holds 100,000 of these, most without one or soon done with it).
    pub previous: Option<Box<JobRecord>>,
    /// Whether the job is cached: same key, outputs unchanged.
    pub cached: bool,
    /// The primary input's file as it was hashed, to tell at run time that the file read is
    /// the file planned without hashing it again.
    pub input_stamp: Option<FileStamp>,
    /// The primary input's stat when its hash was taken, for the job's record: the stat
    /// cache of the next run.
    pub input_stat: Option<InputStat>,
    /// The input is unchanged since the previous record (its stat matched): the hash and the
    /// token count are that record's, and the file was not opened.
    pub unchanged: bool,
    /// For a cached job: the stats its outputs and folder were found with, for its record.
    pub outputs_seen: Option<OutputsSeen>,
}

/// What a check of a job's outputs found them to be: the stats to record with them, so that
/// the next check trusts what has not changed.
#[derive(Debug, Clone, Default)]
pub struct OutputsSeen {
    /// The job folder's stat, when it was listed (or its recorded stat still stood) and has
    /// no subfolder.
    pub folder: Option<InputStat>,
    /// Each output's stat, in the record's order, when its hash was checked (or stood).
    pub files: Vec<Option<InputStat>>,
}

impl OutputsSeen {
    /// The outputs of `record` with the stats seen.
    pub fn apply(&self, outputs: &mut [crate::manifest::OutputFile]) {
        for (o, stat) in outputs.iter_mut().zip(&self.files) {
            o.stat = *stat;
        }
    }
}

/// Which file a path led to, and its state: device, inode, size, modification and change
/// times. Two equal stamps are the same file, unchanged (a replacement, a link put in its
/// place or a write changes one of them; restoring the modification time afterwards still
/// changes the change time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl From<&std::fs::Metadata> for FileStamp {
    fn from(m: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        FileStamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
        }
    }
}

impl FileStamp {
    /// The stamp of what `path` leads to now.
    pub fn of(path: &Path) -> Option<FileStamp> {
        std::fs::metadata(path).ok().map(|m| FileStamp::from(&m))
    }

    /// The stat to record for a hash of this file finished at `hashed_at_ns`.
    pub fn stat(&self, hashed_at_ns: i64) -> InputStat {
        InputStat {
            dev: self.dev,
            ino: self.ino,
            size: self.len,
            mtime_ns: self.mtime_ns,
            ctime_ns: self.ctime_ns,
            hashed_at_ns,
        }
    }

    /// Whether this is the file a record's stat describes, in the same state.
    pub fn matches(&self, s: &InputStat) -> bool {
        (self.dev, self.ino, self.len, self.mtime_ns, self.ctime_ns)
            == (s.dev, s.ino, s.size, s.mtime_ns, s.ctime_ns)
    }
}

/// Now, in nanoseconds since the epoch.
fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// A file's content hash, as [`statuses`] decided it.
struct Hashed {
    sha: Option<String>,
    bytes: Option<u64>,
    stamp: Option<FileStamp>,
    stat: Option<InputStat>,
    /// Taken from the previous record: the stat matched, nothing was opened.
    unchanged: bool,
}

/// The primary input's hash: the previous record's when the file's stat is the one recorded
/// with it and that stat is trusted (not `checksum`), else read and hashed.
fn input_hash(path: &Path, previous: Option<&JobRecord>, checksum: bool) -> Hashed {
    if !checksum
        && let Some(prev) = previous
        && let (Some(sha), Some(recorded)) = (&prev.input_sha256, &prev.input_stat)
        && recorded.trusted()
        && let Ok(meta) = std::fs::metadata(path)
        && meta.is_file()
        && FileStamp::from(&meta).matches(recorded)
    {
        return Hashed {
            sha: Some(sha.clone()),
            bytes: prev.input_bytes,
            stamp: Some(FileStamp::from(&meta)),
            stat: Some(*recorded),
            unchanged: true,
        };
    }
    let (sha, bytes, stamp, stat) = hash_file_full(path);
    Hashed {
        sha,
        bytes,
        stamp,
        stat,
        unchanged: false,
    }
}

/// How inputs are hashed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct HashMode {
    /// `--force`: nothing is cached.
    pub force: bool,
    /// `--checksum`: every input is read and hashed, whatever its stat.
    pub checksum: bool,
}

/// Decide each job's cache status, in parallel: an input whose stat is the one its previous
/// record trusts is not opened; the others are hashed.
pub(crate) fn statuses(
    jobs: &[Job],
    index: &mut CacheIndex,
    skills: &SkillSet,
    models: &(dyn Fn(&str) -> String + Sync),
    output_dir: &Path,
    mode: HashMode,
) -> Vec<JobCache> {
    let caches = statuses_once(jobs, index, skills, models, output_dir, mode);
    if !index.found_stale() {
        return caches;
    }
    // The index pointed at a record that is not there: it is rebuilt from the records, and
    // the statuses decided again.
    tracing::info!(
        "{}",
        msg!("the cache index is stale; rebuilt from the records")
    );
    *index = index.rebuilt();
    statuses_once(jobs, index, skills, models, output_dir, mode)
}

fn statuses_once(
    jobs: &[Job],
    index: &CacheIndex,
    skills: &SkillSet,
    models: &(dyn Fn(&str) -> String + Sync),
    output_dir: &Path,
    mode: HashMode,
) -> Vec<JobCache> {
    let force = mode.force;
    jobs.par_iter()
        .map(|job| {
            let previous = index.get(job.id.as_str()).map(Box::new);
            let h = if job.problem.is_some() {
                Hashed {
                    sha: None,
                    bytes: None,
                    stamp: None,
                    stat: None,
                    unchanged: false,
                }
            } else if job.is_dir {
                let (sha, bytes) = hash_dir(&job.path, output_dir);
                Hashed {
                    sha,
                    bytes,
                    stamp: None,
                    stat: None,
                    unchanged: false,
                }
            } else {
                input_hash(&job.path, previous.as_deref(), mode.checksum)
            };
            let Hashed {
                sha,
                bytes,
                stamp,
                stat,
                unchanged,
            } = h;
            let Some(sha) = sha else {
                return JobCache {
                    input_sha256: None,
                    input_bytes: bytes,
                    cache_key: None,
                    previous,
                    cached: false,
                    input_stamp: stamp,
                    input_stat: None,
                    unchanged: false,
                    outputs_seen: None,
                };
            };
            let extra: Vec<(String, Option<String>)> = job
                .extra_inputs
                .iter()
                .map(|(name, _, p)| (name.clone(), hash_file(p).0))
                .collect();
            let key = cache_key(
                skills,
                &job.skill,
                &models(&job.skill),
                &job.args,
                &sha,
                &extra,
            );
            let outputs_seen = previous
                .as_ref()
                .filter(|r| !force && r.cache_key.as_deref() == Some(key.as_str()))
                .and_then(|r| outputs_check(output_dir, r, mode.checksum));
            JobCache {
                input_sha256: Some(sha),
                input_bytes: bytes,
                cache_key: Some(key),
                previous,
                cached: outputs_seen.is_some(),
                input_stamp: stamp,
                input_stat: stat,
                unchanged,
                outputs_seen,
            }
        })
        .collect()
}

/// The cache key of a job.
pub(crate) fn cache_key(
    skills: &SkillSet,
    skill: &str,
    model: &str,
    args: &std::collections::BTreeMap<String, String>,
    input_sha256: &str,
    extra: &[(String, Option<String>)],
) -> String {
    let mut h = Sha256::new();
    h.update(PROMPT_VERSION.as_bytes());
    for s in skills.closure(skill) {
        super::hash_pair(&mut h, b"\0skill\0", &s.name, &s.content_hash());
    }
    h.update(b"\0model\0");
    h.update(model.as_bytes());
    for (k, v) in args {
        super::hash_pair(&mut h, b"\0arg\0", k, v);
    }
    h.update(b"\0input\0");
    h.update(input_sha256.as_bytes());
    for (k, sha) in extra {
        super::hash_pair(&mut h, b"\0extra\0", k, sha.as_deref().unwrap_or("missing"));
    }
    hex::encode(h.finalize())
}

/// Every output of the record is still there, byte for byte, and nothing else is in the job's
/// folder: what was seen, or `None`. A folder or an output whose stat is the one recorded with
/// it, and trusted, is taken as recorded without listing or reading it (unless `checksum`).
pub(crate) fn outputs_check(
    output_dir: &Path,
    record: &JobRecord,
    checksum: bool,
) -> Option<OutputsSeen> {
    if record.output_dir.is_empty() {
        return None;
    }
    let dir = output_dir.join(&record.output_dir);
    let stood = |recorded: Option<&InputStat>, meta: &std::fs::Metadata| {
        !checksum && recorded.is_some_and(|r| r.trusted() && FileStamp::from(meta).matches(r))
    };
    let meta = std::fs::symlink_metadata(&dir)
        .ok()
        .filter(|m| m.is_dir())?;
    let folder = if stood(record.output_dir_stat.as_ref(), &meta) {
        record.output_dir_stat
    } else {
        // Listed after the stat is taken: an entry added meanwhile changes the folder's
        // times past the stat recorded, and the next run lists it again.
        let before = FileStamp::from(&meta);
        let entries = walkdir::WalkDir::new(&dir)
            .min_depth(1)
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        let files = entries.iter().filter(|e| !e.file_type().is_dir()).count();
        if files != record.outputs.len() {
            return None;
        }
        (files == entries.len()).then(|| before.stat(now_ns()))
    };
    let mut seen = OutputsSeen {
        folder,
        files: Vec::with_capacity(record.outputs.len()),
    };
    for o in &record.outputs {
        let p = output_dir.join(&o.path);
        let meta = std::fs::symlink_metadata(&p).ok().filter(|m| m.is_file())?;
        if stood(o.stat.as_ref(), &meta) {
            seen.files.push(o.stat);
            continue;
        }
        let (sha, _, _, stat) = hash_file_full(&p);
        if sha.as_deref() != Some(o.sha256.as_str()) {
            return None;
        }
        seen.files.push(stat);
    }
    Some(seen)
}

/// Every output of the record is still there, byte for byte, and nothing else is in the job's
/// folder (read and hashed, whatever the stats say).
pub(crate) fn outputs_intact(output_dir: &Path, record: &JobRecord) -> bool {
    outputs_check(output_dir, record, true).is_some()
}

/// The job's folder exists and is not what zhi last wrote there (its latest succeeded record's
/// outputs, or what a commit's journal says it put there): a person's edit, or someone else's
/// folder, which zhi never replaces. The run fails such a job with `output_conflict` before
/// its first request ([`super::preflight`]) and checks again at its commit.
pub(crate) fn conflict(layout: &OutputLayout, job: &Job, cache: &JobCache) -> Option<JobError> {
    let out = layout.output_dir();
    if std::fs::symlink_metadata(out.join(&job.output_rel)).is_err() {
        return None;
    }
    let ours = cache
        .previous
        .as_deref()
        .into_iter()
        .chain(read_journal(layout, job).as_ref())
        .any(|prev| outputs_intact(out, prev));
    (!ours).then(|| {
        JobError::new(
            ErrorKind::OutputConflict,
            msg!(
                "{} was changed since zhi wrote it (or was not written by zhi); it is left as it is — move it away or delete it to redo this job",
                job.output_rel.display()
            ),
        )
    })
}

/// The record a commit of `job` journaled before its rename (`.zhi/commits/<job-id>.json`),
/// when a kill left it.
fn read_journal(layout: &OutputLayout, job: &Job) -> Option<JobRecord> {
    let path = layout.commit_journal(job.id.as_str());
    let bytes = crate::small_file::read_io(&path, 16 << 20).ok()?;
    serde_json::from_slice::<JobRecord>(&bytes)
        .ok()
        .filter(|r| r.job_id == job.id.as_str())
}

/// The documents of a directory job: files below `dir`, relative to it, sorted, leaving out
/// hidden entries and the output folder (which may lie inside the input folder).
pub(crate) fn folder_files(dir: &Path, output_dir: &Path) -> Vec<std::path::PathBuf> {
    let out = output_dir
        .canonicalize()
        .unwrap_or_else(|_| output_dir.to_path_buf());
    let mut files = Vec::new();
    let walk = walkdir::WalkDir::new(dir).sort_by_file_name().into_iter();
    for e in walk.filter_entry(|e| {
        e.depth() == 0
            || !(e.file_name().to_string_lossy().starts_with('.')
                || e.path().canonicalize().is_ok_and(|c| c.starts_with(&out)))
    }) {
        let Ok(e) = e else { continue };
        if e.file_type().is_file() {
            files.push(e.path().strip_prefix(dir).unwrap_or(e.path()).to_path_buf());
        }
    }
    files
}

/// Files below a folder (recursively), relative to it, sorted.
pub(crate) fn files_under(dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.map_err(std::io::Error::other)?;
        if !e.file_type().is_dir() {
            out.push(e.path().strip_prefix(dir).unwrap_or(e.path()).to_path_buf());
        }
    }
    Ok(out)
}

/// sha256 and size of a file; `None` when it cannot be read, is not a regular file (a
/// device would never end, a FIFO would block), or the run was interrupted meanwhile.
pub(crate) fn hash_file(path: &Path) -> (Option<String>, Option<u64>) {
    let (sha, bytes, _) = hash_file_stamped(path);
    (sha, bytes)
}

/// [`hash_file`], with the stamp of the file that was opened and hashed.
pub(crate) fn hash_file_stamped(path: &Path) -> (Option<String>, Option<u64>, Option<FileStamp>) {
    let (sha, bytes, stamp, _) = hash_file_full(path);
    (sha, bytes, stamp)
}

/// [`hash_file_stamped`], with the stat to record: only when the file's state was the same
/// before and after it was read, all of it.
fn hash_file_full(
    path: &Path,
) -> (
    Option<String>,
    Option<u64>,
    Option<FileStamp>,
    Option<InputStat>,
) {
    let (sha, bytes, stamp, f) = hash_open(path);
    let after = f
        .and_then(|f| f.metadata().ok())
        .map(|m| FileStamp::from(&m));
    let hashed_at = now_ns();
    let stat = match (stamp, after, bytes) {
        (Some(before), Some(after), Some(n)) if before == after && before.len == n => {
            Some(before.stat(hashed_at))
        }
        _ => None,
    };
    (sha, bytes, stamp, stat)
}

type Opened = (
    Option<String>,
    Option<u64>,
    Option<FileStamp>,
    Option<std::fs::File>,
);

fn hash_open(path: &Path) -> Opened {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return (None, None, None, None);
    }
    let Ok(mut f) = std::fs::File::open(path) else {
        return (None, None, None, None);
    };
    let stamp = f.metadata().ok().map(|m| FileStamp::from(&m));
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut n_total = 0u64;
    loop {
        if crate::interrupt::interrupted() {
            return (None, None, None, None);
        }
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                n_total += n as u64;
            }
            Err(_) => return (None, None, None, None),
        }
    }
    (
        Some(hex::encode(h.finalize())),
        Some(n_total),
        stamp,
        Some(f),
    )
}

/// A folder's content hash: its files' relative paths and contents, in sorted order.
fn hash_dir(path: &Path, output_dir: &Path) -> (Option<String>, Option<u64>) {
    let files = folder_files(path, output_dir);
    let mut h = Sha256::new();
    let mut total = 0;
    for f in files {
        let (sha, bytes) = hash_file(&path.join(&f));
        h.update(f.to_string_lossy().as_bytes());
        h.update(b"\0");
        h.update(sha.as_deref().unwrap_or("unreadable").as_bytes());
        h.update(b"\n");
        total += bytes.unwrap_or(0);
    }
    (Some(hex::encode(h.finalize())), Some(total))
}

/// The end of a run settles what it wrote (docs/outputs.md#what-a-rerun-writes): each output
/// of `record` (and its folder) checked as a rerun checks it — an output whose stat cannot be
/// trusted read and hashed again — and its input hashed again when its stat was taken too soon,
/// the stats recorded when every hash is still the record's. Whether the record changed; a
/// file that changed meanwhile leaves the record as it was, for the next run to find.
pub(crate) fn settle(output_dir: &Path, cwd: &Path, record: &mut JobRecord) -> bool {
    if !record.needs_settling() {
        return false;
    }
    let Some(seen) = outputs_check(output_dir, record, false) else {
        return false;
    };
    let mut settled = record.clone();
    seen.apply(&mut settled.outputs);
    if seen.folder.is_some() {
        settled.output_dir_stat = seen.folder;
    }
    if let (Some(recorded), Some(sha)) = (settled.input_stat, settled.input_sha256.as_deref())
        && !recorded.trusted()
    {
        let path = cwd.join(&settled.input);
        let (now_sha, _, stamp, stat) = hash_file_full(&path);
        match (now_sha, stamp, stat) {
            (Some(s), Some(stamp), Some(stat)) if s == sha && stamp.matches(&recorded) => {
                settled.input_stat = Some(stat);
            }
            // Not the file hashed when the run began (or no one file): left for the next run.
            _ => {}
        }
    }
    // Only stats the next run will trust are worth the rewrite.
    if settled.needs_settling() {
        return false;
    }
    *record = settled;
    true
}
