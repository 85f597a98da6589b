//! Replicas sharing one database (migration 0010). Each process that runs
//! trees holds a lease in `replicas` and renews it well before it runs out;
//! each top step names the replica running it (`tree_steps.owner`). A
//! replica whose lease ran out is dead: another takes its running trees
//! over, one compare-and-set on `owner` per tree, so that exactly one does.

use serde::{Deserialize, Serialize};
use sqlx::AnyPool;

use super::backend_err;
use super::{StoreResult, TreeStep};
use crate::protocol::RequestId;

/// A process running trees on the store, and how long it counts as alive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replica {
    /// `host/pid/random`: new for every process.
    pub id: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id there.
    pub pid: u32,
    /// When it started, in epoch milliseconds.
    pub started_at: i64,
    /// Its lease: past this (epoch ms) it is dead and its trees are taken over.
    pub alive_until: i64,
}

impl Replica {
    /// Whether its lease ran out before `now` (epoch ms).
    pub fn dead_at(&self, now: i64) -> bool {
        self.alive_until < now
    }
}

pub(super) async fn heartbeat(pool: &AnyPool, r: &Replica) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO replicas (id, host, pid, started_at, alive_until) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (id) DO UPDATE SET alive_until = excluded.alive_until",
    )
    .bind(r.id.clone())
    .bind(r.host.clone())
    .bind(i64::from(r.pid))
    .bind(r.started_at)
    .bind(r.alive_until)
    .execute(pool)
    .await
    .map_err(backend_err)?;
    Ok(())
}

pub(super) async fn replicas(pool: &AnyPool) -> StoreResult<Vec<Replica>> {
    let rows: Vec<(String, String, i64, i64, i64)> =
        sqlx::query_as("SELECT id, host, pid, started_at, alive_until FROM replicas ORDER BY started_at, id")
            .fetch_all(pool)
            .await
            .map_err(backend_err)?;
    Ok(rows
        .into_iter()
        .map(|(id, host, pid, started_at, alive_until)| Replica {
            id,
            host,
            pid: u32::try_from(pid).unwrap_or(0),
            started_at,
            alive_until,
        })
        .collect())
}

pub(super) async fn forget(pool: &AnyPool, id: &str, now: i64) -> StoreResult<()> {
    sqlx::query("DELETE FROM replicas WHERE id = $1 AND alive_until < $2")
        .bind(id.to_string())
        .bind(now)
        .execute(pool)
        .await
        .map_err(backend_err)?;
    Ok(())
}

pub(super) async fn take_step(pool: &AnyPool, seen: &TreeStep, owner: &str) -> StoreResult<bool> {
    // '' stands for "none" (`owner = NULL` is never true in SQL); the
    // write time moves on, so a second taker that saw the same version fails,
    // and the step runs now, so one that reads it after this is refused. A
    // running step is taken only while its owner's lease is out in this
    // very statement: an owner that renewed since the taker looked keeps it
    let now = super::now_ms();
    let done = sqlx::query(
        "UPDATE tree_steps SET owner = $1, updated_at = $2, state = 'running' WHERE request_id = $3 \
         AND state IN ('running', 'waiting') AND COALESCE(owner, '') = $4 AND updated_at = $5 \
         AND (state = 'waiting' OR NOT EXISTS \
           (SELECT 1 FROM replicas WHERE replicas.id = $4 AND replicas.alive_until >= $6))",
    )
    .bind(owner.to_string())
    .bind(taken_at(seen))
    .bind(seen.request_id.to_string())
    .bind(seen.owner.clone().unwrap_or_default())
    .bind(seen.updated_at)
    .bind(now)
    .execute(pool)
    .await
    .map_err(backend_err)?;
    Ok(done.rows_affected() == 1)
}

/// The write time of a step taken over: now, and always after the version taken.
pub(super) fn taken_at(seen: &TreeStep) -> i64 {
    super::now_ms().max(seen.updated_at.saturating_add(1))
}

pub(super) async fn cancelled(pool: &AnyPool, ids: &[RequestId]) -> StoreResult<Vec<RequestId>> {
    let mut out = Vec::new();
    // bounded statements: a replica may run thousands of delegations at once
    for chunk in ids.chunks(500) {
        let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT request_id FROM tree_steps WHERE state = 'cancelled' AND request_id IN ({})",
            marks.join(", ")
        );
        let mut q = sqlx::query_as::<_, (String,)>(sqlx::AssertSqlSafe(sql));
        for id in chunk {
            q = q.bind(id.to_string());
        }
        let rows = q.fetch_all(pool).await.map_err(backend_err)?;
        out.extend(rows.into_iter().filter_map(|(id,)| id.parse::<RequestId>().ok()));
    }
    Ok(out)
}
