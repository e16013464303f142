//! One check per setting, whatever its source.
//!
//! A flag, an environment variable and a settings file hand their value over as a YAML value
//! (a flag's or a variable's text as a string, a numeric flag as a number), and the same
//! function here accepts or refuses it. `rpm: 0` in a file and `--rpm 0` are therefore refused
//! by the same words; only the place named differs ([`super::ConfigError::Invalid`]).
//!
//! A check returns the problem as a phrase that follows the setting's name: `rpm` + `must be
//! a whole number of at least 1 …`. Sections (`retry`, `batch`, `models`) name the field inside
//! them in a [`Problem`].

use super::OcrChoice;
use super::value::{Concurrency, ModelBudget, Provider, RetryPolicy};
use crate::i18n::Lang;
use crate::small_file::present;
use serde::Deserialize;
use serde_norway::{Mapping, Value};
use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::time::Duration;

/// What is wrong with a value inside a section: the dotted setting (`retry.max_attempts`) and
/// the phrase that follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Problem {
    pub setting: String,
    pub problem: String,
}

impl Problem {
    pub(super) fn new(setting: impl Into<String>, problem: impl Into<String>) -> Self {
        Problem {
            setting: setting.into(),
            problem: problem.into(),
        }
    }
}

/// A single value as text: a string, or a number or boolean as written.
pub(super) fn text(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(msg!("must be a single value, found {}", shown(v))),
    }
}

/// `provider`, `ZHI_PROVIDER`.
pub(super) fn provider(v: &Value) -> Result<Provider, String> {
    let s = text(v)?;
    Provider::parse(&s).ok_or_else(|| {
        // Every provider by name, from the table: `zhipu or openai`.
        let (names, last) = crate::providers::names_but_last();
        msg!("`{value}` is not {names} or {last}", value = s)
    })
}

/// `base_url`, `ZHI_BASE_URL`, `--base-url`: an http(s) URL, without a trailing `/`.
pub(super) fn base_url(v: &Value) -> Result<String, String> {
    let s = text(v)?;
    let url = s.trim_end_matches('/');
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(url.to_string())
    } else {
        Err(msg!("`{s}` must start with http:// or https://"))
    }
}

/// `api_key`, and the variable `api_key_env` names: surrounding blanks are no part of a key.
pub(super) fn api_key(v: &Value) -> Result<String, String> {
    Ok(text(v)?.trim().to_string())
}

/// `language`, `ZHI_LANGUAGE`.
pub(super) fn language(v: &Value) -> Result<Lang, String> {
    let s = text(v)?;
    Lang::parse(&s).ok_or_else(|| msg!("`{s}` is not en or zh"))
}

/// The levels `log_level` and `ZHI_LOG_LEVEL` take. Anything else used to fall back to
/// warnings without a word, which hid the level the user asked for.
pub(crate) const LOG_LEVELS: &[&str] = &["error", "warn", "info", "debug", "trace", "off"];

/// `log_level`, `ZHI_LOG_LEVEL`: one of [`LOG_LEVELS`] (`warning` is `warn`).
pub(super) fn log_level(v: &Value) -> Result<String, String> {
    let s = text(v)?;
    let level = s.trim().to_ascii_lowercase();
    let level = if level == "warning" {
        "warn".to_string()
    } else {
        level
    };
    if LOG_LEVELS.contains(&level.as_str()) {
        Ok(level)
    } else {
        Err(msg!("`{s}` is not one of {}", LOG_LEVELS.join(", ")))
    }
}

/// A yes-or-no setting (`checksum`): `true` or `false`.
pub(super) fn boolean(v: &Value) -> Result<bool, String> {
    match v {
        Value::Bool(b) => Ok(*b),
        _ => Err(msg!("must be true or false, found {}", shown(v))),
    }
}

/// `timeout`, `--timeout`: whole seconds, at least 1.
pub(super) fn timeout(v: &Value) -> Result<Duration, String> {
    match v.as_u64() {
        Some(0) => Err("must be at least 1 second".into()),
        Some(t) => Ok(Duration::from_secs(t)),
        None => Err(msg!("must be a whole number, found {}", shown(v))),
    }
}

/// `mcp_budget_tokens`: a whole number of tokens, at least 1, or `none` for no budget.
pub(super) fn budget_or_none(v: &Value) -> Result<Option<u64>, String> {
    if v.as_str()
        .is_some_and(|s| s.trim().eq_ignore_ascii_case("none"))
    {
        return Ok(None);
    }
    match v.as_u64() {
        Some(0) => Err(msg!("must be at least 1, or none, found {}", shown(v))),
        Some(n) => Ok(Some(n)),
        None => Err(msg!("must be a whole number or none, found {}", shown(v))),
    }
}

/// `grace_period`: whole seconds (0 cancels in-flight jobs at once).
pub(super) fn grace_period(v: &Value) -> Result<Duration, String> {
    v.as_u64()
        .map(Duration::from_secs)
        .ok_or_else(|| msg!("must be a whole number, found {}", shown(v)))
}

/// `concurrency`, `-j`: a number from 1 to 1024, or `auto`.
pub(super) fn concurrency(v: &Value) -> Result<Concurrency, String> {
    let s = text(v)?;
    let t = s.trim();
    if t.eq_ignore_ascii_case("auto") {
        return Ok(Concurrency::Auto);
    }
    match t.parse::<usize>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(Concurrency::Fixed(n)),
        _ => Err(msg!("`{t}` must be a number from 1 to 1024, or auto")),
    }
}

/// `rpm`/`tpm`, `--rpm`/`--tpm`: a whole number from 1 to 2^32 − 1. Zero is refused from
/// every source: no limit is said by leaving the setting out, never by a number that would
/// otherwise mean "no requests at all".
pub(super) fn per_minute(v: &Value) -> Result<NonZeroU32, String> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .and_then(NonZeroU32::new)
        .ok_or_else(|| {
            format!(
                "must be a whole number of at least 1 and at most {} (leave it out for no limit), found {}",
                u32::MAX,
                shown(v)
            )
        })
}

/// `ocr`: one of the engines `--ocr` takes.
pub(super) fn ocr(v: &Value) -> Result<OcrChoice, String> {
    let s = text(v)?;
    s.trim().parse::<OcrChoice>().map_err(|_| {
        format!("`{s}` is not one of auto, tesseract, glm-ocr, file-extract, vision, off")
    })
}

/// `temperature`: a number from 0 to 2.
pub(super) fn temperature(v: &Value) -> Result<f32, String> {
    v.as_f64()
        .filter(|t| (0.0..=2.0).contains(t))
        .map(|t| t as f32)
        .ok_or_else(|| "must be a number from 0 to 2".into())
}

/// `escalate`: a list of `MODEL`, `MODEL@BASE_URL` or `{model, base_url, api_key_env}`.
pub(super) fn escalate(v: &Value) -> Result<Vec<super::EscalateTo>, String> {
    let Value::Sequence(items) = v else {
        return Err(msg!(
            "must be a list of models: MODEL, MODEL@BASE_URL, or a mapping with model, base_url and api_key_env"
        ));
    };
    let mut out = Vec::new();
    for item in items {
        match item {
            Value::String(s) => out.push(super::EscalateTo::parse(s)?),
            Value::Mapping(m) => {
                let get = |k: &str| {
                    m.get(Value::String(k.into()))
                        .and_then(Value::as_str)
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                };
                let model = get("model").ok_or_else(|| msg!("an entry has no `model`"))?;
                let limit = |k: &str| -> Result<Option<NonZeroU32>, String> {
                    match m.get(Value::String(k.into())) {
                        None | Some(Value::Null) => Ok(None),
                        Some(v) => v
                            .as_u64()
                            .and_then(|n| u32::try_from(n).ok())
                            .and_then(NonZeroU32::new)
                            .map(Some)
                            .ok_or_else(|| {
                                format!("`{field}` must be a whole number of at least 1", field = k)
                            }),
                    }
                };
                out.push(super::EscalateTo {
                    model,
                    base_url: get("base_url"),
                    api_key_env: get("api_key_env"),
                    rpm: limit("rpm")?,
                    tpm: limit("tpm")?,
                });
            }
            _ => {
                return Err(msg!(
                    "each entry must be a model name or a mapping with `model`"
                ));
            }
        }
    }
    Ok(out)
}

/// `escalate_on`: error kinds escalated besides the answer checks'; only kinds a stronger
/// model could mend (`doubt`, `content_filter`, `max_turns`, `too_large`): never the key, the
/// quota, rate limits or the network. The list replaces the default (`[doubt]`).
pub(super) fn escalate_on(v: &Value) -> Result<Vec<crate::error::ErrorKind>, String> {
    use crate::error::ErrorKind as K;
    let Value::Sequence(items) = v else {
        return Err(msg!("must be a list of error kinds"));
    };
    let mut out = Vec::new();
    for item in items {
        let name = item.as_str().unwrap_or_default().trim().to_string();
        let kind: Option<K> = match name.as_str() {
            "doubt" => Some(K::Doubtful),
            _ => serde_norway::from_value(Value::String(name.clone())).ok(),
        };
        match kind {
            Some(k @ (K::ContentFilter | K::MaxTurns | K::TooLarge | K::Doubtful)) => out.push(k),
            Some(K::MissingOutput | K::Truncated | K::InvalidOutput | K::ContextTooLong) => {}
            _ => {
                return Err(msg!(
                    "`{name}` cannot be escalated: only doubt, content_filter, max_turns and too_large may be listed (the answer checks' kinds always are)"
                ));
            }
        }
    }
    Ok(out)
}

/// `prices: {MODEL: {input, output, currency}}`: per million tokens; `currency` defaults to
/// the model's default one, else CNY.
pub(super) fn prices(
    v: &Value,
    base: &BTreeMap<String, super::Price>,
) -> Result<BTreeMap<String, super::Price>, Problem> {
    let Value::Mapping(m) = v else {
        return Err(Problem::new(
            "prices",
            msg!("must be a mapping of model names to input, output and currency"),
        ));
    };
    let mut out = BTreeMap::new();
    for (name, entry) in m {
        let name = name.as_str().unwrap_or_default().to_string();
        let setting = format!("prices.{name}");
        let number = |k: &str| {
            entry
                .get(k)
                .and_then(Value::as_f64)
                .filter(|n| *n >= 0.0 && n.is_finite())
                .ok_or_else(|| {
                    Problem::new(
                        &setting,
                        format!(
                            "`{field}` must be a number of at least 0 (per million tokens)",
                            field = k
                        ),
                    )
                })
        };
        let currency = entry
            .get("currency")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| base.get(&name).map(|p| p.currency.clone()))
            .unwrap_or_else(|| "CNY".into());
        out.insert(
            name.clone(),
            super::Price {
                input: number("input")?,
                output: number("output")?,
                currency,
            },
        );
    }
    Ok(out)
}

/// `model`/`default_model`, `ZHI_DEFAULT_MODEL`.
pub(super) fn model_name(v: &Value) -> Result<String, String> {
    text(v)
}

/// A section's fields: the known ones by name; the rest, and keys that are no names, each a
/// warning.
fn section<T: for<'de> Deserialize<'de>>(
    name: &str,
    v: &Value,
    what: &str,
    unknown: impl Fn(&T) -> &Mapping,
    warn: &mut dyn FnMut(String),
) -> Result<T, Problem> {
    let Value::Mapping(m) = v else {
        return Err(Problem::new(
            name,
            format!("must be {what}, found {}", shown(v)),
        ));
    };
    let (fields, odd): (T, _) =
        crate::small_file::fields(m.clone()).map_err(|e| Problem::new(name, e.to_string()))?;
    for k in unknown(&fields).keys().chain(&odd) {
        warn(format!("unknown field `{name}.{}` ignored", key_text(k)));
    }
    Ok(fields)
}

/// A mapping key as a user wrote it.
pub(super) fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        other => text(other).unwrap_or_else(|_| "?".into()),
    }
}

#[derive(Deserialize)]
struct RetryFields {
    #[serde(default, deserialize_with = "present")]
    max_attempts: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    base_delay_ms: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    max_delay_ms: Option<Value>,
    #[serde(flatten)]
    unknown: Mapping,
}

/// `retry: {max_attempts, base_delay_ms, max_delay_ms}` over `base`.
pub(super) fn retry(
    v: &Value,
    base: RetryPolicy,
    warn: &mut dyn FnMut(String),
) -> Result<RetryPolicy, Problem> {
    let f: RetryFields = section(
        "retry",
        v,
        &msg!("a mapping"),
        |f: &RetryFields| &f.unknown,
        warn,
    )?;
    let whole = |field: &str, v: &Value| {
        v.as_u64()
            .ok_or_else(|| Problem::new(format!("retry.{field}"), "must be a whole number"))
    };
    let mut r = base;
    if let Some(v) = &f.max_attempts {
        let n = whole("max_attempts", v)?;
        r.max_attempts = u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
            Problem::new(
                "retry.max_attempts",
                format!("{n} must be at least 1 (the first attempt counts)"),
            )
        })?;
    }
    if let Some(v) = &f.base_delay_ms {
        r.base_delay = Duration::from_millis(whole("base_delay_ms", v)?);
    }
    if let Some(v) = &f.max_delay_ms {
        r.max_delay = Duration::from_millis(whole("max_delay_ms", v)?);
    }
    if r.max_delay < r.base_delay {
        return Err(Problem::new(
            "retry.max_delay_ms",
            format!(
                "{} is below retry.base_delay_ms {}: the longest wait cannot be shorter than the first",
                r.max_delay.as_millis(),
                r.base_delay.as_millis()
            ),
        ));
    }
    Ok(r)
}

#[derive(Deserialize)]
struct BatchFields {
    #[serde(default, deserialize_with = "present")]
    max_requests: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    max_bytes: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    max_stalled_runs: Option<Value>,
    #[serde(flatten)]
    unknown: Mapping,
}

/// `batch: {max_requests, max_bytes, max_stalled_runs}` over `base`: the sizes at least 1, at
/// most what the providers take in one file; the stalled runs from 1 to 1,000.
pub(super) fn batch(
    v: &Value,
    base: super::BatchLimits,
    warn: &mut dyn FnMut(String),
) -> Result<super::BatchLimits, Problem> {
    let f: BatchFields = section(
        "batch",
        v,
        &msg!("a mapping"),
        |f: &BatchFields| &f.unknown,
        warn,
    )?;
    let limit = |field: &str, v: &Value, max: u64| {
        let setting = format!("batch.{field}");
        let n = v
            .as_u64()
            .filter(|n| *n >= 1)
            .ok_or_else(|| Problem::new(&setting, "must be a whole number of at least 1"))?;
        if n > max {
            return Err(Problem::new(
                &setting,
                format!(
                    "{n} is above the provider's limit ({} requests, {} bytes a file)",
                    super::BATCH_MAX_REQUESTS,
                    super::BATCH_MAX_BYTES
                ),
            ));
        }
        Ok(n)
    };
    let mut out = base;
    if let Some(v) = &f.max_requests {
        out.max_requests = limit("max_requests", v, super::BATCH_MAX_REQUESTS as u64)? as usize;
    }
    if let Some(v) = &f.max_bytes {
        out.max_bytes = limit("max_bytes", v, super::BATCH_MAX_BYTES)?;
    }
    if let Some(v) = &f.max_stalled_runs {
        out.max_stalled_runs = v
            .as_u64()
            .filter(|n| (1..=1000).contains(n))
            .map(|n| n as u32)
            .ok_or_else(|| {
                Problem::new(
                    "batch.max_stalled_runs",
                    msg!("must be a whole number from 1 to 1000"),
                )
            })?;
    }
    Ok(out)
}

#[derive(Deserialize)]
struct BudgetFields {
    #[serde(default, deserialize_with = "present")]
    context_window: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    max_output: Option<Value>,
    #[serde(flatten)]
    unknown: Mapping,
}

/// `models: {NAME: {context_window, max_output}}`: each model's budget over what `base` says
/// of it. A zero, a word or an answer as large as the whole window would make every document
/// of that model fail (or be cut into pieces of nothing), so each is refused here, by name.
pub(super) fn models(
    v: &Value,
    base: &dyn Fn(&str) -> ModelBudget,
    warn: &mut dyn FnMut(String),
) -> Result<Vec<(String, ModelBudget)>, Problem> {
    let Value::Mapping(m) = v else {
        return Err(Problem::new(
            "models",
            format!("must map model names to budgets, found {}", shown(v)),
        ));
    };
    let mut out = Vec::new();
    for (name, budget) in m {
        let Value::String(name) = name else {
            return Err(Problem::new(
                "models",
                format!(
                    "must map model names to budgets; {} is no name",
                    shown(name)
                ),
            ));
        };
        out.push((name.clone(), model_budget(name, budget, base(name), warn)?));
    }
    Ok(out)
}

fn model_budget(
    name: &str,
    v: &Value,
    base: ModelBudget,
    warn: &mut dyn FnMut(String),
) -> Result<ModelBudget, Problem> {
    let setting = format!("models.{name}");
    let f: BudgetFields = section(
        &setting,
        v,
        "a mapping such as {context_window: 128000, max_output: 4096}",
        |f: &BudgetFields| &f.unknown,
        warn,
    )?;
    let tokens = |field: &str, v: &Value| {
        let setting = format!("models.{name}.{field}");
        let n = v.as_u64().ok_or_else(|| {
            Problem::new(
                &setting,
                format!("must be a whole number of tokens, found {}", shown(v)),
            )
        })?;
        u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
            Problem::new(&setting, format!("{n} must be at least 1 and fit 32 bits"))
        })
    };
    let mut b = base;
    if let Some(v) = &f.context_window {
        b.context_window = tokens("context_window", v)?;
    }
    if let Some(v) = &f.max_output {
        b.max_output = tokens("max_output", v)?;
    }
    if b.max_output >= b.context_window {
        return Err(Problem::new(
            format!("models.{name}.max_output"),
            format!(
                "{} must be smaller than context_window {} (the document shares the window with the answer)",
                b.max_output, b.context_window
            ),
        ));
    }
    Ok(b)
}

/// A YAML value as a user wrote it, for messages.
pub(super) fn shown(v: &Value) -> String {
    match v {
        Value::Null => msg!("nothing"),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("`{s}`"),
        Value::Sequence(_) => msg!("a list"),
        Value::Mapping(_) => msg!("a mapping"),
        Value::Tagged(_) => msg!("a tagged value"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_per_minute_is_refused_as_text_and_as_a_number() {
        assert!(per_minute(&Value::from(0u64)).is_err());
        assert!(per_minute(&Value::from(u64::from(u32::MAX) + 1)).is_err());
        assert_eq!(per_minute(&Value::from(7u64)).unwrap().get(), 7);
        // A number written as text is no number (as in a settings file).
        assert!(per_minute(&Value::String("7".into())).is_err());
    }

    #[test]
    fn concurrency_and_levels() {
        assert_eq!(
            concurrency(&Value::String("AUTO".into())),
            Ok(Concurrency::Auto)
        );
        assert_eq!(concurrency(&Value::from(8u64)), Ok(Concurrency::Fixed(8)));
        assert!(concurrency(&Value::String("0".into())).is_err());
        assert_eq!(log_level(&Value::String("Warning".into())).unwrap(), "warn");
        assert!(log_level(&Value::String("loud".into())).is_err());
    }

    #[test]
    fn sections_collect_unknown_fields() {
        let v: Value = serde_norway::from_str("{max_attempts: 2, jitter: true}").unwrap();
        let mut warnings = Vec::new();
        let r = retry(&v, RetryPolicy::default(), &mut |w| warnings.push(w)).unwrap();
        assert_eq!(r.max_attempts, 2);
        assert_eq!(warnings, ["unknown field `retry.jitter` ignored"]);
    }
}
