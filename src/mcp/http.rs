//! Streamable HTTP at `/mcp`: the bearer token names the request's
//! principal (the same tokens as `/v1`); without a valid one, a 401 with
//! `WWW-Authenticate: Bearer`. With `[mcp] anonymous_user`, a request
//! without a token acts as that user.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;

use super::McpServer;
use crate::auth::{Principal, Tokens};
use crate::protocol::UserId;
use crate::runtime::{Admission, Runtime};

struct Auth {
    tokens: Tokens,
    anonymous: Option<UserId>,
}

/// The `/mcp` service over `runtime`: MCP's streamable HTTP transport (a
/// session per `initialize` for revisions up to 2025-11-25, stateless
/// requests for 2026-07-28) behind bearer-token authentication. Tokens are
/// looked up in the runtime's store, where `/v1`'s are kept. With
/// `admission` (the server's), the tool calls that run a tree take its
/// places and run where its admitted work runs.
pub(crate) fn http_service(runtime: &Runtime, admission: Option<Admission>) -> Router {
    let anonymous = runtime.config().mcp.anonymous_user.as_deref().and_then(|u| UserId::parse(u).ok());
    let limits = runtime.config().limits;
    let body_limit = limits.max_input_bytes.saturating_mul(4).max(64 * 1024);
    let mut config = StreamableHttpServerConfig::default().with_max_request_body_bytes(body_limit);
    if anonymous.is_none() {
        // every request carries a bearer token: a rebinding page cannot forge one,
        // so any Host may reach the service (a proxy's, a LAN name)
        config = config.disable_allowed_hosts();
    }
    let rt = runtime.clone();
    let service: StreamableHttpService<McpServer, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(McpServer::over_http(rt.clone(), admission.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let auth = Arc::new(Auth { tokens: Tokens::new(runtime.store().clone()), anonymous });
    Router::new().fallback_service(service).layer(axum::middleware::from_fn_with_state(auth, authenticate))
}

fn unauthorized(message: &str) -> Response {
    let mut res = (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": -32001, "message": message, "data": {"code": "UNAUTHENTICATED"}}
        })),
    )
        .into_response();
    res.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"switchboard\", error=\"invalid_token\""),
    );
    res
}

/// Puts the request's [`Principal`] in its extensions, or answers 401.
async fn authenticate(State(auth): State<Arc<Auth>>, mut req: Request, next: Next) -> Response {
    let presented = req.headers().get(header::AUTHORIZATION).map(|v| {
        v.to_str()
            .ok()
            .and_then(|s| s.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim().to_string())
    });
    let principal: Principal = match presented {
        Some(Some(token)) => match auth.tokens.authenticate(&token).await {
            Ok(p) => p,
            Err(e) => return unauthorized(&e.message),
        },
        Some(None) => return unauthorized("the Authorization header must be 'Bearer <token>'"),
        None => match &auth.anonymous {
            Some(user) => Principal::Anonymous(user.clone()),
            None => {
                return unauthorized(
                    "missing 'Authorization: Bearer <token>': a user's token, or an agent's service token",
                );
            }
        },
    };
    req.extensions_mut().insert(principal);
    jsonrpc_errors(next.run(req).await).await
}

/// The transport's own refusals (a missing session, a wrong `Accept`, a body
/// that is not JSON-RPC) come as plain text: they go out in JSON-RPC's error
/// shape, with the same status and the transport's message.
async fn jsonrpc_errors(res: Response) -> Response {
    let status = res.status();
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json") || ct.starts_with("text/event-stream"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return res;
    }
    let (parts, body) = res.into_parts();
    let text =
        axum::body::to_bytes(body, 4096).await.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let message = if text.trim().is_empty() {
        status.canonical_reason().unwrap_or("refused").to_string()
    } else {
        text.trim().chars().take(512).collect()
    };
    let lower = message.to_ascii_lowercase();
    let code = if lower.contains("parse") || lower.contains("deserializ") || lower.contains("malformed") {
        -32700
    } else {
        -32600
    };
    let mut out =
        (status, axum::Json(json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})))
            .into_response();
    for (name, value) in
        parts.headers.iter().filter(|(n, _)| *n != header::CONTENT_TYPE && *n != header::CONTENT_LENGTH)
    {
        out.headers_mut().insert(name.clone(), value.clone());
    }
    out
}
