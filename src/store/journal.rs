//! Durable trees: the journal of every admitted delegation ([`TreeStep`])
//! and the approvals people give or refuse ([`Approval`]). A step is
//! written when its agent starts and again when it ends, with its record;
//! a restarted process reads the open ones to resume their trees, and a
//! resumed parent gets a finished child's answer back from here instead of
//! running the child again.

use serde::{Deserialize, Serialize};
use sqlx::{AnyPool, FromRow};

use super::backend_err;
use super::{StoreError, StoreResult};
use crate::protocol::{RequestId, UserId};

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    /// Admitted and its agent runs (or ran when the process died).
    Running,
    /// Paused for a person's approval; resumes when it is given.
    Waiting,
    /// Answered (success, partial, or a question for the user).
    Done,
    /// Ended with an error.
    Failed,
    /// Cancelled; a resumed process does not start it again.
    Cancelled,
}

impl StepState {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The state a stored name stands for.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => Self::Running,
            "waiting" => Self::Waiting,
            "done" => Self::Done,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }

    /// Whether the step has ended for good.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Done | Self::Failed | Self::Cancelled)
    }
}

/// One delegation of a durable tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeStep {
    /// The delegation's id; a child's comes from its parent's id and its place in it.
    pub request_id: RequestId,
    /// Its tree's root.
    pub root_id: RequestId,
    /// The delegation that made it; None at the top.
    pub parent_id: Option<RequestId>,
    /// The user it runs for.
    pub user_id: UserId,
    /// The agent asked.
    pub target: String,
    /// Where it stands.
    pub state: StepState,
    /// How it came in: `user` (a user's turn), `delegation`, `remote`, or
    /// `child` (made by a parent running in the same process). Only steps
    /// that did not come from a parent here are resumed on their own.
    pub entry: String,
    /// The principal that sent it, as `kind:subject` (`user:alice`, `service:prime-boss`, `admin:admin`).
    pub caller: String,
    /// The envelope (a `DelegationRequest`) as JSON, PII redacted.
    pub request: String,
    /// The answer (a `DelegationResponse`) as JSON once it ended or waits.
    pub response: Option<String>,
    /// When its deadline passes, in epoch milliseconds.
    pub deadline_at: i64,
    /// Tokens granted to it, its subtree included.
    pub budget: u32,
    /// Attempts its agent made, once it ended (0 before).
    pub attempts: u32,
    /// What its agent read from the store as it ran (the agent layer's
    /// `StepReads` as JSON), once it ended: what a replay gives the agent again.
    pub reads: Option<String>,
    /// How many times a restarted process resumed it.
    pub resumes: u32,
    /// A top step's PII vault, sealed (encrypted under a key kept outside
    /// the store): what a resumed tree restores its tokens with.
    pub pii: Option<String>,
    /// When it was first written.
    pub created_at: i64,
    /// When it was last written.
    pub updated_at: i64,
    /// The replica running it (`replicas.id`), taken over when that
    /// replica's lease runs out; None for steps written before replicas
    /// were kept.
    pub owner: Option<String>,
}

impl TreeStep {
    /// Whether it came in at the top (no parent in this process): what a restart resumes.
    pub fn is_top(&self) -> bool {
        self.entry != "child"
    }
}

/// Where an approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// Nobody has answered yet.
    Pending,
    /// A person said yes: the node goes on.
    Approved,
    /// A person said no: the node ends without doing it.
    Rejected,
    /// The tree's deadline passed first.
    Expired,
}

impl ApprovalState {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Expired => "expired",
        }
    }

    /// The state a stored name stands for.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "approved" => Self::Approved,
            "rejected" => Self::Rejected,
            "expired" => Self::Expired,
            _ => return None,
        })
    }
}

/// An action an agent may take only once a person approves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// The approval's id (what `switchboard approve` takes).
    pub id: String,
    /// The tree it pauses.
    pub root_id: RequestId,
    /// The node that waits for it.
    pub request_id: RequestId,
    /// The user whose tree it is: only they (or an operator) may answer.
    pub user_id: UserId,
    /// The agent that asked.
    pub agent: String,
    /// The action (`send_email`).
    pub action: String,
    /// What would be done, PII redacted.
    pub summary: String,
    /// Where it stands.
    pub state: ApprovalState,
    /// The reason given with the decision.
    pub reason: Option<String>,
    /// Who decided (a principal's label).
    pub decided_by: Option<String>,
    /// When it was asked, in epoch milliseconds.
    pub created_at: i64,
    /// When it was decided.
    pub decided_at: Option<i64>,
}

impl Approval {
    /// The id of the approval `node` asks for `action`: the same on every
    /// run of the node, so a resumed node finds the answer to its question.
    pub fn id_for(node: RequestId, action: &str) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(format!("{node}\n{action}").as_bytes());
        format!("apr-{}", hex::encode(&digest[..8]))
    }
}

/// A replay that was run, and what it found (the report is the pipeline's
/// `ReplayReport` as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayRecord {
    /// The replay's own id.
    pub id: String,
    /// The tree replayed.
    pub root_id: RequestId,
    /// The tree's user.
    pub user_id: UserId,
    /// `recorded` or `live`.
    pub mode: String,
    /// Every node the same.
    pub identical: bool,
    /// Nodes that differ.
    pub differing: u32,
    /// Nodes compared.
    pub nodes: u32,
    /// The whole report, as JSON.
    pub report: String,
    /// Who ran it (a principal's label).
    pub run_by: String,
    /// When, in epoch milliseconds.
    pub created_at: i64,
}

/// `next` written over `before` (the same step): a step never moves back
/// from an end it reached (a late write of its start keeps the end), an
/// empty envelope keeps the stored one, and the first write's time stays.
/// A top step another replica took over is not written by its former
/// owner (the fence). The SQL upsert ([`STEP_UPSERT`]) applies the same rules.
pub(super) fn merged(before: &TreeStep, next: &TreeStep) -> TreeStep {
    if fenced(before, next) {
        return before.clone();
    }
    let mut out = next.clone();
    out.created_at = before.created_at;
    if out.request.is_empty() {
        out.request = before.request.clone();
    }
    if out.reads.is_none() {
        out.reads = before.reads.clone();
    }
    if out.pii.is_none() {
        out.pii = before.pii.clone();
    }
    if out.owner.is_none() {
        out.owner = before.owner.clone();
    }
    out.resumes = out.resumes.max(before.resumes);
    if before.state.is_terminal() && !next.state.is_terminal() {
        (out.state, out.response, out.attempts) = (before.state, before.response.clone(), before.attempts);
    }
    out
}

/// Whether `next` is the same step as `before` (stored under the same id)
/// written again by its maker: the same user, tree and parent, and at the
/// top the same caller. Anything else under that id is another caller's
/// (an id chosen to write over someone else's step) and is refused. The
/// SQL upsert ([`STEP_UPSERT`]) applies the same rule.
pub(super) fn owned_by(before: &TreeStep, next: &TreeStep) -> bool {
    before.user_id == next.user_id
        && before.root_id == next.root_id
        && before.parent_id == next.parent_id
        && (before.entry == "child" || before.caller == next.caller)
}

/// Whether `next` is a write of the top step `before` by a replica that no
/// longer owns it: only a take moves a top step's owner.
pub(super) fn fenced(before: &TreeStep, next: &TreeStep) -> bool {
    before.entry != "child" && matches!((&before.owner, &next.owner), (Some(held), Some(writer)) if held != writer)
}

fn corrupt(what: &str, value: &str) -> StoreError {
    StoreError::Backend(format!("corrupt {what} '{value}'"))
}

#[derive(FromRow)]
struct StepRow {
    request_id: String,
    root_id: String,
    parent_id: Option<String>,
    user_id: String,
    target: String,
    state: String,
    entry: String,
    caller: String,
    request: String,
    response: Option<String>,
    deadline_at: i64,
    budget: i64,
    attempts: i64,
    reads: Option<String>,
    resumes: i64,
    pii: Option<String>,
    created_at: i64,
    updated_at: i64,
    owner: Option<String>,
}

impl TryFrom<StepRow> for TreeStep {
    type Error = StoreError;
    fn try_from(r: StepRow) -> StoreResult<Self> {
        let id = |s: &str| s.parse::<RequestId>().map_err(|_| corrupt("request id", s));
        Ok(TreeStep {
            request_id: id(&r.request_id)?,
            root_id: id(&r.root_id)?,
            parent_id: r.parent_id.as_deref().map(id).transpose()?,
            user_id: UserId::parse(r.user_id.clone()).map_err(|_| corrupt("user", &r.user_id))?,
            target: r.target,
            state: StepState::parse(&r.state).ok_or_else(|| corrupt("step state", &r.state))?,
            entry: r.entry,
            caller: r.caller,
            request: r.request,
            response: r.response,
            deadline_at: r.deadline_at,
            budget: u32::try_from(r.budget).unwrap_or(0),
            attempts: u32::try_from(r.attempts).unwrap_or(0),
            reads: r.reads,
            resumes: u32::try_from(r.resumes).unwrap_or(0),
            pii: r.pii,
            created_at: r.created_at,
            updated_at: r.updated_at,
            owner: r.owner,
        })
    }
}

const STEP_COLUMNS: &str = "request_id, root_id, parent_id, user_id, target, state, entry, caller, request, \
                            response, deadline_at, budget, attempts, reads, resumes, pii, created_at, updated_at, owner";

/// The `INSERT` of a step, and how a later write of the same step replaces it
/// (its first write's `created_at` stays).
pub(super) const STEP_INSERT: &str = "INSERT INTO tree_steps (request_id, root_id, parent_id, user_id, target, state, \
     entry, caller, request, response, deadline_at, budget, attempts, reads, resumes, pii, created_at, updated_at, owner) VALUES ";
/// A step never moves back from an end it reached (a late write of its
/// start keeps the end), and an empty envelope keeps the stored one. A top
/// step another replica took over (`owner` moved by [`take_step`]) is not
/// written by its former owner any more: a replica paused or cut off past
/// its lease that wakes up and writes its tree's end leaves the taker's
/// step as it is (the fence; docs/SCALE.md). Only a take moves a top step's
/// owner, so no honest write is refused. And a step is its maker's: a write
/// under its id by another user, tree or (at the top) caller changes nothing
/// ([`owned_by`]); the writer tells such a write from a fenced one by the
/// row it finds.
///
/// [`take_step`]: super::Store::take_step
pub(super) const STEP_UPSERT: &str = " ON CONFLICT (request_id) DO UPDATE SET \
     state = CASE WHEN tree_steps.state IN ('done', 'failed', 'cancelled') AND excluded.state IN ('running', 'waiting') \
       THEN tree_steps.state ELSE excluded.state END, \
     response = CASE WHEN tree_steps.state IN ('done', 'failed', 'cancelled') AND excluded.state IN ('running', 'waiting') \
       THEN tree_steps.response ELSE excluded.response END, \
     attempts = CASE WHEN tree_steps.state IN ('done', 'failed', 'cancelled') AND excluded.state IN ('running', 'waiting') \
       THEN tree_steps.attempts ELSE excluded.attempts END, \
     request = CASE WHEN excluded.request = '' THEN tree_steps.request ELSE excluded.request END, \
     reads = COALESCE(excluded.reads, tree_steps.reads), \
     pii = COALESCE(excluded.pii, tree_steps.pii), \
     resumes = CASE WHEN excluded.resumes > tree_steps.resumes THEN excluded.resumes ELSE tree_steps.resumes END, \
     owner = COALESCE(excluded.owner, tree_steps.owner), \
     deadline_at = excluded.deadline_at, budget = excluded.budget, updated_at = excluded.updated_at \
     WHERE tree_steps.user_id = excluded.user_id AND tree_steps.root_id = excluded.root_id \
       AND COALESCE(tree_steps.parent_id, '') = COALESCE(excluded.parent_id, '') \
       AND (tree_steps.entry = 'child' OR tree_steps.caller = excluded.caller) \
       AND (tree_steps.entry = 'child' OR excluded.owner IS NULL OR tree_steps.owner IS NULL \
         OR tree_steps.owner = excluded.owner)";

fn convert(rows: Vec<StepRow>) -> StoreResult<Vec<TreeStep>> {
    rows.into_iter().map(TreeStep::try_from).collect()
}

pub(super) async fn step(pool: &AnyPool, id: RequestId) -> StoreResult<Option<TreeStep>> {
    let sql = format!("SELECT {STEP_COLUMNS} FROM tree_steps WHERE request_id = $1");
    let row: Option<StepRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id.to_string())
        .fetch_optional(pool)
        .await
        .map_err(backend_err)?;
    row.map(TreeStep::try_from).transpose()
}

/// [`step`] on an SQLite file's read connections.
pub(super) fn step_sqlite(readers: &super::sqlite_read::Readers, id: RequestId) -> StoreResult<Option<TreeStep>> {
    let sql = format!("SELECT {STEP_COLUMNS} FROM tree_steps WHERE request_id = ?1");
    let rows = readers.rows(&sql, [id.to_string()], |r| {
        Ok(StepRow {
            request_id: r.get(0)?,
            root_id: r.get(1)?,
            parent_id: r.get(2)?,
            user_id: r.get(3)?,
            target: r.get(4)?,
            state: r.get(5)?,
            entry: r.get(6)?,
            caller: r.get(7)?,
            request: r.get(8)?,
            response: r.get(9)?,
            deadline_at: r.get(10)?,
            budget: r.get(11)?,
            attempts: r.get(12)?,
            reads: r.get(13)?,
            resumes: r.get(14)?,
            pii: r.get(15)?,
            created_at: r.get(16)?,
            updated_at: r.get(17)?,
            owner: r.get(18)?,
        })
    })?;
    rows.into_iter().next().map(TreeStep::try_from).transpose()
}

/// The steps of the tree whose root is `$1`.
pub(super) fn steps_sql() -> String {
    let tree = super::trees::of_tree("tree_steps", "$1");
    format!("SELECT {STEP_COLUMNS} FROM tree_steps WHERE {tree} ORDER BY created_at, request_id")
}

/// Cancels the open steps below the root `$2` (`$1`: the time).
pub(super) fn cancel_below_sql() -> String {
    format!(
        "UPDATE tree_steps SET state = 'cancelled', updated_at = $1 WHERE {} AND state IN ('running', 'waiting')",
        super::trees::below_root("tree_steps", "$2")
    )
}

pub(super) async fn steps(pool: &AnyPool, root: RequestId) -> StoreResult<Vec<TreeStep>> {
    let sql = steps_sql();
    let rows: Vec<StepRow> =
        sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(root.to_string()).fetch_all(pool).await.map_err(backend_err)?;
    convert(rows)
}

pub(super) async fn open_steps(pool: &AnyPool) -> StoreResult<Vec<TreeStep>> {
    let sql = format!(
        "SELECT {STEP_COLUMNS} FROM tree_steps WHERE state IN ('running', 'waiting') AND entry <> 'child' \
         ORDER BY created_at, request_id"
    );
    let rows: Vec<StepRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(pool).await.map_err(backend_err)?;
    convert(rows)
}

/// Cancels a tree whose top step has not ended: its pending approvals
/// rejected and its open steps cancelled, in one transaction (see
/// `Store::cancel_tree`).
pub(super) async fn cancel_tree(pool: &AnyPool, root: RequestId, by: &str, now: i64) -> StoreResult<u64> {
    let mut tx = pool.begin().await.map_err(backend_err)?;
    let root = root.to_string();
    // the top step first: the row every decision about the tree goes through
    let open = sqlx::query(
        "UPDATE tree_steps SET state = 'cancelled', updated_at = $1 WHERE request_id = $2 \
         AND state IN ('running', 'waiting')",
    )
    .bind(now)
    .bind(root.clone())
    .execute(&mut *tx)
    .await
    .map_err(backend_err)?;
    if open.rows_affected() == 0 {
        // rolled back now: a dropped transaction's rollback waits for the connection's next use,
        // and until then the pooled connection sits idle in a transaction holding its locks
        tx.rollback().await.map_err(backend_err)?;
        return Ok(0);
    }
    let below = sqlx::query(sqlx::AssertSqlSafe(cancel_below_sql()))
        .bind(now)
        .bind(root.clone())
        .execute(&mut *tx)
        .await
        .map_err(backend_err)?;
    close_approvals_on(&mut tx, &root, ApprovalState::Rejected, by, Some("the tree was cancelled"), now).await?;
    tx.commit().await.map_err(backend_err)?;
    Ok(1 + below.rows_affected())
}

/// Closes a tree's pending approvals as `state` (see `Store::close_approvals`).
pub(super) async fn close_approvals(
    pool: &AnyPool,
    root: RequestId,
    state: ApprovalState,
    by: &str,
    now: i64,
) -> StoreResult<u64> {
    let mut conn = pool.acquire().await.map_err(backend_err)?;
    close_approvals_on(&mut conn, &root.to_string(), state, by, None, now).await
}

async fn close_approvals_on(
    conn: &mut sqlx::AnyConnection,
    root: &str,
    state: ApprovalState,
    by: &str,
    reason: Option<&str>,
    now: i64,
) -> StoreResult<u64> {
    let done = sqlx::query(
        "UPDATE approvals SET state = $1, decided_by = $2, reason = $3, decided_at = $4 \
         WHERE root_id = $5 AND state = 'pending'",
    )
    .bind(state.as_str())
    .bind(by.to_string())
    .bind(reason.map(str::to_string))
    .bind(now)
    .bind(root.to_string())
    .execute(&mut *conn)
    .await
    .map_err(backend_err)?;
    Ok(done.rows_affected())
}

#[derive(FromRow)]
struct ApprovalRow {
    id: String,
    root_id: String,
    request_id: String,
    user_id: String,
    agent: String,
    action: String,
    summary: String,
    state: String,
    reason: Option<String>,
    decided_by: Option<String>,
    created_at: i64,
    decided_at: Option<i64>,
}

impl TryFrom<ApprovalRow> for Approval {
    type Error = StoreError;
    fn try_from(r: ApprovalRow) -> StoreResult<Self> {
        let id = |s: &str| s.parse::<RequestId>().map_err(|_| corrupt("request id", s));
        Ok(Approval {
            root_id: id(&r.root_id)?,
            request_id: id(&r.request_id)?,
            user_id: UserId::parse(r.user_id.clone()).map_err(|_| corrupt("user", &r.user_id))?,
            state: ApprovalState::parse(&r.state).ok_or_else(|| corrupt("approval state", &r.state))?,
            id: r.id,
            agent: r.agent,
            action: r.action,
            summary: r.summary,
            reason: r.reason,
            decided_by: r.decided_by,
            created_at: r.created_at,
            decided_at: r.decided_at,
        })
    }
}

const APPROVAL_COLUMNS: &str =
    "id, root_id, request_id, user_id, agent, action, summary, state, reason, decided_by, created_at, decided_at";

/// Asks for an approval; one already asked for (same node and action) stays as it is.
pub(super) async fn ask_approval(pool: &AnyPool, a: &Approval) -> StoreResult<Approval> {
    sqlx::query(
        "INSERT INTO approvals (id, root_id, request_id, user_id, agent, action, summary, state, reason, decided_by, \
         created_at, decided_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING",
    )
    .bind(a.id.clone())
    .bind(a.root_id.to_string())
    .bind(a.request_id.to_string())
    .bind(a.user_id.to_string())
    .bind(a.agent.clone())
    .bind(a.action.clone())
    .bind(a.summary.clone())
    .bind(a.state.as_str())
    .bind(a.reason.clone())
    .bind(a.decided_by.clone())
    .bind(a.created_at)
    .bind(a.decided_at)
    .execute(pool)
    .await
    .map_err(backend_err)?;
    approval(pool, &a.id).await?.ok_or_else(|| backend_err(format!("approval {} vanished", a.id)))
}

pub(super) async fn approval(pool: &AnyPool, id: &str) -> StoreResult<Option<Approval>> {
    let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE id = $1");
    let row: Option<ApprovalRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(id.to_string())
        .fetch_optional(pool)
        .await
        .map_err(backend_err)?;
    row.map(Approval::try_from).transpose()
}

pub(super) async fn approvals(pool: &AnyPool, user: Option<&UserId>, pending: bool) -> StoreResult<Vec<Approval>> {
    let mut sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE 1 = 1");
    if user.is_some() {
        sql.push_str(" AND user_id = $1");
    }
    if pending {
        sql.push_str(" AND state = 'pending'");
    }
    sql.push_str(" ORDER BY created_at, id LIMIT 1000");
    let mut q = sqlx::query_as::<_, ApprovalRow>(sqlx::AssertSqlSafe(sql));
    if let Some(u) = user {
        q = q.bind(u.to_string());
    }
    let rows = q.fetch_all(pool).await.map_err(backend_err)?;
    rows.into_iter().map(Approval::try_from).collect()
}

/// Decides a pending approval of a waiting tree and takes the tree for
/// `taker`, in one transaction; None, changing nothing, when the approval
/// is not pending or its tree does not wait (see `Store::decide_approval`).
#[allow(clippy::too_many_arguments)]
pub(super) async fn decide_approval(
    pool: &AnyPool,
    id: &str,
    state: ApprovalState,
    by: &str,
    reason: Option<&str>,
    taker: &str,
    now: i64,
) -> StoreResult<Option<Approval>> {
    let mut tx = pool.begin().await.map_err(backend_err)?;
    // the tree first: of a decision and a cancel racing, the one that moves it decides
    let taken = sqlx::query(
        "UPDATE tree_steps SET state = 'running', owner = $1, updated_at = $2 WHERE state = 'waiting' \
         AND request_id = (SELECT root_id FROM approvals WHERE id = $3 AND state = 'pending')",
    )
    .bind(taker.to_string())
    .bind(now)
    .bind(id.to_string())
    .execute(&mut *tx)
    .await
    .map_err(backend_err)?;
    if taken.rows_affected() == 0 {
        tx.rollback().await.map_err(backend_err)?; // now, not at the connection's next use (cancel_tree)
        return Ok(None);
    }
    let done = sqlx::query(
        "UPDATE approvals SET state = $1, decided_by = $2, reason = $3, decided_at = $4 \
         WHERE id = $5 AND state = 'pending'",
    )
    .bind(state.as_str())
    .bind(by.to_string())
    .bind(reason.map(str::to_string))
    .bind(now)
    .bind(id.to_string())
    .execute(&mut *tx)
    .await
    .map_err(backend_err)?;
    if done.rows_affected() == 0 {
        tx.rollback().await.map_err(backend_err)?;
        return Ok(None);
    }
    tx.commit().await.map_err(backend_err)?;
    approval(pool, id).await
}

#[derive(FromRow)]
struct ReplayRow {
    id: String,
    root_id: String,
    user_id: String,
    mode: String,
    identical: i64,
    differing: i64,
    nodes: i64,
    report: String,
    run_by: String,
    created_at: i64,
}

pub(super) async fn put_replay(pool: &AnyPool, r: &ReplayRecord) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO replays (id, root_id, user_id, mode, identical, differing, nodes, report, run_by, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(r.id.clone())
    .bind(r.root_id.to_string())
    .bind(r.user_id.to_string())
    .bind(r.mode.clone())
    .bind(i64::from(r.identical))
    .bind(i64::from(r.differing))
    .bind(i64::from(r.nodes))
    .bind(r.report.clone())
    .bind(r.run_by.clone())
    .bind(r.created_at)
    .execute(pool)
    .await
    .map_err(backend_err)?;
    Ok(())
}

/// The replays of a tree, newest first (at most [`REPLAYS_LIMIT`]).
pub(super) async fn replays(pool: &AnyPool, root: RequestId) -> StoreResult<Vec<ReplayRecord>> {
    let rows: Vec<ReplayRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT id, root_id, user_id, mode, identical, differing, nodes, report, run_by, created_at FROM replays \
         WHERE root_id = $1 ORDER BY created_at DESC, id DESC LIMIT {REPLAYS_LIMIT}"
    )))
    .bind(root.to_string())
    .fetch_all(pool)
    .await
    .map_err(backend_err)?;
    rows.into_iter()
        .map(|r| {
            Ok(ReplayRecord {
                root_id: r.root_id.parse().map_err(|_| corrupt("request id", &r.root_id))?,
                user_id: UserId::parse(r.user_id.clone()).map_err(|_| corrupt("user", &r.user_id))?,
                id: r.id,
                mode: r.mode,
                identical: r.identical != 0,
                differing: u32::try_from(r.differing).unwrap_or(0),
                nodes: u32::try_from(r.nodes).unwrap_or(0),
                report: r.report,
                run_by: r.run_by,
                created_at: r.created_at,
            })
        })
        .collect()
}

/// How many replays of one tree are listed.
pub const REPLAYS_LIMIT: usize = 50;
