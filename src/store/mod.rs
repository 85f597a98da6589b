//! State behind one trait: sessions, messages, scoped memory facts, the audit
//! log (a hash chain), delegation records (the tree), seed scores and
//! idempotency keys. [`MemoryStore`] keeps it in the process; SQL backends
//! implement the same trait.

pub mod audit;
pub mod memory;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::protocol::{AgentSlug, DelegationError, ErrorCode, RequestId, SessionId, TokenUsage, UserId};

pub use audit::{AuditEntry, AuditRecord, ChainReport};
pub use memory::MemoryStore;

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
    pub attempts: u32,
    pub depth: u32,
    pub started_at: i64,
    pub duration_ms: u64,
    pub tokens: TokenUsage,
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

    /// Every node of the tree whose root is `root` (or that contains `root`).
    async fn delegation_tree(&self, request: RequestId) -> StoreResult<Vec<DelegationRecord>>;

    /// Seed scores of `agent` for tasks with `signature`, best first.
    async fn seed_scores(&self, agent: &AgentSlug, signature: &str) -> StoreResult<Vec<(u64, f64)>>;

    async fn adjust_seed_score(&self, agent: &AgentSlug, signature: &str, seed: u64, delta: f64) -> StoreResult<f64>;
}
