//! `zhi config show`: the resolved settings and where each came from; the key is redacted.

use super::{Ctx, print_json, print_table};
use crate::cli::ConfigCommand;
use crate::config::{Config, Origin, Overrides};
use crate::exit::{Exit, ExitError};
use std::num::NonZeroU32;

pub(super) fn run(ctx: &Ctx, cmd: ConfigCommand) -> Result<Exit, ExitError> {
    match cmd {
        ConfigCommand::Show => {
            let c = ctx.config(Overrides::default())?;
            let rows = rows(&c);
            if ctx.global.json {
                let mut obj = serde_json::Map::new();
                for (k, v, origin) in &rows {
                    obj.insert(
                        k.to_string(),
                        serde_json::json!({"value": v, "origin": origin.to_string()}),
                    );
                }
                print_json(&serde_json::Value::Object(obj));
            } else {
                let rows: Vec<Vec<String>> = rows
                    .into_iter()
                    .map(|(k, v, o)| {
                        // The values zhi words itself (`unlimited`, `(each skill's)`);
                        // the others are names, paths and numbers.
                        let v = match k {
                            "api_key" | "model" | "rpm" | "tpm" | "retry" | "temperature" => {
                                crate::i18n::localize(&v).into_owned()
                            }
                            _ => v,
                        };
                        vec![k.to_string(), v, origin(&o)]
                    })
                    .collect();
                print_table(&[&t!("SETTING"), &t!("VALUE"), &t!("FROM")], &rows);
            }
            Ok(Exit::Success)
        }
    }
}

/// The settings as (name, value, origin) rows, the key redacted.
fn rows(c: &Config) -> Vec<(&'static str, String, Origin)> {
    let origin = |k: &str| c.origins.get(k).cloned().unwrap_or(Origin::Default);
    let row = |k: &'static str, v: String| (k, v, origin(k));
    let per_minute = |v: Option<NonZeroU32>| v.map_or_else(|| msg!("unlimited"), |n| n.to_string());
    let (api, run, models, ui) = (&c.api, &c.run, &c.models, &c.ui);
    vec![
        row("provider", api.provider.as_str().to_string()),
        row("base_url", crate::secret::url_for_display(&api.base_url)),
        row(
            "api_key",
            match &api.key {
                Some(_) => "<redacted>".to_string(),
                None => format!("(not set; export {})", api.key_env),
            },
        ),
        row("api_key_env", api.key_env.clone()),
        row(
            "model",
            models
                .model_override
                .clone()
                .unwrap_or_else(|| msg!("(each skill's)")),
        ),
        row("default_model", models.default_model.clone()),
        row(
            "escalate",
            if models.escalate.is_empty() {
                "(none)".to_string()
            } else {
                models
                    .escalate
                    .iter()
                    .map(crate::config::EscalateTo::label)
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ),
        row("output_dir", run.output_dir.display().to_string()),
        row("concurrency", run.concurrency.to_string()),
        row("rpm", per_minute(run.rpm)),
        row("tpm", per_minute(run.tpm)),
        row("timeout", format!("{}s", api.timeout.as_secs())),
        row(
            "retry",
            format!(
                "{} attempts, base {}ms, cap {}ms",
                api.retry.max_attempts,
                api.retry.base_delay.as_millis(),
                api.retry.max_delay.as_millis()
            ),
        ),
        row("ocr", run.ocr.as_str().to_string()),
        row("grace_period", format!("{}s", run.grace_period.as_secs())),
        row("checksum", run.checksum.to_string()),
        row(
            "mcp_budget_tokens",
            run.mcp_budget_tokens
                .map_or_else(|| "none".to_string(), |n| n.to_string()),
        ),
        row(
            "temperature",
            models
                .temperature
                .map_or_else(|| msg!("(server default)"), |t| t.to_string()),
        ),
        row("language", ui.language.as_str().to_string()),
        row("log_level", ui.log_level.clone()),
    ]
}

/// Where a setting came from, in zhi's language (`--json` keeps the English).
fn origin(o: &Origin) -> String {
    match o {
        Origin::Default => t!("default"),
        Origin::File(p) => t!("file {path}", path = p),
        Origin::Env(v) => t!("env {var}", var = v),
        Origin::Flag(v) => t!("flag {flag}", flag = v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_never_a_value() {
        let dir = tempfile::tempdir().unwrap();
        let env = |k: &str| (k == "ZHI_API_KEY").then(|| "sk-secret".to_string());
        let c = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();
        let rows = rows(&c);
        assert!(rows.iter().all(|r| !r.1.contains("sk-secret")));
        let key = rows.iter().find(|r| r.0 == "api_key").unwrap();
        assert_eq!(key.1, "<redacted>");
        assert_eq!(key.2, Origin::Env("ZHI_API_KEY".into()));
    }
}
