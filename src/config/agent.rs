//! One team member as declared: its spec, per-agent limits, and the
//! backend that does its work.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::ToolSet;
use crate::protocol::{AgentSlug, DelegationError};

/// One team member as declared in the config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// The agent's unique slug, e.g. `byte-doc`.
    pub slug: AgentSlug,
    /// Display name used when Prime reports who did what ("Byte").
    pub name: String,
    /// What the agent does; used for discovery, for Prime's roster and for the A2A card.
    #[serde(default)]
    pub description: String,
    /// Requests as people write them that this agent should get ("how much
    /// did I spend on coffee?"): Prime's router learns from them at start-up
    /// (docs/ROUTING.md), and the LLM planner's prompt shows a few. For the
    /// agent users talk to, what it answers itself (small talk, requests no
    /// specialist serves).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Where its work is done; built-in by default.
    #[serde(default)]
    pub backend: Backend,
    /// The agent's own instructions; a model agent gets them after the base prompt.
    #[serde(default)]
    pub system_prompt: String,
    /// What it can do; a context hint naming one counts twice in discovery.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Words that route a task to it in discovery (one point each, a multi-word keyword two).
    #[serde(default)]
    pub keywords: Vec<String>,
    /// The domain it belongs to, for domain routing and `domain:<name>` facts; None for none.
    #[serde(default)]
    pub domain: Option<String>,
    /// The tools it may ever use; along a chain its effective tools are a subset of these.
    #[serde(default, deserialize_with = "tools_by_current_name")]
    pub tools_allowed: ToolSet,
    /// Agents this one may delegate to; `"*"` means any.
    #[serde(default)]
    pub may_delegate_to: BTreeSet<String>,
    /// Users who may use this agent (the agent works with the
    /// requesting user's permissions); `"*"` means everyone.
    #[serde(default = "everyone")]
    pub allowed_users: BTreeSet<String>,
    /// Whether this agent may see raw PII (default: it sees typed tokens).
    #[serde(default)]
    pub pii_access: bool,
    /// A tool agent: Prime hands it the user's words as a Task
    /// Note, whose checks the runtime verifies.
    #[serde(default)]
    pub task_notes: bool,
    /// Actions (tools) this agent takes only once a person approves them,
    /// e.g. `["send_email"]`: its delegation pauses (`needs_approval`), the
    /// pause travels up to the root, and the tree resumes when a person
    /// answers (`switchboard approve ID`).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub requires_approval: BTreeSet<String>,
    /// Overrides of the runtime's limits for delegations to this agent.
    #[serde(default)]
    pub limits: AgentLimits,
    /// MCP servers whose tools this agent may use (`[[agents.mcp]]`, see
    /// docs/MCP.md); a tool is offered only when its id
    /// (`mcp:<server>/<tool>` or `mcp:<server>/*`) is in the effective tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<McpServerSpec>,
}

/// One MCP server an agent takes tools from: exactly one of `url`
/// (streamable HTTP) or `command` (stdio, a subprocess).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSpec {
    /// A short id (1-32 letters, digits, `-`), used in tool ids: `mcp:<name>/<tool>`.
    pub name: String,
    /// The server's streamable HTTP endpoint, e.g. `http://127.0.0.1:8000/mcp`.
    #[serde(default)]
    pub url: Option<String>,
    /// Environment variable holding a bearer token for `url`.
    #[serde(default)]
    pub bearer_token_env: Option<String>,
    /// The program that serves MCP on its stdin/stdout (looked up in `PATH` when not a path).
    #[serde(default)]
    pub command: Option<String>,
    /// Arguments passed to `command`.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables set for `command`, on top of the inherited ones.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Time for one tool call in milliseconds (default 30000); never more
    /// than the delegation has left.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

impl McpServerSpec {
    /// What is wrong with this entry, naming the field; None when it is fine.
    pub fn problem(&self) -> Option<String> {
        let n = &self.name;
        let name_ok = !n.is_empty()
            && n.len() <= 32
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !n.starts_with('-');
        if !name_ok {
            return Some(format!("mcp.name '{n}' must be 1-32 letters, digits or '-'"));
        }
        match (&self.url, &self.command) {
            (Some(_), Some(_)) => {
                return Some(format!("mcp '{n}': set either mcp.url (HTTP) or mcp.command (stdio), not both"));
            }
            (None, None) => return Some(format!("mcp '{n}': set mcp.url (HTTP) or mcp.command (stdio)")),
            (Some(url), None) => {
                let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
                let host = rest.map(|r| r.split(['/', '?', '#']).next().unwrap_or_default());
                if host.is_none_or(|h| h.is_empty() || h.contains(char::is_whitespace)) {
                    return Some(format!("mcp '{n}': mcp.url '{url}' must be an http:// or https:// URL with a host"));
                }
                if !self.args.is_empty() || !self.env.is_empty() {
                    return Some(format!("mcp '{n}': mcp.args and mcp.env go with mcp.command, not mcp.url"));
                }
            }
            (None, Some(command)) => {
                if command.trim().is_empty() {
                    return Some(format!("mcp '{n}': mcp.command is empty"));
                }
                if self.bearer_token_env.is_some() {
                    return Some(format!("mcp '{n}': mcp.bearer_token_env goes with mcp.url, not mcp.command"));
                }
            }
        }
        if self.timeout_ms == Some(0) {
            return Some(format!("mcp '{n}': mcp.timeout_ms must be at least 1"));
        }
        None
    }
}

fn everyone() -> BTreeSet<String> {
    BTreeSet::from(["*".to_string()])
}

impl AgentSpec {
    /// A built-in-backed agent with nothing but a slug and a name: no tools,
    /// no one to delegate to, open to every user, the runtime's limits. Give
    /// it an implementation with [`crate::RuntimeBuilder::agent`].
    pub fn new(slug: &str, name: impl Into<String>) -> Result<Self, DelegationError> {
        Ok(Self {
            slug: AgentSlug::parse(slug).map_err(|e| DelegationError::invalid(e.0))?,
            name: name.into(),
            description: String::new(),
            examples: Vec::new(),
            backend: Backend::default(),
            system_prompt: String::new(),
            capabilities: Vec::new(),
            keywords: Vec::new(),
            domain: None,
            tools_allowed: ToolSet::new(),
            may_delegate_to: BTreeSet::new(),
            allowed_users: everyone(),
            pii_access: false,
            task_notes: false,
            requires_approval: BTreeSet::new(),
            limits: AgentLimits::default(),
            mcp: Vec::new(),
        })
    }

    /// This agent may delegate to `targets` (slugs, or `*` for any).
    pub fn delegating_to<I: IntoIterator<Item = S>, S: Into<String>>(mut self, targets: I) -> Self {
        self.may_delegate_to.extend(targets.into_iter().map(Into::into));
        self
    }

    /// What this agent does, for discovery and for its A2A card.
    pub fn described(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Requests this agent should get, for Prime's router (see [`AgentSpec::examples`]).
    pub fn with_examples<I: IntoIterator<Item = S>, S: Into<String>>(mut self, examples: I) -> Self {
        self.examples.extend(examples.into_iter().map(Into::into));
        self
    }

    /// Whether this agent may delegate to `target` per its `may_delegate_to`.
    pub fn may_delegate_to(&self, target: &AgentSlug) -> bool {
        self.may_delegate_to.contains("*") || self.may_delegate_to.contains(target.as_str())
    }

    /// Whether `user` may use this agent per its `allowed_users`.
    pub fn allows_user(&self, user: &str) -> bool {
        self.allowed_users.contains("*") || self.allowed_users.contains(user)
    }
}

/// Per-agent overrides of the runtime limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentLimits {
    /// Token budget ceiling of a delegation to this agent; None keeps the runtime's.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Deadline ceiling, in milliseconds, of a delegation to this agent; None keeps the runtime's.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    /// Attempts per delegation, overriding the priority's default.
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// Time for one attempt; a timed-out attempt is retried with twice as
    /// long, inside the delegation's deadline. None: an attempt may use it all.
    #[serde(default)]
    pub attempt_timeout_ms: Option<u64>,
}

/// Where an agent's work is done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Backend {
    /// A deterministic agent compiled into Switchboard; `name` defaults to the
    /// slug (`prime` makes the agent a Prime-style orchestrator).
    Builtin {
        /// Which built-in agent runs; None: the one named like the slug.
        #[serde(default)]
        name: Option<String>,
    },
    /// Another Switchboard (or anything speaking `POST /v1/delegate`) does the
    /// work; the envelope carries the rails across the hop.
    Http {
        /// Base URL, e.g. `http://127.0.0.1:7421`.
        url: String,
        /// The agent's slug over there (default: the same slug).
        #[serde(default)]
        agent: Option<String>,
        /// Environment variable holding the service token the remote issued
        /// to the calling agent (the origin).
        #[serde(default)]
        token_env: Option<String>,
        /// Per-origin tokens: origin slug → environment variable.
        #[serde(default)]
        origin_tokens: BTreeMap<String, String>,
        /// The remote runtime's `[lineage] name`: each call then carries a
        /// signed lineage token addressed to it (docs/LINEAGE.md). Unset:
        /// no token, and the remote takes the call as the start of a tree.
        #[serde(default)]
        peer: Option<String>,
    },
    /// A model behind any OpenAI-compatible chat-completions endpoint (a hosted
    /// API, vLLM, llama.cpp's server, Ollama). Unset fields come from `[llm]`.
    Llm {
        /// The endpoint's base URL; None takes `[llm]`'s.
        #[serde(default)]
        base_url: Option<String>,
        /// The model name sent to the endpoint; None takes `[llm]`'s.
        #[serde(default)]
        model: Option<String>,
        /// Environment variable holding the API key (none: no Authorization header).
        #[serde(default)]
        api_key_env: Option<String>,
        /// Completion tokens per call, at most (the budget may allow fewer).
        #[serde(default)]
        max_completion_tokens: Option<u32>,
        /// Sampling temperature; None leaves it to the server.
        #[serde(default)]
        temperature: Option<f32>,
        /// Ask for a JSON object (`response_format`) instead of text.
        #[serde(default)]
        json_mode: bool,
        /// Rounds of tool calls before the agent must answer.
        #[serde(default)]
        tool_rounds: Option<u32>,
    },
    /// A remote A2A agent (A2A 1.0): `url` is its agent card's URL or its
    /// base URL; the rails travel in message metadata.
    A2a {
        /// The agent card's URL or the agent's base URL.
        url: String,
        /// Environment variable holding a bearer token for the remote agent.
        #[serde(default)]
        token_env: Option<String>,
        /// The remote runtime's `[lineage] name`, when it is a Switchboard
        /// that trusts ours: each message then carries a signed lineage token.
        #[serde(default)]
        peer: Option<String>,
        /// The agent's slug over there, as the lineage token names it
        /// (default: the same slug); only read with `peer`.
        #[serde(default)]
        agent: Option<AgentSlug>,
        /// The binding to speak (`jsonrpc`, `http_json`, `grpc`); unset:
        /// JSON-RPC, else HTTP+JSON, else gRPC, as the card offers them.
        #[serde(default)]
        transport: Option<A2aTransport>,
    },
    /// Workers behind a durable queue (NATS JetStream at `[queue] url`):
    /// the delegation, with its signed lineage, waits in the stream until a
    /// `switchboard worker` serving the agent takes it, within its deadline
    /// (docs/SCALE.md).
    Queue {
        /// The workers' `[lineage] name`: every delegation carries a token
        /// addressed to it, and a worker runs nothing unsigned.
        peer: String,
        /// The agent's slug at the workers (default: the same slug).
        #[serde(default)]
        agent: Option<AgentSlug>,
    },
    /// A subprocess: the request as JSON on stdin, the response as JSON on stdout.
    Command {
        /// The program to run (looked up in `PATH` when not a path).
        command: String,
        /// Arguments passed to the program.
        #[serde(default)]
        args: Vec<String>,
        /// Environment variables set for the program, on top of the inherited ones.
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
}

impl Backend {
    /// The remote runtime's lineage name, for backends that send to another Switchboard.
    pub fn peer(&self) -> Option<&str> {
        match self {
            Self::Http { peer, .. } | Self::A2a { peer, .. } => peer.as_deref(),
            Self::Queue { peer, .. } => Some(peer),
            _ => None,
        }
    }
}

/// An A2A binding the `a2a` backend speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum A2aTransport {
    /// JSON-RPC 2.0 over HTTP.
    Jsonrpc,
    /// HTTP+JSON (REST).
    HttpJson,
    /// gRPC (the `grpc` feature).
    Grpc,
}

impl Default for Backend {
    fn default() -> Self {
        Self::Builtin { name: None }
    }
}

/// Tools under the names they had before: the money tools were
/// `ledger.read` and `ledger.write` (before "ledger" named only the tax agent).
const RENAMED_TOOLS: [(&str, &str); 2] = [("ledger.read", "money.read"), ("ledger.write", "money.write")];

/// An agent's `tools_allowed`, each under its current name: a configuration
/// written before a rename keeps the tools it gave.
fn tools_by_current_name<'de, D: serde::Deserializer<'de>>(de: D) -> Result<ToolSet, D::Error> {
    let given = <ToolSet as serde::Deserialize>::deserialize(de)?;
    Ok(given
        .into_iter()
        .map(|tool| match RENAMED_TOOLS.iter().find(|(old, _)| *old == tool) {
            Some((_, new)) => (*new).to_string(),
            None => tool,
        })
        .collect())
}
