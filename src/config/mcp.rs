//! `mcp:` in a settings file: the MCP servers whose tools agent skills may call
//! (docs/mcp.md#skills-that-call-mcp-tools).
//!
//! Only a settings file names a server: a skill names a tool of one (`mcp:SERVER/TOOL`), and
//! a document can name nothing. So the command a run may start is always one the person wrote
//! here. A server is a stdio command zhi starts, or a URL it connects to (streamable HTTP),
//! with a bearer token read from a variable the settings name (never the token itself).

use super::setting::{Problem, key_text, shown, text};
use crate::small_file::present;
use serde::Deserialize;
use serde_norway::{Mapping, Value};
use std::collections::BTreeMap;

/// One MCP server a run may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum McpServer {
    /// A command that speaks the protocol on its stdin and stdout.
    Command {
        /// The program (found on `PATH` when it has no `/`).
        command: String,
        args: Vec<String>,
        /// The server's environment besides `PATH` and `HOME`: nothing else of zhi's is
        /// passed (never the API key).
        env: BTreeMap<String, String>,
    },
    /// A server reached over the streamable HTTP transport.
    Url {
        url: String,
        /// The variable that holds the bearer token sent with each request, if any.
        bearer_token_env: Option<String>,
    },
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
    #[serde(default, deserialize_with = "present")]
    bearer_token_env: Option<Value>,
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
    if let Some(url) = &f.url {
        if f.command.is_some() || f.args.is_some() || f.env.is_some() {
            return Err(Problem::new(
                &setting,
                msg!("gives both a `url` and a `command`: a server is one or the other"),
            ));
        }
        return url_server(&setting, url, f.bearer_token_env.as_ref());
    }
    if f.bearer_token_env.is_some() {
        return Err(Problem::new(
            format!("{setting}.bearer_token_env"),
            msg!("is for a server reached by its `url`"),
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
    Ok(McpServer::Command { command, args, env })
}

/// Whether a URL's host is this machine: `localhost` or a loopback address.
pub(crate) fn on_this_machine(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or("");
    host == "localhost"
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether `name` can name an environment variable: letters, digits and `_`, not a digit first.
fn is_env_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| !c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `{url, bearer_token_env}`: an `http` or `https` URL; a token only over `https` or to this
/// machine, for plain HTTP would carry it in the clear.
fn url_server(setting: &str, url: &Value, token_env: Option<&Value>) -> Result<McpServer, Problem> {
    let at = format!("{setting}.url");
    let url = text(url)
        .map_err(|_| Problem::new(&at, msg!("must be a text")))?
        .trim()
        .to_string();
    let parsed = reqwest::Url::parse(&url).ok().filter(|u| {
        matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty())
    });
    let Some(parsed) = parsed else {
        return Err(Problem::new(
            &at,
            msg!("must be an http or https URL, such as http://127.0.0.1:8808/mcp"),
        ));
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(Problem::new(
            &at,
            msg!("holds a user name or password: give the token by `bearer_token_env` instead"),
        ));
    }
    let bearer_token_env = match token_env {
        None => None,
        Some(v) => Some(text(v).ok().filter(|n| is_env_name(n)).ok_or_else(|| {
            Problem::new(
                format!("{setting}.bearer_token_env"),
                msg!("must name an environment variable (letters, digits and `_`)"),
            )
        })?),
    };
    let local = on_this_machine(&parsed);
    if bearer_token_env.is_some() && parsed.scheme() == "http" && !local {
        return Err(Problem::new(
            &at,
            msg!(
                "plain http to another machine would carry the bearer token in the clear: use https"
            ),
        ));
    }
    Ok(McpServer::Url {
        url,
        bearer_token_env,
    })
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
        let McpServer::Command { command, args, env } = &s["files"] else {
            panic!("{s:?}");
        };
        assert_eq!(command, "npx");
        assert_eq!(args, &["-y", "server", "3"]);
        assert_eq!(env["N"], "2");
        let s = parse("web: {url: 'https://tools.example.com/mcp', bearer_token_env: TOOLS_TOKEN}")
            .unwrap();
        assert_eq!(
            s["web"],
            McpServer::Url {
                url: "https://tools.example.com/mcp".into(),
                bearer_token_env: Some("TOOLS_TOKEN".into())
            }
        );
        assert!(parse("l: {url: 'http://127.0.0.1:8808/mcp', bearer_token_env: T}").is_ok());
    }

    #[test]
    fn bad_servers_are_refused_naming_the_setting() {
        for (yaml, setting) in [
            ("[a]", "mcp"),
            ("{a: {args: [x]}}", "mcp.a"),
            ("{a: {command: ''}}", "mcp.a.command"),
            ("{a: {command: x, args: x}}", "mcp.a.args"),
            ("{a: {command: x, env: [x]}}", "mcp.a.env"),
            ("{a: {url: 'ftp://h/mcp'}}", "mcp.a.url"),
            ("{a: {url: 'https://me:secret@h/mcp'}}", "mcp.a.url"),
            (
                "{a: {url: 'http://h/mcp', bearer_token_env: T}}",
                "mcp.a.url",
            ),
            (
                "{a: {url: 'https://h/mcp', bearer_token_env: 'no way'}}",
                "mcp.a.bearer_token_env",
            ),
            ("{a: {url: 'https://h/mcp', command: x}}", "mcp.a"),
            (
                "{a: {command: x, bearer_token_env: T}}",
                "mcp.a.bearer_token_env",
            ),
            ("{'a/b': {command: x}}", "mcp.a/b"),
        ] {
            assert_eq!(parse(yaml).unwrap_err().setting, setting, "{yaml}");
        }
    }
}
