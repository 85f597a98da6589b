//! Rows as the SQL store reads them: flat structs that `sqlx::FromRow` maps
//! column by column, then one checked conversion each into the store's types
//! (ids parsed, counters narrowed, message metadata unpacked). A value that
//! doesn't parse is reported as corruption, naming its column.

use std::str::FromStr;

use sqlx::FromRow;

use super::audit::{AuditEntry, AuditRecord};
use super::{DelegationRecord, Fact, Message, Session, StoreError, StoreResult};
use crate::protocol::TokenUsage;

fn parse<T: FromStr>(col: &str, s: &str) -> StoreResult<T> {
    s.parse().map_err(|_| StoreError::Backend(format!("corrupt value in column {col}: '{s}'")))
}

fn parse_opt<T: FromStr>(col: &str, s: Option<&str>) -> StoreResult<Option<T>> {
    s.map(|s| parse(col, s)).transpose()
}

fn count<T: TryFrom<i64>>(col: &str, n: i64) -> StoreResult<T> {
    T::try_from(n).map_err(|_| StoreError::Backend(format!("corrupt value in column {col}: {n}")))
}

/// A row of `sessions`.
#[derive(Debug, FromRow)]
pub(super) struct SessionRow {
    pub(super) id: String,
    pub(super) user_id: String,
    pub(super) agent: String,
    pub(super) parent_id: Option<String>,
    pub(super) created_at: i64,
}

impl TryFrom<SessionRow> for Session {
    type Error = StoreError;
    fn try_from(r: SessionRow) -> StoreResult<Self> {
        Ok(Session {
            id: parse("id", &r.id)?,
            user_id: parse("user_id", &r.user_id)?,
            agent: parse("agent", &r.agent)?,
            parent_id: parse_opt("parent_id", r.parent_id.as_deref())?,
            created_at: r.created_at,
        })
    }
}

/// A row of `delegations`.
#[derive(Debug, FromRow)]
pub(super) struct DelegationRow {
    pub(super) request_id: String,
    pub(super) root_id: String,
    pub(super) parent_id: Option<String>,
    pub(super) user_id: String,
    pub(super) origin: String,
    pub(super) target: String,
    pub(super) objective: String,
    pub(super) objective_hash: String,
    pub(super) status: String,
    pub(super) error_code: Option<String>,
    pub(super) signature: String,
    pub(super) attempts: i64,
    pub(super) depth: i64,
    pub(super) started_at: i64,
    pub(super) duration_ms: i64,
    pub(super) prompt_tokens: i64,
    pub(super) completion_tokens: i64,
    pub(super) total_tokens: i64,
    pub(super) consult: i64,
}

impl TryFrom<DelegationRow> for DelegationRecord {
    type Error = StoreError;
    fn try_from(r: DelegationRow) -> StoreResult<Self> {
        Ok(DelegationRecord {
            request_id: parse("request_id", &r.request_id)?,
            root_id: parse("root_id", &r.root_id)?,
            parent_id: parse_opt("parent_id", r.parent_id.as_deref())?,
            user_id: parse("user_id", &r.user_id)?,
            origin: r.origin,
            target: r.target,
            objective: r.objective,
            objective_hash: r.objective_hash,
            status: r.status,
            error_code: r.error_code,
            signature: r.signature,
            attempts: count("attempts", r.attempts)?,
            depth: count("depth", r.depth)?,
            started_at: r.started_at,
            duration_ms: count("duration_ms", r.duration_ms)?,
            tokens: TokenUsage {
                prompt: count("prompt_tokens", r.prompt_tokens)?,
                completion: count("completion_tokens", r.completion_tokens)?,
                total: count("total_tokens", r.total_tokens)?,
            },
            consult: r.consult != 0,
        })
    }
}

/// A row of `audit_log`.
#[derive(Debug, FromRow)]
pub(super) struct AuditRow {
    seq: i64,
    request_id: String,
    root_id: String,
    origin: String,
    target: String,
    user_id: String,
    objective: String,
    outcome: String,
    error_code: Option<String>,
    duration_ms: i64,
    tokens: i64,
    created_at: i64,
    prev_hash: String,
    hash: String,
}

impl TryFrom<AuditRow> for AuditEntry {
    type Error = StoreError;
    fn try_from(r: AuditRow) -> StoreResult<Self> {
        Ok(AuditEntry {
            seq: count("seq", r.seq)?,
            record: AuditRecord {
                request_id: parse("request_id", &r.request_id)?,
                root_id: parse("root_id", &r.root_id)?,
                origin: r.origin,
                target: r.target,
                user_id: r.user_id,
                objective: r.objective,
                outcome: r.outcome,
                error_code: r.error_code,
                duration_ms: count("duration_ms", r.duration_ms)?,
                tokens: count("tokens", r.tokens)?,
                created_at: r.created_at,
            },
            prev_hash: r.prev_hash,
            hash: r.hash,
        })
    }
}

/// A row of `messages`; `metadata` is a JSON object.
#[derive(Debug, FromRow)]
pub(super) struct MessageRow {
    pub(super) session_id: String,
    pub(super) role: String,
    pub(super) content: String,
    pub(super) metadata: String,
    pub(super) created_at: i64,
}

impl TryFrom<MessageRow> for Message {
    type Error = StoreError;
    fn try_from(r: MessageRow) -> StoreResult<Self> {
        let meta: serde_json::Value = serde_json::from_str(&r.metadata).unwrap_or_default();
        Ok(Message {
            session_id: parse("session_id", &r.session_id)?,
            role: r.role,
            content: r.content,
            delegated_from: meta["delegated_from"].as_str().map(str::to_string),
            delegation_depth: meta["delegation_depth"].as_u64().and_then(|d| u32::try_from(d).ok()),
            asked: meta["asked"].as_bool().unwrap_or(false),
            created_at: r.created_at,
        })
    }
}

/// A row of `memory_facts`.
#[derive(Debug, FromRow)]
pub(super) struct FactRow {
    pub(super) user_id: String,
    pub(super) scope: String,
    pub(super) fact: String,
    pub(super) source_request: Option<String>,
    pub(super) created_at: i64,
}

impl TryFrom<FactRow> for Fact {
    type Error = StoreError;
    fn try_from(r: FactRow) -> StoreResult<Self> {
        Ok(Fact {
            user_id: parse("user_id", &r.user_id)?,
            scope: r.scope,
            fact: r.fact,
            source_request: parse_opt("source_request", r.source_request.as_deref())?,
            created_at: r.created_at,
        })
    }
}

/// The row counts `Store::counts` reports.
#[derive(Debug, FromRow)]
pub(super) struct CountsRow {
    pub sessions: i64,
    pub messages: i64,
    pub facts: i64,
    pub delegations: i64,
    pub audit: i64,
}

/// Converts every row, stopping at the first that doesn't convert.
pub(super) fn convert<R, T: TryFrom<R, Error = StoreError>>(rows: Vec<R>) -> StoreResult<Vec<T>> {
    rows.into_iter().map(T::try_from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session_row(id: &str) -> SessionRow {
        SessionRow { id: id.into(), user_id: "u1".into(), agent: "prime".into(), parent_id: None, created_at: 7 }
    }

    #[test]
    fn a_corrupt_id_names_its_column() {
        let good = session_row(&crate::protocol::SessionId::new().to_string());
        assert_eq!(Session::try_from(good).unwrap().created_at, 7);
        let err = Session::try_from(session_row("not-a-uuid")).unwrap_err();
        assert!(err.to_string().contains("column id"), "{err}");
    }

    #[test]
    fn negative_counters_are_corruption_not_wraparound() {
        assert_eq!(count::<u32>("attempts", 3).unwrap(), 3);
        assert!(count::<u32>("attempts", -1).unwrap_err().to_string().contains("attempts"));
    }

    #[test]
    fn message_metadata_is_unpacked_and_garbage_ignored() {
        let row = |metadata: &str| MessageRow {
            session_id: crate::protocol::SessionId::new().to_string(),
            role: "user".into(),
            content: "hi".into(),
            metadata: metadata.into(),
            created_at: 1,
        };
        let m = Message::try_from(row(r#"{"delegated_from":"prime","delegation_depth":2}"#)).unwrap();
        assert_eq!((m.delegated_from.as_deref(), m.delegation_depth), (Some("prime"), Some(2)));
        let m = Message::try_from(row("not json")).unwrap();
        assert_eq!((m.delegated_from, m.delegation_depth), (None, None));
    }
}
