//! State behind one trait: sessions, messages, scoped memory facts, the audit
//! log (a hash chain), delegation records (the tree), seed scores and
//! idempotency keys. [`MemoryStore`] keeps it in the process; SQL backends
//! implement the same trait.

pub mod audit;
pub mod memory;
mod rows;
mod signature;
pub mod sql;
mod writer;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::protocol::{AgentSlug, DelegationError, ErrorCode, RequestId, SessionId, TokenUsage, UserId};

pub use audit::{AuditEntry, AuditRecord, ChainReport};
pub use memory::MemoryStore;
pub use signature::task_signature;
pub use sql::SqlStore;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub id: SessionId,
    pub user_id: UserId,
    pub agent: AgentSlug,
    pub parent_id: Option<SessionId>,
    pub created_at: i64,
}

impl Session {
    /// A session of `user` with `agent`, created now.
    pub fn new(user: &UserId, agent: &AgentSlug, id: SessionId, parent: Option<SessionId>) -> Self {
        Self { id, user_id: user.clone(), agent: agent.clone(), parent_id: parent, created_at: now_ms() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub session_id: SessionId,
    pub role: String,
    pub content: String,
    /// The agent that delegated the work this message belongs to.
    pub delegated_from: Option<String>,
    pub delegation_depth: Option<u32>,
    pub created_at: i64,
}

/// A remembered fact. Scope is `global`, `agent:<slug>` or `domain:<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    pub user_id: UserId,
    pub scope: String,
    pub fact: String,
    pub source_request: Option<RequestId>,
    pub created_at: i64,
}

/// What a finished delegation leaves besides its tree node and audit record:
/// a child session created for it (written only now), the two messages of
/// its conversation and the facts it learned. They commit together with the
/// node and the audit record, or not at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conversation {
    pub new_session: Option<Session>,
    pub messages: Vec<Message>,
    pub facts: Vec<Fact>,
}

/// One node of a delegation tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegationRecord {
    pub request_id: RequestId,
    pub root_id: RequestId,
    pub parent_id: Option<RequestId>,
    pub user_id: UserId,
    pub origin: String,
    pub target: String,
    /// Redacted: no raw PII is stored.
    pub objective: String,
    pub objective_hash: String,
    /// `success`, `partial`, `failed` or `refused`.
    pub status: String,
    pub error_code: Option<String>,
    /// The kind of task ([`task_signature`]), for learning.
    pub signature: String,
    pub attempts: u32,
    pub depth: u32,
    pub started_at: i64,
    pub duration_ms: u64,
    pub tokens: TokenUsage,
}

/// One finished delegation, as history sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub target: String,
    pub status: String,
    pub signature: String,
}

/// How an agent fared on one kind of task for one user (learning from history).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentHistory {
    pub agent: String,
    pub successes: u64,
    pub total: u64,
}

impl AgentHistory {
    pub fn success_rate(&self) -> f64 {
        if self.total == 0 { 0.0 } else { self.successes as f64 / self.total as f64 }
    }
}

/// The state of an idempotency key when a request claims it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Claim {
    /// The key is new and now belongs to this request: run it.
    New,
    /// A request with these parameters already finished: here is its response (JSON).
    Done(String),
    /// A request with this key is running now.
    Pending,
    /// The key was used with different parameters.
    Mismatch,
}

/// Row counts, for operations and for tests that assert nothing was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StoreCounts {
    pub sessions: u64,
    pub messages: u64,
    pub facts: u64,
    pub delegations: u64,
    pub audit: u64,
}

/// A failure of the store itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The named session belongs to another user. Carries nothing about it.
    #[error("session does not belong to this user")]
    UserMismatch,
    #[error("store failure: {0}")]
    Backend(String),
}

impl From<StoreError> for DelegationError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::UserMismatch => DelegationError::new(
                ErrorCode::UserMismatch,
                "User ID mismatch: the named session does not belong to this user; use one of your own sessions or none",
            ),
            StoreError::Backend(m) => DelegationError::new(
                ErrorCode::AgentUnavailable,
                format!("the runtime's store is unavailable ({m}); retry later"),
            ),
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The session `id` of `user`, adopting an unknown id as a new session of
    /// `agent`, or a new session when `id` is None. Another user's session is
    /// `UserMismatch`.
    async fn ensure_session(
        &self,
        user: &UserId,
        agent: &AgentSlug,
        id: Option<SessionId>,
        parent: Option<SessionId>,
    ) -> StoreResult<Session>;

    /// The target's child session under `parent` for `user`: reused if it exists.
    async fn child_session(&self, user: &UserId, agent: &AgentSlug, parent: SessionId) -> StoreResult<Session>;

    /// The session `id`, whoever owns it (read only; callers check the owner).
    async fn session(&self, id: SessionId) -> StoreResult<Option<Session>>;

    /// The target's existing child session under `parent`, without creating one.
    async fn find_child_session(
        &self,
        user: &UserId,
        agent: &AgentSlug,
        parent: SessionId,
    ) -> StoreResult<Option<Session>>;

    async fn append_messages(&self, messages: &[Message]) -> StoreResult<()>;

    /// The last `limit` messages of a session, oldest first.
    async fn recent_messages(&self, session: SessionId, limit: usize) -> StoreResult<Vec<Message>>;

    /// The user's facts in any of `scopes`, oldest first.
    async fn facts(&self, user: &UserId, scopes: &[String]) -> StoreResult<Vec<Fact>>;

    async fn add_facts(&self, facts: &[Fact]) -> StoreResult<()>;

    /// Appends to the audit log, chaining the record to the previous one. Must
    /// be durable when it returns.
    async fn append_audit(&self, record: AuditRecord) -> StoreResult<AuditEntry>;

    /// The audit log, oldest first.
    async fn audit_log(&self) -> StoreResult<Vec<AuditEntry>>;

    async fn put_delegation(&self, record: &DelegationRecord) -> StoreResult<()>;

    /// A finished delegation's conversation, tree node and audit record,
    /// durable together when it returns (the SQL store commits them in one
    /// transaction, grouped with whatever else is being written at that moment).
    async fn record_delegation(
        &self,
        record: &DelegationRecord,
        audit: AuditRecord,
        conversation: Conversation,
    ) -> StoreResult<AuditEntry> {
        if let Some(s) = &conversation.new_session {
            self.ensure_session(&s.user_id, &s.agent, Some(s.id), s.parent_id).await?;
        }
        if !conversation.messages.is_empty() {
            self.append_messages(&conversation.messages).await?;
        }
        if !conversation.facts.is_empty() {
            self.add_facts(&conversation.facts).await?;
        }
        self.put_delegation(record).await?;
        self.append_audit(audit).await
    }

    /// Every node of the tree whose root is `root` (or that contains `root`).
    async fn delegation_tree(&self, request: RequestId) -> StoreResult<Vec<DelegationRecord>>;

    /// Seed scores of `agent` for tasks with `signature`, best first.
    async fn seed_scores(&self, agent: &AgentSlug, signature: &str) -> StoreResult<Vec<(u64, f64)>>;

    async fn adjust_seed_score(&self, agent: &AgentSlug, signature: &str, seed: u64, delta: f64) -> StoreResult<f64>;

    /// The user's most recent finished (not refused) delegations, newest first.
    async fn recent_outcomes(&self, user: &UserId, limit: usize) -> StoreResult<Vec<Outcome>>;

    /// Claims `key` for a request whose parameters hash to `request_hash`.
    async fn claim_idempotency(&self, user: &UserId, key: &str, request_hash: &str) -> StoreResult<Claim>;

    /// Stores the response of the request that claimed `key`.
    async fn complete_idempotency(&self, user: &UserId, key: &str, response: &str) -> StoreResult<()>;

    /// Gives up a claim (the request failed in a way worth retrying).
    async fn release_idempotency(&self, user: &UserId, key: &str) -> StoreResult<()>;

    /// Stores a token's hash with its kind (`service`, `user`, `admin`) and subject.
    async fn put_token(&self, hash: &str, kind: &str, subject: &str) -> StoreResult<()>;

    /// The (kind, subject) of the token with this hash.
    async fn find_token(&self, hash: &str) -> StoreResult<Option<(String, String)>>;

    /// The subjects that have at least one token of `kind`.
    async fn token_subjects(&self, kind: &str) -> StoreResult<Vec<String>>;

    async fn counts(&self) -> StoreResult<StoreCounts>;
}

/// Opens the store a URL names: `memory:`, `sqlite://PATH` (created on first
/// use) or `postgres://…`.
pub async fn open(url: &str) -> StoreResult<std::sync::Arc<dyn Store>> {
    if url == "memory:" || url == "memory" {
        return Ok(std::sync::Arc::new(MemoryStore::new()));
    }
    Ok(std::sync::Arc::new(SqlStore::connect(url).await?))
}
