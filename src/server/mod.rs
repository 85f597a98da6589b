//! Switchboard as a service. [`app`] builds the router (tests drive it with
//! `tower::ServiceExt::oneshot`, no socket); [`serve`] runs it until SIGTERM
//! or Ctrl-C, then lets in-flight delegations finish within a grace period.
//!
//! | route | who | what |
//! |---|---|---|
//! | `POST /v1/delegate` | service token of `origin_employee` | one delegation envelope |
//! | `POST /v1/chat` | user token | the user talks to Prime |
//! | `GET /v1/delegations/{id}` | any token (own trees only) | the stored tree |
//! | `GET /v1/events` | any token (own events only) | SSE: started, attempt, retry, finished |
//! | `GET /v1/agents` | any token | the team and breaker states |
//! | `POST /v1/chat/completions`, `GET /v1/models` | user token (the API key) | OpenAI-compatible: agent slug as model |
//! | `GET /healthz`, `GET /metrics` | anyone | health, Prometheus |
//! | `GET /` | anyone (the page asks for a token) | live delegation trees |

pub mod error;
mod events;
mod native;
mod openai;
mod ui;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use tokio::net::TcpListener;

use crate::auth::{Principal, Tokens, bearer};
use crate::pipeline::Runtime;

pub use error::ApiError;

/// Everything a request handler needs.
pub struct AppState {
    pub runtime: Runtime,
    pub tokens: Tokens,
    /// Largest request body accepted, in bytes.
    pub body_limit: usize,
}

impl AppState {
    pub fn new(runtime: Runtime) -> Self {
        let body_limit = runtime.config().limits.max_input_bytes.saturating_mul(4).max(64 * 1024);
        let tokens = Tokens::new(runtime.store().clone());
        Self { runtime, tokens, body_limit }
    }

    /// The caller's principal from `Authorization: Bearer`, or from an
    /// `access_token` query parameter (EventSource cannot send headers).
    pub(crate) async fn principal(
        &self,
        headers: &HeaderMap,
        query_token: Option<&str>,
    ) -> Result<Principal, ApiError> {
        let token = match headers.get(axum::http::header::AUTHORIZATION) {
            Some(v) => {
                bearer(v.to_str().map_err(|_| ApiError::unauthenticated("the Authorization header is not text"))?)?
            }
            None => query_token.ok_or_else(|| {
                ApiError::unauthenticated(
                    "missing 'Authorization: Bearer <token>'; agents use their service token, users theirs",
                )
            })?,
        };
        Ok(self.tokens.authenticate(token).await?)
    }
}

/// The router.
pub fn app(state: Arc<AppState>) -> Router {
    let limit = state.body_limit;
    Router::new()
        .route("/v1/delegate", post(native::delegate))
        .route("/v1/chat", post(native::chat))
        .route("/v1/delegations/{id}", get(native::delegation))
        .route("/v1/agents", get(native::agents))
        .route("/v1/chat/completions", post(openai::completions))
        .route("/v1/models", get(openai::models))
        .route("/v1/events", get(events::stream))
        .route("/healthz", get(native::health))
        .route("/metrics", get(native::metrics))
        .route("/", get(ui::index))
        .merge(crate::a2a::server::routes())
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(axum::middleware::from_fn_with_state(limit, refuse_oversize))
        .with_state(state)
}

/// A body announced larger than the limit is refused from its headers alone,
/// before the server asks for it (`Expect: 100-continue`) or reads a byte.
async fn refuse_oversize(
    axum::extract::State(limit): axum::extract::State<usize>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let announced = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match announced {
        Some(len) if len > limit as u64 => ApiError::new(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            crate::ErrorCode::InvalidRequest,
            format!("the request body is larger than {limit} bytes ({len} announced)"),
        )
        .into_response(),
        _ => next.run(request).await,
    }
}

/// Serves until `shutdown` resolves; then in-flight requests get `grace` to
/// finish before the server stops anyway.
pub async fn serve(
    state: Arc<AppState>,
    listener: TcpListener,
    grace: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let server = axum::serve(listener, app(state)).with_graceful_shutdown(async move {
        let mut rx = rx;
        let _ = rx.wait_for(|stop| *stop).await;
    });
    let stop = async move {
        shutdown.await;
        let _ = tx.send(true);
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        r = server.into_future() => r,
        () = stop => {
            eprintln!("switchboard: in-flight requests did not finish within {} ms; stopping", grace.as_millis());
            Ok(())
        }
    }
}

/// SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
