//! The run's batch work as the manifest records it (`batches`): what was collected, used,
//! submitted and is still running. Filled in by [`crate::batch`].

use serde::{Deserialize, Serialize};

/// A batch submitted by this run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Submitted {
    pub batch_id: String,
    pub local_id: String,
    pub model: String,
    pub requests: u64,
}

/// A batch still running at the provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Waiting {
    pub batch_id: String,
    pub status: String,
    pub requests: u64,
    pub completed: u64,
    pub failed: u64,
}

/// The run's batch work, for the manifest (`batches`) and the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BatchReport {
    /// Batches whose answers this run downloaded.
    pub collected: Vec<String>,
    /// Answers from batches that this run's jobs used.
    pub answers_used: u64,
    /// Batches this run created.
    pub submitted: Vec<Submitted>,
    /// Requests this run queued (all in `submitted` unless submitting failed).
    pub queued: u64,
    /// Batches still running.
    pub waiting: Vec<Waiting>,
    /// What went wrong talking to the Batch API, when something did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// Batches this run could not bring up to date (the run exits 75; after
    /// `batch.max_stalled_runs` runs in a row a batch is given up).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalled: Vec<String>,
}
