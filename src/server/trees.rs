//! Replaying a tree over HTTP (issue 17): the dashboard's Replay button and
//! the list of a tree's earlier replays.
//!
//! | route | who | what |
//! |---|---|---|
//! | `POST /v1/trees/{id}/replay` | the tree's user, admin | `{"mode":"recorded"\|"live"}` (an empty body is `recorded`) → the replay's report |
//! | `GET /v1/trees/{id}/replays` | the tree's user, admin | `{"replays":[{"id","mode","identical","differing","nodes","run_by","created_at","report"}]}`, newest first |
//!
//! A replay runs [`Runtime::replay_for`](crate::runtime::Runtime::replay_for)
//! as the caller: it changes nothing in the store but its own record. A
//! live one runs today's agents (models, network), so it is open to the
//! same people as a recorded one and no one else; service tokens have no
//! replays (`UNAUTHENTICATED`, as at `/v1/approvals`). Another user's tree
//! is `USER_MISMATCH` (403), an unknown one `NOT_FOUND` (404), a tree whose
//! journal cannot replay it (still running, or recorded before the journal)
//! `RECORD_INCOMPLETE` (422).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::extract::Body;
use super::{ApiError, AppState};
use crate::auth::Principal;
use crate::pipeline::ReplayMode;
use crate::protocol::{ErrorCode, IdError, RequestId};
use crate::store::ReplayRecord;

fn people_only(caller: &Principal) -> Result<(), ApiError> {
    if caller.agent().is_some() {
        return Err(ApiError::unauthenticated(
            "a tree is replayed by its user or an admin; a service token has no replays",
        ));
    }
    Ok(())
}

fn tree_id(id: &str) -> Result<RequestId, ApiError> {
    id.parse().map_err(|e: IdError| ApiError::invalid(format!("tree id: {e}")))
}

/// Reads `{"mode":"recorded"|"live"}`; an empty body (or `{}`, or a null
/// mode) is `recorded`. Any other field, or a mode of the wrong kind, is
/// `INVALID_REQUEST` naming it.
pub fn parse_replay(raw: &[u8]) -> Result<ReplayMode, ApiError> {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok(ReplayMode::Recorded);
    }
    let value: Value = serde_json::from_slice(raw).map_err(|e| {
        ApiError::invalid(format!("the body must be JSON {{\"mode\":\"recorded\"|\"live\"}} or empty: {e}"))
    })?;
    let Value::Object(mut body) = value else {
        return Err(ApiError::invalid("the body must be a JSON object {\"mode\":\"recorded\"|\"live\"} or empty"));
    };
    let mode = body.remove("mode");
    if let Some(field) = body.keys().next() {
        return Err(ApiError::invalid(format!("unknown field '{field}': the body takes 'mode' only")));
    }
    match mode {
        None | Some(Value::Null) => Ok(ReplayMode::Recorded),
        Some(Value::String(m)) if m == "recorded" => Ok(ReplayMode::Recorded),
        Some(Value::String(m)) if m == "live" => Ok(ReplayMode::Live),
        Some(other) => Err(ApiError::invalid(format!("field 'mode' must be \"recorded\" or \"live\", not {other}"))),
    }
}

/// `POST /v1/trees/{id}/replay`: replays the tree as the caller and answers its report.
pub async fn replay(
    State(state): State<Arc<AppState>>,
    caller: Principal,
    Path(id): Path<String>,
    Body(raw): Body,
) -> Result<Json<Value>, ApiError> {
    people_only(&caller)?;
    let root = tree_id(&id)?;
    let mode = parse_replay(&raw)?;
    let report = state.runtime.replay_for(&caller, root, mode).await?;
    let body = serde_json::to_value(&report)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::AgentFailed, e.to_string()))?;
    Ok(Json(body))
}

/// One kept replay as `GET /v1/trees/{id}/replays` shows it (its report as JSON, not text).
pub fn replay_json(r: &ReplayRecord) -> Value {
    let report = serde_json::from_str::<Value>(&r.report).unwrap_or_else(|_| Value::String(r.report.clone()));
    json!({
        "id": r.id,
        "mode": r.mode,
        "identical": r.identical,
        "differing": r.differing,
        "nodes": r.nodes,
        "run_by": r.run_by,
        "created_at": r.created_at,
        "report": report,
    })
}

/// `GET /v1/trees/{id}/replays`: the replays kept for the tree, newest first.
pub async fn replays(
    State(state): State<Arc<AppState>>,
    caller: Principal,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    people_only(&caller)?;
    let root = tree_id(&id)?;
    let store = state.runtime.store();
    let Some(top) = store.step(root).await.map_err(crate::DelegationError::from)? else {
        return Err(ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, format!("no tree has root id {root}")));
    };
    let owner = matches!(caller, Principal::Admin) || caller.user() == Some(&top.user_id);
    if !owner {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::UserMismatch,
            format!("tree {root} belongs to another user"),
        ));
    }
    let kept = store.replays(root).await.map_err(crate::DelegationError::from)?;
    Ok(Json(json!({ "replays": kept.iter().map(replay_json).collect::<Vec<_>>() })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_body_names_its_mode_or_is_empty() {
        for (body, want) in [
            (&b""[..], ReplayMode::Recorded),
            (b"  \n", ReplayMode::Recorded),
            (b"{}", ReplayMode::Recorded),
            (br#"{"mode":null}"#, ReplayMode::Recorded),
            (br#"{"mode":"recorded"}"#, ReplayMode::Recorded),
            (br#"{"mode":"live"}"#, ReplayMode::Live),
        ] {
            assert_eq!(parse_replay(body).unwrap(), want, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn a_bad_replay_body_is_refused_naming_the_field() {
        for (body, names) in [
            (&br#"{"mode":"replay"}"#[..], "'mode'"),
            (br#"{"mode":true}"#, "'mode'"),
            (br#"{"mode":["live"]}"#, "'mode'"),
            (br#"{"mode":"live","dry":true}"#, "'dry'"),
            (br#"["live"]"#, "JSON object"),
            (b"live", "must be JSON"),
            (br#"{"mode":"#, "must be JSON"),
        ] {
            let e = parse_replay(body).unwrap_err();
            assert_eq!((e.status, e.error.code), (StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest), "{body:?}");
            assert!(e.error.message.contains(names), "{}: {}", String::from_utf8_lossy(body), e.error.message);
        }
    }
}
