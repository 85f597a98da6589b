//! [`AppState`]: everything a request handler needs, in one value per
//! service. Two services in one process share nothing (A2A tasks included).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinError;
use tracing::Instrument;

#[cfg(feature = "a2a")]
use crate::a2a::A2aService;
use crate::auth::Tokens;
use crate::pipeline::Runtime;

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
    /// Places for delegations in flight on the HTTP routes (`[server] max_in_flight`).
    pub admission: Admission,
    /// Where admitted work runs ([`AppState::on_work_runtime`]); None: on
    /// the runtime that serves the request.
    pub work: Option<Handle>,
}

/// Admission control: at most so many delegations in flight; one more is
/// turned away at once rather than queued.
pub struct Admission {
    places: Arc<Semaphore>,
    max: usize,
}

impl Admission {
    /// At most `max` at once (at least 1).
    pub fn new(max: usize) -> Self {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Self { places: Arc::new(Semaphore::new(max)), max }
    }

    /// A place, held until the permit drops; None when all are taken.
    pub fn enter(&self) -> Option<OwnedSemaphorePermit> {
        self.places.clone().try_acquire_owned().ok()
    }

    /// The places themselves, for a surface that admits delegations of
    /// its own (the MCP service's tool calls).
    pub fn places(&self) -> Arc<Semaphore> {
        Arc::clone(&self.places)
    }

    /// How many places there are.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Seconds a caller turned away is asked to wait (`Retry-After`).
    pub const RETRY_AFTER_SECONDS: &'static str = "1";

    /// What a caller turned away is told, in every binding.
    pub fn refusal(&self) -> String {
        format!(
            "this Switchboard is running as many delegations as it takes at once ([server] max_in_flight = {}); \
             retry after {} s",
            self.max,
            Self::RETRY_AFTER_SECONDS
        )
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
            work: None,
        }
    }

    /// Runs admitted work (delegations, A2A sends) on the runtime of `work`
    /// (a [`WorkRuntime`](super::WorkRuntime)'s handle), apart from the one
    /// that reads, refuses and answers requests: requests over the limit
    /// cannot queue ahead of it.
    #[must_use]
    pub fn on_work_runtime(mut self, work: Handle) -> Self {
        self.work = Some(work);
        self
    }

    /// Runs `work`, admitted with `place`, to its end as a task of its own
    /// inside the request's span, on the work runtime when the service has
    /// one, and holds the place until it ends: a caller that hangs up does
    /// not cut it short (it still ends at its deadline). An error only when
    /// the task panicked or its runtime stopped.
    pub async fn run_admitted<T: Send + 'static>(
        &self,
        place: OwnedSemaphorePermit,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, JoinError> {
        let work = async move {
            let _place = place;
            work.await
        }
        .in_current_span();
        match &self.work {
            Some(runtime) => runtime.spawn(work).await,
            None => tokio::spawn(work).await,
        }
    }
}
