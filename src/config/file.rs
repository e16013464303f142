//! Settings files: `./zhi.yaml` and `~/.config/zhi/config.yaml` (or `--config FILE`).
//!
//! A file is read as any small file a person hands zhi ([`crate::small_file`]), parsed by
//! serde into [`SettingsFile`] (every setting it knows, unknown keys collected for a warning
//! naming the file and the key), and each value present is checked by the setting's one check
//! in [`super::setting`].

use super::Config;
use super::error::ConfigError;
use super::setting::{self, Problem};
use super::value::Origin;
use crate::small_file::present;
use serde::Deserialize;
use serde_norway::{Mapping, Value};
use std::path::{Path, PathBuf};

/// The project's settings file, read in whatever folder zhi runs in.
pub(crate) const PROJECT_FILE: &str = "zhi.yaml";

/// The user's settings file, in `config_dir` (`~/.config/zhi`).
pub(crate) fn user_file(config_dir: &Path) -> PathBuf {
    config_dir.join("config.yaml")
}

/// The largest settings file read; real ones are a few hundred bytes.
pub(super) const MAX_CONFIG_FILE_BYTES: u64 = 1 << 20;

/// The settings files in force, lowest first, each with its text: `--config FILE` alone when
/// given (it must exist), else the user's file and the project's, where they exist.
pub(super) fn find(
    given: Option<&Path>,
    config_dir: Option<&Path>,
    cwd: &Path,
) -> Result<Vec<(PathBuf, String)>, ConfigError> {
    if let Some(f) = given {
        return match read(f)? {
            Some(text) => Ok(vec![(f.to_path_buf(), text)]),
            None => Err(ConfigError::Missing {
                path: f.to_path_buf(),
            }),
        };
    }
    let mut places = Vec::new();
    if let Some(d) = config_dir {
        places.push(user_file(d));
    }
    places.push(cwd.join(PROJECT_FILE));
    let mut files = Vec::new();
    for f in places {
        // A default place with nothing there is no file.
        if let Some(text) = read(&f)? {
            files.push((f, text));
        }
    }
    Ok(files)
}

/// The text of a settings file, `None` when nothing is at `path`.
///
/// Anything else that is not a readable regular file — a folder, a FIFO, a device, a link to
/// nothing — is an error naming the file: a settings file that is silently skipped leaves a
/// user wondering why their settings do not apply, and a FIFO must never block startup.
fn read(path: &Path) -> Result<Option<String>, ConfigError> {
    use crate::small_file::ReadError;
    let path_buf = || path.to_path_buf();
    match crate::small_file::read(path, MAX_CONFIG_FILE_BYTES) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|source| ConfigError::NotUtf8 {
                path: path_buf(),
                source,
            }),
        Err(ReadError::NotFound) if std::fs::symlink_metadata(path).is_ok() => {
            Err(ConfigError::DanglingLink { path: path_buf() })
        }
        Err(ReadError::NotFound) => Ok(None),
        Err(source) => Err(ConfigError::Unreadable {
            path: path_buf(),
            source,
        }),
    }
}

/// The settings a file may hold, for "did you mean" (the fields of [`SettingsFile`]).
#[rustfmt::skip]
const SETTINGS: &[&str] = &[
    "provider", "api_key", "api_key_env", "base_url", "timeout", "retry", "model",
    "default_model", "temperature", "models", "escalate", "escalate_on", "prices", "output",
    "output_dir", "concurrency", "rpm", "tpm", "ocr", "grace_period", "checksum", "batch",
    "language", "log_level", "mcp_budget_tokens", "mcp",
];

/// What a settings file may hold. Every field is the value as written (checked later, by its
/// setting's check); a field left out is `None`, a field written empty (`rpm:`) a null value
/// that its check refuses.
#[derive(Deserialize)]
struct SettingsFile {
    #[serde(default, deserialize_with = "present")]
    provider: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    api_key: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    api_key_env: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    base_url: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    timeout: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    retry: Option<Value>,
    /// `model` is the older name of `default_model`.
    #[serde(default, deserialize_with = "present")]
    model: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    default_model: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    temperature: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    models: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    escalate: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    escalate_on: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    prices: Option<Value>,
    /// `output` is the older name of `output_dir`.
    #[serde(default, deserialize_with = "present")]
    output: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    output_dir: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    concurrency: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    rpm: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    tpm: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    ocr: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    grace_period: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    checksum: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    mcp_budget_tokens: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    batch: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    mcp: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    language: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    log_level: Option<Value>,
    /// Keys no setting takes: each is a warning.
    #[serde(flatten)]
    unknown: Mapping,
}

/// One settings file being applied over the layers below it.
struct Layer<'a> {
    path: &'a Path,
    config: &'a mut Config,
}

impl Layer<'_> {
    fn origin(&self) -> Origin {
        Origin::File(self.path.display().to_string())
    }

    /// The value of `setting` if the file gives one, checked; its origin noted under `name`.
    /// [`Layer::take`] for a setting whose key in the file is its name.
    fn one<T>(
        &mut self,
        name: &'static str,
        v: &Option<Value>,
        check: impl Fn(&Value) -> Result<T, String>,
    ) -> Result<Option<T>, ConfigError> {
        self.take(name, name, v, check)
    }

    fn take<T>(
        &mut self,
        name: &'static str,
        setting: &str,
        v: &Option<Value>,
        check: impl Fn(&Value) -> Result<T, String>,
    ) -> Result<Option<T>, ConfigError> {
        let Some(v) = v else { return Ok(None) };
        let value =
            check(v).map_err(|problem| ConfigError::invalid(self.origin(), setting, problem))?;
        self.config.origins.insert(name, self.origin());
        Ok(Some(value))
    }

    /// A section's value, checked as a whole; its origin noted under `name`.
    fn section<T>(
        &mut self,
        name: &'static str,
        v: &Option<Value>,
        check: impl FnOnce(&Value, &mut dyn FnMut(String)) -> Result<T, Problem>,
    ) -> Result<Option<T>, ConfigError> {
        let Some(v) = v else { return Ok(None) };
        let label = self.path.display().to_string();
        let warnings = &mut self.config.warnings;
        let value = check(v, &mut |w| warnings.push(msg!("config file {label}: {w}")))
            .map_err(|p| ConfigError::invalid(self.origin(), p.setting, p.problem))?;
        self.config.origins.insert(name, self.origin());
        Ok(Some(value))
    }

    fn warn(&mut self, w: String) {
        let label = self.path.display();
        self.config.warnings.push(msg!("config file {label}: {w}"));
    }
}

/// Apply the settings file at `path` (its text read) over `config`.
pub(super) fn apply(config: &mut Config, path: &Path, text: &str) -> Result<(), ConfigError> {
    if text.trim().is_empty() {
        return Ok(());
    }
    let path_buf = || path.to_path_buf();
    crate::small_file::check_yaml_nesting(text).map_err(|source| ConfigError::TooDeep {
        path: path_buf(),
        source,
    })?;
    let value: Value = serde_norway::from_str(text).map_err(|source| ConfigError::Syntax {
        path: path_buf(),
        source,
    })?;
    let Value::Mapping(map) = value else {
        return Err(ConfigError::NotAMapping { path: path_buf() });
    };
    let (file, odd): (SettingsFile, _) =
        crate::small_file::fields(map).map_err(|source| ConfigError::Syntax {
            path: path_buf(),
            source,
        })?;
    let mut layer = Layer { path, config };
    for k in file.unknown.keys().filter_map(Value::as_str) {
        let hint = crate::suggest::did_you_mean(k, SETTINGS.iter().copied());
        layer.warn(if hint.is_empty() {
            format!("unknown setting `{k}` ignored")
        } else {
            format!("unknown setting `{k}` ignored; {hint}")
        });
    }
    for _ in odd {
        layer.warn("non-string key ignored".into());
    }
    api(&mut layer, &file)?;
    run(&mut layer, &file)?;
    models(&mut layer, &file)?;
    ui(&mut layer, &file)
}

/// `provider`, `api_key`, `api_key_env`, `base_url`, `timeout`, `retry`.
fn api(l: &mut Layer, f: &SettingsFile) -> Result<(), ConfigError> {
    if let Some(p) = l.one("provider", &f.provider, setting::provider)? {
        l.config.api.provider = p;
    }
    if let Some(k) = l.one("api_key", &f.api_key, setting::api_key)? {
        l.config.api.key = Some(super::ApiKey::new(k));
        if let Some(w) = readable_by_others(l.path) {
            l.config.key_warnings.push(w);
        }
    }
    if let Some(e) = l.one("api_key_env", &f.api_key_env, setting::text)? {
        l.config.api.key_env = e;
    }
    if let Some(u) = l.one("base_url", &f.base_url, setting::base_url)? {
        l.config.api.base_url = u;
    }
    if let Some(t) = l.one("timeout", &f.timeout, setting::timeout)? {
        l.config.api.timeout = t;
    }
    let base = l.config.api.retry;
    if let Some(r) = l.section("retry", &f.retry, |v, w| setting::retry(v, base, w))? {
        l.config.api.retry = r;
    }
    Ok(())
}

/// `output_dir`, `concurrency`, `rpm`, `tpm`, `ocr`, `grace_period`, `checksum`, `batch`.
fn run(l: &mut Layer, f: &SettingsFile) -> Result<(), ConfigError> {
    for (setting, v) in [("output", &f.output), ("output_dir", &f.output_dir)] {
        if let Some(o) = l.take("output_dir", setting, v, setting::text)? {
            l.config.run.output_dir = PathBuf::from(o);
        }
    }
    if let Some(c) = l.one("concurrency", &f.concurrency, setting::concurrency)? {
        l.config.run.concurrency = c;
    }
    if let Some(n) = l.one("rpm", &f.rpm, setting::per_minute)? {
        l.config.run.rpm = Some(n);
    }
    if let Some(n) = l.one("tpm", &f.tpm, setting::per_minute)? {
        l.config.run.tpm = Some(n);
    }
    if let Some(o) = l.one("ocr", &f.ocr, setting::ocr)? {
        l.config.run.ocr = o;
    }
    if let Some(g) = l.one("grace_period", &f.grace_period, setting::grace_period)? {
        l.config.run.grace_period = g;
    }
    if let Some(c) = l.one("checksum", &f.checksum, setting::boolean)? {
        l.config.run.checksum = c;
    }
    if let Some(b) = l.one(
        "mcp_budget_tokens",
        &f.mcp_budget_tokens,
        setting::budget_or_none,
    )? {
        l.config.run.mcp_budget_tokens = b;
    }
    let base = l.config.run.batch;
    if let Some(limits) = l.section("batch", &f.batch, |v, w| setting::batch(v, base, w))? {
        l.config.run.batch = limits;
    }
    // A project's server replaces the user's of the same name; the others stay.
    if let Some(servers) = l.section("mcp", &f.mcp, super::mcp::servers)? {
        l.config.run.mcp_servers.extend(servers);
    }
    Ok(())
}

/// `model`/`default_model`, `temperature`, `models`.
fn models(l: &mut Layer, f: &SettingsFile) -> Result<(), ConfigError> {
    for (setting, v) in [("model", &f.model), ("default_model", &f.default_model)] {
        if let Some(m) = l.take("default_model", setting, v, setting::model_name)? {
            l.config.models.default_model = m;
        }
    }
    if let Some(t) = l.one("temperature", &f.temperature, setting::temperature)? {
        l.config.models.temperature = Some(t);
    }
    if let Some(ladder) = l.one("escalate", &f.escalate, setting::escalate)? {
        l.config.models.escalate = ladder;
    }
    if let Some(kinds) = l.one("escalate_on", &f.escalate_on, setting::escalate_on)? {
        l.config.models.escalate_on = kinds;
    }
    let known = l.config.models.prices.clone();
    if let Some(prices) = l.section("prices", &f.prices, |v, _| setting::prices(v, &known))? {
        l.config.models.prices.extend(prices);
    }
    let table = l.config.models.clone();
    let base = |name: &str| table.budget(name);
    if let Some(budgets) = l.section("models", &f.models, |v, w| setting::models(v, &base, w))? {
        for (name, budget) in budgets {
            l.config.models.configured.insert(name.clone());
            l.config.models.budgets.insert(name, budget);
        }
    }
    Ok(())
}

/// `language`, `log_level`.
fn ui(l: &mut Layer, f: &SettingsFile) -> Result<(), ConfigError> {
    if let Some(lang) = l.one("language", &f.language, setting::language)? {
        l.config.ui.language = lang;
    }
    if let Some(level) = l.one("log_level", &f.log_level, setting::log_level)? {
        l.config.ui.log_level = level;
    }
    Ok(())
}

/// A warning when a file holding an API key can be read by others than its owner.
#[cfg(unix)]
fn readable_by_others(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then(|| {
        format!(
            "config file {} holds an API key but has mode {mode:04o}; run `chmod 600 {}`",
            path.display(),
            path.display()
        )
    })
}

#[cfg(not(unix))]
fn readable_by_others(_: &Path) -> Option<String> {
    None
}
