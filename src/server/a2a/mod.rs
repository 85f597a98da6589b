//! The A2A binding of the service (A2A 1.0): agent cards, JSON-RPC and
//! HTTP+JSON for every agent. The operations themselves are the A2A
//! service's ([`crate::a2a`]); this is HTTP.
//!
//! | route | what |
//! |---|---|
//! | `GET /a2a/{slug}/.well-known/agent-card.json` | the agent card (no token needed) |
//! | `POST /a2a/{slug}` | JSON-RPC 2.0: `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask` |
//! | `POST /a2a/{slug}/message:send`, `…/message:stream` | HTTP+JSON: send, stream (SSE) |
//! | `GET /a2a/{slug}/tasks`, `…/tasks/{id}` | list, get |
//! | `POST /a2a/{slug}/tasks/{id}:cancel`, `GET\|POST …/tasks/{id}:subscribe` | cancel, subscribe (SSE) |
//! | `POST\|GET /a2a/{slug}/tasks/{id}/pushNotificationConfigs[/{configId}]`, `DELETE …/{configId}` | push configs |
//! | `GET /a2a/{slug}/extendedAgentCard` | the extended card (a token needed) |
//! | `GET /.well-known/jwks.json` | the keys that sign push notifications |
//! | `POST /lf.a2a.v1.A2AService/{Method}` | gRPC (feature `grpc`): every agent, the request's `tenant` names it |
//!
//! Every request but the card's names the protocol version (`A2A-Version:
//! 1.0` header or `?A2A-Version=1.0`) and a bearer token: a user's token
//! talks to the agent as that user (a fresh tree at depth 0), an agent's
//! service token delegates as that agent with the rails extension. With
//! `[a2a] anonymous_user`, a call without a token acts as that user.

#[cfg(feature = "grpc")]
mod grpc;
mod jsonrpc;
mod rest;
mod sse;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Extension, Router};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::extract::AnonymousUser;
use super::{Admission, ApiError, AppState};
use crate::a2a::{Mode, Sent, agent_card};
use crate::auth::Principal;
use crate::config::AgentSpec;
use crate::pipeline::Door;
use crate::protocol::a2a::types::{PROTOCOL_VERSION, SendMessageRequest};
use crate::protocol::a2a::{A2aError, Kind};
use crate::protocol::{AgentSlug, UserId};

/// The A2A routes, merged into the service's router. Without a token, a
/// caller is the configured anonymous user, if there is one.
pub(super) fn routes(state: &Arc<AppState>) -> Router<Arc<AppState>> {
    let router = Router::new()
        .route("/a2a/{slug}/.well-known/agent-card.json", get(card))
        .route(crate::a2a::JWKS_PATH, get(jwks))
        .route("/a2a/{slug}", post(jsonrpc::handle))
        .route("/a2a/{slug}/", post(jsonrpc::handle))
        .route("/a2a/{slug}/{*rest}", any(rest::handle));
    #[cfg(feature = "grpc")]
    let router = router.merge(grpc::routes(state));
    match anonymous_user(state) {
        Some(user) => router.layer(Extension(AnonymousUser(user))),
        None => router,
    }
}

/// The service's own URL as the caller reached it.
fn base_url(headers: &HeaderMap) -> String {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).filter(|h| {
        !h.is_empty() && h.len() <= 255 && h.bytes().all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
    });
    let proto = headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
        .filter(|p| *p == "https" || *p == "http")
        .unwrap_or("http");
    format!("{proto}://{}", host.unwrap_or("127.0.0.1"))
}

pub(super) fn member_spec(state: &AppState, slug: &str) -> Option<Arc<AgentSpec>> {
    let slug = AgentSlug::parse(slug).ok()?;
    state.runtime.registry().get(&slug).map(|m| m.spec.clone())
}

pub(super) fn no_agent(slug: &str) -> A2aError {
    let shown: String = slug.chars().take(64).collect();
    A2aError::new(Kind::MethodNotFound, format!("no agent '{shown}' is registered here; GET /v1/agents lists the team"))
}

fn anonymous_user(state: &AppState) -> Option<UserId> {
    state.runtime.config().a2a.anonymous_user.as_deref().and_then(|u| UserId::parse(u).ok())
}

/// `GET /a2a/{slug}/.well-known/agent-card.json`.
async fn card(State(state): State<Arc<AppState>>, Path(slug): Path<String>, headers: HeaderMap) -> Response {
    let Some(spec) = member_spec(&state, &slug) else { return rest_error(&no_agent(&slug)) };
    let card = agent_card(&spec, &base_url(&headers), anonymous_user(&state).is_some());
    let body = serde_json::to_vec(&card).unwrap_or_default();
    let etag = format!("\"{}\"", &hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&body))[..16]);
    let fresh = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(etag.as_str());
    let mut res = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let h = res.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=60"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&state.started_at.format("%a, %d %b %Y %H:%M:%S GMT").to_string()) {
        h.insert(header::LAST_MODIFIED, v);
    }
    res
}

/// `GET /.well-known/jwks.json`: the keys that sign push notifications.
async fn jwks(State(state): State<Arc<AppState>>) -> Response {
    let mut res = json_response(StatusCode::OK, state.a2a.push_jwks());
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
    res
}

/// GetExtendedAgentCard (both bindings): the extended card for a caller
/// the extractor authenticated: a token's principal, or, only where `[a2a]
/// anonymous_user` is set (and the public card declares anonymous access
/// as a security requirement), that user. No token otherwise is refused
/// before this is reached (unauthenticated).
pub(super) fn extended_card(
    state: &AppState,
    spec: &AgentSpec,
    headers: &HeaderMap,
    who: &Principal,
) -> Result<Value, A2aError> {
    let card = crate::a2a::extended_agent_card(
        spec,
        &base_url(headers),
        anonymous_user(state).is_some(),
        who,
        &state.runtime.config().limits,
    );
    Ok(serde_json::to_value(card).unwrap_or_default())
}

/// A push config's request parameters: the TaskPushNotificationConfig
/// itself (A2A 1.0), or wrapped as `config` / `pushNotificationConfig`
/// beside `taskId` (as earlier drafts sent it).
pub(super) fn push_config_params(
    p: Value,
    task_id: Option<&str>,
) -> Result<crate::protocol::a2a::types::TaskPushNotificationConfig, A2aError> {
    let Value::Object(mut p) = p else {
        return Err(A2aError::invalid_params("the push notification config must be an object"));
    };
    for key in ["pushNotificationConfig", "push_notification_config", "config"] {
        if let Some(Value::Object(inner)) = p.remove(key) {
            for (k, v) in inner {
                p.entry(k).or_insert(v);
            }
        }
    }
    let mut c: crate::protocol::a2a::types::TaskPushNotificationConfig =
        params(Value::Object(p), "TaskPushNotificationConfig")?;
    if let Some(t) = task_id {
        if !c.task_id.is_empty() && c.task_id != t {
            return Err(A2aError::invalid_params("the body's taskId does not match the path's"));
        }
        c.task_id = t.to_string();
    }
    Ok(c)
}

/// The protocol version the request names: `A2A-Version` header or query
/// parameter; empty means 0.3 (§3.6.2), which this server does not speak.
pub(super) fn check_version(headers: &HeaderMap, uri: &Uri) -> Result<(), A2aError> {
    let from_query = || {
        Query::<std::collections::HashMap<String, String>>::try_from_uri(uri)
            .ok()
            .and_then(|q| q.0.iter().find(|(k, _)| k.eq_ignore_ascii_case("a2a-version")).map(|(_, v)| v.clone()))
    };
    let version = match headers.get("a2a-version") {
        Some(v) => v.to_str().map(|s| s.trim().to_string()).unwrap_or_default(),
        None => from_query().unwrap_or_default(),
    };
    let shown: String = version.chars().take(20).collect();
    let mut parts = version.split('.');
    let (major, minor) = (parts.next(), parts.next());
    let ok = major == Some("1") && minor == Some("0") && parts.next().is_none_or(|p| p.parse::<u32>().is_ok());
    if ok {
        return Ok(());
    }
    let asked = if version.is_empty() { "none (taken as 0.3)".to_string() } else { format!("'{shown}'") };
    Err(A2aError::new(
        Kind::VersionNotSupported,
        format!("A2A-Version {asked} is not supported; this agent speaks A2A {PROTOCOL_VERSION}: send 'A2A-Version: {PROTOCOL_VERSION}'"),
    )
    .with("supportedVersions", PROTOCOL_VERSION))
}

/// The caller the service's extractor found, as an A2A error when it found none.
pub(super) fn principal(caller: Result<Principal, ApiError>) -> Result<Principal, A2aError> {
    caller.map_err(|e| A2aError::new(Kind::Unauthenticated, e.error.message))
}

/// JSON (or no declared type) is accepted; anything else is refused.
pub(super) fn check_content_type(headers: &HeaderMap) -> Result<(), A2aError> {
    let Some(ct) = headers.get(header::CONTENT_TYPE) else { return Ok(()) };
    let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
    let mime = ct.split(';').next().unwrap_or("").trim();
    if mime == "application/json" || mime.ends_with("+json") {
        Ok(())
    } else {
        Err(A2aError::new(
            Kind::ContentTypeNotSupported,
            format!(
                "Content-Type '{}' is not supported; send application/json",
                mime.chars().take(60).collect::<String>()
            ),
        ))
    }
}

pub(super) fn read_body(raw: Result<Bytes, BytesRejection>) -> Result<Bytes, A2aError> {
    raw.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            A2aError::new(Kind::InvalidRequest, "the request body is too large")
        } else {
            A2aError::new(Kind::InvalidRequest, format!("the request body could not be read: {r}"))
        }
    })
}

pub(super) fn params<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, A2aError> {
    serde_json::from_value(value).map_err(|e| A2aError::invalid_params(format!("invalid {what} params: {e}")))
}

/// The HTTP+JSON binding's error response (AIP-193).
pub(super) fn rest_error(e: &A2aError) -> Response {
    let status = StatusCode::from_u16(e.kind.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    with_error_headers(json_response(status, e.rest_body()), e.kind)
}

/// `WWW-Authenticate` on a 401, `Retry-After` on a 503.
fn with_error_headers(mut res: Response, kind: Kind) -> Response {
    match kind {
        Kind::Unauthenticated => {
            res.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        Kind::Unavailable => {
            res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(Admission::RETRY_AFTER_SECONDS));
        }
        _ => {}
    }
    res
}

/// Runs a send as admitted work ([`Admission::run`]): it takes a
/// place among `[server] max_in_flight` and holds it while it runs (a
/// blocking send's whole turn, a stream's start). Over the limit, an
/// `Unavailable` error at once, before anything ran, as `/v1/delegate`
/// answers 503.
pub(super) async fn send_admitted(
    state: &AppState,
    door: Door,
    who: Principal,
    agent: AgentSlug,
    req: SendMessageRequest,
    mode: Mode,
) -> Result<Sent, A2aError> {
    let place = state.admission.enter().ok_or_else(|| A2aError::new(Kind::Unavailable, state.admission.refusal()))?;
    let svc = state.a2a.clone();
    let sent = state.admission.run(place, async move { svc.send(door, &who, &agent, req, mode).await });
    sent.await.map_err(|e| A2aError::new(Kind::Internal, format!("the send's task failed: {e}")))?
}

pub(super) fn json_response(status: StatusCode, body: Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

pub(super) fn rpc_error(id: &Value, e: &A2aError) -> Response {
    let status = match e.kind {
        Kind::Unauthenticated => StatusCode::UNAUTHORIZED,
        Kind::PermissionDenied => StatusCode::FORBIDDEN,
        Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::OK,
    };
    with_error_headers(json_response(status, e.jsonrpc_response(id)), e.kind)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TaskIdParams {
    pub id: String,
    #[serde(default, alias = "history_length")]
    pub history_length: Option<i32>,
}

pub(super) fn check_id(id: &str) -> Result<(), A2aError> {
    if id.is_empty() || id.len() > 256 {
        return Err(A2aError::invalid_params("id must be a task id of 1 to 256 characters"));
    }
    Ok(())
}
