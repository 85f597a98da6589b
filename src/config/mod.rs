//! The TOML configuration: limits, the team of agents, Prime's routes and the
//! declared workflows. A built-in default (`default.toml`) describes the
//! default team, so everything runs with no configuration.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::protocol::{AgentSlug, DelegationError, ErrorCode, request};

mod a2a_push;
mod agent;
mod lineage;
mod prime;
mod validate;

pub use a2a_push::{A2aPushConfig, IpRange};
pub use agent::{A2aTransport, AgentLimits, AgentSpec, Backend, McpServerSpec};
pub(crate) use lineage::valid_runtime_name;
pub use lineage::{LineageConfig, TrustEntry};
pub use prime::{PlanKind, PrimeConfig, Route, Workflow, WorkflowStep};

/// The names of the built-in orchestrator in `backend = { kind = "builtin", name = … }`.
pub const BUILTIN_PRIME: [&str; 2] = ["prime", "prime-boss"];

/// A set of tool names.
pub type ToolSet = BTreeSet<String>;

/// The configuration shipped inside the binary.
pub const DEFAULT_TOML: &str = include_str!("default.toml");

/// The whole configuration: limits, the team, Prime, workflows, domains, tokens, model defaults and A2A.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Runtime-wide limits (`[limits]`).
    #[serde(default)]
    pub limits: Limits,
    /// The team (`[[agents]]`), in declaration order; discovery breaks ties by it.
    #[serde(default)]
    pub agents: Vec<AgentSpec>,
    /// The agent users talk to and how it plans (`[prime]`).
    #[serde(default)]
    pub prime: PrimeConfig,
    /// Declared workflows (`[[workflows]]`) that Prime's routes can run.
    #[serde(default)]
    pub workflows: Vec<Workflow>,
    /// Domain routing: members, alternatives and load balancing.
    #[serde(default)]
    pub domains: Vec<DomainSpec>,
    /// Bearer tokens known from the start (more are issued with `switchboard token`).
    #[serde(default)]
    pub auth: AuthConfig,
    /// Defaults for `llm` agents, and the model of Prime's LLM planner.
    #[serde(default)]
    pub llm: LlmDefaults,
    /// The A2A endpoints (`/a2a/{slug}`).
    #[serde(default)]
    pub a2a: A2aConfig,
    /// The MCP endpoint (`/mcp`).
    #[serde(default)]
    pub mcp: McpConfig,
    /// Where the audit log is anchored besides its database (`[audit]`).
    #[serde(default)]
    pub audit: AuditConfig,
    /// This runtime's name and keys for lineage tokens (`[lineage]`).
    #[serde(default)]
    pub lineage: LineageConfig,
    /// Peer runtimes whose lineage keys this one trusts (`[[trust]]`).
    #[serde(default)]
    pub trust: Vec<TrustEntry>,
    /// Actions that need a person's approval whichever agent takes them (`[approvals]`).
    #[serde(default)]
    pub approvals: ApprovalsConfig,
    /// Where the key that seals a tree's PII vault in the journal lives (`[pii]`).
    #[serde(default)]
    pub pii: PiiConfig,
    /// The HTTP service's admission control and replica leases (`[server]`).
    #[serde(default)]
    pub server: ServerConfig,
    /// The durable queue behind `queue` agents and `switchboard worker` (`[queue]`).
    #[serde(default)]
    pub queue: QueueConfig,
}

/// `[queue]`: the NATS JetStream server behind `queue` agents and
/// `switchboard worker`, and how long its streams keep what passed
/// through them (what `switchboard queue replay` can send again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    /// The NATS server, `nats://host:port`.
    pub url: String,
    /// Hours the work stream keeps a delegation (1 to 8,760): how far back
    /// `switchboard queue replay` reaches.
    pub work_retention_hours: u64,
    /// Hours the reply stream keeps an answer (1 to 8,760): a tree resumed
    /// within it takes an answer that came while nobody waited, and a replay
    /// compares with it.
    pub reply_retention_hours: u64,
    /// Hours the dead-letter stream keeps what was not run (1 to 8,760).
    pub dead_retention_hours: u64,
    /// Times a worker may be handed one delegation before it is dead-lettered (1 to 100).
    pub max_deliver: u32,
    /// How long a worker holds a delegation without a sign of life before
    /// another worker is handed it (ms, 1,000 to 600,000); a worker that is
    /// running it says so every third of this.
    pub ack_wait_ms: u64,
}

impl QueueConfig {
    /// Whether `url` names a NATS server (`nats://host:port`, or `tls://…`).
    pub fn is_nats_url(url: &str) -> bool {
        (url.starts_with("nats://") || url.starts_with("tls://")) && url.len() > "nats://".len()
    }
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            url: "nats://127.0.0.1:4222".into(),
            work_retention_hours: 168,
            reply_retention_hours: 168,
            dead_retention_hours: 720,
            max_deliver: 5,
            ack_wait_ms: 30_000,
        }
    }
}

/// `[server]`: how much the HTTP service takes on at once. A delegation
/// (`POST /v1/delegate`, `POST /v1/chat`, an A2A send in any binding) that
/// arrives while `max_in_flight` are running is answered at once with a
/// 503 `AGENT_UNAVAILABLE` and a `Retry-After`, instead of waiting in a
/// queue that only makes every answer later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Delegations the HTTP routes run at once, at most (at least 1).
    pub max_in_flight: usize,
    /// How long a replica's lease lasts without a renewal (ms, 1,000 to
    /// 600,000). Replicas on one database renew theirs four times per
    /// period; the trees of one that stopped renewing are taken over by
    /// another after this long (at once when it ran on the same host).
    pub replica_lease_ms: u64,
    /// Threads that run admitted work under `switchboard serve` (the work
    /// runtime, apart from the threads that read and answer requests): 0,
    /// the default, is one per core; at most 1,024.
    pub work_threads: usize,
}

impl ServerConfig {
    /// The default `max_in_flight`.
    pub const DEFAULT_MAX_IN_FLIGHT: usize = 512;
    /// The default `replica_lease_ms`.
    pub const DEFAULT_REPLICA_LEASE_MS: u64 = 10_000;
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_in_flight: Self::DEFAULT_MAX_IN_FLIGHT,
            replica_lease_ms: Self::DEFAULT_REPLICA_LEASE_MS,
            work_threads: 0,
        }
    }
}

/// `[pii]`: the key a tree's PII vault is sealed with in the journal, so a
/// tree resumed after a restart gives the user their values back (see
/// docs/DURABILITY.md). Unset, the CLI and `serve` use `switchboard-pii.key`
/// beside `lineage.key_dir`, and a library runtime seals with a key of its
/// own process (after a restart its tokens stay tokens). Replicas on one
/// database share the file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiiConfig {
    /// A file holding the key (64 hex digits), made (0600) at first use. A
    /// relative path is relative to the working directory.
    #[serde(default)]
    pub seal_key_file: Option<PathBuf>,
}

/// `[approvals]`: the per-tool rule. `require = ["send_email"]` makes every
/// agent ask before that action, besides what each agent's own
/// `requires_approval` lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// Actions (tools) no agent takes without a person's approval.
    #[serde(default)]
    pub require: std::collections::BTreeSet<String>,
}

impl Config {
    /// Whether `agent` must ask a person before `action`: its own
    /// `requires_approval` (or `"*"`) or the runtime-wide `[approvals] require`.
    pub fn requires_approval(&self, agent: &crate::protocol::AgentSlug, action: &str) -> bool {
        self.approvals.require.contains(action)
            || self
                .agent(agent.as_str())
                .is_some_and(|a| a.requires_approval.contains(action) || a.requires_approval.contains("*"))
    }
}

/// `[audit]`: anchors of the audit log outside the database.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// Unset by default. When set, the SQL store writes the audit chain's
    /// head (`{"seq","hash","updated_at"}`) to this file after every batch
    /// of appends, and `audit --verify` checks the log against it. A
    /// relative path is relative to the working directory, as `sqlite://PATH`
    /// is; its directory must exist.
    #[serde(default)]
    pub anchor_file: Option<PathBuf>,
}

/// `[a2a]`: how the A2A endpoints treat callers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aConfig {
    /// Off by default. When set, an A2A call without an `Authorization`
    /// header acts as this user (for the A2A TCK and local interop tests);
    /// a call with a token is still checked.
    #[serde(default)]
    pub anonymous_user: Option<String>,
    /// `[a2a.push]`: push notification delivery (SSRF allowances, signing key, retries).
    #[serde(default)]
    pub push: A2aPushConfig,
    /// The agent a gRPC request without a `tenant` goes to (clients that
    /// ignore the card's tenant, such as the A2A TCK); unset, such a request
    /// is NOT_FOUND.
    #[serde(default)]
    pub grpc_default_agent: Option<String>,
}

/// `[mcp]`: how the MCP endpoint treats callers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// Off by default. When set, an MCP request to `/mcp` without an
    /// `Authorization` header acts as this user (for the MCP conformance
    /// suite and local clients); a request with a token is still checked.
    #[serde(default)]
    pub anonymous_user: Option<String>,
    /// Off by default. When set, `/mcp` and `switchboard mcp` also serve the
    /// fixtures the MCP conformance suite's server scenarios call (tools
    /// `test_*`, resources `test://…`, prompts, logging, completions,
    /// resource subscriptions): for running the suite, not for users.
    #[serde(default)]
    pub conformance_fixtures: bool,
}

/// Where models are, unless an agent says otherwise.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmDefaults {
    /// e.g. `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1` (Ollama),
    /// `http://127.0.0.1:8080/v1` (llama.cpp), `http://127.0.0.1:8000/v1` (vLLM).
    #[serde(default)]
    pub base_url: Option<String>,
    /// Model name used when an agent names none.
    #[serde(default)]
    pub model: Option<String>,
    /// Environment variable holding the API key, for agents that name none.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Completion tokens per call, at most, for agents that set none (512 when unset here too).
    #[serde(default)]
    pub max_completion_tokens: Option<u32>,
    /// Rounds of tool calls before an answer is required, for agents that set none (6 when unset here too).
    #[serde(default)]
    pub tool_rounds: Option<u32>,
}

/// Tokens given in the configuration: the token itself, or `sha256:<hex>` of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// agent slug → its service token
    #[serde(default)]
    pub service_tokens: BTreeMap<String, String>,
    /// user id → their token
    #[serde(default)]
    pub user_tokens: BTreeMap<String, String>,
    /// Operator tokens, each acting as an admin (any agent, every tree).
    #[serde(default)]
    pub admin_tokens: Vec<String>,
    /// Agents whose service token may start a tree (send an envelope that
    /// carries no lineage token), and for which users (`"*"`: any): agent
    /// slug → users. Every other delegation sent to this runtime must carry
    /// a lineage token (docs/LINEAGE.md). Unset: `{ "prime-boss" = ["*"] }`,
    /// the built-in orchestrator, which acts for the users who talk to it.
    #[serde(default)]
    pub service_roots: Option<BTreeMap<String, Vec<String>>>,
}

impl AuthConfig {
    /// Whether `agent`'s service token may start a tree for `user`.
    pub fn may_start_tree(&self, agent: &str, user: &str) -> bool {
        match &self.service_roots {
            None => agent == "prime-boss",
            Some(roots) => roots.get(agent).is_some_and(|users| users.iter().any(|u| u == "*" || u == user)),
        }
    }
}

/// A domain's routing entry. Members default to the agents whose `domain` is
/// this name; several members are replicas that share the load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainSpec {
    /// The domain's name, as agents name it in their `domain`.
    pub name: String,
    /// Its members; empty means the agents whose `domain` is this name.
    #[serde(default)]
    pub agents: Vec<AgentSlug>,
    /// Domains to ask instead when the caller itself belongs to this one.
    #[serde(default)]
    pub alternatives: Vec<String>,
    /// How the members share the work.
    #[serde(default)]
    pub balance: Balance,
}

/// How a domain's members share the work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Balance {
    /// The default: members take turns.
    #[default]
    RoundRobin,
    /// The member with the fewest delegations in flight takes it; ties take turns.
    LeastBusy,
}

/// Runtime-wide limits (docs/RAILS.md). A request may lower them for its subtree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Default `max_depth` of a request that does not set one.
    pub max_depth: u32,
    /// The highest `max_depth` a root request may ask for.
    pub max_depth_ceiling: u32,
    /// Children of one parent in flight at once, and the largest parallel batch.
    pub fan_out: u32,
    /// Default deadline of a delegation.
    pub deadline_ms: u64,
    /// The longest deadline a root request may ask for.
    pub max_deadline_ms: u64,
    /// Time kept back from the parent's remaining deadline for each child.
    pub deadline_margin_ms: u64,
    /// Default token budget of a delegation.
    pub max_tokens: u32,
    /// The largest token budget a root request may ask for.
    pub max_tokens_ceiling: u32,
    /// The budget of a user's whole conversation turn with Prime.
    pub ask_max_tokens: u32,
    /// Largest accepted input, in bytes.
    pub max_input_bytes: usize,
}

impl Limits {
    /// The largest file read as input (`ask --file`): four times
    /// `max_input_bytes`, room for what a PDF holds besides its text. Its
    /// size is checked before it is read, and its text is held to
    /// `max_input_bytes` while it is extracted.
    pub fn max_file_bytes(&self) -> usize {
        self.max_input_bytes.saturating_mul(4)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_depth: request::DEFAULT_MAX_DEPTH,
            max_depth_ceiling: 8,
            fan_out: 3,
            deadline_ms: request::DEFAULT_DEADLINE_MS,
            max_deadline_ms: 300_000,
            deadline_margin_ms: 50,
            max_tokens: request::DEFAULT_MAX_TOKENS,
            max_tokens_ceiling: 200_000,
            ask_max_tokens: 16_000,
            max_input_bytes: 256 * 1024,
        }
    }
}

impl Config {
    /// The built-in default configuration.
    pub fn builtin() -> Self {
        Self::from_toml(DEFAULT_TOML).expect("the built-in default.toml is valid")
    }

    /// Parses and validates a configuration.
    pub fn from_toml(text: &str) -> Result<Self, DelegationError> {
        let config: Config = toml::from_str(text)
            .map_err(|e| DelegationError::new(ErrorCode::InvalidRequest, format!("invalid configuration: {e}")))?;
        config.validate()?;
        Ok(config)
    }

    /// Reads and validates a configuration file.
    pub fn load(path: &Path) -> Result<Self, DelegationError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| DelegationError::invalid(format!("cannot read configuration file {}: {e}", path.display())))?;
        Self::from_toml(&text).map_err(|e| DelegationError::invalid(format!("{}: {}", path.display(), e.message)))
    }

    /// The agent with this slug, if it is declared.
    pub fn agent(&self, slug: &str) -> Option<&AgentSpec> {
        self.agents.iter().find(|a| a.slug.as_str() == slug)
    }

    /// The agent users talk to (see [`PrimeConfig::agent`]).
    pub fn entry_agent(&self) -> Option<&AgentSpec> {
        if let Some(slug) = &self.prime.agent {
            return self.agents.iter().find(|a| &a.slug == slug);
        }
        let orchestrator = |a: &&AgentSpec| match &a.backend {
            Backend::Builtin { name } => BUILTIN_PRIME.contains(&name.as_deref().unwrap_or(a.slug.as_str())),
            _ => false,
        };
        self.agents.iter().find(orchestrator).or_else(|| self.agents.first())
    }

    /// The declared workflow with this name, if any.
    pub fn workflow(&self, name: &str) -> Option<&Workflow> {
        self.workflows.iter().find(|w| w.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_written_before_the_money_tools_were_renamed_keeps_them() {
        let c = Config::from_toml(
            "[[agents]]\nslug = \"keeper\"\nname = \"K\"\ntools_allowed = [\"ledger.read\", \"ledger.write\", \"search\"]\n",
        )
        .unwrap();
        let tools: Vec<&str> = c.agent("keeper").unwrap().tools_allowed.iter().map(String::as_str).collect();
        assert_eq!(tools, ["money.read", "money.write", "search"]);
    }

    #[test]
    fn approval_is_required_per_agent_or_per_tool() {
        let c = Config::from_toml(
            "[approvals]\nrequire = [\"wire_money\"]\n\n[[agents]]\nslug = \"mailer\"\nname = \"M\"\n\
             requires_approval = [\"send_email\"]\n\n[[agents]]\nslug = \"other\"\nname = \"O\"\n",
        )
        .unwrap();
        let (mailer, other) = (AgentSlug::parse("mailer").unwrap(), AgentSlug::parse("other").unwrap());
        assert!(c.requires_approval(&mailer, "send_email") && !c.requires_approval(&other, "send_email"));
        assert!(c.requires_approval(&mailer, "wire_money") && c.requires_approval(&other, "wire_money"));
        assert!(!c.requires_approval(&other, "read_calendar"));
        let err = Config::from_toml("[approvals]\nrequired = [\"x\"]\n").unwrap_err();
        assert!(err.to_string().contains("required"), "{err}");
    }

    #[test]
    fn bad_queue_and_lease_settings_name_their_field() {
        let bad = |toml: &str| {
            let c = Config::from_toml(toml);
            c.and_then(|c| c.validate().map(|()| c)).expect_err(toml).to_string()
        };
        for (toml, field) in [
            ("[queue]\nurl = \"http://127.0.0.1:4222\"\n", "queue.url"),
            ("[queue]\nmax_deliver = 0\n", "queue.max_deliver"),
            ("[queue]\nack_wait_ms = 10\n", "queue.ack_wait_ms"),
            ("[queue]\nreply_retention_hours = 0\n", "queue.reply_retention_hours"),
            ("[server]\nreplica_lease_ms = 100\n", "server.replica_lease_ms"),
            ("[server]\nwork_threads = 5000\n", "server.work_threads"),
            ("[server]\nwork_threads = -1\n", "work_threads"),
            ("[lineage]\ntoken_version = 3\n", "lineage.token_version"),
            ("[lineage]\ntoken_version = \"two\"\n", "token_version"),
            ("[[agents]]\nslug = \"x\"\nname = \"X\"\nexamples = [\" \"]\n", "every example"),
            ("[[agents]]\nslug = \"x\"\nname = \"X\"\nexamples = \"one\"\n", "examples"),
        ] {
            assert!(bad(toml).contains(field), "{toml}: {}", bad(toml));
        }
        assert!(bad("[queue]\nretention_hours = 5\n").contains("retention_hours"), "an unknown field is named");
        // more examples than the router should learn at start-up: refused, naming the agent
        let many = |n: usize| {
            let examples: Vec<String> = (0..n).map(|i| format!("\"request {i}\"")).collect();
            format!("[[agents]]\nslug = \"x\"\nname = \"X\"\nexamples = [{}]\n", examples.join(", "))
        };
        assert!(bad(&many(1001)).contains("agent 'x' has 1001 examples; at most 1000"), "{}", bad(&many(1001)));
        assert!(Config::from_toml(&many(1000)).and_then(|c| c.validate()).is_ok());
        let peerless = "[[agents]]\nslug = \"q\"\nname = \"Q\"\nbackend = { kind = \"queue\" }\n";
        assert!(bad(peerless).contains("peer"), "{}", bad(peerless));
    }

    #[test]
    fn builtin_config_describes_the_seed_team() {
        let c = Config::builtin();
        for slug in [
            "prime-boss",
            "byte-doc",
            "tag-ai",
            "crystal-analytics",
            "ledger-tax",
            "goalie-goals",
            "blitz-debt",
            "email",
            "format",
            "data",
            "calendar",
            "report",
        ] {
            assert!(c.agent(slug).is_some(), "{slug} missing");
        }
        assert_eq!(c.limits.max_depth, 2);
        assert_eq!(c.limits.fan_out, 3);
    }

    #[test]
    fn config_errors_name_the_problem() {
        let err = Config::from_toml("[limits]\nfan_out = 0").unwrap_err();
        assert!(err.message.contains("fan_out"), "{}", err.message);
        let err = Config::from_toml("[[agents]]\nslug = \"Bad Slug\"\nname = \"x\"").unwrap_err();
        assert!(err.message.contains("agent slug"), "{}", err.message);
        let err = Config::from_toml("[limits]\nwhat = 1").unwrap_err();
        assert!(err.message.contains("unknown field"), "{}", err.message);
        let err =
            Config::from_toml("[[agents]]\nslug = \"a\"\nname = \"A\"\nmay_delegate_to = [\"ghost\"]").unwrap_err();
        assert!(err.message.contains("ghost"), "{}", err.message);
    }

    #[test]
    fn the_audit_anchor_file_is_unset_by_default_and_must_name_a_file() {
        assert_eq!(Config::builtin().audit.anchor_file, None);
        let c = Config::from_toml("[audit]\nanchor_file = \"state/anchor.json\"").unwrap();
        assert_eq!(c.audit.anchor_file.as_deref(), Some(Path::new("state/anchor.json")));
        for bad in ["", ".", "..", "state/.."] {
            let err = Config::from_toml(&format!("[audit]\nanchor_file = \"{bad}\"")).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidRequest);
            assert!(err.message.contains("audit.anchor_file"), "{bad}: {}", err.message);
        }
        let err = Config::from_toml("[audit]\nanchor_fle = \"a.json\"").unwrap_err();
        assert!(err.message.contains("unknown field"), "{}", err.message);
        let err = Config::from_toml("[audit]\nanchor_file = 3").unwrap_err();
        assert!(err.message.contains("anchor_file"), "{}", err.message);
    }
}
