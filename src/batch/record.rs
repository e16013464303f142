//! The book of one batch on disk: `<OUT>/.zhi/batches/<local-id>/batch.json`, with the
//! request file before it is uploaded (`input.jsonl`) and the answers once downloaded
//! (`output.jsonl`, `errors.jsonl`).
//!
//! `batch.json` is rewritten whole (temporary file, then rename) before and after every call
//! to the provider, so a run killed at any moment leaves the last step that surely happened,
//! and the next run can tell what may have happened after it.

use crate::llm::batch::RequestCounts;
use crate::manifest::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

/// The most of a `batch.json` read (50,000 requests of ~150 bytes each fit many times over).
const MAX_RECORD_BYTES: u64 = 256 << 20;

/// Where a batch is in its life, as far as zhi surely knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Stage {
    /// The request file is written; its upload may have begun.
    Prepared,
    /// The file is uploaded; the batch may have been created.
    Uploaded,
    /// The batch exists at the provider.
    Submitted,
    /// The batch ended and its answers are downloaded here.
    Collected,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One request in a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Request {
    /// `<job-id>[-<part>][-t<round>]`: the job, the piece of its document, the round of its
    /// conversation.
    pub custom_id: String,
    pub job_id: String,
    /// SHA-256 of the request body: an answer is used only for the very request it answers.
    pub sha256: String,
    /// 1 for the first submission of this request, 2 for its resubmission, …
    pub attempt: u32,
}

/// `batch.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BatchRecord {
    /// The folder's name: the submitting run's id and a number.
    pub local_id: String,
    pub created_at: Timestamp,
    /// The API base the batch belongs to, without credentials.
    pub base_url: String,
    /// The chat endpoint of its lines (`/v4/chat/completions`).
    pub endpoint: String,
    pub model: String,
    pub stage: Stage,
    /// The name the request file was uploaded under (to find it after a kill).
    pub file_name: String,
    #[serde(default)]
    pub input_file_id: Option<String>,
    #[serde(default)]
    pub batch_id: Option<String>,
    /// The provider's status when last asked.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub request_counts: Option<RequestCounts>,
    #[serde(default)]
    pub output_file_id: Option<String>,
    #[serde(default)]
    pub error_file_id: Option<String>,
    /// When the provider was last asked.
    #[serde(default)]
    pub checked_at: Option<Timestamp>,
    #[serde(default)]
    pub collected_at: Option<Timestamp>,
    /// Every file of the batch is deleted from the provider.
    #[serde(default)]
    pub files_deleted: bool,
    pub requests: Vec<Request>,
    /// Jobs whose answers in this batch are no longer needed (their job succeeded, failed
    /// or was found cached since); the folder goes when every request's job is here.
    #[serde(default)]
    pub settled_jobs: BTreeSet<String>,
    /// Runs in a row that could not bring the batch up to date (the provider out of reach,
    /// a download that kept failing); at `batch.max_stalled_runs` the batch is given up.
    #[serde(default)]
    pub stalled_runs: u32,
    /// The batch can never be collected: why, and whether its unanswered requests may be
    /// submitted again (not when the batch may exist and be answered and billed anyway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given_up: Option<GivenUp>,
}

/// Why a batch was given up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct GivenUp {
    pub reason: String,
    pub resubmit: bool,
}

impl BatchRecord {
    /// A batch made locally and not yet uploaded: its requests, and nothing asked of the
    /// provider yet.
    pub(crate) fn prepared(
        local_id: &str,
        created_at: Timestamp,
        (base_url, endpoint): (String, String),
        model: &str,
        requests: Vec<Request>,
    ) -> BatchRecord {
        BatchRecord {
            local_id: local_id.to_string(),
            created_at,
            base_url,
            endpoint,
            model: model.to_string(),
            stage: Stage::Prepared,
            file_name: format!("zhi-{local_id}.jsonl"),
            input_file_id: None,
            batch_id: None,
            status: None,
            request_counts: None,
            output_file_id: None,
            error_file_id: None,
            checked_at: None,
            collected_at: None,
            files_deleted: false,
            requests,
            settled_jobs: BTreeSet::new(),
            stalled_runs: 0,
            given_up: None,
        }
    }

    /// The files zhi created or was given at the provider, still to delete.
    pub(crate) fn provider_files(&self) -> Vec<String> {
        [
            &self.input_file_id,
            &self.output_file_id,
            &self.error_file_id,
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect()
    }

    /// The provider's name for it, else the local one.
    pub(crate) fn label(&self) -> &str {
        self.batch_id.as_deref().unwrap_or(&self.local_id)
    }

    /// Whether every request's job is settled.
    pub(crate) fn all_settled(&self) -> bool {
        self.requests
            .iter()
            .all(|r| self.settled_jobs.contains(&r.job_id))
    }
}

/// `<OUT>/.zhi/batches/<local-id>/`.
pub(crate) fn folder(batches: &Path, local_id: &str) -> PathBuf {
    batches.join(local_id)
}

/// Write `batch.json` atomically, its folder reached beneath the output folder `out`'s handle.
pub(crate) fn save(out: &Path, batches: &Path, record: &BatchRecord) -> io::Result<()> {
    let body = serde_json::to_vec(record).map_err(io::Error::other)?;
    let path = folder(batches, &record.local_id).join("batch.json");
    crate::layout::OutputLayout::new(out).write_atomic(&path, &body)
}

/// Every batch recorded under `batches`, oldest first, for a run (which holds the lock). A
/// folder without a `batch.json` was left by a kill before the batch had a record (nothing
/// was uploaded yet) and is removed; one that cannot be read for another reason is reported
/// and kept.
pub(crate) fn load_all(batches: &Path, warn: &mut dyn FnMut(String)) -> Vec<BatchRecord> {
    load(batches, true, warn)
}

/// The same without the lock (`zhi batch status`): nothing is removed, since a folder
/// without its record may be one a run is making right now.
pub(crate) fn load_all_readonly(batches: &Path, warn: &mut dyn FnMut(String)) -> Vec<BatchRecord> {
    load(batches, false, warn)
}

fn load(batches: &Path, tidy: bool, warn: &mut dyn FnMut(String)) -> Vec<BatchRecord> {
    let Ok(entries) = std::fs::read_dir(batches) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let dir = batches.join(&name);
        match crate::small_file::read_io(&dir.join("batch.json"), MAX_RECORD_BYTES) {
            Ok(bytes) => match serde_json::from_slice::<BatchRecord>(&bytes) {
                Ok(r) if r.local_id == name => out.push(r),
                Ok(_) | Err(_) => warn(format!(
                    "{} is not a batch record zhi can read; it is left as it is",
                    dir.join("batch.json").display()
                )),
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if tidy {
                    let _ = std::fs::remove_dir_all(&dir);
                }
            }
            Err(e) => warn(format!(
                "cannot read {}: {e}",
                dir.join("batch.json").display()
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(local_id: &str) -> BatchRecord {
        BatchRecord::prepared(
            local_id,
            "2025-01-01T00:00:00.000Z".parse().unwrap(),
            (
                "https://example.com/v4".into(),
                "/v4/chat/completions".into(),
            ),
            "glm-4-flash",
            vec![Request {
                custom_id: "j1".into(),
                job_id: "j1".into(),
                sha256: "00".into(),
                attempt: 1,
            }],
        )
    }

    #[test]
    fn saved_records_load_in_order_and_half_made_folders_go() {
        let dir = tempfile::tempdir().unwrap();
        let batches = dir.path();
        for id in ["b-2", "b-1"] {
            std::fs::create_dir_all(batches.join(id)).unwrap();
            save(batches, batches, &record(id)).unwrap();
        }
        // A kill after the request file was written and before its record.
        std::fs::create_dir_all(batches.join("b-3")).unwrap();
        std::fs::write(batches.join("b-3/input.jsonl"), "{}\n").unwrap();
        let mut warnings = Vec::new();
        let loaded = load_all(batches, &mut |w| warnings.push(w));
        let ids: Vec<&str> = loaded.iter().map(|r| r.local_id.as_str()).collect();
        assert_eq!(ids, ["b-1", "b-2"]);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(!batches.join("b-3").exists());
        let mut r = record("b-1");
        assert!(!r.all_settled());
        r.settled_jobs.insert("j1".into());
        assert!(r.all_settled());
    }
}
