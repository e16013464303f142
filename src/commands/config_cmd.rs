//! `zhi config show`: the resolved settings and where each came from; the key is redacted.

use super::{Ctx, print_json, print_table};
use crate::cli::ConfigCommand;
use crate::config::{Origin, Overrides};
use crate::exit::{Exit, ExitError};
use crate::i18n::tr;

pub fn run(ctx: &Ctx, cmd: ConfigCommand) -> Result<Exit, ExitError> {
    match cmd {
        ConfigCommand::Show => {
            let c = ctx.config(Overrides::default())?;
            let rows = c.rows();
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
                print_table(
                    &[tr("SETTING", "设置"), tr("VALUE", "值"), tr("FROM", "来源")],
                    &rows,
                );
            }
            Ok(Exit::Success)
        }
    }
}

/// Where a setting came from, in zhi's language (`--json` keeps the English).
fn origin(o: &Origin) -> String {
    match o {
        Origin::Default => tr("default", "默认").to_string(),
        Origin::File(p) => format!("{}{p}", tr("file ", "文件 ")),
        Origin::Env(v) => format!("{}{v}", tr("env ", "环境变量 ")),
        Origin::Flag(v) => format!("{}{v}", tr("flag ", "参数 ")),
    }
}
