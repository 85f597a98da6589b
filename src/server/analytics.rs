//! Usage analytics, past trees and ratings over HTTP (issue 46;
//! docs/ANALYTICS.md). Who sees what is the pipeline's to say
//! (`runtime/insights.rs`): a user token its own trees, an admin token
//! everyone's (or a user's, `?user=`), a service token nothing
//! (`UNAUTHENTICATED`).
//!
//! | route | who | what |
//! |---|---|---|
//! | `GET /v1/analytics[?since=&until=&user=]` | user (own), admin (all, or `user`) | agents, edges, depth and fan-out, errors, users, tokens over time, rated-down answers |
//! | `GET /v1/trees[?agent=&status=&q=&before=&limit=&user=]` | user (own), admin (all, or `user`) | `{"trees":[…],"next","user"}`: past trees, newest first, and whose (null: everyone's) |
//! | `POST /v1/trees/{id}/rating` | the tree's user | `{"rating":"up"\|"down","comment"?}` → the rating kept |
//! | `GET /v1/trees/{id}/rating` | the tree's user, admin | `{"rating":…\|null}` |
//!
//! Times are epoch milliseconds, RFC 3339 or `YYYY-MM-DD`. A reversed or
//! absurd range, an unknown filter or field is `INVALID_REQUEST`; an agent
//! not on the team `AGENT_NOT_FOUND`; another user's tree `USER_MISMATCH`;
//! a tree that does not exist `NOT_FOUND`. Nothing is written on a refusal.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, Uri};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::extract::{Body, json_object, optional_text};
use super::{ApiError, AppState};
use crate::auth::Principal;
use crate::protocol::{ErrorCode, IdError, RequestId};
use crate::store::history::{Cursor, PAGE};
use crate::store::ratings::MAX_COMMENT_CHARS;
use crate::store::{HistoryQuery, Thumb};

fn query<T: DeserializeOwned>(uri: &Uri) -> Result<T, ApiError> {
    Query::<T>::try_from_uri(uri)
        .map(|Query(q)| q)
        .map_err(|e| ApiError::invalid(format!("invalid query: {}", e.body_text())))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnalyticsParams {
    since: Option<String>,
    until: Option<String>,
    user: Option<String>,
    /// The page's EventSource-style token; read by the `Principal` extractor.
    #[serde(rename = "access_token")]
    _access_token: Option<String>,
}

/// `GET /v1/analytics`.
pub async fn analytics(
    State(state): State<Arc<AppState>>,
    caller: Principal,
    uri: Uri,
) -> Result<Json<Value>, ApiError> {
    let q: AnalyticsParams = query(&uri)?;
    let a = state.runtime.analytics_for(&caller, q.since.as_deref(), q.until.as_deref(), q.user.as_deref()).await?;
    Ok(Json(json!(a)))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TreesParams {
    agent: Option<String>,
    status: Option<String>,
    q: Option<String>,
    before: Option<String>,
    limit: Option<String>,
    user: Option<String>,
    #[serde(rename = "access_token")]
    _access_token: Option<String>,
}

/// `GET /v1/trees`: a page of past trees.
pub async fn trees(State(state): State<Arc<AppState>>, caller: Principal, uri: Uri) -> Result<Json<Value>, ApiError> {
    let p: TreesParams = query(&uri)?;
    let limit = match p.limit.as_deref() {
        None | Some("") => PAGE,
        Some(l) => l.parse().map_err(|_| ApiError::invalid(format!("limit '{l}' is not a number")))?,
    };
    let history = HistoryQuery {
        user: None,
        agent: p.agent.filter(|a| !a.trim().is_empty()),
        status: p.status.filter(|s| !s.is_empty()),
        text: p.q,
        before: p.before.as_deref().filter(|b| !b.is_empty()).map(Cursor::decode).transpose()?,
        limit,
    };
    // whose trees these are (None: everyone's, for an admin), so the page knows whether it may rate
    let user = crate::runtime::whose(&caller, p.user.as_deref())?;
    let page = state.runtime.past_trees_for(&caller, p.user.as_deref(), history).await?;
    Ok(Json(json!({ "trees": page.trees, "next": page.next, "user": user })))
}

/// A rating as `POST /v1/trees/{id}/rating` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RatingBody {
    /// Up or down.
    pub thumb: Thumb,
    /// What the user says, if anything.
    pub comment: Option<String>,
}

/// Reads `{"rating":"up"|"down"|"👍"|"👎","comment"?}`; any other field, or
/// a field of the wrong kind, is `INVALID_REQUEST` naming it.
pub fn parse_rating(raw: &[u8]) -> Result<RatingBody, ApiError> {
    let shape = "{\"rating\":\"up\"|\"down\",\"comment\"?}";
    let mut body = json_object(raw, shape, &["rating", "comment"])?;
    let thumb = match body.remove("rating") {
        Some(Value::String(r)) => Thumb::parse(&r),
        _ => None,
    }
    .ok_or_else(|| ApiError::invalid("field 'rating' must be \"up\" or \"down\" (or 👍, 👎)"))?;
    let comment = optional_text(body.remove("comment"), "comment", MAX_COMMENT_CHARS)?;
    Ok(RatingBody { thumb, comment })
}

fn tree_id(id: &str) -> Result<RequestId, ApiError> {
    id.parse().map_err(|e: IdError| ApiError::invalid(format!("tree id: {e}")))
}

/// `POST /v1/trees/{id}/rating`.
pub async fn rate(
    State(state): State<Arc<AppState>>,
    caller: Principal,
    Path(id): Path<String>,
    Body(raw): Body,
) -> Result<Json<Value>, ApiError> {
    let root = tree_id(&id)?;
    let body = parse_rating(&raw)?;
    let rating = state.runtime.rate(&caller, root, body.thumb, body.comment.as_deref()).await?;
    Ok(Json(json!({ "rating": rating })))
}

/// `GET /v1/trees/{id}/rating`: the tree's user's rating, to them or an admin.
pub async fn rating(
    State(state): State<Arc<AppState>>,
    caller: Principal,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let root = tree_id(&id)?;
    let store = state.runtime.store();
    let tree = store.delegation_tree(root).await.map_err(crate::DelegationError::from)?;
    let Some(top) = tree.iter().find(|n| n.request_id == root) else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::NotFound,
            format!("no finished tree has root id {root}"),
        ));
    };
    crate::runtime::whose(&caller, Some(top.user_id.as_str()))?;
    let rating = store.rating(root).await.map_err(crate::DelegationError::from)?;
    Ok(Json(json!({ "rating": rating })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rating_body_is_a_thumb_and_maybe_a_comment() {
        assert_eq!(parse_rating(br#"{"rating":"up"}"#).unwrap(), RatingBody { thumb: Thumb::Up, comment: None });
        let down = parse_rating("{\"rating\":\"👎\",\"comment\":\"wrong sum\"}".as_bytes()).unwrap();
        assert_eq!(down, RatingBody { thumb: Thumb::Down, comment: Some("wrong sum".into()) });
        for (body, names) in [
            (&br#"{"rating":"meh"}"#[..], "'rating'"),
            (br#"{"rating":1}"#, "'rating'"),
            (br#"{}"#, "'rating'"),
            (br#"{"rating":"up","comment":5}"#, "'comment'"),
            (br#"{"rating":"up","stars":5}"#, "'stars'"),
            (br#"["up"]"#, "JSON object"),
            (b"up", "must be JSON"),
        ] {
            let e = parse_rating(body).unwrap_err();
            assert_eq!((e.status, e.error.code), (StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest));
            assert!(e.error.message.contains(names), "{}: {}", String::from_utf8_lossy(body), e.error.message);
        }
    }
}
