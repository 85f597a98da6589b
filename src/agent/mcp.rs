//! MCP servers as a source of an agent's tools (the `rmcp` client): one
//! [`McpServer`] per `[[agents.mcp]]` entry, over streamable HTTP (`url`) or
//! stdio (`command`, a subprocess). A server is connected lazily, on the
//! first delegation that may use one of its tools, and the session (with its
//! `tools/list`) is kept and reused; a session found closed is opened again.
//!
//! A tool's id on the tools rail is `mcp:<server>/<tool>`; `mcp:<server>/*`
//! stands for every tool of the server (see docs/MCP.md). Which tools
//! a delegation may use is the caller's business ([`McpTool::allowed_in`]
//! with the context's effective tools); this module only speaks MCP.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::ToolSet;
use crate::config::McpServerSpec;
use crate::protocol::{DelegationError, ErrorCode};

/// Time for one tool call when the server's entry sets none.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest text of one tool result handed on (longer text is cut, and says so).
const MAX_RESULT_CHARS: usize = 32 * 1024;

/// The rail's id of `tool` on `server`: `mcp:<server>/<tool>`.
pub fn tool_id(server: &str, tool: &str) -> String {
    format!("mcp:{server}/{tool}")
}

/// One tool an MCP server offers.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The server's name in the configuration.
    pub server: String,
    /// The tool's name on its server.
    pub name: String,
    /// What the tool does, as its server says.
    pub description: String,
    /// The JSON schema of its arguments (`inputSchema`).
    pub input_schema: Value,
}

impl McpTool {
    /// Its id on the tools rail, `mcp:<server>/<tool>`.
    pub fn id(&self) -> String {
        tool_id(&self.server, &self.name)
    }

    /// Whether `tools` (a delegation's effective tools) hold this tool: its
    /// own id or its server's `mcp:<server>/*`.
    pub fn allowed_in(&self, tools: &ToolSet) -> bool {
        tools.contains(&self.id()) || tools.contains(&tool_id(&self.server, "*"))
    }
}

/// What a tool call gave back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpResult {
    /// Its content's text, blocks joined by newlines (non-text blocks named only).
    pub text: String,
    /// Its `structuredContent`, if any.
    pub structured: Option<Value>,
    /// The tool reported a failure (`isError`): the text says what went wrong.
    pub is_error: bool,
}

impl McpResult {
    /// The result as a model reads it: `{"result": text, "data": …, "is_error": true}`.
    pub fn to_json(&self) -> Value {
        let mut v = json!({ "result": self.text });
        if let Some(s) = &self.structured {
            v["data"] = s.clone();
        }
        if self.is_error {
            v["is_error"] = json!(true);
        }
        v
    }
}

type Session = RunningService<RoleClient, ClientConfig>;

struct Connected {
    session: Arc<Session>,
    tools: Arc<Vec<McpTool>>,
}

/// One MCP server of an agent: its entry, and the session once connected.
pub struct McpServer {
    spec: McpServerSpec,
    bearer: Option<String>,
    state: Mutex<Option<Connected>>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer").finish_non_exhaustive()
    }
}

impl McpServer {
    /// The server of `spec`, not yet connected. A `bearer_token_env` that
    /// is not set is an error now, not at the first call.
    pub fn new(spec: &McpServerSpec) -> Result<Self, DelegationError> {
        let bearer = match &spec.bearer_token_env {
            Some(var) => Some(std::env::var(var).map_err(|_| {
                DelegationError::invalid(format!(
                    "mcp '{}': the environment variable {var} (mcp.bearer_token_env) is not set",
                    spec.name
                ))
            })?),
            None => None,
        };
        Ok(Self { spec: spec.clone(), bearer, state: Mutex::new(None) })
    }

    /// Its name in the configuration.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Time for one call: the entry's `timeout_ms`, or [`DEFAULT_CALL_TIMEOUT`].
    pub fn call_timeout(&self) -> Duration {
        self.spec.timeout_ms.map_or(DEFAULT_CALL_TIMEOUT, Duration::from_millis)
    }

    fn unavailable(&self, why: impl std::fmt::Display) -> DelegationError {
        DelegationError::new(ErrorCode::AgentUnavailable, format!("MCP server '{}' is unavailable: {why}", self.name()))
    }

    fn late(&self, what: &str) -> DelegationError {
        DelegationError::new(
            ErrorCode::DeadlineExceeded,
            format!("MCP server '{}' did not {what} in time", self.name()),
        )
    }

    /// The open session and its tools, connecting (and listing) first when
    /// there is none or the one kept has closed.
    async fn connected(&self, within: Duration) -> Result<(Arc<Session>, Arc<Vec<McpTool>>), DelegationError> {
        let mut state = self.state.lock().await;
        if let Some(c) = state.as_ref().filter(|c| !c.session.is_closed()) {
            return Ok((c.session.clone(), c.tools.clone()));
        }
        *state = None;
        let session = tokio::time::timeout(within, self.connect()).await.map_err(|_| self.late("answer"))??;
        let listed = tokio::time::timeout(within, session.list_all_tools())
            .await
            .map_err(|_| self.late("list its tools"))?
            .map_err(|e| self.unavailable(format!("tools/list failed: {e}")))?;
        let tools: Vec<McpTool> = listed
            .into_iter()
            .map(|t| McpTool {
                server: self.spec.name.clone(),
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect();
        let c = Connected { session: Arc::new(session), tools: Arc::new(tools) };
        let out = (c.session.clone(), c.tools.clone());
        *state = Some(c);
        Ok(out)
    }

    async fn connect(&self) -> Result<Session, DelegationError> {
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("switchboard", env!("CARGO_PKG_VERSION")),
        );
        let session = match (&self.spec.url, &self.spec.command) {
            (Some(url), _) => {
                crate::util::install_tls();
                let mut config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str()).reinit_on_expired_session(true);
                if let Some(token) = &self.bearer {
                    config = config.auth_header(token.clone());
                }
                info.serve(StreamableHttpClientTransport::from_config(config)).await
            }
            (None, Some(command)) => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(&self.spec.args).envs(&self.spec.env).kill_on_drop(true);
                let (child, _) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| self.unavailable(format!("cannot start '{command}': {e}")))?;
                info.serve(child).await
            }
            (None, None) => return Err(self.unavailable("its entry has neither url nor command")),
        };
        session.map_err(|e| self.unavailable(e))
    }

    /// The server's tools (listed once per session).
    pub async fn tools(&self, within: Duration) -> Result<Arc<Vec<McpTool>>, DelegationError> {
        Ok(self.connected(within).await?.1)
    }

    /// Calls `tool` with `arguments`, within `within`. A failure of the
    /// session (the process died, the connection broke) drops it: the next
    /// use connects again; the call itself is not repeated, as the server
    /// may have done it. A tool that reports a failure (`isError`) is an
    /// `Ok` result saying so: it is for the model to read.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, Value>,
        within: Duration,
    ) -> Result<McpResult, DelegationError> {
        let started = tokio::time::Instant::now();
        let (session, _) = self.connected(within).await?;
        let left = within.saturating_sub(started.elapsed());
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let result = match tokio::time::timeout(left, session.call_tool(params)).await {
            Err(_) => return Err(self.late(&format!("finish {tool}"))),
            Ok(Err(ServiceError::McpError(e))) => {
                return Err(DelegationError::new(
                    ErrorCode::AgentFailed,
                    format!("MCP server '{}' refused {tool}: {}", self.name(), e.message),
                ));
            }
            Ok(Err(e)) => {
                self.forget(&session).await;
                return Err(self.unavailable(format!("{tool} failed: {e}")));
            }
            Ok(Ok(r)) => r,
        };
        let v = serde_json::to_value(&result).unwrap_or(Value::Null);
        let mut text = v["content"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|block| match block["type"].as_str() {
                Some("text") => block["text"].as_str().unwrap_or_default().to_string(),
                Some("resource") if block["resource"]["text"].is_string() => {
                    block["resource"]["text"].as_str().unwrap_or_default().to_string()
                }
                Some(other) => format!("[{other} content omitted]"),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        if text.chars().count() > MAX_RESULT_CHARS {
            text = text.chars().take(MAX_RESULT_CHARS).collect::<String>() + "\n[cut: the result was longer]";
        }
        Ok(McpResult { text, structured: result.structured_content, is_error: result.is_error.unwrap_or(false) })
    }

    /// Drops the kept session if it is still `session` (the next use connects again).
    async fn forget(&self, session: &Arc<Session>) {
        let mut state = self.state.lock().await;
        if state.as_ref().is_some_and(|c| Arc::ptr_eq(&c.session, session)) {
            *state = None;
        }
    }
}

/// The MCP servers of one agent.
#[derive(Default)]
pub struct McpServers {
    servers: Vec<McpServer>,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers").finish_non_exhaustive()
    }
}

impl McpServers {
    /// The servers of an agent's `[[agents.mcp]]` entries (none connected yet).
    pub fn new(specs: &[McpServerSpec]) -> Result<Self, DelegationError> {
        Ok(Self { servers: specs.iter().map(McpServer::new).collect::<Result<_, _>>()? })
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The server named `name`.
    pub fn get(&self, name: &str) -> Option<&McpServer> {
        self.servers.iter().find(|s| s.name() == name)
    }

    /// The tools `tools` (a delegation's effective tools) allow, from every
    /// server that may have one (a server none of whose ids is in `tools`
    /// is not even connected). A server that cannot be reached fails the
    /// whole listing: `AGENT_UNAVAILABLE` (or `DEADLINE_EXCEEDED`).
    pub async fn allowed_tools(&self, tools: &ToolSet, within: Duration) -> Result<Vec<McpTool>, DelegationError> {
        let mut out = Vec::new();
        for server in &self.servers {
            let prefix = tool_id(server.name(), "");
            if !tools.iter().any(|t| t.starts_with(&prefix)) {
                continue;
            }
            let listed = server.tools(within).await?;
            out.extend(listed.iter().filter(|t| t.allowed_in(tools)).cloned());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(server: &str, name: &str) -> McpTool {
        McpTool { server: server.into(), name: name.into(), description: String::new(), input_schema: json!({}) }
    }

    #[test]
    fn a_tool_is_allowed_by_its_own_id_or_its_servers_wildcard() {
        let t = tool("crm", "lookup_customer");
        assert_eq!(t.id(), "mcp:crm/lookup_customer");
        let set = |ids: &[&str]| -> ToolSet { ids.iter().map(|s| s.to_string()).collect() };
        assert!(t.allowed_in(&set(&["mcp:crm/lookup_customer"])));
        assert!(t.allowed_in(&set(&["mcp:crm/*"])));
        assert!(!t.allowed_in(&set(&["mcp:crm/delete_everything", "mcp:other/*", "lookup_customer"])));
    }

    #[tokio::test]
    async fn a_server_that_cannot_start_is_agent_unavailable() {
        let spec = McpServerSpec {
            name: "gone".into(),
            url: None,
            bearer_token_env: None,
            command: Some("/nonexistent/switchboard-mcp-server".into()),
            args: vec![],
            env: Default::default(),
            timeout_ms: None,
        };
        let servers = McpServers::new(&[spec]).unwrap();
        let all: ToolSet = ["mcp:gone/*".to_string()].into();
        let err = servers.allowed_tools(&all, Duration::from_secs(5)).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::AgentUnavailable, "{}", err.message);
        assert!(err.message.contains("MCP server 'gone'"), "{}", err.message);
        // a server none of whose tools is allowed is not even started
        let none: ToolSet = ["mcp:other/*".to_string()].into();
        assert!(servers.allowed_tools(&none, Duration::from_secs(5)).await.unwrap().is_empty());
    }
}
