//! Switchboard's own endpoints: delegate, chat, delegation trees, agents,
//! health and metrics.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use tracing::Instrument;

use super::error::status_of;
use super::{ApiError, AppState};
use crate::auth::Principal;
use crate::pipeline::{AskOptions, TreeView};
use crate::protocol::{self, DelegationRequest, ErrorCode, RequestId, SessionId};
use crate::store::DelegationRecord;

/// The body, or a clear refusal (413 when it is over the limit).
pub(super) fn body(body: Result<Bytes, BytesRejection>, limit: usize) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| {
        let status = rejection.status();
        let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
            format!("the request body is larger than {limit} bytes")
        } else {
            format!("the request body could not be read: {rejection}")
        };
        ApiError::new(
            if status.is_client_error() { status } else { StatusCode::BAD_REQUEST },
            ErrorCode::InvalidRequest,
            message,
        )
    })
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ApiError> {
    headers
        .get(name)
        .map(|v| v.to_str().map(str::trim).map_err(|_| ApiError::invalid(format!("header {name} is not ASCII text"))))
        .transpose()
}

fn must_agree(name: &str, header: &str, body: &str, field: &str) -> Result<(), ApiError> {
    if header == body {
        Ok(())
    } else {
        Err(ApiError::invalid(format!(
            "header {name} is '{header}' but the body's {field} is '{body}'; they must agree"
        )))
    }
}

/// seeds/000's headers: present where required, and agreeing with the body.
/// Returns the remaining deadline the caller sent, if any.
fn check_headers(headers: &HeaderMap, req: &DelegationRequest) -> Result<Option<u64>, ApiError> {
    let id = header(headers, "x-agent-request-id")?
        .ok_or_else(|| ApiError::invalid("missing header X-Agent-Request-ID (the envelope's request_id)"))?;
    let id: RequestId =
        id.parse().map_err(|e: protocol::IdError| ApiError::invalid(format!("X-Agent-Request-ID: {e}")))?;
    must_agree("X-Agent-Request-ID", &id.to_string(), &req.request_id.to_string(), "request_id")?;
    let origin = header(headers, "x-agent-origin")?
        .ok_or_else(|| ApiError::invalid("missing header X-Agent-Origin (the envelope's origin_employee)"))?;
    must_agree("X-Agent-Origin", origin, req.origin_employee.as_str(), "origin_employee")?;
    if let Some(depth) = header(headers, "x-agent-depth")? {
        let depth: u32 = depth
            .parse()
            .map_err(|_| ApiError::invalid(format!("X-Agent-Depth '{depth}' is not a depth (0, 1, 2, …)")))?;
        must_agree("X-Agent-Depth", &depth.to_string(), &req.current_depth.to_string(), "current_depth")?;
    }
    if let Some(session) = header(headers, "x-agent-parent-session")? {
        let session: SessionId = session
            .parse()
            .map_err(|e: protocol::IdError| ApiError::invalid(format!("X-Agent-Parent-Session: {e}")))?;
        let body = req.parent_session_id.map(|s| s.to_string()).unwrap_or_else(|| "null".into());
        must_agree("X-Agent-Parent-Session", &session.to_string(), &body, "parent_session_id")?;
    }
    header(headers, "x-agent-deadline-ms")?
        .map(|ms| {
            ms.parse::<u64>().ok().filter(|ms| *ms > 0).ok_or_else(|| {
                ApiError::invalid(format!("X-Agent-Deadline-Ms '{ms}' is not a positive number of milliseconds"))
            })
        })
        .transpose()
}

/// `POST /v1/delegate`.
pub async fn delegate(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let principal = state.principal(&headers, None).await?;
    let Principal::Agent(agent) = principal else {
        return Err(ApiError::unauthenticated(
            "POST /v1/delegate takes an agent's service token, not a user's (users talk to Prime at /v1/chat)",
        ));
    };
    let raw = body(raw, state.body_limit)?;
    let mut req = protocol::parse_request(&raw)?;
    let deadline = match check_headers(&headers, &req) {
        Ok(d) => d,
        Err(e) => {
            // a header that contradicts its envelope is a forgery attempt: on file
            state.runtime.record_refusal(req, e.error.clone()).await;
            return Err(e);
        }
    };
    // An envelope sent under another agent's name is refused by the runtime's
    // authentication rail (UNAUTHENTICATED), which audits it.
    if let Some(ms) = deadline {
        req.constraints.deadline_ms = req.constraints.deadline_ms.min(ms);
    }
    // Its own task: a caller that hangs up does not cut the delegation short
    // of its record. It still ends at its deadline, which the caller set.
    let runtime = state.runtime.clone();
    let span = tracing::info_span!("POST /v1/delegate", origin = %agent);
    crate::telemetry::continue_trace(&span, header(&headers, "traceparent")?);
    let response = tokio::spawn(async move { runtime.delegate(&Principal::Agent(agent), req).await }.instrument(span))
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::AgentUnavailable,
                format!("the delegation task failed: {e}"),
            )
        })?;
    Ok(match &response.error {
        None => Json(response).into_response(),
        // refused before anything ran: the error alone
        Some(e) if response.execution.is_none() => ApiError::from(e.clone()).into_response(),
        // ran and failed: the whole response (attempts, fallback, usage) under the code's status
        Some(e) => (status_of(e.code), Json(response.clone())).into_response(),
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChatRequest {
    message: String,
    #[serde(default)]
    session_id: Option<SessionId>,
    /// Content to work on: a receipt, a statement.
    #[serde(default)]
    input: Option<String>,
}

/// `POST /v1/chat`: a user talks to Prime.
pub async fn chat(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let Principal::User(user) = state.principal(&headers, None).await? else {
        return Err(ApiError::unauthenticated("POST /v1/chat takes a user's token; agents use POST /v1/delegate"));
    };
    let raw = body(raw, state.body_limit)?;
    let chat: ChatRequest =
        serde_json::from_slice(&raw).map_err(|e| ApiError::invalid(format!("invalid chat request: {e}")))?;
    let session = session_header(&headers, chat.session_id)?;
    if chat.message.trim().is_empty() {
        return Err(ApiError::invalid("message is empty"));
    }
    let opts = AskOptions { input: chat.input, session, ..AskOptions::default() };
    let runtime = state.runtime.clone();
    let span = tracing::info_span!("POST /v1/chat");
    crate::telemetry::continue_trace(&span, header(&headers, "traceparent")?);
    let r = tokio::spawn(async move { runtime.ask(&user, &chat.message, opts).await }.instrument(span))
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::AgentUnavailable,
                format!("the chat task failed: {e}"),
            )
        })??;
    let status = if r.status == crate::protocol::Status::Failed { StatusCode::BAD_GATEWAY } else { StatusCode::OK };
    Ok((
        status,
        Json(json!({
            "answer": r.answer,
            "session_id": r.session_id,
            "request_id": r.request_id,
            "status": r.status,
            "tree": r.tree,
        })),
    )
        .into_response())
}

/// The session to continue: `X-Session-Id`, the body's `session_id`, or
/// both when they agree.
pub(super) fn session_header(headers: &HeaderMap, body: Option<SessionId>) -> Result<Option<SessionId>, ApiError> {
    let header = header(headers, "x-session-id")?
        .map(|s| s.parse::<SessionId>().map_err(|e: protocol::IdError| ApiError::invalid(format!("X-Session-Id: {e}"))))
        .transpose()?;
    match (header, body) {
        (Some(h), Some(b)) if h != b => Err(ApiError::invalid(format!(
            "header X-Session-Id is '{h}' but the body's session_id is '{b}'; they must agree"
        ))),
        (h, b) => Ok(h.or(b)),
    }
}

/// Whether `principal` may see a tree made of `records`.
fn may_see(principal: &Principal, records: &[DelegationRecord]) -> bool {
    match principal {
        Principal::Admin => true,
        Principal::User(u) => records.iter().all(|r| &r.user_id == u),
        Principal::Agent(a) => records.iter().any(|r| r.origin == a.as_str() || r.target == a.as_str()),
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

/// `GET /v1/delegations/{id}`: the stored tree. Someone else's tree and a
/// tree that does not exist get the same answer.
pub async fn delegation(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<TokenQuery>,
) -> Result<Json<TreeView>, ApiError> {
    let principal = state.principal(&headers, q.access_token.as_deref()).await?;
    let id: RequestId = id.parse().map_err(|e: protocol::IdError| ApiError::invalid(e.0))?;
    let records = state.runtime.store().delegation_tree(id).await.map_err(crate::DelegationError::from)?;
    let not_found = || {
        ApiError::new(StatusCode::NOT_FOUND, ErrorCode::InvalidRequest, format!("no delegation {id} that you may see"))
    };
    if records.is_empty() || !may_see(&principal, &records) {
        return Err(not_found());
    }
    TreeView::from_records(&records).map(Json).ok_or_else(not_found)
}

#[derive(Debug, Deserialize)]
pub struct TokenQuery {
    #[serde(default)]
    pub access_token: Option<String>,
}

/// `GET /v1/agents`.
pub async fn agents(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    state.principal(&headers, q.access_token.as_deref()).await?;
    let rt = &state.runtime;
    let agents: Vec<_> = rt
        .registry()
        .members()
        .map(|m| {
            let s = &m.spec;
            json!({
                "slug": s.slug, "name": s.name, "description": s.description, "backend": s.backend,
                "capabilities": s.capabilities, "domain": s.domain, "tools_allowed": s.tools_allowed,
                "may_delegate_to": s.may_delegate_to, "breaker": rt.breaker_state(&s.slug).as_str(),
                "in_flight": m.busy(),
            })
        })
        .collect();
    Ok(Json(json!({ "agents": agents })))
}

/// `GET /healthz`.
pub async fn health(State(state): State<Arc<AppState>>) -> Response {
    match state.runtime.store().counts().await {
        Ok(_) => Json(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")})).into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "unavailable", "reason": e.to_string()})))
            .into_response(),
    }
}

/// `GET /metrics`: Prometheus text format.
pub async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], state.runtime.metrics_text()).into_response()
}
