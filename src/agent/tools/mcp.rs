//! Tools of MCP servers, called by agent skills (docs/mcp.md#skills-that-call-mcp-tools).
//!
//! A server is one the settings name (`mcp:`), started as a child process (or, for a `url`,
//! connected to over streamable HTTP) the first time a job of the run needs it, shared by every
//! job, and stopped (its session closed) when the run ends ([`McpServers::shutdown`]; the child
//! is also killed if the handle is dropped). A child's environment is only `PATH`, `HOME` and
//! what the settings give: never zhi's API key; a URL gets the bearer token its settings name
//! the variable of, and nothing else. A call is held to
//! [`MCP_CALL_TIMEOUT`] and its answer to [`READ_CAP_BYTES`]; whatever goes wrong (the server
//! does not start, dies, errs, times out) comes back to the model as an error text, never as
//! a failed job.

use super::{READ_CAP_BYTES, ToolOutcome, cap_text};
use crate::config::McpServer;
use crate::llm::ToolDef;
use crate::skills::{McpTool, Skill};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents, Tool};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::OnceCell;

/// How long one call of an MCP tool may take.
pub(crate) const MCP_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server may take to start and list its tools.
const MCP_START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a server may take to exit once its stdin is closed, before it is killed.
const MCP_STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// The start of the function name of an MCP tool: `mcp__SERVER__TOOL`.
pub(crate) const MCP_FUNCTION_PREFIX: &str = "mcp__";

/// A server once started, or why it could not be.
type Started = Result<Arc<Connection>, String>;

/// The MCP servers of one run: those the settings name, each started at most once.
#[derive(Default)]
pub(crate) struct McpServers {
    configured: BTreeMap<String, McpServer>,
    started: Mutex<BTreeMap<String, Arc<OnceCell<Started>>>>,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers")
            .field("configured", &self.configured.keys().collect::<Vec<_>>())
            .finish()
    }
}

struct Connection {
    peer: rmcp::Peer<RoleClient>,
    tools: Vec<Tool>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
}

/// The function name a model calls an MCP tool by: `mcp__SERVER__TOOL`, every character but
/// letters, digits, `_` and `-` made `_`, at most 64 characters (what chat APIs take).
pub(crate) fn function_name(t: McpTool<'_>) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut name = format!(
        "{MCP_FUNCTION_PREFIX}{}__{}",
        clean(t.server),
        clean(t.tool)
    );
    name.truncate(64);
    name
}

impl McpServers {
    pub(crate) fn new(configured: BTreeMap<String, McpServer>) -> McpServers {
        McpServers {
            configured,
            started: Mutex::default(),
        }
    }

    fn cell(&self, server: &str) -> Arc<OnceCell<Started>> {
        let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
        started.entry(server.to_string()).or_default().clone()
    }

    async fn connect(&self, server: &str) -> Started {
        let cell = self.cell(server);
        cell.get_or_init(|| async {
            let Some(spec) = self.configured.get(server) else {
                return Err(format!("no MCP server `{server}` in the settings"));
            };
            let started = start(spec).await;
            if let Err(e) = &started {
                tracing::warn!(
                    "{}",
                    msg!("MCP server `{server}` did not start: {reason}", reason = e)
                );
            }
            started
        })
        .await
        .clone()
    }

    /// Start the servers `skill` names, if they are not yet: their tools' schemas are then
    /// known when the model is offered them.
    pub(crate) async fn prepare(&self, skill: &Skill) {
        for t in skill.mcp_tools() {
            let _ = self.connect(t.server).await;
        }
    }

    /// The functions `skill`'s MCP tools are offered as: each with the description and input
    /// schema its server lists; a tool whose server did not start, or lists no such tool, is
    /// offered with an open schema, and a call says what is wrong.
    pub(crate) fn defs(&self, skill: &Skill) -> Vec<ToolDef> {
        skill
            .mcp_tools()
            .map(|t| {
                let listed = self.cell(t.server).get().and_then(|s| {
                    let conn = s.as_ref().ok()?;
                    conn.tools.iter().find(|x| x.name == t.tool).cloned()
                });
                let (description, schema) = match listed {
                    Some(tool) => (
                        tool.description.map(|d| d.to_string()).unwrap_or_default(),
                        Value::Object(tool.input_schema.as_ref().clone()),
                    ),
                    None => (String::new(), json!({"type": "object"})),
                };
                let description = if description.trim().is_empty() {
                    format!("The tool `{}` of the MCP server `{}`.", t.tool, t.server)
                } else {
                    description
                };
                ToolDef::function(function_name(t), description, schema)
            })
            .collect()
    }

    /// Run the call of `function` if it is one of `skill`'s MCP tools (`None` otherwise).
    pub(crate) async fn call(
        &self,
        skill: &Skill,
        function: &str,
        arguments: &str,
    ) -> Option<ToolOutcome> {
        let t = skill.mcp_tools().find(|t| function_name(*t) == function)?;
        Some(self.call_tool(t, arguments).await)
    }

    async fn call_tool(&self, t: McpTool<'_>, arguments: &str) -> ToolOutcome {
        let arguments = match parse_arguments(arguments) {
            Ok(a) => a,
            Err(outcome) => return outcome,
        };
        let conn = match self.connect(t.server).await {
            Ok(c) => c,
            Err(e) => {
                return ToolOutcome::failed(format!(
                    "the MCP server `{}` is not available: {e}",
                    t.server
                ));
            }
        };
        if !conn.tools.iter().any(|x| x.name == t.tool) {
            let names: Vec<&str> = conn.tools.iter().map(|x| x.name.as_ref()).collect();
            return ToolOutcome::failed(format!(
                "the MCP server `{}` has no tool `{}` (its tools are: {})",
                t.server,
                t.tool,
                names.join(", ")
            ));
        }
        let mut params = CallToolRequestParams::new(t.tool.to_string());
        params.arguments = Some(arguments);
        match tokio::time::timeout(MCP_CALL_TIMEOUT, conn.peer.call_tool(params)).await {
            Err(_) => ToolOutcome::failed(format!(
                "the MCP tool `{}` of `{}` did not answer within {} s",
                t.tool,
                t.server,
                MCP_CALL_TIMEOUT.as_secs()
            )),
            Ok(Err(e)) => ToolOutcome::failed(format!(
                "the MCP tool `{}` of `{}` failed: {e}",
                t.tool, t.server
            )),
            Ok(Ok(result)) => {
                let text = cap_text(&result_text(&result), 0, READ_CAP_BYTES, None);
                if result.is_error == Some(true) {
                    ToolOutcome::failed(text)
                } else {
                    ToolOutcome::ok(text)
                }
            }
        }
    }

    /// Stop every server this run started: its stdin closed, then SIGTERM, then a kill.
    pub(crate) async fn shutdown(&self) {
        let cells: Vec<Arc<OnceCell<Started>>> = {
            let started = self.started.lock().unwrap_or_else(|e| e.into_inner());
            started.values().cloned().collect()
        };
        for cell in cells {
            let Some(Ok(conn)) = cell.get() else { continue };
            let service = conn.service.lock().await.take();
            if let Some(mut service) = service {
                let _ = service.close_with_timeout(MCP_STOP_TIMEOUT).await;
            }
        }
    }
}

/// Start or reach the server `spec` names, and list its tools.
async fn start(spec: &McpServer) -> Started {
    match spec {
        McpServer::Command { command, args, env } => {
            // Only `PATH`, `HOME` and its own variables, in its own process group (a Ctrl-C at
            // the terminal is zhi's to handle).
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).env_clear().kill_on_drop(true);
            for var in ["PATH", "HOME"] {
                if let Some(v) = std::env::var_os(var) {
                    cmd.env(var, v);
                }
            }
            cmd.envs(env);
            #[cfg(unix)]
            cmd.process_group(0);
            let (transport, _) = TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot run `{command}`: {e}"))?;
            connect_over(transport).await
        }
        McpServer::Url {
            url,
            bearer_token_env,
        } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(var) = bearer_token_env {
                let token = std::env::var(var)
                    .ok()
                    .filter(|t| !t.trim().is_empty())
                    .ok_or_else(|| format!("the variable {var} that holds its token is not set"))?;
                config = config.auth_header(token.trim().to_string());
            }
            // That client's TLS takes the process's provider: ring's, as the API client uses.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let client =
                mcp_http_client(url).map_err(|e| format!("cannot make its client: {e}"))?;
            connect_over(StreamableHttpClientTransport::with_client(client, config)).await
        }
    }
}

/// The HTTP client of a server at `url`: no idle pool (as rmcp's own), redirects not followed
/// (a redirect would carry the token elsewhere), and no proxy for a server on this machine,
/// whose plain-HTTP token must not pass through one.
fn mcp_http_client(url: &str) -> Result<reqwest_mcp::Client, reqwest_mcp::Error> {
    let local = reqwest::Url::parse(url).is_ok_and(|u| crate::config::on_this_machine(&u));
    let mut b = reqwest_mcp::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(reqwest_mcp::redirect::Policy::none());
    if local {
        b = b.no_proxy();
    }
    b.build()
}

/// The protocol's handshake over `transport`, and the server's tools.
async fn connect_over<T, E, A>(transport: T) -> Started
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let ready = async {
        let service = ().serve(transport).await.map_err(|e| e.to_string())?;
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((service, tools))
    };
    let (service, tools) = tokio::time::timeout(MCP_START_TIMEOUT, ready)
        .await
        .map_err(|_| format!("no answer within {} s", MCP_START_TIMEOUT.as_secs()))??;
    Ok(Arc::new(Connection {
        peer: service.peer().clone(),
        tools,
        service: tokio::sync::Mutex::new(Some(service)),
    }))
}

/// The model's arguments: a JSON object (empty when it sent none).
fn parse_arguments(raw: &str) -> Result<Map<String, Value>, ToolOutcome> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(Map::new());
    }
    let value = serde_json::from_str::<Value>(raw).map_err(|e| {
        ToolOutcome::refused(format!(
            "the arguments are not valid JSON ({e}); send a JSON object"
        ))
    })?;
    // Some models encode the arguments object twice, as a JSON string.
    let value = match value {
        Value::String(inner) => serde_json::from_str::<Value>(&inner).unwrap_or(Value::Null),
        other => other,
    };
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(ToolOutcome::refused("the arguments must be a JSON object")),
    }
}

/// A result as text: its text blocks; a structured result when there is no text; a note for
/// what cannot be shown as text.
fn result_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        parts.push(match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { text, .. } => text.clone(),
                _ => "[binary resource not shown]".to_string(),
            },
            ContentBlock::ResourceLink(r) => format!("[resource {}]", r.uri),
            ContentBlock::Image(_) => "[image not shown]".to_string(),
            _ => "[content not shown]".to_string(),
        });
    }
    if parts.is_empty()
        && let Some(v) = &result.structured_content
    {
        parts.push(v.to_string());
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_names_are_sanitised_and_short() {
        let t = McpTool::parse("mcp:self/skills").unwrap();
        assert_eq!(function_name(t), "mcp__self__skills");
        let odd = McpTool::parse("mcp:fs/read.file:v2").unwrap();
        assert_eq!(function_name(odd), "mcp__fs__read_file_v2");
        let long = "x".repeat(100);
        let entry = format!("mcp:s/{long}");
        assert_eq!(function_name(McpTool::parse(&entry).unwrap()).len(), 64);
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert!(parse_arguments("").unwrap().is_empty());
        assert_eq!(parse_arguments(r#"{"a": 1}"#).unwrap()["a"], 1);
        assert_eq!(parse_arguments(r#""{\"a\": 1}""#).unwrap()["a"], 1);
        assert!(parse_arguments("[1]").unwrap_err().refused);
        assert!(parse_arguments("{a").unwrap_err().refused);
    }
}
