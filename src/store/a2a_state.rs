//! State that outlives a restart besides the trees: the A2A tasks of the
//! service (each task as a client reads it, with its history and artifacts)
//! and the circuit breakers that are not closed. The processes keep caches
//! of both; the store is where a restarted process finds them again.
//!
//! A task's `seq` orders its versions: a write never replaces a version with
//! a higher `seq`, so writes that reach the store out of order keep the
//! newest. Breakers are written when they open and removed when they close;
//! a half-open breaker is not written (it is an open one whose cool-down,
//! counted from `opened_at` on the wall clock, has passed).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use sqlx::{AnyPool, AssertSqlSafe, FromRow};

use super::{Store, StoreError, StoreResult, now_ms};
use crate::protocol::a2a::types::{Message, Task, TaskState, TaskStatus};
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

/// A circuit breaker that is not closed, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerRecord {
    /// The agent whose breaker it is.
    pub agent: AgentSlug,
    /// The user whose own breaker for the agent it is; None for the agent's breaker.
    pub user: Option<UserId>,
    /// `open` or `half_open`.
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
}

fn backend_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// Sets the status of a stored A2A task from outside the A2A service (a
/// resumed tree that finished in another process than the one that started
/// it): the status, with an agent message holding `text` that is also added
/// to the history, under a version above the stored one. False when there
/// is no such task. A service that holds the task in its cache reads the
/// new version the next time the task is asked for while it does not run
/// there.
pub async fn set_task_status(store: &dyn Store, id: &str, state: TaskState, text: &str) -> StoreResult<bool> {
    let Some(mut record) = store.a2a_task(id).await? else {
        return Ok(false);
    };
    let mut task = record.to_task()?;
    let message = Message::agent_text(text, Some(task.context_id.clone()), Some(task.id.clone()));
    task.history.get_or_insert_with(Vec::new).push(message.clone());
    task.status = TaskStatus::now(state, Some(message));
    let agent =
        AgentSlug::parse(&record.agent).map_err(|_| backend_err(format!("corrupt agent '{}'", record.agent)))?;
    let seq = (record.seq + 1).max(now_ms().saturating_mul(1000));
    record = A2aTaskRecord::new(&task, &record.owner, &agent, record.session_id, seq);
    store.put_a2a_task(&record).await
}

// ---- SQL (SQLite and PostgreSQL through the Any driver) ----

const TASK_COLUMNS: &str = "id, owner, agent, context_id, session_id, state, task, seq, updated_at";

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
        })
    }
}

/// Writes the task unless a version with a higher or equal seq is stored; true when written.
pub(super) async fn put_task(pool: &AnyPool, t: &A2aTaskRecord) -> StoreResult<bool> {
    let done = sqlx::query(
        "INSERT INTO a2a_tasks (id, owner, agent, context_id, session_id, state, task, seq, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id, state = excluded.state, \
         task = excluded.task, seq = excluded.seq, updated_at = excluded.updated_at \
         WHERE excluded.seq > a2a_tasks.seq",
    )
    .bind(t.id.clone())
    .bind(t.owner.clone())
    .bind(t.agent.clone())
    .bind(t.context_id.clone())
    .bind(t.session_id.map(|s| s.to_string()))
    .bind(t.state.clone())
    .bind(t.task.clone())
    .bind(t.seq)
    .bind(t.updated_at)
    .execute(pool)
    .await
    .map_err(backend_err)?;
    Ok(done.rows_affected() == 1)
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

fn user_key(user: Option<&UserId>) -> String {
    user.map(ToString::to_string).unwrap_or_default()
}

/// Writes a breaker that is not closed, replacing the agent's (and user's) one.
pub(super) async fn put_breaker(pool: &AnyPool, b: &BreakerRecord) -> StoreResult<()> {
    let users = serde_json::to_string(&b.run_users).map_err(backend_err)?;
    sqlx::query(
        "INSERT INTO breakers (agent, user_id, state, opened_at, consecutive, run_faults, run_users, \
         probe_successes, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         ON CONFLICT (agent, user_id) DO UPDATE SET state = excluded.state, opened_at = excluded.opened_at, \
         consecutive = excluded.consecutive, run_faults = excluded.run_faults, run_users = excluded.run_users, \
         probe_successes = excluded.probe_successes, updated_at = excluded.updated_at",
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
    .execute(pool)
    .await
    .map_err(backend_err)?;
    Ok(())
}

/// Removes the breaker of `agent` (and `user`).
pub(super) async fn remove_breaker(pool: &AnyPool, agent: &AgentSlug, user: Option<&UserId>) -> StoreResult<()> {
    sqlx::query("DELETE FROM breakers WHERE agent = $1 AND user_id = $2")
        .bind(agent.to_string())
        .bind(user_key(user))
        .execute(pool)
        .await
        .map_err(backend_err)?;
    Ok(())
}

type BreakerRow = (String, String, String, i64, i64, i64, String, i64, i64);

/// Every breaker on file, by agent and user.
pub(super) async fn breakers(pool: &AnyPool) -> StoreResult<Vec<BreakerRecord>> {
    let rows: Vec<BreakerRow> = sqlx::query_as(
        "SELECT agent, user_id, state, opened_at, consecutive, run_faults, run_users, probe_successes, updated_at \
         FROM breakers ORDER BY agent, user_id",
    )
    .fetch_all(pool)
    .await
    .map_err(backend_err)?;
    rows.into_iter()
        .map(|(agent, user, state, opened_at, consecutive, run_faults, users, probe_successes, updated_at)| {
            let count = |n: i64| u32::try_from(n.max(0)).unwrap_or(u32::MAX);
            Ok(BreakerRecord {
                agent: AgentSlug::parse(&agent).map_err(|_| backend_err(format!("corrupt breaker agent '{agent}'")))?,
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
            })
        })
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
    breakers: std::collections::BTreeMap<(String, String), BreakerRecord>,
}

impl InMemory {
    pub fn put_task(&self, t: &A2aTaskRecord) -> bool {
        let mut i = lock(&self.inner);
        match i.tasks.get(&t.id) {
            Some(old) if old.seq >= t.seq => false,
            Some(old) => {
                // the id's owner, agent and context never change
                let kept = A2aTaskRecord {
                    owner: old.owner.clone(),
                    agent: old.agent.clone(),
                    context_id: old.context_id.clone(),
                    ..t.clone()
                };
                i.tasks.insert(t.id.clone(), kept);
                true
            }
            None => {
                i.tasks.insert(t.id.clone(), t.clone());
                true
            }
        }
    }

    pub fn task(&self, id: &str) -> Option<A2aTaskRecord> {
        lock(&self.inner).tasks.get(id).cloned()
    }

    pub fn tasks(&self, q: &A2aTaskQuery) -> A2aTaskPage {
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

    pub fn put_breaker(&self, b: &BreakerRecord) {
        lock(&self.inner).breakers.insert((b.agent.to_string(), user_key(b.user.as_ref())), b.clone());
    }

    pub fn remove_breaker(&self, agent: &AgentSlug, user: Option<&UserId>) {
        lock(&self.inner).breakers.remove(&(agent.to_string(), user_key(user)));
    }

    pub fn breakers(&self) -> Vec<BreakerRecord> {
        lock(&self.inner).breakers.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

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
        assert!(store.put_a2a_task(&first).await.unwrap());
        let done =
            A2aTaskRecord { owner: "user:bob".into(), ..record("t1", "user:alice", TaskState::Completed, 12, 2_000) };
        assert!(store.put_a2a_task(&done).await.unwrap());
        assert!(!store.put_a2a_task(&first).await.unwrap(), "an older version arriving late is not kept");
        assert!(!store.put_a2a_task(&done).await.unwrap(), "nor the same one twice");
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
            store.put_a2a_task(&record(id, owner, state, seq, at)).await.unwrap();
        }
        let other =
            A2aTaskRecord { agent: "byte-doc".into(), ..record("x1", "user:alice", TaskState::Completed, 5, 5_000) };
        store.put_a2a_task(&other).await.unwrap();
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
        };
        store.put_breaker(&b(None)).await.unwrap();
        store.put_breaker(&b(Some(alice.clone()))).await.unwrap();
        store.put_breaker(&BreakerRecord { opened_at: 9, ..b(None) }).await.unwrap();
        let all = store.breakers().await.unwrap();
        assert_eq!(all, [BreakerRecord { opened_at: 9, ..b(None) }, b(Some(alice.clone()))]);
        store.remove_breaker(&agent, None).await.unwrap();
        assert_eq!(store.breakers().await.unwrap(), [b(Some(alice.clone()))], "alice's own stays");
        store.remove_breaker(&agent, Some(&alice)).await.unwrap();
        assert!(store.breakers().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_stored_tasks_status_can_be_set_from_outside_the_service() {
        let store = MemoryStore::new();
        store.put_a2a_task(&record("t1", "user:alice", TaskState::Working, 7, 1_000)).await.unwrap();
        assert!(set_task_status(&store, "t1", TaskState::Completed, "Resumed and done.").await.unwrap());
        let got = store.a2a_task("t1").await.unwrap().unwrap();
        assert!(got.seq > 7);
        let t = got.to_task().unwrap();
        assert_eq!(t.status.state, TaskState::Completed);
        assert_eq!(t.history.unwrap().last().unwrap().text(), "Resumed and done.");
        assert!(!set_task_status(&store, "nope", TaskState::Failed, "").await.unwrap());
    }
}
