//! Switchboard's own endpoints: delegate, chat, delegation trees, agents,
//! health and metrics.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::OwnedSemaphorePermit;

use super::error::status_of;
use super::extract::{self, Body};
use super::{Admission, ApiError, AppState};
use crate::auth::Principal;
use crate::pipeline::{AskOptions, Door, Envelope, Turn};
use crate::protocol::{self, DelegationRequest, ErrorCode, RequestId, SessionId, Status};
use crate::runtime::TreeView;
use crate::store::DelegationRecord;

fn must_agree(name: &str, header: &str, body: &str, field: &str) -> Result<(), ApiError> {
    if header == body {
        Ok(())
    } else {
        Err(ApiError::invalid(format!(
            "header {name} is '{header}' but the body's {field} is '{body}'; they must agree"
        )))
    }
}

/// The delegation headers (docs/DESIGN.md#the-envelope): present where
/// required, and agreeing with the body.
/// Returns the remaining deadline the caller sent, if any.
fn check_headers(headers: &HeaderMap, req: &DelegationRequest) -> Result<Option<u64>, ApiError> {
    let header = |name| extract::header(headers, name);
    let id = header("x-agent-request-id")?
        .ok_or_else(|| ApiError::invalid("missing header X-Agent-Request-ID (the envelope's request_id)"))?;
    let id: RequestId =
        id.parse().map_err(|e: protocol::IdError| ApiError::invalid(format!("X-Agent-Request-ID: {e}")))?;
    must_agree("X-Agent-Request-ID", &id.to_string(), &req.request_id.to_string(), "request_id")?;
    let origin = header("x-agent-origin")?
        .ok_or_else(|| ApiError::invalid("missing header X-Agent-Origin (the envelope's origin_employee)"))?;
    must_agree("X-Agent-Origin", origin, req.origin_employee.as_str(), "origin_employee")?;
    if let Some(depth) = header("x-agent-depth")? {
        let depth: u32 = depth
            .parse()
            .map_err(|_| ApiError::invalid(format!("X-Agent-Depth '{depth}' is not a depth (0, 1, 2, …)")))?;
        must_agree("X-Agent-Depth", &depth.to_string(), &req.current_depth.to_string(), "current_depth")?;
    }
    if let Some(session) = header("x-agent-parent-session")? {
        let session: SessionId = session
            .parse()
            .map_err(|e: protocol::IdError| ApiError::invalid(format!("X-Agent-Parent-Session: {e}")))?;
        let body = req.parent_session_id.map(|s| s.to_string()).unwrap_or_else(|| "null".into());
        must_agree("X-Agent-Parent-Session", &session.to_string(), &body, "parent_session_id")?;
    }
    header("x-agent-deadline-ms")?
        .map(|ms| {
            ms.parse::<u64>().ok().filter(|ms| *ms > 0).ok_or_else(|| {
                ApiError::invalid(format!("X-Agent-Deadline-Ms '{ms}' is not a positive number of milliseconds"))
            })
        })
        .transpose()
}

/// [`Admission::run`]: a task that failed is a 503.
pub(super) async fn admitted<T: Send + 'static>(
    state: &AppState,
    place: OwnedSemaphorePermit,
    work: impl Future<Output = T> + Send + 'static,
) -> Result<T, ApiError> {
    state.admission.run(place, work).await.map_err(|e| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::AgentUnavailable,
            format!("the request's task failed: {e}"),
        )
    })
}

/// The answer to a delegation over `[server] max_in_flight`: a 503
/// `AGENT_UNAVAILABLE` with `Retry-After`, at once, before anything ran.
pub(super) fn busy(state: &AppState) -> Response {
    let mut res =
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::AgentUnavailable, state.admission.refusal())
            .into_response();
    res.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static(Admission::RETRY_AFTER_SECONDS));
    res
}

/// `POST /v1/delegate`.
pub(super) async fn delegate(
    State(state): State<Arc<AppState>>,
    caller: Principal,
    headers: HeaderMap,
    Body(raw): Body,
) -> Result<Response, ApiError> {
    if caller.agent().is_none() {
        return Err(ApiError::unauthenticated(
            "POST /v1/delegate takes an agent's service token, not a user's (users talk to Prime at /v1/chat)",
        ));
    }
    let Some(place) = state.admission.enter() else { return Ok(busy(&state)) };
    let mut req = protocol::parse_request(&raw)?;
    let lineage = extract::header(&headers, "x-switchboard-lineage")?.map(str::to_string);
    let deadline = match check_headers(&headers, &req) {
        Ok(d) => d,
        Err(mut e) => {
            if lineage.is_some() {
                // the envelope is what its token says: a header that disagrees disagrees with both
                e.error.code = ErrorCode::LineageMismatch;
                e.status = status_of(ErrorCode::LineageMismatch);
            }
            // a header that contradicts its envelope is a forgery attempt: on file
            state.runtime.enter(Door::Http, &caller, Envelope::new(req).refused(e.error.clone())).await;
            return Err(e);
        }
    };
    // An envelope sent under another agent's name is refused by the runtime's
    // authentication rail (UNAUTHENTICATED), which audits it.
    if let Some(ms) = deadline {
        req.constraints.deadline_ms = req.constraints.deadline_ms.min(ms);
    }
    let runtime = state.runtime.clone();
    // the place is held until the delegation ends, even if the caller hangs up
    let envelope = Envelope::new(req).lineage(lineage);
    let response = admitted(&state, place, async move { runtime.enter(Door::Http, &caller, envelope).await }).await?;
    Ok(match &response.error {
        // an answer, or a question for the user (status needs_input): 200
        None => Json(response).into_response(),
        Some(e) if e.code == ErrorCode::NeedsInput => Json(response).into_response(),
        // paused: the tree waits for a person's approval and resumes when they answer
        Some(e) if e.code == ErrorCode::NeedsApproval => (StatusCode::ACCEPTED, Json(response)).into_response(),
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
pub(super) async fn chat(
    State(state): State<Arc<AppState>>,
    caller: Principal,
    headers: HeaderMap,
    Body(raw): Body,
) -> Result<Response, ApiError> {
    if caller.user().is_none() {
        return Err(ApiError::unauthenticated("POST /v1/chat takes a user's token; agents use POST /v1/delegate"));
    }
    let Some(place) = state.admission.enter() else { return Ok(busy(&state)) };
    let chat: ChatRequest =
        serde_json::from_slice(&raw).map_err(|e| ApiError::invalid(format!("invalid chat request: {e}")))?;
    let session = extract::session(&headers, chat.session_id)?;
    if chat.message.trim().is_empty() {
        return Err(ApiError::invalid("message is empty"));
    }
    let opts = AskOptions { input: chat.input, session, ..AskOptions::default() };
    let runtime = state.runtime.clone();
    let who = caller.clone();
    let r =
        admitted(&state, place, async move { runtime.enter(Door::Http, &who, Turn::ask(chat.message, opts)).await })
            .await??;
    let status = match r.status {
        Status::Failed => StatusCode::BAD_GATEWAY,
        // paused: the tree waits for the user's approval (`approvals` names them) and resumes when they answer
        Status::NeedsApproval => StatusCode::ACCEPTED,
        _ => StatusCode::OK,
    };
    let mut body = json!({
        "answer": r.answer,
        "session_id": r.session_id,
        "request_id": r.request_id,
        "status": r.status,
        "tree": r.tree,
    });
    if r.status == Status::NeedsApproval {
        let pending = state.runtime.approvals(&caller, true).await?;
        let ids: Vec<&str> = pending.iter().filter(|a| a.root_id == r.request_id).map(|a| a.id.as_str()).collect();
        body["approvals"] = json!(ids);
    }
    Ok((status, Json(body)).into_response())
}

/// Whether `principal` may see a tree made of `records`.
fn may_see(principal: &Principal, records: &[DelegationRecord]) -> bool {
    match principal {
        Principal::Admin => true,
        Principal::Agent(a) => records.iter().any(|r| r.origin == a.as_str() || r.target == a.as_str()),
        p => p.user().is_some_and(|u| records.iter().all(|r| &r.user_id == u)),
    }
}

/// `GET /v1/delegations/{id}`: the stored tree. Someone else's tree and a
/// tree that does not exist get the same answer.
pub(super) async fn delegation(
    State(state): State<Arc<AppState>>,
    caller: Principal,
    Path(id): Path<String>,
) -> Result<Json<TreeView>, ApiError> {
    let id: RequestId = id.parse().map_err(|e: protocol::IdError| ApiError::invalid(e.0))?;
    let records = state.runtime.store().delegation_tree(id).await.map_err(crate::DelegationError::from)?;
    let not_found =
        || ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, format!("no delegation {id} that you may see"));
    if records.is_empty() || !may_see(&caller, &records) {
        return Err(not_found());
    }
    TreeView::from_records(&records).map(Json).ok_or_else(not_found)
}

/// `GET /v1/agents`.
pub(super) async fn agents(State(state): State<Arc<AppState>>, _caller: Principal) -> Json<serde_json::Value> {
    let agents: Vec<_> = state
        .runtime
        .team_summary()
        .into_iter()
        .map(|(m, mut summary)| {
            summary["in_flight"] = m.busy().into();
            summary
        })
        .collect();
    Json(json!({ "agents": agents }))
}

/// `GET /healthz`.
pub(super) async fn health(State(state): State<Arc<AppState>>) -> Response {
    match state.runtime.store().counts().await {
        Ok(_) => Json(json!({
            "status": "ok",
            "version": env!("CARGO_PKG_VERSION"),
            "replica": state.runtime.replica_id(),
        }))
        .into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, Json(json!({"status": "unavailable", "reason": e.to_string()})))
            .into_response(),
    }
}

/// `GET /metrics`: Prometheus text format.
pub(super) async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], state.runtime.metrics_text()).into_response()
}
