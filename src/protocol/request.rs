//! The request envelope, `DelegationRequest`: identity, task, limits, context,
//! lineage, priority, retry policy, Task Note, checks, idempotency key and
//! mode (docs/DESIGN.md#the-envelope).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::check::Check;
use super::ids::{AgentSlug, RequestId, SessionId, UserId};

/// Token budget of a delegation (prompt + completion, its subtree included) when the request names none.
pub const DEFAULT_MAX_TOKENS: u32 = 1200;
/// Depth limit when the request names none: Prime → Byte is allowed, Prime → Byte → Tag is not.
pub const DEFAULT_MAX_DEPTH: u32 = 2;
/// Deadline of a delegation, in milliseconds, when the request names none.
pub const DEFAULT_DEADLINE_MS: u64 = 15_000;

/// One delegation from an origin agent to a target agent.
///
/// ```
/// use switchboard::protocol::{AgentSlug, DelegationRequest, UserId, parse_request};
///
/// let mut req = DelegationRequest::new(
///     AgentSlug::parse("prime-boss")?,
///     AgentSlug::parse("byte-doc")?,
///     UserId::parse("maya")?,
///     "Extract the receipt",
///     "Office Depot 10/03 $81.03",
/// );
/// req.constraints.max_tokens = 800;
/// // the wire form is JSON; parsing it again gives the same envelope
/// let wire = serde_json::to_vec(&req).unwrap();
/// assert_eq!(parse_request(&wire)?, req);
/// // an unknown field is refused with its name, never ignored
/// let err = parse_request(br#"{"request_id": "x", "colour": "red"}"#).unwrap_err();
/// assert_eq!(err.code.as_str(), "INVALID_REQUEST");
/// # Ok::<(), switchboard::DelegationError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelegationRequest {
    /// Envelope version, e.g. "1.0"; an unknown major version is refused with `UNSUPPORTED_VERSION`.
    #[serde(default = "current_version")]
    pub protocol_version: String,

    // Identity
    /// This delegation's id: one envelope, one id.
    pub request_id: RequestId,
    /// The agent that delegates; must match the agent named by the service token.
    pub origin_employee: AgentSlug,
    /// The target's slug, or `auto` to let the runtime discover it (by
    /// `target_domain` when set, else by keywords and capabilities).
    pub target_employee: AgentSlug,
    /// The user on whose behalf the delegation runs; every session it touches must be theirs.
    pub user_id: UserId,

    // Session threading
    /// The origin's session the child session hangs under; None at the root of a conversation.
    #[serde(default)]
    pub parent_session_id: Option<SessionId>,
    /// A child session to continue; None lets the runtime find or create the target's session.
    #[serde(default)]
    pub child_session_id: Option<SessionId>,

    // Task definition
    /// What the target is asked to do, in one sentence; its hash identifies the delegation for the cycle rail.
    pub objective: String,
    /// The material to work on (text, a receipt, a draft); PII in it is redacted before the target sees it.
    #[serde(default)]
    pub input: String,

    // Safety and performance
    /// Token, depth and deadline limits for this delegation and its subtree.
    #[serde(default)]
    pub constraints: Constraints,

    // Context sharing
    /// Free-form hints for the target (capability names also steer discovery).
    #[serde(default)]
    pub context_hints: Vec<String>,
    /// Facts, references and earlier results handed from the origin to the target.
    #[serde(default)]
    pub handoff_data: HandoffData,

    /// Depth of the origin: a user's message to Prime is depth 0.
    #[serde(default)]
    pub current_depth: u32,
    /// When the origin created the envelope; None when it did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,

    // Lineage
    /// The id of the tree's first request; None when this request is the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_request_id: Option<RequestId>,
    /// The id of the request whose agent sent this one; None when this request is the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_request_id: Option<RequestId>,
    /// The ancestors of this request, oldest first, each with its objective hash.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<ChainLink>,

    /// How urgent the delegation is; sets the default number of attempts.
    #[serde(default)]
    pub priority: Priority,
    /// The caller's retry wishes; None leaves attempts to the agent's config and the priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_policy: Option<RetryPolicy>,
    /// A natural-language Task Note; checks are derived from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_note: Option<String>,
    /// Verification checks the output must pass, in addition to those derived from `task_note`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
    /// A caller's key for safe retries: the same key with the same request replays its response instead of running it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The earlier request (in the same tree) this one deliberately repeats:
    /// a retry of a finished delegation, which the cycle rail then allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<RequestId>,
    /// Whether the delegation writes to the target's session (`persist`) or only reads it (`ephemeral`).
    #[serde(default)]
    pub mode: Mode,
    /// The tools the caller grants the target; the effective set is this ∩ the
    /// caller's own effective tools ∩ the target's `tools_allowed`. None: no extra cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// With `target_employee: "auto"`: route to a member of this domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_domain: Option<String>,
}

fn current_version() -> String {
    super::version::CURRENT.to_string()
}

impl DelegationRequest {
    /// A request with the protocol's defaults for everything but the essentials.
    pub fn new(
        origin: AgentSlug,
        target: AgentSlug,
        user: UserId,
        objective: impl Into<String>,
        input: impl Into<String>,
    ) -> Self {
        Self {
            protocol_version: current_version(),
            request_id: RequestId::new(),
            origin_employee: origin,
            target_employee: target,
            user_id: user,
            parent_session_id: None,
            child_session_id: None,
            objective: objective.into(),
            input: input.into(),
            constraints: Constraints::default(),
            context_hints: Vec::new(),
            handoff_data: HandoffData::default(),
            current_depth: 0,
            created_at: Some(Utc::now()),
            root_request_id: None,
            parent_request_id: None,
            chain: Vec::new(),
            priority: Priority::Normal,
            retry_policy: None,
            task_note: None,
            checks: Vec::new(),
            idempotency_key: None,
            retry_of: None,
            mode: Mode::Persist,
            tools: None,
            target_domain: None,
        }
    }

    /// The id of the tree this request belongs to (its own id when it is a root).
    pub fn root_id(&self) -> RequestId {
        self.root_request_id.unwrap_or(self.request_id)
    }

    /// A hash of what the request asks for (not of its ids, lineage,
    /// timestamp or remaining deadline, which a retry changes): two requests
    /// with the same idempotency key must agree on it.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let what = serde_json::json!([
            self.origin_employee,
            self.target_employee,
            self.user_id,
            self.objective,
            self.input,
            self.constraints.max_tokens,
            self.constraints.max_depth,
            self.context_hints,
            self.handoff_data,
            self.priority,
            self.retry_policy,
            self.task_note,
            self.checks,
            self.mode,
            self.tools,
            self.target_domain,
        ]);
        hex::encode(Sha256::digest(what.to_string().as_bytes()))
    }
}

/// Limits of one delegation (`constraints`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constraints {
    /// Most tokens (prompt + completion) the delegation and its subtree may use.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// Depth limit for the subtree: the target runs at `current_depth + 1`, which must stay below it.
    #[serde(default = "default_max_depth")]
    pub max_depth: u32,
    /// Milliseconds the delegation may take, retries and subtree included.
    #[serde(default = "default_deadline_ms")]
    pub deadline_ms: u64,
}

fn default_max_tokens() -> u32 {
    DEFAULT_MAX_TOKENS
}
fn default_max_depth() -> u32 {
    DEFAULT_MAX_DEPTH
}
fn default_deadline_ms() -> u64 {
    DEFAULT_DEADLINE_MS
}

impl Default for Constraints {
    fn default() -> Self {
        Self { max_tokens: DEFAULT_MAX_TOKENS, max_depth: DEFAULT_MAX_DEPTH, deadline_ms: DEFAULT_DEADLINE_MS }
    }
}

/// Context handed from the origin to the target. Extra keys (some callers
/// pass `constraints` here) are kept as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HandoffData {
    /// Facts the origin knows and the target should take as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<String>,
    /// Documents or records the target may consult.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<Reference>,
    /// Results of previous delegates (a chain's earlier steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intermediate_results: Option<Value>,
    /// Any other keys, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl HandoffData {
    /// Whether nothing at all is handed over.
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
            && self.references.is_empty()
            && self.intermediate_results.is_none()
            && self.extra.is_empty()
    }
}

/// A link to a document or record the target may consult.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// The kind of source, e.g. `receipt` or `bank-statement`.
    pub owner_scope: String,
    /// The document's or record's id within that scope.
    pub source_id: String,
}

/// First 8 hex digits of sha256(objective): identifies what a
/// delegation asks for in a [`ChainLink`], the cycle rail and a lineage path.
pub fn objective_hash(objective: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(objective.as_bytes());
    hex::encode(&digest[..4])
}

/// One ancestor in the delegation chain.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainLink {
    /// The ancestor agent.
    pub agent: AgentSlug,
    /// First 8 hex digits of sha256(objective).
    pub objective_hash: String,
}

/// How urgent a delegation is; sets the default number of attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Priority {
    /// Few attempts (2 by default).
    Low,
    /// The default: 3 attempts.
    #[default]
    Normal,
    /// 5 attempts by default.
    High,
    /// 8 attempts by default, the most a caller may ask for.
    Urgent,
}

impl Priority {
    /// Attempts allowed by default: low 2, normal 3, high 5, urgent 8.
    pub fn default_attempts(self) -> u32 {
        match self {
            Self::Low => 2,
            Self::Normal => 3,
            Self::High => 5,
            Self::Urgent => 8,
        }
    }
}

/// Whether the delegation writes to the target's session (an ephemeral consult does not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Mode {
    /// The default: the target's session keeps the exchange.
    #[default]
    Persist,
    /// A consult: reads the target's history, writes nothing to it.
    Ephemeral,
}

/// The caller's retry wishes (`retry_policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryPolicy {
    /// False allows one attempt only.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Attempts wanted, clamped to 1..=8; None keeps the agent's or the priority's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// How the wait between attempts grows.
    #[serde(default)]
    pub backoff_strategy: BackoffStrategy,
}

fn yes() -> bool {
    true
}

/// How the wait between retries grows: 100 ms × 2ⁿ⁻¹ or × n, capped at 5 s, with jitter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BackoffStrategy {
    /// The default: the wait doubles after each failed attempt.
    #[default]
    Exponential,
    /// The wait grows by the base (100 ms) after each failed attempt.
    Linear,
}
