//! `zhi config show`: the resolved settings and where each came from; the key is redacted.

use super::{Ctx, print_json, print_table};
use crate::cli::ConfigCommand;
use crate::config::Overrides;
use crate::exit::{Exit, ExitError};

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
                    .map(|(k, v, o)| vec![k.to_string(), v, o.to_string()])
                    .collect();
                print_table(&["SETTING", "VALUE", "FROM"], &rows);
            }
            Ok(Exit::Success)
        }
    }
}
