//! `zhi mcp`: zhi as a Model Context Protocol server on stdin and stdout, for an agent
//! (docs/mcp.md). Six tools: `skills`, `plan`, `run`, `status`, `cancel`, `results`.
//!
//! Each tool is the command line underneath: `skills` and `plan` run `zhi --json skills …` /
//! `plan …` to their end, `run` starts `zhi run …` in the background ([`runs`]), and `status`
//! and `results` read what the run leaves in its output folder. One way to plan and run, with
//! the lock, the records and the signals of any run. What the agent names is held to the roots
//! ([`roots`]) before any child starts; what it is told back never names a path outside them
//! and is capped in size. This module never passes on or shows the API key: a child reads it
//! from the settings as any run does. It only asks the settings whether they hold one, so that
//! a server an agent started without it says where the key goes (`no_key`).

mod connections;
mod http;
mod resources;
mod results;
mod roots;
mod runs;

pub(crate) use http::{Listen, new_token};
pub(crate) use roots::Roots;

use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{
    CallToolResult, Implementation, ListResourcesResult, PaginatedRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    RequestMetaObject, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use runs::{Launcher, Run, StartError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What `zhi mcp` was started with, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub roots: Roots,
    /// The zhi binary children run.
    pub exe: PathBuf,
    /// `--config FILE`, passed on to children.
    pub config_file: Option<PathBuf>,
    /// The output folder a run takes when the agent names none (the settings' `output_dir`).
    pub default_output: PathBuf,
    /// The token budget of a run started over MCP that gives none (`mcp_budget_tokens`).
    pub budget_tokens: Option<u64>,
    /// Prices per million tokens, by model (`prices:` over the defaults), for a plan's cost.
    pub prices: BTreeMap<String, crate::config::Price>,
}

/// The longest a `status` or `run` call waits for a run to end.
const MAX_WAIT: Duration = Duration::from_secs(600);
/// How often a waiting call looks at the run's records.
const POLL: Duration = Duration::from_millis(500);
/// The most jobs a plan lists one by one.
const MAX_PLAN_JOBS: usize = 50;

/// Serve on stdin and stdout until the client closes them, or with `listen` over HTTP until
/// SIGINT or SIGTERM; runs still going are then stopped as SIGTERM stops a run, and waited for.
pub(crate) fn serve(opts: Options, listen: Option<Listen>) -> Result<(), std::io::Error> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let server = Zhi::new(opts);
        let runs = Arc::clone(&server.runs);
        let served = match listen {
            Some(listen) => {
                let stop = tokio_util::sync::CancellationToken::new();
                tokio::spawn(stop_on_signal(stop.clone()));
                http::serve(server, &listen, stop).await
            }
            None => match server.serve(rmcp::transport::stdio()).await {
                Ok(service) => {
                    let _ = service.waiting().await;
                    Ok(())
                }
                Err(e) => Err(std::io::Error::other(e)),
            },
        };
        let live: Vec<Arc<Run>> = lock(&runs).values().cloned().collect();
        for r in &live {
            r.cancel();
        }
        for r in &live {
            r.wait(Duration::from_secs(60)).await;
        }
        served
    })
}

/// Cancel `stop` on the first SIGINT or SIGTERM.
async fn stop_on_signal(stop: tokio_util::sync::CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return;
        };
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
    stop.cancel();
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Clone)]
struct Zhi {
    opts: Arc<Options>,
    launcher: Launcher,
    runs: Arc<Mutex<BTreeMap<String, Arc<Run>>>>,
    tool_router: ToolRouter<Self>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct SkillsParams {
    /// A skill's name: show that one in full (its arguments, what it writes). Leave out to list
    /// every skill.
    name: Option<String>,
}

/// What to plan or run: a skill over inputs.
#[derive(Debug, Deserialize, JsonSchema)]
struct PlanParams {
    /// The skill (see the `skills` tool), e.g. `summarize`, `invoice-to-excel`.
    skill: String,
    /// Files, folders (walked recursively) or globs (`docs/**/*.pdf`), inside the server's
    /// roots; relative paths start at the first root.
    inputs: Vec<String>,
    /// The skill's arguments, e.g. `{"to": "english"}`.
    #[serde(default)]
    args: BTreeMap<String, Value>,
    /// The output folder, inside the roots [default: the settings' output_dir, zhi-output].
    output: Option<String>,
    /// A model for every job instead of the skill's.
    model: Option<String>,
    /// Redo jobs whose outputs are cached.
    #[serde(default)]
    force: bool,
    /// At most this many jobs.
    limit: Option<u64>,
    /// Paths to leave out (globs), e.g. `drafts/**`.
    #[serde(default)]
    exclude: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct RunParams {
    #[serde(flatten)]
    plan: PlanParams,
    /// Stop starting jobs once the tokens spent reach this [default: the server's
    /// mcp_budget_tokens setting].
    budget_tokens: Option<u64>,
    /// Stop starting jobs once their cost at the run's prices reaches this amount.
    budget_cost: Option<f64>,
    /// Stop starting jobs after this many failures.
    max_failures: Option<u64>,
    /// Wait up to this many seconds for the run to end before answering (at most 600),
    /// sending progress notifications meanwhile; 0 answers at once [default: 0].
    #[serde(default)]
    wait_seconds: u64,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct StatusParams {
    /// The run id `run` answered with.
    run_id: String,
    /// Wait up to this many seconds for the run to end (at most 600), sending progress
    /// notifications meanwhile if the request carries a progress token [default: 0].
    #[serde(default)]
    wait_seconds: u64,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct CancelParams {
    /// The run id `run` answered with.
    run_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ResultsParams {
    /// The output folder, inside the roots [default: the settings' output_dir, zhi-output].
    output: Option<String>,
    /// The run to read [default: the latest run in the output folder].
    run_id: Option<String>,
    /// One job: its job id, its input as the records show it, or its output_dir. Its record
    /// and the text of its outputs are returned.
    job: Option<String>,
    /// With `job`: one output file (its path or name), to page through with `offset`.
    file: Option<String>,
    /// The folder's extraction table by name (e.g. `invoice-to-excel`): its rows.
    table: Option<String>,
    /// Where to start: a row, a job, or a byte of the file [default: 0].
    #[serde(default)]
    offset: u64,
    /// How many rows or jobs (1 to 200), or bytes of text (1 to 65536).
    limit: Option<u64>,
}

/// A tool's refusal or failure, in zhi's language (a child's message already is).
fn fail(message: impl Into<String>) -> CallToolResult {
    let message = message.into();
    let said = crate::i18n::localize(&message);
    CallToolResult::structured_error(json!({ "error": said }))
}

/// Why a run has no key, said to an agent: the server it started was handed only a few of its
/// variables (an MCP client passes HOME, PATH and a few more unless told otherwise), so the
/// key goes in the agent's `env` setting for the server, or in a settings file.
fn no_key(var: &str) -> String {
    msg!(
        "no API key: this MCP server was started without {var}, and no settings file gives `api_key:`. An agent hands the servers it starts only a few of its variables (HOME, PATH…): give the key in the agent's `env` setting for this server (`claude mcp add zhi -e {var}=… -- zhi mcp …`, or `env` in its JSON settings) and restart the server, or put `api_key:` in ~/.config/zhi/config.yaml (mode 0600)"
    )
}

/// A child's refusal, as the agent reads it: its `error:` lines, else all it said.
fn child_message(roots: &Roots, f: &runs::Finished) -> String {
    let errors: Vec<&str> = f
        .stderr
        .lines()
        .filter(|l| l.starts_with("error") || l.starts_with("错误"))
        .collect();
    let text = if errors.is_empty() {
        f.stderr.trim().to_string()
    } else {
        errors.join("\n")
    };
    roots.redact(&text)
}

impl Zhi {
    fn new(opts: Options) -> Zhi {
        let launcher = Launcher {
            exe: opts.exe.clone(),
            cwd: opts.roots.first().to_path_buf(),
            config_file: opts.config_file.clone(),
        };
        Zhi {
            opts: Arc::new(opts),
            launcher,
            runs: Arc::default(),
            tool_router: Self::tool_router(),
        }
    }

    fn output_dir(&self, given: Option<&str>) -> Result<PathBuf, String> {
        let roots = &self.opts.roots;
        match given {
            Some(g) => roots.resolve(g).map_err(|e| e.to_string()),
            None => roots
                .resolve(&self.opts.default_output.display().to_string())
                .map_err(|e| e.to_string()),
        }
    }

    /// The output folders whose files are resources: the default one and those of this
    /// server's runs, when they exist.
    fn output_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self.output_dir(None).into_iter().collect();
        for r in lock(&self.runs).values() {
            if !dirs.contains(&r.output_dir) {
                dirs.push(r.output_dir.clone());
            }
        }
        dirs.retain(|d| d.is_dir());
        dirs
    }

    /// `SKILL INPUT... -o OUT -a K=V ...` for `plan` and `run`, every path held to the roots:
    /// the inputs, the output folder, and the skill's file and folder arguments.
    async fn plan_args(&self, p: &PlanParams) -> Result<(Vec<String>, PathBuf), String> {
        let roots = &self.opts.roots;
        let out = self.output_dir(p.output.as_deref())?;
        if p.inputs.is_empty() {
            return Err(msg!("no inputs: give files, folders or globs"));
        }
        // Flags bind their values (`--arg=K=V`), and the skill and inputs come after `--`: no
        // name an agent gives can be read as a flag of the child's (`--config=…`).
        let mut positionals = vec![p.skill.clone()];
        for i in &p.inputs {
            positionals.push(roots.resolve_input(i).map_err(|e| e.to_string())?);
        }
        let mut args = vec![format!("--output={}", out.display())];
        let paths = if p.args.is_empty() {
            Vec::new()
        } else {
            self.path_args(&p.skill).await?
        };
        for (k, v) in &p.args {
            let mut v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if paths.contains(k) {
                v = roots.resolve_template(&v).map_err(|e| e.to_string())?;
            }
            args.push(format!("--arg={k}={v}"));
        }
        if let Some(m) = &p.model {
            args.push(format!("--model={m}"));
        }
        if p.force {
            args.push("--force".into());
        }
        if let Some(n) = p.limit {
            args.push(format!("--limit={n}"));
        }
        for e in &p.exclude {
            args.push(format!("--exclude={e}"));
        }
        args.push("--".into());
        args.extend(positionals);
        Ok((args, out))
    }

    /// The names of a skill's arguments that are paths (`file`, `directory`): an agent's value
    /// for one is held to the roots like an input.
    async fn path_args(&self, skill: &str) -> Result<Vec<String>, String> {
        let v = self.skill_info(skill).await?;
        Ok(v["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| matches!(a["type"].as_str(), Some("file" | "directory" | "dir")))
            .filter_map(|a| a["name"].as_str().map(str::to_string))
            .collect())
    }

    /// `zhi --json skills show SKILL`.
    async fn skill_info(&self, skill: &str) -> Result<Value, String> {
        let args = [
            "skills".into(),
            "show".into(),
            "--".into(),
            skill.to_string(),
        ];
        let f = self
            .launcher
            .output(&args)
            .await
            .map_err(|e| msg!("cannot start zhi: {e}"))?;
        if f.code != Some(0) {
            return Err(child_message(&self.opts.roots, &f));
        }
        serde_json::from_str(&f.stdout).map_err(|_| msg!("zhi answered what is not JSON"))
    }

    /// What the input tokens to send cost at the model's input price, when it has one: a
    /// floor, as the skill's prompt and the answers come on top (docs/mcp.md#tools).
    async fn input_cost(&self, p: &PlanParams, tokens: u64) -> Value {
        let model = match &p.model {
            Some(m) => Some(m.clone()),
            None => self
                .skill_info(&p.skill)
                .await
                .ok()
                .and_then(|v| v["model"].as_str().map(str::to_string)),
        };
        let price = model.as_ref().and_then(|m| self.opts.prices.get(m));
        match (model, price) {
            (Some(m), Some(price)) => json!({
                "model": m, "amount": price.of(tokens, 0), "currency": price.currency,
            }),
            _ => Value::Null,
        }
    }

    /// `zhi --json plan …`: its jobs, each a JSON object.
    async fn plan_jobs(&self, args: &[String]) -> Result<Vec<Value>, String> {
        let mut full = vec!["plan".to_string()];
        full.extend_from_slice(args);
        let f = self
            .launcher
            .output(&full)
            .await
            .map_err(|e| msg!("cannot start zhi: {e}"))?;
        if f.code != Some(0) {
            return Err(child_message(&self.opts.roots, &f));
        }
        Ok(f.stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect())
    }

    /// The variable the key is read from, when a run started now would find no key: the
    /// settings a child run reads (its folder, `--config`, this process's variables, which it
    /// inherits), resolved as it resolves them. `None` when there is a key, or none is needed.
    fn key_missing(&self) -> Option<String> {
        let ov = crate::config::Overrides {
            config_file: self.opts.config_file.clone(),
            ..crate::config::Overrides::default()
        };
        let env = |k: &str| std::env::var(k).ok();
        let c = crate::config::Config::resolve(&ov, &env, self.opts.roots.first()).ok()?;
        c.api.require_key().err().map(|_| c.api.key_env.clone())
    }

    fn find_run(&self, id: &str) -> Result<Arc<Run>, String> {
        let runs = lock(&self.runs);
        runs.get(id)
            .or_else(|| {
                let mut near = runs.iter().filter(|(k, _)| k.starts_with(id));
                match (near.next(), near.next()) {
                    (Some((_, r)), None) if !id.is_empty() => Some(r),
                    _ => None,
                }
            })
            .cloned()
            .ok_or_else(|| msg!("no run `{id}` was started by this server"))
    }

    /// A run's status: counts, tokens, failures, and the manifest's end once it has ended.
    fn status_of(&self, run: &Run) -> Value {
        let rec = run.records();
        let finished = run.finished();
        let mut v = json!({
            "run_id": run.run_id,
            "output": self.opts.roots.shown(&run.output_dir),
            "done": finished.is_some(),
            "planned": run.planned,
            "finished_jobs": rec.done,
            "counts": rec.counts,
            "tokens": {"prompt": rec.prompt_tokens, "completion": rec.completion_tokens},
            "failed": rec.failed,
            "failures": rec.failures,
        });
        if finished.is_none() {
            v["eta_seconds"] = json!(run.eta_seconds(rec.done));
        }
        if let Some(f) = finished {
            v["exit_code"] = json!(f.code);
            if let Ok(m) = serde_json::from_str::<Value>(&f.stdout) {
                for k in ["status", "reason", "counts", "tables", "costs"] {
                    if !m[k].is_null() {
                        v[k] = m[k].clone();
                    }
                }
            } else if f.code != Some(0) {
                v["error"] = json!(child_message(&self.opts.roots, &f));
            }
        }
        self.opts.roots.redact_json(&mut v);
        v
    }

    /// Wait up to `secs` for a run to end, telling the client how far it is if it asked to be
    /// told (a progress token).
    async fn wait_for(
        &self,
        run: &Run,
        secs: u64,
        meta: &RequestMetaObject,
        peer: &Peer<RoleServer>,
    ) {
        let limit = Duration::from_secs(secs).min(MAX_WAIT);
        let token = meta.get_progress_token();
        let deadline = tokio::time::Instant::now() + limit;
        let mut told = None;
        loop {
            let ended = run.finished().is_some();
            if let Some(t) = &token {
                let done = run.records().done;
                if told != Some(done) || ended {
                    told = Some(done);
                    let mut p = ProgressNotificationParam::new(t.clone(), done as f64)
                        .with_message(msg!("{done} of {planned} jobs done", planned = run.planned));
                    if run.planned > 0 {
                        p = p.with_total(run.planned as f64);
                    }
                    let _ = peer.notify_progress(p).await;
                }
            }
            if ended || tokio::time::Instant::now() >= deadline {
                return;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            run.wait(POLL.min(left)).await;
        }
    }
}

#[tool_router]
impl Zhi {
    /// List zhi's skills, or show one.
    #[tool(
        description = "List the skills zhi can run over documents (name, mode, model, arguments, description), or, given `name`, show one skill in full: its arguments with types and defaults, and what it writes (its declared outputs, or the table an extraction skill fills). Sends nothing to a model."
    )]
    async fn skills(&self, Parameters(p): Parameters<SkillsParams>) -> CallToolResult {
        let args: Vec<String> = match &p.name {
            Some(n) => vec!["skills".into(), "show".into(), "--".into(), n.clone()],
            None => vec!["skills".into(), "list".into()],
        };
        let f = match self.launcher.output(&args).await {
            Ok(f) => f,
            Err(e) => return fail(msg!("cannot start zhi: {e}")),
        };
        if f.code != Some(0) {
            return fail(child_message(&self.opts.roots, &f));
        }
        let Ok(mut v) = serde_json::from_str::<Value>(&f.stdout) else {
            return fail(msg!("zhi answered what is not JSON"));
        };
        if let Some(o) = v.as_object_mut() {
            // What the model is sent, repeated at length; the prompt itself stays.
            o.remove("system_prompt_sent");
        }
        self.opts.roots.redact_json(&mut v);
        let v = if v.is_array() {
            json!({ "skills": v })
        } else {
            v
        };
        CallToolResult::structured(v)
    }

    /// What a run would do, without doing it.
    #[tool(
        description = "Plan a run without running it: the jobs a `run` with the same skill, inputs and arguments would do, which are already cached (their outputs kept from an earlier run), which will fail and why, and the estimated input tokens. Sends nothing to a model and writes nothing. Use it before `run` on a large folder."
    )]
    async fn plan(&self, Parameters(p): Parameters<PlanParams>) -> CallToolResult {
        let (args, out) = match self.plan_args(&p).await {
            Ok(a) => a,
            Err(e) => return fail(e),
        };
        let jobs = match self.plan_jobs(&args).await {
            Ok(j) => j,
            Err(e) => return fail(e),
        };
        let mut by_status: BTreeMap<String, u64> = BTreeMap::new();
        let mut tokens = 0;
        let mut pending_tokens = 0;
        for j in &jobs {
            let status = j["status"].as_str().unwrap_or("").to_string();
            let t = j["estimated_tokens"].as_u64().unwrap_or(0);
            tokens += t;
            if status == "pending" {
                pending_tokens += t;
            }
            *by_status.entry(status).or_default() += 1;
        }
        let shown: Vec<Value> = jobs
            .iter()
            .take(MAX_PLAN_JOBS)
            .map(|j| {
                json!({
                    "job_id": j["job_id"], "skill": j["skill"], "inputs": j["inputs"],
                    "status": j["status"], "estimated_tokens": j["estimated_tokens"],
                    "pieces": j["pieces"], "error": j["error"],
                })
            })
            .collect();
        let cost = self.input_cost(&p, pending_tokens).await;
        let mut v = json!({
            "output": self.opts.roots.shown(&out),
            "jobs_total": jobs.len(),
            "estimated_input_cost": cost,
            "by_status": by_status,
            "estimated_tokens": tokens,
            "estimated_tokens_to_send": pending_tokens,
            "jobs": shown,
            "jobs_listed": shown.len(),
        });
        // A plan sends nothing, so it answers without a key; the run would not start.
        if let Some(var) = self.key_missing() {
            v["run_would_fail"] = json!(no_key(&var));
        }
        self.opts.roots.redact_json(&mut v);
        CallToolResult::structured(v)
    }

    /// Start a run in the background.
    #[tool(
        description = "Run a skill over documents in the background, and answer at once with a run id (use `status` to follow it, `results` to read what it wrote, `cancel` to stop it). Cached jobs are not sent again. Only one run at a time may write into an output folder: a second is refused while one holds it. A token budget applies (the server's default unless `budget_tokens` is given): once spent, the jobs not yet started are skipped."
    )]
    async fn run(
        &self,
        Parameters(p): Parameters<RunParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> CallToolResult {
        let (plan_args, out) = match self.plan_args(&p.plan).await {
            Ok(a) => a,
            Err(e) => return fail(e),
        };
        if let Some((pid, run)) = runs::lock_holder(&out) {
            return fail(msg!(
                "output folder {} is locked by run {run} (pid {pid}); wait for it or cancel it",
                self.opts.roots.shown(&out)
            ));
        }
        // The plan first: its mistakes (an unknown skill, a missing input) are answered here,
        // and its size is the run's progress total.
        let jobs = match self.plan_jobs(&plan_args).await {
            Ok(j) => j,
            Err(e) => return fail(e),
        };
        if let Some(var) = self.key_missing() {
            return fail(no_key(&var));
        }
        // The run's own flags first: `plan_args` ends with `--` and the positionals.
        let mut args = vec!["run".to_string()];
        if let Some(b) = p.budget_tokens.or(self.opts.budget_tokens) {
            args.push(format!("--budget-tokens={b}"));
        }
        if let Some(c) = p.budget_cost {
            args.push(format!("--budget-cost={c}"));
        }
        if let Some(n) = p.max_failures {
            args.push(format!("--max-failures={n}"));
        }
        args.extend(plan_args);
        let run = match runs::start(&self.launcher, &args, &out, jobs.len() as u64).await {
            Ok(r) => Arc::new(r),
            Err(StartError::Spawn(e)) => return fail(msg!("cannot start zhi: {e}")),
            Err(StartError::Refused(f)) => return fail(child_message(&self.opts.roots, &f)),
        };
        lock(&self.runs).insert(run.run_id.clone(), Arc::clone(&run));
        if p.wait_seconds > 0 {
            self.wait_for(&run, p.wait_seconds, &meta, &peer).await;
        }
        let mut v = self.status_of(&run);
        v["budget_tokens"] = json!(p.budget_tokens.or(self.opts.budget_tokens));
        CallToolResult::structured(v)
    }

    /// How a run is doing.
    #[tool(
        description = "How a run started with `run` is doing: whether it is done, jobs planned and finished, counts by status (succeeded, failed, cached, skipped, cancelled), tokens spent, and the failed jobs with their error kind and message. With `wait_seconds`, waits for the run to end (sending progress notifications) before answering."
    )]
    async fn status(
        &self,
        Parameters(p): Parameters<StatusParams>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> CallToolResult {
        let run = match self.find_run(&p.run_id) {
            Ok(r) => r,
            Err(e) => return fail(e),
        };
        if p.wait_seconds > 0 {
            self.wait_for(&run, p.wait_seconds, &meta, &peer).await;
        }
        CallToolResult::structured(self.status_of(&run))
    }

    /// Stop a run.
    #[tool(
        description = "Stop a run started with `run`, as an interrupt does: jobs in flight may finish within the grace period, the others are recorded as cancelled, and what was done stays (a later run picks it up from the cache). Answers with the run's status once it has stopped."
    )]
    async fn cancel(&self, Parameters(p): Parameters<CancelParams>) -> CallToolResult {
        let run = match self.find_run(&p.run_id) {
            Ok(r) => r,
            Err(e) => return fail(e),
        };
        run.cancel();
        run.wait(Duration::from_secs(60)).await;
        CallToolResult::structured(self.status_of(&run))
    }

    /// Read what a run wrote.
    #[tool(
        description = "Read what runs wrote into an output folder, a page at a time (answers are capped at 64 KB). With `table`: rows of the folder's extraction table (e.g. the one `invoice-to-excel` fills). With `job` (a job id or an input path): that job's record and the text of its outputs; add `file` and `offset` to page through one output. With neither: the run's jobs (status, outputs) and the folder's tables. `next_offset` says where the next page starts."
    )]
    async fn results(&self, Parameters(p): Parameters<ResultsParams>) -> CallToolResult {
        let out = match self.output_dir(p.output.as_deref()) {
            Ok(o) => o,
            Err(e) => return fail(e),
        };
        let page = match results::Page::new(p.offset, p.limit) {
            Ok(page) => page,
            Err(e) => return fail(e.to_string()),
        };
        let answer = (|| {
            if let Some(t) = &p.table {
                return results::table(&out, t, page);
            }
            let run = results::run_dir(&out, p.run_id.as_deref())?;
            match &p.job {
                Some(j) => results::job(&out, &run, j, p.file.as_deref(), page),
                None => Ok(results::overview(&out, &run, page)),
            }
        })();
        match answer {
            Ok(mut v) => {
                self.opts.roots.redact_json(&mut v);
                CallToolResult::structured(v)
            }
            Err(e) => fail(self.opts.roots.redact(&e.to_string())),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Zhi {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
            .with_server_info(Implementation::new("zhi", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "zhi runs LLM skills over folders of documents, with a cache, a manifest and rate limits. Call `skills` to see what it can do, `plan` to see what a run would cost, `run` to start one (it answers at once with a run id), `status` to follow it, `results` to read its outputs and tables. Paths must be inside: {}",
                self.opts.roots.names()
            ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, rmcp::ErrorData> {
        Ok(ListResourcesResult::with_all_items(resources::list(
            &self.output_dirs(),
        )))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, rmcp::ErrorData> {
        resources::read(&self.opts.roots, &request.uri)
            .map(|c| ReadResourceResult::new(vec![c]).into())
            .map_err(|e| rmcp::ErrorData::resource_not_found(e.to_string(), None))
    }
}
