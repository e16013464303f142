//! The answers of collected batches, found by request: an index of where each `custom_id`'s
//! line sits in the downloaded files, read when a job asks for it. Only places are held in
//! memory, so a folder of 100,000 answers costs a few megabytes, not their text.

use super::record::{BatchRecord, Stage};
use crate::llm::batch::line_custom_id;
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

/// Where a request's answer is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Place {
    /// A line of a downloaded file.
    Line {
        file: usize,
        offset: u64,
        len: usize,
    },
    /// The batch ended without a line for it (expired, cancelled, failed as a whole), or was
    /// given up; `resubmit`: whether another submission may be made.
    Missing { status: String, resubmit: bool },
    /// The batch answered it twice, differently: neither answer is trusted.
    Conflict,
}

/// The answer to one submission of a request.
#[derive(Debug, Clone)]
pub(super) struct Found {
    pub sha256: String,
    pub attempt: u32,
    /// The batch that answered (its provider id).
    pub batch: String,
    pub place: Place,
}

/// Every collected answer of the output folder's batches.
#[derive(Debug, Default)]
pub(super) struct Answers {
    files: Vec<std::fs::File>,
    by_id: HashMap<String, Vec<Found>>,
}

impl Answers {
    /// Index the downloaded files of `records` that are collected (requests whose job is
    /// settled are left out: their answers are used).
    pub(super) fn build(batches: &Path, records: &[&BatchRecord]) -> io::Result<Answers> {
        let mut answers = Answers::default();
        for r in records.iter().filter(|r| r.stage == Stage::Collected) {
            let dir = super::record::folder(batches, &r.local_id);
            // Each request's place, with a hash of its line to tell a repeat from a conflict.
            let mut lines: HashMap<String, (Place, u64)> = HashMap::new();
            // The result file first: an answer beats an error line for the same request.
            for name in ["output.jsonl", "errors.jsonl"] {
                let path = dir.join(name);
                let file = match crate::small_file::open_regular(&path) {
                    Ok(f) => f,
                    Err(crate::small_file::ReadError::NotFound) => continue,
                    Err(e) => {
                        return Err(io::Error::other(format!("{} {e}", path.display())));
                    }
                };
                let index = answers.files.len();
                let mut reader = BufReader::new(file.try_clone()?);
                answers.files.push(file);
                let mut offset = 0u64;
                let mut line = Vec::new();
                loop {
                    line.clear();
                    let n = reader.read_until(b'\n', &mut line)?;
                    if n == 0 {
                        break;
                    }
                    if let Some(id) = line_custom_id(&line) {
                        let hash = {
                            use std::hash::{Hash, Hasher};
                            let mut h = std::collections::hash_map::DefaultHasher::new();
                            line.trim_ascii_end().hash(&mut h);
                            h.finish()
                        };
                        let place = Place::Line {
                            file: index,
                            offset,
                            len: n,
                        };
                        match lines.get_mut(&id) {
                            None => {
                                lines.insert(id, (place, hash));
                            }
                            // The same file twice for one request, with another answer.
                            Some((Place::Line { file, .. }, seen))
                                if *file == index && *seen != hash =>
                            {
                                lines.insert(id, (Place::Conflict, hash));
                            }
                            Some(_) => {}
                        }
                    }
                    offset += n as u64;
                }
            }
            let (status, resubmit) = match &r.given_up {
                Some(g) => (format!("given up: {}", g.reason), g.resubmit),
                None => (r.status.clone().unwrap_or_else(|| "ended".into()), true),
            };
            for q in r
                .requests
                .iter()
                .filter(|q| !r.settled_jobs.contains(&q.job_id))
            {
                let place = lines
                    .get(&q.custom_id)
                    .map(|(p, _)| p.clone())
                    .unwrap_or_else(|| Place::Missing {
                        status: status.clone(),
                        resubmit,
                    });
                answers
                    .by_id
                    .entry(q.custom_id.clone())
                    .or_default()
                    .push(Found {
                        sha256: q.sha256.clone(),
                        attempt: q.attempt,
                        batch: r.label().to_string(),
                        place,
                    });
            }
        }
        Ok(answers)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The answer to the latest submission of the request `custom_id` with this body.
    pub(super) fn latest(&self, custom_id: &str, sha256: &str) -> Option<&Found> {
        self.by_id
            .get(custom_id)?
            .iter()
            .filter(|f| f.sha256 == sha256)
            .max_by_key(|f| f.attempt)
    }

    /// The line of an answer.
    pub(super) fn read(&self, file: usize, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let f = self
            .files
            .get(file)
            .ok_or_else(|| io::Error::other("no such answer file"))?;
        let mut buf = vec![0u8; len];
        f.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }
}
