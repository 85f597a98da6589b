//! Each user's money: the transactions found in what the user gave the
//! finance agents, and the goals and debts the user told them about. Rows are
//! per user (every read and write names the user), and a transaction's id
//! comes from the user and the transaction itself ([`entry_id`]), so writing
//! the same receipt twice keeps one row. Agents reach this only through the
//! runtime's money tool (`agent::Money`), which fixes the user.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sqlx::{AnyPool, FromRow};

use super::backend_err;
use super::{StoreError, StoreResult, now_ms};
use crate::protocol::UserId;

/// The most rows one read returns (the newest), so a long history stays bounded.
pub const MONEY_LIMIT: usize = 20_000;

/// One transaction in a user's money.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoneyEntry {
    /// The user it belongs to.
    pub user_id: UserId,
    /// Stable per user and transaction: see [`entry_id`].
    pub id: String,
    /// `YYYY-MM-DD`, when the document gave one.
    pub date: Option<String>,
    /// The merchant, cleaned (`Office Depot`).
    pub merchant: String,
    /// The line or text it came from.
    pub description: String,
    /// Integer cents; positive is money spent, negative money received.
    pub amount: i64,
    /// ISO 4217 (`USD`).
    pub currency: String,
    /// The spending category, when known.
    pub category: Option<String>,
    /// 0–100, how sure the agent that wrote it was.
    pub confidence: Option<u8>,
    /// The document it came from (`receipt text`, `statement.csv`).
    pub source: String,
    /// What the user said about it (`business lunch`).
    pub note: Option<String>,
    /// The delegation that wrote it.
    pub request_id: Option<String>,
    /// When it was first kept, in milliseconds since the Unix epoch.
    pub created_at: i64,
    /// When it was last changed (a correction).
    pub updated_at: i64,
}

/// A goal or a debt the user told an agent about; `body` is the agent's own shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoneyPlan {
    /// The user it belongs to.
    pub user_id: UserId,
    /// `goal` or `debt`.
    pub kind: String,
    /// Unique per user and kind (`vacation`).
    pub name: String,
    /// What the agent keeps about it.
    pub body: serde_json::Value,
    /// When it was last written.
    pub updated_at: i64,
}

/// The id of a transaction: the user, its date, its merchant's letters (so
/// `OFFICE DEPOT #123` and `Office Depot` agree), amount, currency, and its
/// occurrence among equal transactions of one document (two coffees on one
/// statement are two rows; the same statement uploaded twice is not).
pub fn entry_id(user: &UserId, date: Option<&str>, merchant: &str, amount: i64, currency: &str, nth: u32) -> String {
    let letters: String = merchant
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .flat_map(|w| w.chars().filter(|c| c.is_alphabetic()).flat_map(char::to_lowercase))
        .collect();
    let key = format!("{user}\n{}\n{letters}\n{amount}\n{}\n{nth}", date.unwrap_or(""), currency.to_uppercase());
    let digest = Sha256::digest(key.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug, FromRow)]
struct EntryRow {
    user_id: String,
    id: String,
    txn_date: Option<String>,
    merchant: String,
    description: String,
    amount: i64,
    currency: String,
    category: Option<String>,
    confidence: Option<i64>,
    source: String,
    note: Option<String>,
    request_id: Option<String>,
    created_at: i64,
    updated_at: i64,
}

impl TryFrom<EntryRow> for MoneyEntry {
    type Error = StoreError;
    fn try_from(r: EntryRow) -> StoreResult<Self> {
        Ok(MoneyEntry {
            user_id: r.user_id.parse().map_err(|_| backend_err(format!("corrupt money user '{}'", r.user_id)))?,
            id: r.id,
            date: r.txn_date,
            merchant: r.merchant,
            description: r.description,
            amount: r.amount,
            currency: r.currency,
            category: r.category,
            confidence: r.confidence.and_then(|c| u8::try_from(c).ok()),
            source: r.source,
            note: r.note,
            request_id: r.request_id,
            created_at: r.created_at,
            updated_at: r.updated_at,
        })
    }
}

/// Adds the entries that are not there yet, in one transaction; true for each one added.
pub(super) async fn add(pool: &AnyPool, entries: &[MoneyEntry]) -> StoreResult<Vec<bool>> {
    let mut tx = pool.begin().await.map_err(backend_err)?;
    let mut added = Vec::with_capacity(entries.len());
    for e in entries {
        let done = sqlx::query(
            "INSERT INTO money_entries (user_id, id, txn_date, merchant, description, amount, currency, category, \
             confidence, source, note, request_id, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT DO NOTHING",
        )
        .bind(e.user_id.to_string())
        .bind(e.id.clone())
        .bind(e.date.clone())
        .bind(e.merchant.clone())
        .bind(e.description.clone())
        .bind(e.amount)
        .bind(e.currency.clone())
        .bind(e.category.clone())
        .bind(e.confidence.map(i64::from))
        .bind(e.source.clone())
        .bind(e.note.clone())
        .bind(e.request_id.clone())
        .bind(e.created_at)
        .bind(e.updated_at)
        .execute(&mut *tx)
        .await
        .map_err(backend_err)?;
        added.push(done.rows_affected() == 1);
    }
    tx.commit().await.map_err(backend_err)?;
    Ok(added)
}

/// The user's entries, oldest first (by date, then by when they were written).
pub(super) async fn entries(pool: &AnyPool, user: &UserId) -> StoreResult<Vec<MoneyEntry>> {
    let rows: Vec<EntryRow> = sqlx::query_as(
        "SELECT user_id, id, txn_date, merchant, description, amount, currency, category, confidence, source, note, \
         request_id, created_at, updated_at FROM money_entries WHERE user_id = $1 \
         ORDER BY created_at DESC, id LIMIT $2",
    )
    .bind(user.to_string())
    .bind(MONEY_LIMIT as i64)
    .fetch_all(pool)
    .await
    .map_err(backend_err)?;
    let mut out = rows.into_iter().map(MoneyEntry::try_from).collect::<StoreResult<Vec<_>>>()?;
    sort(&mut out);
    Ok(out)
}

/// Oldest first: by date (undated last), then by when written.
pub(super) fn sort(entries: &mut [MoneyEntry]) {
    entries.sort_by(|a, b| {
        let key = |e: &MoneyEntry| (e.date.is_none(), e.date.clone(), e.created_at, e.id.clone());
        key(a).cmp(&key(b))
    });
}

/// Sets the category and the note of the user's entry `id`; false when the user has no such entry.
pub(super) async fn update(
    pool: &AnyPool,
    user: &UserId,
    id: &str,
    category: Option<&str>,
    note: Option<&str>,
) -> StoreResult<bool> {
    let done = sqlx::query(
        "UPDATE money_entries SET category = COALESCE($1, category), note = COALESCE($2, note), updated_at = $3 \
         WHERE user_id = $4 AND id = $5",
    )
    .bind(category.map(str::to_string))
    .bind(note.map(str::to_string))
    .bind(now_ms())
    .bind(user.to_string())
    .bind(id.to_string())
    .execute(pool)
    .await
    .map_err(backend_err)?;
    Ok(done.rows_affected() == 1)
}

/// Creates or replaces the user's plan of that kind and name.
pub(super) async fn put_plan(pool: &AnyPool, plan: &MoneyPlan) -> StoreResult<()> {
    sqlx::query(
        "INSERT INTO money_plans (user_id, kind, name, body, updated_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (user_id, kind, name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
    )
    .bind(plan.user_id.to_string())
    .bind(plan.kind.clone())
    .bind(plan.name.clone())
    .bind(plan.body.to_string())
    .bind(plan.updated_at)
    .execute(pool)
    .await
    .map_err(backend_err)?;
    Ok(())
}

/// The user's plans, by kind and name.
pub(super) async fn plans(pool: &AnyPool, user: &UserId) -> StoreResult<Vec<MoneyPlan>> {
    let rows: Vec<(String, String, String, i64)> = sqlx::query_as(
        "SELECT kind, name, body, updated_at FROM money_plans WHERE user_id = $1 ORDER BY kind, name LIMIT 1000",
    )
    .bind(user.to_string())
    .fetch_all(pool)
    .await
    .map_err(backend_err)?;
    rows.into_iter()
        .map(|(kind, name, body, updated_at)| {
            let body = serde_json::from_str(&body).map_err(|e| backend_err(format!("corrupt plan '{name}': {e}")))?;
            Ok(MoneyPlan { user_id: user.clone(), kind, name, body, updated_at })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_id_ignores_store_numbers_and_case_but_not_the_user_or_the_amount() {
        let (alice, bob): (UserId, UserId) = ("alice".parse().unwrap(), "bob".parse().unwrap());
        let id = |u: &UserId, m: &str, amount: i64, nth: u32| entry_id(u, Some("2026-10-03"), m, amount, "usd", nth);
        assert_eq!(id(&alice, "OFFICE DEPOT #123", 8103, 0), id(&alice, "Office Depot", 8103, 0));
        assert_ne!(id(&alice, "Office Depot", 8103, 0), id(&bob, "Office Depot", 8103, 0));
        assert_ne!(id(&alice, "Office Depot", 8103, 0), id(&alice, "Office Depot", 8104, 0));
        assert_ne!(id(&alice, "Office Depot", 8103, 0), id(&alice, "Office Depot", 8103, 1));
        assert_ne!(id(&alice, "Office Depot", 8103, 0), id(&alice, "Staples", 8103, 0));
        assert_eq!(id(&alice, "Office Depot", 8103, 0).len(), 16);
    }
}
