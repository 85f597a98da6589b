//! Past trees: a user's (or, for an admin, everyone's) finished trees from
//! the store, newest first, a page at a time, filtered by an agent that took
//! part, the answer's status or words of the task. What the page's
//! Delegations view lists before anything runs.

use std::collections::HashMap;

use serde::Serialize;
use sqlx::{AnyPool, FromRow};

use super::ratings::{Rating, Thumb};
use super::{DelegationRecord, StoreError, StoreResult, backend_err};
use crate::protocol::{DelegationError, ErrorCode, RequestId, UserId};

/// Trees per page when none is asked for.
pub const PAGE: usize = 20;
/// The most trees one page holds.
pub const PAGE_MAX: usize = 100;
/// The longest text filter, in characters.
pub const MAX_TEXT_CHARS: usize = 200;
/// The statuses a tree may have ended with.
pub const STATUSES: [&str; 6] = ["success", "partial", "failed", "refused", "needs_input", "needs_approval"];

/// Where a page starts: below the tree that started at `started_at` with `root_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// The last tree's start.
    pub started_at: i64,
    /// The last tree's id.
    pub root_id: RequestId,
}

impl Cursor {
    /// The cursor as the answer hands it out: `started_at.root_id`.
    pub fn encode(&self) -> String {
        format!("{}.{}", self.started_at, self.root_id)
    }

    /// Reads [`Cursor::encode`]'s text; anything else is `INVALID_REQUEST`.
    pub fn decode(text: &str) -> Result<Self, DelegationError> {
        let bad = || {
            DelegationError::new(
                ErrorCode::InvalidRequest,
                "before: use the 'next' value of the previous page, as it was given",
            )
        };
        let (at, id) = text.split_once('.').ok_or_else(bad)?;
        Ok(Self { started_at: at.parse().map_err(|_| bad())?, root_id: id.parse().map_err(|_| bad())? })
    }
}

/// Which past trees to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryQuery {
    /// Whose; None for everyone's (an admin's view).
    pub user: Option<UserId>,
    /// Only trees in which this agent was called.
    pub agent: Option<String>,
    /// Only trees whose answer has this status (one of [`STATUSES`]).
    pub status: Option<String>,
    /// Only trees whose task contains these words (ASCII case ignored).
    pub text: Option<String>,
    /// Older than this.
    pub before: Option<Cursor>,
    /// Trees on the page (1 to [`PAGE_MAX`]).
    pub limit: usize,
}

impl HistoryQuery {
    /// Checks the filters: a status that is none of [`STATUSES`], a text
    /// longer than [`MAX_TEXT_CHARS`] or a limit out of range is `INVALID_REQUEST`.
    /// (Whether an agent exists is the caller's to say: the store keeps no team.)
    pub fn check(mut self) -> Result<Self, DelegationError> {
        let invalid = |m: String| DelegationError::new(ErrorCode::InvalidRequest, m);
        if let Some(s) = &self.status
            && !STATUSES.contains(&s.as_str())
        {
            return Err(invalid(format!(
                "status '{s}' is not one a tree ends with: use one of {}",
                STATUSES.join(", ")
            )));
        }
        self.text = self.text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        if self.text.as_ref().is_some_and(|t| t.chars().count() > MAX_TEXT_CHARS) {
            return Err(invalid(format!("q is longer than {MAX_TEXT_CHARS} characters")));
        }
        if self.limit == 0 || self.limit > PAGE_MAX {
            return Err(invalid(format!("limit must be 1 to {PAGE_MAX}, not {}", self.limit)));
        }
        Ok(self)
    }
}

/// One past tree, as its top delegation ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PastTree {
    /// The tree's id (its top delegation's).
    pub root_id: RequestId,
    /// Its user.
    pub user_id: UserId,
    /// Who asked (`user` for a user's turn).
    pub origin: String,
    /// The agent that answered.
    pub agent: String,
    /// The task, PII redacted.
    pub objective: String,
    /// How it ended.
    pub status: String,
    /// Its error code, if it did not succeed.
    pub error_code: Option<String>,
    /// When it started, epoch milliseconds.
    pub started_at: i64,
    /// How long it took.
    pub duration_ms: u64,
    /// Tokens of the whole tree.
    pub tokens: u64,
    /// Delegations in the tree.
    pub nodes: u64,
    /// Whether it was a consult.
    pub consult: bool,
    /// The user's rating, if any.
    pub rating: Option<Thumb>,
}

/// A page of past trees and where the next one starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryPage {
    /// Newest first.
    pub trees: Vec<PastTree>,
    /// The `before` of the next page; None on the last.
    pub next: Option<String>,
}

fn page(mut trees: Vec<PastTree>, limit: usize) -> HistoryPage {
    let more = trees.len() > limit;
    trees.truncate(limit);
    let next = trees.last().filter(|_| more).map(|t| Cursor { started_at: t.started_at, root_id: t.root_id }.encode());
    HistoryPage { trees, next }
}

/// A page from the memory store's records and ratings.
pub(super) fn of_records(
    q: &HistoryQuery,
    records: &HashMap<RequestId, DelegationRecord>,
    ratings: &HashMap<RequestId, Rating>,
) -> HistoryPage {
    let mut nodes: HashMap<RequestId, (u64, Vec<&str>)> = HashMap::new();
    for r in records.values() {
        let n = nodes.entry(r.root_id).or_default();
        n.0 += 1;
        n.1.push(r.target.as_str());
    }
    let text = q.text.as_ref().map(|t| t.to_ascii_lowercase());
    let mut tops: Vec<&DelegationRecord> = records
        .values()
        .filter(|r| r.request_id == r.root_id)
        .filter(|r| q.user.as_ref().is_none_or(|u| &r.user_id == u))
        .filter(|r| q.status.as_ref().is_none_or(|s| &r.status == s))
        .filter(|r| text.as_ref().is_none_or(|t| r.objective.to_ascii_lowercase().contains(t.as_str())))
        .filter(|r| {
            q.agent.as_ref().is_none_or(|a| nodes.get(&r.request_id).is_some_and(|n| n.1.contains(&a.as_str())))
        })
        .filter(|r| {
            q.before.is_none_or(|c| (r.started_at, r.request_id.to_string()) < (c.started_at, c.root_id.to_string()))
        })
        .collect();
    tops.sort_by_key(|r| std::cmp::Reverse((r.started_at, r.request_id.to_string())));
    let trees = tops
        .into_iter()
        .take(q.limit + 1)
        .map(|r| PastTree {
            root_id: r.request_id,
            user_id: r.user_id.clone(),
            origin: r.origin.clone(),
            agent: r.target.clone(),
            objective: r.objective.clone(),
            status: r.status.clone(),
            error_code: r.error_code.clone(),
            started_at: r.started_at,
            duration_ms: r.duration_ms,
            tokens: u64::from(r.tokens.total),
            nodes: nodes.get(&r.request_id).map_or(1, |n| n.0),
            consult: r.consult,
            rating: ratings.get(&r.request_id).map(|x| x.thumb),
        })
        .collect();
    page(trees, q.limit)
}

#[derive(FromRow)]
struct TreeRow {
    request_id: String,
    user_id: String,
    origin: String,
    target: String,
    objective: String,
    status: String,
    error_code: Option<String>,
    started_at: i64,
    duration_ms: i64,
    total_tokens: i64,
    consult: i64,
    nodes: i64,
    rating: Option<i64>,
}

/// `%` and `_` in a user's words are words, not wildcards.
fn like_pattern(text: &str) -> String {
    let escaped = text.to_ascii_lowercase().replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    format!("%{escaped}%")
}

/// A page's statement: its filters bound in [`page_sql`]'s order.
pub(super) fn page_statement(q: &HistoryQuery) -> String {
    // d is a root: its tree is d and the rows below it (trees.rs)
    let mut sql = format!(
        "SELECT d.request_id, d.user_id, d.origin, d.target, d.objective, d.status, d.error_code, d.started_at, \
         d.duration_ms, d.total_tokens, d.consult, \
         1 + (SELECT COUNT(*) FROM delegations c WHERE {}) AS nodes, r.rating \
         FROM delegations d LEFT JOIN ratings r ON r.root_id = d.request_id WHERE d.request_id = d.root_id",
        super::trees::below_root("c", "d.request_id")
    );
    let mut n = 0;
    let mut next = || {
        n += 1;
        n
    };
    if q.user.is_some() {
        sql.push_str(&format!(" AND d.user_id = ${}", next()));
    }
    if q.status.is_some() {
        sql.push_str(&format!(" AND d.status = ${}", next()));
    }
    if q.text.is_some() {
        sql.push_str(&format!(" AND LOWER(d.objective) LIKE ${} ESCAPE '\\'", next()));
    }
    if q.agent.is_some() {
        let (n, below) = (next(), super::trees::below_root("a", "d.request_id"));
        sql.push_str(&format!(
            " AND (d.target = ${n} OR EXISTS (SELECT 1 FROM delegations a WHERE {below} AND a.target = ${n}))"
        ));
    }
    if q.before.is_some() {
        let (a, b, c) = (next(), next(), next());
        sql.push_str(&format!(" AND (d.started_at < ${a} OR (d.started_at = ${b} AND d.request_id < ${c}))"));
    }
    sql.push_str(&format!(" ORDER BY d.started_at DESC, d.request_id DESC LIMIT {}", q.limit + 1));
    sql
}

/// A page from SQL: the newest tops first, on the `started_at` indexes.
pub(super) async fn page_sql(pool: &AnyPool, q: &HistoryQuery) -> StoreResult<HistoryPage> {
    let mut query = sqlx::query_as::<_, TreeRow>(sqlx::AssertSqlSafe(page_statement(q)));
    if let Some(u) = &q.user {
        query = query.bind(u.to_string());
    }
    if let Some(s) = &q.status {
        query = query.bind(s.clone());
    }
    if let Some(t) = &q.text {
        query = query.bind(like_pattern(t));
    }
    if let Some(a) = &q.agent {
        query = query.bind(a.clone());
    }
    if let Some(c) = &q.before {
        query = query.bind(c.started_at).bind(c.started_at).bind(c.root_id.to_string());
    }
    let rows = query.fetch_all(pool).await.map_err(backend_err)?;
    let corrupt = |what: &str, v: &str| StoreError::Backend(format!("corrupt {what} '{v}' in delegations"));
    let trees = rows
        .into_iter()
        .map(|r| {
            Ok(PastTree {
                root_id: r.request_id.parse().map_err(|_| corrupt("request id", &r.request_id))?,
                user_id: UserId::parse(r.user_id.clone()).map_err(|_| corrupt("user", &r.user_id))?,
                origin: r.origin,
                agent: r.target,
                objective: r.objective,
                status: r.status,
                error_code: r.error_code,
                started_at: r.started_at,
                duration_ms: u64::try_from(r.duration_ms).unwrap_or(0),
                tokens: u64::try_from(r.total_tokens).unwrap_or(0),
                nodes: u64::try_from(r.nodes).unwrap_or(0),
                consult: r.consult != 0,
                rating: r.rating.and_then(Thumb::from_value),
            })
        })
        .collect::<StoreResult<Vec<_>>>()?;
    Ok(page(trees, q.limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_checked_before_anything_is_read() {
        let ok = HistoryQuery { limit: PAGE, text: Some("  receipt ".into()), ..Default::default() }.check().unwrap();
        assert_eq!(ok.text.as_deref(), Some("receipt"));
        for (q, says) in [
            (HistoryQuery { limit: PAGE, status: Some("done".into()), ..Default::default() }, "status 'done'"),
            (HistoryQuery { limit: 0, ..Default::default() }, "limit must be"),
            (HistoryQuery { limit: PAGE_MAX + 1, ..Default::default() }, "limit must be"),
            (
                HistoryQuery { limit: PAGE, text: Some("x".repeat(MAX_TEXT_CHARS + 1)), ..Default::default() },
                "q is longer",
            ),
        ] {
            let e = q.check().unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidRequest);
            assert!(e.message.contains(says), "{}", e.message);
        }
    }

    #[test]
    fn a_cursor_reads_back_and_garbage_is_refused() {
        let c = Cursor { started_at: 1_760_000_000_000, root_id: RequestId::new() };
        assert_eq!(Cursor::decode(&c.encode()).unwrap(), c);
        for bad in ["", "12", "x.y", "12.not-a-uuid"] {
            assert_eq!(Cursor::decode(bad).unwrap_err().code, ErrorCode::InvalidRequest, "{bad}");
        }
        assert_eq!(like_pattern("50%_Off\\"), "%50\\%\\_off\\\\%");
    }
}
