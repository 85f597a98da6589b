//! A2A server: agent cards, JSON-RPC and HTTP+JSON bindings for every agent.

use std::sync::Arc;

use axum::Router;

use crate::server::AppState;

/// The A2A routes, merged into the service's router.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
}
