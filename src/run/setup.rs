//! Before the first job: the output folder and its lock, the batches a earlier run left to
//! collect, and what a server that is not a known provider says of itself.

use super::BatchOptions;
use super::error::RunError;
use crate::config::{Concurrency, Config, Origin};
use crate::layout::OutputLayout;
use crate::llm::{ChatClient, ClientSettings, ServerInfo};
use crate::plan::{Job, Shard};
use crate::skills::SkillSet;
use std::collections::{BTreeMap, BTreeSet};
use tokio_util::sync::CancellationToken;

/// The output folder, ready for a run: its folders made, its lock held, stale staging gone.
pub(super) fn open_output(
    layout: &OutputLayout,
    shard: Option<Shard>,
) -> Result<(String, super::lock::RunLock), RunError> {
    layout.create().map_err(|source| RunError::OutputFolder {
        path: layout.output_dir().to_path_buf(),
        source,
    })?;
    let run_id = super::new_run_id(shard);
    let lock = super::lock::RunLock::acquire(layout, &run_id)?;
    clean_stale(layout);
    Ok((run_id, lock))
}

/// Staging and trash left by a crashed run are removed (we hold the lock, so no run is using
/// them).
fn clean_stale(layout: &OutputLayout) {
    for p in [layout.staging(), layout.trash()] {
        if p.exists() {
            if let Err(e) = layout.remove_tree(&p) {
                tracing::warn!("{}", msg!("cannot clean {}: {e}", p.display()));
            } else {
                tracing::info!("{}", msg!("cleaned stale {}", p.display()));
            }
        }
    }
}

/// The output folder's batches: finished ones are collected before any job runs, so their
/// answers are there for the jobs (batch mode).
pub(super) async fn open_batches(
    layout: &OutputLayout,
    client: &ChatClient,
    config: &Config,
    submit: Option<BatchOptions>,
    run_id: &str,
    cancel: &CancellationToken,
) -> Result<crate::batch::Book, RunError> {
    let batch_api = crate::llm::batch::BatchApi::new(client.clone());
    let mut book = crate::batch::Book::open(
        layout,
        client.clone(),
        crate::batch::Settings {
            submit: submit.is_some(),
            max_attempts: config.api.retry.max_attempts,
            max_requests: config.run.batch.max_requests,
            max_bytes: config.run.batch.max_bytes,
            base_url: crate::secret::url_for_display(&config.api.base_url),
            endpoint: crate::llm::batch::chat_endpoint(
                &config.api.base_url,
                client.dialect().batch_version,
            ),
            run_id: run_id.to_string(),
            max_stalled_runs: config.run.batch.max_stalled_runs,
        },
    );
    if book.has_batches() {
        book.collect(&batch_api, cancel)
            .await
            .map_err(|e| RunError::BatchStatus(e.to_string()))?;
    }
    Ok(book)
}

/// The smallest context window a server may report: a prompt of zhi's and an answer fit in it.
const MIN_SERVER_WINDOW: u32 = 1024;
/// The most documents a server's slots may put in flight: `-j auto`'s ceiling.
const MAX_SERVER_SLOTS: u32 = 64;

/// A server that is not a known provider is asked what it is: its context window drives
/// splitting, its slots the concurrency (unless `-j` says otherwise). A batch goes to a
/// provider's Batch API: the chat server is not asked anything.
pub(super) async fn ask_server(
    client: &ChatClient,
    config: &mut Config,
    jobs: &[Job],
    skills: &SkillSet,
    batch: bool,
) -> Result<Option<ServerInfo>, RunError> {
    if crate::llm::is_known_provider(&config.api.base_url) || jobs.is_empty() || batch {
        return Ok(None);
    }
    let models: BTreeSet<String> = jobs
        .iter()
        .map(|j| {
            config
                .models
                .model_for(skills.get(&j.skill).and_then(|s| s.model.as_deref()))
        })
        .collect();
    let first = models.iter().next().cloned().unwrap_or_default();
    let info = crate::llm::probe(client, &first).await;
    if let Some(window) = info.context_window
        && window < MIN_SERVER_WINDOW
        && models.iter().any(|m| !config.models.configured.contains(m))
    {
        return Err(RunError::Server(format!(
            "the server at {url} says its context window is {window} tokens, too small to hold a prompt and an answer (zhi needs at least {MIN_SERVER_WINDOW}); if that is really so, set models.{first}.context_window in zhi.yaml",
            url = crate::secret::url_for_display(&config.api.base_url)
        )));
    }
    if let Some(window) = info.context_window {
        for m in &models {
            config.models.apply_server_window(m, window);
        }
    }
    // A slot count beyond what zhi would ever run at once is the server's boast, not a limit.
    if let Some(slots) = info
        .slots
        .filter(|n| *n > 0)
        .map(|n| n.min(MAX_SERVER_SLOTS))
    {
        let explicit = config
            .origins
            .get("concurrency")
            .is_some_and(|o| !matches!(o, Origin::Default));
        match config.run.concurrency {
            // More documents in flight than the server has slots only queue there, and
            // queued requests run into timeouts and retries.
            Concurrency::Fixed(n) if !explicit => {
                config.run.concurrency = Concurrency::Fixed(n.min(slots as usize).max(1));
            }
            Concurrency::Auto => config.run.concurrency = Concurrency::Fixed(slots as usize),
            Concurrency::Fixed(_) => {}
        }
    }
    tracing::info!(
        kind = info.kind.as_deref().unwrap_or("unknown"),
        context_window = info.context_window,
        slots = info.slots,
        "{}",
        msg!("asked the server what it is")
    );
    Ok(Some(info))
}

/// The escalation ladder (docs/escalation.md): each rung's client — the run's own for the
/// run's server, else one of its own, with the key its `api_key_env` names — and what its
/// server says of itself (its window then budgets that model).
pub(super) async fn escalation_ladder(
    client: &ChatClient,
    server: Option<&ServerInfo>,
    config: &mut Config,
    entries: &[crate::config::EscalateTo],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<super::context::Rung>, RunError> {
    let mut ladder = Vec::new();
    for e in entries.iter().cloned() {
        let e = with_settings(config, e);
        let own = config.api.base_url.trim_end_matches('/');
        let base = e.base_url.clone().unwrap_or_else(|| own.to_string());
        if base.trim_end_matches('/') == own {
            ladder.push(super::context::Rung {
                model: e.model.clone(),
                base_url: crate::secret::url_for_display(own),
                client: client.clone(),
                server: server.cloned(),
                same_server: true,
            });
            continue;
        }
        let key = rung_key(&e, env);
        if let Some(missing) = missing_key(config, &e, env) {
            return Err(missing);
        }
        // Another server: its own limits (the entry's `rpm`/`tpm`), not the run's.
        let mut settings =
            ClientSettings::from(&*config).elsewhere(base.clone(), key, e.rpm, e.tpm);
        // Its requests held up show on the run's progress line too.
        settings.delays = client.delays().clone();
        let rung_client = ChatClient::new(settings).map_err(|err| {
            RunError::Client(format!(
                "escalation to {label}: {e}",
                label = e.label(),
                e = err
            ))
        })?;
        let info = if crate::llm::is_known_provider(&base) {
            None
        } else {
            let info = crate::llm::probe(&rung_client, &e.model).await;
            if let Some(window) = info.context_window.filter(|w| *w >= MIN_SERVER_WINDOW) {
                config.models.apply_server_window(&e.model, window);
            }
            Some(info)
        };
        ladder.push(super::context::Rung {
            model: e.model.clone(),
            base_url: crate::secret::url_for_display(&base),
            client: rung_client,
            server: info,
            same_server: false,
        });
    }
    Ok(ladder)
}

/// A skill's entry names no key or limits: the settings' entry for the same server does.
fn with_settings(config: &Config, e: crate::config::EscalateTo) -> crate::config::EscalateTo {
    match (&e.base_url, &e.api_key_env) {
        (Some(url), None) => {
            let same = config
                .models
                .escalate
                .iter()
                .find(|c| c.base_url.as_deref() == Some(url.as_str()));
            crate::config::EscalateTo {
                api_key_env: same.and_then(|c| c.api_key_env.clone()),
                rpm: e.rpm.or(same.and_then(|c| c.rpm)),
                tpm: e.tpm.or(same.and_then(|c| c.tpm)),
                ..e
            }
        }
        _ => e,
    }
}

/// The key of a rung on another server: the variable its entry names, when set.
fn rung_key(
    e: &crate::config::EscalateTo,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<crate::config::ApiKey> {
    e.api_key_env
        .as_deref()
        .and_then(env)
        .filter(|k| !k.trim().is_empty())
        .map(crate::config::ApiKey::new)
}

/// A rung on another server that is not local and has no key: the run cannot ask it.
fn missing_key(
    config: &Config,
    e: &crate::config::EscalateTo,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<RunError> {
    let own = config.api.base_url.trim_end_matches('/');
    let base = e.base_url.clone().unwrap_or_else(|| own.to_string());
    if base.trim_end_matches('/') == own || rung_key(e, env).is_some() {
        return None;
    }
    let mut api = config.api.clone();
    api.base_url = base;
    (!api.base_url_is_local()).then(|| {
        RunError::Client(format!(
            "escalation to {label}: no key for that server; name the variable that holds it with api_key_env in the escalate entry of {model} in zhi.yaml",
            label = e.label(),
            model = e.model
        ))
    })
}

/// What a run checks before it sends anything, without the network, so that `zhi plan`
/// refuses what `zhi run` would (docs/cli.md#zhi-plan): a base URL the client cannot use,
/// ladders whose entries do not parse or name no key for their server, and `--audit` without
/// a ladder to audit against.
pub(crate) fn preflight(
    config: &Config,
    jobs: &[Job],
    skills: &SkillSet,
    audit: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), RunError> {
    super::context::client(config).map_err(RunError::Client)?;
    let mut entries: Vec<crate::config::EscalateTo> = config.models.escalate.clone();
    let from_flag = matches!(config.origins.get("escalate"), Some(Origin::Flag(_)));
    let mut seen = BTreeSet::new();
    for job in jobs.iter().filter(|_| !from_flag) {
        let Some(skill) = skills.get(&job.skill).filter(|s| !s.escalate.is_empty()) else {
            continue;
        };
        if seen.insert(skill.name.clone()) {
            for e in &skill.escalate {
                entries.push(crate::config::EscalateTo::parse(e).map_err(RunError::Client)?);
            }
        }
    }
    for e in entries.iter().cloned() {
        if let Some(missing) = missing_key(config, &with_settings(config, e), env) {
            return Err(missing);
        }
    }
    if audit && entries.is_empty() {
        return Err(super::audit::no_ladder_error());
    }
    Ok(())
}

/// The settings' escalation ladder, and the ladders of the skills that name their own, each
/// rung's server asked once (keys read from the variables the entries name).
pub(super) async fn ladders(
    client: &ChatClient,
    server: Option<&ServerInfo>,
    config: &mut Config,
    jobs: &[Job],
    skills: &SkillSet,
) -> Result<(Vec<super::context::Rung>, Ladders), RunError> {
    let env = |k: &str| std::env::var(k).ok();
    let ladder = config.models.escalate.clone();
    let escalation = escalation_ladder(client, server, config, &ladder, &env).await?;
    let by_skill = skill_ladders(client, server, config, jobs, skills, &env).await?;
    Ok((escalation, by_skill))
}

/// The ladders of skills that name their own, by skill.
type Ladders = BTreeMap<String, Vec<super::context::Rung>>;

/// The ladders of the run's skills that name their own (`escalate:`), by skill: a skill's own
/// replaces the settings' ladder for its jobs, unless `--escalate` was given
/// (docs/escalation.md#the-ladder).
async fn skill_ladders(
    client: &ChatClient,
    server: Option<&ServerInfo>,
    config: &mut Config,
    jobs: &[Job],
    skills: &SkillSet,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Ladders, RunError> {
    let mut ladders = BTreeMap::new();
    let from_flag = matches!(config.origins.get("escalate"), Some(Origin::Flag(_)));
    for job in jobs.iter().filter(|_| !from_flag) {
        let Some(skill) = skills.get(&job.skill).filter(|s| !s.escalate.is_empty()) else {
            continue;
        };
        if ladders.contains_key(&skill.name) {
            continue;
        }
        let entries = skill
            .escalate
            .iter()
            .map(|e| crate::config::EscalateTo::parse(e))
            .collect::<Result<Vec<_>, _>>()
            .map_err(RunError::Client)?;
        let rungs = escalation_ladder(client, server, config, &entries, env).await?;
        ladders.insert(skill.name.clone(), rungs);
    }
    Ok(ladders)
}
