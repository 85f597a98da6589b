//! [`AppState`]: everything a request handler needs, in one value per
//! service. Two services in one process share nothing (A2A tasks included).

use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;

#[cfg(feature = "a2a")]
use crate::a2a::A2aService;
use crate::auth::Tokens;
use crate::runtime::{Admission, Runtime};

/// The state of one service.
pub struct AppState {
    /// The runtime that runs the delegations.
    pub runtime: Runtime,
    /// Bearer tokens: who a presented token names.
    pub tokens: Tokens,
    /// The A2A tasks of this service.
    #[cfg(feature = "a2a")]
    pub a2a: Arc<A2aService>,
    /// Largest request body accepted, in bytes.
    pub body_limit: usize,
    /// Longest a request may take to be answered: the longest deadline a
    /// delegation may have, and some slack for recording it.
    pub request_timeout: Duration,
    /// When this service started: agent cards change only with the
    /// configuration, which is read at start (their `Last-Modified`).
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// Places for delegations in flight (`[server] max_in_flight`), shared
    /// by every route that starts one, and where admitted work runs.
    pub admission: Admission,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").finish_non_exhaustive()
    }
}

impl AppState {
    /// The state of a service over `runtime`, with its limits for bodies and timeouts derived from the runtime's config.
    pub fn new(runtime: Runtime) -> Self {
        let limits = runtime.config().limits;
        let admission = Admission::new(runtime.config().server.max_in_flight);
        let body_limit = limits.max_input_bytes.saturating_mul(4).max(64 * 1024);
        let request_timeout = Duration::from_millis(limits.max_deadline_ms).saturating_add(Duration::from_secs(10));
        let tokens = Tokens::new(runtime.store().clone());
        Self {
            #[cfg(feature = "a2a")]
            a2a: Arc::new(A2aService::new(runtime.clone())),
            runtime,
            tokens,
            body_limit,
            request_timeout,
            started_at: chrono::Utc::now(),
            admission,
        }
    }

    /// Runs admitted work (delegations, A2A sends, MCP tool calls) on the
    /// runtime of `work` (a [`WorkRuntime`](super::WorkRuntime)'s handle),
    /// apart from the one that reads, refuses and answers requests
    /// ([`Admission::on_work_runtime`]).
    #[must_use]
    pub fn on_work_runtime(mut self, work: Handle) -> Self {
        self.admission = self.admission.on_work_runtime(work);
        self
    }
}
