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
//! | `GET /v1/money`, `GET /v1/money/chart.svg` | user token (own), admin (`?user=`) | the user's money and its charts |
//! | `GET /v1/approvals`, `POST /v1/approvals/{id}` | user token (own), admin | approvals to answer; an answer resumes its tree |
//! | `POST /v1/trees/{id}/cancel`, `GET /v1/trees/{id}/steps` | the tree's user, admin | cancel a tree; its journal of steps (and how often a restart resumed it) |
//! | `POST /v1/trees/{id}/replay`, `GET /v1/trees/{id}/replays` | the tree's user, admin | replay a tree (recorded or live); the replays kept |
//! | `GET /v1/analytics`, `GET /v1/trees`, `POST\|GET /v1/trees/{id}/rating` | user token (own), admin | usage analytics, past trees, ratings (see [`analytics`]) |
//! | `POST\|GET\|DELETE /mcp` | any token | MCP (streamable HTTP): tools and resources, docs/MCP.md |
//! | `GET /` | anyone (the page asks for a token) | live delegation trees, the Money view |

#[cfg(feature = "a2a")]
mod a2a;
pub mod analytics;
pub mod approvals;
pub mod chart;
pub mod error;
mod events;
pub mod extract;
mod layers;
pub mod money;
mod native;
mod openai;
mod state;
pub mod trees;
mod ui;
mod work;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use tokio::net::TcpListener;

pub use crate::runtime::Admission;
pub use error::ApiError;
pub use state::AppState;
pub use work::WorkRuntime;

/// The router: every surface, with the tower-http stack (see `layers`).
pub fn app(state: Arc<AppState>) -> Router {
    let router: Router<Arc<AppState>> = Router::new()
        .route("/v1/delegate", post(native::delegate))
        .route("/v1/chat", post(native::chat))
        .route("/v1/delegations/{id}", get(native::delegation))
        .route("/v1/agents", get(native::agents))
        .route("/v1/chat/completions", post(openai::completions))
        .route("/v1/models", get(openai::models))
        .route("/v1/events", get(events::stream))
        .route("/v1/money", get(money::money))
        .route("/v1/money/chart.svg", get(money::chart))
        // the same under its earlier name ("ledger" now names only the tax agent)
        .route("/v1/ledger", get(money::money))
        .route("/v1/ledger/chart.svg", get(money::chart))
        .route("/v1/approvals", get(approvals::list))
        .route("/v1/approvals/{id}", post(approvals::decide))
        .route("/v1/trees/{id}/cancel", post(approvals::cancel))
        .route("/v1/trees/{id}/steps", get(approvals::steps))
        .route("/v1/trees/{id}/replay", post(trees::replay))
        .route("/v1/trees/{id}/replays", get(trees::replays))
        .route("/v1/analytics", get(analytics::analytics))
        .route("/v1/trees", get(analytics::trees))
        .route("/v1/trees/{id}/rating", post(analytics::rate).get(analytics::rating))
        .route("/healthz", get(native::health))
        .route("/metrics", get(native::metrics))
        .route("/", get(ui::index))
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::method_not_allowed);
    #[cfg(feature = "a2a")]
    let router = router.merge(a2a::routes(&state));
    // its tools that run a tree take places among the same max_in_flight, and run as admitted work
    #[cfg(feature = "mcp")]
    let router = router.nest_service("/mcp", crate::mcp::http_service(&state.runtime, Some(state.admission.clone())));
    layers::apply(router, state.body_limit, state.request_timeout).with_state(state)
}

/// Serves until `shutdown` resolves; then in-flight requests get `grace` to
/// finish before the server stops anyway.
pub async fn serve(
    state: Arc<AppState>,
    listener: TcpListener,
    grace: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let runtime = state.runtime.clone();
    // the trees it resumes run where admitted work does
    let trees = state.admission.spawn(runtime.clone().keep_trees());
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
    let served = tokio::select! {
        r = server.into_future() => r,
        () = stop => {
            eprintln!("switchboard: in-flight requests did not finish within {} ms; stopping", grace.as_millis());
            Ok(())
        }
    };
    trees.abort();
    // what did not finish is another replica's to take over, at once
    runtime.release_lease().await;
    served
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
