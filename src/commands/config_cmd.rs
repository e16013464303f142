//! `zhi config show`: the resolved settings and where each came from; the key is redacted.

use super::{Ctx, print_json};
use crate::cli::ConfigCommand;
use crate::config::{Concurrency, Config, Origin, Overrides};
use crate::exit::{Exit, ExitError};
use serde_json::{Value, json};
use std::num::NonZeroU32;

pub(super) fn run(ctx: &Ctx, cmd: ConfigCommand) -> Result<Exit, ExitError> {
    match cmd {
        ConfigCommand::Show => {
            let c = ctx.config(Overrides::default())?;
            let rows = rows(&c);
            if ctx.global.json {
                let mut obj = serde_json::Map::new();
                for r in &rows {
                    obj.insert(
                        r.name.to_string(),
                        serde_json::json!({"value": r.typed, "origin": r.origin.to_string()}),
                    );
                }
                print_json(&serde_json::Value::Object(obj));
            } else {
                let rows: Vec<Vec<String>> = rows
                    .into_iter()
                    .map(|r| {
                        // The values zhi words itself (`unlimited`, `(each skill's)`, `(none)`)
                        // are said in zhi's language; names, paths and numbers stay.
                        let shown = crate::i18n::localize(&r.shown).into_owned();
                        vec![r.name.to_string(), shown, origin(&r.origin)]
                    })
                    .collect();
                use super::table::Fit;
                super::print_table_fitted(
                    &[&t!("SETTING"), &t!("VALUE"), &t!("FROM")],
                    &[Fit::Keep, Fit::Wrap, Fit::Elide],
                    &rows,
                    &[],
                );
            }
            Ok(Exit::Success)
        }
    }
}

/// One setting: its name, its value as a person reads it and as `--json` gives it (numbers as
/// numbers, seconds as seconds, `null` for no limit or nothing set), and where it came from.
struct Row {
    name: &'static str,
    shown: String,
    typed: Value,
    origin: Origin,
}

/// The settings, the key redacted.
/// The MCP servers skills may call (docs/mcp.md): their names, and as JSON their commands; an
/// `env` may hold a server's own credentials, so only its variables' names are shown.
fn mcp_servers(c: &Config) -> (String, Value) {
    use crate::config::McpServer;
    let servers = &c.run.mcp_servers;
    let shown = if servers.is_empty() {
        msg!("(none)")
    } else {
        servers.keys().cloned().collect::<Vec<_>>().join(", ")
    };
    let typed = servers
        .iter()
        .map(|(name, s)| {
            let v = match s {
                McpServer::Command { command, args, env } => {
                    let env: Vec<&String> = env.keys().collect();
                    json!({"command": command, "args": args, "env": env})
                }
                McpServer::Url {
                    url,
                    bearer_token_env,
                } => json!({"url": url, "bearer_token_env": bearer_token_env}),
            };
            (name.clone(), v)
        })
        .collect::<serde_json::Map<_, _>>();
    (shown, typed.into())
}

fn rows(c: &Config) -> Vec<Row> {
    let origin = |k: &str| c.origins.get(k).cloned().unwrap_or(Origin::Default);
    let row = |name: &'static str, shown: String, typed: Value| Row {
        name,
        shown,
        typed,
        origin: origin(name),
    };
    let text = |name: &'static str, v: String| row(name, v.clone(), Value::String(v));
    let per_minute = |name: &'static str, v: Option<NonZeroU32>| {
        row(
            name,
            v.map_or_else(|| msg!("unlimited"), |n| n.to_string()),
            v.map_or(Value::Null, |n| json!(n.get())),
        )
    };
    let secs = |name: &'static str, d: std::time::Duration| {
        row(name, format!("{}s", d.as_secs()), json!(d.as_secs()))
    };
    let (api, run, models, ui) = (&c.api, &c.run, &c.models, &c.ui);
    let escalate: Vec<String> = models
        .escalate
        .iter()
        .map(crate::config::EscalateTo::label)
        .collect();
    let retry = &api.retry;
    vec![
        text("provider", api.provider.as_str().to_string()),
        text("base_url", crate::secret::url_for_display(&api.base_url)),
        match &api.key {
            Some(_) => text("api_key", "<redacted>".to_string()),
            None => {
                let var = &api.key_env;
                row("api_key", msg!("(not set; export {var})"), Value::Null)
            }
        },
        text("api_key_env", api.key_env.clone()),
        match &models.model_override {
            Some(m) => text("model", m.clone()),
            None => row("model", msg!("(each skill's)"), Value::Null),
        },
        text("default_model", models.default_model.clone()),
        row(
            "escalate",
            if escalate.is_empty() {
                msg!("(none)")
            } else {
                escalate.join(", ")
            },
            json!(escalate),
        ),
        {
            let (shown, typed) = mcp_servers(c);
            row("mcp", shown, typed)
        },
        text("output_dir", run.output_dir.display().to_string()),
        row(
            "concurrency",
            run.concurrency.to_string(),
            match run.concurrency {
                Concurrency::Fixed(n) => json!(n),
                Concurrency::Auto => json!("auto"),
            },
        ),
        per_minute("rpm", run.rpm),
        per_minute("tpm", run.tpm),
        secs("timeout", api.timeout),
        row(
            "retry",
            msg!(
                "{n} attempts, base {base}ms, cap {max}ms",
                n = retry.max_attempts,
                base = retry.base_delay.as_millis(),
                max = retry.max_delay.as_millis()
            ),
            json!({
                "max_attempts": retry.max_attempts,
                "base_delay_ms": retry.base_delay.as_millis() as u64,
                "max_delay_ms": retry.max_delay.as_millis() as u64,
            }),
        ),
        text("ocr", run.ocr.as_str().to_string()),
        secs("grace_period", run.grace_period),
        row("checksum", run.checksum.to_string(), json!(run.checksum)),
        match models.temperature {
            Some(t) => row("temperature", t.to_string(), json!(t)),
            None => row("temperature", msg!("(server default)"), Value::Null),
        },
        match run.mcp_budget_tokens {
            Some(n) => row("mcp_budget_tokens", n.to_string(), json!(n)),
            None => row("mcp_budget_tokens", "none".to_string(), Value::Null),
        },
        text("language", ui.language.as_str().to_string()),
        text("log_level", ui.log_level.clone()),
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
        assert!(rows.iter().all(|r| !r.shown.contains("sk-secret")));
        assert!(
            rows.iter()
                .all(|r| !r.typed.to_string().contains("sk-secret"))
        );
        let key = rows.iter().find(|r| r.name == "api_key").unwrap();
        assert_eq!(key.shown, "<redacted>");
        assert_eq!(key.origin, Origin::Env("ZHI_API_KEY".into()));
    }
}
