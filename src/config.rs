//! The resolved, validated settings of one invocation.
//!
//! Precedence, highest first: command-line flags > `ZHI_*` environment variables >
//! `./zhi.yaml` > `~/.config/zhi/config.yaml` > built-in defaults. Everything is resolved once,
//! here, into [`Config`]; the engine reads it and never looks at flags or the environment again.

use crate::exit::ExitError;
use serde::Serialize;
use serde_norway::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// An API key. Its `Debug` and `Display` never show it: the key must not reach a log, a
/// manifest or a terminal.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }
    /// The key itself, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// How requests are retried (SPEC §6): exponential backoff with full jitter, never sooner than
/// a server's `Retry-After`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per request, the first included.
    pub max_attempts: u32,
    /// The delay before the second attempt; doubled for each further one.
    pub base_delay: Duration,
    /// No computed delay exceeds this (a `Retry-After` may).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

/// The Zhipu BigModel API.
pub const ZHIPU_BASE_URL: &str = "https://open.bigmodel.cn/api/paas/v4";
/// OpenAI's API, the default base of the `openai` provider.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Which API dialect the model server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Zhipu BigModel (the default).
    Zhipu,
    /// Any OpenAI-compatible server: OpenAI, DeepSeek, Moonshot, Ollama, vLLM, llama.cpp.
    Openai,
}

impl Provider {
    fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "zhipu" | "bigmodel" | "glm" => Some(Provider::Zhipu),
            "openai" | "openai-compatible" => Some(Provider::Openai),
            _ => None,
        }
    }
    fn default_base_url(self) -> &'static str {
        match self {
            Provider::Zhipu => ZHIPU_BASE_URL,
            Provider::Openai => OPENAI_BASE_URL,
        }
    }
}

/// The language of zhi's own messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    En,
    Zh,
}

/// How many documents are in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    Fixed(usize),
    /// Adapt to rate limits within 1..=64 (SPEC §6).
    Auto,
}

impl Concurrency {
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("auto") {
            return Ok(Concurrency::Auto);
        }
        match s.parse::<usize>() {
            Ok(n) if (1..=1024).contains(&n) => Ok(Concurrency::Fixed(n)),
            _ => Err(format!(
                "concurrency `{s}` must be a number from 1 to 1024, or auto"
            )),
        }
    }
}

impl std::fmt::Display for Concurrency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Concurrency::Fixed(n) => write!(f, "{n}"),
            Concurrency::Auto => f.write_str("auto"),
        }
    }
}

pub use crate::ocr::OcrChoice;

/// A model's token budget (SPEC §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ModelBudget {
    /// Tokens the model reads and writes in one request.
    pub context_window: u32,
    /// Tokens the model writes in one answer at most.
    pub max_output: u32,
}

/// Known models' budgets; a config file's `models:` adds to or replaces these.
pub fn default_model_budgets() -> BTreeMap<String, ModelBudget> {
    let b = |c, o| ModelBudget {
        context_window: c,
        max_output: o,
    };
    [
        ("glm-4-flash", b(128_000, 4_096)),
        ("glm-4-flashx", b(128_000, 4_096)),
        ("glm-4-air", b(128_000, 4_096)),
        ("glm-4-plus", b(128_000, 4_096)),
        ("glm-4-long", b(1_000_000, 4_096)),
        ("glm-4v-flash", b(8_000, 1_024)),
        ("gpt-4o-mini", b(128_000, 16_384)),
        ("deepseek-chat", b(64_000, 8_192)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The budget assumed for a model that no table names.
pub const UNKNOWN_MODEL_BUDGET: ModelBudget = ModelBudget {
    context_window: 8_192,
    max_output: 2_048,
};

/// Where a setting's value came from, for `zhi config show`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "from", content = "name")]
pub enum Origin {
    Default,
    File(String),
    Env(String),
    Flag(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File(p) => write!(f, "file {p}"),
            Origin::Env(v) => write!(f, "env {v}"),
            Origin::Flag(v) => write!(f, "flag {v}"),
        }
    }
}

/// Settings given on the command line; `None` leaves the lower layers in force.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub config_file: Option<PathBuf>,
    pub output_dir: Option<PathBuf>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub concurrency: Option<Concurrency>,
    pub rpm: Option<NonZeroU32>,
    pub tpm: Option<NonZeroU32>,
    pub timeout_secs: Option<u64>,
    pub ocr: Option<OcrChoice>,
}

/// Everything an invocation needs to know, resolved once.
#[derive(Debug, Clone)]
pub struct Config {
    /// The API dialect.
    pub provider: Provider,
    /// The API key; `None` when none is configured (fine for a local server).
    pub api_key: Option<ApiKey>,
    /// The environment variable the key is read from (`ZHI_API_KEY` unless configured).
    pub api_key_env: String,
    /// API base; requests go to `<base_url>/chat/completions`.
    pub base_url: String,
    /// `-m`: replaces every skill's model.
    pub model_override: Option<String>,
    /// The model of skills that name none.
    pub default_model: String,
    /// The output folder.
    pub output_dir: PathBuf,
    /// Language of zhi's own messages.
    pub language: Language,
    /// `tracing` filter when no -v/-q is given.
    pub log_level: String,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Retry policy for API requests.
    pub retry: RetryPolicy,
    /// Documents in flight.
    pub concurrency: Concurrency,
    /// Requests per minute, per process.
    pub rpm: Option<NonZeroU32>,
    /// Tokens per minute, per process.
    pub tpm: Option<NonZeroU32>,
    /// OCR engine.
    pub ocr: OcrChoice,
    /// How long in-flight jobs may finish after the first SIGINT/SIGTERM.
    pub grace_period: Duration,
    /// Sampling temperature sent with every request (the server's default when unset).
    pub temperature: Option<f32>,
    /// Token budgets per model.
    pub models: BTreeMap<String, ModelBudget>,
    /// Batch mode: requests per batch file at most (`batch.max_requests`).
    pub batch_max_requests: usize,
    /// Batch mode: bytes per batch file at most (`batch.max_bytes`).
    pub batch_max_bytes: u64,
    /// Models whose budget a config file set: what the server says never replaces these.
    pub configured_models: std::collections::BTreeSet<String>,
    /// `~/.config/zhi` (user skills live below it).
    pub config_dir: Option<PathBuf>,
    /// Where each setting came from.
    pub origins: BTreeMap<&'static str, Origin>,
    /// Problems worth a warning (unknown fields, a key file readable by others).
    pub warnings: Vec<String>,
}

impl Config {
    /// Resolve the settings: flags > `ZHI_*` env > `./zhi.yaml` > `~/.config/zhi/config.yaml`
    /// > defaults. `env` is the process environment (a parameter so tests can give their own).
    pub fn resolve(
        ov: &Overrides,
        env: &dyn Fn(&str) -> Option<String>,
        cwd: &Path,
    ) -> Result<Config, ExitError> {
        let config_dir = env("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".config").join("zhi"));
        // Each settings file with its text; a default place with nothing there is no file.
        let mut files: Vec<(PathBuf, String)> = Vec::new();
        match &ov.config_file {
            Some(f) => match read_settings_file(f)? {
                Some(text) => files.push((f.clone(), text)),
                None => {
                    return Err(ExitError::usage(format!(
                        "config file {} does not exist",
                        f.display()
                    )));
                }
            },
            None => {
                let mut places = Vec::new();
                if let Some(d) = &config_dir {
                    places.push(d.join("config.yaml"));
                }
                places.push(cwd.join("zhi.yaml"));
                for f in places {
                    if let Some(text) = read_settings_file(&f)? {
                        files.push((f, text));
                    }
                }
            }
        }

        let mut c = Config {
            provider: Provider::Zhipu,
            api_key: None,
            api_key_env: "ZHI_API_KEY".into(),
            base_url: ZHIPU_BASE_URL.into(),
            model_override: None,
            default_model: crate::skills::DEFAULT_MODEL.into(),
            output_dir: PathBuf::from("zhi-output"),
            language: Language::En,
            log_level: "warn".into(),
            timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            concurrency: Concurrency::Fixed(4),
            rpm: None,
            tpm: None,
            ocr: OcrChoice::Auto,
            grace_period: Duration::from_secs(30),
            temperature: None,
            models: default_model_budgets(),
            batch_max_requests: crate::batch::MAX_REQUESTS,
            batch_max_bytes: crate::batch::MAX_BYTES,
            configured_models: Default::default(),
            config_dir,
            origins: BTreeMap::new(),
            warnings: Vec::new(),
        };
        let mut base_url_set = false;

        // Files, lowest first.
        for (f, text) in &files {
            c.apply_file(f, text, &mut base_url_set)?;
        }

        // Environment.
        let bad = |var: &str, msg: String| ExitError::usage(format!("{var}: {msg}"));
        if let Some(v) = env("ZHI_PROVIDER").filter(|v| !v.is_empty()) {
            c.provider = Provider::parse(&v)
                .ok_or_else(|| bad("ZHI_PROVIDER", format!("`{v}` is not zhipu or openai")))?;
            c.origins
                .insert("provider", Origin::Env("ZHI_PROVIDER".into()));
        }
        if let Some(v) = env("ZHI_BASE_URL").filter(|v| !v.is_empty()) {
            c.base_url = v;
            base_url_set = true;
            c.origins
                .insert("base_url", Origin::Env("ZHI_BASE_URL".into()));
        }
        if let Some(v) = env("ZHI_DEFAULT_MODEL").filter(|v| !v.is_empty()) {
            c.default_model = v;
            c.origins
                .insert("default_model", Origin::Env("ZHI_DEFAULT_MODEL".into()));
        }
        if let Some(v) = env("ZHI_OUTPUT_DIR").filter(|v| !v.is_empty()) {
            c.output_dir = PathBuf::from(v);
            c.origins
                .insert("output_dir", Origin::Env("ZHI_OUTPUT_DIR".into()));
        }
        if let Some(v) = env("ZHI_LOG_LEVEL").filter(|v| !v.is_empty()) {
            c.log_level = parse_log_level(&v).map_err(|m| bad("ZHI_LOG_LEVEL", m))?;
            c.origins
                .insert("log_level", Origin::Env("ZHI_LOG_LEVEL".into()));
        }
        match env("ZHI_LANGUAGE").filter(|v| !v.is_empty()) {
            Some(v) => {
                c.language = parse_language(&v)
                    .ok_or_else(|| bad("ZHI_LANGUAGE", format!("`{v}` is not en or zh")))?;
                c.origins
                    .insert("language", Origin::Env("ZHI_LANGUAGE".into()));
            }
            None if !c.origins.contains_key("language") => {
                let lang = env("LC_ALL")
                    .filter(|v| !v.is_empty())
                    .or_else(|| env("LANG"))
                    .unwrap_or_default();
                if lang.to_ascii_lowercase().starts_with("zh") {
                    c.language = Language::Zh;
                    c.origins.insert("language", Origin::Env("LANG".into()));
                }
            }
            None => {}
        }
        if let Some(k) = env(&c.api_key_env).filter(|k| !k.trim().is_empty()) {
            c.api_key = Some(ApiKey::new(k.trim()));
            c.origins
                .insert("api_key", Origin::Env(c.api_key_env.clone()));
        } else if c.api_key_env != "ZHI_API_KEY"
            && let Some(k) = env("ZHI_API_KEY").filter(|k| !k.trim().is_empty())
        {
            c.api_key = Some(ApiKey::new(k.trim()));
            c.origins
                .insert("api_key", Origin::Env("ZHI_API_KEY".into()));
        }

        // Flags.
        if let Some(v) = &ov.base_url {
            c.base_url = v.clone();
            base_url_set = true;
            c.origins
                .insert("base_url", Origin::Flag("--base-url".into()));
        }
        if let Some(v) = &ov.model {
            c.model_override = Some(v.clone());
            c.origins.insert("model", Origin::Flag("--model".into()));
        }
        if let Some(v) = &ov.output_dir {
            c.output_dir = v.clone();
            c.origins
                .insert("output_dir", Origin::Flag("--output".into()));
        }
        if let Some(v) = ov.concurrency {
            c.concurrency = v;
            c.origins
                .insert("concurrency", Origin::Flag("--concurrency".into()));
        }
        if let Some(v) = ov.rpm {
            c.rpm = Some(v);
            c.origins.insert("rpm", Origin::Flag("--rpm".into()));
        }
        if let Some(v) = ov.tpm {
            c.tpm = Some(v);
            c.origins.insert("tpm", Origin::Flag("--tpm".into()));
        }
        if let Some(v) = ov.timeout_secs {
            if v == 0 {
                return Err(ExitError::usage("--timeout must be at least 1 second"));
            }
            c.timeout = Duration::from_secs(v);
            c.origins
                .insert("timeout", Origin::Flag("--timeout".into()));
        }
        if let Some(v) = ov.ocr {
            c.ocr = v;
            c.origins.insert("ocr", Origin::Flag("--ocr".into()));
        }

        if !base_url_set {
            c.base_url = c.provider.default_base_url().to_string();
        }
        c.base_url = c.base_url.trim_end_matches('/').to_string();
        if !(c.base_url.starts_with("http://") || c.base_url.starts_with("https://")) {
            return Err(ExitError::usage(format!(
                "base URL `{}` must start with http:// or https://",
                c.base_url
            )));
        }
        Ok(c)
    }

    /// The model a skill runs on: `-m`, else the skill's, else the default.
    pub fn model_for(&self, skill_model: Option<&str>) -> String {
        self.model_override
            .clone()
            .or_else(|| skill_model.map(str::to_string))
            .unwrap_or_else(|| self.default_model.clone())
    }

    /// The token budget of a model.
    pub fn budget(&self, model: &str) -> ModelBudget {
        self.models
            .get(model)
            .copied()
            .unwrap_or(UNKNOWN_MODEL_BUDGET)
    }

    /// The budget of one request to `model`: the model's, its window no larger than the
    /// per-minute token budget. A request larger than `--tpm` could only be sent by exceeding
    /// it, so a long document is split into pieces whose requests fit the minute, and a
    /// document that cannot be split fails as too large instead of waiting for a minute that
    /// never holds enough.
    pub fn request_budget(&self, model: &str) -> ModelBudget {
        let mut b = self.budget(model);
        if let Some(tpm) = self.tpm {
            b.context_window = b.context_window.min(tpm.get());
        }
        b
    }

    /// `--tpm N` or `tpm N (config file F)`: the per-minute token budget as the user set it.
    pub fn tpm_label(&self) -> String {
        let n = self.tpm.map_or(0, NonZeroU32::get);
        match self.origins.get("tpm") {
            Some(Origin::File(f)) => format!("tpm {n} (config file {f})"),
            _ => format!("--tpm {n}"),
        }
    }

    /// What a server said of itself (its context window) becomes the budget of `model`,
    /// unless a config file set that model's budget. The answer's cap shrinks with a small
    /// window so that a document piece still fits beside it.
    pub fn apply_server_window(&mut self, model: &str, context_window: u32) {
        if self.configured_models.contains(model) || context_window == 0 {
            return;
        }
        let base = self.budget(model);
        self.models.insert(
            model.to_string(),
            ModelBudget {
                context_window,
                max_output: base.max_output.min(context_window / 4).max(256),
            },
        );
    }

    /// Whether the API base is on this machine (a local server needs no key).
    pub fn base_url_is_local(&self) -> bool {
        let rest = self
            .base_url
            .split_once("://")
            .map(|(_, r)| r)
            .unwrap_or(&self.base_url);
        let host_port = rest.split('/').next().unwrap_or("");
        let host = if let Some(h) = host_port.strip_prefix('[') {
            h.split(']').next().unwrap_or("")
        } else {
            host_port.split(':').next().unwrap_or("")
        };
        host.eq_ignore_ascii_case("localhost")
            || host.starts_with("127.")
            || host == "::1"
            || host == "0.0.0.0"
    }

    /// Fail with the message that says how to set a key, when one is needed and missing.
    pub fn require_key(&self) -> Result<(), ExitError> {
        if self.api_key.is_none() && !self.base_url_is_local() {
            return Err(ExitError::usage(format!(
                "no API key: set {} (export {}=your-key), or put `api_key:` in ~/.config/zhi/config.yaml (mode 0600); \
                 a local server (--base-url http://127.0.0.1:PORT/v1) needs none",
                self.api_key_env, self.api_key_env
            )));
        }
        Ok(())
    }

    fn apply_file(
        &mut self,
        path: &Path,
        text: &str,
        base_url_set: &mut bool,
    ) -> Result<(), ExitError> {
        let label = path.display().to_string();
        let bad = |m: String| ExitError::usage(format!("config file {label}: {m}"));
        if text.trim().is_empty() {
            return Ok(());
        }
        crate::small_file::check_yaml_nesting(text).map_err(|e| bad(e.to_string()))?;
        let value: Value = serde_norway::from_str(text).map_err(|e| bad(e.to_string()))?;
        let Value::Mapping(map) = value else {
            return Err(bad("expected a mapping of settings".into()));
        };
        let origin = || Origin::File(label.clone());
        for (k, v) in &map {
            let Some(key) = k.as_str() else {
                self.warnings
                    .push(format!("config file {label}: non-string key ignored"));
                continue;
            };
            let as_string = || -> Result<String, ExitError> {
                match v {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    Value::Bool(b) => Ok(b.to_string()),
                    _ => Err(bad(format!("`{key}` must be a single value"))),
                }
            };
            let as_u64 = || -> Result<u64, ExitError> {
                v.as_u64()
                    .ok_or_else(|| bad(format!("`{key}` must be a whole number")))
            };
            match key {
                "provider" => {
                    let s = as_string()?;
                    self.provider = Provider::parse(&s)
                        .ok_or_else(|| bad(format!("provider `{s}` is not zhipu or openai")))?;
                }
                "api_key" => {
                    self.api_key = Some(ApiKey::new(as_string()?.trim()));
                    warn_if_readable(path, &mut self.warnings);
                }
                "api_key_env" => self.api_key_env = as_string()?,
                "base_url" => {
                    self.base_url = as_string()?;
                    *base_url_set = true;
                }
                "model" | "default_model" => self.default_model = as_string()?,
                "output_dir" | "output" => self.output_dir = PathBuf::from(as_string()?),
                "language" => {
                    let s = as_string()?;
                    self.language = parse_language(&s)
                        .ok_or_else(|| bad(format!("language `{s}` is not en or zh")))?;
                }
                "log_level" => {
                    self.log_level = parse_log_level(&as_string()?)
                        .map_err(|m| bad(format!("log_level: {m}")))?;
                }
                "timeout" => {
                    let t = as_u64()?;
                    if t == 0 {
                        return Err(bad("timeout must be at least 1 second".into()));
                    }
                    self.timeout = Duration::from_secs(t);
                }
                "concurrency" => {
                    self.concurrency = Concurrency::parse(&as_string()?).map_err(bad)?;
                }
                // Zero is refused as `--rpm 0` is: no limit is said by leaving the setting out.
                "rpm" => self.rpm = Some(per_minute(key, v).map_err(bad)?),
                "tpm" => self.tpm = Some(per_minute(key, v).map_err(bad)?),
                "ocr" => {
                    let s = as_string()?;
                    self.ocr = s.trim().parse::<OcrChoice>().map_err(|_| {
                        bad(format!(
                            "ocr `{s}` is not one of auto, tesseract, glm-ocr, file-extract, vision, off"
                        ))
                    })?;
                }
                "grace_period" => self.grace_period = Duration::from_secs(as_u64()?),
                "temperature" => {
                    let t = v
                        .as_f64()
                        .filter(|t| (0.0..=2.0).contains(t))
                        .ok_or_else(|| bad("temperature must be a number from 0 to 2".into()))?;
                    self.temperature = Some(t as f32);
                }
                "retry" => {
                    let Value::Mapping(r) = v else {
                        return Err(bad("`retry` must be a mapping".into()));
                    };
                    for (rk, rv) in r {
                        let n = rv.as_u64().ok_or_else(|| {
                            bad(format!(
                                "retry.{} must be a whole number",
                                rk.as_str().unwrap_or("?")
                            ))
                        })?;
                        match rk.as_str() {
                            Some("max_attempts") => {
                                self.retry.max_attempts = u32::try_from(n)
                                    .ok()
                                    .filter(|n| *n >= 1)
                                    .ok_or_else(|| {
                                        bad(format!(
                                            "retry.max_attempts {n} must be at least 1 (the first attempt counts)"
                                        ))
                                    })?;
                            }
                            Some("base_delay_ms") => {
                                self.retry.base_delay = Duration::from_millis(n)
                            }
                            Some("max_delay_ms") => self.retry.max_delay = Duration::from_millis(n),
                            other => self.warnings.push(format!(
                                "config file {label}: unknown field `retry.{}` ignored",
                                other.unwrap_or("?")
                            )),
                        }
                    }
                    if self.retry.max_delay < self.retry.base_delay {
                        return Err(bad(format!(
                            "retry.max_delay_ms {} is below retry.base_delay_ms {}: the longest wait cannot be shorter than the first",
                            self.retry.max_delay.as_millis(),
                            self.retry.base_delay.as_millis()
                        )));
                    }
                }
                "batch" => {
                    let Value::Mapping(b) = v else {
                        return Err(bad("`batch` must be a mapping".into()));
                    };
                    for (bk, bv) in b {
                        let name = bk.as_str().unwrap_or("?");
                        let n = bv.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
                            bad(format!("batch.{name} must be a whole number of at least 1"))
                        })?;
                        match name {
                            // The providers take no more than this in one file.
                            "max_requests" if n <= crate::batch::MAX_REQUESTS as u64 => {
                                self.batch_max_requests = n as usize;
                            }
                            "max_bytes" if n <= crate::batch::MAX_BYTES => self.batch_max_bytes = n,
                            "max_requests" | "max_bytes" => {
                                return Err(bad(format!(
                                    "batch.{name} {n} is above the provider's limit ({} requests, {} bytes a file)",
                                    crate::batch::MAX_REQUESTS,
                                    crate::batch::MAX_BYTES
                                )));
                            }
                            other => self.warnings.push(format!(
                                "config file {label}: unknown field `batch.{other}` ignored"
                            )),
                        }
                    }
                }
                "models" => {
                    let Value::Mapping(m) = v else {
                        return Err(bad("`models` must map model names to budgets".into()));
                    };
                    for (name, budget) in m {
                        let name = name
                            .as_str()
                            .ok_or_else(|| bad("model names must be strings".into()))?;
                        let b = model_budget(name, budget, self.budget(name), &mut |w| {
                            self.warnings.push(format!("config file {label}: {w}"))
                        })
                        .map_err(bad)?;
                        self.configured_models.insert(name.to_string());
                        self.models.insert(name.to_string(), b);
                    }
                }
                other => {
                    self.warnings.push(format!(
                        "config file {label}: unknown setting `{other}` ignored"
                    ));
                    continue;
                }
            }
            let name: &'static str = match key {
                "model" | "default_model" => "default_model",
                "output" | "output_dir" => "output_dir",
                k => KEYS.iter().find(|x| **x == k).copied().unwrap_or("other"),
            };
            self.origins.insert(name, origin());
        }
        Ok(())
    }

    /// The settings as (name, value, origin) rows, the key redacted.
    pub fn rows(&self) -> Vec<(&'static str, String, Origin)> {
        let origin = |k: &str| self.origins.get(k).cloned().unwrap_or(Origin::Default);
        let opt = |v: Option<NonZeroU32>| v.map_or("unlimited".to_string(), |n| n.to_string());
        vec![
            (
                "provider",
                format!("{:?}", self.provider).to_lowercase(),
                origin("provider"),
            ),
            ("base_url", self.base_url.clone(), origin("base_url")),
            (
                "api_key",
                match &self.api_key {
                    Some(_) => "<redacted>".to_string(),
                    None => format!("(not set; export {})", self.api_key_env),
                },
                origin("api_key"),
            ),
            (
                "api_key_env",
                self.api_key_env.clone(),
                origin("api_key_env"),
            ),
            (
                "model",
                self.model_override
                    .clone()
                    .unwrap_or_else(|| "(each skill's)".into()),
                origin("model"),
            ),
            (
                "default_model",
                self.default_model.clone(),
                origin("default_model"),
            ),
            (
                "output_dir",
                self.output_dir.display().to_string(),
                origin("output_dir"),
            ),
            (
                "concurrency",
                self.concurrency.to_string(),
                origin("concurrency"),
            ),
            ("rpm", opt(self.rpm), origin("rpm")),
            ("tpm", opt(self.tpm), origin("tpm")),
            (
                "timeout",
                format!("{}s", self.timeout.as_secs()),
                origin("timeout"),
            ),
            (
                "retry",
                format!(
                    "{} attempts, base {}ms, cap {}ms",
                    self.retry.max_attempts,
                    self.retry.base_delay.as_millis(),
                    self.retry.max_delay.as_millis()
                ),
                origin("retry"),
            ),
            ("ocr", self.ocr.as_str().to_string(), origin("ocr")),
            (
                "grace_period",
                format!("{}s", self.grace_period.as_secs()),
                origin("grace_period"),
            ),
            (
                "temperature",
                self.temperature
                    .map_or("(server default)".into(), |t| t.to_string()),
                origin("temperature"),
            ),
            (
                "language",
                format!("{:?}", self.language).to_lowercase(),
                origin("language"),
            ),
            ("log_level", self.log_level.clone(), origin("log_level")),
        ]
    }
}

const KEYS: &[&str] = &[
    "provider",
    "api_key",
    "api_key_env",
    "base_url",
    "language",
    "log_level",
    "timeout",
    "concurrency",
    "rpm",
    "tpm",
    "ocr",
    "grace_period",
    "temperature",
    "retry",
    "models",
    "batch",
];

/// The largest settings file read; real ones are a few hundred bytes.
pub const MAX_CONFIG_FILE_BYTES: u64 = 1 << 20;

/// The text of a settings file, `None` when nothing is at `path`.
///
/// Anything else that is not a readable regular file — a folder, a FIFO, a device, a link to
/// nothing — is an error naming the file: a settings file that is silently skipped leaves a
/// user wondering why their settings do not apply, and a FIFO must never block startup.
fn read_settings_file(path: &Path) -> Result<Option<String>, ExitError> {
    use crate::small_file::ReadError;
    let bad = |m: String| ExitError::usage(format!("config file {}: {m}", path.display()));
    match crate::small_file::read(path, MAX_CONFIG_FILE_BYTES) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|e| bad(format!("not UTF-8 text ({e})"))),
        Err(ReadError::NotFound) if std::fs::symlink_metadata(path).is_ok() => Err(bad(
            "is a symbolic link to nothing; remove it or point it at a settings file".into(),
        )),
        Err(ReadError::NotFound) => Ok(None),
        Err(e) => Err(bad(e.to_string())),
    }
}

/// The levels `log_level` and `ZHI_LOG_LEVEL` take. Anything else used to fall back to
/// warnings without a word, which hid the level the user asked for.
const LOG_LEVELS: &[&str] = &["error", "warn", "info", "debug", "trace", "off"];

fn parse_log_level(s: &str) -> Result<String, String> {
    let level = s.trim().to_ascii_lowercase();
    let level = if level == "warning" {
        "warn".to_string()
    } else {
        level
    };
    if LOG_LEVELS.contains(&level.as_str()) {
        Ok(level)
    } else {
        Err(format!("`{s}` is not one of {}", LOG_LEVELS.join(", ")))
    }
}

/// `rpm`/`tpm` of a settings file: a whole number from 1 to 2^32 − 1, as the flags take.
fn per_minute(key: &str, v: &Value) -> Result<NonZeroU32, String> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .and_then(NonZeroU32::new)
        .ok_or_else(|| {
            format!(
                "{key} must be a whole number of at least 1 and at most {} (leave it out for no limit), found {}",
                u32::MAX,
                scalar_text(v)
            )
        })
}

/// One entry of `models:`: `{context_window, max_output}`, either left out to keep `base`.
/// A zero, a word or an answer as large as the whole window would make every document of that
/// model fail (or be cut into pieces of nothing), so each is refused here, by name.
fn model_budget(
    name: &str,
    v: &Value,
    base: ModelBudget,
    warn: &mut dyn FnMut(String),
) -> Result<ModelBudget, String> {
    let Value::Mapping(m) = v else {
        return Err(format!(
            "models.{name} must be a mapping such as {{context_window: 128000, max_output: 4096}}, found {}",
            scalar_text(v)
        ));
    };
    let mut b = base;
    for (k, fv) in m {
        let field = k.as_str().unwrap_or("?");
        let slot = match field {
            "context_window" => &mut b.context_window,
            "max_output" => &mut b.max_output,
            _ => {
                warn(format!("unknown field `models.{name}.{field}` ignored"));
                continue;
            }
        };
        *slot = fv
            .as_u64()
            .ok_or_else(|| {
                format!(
                    "models.{name}.{field} must be a whole number of tokens, found {}",
                    scalar_text(fv)
                )
            })
            .and_then(|n| {
                u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
                    format!("models.{name}.{field} {n} must be at least 1 and fit 32 bits")
                })
            })?;
    }
    if b.max_output >= b.context_window {
        return Err(format!(
            "models.{name}: max_output {} must be smaller than context_window {} (the document shares the window with the answer)",
            b.max_output, b.context_window
        ));
    }
    Ok(b)
}

/// A YAML value as a user wrote it, for messages.
fn scalar_text(v: &Value) -> String {
    match v {
        Value::Null => "nothing".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("`{s}`"),
        Value::Sequence(_) => "a list".into(),
        Value::Mapping(_) => "a mapping".into(),
        Value::Tagged(_) => "a tagged value".into(),
    }
}

fn parse_language(s: &str) -> Option<Language> {
    let s = s.trim().to_ascii_lowercase();
    if s.starts_with("zh") {
        Some(Language::Zh)
    } else if s.starts_with("en") {
        Some(Language::En)
    } else {
        None
    }
}

#[cfg(unix)]
fn warn_if_readable(path: &Path, warnings: &mut Vec<String>) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = std::fs::metadata(path) {
        let mode = m.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            warnings.push(format!(
                "config file {} holds an API key but has mode {mode:04o}; run `chmod 600 {}`",
                path.display(),
                path.display()
            ));
        }
    }
}

#[cfg(not(unix))]
fn warn_if_readable(_: &Path, _: &mut Vec<String>) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn precedence_flags_env_files_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".config/zhi")).unwrap();
        std::fs::write(
            home.join(".config/zhi/config.yaml"),
            "base_url: http://home/v1\ntimeout: 7\nrpm: 5\n",
        )
        .unwrap();
        let cwd = dir.path().join("proj");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::write(cwd.join("zhi.yaml"), "base_url: http://proj/v1\nrpm: 9\n").unwrap();
        let env = env_of(&[("HOME", home.to_str().unwrap())]);
        let c = Config::resolve(&Overrides::default(), &env, &cwd).unwrap();
        assert_eq!(c.base_url, "http://proj/v1");
        assert_eq!(c.timeout, Duration::from_secs(7));
        assert_eq!(c.rpm.map(|n| n.get()), Some(9));

        let env = env_of(&[
            ("HOME", home.to_str().unwrap()),
            ("ZHI_BASE_URL", "http://env/v1"),
        ]);
        let c = Config::resolve(&Overrides::default(), &env, &cwd).unwrap();
        assert_eq!(c.base_url, "http://env/v1");
        let ov = Overrides {
            base_url: Some("http://flag/v1/".into()),
            ..Default::default()
        };
        let c = Config::resolve(&ov, &env, &cwd).unwrap();
        assert_eq!(c.base_url, "http://flag/v1");
        assert_eq!(c.origins["base_url"], Origin::Flag("--base-url".into()));
    }

    #[test]
    fn a_request_budget_never_exceeds_the_token_budget_of_a_minute() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Config::resolve(&Overrides::default(), &env_of(&[]), dir.path()).unwrap();
        assert_eq!(c.request_budget("glm-4-flash").context_window, 128_000);
        c.tpm = NonZeroU32::new(9_000);
        let b = c.request_budget("glm-4-flash");
        assert_eq!((b.context_window, b.max_output), (9_000, 4_096));
        assert_eq!(c.tpm_label(), "--tpm 9000");
    }

    #[test]
    fn key_is_redacted_and_local_needs_none() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_of(&[("ZHI_API_KEY", "sk-secret")]);
        let c = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();
        assert!(!format!("{c:?}").contains("sk-secret"));
        assert!(c.rows().iter().all(|r| !r.1.contains("sk-secret")));
        let env = env_of(&[("ZHI_BASE_URL", "http://127.0.0.1:9/v1")]);
        let c = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();
        assert!(c.require_key().is_ok());
        let c = Config::resolve(&Overrides::default(), &env_of(&[]), dir.path()).unwrap();
        assert!(c.require_key().is_err());
    }
}
