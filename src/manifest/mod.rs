//! Manifests: one record per job, appended and flushed as each job ends, and one summary per run
//! (docs/outputs.md#manifests). They are the run's account of itself: a record is written only for
//! what really happened, and a reader survives a record torn by a crash.

mod batches;
mod cost;
mod doubt;
pub(crate) mod extraction;
pub(crate) mod merge;
mod read;
pub(crate) mod state;
pub(crate) mod summary;
mod timestamp;
mod write;

pub(crate) use batches::{BatchReport, Submitted, Waiting};
pub use cost::Cost;
pub(crate) use cost::{Accounts, Priced};
pub use doubt::Doubt;
pub(crate) use doubt::in_words as doubts_in_words;
pub(crate) use extraction::Extraction;
pub(crate) use read::read_manifest;
pub use read::{RunDir, latest_run, list_runs, read_records};
pub use timestamp::Timestamp;
pub(crate) use write::{
    ManifestWriter, RecordLine, formula_like, formula_safe, job_key, write_atomic, write_csv,
};

use crate::error::JobError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What became of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Status {
    Succeeded,
    Failed,
    Cached,
    Skipped,
    Cancelled,
}

impl Status {
    /// The job was run in this run (to an end or cancelled), not taken from the cache or
    /// skipped.
    pub fn ran(self) -> bool {
        matches!(self, Status::Succeeded | Status::Failed | Status::Cancelled)
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A job's status as a person is shown it (docs/outputs.md#job-records): its record's
/// `status`, except that outputs that stand (`succeeded` or `cached`) and that zhi doubts are
/// `doubted` — never a success. Derived from a record's `status` and `doubts`, never written
/// in place of them: the cache, `manifest merge` and records of earlier runs read `status` as
/// they always have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub(crate) enum ShownStatus {
    Succeeded,
    Doubted,
    Failed,
    Cached,
    Skipped,
    Cancelled,
}

impl ShownStatus {
    /// The status shown of a record of `status` whose outputs are doubted or not.
    pub(crate) fn of(status: Status, doubted: bool) -> ShownStatus {
        match status {
            Status::Succeeded | Status::Cached if doubted => ShownStatus::Doubted,
            Status::Succeeded => ShownStatus::Succeeded,
            Status::Failed => ShownStatus::Failed,
            Status::Cached => ShownStatus::Cached,
            Status::Skipped => ShownStatus::Skipped,
            Status::Cancelled => ShownStatus::Cancelled,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A file's identity and state when its content was hashed (an input, an output) or its
/// entries listed (a job's folder): device, inode, size, modification and change times
/// (nanoseconds since the epoch), and when the hash or the listing was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputStat {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    /// When the content hash was finished (the file's state was read before and after it).
    pub hashed_at_ns: i64,
}

impl InputStat {
    /// How much older than the hash a file's times must be for its stat to be trusted: more
    /// than the coarsest timestamp granularity of a common file system (FAT's 2 s), so a
    /// write in the same tick as the hash can never hide behind an unchanged stat.
    pub const RACY_MARGIN_NS: i64 = 2_000_000_000;

    /// Whether the stat may stand for the content: the file's last change was safely before
    /// the hash (git's racy-clean rule). A file changed within the margin is hashed again.
    pub fn trusted(&self) -> bool {
        self.mtime_ns.max(self.ctime_ns) < self.hashed_at_ns - Self::RACY_MARGIN_NS
    }
}

/// One output file of a job, relative to the output folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputFile {
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
    /// The file's stat when its hash was last checked: a rerun that finds the same stat, and
    /// may trust it, does not read the file again (docs/outputs.md#the-stat-cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stat: Option<InputStat>,
}

/// Tokens spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
}

// Sums saturate: a count read back from a file (a record, `.zhi/pruned.json`) may be any u64.
impl Tokens {
    pub fn total(&self) -> u64 {
        self.prompt.saturating_add(self.completion)
    }
    pub fn add(&mut self, other: Tokens) {
        self.prompt = self.prompt.saturating_add(other.prompt);
        self.completion = self.completion.saturating_add(other.completion);
    }
    /// What was spent since `before` (an earlier reading of the same counter).
    pub fn since(self, before: Tokens) -> Tokens {
        Tokens {
            prompt: self.prompt.saturating_sub(before.prompt),
            completion: self.completion.saturating_sub(before.completion),
        }
    }
}

/// Chunk progress of a long document (docs/documents.md#checkpoints).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunks {
    pub total: u32,
    pub done: u32,
}

/// One step of a workflow job (docs/skills.md#workflows), as its record tells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub id: String,
    /// The skill the step ran; empty for the workflow's own `prompt` step.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub skill: String,
    /// `succeeded`, `failed` or `skipped`.
    pub status: String,
    #[serde(default)]
    pub requests: u32,
    #[serde(default)]
    pub tokens: Tokens,
    /// The files the step left in the job's folder, relative to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One line of `results.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub job_id: String,
    pub skill: String,
    pub input: String,
    pub input_sha256: Option<String>,
    pub input_bytes: Option<u64>,
    /// The input file as it was when `input_sha256` was computed: a rerun that finds it so
    /// trusts the hash without reading the file (docs/outputs.md#the-stat-cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_stat: Option<InputStat>,
    /// The input's text in tokens as the run counted it, for `zhi plan`'s estimate of an
    /// unchanged document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    pub status: Status,
    pub outputs: Vec<OutputFile>,
    pub model: String,
    pub turns: u32,
    /// The most attempts one request of the job needed (1: nothing was retried).
    pub attempts: u32,
    /// HTTP requests sent for the job, retries included.
    #[serde(default)]
    pub requests: u32,
    pub refused_tool_calls: u32,
    /// Tool calls the model made (refused ones included), nested skills included.
    #[serde(default)]
    pub tool_calls: u32,
    pub tokens: Tokens,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    pub duration_ms: u64,
    pub error: Option<JobError>,
    /// The job's folder, relative to the output folder.
    #[serde(default)]
    pub output_dir: String,
    /// The job's folder's stat when it was last listed and found to hold the outputs and
    /// nothing else (kept only when it has no subfolder: then any entry added, removed or
    /// renamed in it changes this stat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_dir_stat: Option<InputStat>,
    /// The cache key the outputs were made under (docs/outputs.md#the-cache).
    #[serde(default)]
    pub cache_key: Option<String>,
    /// Arguments the job ran with.
    #[serde(default)]
    pub args: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<Chunks>,
    /// The model the server said answered, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_model: Option<String>,
    /// The job's transcript, relative to the output folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    /// What a person should know about how the job read its input, e.g. PDF pages where
    /// every extractor found far less text than the page draws.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Figures the outputs state that the job's documents do not hold
    /// (docs/skills.md#figures).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ungrounded_figures: Vec<String>,
    /// What zhi doubts in the outputs that became the job's (docs/outputs.md#doubts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub doubts: Vec<Doubt>,
    /// A step's answer failed zhi's checks and a stronger model's answer became the output
    /// (docs/escalation.md); `model` is then that model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub escalated: bool,
    /// `--audit`: the job was in the sample, answered by its own model and by the top rung,
    /// whose answer it kept (docs/escalation.md#audit).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub audited: bool,
    /// `--audit --target`: the job's skill fell below the target and the job went to the top
    /// rung alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub routed: bool,
    /// The model whose answer failed first, when the job was escalated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalated_from: Option<String>,
    /// The server of the model that answered, when it is not the run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Tokens per model, when more than one model was asked.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tokens_by_model: BTreeMap<String, Tokens>,
    /// What the job's tokens cost at the run's prices (docs/escalation.md#cost): the priced
    /// models' part, when it is in one currency. Models without a price are in `unpriced`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// Each priced model's cost, when more than one model was asked.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cost_by_model: BTreeMap<String, Cost>,
    /// The models the job asked that have no price: their part of its cost is unknown, not
    /// zero.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
    /// An extraction job's validity and where each value is in the document
    /// (docs/extract.md#grounding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extraction: Option<Extraction>,
    /// Files the job left that its skill does not declare, relative to the job's folder.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_files: Vec<String>,
    /// A workflow's steps, in the order they ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepRecord>,
    /// Not written: the record of a cached job says nothing for deciding its cache that the
    /// record it was made from did not (same key, input stat, outputs and their stats). The
    /// cache index keeps pointing at that one, so a rerun that changes nothing adds nothing to
    /// hold for the index.
    #[serde(skip)]
    pub restates: bool,
}

impl JobRecord {
    /// The status a person is shown: `doubted` for outputs that stand and are doubted.
    pub(crate) fn shown(&self) -> ShownStatus {
        ShownStatus::of(self.status, !self.doubts.is_empty())
    }

    /// Whether the record's stats would make the next run read its files again: an output,
    /// the job's folder or its input whose stat is missing or was taken too soon after its
    /// last change to be trusted (docs/outputs.md#the-stat-cache).
    pub(crate) fn needs_settling(&self) -> bool {
        let loose = |s: Option<&InputStat>| s.is_none_or(|s| !s.trusted());
        matches!(self.status, Status::Succeeded | Status::Cached)
            && !self.output_dir.is_empty()
            && (self.outputs.iter().any(|o| loose(o.stat.as_ref()))
                || self.output_dir_stat.is_some_and(|s| !s.trusted())
                || self.input_stat.is_some_and(|s| !s.trusted()))
    }

    /// A record with nothing recorded yet: no outputs, no tokens, no times, no error.
    pub fn new(job_id: &str, skill: &str, input: &str, status: Status) -> JobRecord {
        JobRecord {
            job_id: job_id.into(),
            skill: skill.into(),
            input: input.into(),
            input_sha256: None,
            input_bytes: None,
            input_stat: None,
            input_tokens: None,
            status,
            outputs: Vec::new(),
            model: String::new(),
            turns: 0,
            attempts: 0,
            requests: 0,
            refused_tool_calls: 0,
            tool_calls: 0,
            tokens: Tokens::default(),
            started_at: None,
            finished_at: None,
            duration_ms: 0,
            error: None,
            output_dir: String::new(),
            output_dir_stat: None,
            cache_key: None,
            args: BTreeMap::new(),
            chunks: None,
            served_model: None,
            transcript: None,
            warnings: Vec::new(),
            ungrounded_figures: Vec::new(),
            doubts: Vec::new(),
            escalated: false,
            audited: false,
            routed: false,
            escalated_from: None,
            base_url: None,
            tokens_by_model: BTreeMap::new(),
            cost: None,
            cost_by_model: BTreeMap::new(),
            unpriced: Vec::new(),
            extraction: None,
            extra_files: Vec::new(),
            steps: Vec::new(),
            restates: false,
        }
    }
}

/// Jobs per status shown ([`ShownStatus`]): they add up to `planned`. `succeeded` and
/// `cached` leave out the jobs whose outputs zhi doubts: those are `doubted`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Counts {
    pub planned: u64,
    pub succeeded: u64,
    /// Absent from the manifests of earlier runs, which counted such jobs as succeeded or
    /// cached.
    #[serde(default)]
    pub doubted: u64,
    pub failed: u64,
    pub cached: u64,
    pub skipped: u64,
    pub cancelled: u64,
}

impl Counts {
    pub(crate) fn add(&mut self, s: ShownStatus) {
        match s {
            ShownStatus::Succeeded => self.succeeded += 1,
            ShownStatus::Doubted => self.doubted += 1,
            ShownStatus::Failed => self.failed += 1,
            ShownStatus::Cached => self.cached += 1,
            ShownStatus::Skipped => self.skipped += 1,
            ShownStatus::Cancelled => self.cancelled += 1,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunStatus {
    Completed,
    CompletedWithFailures,
    Aborted,
    Interrupted,
}

/// Concurrency over the run (`-j auto` moves it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ConcurrencyStats {
    pub mode: ConcurrencyMode,
    pub initial: u32,
    pub peak: u32,
    #[serde(rename = "final")]
    pub last: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ConcurrencyMode {
    #[default]
    Fixed,
    Auto,
}

/// Where a run's planned job ids come from when its manifest is written: its plan, read as
/// the manifest is (a million ids are never held as strings).
pub(crate) trait IdSource: Send + Sync {
    /// Every id, in plan order; an error when the plan cannot be read back.
    fn each_id(&self, f: &mut dyn FnMut(&str)) -> std::io::Result<()>;
}

/// A manifest's `planned_job_ids`: a list as read, or the plan of the run writing it.
#[derive(Clone)]
pub(crate) enum PlannedIds {
    Listed(Vec<String>),
    Plan(std::sync::Arc<dyn IdSource>),
}

impl Default for PlannedIds {
    fn default() -> Self {
        PlannedIds::Listed(Vec::new())
    }
}

impl PlannedIds {
    /// An empty list (an unsharded run writes none): not written.
    fn is_unlisted(&self) -> bool {
        matches!(self, PlannedIds::Listed(ids) if ids.is_empty())
    }

    /// The ids, as a list.
    pub(crate) fn to_vec(&self) -> Vec<String> {
        match self {
            PlannedIds::Listed(ids) => ids.clone(),
            PlannedIds::Plan(plan) => {
                let mut ids = Vec::new();
                // A plan that cannot be read back names no planned job rather than some.
                match plan.each_id(&mut |id| ids.push(id.to_string())) {
                    Ok(()) => ids,
                    Err(_) => Vec::new(),
                }
            }
        }
    }
}

impl From<Vec<String>> for PlannedIds {
    fn from(ids: Vec<String>) -> Self {
        PlannedIds::Listed(ids)
    }
}

impl std::fmt::Debug for PlannedIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.to_vec()).finish()
    }
}

impl PartialEq for PlannedIds {
    fn eq(&self, other: &Self) -> bool {
        self.to_vec() == other.to_vec()
    }
}

impl<const N: usize> PartialEq<[&str; N]> for PlannedIds {
    fn eq(&self, other: &[&str; N]) -> bool {
        self.to_vec() == other
    }
}

impl Serialize for PlannedIds {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        match self {
            PlannedIds::Plan(plan) => {
                let mut seq = s.serialize_seq(None)?;
                let mut failed = None;
                plan.each_id(&mut |id| {
                    if failed.is_none()
                        && let Err(e) = seq.serialize_element(id)
                    {
                        failed = Some(e);
                    }
                })
                .map_err(|e| {
                    S::Error::custom(msg!(
                        "cannot read the plan back from its temporary file: {e}"
                    ))
                })?;
                if let Some(e) = failed {
                    return Err(e);
                }
                seq.end()
            }
            other => other.to_vec().serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for PlannedIds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(d).map(PlannedIds::Listed)
    }
}

/// `manifest.json`: the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunManifest {
    pub run_id: String,
    pub zhi_version: String,
    pub command: String,
    pub started_at: Timestamp,
    pub finished_at: Option<Timestamp>,
    pub status: RunStatus,
    pub skills: BTreeMap<String, String>,
    pub counts: Counts,
    pub tokens: Tokens,
    pub output_dir: String,
    /// Path of `results.jsonl`.
    pub results: String,
    /// Path of `results.csv`.
    pub results_csv: String,
    /// `M/N` when this run was one shard.
    pub shard: Option<String>,
    /// What chose the shard: `--shard`, or the scheduler variable that gave its index
    /// (`SLURM_ARRAY_TASK_ID`, `JOB_COMPLETION_INDEX`, `CI_NODE_INDEX`); absent when unsharded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_source: Option<String>,
    /// Why the run stopped early, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default)]
    pub concurrency: ConcurrencyStats,
    /// Every job id of the run's whole plan — every shard's, before `--limit` — so that
    /// `manifest merge` can report planned jobs that no shard did. Written by sharded runs
    /// only (docs/outputs.md#what-a-rerun-writes).
    #[serde(default, skip_serializing_if = "PlannedIds::is_unlisted")]
    pub planned_job_ids: PlannedIds,
    /// The API base the run spoke to, without credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The model the server said answered (most requests', when several did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_model: Option<String>,
    /// What a non-provider server said of itself (kind, context window, slots, model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::llm::ServerInfo>,
    /// HTTP requests the run sent, retries included.
    #[serde(default)]
    pub requests: u64,
    /// Batch mode, or a run that found batches in the output folder: what was collected,
    /// used, submitted and is still running (docs/model-api.md#batch-mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batches: Option<BatchReport>,
    /// The extraction tables this run rebuilt, relative to the output folder
    /// (docs/extract.md#the-folders-table).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<String>,
    /// Jobs this run escalated, by skill and by the model that answered
    /// (docs/escalation.md).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub escalations: BTreeMap<String, BTreeMap<String, u64>>,
    /// What this run's tokens cost, per model with a price (docs/escalation.md#cost).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub costs: BTreeMap<String, Cost>,
    /// Models this run asked that have no price: the cost of their tokens is unknown, and
    /// `costs` does not hold it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
    /// This run's tokens per model (cached jobs spent none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tokens_by_model: BTreeMap<String, Tokens>,
    /// This run's jobs whose outputs are doubted, by skill (docs/outputs.md#doubts).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub doubts: BTreeMap<String, DoubtCount>,
    /// `--audit`: the sample's agreement with the top rung, per skill and field
    /// (docs/escalation.md#audit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<AuditReport>,
}

/// What an audit by sample found (docs/escalation.md#audit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditReport {
    /// The model the sample was also asked of: the top rung of the ladder.
    pub model: String,
    pub seed: u64,
    /// Jobs in the sample.
    pub sampled: u64,
    /// skill → field (`*` for a skill's prose files) → agreement.
    pub skills: BTreeMap<String, BTreeMap<String, FieldAgreement>>,
    /// `--target`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<f64>,
    /// `--confidence`: 1 − δ of the intervals and of the target's guarantee.
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    /// With a target: the least sample, all agreeing, that shows a field at it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needed: Option<u64>,
    /// skill → its fields not shown to reach the target: the skill's later jobs went to the
    /// top rung.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub routed: BTreeMap<String, Vec<String>>,
    /// Jobs that went to the top rung alone because their skill was routed.
    #[serde(default)]
    pub routed_jobs: u64,
    /// What those jobs cost, when their models have prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routed_cost: Option<Cost>,
    /// The top rung's tokens for the sample.
    pub tokens: Tokens,
    /// What they cost, when the model has a price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

/// How often the cheap model's answer agreed with the top rung's on one field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldAgreement {
    pub agree: u64,
    pub n: u64,
    pub rate: f64,
    /// The exact (Clopper–Pearson) two-sided interval at the audit's confidence.
    pub low: f64,
    pub high: f64,
    /// With a target: the one-sided lower bound the field was judged by, its δ shared by
    /// every field tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<f64>,
}

fn default_confidence() -> f64 {
    0.95
}

/// A skill's doubted jobs in a run: how many, and how often each field (or, for a file, each
/// check) was doubted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoubtCount {
    pub jobs: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub at: BTreeMap<String, u64>,
}

impl JobRecord {
    /// Its tokens by model: `tokens_by_model` when more than one model was asked, else all
    /// of `tokens` on `model`.
    pub fn tokens_per_model(&self) -> BTreeMap<String, Tokens> {
        if self.tokens_by_model.is_empty() {
            [(self.model.clone(), self.tokens)].into()
        } else {
            self.tokens_by_model.clone()
        }
    }
}
