//! State behind one trait: sessions, messages, scoped memory facts, the audit
//! log (a hash chain), delegation records (the tree), seed scores and
//! idempotency keys. [`MemoryStore`] keeps it in the process; SQL backends
//! implement the same trait.

pub mod a2a_keep;
pub mod a2a_push;
pub mod a2a_state;
pub mod analytics;
pub mod anchor;
pub mod audit;
mod facts_cache;
pub mod history;
mod idem;
pub mod journal;
pub mod memory;
pub mod money;
pub mod ratings;
pub mod replicas;
mod rows;
mod signature;
pub mod sql;
mod sqlite_read;
mod sqlite_writer;
mod texts;
mod trees;
mod writer;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::protocol::{AgentSlug, DelegationError, ErrorCode, RequestId, SessionId, TokenUsage, UserId};
pub use crate::redact::Redacted;

pub use a2a_keep::TaskKeeper;
pub use a2a_push::{A2aPushConfigRecord, MAX_PUSH_CONFIGS_PER_TASK};
pub use a2a_state::{A2aEventRecord, BreakerCounters, MAX_EVENTS_PER_TASK, RecentCall};
pub use a2a_state::{A2aTaskPage, A2aTaskQuery, A2aTaskRecord, BreakerRecord};
pub use analytics::{Analytics, AnalyticsQuery};
pub use audit::{AuditEntry, AuditHead, AuditRecord, ChainReport};
pub use history::{HistoryPage, HistoryQuery, PastTree};
pub use journal::{Approval, ApprovalState, REPLAYS_LIMIT, ReplayRecord, StepState, TreeStep};
pub use memory::MemoryStore;
pub use money::{MoneyEntry, MoneyPlan, entry_id};
pub use ratings::{Rated, Rating, Thumb};
pub use replicas::Replica;
pub use signature::task_signature;
pub use sql::{SqlStore, WriteStats};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// When a write must be on stable storage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// Before it is acknowledged: its commit syncs the log.
    #[default]
    Now,
    /// With the next synced commit: its commit does not wait for a sync of
    /// its own. It survives the process's crash as soon as it is
    /// acknowledged, and a power failure once any later commit has synced
    /// the log (the log is written in order). Only for a write nobody is
    /// answered on before such a commit: the start of work whose caller
    /// waits for its end, or an end that a synced write of the caller's
    /// follows (`docs/DURABILITY.md`).
    WithNext,
}

/// One conversation of one agent with one user; a child session hangs under the session of the agent that delegated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The session's id.
    pub id: SessionId,
    /// The user who owns it; no other user may read or continue it.
    pub user_id: UserId,
    /// The agent whose session it is.
    pub agent: AgentSlug,
    /// The delegating agent's session it hangs under; None for a top-level session.
    pub parent_id: Option<SessionId>,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at: i64,
}

impl Session {
    /// A session of `user` with `agent`, created now.
    pub fn new(user: &UserId, agent: &AgentSlug, id: SessionId, parent: Option<SessionId>) -> Self {
        Self { id, user_id: user.clone(), agent: agent.clone(), parent_id: parent, created_at: now_ms() }
    }
}

/// One message of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// The session it belongs to.
    pub session_id: SessionId,
    /// Who wrote it: `user` (the task as asked, PII redacted) or `assistant` (the agent's answer).
    pub role: String,
    /// The message's text.
    pub content: String,
    /// The agent that delegated the work this message belongs to.
    pub delegated_from: Option<String>,
    /// The depth the answering agent ran at; None when not recorded.
    pub delegation_depth: Option<u32>,
    /// The answer was a question back to the user (status `needs_input`):
    /// the next message in the session may be its answer.
    pub asked: bool,
    /// When it was written, in milliseconds since the Unix epoch.
    pub created_at: i64,
}

/// A remembered fact. Scope is `global`, `agent:<slug>` or `domain:<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    /// The user the fact is about; only their delegations see it.
    pub user_id: UserId,
    /// Who sees it: `global`, `agent:<slug>` or `domain:<name>`.
    pub scope: String,
    /// The fact, in one sentence.
    pub fact: String,
    /// The delegation that taught it; None when it came from elsewhere.
    pub source_request: Option<RequestId>,
    /// When it was saved, in milliseconds since the Unix epoch.
    pub created_at: i64,
}

/// What a finished delegation leaves besides its tree node and audit record:
/// a child session created for it (written only now), the two messages of
/// its conversation and the facts it learned. They commit together with the
/// node and the audit record, or not at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conversation {
    /// The child session created for the delegation; None when it reused one (or made none).
    pub new_session: Option<Session>,
    /// The task as asked and the agent's answer; empty for a failed delegation or an ephemeral consult.
    pub messages: Vec<Message>,
    /// The facts it learned, each under a scope the agent may write to.
    pub facts: Vec<Fact>,
    /// The delegation's step in its durable tree, as it ended (or waits).
    pub step: Option<TreeStep>,
    /// What it leaves under its idempotency key: its answer kept, or the key
    /// freed, in the same commit as its record (a process that dies after
    /// that commit leaves no key held by nobody).
    pub key: Option<KeyAnswer>,
}

/// What a finished request leaves under its idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyAnswer {
    /// The user the key belongs to.
    pub user_id: UserId,
    /// The key.
    pub key: String,
    /// The answer kept for repeats (a `DelegationResponse` as JSON); None
    /// frees the key (the request failed, or asked the user something).
    pub response: Option<String>,
}

/// One node of a delegation tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegationRecord {
    /// The delegation's id.
    pub request_id: RequestId,
    /// The id of its tree's root.
    pub root_id: RequestId,
    /// The delegation that made this one; None for the root.
    pub parent_id: Option<RequestId>,
    /// The user the delegation ran for.
    pub user_id: UserId,
    /// Who delegated: an agent's slug, or `user` for a user's turn.
    pub origin: String,
    /// The agent that was asked.
    pub target: String,
    /// Redacted: no raw PII is stored.
    pub objective: String,
    /// First 8 hex digits of sha256 of the raw objective, as the cycle rail compares them.
    pub objective_hash: String,
    /// `success`, `partial`, `failed` or `refused`.
    pub status: String,
    /// The error code (e.g. `DEPTH_LIMIT`) when it did not succeed; None otherwise.
    pub error_code: Option<String>,
    /// The kind of task ([`task_signature`]), for learning.
    pub signature: String,
    /// Attempts made; 0 when refused.
    pub attempts: u32,
    /// The depth the target ran (or would have run) at.
    pub depth: u32,
    /// When it started, in milliseconds since the Unix epoch.
    pub started_at: i64,
    /// Milliseconds it took, retries included.
    pub duration_ms: u64,
    /// Tokens used by the delegation and its subtree.
    pub tokens: TokenUsage,
    /// An ephemeral consult (`ask_agent`, mode `ephemeral`), which analytics counts apart from delegations.
    #[serde(default)]
    pub consult: bool,
}

impl DelegationRecord {
    /// Whether `next`, stored under this record's id, is the same
    /// delegation's record (its later outcome), not another caller's under a
    /// reused id. The SQL upsert (`writer.rs`, `DELEGATIONS`) applies the same rule.
    pub fn same_delegation(&self, next: &DelegationRecord) -> bool {
        self.user_id == next.user_id && self.root_id == next.root_id && self.origin == next.origin
    }
}

/// One finished delegation, as history sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// The agent that was asked.
    pub target: String,
    /// `success`, `partial` or `failed`; `rated_down` for a success whose
    /// tree its user rated down (it counts against the agent, as a failure does).
    pub status: String,
    /// The kind of task ([`task_signature`]).
    pub signature: String,
}

/// How an agent fared on one kind of task for one user (learning from history).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentHistory {
    /// The agent's slug.
    pub agent: String,
    /// Delegations of this kind that succeeded.
    pub successes: u64,
    /// Delegations of this kind in all.
    pub total: u64,
}

impl AgentHistory {
    /// Successes over total, 0.0 to 1.0; 0.0 with no history.
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
    /// A request with this key is running now, held as this says.
    Pending(Held),
    /// The key was used with different parameters.
    Mismatch,
}

/// Who claims an idempotency key: the request that runs under it and the
/// replica running it (the lease id its tree steps name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// The request that runs under the key.
    pub request_id: RequestId,
    /// The replica running it.
    pub owner: String,
}

impl Holder {
    /// How it holds a key claimed at `since` (epoch ms).
    pub fn held_since(&self, since: i64) -> Held {
        Held { request_id: Some(self.request_id), owner: Some(self.owner.clone()), since }
    }
}

/// How a running request holds its key: what a waiter needs to tell
/// whether the holder still lives, and to take the key over (compare and
/// set on all three) when it does not. Keys claimed before holders were
/// kept (migration 0012) name neither.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The request that claimed it.
    pub request_id: Option<RequestId>,
    /// The replica that claimed it.
    pub owner: Option<String>,
    /// When it was claimed, in epoch milliseconds.
    pub since: i64,
}

/// Row counts, for operations and for tests that assert nothing was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StoreCounts {
    /// Sessions stored.
    pub sessions: u64,
    /// Messages stored.
    pub messages: u64,
    /// Facts stored.
    pub facts: u64,
    /// Delegation records stored.
    pub delegations: u64,
    /// Audit entries stored.
    pub audit: u64,
}

/// A failure of the store itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The named session belongs to another user. Carries nothing about it.
    #[error("session does not belong to this user")]
    UserMismatch,
    /// The backend failed (connection, query, migration); answered as `AGENT_UNAVAILABLE`.
    #[error("store failure: {0}")]
    Backend(String),
    /// The write names a row that belongs to another user, tree or caller
    /// (what it says is the row's id, never whose it is): nothing was changed.
    #[error("{0} belongs to another caller; nothing was changed")]
    Conflict(String),
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
            StoreError::Conflict(what) => DelegationError::new(
                ErrorCode::IdConflict,
                format!(
                    "{what} belongs to another caller's delegation: ids belong to whoever made them, and nothing \
                     of theirs was changed; send a new request_id"
                ),
            ),
        }
    }
}

/// What every store method returns.
pub type StoreResult<T> = Result<T, StoreError>;

/// Where state lives: one trait for the in-memory and the SQL (SQLite, PostgreSQL) backends.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// What the store's writer committed so far (writes, transactions,
    /// synced ones), for `/metrics`: None for a store that writes nothing
    /// to disk.
    fn write_stats(&self) -> Option<WriteStats> {
        None
    }

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

    /// Appends messages to their sessions.
    async fn append_messages(&self, messages: &Redacted<Vec<Message>>) -> StoreResult<()>;

    /// The last `limit` messages of a session, oldest first.
    async fn recent_messages(&self, session: SessionId, limit: usize) -> StoreResult<Vec<Message>>;

    /// The user's newest `limit` facts in any of `scopes`, oldest first: a
    /// user's memory only grows, and what one delegation reads of it must not.
    async fn facts(&self, user: &UserId, scopes: &[String], limit: usize) -> StoreResult<Vec<Fact>>;

    /// Saves facts; a fact already stored with the same scope is not saved twice.
    async fn add_facts(&self, facts: &Redacted<Vec<Fact>>) -> StoreResult<()>;

    /// Appends to the audit log, chaining the record to the previous one. Must
    /// be durable when it returns.
    async fn append_audit(&self, record: Redacted<AuditRecord>) -> StoreResult<AuditEntry>;

    /// The audit log, oldest first.
    async fn audit_log(&self) -> StoreResult<Vec<AuditEntry>>;

    /// The chain's anchored head (last sequence number and hash), kept
    /// beside the log and written with every append; None before the first.
    async fn audit_head(&self) -> StoreResult<Option<AuditHead>>;

    /// The file the audit head is also written to after every batch of
    /// appends (`[audit] anchor_file`); None when there is none. Only the
    /// SQL store keeps one.
    fn anchor_file(&self) -> Option<&std::path::Path> {
        None
    }

    /// Verifies the audit log against its anchored head and, when there is
    /// one, its anchor file: an altered, reordered or deleted record (first,
    /// middle or last) is named.
    async fn verify_audit(&self) -> StoreResult<ChainReport> {
        let entries = self.audit_log().await?;
        let head = self.audit_head().await?;
        Ok(anchor::verify_anchors(&entries, head.as_ref(), self.anchor_file()))
    }

    /// Saves a delegation record; for one already stored under the request
    /// id, its outcome is updated, if it is the same delegation's (the same
    /// user, tree and origin: see [`DelegationRecord::same_delegation`]):
    /// another's record under that id is left as it is.
    async fn put_delegation(&self, record: &Redacted<DelegationRecord>) -> StoreResult<()>;

    /// A finished delegation's conversation, tree node and audit record,
    /// durable together when it returns (the SQL store commits them in one
    /// transaction, grouped with whatever else is being written at that
    /// moment), or, with [`Durability::WithNext`], written together and
    /// durable with the next synced commit: for a top-level delegation whose
    /// caller commits a synced write of its own before it answers anyone (a
    /// blocking A2A send: the task's last version). A store with an audit
    /// anchor file syncs it anyway: the file must never name a record the
    /// log could lose.
    async fn record_delegation(
        &self,
        record: &Redacted<DelegationRecord>,
        audit: Redacted<AuditRecord>,
        conversation: Redacted<Conversation>,
        durability: Durability,
    ) -> StoreResult<AuditEntry>;

    /// Every node of the tree whose root is `root` (or that contains `root`).
    async fn delegation_tree(&self, request: RequestId) -> StoreResult<Vec<DelegationRecord>>;

    /// Seed scores of `agent` for tasks with `signature`, best first.
    async fn seed_scores(&self, agent: &AgentSlug, signature: &str) -> StoreResult<Vec<(u64, f64)>>;

    /// Adds `delta` to a seed's score for `agent` and `signature` (clamped to -10..=10), returning the new score.
    async fn adjust_seed_score(&self, agent: &AgentSlug, signature: &str, seed: u64, delta: f64) -> StoreResult<f64>;

    /// The user's most recent finished (not refused) delegations, newest first.
    async fn recent_outcomes(&self, user: &UserId, limit: usize) -> StoreResult<Vec<Outcome>>;

    /// Claims `key` for a request whose parameters hash to `request_hash`, held by `holder`.
    async fn claim_idempotency(
        &self,
        user: &UserId,
        key: &str,
        request_hash: &str,
        holder: &Holder,
    ) -> StoreResult<Claim>;

    /// Takes a running key over from a holder that died (`from`, as a claim
    /// read it) for `to`: whether this call took it (exactly one of several
    /// racing callers does; none once the key was finished, freed or taken).
    async fn take_idempotency(&self, user: &UserId, key: &str, from: &Held, to: &Holder) -> StoreResult<bool>;

    /// Stores the response of the request that claimed `key`.
    async fn complete_idempotency(&self, user: &UserId, key: &str, response: &Redacted<String>) -> StoreResult<()>;

    /// Gives up a claim (the request failed in a way worth retrying).
    async fn release_idempotency(&self, user: &UserId, key: &str) -> StoreResult<()>;

    /// Stores a token's hash with its kind (`service`, `user`, `admin`) and subject.
    async fn put_token(&self, hash: &str, kind: &str, subject: &str) -> StoreResult<()>;

    /// The (kind, subject) of the token with this hash.
    async fn find_token(&self, hash: &str) -> StoreResult<Option<(String, String)>>;

    /// The subjects that have at least one token of `kind`.
    async fn token_subjects(&self, kind: &str) -> StoreResult<Vec<String>>;

    /// Adds money entries that are not there yet (by user and id), in one
    /// transaction; true for each entry added, false for one already kept.
    async fn money_add(&self, entries: &Redacted<Vec<MoneyEntry>>) -> StoreResult<Vec<bool>>;

    /// The user's money records, oldest first (at most [`money::MONEY_LIMIT`] rows, the newest).
    async fn money(&self, user: &UserId) -> StoreResult<Vec<MoneyEntry>>;

    /// Sets the category and/or note (`edit`: category, note) of the user's
    /// entry `id` (None keeps the value); false when the user has no such entry.
    async fn money_update(
        &self,
        user: &UserId,
        id: &str,
        edit: &Redacted<(Option<String>, Option<String>)>,
    ) -> StoreResult<bool>;

    /// Creates or replaces the user's goal or debt of that name.
    async fn put_money_plan(&self, plan: &Redacted<MoneyPlan>) -> StoreResult<()>;

    /// The user's goals and debts, by kind and name.
    async fn money_plans(&self, user: &UserId) -> StoreResult<Vec<MoneyPlan>>;

    // journal: durable trees and approvals (journal.rs)

    /// Writes a step of a durable tree (replacing its earlier state), durable
    /// when it returns. A step is its maker's: a write over one of another
    /// user, tree or (at the top) caller is `Conflict` and changes nothing,
    /// decided in the statement that writes it (see `journal::owned_by`).
    /// A top step another replica took over stays the taker's (the fence):
    /// such a write changes nothing either, and is not an error.
    async fn put_step(&self, step: &Redacted<TreeStep>) -> StoreResult<()>;

    /// The step of delegation `id`.
    async fn step(&self, id: RequestId) -> StoreResult<Option<TreeStep>>;

    /// Every step of the tree rooted at `root`, oldest first.
    async fn tree_steps(&self, root: RequestId) -> StoreResult<Vec<TreeStep>>;

    /// The steps that came in at the top and have not ended (running or
    /// waiting): the trees a restarted process resumes or keeps waiting.
    async fn open_steps(&self) -> StoreResult<Vec<TreeStep>>;

    /// Cancels the tree rooted at `root` for good, in one transaction: every
    /// running or waiting step is marked cancelled and every approval of the
    /// tree still pending is rejected (decided by `by`); how many steps were
    /// open. Nothing when the top step has ended: 0.
    async fn cancel_tree(&self, root: RequestId, by: &str) -> StoreResult<u64>;

    /// Closes the approvals of the tree rooted at `root` still pending, as
    /// `state` (expired at the tree's deadline); how many.
    async fn close_approvals(&self, root: RequestId, state: ApprovalState, by: &str) -> StoreResult<u64>;

    // replicas sharing the store (replicas.rs)

    /// Whether other processes may share this store (a file or a server):
    /// only then does a runtime hold a lease. An in-memory store is its process's own.
    fn shared(&self) -> bool {
        true
    }

    /// Renews `replica`'s lease (to `alive_until`), registering it the first time.
    async fn heartbeat(&self, replica: &Replica) -> StoreResult<()>;

    /// Every replica on record, oldest first.
    async fn replicas(&self) -> StoreResult<Vec<Replica>>;

    /// Forgets replica `id` if its lease has run out (it runs nothing any more).
    async fn forget_replica(&self, id: &str) -> StoreResult<()>;

    /// Takes the open step `seen` for `owner` if the store still holds it as
    /// seen (the same owner and write time): whether this call took it. Of
    /// several replicas taking one step at once, exactly one does. A taken
    /// step is `running` (its owner resumes it or ends it now), so a replica
    /// that reads it after the take finds it running on a live replica, not
    /// waiting for anyone to take it again. A running step is taken only
    /// while its owner's lease is out (checked in the same write): an owner
    /// that renewed after the taker looked keeps its tree. Waiting steps
    /// are anyone's.
    async fn take_step(&self, seen: &TreeStep, owner: &str) -> StoreResult<bool>;

    /// Of `ids`, the steps the store holds as cancelled (by another replica, say).
    async fn cancelled_steps(&self, ids: &[RequestId]) -> StoreResult<Vec<RequestId>>;

    /// Asks for an approval; if the node already asked for that action, the
    /// stored one (perhaps decided) comes back unchanged.
    async fn ask_approval(&self, approval: &Redacted<Approval>) -> StoreResult<Approval>;

    /// The approval `id`.
    async fn approval(&self, id: &str) -> StoreResult<Option<Approval>>;

    /// Approvals of `user` (every user's when None), only pending ones when `pending`, oldest first.
    async fn approvals(&self, user: Option<&UserId>, pending: bool) -> StoreResult<Vec<Approval>>;

    /// A person's decision on approval `id`, the one compare-and-set that
    /// decides its waiting tree: in one transaction, the approval goes from
    /// pending to `state` and the tree's top step from waiting to running,
    /// taken for replica `taker` (which resumes it now). None, changing
    /// nothing, when the approval is unknown or decided, or its tree no
    /// longer waits (a cancel, another decision or its deadline came first).
    async fn decide_approval(
        &self,
        id: &str,
        state: ApprovalState,
        by: &str,
        reason: Option<&Redacted<String>>,
        taker: &str,
    ) -> StoreResult<Option<Approval>>;

    /// Keeps the report of a replay that was run.
    async fn put_replay(&self, replay: &Redacted<ReplayRecord>) -> StoreResult<()>;

    /// The replays of the tree rooted at `root`, newest first (at most [`REPLAYS_LIMIT`]).
    async fn replays(&self, root: RequestId) -> StoreResult<Vec<ReplayRecord>>;

    // A2A tasks and breakers (a2a_state.rs)
    /// Saves an A2A task, unless the store holds a version of it with a
    /// higher or equal `seq`; true when written. Its owner, agent and
    /// context never change once written.
    async fn put_a2a_task(&self, task: &Redacted<A2aTaskRecord>) -> StoreResult<bool>;

    /// The A2A task `id`, whoever owns it (read only; callers check the owner).
    async fn a2a_task(&self, id: &str) -> StoreResult<Option<A2aTaskRecord>>;

    /// A page of the A2A tasks `query` names, the latest status first, and how many match.
    async fn a2a_tasks(&self, query: &A2aTaskQuery) -> StoreResult<A2aTaskPage>;

    /// Saves a breaker, replacing the one of the same agent and user, except
    /// that a breaker another replica opened stays open for `hold_open_ms`
    /// (the cool-down) against a record that is not open and opened before
    /// it: a replica that has not seen it open yet does not close it.
    async fn put_breaker(&self, breaker: &BreakerRecord, hold_open_ms: u64) -> StoreResult<()>;

    /// Forgets the breaker of `agent` (the user's own one when `user` is
    /// given): it counts nothing. One that is open and within `hold_open_ms`
    /// of its opening stays.
    async fn remove_breaker(&self, agent: &AgentSlug, user: Option<&UserId>, hold_open_ms: u64) -> StoreResult<()>;

    /// Every breaker on file, by agent and user.
    async fn breakers(&self) -> StoreResult<Vec<BreakerRecord>>;

    /// Appends the events of A2A tasks' streams (each with its per-task
    /// `seq`; an event whose task and seq are on file already is not
    /// written again), and keeps only the newest [`MAX_EVENTS_PER_TASK`] of
    /// each task.
    async fn append_a2a_events(&self, events: &Redacted<Vec<A2aEventRecord>>) -> StoreResult<()>;

    /// Saves a task's version (as [`Store::put_a2a_task`], when there is
    /// one) and appends events (as [`Store::append_a2a_events`]) together:
    /// in one transaction where the store has them, so a change of a task
    /// costs one commit, synced before it returns unless `durability` says
    /// the next synced commit may sync it. True when the version was written.
    async fn put_a2a_task_with_events(
        &self,
        task: Option<&Redacted<A2aTaskRecord>>,
        events: &Redacted<Vec<A2aEventRecord>>,
        durability: Durability,
    ) -> StoreResult<bool> {
        // a store without a log to sync keeps every write as it returns
        let _ = durability;
        let written = match task {
            Some(t) => self.put_a2a_task(t).await?,
            None => false,
        };
        self.append_a2a_events(events).await?;
        Ok(written)
    }

    /// The events of task `task_id` with a seq above `after`, oldest first, at most `limit`.
    async fn a2a_events(&self, task_id: &str, after: i64, limit: usize) -> StoreResult<Vec<A2aEventRecord>>;

    /// The seq of the task's newest event on file; 0 when it has none.
    async fn a2a_event_seq(&self, task_id: &str) -> StoreResult<i64>;

    // A2A push notification configs (a2a_push.rs)
    /// Creates a push config, or replaces the `config` of the one with its
    /// task and id (its delivery cursor and failures stay).
    async fn put_a2a_push_config(&self, config: &Redacted<A2aPushConfigRecord>) -> StoreResult<()>;

    /// The push configs of task `task_id`, oldest first.
    async fn a2a_push_configs(&self, task_id: &str) -> StoreResult<Vec<A2aPushConfigRecord>>;

    /// Deletes a push config; true when there was one.
    async fn delete_a2a_push_config(&self, task_id: &str, id: &str) -> StoreResult<bool>;

    /// Claims the delivery of the task's events up to `to` for a push config
    /// whose cursor is at `from`; false when it is not (another process
    /// claimed them) or the config is gone.
    async fn claim_a2a_push(&self, task_id: &str, id: &str, from: i64, to: i64) -> StoreResult<bool>;

    /// Counts a delivery of a push config that finally failed, with its error.
    async fn a2a_push_failed(&self, task_id: &str, id: &str, error: &Redacted<String>) -> StoreResult<()>;

    /// How many rows each table holds.
    async fn counts(&self) -> StoreResult<StoreCounts>;

    // usage analytics, past trees and ratings (analytics.rs, history.rs, ratings.rs)

    /// Usage over `query`'s range, of one user or of everyone
    /// ([`Analytics`]; the SQL stores roll up what changed first).
    async fn analytics(&self, query: &AnalyticsQuery) -> StoreResult<Analytics>;

    /// A page of past trees, newest first (`query` checked by [`HistoryQuery::check`]).
    async fn past_trees(&self, query: &HistoryQuery) -> StoreResult<HistoryPage>;

    /// Rates tree `root` for `user`, replacing the rating they gave it
    /// before. Only the tree's own user rates it, checked in the write:
    /// another user's tree is [`Rated::NotYours`], one that does not exist
    /// (or has not answered) [`Rated::NotFound`], and neither changes anything.
    async fn rate_tree(
        &self,
        user: &UserId,
        root: RequestId,
        thumb: Thumb,
        comment: Option<&Redacted<String>>,
    ) -> StoreResult<Rated>;

    /// The rating of tree `root`, whoever gave it (read only; callers check the owner).
    async fn rating(&self, root: RequestId) -> StoreResult<Option<Rating>>;
}

/// Opens the store a URL names: `memory:`, `sqlite://PATH` (created on first
/// use) or `postgres://…`.
pub async fn open(url: &str) -> StoreResult<std::sync::Arc<dyn Store>> {
    open_anchored(url, None).await
}

/// [`open`], with the SQL store writing the audit head to `anchor_file`
/// after every batch of appends as well (see [`anchor`]). The memory store,
/// which keeps nothing past the process, has no anchor file.
pub async fn open_anchored(url: &str, anchor_file: Option<&std::path::Path>) -> StoreResult<std::sync::Arc<dyn Store>> {
    if url == "memory:" || url == "memory" {
        return Ok(std::sync::Arc::new(MemoryStore::new()));
    }
    Ok(std::sync::Arc::new(SqlStore::connect_anchored(url, anchor_file).await?))
}

/// A backend's failure (a connection, a query, a migration) as a [`StoreError`].
pub(super) fn backend_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}
