//! What every job of a run shares, built once per run: the one API client (chat, OCR and the
//! Batch API all draw on its rate budget), the skills, the run's settings, the output folder's
//! layout and the cancellation.

use crate::agent::tools::{DocumentReader, Toolbox};
use crate::config::Config;
use crate::layout::OutputLayout;
use crate::llm::{ChatClient, ClientSettings, ServerInfo};
use crate::plan::Job;
use crate::skills::SkillSet;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The run's shared parts, one value behind an `Arc` for every job.
pub(crate) struct RunContext {
    /// The process's one client: every request of the run goes through its retries and budget.
    pub client: ChatClient,
    pub skills: Arc<SkillSet>,
    /// The settings as this run uses them (the server's context window applied).
    pub config: Config,
    pub layout: OutputLayout,
    pub run_id: String,
    /// What `zhi run` was asked beyond its settings; the tools get it whole.
    pub flags: Arc<crate::flags::RunFlags>,
    /// Extraction and OCR; its API engines hold a clone of `client`.
    pub reader: Arc<dyn DocumentReader>,
    pub toolbox: Toolbox,
    /// Cancels in-flight work: an abort, the grace period over, a second signal.
    pub cancel: CancellationToken,
    /// The run's document slots: pieces of a long document run in free slots.
    pub slots: Arc<super::slots::Slots>,
    pub progress: Arc<super::progress::Counters>,
    /// What the server said of itself, when it was asked.
    pub server: Option<ServerInfo>,
    /// The output folder's batches (batch mode), when a direct request may be answered by
    /// one or must wait for one.
    pub batch: Option<Arc<crate::batch::Book>>,
    /// The stronger models a failing step is asked of, in order (docs/escalation.md).
    pub escalation: Vec<Rung>,
    /// The ladders of skills that name their own (`escalate:`), by skill.
    pub skill_ladders: std::collections::BTreeMap<String, Vec<Rung>>,
    /// `--audit`: the sample, its agreement and the routes it decided.
    pub audit: Option<super::audit::Audit>,
}

/// One rung of the escalation ladder: a model and the client of its server.
#[derive(Debug, Clone)]
pub(crate) struct Rung {
    pub model: String,
    /// Its server, as records show it (no credentials).
    pub base_url: String,
    /// The run's own client when the server is the run's; else one of its own (its own pool
    /// and rate limits).
    pub client: ChatClient,
    /// What its server said of itself, when asked.
    pub server: Option<ServerInfo>,
    /// Whether it is the run's server (so a batch can carry its requests).
    pub same_server: bool,
}

impl RunContext {
    /// Where a job's transcript goes.
    pub(crate) fn transcript_path(&self, job_id: &str) -> PathBuf {
        self.layout.transcript(&self.run_id, job_id)
    }

    /// The ladder of a job's failing steps: its skill's own, else the settings'.
    pub(crate) fn ladder(&self, job: &Job) -> &[Rung] {
        self.skill_ladders
            .get(&*job.skill)
            .map_or(&self.escalation, |l| l)
    }

    /// The model a job's skill runs on.
    pub(crate) fn model(&self, job: &Job) -> String {
        self.config
            .models
            .model_for(self.skills.get(&job.skill).and_then(|s| s.model.as_deref()))
    }
}

/// The run's one client, from the settings.
pub(crate) fn client(config: &Config) -> Result<ChatClient, String> {
    ChatClient::new(ClientSettings::from(config)).map_err(|e| e.to_string())
}
