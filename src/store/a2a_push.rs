//! A2A push notification configs: where the events of a task are POSTed
//! (migration 0009). Each config keeps a delivery cursor, the number of the
//! task's newest event whose delivery was claimed: a process claims the next
//! event by moving the cursor from the value it read (compare-and-set)
//! before it POSTs it, so processes that share a database never both send
//! an event. A delivery that finally fails is counted with its error.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sqlx::{AnyPool, FromRow};

use super::StoreResult;
use super::backend_err;
use super::sqlite_read::Readers;
use crate::util::lock;

/// The most push configs a task may have.
pub const MAX_PUSH_CONFIGS_PER_TASK: usize = 10;

/// One push notification config of an A2A task, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct A2aPushConfigRecord {
    /// The task whose events it receives.
    pub task_id: String,
    /// Its id, unique within the task.
    pub id: String,
    /// The A2A `TaskPushNotificationConfig` as JSON (url, token, authentication).
    pub config: String,
    /// When it was created, in milliseconds since the Unix epoch.
    pub created_at: i64,
    /// The task's events up to this number are delivered (or given up on).
    pub delivered_seq: i64,
    /// Deliveries that finally failed.
    pub failures: i64,
    /// The last such failure: the event's number and what went wrong.
    pub last_error: Option<String>,
}

// ---- SQL (SQLite and PostgreSQL through the Any driver) ----

#[derive(Debug, FromRow)]
struct Row {
    task_id: String,
    id: String,
    config: String,
    created_at: i64,
    delivered_seq: i64,
    failures: i64,
    last_error: Option<String>,
}

impl From<Row> for A2aPushConfigRecord {
    fn from(r: Row) -> Self {
        Self {
            task_id: r.task_id,
            id: r.id,
            config: r.config,
            created_at: r.created_at,
            delivered_seq: r.delivered_seq,
            failures: r.failures,
            last_error: r.last_error,
        }
    }
}

/// Creates the config, or replaces the `config` of the one with its task and
/// id (its cursor and failures stay).
pub(super) async fn put(pool: &AnyPool, c: &A2aPushConfigRecord) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO a2a_push_configs (task_id, id, config, created_at, delivered_seq, failures, last_error) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (task_id, id) DO UPDATE SET config = excluded.config",
    )
    .bind(c.task_id.clone())
    .bind(c.id.clone())
    .bind(c.config.clone())
    .bind(c.created_at)
    .bind(c.delivered_seq)
    .bind(c.failures)
    .bind(c.last_error.clone())
    .execute(pool)
    .await
    .map_err(backend_err)?;
    Ok(())
}

/// The task's configs, oldest first (its one parameter: the task's id).
const LIST: &str = "SELECT task_id, id, config, created_at, delivered_seq, failures, last_error FROM a2a_push_configs \
     WHERE task_id = $1 ORDER BY created_at, id";

/// The task's configs, oldest first.
pub(super) async fn list(pool: &AnyPool, task_id: &str) -> StoreResult<Vec<A2aPushConfigRecord>> {
    let rows = sqlx::query_as::<_, Row>(LIST).bind(task_id.to_string()).fetch_all(pool).await.map_err(backend_err)?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// [`list`] on a synchronous read connection of an SQLite file (see
/// `sqlite_read`): asked after every event an A2A task stores, and almost
/// always empty, so it should cost a lookup, not a hop to sqlx's thread.
pub(super) fn list_sqlite(readers: &Readers, task_id: &str) -> StoreResult<Vec<A2aPushConfigRecord>> {
    let rows = readers.rows(LIST, [task_id], |r| {
        Ok(Row {
            task_id: r.get(0)?,
            id: r.get(1)?,
            config: r.get(2)?,
            created_at: r.get(3)?,
            delivered_seq: r.get(4)?,
            failures: r.get(5)?,
            last_error: r.get(6)?,
        })
    })?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// Deletes a config; true when there was one.
pub(super) async fn delete(pool: &AnyPool, task_id: &str, id: &str) -> StoreResult<bool> {
    let done = sqlx::query("DELETE FROM a2a_push_configs WHERE task_id = $1 AND id = $2")
        .bind(task_id.to_string())
        .bind(id.to_string())
        .execute(pool)
        .await
        .map_err(backend_err)?;
    Ok(done.rows_affected() > 0)
}

/// Moves the cursor from `from` to `to`; false when it is not at `from`
/// any more (another process claimed the event) or the config is gone.
pub(super) async fn claim(pool: &AnyPool, task_id: &str, id: &str, from: i64, to: i64) -> StoreResult<bool> {
    let done = sqlx::query(
        "UPDATE a2a_push_configs SET delivered_seq = $4 WHERE task_id = $1 AND id = $2 AND delivered_seq = $3",
    )
    .bind(task_id.to_string())
    .bind(id.to_string())
    .bind(from)
    .bind(to)
    .execute(pool)
    .await
    .map_err(backend_err)?;
    Ok(done.rows_affected() == 1)
}

/// Counts a delivery that finally failed, with its error.
pub(super) async fn failed(pool: &AnyPool, task_id: &str, id: &str, error: &str) -> StoreResult<()> {
    sqlx::query("UPDATE a2a_push_configs SET failures = failures + 1, last_error = $3 WHERE task_id = $1 AND id = $2")
        .bind(task_id.to_string())
        .bind(id.to_string())
        .bind(error.to_string())
        .execute(pool)
        .await
        .map_err(backend_err)?;
    Ok(())
}

// ---- in memory ----

/// The push configs of a [`super::MemoryStore`].
#[derive(Debug, Default)]
pub(super) struct InMemory {
    /// (task id, config id) → the config
    configs: std::sync::Mutex<BTreeMap<(String, String), A2aPushConfigRecord>>,
}

impl InMemory {
    pub(super) fn put(&self, c: &A2aPushConfigRecord) {
        let mut configs = lock(&self.configs);
        match configs.get_mut(&(c.task_id.clone(), c.id.clone())) {
            Some(old) => old.config = c.config.clone(),
            None => {
                configs.insert((c.task_id.clone(), c.id.clone()), c.clone());
            }
        }
    }

    pub(super) fn list(&self, task_id: &str) -> Vec<A2aPushConfigRecord> {
        let mut found: Vec<_> = lock(&self.configs).values().filter(|c| c.task_id == task_id).cloned().collect();
        found.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        found
    }

    pub(super) fn delete(&self, task_id: &str, id: &str) -> bool {
        lock(&self.configs).remove(&(task_id.to_string(), id.to_string())).is_some()
    }

    pub(super) fn claim(&self, task_id: &str, id: &str, from: i64, to: i64) -> bool {
        match lock(&self.configs).get_mut(&(task_id.to_string(), id.to_string())) {
            Some(c) if c.delivered_seq == from => {
                c.delivered_seq = to;
                true
            }
            _ => false,
        }
    }

    pub(super) fn failed(&self, task_id: &str, id: &str, error: &str) {
        if let Some(c) = lock(&self.configs).get_mut(&(task_id.to_string(), id.to_string())) {
            c.failures += 1;
            c.last_error = Some(error.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{MemoryStore, SqlStore, Store};

    fn config(task: &str, id: &str, at: i64, url: &str) -> A2aPushConfigRecord {
        A2aPushConfigRecord {
            task_id: task.into(),
            id: id.into(),
            config: format!("{{\"url\":\"{url}\"}}"),
            created_at: at,
            delivered_seq: 3,
            failures: 0,
            last_error: None,
        }
    }

    #[tokio::test]
    async fn push_configs_are_kept_per_task_claimed_once_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("push.db").display());
        let stores: Vec<(&str, Box<dyn Store>)> = vec![
            ("memory", Box::new(MemoryStore::new())),
            ("sqlite", Box::new(SqlStore::connect(&url).await.unwrap())),
        ];
        for (name, store) in stores {
            store
                .put_a2a_push_config(&crate::redact::tests_clean((config("t1", "b", 2, "https://b.example")).clone()))
                .await
                .unwrap();
            store
                .put_a2a_push_config(&crate::redact::tests_clean((config("t1", "a", 1, "https://a.example")).clone()))
                .await
                .unwrap();
            store
                .put_a2a_push_config(&crate::redact::tests_clean((config("t2", "a", 1, "https://c.example")).clone()))
                .await
                .unwrap();
            let ids = |l: &[A2aPushConfigRecord]| l.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
            assert_eq!(ids(&store.a2a_push_configs("t1").await.unwrap()), ["a", "b"], "{name}: oldest first");
            // the same id again replaces the config, not the cursor
            assert!(store.claim_a2a_push("t1", "a", 3, 4).await.unwrap(), "{name}");
            assert!(!store.claim_a2a_push("t1", "a", 3, 4).await.unwrap(), "{name}: claimed once");
            store
                .put_a2a_push_config(&crate::redact::tests_clean((config("t1", "a", 9, "https://new.example")).clone()))
                .await
                .unwrap();
            store
                .a2a_push_failed("t1", "a", &crate::redact::tests_clean(String::from("event 4: HTTP 500")))
                .await
                .unwrap();
            let a = store.a2a_push_configs("t1").await.unwrap().remove(0);
            assert_eq!((a.delivered_seq, a.failures), (4, 1), "{name}");
            assert!(a.config.contains("new.example"), "{name}");
            assert_eq!(a.last_error.as_deref(), Some("event 4: HTTP 500"));
            assert!(store.delete_a2a_push_config("t1", "a").await.unwrap(), "{name}");
            assert!(!store.delete_a2a_push_config("t1", "a").await.unwrap(), "{name}: idempotent, nothing left");
            assert!(!store.claim_a2a_push("t1", "a", 4, 5).await.unwrap(), "{name}: a deleted config takes nothing");
            assert_eq!(ids(&store.a2a_push_configs("t1").await.unwrap()), ["b"], "{name}");
            assert_eq!(store.a2a_push_configs("t2").await.unwrap().len(), 1, "{name}: per task");
        }
    }
}
