//! Extractors every handler uses: [`Principal`] (the caller, from
//! `Authorization: Bearer`, an `access_token` query parameter on GET, or the
//! route's anonymous user) and [`Body`] (the request body, refused as JSON
//! when it cannot be read). Handlers start from these and stay thin.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode};
use axum_extra::TypedHeader;
use axum_extra::headers::Authorization;
use axum_extra::headers::authorization::Bearer;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{ApiError, AppState};
use crate::auth::Principal;
use crate::protocol::{ErrorCode, IdError, SessionId, UserId};

/// Marks a route whose callers may come without a token: they act as this
/// user (`[a2a] anonymous_user`). Set as a request extension by the router.
#[derive(Debug, Clone)]
pub struct AnonymousUser(pub UserId);

#[derive(Deserialize)]
struct TokenQuery {
    access_token: Option<String>,
}

impl FromRequestParts<Arc<AppState>> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<AppState>) -> Result<Self, ApiError> {
        match TypedHeader::<Authorization<Bearer>>::from_request_parts(parts, state).await {
            Ok(TypedHeader(Authorization(bearer))) => return Ok(state.tokens.authenticate(bearer.token()).await?),
            Err(e) if e.is_missing() => {}
            Err(_) => return Err(ApiError::unauthenticated("the Authorization header must be 'Bearer <token>'")),
        }
        // EventSource cannot send headers: a GET may carry the token in the query
        if parts.method == Method::GET
            && let Ok(Query(TokenQuery { access_token: Some(token) })) = Query::try_from_uri(&parts.uri)
        {
            return Ok(state.tokens.authenticate(&token).await?);
        }
        if let Some(AnonymousUser(user)) = parts.extensions.get::<AnonymousUser>() {
            return Ok(Principal::Anonymous(user.clone()));
        }
        Err(ApiError::unauthenticated(
            "missing 'Authorization: Bearer <token>'; agents use their service token, users theirs",
        ))
    }
}

/// The request body, or a clear refusal (413 when it is over the limit).
pub struct Body(pub Bytes);

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body").finish_non_exhaustive()
    }
}

impl FromRequest<Arc<AppState>> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &Arc<AppState>) -> Result<Self, ApiError> {
        Bytes::from_request(req, state).await.map(Body).map_err(|rejection| {
            let status = rejection.status();
            let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
                format!("the request body is larger than {} bytes", state.body_limit)
            } else {
                format!("the request body could not be read: {rejection}")
            };
            let status = if status.is_client_error() { status } else { StatusCode::BAD_REQUEST };
            ApiError::new(status, ErrorCode::InvalidRequest, message)
        })
    }
}

/// A body that must be a JSON object of `fields` at most (`shape` shows it,
/// e.g. `{"rating":"up"|"down","comment"?}`); anything else is
/// `INVALID_REQUEST` saying what is wrong. The fields given, by name.
pub fn json_object(raw: &[u8], shape: &str, fields: &[&str]) -> Result<Map<String, Value>, ApiError> {
    let value: Value =
        serde_json::from_slice(raw).map_err(|e| ApiError::invalid(format!("the body must be JSON {shape}: {e}")))?;
    let Value::Object(body) = value else {
        return Err(ApiError::invalid(format!("the body must be a JSON object {shape}")));
    };
    if let Some(field) = body.keys().find(|k| !fields.contains(&k.as_str())) {
        let takes = fields.iter().map(|f| format!("'{f}'")).collect::<Vec<_>>().join(" and ");
        return Err(ApiError::invalid(format!("unknown field '{field}': the body takes {takes}")));
    }
    Ok(body)
}

/// An optional text field of at most `max_chars` characters (null is none).
pub fn optional_text(value: Option<Value>, field: &str, max_chars: usize) -> Result<Option<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(t)) if t.chars().count() > max_chars => {
            Err(ApiError::invalid(format!("field '{field}' is longer than {max_chars} characters")))
        }
        Some(Value::String(t)) => Ok(Some(t)),
        Some(other) => Err(ApiError::invalid(format!("field '{field}' must be text, not {other}"))),
    }
}

/// A header as trimmed text, if present; a header that is not text is refused.
pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ApiError> {
    headers
        .get(name)
        .map(|v| v.to_str().map(str::trim).map_err(|_| ApiError::invalid(format!("header {name} is not ASCII text"))))
        .transpose()
}

/// The session to continue: `X-Session-Id`, the body's `session_id`, or
/// both when they agree.
pub fn session(headers: &HeaderMap, body: Option<SessionId>) -> Result<Option<SessionId>, ApiError> {
    let header = header(headers, "x-session-id")?
        .map(|s| s.parse::<SessionId>().map_err(|e: IdError| ApiError::invalid(format!("X-Session-Id: {e}"))))
        .transpose()?;
    match (header, body) {
        (Some(h), Some(b)) if h != b => Err(ApiError::invalid(format!(
            "header X-Session-Id is '{h}' but the body's session_id is '{b}'; they must agree"
        ))),
        (h, b) => Ok(h.or(b)),
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body as HttpBody;
    use axum::http::Request;
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;
    use crate::runtime::Runtime;

    async fn who(principal: Principal) -> String {
        principal.label()
    }

    /// A service with a user token `t-alice` whose routes answer the caller's label.
    async fn service(anonymous: Option<&str>) -> Router {
        let state = Arc::new(AppState::new(Runtime::embedded()));
        let auth = crate::config::AuthConfig {
            user_tokens: [("alice".to_string(), "t-alice".to_string())].into(),
            ..Default::default()
        };
        state.tokens.load_config(&auth).await.unwrap();
        let router = Router::new().route("/who", get(who).post(who));
        let router = match anonymous {
            Some(u) => router.layer(axum::Extension(AnonymousUser(UserId::parse(u).unwrap()))),
            None => router,
        };
        router.with_state(state)
    }

    async fn call(app: &Router, method: &str, uri: &str, auth: Option<&str>) -> (StatusCode, String) {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let res = app.clone().oneshot(req.body(HttpBody::empty()).unwrap()).await.unwrap();
        let status = res.status();
        let body = axum::body::to_bytes(res.into_body(), 1 << 16).await.unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn one_extractor_names_every_caller_and_refuses_the_rest_with_a_json_code() {
        let app = service(None).await;
        assert_eq!(call(&app, "GET", "/who", Some("Bearer t-alice")).await, (StatusCode::OK, "user:alice".into()));
        assert_eq!(
            call(&app, "GET", "/who", Some("bearer t-alice")).await.1,
            "user:alice",
            "the scheme is case-insensitive"
        );
        assert_eq!(call(&app, "GET", "/who?access_token=t-alice", None).await.1, "user:alice", "EventSource's way");
        for (method, uri, auth) in [
            ("GET", "/who", Some("Basic dXNlcjpwYXNz")),
            ("GET", "/who", Some("t-alice")),
            ("GET", "/who", Some("Bearer forged")),
            ("GET", "/who", None),
            ("POST", "/who?access_token=t-alice", None),
        ] {
            let (status, body) = call(&app, method, uri, auth).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {uri} {auth:?}: {body}");
            assert!(body.contains("\"code\":\"UNAUTHENTICATED\""), "{body}");
        }
    }

    #[tokio::test]
    async fn a_route_with_an_anonymous_user_admits_callers_without_a_token_as_that_user() {
        let app = service(Some("guest")).await;
        assert_eq!(call(&app, "GET", "/who", None).await.1, "user:guest");
        assert_eq!(call(&app, "GET", "/who", Some("Bearer t-alice")).await.1, "user:alice", "a token still counts");
        assert_eq!(call(&app, "GET", "/who", Some("Bearer forged")).await.0, StatusCode::UNAUTHORIZED);
    }
}
