//! The resolved, validated settings of one invocation.
//!
//! Precedence, highest first:
//!
//! 1. command-line flags (`--base-url`, `-m`, `-o`, `-j`, `--rpm`, `--tpm`, `--timeout`, `--ocr`);
//! 2. `ZHI_*` environment variables (docs/config.md#environment-variables), and the variable
//!    `api_key_env` names;
//! 3. `./zhi.yaml`;
//! 4. `~/.config/zhi/config.yaml` (`--config FILE` replaces this file and the one above);
//! 5. built-in defaults.
//!
//! Everything is resolved once, here, into [`Config`]; the engine reads it and never looks at
//! flags, the environment or the files again. A value is checked by its setting's one check
//! ([`setting`]) whatever its source, so `rpm: 0` in a file and `--rpm 0` are refused alike
//! (exit 2), each error naming the file, variable or flag it came from ([`ConfigError`]; a
//! flag's value is checked by the argument parser, through [`flag`], before it gets here).

mod error;
mod file;
pub(crate) mod flag;
mod mcp;
mod ocr_choice;
mod setting;
mod value;

pub(crate) use error::ConfigError;
pub(crate) use file::{PROJECT_FILE, user_file};
pub(crate) use mcp::{McpServer, on_this_machine};
pub use ocr_choice::OcrChoice;
pub use value::{ApiKey, ModelBudget, RetryPolicy};
pub(crate) use value::{
    Concurrency, Origin, Provider, UNKNOWN_MODEL_BUDGET, default_model_budgets,
};

use crate::i18n::Lang;
use serde_norway::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Settings given on the command line, as given; `None` leaves the lower layers in force.
/// They are checked by the same checks as the other sources' values, in [`Config::resolve`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Overrides {
    /// `--config FILE`: the one settings file, instead of the user's and the project's.
    pub config_file: Option<PathBuf>,
    /// `-o`.
    pub output_dir: Option<PathBuf>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `-m`.
    pub model: Option<String>,
    /// `-j` (checked by the command line parser, as [`flag`] says).
    pub concurrency: Option<Concurrency>,
    /// `--rpm` (checked by the command line parser).
    pub rpm: Option<NonZeroU32>,
    /// `--tpm` (checked by the command line parser).
    pub tpm: Option<NonZeroU32>,
    /// `--timeout` (checked by the command line parser).
    pub timeout: Option<Duration>,
    /// `--ocr` (its names are checked by the command line parser).
    pub ocr: Option<OcrChoice>,
    /// `--escalate MODEL[@BASE_URL]`, in order; replaces `escalate:`.
    pub escalate: Vec<String>,
    /// `--checksum`: set when given (the flag cannot turn a file's `checksum: true` off).
    pub checksum: bool,
}

/// Everything an invocation needs to know, resolved once.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// How to reach the model server.
    pub api: ApiSettings,
    /// Where a run writes and how fast it goes.
    pub run: RunSettings,
    /// Which model a skill runs on, and each model's budget.
    pub models: ModelSettings,
    /// zhi's own messages and logs.
    pub ui: UiSettings,
    /// `~/.config/zhi` (user skills live below it).
    pub config_dir: Option<PathBuf>,
    /// Where each setting came from, by the setting's name.
    pub origins: BTreeMap<&'static str, Origin>,
    /// Problems worth a warning (unknown fields, values clamped).
    pub warnings: Vec<String>,
    /// Problems of the API key (too short to be one, in a file others can read): said only
    /// by the commands that send it (`run`, `batch`).
    pub key_warnings: Vec<String>,
}

/// How to reach the model server.
#[derive(Debug, Clone)]
pub(crate) struct ApiSettings {
    /// The provider: its API dialect and default base (`crate::providers`).
    pub provider: Provider,
    /// The API key; `None` when none is configured (fine for a local server).
    pub key: Option<ApiKey>,
    /// The environment variable the key is read from (`ZHI_API_KEY` unless configured).
    pub key_env: String,
    /// API base, without a trailing `/`; requests go to `<base_url>/chat/completions`.
    pub base_url: String,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Retry policy for API requests.
    pub retry: RetryPolicy,
}

impl Default for ApiSettings {
    fn default() -> Self {
        ApiSettings {
            provider: Provider::default(),
            key: None,
            key_env: "ZHI_API_KEY".into(),
            base_url: Provider::default().default_base_url().into(),
            timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
        }
    }
}

impl ApiSettings {
    /// Whether the API base is on this machine (a local server needs no key).
    pub(crate) fn base_url_is_local(&self) -> bool {
        let Some(host) = reqwest::Url::parse(self.base_url.trim())
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
        else {
            return false;
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost")
            || host.starts_with("127.")
            || host == "::1"
            || host == "0.0.0.0"
    }

    /// Fail with the message that says how to set a key, when one is needed and missing.
    pub(crate) fn require_key(&self) -> Result<(), ConfigError> {
        if self.key.is_none() && !self.base_url_is_local() {
            return Err(ConfigError::NoKey {
                env: self.key_env.clone(),
            });
        }
        Ok(())
    }
}

/// The token budget of a run started over MCP when neither the agent nor the settings give one.
pub(crate) const DEFAULT_MCP_BUDGET_TOKENS: u64 = 1_000_000;

/// Where a run writes and how fast it goes.
#[derive(Debug, Clone)]
pub(crate) struct RunSettings {
    /// The output folder.
    pub output_dir: PathBuf,
    /// Documents in flight.
    pub concurrency: Concurrency,
    /// Requests per minute, per process; `None` for no limit.
    pub rpm: Option<NonZeroU32>,
    /// Tokens per minute, per process; `None` for no limit.
    pub tpm: Option<NonZeroU32>,
    /// OCR engine.
    pub ocr: OcrChoice,
    /// How long in-flight jobs may finish after the first SIGINT/SIGTERM.
    pub grace_period: Duration,
    /// Batch mode's file limits.
    pub batch: BatchLimits,
    /// Read and hash every input, whatever its stat (docs/outputs.md#the-stat-cache).
    pub checksum: bool,
    /// The token budget of a run an agent starts over MCP without one (docs/mcp.md).
    pub mcp_budget_tokens: Option<u64>,
    /// `mcp:`: the MCP servers agent skills may call tools of, by name
    /// (docs/mcp.md#skills-that-call-mcp-tools).
    pub mcp_servers: BTreeMap<String, McpServer>,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            output_dir: PathBuf::from("zhi-output"),
            concurrency: Concurrency::Fixed(4),
            rpm: None,
            tpm: None,
            ocr: OcrChoice::Auto,
            grace_period: Duration::from_secs(30),
            batch: BatchLimits::default(),
            checksum: false,
            mcp_budget_tokens: Some(DEFAULT_MCP_BUDGET_TOKENS),
            mcp_servers: BTreeMap::new(),
        }
    }
}

/// The providers' limits on one batch file (Zhipu: 50,000 requests, 100 MB): the most
/// `batch.max_requests` and `batch.max_bytes` may be.
pub(crate) const BATCH_MAX_REQUESTS: usize = 50_000;
pub(crate) const BATCH_MAX_BYTES: u64 = 100_000_000;

/// Batch mode (`--submit batch`): how large one batch file may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchLimits {
    /// Requests per batch file at most (`batch.max_requests`).
    pub max_requests: usize,
    /// Bytes per batch file at most (`batch.max_bytes`).
    pub max_bytes: u64,
    /// Runs in a row that may fail to bring a batch up to date before it is given up
    /// (`batch.max_stalled_runs`).
    pub max_stalled_runs: u32,
}

/// `batch.max_stalled_runs` by default.
pub(crate) const BATCH_MAX_STALLED_RUNS: u32 = 3;

impl Default for BatchLimits {
    fn default() -> Self {
        BatchLimits {
            max_requests: BATCH_MAX_REQUESTS,
            max_bytes: BATCH_MAX_BYTES,
            max_stalled_runs: BATCH_MAX_STALLED_RUNS,
        }
    }
}

/// Which model a skill runs on, and each model's budget.
#[derive(Debug, Clone)]
pub(crate) struct ModelSettings {
    /// `-m`: replaces every skill's model.
    pub model_override: Option<String>,
    /// The model of skills that name none.
    pub default_model: String,
    /// Sampling temperature sent with every request (the server's default when unset).
    pub temperature: Option<f32>,
    /// Token budgets per model.
    pub budgets: BTreeMap<String, ModelBudget>,
    /// Models whose budget a config file set: what the server says never replaces these.
    pub configured: BTreeSet<String>,
    /// The stronger models a job's failing step is asked of, in order (`--escalate`,
    /// `escalate:`; docs/escalation.md).
    pub escalate: Vec<EscalateTo>,
    /// Error kinds escalated besides the answer checks' (`escalate_on:`); `Doubtful` stands
    /// for a doubted answer, escalated by default (docs/outputs.md#doubts).
    pub escalate_on: Vec<crate::error::ErrorKind>,
    /// Prices per million tokens, by model (`prices:` over the defaults).
    pub prices: BTreeMap<String, Price>,
}

/// One rung of the escalation ladder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EscalateTo {
    pub model: String,
    /// Its server, when not the run's.
    pub base_url: Option<String>,
    /// The variable its key is read from, when its server is not the run's.
    pub api_key_env: Option<String>,
    /// Its server's own limits, when it is not the run's (the run's server shares `--rpm` and
    /// `--tpm`).
    pub rpm: Option<std::num::NonZeroU32>,
    pub tpm: Option<std::num::NonZeroU32>,
}

impl EscalateTo {
    /// `MODEL` or `MODEL@BASE_URL` (`--escalate`).
    pub(crate) fn parse(s: &str) -> Result<EscalateTo, String> {
        let s = s.trim();
        let (model, base_url) = match s.split_once('@') {
            Some((m, url)) if url.contains("://") => (m.trim(), Some(url.trim().to_string())),
            _ => (s, None),
        };
        if model.is_empty() {
            return Err(msg!(
                "`{value}` names no model (MODEL or MODEL@BASE_URL)",
                value = s
            ));
        }
        Ok(EscalateTo {
            model: model.to_string(),
            base_url,
            api_key_env: None,
            rpm: None,
            tpm: None,
        })
    }

    /// `MODEL` or `MODEL@BASE_URL`, as shown.
    pub(crate) fn label(&self) -> String {
        match &self.base_url {
            Some(url) => format!("{}@{}", self.model, crate::secret::url_for_display(url)),
            None => self.model.clone(),
        }
    }
}

/// What a model costs, per million tokens, in `currency`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Price {
    pub input: f64,
    pub output: f64,
    pub currency: String,
}

impl Price {
    /// The cost of `prompt` and `completion` tokens.
    pub(crate) fn of(&self, prompt: u64, completion: u64) -> f64 {
        (prompt as f64 * self.input + completion as f64 * self.output) / 1e6
    }
}

/// The default prices (docs/escalation.md#cost): Zhipu's in CNY, OpenAI's in USD, as their
/// price pages said in 2025-05. A `prices:` entry replaces a model's.
pub(crate) fn default_prices() -> BTreeMap<String, Price> {
    let p = |input: f64, output: f64, currency: &str| Price {
        input,
        output,
        currency: currency.to_string(),
    };
    [
        ("glm-4-flash", p(0.0, 0.0, "CNY")),
        ("glm-4-air", p(0.5, 0.5, "CNY")),
        ("glm-4-plus", p(5.0, 5.0, "CNY")),
        ("gpt-4o-mini", p(0.15, 0.60, "USD")),
        ("gpt-4o", p(2.50, 10.00, "USD")),
        ("gpt-4.1-mini", p(0.40, 1.60, "USD")),
        ("gpt-4.1", p(2.00, 8.00, "USD")),
    ]
    .into_iter()
    .map(|(m, p)| (m.to_string(), p))
    .collect()
}

impl Default for ModelSettings {
    fn default() -> Self {
        ModelSettings {
            model_override: None,
            default_model: crate::skills::DEFAULT_MODEL.into(),
            temperature: None,
            budgets: default_model_budgets(),
            configured: BTreeSet::new(),
            escalate: Vec::new(),
            escalate_on: vec![crate::error::ErrorKind::Doubtful],
            prices: default_prices(),
        }
    }
}

impl ModelSettings {
    /// The model a skill runs on: `-m`, else the skill's, else the default.
    pub(crate) fn model_for(&self, skill_model: Option<&str>) -> String {
        self.model_override
            .clone()
            .or_else(|| skill_model.map(str::to_string))
            .unwrap_or_else(|| self.default_model.clone())
    }

    /// The token budget of a model.
    pub(crate) fn budget(&self, model: &str) -> ModelBudget {
        self.budgets
            .get(model)
            .copied()
            .unwrap_or(UNKNOWN_MODEL_BUDGET)
    }

    /// What a server said of itself (its context window) becomes the budget of `model`,
    /// unless a config file set that model's budget. The answer's cap shrinks with a small
    /// window so that a document piece still fits beside it.
    pub(crate) fn apply_server_window(&mut self, model: &str, context_window: u32) {
        if self.configured.contains(model) || context_window == 0 {
            return;
        }
        let base = self.budget(model);
        self.budgets.insert(
            model.to_string(),
            ModelBudget {
                context_window,
                max_output: base.max_output.min(context_window / 4).max(256),
            },
        );
    }
}

/// zhi's own messages and logs.
#[derive(Debug, Clone)]
pub(crate) struct UiSettings {
    /// Language of zhi's own messages.
    pub language: Lang,
    /// `tracing` filter when no -v/-q is given.
    pub log_level: String,
}

impl Default for UiSettings {
    fn default() -> Self {
        UiSettings {
            language: Lang::En,
            log_level: "warn".into(),
        }
    }
}

impl Config {
    /// Resolve the settings: flags > `ZHI_*` env > `./zhi.yaml` > `~/.config/zhi/config.yaml`
    /// > defaults. `env` is the process environment (a parameter so tests can give their own).
    pub(crate) fn resolve(
        ov: &Overrides,
        env: &dyn Fn(&str) -> Option<String>,
        cwd: &Path,
    ) -> Result<Config, ConfigError> {
        let config_dir = env("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".config").join("zhi"));
        let files = file::find(ov.config_file.as_deref(), config_dir.as_deref(), cwd)?;
        let mut c = Config {
            api: ApiSettings::default(),
            run: RunSettings::default(),
            models: ModelSettings::default(),
            ui: UiSettings::default(),
            config_dir,
            origins: BTreeMap::new(),
            warnings: Vec::new(),
            key_warnings: Vec::new(),
        };
        for (f, text) in &files {
            file::apply(&mut c, f, text)?;
        }
        c.apply_env(env)?;
        c.apply_flags(ov)?;
        if !c.origins.contains_key("base_url") {
            c.api.base_url = c.api.provider.default_base_url().to_string();
        }
        if let Some(key) = &c.api.key
            && !crate::secret::is_secret(key.expose())
        {
            c.key_warnings
                .push(short_key_warning(crate::secret::MIN_SECRET_CHARS));
        }
        Ok(c)
    }

    /// The value a variable or flag gives `name`, checked by the setting's check; its origin
    /// noted.
    fn given<T>(
        &mut self,
        name: &'static str,
        at: Origin,
        raw: Value,
        check: fn(&Value) -> Result<T, String>,
    ) -> Result<T, ConfigError> {
        let value = check(&raw).map_err(|p| ConfigError::invalid(at.clone(), name, p))?;
        self.origins.insert(name, at);
        Ok(value)
    }

    /// The `ZHI_*` variables (an empty one is no value), `LANG` for the language, and the key.
    fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(Value::String);
        let at = |k: &str| Origin::Env(k.into());
        if let Some(v) = var("ZHI_PROVIDER") {
            self.api.provider = self.given("provider", at("ZHI_PROVIDER"), v, setting::provider)?;
        }
        if let Some(v) = var("ZHI_BASE_URL") {
            self.api.base_url = self.given("base_url", at("ZHI_BASE_URL"), v, setting::base_url)?;
        }
        if let Some(v) = var("ZHI_DEFAULT_MODEL") {
            self.models.default_model = self.given(
                "default_model",
                at("ZHI_DEFAULT_MODEL"),
                v,
                setting::model_name,
            )?;
        }
        if let Some(v) = var("ZHI_OUTPUT_DIR") {
            let dir = self.given("output_dir", at("ZHI_OUTPUT_DIR"), v, setting::text)?;
            self.run.output_dir = PathBuf::from(dir);
        }
        if let Some(v) = var("ZHI_LOG_LEVEL") {
            self.ui.log_level =
                self.given("log_level", at("ZHI_LOG_LEVEL"), v, setting::log_level)?;
        }
        match var("ZHI_LANGUAGE") {
            Some(v) => {
                self.ui.language =
                    self.given("language", at("ZHI_LANGUAGE"), v, setting::language)?;
            }
            // The locale speaks only when nothing else chose a language.
            None if !self.origins.contains_key("language") => {
                // The messages' own order (POSIX precedence), so both agree.
                let set = ["LC_ALL", "LC_MESSAGES", "LANG"]
                    .into_iter()
                    .find(|name| env(name).is_some_and(|v| !v.trim().is_empty()));
                if let Some(name) = set
                    && Lang::of_locale(env) == Lang::Zh
                {
                    self.ui.language = Lang::Zh;
                    self.origins.insert("language", at(name));
                }
            }
            None => {}
        }
        // The configured variable first; `ZHI_API_KEY` when another is configured but empty.
        let key_vars = [self.api.key_env.clone(), "ZHI_API_KEY".to_string()];
        let key = key_vars.iter().find_map(|k| {
            env(k)
                .filter(|v| !v.trim().is_empty())
                .map(|v| (k, Value::String(v)))
        });
        if let Some((k, v)) = key {
            let key = self.given("api_key", at(k), v, setting::api_key)?;
            self.api.key = Some(ApiKey::new(key));
        }
        Ok(())
    }

    /// The command line's settings.
    fn apply_flags(&mut self, ov: &Overrides) -> Result<(), ConfigError> {
        let at = |f: &str| Origin::Flag(f.into());
        if !ov.escalate.is_empty() {
            let mut ladder = Vec::new();
            for e in &ov.escalate {
                let raw = Value::String(e.clone());
                ladder.push(self.given("escalate", at("--escalate"), raw, |v| {
                    EscalateTo::parse(v.as_str().unwrap_or_default())
                })?);
            }
            self.models.escalate = ladder;
        }
        if let Some(v) = &ov.base_url {
            let raw = Value::String(v.clone());
            self.api.base_url = self.given("base_url", at("--base-url"), raw, setting::base_url)?;
        }
        if let Some(v) = &ov.model {
            self.models.model_override = Some(v.clone());
            self.origins.insert("model", at("--model"));
        }
        if let Some(v) = &ov.output_dir {
            self.run.output_dir = v.clone();
            self.origins.insert("output_dir", at("--output"));
        }
        if let Some(v) = ov.concurrency {
            self.run.concurrency = v;
            self.origins.insert("concurrency", at("--concurrency"));
        }
        if let Some(n) = ov.rpm {
            self.run.rpm = Some(n);
            self.origins.insert("rpm", at("--rpm"));
        }
        if let Some(n) = ov.tpm {
            self.run.tpm = Some(n);
            self.origins.insert("tpm", at("--tpm"));
        }
        if let Some(t) = ov.timeout {
            self.api.timeout = t;
            self.origins.insert("timeout", at("--timeout"));
        }
        if let Some(v) = ov.ocr {
            self.run.ocr = v;
            self.origins.insert("ocr", at("--ocr"));
        }
        if ov.checksum {
            self.run.checksum = true;
            self.origins.insert("checksum", at("--checksum"));
        }
        Ok(())
    }

    /// The budget of one request to `model`: the model's, its window no larger than the
    /// per-minute token budget. A request larger than `--tpm` could only be sent by exceeding
    /// it, so a long document is split into pieces whose requests fit the minute, and a
    /// document that cannot be split fails as too large instead of waiting for a minute that
    /// never holds enough.
    pub(crate) fn request_budget(&self, model: &str) -> ModelBudget {
        let mut b = self.models.budget(model);
        if let Some(tpm) = self.run.tpm {
            b.context_window = b.context_window.min(tpm.get());
        }
        b
    }

    /// `--tpm N` or `tpm N (config file F)`: the per-minute token budget as the user set it.
    pub(crate) fn tpm_label(&self) -> String {
        let n = self.run.tpm.map_or(0, NonZeroU32::get);
        match self.origins.get("tpm") {
            Some(Origin::File(f)) => format!("tpm {n} (config file {f})"),
            _ => format!("--tpm {n}"),
        }
    }
}

#[cfg(test)]
mod tests;

/// Said once per command: a placeholder key (`ollama`) must not rewrite documents that hold
/// the word.
fn short_key_warning(min: usize) -> String {
    format!(
        "the API key is shorter than {min} characters, so it is not treated as a secret: \
         outputs, records and transcripts are not scrubbed of it"
    )
}
