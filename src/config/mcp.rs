//! `mcp:` in a settings file: the MCP servers whose tools agent skills may call
//! (docs/mcp.md#skills-that-call-mcp-tools).
//!
//! Only a settings file names a server: a skill names a tool of one (`mcp:SERVER/TOOL`), and
//! a document can name nothing. So the command a run may start is always one the person wrote
//! here. Each server is a stdio command; `url` (streamable HTTP) is refused with a message
//! that says so, rather than ignored.

use super::setting::{Problem, key_text, shown, text};
use crate::small_file::present;
use serde::Deserialize;
use serde_norway::{Mapping, Value};
use std::collections::BTreeMap;

/// One MCP server a run may start: a command that speaks the protocol on its stdin and stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct McpServer {
    /// The program (found on `PATH` when it has no `/`).
    pub command: String,
    pub args: Vec<String>,
    /// The server's environment besides `PATH` and `HOME`: nothing else of zhi's is passed
    /// (never the API key).
    pub env: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct ServerFields {
    #[serde(default, deserialize_with = "present")]
    command: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    args: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    env: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    url: Option<Value>,
    #[serde(flatten)]
    unknown: Mapping,
}

/// Whether `name` may name a server: letters, digits, `_` and `-`, at most 64 characters.
fn is_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `mcp: {NAME: {command, args, env}}`.
pub(super) fn servers(
    v: &Value,
    warn: &mut dyn FnMut(String),
) -> Result<BTreeMap<String, McpServer>, Problem> {
    let Value::Mapping(m) = v else {
        return Err(Problem::new(
            "mcp",
            msg!(
                "must be a mapping of server names to a `command` with `args` and `env`, found {found}",
                found = shown(v)
            ),
        ));
    };
    let mut out = BTreeMap::new();
    for (name, entry) in m {
        let name = key_text(name);
        if !is_server_name(&name) {
            return Err(Problem::new(
                format!("mcp.{name}"),
                msg!("a server's name is letters, digits, `_` and `-`, at most 64 characters"),
            ));
        }
        out.insert(name.clone(), server(&name, entry, warn)?);
    }
    Ok(out)
}

fn server(name: &str, v: &Value, warn: &mut dyn FnMut(String)) -> Result<McpServer, Problem> {
    let setting = format!("mcp.{name}");
    let Value::Mapping(m) = v else {
        return Err(Problem::new(
            &setting,
            msg!(
                "must be a mapping with `command`, found {found}",
                found = shown(v)
            ),
        ));
    };
    let (f, odd): (ServerFields, _) =
        crate::small_file::fields(m.clone()).map_err(|e| Problem::new(&setting, e.to_string()))?;
    for k in f.unknown.keys().chain(&odd) {
        warn(format!("unknown field `{setting}.{}` ignored", key_text(k)));
    }
    if f.url.is_some() {
        return Err(Problem::new(
            format!("{setting}.url"),
            msg!(
                "servers over HTTP are not supported yet: give the `command` that starts the server on stdio"
            ),
        ));
    }
    let command = match &f.command {
        Some(c) => text(c)
            .ok()
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| {
                Problem::new(
                    format!("{setting}.command"),
                    msg!("must be a non-empty text"),
                )
            })?,
        None => {
            return Err(Problem::new(
                &setting,
                msg!("names no `command` to start the server"),
            ));
        }
    };
    let args = match &f.args {
        None => Vec::new(),
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|a| text(a).map_err(|_| ()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|()| {
                Problem::new(format!("{setting}.args"), msg!("must be a list of texts"))
            })?,
        Some(_) => {
            return Err(Problem::new(
                format!("{setting}.args"),
                msg!("must be a list of texts"),
            ));
        }
    };
    let env = match &f.env {
        None => BTreeMap::new(),
        Some(Value::Mapping(m)) => {
            let mut env = BTreeMap::new();
            for (k, v) in m {
                let value = text(v).map_err(|_| {
                    Problem::new(
                        format!("{setting}.env.{}", key_text(k)),
                        msg!("must be a text"),
                    )
                })?;
                env.insert(key_text(k), value);
            }
            env
        }
        Some(_) => {
            return Err(Problem::new(
                format!("{setting}.env"),
                msg!("must be a mapping of variable names to texts"),
            ));
        }
    };
    Ok(McpServer { command, args, env })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<BTreeMap<String, McpServer>, Problem> {
        let v: Value = serde_norway::from_str(yaml).unwrap();
        servers(&v, &mut |_| {})
    }

    #[test]
    fn servers_are_commands_with_args_and_env() {
        let s =
            parse("files: {command: npx, args: [-y, server, 3], env: {TOKEN: abc, N: 2}}").unwrap();
        let f = &s["files"];
        assert_eq!(f.command, "npx");
        assert_eq!(f.args, ["-y", "server", "3"]);
        assert_eq!(f.env["N"], "2");
    }

    #[test]
    fn bad_servers_are_refused_naming_the_setting() {
        for (yaml, setting) in [
            ("[a]", "mcp"),
            ("{a: {args: [x]}}", "mcp.a"),
            ("{a: {command: ''}}", "mcp.a.command"),
            ("{a: {command: x, args: x}}", "mcp.a.args"),
            ("{a: {command: x, env: [x]}}", "mcp.a.env"),
            ("{a: {url: 'http://h/mcp'}}", "mcp.a.url"),
            ("{'a/b': {command: x}}", "mcp.a/b"),
        ] {
            assert_eq!(parse(yaml).unwrap_err().setting, setting, "{yaml}");
        }
    }
}
