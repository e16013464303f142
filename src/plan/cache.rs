//! Cache status (docs/outputs.md#the-cache): a job whose key matches the latest succeeded record
//! for its id, and whose outputs are still there unchanged, is `cached` and costs no request.
//!
//! The key is a hash of the zhi prompt version, the skill and its nested skills (their file
//! hashes), the model, the arguments and the content of every input.

use crate::manifest::{self, JobRecord, Status};
use crate::plan::Job;
use crate::skills::SkillSet;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// Bumped whenever the way zhi talks to the model changes (preamble, message layout, tools):
/// outputs made under another version are redone.
pub const PROMPT_VERSION: &str = "zhi-prompt-2";

/// The latest usable record of each job id in an output folder.
#[derive(Debug, Default)]
pub struct CacheIndex {
    latest: HashMap<String, JobRecord>,
}

impl CacheIndex {
    /// The latest succeeded (or cached) record of each wanted job id. Runs are read newest
    /// first and reading stops once every wanted id is found — usually after the latest run,
    /// since a rerun records its cached jobs again — so start-up does not grow with history.
    pub fn load<'a>(output_dir: &Path, wanted: impl IntoIterator<Item = &'a str>) -> CacheIndex {
        let wanted: std::collections::HashSet<&str> = wanted.into_iter().collect();
        let mut latest = HashMap::new();
        for run in manifest::list_runs(output_dir).iter().rev() {
            if latest.len() == wanted.len() {
                break;
            }
            let Ok((records, _)) = manifest::read_records(&run.path) else {
                continue;
            };
            for r in records {
                if matches!(r.status, Status::Succeeded | Status::Cached)
                    && wanted.contains(r.job_id.as_str())
                    && !latest.contains_key(&r.job_id)
                {
                    latest.insert(r.job_id.clone(), r);
                }
            }
        }
        CacheIndex { latest }
    }

    pub fn get(&self, job_id: &str) -> Option<&JobRecord> {
        self.latest.get(job_id)
    }
}

/// What the planner knows of a job before running it.
#[derive(Debug, Clone, Default)]
pub struct JobCache {
    pub input_sha256: Option<String>,
    pub input_bytes: Option<u64>,
    pub cache_key: Option<String>,
    /// The latest succeeded record of this job, whatever its key.
    pub previous: Option<JobRecord>,
    /// Whether the job is cached: same key, outputs unchanged.
    pub cached: bool,
    /// The primary input's file as it was hashed, to tell at run time that the file read is
    /// the file planned without hashing it again.
    pub input_stamp: Option<FileStamp>,
}

/// Which file a path led to, and its state: device, inode, size and modification time. Two
/// equal stamps are the same file, unchanged (a replacement, a link put in its place or a
/// write changes one of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl From<&std::fs::Metadata> for FileStamp {
    fn from(m: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
        }
    }
}

impl FileStamp {
    /// The stamp of what `path` leads to now.
    pub fn of(path: &Path) -> Option<FileStamp> {
        std::fs::metadata(path).ok().map(|m| FileStamp::from(&m))
    }
}

/// Hash every input and decide each job's cache status, in parallel.
pub fn statuses(
    jobs: &[Job],
    index: &CacheIndex,
    skills: &SkillSet,
    models: &(dyn Fn(&str) -> String + Sync),
    output_dir: &Path,
    force: bool,
) -> Vec<JobCache> {
    jobs.par_iter()
        .map(|job| {
            let (sha, bytes, stamp) = if job.problem.is_some() {
                (None, None, None)
            } else if job.is_dir {
                let (sha, bytes) = hash_dir(&job.path, output_dir);
                (sha, bytes, None)
            } else {
                hash_file_stamped(&job.path)
            };
            let previous = index.get(job.id.as_str()).cloned();
            let Some(sha) = sha else {
                return JobCache {
                    input_sha256: None,
                    input_bytes: bytes,
                    cache_key: None,
                    previous,
                    cached: false,
                    input_stamp: stamp,
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
            let cached = !force
                && previous.as_ref().is_some_and(|r| {
                    r.cache_key.as_deref() == Some(key.as_str()) && outputs_intact(output_dir, r)
                });
            JobCache {
                input_sha256: Some(sha),
                input_bytes: bytes,
                cache_key: Some(key),
                previous,
                cached,
                input_stamp: stamp,
            }
        })
        .collect()
}

/// The cache key of a job.
pub fn cache_key(
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
/// folder.
pub fn outputs_intact(output_dir: &Path, record: &JobRecord) -> bool {
    if record.output_dir.is_empty() {
        return false;
    }
    let dir = output_dir.join(&record.output_dir);
    let Ok(files) = files_under(&dir) else {
        return false;
    };
    if files.len() != record.outputs.len() {
        return false;
    }
    record.outputs.iter().all(|o| {
        let p = output_dir.join(&o.path);
        hash_file(&p).0.as_deref() == Some(o.sha256.as_str())
    })
}

/// The documents of a directory job: files below `dir`, relative to it, sorted, leaving out
/// hidden entries and the output folder (which may lie inside the input folder).
pub fn folder_files(dir: &Path, output_dir: &Path) -> Vec<std::path::PathBuf> {
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
pub fn files_under(dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
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
pub fn hash_file(path: &Path) -> (Option<String>, Option<u64>) {
    let (sha, bytes, _) = hash_file_stamped(path);
    (sha, bytes)
}

/// [`hash_file`], with the stamp of the file that was opened and hashed.
pub fn hash_file_stamped(path: &Path) -> (Option<String>, Option<u64>, Option<FileStamp>) {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return (None, None, None);
    }
    let Ok(mut f) = std::fs::File::open(path) else {
        return (None, None, None);
    };
    let stamp = f.metadata().ok().map(|m| FileStamp::from(&m));
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut n_total = 0u64;
    loop {
        if crate::interrupt::interrupted() {
            return (None, None, None);
        }
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                n_total += n as u64;
            }
            Err(_) => return (None, None, None),
        }
    }
    (Some(hex::encode(h.finalize())), Some(n_total), stamp)
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

    #[test]
    fn the_latest_success_wins_and_failures_do_not_hide_it() {
        let out = tempfile::tempdir().unwrap();
        let run = |id: &str, records: &[JobRecord]| {
            let mut w = ManifestWriter::create(&out.path().join(".zhi/runs").join(id)).unwrap();
            for r in records {
                w.append(r).unwrap();
            }
        };
        run(
            "20260101T000000.000Z",
            &[
                record("a", Status::Succeeded, "old"),
                record("b", Status::Succeeded, "b1"),
            ],
        );
        run(
            "20260102T000000.000Z",
            &[record("a", Status::Succeeded, "new")],
        );
        run(
            "20260103T000000.000Z",
            &[record("a", Status::Failed, "newer")],
        );
        let index = CacheIndex::load(out.path(), ["a", "b"]);
        assert_eq!(index.get("a").unwrap().cache_key.as_deref(), Some("new"));
        assert_eq!(index.get("b").unwrap().cache_key.as_deref(), Some("b1"));
        assert!(CacheIndex::load(out.path(), ["c"]).get("c").is_none());
    }
}
