//! The service's tower-http stack, outermost first: a panic becomes a 500
//! JSON error; every request gets a span that continues the caller's W3C
//! `traceparent`; a body over the limit is refused from its announced
//! length before it is read; a request has the longest deadline plus slack
//! to be answered. Error responses that are not JSON yet (the limit's and
//! the timeout's, axum's rejections) become `{"error":{"code","message"}}`.

use std::any::Any;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::{RequestBodyLimitLayer, ResponseBody};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{DefaultOnFailure, TraceLayer};
use tracing::Level;

use super::ApiError;
use crate::protocol::ErrorCode;
use crate::telemetry;

/// Longest message kept from an error body being turned into JSON.
const MAX_MESSAGE: usize = 300;

/// `router` with the stack applied.
pub(super) fn apply<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    body_limit: usize,
    timeout: Duration,
) -> Router<S> {
    router.layer(
        ServiceBuilder::new()
            .layer(CatchPanicLayer::custom(panicked))
            .layer(
                TraceLayer::new_for_http()
                    .make_span_with(request_span)
                    .on_failure(DefaultOnFailure::new().level(Level::DEBUG)),
            )
            .map_response(move |res: Response<ResponseBody<Body>>| refused_by_layer(res.map(Body::new), body_limit))
            .layer(RequestBodyLimitLayer::new(body_limit))
            .layer(TimeoutLayer::with_status_code(StatusCode::GATEWAY_TIMEOUT, timeout))
            .layer(DefaultBodyLimit::disable())
            .layer(axum::middleware::map_response(json_errors)),
    )
}

fn is_json(res: &Response) -> bool {
    res.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|ct| {
        ct.starts_with("application/json") || ct.ends_with("+json") || ct.starts_with("text/event-stream")
    })
}

/// The body limit's and the timeout's own answers, as JSON errors.
fn refused_by_layer(res: Response, body_limit: usize) -> Response {
    if is_json(&res) {
        return res;
    }
    match res.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::InvalidRequest,
            format!("the request body is larger than {body_limit} bytes"),
        )
        .into_response(),
        StatusCode::GATEWAY_TIMEOUT => ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            ErrorCode::DeadlineExceeded,
            "the request was not answered within the longest deadline this service allows",
        )
        .into_response(),
        _ => res,
    }
}

/// The request's span: `METHOD /route`, a child of the caller's trace when
/// it sends `traceparent`. Every handler runs inside it.
fn request_span(req: &Request) -> tracing::Span {
    let route = req.extensions().get::<MatchedPath>().map_or_else(|| req.uri().path(), |p| p.as_str());
    let span = tracing::info_span!(
        "request",
        otel.name = %format!("{} {route}", req.method()),
        http.request.method = %req.method(),
        http.route = %route,
    );
    let parent = req.headers().get("traceparent").and_then(|v| v.to_str().ok());
    telemetry::continue_trace(&span, parent);
    span
}

/// An error response from a route that is not JSON yet (axum's own
/// rejections: a malformed path, query or body) becomes one, keeping its
/// status and its text.
async fn json_errors(res: Response) -> Response {
    let status = res.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(&res) {
        return res;
    }
    let text = axum::body::to_bytes(res.into_body(), 4 * MAX_MESSAGE).await.unwrap_or_default();
    let text: String = String::from_utf8_lossy(&text).chars().take(MAX_MESSAGE).collect();
    let message = if text.trim().is_empty() { status.canonical_reason().unwrap_or("error").to_string() } else { text };
    let code = match status {
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::InvalidRequest,
        s if s.is_server_error() => ErrorCode::AgentUnavailable,
        _ => ErrorCode::InvalidRequest,
    };
    ApiError::new(status, code, message).into_response()
}

/// A handler that panicked: a 500 with a JSON error and no internals.
fn panicked(_panic: Box<dyn Any + Send + 'static>) -> Response<Body> {
    tracing::error!("a request handler panicked");
    let mut res = ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::AgentUnavailable,
        "the service failed while handling this request (a bug, logged on the server); retry, and report it if it persists",
    )
    .into_response();
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}
