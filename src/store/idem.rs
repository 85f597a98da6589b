//! Idempotency keys in the SQL store. On SQLite the store's writer writes
//! them: a claim, a kept answer and a freed key each ride the group commit
//! of the batch they land in, instead of a transaction (a wait for the
//! write lock and a sync of the log) of their own for every keyed request.
//! Kept answers and freed keys are rows of their batch, as a finished
//! delegation's are ([`KeyAnswer`]). A claim answers from inside its batch's
//! transaction ([`Claim`]), after the batch's rows, in the order the claims
//! came: of two claims of one key in one batch, the first gets it. A claim
//! does not make its batch sync (it is followed by its tree's first step,
//! which does not either, and then by the delegation's end, which does); a
//! kept answer and a freed key do. On PostgreSQL each is a statement of its
//! own on a pooled connection (see `SqlStore::settle_key`).
//!
//! Taking a key over from a dead holder is rare and runs on its own
//! ([`take`]).

use sqlx::{AnyConnection, AnyPool};

use super::{Claim, Held, Holder, KeyAnswer, StoreResult, backend_err, now_ms};
use crate::protocol::UserId;

/// One write of an idempotency key.
pub(super) enum KeyOp {
    /// Claims a key: the one write that answers (how the key stands).
    Claim(KeyClaim),
    /// Keeps a finished request's answer under its key, or frees the key.
    Settle(KeyAnswer),
}

/// A claim of `key` for a request whose parameters hash to `hash`.
pub(super) struct KeyClaim {
    pub(super) user: String,
    pub(super) key: String,
    pub(super) hash: String,
    pub(super) holder: Holder,
}

impl KeyClaim {
    pub(super) fn new(user: &UserId, key: &str, hash: &str, holder: &Holder) -> Self {
        Self { user: user.to_string(), key: key.into(), hash: hash.into(), holder: holder.clone() }
    }
}

impl KeyOp {
    /// Whether its commit must sync: a claim waits for the next sync.
    pub(super) fn syncs(&self) -> bool {
        !matches!(self, Self::Claim(_))
    }
}

pub(super) const CLAIM: &str = "INSERT INTO idempotency_keys \
     (user_id, idem_key, request_hash, response, created_at, holder, owner) \
     VALUES ($1, $2, $3, NULL, $4, $5, $6) ON CONFLICT DO NOTHING";
pub(super) const READ: &str = "SELECT request_hash, response, created_at, holder, owner FROM idempotency_keys WHERE user_id = $1 AND idem_key = $2";
const KEEP: &str = "UPDATE idempotency_keys SET response = $1 WHERE user_id = $2 AND idem_key = $3";
const FREE: &str = "DELETE FROM idempotency_keys WHERE user_id = $1 AND idem_key = $2 AND response IS NULL";

/// A key's row as [`READ`] reads it.
pub(super) type Row = (String, Option<String>, i64, Option<String>, Option<String>);

/// How a claim that did not insert stands, from the key's row.
pub(super) fn standing(hash: &str, (stored, response, since, holder, owner): Row) -> Claim {
    match (stored == hash, response) {
        (false, _) => Claim::Mismatch,
        (true, Some(r)) => Claim::Done(r),
        (true, None) => Claim::Pending(Held { request_id: holder.and_then(|r| r.parse().ok()), owner, since }),
    }
}

/// Claims a key on `conn`: a pooled connection (PostgreSQL), or the
/// writer's transaction (an SQLite database in memory, through sqlx). A row
/// freed between the insert and the read (another transaction on
/// PostgreSQL) is claimed again.
pub(super) async fn claim_on(conn: &mut AnyConnection, claim: &KeyClaim) -> StoreResult<Claim> {
    let KeyClaim { user, key, hash, holder } = claim;
    loop {
        let inserted = sqlx::query(CLAIM)
            .bind(user.to_string())
            .bind(key.to_string())
            .bind(hash.to_string())
            .bind(now_ms())
            .bind(holder.request_id.to_string())
            .bind(holder.owner.clone())
            .execute(&mut *conn)
            .await
            .map_err(backend_err)?;
        if inserted.rows_affected() == 1 {
            return Ok(Claim::New);
        }
        let row: Option<Row> = sqlx::query_as(READ)
            .bind(user.to_string())
            .bind(key.to_string())
            .fetch_optional(&mut *conn)
            .await
            .map_err(backend_err)?;
        if let Some(row) = row {
            return Ok(standing(hash, row));
        }
    }
}

/// Keeps or frees a key on a pooled connection (PostgreSQL), a statement of
/// its own: the writer writes them as rows of its batches.
pub(super) async fn settle_on(conn: &mut AnyConnection, answer: &KeyAnswer) -> StoreResult<()> {
    let (user, key) = (answer.user_id.to_string(), answer.key.clone());
    let query = match &answer.response {
        Some(response) => sqlx::query(KEEP).bind(response.clone()).bind(user).bind(key),
        None => sqlx::query(FREE).bind(user).bind(key),
    };
    query.execute(&mut *conn).await.map_err(backend_err)?;
    Ok(())
}

/// Takes a running key over from a dead holder: compare and set on how it
/// was held (NULLs compared as empty: keys from before holders were kept).
pub(super) async fn take(pool: &AnyPool, user: &UserId, key: &str, from: &Held, to: &Holder) -> StoreResult<bool> {
    let taken = sqlx::query(
        "UPDATE idempotency_keys SET holder = $1, owner = $2, created_at = $3 \
         WHERE user_id = $4 AND idem_key = $5 AND response IS NULL \
         AND created_at = $6 AND COALESCE(holder, '') = $7 AND COALESCE(owner, '') = $8",
    )
    .bind(to.request_id.to_string())
    .bind(to.owner.clone())
    .bind(now_ms())
    .bind(user.to_string())
    .bind(key.to_string())
    .bind(from.since)
    .bind(from.request_id.map(|r| r.to_string()).unwrap_or_default())
    .bind(from.owner.clone().unwrap_or_default())
    .execute(pool)
    .await
    .map_err(backend_err)?;
    Ok(taken.rows_affected() == 1)
}
