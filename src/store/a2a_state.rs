//! State that outlives a restart besides the trees: the A2A tasks of the
//! service (each task as a client reads it, with its history and artifacts),
//! the events their streams sent, and the circuit breakers with what they
//! count. The processes keep caches of them; the store is where a restarted
//! process finds them again.
//!
//! A task's `seq` orders its versions: a write never replaces a version with
//! a higher `seq`, so writes that reach the store out of order keep the
//! newest. A task's events are numbered 1, 2, 3, ... (their own `seq`, the
//! SSE `id:`); the newest [`MAX_EVENTS_PER_TASK`] of each task are kept.
//! A breaker is written (coalesced, off the call path) whenever it counts
//! something: open, half-open, or closed with failures in its counts; it is
//! removed once it is closed with nothing counted. A stored open breaker
//! whose cool-down, counted from `opened_at` on the wall clock, has passed
//! is half-open when it is loaded.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use sqlx::{AnyConnection, AnyPool, AssertSqlSafe, FromRow};

use super::backend_err;
use super::{StoreError, StoreResult, now_ms};
use crate::protocol::a2a::types::{StreamResponse, Task};
use crate::protocol::{AgentSlug, SessionId, UserId};
use crate::util::lock;

/// One A2A task as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct A2aTaskRecord {
    /// The task id (the request id of its first turn).
    pub id: String,
    /// The caller's principal label (`user:alice`, `agent:prime-boss`): only
    /// it, or an admin, may see the task.
    pub owner: String,
    /// The agent the task was sent to.
    pub agent: String,
    /// The task's contextId.
    pub context_id: String,
    /// The session its turns ran in, once it has one.
    pub session_id: Option<SessionId>,
    /// The task's state as A2A names it (`TASK_STATE_COMPLETED`).
    pub state: String,
    /// The A2A `Task` as JSON: status, history, artifacts, metadata.
    pub task: String,
    /// The version: a write with a lower or equal `seq` than the stored one is not kept.
    pub seq: i64,
    /// The status timestamp, in milliseconds since the Unix epoch.
    pub updated_at: i64,
    /// The vault the task's texts were redacted with, sealed; None when they held no PII.
    pub pii: Option<String>,
}

impl A2aTaskRecord {
    /// The record of `task` at version `seq`.
    pub fn new(task: &Task, owner: &str, agent: &AgentSlug, session: Option<SessionId>, seq: i64) -> Self {
        let updated_at = task
            .status
            .timestamp
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map_or_else(now_ms, |t| t.timestamp_millis());
        Self {
            id: task.id.clone(),
            owner: owner.to_string(),
            agent: agent.to_string(),
            context_id: task.context_id.clone(),
            session_id: session,
            state: task.status.state.as_str().to_string(),
            task: serde_json::to_string(task).unwrap_or_default(),
            seq,
            updated_at,
            pii: None,
        }
    }

    /// The A2A task it holds.
    pub fn to_task(&self) -> StoreResult<Task> {
        serde_json::from_str(&self.task).map_err(|e| backend_err(format!("corrupt A2A task '{}': {e}", self.id)))
    }
}

/// Which A2A tasks to list: one agent's, of one owner (None: everyone's, for
/// an admin), optionally in one context, in one state, or updated after a time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct A2aTaskQuery {
    /// The owner's principal label; None lists every owner's.
    pub owner: Option<String>,
    /// The agent the tasks were sent to.
    pub agent: String,
    /// Only tasks with this contextId.
    pub context_id: Option<String>,
    /// Only tasks in this state (`TASK_STATE_WORKING`).
    pub state: Option<String>,
    /// Only tasks whose status timestamp is later than this (ms since the epoch).
    pub updated_after: Option<i64>,
    /// Matching tasks to skip (newest first).
    pub offset: usize,
    /// The most tasks to return.
    pub limit: usize,
}

/// A page of A2A tasks, newest status first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct A2aTaskPage {
    /// The page.
    pub tasks: Vec<A2aTaskRecord>,
    /// How many tasks match the query in all.
    pub total: u64,
}

/// A circuit breaker that is open, half-open, or closed with failures
/// counted short of opening, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerRecord {
    /// The agent whose breaker it is.
    pub agent: AgentSlug,
    /// The user whose own breaker for the agent it is; None for the agent's breaker.
    pub user: Option<UserId>,
    /// `open`, `half_open` or `closed`.
    pub state: String,
    /// When it last opened, in milliseconds since the Unix epoch (wall clock).
    pub opened_at: i64,
    /// Failures in a row when it opened.
    pub consecutive: u32,
    /// Of those, faults no input causes.
    pub run_faults: u32,
    /// The users whose requests failed in that run.
    pub run_users: Vec<UserId>,
    /// Successful probes since it half-opened.
    pub probe_successes: u32,
    /// When it was written, in milliseconds since the Unix epoch.
    pub updated_at: i64,
    /// The rest of what it counts (its window of recent calls).
    #[serde(default)]
    pub counters: BreakerCounters,
}

/// What a breaker counts besides its run of failures: its window of recent
/// calls, for the failure rate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BreakerCounters {
    /// The window of recent calls, oldest first.
    pub recent: Vec<RecentCall>,
}

/// One call in a breaker's window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecentCall {
    /// How it failed: `fault` (no input causes it) or `on_request`; None: it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The user whose request it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserId>,
}

/// The events kept per A2A task: the newest 1 000. A client that reconnects
/// with a `Last-Event-ID` older than those gets the ones kept (and the task
/// as it is now, first).
pub const MAX_EVENTS_PER_TASK: i64 = 1_000;

/// One event of an A2A task's stream, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct A2aEventRecord {
    /// The task it belongs to.
    pub task_id: String,
    /// Its number within the task, from 1: the SSE `id:` it was sent with.
    pub seq: i64,
    /// The A2A `StreamResponse` as JSON (a status or an artifact update).
    pub event: String,
    /// When it was written, in milliseconds since the Unix epoch.
    pub created_at: i64,
}

impl A2aEventRecord {
    /// The record of `event`, number `seq` of task `task_id`.
    pub fn new(task_id: &str, seq: i64, event: &StreamResponse) -> Self {
        Self {
            task_id: task_id.to_string(),
            seq,
            event: serde_json::to_string(event).unwrap_or_default(),
            created_at: now_ms(),
        }
    }

    /// The event it holds.
    pub fn to_event(&self) -> StoreResult<StreamResponse> {
        serde_json::from_str(&self.event)
            .map_err(|e| backend_err(format!("corrupt event {} of A2A task '{}': {e}", self.seq, self.task_id)))
    }
}

// ---- SQL (SQLite and PostgreSQL through the Any driver) ----

const TASK_COLUMNS: &str = "id, owner, agent, context_id, session_id, state, task, seq, updated_at, pii";

#[derive(Debug, FromRow)]
struct TaskRow {
    id: String,
    owner: String,
    agent: String,
    context_id: String,
    session_id: Option<String>,
    state: String,
    task: String,
    seq: i64,
    updated_at: i64,
    pii: Option<String>,
}

impl TryFrom<TaskRow> for A2aTaskRecord {
    type Error = StoreError;
    fn try_from(r: TaskRow) -> StoreResult<Self> {
        let session_id = r
            .session_id
            .map(|s| s.parse().map_err(|_| backend_err(format!("corrupt session id '{s}' of A2A task '{}'", r.id))))
            .transpose()?;
        Ok(Self {
            id: r.id,
            owner: r.owner,
            agent: r.agent,
            context_id: r.context_id,
            session_id,
            state: r.state,
            task: r.task,
            seq: r.seq,
            updated_at: r.updated_at,
            pii: r.pii,
        })
    }
}

/// Writes a task's version unless one with a higher or equal seq is
/// stored, or the id is another owner's or agent's task (an id is its
/// maker's): one row affected when it was written.
pub(super) const TASK_UPSERT: &str = "INSERT INTO a2a_tasks (id, owner, agent, context_id, session_id, state, task, seq, updated_at, pii) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
     ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id, state = excluded.state, \
     task = excluded.task, seq = excluded.seq, updated_at = excluded.updated_at, pii = excluded.pii \
     WHERE excluded.seq > a2a_tasks.seq AND a2a_tasks.owner = excluded.owner AND a2a_tasks.agent = excluded.agent";
/// Whether the task `id` is on file as another owner's or agent's: a
/// change whose version was not written for that reason writes no events either.
pub(super) const TASK_FOREIGN: &str = "SELECT COUNT(*) FROM a2a_tasks WHERE id = $1 AND (owner <> $2 OR agent <> $3)";
/// Appends an event; one already on file is left as it is.
pub(super) const EVENT_INSERT: &str = "INSERT INTO a2a_task_events (task_id, seq, event, created_at) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (task_id, seq) DO NOTHING";
/// Drops a task's events up to a seq (the ones beyond [`MAX_EVENTS_PER_TASK`]).
pub(super) const EVENT_TRIM: &str = "DELETE FROM a2a_task_events WHERE task_id = $1 AND seq <= $2";

/// The newest event of each task in `events`, over [`MAX_EVENTS_PER_TASK`]:
/// where [`EVENT_TRIM`] cuts each task's events.
pub(super) fn trims(events: &[A2aEventRecord]) -> Vec<(&str, i64)> {
    let mut newest: HashMap<&str, i64> = HashMap::new();
    for e in events {
        let n = newest.entry(&e.task_id).or_insert(e.seq);
        *n = (*n).max(e.seq);
    }
    newest
        .into_iter()
        .filter(|&(_, seq)| seq > MAX_EVENTS_PER_TASK)
        .map(|(t, seq)| (t, seq - MAX_EVENTS_PER_TASK))
        .collect()
}

/// Writes a task's version (true when written, see [`TASK_UPSERT`]) and
/// appends its events, inside the writer's transaction (writer.rs).
pub(super) async fn put_task_with_events_on(
    conn: &mut AnyConnection,
    t: Option<&A2aTaskRecord>,
    events: &[A2aEventRecord],
) -> StoreResult<bool> {
    let mut written = false;
    if let Some(t) = t {
        let done = sqlx::query(TASK_UPSERT)
            .bind(t.id.clone())
            .bind(t.owner.clone())
            .bind(t.agent.clone())
            .bind(t.context_id.clone())
            .bind(t.session_id.map(|s| s.to_string()))
            .bind(t.state.clone())
            .bind(t.task.clone())
            .bind(t.seq)
            .bind(t.updated_at)
            .bind(t.pii.clone())
            .execute(&mut *conn)
            .await
            .map_err(backend_err)?;
        written = done.rows_affected() == 1;
        if !written {
            let foreign: i64 = sqlx::query_scalar(TASK_FOREIGN)
                .bind(t.id.clone())
                .bind(t.owner.clone())
                .bind(t.agent.clone())
                .fetch_one(&mut *conn)
                .await
                .map_err(backend_err)?;
            if foreign > 0 {
                return Ok(false);
            }
        }
    }
    for e in events {
        sqlx::query(EVENT_INSERT)
            .bind(e.task_id.clone())
            .bind(e.seq)
            .bind(e.event.clone())
            .bind(e.created_at)
            .execute(&mut *conn)
            .await
            .map_err(backend_err)?;
    }
    for (task, upto) in trims(events) {
        sqlx::query(EVENT_TRIM).bind(task.to_string()).bind(upto).execute(&mut *conn).await.map_err(backend_err)?;
    }
    Ok(written)
}

/// The task `id`, whoever owns it.
pub(super) async fn task(pool: &AnyPool, id: &str) -> StoreResult<Option<A2aTaskRecord>> {
    let row =
        sqlx::query_as::<_, TaskRow>(AssertSqlSafe(format!("SELECT {TASK_COLUMNS} FROM a2a_tasks WHERE id = $1")))
            .bind(id.to_string())
            .fetch_optional(pool)
            .await
            .map_err(backend_err)?;
    row.map(A2aTaskRecord::try_from).transpose()
}

/// A page of the tasks `q` names, newest status first, and how many match.
pub(super) async fn tasks(pool: &AnyPool, q: &A2aTaskQuery) -> StoreResult<A2aTaskPage> {
    // placeholders only: no value is spliced into the SQL text
    let mut clauses = vec!["agent = $1".to_string()];
    let mut texts = vec![q.agent.clone()];
    for (column, value) in [("owner", &q.owner), ("context_id", &q.context_id), ("state", &q.state)] {
        if let Some(v) = value {
            texts.push(v.clone());
            clauses.push(format!("{column} = ${}", texts.len()));
        }
    }
    let mut n = texts.len();
    if q.updated_after.is_some() {
        n += 1;
        clauses.push(format!("updated_at > ${n}"));
    }
    let filter = clauses.join(" AND ");
    let bind_all = |sql: String| {
        let mut query = sqlx::query(AssertSqlSafe(sql));
        for t in &texts {
            query = query.bind(t.clone());
        }
        if let Some(after) = q.updated_after {
            query = query.bind(after);
        }
        query
    };
    use sqlx::Row;
    let total: i64 = bind_all(format!("SELECT COUNT(*) AS n FROM a2a_tasks WHERE {filter}"))
        .fetch_one(pool)
        .await
        .and_then(|r| r.try_get("n"))
        .map_err(backend_err)?;
    let sql = format!(
        "SELECT {TASK_COLUMNS} FROM a2a_tasks WHERE {filter} ORDER BY updated_at DESC, seq DESC, id LIMIT ${} OFFSET ${}",
        n + 1,
        n + 2
    );
    let rows = bind_all(sql)
        .bind(q.limit.min(i64::MAX as usize) as i64)
        .bind(q.offset.min(i64::MAX as usize) as i64)
        .fetch_all(pool)
        .await
        .map_err(backend_err)?;
    let tasks = rows
        .iter()
        .map(|r| TaskRow::from_row(r).map_err(backend_err).and_then(A2aTaskRecord::try_from))
        .collect::<StoreResult<Vec<_>>>()?;
    Ok(A2aTaskPage { tasks, total: total.max(0) as u64 })
}

type EventRow = (String, i64, String, i64);

/// The task's events after `after`, oldest first, at most `limit`.
pub(super) async fn events(
    pool: &AnyPool,
    task_id: &str,
    after: i64,
    limit: usize,
) -> StoreResult<Vec<A2aEventRecord>> {
    let rows: Vec<EventRow> = sqlx::query_as(
        "SELECT task_id, seq, event, created_at FROM a2a_task_events WHERE task_id = $1 AND seq > $2 \
         ORDER BY seq LIMIT $3",
    )
    .bind(task_id.to_string())
    .bind(after)
    .bind(limit.min(i64::MAX as usize) as i64)
    .fetch_all(pool)
    .await
    .map_err(backend_err)?;
    Ok(rows
        .into_iter()
        .map(|(task_id, seq, event, created_at)| A2aEventRecord { task_id, seq, event, created_at })
        .collect())
}

/// The seq of the task's newest event; 0 without events.
pub(super) async fn last_event_seq(pool: &AnyPool, task_id: &str) -> StoreResult<i64> {
    use sqlx::Row;
    sqlx::query("SELECT COALESCE(MAX(seq), 0) AS n FROM a2a_task_events WHERE task_id = $1")
        .bind(task_id.to_string())
        .fetch_one(pool)
        .await
        .and_then(|r| r.try_get::<i64, _>("n"))
        .map_err(backend_err)
}

fn user_key(user: Option<&UserId>) -> String {
    user.map(ToString::to_string).unwrap_or_default()
}

/// Whether `stored` is open and within `hold_open_ms` of its opening at `at` (epoch ms).
fn open_within(stored: &BreakerRecord, hold_open_ms: u64, at: i64) -> bool {
    stored.state == "open" && stored.opened_at.saturating_add(i64::try_from(hold_open_ms).unwrap_or(i64::MAX)) > at
}

/// Whether a stored breaker `stored` stays as it is against `next`: it is
/// open, within `hold_open_ms` of its opening, and `next` is not open and
/// opened before it (a replica that has not seen it open yet).
/// [`put_breaker`]'s SQL applies the same rule.
fn held_open(stored: &BreakerRecord, next: &BreakerRecord, hold_open_ms: u64) -> bool {
    open_within(stored, hold_open_ms, next.updated_at) && next.state != "open" && next.opened_at < stored.opened_at
}

/// Writes a breaker that counts something, replacing the agent's (and user's) one.
pub(super) async fn put_breaker(pool: &AnyPool, b: &BreakerRecord, hold_open_ms: u64) -> StoreResult<()> {
    let users = serde_json::to_string(&b.run_users).map_err(backend_err)?;
    let counters = serde_json::to_string(&b.counters).map_err(backend_err)?;
    sqlx::query(
        "INSERT INTO breakers (agent, user_id, state, opened_at, consecutive, run_faults, run_users, \
         probe_successes, updated_at, counters) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT (agent, user_id) DO UPDATE SET state = excluded.state, opened_at = excluded.opened_at, \
         consecutive = excluded.consecutive, run_faults = excluded.run_faults, run_users = excluded.run_users, \
         probe_successes = excluded.probe_successes, updated_at = excluded.updated_at, counters = excluded.counters \
         WHERE NOT (breakers.state = 'open' AND excluded.state <> 'open' AND excluded.opened_at < breakers.opened_at \
         AND breakers.opened_at + $11 > excluded.updated_at)",
    )
    .bind(b.agent.to_string())
    .bind(user_key(b.user.as_ref()))
    .bind(b.state.clone())
    .bind(b.opened_at)
    .bind(i64::from(b.consecutive))
    .bind(i64::from(b.run_faults))
    .bind(users)
    .bind(i64::from(b.probe_successes))
    .bind(b.updated_at)
    .bind(counters)
    .bind(i64::try_from(hold_open_ms).unwrap_or(i64::MAX))
    .execute(pool)
    .await
    .map_err(backend_err)?;
    Ok(())
}

/// Removes the breaker of `agent` (and `user`), unless it is open within
/// `hold_open_ms` of its opening (the SQL form of `open_within`).
pub(super) async fn remove_breaker(
    pool: &AnyPool,
    agent: &AgentSlug,
    user: Option<&UserId>,
    hold_open_ms: u64,
) -> StoreResult<()> {
    sqlx::query(
        "DELETE FROM breakers WHERE agent = $1 AND user_id = $2 AND NOT (state = 'open' AND opened_at + $3 > $4)",
    )
    .bind(agent.to_string())
    .bind(user_key(user))
    .bind(i64::try_from(hold_open_ms).unwrap_or(i64::MAX))
    .bind(super::now_ms())
    .execute(pool)
    .await
    .map_err(backend_err)?;
    Ok(())
}

type BreakerRow = (String, String, String, i64, i64, i64, String, i64, i64, String);

/// Every breaker on file, by agent and user.
pub(super) async fn breakers(pool: &AnyPool) -> StoreResult<Vec<BreakerRecord>> {
    let rows: Vec<BreakerRow> = sqlx::query_as(
        "SELECT agent, user_id, state, opened_at, consecutive, run_faults, run_users, probe_successes, updated_at, \
         counters FROM breakers ORDER BY agent, user_id",
    )
    .fetch_all(pool)
    .await
    .map_err(backend_err)?;
    rows.into_iter()
        .map(
            |(agent, user, state, opened_at, consecutive, run_faults, users, probe_successes, updated_at, counters)| {
                let count = |n: i64| u32::try_from(n.max(0)).unwrap_or(u32::MAX);
                Ok(BreakerRecord {
                    agent: AgentSlug::parse(&agent)
                        .map_err(|_| backend_err(format!("corrupt breaker agent '{agent}'")))?,
                    user: match user.as_str() {
                        "" => None,
                        u => Some(UserId::parse(u).map_err(|_| backend_err(format!("corrupt breaker user '{u}'")))?),
                    },
                    state,
                    opened_at,
                    consecutive: count(consecutive),
                    run_faults: count(run_faults),
                    run_users: serde_json::from_str(&users).map_err(backend_err)?,
                    probe_successes: count(probe_successes),
                    updated_at,
                    // counts that cannot be read are counts lost, not a breaker lost
                    counters: serde_json::from_str(&counters).unwrap_or_default(),
                })
            },
        )
        .collect()
}

// ---- in memory ----

/// The A2A tasks and breakers of a [`super::MemoryStore`].
#[derive(Debug, Default)]
pub(super) struct InMemory {
    inner: std::sync::Mutex<InMemoryInner>,
}

#[derive(Debug, Default)]
struct InMemoryInner {
    tasks: HashMap<String, A2aTaskRecord>,
    /// task id → its events by seq
    events: HashMap<String, std::collections::BTreeMap<i64, A2aEventRecord>>,
    breakers: std::collections::BTreeMap<(String, String), BreakerRecord>,
}

impl InMemory {
    pub(super) fn put_task(&self, t: &A2aTaskRecord) -> bool {
        let mut i = lock(&self.inner);
        match i.tasks.get(&t.id) {
            Some(old) if old.seq >= t.seq || old.owner != t.owner || old.agent != t.agent => false,
            Some(old) => {
                // the id's owner, agent and context never change
                let kept = A2aTaskRecord { context_id: old.context_id.clone(), ..t.clone() };
                i.tasks.insert(t.id.clone(), kept);
                true
            }
            None => {
                i.tasks.insert(t.id.clone(), t.clone());
                true
            }
        }
    }

    /// Whether task `id` is on file as another owner's or agent's than `t`'s.
    pub(super) fn foreign(&self, t: &A2aTaskRecord) -> bool {
        lock(&self.inner).tasks.get(&t.id).is_some_and(|old| old.owner != t.owner || old.agent != t.agent)
    }

    pub(super) fn task(&self, id: &str) -> Option<A2aTaskRecord> {
        lock(&self.inner).tasks.get(id).cloned()
    }

    pub(super) fn tasks(&self, q: &A2aTaskQuery) -> A2aTaskPage {
        let i = lock(&self.inner);
        let mut found: Vec<&A2aTaskRecord> = i
            .tasks
            .values()
            .filter(|t| t.agent == q.agent)
            .filter(|t| q.owner.as_ref().is_none_or(|o| &t.owner == o))
            .filter(|t| q.context_id.as_ref().is_none_or(|c| &t.context_id == c))
            .filter(|t| q.state.as_ref().is_none_or(|s| &t.state == s))
            .filter(|t| q.updated_after.is_none_or(|after| t.updated_at > after))
            .collect();
        found.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(b.seq.cmp(&a.seq)).then(a.id.cmp(&b.id)));
        let total = found.len() as u64;
        let tasks = found.into_iter().skip(q.offset).take(q.limit).cloned().collect();
        A2aTaskPage { tasks, total }
    }

    pub(super) fn append_events(&self, events: &[A2aEventRecord]) {
        let mut i = lock(&self.inner);
        for e in events {
            let list = i.events.entry(e.task_id.clone()).or_default();
            list.entry(e.seq).or_insert_with(|| e.clone());
            let newest = list.last_key_value().map_or(0, |(k, _)| *k);
            list.retain(|seq, _| *seq > newest - MAX_EVENTS_PER_TASK);
        }
    }

    pub(super) fn events(&self, task_id: &str, after: i64, limit: usize) -> Vec<A2aEventRecord> {
        let i = lock(&self.inner);
        let Some(list) = i.events.get(task_id) else { return Vec::new() };
        list.range(after.saturating_add(1)..).take(limit).map(|(_, e)| e.clone()).collect()
    }

    pub(super) fn last_event_seq(&self, task_id: &str) -> i64 {
        lock(&self.inner).events.get(task_id).and_then(|l| l.last_key_value()).map_or(0, |(k, _)| *k)
    }

    pub(super) fn put_breaker(&self, b: &BreakerRecord, hold_open_ms: u64) {
        let mut inner = lock(&self.inner);
        let key = (b.agent.to_string(), user_key(b.user.as_ref()));
        if inner.breakers.get(&key).is_some_and(|stored| held_open(stored, b, hold_open_ms)) {
            return;
        }
        inner.breakers.insert(key, b.clone());
    }

    pub(super) fn remove_breaker(&self, agent: &AgentSlug, user: Option<&UserId>, hold_open_ms: u64) {
        let mut inner = lock(&self.inner);
        let key = (agent.to_string(), user_key(user));
        if inner.breakers.get(&key).is_some_and(|b| open_within(b, hold_open_ms, super::now_ms())) {
            return;
        }
        inner.breakers.remove(&key);
    }

    pub(super) fn breakers(&self) -> Vec<BreakerRecord> {
        lock(&self.inner).breakers.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::a2a::types::{Message, TaskState, TaskStatus, TaskStatusUpdateEvent};
    use crate::store::{MemoryStore, Store};

    fn task(id: &str, context: &str, state: TaskState, text: &str) -> Task {
        Task {
            id: id.into(),
            context_id: context.into(),
            status: TaskStatus::now(state, None),
            artifacts: None,
            history: Some(vec![Message::agent_text(text, Some(context.into()), Some(id.into()))]),
            metadata: None,
        }
    }

    fn record(id: &str, owner: &str, state: TaskState, seq: i64, updated_at: i64) -> A2aTaskRecord {
        let mut r =
            A2aTaskRecord::new(&task(id, "ctx", state, id), owner, &AgentSlug::parse("tag-ai").unwrap(), None, seq);
        r.updated_at = updated_at;
        r
    }

    #[tokio::test]
    async fn a_task_keeps_its_newest_version_and_its_owner() {
        let store = MemoryStore::new();
        let first = record("t1", "user:alice", TaskState::Working, 10, 1_000);
        assert!(store.put_a2a_task(&crate::redact::tests_clean(first.clone())).await.unwrap());
        // the id is alice's: another owner's version under it is not kept, however new
        let bobs =
            A2aTaskRecord { owner: "user:bob".into(), ..record("t1", "user:alice", TaskState::Canceled, 20, 3_000) };
        assert!(
            !store.put_a2a_task(&crate::redact::tests_clean(bobs.clone())).await.unwrap(),
            "another owner's task under her id"
        );
        let done = record("t1", "user:alice", TaskState::Completed, 12, 2_000);
        assert!(store.put_a2a_task(&crate::redact::tests_clean(done.clone())).await.unwrap());
        assert!(
            !store.put_a2a_task(&crate::redact::tests_clean(first.clone())).await.unwrap(),
            "an older version arriving late is not kept"
        );
        assert!(
            !store.put_a2a_task(&crate::redact::tests_clean(done.clone())).await.unwrap(),
            "nor the same one twice"
        );
        let got = store.a2a_task("t1").await.unwrap().unwrap();
        assert_eq!(got.state, "TASK_STATE_COMPLETED");
        assert_eq!(got.seq, 12);
        assert_eq!(got.owner, "user:alice", "the owner never changes");
        assert_eq!(got.to_task().unwrap().status.state, TaskState::Completed);
        assert_eq!(store.a2a_task("t2").await.unwrap(), None);
    }

    #[tokio::test]
    async fn tasks_are_listed_by_owner_agent_context_state_and_time_newest_first() {
        let store = MemoryStore::new();
        for (id, owner, state, seq, at) in [
            ("a1", "user:alice", TaskState::Completed, 1, 1_000),
            ("a2", "user:alice", TaskState::Working, 2, 3_000),
            ("a3", "user:alice", TaskState::Completed, 3, 2_000),
            ("b1", "user:bob", TaskState::Completed, 4, 4_000),
        ] {
            store.put_a2a_task(&crate::redact::tests_clean((record(id, owner, state, seq, at)).clone())).await.unwrap();
        }
        let other =
            A2aTaskRecord { agent: "byte-doc".into(), ..record("x1", "user:alice", TaskState::Completed, 5, 5_000) };
        store.put_a2a_task(&crate::redact::tests_clean(other.clone())).await.unwrap();
        let ids = |p: &A2aTaskPage| p.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
        let q =
            A2aTaskQuery { owner: Some("user:alice".into()), agent: "tag-ai".into(), limit: 10, ..Default::default() };
        let page = store.a2a_tasks(&q).await.unwrap();
        assert_eq!((ids(&page), page.total), (vec!["a2".into(), "a3".into(), "a1".into()], 3));
        let page = store.a2a_tasks(&A2aTaskQuery { offset: 1, limit: 1, ..q.clone() }).await.unwrap();
        assert_eq!((ids(&page), page.total), (vec!["a3".into()], 3));
        let state = Some("TASK_STATE_COMPLETED".to_string());
        let page = store.a2a_tasks(&A2aTaskQuery { state, updated_after: Some(1_000), ..q.clone() }).await.unwrap();
        assert_eq!(ids(&page), ["a3"]);
        let page = store.a2a_tasks(&A2aTaskQuery { context_id: Some("other".into()), ..q.clone() }).await.unwrap();
        assert_eq!(page.total, 0);
        let everyone = store.a2a_tasks(&A2aTaskQuery { owner: None, ..q }).await.unwrap();
        assert_eq!(ids(&everyone), ["b1", "a2", "a3", "a1"], "an admin's list: every owner, one agent");
    }

    #[tokio::test]
    async fn breakers_are_kept_per_agent_and_user_until_removed() {
        let store = MemoryStore::new();
        let (agent, alice) = (AgentSlug::parse("goalie").unwrap(), UserId::parse("alice").unwrap());
        let b = |user: Option<UserId>| BreakerRecord {
            agent: agent.clone(),
            user,
            state: "open".into(),
            opened_at: 5,
            consecutive: 3,
            run_faults: 0,
            run_users: vec![alice.clone()],
            probe_successes: 0,
            updated_at: 5,
            counters: BreakerCounters::default(),
        };
        store.put_breaker(&b(None), 0).await.unwrap();
        store.put_breaker(&b(Some(alice.clone())), 0).await.unwrap();
        store.put_breaker(&BreakerRecord { opened_at: 9, ..b(None) }, 0).await.unwrap();
        let all = store.breakers().await.unwrap();
        assert_eq!(all, [BreakerRecord { opened_at: 9, ..b(None) }, b(Some(alice.clone()))]);
        store.remove_breaker(&agent, None, 0).await.unwrap();
        assert_eq!(store.breakers().await.unwrap(), [b(Some(alice.clone()))], "alice's own stays");
        store.remove_breaker(&agent, Some(&alice), 0).await.unwrap();
        assert!(store.breakers().await.unwrap().is_empty());

        // opened at 1,000 with a 10 s cool-down: a closed record of a replica that
        // has not seen it open does not replace it, nor does a remove, until it ends
        let open = BreakerRecord { opened_at: 1_000, updated_at: 1_000, ..b(None) };
        store.put_breaker(&open, 10_000).await.unwrap();
        let closed = BreakerRecord { state: "closed".into(), opened_at: 0, updated_at: 2_000, ..b(None) };
        store.put_breaker(&closed, 10_000).await.unwrap();
        assert_eq!(store.breakers().await.unwrap(), std::slice::from_ref(&open), "held open");
        let adopted = BreakerRecord { state: "half_open".into(), updated_at: 2_000, ..open.clone() };
        store.put_breaker(&adopted, 10_000).await.unwrap();
        assert_eq!(
            store.breakers().await.unwrap(),
            std::slice::from_ref(&adopted),
            "a replica that saw it open moves it on"
        );
        let recent = BreakerRecord { opened_at: crate::store::now_ms(), ..open };
        store.put_breaker(&recent, 10_000).await.unwrap();
        store.remove_breaker(&agent, None, 10_000).await.unwrap();
        assert_eq!(store.breakers().await.unwrap(), [recent], "an open one within its cool-down stays");
        let late = BreakerRecord { updated_at: 20_000, ..closed };
        store
            .put_breaker(
                &BreakerRecord { opened_at: 1_000, updated_at: 1_000, state: "open".into(), ..late.clone() },
                0,
            )
            .await
            .unwrap();
        store.put_breaker(&late, 10_000).await.unwrap();
        assert_eq!(store.breakers().await.unwrap(), [late], "past its cool-down, anyone's record replaces it");
    }

    #[tokio::test]
    async fn a_stored_tasks_status_can_be_set_from_outside_the_service() {
        let store = MemoryStore::new();
        store
            .put_a2a_task(&crate::redact::tests_clean(
                (record("t1", "user:alice", TaskState::Working, 7, 1_000)).clone(),
            ))
            .await
            .unwrap();
        assert!(
            crate::store::a2a_keep::set_task_status(&store, &keeper(), "t1", TaskState::Completed, "Resumed and done.")
                .await
                .unwrap()
        );
        let got = store.a2a_task("t1").await.unwrap().unwrap();
        assert!(got.seq > 7);
        let t = got.to_task().unwrap();
        assert_eq!(t.status.state, TaskState::Completed);
        assert_eq!(t.history.unwrap().last().unwrap().text(), "Resumed and done.");
        assert!(
            !crate::store::a2a_keep::set_task_status(&store, &keeper(), "nope", TaskState::Failed, "").await.unwrap()
        );
    }

    fn keeper() -> crate::store::TaskKeeper {
        crate::store::TaskKeeper::new(crate::redact::SealKey::random())
    }

    fn status_event(task: &str, state: TaskState) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: task.into(),
            context_id: "ctx".into(),
            status: TaskStatus::now(state, None),
            metadata: None,
        })
    }

    /// Both backends the unit tests can reach: memory and an SQLite file.
    async fn stores() -> Vec<(&'static str, Box<dyn Store>, Option<tempfile::TempDir>)> {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("events.db").display());
        let sqlite = crate::store::SqlStore::connect(&url).await.unwrap();
        vec![("memory", Box::new(MemoryStore::new()), None), ("sqlite", Box::new(sqlite), Some(dir))]
    }

    #[tokio::test]
    async fn a_tasks_events_are_kept_in_order_read_after_a_seq_and_bounded() {
        for (name, store, _dir) in stores().await {
            assert_eq!(store.a2a_event_seq("t1").await.unwrap(), 0, "{name}: no events yet");
            assert!(store.a2a_events("t1", 0, 10).await.unwrap().is_empty());
            let ev = |seq, state| A2aEventRecord::new("t1", seq, &status_event("t1", state));
            store
                .append_a2a_events(&crate::redact::tests_clean(
                    ([ev(1, TaskState::Working), ev(2, TaskState::Working)]).to_vec(),
                ))
                .await
                .unwrap();
            store
                .append_a2a_events(&crate::redact::tests_clean(([ev(3, TaskState::Completed)]).to_vec()))
                .await
                .unwrap();
            store
                .append_a2a_events(&crate::redact::tests_clean(
                    ([A2aEventRecord::new("t2", 1, &status_event("t2", TaskState::Failed))]).to_vec(),
                ))
                .await
                .unwrap();
            // the same seq again is not a second event, nor does it replace the first
            store.append_a2a_events(&crate::redact::tests_clean(([ev(2, TaskState::Failed)]).to_vec())).await.unwrap();
            assert_eq!(store.a2a_event_seq("t1").await.unwrap(), 3, "{name}");
            let all = store.a2a_events("t1", 0, 10).await.unwrap();
            assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3], "{name}");
            let StreamResponse::StatusUpdate(second) = all[1].to_event().unwrap() else { panic!("{name}: a status") };
            assert_eq!(second.status.state, TaskState::Working, "{name}: the first one stays");
            let StreamResponse::StatusUpdate(last) = all[2].to_event().unwrap() else { panic!("{name}: a status") };
            assert_eq!(last.status.state, TaskState::Completed);
            let page = store.a2a_events("t1", 1, 1).await.unwrap();
            assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), [2], "{name}: after 1, one at most");
            assert!(store.a2a_events("t1", 3, 10).await.unwrap().is_empty(), "{name}");
            assert_eq!(store.a2a_events("t2", 0, 10).await.unwrap().len(), 1, "{name}: per task");

            // only the newest MAX_EVENTS_PER_TASK stay
            let many: Vec<_> = (4..=MAX_EVENTS_PER_TASK + 5).map(|n| ev(n, TaskState::Working)).collect();
            store.append_a2a_events(&crate::redact::tests_clean(many.to_vec())).await.unwrap();
            let kept = store.a2a_events("t1", 0, 5_000).await.unwrap();
            assert_eq!(kept.len() as i64, MAX_EVENTS_PER_TASK, "{name}");
            assert_eq!(kept[0].seq, 6, "{name}: the oldest went");
            assert_eq!(store.a2a_event_seq("t1").await.unwrap(), MAX_EVENTS_PER_TASK + 5, "{name}");
            let corrupt = A2aEventRecord { event: "{".into(), ..ev(1, TaskState::Working) };
            assert!(corrupt.to_event().unwrap_err().to_string().contains("corrupt event 1 of A2A task 't1'"));
        }
    }

    #[tokio::test]
    async fn a_breakers_counters_are_stored_with_it() {
        for (name, store, _dir) in stores().await {
            let alice = UserId::parse("alice").unwrap();
            let counters = BreakerCounters {
                recent: vec![
                    RecentCall { failure: Some("on_request".into()), user: Some(alice.clone()) },
                    RecentCall { failure: None, user: None },
                ],
            };
            let b = BreakerRecord {
                agent: AgentSlug::parse("goalie").unwrap(),
                user: None,
                state: "closed".into(),
                opened_at: 0,
                consecutive: 1,
                run_faults: 0,
                run_users: vec![alice],
                probe_successes: 0,
                updated_at: 7,
                counters,
            };
            store.put_breaker(&b, 0).await.unwrap();
            assert_eq!(store.breakers().await.unwrap(), [b], "{name}");
        }
    }

    #[tokio::test]
    async fn setting_a_stored_tasks_status_from_outside_adds_it_as_the_tasks_next_event() {
        for (name, store, _dir) in stores().await {
            store
                .put_a2a_task(&crate::redact::tests_clean(
                    (record("t1", "user:alice", TaskState::Working, 7, 1_000)).clone(),
                ))
                .await
                .unwrap();
            let working = A2aEventRecord::new("t1", 1, &status_event("t1", TaskState::Working));
            store.append_a2a_events(&crate::redact::tests_clean([working].to_vec())).await.unwrap();
            assert!(
                crate::store::a2a_keep::set_task_status(
                    store.as_ref(),
                    &keeper(),
                    "t1",
                    TaskState::Completed,
                    "Done elsewhere."
                )
                .await
                .unwrap()
            );
            let events = store.a2a_events("t1", 1, 10).await.unwrap();
            assert_eq!(events.len(), 1, "{name}");
            assert_eq!(events[0].seq, 2, "{name}");
            let StreamResponse::StatusUpdate(s) = events[0].to_event().unwrap() else { panic!("{name}: a status") };
            assert_eq!(s.status.state, TaskState::Completed, "{name}");
        }
    }
}
