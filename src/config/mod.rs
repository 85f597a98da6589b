//! The TOML configuration: limits, the team of agents, Prime's routes and the
//! declared workflows. A built-in default (`default.toml`) describes the seeds'
//! team, so everything runs with no configuration.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::protocol::{AgentSlug, DelegationError, ErrorCode, request};

/// The names of the built-in orchestrator in `backend = { kind = "builtin", name = … }`.
pub const BUILTIN_PRIME: [&str; 2] = ["prime", "prime-boss"];

/// A set of tool names.
pub type ToolSet = BTreeSet<String>;

/// The configuration shipped inside the binary.
pub const DEFAULT_TOML: &str = include_str!("default.toml");

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub agents: Vec<AgentSpec>,
    #[serde(default)]
    pub prime: PrimeConfig,
    #[serde(default)]
    pub workflows: Vec<Workflow>,
    /// Domain routing (seeds/004): members, alternatives and load balancing.
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
}

/// Where models are, unless an agent says otherwise.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmDefaults {
    /// e.g. `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1` (Ollama),
    /// `http://127.0.0.1:8080/v1` (llama.cpp), `http://127.0.0.1:8000/v1` (vLLM).
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub max_completion_tokens: Option<u32>,
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
    #[serde(default)]
    pub admin_tokens: Vec<String>,
}

/// A domain's routing entry. Members default to the agents whose `domain` is
/// this name; several members are replicas that share the load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainSpec {
    pub name: String,
    #[serde(default)]
    pub agents: Vec<AgentSlug>,
    /// Domains to ask instead when the caller itself belongs to this one.
    #[serde(default)]
    pub alternatives: Vec<String>,
    #[serde(default)]
    pub balance: Balance,
}

/// How a domain's members share the work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Balance {
    #[default]
    RoundRobin,
    LeastBusy,
}

/// Runtime-wide limits (DESIGN §3). A request may lower them for its subtree.
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

/// One team member as declared in the config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub slug: AgentSlug,
    /// Display name used when Prime reports who did what ("Byte").
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub backend: Backend,
    #[serde(default)]
    pub system_prompt: String,
    #[serde(default)]
    pub capabilities: Vec<String>,
    #[serde(default)]
    pub keywords: Vec<String>,
    #[serde(default)]
    pub domain: Option<String>,
    #[serde(default)]
    pub tools_allowed: ToolSet,
    /// Agents this one may delegate to; `"*"` means any.
    #[serde(default)]
    pub may_delegate_to: BTreeSet<String>,
    /// Users who may use this agent (seeds/003: the agent works with the
    /// requesting user's permissions); `"*"` means everyone.
    #[serde(default = "everyone")]
    pub allowed_users: BTreeSet<String>,
    /// Whether this agent may see raw PII (default: it sees typed tokens).
    #[serde(default)]
    pub pii_access: bool,
    /// A tool agent (seeds/001): Prime hands it the user's words as a Task
    /// Note, whose checks the runtime verifies.
    #[serde(default)]
    pub task_notes: bool,
    #[serde(default)]
    pub limits: AgentLimits,
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
            limits: AgentLimits::default(),
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

    /// Whether this agent may delegate to `target` per its `may_delegate_to`.
    pub fn may_delegate_to(&self, target: &AgentSlug) -> bool {
        self.may_delegate_to.contains("*") || self.may_delegate_to.contains(target.as_str())
    }

    pub fn allows_user(&self, user: &str) -> bool {
        self.allowed_users.contains("*") || self.allowed_users.contains(user)
    }
}

/// Per-agent overrides of the runtime limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentLimits {
    #[serde(default)]
    pub max_tokens: Option<u32>,
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
    },
    /// A model behind any OpenAI-compatible chat-completions endpoint (a hosted
    /// API, vLLM, llama.cpp's server, Ollama). Unset fields come from `[llm]`.
    Llm {
        #[serde(default)]
        base_url: Option<String>,
        #[serde(default)]
        model: Option<String>,
        /// Environment variable holding the API key (none: no Authorization header).
        #[serde(default)]
        api_key_env: Option<String>,
        /// Completion tokens per call, at most (the budget may allow fewer).
        #[serde(default)]
        max_completion_tokens: Option<u32>,
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
        url: String,
        /// Environment variable holding a bearer token for the remote agent.
        #[serde(default)]
        token_env: Option<String>,
    },
    /// A subprocess: the request as JSON on stdin, the response as JSON on stdout.
    Command {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
}

impl Default for Backend {
    fn default() -> Self {
        Self::Builtin { name: None }
    }
}

/// Prime: the agent users talk to, its planner and its routes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrimeConfig {
    /// The agent a user's message goes to (`switchboard ask`, `POST /v1/chat`,
    /// the default model of `/v1/chat/completions`). Default: the first agent
    /// whose backend is the built-in `prime` orchestrator, else the first agent.
    #[serde(default)]
    pub agent: Option<AgentSlug>,
    /// `rules` (no model needed) or `llm` (the model in `[llm]`, with a
    /// `delegate` tool over Prime's team).
    #[serde(default = "rules")]
    pub planner: String,
    #[serde(default)]
    pub routes: Vec<Route>,
}

fn rules() -> String {
    "rules".to_string()
}

impl Default for PrimeConfig {
    fn default() -> Self {
        Self { agent: None, planner: rules(), routes: Vec::new() }
    }
}

/// A regex route: when `pattern` matches the user's message, Prime runs `plan`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    pub name: String,
    pub pattern: String,
    pub plan: PlanKind,
    /// The agents, in order (for `workflow`: empty, `workflow` names it).
    #[serde(default)]
    pub agents: Vec<AgentSlug>,
    /// One objective per agent.
    #[serde(default)]
    pub objectives: Vec<String>,
    #[serde(default)]
    pub workflow: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PlanKind {
    Single,
    Chain,
    Parallel,
    Workflow,
}

/// A declared workflow: a small DAG of steps (seeds/003 research → analysis → writing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub steps: Vec<WorkflowStep>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowStep {
    pub id: String,
    pub agent: AgentSlug,
    pub objective: String,
    /// Steps whose results this one needs.
    #[serde(default)]
    pub after: Vec<String>,
}

impl Workflow {
    /// The steps grouped into levels: every step's dependencies are in earlier
    /// levels, so the steps of one level can run in parallel. None if the steps
    /// have a cycle (or wait for a step that does not exist).
    pub fn levels(&self) -> Option<Vec<Vec<usize>>> {
        let mut done: BTreeSet<&str> = BTreeSet::new();
        let mut remaining: Vec<usize> = (0..self.steps.len()).collect();
        let mut levels = Vec::new();
        while !remaining.is_empty() {
            let (ready, blocked): (Vec<usize>, Vec<usize>) =
                remaining.iter().partition(|&&i| self.steps[i].after.iter().all(|d| done.contains(d.as_str())));
            if ready.is_empty() {
                return None;
            }
            for &i in &ready {
                done.insert(self.steps[i].id.as_str());
            }
            levels.push(ready);
            remaining = blocked;
        }
        Some(levels)
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

    pub fn workflow(&self, name: &str) -> Option<&Workflow> {
        self.workflows.iter().find(|w| w.name == name)
    }

    /// Checks what serde cannot: unique slugs, references to known agents,
    /// sane limits, compilable route patterns and acyclic workflows.
    pub fn validate(&self) -> Result<(), DelegationError> {
        let bad = |msg: String| Err(DelegationError::invalid(format!("invalid configuration: {msg}")));
        let l = &self.limits;
        if l.max_depth == 0 || l.max_depth > l.max_depth_ceiling {
            return bad(format!(
                "limits.max_depth {} must be between 1 and max_depth_ceiling {}",
                l.max_depth, l.max_depth_ceiling
            ));
        }
        if l.fan_out == 0 {
            return bad("limits.fan_out must be at least 1".into());
        }
        if l.deadline_ms == 0 || l.deadline_ms > l.max_deadline_ms {
            return bad(format!(
                "limits.deadline_ms {} must be between 1 and max_deadline_ms {}",
                l.deadline_ms, l.max_deadline_ms
            ));
        }
        if l.deadline_margin_ms >= l.deadline_ms {
            return bad("limits.deadline_margin_ms must be smaller than deadline_ms".into());
        }
        if l.max_tokens == 0 || l.max_tokens > l.max_tokens_ceiling || l.ask_max_tokens == 0 {
            return bad(format!(
                "limits.max_tokens {} must be between 1 and max_tokens_ceiling {}",
                l.max_tokens, l.max_tokens_ceiling
            ));
        }
        match self.prime.planner.as_str() {
            "rules" => {}
            "llm" if self.llm.base_url.is_some() && self.llm.model.is_some() => {}
            "llm" => return bad("prime.planner = \"llm\" needs [llm] base_url and model".into()),
            other => return bad(format!("prime.planner is '{other}'; use \"rules\" or \"llm\"")),
        }
        let mut seen = BTreeMap::new();
        for a in &self.agents {
            if a.slug.is_auto() {
                return bad("'auto' is reserved for discovery and cannot be an agent's slug".into());
            }
            if seen.insert(a.slug.as_str(), ()).is_some() {
                return bad(format!("agent '{}' is declared twice", a.slug));
            }
        }
        let known = |s: &str| seen.contains_key(s);
        for a in &self.agents {
            for t in &a.may_delegate_to {
                if t != "*" && !known(t) {
                    return bad(format!("agent '{}' may_delegate_to unknown agent '{t}'", a.slug));
                }
            }
        }
        if let Some(a) = &self.prime.agent
            && !known(a.as_str())
        {
            return bad(format!("prime.agent names unknown agent '{a}'"));
        }
        for r in &self.prime.routes {
            if let Err(e) = regex::Regex::new(&r.pattern) {
                return bad(format!("route '{}' pattern does not compile: {e}", r.name));
            }
            for s in &r.agents {
                if !known(s.as_str()) {
                    return bad(format!("route '{}' names unknown agent '{s}'", r.name));
                }
            }
            match r.plan {
                PlanKind::Workflow => match &r.workflow {
                    Some(w) if self.workflow(w).is_some() => {}
                    _ => return bad(format!("route '{}' must name a declared workflow", r.name)),
                },
                _ => {
                    if r.agents.is_empty() || r.objectives.len() != r.agents.len() {
                        return bad(format!("route '{}' needs one objective per agent", r.name));
                    }
                }
            }
        }
        let mut domain_names = BTreeSet::new();
        for d in &self.domains {
            if !domain_names.insert(d.name.as_str()) {
                return bad(format!("domain '{}' is declared twice", d.name));
            }
            for a in &d.agents {
                if !known(a.as_str()) {
                    return bad(format!("domain '{}' names unknown agent '{a}'", d.name));
                }
            }
        }
        for d in &self.domains {
            for alt in &d.alternatives {
                let exists = domain_names.contains(alt.as_str())
                    || self.agents.iter().any(|a| a.domain.as_deref() == Some(alt.as_str()));
                if !exists || alt == &d.name {
                    return bad(format!(
                        "domain '{}' lists '{alt}' as an alternative, which is not another domain",
                        d.name
                    ));
                }
            }
        }
        for agent in self.auth.service_tokens.keys() {
            if !known(agent) {
                return bad(format!("auth.service_tokens names unknown agent '{agent}'"));
            }
        }
        for user in self.auth.user_tokens.keys() {
            if crate::protocol::UserId::parse(user.as_str()).is_err() {
                return bad(format!("auth.user_tokens: '{user}' is not a valid user id"));
            }
        }
        if let Some(u) = &self.a2a.anonymous_user
            && crate::protocol::UserId::parse(u.as_str()).is_err()
        {
            return bad(format!("a2a.anonymous_user: '{u}' is not a valid user id"));
        }
        for w in &self.workflows {
            let ids: BTreeSet<&str> = w.steps.iter().map(|s| s.id.as_str()).collect();
            if ids.len() != w.steps.len() {
                return bad(format!("workflow '{}' has duplicate step ids", w.name));
            }
            for s in &w.steps {
                if !known(s.agent.as_str()) {
                    return bad(format!("workflow '{}' step '{}' names unknown agent '{}'", w.name, s.id, s.agent));
                }
                for dep in &s.after {
                    if !ids.contains(dep.as_str()) {
                        return bad(format!("workflow '{}' step '{}' waits for unknown step '{dep}'", w.name, s.id));
                    }
                }
            }
            if w.levels().is_none() {
                return bad(format!("workflow '{}' has a cycle among its steps", w.name));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
